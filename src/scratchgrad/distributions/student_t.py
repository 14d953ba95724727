"""``StudentT``, as ``torch.distributions.StudentT``."""

from __future__ import annotations

import math

from scratchgrad.creation import randn
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.gamma import Chi2
from scratchgrad.distributions.utils import broadcast_all
from scratchgrad.special import digamma, gammaln
from scratchgrad.tensor import Size, Tensor, where


class StudentT(Distribution):
    """Student's t distribution of ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``; ``rsample`` is ``loc + scale * X / sqrt(Z / df)`` for X standard normal and Z
    chi-squared (reparameterized in ``df`` too, through the gamma sample).

    >>> from scratchgrad.creation import tensor
    >>> d = StudentT(tensor([3.0]))
    >>> d.variance.tolist(), [round(x, 4) for x in d.log_prob(tensor([0.0])).tolist()]
    ([3.0], [-1.0009])
    """

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(
        self,
        df: Tensor | float,
        loc: Tensor | float = 0.0,
        scale: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        df, loc, scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(df)  # first: a bad df is reported by Chi2, as PyTorch's
        self._init_params(validate_args, df=df, loc=loc, scale=scale)

    @property
    def mean(self) -> Tensor:
        return where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        # df - 2 kept away from 0 where unused, so no NaN flows back through where (PyTorch's
        # formula only touches df > 2)
        finite = self.scale.pow(2) * df / where(df > 2, df - 2, 1.0)
        return where(df > 2, finite, where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * math.log(math.pi)
            + gammaln(0.5 * df)
            - gammaln(0.5 * (df + 1.0))
        )
        return -0.5 * (df + 1.0) * (y.pow(2) / df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = gammaln(0.5 * df) + math.lgamma(0.5) - gammaln(0.5 * (df + 1))
        return (
            self.scale.log()
            + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
            + 0.5 * df.log()
            + lbeta
        )
