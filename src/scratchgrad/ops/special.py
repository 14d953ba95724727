"""Special functions that cannot be composed from the other primitives without losing accuracy
or stability: ``Erf`` and ``Erfinv`` (NumPy has neither vectorised) and ``Softplus``
(log(1 + exp(x)) composed from exp and log overflows for large x, and a max/abs composition
gets the wrong gradient at 0).
"""

from __future__ import annotations

import math

from scratchgrad.autograd.function import Function
from scratchgrad.backend import bfloat16, errstate, float32, float64, namespace

# W. J. Cody, "Rational Chebyshev approximations for the error function", Math. Comp. 23 (1969)
# 631-638, as in Netlib SPECFUN's CALERF: relative error below 1e-16 in three intervals of |x|.
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)  # fmt: skip
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)  # fmt: skip
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)  # fmt: skip
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)  # fmt: skip
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)  # fmt: skip
_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)  # fmt: skip
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1
_XBIG = 26.543  # erfc(x) underflows to 0 beyond this


def _ratio(num: tuple, den: tuple, t):
    """CALERF's rational function (num[-1] t^n + num[0] t^(n-1) + ... + num[-2]) /
    (t^n + den[0] t^(n-1) + ... + den[-1]), by Horner's rule, updating in place."""
    xnum, xden = num[-1] * t, t.copy()
    for a, b in zip(num[:-2], den[:-1]):
        xnum += a
        xnum *= t
        xden += b
        xden *= t
    xnum += num[-2]
    xden += den[-1]
    xnum /= xden
    return xnum


def _piecewise(y, split: float, low, high):
    """``low(y)`` where y <= split and ``high(y)`` elsewhere (NaN too), each computed only on
    its own entries of the 1-D ``y``. Integer indices, because NumPy gathers and scatters
    through them several times faster than through a boolean mask."""
    xp = namespace(y)
    out = xp.empty_like(y)
    below = y <= split
    for where, f in ((xp.flatnonzero(below), low), (xp.flatnonzero(~below), high)):
        if where.size:
            out.put(where, f(y.take(where)))
    return out


def _erf_small(y):
    return y * _ratio(_A, _B, y * y)


def _erfc_mid(y):
    return _ratio(_C, _D, y)


def _erfc_large(y):
    inv = 1 / (y * y)
    return (_ONE_OVER_SQRT_PI - inv * _ratio(_P, _Q, inv)) / y


def _erfc_above(y):
    """erfc(y) for y > 0.46875, where 1 - erf would lose digits.

    exp(-y*y) is taken as exp(-y16*y16) * exp(-(y - y16)(y + y16)) with y16 = y rounded down
    to 1/16: y16*y16 is exact, so the product keeps full precision (CALERF's trick).
    """
    xp = namespace(y)
    y = xp.minimum(y, _XBIG)  # erfc underflows to 0 here; inf would give inf - inf below
    y16 = xp.trunc(y * 16) / 16
    scale = xp.exp(-y16 * y16) * xp.exp(-(y - y16) * (y + y16))
    return scale * _piecewise(y, 4.0, _erfc_mid, _erfc_large)


# Eigen's (and XLA's) float32 erf: an odd degree-13 over even degree-8 rational function on
# [-4, 4], where erf reaches 1 in float32. Measured against math.erf on 2,000,001 points of
# [-6, 6]: relative error at most 4.5e-7 (a few float32 ulps), at a fraction of the cost of
# CALERF's three float64 pieces, where a GPT step's GELU spent most of its time (the README's
# W6 profile).
_ALPHA = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
          -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
          -1.60960333262415e-02)  # fmt: skip
_BETA = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
         -7.37332916720468e-03, -1.42647390514189e-02)  # fmt: skip


def _erf_float32(x, overwrite: bool = False):
    """Eigen's rational function on float32; ``overwrite``: ``x`` is a float32 temporary the
    caller gives up. The clipped input's buffer takes the denominator once the numerator is
    done, so three buffers serve (four made GELU's forward 0.2 ms slower on W6's sizes)."""
    if x.ndim == 0:  # out= needs arrays, and NumPy makes 0-d results scalars
        return _erf_float32(x.reshape(1)).reshape(())
    module, x = namespace(x), x.astype(float32, copy=False)
    x = module.clip(x, -4, 4, out=x if overwrite else None)
    x2 = x * x
    numerator = _ALPHA[0] * x2
    for a in _ALPHA[1:-1]:
        numerator += a
        numerator *= x2
    numerator += _ALPHA[-1]
    numerator *= x
    denominator = module.multiply(x2, _BETA[0], out=x)
    for b in _BETA[1:-1]:
        denominator += b
        denominator *= x2
    denominator += _BETA[-1]
    numerator /= denominator
    return numerator


def erf(x, overwrite: bool = False):
    """The error function of an array, elementwise: float64 (and integer) input to float64
    precision, float32 and narrower in float32 (returned in the input's floating dtype).
    ``overwrite``: ``x`` is a temporary the caller gives up, which may serve as scratch.

    >>> import math
    >>> import numpy
    >>> float(erf(numpy.array(0.5))) == math.erf(0.5)
    True
    >>> abs(float(erf(numpy.array(0.5, numpy.float32))) - math.erf(0.5)) < 1e-7
    True
    """
    if (x.dtype.kind == "f" and x.dtype.itemsize <= 4) or x.dtype == bfloat16:
        scratch = overwrite and x.dtype == float32
        return _erf_float32(x, scratch).astype(x.dtype, copy=False)
    xp = namespace(x)
    dtype = x.dtype if x.dtype.kind == "f" else float64
    y = xp.abs(x.astype(float64, copy=False)).reshape(-1)
    out = _piecewise(y, 0.46875, _erf_small, lambda v: 1 - _erfc_above(v))
    return xp.copysign(out.reshape(x.shape), x).astype(dtype, copy=False)  # erf is odd


class Erf(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return erf(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (2 / math.sqrt(math.pi)) * (-(x * x)).exp()


# M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade (2011): a polynomial in
# w = -log(1 - x**2), single precision; the Newton steps on erf below take it to float64's.
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  2.1858087e-04, -1.25372503e-03, -4.17768164e-03, 2.46640727e-01,
                  1.50140941)  # fmt: skip
_GILES_TAIL = (-2.00214257e-04, 1.00950558e-04, 1.34934322e-03, -3.67342844e-03,
               5.73950773e-03, -7.6224613e-03, 9.43887047e-03, 1.00167406, 2.83297682)  # fmt: skip


def erfinv(x):
    """The inverse error function of an array, elementwise, in float64 (returned in the input's
    floating dtype, float32 for integers): +-inf at +-1, NaN outside [-1, 1].

    >>> import math
    >>> import numpy
    >>> abs(float(erfinv(numpy.array(math.erf(0.7)))) - 0.7) < 1e-15
    True
    """
    xp = namespace(x)
    dtype = x.dtype if x.dtype.kind == "f" or x.dtype == bfloat16 else float32
    shape, x = x.shape, x.astype(float64).reshape(-1)
    size = xp.abs(x)
    with errstate(divide="ignore", invalid="ignore"):
        w = -xp.log1p(-x * x)
        central, tail = w - 2.5, xp.sqrt(w) - 3
        p = xp.where(w < 5, _GILES_CENTRAL[0], _GILES_TAIL[0])
        for a, b in zip(_GILES_CENTRAL[1:], _GILES_TAIL[1:]):
            p = xp.where(w < 5, a + p * central, b + p * tail)
        y = p * x
        inside = size < 1
        y = xp.where(inside, y, 0.0)
        for _ in range(4):  # Newton from a float32 start: 2 steps, 2 more at the extremes
            slope = 2 * _ONE_OVER_SQRT_PI * xp.exp(-y * y)
            # NOTE: above 0.5, on log(erfc(|y|)) = log(1 - |x|): 1 - |x| is exact there, and
            # the log, nearly -y**2 in the tails, converges where erf itself, flat, would crawl
            above = xp.maximum(xp.abs(y), 0.46875)
            erfc_above = _erfc_above(above)
            tail = above + (xp.log(erfc_above) - xp.log(1 - size)) * erfc_above / slope
            y = xp.where(size > 0.5, xp.copysign(tail, x), y - (erf(y) - x) / slope)
        edge = xp.where(size == 1, xp.copysign(xp.inf, x), xp.nan)
    return xp.where(inside, y, edge).reshape(shape).astype(dtype)


class Erfinv(Function):
    @staticmethod
    def forward(ctx, x):
        out = erfinv(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (math.sqrt(math.pi) / 2) * (out * out).exp()


class Softplus(Function):
    """log(1 + exp(x)); ``logaddexp`` never overflows, and the gradient is sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).logaddexp(0, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()
