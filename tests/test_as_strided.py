"""``as_strided`` (tensor.py, ops/movement.py's AsStrided) against PyTorch's: views of a
tensor's storage and of a view's (whose default offset is its own), their values, strides,
offsets and shared memory; the gradient (overlapping windows add up, storage outside the input
gets none, an input that overlaps itself shares each place's gradient); ``as_strided_``; writes
(through a view that does not overlap itself as PyTorch's, refused where it does); and the
errors. The op table rows ``as_strided_*`` add random shapes, gradcheck, gradgradcheck and jit."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

LIBS = {"scratchgrad": sg, "torch": torch}

# (how the input is made from a flat arange of 12, the as_strided arguments)
VIEWS = {
    "windows": (lambda t: t, ((10, 3), (1, 1))),
    "matrix_rows_twice": (lambda t: t.view(3, 4), ((2, 4), (0, 1))),
    "of_a_slice": (lambda t: t[2:], ((3, 2), (2, 1))),
    "of_a_slice_offset_given": (lambda t: t[2:], ((3, 2), (2, 1), 0)),
    "of_a_transpose": (lambda t: t.view(3, 4).t(), ((4, 3), (1, 4), 0)),
    "of_a_column": (lambda t: t.view(3, 4)[:, 1], ((2, 2), (4, 1))),
    "of_an_expand": (lambda t: t[:4].expand(2, 4), ((3,), (2,), 1)),
    "zero_dims": (lambda t: t, ((), (), 11)),
    "empty": (lambda t: t, ((0, 5), (1, 1), 12)),
    "keyword_offset": (lambda t: t.view(2, 6), ((2, 2), (6, 1))),
}


def _made(m, name, dtype):
    make, args = VIEWS[name]
    base = m.arange(12, dtype=getattr(m, dtype))
    return base, make(base), args


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", VIEWS)
def test_values_strides_and_offset_match_torch(name, dtype):
    outs = {}
    for lib, m in LIBS.items():
        _, x, args = _made(m, name, dtype)
        outs[lib] = x.as_strided(*args)
        assert m.as_strided(x, *args).tolist() == outs[lib].tolist()
    ours, theirs = outs["scratchgrad"], outs["torch"]
    assert_close(ours, theirs, dtype, name)
    assert ours.stride() == theirs.stride(), name
    if ours.numel():  # (an empty result shares no memory: scratchgrad makes it no view)
        assert ours.storage_offset() == theirs.storage_offset(), name
    assert ours.is_contiguous() == theirs.is_contiguous(), name


def test_a_detached_view_counts_from_its_bases_storage():
    """``detach`` and ``.data`` of a view keep its offset, so as_strided reads the base's
    memory from there (or from a given offset), as PyTorch's."""
    for detached in (lambda t: t[2:].detach(), lambda t: t.view(3, 4)[1].data):
        outs = [detached(m.arange(12.0)) for m in (sg, torch)]
        for args in [((3, 2), (2, 1)), ((2, 2), (1, 3), 0)]:
            ours, theirs = (x.as_strided(*args) for x in outs)
            assert ours.tolist() == theirs.tolist()
            assert ours.storage_offset() == theirs.storage_offset()


def test_storage_offset_as_a_keyword_and_the_view_shares_memory():
    for m in (sg, torch):
        base = m.zeros(6)
        view = base.as_strided((2, 2), (1, 2), storage_offset=1)
        view[1, 0] = 5.0  # no overlap: a write reaches the storage, as PyTorch's
        base[4] = 7.0
        assert base.tolist() == [0, 0, 5, 0, 7, 0], m.__name__
        assert view.tolist() == [[0, 0], [5, 7]], m.__name__


def _weights(shape):
    return np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", [n for n in VIEWS if n != "of_an_expand"])
def test_gradient_matches_torch(name, dtype):
    """Through ``x * 1`` (a tensor in the graph, not a leaf) and the view the row makes."""
    grads = {}
    for lib, m in LIBS.items():
        leaf = m.arange(12, dtype=getattr(m, dtype)).requires_grad_()
        make, args = VIEWS[name]
        out = make(leaf * 1).as_strided(*args)
        (out * m.tensor(_weights(out.shape), dtype=out.dtype)).sum().backward()
        grads[lib] = leaf.grad
    assert_close(grads["scratchgrad"], grads["torch"], dtype, name)


def test_gradient_of_a_view_leaves_storage_outside_the_input_at_zero():
    """x[2:] read from place 0 of the storage: PyTorch's gradient reaches only x[2:]'s places."""
    grads = []
    for m in (sg, torch):
        leaf = m.arange(6.0, requires_grad=True)
        (leaf * 1)[2:].as_strided((3,), (2,), 0).sum().backward()
        grads.append(leaf.grad.tolist())
    assert grads[0] == grads[1] == [0, 0, 1, 0, 1, 0]


def test_gradient_of_an_input_that_overlaps_itself_matches_torch():
    """An expanded input holds each place twice: the place's gradient is shared between them."""
    grads = []
    for m in (sg, torch):
        leaf = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = leaf.expand(2, 3).as_strided((2, 2), (1, 1), 0)
        (out * m.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        grads.append(leaf.grad.tolist())
    assert grads[0] == grads[1] == [1.0, 5.0, 4.0]


def test_gradient_of_a_tensor_that_is_a_view_reaches_it():
    """autograd.grad asks for the view itself, so the gradient must flow through it."""
    grads = []
    for m in (sg, torch):
        view = (m.arange(6.0, requires_grad=True) * 2)[1:]
        out = view.as_strided((2, 3), (1, 1)).sum()
        grads.append(m.autograd.grad(out, view)[0].tolist())
    assert grads[0] == grads[1]


def test_grad_fn_name():
    out = sg.arange(4.0, requires_grad=True).as_strided((2,), (2,))
    assert out.grad_fn.name() == "AsStridedBackward0"


def test_as_strided_in_place_matches_torch():
    for m in (sg, torch):
        x = m.arange(6.0)
        assert x.as_strided_((2, 2), (1, 2), 1) is x
        assert x.tolist() == [[1, 3], [2, 4]], m.__name__
        assert (x.stride(), x.storage_offset()) == ((1, 2), 1), m.__name__


def test_as_strided_in_place_in_a_graph_gives_torch_gradient():
    grads = []
    for m in (sg, torch):
        leaf = m.arange(6.0, requires_grad=True)
        y = leaf * 1
        y.as_strided_((2, 2), (1, 2), 1)
        (y * m.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        grads.append(leaf.grad.tolist())
    assert grads[0] == grads[1]


OVERLAP_ERROR = "more than one element of the written-to tensor refers to a single memory"


@pytest.mark.parametrize("write", ["add_", "copy_"])
def test_writing_into_a_stride_of_zero_raises_as_torch(write):
    for m in (sg, torch):
        view = m.arange(6.0).as_strided((3, 2), (0, 1))
        with pytest.raises(RuntimeError, match=OVERLAP_ERROR):
            view.add_(1) if write == "add_" else view.copy_(m.ones(3, 2))


@pytest.mark.parametrize("write", ["add_", "setitem", "in_graph"])
def test_writing_into_overlapping_windows_is_refused(write):
    """PyTorch writes sliding windows in its loop order (``add_`` adds twice where windows
    overlap, a result NumPy would not give): scratchgrad refuses rather than differ."""
    x = sg.arange(6.0, requires_grad=write == "in_graph")
    view = (x * 1 if write == "in_graph" else x).as_strided((5, 2), (1, 1))
    with pytest.raises(RuntimeError, match=OVERLAP_ERROR):
        if write == "setitem":
            view[0] = 1.0
        else:
            view.add_(1)


def test_reading_overlapping_windows_after_the_storage_changes():
    x = sg.arange(4.0)
    windows = x.as_strided((3, 2), (1, 1))
    x.mul_(10)
    assert windows.tolist() == [[0, 10], [10, 20], [20, 30]]


@pytest.mark.parametrize(
    "args, kind, message",
    [
        (((3, 3), (1, 1), 9), RuntimeError, r"setStorage: sizes \[3, 3\], strides \[1, 1\], "
         r"storage offset 9, and itemsize 8 requiring a storage size of 112 are out of bounds "
         r"for storage of size 96"),
        (((2,), (-1,)), RuntimeError, "Negative strides are not supported at the moment, got "
         r"strides: \[-1\]"),
        (((2,), (1,), -1), RuntimeError, "invalid storage offset -1"),
        (((2, 3), (1,)), RuntimeError, "mismatch in length of strides and shape"),
        (((-1,), (1,)), RuntimeError, "Storage size calculation overflowed"),
        (((2.0,), (1,)), TypeError, "argument 'size' .*must be tuple of ints, but found element "
         "of type float at pos 0"),
    ],
)  # fmt: skip
def test_errors_match_torch(args, kind, message):
    for m in (sg, torch):
        with pytest.raises(kind, match=message):
            m.arange(12, dtype=m.float64).as_strided(*args)


@pytest.mark.parametrize(
    "args",
    [
        ((2.0,), (1,)),
        ((2,), (1.0,)),
        ((2,), (1,), 1.0),
        ((2,), (1,), True),
        ((True,), (1,)),
        (2, (1,)),
        ("ab", (1,)),
        (None, (1,)),
        ((2,), None),
        ((np.float64(2.0),), (1,)),
        ((2,), (1,), np.float64(1.0)),
        ((2,), (1,), "a"),
        (np.array([2]), (1,)),  # (a sequence of ints, but a list or tuple only, as PyTorch's)
        (range(2, 3), (1,)),
        ((2,), (1,), np.array([1])),
        ((2, 2.0), (1, 1)),  # (after the first entry, PyTorch's words are others)
        ((2,), (np.float64(1.0),)),
        ((np.array(2.0),), (1,)),
        ((2, np.array([2])), (1, 1)),
    ],
)
@pytest.mark.parametrize(
    "call",
    [
        lambda m, t, args: t.as_strided(*args),
        lambda m, t, args: m.as_strided(t, *args),
        lambda m, t, args: t.as_strided_(*args),
        lambda m, t, args: m.as_strided_(t, *args),
    ],
    ids=["method", "function", "in-place method", "in-place function"],
)
def test_arguments_of_the_wrong_type_raise_torchs_type_error(call, args):
    """PyTorch's words: the op as called (as_strided_ in place), the argument and its
    position, counting the input in the function form ("(position 2)"); a bool offset is
    refused too (before, the positions were missing, an offset's error was Python's own and
    True was read as 1)."""
    errors = []
    for m in (sg, torch):
        with pytest.raises(TypeError) as info:
            call(m, m.arange(6.0), args)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


TENSOR_ENTRIES = [  # (as_strided's arguments of a module m), refused as PyTorch's
    lambda m: ((m.tensor(2.0),), (1,)),
    lambda m: ((2,), (m.tensor(1.0),)),
    lambda m: ((2,), (1,), m.tensor(1.0)),
    lambda m: ((m.tensor([2, 1]),), (1,)),
    lambda m: ((2,), (1,), m.tensor([1, 1])),
    lambda m: ((m.tensor(2 + 0j),), (1,)),
    lambda m: ((2, m.tensor(2.0)), (1, 1)),
    lambda m: ((2, 1), (1, m.tensor(1.0, requires_grad=True))),
    lambda m: (m.tensor([2]), (1,)),
]


@pytest.mark.parametrize("args", TENSOR_ENTRIES)
def test_a_tensor_that_is_no_int_raises_torchs_type_error(args):
    """A tensor is an entry only where it is an integer one of one entry: PyTorch's words
    for the others, naming the type Tensor (before, the error of Tensor.__index__, or
    "scratchgrad.tensor.Tensor")."""
    errors = []
    for m in (sg, torch):
        with pytest.raises(TypeError) as info:
            m.arange(6.0).as_strided(*args(m))
        errors.append(str(info.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize(
    "args",
    [
        lambda m: ((m.tensor(2),), (m.tensor([1], dtype=m.int32),), m.tensor(1, dtype=m.uint8)),
        lambda m: ((np.int64(2), m.tensor([[1]])), (np.int16(1), np.array(1)), np.int32(1)),
        lambda m: ((np.array(2), True), (1, False), np.array(1)),  # (a bool after the first)
    ],
)
def test_integer_tensors_numpy_integers_and_later_bools_are_read_as_torchs(args):
    """PyTorch reads an integer tensor of one entry and a NumPy integer as an int, and a bool
    after the first entry as one too (it checks the first entry strictly)."""
    outs = [m.arange(6.0).as_strided(*args(m)) for m in (sg, torch)]
    ours, theirs = outs
    assert ours.tolist() == theirs.tolist() and ours.stride() == theirs.stride()
    assert ours.storage_offset() == theirs.storage_offset()


@pytest.mark.parametrize(
    "args",
    [
        lambda m: ((m.tensor(True),), (1,)),
        lambda m: ((2, m.tensor([True])), (1, 1)),
        lambda m: ((2,), (1,), m.tensor(True)),
    ],
)
def test_a_bool_tensor_entry_raises_as_torch(args):
    """PyTorch's parser takes a bool tensor of one entry for an int but then fails to read
    it (its RuntimeError); it was read as 0 or 1."""
    for m in (sg, torch):
        with pytest.raises(RuntimeError, match=r"scalar\.isIntegral\( false\)"):
            m.arange(6.0).as_strided(*args(m))


def test_an_empty_result_needs_no_storage():
    for m in (sg, torch):
        assert m.arange(6.0).as_strided((0,), (1,), 7).shape == (0,)


def test_a_tensor_kept_in_another_memory_order_raises_naming_it():
    """A convolution's result keeps its batch last in memory, unlike PyTorch's."""
    x = sg.nn.functional.conv2d(sg.ones(2, 1, 3, 3), sg.ones(1, 1, 2, 2))
    if x.array.flags.c_contiguous:
        pytest.skip("this convolution's result is row-major here")
    with pytest.raises(RuntimeError, match="as_strided: scratchgrad cannot tell this tensor's"):
        x.as_strided((2,), (1,))
    assert x.reshape(-1).view(x.shape).as_strided((2,), (1,)).tolist() == [4.0, 4.0]


def test_writing_through_a_view_in_a_graph_gives_torch_values_and_gradients():
    results = []
    for m in (sg, torch):
        leaf = m.arange(6.0, requires_grad=True)
        w = m.tensor([1.0, 2.0], requires_grad=True)
        y = leaf * 1
        y.as_strided((2,), (2,), 1).mul_(w)
        (y * m.arange(6.0)).sum().backward()
        results.append((y.tolist(), leaf.grad.tolist(), w.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("dtype", ["int64", "bfloat16", "bool"])
def test_other_dtypes_match_torch(dtype):
    outs = [
        m.arange(6).to(getattr(m, dtype)).as_strided((2, 2), (1, 2)).tolist() for m in (sg, torch)
    ]
    assert outs[0] == outs[1]


def test_an_empty_expand_of_a_window_has_torchs_layout():
    """The layout replay of an empty expand over a window (whose layout is read-only) raised
    NumPy's ValueError from ``is_contiguous`` and ``stride``."""
    outs = [m.tensor(1.5).as_strided((1,), (1,)).expand(0, 1) for m in (sg, torch)]
    ours, theirs = outs
    assert ours.shape == theirs.shape and ours.is_contiguous() == theirs.is_contiguous()
    assert ours.stride() == theirs.stride()


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.tensor([1.0, 2.0]).expand(2, 2).clone(),
        lambda m: m.arange(6.0).reshape(2, 3)[:, None].expand(2, 2, 3).clone(),
        lambda m: m.arange(3.0)[:, None].expand(3, 2).to(m.float64),
    ],
    ids=["clone_of_expand", "clone_of_inner_expand", "to_of_expand"],
)
def test_a_copy_of_an_expanded_tensor_is_row_major_as_torchs(make):
    """A copy of an expanded tensor lies row-major, as PyTorch's, so as_strided reads its
    storage (NumPy's copy put the repeated dim innermost, and as_strided refused)."""
    ours, theirs = make(sg), make(torch)
    assert ours.stride() == theirs.stride()
    assert ours.as_strided((3,), (1,), 1).tolist() == theirs.as_strided((3,), (1,), 1).tolist()


def test_a_roll_of_a_transpose_is_row_major_as_torchs():
    """Its storage is read in row-major order (NumPy's roll kept the transposed order in
    memory, which as_strided refused)."""
    ours, theirs = (m.roll(m.arange(6.0).reshape(2, 3).t(), 1, 0) for m in (sg, torch))
    assert ours.stride() == theirs.stride() and ours.is_contiguous()
    assert ours.as_strided((4,), (1,), 1).tolist() == theirs.as_strided((4,), (1,), 1).tolist()
