"""``Exponential``, as ``torch.distributions.Exponential``."""

from __future__ import annotations

from scratchgrad.creation import rand, zeros_like
from scratchgrad.distributions import constraints
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.tensor import Size, Tensor


class Exponential(ExponentialFamily):
    """The exponential distribution of rate ``rate`` (mean ``1 / rate``).

    >>> from scratchgrad.creation import tensor
    >>> d = Exponential(tensor([2.0]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([1.0])).tolist()]
    ([0.5], [-1.3069])
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._init_params(validate_args, rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        # inverse CDF of U in [0, 1): -log(1 - U) is Exp(1), finite since U < 1
        u = rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        return -(-u).log1p() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(x) = x
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -(-x).log()
