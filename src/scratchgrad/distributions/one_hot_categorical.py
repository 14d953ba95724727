"""``OneHotCategorical``, as ``torch.distributions.OneHotCategorical``."""

from __future__ import annotations

from scratchgrad.creation import eye
from scratchgrad.distributions import constraints
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.nn.functional import one_hot
from scratchgrad.tensor import Size, Tensor


class OneHotCategorical(Distribution):
    """``Categorical`` with one-hot vectors of length K for values (the event shape is
    (K,)); ``probs`` and ``logits`` as Categorical's.

    >>> from scratchgrad.creation import tensor
    >>> d = OneHotCategorical(probs=tensor([0.0, 1.0]))
    >>> d.sample().tolist(), d.mode.tolist(), d.event_shape
    ([0.0, 1.0], [0.0, 1.0], scratchgrad.Size([2]))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(
        self,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._categorical = Categorical(probs, logits)
        shape = self._categorical.param_shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        probs = self.probs
        return one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        indices = self._categorical.sample(sample_shape)
        return one_hot(indices, self._categorical._num_events).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The K one-hot vectors along dimension 0.

        >>> from scratchgrad.creation import tensor
        >>> OneHotCategorical(logits=tensor([0.0, 0.0])).enumerate_support().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        n = self.event_shape[0]
        values = eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(n, *(1,) * len(self.batch_shape), n)
        return values.expand(n, *self.batch_shape, n) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` is the straight-through estimator
    (https://arxiv.org/abs/1308.3432): the one-hot sample forward, the gradient of ``probs``
    backward.

    >>> from scratchgrad.creation import tensor
    >>> p = tensor([0.0, 1.0], requires_grad=True)
    >>> d = OneHotCategoricalStraightThrough(probs=p)
    >>> (d.rsample() * tensor([1.0, 2.0])).sum().backward()
    >>> d.rsample().tolist(), p.grad is not None
    ([0.0, 1.0], True)
    """

    has_rsample = True

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
