"""``VonMises``, as ``torch.distributions.VonMises``."""

from __future__ import annotations

import math

from scratchgrad import backend
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.utils import numpy_draw
from scratchgrad.tensor import Size, Tensor, where

# PyTorch's polynomial approximations of log I0 and log I1 (Abramowitz & Stegun 9.8.1-9.8.4,
# relative error below 2e-7), kept so that log_prob and variance are PyTorch's to the last bit
_COEF_SMALL = (
    (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2),
    (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3),
)
_COEF_LARGE = (
    (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1,
     0.2635537e-1, -0.1647633e-1, 0.392377e-2),
    (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
     -0.2895312e-1, 0.1787654e-1, -0.420059e-2),
)  # fmt: skip


def _polynomial(y: Tensor, coef: tuple) -> Tensor:
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel(x: Tensor, order: int) -> Tensor:
    """log I_order(x) for x > 0 and order 0 or 1, as PyTorch's ``_log_modified_bessel_fn``."""
    # both are computed everywhere: the large one's polynomial is negative for small x
    with backend.errstate(invalid="ignore"):
        small = _polynomial((x / 3.75).pow(2), _COEF_SMALL[order])
        small = (x.abs() * small if order == 1 else small).log()
        large = x - 0.5 * x.log() + _polynomial(3.75 / x, _COEF_LARGE[order]).log()
    return where(x < 3.75, small, large)


class VonMises(Distribution):
    """The circular von Mises distribution of angle ``loc`` and ``concentration``; values
    are angles (any real number, taken modulo 2 pi); ``mean`` and ``variance`` are the
    circular ones. Not reparameterized (as PyTorch's).

    >>> from scratchgrad.creation import tensor
    >>> d = VonMises(tensor([0.0]), tensor([1.0]))
    >>> [round(x, 4) for x in d.log_prob(tensor([0.0])).tolist()]
    [-1.0738]
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real

    def __init__(
        self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._init_params(validate_args, loc=loc, concentration=concentration)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        k = self.concentration
        return 1 - (_log_modified_bessel(k, 1) - _log_modified_bessel(k, 0)).exp()

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        # NumPy's draws lie in [-pi, pi] around loc wrapped; wrapped into [-pi, pi) as PyTorch's
        with no_grad():
            shape = self._extended_shape(sample_shape)
            x = numpy_draw("vonmises", shape, self.loc, self.concentration)
            return (x + math.pi) % (2 * math.pi) - math.pi

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel(self.concentration, 0)
