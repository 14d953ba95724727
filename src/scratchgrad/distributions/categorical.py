"""``Categorical``, as ``torch.distributions.Categorical``."""

from __future__ import annotations

import math

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import arange, full, rand
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.utils import lazy_property, logits_to_probs, probs_to_logits
from scratchgrad.dtypes import finfo
from scratchgrad.tensor import Size, Tensor, broadcast_tensors


def probs_or_logits(probs: Tensor | float | None, logits: Tensor | float | None) -> tuple:
    """("probs", probs) or ("logits", logits): the one given (exactly one must be)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


class Categorical(Distribution):
    """A distribution over the indices 0, ..., K - 1 of the last dimension of ``probs``
    (non-negative, normalized to sum to 1) or ``logits`` (unnormalized log-probabilities,
    normalized by subtracting their logsumexp); the leading dimensions are the batch.
    ``sample`` draws indices (int64), as ``multinomial``.

    >>> from scratchgrad.creation import tensor
    >>> d = Categorical(probs=tensor([1.0, 3.0]))
    >>> d.probs.tolist(), [round(x, 4) for x in d.log_prob(tensor([0, 1])).tolist()]
    ([0.25, 0.75], [-1.3863, -0.2877])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(
        self,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._param_name, param = probs_or_logits(probs, logits)
        if param.dim() < 1:
            raise ValueError(f"`{self._param_name}` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    @property
    def _param(self) -> Tensor:
        return self.__dict__[self._param_name]

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        """The normalized log-probabilities."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """The normalized probabilities."""
        return logits_to_probs(self.logits)

    @property
    def mean(self) -> Tensor:
        return self._nans()

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self._nans()

    def _nans(self) -> Tensor:
        probs = self.probs
        return full(self._extended_shape(), math.nan, dtype=probs.dtype, device=probs.device)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        # NOTE: by the inverse CDF: the index is the number of CDF values at or below a
        # uniform draw U < 1; dividing by the last CDF value makes it exactly 1, so the index
        # never lands on a category of probability zero (neither inside nor at the end).
        # Drawn with ``rand`` (a draw that scratchgrad.jit replays and vmap batches).
        with no_grad():
            cdf = self.probs.cumsum(-1)
            cdf = cdf / cdf[..., -1:]
            u = rand(*self._extended_shape(sample_shape), 1, dtype=cdf.dtype, device=cdf.device)
            return (cdf <= u).sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, log_pmf = broadcast_tensors(value.long().unsqueeze(-1), self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        # a probability of zero has logit -inf: clamped, 0 * logit is 0, not NaN
        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The indices 0, ..., K - 1 along dimension 0, expanded over the batch.

        >>> from scratchgrad.creation import tensor
        >>> Categorical(logits=tensor([0.0, 0.0])).enumerate_support().tolist()
        [0, 1]
        """
        values = arange(self._num_events, device=self._param.device)
        values = values.reshape(-1, *(1,) * len(self._batch_shape))
        return values.expand(-1, *self._batch_shape) if expand else values
