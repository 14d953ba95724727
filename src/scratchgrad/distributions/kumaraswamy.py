"""``Kumaraswamy``, as ``torch.distributions.Kumaraswamy``."""

from __future__ import annotations

import math

from scratchgrad.creation import full_like
from scratchgrad.distributions import constraints
from scratchgrad.distributions.transformed_distribution import EULER, TransformedDistribution
from scratchgrad.distributions.transforms import AffineTransform, PowerTransform
from scratchgrad.distributions.uniform import Uniform
from scratchgrad.distributions.utils import broadcast_all
from scratchgrad.special import digamma, gammaln
from scratchgrad.tensor import Tensor, where


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """The n-th moment: ``b B(1 + n / a, b)``, B the beta function."""
    arg1 = 1 + n / a
    log_value = gammaln(arg1) + gammaln(b) - gammaln(arg1 + b)
    return b * log_value.exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on (0, 1) of concentrations ``concentration1`` (a) and
    ``concentration0`` (b): density ``a b x^(a-1) (1 - x^a)^(b-1)``, a beta-like law with a
    closed-form CDF, so reparameterized through a uniform sample.

    >>> from scratchgrad.creation import tensor
    >>> d = Kumaraswamy(tensor([1.0]), tensor([1.0]))
    >>> d.mean.tolist(), [round(x, 4) for x in d.log_prob(tensor([0.3])).tolist()]
    ([0.5], [0.0])
    """

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        concentration1: Tensor | float,
        concentration0: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        c0 = self.concentration0
        base = Uniform(full_like(c0, 0), full_like(c0, 1), validate_args=validate_args)
        transforms = [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        # in log space, for stability; none where either concentration is below 1
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return where((b < 1) | (a < 1), math.nan, log_mode).exp()

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        t1, t0 = 1 - a.reciprocal(), 1 - b.reciprocal()
        h0 = digamma(b + 1) + EULER
        return t0 + t1 * h0 - a.log() - b.log()
