"""``Uniform``, as ``torch.distributions.Uniform``."""

from __future__ import annotations

import math

from scratchgrad.creation import rand
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.tensor import Size, Tensor


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``.

    >>> from scratchgrad.creation import tensor
    >>> d = Uniform(tensor([0.0]), tensor([4.0]))
    >>> d.log_prob(tensor([1.0])).exp().tolist(), d.cdf(tensor([1.0])).tolist()
    ([0.25], [0.25])
    """

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {
            "low": constraints.less_than(self.high),
            "high": constraints.greater_than(self.low),
        }

    @property
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    def __init__(
        self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._init_params(validate_args, low=low, high=high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = self.low.le(value).type_as(self.low) * self.high.gt(value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
