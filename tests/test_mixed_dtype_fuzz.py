"""Random combinations against PyTorch: an op drawn from the elementwise, reduction, cast,
in-place, ``out=`` and creation families, on operands of every dtype (tensors with dims, 0-d
tensors, Python numbers), broadcasting shapes (0-size dims too) and layouts (transposed, sliced
with a step, expanded). Both libraries must raise or not (the same error class), and agree on
the result's dtype, shape and values; an in-place op or ``out=`` that PyTorch refuses must be
refused by ours and change nothing. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math

import numpy as np
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(150)

INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
REALS = ["bool", *INTS, *FLOATS]
# (rtol, atol) by result dtype: a couple of roundings apart
TOLERANCE = {
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-12),
    "complex64": (1e-5, 1e-6),
    "complex128": (1e-12, 1e-12),
}


def name(dtype) -> str:
    """A dtype's name in either library (``float32``, ``bfloat16``...)."""
    if isinstance(dtype, torch.dtype):
        return str(dtype).removeprefix("torch.")
    return np.dtype(dtype).name


def both_dtypes(dtype: str):
    return getattr(sg, dtype), getattr(torch, dtype)


# ---- operands ---------------------------------------------------------------------------------


def entries(draw, dtype: str, shape: tuple) -> np.ndarray:
    """Small values that every dtype holds exactly (so casts and promotions round nothing):
    bools, 0..4 for uint8, -4..4 for the signed ints, halves in [-4, 4] for floats."""
    size = math.prod(shape)
    if dtype == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))).reshape(shape)
    low = 0 if dtype == "uint8" else -4
    ints = np.array(draw(st.lists(st.integers(low, 4), min_size=size, max_size=size)))
    ints = ints.reshape(shape)
    if dtype in INTS:
        return ints.astype(dtype)
    halves = ints / 2
    return halves + 0.5j * (1 - ints) if dtype.startswith("complex") else halves


def from_array(array: np.ndarray, dtype: str):
    """The same tensor in both libraries, made from float64/int/bool ``array``."""
    ours, theirs = both_dtypes(dtype)
    return sg.tensor(array).to(ours), torch.tensor(array).to(theirs)


@st.composite
def tensors(draw, shape: tuple, dtypes=REALS):
    """A pair (ours, PyTorch's) of ``shape`` in one of ``dtypes``, laid out contiguously,
    transposed, sliced with a step or expanded from size-1 dims."""
    dtype = draw(st.sampled_from(dtypes))
    layout = draw(st.sampled_from(["contiguous", "transposed", "stepped", "expanded"]))
    if layout == "transposed" and len(shape) >= 2:
        ours, theirs = from_array(entries(draw, dtype, shape[::-1]), dtype)
        order = tuple(reversed(range(len(shape))))
        return ours.permute(*order), theirs.permute(*order)
    if layout == "stepped" and shape:
        base = (2 * shape[0], *shape[1:])
        ours, theirs = from_array(entries(draw, dtype, base), dtype)
        return ours[::2], theirs[::2]
    if layout == "expanded" and shape:
        ones = draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
        small = tuple(1 if one else size for one, size in zip(ones, shape))
        ours, theirs = from_array(entries(draw, dtype, small), dtype)
        return ours.expand(*shape), theirs.expand(*shape)
    return from_array(entries(draw, dtype, shape), dtype)


@st.composite
def scalars(draw):
    """A Python number, now and then one that a small dtype cannot hold (wrapped into an
    integer one, inf in a 16-bit float) or not a finite number."""
    value = draw(
        st.one_of(
            st.booleans(),
            st.integers(-4, 4),
            st.sampled_from([-2.5, -1.0, -0.5, 0.0, 0.5, 1.5, 3.0]),
            st.sampled_from([300, -129, 2**31, 1e5, float("inf"), float("nan")]),
        )
    )
    return value, value


@st.composite
def shapes(draw):
    """A broadcast shape of up to three dims (sizes 0 to 3)."""
    return tuple(draw(st.lists(st.integers(0, 3), max_size=3)))


@st.composite
def broadcastable(draw, shape: tuple):
    """A shape that broadcasts to ``shape``: leading dims dropped, some dims made 1; now and
    then one that does not (a dim of another size)."""
    kept = shape[draw(st.integers(0, len(shape))) :]
    out = [1 if draw(st.integers(0, 3)) == 0 else size for size in kept]
    if out and draw(st.integers(0, 15)) == 0:
        out[0] += 2
    return tuple(out)


@st.composite
def operands(draw, shape: tuple, dtypes=REALS, number=True):
    """A tensor with dims, a 0-d tensor or (if ``number``) a Python number."""
    kind = draw(st.sampled_from(["dims", "dims", "0-d", "number"] if number else ["dims", "0-d"]))
    if kind == "number":
        return draw(scalars())
    return draw(tensors(draw(broadcastable(shape)) if kind == "dims" else (), dtypes))


# ---- running both libraries -------------------------------------------------------------------


def to_numpy(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.float() if value.dtype in (torch.bfloat16, torch.float16) else value
        return value.detach().numpy()
    array = np.asarray(value.detach().numpy())
    return array.astype(np.float32) if array.dtype in (sg.bfloat16, sg.float16) else array


def assert_same(ours, theirs, what: str) -> None:
    """Raised alike, or equal in type, dtype, shape and values."""
    if raised_alike(ours, theirs, what):
        return
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs), what
        for mine, its in zip(ours, theirs):
            assert_same(mine, its, what)
        return
    if not isinstance(theirs, torch.Tensor):
        assert type(ours) is type(theirs) and ours == theirs, f"{what}: {ours!r} != {theirs!r}"
        return
    assert isinstance(ours, sg.Tensor), f"{what}: {type(ours)}"
    assert name(ours.dtype) == name(theirs.dtype), f"{what}: {ours.dtype} != {theirs.dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    actual, expected = to_numpy(ours), to_numpy(theirs)
    if name(theirs.dtype) in TOLERANCE:
        rtol, atol = TOLERANCE[name(theirs.dtype)]
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def describe(value) -> str:
    if isinstance(value, sg.Tensor):
        layout = "" if value.is_contiguous() else f" strides {value.stride()}"
        return f"{name(value.dtype)}{list(value.shape)}{layout} {value.tolist()}"
    return repr(value)


def check(call, pairs, what: str) -> None:
    """``call(library, *operands)`` in both libraries, on the pairs (ours, PyTorch's)."""
    ours = outcome(lambda m: call(m, *(mine for mine, _ in pairs)), sg)
    theirs = outcome(lambda m: call(m, *(its for _, its in pairs)), torch)
    args = ", ".join(describe(mine) for mine, _ in pairs)
    assert_same(ours, theirs, f"{what}({args})")


# ---- the ops ----------------------------------------------------------------------------------

BINARY = {
    "+": lambda m, x, y: x + y,
    "-": lambda m, x, y: x - y,
    "*": lambda m, x, y: x * y,
    "/": lambda m, x, y: x / y,
    "//": lambda m, x, y: x // y,
    "%": lambda m, x, y: x % y,
    "**": lambda m, x, y: x**y,
    "==": lambda m, x, y: x == y,
    "!=": lambda m, x, y: x != y,
    "<": lambda m, x, y: x < y,
    "<=": lambda m, x, y: x <= y,
    ">": lambda m, x, y: x > y,
    ">=": lambda m, x, y: x >= y,
    "&": lambda m, x, y: x & y,
    "|": lambda m, x, y: x | y,
    "^": lambda m, x, y: x ^ y,
    "add alpha": lambda m, x, y: m.add(x, y, alpha=2),
    "sub": lambda m, x, y: m.sub(x, y),
    "div floor": lambda m, x, y: m.div(x, y, rounding_mode="floor"),
    "div trunc": lambda m, x, y: m.div(x, y, rounding_mode="trunc"),
    "remainder": lambda m, x, y: m.remainder(x, y),
    "pow": lambda m, x, y: m.pow(x, y),
    "logical_and": lambda m, x, y: m.logical_and(x, y),
    "logical_or": lambda m, x, y: m.logical_or(x, y),
    "logical_xor": lambda m, x, y: m.logical_xor(x, y),
    "maximum": lambda m, x, y: m.maximum(x, y),
    "minimum": lambda m, x, y: m.minimum(x, y),
    "eq": lambda m, x, y: m.eq(x, y),
    "lt": lambda m, x, y: m.lt(x, y),
}

UNARY = {
    "abs": lambda m, x: m.abs(x),
    "neg": lambda m, x: m.neg(x),
    "-x": lambda m, x: -x,
    "~x": lambda m, x: ~x,
    "sign": lambda m, x: m.sign(x),
    "sqrt": lambda m, x: m.sqrt(x),
    "exp": lambda m, x: m.exp(x),
    "logical_not": lambda m, x: m.logical_not(x),
}

ELEMENTWISE_DTYPES = [*REALS, "complex64"]


@FUZZ
@given(st.data())
def test_binary_ops_agree_with_pytorch(data):
    op = data.draw(st.sampled_from(sorted(BINARY)))
    shape = data.draw(shapes())
    x = data.draw(operands(shape, ELEMENTWISE_DTYPES))
    y = data.draw(operands(shape, ELEMENTWISE_DTYPES))
    if not any(isinstance(mine, sg.Tensor) for mine in (x[0], y[0])):
        y = data.draw(tensors(shape))
    # README, "Complex dtypes": float16 with a complex operand is complex64 here, PyTorch's
    # experimental complex32 there
    dtypes = {name(mine.dtype) for mine in (x[0], y[0]) if isinstance(mine, sg.Tensor)}
    assume(dtypes != {"float16", "complex64"})
    check(BINARY[op], [x, y], op)


@FUZZ
@given(st.data())
def test_unary_ops_agree_with_pytorch(data):
    op = data.draw(st.sampled_from(sorted(UNARY)))
    x = data.draw(operands(data.draw(shapes()), ELEMENTWISE_DTYPES, number=False))
    check(UNARY[op], [x], op)


@FUZZ
@given(st.data())
def test_where_clamp_lerp_addcmul_agree_with_pytorch(data):
    op = data.draw(st.sampled_from(["where", "clamp", "clamp tensors", "lerp", "addcmul"]))
    shape = data.draw(shapes())
    x = data.draw(operands(shape, number=False))
    if op == "where":
        # (no uint8 condition: PyTorch warns of one once per process, and a later test
        # expects its warning; test_ordering_sweep checks uint8 conditions)
        condition = data.draw(operands(shape, ["bool"], number=False))
        y = data.draw(operands(shape))
        check(lambda m, c, p, q: m.where(c, p, q), [condition, x, y], op)
    elif op == "clamp":
        low, high = data.draw(st.one_of(st.none(), scalars())), data.draw(scalars())
        low = low or (None, None)
        check(lambda m, p, a, b: m.clamp(p, a, b), [x, low, high], op)
    elif op == "clamp tensors":
        low = data.draw(operands(shape, number=False))
        check(lambda m, p, a: m.clamp(p, min=a, max=a + 2), [x, low], op)
    elif op == "lerp":
        y = data.draw(operands(shape, FLOATS, number=False))
        weight = data.draw(st.one_of(scalars(), operands(shape, FLOATS, number=False)))
        check(lambda m, p, q, w: m.lerp(p, q, w), [x, y, weight], op)
    else:
        t1, t2 = data.draw(operands(shape)), data.draw(operands(shape, number=False))
        value = data.draw(scalars())[0]
        check(lambda m, p, a, b: m.addcmul(p, a, b, value=value), [x, t1, t2], op)


def along(reduction, x, dim, **kwargs):
    """``reduction`` over all of ``x`` (``dim`` None) or along ``dim``."""
    return reduction(x, **kwargs) if dim is None else reduction(x, dim, **kwargs)


REDUCTIONS = {
    "sum": lambda m, x, dim, dtype: along(m.sum, x, dim, dtype=dtype),
    "sum keepdim": lambda m, x, dim, dtype: x.sum(dim if dim is not None else 0, keepdim=True),
    "mean": lambda m, x, dim, dtype: along(m.mean, x, dim, dtype=dtype),
    "prod": lambda m, x, dim, dtype: along(m.prod, x, dim, dtype=dtype),
    "amax": lambda m, x, dim, dtype: along(m.amax, x, dim),
    "argmax": lambda m, x, dim, dtype: along(m.argmax, x, dim),
    "cumsum": lambda m, x, dim, dtype: m.cumsum(x, dim if dim is not None else 0, dtype=dtype),
}


@FUZZ
@given(st.data())
def test_reductions_agree_with_pytorch(data):
    op = data.draw(st.sampled_from(sorted(REDUCTIONS)))
    shape = data.draw(shapes())
    x = data.draw(tensors(shape))
    dim = data.draw(st.one_of(st.none(), st.integers(-len(shape) or -1, max(len(shape) - 1, 0))))
    dtype = data.draw(st.one_of(st.none(), st.sampled_from(REALS)))
    dtypes = (None, None) if dtype is None else both_dtypes(dtype)
    check(lambda m, p, d: REDUCTIONS[op](m, p, dim, d), [x, dtypes], op)


CAST_METHODS = ["float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte"]
CAST_METHODS += ["bool"]


@FUZZ
@given(st.data())
def test_casts_agree_with_pytorch(data):
    x = data.draw(operands(data.draw(shapes()), ELEMENTWISE_DTYPES, number=False))
    how = data.draw(st.sampled_from(["to", "type", "method"]))
    if how == "method":
        method = data.draw(st.sampled_from(CAST_METHODS))
        check(lambda m, p: getattr(p, method)(), [x], method)
        return
    target = both_dtypes(data.draw(st.sampled_from(ELEMENTWISE_DTYPES)))
    check(lambda m, p, d: getattr(p, how)(d), [x, target], how)


IN_PLACE = {
    "add_": lambda x, y: x.add_(y),
    "sub_": lambda x, y: x.sub_(y),
    "mul_": lambda x, y: x.mul_(y),
    "div_": lambda x, y: x.div_(y),
    "+=": lambda x, y: x.__iadd__(y),
    "*=": lambda x, y: x.__imul__(y),
    "/=": lambda x, y: x.__itruediv__(y),
}


@FUZZ
@given(st.data())
def test_in_place_ops_agree_with_pytorch_or_change_nothing(data):
    op = data.draw(st.sampled_from(sorted(IN_PLACE)))
    shape = data.draw(shapes())
    x = data.draw(tensors(shape))
    y = data.draw(operands(shape))
    ours, theirs = (x[0].clone(), x[1].clone()) if data.draw(st.booleans()) else x
    before = to_numpy(ours).copy()
    result = outcome(lambda m: IN_PLACE[op](ours, y[0]), sg)
    expected = outcome(lambda m: IN_PLACE[op](theirs, y[1]), torch)
    what = f"{op}({describe(ours)}, {describe(y[0])})"
    assert_wrote_as_pytorch(result, expected, (ours, theirs), before, what)


def assert_wrote_as_pytorch(result, expected, written, before, what):
    """An op that writes into ``written`` (ours, PyTorch's): PyTorch's result or its error,
    ours unchanged where PyTorch raised, else the result itself, equal to PyTorch's."""
    assert_same(result, expected, what)
    ours, theirs = written
    if isinstance(expected, Exception):
        np.testing.assert_array_equal(to_numpy(ours), before, err_msg=f"{what} changed it")
    else:
        assert result is ours, what
        assert_same(ours, theirs, what)


OUT_FORMS = {
    "add": lambda m, x, y, out: m.add(x, y, out=out),
    "mul": lambda m, x, y, out: m.mul(x, y, out=out),
    "div": lambda m, x, y, out: m.div(x, y, out=out),
    "maximum": lambda m, x, y, out: m.maximum(x, y, out=out),
    "lt": lambda m, x, y, out: m.lt(x, y, out=out),
}


@FUZZ
@given(st.data())
def test_out_forms_agree_with_pytorch_or_change_nothing(data):
    op = data.draw(st.sampled_from(sorted(OUT_FORMS)))
    shape = data.draw(shapes())
    x, y = data.draw(tensors(shape)), data.draw(operands(shape))
    out_shape = data.draw(st.sampled_from([shape, shape, (0,), (1,)]))
    out_dtype = data.draw(st.sampled_from(REALS))
    ours_out, theirs_out = from_array(np.ones(out_shape), out_dtype)
    before = to_numpy(ours_out).copy()
    result = outcome(lambda m: OUT_FORMS[op](m, x[0], y[0], ours_out), sg)
    expected = outcome(lambda m: OUT_FORMS[op](m, x[1], y[1], theirs_out), torch)
    what = f"{op}({describe(x[0])}, {describe(y[0])}, out={describe(ours_out)})"
    assert_wrote_as_pytorch(result, expected, (ours_out, theirs_out), before, what)


NUMBERS = st.one_of(st.booleans(), st.integers(-4, 4), st.sampled_from([-1.5, 0.0, 2.5]))


@st.composite
def nested_lists(draw):
    """A list of Python numbers of mixed kinds, flat or of equal-length rows."""
    width = draw(st.integers(0, 3))
    row = st.lists(NUMBERS, min_size=width, max_size=width)
    return draw(st.one_of(row, st.lists(row, min_size=1, max_size=3)))


@FUZZ
@given(nested_lists(), st.one_of(st.none(), st.sampled_from(ELEMENTWISE_DTYPES)))
def test_tensor_from_mixed_python_data_agrees_with_pytorch(values, dtype):
    dtypes = (None, None) if dtype is None else both_dtypes(dtype)
    check(lambda m, v, d: m.tensor(v, dtype=d), [(values, values), dtypes], "tensor")
