"""``Bernoulli``, as ``torch.distributions.Bernoulli``."""

from __future__ import annotations

import math

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import arange, rand
from scratchgrad.distributions import constraints
from scratchgrad.distributions.categorical import probs_or_logits
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from scratchgrad.nn.functional import binary_cross_entropy_with_logits, softplus
from scratchgrad.tensor import Size, Tensor


class BinaryProbs(Distribution):
    """A distribution given by the probability ``probs`` of a success or its log-odds
    ``logits`` (exactly one; the other is computed when first asked, and never checked): what
    Bernoulli, Geometric and Binomial share."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}

    def _init_probs_or_logits(
        self,
        probs: Tensor | float | None,
        logits: Tensor | float | None,
        validate_args: bool | None,
        **others: Tensor | float,
    ) -> None:
        """Set ``others`` (broadcast with the parameter given, before it) and the parameter."""
        self._param_name, param = probs_or_logits(probs, logits)
        self._init_params(validate_args, **others, **{self._param_name: param})

    @property
    def _param(self) -> Tensor:
        return self.__dict__[self._param_name]

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds of a success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of a success."""
        return logits_to_probs(self.logits, is_binary=True)


class Bernoulli(BinaryProbs, ExponentialFamily):
    """Ones with probability ``probs`` (or ``sigmoid(logits)``), zeros otherwise.

    >>> from scratchgrad.creation import tensor
    >>> d = Bernoulli(probs=tensor([0.25]))
    >>> [round(x, 4) for x in d.log_prob(tensor([1.0])).tolist()], d.variance.tolist()
    ([-1.3863], [0.1875])
    """

    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._init_probs_or_logits(probs, logits, validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        # NaN where both values are as likely
        return (self.probs >= 0.5).to(self.probs.dtype).masked_fill(self.probs == 0.5, math.nan)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        # U < p with U uniform on [0, 1): drawn with ``rand``, as Categorical's
        with no_grad():
            probs = self.probs
            u = rand(self._extended_shape(sample_shape), dtype=probs.dtype, device=probs.device)
            return (u < probs).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        # t(x) = x
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return softplus(x)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The values 0 and 1 along dimension 0, in the parameters' dtype.

        >>> from scratchgrad.creation import tensor
        >>> Bernoulli(tensor([0.5, 0.5])).enumerate_support().tolist()
        [[0.0, 0.0], [1.0, 1.0]]
        """
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values
