"""``ContinuousBernoulli`` (https://arxiv.org/abs/1907.06845), as
``torch.distributions.ContinuousBernoulli``: near ``probs = 0.5`` (inside ``lims``) the
closed forms divide zero by zero, so there Taylor expansions replace them, as PyTorch's."""

from __future__ import annotations

import math

from scratchgrad.creation import rand
from scratchgrad.distributions import constraints
from scratchgrad.distributions.bernoulli import BinaryProbs
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.distributions.utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
)
from scratchgrad.nn.functional import binary_cross_entropy_with_logits
from scratchgrad.tensor import Size, Tensor, where


class ContinuousBernoulli(BinaryProbs, ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1]: density proportional to
    ``probs^x (1 - probs)^(1 - x)``; reparameterized through its inverse CDF.

    >>> from scratchgrad.creation import tensor
    >>> d = ContinuousBernoulli(probs=tensor([0.5]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([0.2])).tolist()]
    ([0.5], [0.0])
    """

    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        self._lims = lims
        # PyTorch checks probs before clamping them whenever validate_args is given (even
        # False), with its own message
        given = probs is not None and validate_args is not None
        if given and not constraints.unit_interval.check(broadcast_all(probs)[0]).all():
            raise ValueError("The parameter probs has invalid values")
        self._init_probs_or_logits(probs, logits, validate_args)
        if probs is not None:
            # clamped away from 0 and 1 for stability, once validated as given
            self.probs = clamp_probs(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """The parameter, clamped inside (0, 1)."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        return where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        cut = self._cut_probs()
        below_half = where(cut <= 0.5, cut, 0.0)
        above_half = where(cut >= 0.5, cut, 1.0)
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - where(
            cut <= 0.5, (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log()
        )
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        variances = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (
            (-cut).log1p() - cut.log()
        ).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return where(self._outside_unstable_region(), variances, taylor)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = where(self._outside_unstable_region(), cdfs, value)
        return where(value <= 0.0, 0.0, where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        inside = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (
            cut.log() - (-cut).log1p()
        )
        return where(self._outside_unstable_region(), inside, value)

    def entropy(self) -> Tensor:
        log_probs0, log_probs1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        outside = (x <= lo) | (x > hi)
        cut = where(outside, x, lo)
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return where(outside, log_norm, taylor)
