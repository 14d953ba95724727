"""scratchgrad.special against torch.special: values and gradients over random values (float64
tight, float32 loose), the edge values (0, -0, the poles of the gamma functions, +-inf, NaN, huge
and tiny arguments) in both dtypes, gradients at the edges, gradcheck and gradgradcheck of each
new primitive, integer and bool inputs promoted as PyTorch, vmap, the errors; and the accuracy
of the series and expansions of ops/special.py against independent references (Python's math
module, closed forms)."""

import doctest
import math

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch, check_against_torch, same_dtype

import scratchgrad as sg
import scratchgrad.ops.special as ops
import scratchgrad.special

RNG = np.random.default_rng(0)
INF, NAN = math.inf, math.nan


def uniform(low, high):
    return lambda shape: RNG.uniform(low, high, shape)


# name -> (call(m, *xs) for both libraries, a sampler of each input by shape)
CASES = {
    "gammaln": (lambda m, x: m.special.gammaln(x), [uniform(-6, 12)]),
    "gammaln_large": (lambda m, x: m.special.gammaln(x * 1e3), [uniform(0, 100)]),
    "digamma": (lambda m, x: m.special.digamma(x), [uniform(-6, 12)]),
    "psi": (lambda m, x: m.special.psi(x), [uniform(0.01, 40)]),
    "polygamma_0": (lambda m, x: m.special.polygamma(0, x), [uniform(-3, 5)]),
    "polygamma_1": (lambda m, x: m.special.polygamma(1, x), [uniform(-6, 12)]),
    "polygamma_2": (lambda m, x: m.special.polygamma(2, x), [uniform(-6, 12)]),
    "polygamma_5": (lambda m, x: m.special.polygamma(5, x), [uniform(0.2, 30)]),
    "multigammaln_1": (lambda m, x: m.special.multigammaln(x, 1), [uniform(0.1, 9)]),
    "multigammaln_4": (lambda m, x: m.special.multigammaln(x, 4), [uniform(1.6, 9)]),
    "zeta": (
        lambda m, q: m.special.zeta(m.tensor([[[2.0]], [[3.5]]], dtype=q.dtype), q),
        [uniform(0.1, 20)],
    ),  # fmt: skip
    "zeta_number": (
        lambda m, q: m.special.zeta(4.0, q) + m.special.zeta(q.detach() + 1.5, 2.0),
        [uniform(0.1, 5)],
    ),  # fmt: skip
    "i0": (lambda m, x: m.special.i0(x), [uniform(-40, 40)]),
    "i0e": (lambda m, x: m.special.i0e(x), [uniform(-40, 40)]),
    "i1": (lambda m, x: m.special.i1(x), [uniform(-40, 40)]),
    "i1e": (lambda m, x: m.special.i1e(x), [uniform(-40, 40)]),
    "erf": (lambda m, x: m.special.erf(x), [uniform(-4, 4)]),
    "erfc": (lambda m, x: m.special.erfc(x), [uniform(-4, 9)]),
    "erfcx": (lambda m, x: m.special.erfcx(x), [uniform(-5, 30)]),
    "erfinv": (lambda m, x: m.special.erfinv(x), [uniform(-0.99, 0.99)]),
    "ndtr": (lambda m, x: m.special.ndtr(x), [uniform(-8, 8)]),
    "ndtri": (lambda m, p: m.special.ndtri(p), [uniform(0.001, 0.999)]),
    "log_ndtr": (lambda m, x: m.special.log_ndtr(x), [uniform(-30, 6)]),
    "xlogy": (lambda m, x, y: m.special.xlogy(x, y), [uniform(-2, 2), uniform(0.1, 5)]),
    "xlogy_number": (
        lambda m, y: m.special.xlogy(2.5, y) + m.special.xlogy(y, 3.0),
        [uniform(0.1, 5)],
    ),  # fmt: skip
    "xlog1py": (lambda m, x, y: m.special.xlog1py(x, y), [uniform(-2, 2), uniform(-0.9, 5)]),
    "entr": (lambda m, x: m.special.entr(x), [uniform(0.01, 5)]),
    "logit": (lambda m, x: m.special.logit(x), [uniform(0.01, 0.99)]),
    "logit_eps": (lambda m, x: m.special.logit(x, eps=0.2), [uniform(0.0, 1.0)]),
    "expit": (lambda m, x: m.special.expit(x), [uniform(-10, 10)]),
    "sinc": (lambda m, x: m.special.sinc(x), [uniform(-4, 4)]),
    "exp2": (lambda m, x: m.special.exp2(x), [uniform(-10, 10)]),
    "expm1": (lambda m, x: m.special.expm1(x), [uniform(-3, 3)]),
    "log1p": (lambda m, x: m.special.log1p(x), [uniform(-0.9, 5)]),
    "round": (lambda m, x: m.special.round(x * 10), [uniform(-3, 3)]),
    "logsumexp": (lambda m, x: m.special.logsumexp(x, -1), [uniform(-5, 5)]),
    "logsumexp_keepdim": (lambda m, x: m.special.logsumexp(x, -1, keepdim=True), [uniform(-5, 5)]),
    "softmax": (lambda m, x: m.special.softmax(x, 0), [uniform(-5, 5)]),
    "softmax_dtype": (lambda m, x: m.special.softmax(x, -1, dtype=m.float64), [uniform(-5, 5)]),
    "log_softmax": (lambda m, x: m.special.log_softmax(x, -1), [uniform(-5, 5)]),
}
SHAPES = [(3, 4), (), (2, 1, 3)]
ROWS = [pytest.param(name, shape, id=f"{name}-{shape}") for name in CASES for shape in SHAPES]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "shape"), ROWS)
def test_values_and_gradients_match_torch(name, shape, dtype):
    call, samplers = CASES[name]
    arrays = [sample(shape) for sample in samplers]
    check_against_torch(
        lambda *xs: call(sg, *xs), lambda *xs: call(torch, *xs), arrays, dtype, what=name
    )


# ---- the edges --------------------------------------------------------------------------------

EDGES = [0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -2.5, -0.5, 0.5, 1e-300, 1e-30, 1e10, 1e300, -1e300]
EDGES += [-1e10 + 0.5, 30.0, -30.0, 800.0, -800.0, INF, -INF, NAN]
UNARY = {
    "gammaln": lambda m, x: m.special.gammaln(x),
    "digamma": lambda m, x: m.special.digamma(x),
    "polygamma_2": lambda m, x: m.special.polygamma(2, x),
    "polygamma_3": lambda m, x: m.special.polygamma(3, x),
    "i0": lambda m, x: m.special.i0(x),
    "i0e": lambda m, x: m.special.i0e(x),
    "i1": lambda m, x: m.special.i1(x),
    "i1e": lambda m, x: m.special.i1e(x),
    "erfc": lambda m, x: m.special.erfc(x),
    "erfcx": lambda m, x: m.special.erfcx(x),
    "ndtr": lambda m, x: m.special.ndtr(x),
    "ndtri": lambda m, x: m.special.ndtri(x),
    "log_ndtr": lambda m, x: m.special.log_ndtr(x),
    "entr": lambda m, x: m.special.entr(x),
    "logit": lambda m, x: m.special.logit(x),
    "logit_eps": lambda m, x: m.special.logit(x, 1e-3),
    "sinc": lambda m, x: m.special.sinc(x),
    "exp2": lambda m, x: m.special.exp2(x),
    "expit": lambda m, x: m.special.expit(x),
    "erfinv": lambda m, x: m.special.erfinv(x),
}
# (rtol, atol) against torch in float64 where one of the two is not exact: log_ndtr(30) (x / sqrt 2
# is rounded, and log_ndtr's relative slope there is about x**2)
EDGE_TOLERANCE = {"log_ndtr": (1e-12, None)}


def assert_same_values(ours, theirs, dtype, rtol, what, atol=None):
    """Equal NaNs and infinities (with their signs) and close finite values."""
    ours, theirs = np.asarray(ours.tolist(), float), theirs.double().numpy()
    assert (np.isnan(ours) == np.isnan(theirs)).all(), f"{what}: NaN at {ours}, {theirs}"
    infinite = np.isinf(theirs)
    np.testing.assert_array_equal(ours[infinite], theirs[infinite], err_msg=what)
    finite = np.isfinite(theirs)
    atol = atol or (1e-300 if dtype == "float64" else 1e-38)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY)
def test_edge_values_are_torchs(name, dtype):
    # ndtr below -8: PyTorch's (1 + erf) / 2 has lost its digits there (next test); polygamma
    # at -1e10 + 0.5: PyTorch's zeta sums 1e10 terms one by one (minutes), see test_closed_forms
    values = [v for v in EDGES if name != "ndtr" or not v < -8]
    values = [v for v in values if not name.startswith("polygamma") or v != -1e10 + 0.5]
    ours = UNARY[name](sg, sg.tensor(values, dtype=getattr(sg, dtype)))
    theirs = UNARY[name](torch, torch.tensor(values, dtype=getattr(torch, dtype)))
    assert same_dtype(ours, theirs)
    rtol, atol = EDGE_TOLERANCE.get(name, (1e-14, None)) if dtype == "float64" else (2e-6, None)
    assert_same_values(ours, theirs, dtype, rtol, name, atol)


def test_ndtr_keeps_its_digits_in_the_lower_tail():
    """erfc(-x / sqrt 2) / 2, not PyTorch's (1 + erf(x / sqrt 2)) / 2, which is 0 from -8.3.
    Within x**2 rounding errors of math's value: x / sqrt 2 is rounded, and erfc's relative
    slope there is about x**2."""
    x = [-5.0, -8.0, -10.0, -30.0, -38.0]
    expected = [math.erfc(-v / math.sqrt(2)) / 2 for v in x]
    np.testing.assert_allclose(sg.special.ndtr(sg.tensor(x, dtype=sg.float64)), expected, 2e-13)
    assert torch.special.ndtr(torch.tensor(x[2:], dtype=torch.float64)).tolist() == [0.0] * 3


def test_polygamma_1_edges_are_torchs_but_at_the_negative_poles():
    """PyTorch's trigamma reflects through 1 / sin(pi x)**2 with sin(pi x) rounded: a large
    finite number at -1, -2, ..., where the pole is +inf (ours, as at 0 in both)."""
    for dtype in ("float64", "float32"):
        rounded = np.array(EDGES, dtype=dtype)  # -1e10 + 0.5 is an integer in float32
        values = [v for v in rounded.tolist() if not (-INF < v < 0 and v == math.floor(v))]
        x = sg.tensor(values, dtype=getattr(sg, dtype))
        theirs = torch.special.polygamma(1, torch.tensor(values, dtype=getattr(torch, dtype)))
        rtol = 1e-9 if dtype == "float64" else 2e-6  # PyTorch's trigamma: good to 5e-10
        assert_same_values(sg.special.polygamma(1, x), theirs, dtype, rtol, "polygamma_1")
    poles = torch.special.polygamma(1, torch.tensor([-1.0, -2.0], dtype=torch.float64))
    assert (poles > 1e30).all() and (poles < INF).all()
    assert sg.special.polygamma(1, sg.tensor([-1.0, -2.0, 0.0])).tolist() == [INF] * 3


def test_zeta_edges_are_torchs():
    s = [1.0, 0.5, 2.0, 3.0, 2.5, 4.0, 100.0, INF, NAN, 1.5]
    q = [0.0, -1.0, -0.5, -2.5, 0.5, 1.0, 2.0, 1e10, INF, -INF, NAN, 1e-300]
    grid = [np.array(a) for a in np.meshgrid(s, q)]
    for dtype in ("float64", "float32"):
        ours = sg.special.zeta(*(sg.tensor(a, dtype=getattr(sg, dtype)) for a in grid))
        theirs = torch.special.zeta(*(torch.tensor(a, dtype=getattr(torch, dtype)) for a in grid))
        assert_same_values(ours, theirs, dtype, 1e-12 if dtype == "float64" else 2e-6, "zeta")


@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_edges_are_torchs(name):
    values = [0.0, -0.0, 1.0, -1.0, -2.0, 2.0, INF, -INF, NAN]
    grid = [np.array(a) for a in np.meshgrid(values, values)]
    for dtype in ("float64", "float32"):
        ours = getattr(sg.special, name)(*(sg.tensor(a, dtype=getattr(sg, dtype)) for a in grid))
        theirs = getattr(torch.special, name)(
            *(torch.tensor(a, dtype=getattr(torch, dtype)) for a in grid)
        )
        assert_same_values(ours, theirs, dtype, 1e-15, name)


def test_multigammaln_below_its_domain_is_torchs():
    """No domain check (PyTorch dropped its "all elements must be greater than (p-1)/2"): inf
    at the poles of its terms."""
    outs = [
        lib.special.multigammaln(lib.tensor([0.5, 1.0, 3.0, 0.7], dtype=lib.float64), 3)
        for lib in (sg, torch)
    ]
    assert outs[0].tolist()[:2] == [INF, INF]
    assert_same_values(*outs, "float64", 1e-14, "multigammaln")


# ---- gradients at the edges --------------------------------------------------------------------

EDGE_GRADIENTS = {
    "entr": (lambda m, x: m.special.entr(x), [0.0, -1.0, 2.0, INF]),
    "logit": (lambda m, x: m.special.logit(x), [0.0, 1.0, -1.0, 0.5, 2.0, NAN]),
    "logit_eps": (lambda m, x: m.special.logit(x, 0.1), [0.0, 0.1, 0.9, 1.0, 0.95]),
    "sinc": (lambda m, x: m.special.sinc(x), [0.0, -0.0, 1.0, 0.5]),
    "xlogy_x": (
        lambda m, x: m.special.xlogy(x, m.tensor([0.0, NAN, 2.0, 0.0, -1.0], dtype=x.dtype)),
        [0.0, 0.0, 0.0, 1.0, 0.0],
    ),
    "xlogy_y": (
        lambda m, y: m.special.xlogy(m.tensor([0.0, 0.0, 2.0, 1.0], dtype=y.dtype), y),
        [0.0, NAN, 2.0, 0.0],
    ),
    "xlog1py_x": (
        lambda m, x: m.special.xlog1py(x, m.tensor([-1.0, -2.0, 0.5, -1.0, NAN], dtype=x.dtype)),
        [0.0, 0.0, 0.0, 1.0, 0.0],
    ),
    "xlog1py_y": (
        lambda m, y: m.special.xlog1py(m.tensor([0.0, 0.0, 2.0, 1.0], dtype=y.dtype), y),
        [-1.0, NAN, 2.0, 0.0],
    ),
    "i0": (lambda m, x: m.special.i0(x), [0.0, 1.0, -3.0]),
    "i0e": (lambda m, x: m.special.i0e(x), [0.0, 1.0, -1.0, 800.0]),
    "i1": (lambda m, x: m.special.i1(x), [0.0, 1e-17, -1e-17, 1.0, -3.0]),
    "i1e": (lambda m, x: m.special.i1e(x), [0.0, 1e-17, 1.0, -1.0, 800.0]),
    "log_ndtr": (lambda m, x: m.special.log_ndtr(x), [-40.0, 0.0, 40.0, -INF, INF, -1.0]),
    "ndtri": (lambda m, x: m.special.ndtri(x), [0.0, 0.5, 1.0, 1e-300]),
    "ndtr": (lambda m, x: m.special.ndtr(x), [0.0, 0.5, -40.0, 40.0]),
    "erfcx": (lambda m, x: m.special.erfcx(x), [0.0, -30.0, 30.0, INF, -INF]),
    "erfc": (lambda m, x: m.special.erfc(x), [0.0, -3.0, 30.0, INF]),
    "gammaln": (lambda m, x: m.special.gammaln(x), [0.0, -1.0, 1.0, -2.5, 1e300]),
    "digamma": (lambda m, x: m.special.digamma(x), [0.0, 1.0, -2.5, 10.0, INF]),
    "polygamma_2": (lambda m, x: m.special.polygamma(2, x), [0.1, 1.0, -2.5, 10.0]),
    "exp2": (lambda m, x: m.special.exp2(x), [0.0, 3.0, -1.5, -INF]),
    "zeta": (
        lambda m, q: m.special.zeta(m.tensor([3.0, 2.0, 4.0, 2.0], dtype=q.dtype), q),
        [2.0, 0.5, -0.5, 0.0],
    ),
    # +inf at -0 as at +0 (PyTorch's dy * inf at x == 0), with and without eps
    "logit_at_minus_zero": (lambda m, x: m.special.logit(x), [-0.0, 0.0, 1.0, 0.5]),
    "logit_eps_0": (lambda m, x: m.logit(x, 0.0), [-0.0, 0.0, 1.0, 0.5]),
    "logit_eps_negative": (lambda m, x: x.logit(-0.5), [-0.0, 0.0, 1.0, 0.5]),
    # x + 0.0 is +0 at x = -0: digamma(+0) = -inf, as PyTorch's
    "mvlgamma_at_minus_zero": (lambda m, x: m.mvlgamma(x, 2), [-0.0, 0.0, 2.5]),
    "multigammaln_at_minus_zero": (lambda m, x: m.special.multigammaln(x, 1), [-0.0, 3.0]),
    # 1/2 at NaN, as PyTorch's "not |x| > eps"
    "i1_at_nan": (lambda m, x: m.special.i1(x), [NAN, 0.0, 1.0]),
    "i1e_at_nan": (lambda m, x: m.special.i1e(x), [NAN, 0.0, -1.0]),
    # 0 where x**2 underflows, not inf - inf = NaN
    "sinc_where_the_square_underflows": (
        lambda m, x: m.special.sinc(x),
        [1e-40, -1e-30, 1e-170, 0.0, 0.5],
    ),
    "sinc_method_where_the_square_underflows": (lambda m, x: x.sinc(), [1e-40, -1e-25, 3e-24, 0.0]),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", EDGE_GRADIENTS)
def test_gradients_at_the_edges_are_torchs(name, dtype):
    call, values = EDGE_GRADIENTS[name]
    grads = []
    for lib in (sg, torch):
        x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
        call(lib, x).backward(lib.ones(len(values), dtype=x.dtype))
        grads.append(x.grad)
    # digamma's derivative: PyTorch's trigamma is good to 5e-10 only (ours to 1e-15)
    rtol = (1e-9 if name == "digamma" else 1e-12) if dtype == "float64" else 2e-6
    assert_same_values(grads[0], grads[1], dtype, rtol, name)


# ---- the primitives: finite differences, promotion, vmap ------------------------------------

PRIMITIVES = {
    "gammaln": (lambda x: sg.special.gammaln(x), (-3.7, 6.0)),
    "digamma": (lambda x: sg.special.digamma(x), (0.2, 6.0)),
    "polygamma_3": (lambda x: sg.special.polygamma(3, x), (-1.8, -1.2)),
    "zeta": (lambda q: sg.special.zeta(sg.tensor(3.5, dtype=sg.float64), q), (0.3, 4.0)),
    "i0": (lambda x: sg.special.i0(x), (-5.0, 25.0)),
    "i0e": (lambda x: sg.special.i0e(x), (-25.0, -0.5)),  # its slope has a kink at 0
    "i1": (lambda x: sg.special.i1(x), (-5.0, 25.0)),
    "i1e": (lambda x: sg.special.i1e(x), (-25.0, 5.0)),
    "erfc": (lambda x: sg.special.erfc(x), (-3.0, 5.0)),
    "erfcx": (lambda x: sg.special.erfcx(x), (-3.0, 25.0)),
    "ndtri": (lambda p: sg.special.ndtri(p), (0.01, 0.99)),
    "log_ndtr": (lambda x: sg.special.log_ndtr(x), (-25.0, 5.0)),
    "entr": (lambda x: sg.special.entr(x), (0.1, 3.0)),
    "logit": (lambda x: sg.special.logit(x), (0.05, 0.95)),
    "logit_eps": (lambda x: sg.special.logit(x, 0.01), (0.05, 0.95)),
    "xlogy": (lambda x: sg.special.xlogy(x, x.flip(-1).abs() + 0.5), (-2.0, 2.0)),
    "xlog1py": (lambda x: sg.special.xlog1py(x.exp(), x), (-0.5, 2.0)),
    "exp2": (lambda x: sg.special.exp2(x), (-3.0, 3.0)),
    "sinc": (lambda x: sg.special.sinc(x), (-2.0, 1.9)),  # 0 left out: its gradient is 0
    "multigammaln": (lambda x: sg.special.multigammaln(x, 3), (1.2, 5.0)),
}


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
@pytest.mark.parametrize("name", PRIMITIVES)
def test_gradcheck_and_gradgradcheck(name, check):
    call, (low, high) = PRIMITIVES[name]
    x = sg.tensor(np.linspace(low, high, 7), dtype=sg.float64, requires_grad=True)
    assert getattr(sg.autograd, check)(call, [x])


def test_second_derivatives_match_torch():
    x = np.linspace(0.3, 4.0, 6)
    for name in ("gammaln", "digamma", "i0", "i1", "i1e", "erfcx", "log_ndtr", "entr", "sinc"):
        grads = []
        for lib in (sg, torch):
            t = lib.tensor(x, dtype=lib.float64, requires_grad=True)
            (g,) = lib.autograd.grad(getattr(lib.special, name)(t).sum(), t, create_graph=True)
            (g * g).sum().backward()
            grads.append(t.grad)
        assert_close(grads[0], grads[1], what=name)


MORE_UNARY = {
    "erf": lambda m, x: m.special.erf(x),
    "expm1": lambda m, x: m.special.expm1(x),
    "log1p": lambda m, x: m.special.log1p(x),
    "polygamma_1": lambda m, x: m.special.polygamma(1, x),
    "multigammaln": lambda m, x: m.special.multigammaln(x, 2),
}
INTEGER_INPUTS = [sg.tensor([1, 2, 3]), sg.tensor([True, False]), sg.tensor([4], dtype=sg.uint8)]


@pytest.mark.parametrize("name", [*UNARY, *MORE_UNARY])
def test_integer_and_bool_inputs_give_the_default_float(name):
    call = {**UNARY, **MORE_UNARY}[name]
    for x in INTEGER_INPUTS:
        if name == "multigammaln" and x.dtype == sg.bool:
            assert_raises_as_torch(lambda m: call(m, m.tensor([True])), RuntimeError, "bool")
            continue
        theirs = call(torch, torch.tensor(x.numpy()))
        ours = call(sg, x)
        assert same_dtype(ours, theirs), f"{name}: {ours.dtype} != {theirs.dtype}"
        assert_same_values(ours, theirs, "float32", 2e-6, name)


def test_binary_functions_promote_as_torch():
    pairs = [
        (lambda m: m.tensor([1, 2]), lambda m: m.tensor([3, 4])),
        (lambda m: 2, lambda m: m.tensor([3, 4])),
        (lambda m: m.tensor([True, False]), lambda m: 2.5),
        (lambda m: m.tensor(1.0, dtype=m.float64), lambda m: m.tensor([2.0])),
        (lambda m: m.tensor([1.0], dtype=m.float64), lambda m: m.tensor([2.0])),
    ]
    half = (lambda m: m.tensor([1], dtype=m.int32), lambda m: m.tensor([2.0], dtype=m.float16))
    for name in ("xlogy", "xlog1py", "zeta"):
        for x, y in pairs + [half] * (name != "zeta"):
            ours = getattr(sg.special, name)(x(sg), y(sg))
            theirs = getattr(torch.special, name)(x(torch), y(torch))
            assert same_dtype(ours, theirs), f"{name}: {ours.dtype} != {theirs.dtype}"
            assert_close(ours, theirs, "float16", what=name)
    assert sg.special.multigammaln(sg.tensor([2, 3]), 2).dtype == sg.float32
    assert sg.special.logsumexp(sg.tensor([1, 2]), 0).dtype == sg.float32


def test_16_bit_floats_keep_their_dtype():
    x = np.array([0.0, 0.5, 1.0, 2.5])
    for name in ("gammaln", "digamma", "i0e", "i1", "sinc", "erfc", "logit", "entr", "exp2"):
        for dtype in ("float16", "bfloat16"):
            ours = UNARY[name](sg, sg.tensor(x / 3, dtype=getattr(sg, dtype)))
            theirs = UNARY[name](torch, torch.tensor(x / 3, dtype=getattr(torch, dtype)))
            assert same_dtype(ours, theirs)
            assert_close(ours, theirs, dtype, what=f"{name} {dtype}")


@pytest.mark.parametrize("name", ["erfcx", "ndtri", "log_ndtr", "zeta"])
def test_16_bit_floats_raise_where_torch_has_no_kernel(name):
    call = UNARY.get(name) or (lambda m, x: m.special.zeta(x + 1, x))
    assert_raises_as_torch(
        lambda m: call(m, m.tensor([0.5], dtype=m.float16)), NotImplementedError, "float16"
    )


@pytest.mark.parametrize("name", PRIMITIVES)
def test_vmap_equals_a_loop(name):
    call, (low, high) = PRIMITIVES[name]
    batch = sg.tensor(RNG.uniform(low, high, (4, 3)), dtype=sg.float64)
    expected = sg.stack([call(member) for member in batch])
    assert_close(sg.func.vmap(call)(batch), expected.numpy(), tolerance=(1e-14, 1e-300))


def test_grad_fn_names_are_torchs():
    for call in (
        lambda m, x: m.special.gammaln(x),
        lambda m, x: m.special.digamma(x),
        lambda m, x: m.special.polygamma(2, x),
        lambda m, x: m.special.i0(x),
        lambda m, x: m.special.i0e(x),
        lambda m, x: m.special.i1(x),
        lambda m, x: m.special.i1e(x),
        lambda m, x: m.special.erfc(x),
        lambda m, x: m.special.erfcx(x),
        lambda m, x: m.special.ndtri(x),
        lambda m, x: m.special.log_ndtr(x),
        lambda m, x: m.special.entr(x),
        lambda m, x: m.special.logit(x),
        lambda m, x: m.special.xlogy(x, x),
        lambda m, x: m.special.xlog1py(x, x),
        lambda m, x: m.special.zeta(x, x),
        lambda m, x: m.special.exp2(x),
    ):
        names = [call(m, m.tensor([0.5], requires_grad=True)).grad_fn.name() for m in (sg, torch)]
        assert names[0] == names[1]


# ---- the errors ------------------------------------------------------------------------------


def test_the_errors_are_torchs():
    x = lambda m: m.tensor([2.0])  # noqa: E731
    assert_raises_as_torch(lambda m: m.special.polygamma(-1, x(m)), RuntimeError, "negative n")
    assert_raises_as_torch(lambda m: m.special.polygamma(1.0, x(m)), TypeError, "int")
    assert_raises_as_torch(lambda m: m.special.polygamma(True, x(m)), TypeError, "int")
    assert_raises_as_torch(lambda m: m.special.multigammaln(x(m), 0), RuntimeError, "p has to")
    assert_raises_as_torch(lambda m: m.special.multigammaln(x(m), 1.0), TypeError, "int")
    assert_raises_as_torch(lambda m: m.special.gammaln(2.0), TypeError, "Tensor")
    assert_raises_as_torch(lambda m: m.special.xlogy(2.0, 3.0), TypeError, "Tensor")
    assert_raises_as_torch(lambda m: m.special.zeta(2.0, 3.0), TypeError, "Tensor")
    ints = lambda m: m.tensor([1, 2])  # noqa: E731
    assert_raises_as_torch(lambda m: m.special.round(ints(m)), NotImplementedError, "int64")
    assert_raises_as_torch(lambda m: m.special.softmax(ints(m), 0), NotImplementedError, "int64")


def test_zeta_has_no_gradient_in_its_first_argument_as_torch():
    for lib in (sg, torch):
        s = lib.tensor([3.0], requires_grad=True)
        with pytest.raises(NotImplementedError, match="zeta"):
            lib.special.zeta(s, lib.tensor([2.0])).sum().backward()


# ---- accuracy against independent references ------------------------------------------------


def test_lgamma_matches_math_lgamma_over_the_whole_range():
    """Relative error below 3e-15, taken against max(|lgamma|, 1): near its zeros (1, 2,
    -2.457, ...) the absolute error counts. (Against mpmath ours is within 1.2e-15; math.lgamma
    itself is off by up to 2e-15 on the negatives.)"""
    magnitudes = np.geomspace(1e-300, 1e300, 20_000)
    x = np.concatenate([magnitudes, np.linspace(0.01, 12, 20_000), -np.linspace(0.01, 40, 20_000)])
    x = x[(x > 0) | (np.abs(x - np.round(x)) > 1e-9)]
    expected = np.array([math.lgamma(v) for v in x])
    error = np.abs(ops.lgamma(x) - expected) / np.maximum(np.abs(expected), 1)
    assert error.max() < 3e-15


def test_erfc_matches_math_erfc():
    x = np.concatenate([np.linspace(-6, 27.5, 40_001), np.geomspace(1e-300, 1, 1000)])
    expected = np.array([math.erfc(v) for v in x])
    normal = expected > 1e-300  # subnormal results have fewer digits
    error = np.abs(ops.erfc(x) - expected)[normal] / expected[normal]
    assert error.max() < 2e-15
    assert ops.erfc(np.array([27.5, 40.0, INF])).tolist() == [0.0, 0.0, 0.0]


def test_closed_forms():
    """Values with closed forms, to a few units in the last place."""
    pi, gamma = math.pi, 0.57721566490153286061
    cases = [
        (ops.lgamma(np.array([0.5, 1.5])), [0.5 * math.log(pi), math.log(math.sqrt(pi) / 2)]),
        (ops.polygamma(0, np.array([1.0, 0.5])), [-gamma, -gamma - 2 * math.log(2)]),
        (ops.polygamma(1, np.array([1.0, 0.5, -0.5])), [pi**2 / 6, pi**2 / 2, pi**2 / 2 + 4]),
        (ops.polygamma(2, np.array([1.0])), [-2 * 1.2020569031595942854]),
        # reflection: psi''(x) = psi''(1 - x) at the half-integers, where cot(pi x)'' is 0
        (
            ops.polygamma(2, np.array([-1e10 + 0.5, -100.5])),
            ops.polygamma(2, np.array([1e10 + 0.5, 101.5])),
        ),  # fmt: skip
        (ops.zeta(np.array([2.0, 4.0, 6.0]), np.array(1.0)), [pi**2 / 6, pi**4 / 90, pi**6 / 945]),
        (ops.zeta(np.array(2.0), np.array([0.5, 2.0])), [pi**2 / 2, pi**2 / 6 - 1]),
        (ops.bessel_i(np.array([0.0, 1e-8]), 0, False), [1.0, 1 + 2.5e-17]),
        (ops.erfcx(np.array([0.0, 1e8])), [1.0, 1 / (1e8 * math.sqrt(pi))]),
        (ops.ndtri(np.array([0.5, math.erfc(5 / math.sqrt(2)) / 2])), [0.0, -5.0]),
        (ops.log_ndtr(np.array([0.0])), [-math.log(2)]),
    ]
    for out, expected in cases:
        np.testing.assert_allclose(out, expected, rtol=4e-15, atol=1e-300)


def test_the_bessel_functions_agree_across_the_series_and_expansion_split():
    """Where the power series hands over to Hankel's expansion (|x| = 20): the central
    difference across it is I0' = I1 (and I1' = I0 - I1 / x) to the difference's precision; and
    i1e = exp(-|x|) i1 everywhere."""
    h, x = 1e-6, np.array([20.0 - 1e-6, 20.0, 20.0 + 1e-6])
    i0, i1 = ops.bessel_i(x, 0, False), ops.bessel_i(x, 1, False)
    np.testing.assert_allclose((i0[2] - i0[0]) / (2 * h), i1[1], rtol=1e-8)
    np.testing.assert_allclose((i1[2] - i1[0]) / (2 * h), i0[1] - i1[1] / 20, rtol=1e-8)
    x = np.linspace(-60, 60, 1201)
    scaled = ops.bessel_i(x, 1, True)
    np.testing.assert_allclose(scaled, np.exp(-np.abs(x)) * ops.bessel_i(x, 1, False), rtol=1e-14)


def test_ndtri_inverts_ndtr_far_into_the_tails():
    """To x**2 rounding errors: ndtri's own, and those of the way back (see the test above)."""
    p = np.geomspace(1e-300, 0.5, 500)  # erfc's subnormal results have fewer digits
    x = ops.ndtri(p)
    back = ops.erfc(-x / math.sqrt(2)) / 2
    assert (np.abs(back - p) <= (4e-16 * x**2 + 1e-15) * p).all()
    # the smallest subnormal number's quantile, from mpmath (60 digits)
    assert ops.ndtri(np.array([5e-324]))[0] == pytest.approx(-38.46740561714435, rel=1e-15)


POLYNOMIALS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
]  # fmt: skip


@pytest.mark.parametrize("name", POLYNOMIALS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_orthogonal_polynomials_are_torchs(name, dtype):
    """Degrees -2 to 12 (past the Chebyshev kinds' switch to the closed form) broadcast against
    points inside, on and outside [-1, 1], and [0, 1] for the shifted forms."""
    x = np.concatenate([RNG.uniform(-1.3, 1.3, 30), [-1, 1, 0, 0.5, -0.5, 2, -3]]).astype(dtype)
    n = np.arange(-2, 13)
    ours = getattr(sg.special, name)(sg.tensor(x)[:, None], sg.tensor(n))
    theirs = getattr(torch.special, name)(torch.tensor(x)[:, None], torch.tensor(n))
    assert same_dtype(ours, theirs) and ours.shape == tuple(theirs.shape)
    # Relative to the recurrence's terms: P(n+1) = a x P(n) - b n P(n-1) rounds at the size of
    # n |P(n-1)|, so near a root of P(n) its error is that, not |P(n)|. (The values reach 1e8;
    # relative to |P(n)| alone, 16 of 300 seeds failed for Hermite's H in float64.)
    terms = np.maximum.accumulate(np.abs(theirs.numpy()) * np.maximum(n, 1), axis=1)
    tolerance = 1e-13 if dtype == "float64" else 1e-4  # PyTorch's float32 recurrence rounds
    error = np.abs(ours.numpy() - theirs.numpy()) / np.maximum(1, terms)
    np.testing.assert_array_less(error, tolerance)


def test_orthogonal_polynomials_read_n_and_promote_as_torch():
    """n truncated toward 0 (2.7 is 2), 0 for NaN, inf and n past int64; a number on either side;
    integer inputs in the default float; no gradient, as PyTorch's."""
    cases = [
        (lambda m: m.tensor([0.5, 1, -0.2], requires_grad=True), lambda m: m.tensor([[2.7], [-1]])),
        (lambda m: m.tensor([0.5, 1.0]), lambda m: m.tensor([[math.nan], [INF], [-INF], [1e20]])),
        (lambda m: 0.5, lambda m: m.tensor([3, 4])),
        (lambda m: m.tensor([1, 2]), lambda m: 3),
        (lambda m: m.tensor([0.5]), lambda m: m.tensor([3.0], dtype=m.float64)),
    ]  # fmt: skip
    for name in ("chebyshev_polynomial_t", "legendre_polynomial_p", "hermite_polynomial_he"):
        for x, n in cases:
            ours = getattr(sg.special, name)(x(sg), n(sg))
            theirs = getattr(torch.special, name)(x(torch), n(torch))
            assert same_dtype(ours, theirs) and not ours.requires_grad
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "name", ["modified_bessel_i0", "modified_bessel_i1", "spherical_bessel_j0"]
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_newer_bessel_functions_are_torchs_without_a_gradient(name, dtype):
    x = [0.0, -0.0, 1e-30, 1e-5, 0.3, -0.49, 0.5, 1.0, -3.0, 30.0, 700.0, 1e5, INF, -INF, NAN]
    ours = getattr(sg.special, name)(sg.tensor(x, dtype=getattr(sg, dtype), requires_grad=True))
    theirs = getattr(torch.special, name)(torch.tensor(x, dtype=getattr(torch, dtype)))
    assert same_dtype(ours, theirs) and not ours.requires_grad
    rtol = 1e-15 if dtype == "float64" else 3e-7
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=1e-30)
    integers = getattr(sg.special, name)(sg.tensor([1, 2]))
    assert same_dtype(integers, getattr(torch.special, name)(torch.tensor([1, 2])))


def test_doc_examples_run():
    assert doctest.testmod(scratchgrad.special).failed == 0
    assert doctest.testmod(ops).failed == 0


@pytest.mark.parametrize(
    "eps", [0.1, 1, True, np.float32(0.25), "0-d tensor", "1-d tensor", "tensor requiring grad"]
)
@pytest.mark.parametrize("name", ["logit", "special.logit"])
def test_logit_reads_eps_as_torch_reads_a_float(name, eps):
    def call(m):
        e = {
            "0-d tensor": lambda: m.tensor(0.1),
            "1-d tensor": lambda: m.tensor([0.1]),
            "tensor requiring grad": lambda: m.tensor(0.1, requires_grad=True),
        }.get(eps, lambda: eps)()
        x = m.tensor([0.05, 0.5, 0.99], dtype=m.float64)
        return (m.special.logit if name == "special.logit" else m.logit)(x, eps=e)

    try:
        expected = call(torch)
    except TypeError:
        with pytest.raises(TypeError, match="argument 'eps' must be float, not"):
            call(sg)
        return
    np.testing.assert_allclose(call(sg).numpy(), expected.numpy(), rtol=1e-12)


INCOMPLETE_GAMMA_KINDS = {
    "bool and float": lambda m, b, i, f: b.igamma(f),
    "float and bool": lambda m, b, i, f: f.igammac(b),
    "bool and float64, module function": lambda m, b, i, f: m.igamma(b, f.double()),
    "int and float": lambda m, b, i, f: i.igamma(f),
    "bool in place, of a float": lambda m, b, i, f: b.clone().igamma_(f),
    "int in place, of a float": lambda m, b, i, f: i.clone().igammac_(f),
    "bool and bool": lambda m, b, i, f: b.igamma(b),
    "int and bool": lambda m, b, i, f: i.igamma(b),
}


@pytest.mark.parametrize("call", INCOMPLETE_GAMMA_KINDS.values(), ids=INCOMPLETE_GAMMA_KINDS)
def test_igamma_promotes_a_bool_before_its_kind_is_checked_as_torchs(call):
    """A bool tensor and a float one are promoted to float, as PyTorch's, so bool.igamma(x)
    is computed and bool.igamma_(x) is PyTorch's RuntimeError (the float result cannot be
    written into bools); both were a NotImplementedError here."""
    seen = []
    for m in (torch, sg):
        b, i, f = m.tensor([True, False]), m.tensor([1, 2]), m.tensor([0.5, 2.0])
        try:
            out = call(m, b, i, f)
            seen.append((str(out.dtype).split(".")[-1], np.round(out.tolist(), 6).tolist()))
        except (RuntimeError, NotImplementedError) as error:
            seen.append(type(error))
    assert seen[1] == seen[0]


def test_bessel_functions_of_huge_arguments_are_torchs():
    """i0 and i1 overflow to inf past 2e307, where 2 pi x did before the exp (inf * 0: NaN);
    the scaled ones stay finite."""
    x = [2.86e307, 1e308, -1e308]
    for name in ("i0", "i1", "i0e", "i1e"):
        ours = getattr(sg.special, name)(sg.tensor(x, dtype=sg.float64)).numpy()
        theirs = getattr(torch.special, name)(torch.tensor(x, dtype=torch.float64)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-14, err_msg=name)


def test_gammaln_of_tiny_negative_arguments_is_minus_log_x():
    """lgamma(x) = -log|x| - euler x + ... near 0 from below, subnormals too: the reflection's
    sin(pi x) lost digits where pi x rounded to a subnormal (lgamma(-5e-324) was 744.486)."""
    x = [-5e-324, -1e-320, -1e-310, -1e-300, -1e-160]
    ours = sg.special.gammaln(sg.tensor(x, dtype=sg.float64)).numpy()
    np.testing.assert_allclose(ours, -np.log(np.abs(x)), rtol=1e-15)
    theirs = torch.special.gammaln(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-15)
