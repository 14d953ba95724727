"""``Wishart``, as ``torch.distributions.Wishart``: the distribution of ``sum_k x_k x_k^T`` for
``df`` independent normal vectors ``x_k`` of covariance ``S`` (for integer ``df``), over
positive-definite matrices; sampled by the Bartlett decomposition."""

from __future__ import annotations

import math
import warnings

from scratchgrad.creation import arange, randn, tensor
from scratchgrad.distributions import constraints
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.distributions.gamma import Chi2
from scratchgrad.distributions.multivariate_normal import CholeskyParametrized, one_matrix
from scratchgrad.dtypes import finfo
from scratchgrad.special import digamma
from scratchgrad.tensor import Size, Tensor, broadcast_shapes, where


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma: ``sum_{i < p} digamma(x - i / 2)``, the derivative of
    ``mvlgamma(x, p)``."""
    halves = arange(p, dtype=x.dtype, device=x.device) / 2
    return digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(CholeskyParametrized, ExponentialFamily):
    """The Wishart distribution of ``df`` degrees of freedom (more than the matrices' size
    less one) and scale ``covariance_matrix`` S (or its ``precision_matrix`` or its
    ``scale_tril``: exactly one): mean ``df * S``.

    >>> from scratchgrad.creation import eye, tensor
    >>> d = Wishart(tensor(4.0), covariance_matrix=eye(2))
    >>> d.mean.tolist(), round(d.log_prob(eye(2)).item(), 4)
    ([[4.0, 0.0], [0.0, 4.0]], -4.2242)
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Tensor | float,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        name, matrix = one_matrix(AssertionError, covariance_matrix, precision_matrix, scale_tril)
        if matrix.dim() < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        p = matrix.shape[-1]
        if not isinstance(df, Tensor):
            df = tensor(df, dtype=matrix.dtype, device=matrix.device)
        batch_shape = Size(broadcast_shapes(matrix.shape[:-2], df.shape))
        # NOTE: df is expanded to the batch shape also when given as a number (PyTorch's stays
        # 0-d, and its mean and variance then fail for a batch of matrices)
        self.df = df.expand(batch_shape)
        if (self.df <= p - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if (self.df < p).any():
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for "
                "ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        self._init_matrix(name, matrix, batch_shape, matrix.shape[-2:], validate_args)
        # the squared diagonal of the Bartlett factor: chi-squared of df, df - 1, ... df - p + 1
        offsets = arange(p, dtype=matrix.dtype, device=matrix.device)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - offsets)

    def _matrix_shape(self) -> Size:
        return self._batch_shape + self._event_shape

    def _df_matrix(self) -> Tensor:
        """df with two trailing dimensions, to scale a batch of matrices."""
        return self.df.reshape(*self._batch_shape, 1, 1)

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        # NaN where df <= p + 1: there the density has no maximum inside the support
        factor = self.df - self._event_shape[-1] - 1
        factor = where(factor <= 0, math.nan, factor)
        return factor.reshape(*self._batch_shape, 1, 1) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        S = self.covariance_matrix
        diagonal = S.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (S.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: tuple) -> Tensor:
        """``L A A^T L^T`` for ``L`` the scale's Cholesky factor and ``A`` lower triangular with
        standard normals below the diagonal and the square roots of chi-squared variables of
        ``df - i`` degrees of freedom on it (Bartlett's decomposition)."""
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        # clamped: a zero on the diagonal would make the sample singular
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=finfo(L.dtype).eps)
        shape = (*sample_shape, *self._batch_shape, p, p)
        A = randn(shape, dtype=L.dtype, device=L.device).tril(-1) + diagonal.diag_embed()
        factor = L @ A
        return factor @ factor.mT

    def rsample(
        self, sample_shape: tuple = Size(), max_try_correction: int | None = None
    ) -> Tensor:
        """Samples by the Bartlett decomposition, where a sample is singular (rounding, or
        ``df < p``) drawn again up to ``max_try_correction`` (default 10) times, with a
        warning; a sample still singular then has a log_prob of -inf.

        NOTE: PyTorch's check is inverted (it warns and draws again where the samples are
        not singular); this one draws again only the singular ones."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sampling(Size(sample_shape))
        singular = ~self.support.check(sample)
        if singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
        for _ in range(max_try_correction):
            if not singular.any():
                break
            again = self._bartlett_sampling(Size(sample_shape))
            sample = where(singular.unsqueeze(-1).unsqueeze(-1), again, sample)
            singular = ~self.support.check(sample)
        return sample

    def _half_log_det_2s(self) -> Tensor:
        """``log det(2 S) / 2``: the density's denominator is ``exp(df *`` this ``) *
        Gamma_p(df / 2)``."""
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return p * math.log(2) / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        p = self._event_shape[-1]
        log_det = value.slogdet().logabsdet
        # tr(S^-1 X): the trace of the solution of S Y = X
        trace = value.cholesky_solve(self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1)
        return (
            (self.df - p - 1) / 2 * log_det
            - trace.sum(-1) / 2
            - self.df * self._half_log_det_2s()
            - (self.df / 2).mvlgamma(p)
        )

    def entropy(self) -> Tensor:
        p = self._event_shape[-1]
        return (
            (p + 1) * self._half_log_det_2s()
            + (self.df / 2).mvlgamma(p)
            - (self.df - p - 1) / 2 * _mvdigamma(self.df / 2, p)
            + self.df * p / 2
        )

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(X) = (X, log det X)
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        # df * log det(2 S) / 2 + mvlgamma(df / 2) at df = 2 y + p + 1 and S = (-2 x)^-1
        p = self._event_shape[-1]
        half_df = y + (p + 1) / 2
        log_det_scale = -(-2 * x).slogdet().logabsdet
        return half_df * (log_det_scale + p * math.log(2)) + half_df.mvlgamma(p)
