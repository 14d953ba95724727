"""``RelaxedOneHotCategorical`` (the Concrete or Gumbel-softmax distribution,
https://arxiv.org/abs/1611.00712, https://arxiv.org/abs/1611.01144) and its log,
``ExpRelaxedCategorical``, as ``torch.distributions``': reparameterized samples on the
simplex that approach one-hot ones as the temperature goes to 0."""

from __future__ import annotations

from scratchgrad.creation import full_like, rand
from scratchgrad.distributions import constraints
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.relaxed_bernoulli import as_temperature
from scratchgrad.distributions.transformed_distribution import TransformedDistribution
from scratchgrad.distributions.transforms import ExpTransform
from scratchgrad.distributions.utils import broadcast_all, clamp_probs
from scratchgrad.special import gammaln
from scratchgrad.tensor import Size, Tensor


class ExpRelaxedCategorical(Distribution):
    """The log of a ``RelaxedOneHotCategorical`` sample: ``log_softmax((logits + g) /
    temperature)`` for ``g`` standard Gumbel noise (its support is really a submanifold of
    the reals, as PyTorch says).

    >>> from scratchgrad.creation import tensor
    >>> d = ExpRelaxedCategorical(tensor(1.0), logits=tensor([0.0, 0.0]))
    >>> round(d.rsample().exp().sum().item(), 6)
    1.0
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = as_temperature(temperature, self._categorical._param)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        logits = self.logits
        u = clamp_probs(rand(shape, dtype=logits.dtype, device=logits.device))
        scores = (logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        log_scale = gammaln(full_like(t, float(k))) + t.log() * (k - 1)
        score = logits - value * t
        return (score - score.logsumexp(-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """The Concrete (Gumbel-softmax) distribution on the simplex: ``exp`` of an
    ``ExpRelaxedCategorical`` sample; reparameterized.

    >>> from scratchgrad.creation import tensor
    >>> d = RelaxedOneHotCategorical(tensor(0.5), probs=tensor([0.2, 0.8]))
    >>> x = d.rsample((3,))
    >>> tuple(x.shape), [round(s, 6) for s in x.sum(-1).tolist()]
    ((3, 2), [1.0, 1.0, 1.0])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs
