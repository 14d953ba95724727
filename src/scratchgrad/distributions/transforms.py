"""Transforms: invertible maps between sets, with the log of their Jacobian's absolute
determinant, as ``torch.distributions.transforms``; ``TransformedDistribution`` pushes a
distribution through them (``y = t(x)``, ``log p(y) = log p(x) - log|det dy/dx|``).

A transform made with ``cache_size=1`` remembers its last ``(x, y)`` pair: its inverse at that
``y`` is that ``x`` exactly, which keeps ``log_prob`` of a tanh-squashed sample finite where
``atanh`` of a rounded 1.0 would not be (the SAC policy).

>>> from scratchgrad.creation import tensor
>>> t = ExpTransform()
>>> x = tensor([0.0, 1.0], dtype="float64")
>>> t.inv(t(x)).tolist(), t.log_abs_det_jacobian(x, t(x)).tolist()
([0.0, 1.0], [0.0, 1.0])
"""

from __future__ import annotations

import math
import numbers
import weakref
from typing import Any

from scratchgrad import linalg
from scratchgrad.creation import eye, full_like, zeros_like
from scratchgrad.distributions import constraints
from scratchgrad.distributions.utils import (
    broadcast_all,
    sum_rightmost,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)
from scratchgrad.dtypes import finfo
from scratchgrad.nn.functional import logsigmoid, pad, softplus
from scratchgrad.tensor import Size, Tensor, broadcast_shapes, cat, stack

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]


class Transform:
    """An invertible (or at least computable) map ``y = t(x)`` from ``domain`` to
    ``codomain``; ``inv`` is its inverse, ``sign`` the sign of its derivative (monotone ones),
    ``log_abs_det_jacobian(x, y)`` the log of ``|dy/dx|`` (one per event of the domain).

    >>> t = AffineTransform(1.0, 2.0)
    >>> from scratchgrad.creation import tensor
    >>> t(tensor(3.0)).item(), t.inv(tensor(7.0)).item(), t.sign
    (7.0, 3.0, 1)
    """

    bijective = False
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y: tuple = (None, None)
        self._inv: Any = None

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform, made once and held weakly (as PyTorch's)."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> int | Tensor:
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with ``cache_size``: itself if it already has it."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |dy/dx|`` at ``x`` (with ``y = t(x)``)."""
        raise NotImplementedError

    def forward_shape(self, shape: tuple) -> tuple:
        """The shape of ``t(x)`` for ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        """The shape of ``t.inv(y)`` for ``y`` of ``shape``."""
        return shape

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform: calls its ``_inv_call``, so they share one cache."""

    bijective = True

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform  # held strongly: the inverse keeps its transform alive

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain

    @property
    def sign(self) -> int | Tensor:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self) -> int:
        return hash(self._inv)

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple) -> tuple:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self._inv.forward_shape(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"


class ComposeTransform(Transform):
    """``parts`` applied in order; its Jacobian's log-determinant sums theirs, each summed
    over the event dimensions the composition adds to it.

    >>> from scratchgrad.creation import tensor
    >>> t = ComposeTransform([ExpTransform(), AffineTransform(0.0, 2.0)])
    >>> round(t(tensor(0.0)).item(), 4), round(t.inv(tensor(2.0)).item(), 4)
    (2.0, 0.0)
    """

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    def __hash__(self) -> int:
        return hash(tuple(self.parts))

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        return _with_event_dim(self.parts[0].domain, event_dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        return _with_event_dim(self.parts[-1].codomain, event_dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(part.bijective for part in self.parts)

    @property
    def sign(self) -> int | Tensor:
        sign: int | Tensor = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self) -> Transform:
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([part.inv for part in reversed(self.parts)])
            self._inv, inv._inv = weakref.ref(inv), weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Any = 0
        event_dim = self.domain.event_dim
        for part, x_i, y_i in zip(self.parts, xs[:-1], xs[1:]):
            term = part.log_abs_det_jacobian(x_i, y_i)
            total = total + sum_rightmost(term, event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: tuple) -> tuple:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        return type(self).__name__ + "(\n    " + ",\n    ".join(map(repr, self.parts)) + "\n)"


def _with_event_dim(constraint: constraints.Constraint, event_dim: int) -> constraints.Constraint:
    """``constraint`` over events of ``event_dim`` dimensions (at least its own)."""
    extra = event_dim - constraint.event_dim
    return constraints.independent(constraint, extra) if extra > 0 else constraint


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain, codomain = constraints.real, constraints.positive
    bijective, sign = True, 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    def __hash__(self) -> int:
        return hash(ExpTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


def _clipped_sigmoid(x: Tensor) -> Tensor:
    # in (0, 1) strictly: the inverse of an exact 0 or 1 would be infinite
    info = finfo(x.dtype)
    return x.sigmoid().clamp(min=info.tiny, max=1.0 - info.eps)


class SigmoidTransform(Transform):
    """``y = sigmoid(x)``, clipped inside (0, 1) as PyTorch's."""

    domain, codomain = constraints.real, constraints.unit_interval
    bijective, sign = True, 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    def __hash__(self) -> int:
        return hash(SigmoidTransform)

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        info = finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``; its inverse is not clamped (as PyTorch's): build it with
    ``cache_size=1`` to score the samples it made."""

    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)
    bijective, sign = True, 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    def __hash__(self) -> int:
        return hash(TanhTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.atanh()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2) written stably (from the SAC paper's appendix, as PyTorch's)
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|``: not injective; its "inverse" returns ``y``."""

    domain, codomain = constraints.real, constraints.positive

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)

    def __hash__(self) -> int:
        return hash(AbsTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x`` (numbers or tensors), over events of ``event_dim`` dimensions.

    >>> from scratchgrad.creation import tensor
    >>> t = AffineTransform(0.0, tensor([2.0, 4.0]), event_dim=1)
    >>> round(t.log_abs_det_jacobian(tensor([1.0, 1.0]), None).item(), 4)
    2.0794
    """

    bijective = True

    def __init__(
        self,
        loc: Tensor | float,
        scale: Tensor | float,
        event_dim: int = 0,
        cache_size: int = 0,
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return _with_event_dim(constraints.real, self._event_dim)

    codomain = domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, AffineTransform)
            and _same(self.loc, other.loc)
            and _same(self.scale, other.scale)
        )

    def __hash__(self) -> int:
        return hash(AffineTransform)

    @property
    def sign(self) -> int | Tensor:
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = x.shape
        if isinstance(self.scale, numbers.Real):
            result = full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = result.reshape(*result.shape[: result.dim() - self._event_dim], -1).sum(-1)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: tuple) -> tuple:
        return Size(broadcast_shapes(shape, _shape(self.loc), _shape(self.scale)))

    inverse_shape = forward_shape


def _shape(value: Tensor | float) -> tuple:
    return tuple(value.shape) if isinstance(value, Tensor) else ()


def _same(a: Tensor | float, b: Tensor | float) -> bool:
    """Two numbers or tensors that are equal everywhere."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((a == b).all()) if isinstance(a, Tensor) else bool((b == a).all())


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive numbers."""

    domain, codomain = constraints.positive, constraints.positive
    bijective = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and _same(self.exponent, other.exponent)

    def __hash__(self) -> int:
        return hash(PowerTransform)

    @property
    def sign(self) -> Tensor:
        return self.exponent.sign()

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape: tuple) -> tuple:
        return Size(broadcast_shapes(shape, tuple(self.exponent.shape)))

    inverse_shape = forward_shape


def _at_least_1d(shape: tuple) -> None:
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")


class SoftmaxTransform(Transform):
    """Vectors to the simplex by ``softmax`` over the last dimension; not bijective (its
    inverse is ``log``, one of many), and without a Jacobian, as PyTorch's."""

    domain, codomain = constraints.real_vector, constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    def __hash__(self) -> int:
        return hash(SoftmaxTransform)

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.max(-1, keepdim=True)[0]).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: tuple) -> tuple:
        _at_least_1d(shape)
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    """Vectors of K - 1 reals to the simplex of K entries by stick breaking: each entry takes
    a sigmoid's share of what the ones before it left (offset so that zeros give the
    simplex's center); bijective, with a Jacobian, as PyTorch's.

    >>> from scratchgrad.creation import zeros
    >>> [round(y, 6) for y in StickBreakingTransform()(zeros(3)).tolist()]
    [0.25, 0.25, 0.25, 0.25]
    """

    domain, codomain = constraints.real_vector, constraints.simplex
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)

    def __hash__(self) -> int:
        return hash(StickBreakingTransform)

    @staticmethod
    def _offset_log(x: Tensor) -> Tensor:
        """log(K - 1), ..., log(1) for the K - 1 entries of ``x``."""
        n = x.shape[-1]
        return (n + 1 - x.new_ones(n).cumsum(-1)).log()

    def _call(self, x: Tensor) -> Tensor:
        z = _clipped_sigmoid(x - self._offset_log(x))
        z_cumprod = (1 - z).cumprod(-1)
        return pad(z, [0, 1], value=1) * pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        sf = (1 - y_crop.cumsum(-1)).clamp(min=finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + self._offset_log(y_crop)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - self._offset_log(x)
        return (-x + logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: tuple) -> tuple:
        _at_least_1d(shape)
        return Size((*shape[:-1], shape[-1] + 1))

    def inverse_shape(self, shape: tuple) -> tuple:
        _at_least_1d(shape)
        return Size((*shape[:-1], shape[-1] - 1))


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``, onto the positive numbers.

    >>> from scratchgrad.creation import tensor
    >>> round(SoftplusTransform().inv(tensor(2.0)).item(), 4)
    1.8546
    """

    domain, codomain = constraints.real, constraints.positive
    bijective, sign = True, 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)

    def __hash__(self) -> int:
        return hash(SoftplusTransform)

    def _call(self, x: Tensor) -> Tensor:
        return softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        # log(exp(y) - 1) = log(-expm1(-y)) + y, which cannot overflow
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x)


class LowerCholeskyTransform(Transform):
    """Square matrices to lower triangular ones with a positive diagonal: the strict lower
    triangle kept, the diagonal exponentiated; no Jacobian (as PyTorch's).

    >>> from scratchgrad.creation import zeros
    >>> LowerCholeskyTransform()(zeros(2, 2)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    domain, codomain = constraints.independent(constraints.real, 2), constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    def __hash__(self) -> int:
        return hash(LowerCholeskyTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive definite ones: ``L @ L.mT`` for ``L`` the
    ``LowerCholeskyTransform`` of the input; the inverse goes through the Cholesky factor."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    def __hash__(self) -> int:
        return hash(PositiveDefiniteTransform)

    def _call(self, x: Tensor) -> Tensor:
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Vectors of D(D - 1)/2 reals to the lower Cholesky factors of D x D correlation
    matrices (unit rows): ``tanh`` into (-1, 1), then stick breaking on the squares, row by
    row (Stan's construction, as PyTorch's). The log-determinant is that of the map onto the
    strictly lower triangle.

    >>> from scratchgrad.creation import zeros
    >>> CorrCholeskyTransform()(zeros(1)).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    domain, codomain = constraints.real_vector, constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    def __hash__(self) -> int:
        return hash(CorrCholeskyTransform)

    def _call(self, x: Tensor) -> Tensor:
        eps = finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # y = sign(r) sqrt(z prod(1 - z before)) with z = r^2: r times the stick left
        z1m_cumprod_sqrt = (1 - r**2).sqrt().cumprod(-1)
        r = r + eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y: Tensor) -> Tensor:
        # https://mc-stan.org/docs/2_18/reference-manual/cholesky-factors-of-correlation-matrices-1.html
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = pad(y_cumsum[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(y_cumsum_shifted, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # diag=-2 picks the cumulative sums already shifted by one column
        y1m_cumsum = tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        stick_breaking_logdet = 0.5 * y1m_cumsum.log().sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape: tuple) -> tuple:
        _at_least_1d(shape)
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size((*shape[:-1], d, d))

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size((*shape[:-2], d * (d - 1) // 2))


class IndependentTransform(Transform):
    """``base_transform`` over events of ``reinterpreted_batch_ndims`` more dimensions: its
    log-determinants summed over them.

    >>> from scratchgrad.creation import zeros
    >>> tuple(IndependentTransform(ExpTransform(), 1).log_abs_det_jacobian(zeros(2, 3), None).shape)
    (2,)
    """

    def __init__(
        self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size
        )

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        codomain = self.base_transform.codomain
        return constraints.independent(codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> int | Tensor:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(result, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: tuple) -> tuple:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """The rightmost dimensions of shape ``in_shape`` reshaped to ``out_shape`` (of as many
    entries); its log-determinant is zero.

    >>> from scratchgrad.creation import zeros
    >>> tuple(ReshapeTransform((2, 3), (6,))(zeros(4, 2, 3)).shape)
    (4, 6)
    """

    bijective = True

    def __init__(self, in_shape: tuple, out_shape: tuple, cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = Size(in_shape), Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return x.reshape((*x.shape[: x.dim() - len(self.in_shape)], *self.out_shape))

    def _inverse(self, y: Tensor) -> Tensor:
        return y.reshape((*y.shape[: y.dim() - len(self.out_shape)], *self.in_shape))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(x.shape[: x.dim() - len(self.in_shape)])

    def forward_shape(self, shape: tuple) -> tuple:
        return _reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return _reshaped(shape, self.out_shape, self.in_shape)


def _reshaped(shape: tuple, source: Size, target: Size) -> Size:
    if len(shape) < len(source):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(source)
    if tuple(shape[cut:]) != tuple(source):
        raise ValueError(f"Shape mismatch: expected {Size(shape[cut:])} but got {source}")
    return Size(shape[:cut]) + target


def _check_slices(dim: int, length: int, x: Tensor, name: str, what: str) -> None:
    """PyTorch's checks of the input of CatTransform and StackTransform."""
    if not -x.dim() <= dim < x.dim():
        raise AssertionError(f"dim {dim} out of range for {name} with {x.dim()} dimensions")
    if x.shape[dim] != length:
        raise AssertionError(f"{x.shape[dim]} entries along dim {dim}: must equal {what} {length}")


class CatTransform(Transform):
    """The transforms of ``tseq`` applied to consecutive slices of ``lengths`` (default: 1
    each) along ``dim``, as ``cat`` joins them.

    >>> from scratchgrad.creation import tensor
    >>> t = CatTransform([ExpTransform(), AffineTransform(1.0, 2.0)], dim=0, lengths=[1, 2])
    >>> t(tensor([0.0, 1.0, 2.0])).tolist()
    [1.0, 3.0, 5.0]
    """

    def __init__(
        self,
        tseq: list[Transform],
        dim: int = 0,
        lengths: list[int] | None = None,
        cache_size: int = 0,
    ) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _slices(self, x: Tensor, name: str) -> list[Tensor]:
        _check_slices(self.dim, self.length, x, name, "length")
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [x.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _call(self, x: Tensor) -> Tensor:
        parts = zip(self.transforms, self._slices(x, "x"))
        return cat([t(x_i) for t, x_i in parts], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        parts = zip(self.transforms, self._slices(y, "y"))
        return cat([t.inv(y_i) for t, y_i in parts], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        terms = []
        for t, x_i, y_i in zip(self.transforms, self._slices(x, "x"), self._slices(y, "y")):
            terms.append(
                sum_rightmost(t.log_abs_det_jacobian(x_i, y_i), self.event_dim - t.event_dim)
            )
        # the slices' dimension is a batch one (concatenate their terms) or part of the
        # event (add them up)
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return cat(terms, dim) if dim < 0 else sum(terms[1:], terms[0])

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """The transforms of ``tseq`` applied to the slices along ``dim``, one each, as
    ``stack`` joins them.

    >>> from scratchgrad.creation import tensor
    >>> t = StackTransform([ExpTransform(), AffineTransform(1.0, 2.0)], dim=0)
    >>> t(tensor([0.0, 1.0])).tolist()
    [1.0, 3.0]
    """

    def __init__(self, tseq: list[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, x: Tensor, name: str) -> list[Tensor]:
        _check_slices(self.dim, len(self.transforms), x, name, "len(transforms)")
        return [x.select(self.dim, i) for i in range(x.shape[self.dim])]

    def _call(self, x: Tensor) -> Tensor:
        return stack([t(x_i) for t, x_i in zip(self.transforms, self._slices(x, "x"))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        parts = zip(self.transforms, self._slices(y, "y"))
        return stack([t.inv(y_i) for t, y_i in parts], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        parts = zip(self.transforms, self._slices(x, "x"), self._slices(y, "y"))
        return stack([t.log_abs_det_jacobian(x_i, y_i) for t, x_i, y_i in parts], self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: a univariate distribution's support onto [0, 1] (its
    inverse the ``icdf``, its log-determinant the ``log_prob``).

    >>> from scratchgrad.creation import tensor
    >>> from scratchgrad.distributions import Normal
    >>> CumulativeDistributionTransform(Normal(0.0, 1.0))(tensor(0.0)).item()
    0.5
    """

    bijective, sign = True, 1
    codomain = constraints.unit_interval

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
