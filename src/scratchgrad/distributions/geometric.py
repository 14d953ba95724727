"""``Geometric``, as ``torch.distributions.Geometric``."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import rand, zeros_like
from scratchgrad.distributions import constraints
from scratchgrad.distributions.bernoulli import BinaryProbs
from scratchgrad.distributions.distribution import _shown
from scratchgrad.distributions.utils import broadcast_all
from scratchgrad.dtypes import finfo
from scratchgrad.nn.functional import binary_cross_entropy_with_logits
from scratchgrad.tensor import Size, Tensor, where


class Geometric(BinaryProbs):
    """The number of failures before the first success of Bernoulli trials of success
    probability ``probs`` (in (0, 1]) or ``sigmoid(logits)``.

    >>> from scratchgrad.creation import tensor
    >>> d = Geometric(tensor([0.5]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([1.0])).tolist()]
    ([1.0], [-1.3863])
    """

    support = constraints.nonnegative_integer

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._init_probs_or_logits(probs, logits, validate_args)
        # a probability of 0 is in the unit interval but makes no distribution
        if self._validate_args and probs is not None and not (self.probs > 0).all():
            raise ValueError(
                f"Expected parameter probs ({type(self.probs).__name__} of shape "
                f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                f"found invalid values:\n{_shown(self.probs)}"
            )

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        # the inverse CDF: floor(log U / log(1 - p)) for U uniform on [tiny, 1)
        with no_grad():
            probs = self.probs
            tiny = finfo(probs.dtype).tiny
            u = rand(self._extended_shape(sample_shape), dtype=probs.dtype, device=probs.device)
            return (u.clamp(min=tiny).log() / (-probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # a certain success has no failures: 0 * log(0) is 0 there
        probs = where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return (
            binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
        )
