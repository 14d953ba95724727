"""Special functions that cannot be composed from the other primitives without losing accuracy
or stability: ``Erf`` and ``Erfinv`` (NumPy has neither vectorised) and ``Softplus``
(log(1 + exp(x)) composed from exp and log overflows for large x, and a max/abs composition
gets the wrong gradient at 0); and those of ``scratchgrad.special`` (torch.special): the error
function's family (``Erfc``, ``Erfcx``, ``Ndtri``, ``LogNdtr``), the gamma function's
(``Lgamma``, ``Polygamma``, ``Zeta``), ``ModifiedBessel`` (i0, i1, i0e, i1e), and ``Entr``,
``Logit``, ``Xlogy``, ``Exp2``, whose edges (0 log 0, the clamp, 2**n) a composition gets wrong;
and ``BinaryCrossEntropy``, whose clamped logs have PyTorch's gradient formula, not their own.
NumPy has none of them and SciPy is no dependency: each is written here from its series,
expansions or rational functions, in float64, each forward next to its (PyTorch's) derivative.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from scratchgrad.autograd.function import Function, holomorphic_twin
from scratchgrad.backend import (
    accumulation_dtype,
    bfloat16,
    cast,
    errstate,
    float32,
    float64,
    namespace,
    rounded,
    scan_dtype,
    widened,
    xp,
)
from scratchgrad.dtypes import finfo
from scratchgrad.meta import MetaArray
from scratchgrad.ops.binary import Where

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
_XBIG = 27.5  # erfc(x) underflows to 0 beyond this (below 5e-324 from 27.3)


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


def _by_region(arrays: tuple, *pieces):
    """``f(*arrays)`` on the entries where ``mask`` holds, for each ``(mask, f)`` (disjoint
    masks; ``f`` may be a number), NaN where none holds; each ``f`` sees only its own entries of
    the 1-D ``arrays``. Integer indices, because NumPy gathers and scatters through them several
    times faster than through a boolean mask."""
    xp = namespace(arrays[0])
    out = xp.full_like(arrays[0], xp.nan)
    if type(out) is MetaArray:  # its regions are unknown; its shape and dtype are out's
        return out
    for mask, f in pieces:
        where = xp.flatnonzero(mask)
        if where.size:
            out.put(where, f(*(a.take(where) for a in arrays)) if callable(f) else f)
    return out


def _piecewise(y, split: float, low, high):
    """``low(y)`` where y <= split and ``high(y)`` elsewhere (NaN too)."""
    below = y <= split
    return _by_region((y,), (below, low), (~below, high))


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
    return scale * _erfcx_above(y)


def _erfcx_above(y):
    """exp(y*y) erfc(y) for y > 0.46875: CALERF's two rational functions, before their scale."""
    return _piecewise(y, 4.0, _erfc_mid, _erfc_large)


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
    dtype = x.dtype if x.dtype.kind == "f" or x.dtype == bfloat16 else float32
    return _float64(lambda x: _inverse_erf(x, 1 - abs(x)), x, dtype=dtype)


def _inverse_erf(x, c):
    """erfinv(x) of a 1-D float64 array, given ``c`` = 1 - |x| (for ndtri, exact where x is
    not: x = 2p - 1 rounds to -1 for p < 2**-54, while c = 2p does not)."""
    xp = namespace(x)
    w = -xp.log(c * (2 - c))  # -log(1 - x**2)
    central, tail = w - 2.5, xp.sqrt(w) - 3
    p = xp.where(w < 5, _GILES_CENTRAL[0], _GILES_TAIL[0])
    for a, b in zip(_GILES_CENTRAL[1:], _GILES_TAIL[1:]):
        p = xp.where(w < 5, a + p * central, b + p * tail)
    # NOTE: beyond Giles' range (1 - |x| < 1e-16, ndtri's far tails) from erfc(y) ~
    # exp(-y*y) / (y sqrt(pi)): y*y = w - log(y sqrt(pi)), with y*y about w
    far = xp.sqrt(w - 0.5 * xp.log(xp.pi * w))
    inside = c > 0
    y = xp.where(inside, xp.where(w > 36, xp.copysign(far, x), p * x), 0.0)
    for _ in range(4):  # Newton from a float32 start: 2 steps, 2 more at the extremes
        # NOTE: in the tails (c < 0.5), on log(erfc(|y|)) = log(c): the log, nearly -y**2 there,
        # converges where erf itself, flat, would crawl; erfcx keeps it from underflowing
        size = xp.maximum(xp.abs(y), 0.46875)
        scaled = erfcx(size)
        step = (xp.log(scaled) - size * size - xp.log(c)) * scaled * (0.5 / _ONE_OVER_SQRT_PI)
        slope = 2 * _ONE_OVER_SQRT_PI * xp.exp(-y * y)
        y = xp.where(c < 0.5, xp.copysign(size + step, x), y - (erf(y) - x) / slope)
    edge = xp.where(c == 0, xp.copysign(xp.inf, x), xp.nan)
    return xp.where(inside, y, edge)


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


# ---- the complementary error function and the normal distribution's -----------------------


def _float64(f, *arrays, dtype=None):
    """``f`` of the arrays broadcast, flattened and in float64 (the series and rational functions
    here are written for it; inf and NaN pass without warnings), shaped back and returned in
    ``dtype``, by default the first array's (16-bit through float32, as PyTorch rounds)."""
    xp = namespace(arrays[0])
    wide = xp.broadcast_arrays(*(a.astype(float64) for a in arrays))
    with errstate(all="ignore"):
        out = f(*(a.reshape(-1) for a in wide)).reshape(wide[0].shape)
    return rounded(out, dtype or arrays[0].dtype)


def erfc(x):
    """1 - erf(x) of an array, elementwise, without the cancellation for large x; computed in
    float64, returned in x's floating dtype.

    >>> import numpy
    >>> float(erfc(numpy.array(10.0)))
    2.0884875837625446e-45
    """
    return _float64(_erfc, x)


def _erfc(x):
    tail = _piecewise(abs(x), 0.46875, lambda y: 1 - _erf_small(y), _erfc_above)
    return namespace(x).where(x < 0, 2 - tail, tail)


def erfcx(x):
    """The scaled complementary error function exp(x**2) erfc(x) of an array, elementwise,
    without overflow for large x; computed in float64, returned in x's floating dtype.

    >>> import numpy
    >>> float(erfcx(numpy.array(1e10)))
    5.641895835477563e-11
    """
    return _float64(_erfcx, x)


def _erfcx(x):
    xp = namespace(x)

    def below(v):  # erfc(v) = 2 - erfc(-v); exp(v*v) exactly as in _erfc_above
        u = xp.minimum(-v, 27.0)  # exp(27 ** 2) overflows: inf, as PyTorch's, not inf - inf
        u16 = xp.trunc(u * 16) / 16
        return 2 * xp.exp(u16 * u16) * xp.exp((u - u16) * (u + u16)) - _erfcx_above(-v)

    small = abs(x) < 0.46875
    return _by_region(
        (x,),
        (small, lambda v: xp.exp(v * v) * (1 - _erf_small(v))),
        (x >= 0.46875, _erfcx_above),
        (x <= -0.46875, below),
    )


def ndtri(p):
    """The standard normal distribution's quantile function (the inverse of its CDF) of an
    array, elementwise: -inf at 0, inf at 1, NaN outside [0, 1]; computed in float64 (to the
    far tails: ndtri(1e-300) is -37.05), returned in p's floating dtype.

    >>> import numpy
    >>> round(float(ndtri(numpy.array(0.975))), 12)
    1.95996398454
    """
    return _float64(_ndtri, p)


def _ndtri(p):
    # sqrt(2) erfinv(2p - 1), with 1 - |2p - 1| given exactly (1 - p is exact for p >= 0.5)
    c = 2 * namespace(p).minimum(p, 1 - p)
    return math.sqrt(2) * _inverse_erf(2 * p - 1, c)


def log_ndtr(x):
    """The log of the standard normal distribution's CDF of an array, elementwise, accurate
    far into both tails (PyTorch's formulas: log(erfcx(-x/sqrt 2) / 2) - x**2 / 2 below -1,
    log1p(-erfc(x/sqrt 2) / 2) above); computed in float64, returned in x's floating dtype.

    >>> import numpy
    >>> float(log_ndtr(numpy.array(-40.0)))
    -804.6084420137537
    """
    return _float64(_log_ndtr, x)


def _log_ndtr(x):
    xp = namespace(x)
    return _by_region(
        (x * (1 / math.sqrt(2)),),
        (x < -1, lambda t: xp.log(_erfcx(-t) / 2) - t * t),
        (x >= -1, lambda t: xp.log1p(-_erfc(t) / 2)),
    )


class Erfc(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return erfc(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-2 / math.sqrt(math.pi)) * (-(x * x)).exp()


class Erfcx(Function):
    backward_name = "SpecialErfcxBackward0"

    @staticmethod
    def forward(ctx, x):
        out = erfcx(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        with errstate(invalid="ignore"):  # inf * 0 at x = inf: NaN, as PyTorch's
            return grad * (2 * x * out - 2 / math.sqrt(math.pi))


class Ndtri(Function):
    backward_name = "SpecialNdtriBackward0"

    @staticmethod
    def forward(ctx, p):
        out = ndtri(p)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * math.sqrt(2 * math.pi) * (out * out / 2).exp()


class LogNdtr(Function):
    backward_name = "SpecialLogNdtrBackward0"

    @staticmethod
    def forward(ctx, x):
        out = log_ndtr(x)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # the normal density over its CDF, as exp(-(log_ndtr + x**2 / 2)): no 0 / 0 in the tail
        x, out = ctx.saved_tensors
        with errstate(invalid="ignore"):  # -inf + inf at x = -inf: NaN, as PyTorch's
            return grad * (1 / math.sqrt(2 * math.pi)) * (-(out + x * x / 2)).exp()


# ---- the gamma function's family ---------------------------------------------------------------
# Each from its textbook series (Abramowitz & Stegun, ch. 6 and 23): an asymptotic series for
# large arguments, reached by the recurrences Gamma(x + 1) = x Gamma(x) and psi(x + 1) = psi(x)
# + 1 / x, and a reflection formula for negative ones. Measured against mpmath (120 digits) on
# 4,500 points from 1e-300 to 1e300 and 3,000 negatives: relative errors at most 1.2e-15
# (lgamma, taken against max(|lgamma|, 1)) and 1e-15 (polygamma, n = 1 to 7); digamma 4e-14
# next to its zero at 1.46 and 7e-12 next to those of the negatives, as PyTorch's (the
# recurrence's terms cancel there), 1e-15 elsewhere.


def _bernoulli(count: int) -> list[Fraction]:
    """B_2, B_4, ..., B_(2 count), exactly, by the Akiyama-Tanigawa algorithm."""
    row, even = [], []
    for m in range(2 * count + 1):
        row.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        if m and m % 2 == 0:
            even.append(row[0])
    return even


_BERNOULLI = _bernoulli(12)
# lgamma(x) ~ (x - 1/2) log x - x + log(2 pi) / 2 + sum_k B_2k / (2k (2k - 1) x**(2k - 1))
_STIRLING = [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI[:8], 1)]
# psi(x) ~ log x - 1 / (2x) - sum_k B_2k / (2k x**2k)
_DIGAMMA = [float(b / (2 * k)) for k, b in enumerate(_BERNOULLI[:8], 1)]
# the Euler-Maclaurin tail of the Hurwitz zeta function: B_2k / (2k)!
_EULER_MACLAURIN = [float(b / math.factorial(2 * k)) for k, b in enumerate(_BERNOULLI, 1)]
_EULER = 0.57721566490153286061  # Euler's constant, -psi(1)


def _polynomial(coefficients: list, t):
    """sum_i coefficients[i] t**i, by Horner's rule."""
    out = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * t + c
    return out


def _zeta(s, q):
    """Hurwitz's zeta function, sum over k >= 0 of (q + k)**-s, of 1-D float64 arrays, with
    PyTorch's (Cephes') values where it diverges or is undefined: inf at s = 1 and at the poles
    q = 0, -1, -2, ... (and -inf), NaN for s < 1, for q < 0 unless s is an integer, and for
    q = inf; at s = inf, inf for q < 1, 1 at q = 1, NaN above."""
    xp = namespace(s)
    pole = (q <= 0) & (q == xp.floor(q))
    finite = (s > 1) & (s < xp.inf)
    return _by_region(
        (s, q),
        (s == 1, xp.inf),
        (~(s <= 1) & pole, xp.inf),  # NaN s too, as PyTorch's
        ((s == xp.inf) & (q < 1) & ~pole, xp.inf),
        ((s == xp.inf) & (q == 1), 1.0),
        (finite & (q > 0) & (q < xp.inf), _zeta_positive),
        (finite & (q < 0) & ~pole & (s == xp.floor(s)), _zeta_negative),
    )


def _zeta_positive(s, q):
    """Hurwitz's zeta for finite s > 1 and q > 0: the first n terms directly, until a = q + n
    reaches s + 10 (at most 70), then the Euler-Maclaurin formula for the rest (its terms shrink
    by about ((s + 2k) / (2 pi a))**2 each; beyond s = 60 the first terms are all there is)."""
    xp = namespace(q)
    n = xp.maximum(xp.ceil(xp.clip(s + 15, 15, 70) - q), 0)
    out = xp.zeros_like(q)
    for k in range(int(n.max()) if n.size else 0):  # (CuPy's max takes no initial)
        out += xp.where(k < n, (q + k) ** -s, 0)
    a = q + n
    power = a**-s
    out += a ** (1 - s) / (s - 1) + power / 2
    rising, power = s, power / a  # s (s + 1) ... (s + 2k - 2) and a**(-s - 2k + 1)
    for k, c in enumerate(_EULER_MACLAURIN):
        out += xp.where(power > 0, c * rising * power, 0)  # 0, not inf * 0, once underflowed
        rising = rising * (s + 2 * k + 1) * (s + 2 * k + 2)
        power = power / (a * a)
    return out


def _zeta_negative(s, q):
    """Hurwitz's zeta for an integer s > 1 and q < 0 (not an integer), from three with q > 0:
    the terms with q + k < 0 are (-1)**s (f + j)**-s, j >= 0, f = ceil(q) - q (exactly, also
    for a tiny q), that is (-1)**s (zeta(s, f) - zeta(s, 1 - q)); the rest are zeta(s, 1 - f)."""
    xp = namespace(q)
    f = xp.ceil(q) - q
    sign = 1 - 2 * (s % 2)
    # NOTE: the first two first: at a half-integer q and an odd s they cancel exactly
    return (_zeta_positive(s, 1 - f) + sign * _zeta_positive(s, f)) - sign * _zeta_positive(
        s, 1 - q
    )


# lgamma(2 + t) = (1 - euler) t + sum_k>=2 (-1)**k (zeta(k) - 1) t**k / k (A&S 6.1.33, with the
# log1p(t) there moved over): to float64's precision for |t| <= 0.5 with k up to 28
_K = xp.arange(2.0, 29.0)
_LGAMMA_NEAR_2 = [float(c) for c in (-1) ** _K * _zeta_positive(_K, xp.full_like(_K, 2.0)) / _K]


def _lgamma(x):
    xp = namespace(x)
    pole = (x <= 0) & (x == xp.floor(x))  # 0, the negative integers, -inf
    return _by_region(
        (x,), (pole, xp.inf), (x > 0, _lgamma_positive), ((x < 0) & ~pole, _lgamma_negative)
    )


def _lgamma_positive(x):
    return _by_region((x,), (x < 10, _lgamma_below_10), (x >= 10, _lgamma_stirling))


def _lgamma_below_10(x):
    """From lgamma(2 + t), t = x - n for the integer n nearest x (exactly), by the recurrence:
    Gamma(x) = Gamma(2 + t) (x - 1) (x - 2) ... (x - n + 2) for n >= 2, and Gamma(2 + t) / x
    (n = 1) or / (x (x + 1)) (n = 0). No cancellation near the zeros at 1 and 2."""
    xp = namespace(x)
    n = xp.floor(x + 0.5)
    t = x - n
    out = t * (1 - _EULER) + t * t * _polynomial(_LGAMMA_NEAR_2, t)
    product = xp.ones_like(x)
    for i in range(1, 9):
        product *= xp.where(i <= n - 2, x - i, 1)
    out += xp.log(product)
    return out - xp.where(n <= 1, xp.log(x), 0) - xp.where(n == 0, xp.log1p(x), 0)


def _lgamma_stirling(x):
    # (x - 1/2)(log x - 1) is (x - 1/2) log x - x + 1/2, and inf (not inf - inf) at x = inf
    return (x - 0.5) * (namespace(x).log(x) - 1) + (math.log(2 * math.pi) - 1) / 2 + _stirling(x)


def _stirling(x):
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi) / 2): Stirling's series, for x >= 10."""
    inv = 1 / x
    return inv * _polynomial(_STIRLING, inv * inv)


def _lgamma_negative(x):
    """Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x), sin's argument reduced exactly.
    NOTE: log |sin(pi r)| is log(pi |r|) below 1e-150, as pi r, rounded to a subnormal, would
    lose digits (lgamma(-5e-324) was 744.486, not -log(5e-324) = 744.440)."""
    xp = namespace(x)
    r = xp.abs(x - xp.round(x))
    with errstate(under="ignore"):
        log_sine = xp.where(r < 1e-150, xp.log(r), xp.log(xp.sin(math.pi * r)) - math.log(math.pi))
    return -log_sine - _lgamma_positive(1 - x)


def _digamma(x):
    """psi, with PyTorch's values at the poles: -inf at +0, inf at -0, NaN at the negative
    integers (and -inf)."""
    xp = namespace(x)
    return _by_region(
        (x,),
        (x == 0, lambda v: xp.copysign(xp.inf, -v)),
        (x > 0, _digamma_positive),
        ((x < 0) & (x != xp.floor(x)), _digamma_negative),
    )


def _digamma_positive(x):
    xp = namespace(x)
    out = xp.zeros_like(x)
    for _ in range(10):  # psi(x) = psi(x + 1) - 1 / x, until x >= 10
        small = x < 10
        out -= xp.where(small, 1 / x, 0)
        x = xp.where(small, x + 1, x)
    inv2 = 1 / (x * x)
    return out + xp.log(x) - 0.5 / x - inv2 * _polynomial(_DIGAMMA, inv2)


def _digamma_negative(x):
    """Reflection: psi(1 - x) - psi(x) = pi / tan(pi x), tan's argument reduced exactly."""
    xp = namespace(x)
    return _digamma_positive(1 - x) - math.pi / xp.tan(math.pi * (x - xp.trunc(x)))


def _polygamma(n: int, x):
    """psi's n-th derivative, n >= 1: (-1)**(n + 1) n! zeta(n + 1, x). PyTorch computes n = 1
    its own way, which gives 0 at inf and NaN at -inf."""
    xp = namespace(x)
    factorial = float(math.factorial(n)) if n <= 170 else math.inf
    out = (-1) ** (n + 1) * factorial * _zeta(xp.full_like(x, n + 1.0), x)
    if n == 1:
        out = xp.where(x == xp.inf, 0.0, xp.where(x == -xp.inf, xp.nan, out))
    return out


def lgamma(x):
    """The log of the absolute value of the gamma function of an array, elementwise (inf at the
    poles 0, -1, -2, ...); computed in float64, returned in x's floating dtype.

    >>> import numpy
    >>> lgamma(numpy.array([0.5, 1.0, 101.0, -0.5]))
    array([  0.57236494,   0.        , 363.73937556,   1.26551212])
    """
    return _float64(_lgamma, x)


def polygamma(n: int, x):
    """The n-th derivative of the digamma function psi of an array, elementwise (n = 0: psi
    itself); computed in float64, returned in x's floating dtype.

    >>> import numpy
    >>> polygamma(1, numpy.array([1.0, 0.5]))  # pi**2 / 6, pi**2 / 2
    array([1.64493407, 4.9348022 ])
    """
    return _float64(_digamma if n == 0 else functools.partial(_polygamma, n), x)


def zeta(s, q):
    """Hurwitz's zeta function sum_k (q + k)**-s of two arrays (broadcast), elementwise;
    computed in float64, returned in s's floating dtype.

    >>> import numpy
    >>> zeta(numpy.array([2.0, 4.0]), numpy.array(1.0))  # pi**2 / 6, pi**4 / 90
    array([1.64493407, 1.08232323])
    """
    return _float64(_zeta, s, q)


class Lgamma(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return lgamma(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * Polygamma.apply(x, n=0)


class Polygamma(Function):
    """psi's n-th derivative (n = 0: digamma); its derivative is the next one."""

    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        ctx.save_for_backward(x)
        return polygamma(n, x)

    def name(self) -> str:
        return "DigammaBackward0" if self.n == 0 else "PolygammaBackward0"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * Polygamma.apply(x, n=ctx.n + 1)


class Zeta(Function):
    """Hurwitz's zeta(s, q); differentiable in q only, as PyTorch's (d/dq = -s zeta(s + 1, q))."""

    backward_name = "SpecialZetaBackward0"

    @staticmethod
    def forward(ctx, s, q):
        ctx.save_for_backward(s, q)
        return zeta(s, q)

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(
                "zeta: the derivative with respect to the first argument (s) is not "
                "implemented, as in PyTorch; detach s"
            )
        s, q = ctx.saved_tensors
        return None, grad * -s * Zeta.apply(s + 1, q)


# ---- modified Bessel functions of the first kind ----------------------------------------------
# I_v(x) = (x/2)**v sum_k (x**2/4)**k / (k! (k + v)!), all terms positive, up to |x| = 20; above,
# Hankel's expansion exp(x) / sqrt(2 pi x) sum_k (-1)**k a_k(v) / x**k (A&S 9.7.1), whose
# smallest term, near k = 2x, is below 1e-17 there. Measured against mpmath on 4,500 points of
# [-700, 700] (the scaled ones up to 1e300 too): relative errors at most 1.3e-15.
_BESSEL_SPLIT = 20.0


def _bessel_series(y, order: int):
    t = y * y / 4
    out = 1.0
    for k in range(40, 0, -1):  # the 40th term is below 1e-17 of the sum for y <= 20
        out = 1 + out * t / (k * (k + order))
    return out * (y / 2) ** order


def _bessel_hankel(y, order: int):
    """The sum of Hankel's expansion over sqrt(2 pi y), without the factor exp(y)."""
    mu, term, out = 4 * order * order, 1.0, 1.0
    for k in range(1, 41):
        term = term * ((2 * k - 1) ** 2 - mu) / (8 * k * y)
        out = out + term
    return out / (math.sqrt(2 * math.pi) * namespace(y).sqrt(y))  # (2 pi y overflows past 2e307)


def bessel_i(x, order: int, scaled: bool):
    """The modified Bessel function of the first kind of ``order`` 0 or 1 of an array,
    elementwise, times exp(-|x|) if ``scaled``; computed in float64, returned in x's floating
    dtype. NaN at +-inf unscaled, as PyTorch's (exp(inf) times 0 there).

    >>> import numpy
    >>> bessel_i(numpy.array([0.0, 1.0]), 0, False)
    array([1.        , 1.26606588])
    """
    return _float64(functools.partial(_bessel_i, order=order, scaled=scaled), x)


def _bessel_i(x, order: int, scaled: bool):
    xp = namespace(x)

    def small(y):
        out = _bessel_series(y, order)
        return out * xp.exp(-y) if scaled else out

    def large(y):
        out = _bessel_hankel(y, order)
        return out if scaled else xp.exp(y) * out

    y = abs(x)
    out = _by_region((y,), (y <= _BESSEL_SPLIT, small), (y > _BESSEL_SPLIT, large))
    return xp.where(x < 0, -out, out) if order else out  # I1 is odd (+0 at -0, as PyTorch's)


class ModifiedBessel(Function):
    """i0, i1 and the scaled i0e(x) = exp(-|x|) i0(x), i1e: one forward, PyTorch's derivatives."""

    @staticmethod
    def forward(ctx, x, order, scaled):
        ctx.order, ctx.scaled = order, scaled
        out = bessel_i(x, order, scaled)
        ctx.save_for_backward(x, out)
        return out

    def name(self) -> str:
        return ("Special" if self.order or self.scaled else "") + (
            f"I{self.order}{'E' if self.scaled else ''}Backward0"
        )

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        scaled = ctx.scaled
        if ctx.order == 0:  # i0' = i1; i0e' = i1e - sgn(x) i0e
            d = ModifiedBessel.apply(x, order=1, scaled=scaled)
            return grad * (d - x.sign() * out if scaled else d)
        # i1' = i0 - i1 / x; i1e' = i0e - i1e (sgn(x) + 1 / x). NOTE: 1/2 for |x| <= eps, where
        # the formula rounds to 0 / 0, and x is replaced there so that no inf enters the graph;
        # 1/2 at NaN too, as PyTorch's (its test is "not |x| > eps")
        eps = float(finfo(x.dtype).eps)
        tiny = ~(x.abs() > eps)
        safe = Where.apply(tiny, eps, x)
        d = ModifiedBessel.apply(safe, order=0, scaled=scaled) - out * (
            1 / safe + safe.sign() if scaled else 1 / safe
        )
        return grad * Where.apply(tiny, 0.5, d)


# ---- elementwise functions with edges of their own ----------------------------------------------


class Entr(Function):
    """-x log x, 0 at 0 and -inf below, as PyTorch's; its derivative -(1 + log x)."""

    backward_name = "SpecialEntrBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        xp, wide = namespace(x), widened(x)
        with errstate(divide="ignore", invalid="ignore"):
            out = xp.where(wide < 0, -xp.inf, xp.where(wide == 0, 0, -wide * xp.log(wide)))
        return rounded(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with errstate(divide="ignore", invalid="ignore"):
            return grad * -(1 + x.log())


class Logit(Function):
    """log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when ``eps`` is a number >= 0. The
    gradient 1 / (x (1 - x)) inside, and outside 0 (clamped) or NaN (no eps), as PyTorch's."""

    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        xp, dtype = namespace(x), x.dtype
        ctx.low = None if eps is None or eps < 0 else dtype.type(eps)
        if ctx.low is not None:  # PyTorch's x < lo ? lo : x > hi ? hi : x, in x's dtype
            x = xp.where(x < ctx.low, ctx.low, xp.where(x > 1 - ctx.low, 1 - ctx.low, x))
        with errstate(divide="ignore", invalid="ignore"):
            # NOTE: x / (1 - x) in x's dtype, rounded there before the log, as PyTorch's 16-bit
            return rounded(xp.log(widened(x / (1 - x))), dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        low = 0.0 if ctx.low is None else float(ctx.low)
        high = 1.0 if ctx.low is None else float(1 - ctx.low)
        outside = (x < low) | (x > high)
        with errstate(divide="ignore", invalid="ignore"):
            d = grad / (x * (1 - x)).abs()  # (+inf at -0 too, as PyTorch's)
        return Where.apply(outside, math.nan if ctx.low is None else 0.0, d)


class BinaryCrossEntropy(Function):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 (log(0) is -100), with
    PyTorch's gradients: (x - t) / max(x (1 - x), 1e-12) for ``x`` (0 where x = t = 0, a
    large step where x is 0 or 1 and the target is not; the clamped logs' own gradient is 0
    there) and log(1 - x) - log(x), not clamped, for ``t``."""

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        xp = namespace(x)
        with errstate(divide="ignore"):  # log(0) is -inf, then -100
            log_x, log_rest = (xp.maximum(xp.log(p), -100) for p in (x, 1 - x))
        return (t - 1) * log_rest - t * log_x  # (PyTorch's order: its signs of 0)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        d_x, d_t = ctx.needs_input_grad
        floor = 9.999999960041972e-13  # PyTorch's 1e-12, a C float
        grad_x = grad * (x - t) / (x * (1 - x)).clamp(min=floor) if d_x else None
        return grad_x, grad * ((1 - x).log() - x.log()) if d_t else None


class Xlogy(Function):
    """x log(y), or x log1p(y) (``log1p``): 0 where x is 0 unless y is NaN, as PyTorch's
    xlogy and xlog1py."""

    @staticmethod
    def forward(ctx, x, y, log1p):
        ctx.log1p = log1p
        ctx.save_for_backward(x, y)
        xp, dtype, x, y = namespace(x), x.dtype, widened(x), widened(y)
        with errstate(divide="ignore", invalid="ignore"):
            out = x * (xp.log1p(y) if log1p else xp.log(y))
        return rounded(xp.where((x == 0) & ~xp.isnan(y), 0, out), dtype)

    def name(self) -> str:
        return "SpecialXlog1PyBackward0" if self.log1p else "XlogyBackward0"

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's: d/dx is xlogy(grad, y), but 0 where x is 0 and y <= 0 (-1 for log1p)
        x, y = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        lowest = -1 if ctx.log1p else 0
        with errstate(divide="ignore", invalid="ignore"):
            return (
                Where.apply((x == 0) & (y <= lowest), 0.0, Xlogy.apply(grad, y, log1p=ctx.log1p))
                if dx
                else None,
                grad * x / (y + 1 if ctx.log1p else y) if dy else None,
            )


class Exp2(Function):
    """2**x, exact at the integers (exp(x log 2) is not), computed in float64 and rounded once:
    NumPy's float32 exp2 is not exact at all of them (exp2(127) is 2**127 + 1 ulp). Complex x
    in its own dtype (float64 would drop its imaginary part)."""

    @staticmethod
    def forward(ctx, x):
        out = _exp2(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out * math.log(2)


holomorphic_twin(Exp2)


def _exp2(x):
    """2**x as Exp2 computes it."""
    wide = x if x.dtype.kind == "c" else x.astype(float64)
    with errstate(over="ignore"):  # inf, as PyTorch's, without a warning
        return rounded(namespace(x).exp2(wide), x.dtype)


class Ldexp(Function):
    """x * 2**y (2**y as Exp2's), with PyTorch's partials grad * 2**y and grad * out * log 2:
    y's from the result, so a subnormal x at y = inf gives inf where grad * x would underflow
    to 0 before meeting 2**inf (NaN)."""

    @staticmethod
    def forward(ctx, x, y):
        out = x * _exp2(y)
        ctx.save_for_backward(y, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        y, out = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        return grad * y.exp2() if dx else None, grad * out * math.log(2) if dy else None


holomorphic_twin(Ldexp)


class Softplus(Function):
    """log(1 + exp(x)); ``logaddexp`` never overflows, and the gradient is sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).logaddexp(0, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if accumulation_dtype(x.array.dtype) is None:
            return grad * x.sigmoid()
        # 16-bit: in float32, rounded once, as PyTorch's softplus_backward
        return (grad.float() * x.float().sigmoid()).to(grad.dtype)


class LogSigmoid(Function):
    """log(sigmoid(x)) = -log(1 + exp(-x)), by ``logaddexp``, which never overflows; the
    gradient is sigmoid(-x). A 16-bit input's gradient is PyTorch's log_sigmoid_backward's:
    ``1 - z / (1 + z)`` where x < 0, else ``z / (1 + z)``, in float32, rounded once, from ``z =
    exp(-|x|)`` in the input's dtype (its forward's buffer); sigmoid(-x) in float32 put a
    seventh an ulp off."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.0 - namespace(x).logaddexp(0, -x)  # (+0 for large x, as PyTorch's, not -0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if accumulation_dtype(x.array.dtype) is None:
            return grad * (-x).sigmoid()
        z = (-x.abs()).exp().float()
        ratio = z / (1 + z)
        return (Where.apply(x < 0, 1 - ratio, ratio) * grad.float()).to(grad.dtype)


# ---- PyTorch's other elementwise names: one ufunc each, PyTorch's derivatives ------------------


class Copysign(Function):
    """|x| with the sign of y; the gradient passes to x times out / x (+-1), 0 where x is 0, and
    y's is zeros, as PyTorch's."""

    @staticmethod
    def forward(ctx, x, y):
        out = namespace(x).copysign(x, y)
        with errstate(divide="ignore", invalid="ignore"):
            ctx.save_for_backward(namespace(x).where(x == 0, 0, out / x).astype(out.dtype))
        return out

    @staticmethod
    def backward(ctx, grad):
        (ratio,) = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        return grad * ratio if dx else None, grad * 0 if dy else None


class Fmax(Function):
    """fmax (``largest``) or fmin: the larger (smaller) operand, a NaN losing to a number. NOTE:
    PyTorch's gradient: all of it to x where x >= y (x <= y for fmin), ties included, or y is
    NaN; to y elsewhere."""

    @staticmethod
    def forward(ctx, x, y, largest):
        ctx.largest = largest
        xp = namespace(x)
        with errstate(invalid="ignore"):
            x_wins = (x >= y if largest else x <= y) | xp.isnan(y)
        ctx.save_for_backward(x_wins)
        # (NumPy's fmax gives y at a tie of 0 and -0 from 4 entries on; PyTorch's always x)
        return xp.where(x_wins, x, y)

    def name(self) -> str:
        return "FmaxBackward0" if self.largest else "FminBackward0"

    @staticmethod
    def backward(ctx, grad):
        (x_wins,) = ctx.saved_tensors
        return Where.apply(x_wins, grad, 0.0), Where.apply(x_wins, 0.0, grad)


class Nextafter(Function):
    """The next float after x toward y; PyTorch's gradient: grad for x but where x equals y
    (there the result is y), zeros for y."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.equal = x == y  # (an array: a constant, not a graph input)
        return namespace(x).nextafter(x, y)

    @staticmethod
    def backward(ctx, grad):
        dx, dy = ctx.needs_input_grad
        return Where.apply(ctx.equal, 0.0, grad) if dx else None, grad * 0 if dy else None


class Heaviside(Function):
    """The step function: ``values`` where x is 0, else x > 0 (so 0 at NaN, as PyTorch's, where
    NumPy's heaviside gives NaN). PyTorch has no derivative for it and raises in backward; so
    does this."""

    @staticmethod
    def forward(ctx, x, values):
        xp = namespace(x)
        with errstate(invalid="ignore"):
            return xp.where(x == 0, values, x > 0).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


class Logaddexp(Function):
    """log(e**x + e**y) without overflow (one ufunc; of complex numbers, PyTorch's formula);
    PyTorch's partials 1 / (1 + e**(y - x)) and 1 / (1 + e**(x - y)): a half each at a tie,
    NaN at equal infinities (inf - inf), their conjugates for complex numbers (its twin)."""

    ufunc = "logaddexp"

    @staticmethod
    def power(t):
        """The base to the power ``t``."""
        return t.exp()

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        if x.dtype.kind == "c":  # (NumPy's ufunc takes real numbers only)
            return _complex_logaddexp(x, y)
        return getattr(namespace(x), type(ctx).ufunc)(x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        power = type(ctx).power
        with errstate(over="ignore", invalid="ignore"):
            return (
                grad / (1 + power(y - x)) if dx else None,
                grad / (1 + power(x - y)) if dy else None,
            )


holomorphic_twin(Logaddexp)


def _complex_logaddexp(x, y):
    """log(e**x + e**y) of complex arrays as PyTorch computes it: ``log1p(e**(small - big)) +
    big``, ``big`` the one of larger real part (``x`` at a tie, which decides the imaginary
    part's multiple of 2 pi); NaN where ``small`` has one, ``small`` where both real parts are
    -inf, ``log(e**x + e**y)`` where both are inf."""
    xp = namespace(x)
    x_big = x.real >= y.real
    big, small = xp.where(x_big, x, y), xp.where(x_big, y, x)
    with errstate(all="ignore"):
        out = _complex_log1p(xp.exp(small - big)) + big
        both_infinite = xp.isinf(small.real) & (small.real == big.real)
        if both_infinite.any():  # (rare: computed where needed only)
            plus = xp.log(xp.exp(small) + xp.exp(big))
            out = xp.where(both_infinite, xp.where(small.real < 0, small, plus), out)
    nan = xp.isnan(small.real) | xp.isnan(small.imag)
    return xp.where(nan, xp.asarray(complex(math.nan, math.nan), out.dtype), out)


def _complex_log1p(z):
    """log(1 + z) of complex ``z`` with |z| <= 1, accurate for small ``z`` (NumPy's loses the
    real part: log1p(1e-18 + 1e-18j) has real part 0): log|1 + z| as
    log1p(2 Re z + |z|**2) / 2."""
    xp = namespace(z)
    real = 0.5 * xp.log1p(z.real * (2 + z.real) + z.imag * z.imag)
    return real + 1j * xp.arctan2(z.imag, 1 + z.real)


class Logaddexp2(Logaddexp):
    """log2(2**x + 2**y), as Logaddexp in base 2 (of real numbers only, as PyTorch's)."""

    ufunc = "logaddexp2"
    power = staticmethod(Exp2.apply)
    complex_twin = None


def _in_scan_dtype(x):
    """``x`` in the dtype PyTorch's CPU scans run in (``backend.scan_dtype``)."""
    wide = scan_dtype(x.dtype)
    return x if wide is None else cast(x, wide)


class Logcumsumexp(Function):
    """log(cumsum(exp(x))) along ``dim``, as a running logaddexp: nothing overflows, and a
    small entry before a large one keeps its value (a shift by the max would underflow it)."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        with errstate(invalid="ignore"):  # inf - inf inside logaddexp: NaN, as PyTorch's
            out = namespace(x).logaddexp.accumulate(_in_scan_dtype(x), axis=dim)
        out = rounded(out, x.dtype)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's logcumsumexp_backward: the sum over j >= i of grad_j exp(x_i - out_j), with
        # the positive and negative parts of grad each summed in log space, so that no exp
        # overflows; the lowest float stands for log 0 (-inf would give inf - inf).
        x, out = ctx.saved_tensors
        dim, lowest = ctx.dim, float(finfo(grad.dtype).min)
        with errstate(divide="ignore"):
            log_abs = grad.abs().log()

        def part(mask):
            logs = Where.apply(mask, log_abs, lowest) - out
            from_end = Logcumsumexp.apply(logs.flip(dim), dim=dim).flip(dim)
            return (from_end + x).exp()

        return part(grad > 0) - part(grad < 0)


class Frexp(Function):
    """The mantissa of frexp (in [0.5, 1) in magnitude, x = mantissa * 2**exponent); its
    derivative 2**-exponent, as PyTorch's. The exponent is no output of this node."""

    @staticmethod
    def forward(ctx, x):
        xp = namespace(x)
        mantissa, exponent = xp.frexp(widened(x))
        ctx.save_for_backward(exponent)
        return rounded(mantissa, x.dtype)  # exact: a 16-bit float's mantissa fits

    @staticmethod
    def backward(ctx, grad):
        (exponent,) = ctx.saved_tensors
        return grad / exponent.to(grad.dtype).exp2()


# ---- the regularized incomplete gamma functions ------------------------------------------------
# P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P, each from the expansion that converges fast
# where it is the smaller one, as Cephes's igam and igamc (which PyTorch's are) choose: Q by its
# continued fraction for x > 1.1 and x >= a + 1 (Numerical Recipes, 3rd ed., 6.2, by Lentz's
# method), Q by its series for x <= 1.1 and a small, P by its series elsewhere; the other one as
# 1 - it. Each runs until its terms stop changing the sum, with the prefactor
# x**a exp(-x) / Gamma(a) in log space. Measured against mpmath for a, x in [1e-3, 1e3]: relative
# errors below 1e-12; PyTorch's asymptotic expansion for a > 20 and x near a is off by up to
# 2e-9 there (and 3e-2 at a = 1e7, x = a - 5 sqrt(a): its series stops after 2000 terms).
# For a >= 1e4 and x within 0.3 a of a, Temme's expansion below. Against mpmath for a in
# [10, 1e7] and x within 8 sqrt(a) of a (and 0.5 a to 1.5 a up to a = 2e5): below 4e-14.
_GAMMA_ITERATIONS = 20000
_TINY = 1e-300


def _log_prefactor(a, x):
    """log(x**a e**-x / Gamma(a)). For a >= 10 as a log1pmx((x - a) / a) + log(a / (2 pi)) / 2
    - stirling(a), lgamma(a) by Stirling's series: the direct a log x - x - lgamma(a) cancels
    terms of about a log a, whose rounding (1e-10 of the result at a = 1e6) the form without
    them does not have (Cephes's igam_fac, Temme's eta)."""
    return _by_region((a, x), (a < 10, _log_prefactor_direct), (a >= 10, _log_prefactor_large))


def _log_prefactor_direct(a, x):
    return a * namespace(x).log(x) - x - _lgamma(a)


def _log_prefactor_large(a, x):
    return a * _log1pmx((x - a) / a) + namespace(a).log(a / (2 * math.pi)) / 2 - _stirling(a)


def _log1pmx(t):
    """log(1 + t) - t, for t > -1; by its series -t**2 / 2 + t**3 / 3 - ... for |t| < 0.5,
    where log1p(t) - t would lose the digits that cancel."""
    xp = namespace(t)
    near = xp.abs(t) < 0.5
    small = xp.where(near, t, 0.0)
    power, total = small.copy(), xp.zeros_like(small)
    for n in range(2, 60):  # |t| < 0.5: the 60th term is below 1e-19 of the first
        power *= -small
        total += power / n
    return xp.where(near, total, xp.log1p(t) - t)


def _lgamma1p(a):
    """lgamma(1 + a) for a > 0, without rounding 1 + a where a <= 0.5: lgamma(2 + a) (from the
    series _lgamma_below_10 uses) - log1p(a)."""
    xp = namespace(a)
    small = a * (1 - _EULER) + a * a * _polynomial(_LGAMMA_NEAR_2, a) - xp.log1p(a)
    return xp.where(a <= 0.5, small, _lgamma(1 + a))


def _lower_series(a, x):
    """P(a, x): x**a e**-x / Gamma(a + 1) * sum_n x**n / ((a + 1)...(a + n))."""
    xp = namespace(x)
    term, total, ap = 1 / a, 1 / a, a.copy()
    active = xp.arange(a.size)
    for _ in range(_GAMMA_ITERATIONS):
        ap[active] += 1
        term[active] *= x[active] / ap[active]
        total[active] += term[active]
        active = active[xp.abs(term[active]) > xp.abs(total[active]) * 1e-17]
        if not active.size:
            break
    total[active] = xp.nan  # not converged: no number rather than a wrong one
    return total * xp.exp(_log_prefactor(a, x))


def _upper_series(a, x):
    """Q(a, x) for x <= 1.1: 1 - x**a / Gamma(a + 1) - x**a / Gamma(a) sum_n>=1 (-x)**n /
    (n! (a + n)), the first two as -expm1 (Cephes's igamc_series)."""
    xp = namespace(x)
    factor, total = xp.ones_like(x), xp.zeros_like(x)
    for n in range(1, 60):  # |x| <= 1.1: the 60th term is below 1e-80
        factor *= -x / n
        total += factor / (a + n)
    log_x = xp.log(x)
    return -xp.expm1(a * log_x - _lgamma1p(a)) - xp.exp(a * log_x - _lgamma(a)) * total


def _upper_fraction(a, x):
    """Q(a, x) for x >= a + 1: the continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a
    - 2 (2 - a) / (x + 5 - a - ...))), by Lentz's method."""
    xp = namespace(x)
    b = x + 1 - a
    c, d = xp.full_like(x, 1 / _TINY), 1 / b
    h = d.copy()
    active = xp.arange(a.size)
    for i in range(1, _GAMMA_ITERATIONS):
        an = -i * (i - a[active])
        b[active] += 2
        dd = an * d[active] + b[active]
        dd = xp.where(xp.abs(dd) < _TINY, _TINY, dd)
        cc = b[active] + an / c[active]
        cc = xp.where(xp.abs(cc) < _TINY, _TINY, cc)
        d[active], c[active] = 1 / dd, cc
        delta = cc / dd
        h[active] *= delta
        active = active[xp.abs(delta - 1) > 1e-16]
        if not active.size:
            break
    h[active] = xp.nan
    return h * xp.exp(_log_prefactor(a, x))


# Temme's uniform expansion for large a (DLMF 8.12.3-4), with eta = sign(x - a) sqrt(-2
# log1pmx((x - a) / a)): Q(a, x) = erfc(eta sqrt(a / 2)) / 2 + exp(-a eta**2 / 2) / sqrt(2 pi a)
# sum_k c_k(eta) / a**k, and P the same with -eta and the sum subtracted; c_k(eta) = sum_n
# _TEMME[k][n] eta**n. The coefficients are Cephes's (igam.c, after DiDonato and Morris), the
# first 4 of its 25 rows and 16 of its 25 columns: for a >= 1e4 and |x - a| <= 0.3 a the rest
# change no digit of the sum. Where the series would take O(sqrt(a)) terms, this takes 4.
# (PyTorch's takes sqrt(2 pi a) with a float32 pi: 1e-10 off from a = 20 on.)
_TEMME = [
    [
        -0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073,
        0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05,
        -2.1854485106799924e-06, -1.85406221071516e-06, 8.296711340953087e-07,
        -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08,
        -4.382036018453353e-09, 9.14769958223679e-10, -2.551419399494625e-11,
    ],
    [
        -0.001851851851851852, -0.003472222222222222, 0.0026455026455026454,
        -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07,
        -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06,
        4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
        1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
        4.162792991842583e-10,
    ],
    [
        0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049,
        2.0093878600823047e-06, -0.00010736653226365161, 5.2923448829120125e-05,
        -1.2760635188618728e-05, 3.423578734096138e-08, 1.3721957309062932e-06,
        -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
        -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617112e-09,
        9.428356159014678e-13,
    ],
    [
        0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557,
        0.00026772063206283885, -7.561801671883977e-05, -2.396505113867297e-07,
        1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06,
        -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08,
        -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09,
        -9.460496661855133e-10,
    ],
]  # fmt: skip


def _temme(a, x, upper: bool):
    xp = namespace(x)
    eta = xp.sign(x - a) * xp.sqrt(-2 * _log1pmx((x - a) / a))
    sign = 1 if upper else -1
    total = sum(_polynomial(row, eta) / a**k for k, row in enumerate(_TEMME))
    tail = xp.exp(-a * eta * eta / 2) * total / xp.sqrt(2 * math.pi * a)
    return _erfc(sign * eta * xp.sqrt(a / 2)) / 2 + sign * tail


def _igamma(a, x, upper: bool):
    """P(a, x), or Q(a, x) (``upper``), with Cephes's (PyTorch's) values at the edges, taken in
    its order: NaN for a < 0 or x < 0; for a = 0, P = 1 if x > 0, else NaN; for x = 0, P = 0;
    for a = inf, NaN if x = inf, else P = 0; for x = inf, P = 1; NaN for a NaN left over."""
    xp = namespace(x)
    inner = (a > 0) & (x > 0) & (a < xp.inf) & (x < xp.inf)
    temme = inner & (a >= 1e4) & (xp.abs(x - a) <= 0.3 * a)
    fraction = inner & ~temme & (x > 1.1) & (x >= a + 1)
    small_a = xp.where(x <= 0.5, a * xp.log(x) > -0.4, a <= x * 1.1)  # -0.4 / log(x) >= a
    q_series = inner & (x <= 1.1) & small_a
    p_series = inner & ~temme & ~fraction & ~q_series
    q = _by_region((a, x), (fraction, _upper_fraction), (q_series, _upper_series))
    p = _by_region((a, x), (p_series, _lower_series))
    out = xp.where(p_series, 1 - p if upper else p, q if upper else 1 - q)
    out = xp.where(temme, _by_region((a, x), (temme, functools.partial(_temme, upper=upper))), out)
    edges = [
        ((x < 0) | (a < 0), xp.nan),
        (a == 0, xp.where(x > 0, 1.0, xp.nan)),
        (x == 0, 0.0),
        (a == xp.inf, xp.where(x == xp.inf, xp.nan, 0.0)),
        (x == xp.inf, 1.0),
    ]
    lower = xp.select([c for c, _ in edges], [v for _, v in edges], xp.nan)
    return xp.where(inner, out, 1 - lower if upper else lower)


class Igamma(Function):
    """The regularized lower (upper: ``upper``) incomplete gamma function P(a, x) (Q(a, x)).
    Differentiable in x only, as PyTorch's: d/dx P = x**(a - 1) e**-x / Gamma(a) = -d/dx Q."""

    @staticmethod
    def forward(ctx, a, x, upper):
        ctx.upper = upper
        ctx.save_for_backward(a, x)
        return _float64(functools.partial(_igamma, upper=upper), a, x)

    def name(self) -> str:
        return "IgammacBackward0" if self.upper else "IgammaBackward0"

    @staticmethod
    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(
                f"the derivative for '{'igammac' if ctx.upper else 'igamma'}: input' is not "
                "implemented, as in PyTorch; detach the first argument"
            )
        a, x = ctx.saved_tensors
        with errstate(divide="ignore", invalid="ignore"):
            d = ((a - 1) * x.log() - x - Lgamma.apply(a)).exp()
        return None, grad * (-d if ctx.upper else d)
