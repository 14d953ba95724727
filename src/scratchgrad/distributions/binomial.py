"""``Binomial`` and ``Multinomial``, as ``torch.distributions``'."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import arange, tensor
from scratchgrad.distributions import constraints
from scratchgrad.distributions.bernoulli import BinaryProbs
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.utils import broadcast_all, numpy_draw
from scratchgrad.nn.functional import one_hot
from scratchgrad.special import gammaln
from scratchgrad.tensor import Size, Tensor, where


class Binomial(BinaryProbs):
    """The number of successes in ``total_count`` Bernoulli trials of success probability
    ``probs`` (or ``sigmoid(logits)``); ``total_count`` broadcasts with it.

    >>> from scratchgrad.creation import tensor
    >>> d = Binomial(4, tensor([0.5]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([2.0])).tolist()]
    ([2.0], [-0.9808])
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self,
        total_count: Tensor | int = 1,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._init_probs_or_logits(probs, logits, validate_args, total_count=total_count)
        self.total_count = self.total_count.type_as(self._param)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            shape = self._extended_shape(sample_shape)
            return numpy_draw("binomial", shape, self.total_count, self.probs)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        # n log(1 + exp(logits)), written to stay finite for logits of either sign; max(logits,
        # 0) as (logits + |logits|) / 2, whose gradient at 0 is 1/2, as PyTorch's (clamp's is
        # 1 there, and the gradient of log_prob at logits 0 was off by n / 2)
        positive_part = (logits + logits.abs()) / 2
        log_normalizer = n * (positive_part + (-logits.abs()).exp().log1p())
        return (
            value * logits
            - gammaln(value + 1)
            - gammaln(n - value + 1)
            - log_normalizer
            + gammaln(n + 1)
        )

    def entropy(self) -> Tensor:
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The counts 0, ..., total_count along dimension 0 (one total_count for all).

        >>> Binomial(2, tensor([0.5])).enumerate_support().tolist()
        [[0.0], [1.0], [2.0]]
        """
        n = int(self.total_count.max())
        if not self.total_count.min() == n:
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`."
            )
        values = arange(1 + n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values


class Multinomial(Distribution):
    """Counts of ``total_count`` draws (one int for all) from the categories of ``probs`` or
    ``logits`` (as Categorical's); the event is the vector of counts.

    >>> from scratchgrad.creation import tensor
    >>> d = Multinomial(4, tensor([0.25, 0.75]))
    >>> d.mean.tolist(), round(d.log_prob(tensor([1.0, 3.0])).item(), 4)
    ([1.0, 3.0], -0.863)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(
        self,
        total_count: int = 1,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        # total_count category draws, counted
        with no_grad():
            indices = self._categorical.sample((self.total_count, *sample_shape))
            counts = one_hot(indices, self._categorical._num_events).sum(0)
            return counts.to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # a category of probability 0 drawn 0 times adds nothing (not 0 * -inf)
        logits = where((value == 0) & (logits == -float("inf")), 0.0, logits)
        return gammaln(value.sum(-1) + 1) - gammaln(value + 1).sum(-1) + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        n = tensor(float(self.total_count), dtype=self.probs.dtype)
        term1 = n * self._categorical.entropy() - gammaln(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        return term1 + (binomial_probs * gammaln(support + 1)).sum((0, -1))
