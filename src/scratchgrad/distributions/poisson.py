"""``Poisson``, as ``torch.distributions.Poisson``."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.distributions import constraints
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.distributions.utils import broadcast_all, numpy_draw
from scratchgrad.special import gammaln, xlogy
from scratchgrad.tensor import Size, Tensor


class Poisson(ExponentialFamily):
    """Counts 0, 1, 2, ... of mean ``rate``; no entropy (as PyTorch's).

    >>> from scratchgrad.creation import tensor
    >>> d = Poisson(tensor([2.0]))
    >>> d.variance.tolist(), [round(x, 4) for x in d.log_prob(tensor([0.0])).tolist()]
    ([2.0], [-2.0])
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._init_params(validate_args, rate=rate)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            return numpy_draw("poisson", self._extended_shape(sample_shape), self.rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - gammaln(value + 1)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(x) = x, h(x) = 1 / x!
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp()
