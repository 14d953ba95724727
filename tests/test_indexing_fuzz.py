"""Random combinations of indexing against PyTorch: ``x[index]``, ``x[index] = value``, the
indexed writes (``index_put_``, ``masked_fill_``, ``index_fill_``, ``index_copy_``) and
gradients through chains of them, on random shapes (0-size dims and 0-d too) and layouts
(transposed, sliced with a step, expanded). An index mixes ints, slices, None, Ellipsis, bool
masks and scalars, int tensors and lists (0-d too), out of range now and then. Both libraries
must raise or not (the same error class) and agree on the result's dtype, shape and values, on
whether it shares memory with ``x``, and on the gradients. Set ``SCRATCHGRAD_FUZZ_EXAMPLES``
to run more examples."""

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(250)


# ---- tensors ----------------------------------------------------------------------------------


@st.composite
def shapes(draw):
    """Up to three dims of sizes 0 to 3 (0-d too)."""
    return tuple(draw(st.lists(st.integers(0, 3), max_size=3)))


@st.composite
def layouts(draw, shape: tuple):
    """How ``x`` of ``shape`` is made from a contiguous base: ``(base_shape, make, repeats)``,
    ``make(base)`` being ``x`` in either library and ``repeats`` whether ``x`` repeats entries
    of its base (an expand of a dim of size 1)."""
    layout = draw(st.sampled_from(["contiguous", "transposed", "stepped", "expanded"]))
    if layout == "transposed" and len(shape) >= 2:
        order = tuple(reversed(range(len(shape))))
        return shape[::-1], lambda base: base.permute(*order), False
    if layout == "stepped" and shape:
        return (2 * shape[0], *shape[1:]), lambda base: base[::2], False
    if layout == "expanded" and shape:
        ones = draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
        small = tuple(1 if one else size for one, size in zip(ones, shape))
        return small, lambda base: base.expand(*shape), small != shape
    return shape, lambda base: base, False


def made(m, base_shape: tuple, dtype: str):
    """A base tensor of distinct entries (1, 2, 3, ...), so that a misplaced entry shows."""
    return (m.arange(math.prod(base_shape), dtype=getattr(m, dtype)) + 1).reshape(base_shape)


# ---- indices ----------------------------------------------------------------------------------
# An index is drawn as a spec, built in each library by ``build``: a list of items, each a
# tuple (kind, ...), and how they are given (a tuple, a list, or one item alone).


def _size(shape: tuple, dim: int) -> int:
    return shape[dim] if dim < len(shape) else 1


@st.composite
def int_arrays(draw, size: int):
    """Positions into a dim of ``size``: negative too, and now and then one out of range."""
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    low, high = (-size, size - 1) if size else (-1, 0)
    if draw(st.integers(0, 7)) == 0:
        low, high = -size - 2, size + 1
    values = draw(st.lists(st.integers(low, high), min_size=math.prod(shape)))
    return np.array(values[: math.prod(shape)], dtype=np.int64).reshape(shape)


@st.composite
def items(draw, shape: tuple, dim: int, left: int):
    """One index item at ``dim`` of ``shape`` (``left`` items follow it), and the dims it
    takes."""
    kinds = ["int", "int", "slice", "slice", "none", "ellipsis", "mask", "bool", "ints"]
    kind = draw(st.sampled_from(kinds))
    size = _size(shape, dim)
    if kind == "int":
        value = draw(st.integers(-size, size - 1) if size else st.integers(-1, 0))
        if draw(st.integers(0, 9)) == 0:
            value = draw(st.sampled_from([size, -size - 1]))
        return ("int", value, draw(st.sampled_from(["number", "number", "0-d tensor"]))), 1
    if kind == "slice":
        bound = st.none() | st.integers(-4, 4)
        step = draw(st.none() | st.integers(1, 3) | st.just(-1) | st.just(0))
        if step is not None and step <= 0 and draw(st.integers(0, 3)):
            step = None  # (mostly valid slices)
        return ("slice", draw(bound), draw(bound), step), 1
    if kind == "none":
        return ("none",), 0
    if kind == "ellipsis":
        return ("ellipsis",), max(len(shape) - dim - left, 0)
    if kind == "bool":
        return ("bool", draw(st.booleans()), draw(st.sampled_from(["number", "0-d tensor"]))), 0
    if kind == "mask":
        covered = draw(st.integers(1, max(min(2, len(shape) - dim), 1)))
        mask_shape = [_size(shape, dim + k) for k in range(covered)]
        if draw(st.integers(0, 9)) == 0:
            mask_shape[0] += 1  # a mask that does not fit
        size = math.prod(mask_shape)
        bits = draw(st.lists(st.booleans(), min_size=size, max_size=size))
        return ("mask", np.array(bits, dtype=bool).reshape(mask_shape)), covered
    form = draw(st.sampled_from(["tensor", "tensor", "list", "int32 tensor"]))
    return ("ints", draw(int_arrays(size)), form), 1


@st.composite
def indices(draw, shape: tuple):
    """An index spec ``(container, items)`` for a tensor of ``shape``."""
    count = draw(st.integers(1, 4))
    specs, dim = [], 0
    for i in range(count):
        spec, taken = draw(items(shape, dim, count - i - 1))
        if spec == ("ellipsis",) and ("ellipsis",) in specs:
            # NOTE: PyTorch reads the items after a second Ellipsis past the last dim, with
            # errors of no use to compare (tests/test_indexing.py has Ellipses that fit)
            continue
        specs.append(spec)
        dim += taken
    container = draw(st.sampled_from(["tuple", "tuple", "list"] + ["alone"] * (count == 1)))
    return container, specs


def build_item(m, spec):
    kind = spec[0]
    if kind == "int":
        return spec[1] if spec[2] == "number" else m.tensor(spec[1])
    if kind == "slice":
        return slice(*spec[1:])
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "bool":
        return spec[1] if spec[2] == "number" else m.tensor(spec[1])
    if kind == "mask":
        return m.tensor(spec[1])
    array, form = spec[1], spec[2]
    if form == "list":
        return array.tolist()
    return m.tensor(array, dtype=m.int32 if form == "int32 tensor" else m.int64)


def build(m, index):
    container, specs = index
    built = [build_item(m, spec) for spec in specs]
    if container == "alone":
        return built[0]
    return built if container == "list" else tuple(built)


# ---- running both libraries -------------------------------------------------------------------


def to_numpy(value) -> np.ndarray:
    return np.asarray(value.detach().numpy())


def assert_same(ours, theirs, what: str) -> None:
    """Raised alike, or equal in dtype, shape and values (tuples item by item)."""
    if raised_alike(ours, theirs, what):
        return
    if isinstance(theirs, tuple):
        assert len(ours) == len(theirs), what
        for mine, its in zip(ours, theirs):
            assert_same(mine, its, what)
        return
    if theirs is None:
        assert ours is None, f"{what}: {ours} where PyTorch gave None"
        return
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], what
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs), err_msg=what)


def both(call):
    """``call(m)``'s results in scratchgrad and in PyTorch (or the errors raised)."""
    return outcome(call, sg), outcome(call, torch)


# ---- x[index] ---------------------------------------------------------------------------------


@FUZZ
@given(st.data())
def test_getitem_as_pytorch(data):
    """The result of ``x[index]``, and whether it shares memory with ``x``: a write into the
    base after indexing must show in the result in both libraries or in neither; a write into
    the result must show in ``x`` in both or neither."""
    shape = data.draw(shapes())
    base_shape, make, repeats = data.draw(layouts(shape))
    dtype = data.draw(st.sampled_from(["float64", "int64", "float32"]))
    index = data.draw(indices(shape))

    def read_then_write_base(m):
        base = made(m, base_shape, dtype)
        out = make(base)[build(m, index)]
        before = out.clone()
        base.add_(100)
        return before, out

    what = f"x of shape {shape} from {base_shape}, x[{build(sg, index)!r}]"
    assert_same(*both(read_then_write_base), what)
    if repeats:
        # NOTE: README "What is different": writing into an expanded tensor that repeats
        # entries raises where PyTorch writes the shared memory
        return

    def write_result(m):
        base = made(m, base_shape, dtype)
        x = make(base)
        out = x[build(m, index)]
        out.fill_(-1)
        return x

    assert_same(*both(write_result), f"{what}.fill_(-1), then x")


# ---- x[index] = value -------------------------------------------------------------------------


@st.composite
def values(draw, target_shape: tuple | None):
    """A value to write: ``(kind, payload)`` built by ``build_value``: a Python number, a 0-d
    tensor, a tensor broadcastable to ``target_shape`` (leading dims dropped, some made 1,
    leading 1s added, now and then one that does not fit), of the tensor's dtype or another."""
    kind = draw(st.sampled_from(["number", "0-d", "tensor", "tensor"]))
    dtype = draw(st.sampled_from(["same", "same", "float32", "int64", "bool"]))
    if kind == "number":
        return ("number", draw(st.sampled_from([-3, 7, 2.5, True]))), dtype
    if kind == "0-d" or target_shape is None:
        return ("tensor", ()), dtype
    kept = list(target_shape[draw(st.integers(0, len(target_shape))) :])
    shape = [1 if size and draw(st.integers(0, 3)) == 0 else size for size in kept]
    shape = [1] * draw(st.integers(0, 1)) + shape
    if shape and draw(st.integers(0, 11)) == 0:
        shape[-1] += 1
    return ("tensor", tuple(shape)), dtype


def build_value(m, value, x_dtype: str):
    (kind, payload), dtype = value
    if kind == "number":
        return payload
    dtype = getattr(m, x_dtype if dtype == "same" else dtype)
    return (-(m.arange(math.prod(payload)) + 1)).reshape(payload).to(dtype)


@FUZZ
@given(st.data())
def test_setitem_as_pytorch(data):
    """``x[index] = value``: the written ``x`` and its base, or the same error and nothing
    changed."""
    shape = data.draw(shapes())
    base_shape, make, repeats = data.draw(layouts(shape))
    if repeats:
        return  # README "What is different": an expand that repeats entries refuses writes
    dtype = data.draw(st.sampled_from(["float64", "int64", "float32"]))
    index = data.draw(indices(shape))
    target = outcome(lambda m: made(m, base_shape, dtype)[build(m, index)], torch)
    value = data.draw(values(None if isinstance(target, Exception) else tuple(target.shape)))

    def write(m):
        base = made(m, base_shape, dtype)
        x = make(base)
        try:
            x[build(m, index)] = build_value(m, value, dtype)
        except Exception as error:  # noqa: BLE001
            unchanged = bool((base == made(m, base_shape, dtype)).all())
            return type(error)(f"{error} (unchanged: {unchanged})"), unchanged
        return x, base

    ours, theirs = both(write)
    what = f"x of shape {shape}, x[{build(sg, index)!r}] = {build_value(sg, value, dtype)!r}"
    if isinstance(theirs[0], Exception):
        assert isinstance(ours[0], Exception), f"{what}: PyTorch raised {theirs[0]!r}, ours wrote"
        assert ours[1], f"{what}: a refused write changed x"
        if "shape mismatch" in str(theirs[0]) and "dtypes match" in str(ours[0]):
            return  # NOTE: both refuse; PyTorch checks the shapes before the dtypes, ours after
        assert isinstance(ours[0], type(theirs[0])), f"{what}: {ours[0]!r}, PyTorch {theirs[0]!r}"
        return
    assert_same(ours, theirs, what)


# ---- index_put_, masked_fill_, index_fill_, index_copy_ ---------------------------------------


@st.composite
def index_puts(draw, shape: tuple):
    """``(indices, accumulate)`` for ``index_put_``: int tensors (broadcasting, repeated
    positions likely) or one bool mask, for the leading dims."""
    if shape and draw(st.integers(0, 4)) == 0:
        covered = draw(st.integers(1, len(shape)))
        bits = draw(st.lists(st.booleans(), min_size=math.prod(shape[:covered])))
        mask = np.array(bits[: math.prod(shape[:covered])], dtype=bool).reshape(shape[:covered])
        return ("mask", mask), draw(st.booleans())
    count = draw(st.integers(1, max(len(shape), 1)))
    arrays = [draw(int_arrays(_size(shape, dim))) for dim in range(count)]
    return ("ints", arrays), draw(st.booleans())


@FUZZ
@given(st.data())
def test_indexed_writes_as_pytorch(data):
    """``index_put_`` (with ``accumulate``), ``masked_fill_``, ``index_fill_`` and
    ``index_copy_`` on a tensor of a random layout: the written tensor, or the same error."""
    shape = data.draw(shapes())
    base_shape, make, repeats = data.draw(layouts(shape))
    if repeats:
        return  # README "What is different": an expand that repeats entries refuses writes
    dtype = data.draw(st.sampled_from(["float64", "int64", "float32"]))
    ops = ["index_put_", "index_put", "masked_fill_", "index_fill_", "index_copy_"]
    op = data.draw(st.sampled_from(ops))
    put_shape = data.draw(st.sampled_from(["full", "0-d", "row"]))
    ndim = max(len(shape), 1)
    dim = data.draw(st.integers(-ndim - 1, ndim))
    positions = data.draw(int_arrays(_size(shape, dim % ndim)).filter(lambda a: a.ndim <= 1))
    puts, accumulate = data.draw(index_puts(shape))
    mask_shape = data.draw(st.sampled_from([shape, shape[1:], shape[-1:]]))
    bits = np.array(data.draw(st.lists(st.booleans(), min_size=math.prod(mask_shape))), bool)
    value = data.draw(values(None))
    source_shape = list(shape) or [1]
    source_shape[dim % ndim] = positions.size
    source_shape = source_shape[: len(shape)]

    def write(m):
        x = make(made(m, base_shape, dtype))
        if op.startswith("index_put"):  # values of the indexed shape, 0-d, or its last dims
            kind, arrays = puts
            given = (m.tensor(arrays),) if kind == "mask" else tuple(m.tensor(a) for a in arrays)
            target = {"full": x[given].shape, "0-d": (), "row": x[given].shape[1:]}[put_shape]
            source = (-(m.arange(math.prod(target)) + 1)).reshape(target).to(x.dtype)
            return getattr(x, op)(given, source, accumulate=accumulate)
        if op == "masked_fill_":
            mask = m.tensor(bits[: math.prod(mask_shape)].reshape(mask_shape))
            return x.masked_fill_(mask, build_value(m, value, dtype))
        if op == "index_fill_":
            return x.index_fill_(dim, m.tensor(positions), build_value(m, value, dtype))
        source = -(m.arange(math.prod(source_shape)) + 1).reshape(source_shape).to(x.dtype)
        return x.index_copy_(dim, m.tensor(positions), source)

    what = f"{op} on x of shape {shape}, dim {dim}, {puts if 'put' in op else positions}"
    ours, theirs = both(write)
    if op in ("index_fill_", "index_copy_") and 0 in shape and isinstance(ours, IndexError):
        # NOTE: PyTorch checks no index into an empty tensor (or fails to make a view of it:
        # 'setStorage: ... out of bounds for storage of size 0'); ours checks them
        return
    assert_same(ours, theirs, what)


# ---- gradients --------------------------------------------------------------------------------


@FUZZ
@given(st.data())
def test_gradients_through_indexing_as_pytorch(data):
    """``x`` (float64, requiring grad) through ``x[index]``, then maybe a write into a clone
    (an in-place op on a view of it, setitem or ``index_put_`` of a tensor that requires grad),
    then a weighted sum's backward: the same ``x.grad`` and value's grad, or the same error."""
    shape = data.draw(shapes())
    index = data.draw(indices(shape))
    then = data.draw(
        st.sampled_from(["nothing", "view mul_", "setitem", "index_put_", "leaf view mul_"])
    )
    read = outcome(lambda m: made(m, shape, "float64")[build(m, index)], torch)
    inner_shape = shape if isinstance(read, Exception) else tuple(read.shape)
    inner = data.draw(indices(inner_shape))
    written = outcome(lambda m: made(m, inner_shape, "float64")[build(m, inner)], torch)
    value_shape = () if isinstance(written, Exception) else tuple(written.shape)
    value_shape = value_shape[data.draw(st.integers(0, len(value_shape))) :]
    (kind, arrays), accumulate = data.draw(index_puts(inner_shape))

    def differentiate(m):
        x = made(m, shape, "float64").requires_grad_()
        value = (m.arange(math.prod(value_shape), dtype=m.float64) + 0.5).reshape(value_shape)
        value.requires_grad_()
        if then == "leaf view mul_":
            x[build(m, index)].mul_(2)
        y = x[build(m, index)]
        if then == "view mul_":
            y = y.clone()
            y[build(m, inner)].mul_(3)
        elif then == "setitem":
            y = y.clone()
            y[build(m, inner)] = value
        elif then == "index_put_":  # a value of the indexed shape
            given = (m.tensor(arrays),) if kind == "mask" else tuple(m.tensor(a) for a in arrays)
            target = tuple(y[given].shape)
            value = (m.arange(math.prod(target), dtype=m.float64) + 0.5).reshape(target)
            value.requires_grad_()
            y = y.clone().index_put_(given, value * 2, accumulate=accumulate)
        weights = m.arange(y.numel(), dtype=m.float64).reshape(y.shape) + 1
        (y * weights).sum().backward()
        return y, x.grad, value.grad

    what = f"x of shape {shape}, x[{build(sg, index)!r}], then {then} at {build(sg, inner)!r}"
    assert_same(*both(differentiate), what)
