"""``LowRankMultivariateNormal``, as ``torch.distributions.LowRankMultivariateNormal``: a
covariance ``W @ W.mT + diag(D)`` of a low-rank factor ``W`` (n x m) and a positive diagonal
``D``, handled through the m x m "capacitance" matrix ``I + W^T D^-1 W`` (the Woodbury
identity and the matrix determinant lemma), never an n x n factorization."""

from __future__ import annotations

import math

from scratchgrad import linalg
from scratchgrad.creation import eye, randn
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.multivariate_normal import mahalanobis
from scratchgrad.distributions.utils import lazy_property
from scratchgrad.tensor import Size, Tensor, broadcast_tensors


def _capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """The lower Cholesky factor of ``I + W^T D^-1 W``."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = Wt_Dinv @ W + eye(W.shape[-1], dtype=W.dtype, device=W.device)
    return linalg.cholesky(K)


def _lowrank_logdet(D: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``log det(W W^T + D) = log det(C) + log det(D)`` (the matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
    Wt_Dinv_x = ((W.mT / D.unsqueeze(-2)) @ x.unsqueeze(-1)).squeeze(-1)
    return (x.pow(2) / D).sum(-1) - mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal of mean ``loc`` and covariance ``cov_factor @ cov_factor.mT
    + diag(cov_diag)``; the batch dimensions of the three broadcast.

    >>> from scratchgrad.creation import ones, zeros
    >>> d = LowRankMultivariateNormal(zeros(2), ones(2, 1), ones(2))
    >>> d.covariance_matrix.tolist(), round(d.log_prob(zeros(2)).item(), 4)
    ([[2.0, 1.0], [1.0, 2.0]], -2.3872)
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        cov_factor: Tensor,
        cov_diag: Tensor,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape!r}")
        try:
            loc_, self.cov_factor, cov_diag_ = broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
            )
        except (RuntimeError, ValueError) as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                f"cov_diag {cov_diag.shape}"
            ) from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Distribution | None = None) -> Distribution:
        new = super().expand(batch_shape, _instance)
        for name in ("scale_tril", "covariance_matrix", "precision_matrix"):
            new.__dict__.pop(name, None)  # made for the old batch shape: made again if asked
        return new

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
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W.pow(2).sum(-1) + D).expand((*self._batch_shape, *self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance, as ``D^1/2 chol(I + D^-1/2 W W^T
        D^-1/2)``: that matrix has eigenvalues of at least 1, so its factorization is stable
        (http://www.gaussianprocess.org/gpml/, Section 3.4.3)."""
        n = self._event_shape[0]
        D_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / D_sqrt
        K = Dinvsqrt_W @ Dinvsqrt_W.mT + eye(n, dtype=D_sqrt.dtype, device=D_sqrt.device)
        return (D_sqrt * linalg.cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """``W @ W.mT + diag(D)``."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (W @ W.mT + D.diag_embed()).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse covariance by the Woodbury identity: ``D^-1 - D^-1 W C^-1 W^T D^-1``."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        A = linalg.solve_triangular(self._capacitance_tril, W.mT / D.unsqueeze(-2), upper=False)
        return (D.reciprocal().diag_embed() - A.mT @ A).expand(self._matrix_shape())

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        eps_W = randn(*shape[:-1], W.shape[-1], dtype=self.loc.dtype, device=self.loc.device)
        eps_D = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (W @ eps_W.unsqueeze(-1)).squeeze(-1) + D.sqrt() * eps_D

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        W, D, C = (
            self._unbroadcasted_cov_factor,
            self._unbroadcasted_cov_diag,
            self._capacitance_tril,
        )
        M = _lowrank_mahalanobis(W, D, value - self.loc, C)
        log_det = _lowrank_logdet(D, C)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self) -> Tensor:
        log_det = _lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return H.expand(self._batch_shape) if self._batch_shape else H
