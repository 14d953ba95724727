"""Constraints: the sets a distribution's parameters and samples live in, as
``torch.distributions.constraints``. ``check(value)`` gives a boolean tensor, one entry per
event (``event_dim`` rightmost dimensions make one event); the names and reprs are PyTorch's,
since validation errors print them.

>>> from scratchgrad.creation import tensor
>>> positive.check(tensor([1.0, -1.0])).tolist(), repr(positive)
([True, False], 'GreaterThan(lower_bound=0.0)')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scratchgrad import linalg
from scratchgrad.backend import bool_ as bool_dtype
from scratchgrad.creation import full
from scratchgrad.dtypes import finfo
from scratchgrad.tensor import Tensor
from scratchgrad.tensor import cat as cat_tensors  # (cat and stack name constraints here)
from scratchgrad.tensor import stack as stack_tensors

__all__ = [
    "Constraint",
    "MixtureSameFamilyConstraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "dependent",
    "dependent_property",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "is_dependent",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative_integer",
    "nonnegative",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]


class Constraint:
    """A set of values; ``check`` says which entries (events) of a tensor lie in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Bounded(Constraint):
    """A constraint with bounds, printed as PyTorch prints them: ``Name(lower_bound=...)``."""

    def __init__(self, **bounds: Any) -> None:
        self.__dict__.update(bounds)
        self._bounds = bounds

    def __repr__(self) -> str:
        bounds = ", ".join(f"{name}={value}" for name, value in self._bounds.items())
        return f"{type(self).__name__[1:]}({bounds})"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False for NaN


class _GreaterThan(_Bounded):
    def __init__(self, lower_bound: Any) -> None:
        super().__init__(lower_bound=lower_bound)

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound


class _LessThan(_Bounded):
    def __init__(self, upper_bound: Any) -> None:
        super().__init__(upper_bound=upper_bound)

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound


class _Interval(_Bounded):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        super().__init__(lower_bound=lower_bound, upper_bound=upper_bound)

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & super().check(value)


class _IntegerGreaterThan(_GreaterThan):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def check(self, value: Tensor) -> Tensor:
        return boolean.check(value).all(-1) & (value.sum(-1) == 1)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Vectors of non-negative integer counts summing to at most ``upper_bound``."""

    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = (value.tril() == value).flatten(-2).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        # symmetric first (as PyTorch: a non-symmetric matrix is not factored); then whether
        # a Cholesky factorization succeeds, as PyTorch asks: all eigenvalues positive is the
        # same set but for rounding at its edge, where a singular matrix passed and then
        # failed the distribution's own factorization (a LinAlgError, not this ValueError)
        symmetric = value.isclose(value.mT, atol=1e-6).flatten(-2).all(-1)
        if not symmetric.all():
            return symmetric
        return linalg.cholesky_ex(value.detach()).info == 0


class _IndependentConstraint(Constraint):
    """``base_constraint`` over events of ``reinterpreted_batch_ndims`` more dimensions: an
    event is in the set when all its entries are."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result, n = self.base_constraint.check(value), self.reinterpreted_batch_ndims
        if result.dim() < n:
            expected = n + self.base_constraint.event_dim
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        return result if n == 0 else result.reshape(*result.shape[: result.dim() - n], -1).all(-1)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Dependent(Constraint):
    """A placeholder for a set that depends on other values (a distribution's ``support``
    given by its parameters, a transform's domain): it cannot ``check``, and its
    ``is_discrete``/``event_dim`` are known only when given."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented):
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(
        self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented
    ) -> _Dependent:
        """A dependent constraint with these static attributes (the others kept)."""
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


class _DependentProperty(property, _Dependent):
    """A property that is a dependent constraint on the class and computes the real one on
    an instance: ``@dependent_property(is_discrete=False, event_dim=1) def support(self)``."""

    def __init__(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        is_discrete: Any = NotImplemented,
        event_dim: Any = NotImplemented,
    ) -> None:
        property.__init__(self, fn)
        self._is_discrete, self._event_dim = is_discrete, event_dim

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent placeholder.

    >>> is_dependent(dependent), is_dependent(real)
    (True, False)
    """
    return isinstance(constraint, _Dependent)


class _HalfOpenInterval(_Interval):
    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return (value.tril() == value).flatten(-2).all(-1)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: rows of unit norm."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        tol = finfo(value.dtype).eps * value.shape[-1] * 10  # PyTorch's fudge factor of 10
        row_norm = linalg.vector_norm(value.detach(), dim=-1)
        unit_row_norm = ((row_norm - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit_row_norm


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        square = value.shape[-2] == value.shape[-1]
        return full(value.shape[:-2], square, dtype=bool_dtype, device=value.device)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if not square.all():
            return square
        return value.isclose(value.mT, atol=1e-6).flatten(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if not symmetric.all():
            return symmetric
        return (linalg.eigvalsh(value) >= 0).all(-1)


class _Cat(Constraint):
    """The constraints of ``cseq`` on consecutive slices (of ``lengths``) along ``dim``."""

    def __init__(
        self, cseq: Sequence[Constraint], dim: int = 0, lengths: Sequence[int] | None = None
    ) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})"
            )
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        _check_dim(self.dim, value, "value")
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start = start + length
        return cat_tensors(checks, self.dim)


class _Stack(Constraint):
    """The constraints of ``cseq`` on the slices along ``dim``, one each."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq, self.dim = list(cseq), dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value: Tensor) -> Tensor:
        _check_dim(self.dim, value, "value")
        slices = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return stack_tensors([c.check(v) for v, c in zip(slices, self.cseq)], self.dim)


def _check_dim(dim: int, value: Tensor, name: str) -> None:
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for {name} with {value.dim()} dimensions")


class MixtureSameFamilyConstraint(Constraint):
    """The support of a ``MixtureSameFamily``: a value is in it when it is in every
    component's support (``base_constraint`` checked against all components at once)."""

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(
                f"base_constraint must be a Constraint, got {type(base_constraint).__name__}"
            )
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        kept = value.dim() - self.event_dim
        return result.reshape(*result.shape[:kept], -1).all(-1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_constraint!r})"


# PyTorch's public names: instances for the fixed sets, classes for the parameterized ones
greater_than, greater_than_eq, less_than = _GreaterThan, _GreaterThanEq, _LessThan
interval, integer_interval, independent = _Interval, _IntegerInterval, _IndependentConstraint
multinomial = _Multinomial
real, boolean, one_hot, simplex = _Real(), _Boolean(), _OneHot(), _Simplex()
real_vector = independent(real, 1)
positive, nonnegative = greater_than(0.0), greater_than_eq(0.0)
nonnegative_integer, positive_integer = _IntegerGreaterThan(0), _IntegerGreaterThan(1)
unit_interval = interval(0.0, 1.0)
lower_cholesky, positive_definite = _LowerCholesky(), _PositiveDefinite()
dependent, dependent_property = _Dependent(), _DependentProperty
half_open_interval, cat, stack = _HalfOpenInterval, _Cat, _Stack
lower_triangular, corr_cholesky = _LowerTriangular(), _CorrCholesky()
square, symmetric, positive_semidefinite = _Square(), _Symmetric(), _PositiveSemidefinite()
