"""``index_fill``, ``index_copy`` (their in-place and function forms) and ``take_along_dim``
against PyTorch: values and gradients for random shapes, dims and indices (hypothesis), repeated
indices, 0-d tensors, and the errors, raised before anything changes. The op table's rows
(``tests/op_table.py``) add gradcheck, gradgradcheck, jit and every dim and index."""

import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from oracle import check_against_torch

import scratchgrad as sg


@st.composite
def _cases(draw):
    """A shape, a dim of it, indices into that dim (repeats possible) and a seed."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    index = draw(st.lists(st.integers(0, shape[dim] - 1), max_size=5))
    return shape, dim, index, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@settings(max_examples=25, deadline=None)
@given(case=_cases())
def test_index_fill_matches_torch_with_gradients(case, dtype):
    """A repeated position takes the value's gradient once."""
    shape, dim, index, seed = case
    arrays = [np.random.default_rng(seed).standard_normal(shape), np.array(1.5)]

    def call(m):
        return lambda x, v: m.index_fill(x, dim, m.tensor(index, dtype=m.int64), v)

    check_against_torch(call(sg), call(torch), arrays, dtype, what="index_fill", seed=seed)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@settings(max_examples=25, deadline=None)
@given(case=_cases())
def test_index_copy_matches_torch_with_gradients(case, dtype):
    """Repeated positions too: the last slice stays, and every repeat's slice gets the
    gradient there, as PyTorch's."""
    shape, dim, index, seed = case
    source_shape = list(shape)
    source_shape[dim] = len(index)
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape), rng.standard_normal(source_shape)]

    def call(m):
        return lambda x, y: m.index_copy(x, dim, m.tensor(index, dtype=m.int64), y)

    check_against_torch(call(sg), call(torch), arrays, dtype, what="index_copy", seed=seed)


@st.composite
def _take_cases(draw):
    """Broadcastable shapes of the same rank, apart from the dim, and indices of any value
    (PyTorch counts them around the dim's size)."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = [draw(st.sampled_from([1, n])) for n in shape]
    index_shape[dim] = draw(st.integers(0, 4))
    if draw(st.booleans()):  # the tensor broadcast against the indices too
        shape = [
            1 if i > 1 and d != dim % len(shape) else n
            for d, (n, i) in enumerate(zip(shape, index_shape))
        ]
    return tuple(shape), dim, tuple(index_shape), draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@settings(max_examples=25, deadline=None)
@given(case=_take_cases(), flat=st.booleans())
def test_take_along_dim_matches_torch_with_gradients(case, dtype, flat):
    shape, dim, index_shape, seed = case
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape)) if flat else shape[dim]
    index = rng.integers(0 if flat else -2 * size, size if flat else 2 * size, index_shape)
    arrays = [rng.standard_normal(shape)]

    def call(m):
        return lambda x: m.take_along_dim(x, m.tensor(index), None if flat else dim)

    check_against_torch(call(sg), call(torch), arrays, dtype, what="take_along_dim", seed=seed)


def test_the_in_place_forms_match_torch_and_a_0d_tensor_acts_as_a_vector():
    results = []
    for m in (sg, torch):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
        y = x * 1
        assert y.index_fill_(1, m.tensor([1]), -1.0) is y
        assert y.index_copy_(0, m.tensor([0]), m.tensor([[7.0, 8.0]], dtype=m.float64)) is y
        (y * m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64)).sum().backward()
        scalar = m.tensor(3.0)
        results.append(
            (
                y.detach().numpy(),
                x.grad.numpy(),
                scalar.index_fill(0, m.tensor([-1]), 5.0).numpy(),
                scalar.index_copy(0, m.tensor(0), m.tensor([6.0])).numpy(),
                m.tensor([1, 2]).index_fill(0, m.tensor(1), 2.7).numpy(),  # cast to int64
            )
        )
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)
        assert ours.shape == theirs.shape


def _raised(call):
    try:
        call()
    except (RuntimeError, IndexError, TypeError) as error:
        return type(error)
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.index_fill(1, m.tensor([4]), 1.0),
        lambda m, x: x.index_fill(1, m.tensor([-5]), 1.0),
        lambda m, x: x.index_fill(1, m.tensor([[1]]), 1.0),
        lambda m, x: x.index_fill(1, m.tensor([1], dtype=m.int32), 1.0),
        lambda m, x: x.index_fill(1, m.tensor([1]), m.tensor([1.0])),
        lambda m, x: x.index_fill(2, m.tensor([1]), 1.0),
        lambda m, x: x.index_copy(1, m.tensor([0, 4]), m.ones(3, 2)),
        lambda m, x: x.index_copy(1, m.tensor([0, -1]), m.ones(3, 2)),
        lambda m, x: x.index_copy(1, m.tensor([0, 1]), m.ones(3, 3)),
        lambda m, x: x.index_copy(1, m.tensor([0, 1]), m.ones(2, 2)),
        lambda m, x: x.index_copy(1, m.tensor([0, 1]), m.ones(2)),
        lambda m, x: x.index_copy(1, m.tensor([0, 1], dtype=m.int32), m.ones(3, 2)),
        lambda m, x: x.index_copy(1, m.tensor([[0, 1]]), m.ones(3, 2)),
        lambda m, x: x.index_copy(1, m.tensor([0, 1]), m.ones(3, 2, dtype=m.float64)),
        lambda m, x: m.take_along_dim(x, m.tensor([[1]], dtype=m.int32), 1),
        lambda m, x: m.take_along_dim(x, m.tensor([1]), 1),
        lambda m, x: m.take_along_dim(x, m.tensor([[1], [0]]), 1),
        lambda m, x: m.take_along_dim(x, m.tensor([[1]]), 2),
        lambda m, x: m.take_along_dim(x, m.tensor([12])),
        lambda m, x: m.take_along_dim(x, m.tensor([-1])),
    ],
)
def test_bad_arguments_raise_torchs_errors(call):
    ours = sg.zeros(3, 4)
    raised = _raised(lambda: call(sg, ours))
    assert raised is not None and raised is _raised(lambda: call(torch, torch.zeros(3, 4)))
    raised = _raised(lambda: call(sg, ours) if False else ours.index_fill_)
    assert ours.tolist() == [[0.0] * 4] * 3


WRITES = {
    "masked_fill": lambda lib, x, v: x.masked_fill(lib.tensor([True, False, False]), v),
    "masked_fill_": lambda lib, x, v: x.masked_fill_(lib.tensor([False, False, False]), v),
    "index_fill": lambda lib, x, v: x.index_fill(0, lib.tensor([0]), v),
    "index_fill_": lambda lib, x, v: x.index_fill_(0, lib.tensor([], dtype=lib.int64), v),
    "scatter": lambda lib, x, v: x.scatter(0, lib.tensor([1]), v),
    "scatter_": lambda lib, x, v: x.scatter_(0, lib.tensor([1]), v),
    # setitem and where check a float only against float32 and complex64, as PyTorch's
    "setitem": lambda lib, x, v: _set(x, 0, v),
    "setitem_mask": lambda lib, x, v: _set(x, lib.tensor([True, False, True]), v),
    "where": lambda lib, x, v: lib.where(lib.tensor([True, False, False]), x, v),
    "where_number_first": lambda lib, x, v: lib.where(lib.tensor([True, False, False]), v, x),
}


def _set(x, index, value):
    x[index] = value
    return x


@pytest.mark.parametrize("name", WRITES)
@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("float16", 70000.0), ("float16", 70000), ("float16", -65520.0), ("float16", 65504.0),
        ("bfloat16", 1e39), ("float32", 1e39), ("float32", -1e39), ("float32", 3.4e38),
        ("complex64", 1e39), ("float16", float("inf")), ("float32", -float("inf")),
        ("float32", float("nan")), ("int8", 300.5), ("float64", 1e308),
    ],
)  # fmt: skip
def test_a_number_past_the_dtypes_largest_is_refused_as_pytorch(name, dtype, value):
    """masked_fill, index_fill and scatter of 70000.0 into float16 (1e39 into float32) wrote
    inf, even where the mask or index reaches nothing; PyTorch raises whatever the size (inf
    and nan pass), and a refused in-place call leaves the tensor as it was. setitem and where
    wrote 1e39 into float32 too; PyTorch raises there, and takes it into float16 as inf."""
    theirs = torch.zeros(3, dtype=getattr(torch, dtype))
    try:
        expected = WRITES[name](torch, theirs, value)
    except RuntimeError:
        ours = sg.zeros(3, dtype=getattr(sg, dtype))
        with pytest.raises(RuntimeError, match=f"type {dtype} without overflow"):
            WRITES[name](sg, ours, value)
        assert ours.tolist() == [0, 0, 0]
        return
    got = WRITES[name](sg, sg.zeros(3, dtype=getattr(sg, dtype)), value)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.double().numpy(), expected.double().numpy())


TENSOR_WRITES = {
    **WRITES,
    "fill_": lambda lib, x, v: x.fill_(v),
    "setitem_mask_of_rows": lambda lib, x, v: _set(
        x.view(3, 1), lib.tensor([True, False, True]), v
    ),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's casts of nan and inf)
@pytest.mark.parametrize("name", TENSOR_WRITES)
@pytest.mark.parametrize(
    ("dtype", "value", "value_dtype"),
    [
        ("float16", 1e6, "float32"), ("float16", 65520.0, "float64"), ("float16", 2**40, "int64"),
        ("float16", -300.0, "float32"), ("float16", 1e6, "bfloat16"),
        ("float16", -math.inf, "float32"), ("bfloat16", 1e39, "float64"),
        ("bfloat16", 1e6, "float32"), ("float32", 1e39, "float64"),
        ("int8", 1e6, "float32"), ("int8", -300.0, "float64"), ("int8", 300, "int32"),
        ("int8", 200, "uint8"), ("int8", 2.5, "float32"), ("uint8", -1, "int64"),
        ("uint8", -1.5, "float32"), ("uint8", math.nan, "float32"), ("int32", math.inf, "float32"),
        ("int32", 1e6, "float32"), ("bool", 1e6, "float32"),
    ],
)  # fmt: skip
def test_a_0d_tensor_past_the_dtypes_range_is_refused_as_pytorch(name, dtype, value, value_dtype):
    """masked_fill, index_fill and a mask's setitem took a 0-d tensor's number as a cast would
    (1e6 into float16 as inf, into int8 as 64); PyTorch reads it as a number and checks it as
    one. fill_ of a 0-d tensor raised for int8 and bfloat16; PyTorch copies it (1e6 wraps)."""
    theirs = torch.zeros(3, dtype=getattr(torch, dtype))
    try:
        expected = TENSOR_WRITES[name](
            torch, theirs, torch.tensor(value).to(getattr(torch, value_dtype))
        )
    except RuntimeError as error:
        ours = sg.zeros(3, dtype=getattr(sg, dtype))
        match = f"type {dtype} without overflow" if "without overflow" in str(error) else None
        with pytest.raises(RuntimeError, match=match):
            TENSOR_WRITES[name](sg, ours, sg.tensor(value).to(getattr(sg, value_dtype)))
        assert ours.tolist() == [0, 0, 0]
        return
    got = TENSOR_WRITES[name](
        sg, sg.zeros(3, dtype=getattr(sg, dtype)), sg.tensor(value).to(getattr(sg, value_dtype))
    )
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.double().numpy(), expected.double().numpy())


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.zeros(2).masked_fill(lib.tensor([True, False]), 1 + 2j),
        lambda lib: lib.zeros(2, dtype=lib.int8).masked_fill(lib.tensor([False, False]), 1 + 2j),
        lambda lib: lib.zeros(2).masked_fill(lib.tensor([True, False]), lib.tensor(1 + 2j)),
        lambda lib: lib.zeros(2).masked_fill(lib.tensor([True, False]), 3 + 0j),
        lambda lib: lib.zeros(2).fill_(1 + 2j),
        lambda lib: lib.zeros(2).fill_(3 + 0j),
        lambda lib: lib.zeros(2).index_fill(0, lib.tensor([0]), 3 + 0j),
        lambda lib: lib.zeros(2).index_fill(0, lib.tensor([0]), lib.tensor(1 + 2j)),
        lambda lib: lib.zeros(2, dtype=lib.complex64).index_fill(0, lib.tensor([0]), 1 + 2j),
        lambda lib: lib.zeros(2, 2, dtype=lib.float16).fill_diagonal_(70000.0),
        lambda lib: lib.zeros(2, 2).fill_diagonal_(1 + 2j),
    ],
)
def test_complex_numbers_and_fill_diagonal_are_checked_as_pytorch(call):
    """A complex number with an imaginary part written into a real tensor wrote its real part
    (index_fill: any complex number); fill_ of 3+0j raised a TypeError; fill_diagonal_ wrote
    70000.0 into float16 as inf. PyTorch raises for all but the real complex numbers."""
    try:
        expected = call(torch)
    except RuntimeError as error:
        message = str(error).split(" without")[0].split("type")[0]
        with pytest.raises(RuntimeError, match=re.escape(message)):
            call(sg)
        return
    np.testing.assert_array_equal(call(sg).numpy(), expected.numpy())


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_setitem_through_a_mask_in_a_graph_checks_as_setitem(dtype):
    """Recorded as a masked_fill, x[mask] = -1e39 must not take masked_fill's check: PyTorch's
    setitem writes -inf into float16 (raises for float32)."""
    results = []
    for lib in (sg, torch):
        x = lib.zeros(3, dtype=getattr(lib, dtype), requires_grad=True).clone()
        try:
            x[lib.tensor([True, False, True])] = -1e39
            results.append(x.tolist())
        except RuntimeError as error:
            results.append(str(error).split(" without")[0].split("type")[0])
    assert results[0] == results[1]


@pytest.mark.parametrize("dtype", ["float16", "int8"])
@pytest.mark.parametrize(
    "values", [[1.0, math.nan, 1e6], [math.nan] * 3, [1.0, -300.0, 5.0], [1.0, 2.0, 3.0]]
)
@pytest.mark.parametrize("name", ["masked_fill", "index_fill"])
def test_batched_0d_values_are_each_checked_as_pytorch(name, dtype, values):
    """Under vmap each member's 0-d value is checked as a number, as PyTorch's vmap does; the
    check read the value with item(), which a batched tensor refuses."""
    outcomes = []
    for lib in (sg, torch):

        def write(x, v, lib=lib):
            if name == "masked_fill":
                return x.masked_fill(x == 0, v)
            return x.index_fill(0, lib.tensor([1]), v)

        x = lib.zeros(3, 2, dtype=getattr(lib, dtype))
        try:
            outcomes.append(lib.func.vmap(write)(x, lib.tensor(values)).double().numpy())
        except RuntimeError as error:
            outcomes.append("without overflow" in str(error))
    if isinstance(outcomes[1], bool):
        assert outcomes == [True, True]
    else:
        np.testing.assert_array_equal(*outcomes)


def test_a_jitted_step_checks_each_calls_0d_value():
    """A replay checks the 0-d value of each call, as eager (and PyTorch's) calls do; the
    check made only while recording would let a replay write 1e6 into float16 as inf."""

    def fill(x, value):
        return x.half().masked_fill(x > -10, value)

    jitted = sg.jit(fill)
    for value in [1.0, 2.0, 3.0]:
        assert jitted(sg.zeros(3), sg.tensor(value)).tolist() == [value] * 3
    with pytest.raises(RuntimeError, match="type float16 without overflow"):
        jitted(sg.zeros(3), sg.tensor(1e6))
    with pytest.raises(RuntimeError, match="c10::Half without overflow"):
        fill(torch.zeros(3), torch.tensor(1e6))
    assert sum(len(r) for r in jitted.recordings.values()) == 1
