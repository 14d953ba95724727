"""``scratchgrad.special``: PyTorch's ``torch.special``, the special functions of statistics and
probability (gamma and its logarithm and derivatives, the error function's family, the normal
distribution's CDF and quantiles, modified Bessel functions, entropy terms), with PyTorch's
values at the edges (poles, inf, NaN) and its gradients.

Integer and bool inputs are computed in the default floating dtype, as PyTorch's. The values are
computed in float64 (``ops/special.py`` says how, and how accurately) and rounded to the input's
dtype. The orthogonal polynomials (Chebyshev, Hermite, Laguerre, Legendre) are computed by their
recurrences and, as PyTorch's, have no gradient. Not here: ``zeta``'s gradient in its first
argument (PyTorch has none either), the Bessel functions J, Y and K (but ``spherical_bessel_j0``),
``airy_ai``.

>>> import scratchgrad as sg
>>> import scratchgrad.special
>>> sg.special.gammaln(sg.tensor([0.5, 1.0, 10.0]))
tensor([ 0.5724,  0.0000, 12.8018])
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from scratchgrad import backend
from scratchgrad.dtypes import result_dtype
from scratchgrad.ops import special as ops
from scratchgrad.tensor import (
    OUT_READS_UNCHECKED,
    Tensor,
    broadcast_tensors,
    float_argument,
    takes_out,
)

__all__ = [
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit",
    "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax",
    "xlog1py", "xlogy", "zeta",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
    "modified_bessel_i0", "modified_bessel_i1", "spherical_bessel_j0",
]  # fmt: skip


def _tensor(name: str, x: Any) -> Tensor:
    """``x``, which must be a tensor, as PyTorch's TypeError says."""
    if not isinstance(x, Tensor):
        raise TypeError(f"special.{name}(): input must be a Tensor, not {type(x).__name__}")
    return x


def _floating(name: str, x: Any, complex_too: bool = False) -> Tensor:
    """``x`` in a floating dtype (integers and bools: the default one), as PyTorch promotes; a
    complex one is refused, as PyTorch's, unless ``complex_too`` (expit, sinc, exp2...)."""
    x = _tensor(name, x)
    return x._floating() if complex_too else x._real_floating(f"special.{name}")


def _wide(name: str, x: Tensor) -> Tensor:
    """``x``, which must not be 16-bit: PyTorch has no float16 or bfloat16 kernel for erfcx,
    ndtri, log_ndtr, zeta and the newer Bessel functions."""
    if x.dtype in (backend.float16, backend.bfloat16):
        raise NotImplementedError(
            f"special.{name}: not implemented for {x.dtype.name} tensors, as in PyTorch; "
            "compute in float32 (x.float())"
        )
    return x


def _pair(name: str, x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """``x`` and ``y``, one of them possibly a Python number, as tensors of their promoted
    dtype (``torch.result_type``, then the default float for integers and bools)."""
    tensors = [t for t in (x, y) if isinstance(t, Tensor)]
    numbers = [t for t in (x, y) if not isinstance(t, Tensor)]
    if not tensors or not all(isinstance(n, (int, float, complex)) for n in numbers):
        raise TypeError(
            f"special.{name}(): expected Tensors or a Tensor and a number, got "
            f"{type(x).__name__} and {type(y).__name__}"
        )
    dtype = result_dtype(x, y)
    if backend.can_require_grad(dtype) and not backend.is_floating(dtype):
        raise NotImplementedError(f"special.{name}: not implemented for {dtype}, as in PyTorch")
    dtype = dtype if backend.is_floating(dtype) else backend.default_float
    return tuple(
        t.to(dtype) if isinstance(t, Tensor) else tensors[0].new_tensor(t, dtype=dtype)
        for t in (x, y)
    )


# ---- the gamma function's family --------------------------------------------------------------


def gammaln(input: Tensor) -> Tensor:
    """The log of the absolute value of the gamma function, as ``torch.special.gammaln``
    (``torch.lgamma``): inf at the poles 0, -1, -2, ...; its derivative is ``digamma``.

    >>> import scratchgrad as sg
    >>> sg.special.gammaln(sg.tensor([0.5, 3.0, -0.5, 0.0]))
    tensor([0.5724, 0.6931, 1.2655,    inf])
    """
    return ops.Lgamma.apply(_floating("gammaln", input))


def digamma(input: Tensor) -> Tensor:
    """The logarithmic derivative of the gamma function, psi(x) = Gamma'(x) / Gamma(x), as
    ``torch.special.digamma``: -inf at 0 (inf at -0), NaN at the negative integers; its
    derivative is ``polygamma(1, x)``.

    >>> import scratchgrad as sg
    >>> sg.special.digamma(sg.tensor([1.0, 0.5, 0.0]))
    tensor([-0.5772, -1.9635,    -inf])
    """
    return ops.Polygamma.apply(_floating("digamma", input), n=0)


psi = digamma


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma`` (``n`` = 0: digamma itself), as
    ``torch.special.polygamma``; its derivative is ``polygamma(n + 1, x)``.

    NOTE: at the poles -1, -2, ... ``polygamma(1, x)`` is inf, where PyTorch's reflection
    formula gives a large finite number (1 / sin(pi x)**2 with sin(pi x) rounded: at -1,
    6.6e32 in float64 and 1.3e15 in float32).

    >>> import scratchgrad as sg
    >>> sg.special.polygamma(1, sg.tensor([1.0, 0.5]))  # pi**2 / 6, pi**2 / 2
    tensor([1.6449, 4.9348])
    """
    if isinstance(n, bool):
        raise TypeError("special.polygamma(): n must be an int, not bool")
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"special.polygamma(n, x) does not support negative n, got n={n}")
    return ops.Polygamma.apply(_floating("polygamma", input), n=n)


def multigammaln(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``: the sum of
    ``gammaln(x - i / 2)`` for i < p, plus p (p - 1) / 4 log(pi), as
    ``torch.special.multigammaln`` (``torch.mvlgamma``).

    >>> import scratchgrad as sg
    >>> sg.special.multigammaln(sg.tensor([2.0, 3.0]), 3)
    tensor([1.5963, 2.6949])
    """
    return _tensor("multigammaln", input).mvlgamma(p)


def zeta(input: Tensor | float, other: Tensor | float) -> Tensor:
    """Hurwitz's zeta function, the sum over k >= 0 of (other + k)**-input, as
    ``torch.special.zeta`` (one argument may be a number): inf at input = 1 and at the poles
    other = 0, -1, ...; NaN for input < 1, and for other < 0 unless input is an integer. Its
    gradient is there for ``other`` only, as PyTorch's.

    >>> import scratchgrad as sg
    >>> sg.special.zeta(sg.tensor([2.0, 4.0]), 1.0)  # pi**2 / 6, pi**4 / 90
    tensor([1.6449, 1.0823])
    """
    s, q = _pair("zeta", input, other)
    return ops.Zeta.apply(_wide("zeta", s), q)


def gammainc(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other), as
    ``torch.special.gammainc`` (``torch.igamma``); differentiable in ``other`` only, as
    PyTorch's.

    >>> import scratchgrad as sg
    >>> sg.special.gammainc(sg.tensor([1.0, 2.0]), sg.tensor([1.0, 2.0]))
    tensor([0.6321, 0.5940])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"special.gammainc(): input must be a Tensor, not {type(input).__name__}")
    return input.igamma(other)


def gammaincc(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P, as
    ``torch.special.gammaincc`` (``torch.igammac``).

    >>> import scratchgrad as sg
    >>> sg.special.gammaincc(sg.tensor([1.0]), sg.tensor([30.0]))  # exp(-30)
    tensor([9.3576e-14])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"special.gammaincc(): input must be a Tensor, not {type(input).__name__}")
    return input.igammac(other)


# ---- the error function and the normal distribution ----------------------------------------


def erf(input: Tensor) -> Tensor:
    """The error function, as ``torch.special.erf``.

    >>> import scratchgrad as sg
    >>> sg.special.erf(sg.tensor([0.0, 0.5, -3.0]))
    tensor([ 0.0000,  0.5205, -1.0000])
    """
    return _floating("erf", input).erf()


def erfc(input: Tensor) -> Tensor:
    """The complementary error function 1 - erf(x), as ``torch.special.erfc``, without the
    cancellation of 1 - erf(x) for large x.

    >>> import scratchgrad as sg
    >>> sg.special.erfc(sg.tensor([0.0, 10.0], dtype=sg.float64)).tolist()
    [1.0, 2.0884875837625446e-45]
    """
    return ops.Erfc.apply(_floating("erfc", input))


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function exp(x**2) erfc(x), as ``torch.special.erfcx``:
    finite where exp(x**2) overflows (x > 26.6), inf below -26.6.

    >>> import scratchgrad as sg
    >>> sg.special.erfcx(sg.tensor([0.0, 100.0]))
    tensor([1.0000, 0.0056])
    """
    return ops.Erfcx.apply(_wide("erfcx", _floating("erfcx", input)))


def erfinv(input: Tensor) -> Tensor:
    """The inverse of ``erf``, as ``torch.special.erfinv``: +-inf at +-1, NaN outside.

    >>> import scratchgrad as sg
    >>> sg.special.erfinv(sg.tensor([0.0, 0.5, 1.0]))
    tensor([0.0000, 0.4769,    inf])
    """
    return _floating("erfinv", input).erfinv()


def ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution's CDF, as ``torch.special.ndtr``, but computed as
    erfc(-x / sqrt(2)) / 2: accurate in the lower tail, where PyTorch's (1 + erf(x / sqrt(2))) / 2
    loses its digits and is 0 below -8.3 (ndtr(-10) is 7.6e-24 here). The same gradient.

    >>> import scratchgrad as sg
    >>> sg.special.ndtr(sg.tensor([0.0, 1.96, -40.0]))
    tensor([0.5000, 0.9750, 0.0000])
    """
    return ops.Erfc.apply(_floating("ndtr", input) * -math.sqrt(0.5)) * 0.5


def ndtri(input: Tensor) -> Tensor:
    """The standard normal distribution's quantile function, the inverse of ``ndtr``, as
    ``torch.special.ndtri``: -inf at 0, inf at 1, NaN outside [0, 1].

    >>> import scratchgrad as sg
    >>> sg.special.ndtri(sg.tensor([0.5, 0.975, 0.0]))
    tensor([0.0000, 1.9600,   -inf])
    """
    return ops.Ndtri.apply(_wide("ndtri", _floating("ndtri", input)))


def log_ndtr(input: Tensor) -> Tensor:
    """The log of the standard normal distribution's CDF, as ``torch.special.log_ndtr``:
    accurate where ``ndtr`` underflows to 0 or rounds to 1.

    >>> import scratchgrad as sg
    >>> sg.special.log_ndtr(sg.tensor([0.0, -40.0]))
    tensor([-6.9315e-01, -8.0461e+02])
    """
    return ops.LogNdtr.apply(_wide("log_ndtr", _floating("log_ndtr", input)))


# ---- modified Bessel functions of the first kind ----------------------------------------------


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0, as ``torch.special.i0``
    (``torch.i0``); its derivative is ``i1``.

    >>> import scratchgrad as sg
    >>> sg.special.i0(sg.tensor([0.0, 1.0, -2.0]))
    tensor([1.0000, 1.2661, 2.2796])
    """
    return ops.ModifiedBessel.apply(_floating("i0", input), order=0, scaled=False)


def i0e(input: Tensor) -> Tensor:
    """exp(-|x|) i0(x), as ``torch.special.i0e``: finite where i0 overflows.

    >>> import scratchgrad as sg
    >>> sg.special.i0e(sg.tensor([0.0, 1000.0]))
    tensor([1.0000, 0.0126])
    """
    return ops.ModifiedBessel.apply(_floating("i0e", input), order=0, scaled=True)


def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1, as ``torch.special.i1``.

    >>> import scratchgrad as sg
    >>> sg.special.i1(sg.tensor([0.0, 1.0, -2.0]))
    tensor([ 0.0000,  0.5652, -1.5906])
    """
    return ops.ModifiedBessel.apply(_floating("i1", input), order=1, scaled=False)


def i1e(input: Tensor) -> Tensor:
    """exp(-|x|) i1(x), as ``torch.special.i1e``.

    >>> import scratchgrad as sg
    >>> sg.special.i1e(sg.tensor([1.0, -1000.0]))
    tensor([ 0.2079, -0.0126])
    """
    return ops.ModifiedBessel.apply(_floating("i1e", input), order=1, scaled=True)


def modified_bessel_i0(input: Tensor) -> Tensor:
    """``i0`` without a gradient, as ``torch.special.modified_bessel_i0`` (PyTorch's newer
    Bessel family has no derivatives).

    >>> import scratchgrad as sg
    >>> sg.special.modified_bessel_i0(sg.tensor([1.0], requires_grad=True))
    tensor([1.2661])
    """
    return i0(_wide("modified_bessel_i0", _floating("modified_bessel_i0", input)).detach())


def modified_bessel_i1(input: Tensor) -> Tensor:
    """``i1`` without a gradient, as ``torch.special.modified_bessel_i1``."""
    return i1(_wide("modified_bessel_i1", _floating("modified_bessel_i1", input)).detach())


def spherical_bessel_j0(input: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, sin(x) / x (1 at 0, 0 at
    +-inf), as ``torch.special.spherical_bessel_j0``, without a gradient as PyTorch's: radial
    basis functions of interatomic potentials (DimeNet's) are built from it.

    >>> import scratchgrad as sg
    >>> sg.special.spherical_bessel_j0(sg.tensor([0.0, 1.0, float("inf")]))
    tensor([1.0000, 0.8415, 0.0000])
    """
    x = _wide("spherical_bessel_j0", _floating("spherical_bessel_j0", input))
    wide = x.detach().double()
    safe = wide.where(wide != 0, 1.0)  # sin(x) / x in float64 loses nothing near 0 but at 0
    out = (safe.sin() / safe).where(wide != 0, 1.0).where(~wide.isinf(), 0.0)
    return out.to(x.dtype)


# ---- orthogonal polynomials ---------------------------------------------------------------------
# Each is p_n(x) by its three-term recurrence p_{k+1} = step(k, x, p_{k-1}, p_k) from p_0 = 1 and
# p_1 = first(x), in float64, with n truncated to an integer and 0 for n < 0 (one step a degree,
# as PyTorch loops: a degree of millions takes seconds); the Chebyshev kinds switch to their
# trigonometric closed form in (-1, 1) above the degree where PyTorch does (6 or 8). As in
# PyTorch, they have no gradient: the result never requires grad.


def _orthogonal(name: str, x: Any, n: Any, first, step, closed=None) -> Tensor:
    """p_n(x) for the recurrence (``first``, ``step``); ``closed``: (degree, f(theta, n)), the
    Chebyshev kinds' closed form in theta = acos(x), used above that degree where |x| < 1."""
    x, n = _pair(name, x, n)
    dtype = x.dtype
    x, degree = (t.detach().double() for t in broadcast_tensors(x, n))
    # n as PyTorch's cast to int64 reads it: NaN, inf and |n| >= 2^63 become -2^63, so 0
    degree = degree.trunc().where(degree.isfinite() & (degree.abs() < 2.0**63), -1.0)
    out = degree.new_zeros(degree.shape).where(degree < 0, 1.0)
    previous, current = out.new_ones(out.shape), first(x)
    top = int(degree.max().item()) if degree.numel() else 0
    for k in range(1, top + 1):
        out = current.where(degree == k, out)
        previous, current = current, step(k, x, previous, current)
    if closed is not None:
        above, form = closed
        trig = form(x.clamp(-1, 1).acos(), degree)
        out = trig.where((degree > above) & (x.abs() < 1), out)
    return out.to(dtype)


def _chebyshev(name: str, x: Any, n: Any, first, closed) -> Tensor:
    return _orthogonal(name, x, n, first, lambda k, x, p, q: 2 * x * q - p, closed)


def chebyshev_polynomial_t(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the first kind T_n(x) = cos(n acos x), as
    ``torch.special.chebyshev_polynomial_t``; like the other orthogonal polynomials here it
    broadcasts ``input`` with ``n`` (one of them may be a number) and has no gradient.

    >>> import scratchgrad as sg
    >>> sg.special.chebyshev_polynomial_t(sg.tensor([0.5, 2.0]), 3)
    tensor([-1., 26.])
    """
    closed = (6, lambda theta, n: (n * theta).cos())
    return _chebyshev("chebyshev_polynomial_t", input, n, lambda x: x, closed)


def chebyshev_polynomial_u(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the second kind U_n(x) = sin((n + 1) theta) / sin(theta),
    x = cos(theta), as ``torch.special.chebyshev_polynomial_u``."""
    closed = (8, lambda theta, n: ((n + 1) * theta).sin() / theta.sin())
    return _chebyshev("chebyshev_polynomial_u", input, n, lambda x: 2 * x, closed)


def chebyshev_polynomial_v(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the third kind V_n(x) = cos((n + 1/2) theta) / cos(theta / 2),
    as ``torch.special.chebyshev_polynomial_v``."""
    closed = (8, lambda theta, n: ((n + 0.5) * theta).cos() / (theta / 2).cos())
    return _chebyshev("chebyshev_polynomial_v", input, n, lambda x: 2 * x - 1, closed)


def chebyshev_polynomial_w(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the fourth kind W_n(x) = sin((n + 1/2) theta) / sin(theta / 2),
    as ``torch.special.chebyshev_polynomial_w``."""
    closed = (8, lambda theta, n: ((n + 0.5) * theta).sin() / (theta / 2).sin())
    return _chebyshev("chebyshev_polynomial_w", input, n, lambda x: 2 * x + 1, closed)


def _shifted(polynomial):
    """The polynomial on [0, 1] instead of [-1, 1]: p(2x - 1), as PyTorch's ``shifted_`` forms."""

    def shifted(input: Tensor | float, n: Tensor | float) -> Tensor:
        x, n = _pair(f"shifted_{polynomial.__name__}", input, n)
        return polynomial(2 * x - 1, n)

    shifted.__name__ = f"shifted_{polynomial.__name__}"
    shifted.__doc__ = (
        f"``{polynomial.__name__}(2 x - 1, n)``, as ``torch.special.{shifted.__name__}``."
    )
    return shifted


shifted_chebyshev_polynomial_t = _shifted(chebyshev_polynomial_t)
shifted_chebyshev_polynomial_u = _shifted(chebyshev_polynomial_u)
shifted_chebyshev_polynomial_v = _shifted(chebyshev_polynomial_v)
shifted_chebyshev_polynomial_w = _shifted(chebyshev_polynomial_w)


def hermite_polynomial_h(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The physicists' Hermite polynomial H_n (H_{k+1} = 2x H_k - 2k H_{k-1}), orthogonal under
    exp(-x^2), as ``torch.special.hermite_polynomial_h``.

    >>> import scratchgrad as sg
    >>> sg.special.hermite_polynomial_h(sg.tensor([1.0]), sg.tensor([0, 1, 2, 3]))
    tensor([ 1.,  2.,  2., -4.])
    """
    return _orthogonal(
        "hermite_polynomial_h", input, n, lambda x: 2 * x, lambda k, x, p, q: 2 * x * q - 2 * k * p
    )


def hermite_polynomial_he(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The probabilists' Hermite polynomial He_n (He_{k+1} = x He_k - k He_{k-1}), orthogonal
    under the standard normal density, as ``torch.special.hermite_polynomial_he``."""
    return _orthogonal(
        "hermite_polynomial_he", input, n, lambda x: x, lambda k, x, p, q: x * q - k * p
    )


def laguerre_polynomial_l(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Laguerre polynomial L_n ((k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}), orthogonal
    under exp(-x) on [0, inf), as ``torch.special.laguerre_polynomial_l``."""
    return _orthogonal(
        "laguerre_polynomial_l",
        input,
        n,
        lambda x: 1 - x,
        lambda k, x, p, q: ((2 * k + 1 - x) * q - k * p) / (k + 1),
    )


def legendre_polynomial_p(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Legendre polynomial P_n ((k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}), orthogonal
    on [-1, 1], as ``torch.special.legendre_polynomial_p``.

    >>> import scratchgrad as sg
    >>> sg.special.legendre_polynomial_p(sg.tensor([0.5]), 2)
    tensor([-0.1250])
    """
    return _orthogonal(
        "legendre_polynomial_p",
        input,
        n,
        lambda x: x,
        lambda k, x, p, q: ((2 * k + 1) * x * q - k * p) / (k + 1),
    )


# ---- elementwise functions ----------------------------------------------------------------------


def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log(other), and 0 where input is 0 (unless other is NaN), as
    ``torch.special.xlogy``: entropy terms p log p without the NaN of 0 * log 0. One argument
    may be a number.

    >>> import scratchgrad as sg
    >>> sg.special.xlogy(sg.tensor([0.0, 0.0, 2.0]), sg.tensor([0.0, float("nan"), 3.0]))
    tensor([0.0000,    nan, 2.1972])
    """
    return ops.Xlogy.apply(*_pair("xlogy", input, other), log1p=False)


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log1p(other), and 0 where input is 0 (unless other is NaN), as
    ``torch.special.xlog1py``.

    >>> import scratchgrad as sg
    >>> sg.special.xlog1py(sg.tensor([0.0, 2.0]), sg.tensor([-1.0, 1e-10]))
    tensor([0.0000e+00, 2.0000e-10])
    """
    return ops.Xlogy.apply(*_pair("xlog1py", input, other), log1p=True)


def entr(input: Tensor) -> Tensor:
    """The entropy term -x log(x): 0 at 0, -inf for x < 0, as ``torch.special.entr``.

    >>> import scratchgrad as sg
    >>> sg.special.entr(sg.tensor([0.0, 0.5, -1.0]))
    tensor([0.0000, 0.3466,   -inf])
    """
    return ops.Entr.apply(_floating("entr", input))


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)), the inverse of ``expit``, as ``torch.special.logit``: with ``eps``,
    x is first clamped to [eps, 1 - eps] (and its gradient is 0 outside); without, the values
    and gradients outside [0, 1] are NaN.

    >>> import scratchgrad as sg
    >>> sg.special.logit(sg.tensor([0.5, 0.0, 1.0]), eps=1e-6)  # 1 - eps rounded to float32
    tensor([  0.0000, -13.8155,  13.8023])
    """
    eps = None if eps is None else float_argument("special.logit", "eps", eps)
    return ops.Logit.apply(_floating("logit", input), eps=eps)


def expit(input: Tensor) -> Tensor:
    """The logistic sigmoid 1 / (1 + exp(-x)), as ``torch.special.expit``.

    >>> import scratchgrad as sg
    >>> sg.special.expit(sg.tensor([0, 2]))
    tensor([0.5000, 0.8808])
    """
    return _floating("expit", input, complex_too=True).sigmoid()


def sinc(input: Tensor) -> Tensor:
    """The normalized sinc function sin(pi x) / (pi x), 1 at 0, as ``torch.special.sinc``:
    computed as PyTorch computes it (pi x rounded first; 16-bit floats in float32), with its
    gradient 0 at 0.

    >>> import scratchgrad as sg
    >>> sg.special.sinc(sg.tensor([0.0, 0.5, 1.5]))
    tensor([ 1.0000,  0.6366, -0.2122])
    """
    return _floating("sinc", input, complex_too=True).sinc()


def exp2(input: Tensor) -> Tensor:
    """2**x, as ``torch.special.exp2``: exact at the integers.

    >>> import scratchgrad as sg
    >>> sg.special.exp2(sg.tensor([3, -1]))
    tensor([8.0000, 0.5000])
    """
    return ops.Exp2.apply(_floating("exp2", input, complex_too=True))


def expm1(input: Tensor) -> Tensor:
    """exp(x) - 1, accurate for small x, as ``torch.special.expm1``.

    >>> import scratchgrad as sg
    >>> sg.special.expm1(sg.tensor([1e-10], dtype=sg.float64)).item()
    1.00000000005e-10
    """
    return _floating("expm1", input, complex_too=True).expm1()


def log1p(input: Tensor) -> Tensor:
    """log(1 + x), accurate for small x, as ``torch.special.log1p``.

    >>> import scratchgrad as sg
    >>> sg.special.log1p(sg.tensor([1e-10], dtype=sg.float64)).item()
    9.999999999500001e-11
    """
    return _floating("log1p", input, complex_too=True).log1p()


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Rounding half to even (at ``decimals`` decimal places), as ``torch.special.round``,
    which, unlike ``torch.round``, raises for integer tensors.

    >>> import scratchgrad as sg
    >>> sg.special.round(sg.tensor([0.5, 1.5, 2.25]))
    tensor([0., 2., 2.])
    """
    if not _tensor("round", input).is_floating_point():
        raise NotImplementedError(
            f"special.round: not implemented for {input.dtype.name} tensors, as in PyTorch "
            "(torch.round returns them as they are)"
        )
    return input.round(decimals=decimals)


# ---- reductions --------------------------------------------------------------------------------


def logsumexp(input: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim``, without overflow, as ``torch.special.logsumexp``.

    >>> import scratchgrad as sg
    >>> sg.special.logsumexp(sg.tensor([[0.0, 1000.0]]), 1)
    tensor([1000.])
    """
    return _floating("logsumexp", input, complex_too=True).logsumexp(dim, keepdim)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (in ``dtype`` if given), as
    ``torch.special.softmax`` (which, unlike the others here, takes no ``out``).

    >>> import scratchgrad as sg
    >>> sg.special.softmax(sg.tensor([0.0, 0.0]), 0)
    tensor([0.5000, 0.5000])
    """
    return _tensor("softmax", input).softmax(dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed stably, as ``torch.special.log_softmax`` (no
    ``out`` either; ``dtype`` by keyword only, where ``softmax`` takes it by position too).

    >>> import scratchgrad as sg
    >>> sg.special.log_softmax(sg.tensor([0.0, 0.0]), 0)
    tensor([-0.6931, -0.6931])
    """
    return _tensor("log_softmax", input).log_softmax(dim, dtype=dtype)


# PyTorch's out= (torch.special.erf(x, out=y)) on every function but softmax and log_softmax
for _name in set(__all__) - {"softmax", "log_softmax"}:
    globals()[_name] = takes_out(globals()[_name], _name not in OUT_READS_UNCHECKED)
