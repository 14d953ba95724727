"""The small integer dtypes (uint8, int8, int16) beside the others, against PyTorch: the whole
promotion table (``promote_types``, ``result_type`` with 0-d tensors and Python numbers, and
the dtype each arithmetic and comparison op gives), how Python numbers and out-of-range values
are read (wrapped in arithmetic, refused at creation), casts, reductions, indexing by a byte
tensor, printing, the safetensors round trip, and that these tensors cannot require grad."""

import doctest
import itertools

import numpy as np
import pytest
import torch
from oracle import assert_raises_as_torch

import scratchgrad as sg

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"]
ALL += ["float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
SMALL = ["uint8", "int8", "int16"]


def name(dtype) -> str:
    return str(dtype).split(".")[-1]


def pair(array):
    """The same tensor in both libraries (NumPy's dtype kept; bfloat16 through float32)."""
    array = np.asarray(array)
    if array.dtype == sg.bfloat16:
        return sg.tensor(array), torch.tensor(array.astype(np.float32)).bfloat16()
    return sg.tensor(array), torch.tensor(array)


def values(dtype: str, shape=(5,), seed=0):
    """Random entries of ``dtype`` (as a NumPy array), spread over the small dtypes' ranges;
    floats are whole numbers, exact in every floating dtype, so that a cast rounds nothing."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -300), min(info.max, 300) + 1, shape).astype(dtype)
    return rng.integers(-60, 61, shape).astype(getattr(sg, dtype))


def assert_same(ours, theirs, what=""):
    """Same dtype, shape and values: integers and bools exactly, floats within 1 in 10**6
    (NumPy's float32 exp may differ from PyTorch's in the last bit); 16-bit floats compared as
    float32."""
    assert name(ours.dtype) == name(theirs.dtype), f"{what}: {ours.dtype} != {theirs.dtype}"
    expected = theirs.float() if theirs.dtype == torch.bfloat16 else theirs
    actual = ours.numpy().astype(np.float32) if ours.dtype == sg.bfloat16 else ours.numpy()
    np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-6, atol=0, err_msg=what)


def test_the_new_dtypes_and_their_aliases_are_pytorchs():
    for dtype in SMALL:
        assert name(getattr(sg, dtype)) == name(getattr(torch, dtype))
    assert sg.short == sg.int16 and name(torch.short) == "int16"
    for dtype in ALL:
        assert isinstance(getattr(sg, dtype), sg.dtype)
        assert sg.tensor([1]).to(getattr(sg, dtype)).dtype == getattr(sg, dtype)


@pytest.mark.parametrize("x, y", list(itertools.product(ALL, ALL)))
def test_promote_types_is_pytorchs_for_every_pair(x, y):
    assert name(sg.promote_types(getattr(sg, x), getattr(sg, y))) == name(
        torch.promote_types(getattr(torch, x), getattr(torch, y))
    )


@pytest.mark.parametrize("x, y", list(itertools.product(ALL, ALL)))
def test_result_type_and_the_ops_dtypes_are_pytorchs_for_dims_and_0d(x, y):
    """Each pair as tensors with dims and as 0-d tensors on either side: ``result_type``, and
    the dtype and values of +, *, comparisons and maximum (values wrap as PyTorch's do)."""
    shapes = [((4,), (4,)), ((4,), ()), ((), (4,)), ((), ())]
    for sx, sy in shapes:
        (a, at), (b, bt) = pair(values(x, sx, 1)), pair(values(y, sy, 2))
        what = f"{x}{list(sx)} with {y}{list(sy)}"
        assert name(sg.result_type(a, b)) == name(torch.result_type(at, bt)), what
        ops = {"==": lambda p, q: p == q, "<": lambda p, q: p < q, "max": torch.maximum}
        if "bool" not in (x, y) or x == y:  # PyTorch refuses bool - bool
            ops.update({"+": lambda p, q: p + q, "*": lambda p, q: p * q})
        if y != "bool":  # true division: floating, but float64 where a 0-d float64 divides
            ops["/"] = lambda p, q: p / q
        for op, f in ops.items():
            ours = a.maximum(b) if op == "max" else f(a, b)
            assert_same(ours, f(at, bt), f"{what}: {op}")


NUMBERS = [True, 3, -3, 127, 128, 255, 256, 300, -129, -300, 2**40, 2**63, -(2**63), 2.5]


@pytest.mark.parametrize("dtype", ALL)
def test_a_python_number_promotes_and_wraps_as_in_pytorch(dtype):
    """A Python int keeps an integer tensor's dtype and is read modulo 2**bits (uint8 + 300 adds
    44; uint8 < 300 compares with 44), a float makes the default float dtype."""
    a, at = pair(values(dtype, (6,), 3))
    for number in NUMBERS:
        if dtype in ("bool", "float16", "bfloat16") and abs(number) > 2**31:
            continue  # PyTorch refuses bool with uint64; a 16-bit float makes inf
        assert name(sg.result_type(a, number)) == name(torch.result_type(at, number)), number
        ops = {"<": lambda p, q: p < q, "==": lambda p, q: p == q, "r*": lambda p, q: q * p}
        ops.update({"/": lambda p, q: p / q, "r/": lambda p, q: q / p})  # not read wrapped
        if dtype != "bool":
            ops["+"] = lambda p, q: p + q
        if dtype != "bool" and not isinstance(number, bool):  # PyTorch refuses bool subtraction
            ops["-"] = lambda p, q: p - q
        for op, f in ops.items():
            assert_same(f(a, number), f(at, number), f"{dtype} {op} {number!r}")


NUMPY_SCALARS = [np.float64(2.5), np.float32(-1.5), np.int64(3), np.int8(-3), np.uint8(200)]
NUMPY_SCALARS += [np.True_]


@pytest.mark.parametrize("dtype", ALL)
def test_a_numpy_scalar_promotes_as_a_python_number_as_in_pytorch(dtype):
    """``x / np.sqrt(d)`` keeps a float32 ``x`` float32 (NumPy alone would give float64), on
    either side of the operator, in ``torch.add`` and in ``result_type``; PyTorch reads a
    ``bool_`` as a float."""
    a, at = pair(values(dtype, (6,), 4))
    for number in NUMPY_SCALARS:
        assert name(sg.result_type(a, number)) == name(torch.result_type(at, number)), number
        ops = {"*": lambda p, q: p * q, "r+": lambda p, q: q + p, "<": lambda p, q: p < q}
        ops["add"] = lambda p, q: (sg if isinstance(p, sg.Tensor) else torch).add(p, q)
        for op, f in ops.items():
            if dtype == "bool" and op in ("*", "r+", "add") and not isinstance(number, np.bool_):
                continue  # bool arithmetic with a number: covered by the Python-number test
            assert_same(f(a, number), f(at, number), f"{dtype} {op} {number!r}")


@pytest.mark.parametrize("dtype", ALL)
def test_where_reads_numpy_scalars_as_python_numbers_as_pytorch(dtype):
    """``torch.where(y == 1, pos_weight, neg_weight)`` with weights NumPy computed; two Python
    numbers promote as a 0-d tensor and a number (``where(c, 3, 0.5)`` is float32)."""
    a, at = pair(values(dtype, (6,), 5))
    cond, cond_t = pair(values("bool", (6,), 6))
    numbers = NUMPY_SCALARS + [3, True, 2.5]
    for first, second in itertools.product(numbers, [np.float64(0.5), np.int64(-2), 0.5, 7]):
        what = f"{dtype} {first!r} {second!r}"
        assert_same(sg.where(cond, first, second), torch.where(cond_t, first, second), what)
        assert_same(sg.where(cond, a, second), torch.where(cond_t, at, second), what)


@pytest.mark.parametrize("dtype", INTS)
def test_a_python_int_beyond_64_bits_raises_overflow_error_as_in_pytorch(dtype):
    assert_raises_as_torch(
        lambda m: m.tensor([1], dtype=getattr(m, dtype)) + 2**64, OverflowError, "too big"
    )


@pytest.mark.parametrize("dtype", SMALL + ["int32", "int64"])
def test_tensor_from_python_numbers_wraps_or_refuses_as_pytorch(dtype):
    """Negative ints wrap into an unsigned dtype down to -max; floats are truncated; values
    beyond the range (and NaN, inf, negative floats for uint8) raise PyTorch's RuntimeError."""
    info = np.iinfo(dtype)
    accepted = [[info.min, info.max], [True, 2], [1.9, -1.9] if info.min else [1.9, 0.5], 0]
    if not info.min:
        accepted += [[-1, -255, -128], -1]
    for data in accepted:
        ours, theirs = (m.tensor(data, dtype=getattr(m, dtype)) for m in (sg, torch))
        assert_same(ours, theirs, f"{dtype} from {data}")
    refused = [[info.max + 1], [info.min - 1] if info.min else [-256], [float("nan")]]
    refused += [[float("inf")]] + ([] if info.min else [[-0.5]])
    if info.bits < 64:  # (a float64 cannot hold int64's max + 0.5)
        refused.append([info.max + 0.5])
    if dtype == "int64":  # Python ints past 64 bits are refused before any dtype is read
        past, refused = refused[:2], refused[2:]
        for data in past:
            assert_raises_as_torch(lambda m, data=data: m.tensor(data), ValueError, "Overflow")
    for data in refused:
        assert_raises_as_torch(
            lambda m, data=data: m.tensor(data, dtype=getattr(m, dtype)),
            RuntimeError,
            f"value cannot be converted to type {dtype} without overflow",
        )


def test_tensor_from_a_numpy_array_wraps_without_a_check_as_pytorch():
    data = np.array([300, -1, 255])
    assert_same(sg.tensor(data, dtype=sg.uint8), torch.tensor(data, dtype=torch.uint8))


@pytest.mark.parametrize("method", ["byte", "char", "short", "int", "long"])
def test_casts_from_floats_truncate_and_wrap_as_pytorch(method):
    """Floats in float32 (as ``.to`` reads them): truncated toward zero, then wrapped into the
    dtype as PyTorch's CPU casts do (through int32 for the small dtypes)."""
    data = np.array([-1.5, -0.5, 0.5, 255.9, 300.0, -300.7, 1e5, 7.0], np.float32)
    (a, at), what = pair(data), f".{method}()"
    assert_same(getattr(a, method)(), getattr(at, method)(), what)
    for dtype in SMALL:
        assert_same(a.to(getattr(sg, dtype)), at.to(getattr(torch, dtype)), f"to {dtype}")


OPS = {
    "neg": lambda m, x: -x,
    "abs": lambda m, x: x.abs(),
    "sum": lambda m, x: x.sum(),
    "sum(dim)": lambda m, x: x.sum(0),
    "prod": lambda m, x: x.prod(),
    "prod(dim)": lambda m, x: x.prod(0),
    "cumsum": lambda m, x: x.cumsum(0),
    "cumprod": lambda m, x: x.cumprod(0),
    "max": lambda m, x: x.max(),
    "amin": lambda m, x: x.amin(0),
    "argmax": lambda m, x: x.argmax(),
    "any": lambda m, x: x.any(),
    "all(dim)": lambda m, x: x.all(0),
    "//": lambda m, x: x // 3,
    "%": lambda m, x: x % -7,
    "/": lambda m, x: x / 2,
    "**": lambda m, x: x**2,
    "* 1.5": lambda m, x: x * 1.5,
    "exp": lambda m, x: (x % 20).exp(),
    "&": lambda m, x: x & 5,
    "|": lambda m, x: x | 5,
    "^": lambda m, x: x ^ 5,
    "~": lambda m, x: ~x,
    "sign": lambda m, x: x.sign(),
    "clamp": lambda m, x: x.clamp(0, 50),
    "where": lambda m, x: m.where(x > 0, x, 0),
    "masked_fill": lambda m, x: x.masked_fill(x > 0, 7),
    "sort": lambda m, x: x.sort().values,
    "topk": lambda m, x: x.topk(2).values,
    "cat": lambda m, x: m.cat([x, x]),
    "index": lambda m, x: x[m.tensor([0, 2])],
    "matmul": lambda m, x: x.reshape(2, 3) @ x.reshape(3, 2),
    "add_": lambda m, x: x.clone().add_(1),
    "mul_": lambda m, x: x.clone().mul_(3),
    "fill_": lambda m, x: x.clone().fill_(3),
    "float": lambda m, x: x.float(),
    "bool": lambda m, x: x.bool(),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", SMALL)
def test_ops_on_small_integer_tensors_match_pytorch(dtype, op):
    """Values and dtypes (sums and products in int64, any/all of uint8 in uint8, as PyTorch)."""
    a, at = pair(values(dtype, (6,), 4))
    assert_same(OPS[op](sg, a), OPS[op](torch, at), f"{op} of {dtype}")


def _set_first(m, x, value):
    x[0] = value
    return x


WRITES = {
    "fill_": lambda m, x, v: x.fill_(v),
    "x[0] = v": _set_first,
    "full": lambda m, x, v: m.full((2,), v, dtype=x.dtype),
    "masked_fill": lambda m, x, v: x.masked_fill(m.tensor([True, False, True]), v),
    "where": lambda m, x, v: m.where(m.tensor([True, False, True]), v, x),
    "clamp(min)": lambda m, x, v: x.clamp(min=v),
    "clamp(max)": lambda m, x, v: x.clamp(max=v),
}


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("dtype", SMALL)
def test_a_number_written_into_the_tensor_is_checked_as_pytorch_checks_it(dtype, write):
    """Unlike arithmetic, a written number must fit (an unsigned dtype takes negative ints
    down to -max, as two's complement): ``fill_``, item assignment, ``full``, ``where``'s
    and ``masked_fill``'s values, ``clamp``'s bounds; a float written into an integer tensor is
    truncated."""
    info = np.iinfo(dtype)
    fitting = [5, info.max, info.min] + ([-1, -255] if not info.min else [-1])
    if write in ("fill_", "x[0] = v", "full", "masked_fill"):  # the tensor's dtype kept
        fitting.append(2.7)
    for value in fitting:
        ours = WRITES[write](sg, sg.tensor([1, 2, 3], dtype=getattr(sg, dtype)), value)
        theirs = WRITES[write](torch, torch.tensor([1, 2, 3], dtype=getattr(torch, dtype)), value)
        assert_same(ours, theirs, f"{write} {value} into {dtype}")
    for value in (info.max + 1, info.min - 1 if info.min else -256):
        assert_raises_as_torch(
            lambda m, value=value: WRITES[write](
                m, m.tensor([1, 2, 3], dtype=getattr(m, dtype)), value
            ),
            RuntimeError,
            f"value cannot be converted to type {dtype}",
        )


@pytest.mark.parametrize("reduction", ["sum", "prod"])
@pytest.mark.parametrize("dtype", SMALL + ["int32"])
def test_a_reduction_given_an_integer_dtype_keeps_it_and_wraps_as_pytorch(dtype, reduction):
    a, at = pair(np.array([100, 100, 3], np.int64))
    ours = getattr(a, reduction)(dtype=getattr(sg, dtype))
    assert_same(ours, getattr(at, reduction)(dtype=getattr(torch, dtype)), reduction)


@pytest.mark.parametrize("dtype", SMALL)
def test_mean_of_an_integer_tensor_raises_as_in_pytorch(dtype):
    assert_raises_as_torch(
        lambda m: m.ones(2, dtype=getattr(m, dtype)).mean(), RuntimeError, "mean"
    )


@pytest.mark.parametrize("dtype", SMALL)
def test_integer_tensors_cannot_require_grad_as_in_pytorch(dtype):
    for make in (
        lambda m: m.tensor([1, 2], dtype=getattr(m, dtype), requires_grad=True),
        lambda m: m.zeros(2, dtype=getattr(m, dtype), requires_grad=True),
        lambda m: m.ones(2, dtype=getattr(m, dtype)).requires_grad_(),
        lambda m: m.ones(2, requires_grad=True).to(getattr(m, dtype)).requires_grad_(),
    ):
        assert_raises_as_torch(make, RuntimeError, "floating point")
    for m in (sg, torch):  # a cast to it leaves the graph
        cast = (m.ones(2, requires_grad=True) * 2).to(getattr(m, dtype))
        assert not cast.requires_grad and cast.grad_fn is None


def test_a_byte_tensor_indexes_as_a_mask_with_pytorchs_warning():
    """PyTorch's legacy: uint8 indices are a boolean mask (deprecated, with a warning); int8
    and int16 indices raise an IndexError."""
    for m in (sg, torch):
        x, mask = m.arange(4), m.tensor([1, 0, 1, 1], dtype=m.uint8)
        with pytest.warns(UserWarning, match="indexing with dtype .*uint8 is now deprecated"):
            picked = x[mask]
        assert picked.tolist() == [0, 2, 3]
    for dtype in ("int8", "int16"):
        assert_raises_as_torch(
            lambda m, dtype=dtype: m.arange(3)[m.tensor([1, 0], dtype=getattr(m, dtype))],
            IndexError,
            "tensors used as indices must be long, int, byte or bool tensors",
        )


@pytest.mark.parametrize("dtype", SMALL)
@pytest.mark.parametrize("shape", [(), (3,), (2, 4), (2000,)])
def test_printing_matches_pytorch(dtype, shape):
    a, at = pair(values(dtype, shape, 5))
    assert repr(a) == repr(at).replace("torch.", "scratchgrad.")


def test_a_state_dict_of_small_integers_round_trips_through_safetensors(tmp_path):
    """Saved and loaded by scratchgrad, and read by safetensors' PyTorch loader the same."""
    from safetensors.torch import load_file

    state = {dtype: sg.tensor(values(dtype, (3, 2), 6)) for dtype in SMALL}
    sg.save(state, tmp_path / "small.safetensors")
    back = sg.load(tmp_path / "small.safetensors")
    theirs = load_file(tmp_path / "small.safetensors")
    for key, tensor in state.items():
        assert back[key].dtype == tensor.dtype and back[key].tolist() == tensor.tolist()
        assert_same(back[key], theirs[key], key)


def test_a_byte_tensor_of_rng_state_size_is_cheap_and_exact():
    """What a generator's state will be held in: a uint8 vector from raw bytes, printed and
    compared as PyTorch's ``get_rng_state()`` is."""
    raw = np.random.default_rng(7).integers(0, 256, 5056).astype(np.uint8)
    state, theirs = sg.from_numpy(raw.copy()), torch.from_numpy(raw.copy())
    assert state.dtype == sg.uint8 and state.shape == (5056,)
    assert repr(state) == repr(theirs).replace("torch.", "scratchgrad.")
    assert bytes(state.numpy()) == bytes(raw) and sg.equal(state, sg.tensor(raw))


def test_the_dtype_modules_doc_examples_run():
    import scratchgrad.dtypes

    assert doctest.testmod(scratchgrad.dtypes).failed == 0


def test_masked_fill_keeps_the_tensors_dtype_and_takes_only_boolean_masks():
    """A float (or a float 0-d tensor) filled into an integer tensor is truncated and the dtype
    kept (it was promoted to float32), as PyTorch's; a float mask raises its error."""
    for value in (2.7, -2.7):
        for make in (lambda m, v: v, lambda m, v: m.tensor(v, dtype=m.float64)):
            ours, theirs = (
                m.tensor([1, 2]).masked_fill(m.tensor([True, False]), make(m, value))
                for m in (sg, torch)
            )
            assert_same(ours, theirs, f"masked_fill {value}")
    assert_raises_as_torch(
        lambda m: m.zeros(2).masked_fill(m.tensor([1.0, 0.0]), 1.0),
        RuntimeError,
        "masked_fill_ only supports boolean masks",
    )


@pytest.mark.parametrize("dtype", INTS)
def test_integers_to_negative_powers_in_a_tensor_truncate_as_pytorchs(dtype):
    """NumPy refuses them; PyTorch gives 1 / x**-y truncated (1, -1 or 0). A negative Python
    number as the exponent is still refused, by both."""
    base = np.array([0, 1, -1, 2, -2, 3, -1, 1]) % (256 if dtype == "uint8" else 1 << 62)
    exponent = np.array([-1, -3, -3, -2, -1, 0, -2, 2])
    for make_base in (lambda m: m.tensor(base, dtype=getattr(m, dtype)), lambda m: 2):
        ours = make_base(sg) ** sg.tensor(exponent)
        theirs = make_base(torch) ** torch.tensor(exponent)
        assert_same(ours, theirs, dtype)
    assert_raises_as_torch(
        lambda m: m.tensor([2, 3], dtype=getattr(m, dtype)) ** -1,
        RuntimeError,
        "Integers to negative integer powers are not allowed",
    )


@pytest.mark.parametrize("op", ["sign", "sgn", "square"])
def test_sign_and_square_of_bools_are_pytorchs(op):
    a, at = pair(np.array([True, False, True]))
    assert_same(getattr(a, op)(), getattr(at, op)(), op)
    assert_same(getattr(sg, op)(a), getattr(torch, op)(at), op)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", ["bool", "int16", "int64"])
def test_integers_compare_with_a_python_float_in_the_default_float_dtype_as_pytorch(dtype, op):
    """PyTorch compares in float32: int16 7 equals 7.0000001, int64 2**24 + 1 equals 2.0**24
    (NumPy compared in float64)."""
    x = np.array([7, 2**24 + 1, 0, 1]) if dtype != "bool" else np.array([True, False])
    a, at = pair(x.astype(dtype) if dtype != "int16" else np.array([7, -7], np.int16))
    for number in (7.0000001, 16777216.0, 1e300, 0.5, 1.0):
        assert_same(getattr(a, op)(number), getattr(at, op)(number), f"{op} {number}")


@pytest.mark.parametrize("number", [5, -5, 5.5, True])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_remainder_takes_a_python_number_first_as_pytorch(dtype, number):
    a, at = pair(np.array([3, -3, 2]).astype(dtype))
    assert_same(sg.remainder(number, a), torch.remainder(number, at), f"{number} % {dtype}")


@pytest.mark.parametrize("value", [-1.5, 0.0, 2, True])
def test_a_number_filled_into_a_bool_tensor_stays_bool_as_pytorch(value):
    """index_fill of a bool tensor with -1.5 gave float64."""
    a, at = pair(np.array([True, False, False]))
    index = [0, 1]
    assert_same(
        a.index_fill(0, sg.tensor(index), value), at.index_fill(0, torch.tensor(index), value)
    )
    assert_same(sg.where(a, value, a), torch.where(at, value, at))


@pytest.mark.parametrize("other", ["int64", "int32", "int8", "uint8"])
@pytest.mark.parametrize("op", ["add_", "sub_", "mul_"])
def test_integer_tensors_update_a_uint8_tensor_in_place_wrapping_as_pytorch(op, other):
    """NumPy's same_kind casting refused int64 into uint8; PyTorch wraps."""
    a, at = pair(np.array([250, 2, 0, 7], np.uint8))
    b, bt = pair(np.array([10, -3, 3, 100]).astype(other) if other != "uint8" else [10, 3, 3, 100])
    assert_same(getattr(a, op)(b), getattr(at, op)(bt), f"{op} {other}")
    assert_raises_as_torch(
        lambda m: m.zeros(2, dtype=m.uint8).div_(m.ones(2, dtype=m.int64)),
        RuntimeError,
        "cast",
    )


def test_ints_past_int64_beside_others_are_refused_unless_the_dtype_is_floating_as_torch():
    # NumPy makes float64 of [2**63, 1] (uint64 with int64), which once passed as floats
    for data in ([2**63, 1], [[1, 2**63], [2, 3]], [-1, 2**64 - 1]):
        assert_raises_as_torch(lambda m, data=data: m.tensor(data), ValueError, "Overflow")
        assert_raises_as_torch(
            lambda m, data=data: m.tensor(data, dtype=m.int64), ValueError, "Overflow"
        )
    for data, dtype in (([2**63, 1], "float64"), ([2**70], "float32"), ([2**63], "complex64")):
        ours, theirs = (m.tensor(data, dtype=getattr(m, dtype)) for m in (sg, torch))
        assert_same(ours, theirs, f"{dtype} from {data}")
    assert_same(sg.tensor([2**63, 1.5]), torch.tensor([2**63, 1.5]), "with a float")


BOOL_DIVISIONS_AND_POWERS = {
    "b // b": lambda m, b: b // b,
    "b // True": lambda m, b: b // True,
    "True // b": lambda m, b: True // b,
    "b // int": lambda m, b: b // m.tensor([1, 2, 3]),
    "b % b": lambda m, b: b % b,
    "fmod": lambda m, b: m.fmod(b, b),
    "trunc": lambda m, b: m.div(b, b, rounding_mode="trunc"),
    "floor_divide_": lambda m, b: b.clone().floor_divide_(b),
    "b ** b": lambda m, b: b**b,
    "b ** 0-d b": lambda m, b: b ** m.tensor(True),
    "True ** b": lambda m, b: True**b,
    "pow(False, b)": lambda m, b: m.pow(False, b),
    "b ** True": lambda m, b: b**True,
    "b ** False": lambda m, b: b**False,
    "b ** 2": lambda m, b: b**2,
    "b ** int": lambda m, b: b ** m.tensor([1, 2, 3]),
    "pow(2, b)": lambda m, b: m.pow(2, b),
    "pow(2.5, b)": lambda m, b: m.pow(2.5, b),
    "pow(b, exponent=b)": lambda m, b: m.pow(b, exponent=m.tensor([1, 2, 3])),
}


@pytest.mark.parametrize("call", BOOL_DIVISIONS_AND_POWERS.values(), ids=BOOL_DIVISIONS_AND_POWERS)
def test_bool_division_and_power_as_pytorch(call):
    """PyTorch's integer division and pow kernels have no bool version: bools on both sides
    raise; a bool tensor to a bool number's power is a bool tensor (x or not y)."""
    try:
        expected = call(torch, torch.tensor([True, False, True]))
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            call(sg, sg.tensor([True, False, True]))
        return
    assert_same(call(sg, sg.tensor([True, False, True])), expected, "")


def both(make):
    """``make(library)`` for scratchgrad and for PyTorch."""
    return make(sg), make(torch)


NUMBER_FIRST = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide"]
NUMBER_FIRST += ["floor_divide", "remainder"]


@pytest.mark.parametrize("function", NUMBER_FIRST)
@pytest.mark.parametrize("number", [3, 2.5, 300])
@pytest.mark.parametrize("dtype, shape", [("uint8", (3,)), ("float16", ()), ("int8", ())])
def test_a_number_first_promotes_as_a_python_number_as_in_pytorch(function, number, dtype, shape):
    """``torch.add(2.5, half_0d)`` is float16 and ``torch.add(300, uint8)`` wraps 300 (the
    number widens nothing): it used to raise TypeError (add, sub, mul, div), or be read as an
    int64 or float32 0-d tensor (remainder)."""
    (ours, theirs) = pair(values(dtype, shape, 4) % 5 + 1)
    assert_same(getattr(sg, function)(number, ours), getattr(torch, function)(number, theirs))


def test_two_numbers_make_a_tensor_where_pytorch_makes_one():
    for function in ["add", "sub", "mul", "div", "true_divide", "floor_divide"]:
        assert_same(getattr(sg, function)(5, 2), getattr(torch, function)(5, 2), function)
    assert_same(sg.add(2.5, 1, alpha=2), torch.add(2.5, 1, alpha=2))
    assert_raises_as_torch(lambda m: m.sub(True, m.tensor(2.0)), RuntimeError, "bool tensor")
    assert_raises_as_torch(lambda m: m.remainder(5, 2), TypeError, "Tensor")


def test_alpha_times_a_0d_other_widens_nothing_as_in_pytorch():
    """``uint8 () + 2 * bool ()`` is uint8: alpha times the bool used to make it int64."""
    ours, theirs = both(lambda m: m.add(m.tensor(1, dtype=m.uint8), m.tensor(True), alpha=2))
    assert_same(ours, theirs)
    ours, theirs = both(lambda m: m.tensor([5], dtype=m.int8).sub(m.tensor(2), alpha=3))
    assert_same(ours, theirs)


@pytest.mark.parametrize("form", ["add_", "sub_", "mul_", "__iadd__", "__isub__", "__imul__"])
@pytest.mark.parametrize("number", [-1, -4, 300, -129])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_a_python_int_wraps_in_place_as_out_of_place(form, number, dtype):
    """``uint8.add_(-1)`` wraps as ``uint8 + -1`` does: it raised NumPy's OverflowError."""
    ours, theirs = pair(values(dtype, (4,), 5))
    assert_same(getattr(ours, form)(number), getattr(theirs, form)(number), f"{form} {number}")


def test_bfloat16_to_unsigned_wraps_as_pytorchs_float_casts():
    """bfloat16 -1.0 to uint8 is 255 as PyTorch's (and float32's): ml_dtypes clipped it to 0."""
    data = [-1.5, -1.0, 2.5, 200.0]
    for dtype in ["uint8", "int8", "int16"]:
        ours, theirs = both(lambda m, d=dtype: m.tensor(data, dtype=m.bfloat16).to(getattr(m, d)))
        assert_same(ours, theirs, dtype)
    assert_same(*both(lambda m: m.tensor(-2.0, dtype=m.bfloat16).prod(dtype=m.uint8)))


def test_a_negative_int_among_floats_wraps_into_uint8_as_in_pytorch():
    """``tensor([0.0, -1], dtype=uint8)`` is [0, 255]: the -1 is an int (the list read as
    floats made it -1.0, refused); a negative float still raises."""
    assert_same(*both(lambda m: m.tensor([[0.5, -4], [2.7, True]], dtype=m.uint8)))
    for data in ([-1.0], [-1, 2.5, -1.5]):
        refused = lambda m, data=data: m.tensor(data, dtype=m.uint8)  # noqa: E731
        assert_raises_as_torch(refused, RuntimeError, "overflow")


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_a_running_sum_into_bool_raises_as_in_pytorch(name):
    call = lambda m, x: getattr(m, name)(x, 0, dtype=m.bool)  # noqa: E731
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        call(torch, torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        call(sg, sg.tensor([1, 2]))
    for empty_or_0d in ([], 3):  # no kernel runs: no error
        assert_same(call(sg, sg.tensor(empty_or_0d)), call(torch, torch.tensor(empty_or_0d)))


@pytest.mark.parametrize("op", ["//", "%", "fmod", "trunc"])
def test_a_bool_divided_by_a_float_is_floating_and_an_empty_dividend_divides_by_nothing(op):
    """``False % bfloat16 0.0`` is NaN (it took the integer path and raised ZeroDivisionError);
    an empty int tensor over an int 0 is empty, as PyTorch's (it raised)."""
    calls = {
        "//": lambda m, x, y: x // y,
        "%": lambda m, x, y: x % y,
        "fmod": lambda m, x, y: m.fmod(x, y),
        "trunc": lambda m, x, y: m.div(x, y, rounding_mode="trunc"),
    }
    call = calls[op]
    ours, theirs = pair(np.array(0.0, dtype=sg.bfloat16))
    assert_same(call(sg, sg.tensor(False), ours), call(torch, torch.tensor(False), theirs), op)
    empty = both(lambda m: call(m, m.zeros(0, dtype=m.uint8), m.tensor([0], dtype=m.int16)))
    assert_same(*empty, op)


ADDC = ["addcmul", "addcdiv"]


THREE_DTYPES = [("int8", "bool", "int16"), ("uint8", "int32", "bfloat16")]
THREE_DTYPES += [("int8", "uint8", "int64")]


@pytest.mark.parametrize("name", ADDC)
@pytest.mark.parametrize("dtypes", THREE_DTYPES)
@pytest.mark.parametrize("shapes", [((), (), ()), ((2,), (), ()), ((), (2,), ())])
def test_addcmul_and_addcdiv_promote_the_three_together_as_in_pytorch(name, dtypes, shapes):
    """``int8 () + value * bool () * int16 ()`` is int16 with a float ``value`` (which used to
    make it float32), the 0-d operands promoted with each other first; ``value`` is read in
    the result's dtype (-3 * uint8 * int64 used to be computed in uint8)."""
    operands = [
        pair(np.full(shape, 2 + i).astype(dtype if dtype != "bfloat16" else sg.bfloat16))
        for i, (dtype, shape) in enumerate(zip(dtypes, shapes))
    ]
    for value in (-3, 0.5, -2.5):
        what = f"{name} {dtypes} {shapes} {value}"
        try:
            expected = getattr(torch, name)(*(t for _, t in operands), value=value)
        except RuntimeError:  # addcdiv of two integer tensors, or -2.5 into uint8
            with pytest.raises(RuntimeError):
                getattr(sg, name)(*(o for o, _ in operands), value=value)
            continue
        assert_same(getattr(sg, name)(*(o for o, _ in operands), value=value), expected, what)


def test_addcmul_and_addcdiv_refuse_what_pytorch_refuses():
    assert_raises_as_torch(lambda m: m.addcmul(m.ones(2), m.ones(2), 2), TypeError, "tensor2")
    assert_raises_as_torch(
        lambda m: m.addcmul(m.tensor([True]), m.tensor([True]), m.tensor([False])),
        NotImplementedError,
        "not implemented for 'Bool'",
    )
    assert_raises_as_torch(
        lambda m: m.addcdiv(m.ones(2), m.tensor([1]), m.tensor([2])),
        RuntimeError,
        "integer division",
    )
    bytes_ = [np.ones(2, np.uint8)] * 3
    assert_raises_as_torch(
        lambda m: m.addcmul(*map(m.tensor, bytes_), value=-0.5), RuntimeError, "overflow"
    )


@pytest.mark.parametrize("exponent", [300, 256, 255, 200, 127, -1, -129, 2**31])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
def test_an_int_exponent_is_checked_not_wrapped_as_in_pytorch(dtype, exponent):
    """``int8 ** -129`` computed ``int8 ** 127`` (the exponent wrapped) and ``uint8 ** 300``
    ``uint8 ** 44``; PyTorch refuses a negative exponent and one the dtype cannot hold."""
    ours, theirs = pair(np.array([0, 1, 2], dtype=dtype))
    try:
        expected = theirs**exponent
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match="negative integer powers|overflow"):
            ours**exponent
        assert "negative" in str(error) or "overflow" in str(error)
        return
    assert_same(ours**exponent, expected, f"{dtype} ** {exponent}")
