"""The special functions and elementwise math against PyTorch at the points that break
implementations: 0 and -0, +-inf, NaN, subnormal and tiny values, huge ones (1e300, 3e38 in
float32), the poles of gamma and digamma (negative integers) and the half-integers between them,
exactly 1 and -1 (erfinv, logit), mixed with random values; in float32, float64, integer and bool
inputs (promoted to a float), 0-d and broadcast shapes, with their extra arguments (polygamma's n,
mvlgamma's p, logit's eps, nan_to_num's replacements...), and in their in-place and ``out=``
forms. Both libraries must raise or not (the same error class) and agree on the dtype, the shape
and the values (NaN where NaN, the signs of zeros and infinities, float64 within 1e-12 relative,
float32 within a few ulps); in float64 the first and second derivatives at those points must be
PyTorch's, and gradcheck and gradgradcheck must pass at interior points. Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg
import scratchgrad.special  # noqa: F401 (sg.special)

FUZZ = fuzz_settings(20)
GRAD_FUZZ = fuzz_settings(15)
INF, NAN = math.inf, math.nan
# (rtol, atol) by result dtype: the values are computed by other algorithms than PyTorch's, so a
# few ulps apart (float32 is rounded from our float64 value, PyTorch's has its own round-off)
TOLERANCE = {"float64": (1e-12, 1e-300), "float32": (4e-7, 1e-6)}
# derivatives: several roundings, and differences of nearly equal terms (sigmoid's 1 - 2 s, the
# second derivative of softmax at ties: 1e-16 where PyTorch's rounds to 0)
GRAD_TOLERANCE = (1e-7, 1e-12)

# where implementations break: signed zeros, infinities, NaN, subnormals, huge values, the poles
# of gamma and the half-integers between them, +-1 (erfinv, logit), overflow thresholds of exp
EDGES = [
    0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.0, 0.5, -0.5, -1.5, -2.0, -3.0, -2.5, -10.0,
    5e-324, -5e-324, 1e-310, 1e-45, -1e-45, 1e-300, 1e-30, 1e-8, -1e-8, 1e300, -1e300, 3e38,
    -3e38, 1 - 2**-53, -1 + 2**-53, 1 + 2**-52, 0.9999999, 709.0, 710.0, -745.0, 88.5, 89.0,
    -104.0, 26.0, 27.5, 1e5, -1e5, 3.0, 0.25, 0.75,
]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from(EDGES),
    st.floats(-8, 8),
    st.floats(allow_nan=True, allow_infinity=True),
)

# the shapes of the operands of a binary op: 0-d, a vector, broadcasting ones
SHAPES_1 = [(), (4,), (2, 3)]
SHAPES_2 = [((), ()), ((4,), (4,)), ((2, 1), (3,)), ((), (3,)), ((3,), ())]


def _nan_to_num(m, x, args):
    nan, posinf, neginf = args
    return x.nan_to_num(nan=nan, posinf=posinf, neginf=neginf)


# unary ops: name -> (call(m, x, arg), a strategy of the extra argument or None)
UNARY = {
    "lgamma": (lambda m, x, a: x.lgamma(), None),
    "gammaln": (lambda m, x, a: m.special.gammaln(x), None),
    "digamma": (lambda m, x, a: x.digamma(), None),
    "psi": (lambda m, x, a: m.special.psi(x), None),
    "polygamma": (lambda m, x, a: x.polygamma(a), st.integers(0, 4)),
    "special.polygamma": (lambda m, x, a: m.special.polygamma(a, x), st.integers(0, 3)),
    "mvlgamma": (lambda m, x, a: x.mvlgamma(a), st.integers(1, 4)),
    "multigammaln": (lambda m, x, a: m.special.multigammaln(x, a), st.integers(1, 3)),
    "erf": (lambda m, x, a: x.erf(), None),
    "erfc": (lambda m, x, a: x.erfc(), None),
    "erfinv": (lambda m, x, a: x.erfinv(), None),
    "erfcx": (lambda m, x, a: m.special.erfcx(x), None),
    "ndtr": (lambda m, x, a: m.special.ndtr(x), None),
    "ndtri": (lambda m, x, a: m.special.ndtri(x), None),
    "log_ndtr": (lambda m, x, a: m.special.log_ndtr(x), None),
    "i0": (lambda m, x, a: x.i0(), None),
    "i0e": (lambda m, x, a: m.special.i0e(x), None),
    "i1": (lambda m, x, a: m.special.i1(x), None),
    "i1e": (lambda m, x, a: m.special.i1e(x), None),
    "modified_bessel_i0": (lambda m, x, a: m.special.modified_bessel_i0(x), None),
    "modified_bessel_i1": (lambda m, x, a: m.special.modified_bessel_i1(x), None),
    "spherical_bessel_j0": (lambda m, x, a: m.special.spherical_bessel_j0(x), None),
    "sinc": (lambda m, x, a: x.sinc(), None),
    "logit": (lambda m, x, a: x.logit(a), st.none() | st.sampled_from([0.0, 1e-6, 0.25, 0.5])),
    "expit": (lambda m, x, a: m.special.expit(x), None),
    "entr": (lambda m, x, a: m.special.entr(x), None),
    "exp2": (lambda m, x, a: x.exp2(), None),
    "expm1": (lambda m, x, a: x.expm1(), None),
    "log1p": (lambda m, x, a: x.log1p(), None),
    "sigmoid": (lambda m, x, a: x.sigmoid(), None),
    "log_sigmoid": (lambda m, x, a: m.nn.functional.logsigmoid(x), None),
    "softplus": (lambda m, x, a: m.nn.functional.softplus(x), None),
    "frac": (lambda m, x, a: x.frac(), None),
    "sgn": (lambda m, x, a: x.sgn(), None),
    "signbit": (lambda m, x, a: x.signbit(), None),
    "round_decimals": (lambda m, x, a: m.special.round(x, decimals=a), st.integers(-2, 3)),
    "nan_to_num": (
        _nan_to_num,
        st.tuples(
            st.sampled_from([0.0, 1.5, -INF]),
            st.sampled_from([None, 7.0, INF]),
            st.sampled_from([None, -7.0, 0.0]),
        ),
    ),
    "frexp_mantissa": (lambda m, x, a: x.frexp()[0], None),
    "frexp_exponent": (lambda m, x, a: x.frexp()[1], None),
    "logsumexp": (lambda m, x, a: m.special.logsumexp(x, -1 if x.dim() else 0), None),
    "softmax": (lambda m, x, a: m.special.softmax(x, -1 if x.dim() else 0), None),
    "log_softmax": (lambda m, x, a: m.special.log_softmax(x, -1 if x.dim() else 0), None),
    # in place and out=
    "lgamma_": (lambda m, x, a: x.clone().lgamma_(), None),
    "digamma_": (lambda m, x, a: x.clone().digamma_(), None),
    "polygamma_": (lambda m, x, a: x.clone().polygamma_(a), st.integers(0, 2)),
    "mvlgamma_": (lambda m, x, a: x.clone().mvlgamma_(a), st.integers(1, 3)),
    "erfinv_": (lambda m, x, a: x.clone().erfinv_(), None),
    "logit_": (lambda m, x, a: x.clone().logit_(a), st.none() | st.just(1e-3)),
    "i0_": (lambda m, x, a: x.clone().i0_(), None),
    "sinc_": (lambda m, x, a: x.clone().sinc_(), None),
    "nan_to_num_": (lambda m, x, a: x.clone().nan_to_num_(), None),
    "erf_out": (lambda m, x, a: m.special.erf(x, out=m.empty(0, dtype=x.dtype)), None),
    "gammaln_out": (lambda m, x, a: m.special.gammaln(x, out=m.empty(0, dtype=x.dtype)), None),
    "ndtri_out": (lambda m, x, a: m.special.ndtri(x, out=m.empty(0, dtype=x.dtype)), None),
    "lgamma_out": (lambda m, x, a: m.lgamma(x, out=m.empty(0, dtype=x.dtype)), None),
    "polygamma_out": (
        lambda m, x, a: m.polygamma(a, x, out=m.empty(0, dtype=x.dtype)),
        st.integers(0, 2),
    ),
}


def _clamp(m, x, y):
    return x.clamp(min=y, max=y + 1)


# binary ops: name -> call(m, x, y)
BINARY = {
    "xlogy": lambda m, x, y: m.special.xlogy(x, y),
    "xlog1py": lambda m, x, y: m.special.xlog1py(x, y),
    "zeta": lambda m, x, y: m.special.zeta(x, y),
    "gammainc": lambda m, x, y: m.special.gammainc(x, y),
    "gammaincc": lambda m, x, y: m.special.gammaincc(x, y),
    "hypot": lambda m, x, y: x.hypot(y),
    "atan2": lambda m, x, y: x.atan2(y),
    "copysign": lambda m, x, y: x.copysign(y),
    "nextafter": lambda m, x, y: x.nextafter(y),
    "fmod": lambda m, x, y: x.fmod(y),
    "remainder": lambda m, x, y: x.remainder(y),
    "ldexp": lambda m, x, y: x.ldexp(y),
    "logaddexp": lambda m, x, y: x.logaddexp(y),
    "logaddexp2": lambda m, x, y: x.logaddexp2(y),
    "float_power": lambda m, x, y: x.float_power(y),
    "pow": lambda m, x, y: x.pow(y),
    "heaviside": lambda m, x, y: x.heaviside(y),
    "fmax": lambda m, x, y: x.fmax(y),
    "fmin": lambda m, x, y: x.fmin(y),
    "maximum": lambda m, x, y: x.maximum(y),
    "clamp_tensor": _clamp,
    "lerp_half": lambda m, x, y: x.lerp(y, 0.5),
    "lerp_tensor": lambda m, x, y: x.lerp(y, y),
    "div_floor": lambda m, x, y: x.div(y, rounding_mode="floor"),
    "div_trunc": lambda m, x, y: x.div(y, rounding_mode="trunc"),
    "xlogy_": lambda m, x, y: x.clone().xlogy_(y),
    "hypot_": lambda m, x, y: x.clone().hypot_(y),
    "fmod_out": lambda m, x, y: m.fmod(x, y, out=m.empty(0, dtype=x.dtype)),
    "xlogy_out": lambda m, x, y: m.special.xlogy(x, y, out=m.empty(0, dtype=x.dtype)),
    "zeta_number": lambda m, x, y: m.special.zeta(x, 2.0),
    "xlogy_number": lambda m, x, y: m.special.xlogy(2.0, y),
    "pow_number_base": lambda m, x, y: (-2.0) ** y,
    "pow_number_exponent": lambda m, x, y: x**-1.5,
    "float_power_number": lambda m, x, y: x.float_power(-0.5),
}

# ops with no gradient in PyTorch or none worth comparing (their outputs are integers, bools
# or piecewise constants)
NO_GRAD = {
    "signbit", "frexp_exponent", "sgn", "round_decimals", "nextafter", "heaviside",
    "div_floor", "div_trunc", "zeta", "gammainc", "gammaincc",
}  # fmt: skip


# ---- independent values (mpmath, 30 digits) where PyTorch's are less accurate -----------------
# PyTorch's polygamma is good to about 5e-10 (trigamma(1) = pi**2/6 + 8e-10), its ndtr to 1e-11
# relative in the lower tail (ndtr(-5)), gammainc(c) to 1e-10 near a = x, float32 i1 to 1e-6
# (8 ulps), and its log1p flushes subnormals to 0; where ours differs from PyTorch's by more than
# the tolerance it must be within the tolerance of these (then PyTorch's is the one off).


def _log_gamma(x):
    return mpmath.log(abs(mpmath.gamma(x)))


def _mvlgamma(x, p):
    terms = sum(_log_gamma(x - mpmath.mpf(j) / 2) for j in range(p))
    return terms + p * (p - 1) * mpmath.log(mpmath.pi) / 4


def _bessel(order, scaled):
    return lambda x, a: mpmath.besseli(order, x) * (mpmath.exp(-abs(x)) if scaled else 1)


REFERENCE = {  # name -> f(x, arg) in mpmath, analytic where compared
    "lgamma": lambda x, a: _log_gamma(x),
    "gammaln": lambda x, a: _log_gamma(x),
    "lgamma_": lambda x, a: _log_gamma(x),
    "gammaln_out": lambda x, a: _log_gamma(x),
    "lgamma_out": lambda x, a: _log_gamma(x),
    "digamma": lambda x, a: mpmath.psi(0, x),
    "digamma_": lambda x, a: mpmath.psi(0, x),
    "psi": lambda x, a: mpmath.psi(0, x),
    "polygamma": lambda x, n: mpmath.psi(n, x),
    "polygamma_": lambda x, n: mpmath.psi(n, x),
    "polygamma_out": lambda x, n: mpmath.psi(n, x),
    "special.polygamma": lambda x, n: mpmath.psi(n, x),
    "mvlgamma": _mvlgamma,
    "mvlgamma_": _mvlgamma,
    "multigammaln": _mvlgamma,
    "ndtr": lambda x, a: mpmath.ncdf(x),
    "log_ndtr": lambda x, a: mpmath.log(mpmath.ncdf(x)),
    "erfcx": lambda x, a: mpmath.exp(x * x) * mpmath.erfc(x),
    "i0": _bessel(0, False),
    "i0_": _bessel(0, False),
    "modified_bessel_i0": _bessel(0, False),
    "i1": _bessel(1, False),
    "modified_bessel_i1": _bessel(1, False),
    "i0e": _bessel(0, True),
    "i1e": _bessel(1, True),
    "log1p": lambda x, a: mpmath.log1p(x),
    "sigmoid": lambda x, a: 1 / (1 + mpmath.exp(-x)),
    "expit": lambda x, a: 1 / (1 + mpmath.exp(-x)),
}
REFERENCE_BINARY = {  # name -> f(x, y) in mpmath
    "zeta": lambda x, y: mpmath.zeta(x, y),
    "zeta_number": lambda x, y: mpmath.zeta(x, 2),
    "gammainc": lambda x, y: mpmath.gammainc(x, 0, y, regularized=True),
    "gammaincc": lambda x, y: mpmath.gammainc(x, y, mpmath.inf, regularized=True),
}


def _reference(name: str, x: float, arg, order: int = 0) -> float:
    """The ``order``-th derivative of ``REFERENCE[name]`` at ``x``, rounded to float64; NaN
    (no reference) for |x| > 1e6, where mpmath takes minutes."""
    if not abs(x) <= 1e6:
        return math.nan
    with mpmath.workdps(30):
        f = lambda t: REFERENCE[name](t, arg)  # noqa: E731
        try:
            return float(mpmath.diff(f, mpmath.mpf(x), order) if order else f(mpmath.mpf(x)))
        except ValueError:  # (a pole)
            return math.nan


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _array(values: list, shape: tuple) -> np.ndarray:
    size = math.prod(shape)
    return np.resize(np.array(values, dtype=np.float64), size).reshape(shape)


def _pair(array: np.ndarray, kind: str, requires_grad: bool = False):
    """The same tensor in both libraries: ``kind`` is a float dtype, an int64 (the values
    truncated), or a bool (the nonzero values)."""
    if kind == "int64":
        array = np.nan_to_num(array, posinf=0, neginf=0).clip(-100, 100).astype(np.int64)
    elif kind == "bool":
        array = array != 0
    ours = sg.tensor(array, dtype=getattr(sg, kind), requires_grad=requires_grad)
    theirs = torch.tensor(array, dtype=getattr(torch, kind), requires_grad=requires_grad)
    return ours, theirs


def assert_same_values(ours, theirs, what: str, reference=None, tolerance=None, skip=None) -> None:
    """The dtype, the shape, NaN where NaN, the same infinities and signed zeros, and the
    finite values within the dtype's tolerance (or ``tolerance``). Where they differ and
    ``reference`` is given (a function of a mask of the entries, giving their true values),
    ours must be within the tolerance of the true values: PyTorch's are the ones off. The
    entries of the mask ``skip`` are not compared (the differences README names)."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), what
        for o, t in zip(ours, theirs):
            assert_same_values(o, t, what)
        return
    assert isinstance(ours, sg.Tensor), f"{what}: {ours!r}"
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype), f"{what}: {ours.dtype}"
    actual, expected = ours.detach().numpy(), theirs.detach().numpy()
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    rtol, atol = tolerance or TOLERANCE[expected.dtype.name]
    alike = _alike(actual, expected, rtol, atol) | (False if skip is None else skip)
    if reference is not None and not alike.all():
        true = np.asarray(reference(~alike), dtype=expected.dtype)
        near = _alike(actual[~alike], true, rtol, atol)
        assert near.all(), f"{what}: {actual[~alike]}, PyTorch's {expected[~alike]}, not {true}"
        return
    assert alike.all(), f"{what}: {actual[~alike]} where PyTorch gives {expected[~alike]}"


def _alike(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Entries equal (NaN, inf and zeros: the same, their signs too; zeros signed only where
    the tolerance's atol is below 1e-200, the values') or close."""
    exact = ~np.isfinite(expected) | (expected == 0) & (actual == 0)
    same = (actual == expected) & ((np.signbit(actual) == np.signbit(expected)) | (atol > 1e-200))
    same |= np.isnan(actual) & np.isnan(expected)
    return np.where(exact, same, np.isclose(actual, expected, rtol, atol))


@st.composite
def unary_cases(draw, name):
    arg = draw(UNARY[name][1]) if UNARY[name][1] is not None else None
    shape = draw(st.sampled_from(SHAPES_1))
    values = draw(st.lists(VALUES, min_size=1, max_size=6))
    kind = draw(st.sampled_from(["float64", "float32", "int64", "bool"]))
    return name, arg, _array(values, shape), kind


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
@FUZZ
def test_unary_values_match_torch(name, data):
    name, arg, array, kind = data.draw(unary_cases(name))
    x, t = _pair(array, kind)
    call = UNARY[name][0]
    ours, theirs = outcome(call, sg, x, arg), outcome(call, torch, t, arg)
    what = f"{name}({kind} {array.tolist()}, {arg})"
    if raised_alike(ours, theirs, what):
        return
    reference = None
    if name in REFERENCE:
        inputs = t.double().numpy()  # (rounded to float32 where it was)
        reference = lambda mask: [_reference(name, v, arg) for v in inputs[mask]]  # noqa: E731
    assert_same_values(ours, theirs, what, reference, skip=_poles(name, t, arg))


def _poles(name: str, x, n) -> np.ndarray | None:
    """The poles 0, -1, -2... of trigamma and the polygammas above it, where ours is inf and
    PyTorch's a large finite number or NaN (README's special: "At the poles...")."""
    if "polygamma" not in name or not n:
        return None
    return _at_poles(x.double().numpy())


def _at_poles(x: np.ndarray) -> np.ndarray:
    return (x <= 0) & (x == np.floor(x))


GAMMA_FAMILY = ("gamma", "digamma", "psi", "polygamma", "mvlgamma", "multigammaln")


def _not_compared(name: str, arrays: list, arg, order: int, theirs: list) -> np.ndarray:
    """The entries of the derivatives of ``order`` not compared, with the reason for each."""
    x = arrays[0]
    skip = np.zeros(x.shape, dtype=bool)
    if any(f in name for f in GAMMA_FAMILY):  # trigamma at its poles (README, see _poles)
        shifts = range(arg) if name.startswith(("mvlgamma", "multigammaln")) else [0]
        skip |= np.any([_at_poles(x - j / 2) for j in shifts], axis=0)
    if name == "logit":  # PyTorch's sign of inf at +-0 is -inf where its vectorized loop ran,
        skip |= (x == 0) | np.isnan(x)  # +inf where not (under 8 float64 entries); with eps, 0
        # at NaN where it ran, NaN where not
    if name == "sinc":  # (pi x cos(pi x) - sin(pi x)) / (pi x**2) cancels, in both (the
        skip |= np.abs(x) < 1e-2  # same formula): 10% off at 1e-8
    if name == "frexp_mantissa":  # PyTorch's 2**-exponent in float32: 0 or inf outside it
        skip |= (np.abs(x) > 2.0**127) | (np.abs(x) < 2.0**-126)
    if order == 2:
        # the derivative of a first derivative NaN or inf (fmod's at x = inf, ldexp's 2**1e5) or
        # of one with 1 / x**2 where that overflows (hypot, xlogy at a subnormal, PyTorch's
        # logit at 2e-306 below its eps): inf or NaN by the order of the roundings
        skip |= np.any([~np.isfinite(t.detach().numpy()) for t in theirs if t is not None], 0)
        skip |= np.any([(a != 0) & (np.abs(a) < 1e-154) for a in arrays], axis=0)
        # and of inf or huge values (pow's y (y - 1) x**(y - 2) at y = -1e154: inf * 0)
        skip |= np.any([np.abs(a) > 1e150 for a in arrays], axis=0)
        if name in ("i1", "i1e"):  # i1(x) / x**2 in both: absolute error eps / |x| near 0
            skip |= np.abs(x) < 1e-4
        if name == "sinc":  # the true -pi**2/3 near 0: PyTorch's NaN at 0 (0 at 1e-100), ours
            skip |= np.abs(x) < 1e-2  # 0 (README's special: "sinc's second derivative...")
        if name == "erfcx":  # 2 x erfcx(x) - 2 / sqrt(pi) cancels, in both: error eps x
            skip |= x > 100
        if name == "copysign":  # the true one, ours, is 0; PyTorch's is the derivative of
            skip |= True  # out / x: round-off (8e28 at 1e-45), NaN at 0
        if name == "hypot":  # terms of size 1 / r cancel (y**2 / r**3 - x y / r**3, and
            skip |= np.maximum(np.abs(x), np.abs(arrays[1])) < 1e-3  # PyTorch's (r - y y / r)
            # / r**2 at x = 0): round-off eps / r, past the atol below r = 1e-3
        if name in ("xlogy", "xlog1py"):  # 1 / y - x / y**2 at x = y: round-off eps / y
            skip |= np.abs(arrays[1]) < 1e-3
    if name == "log_ndtr":  # both: exp(-(log_ndtr + x**2 / 2)) (the same formula), whose
        skip |= x < -20  # x**2 / 2 loses digits (an ulp is 2.4e-7 of it at -49045) and whose
        # derivative's f' + x cancels (1e-7 at -185)
    return skip


@st.composite
def binary_cases(draw, name):
    shapes = draw(st.sampled_from(SHAPES_2))
    arrays = [_array(draw(st.lists(VALUES, min_size=1, max_size=6)), s) for s in shapes]
    kinds = draw(st.sampled_from(["float64", "float32", "int64", "bool"]))
    other = draw(st.sampled_from(["same", "float64", "float32", "int64"]))
    return name, arrays, (kinds, kinds if other == "same" else other)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
@FUZZ
def test_binary_values_match_torch(name, data):
    name, arrays, kinds = data.draw(binary_cases(name))
    (x, t), (y, u) = (_pair(a, k) for a, k in zip(arrays, kinds))
    call = BINARY[name]
    ours, theirs = outcome(call, sg, x, y), outcome(call, torch, t, u)
    what = f"{name}({kinds[0]} {arrays[0].tolist()}, {kinds[1]} {arrays[1].tolist()})"
    if raised_alike(ours, theirs, what):
        return
    reference = None
    if name in REFERENCE_BINARY:
        inputs = np.broadcast_arrays(t.double().numpy(), u.double().numpy())
        if name == "zeta_number":  # (y unused)
            inputs = [t.double().numpy()] * 2
        f = REFERENCE_BINARY[name]

        def reference(mask):
            with mpmath.workdps(30):
                return [float(f(*map(mpmath.mpf, v))) for v in zip(*(a[mask] for a in inputs))]

    skip = None
    if name == "maximum":  # PyTorch's sign at a tie of 0 and -0 depends on its loop: x's below
        skip = theirs.numpy() == 0  # 8 float64 entries, y's from 8 on
    if name == "ldexp" and kinds[1] == "float32":  # PyTorch's 2**y in y's float32 (2**27.5
        fractional = u.numpy() != np.round(u.numpy())  # rounded), ours in the result's dtype
        skip = np.broadcast_to(fractional, tuple(theirs.shape))
    assert_same_values(ours, theirs, what, reference, skip=skip)


# ---- gradients ---------------------------------------------------------------------------------


def _weights(count: int) -> np.ndarray:
    return np.linspace(0.5, 1.5, count)


def _first_and_second(m, call, leaves):
    """The gradient of ``sum(call(leaves) * w)`` and, through it, the gradient of the sum of
    the first gradients times w2: the first and second derivatives PyTorch's autograd gives."""
    out = call(m, *leaves)
    weights = m.tensor(_weights(out.numel()).reshape(tuple(out.shape)))
    firsts = m.autograd.grad((out * weights).sum(), leaves, create_graph=True, allow_unused=True)
    used = [g for g in firsts if g is not None and g.requires_grad]
    if not used:
        return out, firsts, [None] * len(leaves)
    total = sum((g * g.new_tensor(1.25)).sum() for g in used)
    seconds = m.autograd.grad(total, leaves, allow_unused=True)
    return out, firsts, seconds


def _grad_call(name: str, arg):
    """``call(m, *xs)`` of the op ``name`` with its extra argument ``arg``."""
    if name in UNARY:
        return lambda m, x: UNARY[name][0](m, x, arg)
    return BINARY[name]


def _reference_derivative(name: str, x: np.ndarray, arg, order: int):
    """The true derivatives the gradient test's ``order`` gives at the entries of a mask: w
    f'(x), 1.25 w f''(x) (w the weights of the outputs)."""
    weights = _weights(len(x)) * (1.25 if order == 2 else 1)
    return lambda mask: [
        w * _reference(name, v, arg, order) for v, w in zip(x[mask], weights[mask])
    ]


GRADIENT_NAMES = [
    n for n in sorted(UNARY) + sorted(BINARY)
    if n not in NO_GRAD and not n.endswith("_") and not n.endswith("_out")
]  # fmt: skip


@st.composite
def gradient_cases(draw, name):
    arity = 1 if name in UNARY else 2
    arg = draw(UNARY[name][1]) if name in UNARY and UNARY[name][1] is not None else None
    values = [draw(st.lists(VALUES, min_size=1, max_size=4)) for _ in range(arity)]
    return name, arg, [_array(v, (len(values[0]),)) for v in values]


def _compare_gradients(ours, theirs, what, reference, skip):
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t is None:
            assert o is None or not o.detach().numpy().any(), f"{what}: gradient {i}"
        elif o is None:  # (a first derivative that is constant: PyTorch's second is 0)
            rounded_off = np.abs(t.detach().numpy()) <= GRAD_TOLERANCE[1]
            assert (rounded_off | skip).all(), f"{what}: gradient {i} is None, PyTorch's {t}"
        else:
            where = f"{what}: gradient {i}"
            assert_same_values(o, t, where, reference if i == 0 else None, GRAD_TOLERANCE, skip)


@pytest.mark.parametrize("name", GRADIENT_NAMES)
@given(data=st.data())
@GRAD_FUZZ
def test_first_and_second_derivatives_match_torch(name, data):
    name, arg, arrays = data.draw(gradient_cases(name))
    pairs = [_pair(a, "float64", requires_grad=True) for a in arrays]
    call = _grad_call(name, arg)
    ours = outcome(_first_and_second, sg, call, [p[0] for p in pairs])
    theirs = outcome(_first_and_second, torch, call, [p[1] for p in pairs])
    what = f"{name}({[a.tolist() for a in arrays]}, {arg})"
    if raised_alike(ours, theirs, what):
        return
    poles = _not_compared(name, arrays, arg, 0, theirs[1])
    reference = None
    if name in REFERENCE:  # (trigamma at 2 - 9e-16: PyTorch's 8% off)
        reference = lambda mask: [_reference(name, v, arg) for v in arrays[0][mask]]  # noqa: E731
    assert_same_values(ours[0], theirs[0], f"{what}: values", reference, GRAD_TOLERANCE, poles)
    for order in (1, 2):
        skip = _not_compared(name, arrays, arg, order, theirs[1])
        reference = None
        if name in REFERENCE:
            reference = _reference_derivative(name, arrays[0], arg, order)
        what_order = f"{what}: order {order}"
        _compare_gradients(ours[order], theirs[order], what_order, reference, skip)


# ---- gradcheck and gradgradcheck at interior points ------------------------------------------

# name -> the interval of each input (the function smooth inside)
SMOOTH = {
    "lgamma": [(0.3, 6)], "digamma": [(0.3, 6)], "polygamma": [(0.3, 6)],
    "mvlgamma": [(1.6, 6)], "erf": [(-2, 2)], "erfc": [(-2, 2)], "erfinv": [(-0.9, 0.9)],
    "erfcx": [(-2, 5)], "ndtr": [(-3, 3)], "ndtri": [(0.05, 0.95)], "log_ndtr": [(-8, 3)],
    "i0": [(-3, 3)], "i0e": [(0.1, 3)], "i1": [(-3, 3)], "i1e": [(0.1, 3)], "sinc": [(0.1, 2)],
    "logit": [(0.05, 0.95)], "expit": [(-4, 4)], "entr": [(0.1, 2)], "exp2": [(-3, 3)],
    "log1p": [(-0.5, 2)], "log_sigmoid": [(-4, 4)], "softplus": [(-4, 4)],
    "logsumexp": [(-3, 3)], "log_softmax": [(-3, 3)],
    "xlogy": [(-2, 2), (0.2, 3)], "xlog1py": [(-2, 2), (0.2, 3)], "hypot": [(0.2, 3), (-3, -0.2)],
    "atan2": [(-2, 2), (0.2, 3)], "logaddexp": [(-3, 3), (-3, 3)],
    "logaddexp2": [(-3, 3), (-3, 3)], "float_power": [(0.2, 3), (-2, 2)],
    "pow": [(0.2, 3), (-2, 2)],
    "lerp_tensor": [(-2, 2), (0.1, 0.9)]
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SMOOTH))
@given(data=st.data())
@fuzz_settings(4)
def test_gradcheck_and_gradgradcheck_at_interior_points(name, data):
    arg = data.draw(UNARY[name][1]) if name in UNARY and UNARY[name][1] is not None else None
    # (not 0: pow's gradient in x is 0 at y = 0, PyTorch's convention, so its derivative in
    # y there is 0, not the limit x**-1)
    entries = [st.floats(low, high).filter(lambda v: v != 0) for low, high in SMOOTH[name]]
    values = [np.array(data.draw(st.lists(e, min_size=3, max_size=3))) for e in entries]
    call = _grad_call(name, arg)
    leaves = [sg.tensor(v, dtype=sg.float64, requires_grad=True) for v in values]
    assert sg.autograd.gradcheck(lambda *xs: call(sg, *xs), leaves)
    assert sg.autograd.gradgradcheck(lambda *xs: call(sg, *xs), leaves)
