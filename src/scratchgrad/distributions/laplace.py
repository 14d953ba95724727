"""``Laplace``, as ``torch.distributions.Laplace``."""

from __future__ import annotations

from scratchgrad.creation import rand
from scratchgrad.distributions.distribution import LocationScale
from scratchgrad.dtypes import finfo
from scratchgrad.tensor import Size, Tensor


class Laplace(LocationScale):
    """The Laplace (double exponential) distribution of location ``loc`` and scale ``scale``.

    >>> from scratchgrad.creation import tensor
    >>> d = Laplace(tensor([0.0]), tensor([1.0]))
    >>> d.variance.tolist(), d.cdf(tensor([0.0])).tolist()
    ([2.0], [0.5])
    """

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2**0.5) * self.scale

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        # U uniform on [eps - 1, 1), as PyTorch's: log1p(-|U|) stays finite
        eps = finfo(self.loc.dtype).eps
        u = rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()
