"""``Cauchy``, as ``torch.distributions.Cauchy``."""

from __future__ import annotations

import math

from scratchgrad.creation import full, rand
from scratchgrad.distributions.distribution import LocationScale
from scratchgrad.tensor import Size, Tensor


class Cauchy(LocationScale):
    """The Cauchy (Lorentz) distribution of median ``loc`` and half width ``scale``: no mean
    or variance (NaN and inf, as PyTorch's).

    >>> from scratchgrad.creation import tensor
    >>> d = Cauchy(tensor([0.0]), tensor([1.0]))
    >>> d.cdf(tensor([1.0])).tolist(), [round(x, 4) for x in d.log_prob(tensor([0.0])).tolist()]
    ([0.75], [-1.1447])
    """

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        # the inverse CDF of U uniform on [0, 1): tan(pi (U - 1/2)), -inf at U = 0
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (math.pi * (u - 0.5)).tan() * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (
            -math.log(math.pi) - self.scale.log() - ((value - self.loc) / self.scale).pow(2).log1p()
        )

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
