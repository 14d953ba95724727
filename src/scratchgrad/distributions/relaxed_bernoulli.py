"""``RelaxedBernoulli`` and ``LogitRelaxedBernoulli`` (the binary Concrete distribution,
https://arxiv.org/abs/1611.00712), as ``torch.distributions``': reparameterized samples in
(0, 1) that approach Bernoulli ones as the temperature goes to 0."""

from __future__ import annotations

from scratchgrad.creation import rand
from scratchgrad.distributions import constraints
from scratchgrad.distributions.bernoulli import BinaryProbs
from scratchgrad.distributions.transformed_distribution import TransformedDistribution
from scratchgrad.distributions.transforms import SigmoidTransform
from scratchgrad.distributions.utils import broadcast_all, clamp_probs
from scratchgrad.tensor import Size, Tensor


def as_temperature(temperature: Tensor | float, param: Tensor) -> Tensor:
    """The temperature as a tensor (a number becomes one of the parameter's dtype)."""
    if isinstance(temperature, Tensor):
        return temperature
    return param.new_tensor(temperature)


class LogitRelaxedBernoulli(BinaryProbs):
    """The log-odds of a ``RelaxedBernoulli`` sample: ``(logit(u) + logits) / temperature``
    for ``u`` uniform.

    >>> from scratchgrad.creation import tensor
    >>> d = LogitRelaxedBernoulli(tensor(0.5), logits=tensor([0.0]))
    >>> [round(x, 4) for x in d.log_prob(tensor([0.0])).tolist()]
    [-2.0794]
    """

    support = constraints.real
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._init_probs_or_logits(probs, logits, validate_args)
        self.temperature = as_temperature(temperature, self._param)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """The binary Concrete distribution on (0, 1): ``sigmoid`` of a
    ``LogitRelaxedBernoulli`` sample; reparameterized.

    >>> from scratchgrad.creation import tensor
    >>> d = RelaxedBernoulli(tensor(0.5), probs=tensor([0.3]))
    >>> x = d.rsample((4,))
    >>> tuple(x.shape), bool(((x > 0) & (x < 1)).all())
    ((4, 1), True)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs
