"""``NegativeBinomial``, as ``torch.distributions.NegativeBinomial``."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.distributions import constraints
from scratchgrad.distributions.bernoulli import BinaryProbs
from scratchgrad.distributions.gamma import Gamma
from scratchgrad.distributions.utils import lazy_property, numpy_draw
from scratchgrad.nn.functional import logsigmoid
from scratchgrad.special import gammaln
from scratchgrad.tensor import Size, Tensor


class NegativeBinomial(BinaryProbs):
    """The number of successes before ``total_count`` failures, in independent trials that
    succeed with probability ``probs`` (or ``sigmoid(logits)``); ``total_count`` may be
    fractional (a Gamma-Poisson mixture, which is how ``sample`` draws).

    >>> from scratchgrad.creation import tensor
    >>> d = NegativeBinomial(tensor([3.0]), probs=tensor([0.5]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([0.0])).tolist()]
    ([3.0], [-2.0794])
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self,
        total_count: Tensor | float,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._init_probs_or_logits(probs, logits, validate_args, total_count=total_count)
        self.total_count = self.total_count.to(self._param.dtype)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self) -> Gamma:
        # not validated: total_count may be 0
        rate = (-self.logits).exp()
        return Gamma(concentration=self.total_count, rate=rate, validate_args=False)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            rate = self._gamma.sample(sample_shape)
            return numpy_draw("poisson", tuple(rate.shape), rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_unnormalized = n * logsigmoid(-logits) + value * logsigmoid(logits)
        log_normalization = -gammaln(n + value) + gammaln(1.0 + value) + gammaln(n)
        # total_count == 0 and value == 0 has probability 1, where gammaln(0) is infinite
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
