"""``TransformedDistribution``, as ``torch.distributions.TransformedDistribution``, and the
distributions PyTorch builds as one: ``LogNormal``, ``Gumbel``, ``LogisticNormal``,
``HalfNormal``, ``HalfCauchy``, ``Weibull``, ``Pareto``."""

from __future__ import annotations

import math
from typing import Any

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import as_tensor, full_like, ones_like, zeros_like
from scratchgrad.distributions import constraints
from scratchgrad.distributions.cauchy import Cauchy
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.exponential import Exponential
from scratchgrad.distributions.independent import Independent
from scratchgrad.distributions.normal import Normal
from scratchgrad.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
    Transform,
)
from scratchgrad.distributions.uniform import Uniform
from scratchgrad.distributions.utils import broadcast_all, sum_rightmost
from scratchgrad.dtypes import finfo
from scratchgrad.special import gammaln
from scratchgrad.tensor import Size, Tensor, where

EULER = 0.57721566490153286060  # the Euler-Mascheroni constant


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (one, or a list applied in
    order): ``rsample`` transforms the base's reparameterized samples, and ``log_prob`` of a
    value inverts the transforms and subtracts their Jacobians' log-determinants.

    The SAC policy, a tanh-squashed Gaussian (``cache_size=1`` lets ``log_prob`` of a sample
    use the pre-tanh value it came from):

    >>> from scratchgrad.creation import zeros, ones
    >>> from scratchgrad.distributions import Normal, TanhTransform
    >>> policy = TransformedDistribution(Normal(zeros(2), ones(2)), [TanhTransform(cache_size=1)])
    >>> action = policy.rsample()
    >>> tuple(policy.log_prob(action).shape), bool((action.abs() < 1).all())
    ((2,), True)
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self,
        base_distribution: Distribution,
        transforms: Transform | list[Transform],
        validate_args: bool | None = None,
    ) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list) and all(isinstance(t, Transform) for t in transforms):
            self.transforms = transforms
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(
                f"base_distribution needs to have shape with size at least "
                f"{transform.domain.event_dim}, but got {base_shape}."
            )
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if base_shape != expanded_base_shape:
            cut = len(expanded_base_shape) - base_event_dim
            base_distribution = base_distribution.expand(expanded_base_shape[:cut])
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        extra = len(self.event_shape) - support.event_dim
        return constraints.independent(support, extra) if extra > 0 else support

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob: Any = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_prob = log_prob - sum_rightmost(
                transform.log_abs_det_jacobian(x, y), event_dim - transform.domain.event_dim
            )
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """The base's CDF turned into ours: flipped where the transforms decrease."""
        sign: Any = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``.

    >>> from scratchgrad.creation import tensor
    >>> d = LogNormal(tensor([0.0]), tensor([1.0]))
    >>> round(d.mean.item(), 4), round(d.log_prob(tensor([1.0])).item(), 4)
    (1.6487, -0.9189)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class LogisticNormal(TransformedDistribution):
    """The simplex-valued ``StickBreakingTransform()(X)`` for ``X ~ Normal(loc, scale)``
    (K - 1 entries in the last dimension make events of K).

    >>> from scratchgrad.creation import zeros, ones
    >>> LogisticNormal(zeros(2), ones(2)).event_shape
    scratchgrad.Size([3])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale


class Gumbel(TransformedDistribution):
    """The Gumbel distribution of location ``loc`` and scale ``scale``: ``loc - scale *
    log(-log(U))`` for U uniform.

    >>> from scratchgrad.creation import tensor
    >>> d = Gumbel(tensor([0.0]), tensor([1.0]))
    >>> [round(x, 4) for x in d.log_prob(tensor([0.0])).tolist()], d.mode.tolist()
    ([-1.0], [0.0])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = finfo(self.loc.dtype)
        base = Uniform(
            full_like(self.loc, info.tiny),
            full_like(self.loc, 1 - info.eps),
            validate_args=validate_args,
        )
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=self.loc, scale=-self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + EULER)


class _Folded(TransformedDistribution):
    """``|X|`` for X symmetric about 0 of scale ``scale`` (``base``, a location-scale
    distribution): twice its density on [0, inf). What HalfNormal and HalfCauchy share."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    base: type = Normal

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base = self.base(0.0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """``|X|`` for ``X ~ Normal(0, scale)``.

    >>> from scratchgrad.creation import tensor
    >>> d = HalfNormal(tensor([1.0]))
    >>> [round(x, 4) for x in d.mean.tolist()], d.cdf(tensor([0.0])).tolist()
    ([0.7979], [0.0])
    """

    base = Normal

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """``|X|`` for ``X ~ Cauchy(0, scale)``: infinite mean and variance.

    >>> from scratchgrad.creation import tensor
    >>> HalfCauchy(tensor([1.0])).cdf(tensor([1.0])).tolist()
    [0.5]
    """

    base = Cauchy

    def log_prob(self, value: Tensor) -> Tensor:
        # PyTorch's HalfCauchy, unlike its HalfNormal, casts the value to the scale's dtype
        if self._validate_args:
            self._validate_sample(value)  # before the cast: a number is refused, as PyTorch does
        return super().log_prob(as_tensor(value, dtype=self.scale.dtype))

    @property
    def mean(self) -> Tensor:
        return full_like(self.scale, math.inf)

    @property
    def variance(self) -> Tensor:
        return full_like(self.scale, math.inf)


class Weibull(TransformedDistribution):
    """The Weibull distribution of scale ``scale`` and shape ``concentration``: ``scale *
    E ** (1 / concentration)`` for E standard exponential.

    >>> from scratchgrad.creation import tensor
    >>> Weibull(tensor([2.0]), tensor([1.0])).mean.tolist()
    [2.0]
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(
        self,
        scale: Tensor | float,
        concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ones_like(self.scale), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * gammaln(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> Tensor:
        first = gammaln(1 + self.concentration_reciprocal)
        second = gammaln(1 + 2 * self.concentration_reciprocal).exp()
        return self.scale.pow(2) * (second - (2 * first).exp())

    def entropy(self) -> Tensor:
        return (
            EULER * (1 - self.concentration_reciprocal)
            + (self.scale * self.concentration_reciprocal).log()
            + 1
        )


class Pareto(TransformedDistribution):
    """The Pareto distribution of scale ``scale`` (the smallest value) and shape ``alpha``:
    ``scale * exp(E)`` for E exponential of rate ``alpha``.

    >>> from scratchgrad.creation import tensor
    >>> Pareto(tensor([1.0]), tensor([3.0])).mean.tolist()
    [1.5]
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(
        self, scale: Tensor | float, alpha: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        # infinite for alpha <= 1, as PyTorch's clamp gives
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        # infinite for alpha <= 2
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
