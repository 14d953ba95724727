"""``MultivariateNormal``, as ``torch.distributions.MultivariateNormal``: every computation
goes through the lower Cholesky factor ``L`` of the covariance (``scale_tril``), unbroadcast
(its own batch shape, which broadcasts with loc's)."""

from __future__ import annotations

import math

from scratchgrad import linalg
from scratchgrad.backend import xp
from scratchgrad.creation import eye, randn
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.utils import lazy_property
from scratchgrad.linalg.legacy import cholesky_inverse
from scratchgrad.tensor import Size, Tensor


def mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` over the last dimension, the batch dimensions of ``L`` and ``x``
    broadcast together."""
    return linalg.solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1).pow(2).sum(-1)


def half_log_det(L: Tensor) -> Tensor:
    """Half the log-determinant of ``L L^T``: the sum of the logs of L's diagonal."""
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    # the lower Cholesky factor of P^-1 without inverting P: see
    # https://nbviewer.jupyter.org/gist/fehiepsi/5ef8e09e61604f10607380467eb82006
    Lf = linalg.cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    identity = eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return linalg.solve_triangular(L_inv, identity, upper=False)


def one_matrix(
    error: type[Exception],
    covariance_matrix: Tensor | None,
    precision_matrix: Tensor | None,
    scale_tril: Tensor | None,
) -> tuple[str, Tensor]:
    """The name and value of the one matrix given; ``error`` unless exactly one is."""
    matrices = {
        "covariance_matrix": covariance_matrix,
        "precision_matrix": precision_matrix,
        "scale_tril": scale_tril,
    }
    given = [(name, m) for name, m in matrices.items() if m is not None]
    if len(given) != 1:
        raise error(
            "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."
        )
    return given[0]


class CholeskyParametrized(Distribution):
    """The base of the distributions of a positive-definite matrix parameter (a normal's
    covariance, a Wishart's scale) given as one of ``covariance_matrix``, ``precision_matrix``
    or ``scale_tril``, every computation going through its lower Cholesky factor, unbroadcast
    (``_unbroadcasted_scale_tril``: its own batch shape); the others are made when asked."""

    def _init_matrix(
        self,
        name: str,
        matrix: Tensor,
        batch_shape: tuple,
        event_shape: tuple,
        validate_args: bool | None,
    ) -> None:
        """Set the matrix given, validate the parameters, then factor the matrix (so that a
        bad one raises the validation's error, not the factorization's)."""
        self.__dict__[name] = matrix.expand(*batch_shape, -1, -1)
        Distribution.__init__(self, batch_shape, event_shape, validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def _matrix_shape(self) -> Size:
        raise NotImplementedError

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """``scale_tril @ scale_tril.mT``."""
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the covariance."""
        # NOTE: PyTorch's cholesky_inverse, which gives gradients to all of L (the upper
        # triangle too) and raises where L's diagonal has a zero (inv(L L^T) gave ~1e17s)
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())


class MultivariateNormal(CholeskyParametrized):
    """The multivariate normal distribution of mean ``loc`` (the event is its last
    dimension) and exactly one of ``covariance_matrix``, ``precision_matrix`` (both positive
    definite) or ``scale_tril`` (lower triangular with a positive diagonal: the covariance is
    ``scale_tril @ scale_tril.mT``); the batch dimensions of loc and the matrix broadcast.

    >>> from scratchgrad.creation import tensor, zeros
    >>> d = MultivariateNormal(zeros(2), tensor([[4.0, 0.0], [0.0, 1.0]]))
    >>> round(d.log_prob(zeros(2)).item(), 4), d.variance.tolist()
    (-2.531, [4.0, 1.0])
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, matrix = one_matrix(ValueError, covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            raise ValueError(
                f"{name} must be at least two-dimensional, with optional leading batch dimensions"
                if name != "scale_tril"
                else "scale_tril matrix must be at least two-dimensional, with optional "
                "leading batch dimensions"
            )
        batch_shape = _batch_shape(matrix, loc)
        self.loc = loc.expand(*batch_shape, -1)
        self._init_matrix(name, matrix, batch_shape, self.loc.shape[-1:], validate_args)

    def _matrix_shape(self) -> Size:
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return L.pow(2).sum(-1).expand((*self._batch_shape, *self._event_shape))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        L = self._unbroadcasted_scale_tril
        M = mahalanobis(L, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det(L)

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        H = 0.5 * n * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
        return H.expand(self._batch_shape) if self._batch_shape else H


def _batch_shape(matrix: Tensor, loc: Tensor) -> Size:
    """The batch shape of the matrix and loc broadcast together."""
    try:
        return Size(xp.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1]))
    except ValueError:
        raise RuntimeError(
            f"MultivariateNormal: the batch shapes of loc {loc.shape} and the matrix "
            f"{matrix.shape} cannot be broadcast together"
        ) from None
