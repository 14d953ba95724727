"""``FisherSnedecor`` (the F distribution), as ``torch.distributions.FisherSnedecor``."""

from __future__ import annotations

import math

from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.gamma import Gamma
from scratchgrad.distributions.utils import broadcast_all
from scratchgrad.dtypes import finfo
from scratchgrad.special import gammaln
from scratchgrad.tensor import Size, Tensor, where


class FisherSnedecor(Distribution):
    """The F distribution of ``df1`` and ``df2`` degrees of freedom: the ratio of two
    chi-squared variables, each divided by its degrees of freedom; reparameterized (through
    two gamma samples).

    >>> from scratchgrad.creation import tensor
    >>> d = FisherSnedecor(tensor([4.0]), tensor([6.0]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([1.0])).tolist()]
    ([1.5], [-0.8802])
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(
        self, df1: Tensor | float, df2: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        # made (and so checked) first, as PyTorch's: a bad df is reported by Gamma
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        df2 = where(self.df2 > 2, self.df2, math.nan)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        return where(df1 > 2, (df1 - 2) / df1 * df2 / (df2 + 2), math.nan)

    @property
    def variance(self) -> Tensor:
        # NaN into the formula where undefined (as PyTorch: NaN gradients there too)
        df1, df2 = self.df1, where(self.df2 > 4, self.df2, math.nan)
        return 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        # X1 ~ Gamma(df1 / 2, df1) and X2 ~ Gamma(df2 / 2, df2): X1 / X2 ~ F(df1, df2)
        x1 = self._gamma1.rsample(sample_shape)
        tiny = finfo(x1.dtype).tiny
        x2 = self._gamma2.rsample(sample_shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = gammaln(ct1 + ct2) - gammaln(ct1) - gammaln(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
