"""``GeneralizedPareto``, as ``torch.distributions.GeneralizedPareto``."""

from __future__ import annotations

import math

from scratchgrad.creation import rand
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.tensor import Size, Tensor, where


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution of location ``loc``, scale ``scale`` and shape
    ``concentration`` (xi): survival ``(1 + xi z)^(-1/xi)`` for ``z = (x - loc) / scale``
    (``exp(-z)`` at xi = 0); supported on ``[loc, loc - scale / xi]`` when xi < 0, else on
    ``[loc, inf)``; reparameterized through its inverse CDF.

    >>> from scratchgrad.creation import tensor
    >>> d = GeneralizedPareto(tensor([0.0]), tensor([1.0]), tensor([0.0]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([1.0])).tolist()]
    ([1.0], [-1.0])
    """

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(
        self,
        loc: Tensor | float,
        scale: Tensor | float,
        concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._init_params(validate_args, loc=loc, scale=scale, concentration=concentration)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        lower = self.loc
        bounded = self.concentration < 0
        # (divided by -1 where unbounded: that quotient is not kept)
        upper = lower - self.scale / where(bounded, self.concentration, -1.0)
        upper = where(bounded, upper, math.inf)
        return constraints.interval(lower, upper)

    def _safe_concentration(self) -> tuple[Tensor, Tensor]:
        """Where xi is (close to) 0, and xi with 1 there (the xi = 0 branch is taken)."""
        eq_zero = self.concentration.isclose(self.concentration.new_zeros(()))
        return eq_zero, where(eq_zero, 1.0, self.concentration)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, xi = self._safe_concentration()
        y = 1 / xi + 1
        nonzero = where(y == 0, y, y * (xi * z).log1p())
        return -self.scale.log() - where(eq_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """The log of ``1 - cdf(value)``."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, xi = self._safe_concentration()
        return where(eq_zero, -z, -(xi * z).log1p() / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        """The log of the CDF."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        eq_zero, xi = self._safe_concentration()
        logu = (-value).log1p()
        nonzero = self.loc + self.scale / xi * (-xi * logu).expm1()
        return where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        xi = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        xi = where(valid, self.concentration, 0.25)
        return where(valid, self.scale**2 / ((1 - xi) ** 2 * (1 - 2 * xi)), math.nan)

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(self._batch_shape)

    @property
    def mode(self) -> Tensor:
        return self.loc
