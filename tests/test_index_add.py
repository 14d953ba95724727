"""``index_add``, ``index_add_`` and ``scratchgrad.index_add`` against PyTorch: values and
gradients for random shapes, dims and repeated indices (hypothesis), the in-place form's version
count and graph, and the errors, each raised before anything changes. The op table's rows
(``tests/op_table.py``) add gradcheck, gradgradcheck, jit, vmap and every dim and index."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from oracle import assert_close, check_against_torch

import scratchgrad as sg


@st.composite
def _cases(draw):
    """A shape, a dim of it (maybe negative), an index into that dim (repeats likely, empty
    possible) and alpha."""
    shape = draw(array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[dim]
    index = draw(st.lists(st.integers(0, size - 1), max_size=6))
    alpha = draw(st.sampled_from([1, 2.5, -0.5]))
    return shape, dim, index, alpha


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@settings(max_examples=30, deadline=None)
@given(case=_cases(), seed=st.integers(0, 2**32 - 1))
def test_index_add_matches_torch_with_gradients(case, seed, dtype):
    shape, dim, index, alpha = case
    source_shape = list(shape)
    source_shape[dim] = len(index)
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape), rng.standard_normal(source_shape)]

    def call(m):
        return lambda x, y: m.index_add(x, dim, m.tensor(index, dtype=m.int64), y, alpha=alpha)

    check_against_torch(call(sg), call(torch), arrays, dtype, what="index_add", seed=seed)


@settings(max_examples=30, deadline=None)
@given(case=_cases())
def test_index_add_adds_each_source_slice_at_its_position(case):
    """The definition, slice by slice in Python: a repeated position adds up."""
    shape, dim, index, alpha = case
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    slices = (len(index), *np.delete(shape, dim))
    source = np.moveaxis(np.arange(np.prod(slices)).reshape(slices) * 0.5 - 3, 0, dim)
    expected = np.moveaxis(x.copy(), dim, 0)
    for i, position in enumerate(index):
        expected[position] += alpha * np.moveaxis(source, dim, 0)[i]
    out = sg.tensor(x).index_add(
        dim, sg.tensor(index, dtype=sg.int64), sg.tensor(source), alpha=alpha
    )
    np.testing.assert_array_equal(out.numpy(), np.moveaxis(expected, 0, dim))


def test_index_add_in_place_matches_torch_bumps_the_version_and_keeps_the_graph():
    index = [2, 0, 2]
    out = []
    for m in (sg, torch):
        x = m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=m.float64, requires_grad=True)
        source = m.tensor([[1.0, -1.0], [0.5, 2.0], [3.0, 0.0]], dtype=m.float64)
        source.requires_grad_()
        y = x * 2
        version = y._version
        assert y.index_add_(0, m.tensor(index), source, alpha=-2) is y
        assert y._version == version + 1
        (y * m.arange(6.0, dtype=m.float64).reshape(3, 2)).sum().backward()
        out.append((y, x.grad, source.grad))
    for ours, theirs in zip(*out):
        assert_close(ours, theirs, what="index_add_")


def test_index_add_in_place_on_a_view_changes_its_base_as_torch():
    results = []
    for m in (sg, torch):
        x = m.zeros(2, 3, dtype=m.float64, requires_grad=True)
        source = m.ones(1, 2, dtype=m.float64, requires_grad=True)
        base = x + 1
        base[1:].index_add_(1, m.tensor([2, 0]), source * 3)  # a view: the base's last row
        (base * base).sum().backward()
        results.append((base, x.grad, source.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, what="index_add_ through a view")


def test_index_add_on_integers_and_int32_indices_match_torch():
    for dtype in ("int64", "int32"):
        x = [[1, 2], [3, 4]]
        ours = sg.tensor(x).index_add(
            1, sg.tensor([1, 1], dtype=getattr(sg, dtype)), sg.tensor(x), alpha=3
        )
        theirs = torch.tensor(x).index_add(
            1, torch.tensor([1, 1], dtype=getattr(torch, dtype)), torch.tensor(x), alpha=3
        )
        assert ours.tolist() == theirs.tolist() and str(ours.dtype).split(".")[-1] == "int64"


def test_index_add_of_bools_ors_them_as_torch():
    x, index, source = [[False, True, False]] * 2, [2, 0, 2], [[True, False, True]] * 2
    for alpha in (1, 2):
        ours = sg.tensor(x).index_add(1, sg.tensor(index), sg.tensor(source), alpha=alpha)
        theirs = torch.tensor(x).index_add(
            1, torch.tensor(index), torch.tensor(source), alpha=alpha
        )
        assert ours.tolist() == theirs.tolist() and ours.dtype == sg.bool


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_sixteen_bit_index_add_and_scatter_add_sum_in_float32_as_torch(dtype):
    """A 16-bit index_add (dim 0 or last, alpha 1: a mixture of experts adding each expert's
    tokens back) and scatter_add add up in float32 and round once, as PyTorch's CPU kernels:
    bit for bit, where adding in 16 bits one entry after another differs in the last bits."""
    rng = np.random.default_rng(5)
    x, source = rng.standard_normal((3, 4)) * 3, rng.standard_normal((64, 4))
    index = rng.integers(0, 3, 64)
    results = []
    for m in (sg, torch):
        x_, source_ = (m.tensor(a).to(getattr(m, dtype)) for a in (x, source))
        rows = x_.index_add(0, m.tensor(index), source_)
        columns = x_.T.index_add(1, m.tensor(index), source_.T)
        scattered = x_.scatter_add(0, m.tensor(index)[:, None].expand(64, 4), source_)
        results.append([t.float().numpy() for t in (rows, columns, scattered)])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def test_index_add_on_a_leaf_that_requires_grad_is_refused_as_torch():
    x = sg.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used"):
        torch.zeros(3, requires_grad=True).index_add_(0, torch.tensor([1]), torch.ones(1))
    with pytest.raises(
        RuntimeError, match="index_add_: a leaf Variable that requires grad is being used"
    ):
        x.index_add_(0, sg.tensor([1]), sg.ones(1))
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0
    with sg.no_grad():
        x.index_add_(0, sg.tensor([1]), sg.ones(1))
    assert x.tolist() == [0.0, 1.0, 0.0] and x.is_leaf


BAD = {  # (dim, index, source) for a (3, 4) float32 tensor; PyTorch's error type and words
    "index out of range": (0, [0, 3], (2, 4), RuntimeError, "index 3 is out of bounds for dim"),
    "negative index": (1, [-1], (3, 1), RuntimeError, "index -1 is out of bounds for dimension 1"),
    "index not a vector": (0, [[0, 1]], (2, 4), IndexError, "supposed to be a vector"),
    "float index": (0, [0.0, 1.0], (2, 4), RuntimeError, "Expected dtype int32/int64"),
    "source's other dims": (0, [0, 1], (2, 3), RuntimeError, "source tensor shape must match"),
    "source's dims": (0, [0, 1], (2, 4, 1), RuntimeError, "source tensor shape must match"),
    "index count": (0, [0, 1], (3, 4), RuntimeError, r"Number of indices \(2\) should be equal"),
    "dim out of range": (2, [0], (1, 4), IndexError, "Dimension out of range"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_arguments_raise_torchs_error_and_change_nothing(case):
    dim, index, source_shape, error, words = BAD[case]
    with pytest.raises(error, match=words):
        torch.zeros(3, 4).index_add_(dim, torch.tensor(index), torch.ones(source_shape))
    x = sg.zeros(3, 4)
    with pytest.raises(error, match=words) as info:
        x.index_add_(dim, sg.tensor(index), sg.ones(source_shape))
    assert case == "dim out of range" or "index_add_()" in str(info.value)  # names the op
    assert x.tolist() == np.zeros((3, 4)).tolist() and x._version == 0
    with pytest.raises(error, match=words):
        sg.index_add(x, dim, sg.tensor(index), sg.ones(source_shape))


def test_a_vectors_index_out_of_range_is_an_index_error_as_torch():
    """PyTorch's 1-D kernel raises IndexError, its N-D one RuntimeError: both followed."""
    for m in (sg, torch):
        with pytest.raises(IndexError):
            m.zeros(3).index_add(0, m.tensor([3]), m.ones(1))
        with pytest.raises(IndexError):
            m.zeros(()).index_add(0, m.tensor([-1]), m.ones(()))


def test_source_dtype_and_argument_types_are_checked():
    with pytest.raises(RuntimeError, match="same scalar type"):
        torch.zeros(3).index_add(0, torch.tensor([1]), torch.ones(1, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"self \(float32\) and source \(float64\)"):
        sg.zeros(3).index_add(0, sg.tensor([1]), sg.ones(1, dtype=sg.float64))
    with pytest.raises(TypeError, match="argument 'index' must be Tensor, not list"):
        sg.zeros(3).index_add(0, [1], sg.ones(1))
    with pytest.raises(TypeError, match="argument 'input' .* must be Tensor, not list"):
        sg.index_add([0.0], 0, sg.tensor([0]), sg.ones(1))


def test_a_jitted_index_add_checks_each_calls_indices():
    step = sg.jit(lambda x, i: x.index_add(0, i, sg.ones(2)))
    for index in ([0, 1], [1, 1], [2, 0]):  # eager, two recordings, a replay
        assert step(sg.zeros(3), sg.tensor(index)).tolist() == (
            torch.zeros(3).index_add(0, torch.tensor(index), torch.ones(2)).tolist()
        )
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        step(sg.zeros(3), sg.tensor([0, 3]))
