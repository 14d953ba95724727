"""PyTorch's elementwise names beyond the op table's differentiable rows, against PyTorch: the
precision of exp2, erfc, log2, log10 and hypot (once composed, with silent wrong results at the
edges), the integer and bool ops (gcd, lcm, bitwise_*), the predicates (signbit, isposinf...),
the dtype rules (float_power's float64, frexp's int32 exponent), the edges and errors of
fmax/fmin, copysign, heaviside, nextafter, logcumsumexp and igamma/igammac, the aliases, the
module functions that take a number first, and the in-place forms."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

EDGES = np.array(
    [0.0, -0.0, 1e-300, 1e-40, 1e-10, 0.1, 0.5, 1, 2, 3, 5, 8, 10, 30, 88, 100, 709, 1000, 1024]
)
EDGES = np.concatenate([EDGES, -EDGES, [np.inf, -np.inf, np.nan]])


def both(name, *arrays, **kwargs):
    """``name`` of the arrays (as tensors) in scratchgrad and in PyTorch, as NumPy arrays."""
    ours = getattr(sg, name)(*(sg.tensor(a) for a in arrays), **kwargs)
    theirs = getattr(torch, name)(*(torch.tensor(a) for a in arrays), **kwargs)
    return ours.numpy(), theirs.numpy()


def assert_same(ours, theirs, rtol=0.0):
    assert ours.dtype == theirs.dtype
    if rtol:
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=0)
    else:
        np.testing.assert_array_equal(ours, theirs)


# ---- precision: once composites, now one primitive each -----------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp2_is_exact_at_the_integers_and_overflows_as_pytorchs(dtype):
    x = EDGES.astype(dtype)
    with np.errstate(all="ignore"):
        ours, theirs = both("exp2", x)
    np.testing.assert_allclose(ours, theirs, rtol=2 * np.finfo(dtype).eps, atol=0)
    integers = np.arange(-1074 if dtype == np.float64 else -149, 1030).astype(dtype)
    assert_same(*both("exp2", integers))  # 2**n exactly, inf past the range (exp2(1024))
    assert sg.tensor(1024.0, dtype=sg.float64).exp2().item() == float("inf")
    assert sg.tensor(3.0, dtype=sg.float64).exp2().item() == 8.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_erfc_keeps_its_digits_in_the_tail(dtype):
    x = np.concatenate([EDGES, np.linspace(-6, 27, 661)]).astype(dtype)
    ours, theirs = both("erfc", x)
    tiny = np.finfo(dtype).tiny
    normal = np.abs(theirs) >= tiny
    np.testing.assert_allclose(ours[normal], theirs[normal], rtol=4 * np.finfo(dtype).eps)
    np.testing.assert_allclose(ours[~normal], theirs[~normal], atol=2 * tiny)  # subnormal
    assert sg.tensor(8.0, dtype=sg.float64).erfc().item() == pytest.approx(1.1224297172982927e-29)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["log2", "log10"])
def test_log2_and_log10_round_once(name, dtype):
    rng = np.random.default_rng(0)
    x = np.exp(rng.uniform(-80, 80, 20000)).astype(dtype)
    powers = (2.0 if name == "log2" else 10.0) ** np.arange(-30, 30)
    x = np.concatenate([x, powers.astype(dtype), EDGES.astype(dtype)])
    with np.errstate(all="ignore"):
        ours, theirs = both(name, x)
        nearest = getattr(np, name)(x.astype(np.float64)).astype(dtype)  # correctly rounded
    np.testing.assert_array_equal(ours, nearest)
    # PyTorch's are within an ulp of the nearest, and equal to it nearly everywhere (its
    # vectorized loops differ by CPU: 0.2% of float64 log10s an ulp off with AVX-512, 1.5%
    # with AVX2)
    np.testing.assert_allclose(ours, theirs, rtol=np.finfo(dtype).eps, atol=0)
    assert np.mean(ours != theirs) < 0.02
    exact = powers.astype(dtype)[np.isfinite(powers.astype(dtype)) & (powers > 0)]
    np.testing.assert_array_equal(*both(name, exact[exact >= np.finfo(dtype).tiny]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_log2_and_log10_gradients_are_pytorchs(dtype):
    x = np.array([0.3, 1.0, 7.5, 1e5], dtype=dtype)
    for name in ("log2", "log10"):
        grads = []
        for lib in (sg, torch):
            t = lib.tensor(x, requires_grad=True)
            getattr(t, name)().sum().backward()
            grads.append(t.grad.numpy())
        np.testing.assert_allclose(*grads, rtol=2 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hypot_neither_overflows_nor_underflows(dtype):
    big = np.finfo(dtype).max / 4
    x = np.array([3.0, big, -big, np.finfo(dtype).tiny, 1e-20, 0.0, np.inf], dtype=dtype)
    y = np.array([4.0, big, 0.0, 0.0, 1e-20, 0.0, np.nan], dtype=dtype)
    ours, theirs = both("hypot", x, y)
    np.testing.assert_allclose(ours, theirs, rtol=np.finfo(dtype).eps)
    a, b = (sg.tensor(v, requires_grad=True) for v in (x[:2], y[:2]))
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (x[:2], y[:2]))
    sg.hypot(a, b).sum().backward()
    torch.hypot(ta, tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=np.finfo(dtype).eps)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=np.finfo(dtype).eps)


# ---- integers and bools -------------------------------------------------------------------------

I = np.array([4, -6, 0, 7, 12, -(2**62)])
J = np.array([6, 4, 5, 0, -18, 3])


@pytest.mark.parametrize("name", ["gcd", "lcm"])
@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("int32", "int64"), ("uint8", "uint8")])
def test_gcd_and_lcm_are_pytorchs_with_its_promotion(name, dtypes):
    x, y = (
        I[:5].astype(dtypes[0]) if dtypes[0] != "uint8" else np.abs(I[:5]).astype("uint8"),
        J[:5].astype(dtypes[1]) if dtypes[1] != "uint8" else np.abs(J[:5]).astype("uint8"),
    )
    assert_same(*both(name, x, y))


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_and_lcm_refuse_floats_bools_and_numbers(name):
    with pytest.raises(NotImplementedError, match=f"\"{name}_cpu\" not implemented for 'Float'"):
        getattr(sg, name)(sg.tensor([1.0]), sg.tensor([2.0]))
    with pytest.raises(NotImplementedError, match="'Bool'"):
        getattr(sg, name)(sg.tensor([True]), sg.tensor([False]))
    with pytest.raises(TypeError, match="argument 'other' .* must be Tensor, not int"):
        getattr(sg, name)(sg.tensor([4]), 2)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_ops_on_integers_bools_and_numbers(name):
    assert_same(*both(name, I, J))
    assert_same(*both(name, I > 0, J > 0))
    assert_same(*both(name, I > 0, J))
    assert_same(*both(name, I.astype("int32"), J))
    ours = getattr(sg, name)(sg.tensor(I.astype("int32")), 3)
    theirs = getattr(torch, name)(torch.tensor(I.astype("int32")), 3)
    assert_same(ours.numpy(), theirs.numpy())
    first = getattr(sg, name)(5, sg.tensor(J))  # a number first, as PyTorch allows
    assert_same(first.numpy(), getattr(torch, name)(5, torch.tensor(J)).numpy())
    with pytest.raises(NotImplementedError, match=f"\"{name}_cpu\" not implemented for 'Float'"):
        getattr(sg, name)(sg.tensor([1.0]), sg.tensor([1.0]))


FLOAT_OPERANDS = {
    "f & 1.0": lambda m: m.tensor([1.5, 2.0]) & 1.0,
    "f | f": lambda m: m.tensor([1.5, 2.0]) | m.tensor([1.5, 2.0]),
    "f ^ i": lambda m: m.tensor([1.5, 2.0]) ^ m.tensor([1, 2]),
    "i & 1.0": lambda m: m.tensor([1, 2]) & 1.0,
    "1.5 | i": lambda m: 1.5 | m.tensor([1, 2]),
    "2 ^ f": lambda m: 2 ^ m.tensor([1.5, 2.0]),
    "b & 1.0": lambda m: m.tensor([True, False]) & 1.0,
    "f16 & f16": lambda m: m.ones(2, dtype=m.float16) & m.ones(2, dtype=m.float16),
    "~f": lambda m: ~m.tensor([1.5, 2.0]),
    "~c": lambda m: ~m.tensor([1j]),
}


@pytest.mark.parametrize("name", FLOAT_OPERANDS)
def test_bitwise_operators_refuse_floats_as_pytorchs(name):
    """``&``, ``|``, ``^`` raise PyTorch's NotImplementedError naming the kernel and the
    promoted dtype, ``~`` its TypeError (NumPy's TypeError said which ufunc failed)."""
    with pytest.raises(Exception) as theirs:
        FLOAT_OPERANDS[name](torch)
    with pytest.raises(theirs.type) as ours:
        FLOAT_OPERANDS[name](sg)
    assert str(ours.value).startswith(str(theirs.value))


def test_bitwise_not():
    assert_same(*both("bitwise_not", I))
    assert_same(*both("bitwise_not", I > 0))
    assert_same(*both("bitwise_not", np.array([0, 200], dtype="uint8")))
    with pytest.raises(NotImplementedError, match="'Double'"):
        sg.bitwise_not(sg.tensor([1.0], dtype=sg.float64))


@pytest.mark.parametrize("name", ["bitwise_left_shift", "bitwise_right_shift"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
def test_shifts_past_the_width_are_pytorchs(name, dtype):
    """NumPy takes the count modulo the width; PyTorch's gives 0 (or the sign)."""
    signed = dtype != "uint8"
    x = np.array([1, -8, -1, 8, 3, 100, -100, 5] if signed else [1, 8, 255, 3, 100, 5, 7, 9])
    shift = np.array([63, 64, 70, -1, 1, 7, 8, 0] if signed else [7, 8, 9, 0, 1, 2, 3, 4])
    x = x.astype(dtype)
    shift = shift.astype(dtype) if signed or dtype == "uint8" else shift
    if dtype == "int8":
        shift = np.clip(shift, -1, 70).astype("int8")
    assert_same(*both(name, x, shift))
    assert_same(
        getattr(sg, name)(16, sg.tensor(x)).numpy(),
        getattr(torch, name)(16, torch.tensor(x)).numpy(),
    )
    with pytest.raises(NotImplementedError, match="shift_cpu\" not implemented for 'Float'"):
        getattr(sg, name)(sg.tensor([1.0]), sg.tensor([1]))


# ---- predicates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["signbit", "isposinf", "isneginf", "isreal"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int64", "bool"])
def test_predicates_are_pytorchs(name, dtype):
    x = np.array([-0.0, 0.0, -1.0, 2.0, np.inf, -np.inf, np.nan, -np.nan])
    x = x.astype(dtype) if dtype.startswith("float") else np.array([-3, 0, 5]).astype(dtype)
    ours, theirs = both(name, x)
    assert_same(ours, theirs)


# ---- floats: dtype rules, edges, gradients ------------------------------------------------------


def test_float_power_is_float64_and_its_in_place_form_needs_float64():
    assert_same(*both("float_power", I[:4], J[:4]))
    x = np.array([1.5, -2.0, 0.5], dtype=np.float32)
    assert_same(*both("float_power", x, np.array([2.0, 3.0, -1.0], dtype=np.float32)))
    ours = sg.float_power(2, sg.tensor([3, -1]))
    assert_same(ours.numpy(), torch.float_power(2, torch.tensor([3, -1])).numpy())
    assert ours.dtype == sg.float64
    with pytest.raises(RuntimeError, match="has dtype Float but the operation's result requires"):
        sg.tensor(x).float_power_(2)
    y = sg.tensor(x.astype(np.float64))
    assert y.float_power_(2) is y
    np.testing.assert_array_equal(y.numpy(), x.astype(np.float64) ** 2)
    leaf = sg.tensor(x, requires_grad=True)
    sg.float_power(leaf, 3).sum().backward()
    assert leaf.grad.dtype == sg.float32  # back through the cast, as PyTorch's


def test_frexp_gives_pytorchs_mantissa_and_int32_exponent():
    values = [8.0, -5.0, 0.3, 0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1.7e308, 60000.0]
    for dtype in ("float64", "float32", "float16", "bfloat16"):
        t = torch.tensor(values, dtype=torch.float64).to(getattr(torch, dtype))
        ours = sg.tensor(values, dtype=sg.float64).to(getattr(sg, dtype)).frexp()
        theirs = torch.frexp(t)
        np.testing.assert_array_equal(
            ours.mantissa.float().numpy(), theirs.mantissa.float().numpy()
        )
        np.testing.assert_array_equal(ours.exponent.numpy(), theirs.exponent.numpy())
        assert ours.exponent.dtype == sg.int32 and ours.mantissa.dtype == getattr(sg, dtype)
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        sg.frexp(sg.tensor([1, 2]))
    x = sg.tensor([8.0, 3.0], requires_grad=True)
    sg.frexp(x).mantissa.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1 / 16, 1 / 4])  # 2**-exponent


def test_ldexp_dtypes_and_values():
    x, e = np.array([1.0, 3.0, -0.5]), np.array([200, -1, 3])
    assert_same(*both("ldexp", x, e))  # 2**200 in float64, not through float32
    assert_same(*both("ldexp", x.astype(np.float32), e))
    assert_same(*both("ldexp", I[:3], J[:3]))  # integers: the default float
    assert_same(*both("ldexp", x.astype(np.float16), e[1:2]))
    with pytest.raises(TypeError, match="argument 'other' .* must be Tensor"):
        sg.ldexp(sg.tensor(x), 3)
    with pytest.raises(RuntimeError, match="can't be cast"):
        sg.tensor([1, 2]).ldexp_(sg.tensor([1, 1]))


def test_copysign_values_dtypes_and_gradients():
    x = np.array([0.0, 2.0, -3.0, 1.0, -0.0])
    y = np.array([-1.0, -0.0, 1.0, np.nan, -np.nan])
    assert_same(*both("copysign", x, y))
    assert_same(*both("copysign", I[:4], -J[:4]))  # integers: float32
    assert_same(sg.copysign(sg.tensor([1.0, 2.0]), -1).numpy(), np.array([-1.0, -2.0], "f4"))
    grads = []
    for lib in (sg, torch):
        a, b = lib.tensor(x[:4], requires_grad=True), lib.tensor(y[:4], requires_grad=True)
        lib.copysign(a, b).sum().backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_array_equal(ours, theirs)  # 0 at x = 0; zeros for the sign


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_nan_and_ties_as_pytorch(name):
    x = np.array([1.0, 2.0, np.nan, 3.0, np.nan, 0.5])
    y = np.array([1.0, 1.0, 1.0, np.nan, np.nan, 4.0])
    assert_same(*both(name, x, y))
    assert_same(*both(name, I, J))
    assert_same(*both(name, I[:2], np.array([1.5, 1.5], "f4")))
    grads = []
    for lib in (sg, torch):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        getattr(lib, name)(a, b).sum().backward()
        grads.append((a.grad.numpy(), b.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_array_equal(ours, theirs)  # a tie all to x, a NaN loses
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        getattr(sg, name)(sg.tensor([1]), 2)


def test_heaviside_values_dtypes_and_no_derivative():
    x = np.array([-1.0, 0.0, -0.0, 2.0, np.nan])
    assert_same(*both("heaviside", x, np.array([0.5])))
    assert_same(*both("heaviside", I, np.array([7])))
    with pytest.raises(RuntimeError, match="different dtypes"):
        sg.heaviside(sg.tensor(x), sg.tensor([1]))
    leaf = sg.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        sg.heaviside(leaf, sg.tensor([0.5], dtype=sg.float64)).sum().backward()


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_nextafter_is_pytorchs(dtype):
    x = torch.tensor([1.0, 0.0, -0.0, 2.0, np.inf, np.nan, 1.0]).to(getattr(torch, dtype))
    y = torch.tensor([2.0, -1.0, 1.0, 2.0, 0.0, 1.0, np.nan]).to(getattr(torch, dtype))
    ours = sg.nextafter(*(sg.tensor(t.double().numpy()).to(getattr(sg, dtype)) for t in (x, y)))
    np.testing.assert_array_equal(ours.double().numpy(), torch.nextafter(x, y).double().numpy())
    with pytest.raises(NotImplementedError):
        sg.nextafter(sg.tensor([1]), sg.tensor([2]))
    a, b = sg.tensor([1.0, 2.0], requires_grad=True), sg.tensor([3.0, 0.0], requires_grad=True)
    sg.nextafter(a, b).sum().backward()  # PyTorch's: grad for x, zeros for y
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [0.0, 0.0]


def test_nextafters_gradient_is_zero_where_x_equals_y_as_pytorchs():
    """There the result is y itself: PyTorch's gradient is where(x != y, grad, 0) (ours
    passed grad everywhere), NaN included."""
    grads = []
    for lib in (sg, torch):
        x = lib.tensor([0.3, 1.2, 0.0, -0.0, np.nan, 1.0], requires_grad=True)
        y = lib.tensor([0.5, 1.2, -0.0, -1.0, np.nan, np.nan], requires_grad=True)
        grads.append([g.tolist() for g in lib.autograd.grad(lib.nextafter(x, y).sum(), [x, y])])
    assert grads[0] == grads[1]


def test_logcumsumexp_keeps_small_entries_and_its_edges():
    x = np.array([-1000.0, 0.0, 1000.0, -np.inf])
    assert_same(*both("logcumsumexp", x, dim=0))
    for values in ([-np.inf, -np.inf, 1.0, np.inf, 2.0], [1.0, np.nan, 2.0], []):
        assert_same(*both("logcumsumexp", np.array(values), dim=0))
    rng = np.random.default_rng(0)
    y = rng.standard_normal((3, 4, 5)).astype(np.float32) * 10
    for dim in (0, 1, -1):
        assert_same(*both("logcumsumexp", y, dim=dim), rtol=1e-6)
    assert_same(*both("logcumsumexp", np.array(2.0), dim=0))
    with pytest.raises(NotImplementedError):
        sg.logcumsumexp(sg.tensor([1, 2]), 0)
    leaf = sg.tensor([-1000.0, 0.0, 5.0], dtype=sg.float64, requires_grad=True)
    tleaf = torch.tensor([-1000.0, 0.0, 5.0], dtype=torch.float64, requires_grad=True)
    weights = [1.0, -2.0, 0.5]
    (sg.logcumsumexp(leaf, 0) * sg.tensor(weights, dtype=sg.float64)).sum().backward()
    (torch.logcumsumexp(tleaf, 0) * torch.tensor(weights, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-12)


def test_deg2rad_rad2deg_sgn_positive_absolute():
    for name in ("deg2rad", "rad2deg"):
        assert_same(*both(name, I[:4]))  # integers: float32
        assert_same(*both(name, np.array([180.0, -90.0], np.float32)))
        assert_same(*both(name, np.array([180.0, -90.0], np.float16)))
    for x in (I, I > 0, np.array([-0.5, 0.0, 2.0])):
        assert_same(*both("sgn", x))
        assert_same(*both("absolute", x) if x.dtype != bool else both("sgn", x))
    t = sg.tensor([1.0, -2.0])
    assert sg.positive(t) is t
    with pytest.raises(RuntimeError, match="on a bool tensor is not supported"):
        sg.positive(sg.tensor([True]))


def test_the_aliases_are_the_methods_they_name():
    x, y = sg.tensor([1.0, 2.0, 3.0]), sg.tensor([2.0, 2.0, 1.0])
    pairs = {
        "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
        "not_equal": "ne", "multiply": "mul", "divide": "div",
    }  # fmt: skip
    for alias, name in pairs.items():
        assert getattr(sg, alias)(x, y).tolist() == getattr(x, name)(y).tolist()
        assert (
            getattr(x, alias)(y).tolist()
            == getattr(torch.tensor(x.numpy()), alias)(torch.tensor(y.numpy())).tolist()
        )
    assert sg.divide(x, y, rounding_mode="floor").tolist() == [0.0, 1.0, 3.0]


# ---- the gamma family: module functions and edges -----------------------------------------------


def test_gamma_family_of_integers_and_the_module_spellings():
    ints = np.array([1, 2, 5])
    for name in ("lgamma", "digamma", "i0", "sinc", "logit"):
        np.testing.assert_allclose(*both(name, ints), rtol=1e-6)
        assert getattr(sg, name)(sg.tensor(ints)).dtype == sg.float32
    np.testing.assert_allclose(
        sg.polygamma(1, sg.tensor(ints)).numpy(), torch.polygamma(1, torch.tensor(ints)).numpy()
    )
    np.testing.assert_allclose(*both("mvlgamma", np.array([2.5, 3.0]), p=2), rtol=1e-6)
    np.testing.assert_allclose(*both("xlogy", ints, ints), rtol=1e-6)
    assert sg.xlogy(2, sg.tensor([3.0])).tolist() == pytest.approx([2 * np.log(3.0)])
    with pytest.raises(RuntimeError, match="negative n"):
        sg.tensor([1.0]).polygamma(-1)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        sg.mvlgamma(sg.tensor([2.0]), 0)


def test_igamma_edges_are_pytorchs():
    v = np.array([0, 1e-300, 0.5, 1, 2, 30, np.inf, np.nan, -1.0])
    a, x = (m.ravel() for m in np.meshgrid(v, v))
    for name in ("igamma", "igammac"):
        ours, theirs = both(name, a, x)
        # PyTorch's own expansions differ in the last digits (and, for tiny a, more: below)
        away = (a > 1e-300) & ~((a == 30) & (x == 30))
        np.testing.assert_allclose(ours[away], theirs[away], rtol=1e-13, atol=1e-300)


# independent values (mpmath, 50 digits) where PyTorch's are less accurate: Q for tiny a (its
# series for 1 - P), and P, Q near a = x > 20 (its asymptotic expansion, off by 6e-10 at 30)
MPMATH = [
    ("igammac", 1e-10, 0.5, 5.5977359480549881e-11),
    ("igammac", 1e-300, 0.5, 5.5977359477616083e-301),
    ("igammac", 1e-10, 1e-10, 2.244863524002411e-9),
    ("igamma", 30.0, 30.0, 0.5242830138936800690),
    ("igammac", 30.0, 30.0, 0.4757169861063199310),
    # large a near x: lgamma(a) and a log(x) cancelled to 1e-10 of the result at a = 1e6, and the
    # series stopped short (NaN) from a = 5e6; PyTorch's is off by 1e-10, and by 3e-2 at 1e7
    ("igamma", 1000.0, 1000.5, 0.5105107109231790316),
    ("igammac", 1000.0, 1000.5, 0.4894892890768209684),
    ("igamma", 1e5, 1e5, 0.5004205221103651767),
    ("igammac", 1e5, 1e5, 0.4995794778896348233),
    ("igamma", 1e6, 1e6 + 500, 0.6915504757714971815),
    ("igammac", 1e6, 1e6 + 500, 0.3084495242285028185),
    ("igamma", 1e7, 1e7, 0.5000420522087236983),
    ("igammac", 1e7, 1e7, 0.4999579477912763017),
    ("igamma", 1e7, 9984188.611699158, 2.829105758297978868e-7),
]


@pytest.mark.parametrize("name, a, x, expected", MPMATH)
def test_igamma_where_pytorch_loses_digits(name, a, x, expected):
    out = getattr(sg, name)(sg.tensor([a], dtype=sg.float64), sg.tensor([x], dtype=sg.float64))
    assert out.item() == pytest.approx(expected, rel=1e-13)


def test_igamma_for_large_a_against_pytorch_on_a_grid():
    """a from 20 to 1e9, x within 4.5 sqrt(a) of a, where PyTorch's asymptotic expansion holds:
    within its 1e-10 (it takes pi in float32), no NaN, and P + Q = 1."""
    a = np.repeat(np.geomspace(20, 1e9, 40), 11)
    x = a + np.tile(np.linspace(-4.4, 4.4, 11), 40) * np.sqrt(a)
    p, q = (both(name, a, x) for name in ("igamma", "igammac"))
    for ours, theirs in (p, q):
        assert not np.isnan(ours).any()
        np.testing.assert_allclose(ours, theirs, rtol=5e-9)
    np.testing.assert_allclose(p[0] + q[0], 1, rtol=1e-15)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_igamma_against_pytorch_on_a_grid(dtype):
    rng = np.random.default_rng(1)
    a, x = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), (2, 4000)))
    near = (a > 20) & (np.abs(x - a) < 0.3 * a)  # PyTorch's asymptotic expansion: 2e-9
    # PyTorch computes float32 in float32 (2.5e-5 off seen); this in float64, rounded once
    tol = {"float64": 1e-11, "float32": 5e-5, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    for name in ("igamma", "igammac"):
        ta, tx = (torch.tensor(v).to(getattr(torch, dtype)) for v in (a, x))
        theirs = getattr(torch, name)(ta, tx).double().numpy()
        ours = getattr(sg, name)(
            *(sg.tensor(t.double().numpy()).to(getattr(sg, dtype)) for t in (ta, tx))
        )
        assert ours.dtype == getattr(sg, dtype)
        ours = ours.double().numpy()
        keep = theirs > 1e-30 if dtype == "float64" else theirs > 1e-3
        rtol = max(tol, 3e-9 if dtype == "float64" else tol)
        np.testing.assert_allclose(ours[keep & near], theirs[keep & near], rtol=rtol)
        np.testing.assert_allclose(ours[keep & ~near], theirs[keep & ~near], rtol=tol)


def test_igamma_errors_and_gradient_as_pytorch():
    with pytest.raises(NotImplementedError):
        sg.igamma(sg.tensor([1, 2]), sg.tensor([1, 2]))
    with pytest.raises(TypeError, match="argument 'other' .* must be Tensor, not float"):
        sg.igamma(sg.tensor([1.0]), 2.0)
    a = sg.tensor([1.5], requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative for 'igamma: input'"):
        sg.igamma(a, sg.tensor([2.0])).sum().backward()
    for name in ("igamma", "igammac"):
        x, tx = (
            sg.tensor([2.0, 0.3], requires_grad=True),
            torch.tensor([2.0, 0.3], requires_grad=True),
        )
        getattr(sg, name)(sg.tensor([1.5, 4.0]), x).sum().backward()
        getattr(torch, name)(torch.tensor([1.5, 4.0]), tx).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    assert sg.special.gammainc(sg.tensor([1.0]), sg.tensor([1.0])).item() == pytest.approx(
        1 - np.exp(-1.0)
    )


# ---- in-place forms -----------------------------------------------------------------------------

X = np.array([0.3, -1.2, 2.5, 0.0], dtype=np.float32)
POSITIVE = np.abs(X) + 0.5
INSIDE = X * 0.3
INTS = np.array([4, -6, 9, 3])

IN_PLACE = {  # name -> (the input, the arguments (lib -> args))
    "lgamma": (POSITIVE, lambda lib: ()),
    "digamma": (POSITIVE, lambda lib: ()),
    "polygamma": (POSITIVE, lambda lib: (1,)),
    "mvlgamma": (POSITIVE + 1, lambda lib: (2,)),
    "i0": (X, lambda lib: ()),
    "sinc": (X, lambda lib: ()),
    "xlogy": (X, lambda lib: (lib.tensor(POSITIVE),)),
    "logit": (POSITIVE / 3, lambda lib: ()),
    "copysign": (X, lambda lib: (lib.tensor(-POSITIVE),)),
    "heaviside": (X, lambda lib: (lib.tensor([0.5]),)),
    "ldexp": (X, lambda lib: (lib.tensor([2, -1, 0, 3]),)),
    "nextafter": (X, lambda lib: (lib.tensor(POSITIVE),)),
    "deg2rad": (X, lambda lib: ()),
    "rad2deg": (X, lambda lib: ()),
    "sgn": (X, lambda lib: ()),
    "absolute": (X, lambda lib: ()),
    "igamma": (POSITIVE, lambda lib: (lib.tensor(POSITIVE * 2),)),
    "igammac": (POSITIVE, lambda lib: (lib.tensor(POSITIVE * 2),)),
    "fix": (X * 3, lambda lib: ()),
    "fmod": (X * 3, lambda lib: (1.5,)),
    "true_divide": (X, lambda lib: (lib.tensor(POSITIVE),)),
    "divide": (X, lambda lib: (2.0,)),
    "multiply": (X, lambda lib: (lib.tensor(POSITIVE),)),
    "arcsin": (INSIDE, lambda lib: ()),
    "arccos": (INSIDE, lambda lib: ()),
    "arctan": (X, lambda lib: ()),
    "arctan2": (X, lambda lib: (lib.tensor(POSITIVE),)),
    "arcsinh": (X, lambda lib: ()),
    "arccosh": (POSITIVE + 1, lambda lib: ()),
    "arctanh": (INSIDE, lambda lib: ()),
    "asinh": (X, lambda lib: ()),
    "acosh": (POSITIVE + 1, lambda lib: ()),
    "atanh": (INSIDE, lambda lib: ()),
    "erfc": (X, lambda lib: ()),
    "erfinv": (INSIDE, lambda lib: ()),
    "eq": (X, lambda lib: (0.3,)),
    "ne": (X, lambda lib: (lib.tensor(X[::-1].copy()),)),
    "lt": (X, lambda lib: (0.0,)),
    "le": (X, lambda lib: (0.0,)),
    "gt": (X, lambda lib: (0.0,)),
    "ge": (X, lambda lib: (0.0,)),
    "greater": (X, lambda lib: (0.0,)),
    "greater_equal": (X, lambda lib: (0.0,)),
    "less": (X, lambda lib: (0.0,)),
    "less_equal": (X, lambda lib: (0.0,)),
    "not_equal": (X, lambda lib: (0.0,)),
}
INTEGER_IN_PLACE = {
    "gcd": lambda lib: (lib.tensor([6, 4, 6, 0]),),
    "lcm": lambda lib: (lib.tensor([6, 4, 6, 5]),),
    "bitwise_and": lambda lib: (lib.tensor([6, 4, 6, 0]),),
    "bitwise_or": lambda lib: (3,),
    "bitwise_xor": lambda lib: (lib.tensor([6, 4, 6, 0]),),
    "bitwise_not": lambda lib: (),
    "bitwise_left_shift": lambda lib: (lib.tensor([1, 2, 64, 0]),),
    "bitwise_right_shift": lambda lib: (lib.tensor([1, 2, 64, 0]),),
    "eq": lambda lib: (9,),
    "lt": lambda lib: (lib.tensor([5, 0, 0, 0]),),
}


@pytest.mark.parametrize("name", IN_PLACE)
def test_an_in_place_form_writes_what_pytorch_writes(name):
    data, arguments = IN_PLACE[name]
    ours, theirs = sg.tensor(data), torch.tensor(data)
    version = ours._version
    assert getattr(ours, f"{name}_")(*arguments(sg)) is ours
    getattr(theirs, f"{name}_")(*arguments(torch))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-7)
    assert ours._version == version + 1


@pytest.mark.parametrize("name", INTEGER_IN_PLACE)
def test_an_integer_in_place_form_writes_what_pytorch_writes(name):
    ours, theirs = sg.tensor(INTS), torch.tensor(INTS)
    getattr(ours, f"{name}_")(*INTEGER_IN_PLACE[name](sg))
    getattr(theirs, f"{name}_")(*INTEGER_IN_PLACE[name](torch))
    assert_same(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", ["lgamma", "sinc", "deg2rad", "copysign", "xlogy"])
def test_an_in_place_form_refuses_a_float_result_in_an_integer_tensor(name):
    args = (sg.tensor([-1, 2]),) if name in ("copysign", "xlogy") else ()
    integers = sg.tensor([1, 2])
    with pytest.raises(RuntimeError, match=f"{name}_: result type float32 can't be cast"):
        getattr(integers, f"{name}_")(*args)
    assert integers.tolist() == [1, 2]


# (not ldexp_: PyTorch's backward of it takes 2**other in the integer dtype: 0 for other < 0)
@pytest.mark.parametrize("name", ["lgamma", "copysign", "logit", "eq", "multiply", "erfc"])
def test_the_gradient_through_an_in_place_form_in_a_graph_is_pytorchs(name):
    data, arguments = IN_PLACE[name]
    grads = []
    for lib in (sg, torch):
        leaf = lib.tensor(data.astype(np.float64), requires_grad=True)
        hidden = leaf * 1.0
        args = [a.double() if isinstance(a, lib.Tensor) and a.is_floating_point() else a
                for a in arguments(lib)]  # fmt: skip
        getattr(hidden, f"{name}_")(*args)
        (hidden * lib.tensor([1.0, -2.0, 0.5, 3.0], dtype=lib.float64)).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-9, atol=1e-12)


def test_an_in_place_form_refuses_a_leaf_that_requires_grad():
    leaf = sg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="lgamma_: a leaf Variable that requires grad"):
        leaf.lgamma_()
    with pytest.raises(RuntimeError, match="eq_: a leaf Variable that requires grad"):
        leaf.eq_(1.0)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "nextafter", "ldexp"])
def test_a_bool_or_integer_tensor_meets_a_float_as_torchs(name):
    """The dtype the two promote to decides (a bool meeting a float64 is float64), as in
    PyTorch; ours refused a bool first operand of logaddexp, logaddexp2 and nextafter, and a
    bool exponent of ldexp whatever the other dtype (PyTorch refuses it for a float x only)."""
    pairs = [(np.array([True, False]), np.array([1.0, -0.5]))]
    if name == "ldexp":
        pairs = [(np.array([True, False]), np.array([True, True])), (I[:2], np.array([True]))]
    for x, y in pairs:
        assert_same(*both(name, x, y))
        if name == "ldexp":
            with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
                sg.ldexp(sg.tensor(y.astype(np.float64)), sg.tensor(x.astype(bool)))


def test_atan2_of_an_integer_tensor_and_a_0d_float64_is_float64_as_torchs():
    """The operands promote together (a 0-d float64 lifts integers to float64); ours made the
    integer tensor float32 first, then kept float32 against the 0-d tensor."""
    assert_same(*both("atan2", np.array([0, 1, 2]), np.array(0.5)))
    assert_same(*both("atan2", np.array(2), np.array([0.5, -1.0], dtype=np.float32)))


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_and_fmin_give_the_first_operand_at_a_tie_of_signed_zeros(name):
    """PyTorch's fmax(0.0, -0.0) is 0.0 whatever the length; NumPy's, ours before, gave -0.0
    from 4 entries on (its vectorized loop)."""
    for n in (1, 4, 9):
        x, y = np.zeros(n), np.full(n, -0.0)
        for a, b in ((x, y), (y, x)):
            ours, theirs = both(name, a, b)
            np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
