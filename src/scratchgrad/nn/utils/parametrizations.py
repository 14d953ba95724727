"""``torch.nn.utils.parametrizations``: weight normalisation, spectral normalisation and
orthogonal matrices as parametrizations (``nn.utils.parametrize``), with PyTorch's names,
``state_dict`` keys (``parametrizations.weight.original0``, ...) and arithmetic.

``orthogonal``'s ``"householder"`` map (PyTorch's default for a matrix that is not square)
without the trivialization turns the initial (or assigned) weight into reflectors with
``geqrf``, as PyTorch's.
"""

from __future__ import annotations

from enum import Enum, auto
from typing import TypeVar

from scratchgrad import linalg
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import eye, randn
from scratchgrad.dtypes import finfo
from scratchgrad.linalg.extras import geqrf
from scratchgrad.nn import functional as F
from scratchgrad.nn.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from scratchgrad.nn.module import Module
from scratchgrad.nn.utils import parametrize
from scratchgrad.nn.utils.reparametrize import _norm_except_dim
from scratchgrad.tensor import Tensor, cat, where

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

M = TypeVar("M", bound=Module)


# ---- orthogonal ------------------------------------------------------------------------------


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2:]
    eps = 10.0 * n * finfo(Q.dtype).eps  # PyTorch's bound: a few roundings per entry
    return (Q.mT @ Q).allclose(eye(k, dtype=Q.dtype, device=Q.device), atol=eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A = QR (A tall) with the diagonal of R non-negative, as PyTorch's (which takes
    it from geqrf and householder_product, the LAPACK routines ``linalg.qr`` runs)."""
    Q, R = linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """``orthogonal``'s parametrization: a matrix (or batch) with orthonormal columns (rows, if
    wide) from the lower triangle of the original, through the exponential or the Cayley map of
    a skew-symmetric matrix or a product of Householder reflections, times ``base`` with the
    dynamic trivialization."""

    def __init__(
        self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True
    ) -> None:
        super().__init__()
        if weight.is_complex():
            if orthogonal_map is _OrthMaps.householder:  # PyTorch's error
                raise ValueError(
                    "The householder parametrization does not support complex tensors."
                )
            raise NotImplementedError(
                f"orthogonal: a complex weight ({weight.dtype.name}, a unitary parametrization) "
                "needs "
                "a complex QR decomposition, which scratchgrad does not have yet"
            )
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        transposed = X.shape[-2] < X.shape[-1]
        if transposed:  # work on a tall matrix
            X = X.mT
        if self.orthogonal_map is _OrthMaps.householder:
            Q = _householder(X)
        else:
            Q = _exp_or_cayley(X, self.orthogonal_map)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """With the trivialization: ``base`` becomes ``Q`` made orthogonal (completed to a
        square matrix with random columns if ``Q`` is not square), and the original is -I,
        which the map sends to the identity. Without: the reflectors of ``Q``'s QR
        decomposition for the Householder map, not possible for the others
        (NotImplementedError: the registration keeps the value as the original, as PyTorch)."""
        if Q.shape != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. "
                f"Got a tensor of shape {Q.shape}."
            )
        if not hasattr(self, "base"):
            if self.orthogonal_map is _OrthMaps.householder:
                return _reflectors(Q)
            raise NotImplementedError(
                "It is not possible to assign to the matrix exponential or the Cayley "
                "parametrizations when use_trivialization=False."
            )
        with no_grad():
            self.base = _orthogonal_base(Q.mT if Q.shape[-2] < Q.shape[-1] else Q)
            neg_Id = Q.new_zeros(Q.shape)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_Id


def _exp_or_cayley(X: Tensor, orthogonal_map: _OrthMaps) -> Tensor:
    """The first columns of the exponential or the Cayley map of the skew-symmetric matrix made
    from the lower triangle of (tall) ``X``."""
    n, k = X.shape[-2:]
    X = X.tril()  # the n k - k (k - 1) / 2 numbers a tall orthogonal matrix needs
    if n != k:  # embedded in a square matrix
        X = cat([X, X.new_zeros((n, n - k)).expand(*X.shape[:-2], -1, -1)], dim=-1)
    A = X - X.mT  # skew-symmetric: both maps give an orthogonal matrix
    if orthogonal_map is _OrthMaps.matrix_exp:
        Q = linalg.matrix_exp(A)
    else:  # the Cayley map (I - A/2)^-1 (I + A/2)
        Id = eye(n, dtype=A.dtype, device=A.device)
        Q = linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
    return Q[..., :k] if n != k else Q


def _householder(X: Tensor) -> Tensor:
    """The product of the reflections stored below the diagonal of (tall) ``X``, each with the
    scale that makes it orthogonal, its columns' signs those of the diagonal of ``X`` (1s and
    -1s, which the gradient does not change: PyTorch takes them through an int cast)."""
    A = X.tril(-1)
    tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
    Q = linalg.householder_product(A, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)


def _reflectors(Q: Tensor) -> Tensor:
    """The original whose ``_householder`` is ``Q`` made orthogonal, as PyTorch's: ``geqrf``'s
    reflectors, and on the diagonal the signs of R's (Q R with R's diagonal positive), negated
    where geqrf made no reflection (tau 0), which the map's tau of 2 makes."""
    transposed = Q.shape[-2] < Q.shape[-1]
    with no_grad():
        A, tau = geqrf(Q.mT if transposed else Q)
        signs = A.diagonal(dim1=-2, dim2=-1).sign()
        A.diagonal(dim1=-2, dim2=-1).copy_(where(tau == 0, -signs, signs))
    return A.mT if transposed else A


def _orthogonal_base(Q: Tensor) -> Tensor:
    """A square orthogonal matrix whose first columns are (tall) ``Q`` made orthogonal."""
    n, k = Q.shape[-2:]
    if n == k:
        return Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
    N = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
    return _make_orthogonal(cat([Q, N], dim=-1))


def orthogonal(
    module: M,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> M:
    """Make ``module.<name>`` a matrix (or batch of matrices) with orthonormal columns, or
    rows if it is wide: ``Q.mT @ Q`` (``Q @ Q.mT``) is the identity. It is computed from the
    lower triangle of the original, as a skew-symmetric matrix ``A``, by ``orthogonal_map``:
    ``"matrix_exp"`` (``exp(A)``, the default for a square matrix) or ``"cayley"``
    (``(I - A/2)^-1 (I + A/2)``), or from the reflectors below its diagonal by
    ``"householder"`` (``linalg.householder_product``, the default for a matrix that is not
    square); with ``use_trivialization`` (the default), times the matrix
    ``module.parametrizations.<name>[0].base``, which the initial value (made orthogonal by a
    QR decomposition if it is not) and each assigned value become. Returns the module.

    A complex weight raises NotImplementedError (PyTorch's unitary case needs a complex QR
    decomposition).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> layer = orthogonal(nn.Linear(3, 5), orthogonal_map="cayley")
    >>> Q = layer.weight
    >>> (Q.mT @ Q).allclose(sg.eye(3), atol=1e-6)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight norm -----------------------------------------------------------------------------


class _WeightNorm(Module):
    """``weight_norm``'s parametrization: ``g * v / ||v||`` from ``(g, v)``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim  # -1: the norm of the whole tensor, as PyTorch

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Weight normalisation (Salimans and Kingma, https://arxiv.org/abs/1602.07868) as a
    parametrization: ``module.<name>`` is computed as ``g * v / ||v||`` from
    ``parametrizations.<name>.original0`` (g, the norm over every dim but ``dim``; over all
    of it for ``dim=None``) and ``original1`` (v, the direction). Returns the module.

    PyTorch also loads a ``state_dict`` saved with the legacy ``nn.utils.weight_norm``
    (``weight_g`` and ``weight_v`` keys) into it; scratchgrad's ``load_state_dict`` has no
    hook for that, so such keys are reported missing and unexpected.

    >>> from scratchgrad import nn
    >>> layer = weight_norm(nn.Linear(3, 4))
    >>> list(layer.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    >>> layer.parametrizations.weight.original0.shape
    scratchgrad.Size([4, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# ---- spectral norm ---------------------------------------------------------------------------


class _SpectralNorm(Module):
    """``spectral_norm``'s parametrization: the weight divided by its largest singular value
    (as a matrix with ``dim`` first), estimated by power iteration with the buffers ``_u``
    and ``_v``, refined in training mode only; a vector is divided by its norm."""

    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:  # a vector's norm needs no estimate
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                u = F.normalize(weight_mat.new_empty(h).normal_(0, 1), dim=0, eps=eps)
                v = F.normalize(weight_mat.new_empty(w).normal_(0, 1), dim=0, eps=eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(weight_mat, 15)  # start from good estimates, as PyTorch

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Refine ``_u`` and ``_v`` in place (a module copied for each device shares them)."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.mT.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # copies: a graph of an earlier forward (loss = D(real) - D(fake)) saved the old ones
        u, v = self._u.clone(), self._v.clone()
        return weight / u.dot(weight_mat.mv(v))

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: M,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> M:
    """Spectral normalisation (Miyato et al., https://arxiv.org/abs/1802.05957) as a
    parametrization: ``module.<name>`` is the original divided by its largest singular value
    (a vector: by its norm), estimated by power iteration from the buffers
    ``parametrizations.<name>.0._u`` and ``_v``, which 15 iterations start at registration
    and ``n_power_iterations`` more refine at each read in training mode. ``dim`` (default 0,
    1 for the ConvTranspose layers) is the output dim. Returns the module.

    >>> from scratchgrad import nn
    >>> layer = spectral_norm(nn.Linear(3, 4))
    >>> list(layer.state_dict())  # doctest: +NORMALIZE_WHITESPACE
    ['bias', 'parametrizations.weight.original', 'parametrizations.weight.0._u',
     'parametrizations.weight.0._v']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrization = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, parametrization)
    return module
