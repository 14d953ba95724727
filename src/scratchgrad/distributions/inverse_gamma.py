"""``InverseGamma``, as ``torch.distributions.InverseGamma``."""

from __future__ import annotations

import math

from scratchgrad.distributions import constraints
from scratchgrad.distributions.gamma import Gamma
from scratchgrad.distributions.transformed_distribution import TransformedDistribution
from scratchgrad.distributions.transforms import PowerTransform
from scratchgrad.special import digamma, gammaln
from scratchgrad.tensor import Tensor, where


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``; reparameterized.

    >>> from scratchgrad.creation import tensor
    >>> d = InverseGamma(tensor([3.0]), tensor([2.0]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([1.0])).tolist()]
    ([1.0], [-0.6137])
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(
        self,
        concentration: Tensor | float,
        rate: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base.rate.new_ones(())
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        c = self.concentration
        return where(c > 1, self.rate / (c - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        return where(c > 2, self.rate.square() / ((c - 1).square() * (c - 2)), math.inf)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c + self.rate.log() + gammaln(c) - (1 + c) * digamma(c)
