"""``Normal``, as ``torch.distributions.Normal``."""

from __future__ import annotations

import math

from scratchgrad.creation import randn
from scratchgrad.distributions.distribution import LocationScale
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.tensor import Size, Tensor


class Normal(LocationScale, ExponentialFamily):
    """The normal (Gaussian) distribution of mean ``loc`` and standard deviation ``scale``
    (numbers or tensors, broadcast together).

    >>> from scratchgrad.creation import tensor
    >>> d = Normal(tensor([0.0, 1.0]), tensor([1.0, 2.0]))
    >>> [round(x, 4) for x in d.log_prob(tensor([0.0, 1.0])).tolist()]
    [-0.9189, -1.6121]
    """

    _mean_carrier_measure = 0

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        return (
            -((value - self.loc) ** 2) / (2 * var)
            - self.scale.log()
            - math.log(math.sqrt(2 * math.pi))
        )

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(x) = (x, x^2)
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(-2)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        # loc^2 / (2 scale^2) + log(sqrt(2 pi) scale)
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()
