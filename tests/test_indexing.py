"""Tensor indexing (``x[index]`` and ``x[index] = value``) against PyTorch, where NumPy's
reading of an index differs from PyTorch's: several Ellipses, bool scalars beside ints, masks
after an int, and the value written by setitem (its shape and its dtype)."""

import math

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _both(make_index, write=None, shape=(4, 5, 6)):
    """``x[index]`` with the gradient of a weighted sum of it, or ``x[index] = write(m)`` on a
    plain tensor and on one in a graph (a recorded write), in both libraries, ``x`` of
    ``shape``: each as a tuple of arrays or the error's type name."""
    results = []
    for m in (torch, sg):
        x = m.arange(math.prod(shape), dtype=m.float64).reshape(shape).requires_grad_(True)
        try:
            if write is None:
                out = x[make_index(m)]
                weights = m.arange(out.numel(), dtype=m.float64).reshape(out.shape) + 1
                (out * weights).sum().backward()
                results.append((out.detach().numpy(), x.grad.numpy()))
            else:
                plain, recorded = x.detach().clone(), x.clone()
                plain[make_index(m)] = write(m)
                recorded[make_index(m)] = write(m)
                results.append((plain.numpy(), recorded.detach().numpy()))
        except Exception as error:  # noqa: BLE001 (the error type is compared)
            results.append(type(error).__name__)
    return results


def _assert_same(make_index, write=None, shape=(4, 5, 6)):
    expected, got = _both(make_index, write, shape)
    assert type(got) is type(expected), (expected, got)
    if isinstance(expected, str):
        assert got == expected
        return
    for want, have in zip(expected, got):
        assert have.shape == want.shape
        np.testing.assert_array_equal(have, want)


@pytest.mark.parametrize(
    "index",
    [
        (Ellipsis, Ellipsis),
        (Ellipsis, 0, Ellipsis),  # PyTorch: x[..., 0]
        (0, Ellipsis, 0, Ellipsis),
        (Ellipsis, 1, None, Ellipsis),
        (Ellipsis, Ellipsis, slice(None)),
        (None, Ellipsis, Ellipsis),
        (Ellipsis, [1, 1], Ellipsis),
        (Ellipsis, Ellipsis, 0),  # an IndexError in both
        (Ellipsis, Ellipsis, slice(None, None, 1)),  # a whole slice past the end is dropped
        (slice(None),) * 4,
    ],
    ids=str,
)
def test_several_ellipses_as_pytorch(index):
    _assert_same(lambda m: index)


@pytest.mark.parametrize(
    "index",
    [
        (0, slice(None), True),  # PyTorch: (5, 1, 6), NumPy: (1, 5, 6)
        (-1, slice(1, None, 2), True),
        (0, Ellipsis, True),
        (0, slice(None), False),
        (True, slice(None), 0),
        (0, None, True, slice(None)),
        (0, slice(None), True, [1, 2]),
        (0, slice(None), False, [1, 2]),
    ],
    ids=str,
)
def test_a_bool_scalar_beside_an_int_as_pytorch(index):
    _assert_same(lambda m: index)
    _assert_same(lambda m: tuple(m.tensor(i) if isinstance(i, bool) else i for i in index))


@pytest.mark.parametrize(
    "index", [(0, slice(None), [True, False] * 2), (-1, None, [True, False] * 2)], ids=str
)
def test_a_mask_after_an_int_is_checked_against_its_dims(index):
    def make(m):
        return tuple(m.tensor(i) if isinstance(i, list) else i for i in index)

    _assert_same(make)
    with pytest.raises(IndexError, match=r"mask \[4\]"):
        sg.zeros(4, 5, 6)[make(sg)]


@pytest.mark.parametrize(
    "index",
    [
        [0, 2],
        (slice(None), [1]),
        ((0, 1),),
        (True, 0),
        [True, False, True, False],  # a mask given more than one value
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_setitem_through_index_put_refuses_another_dtype(index, dtype):
    def write(m):
        return m.ones(5, 6, dtype=getattr(m, dtype))

    _assert_same(lambda m: index, write)
    with pytest.raises(RuntimeError, match="dtypes match, got Double for the destination"):
        sg.zeros(4, 5, 6, dtype=sg.float64)[index] = write(sg)


@pytest.mark.parametrize(
    "index",
    [
        (4, False),  # NumPy let an int pass beside an index that empties the result
        (0, 9, None, False),
        (slice(None), -6, [[]]),
        (0, 0, 0, slice(None, None, -1)),  # too many indices comes first
        (slice(None, None, 0), 0, 0, 0),
        (9, slice(None, None, -1)),  # then item by item: the int first
        (slice(None, None, -1), 9),
    ],
    ids=str,
)
def test_index_checks_come_in_pytorchs_order_and_check_every_int(index):
    _assert_same(lambda m: index)
    _assert_same(lambda m: index, lambda m: m.tensor(1.0))


@pytest.mark.parametrize("write", [False, True], ids=["getitem", "setitem"])
@pytest.mark.parametrize(
    "shape, make_index",
    [
        ((0, 3), lambda m: (slice(None), m.tensor([5]))),  # positions into an empty result
        ((2, 3), lambda m: (m.tensor([5, -9]), slice(0, 0))),
        ((2, 3), lambda m: (False, m.tensor([7]))),
        ((2, 0), lambda m: m.tensor([5])),
        ((2, 3), lambda m: (m.tensor([5]), slice(0, 2))),  # not empty: IndexError
        ((0, 3), lambda m: m.tensor([5])),  # into a dim of size 0: IndexError
        ((0, 0), lambda m: ([-2, -1], slice(1, None))),
        ((0, 2), lambda m: (m.tensor([[0]]), m.tensor([False, False]))),  # picks none
        ((), lambda m: slice(None, None, -1)),  # alone: its step first, as PyTorch's
        ((), lambda m: (slice(None, None, -1),)),  # too many indices first
        ((3,), lambda m: (slice(None, None, 0), 0)),
        ((2, 3), lambda m: (5, slice(None, None, -1))),
        ((0, 0), lambda m: (m.tensor([0]), slice(None, None, -1))),  # the step first
        ((0,), lambda m: (False, m.tensor([False]))),  # a mask that does not fit
        ((0, 2), lambda m: (m.tensor([True]), slice(None, None, -1))),  # the step first
    ],
)
def test_positions_are_checked_where_pytorch_checks_them(shape, make_index, write):
    # PyTorch checks no index tensor's positions where they select nothing (NumPy does)
    _assert_same(make_index, (lambda m: 1.0) if write else None, shape)


@pytest.mark.parametrize(
    "make_index",
    [
        lambda m: 0,  # loss.data[0], as pre-0.4 scripts read a loss: PyTorch's hint at item()
        lambda m: -1,
        lambda m: 5,
        lambda m: slice(None),
        lambda m: (0,),
        lambda m: (Ellipsis, 0),  # (it was "tuple index out of range")
        lambda m: (None, 0),
        lambda m: m.tensor(0),
    ],
)
def test_a_0_dim_tensor_refuses_an_index_with_torchs_message(make_index):
    messages = []
    for m in (torch, sg):
        with pytest.raises(IndexError) as error:
            m.tensor(1.5)[make_index(m)]
        messages.append(str(error.value))
    assert messages[1] == messages[0]


def test_setitem_of_another_dtype_raises_the_index_errors_first():
    # PyTorch checks the masks and the positions into a dim of size 0 before the dtypes
    def float32(m):
        return m.tensor(1.0, dtype=m.float32)

    _assert_same(lambda m: (False, m.tensor([False])), float32, shape=(0,))
    _assert_same(lambda m: ([0, 0], slice(None)), float32, shape=(0, 3))


@pytest.mark.parametrize(
    "index",
    [0, slice(1, 3), (Ellipsis, 0), True, sg.tensor(1), [True, False, True, False]],
    ids=str,
)
def test_setitem_casts_where_pytorch_does(index):
    def make(m):  # a mask given one value: masked_fill_, which casts
        return m.tensor(index.item()) if isinstance(index, sg.Tensor) else index

    _assert_same(make, lambda m: m.tensor([2.5], dtype=m.float32))


@pytest.mark.parametrize(
    "index", [(0, 0, 0), (0, -1, 1), (0, slice(None), 0), (Ellipsis, 0)], ids=str
)
@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 5)], ids=str)
def test_setitem_drops_the_value_leading_ones(index, shape):
    def write(m):
        return m.arange(float(np.prod(shape)), dtype=m.float64).reshape(shape) + 0.5

    _assert_same(lambda m: index, write)


@pytest.mark.parametrize("index", [0, slice(None), [0, 1]], ids=str)
def test_setitem_of_a_value_that_does_not_broadcast_raises_runtime_error(index):
    _assert_same(lambda m: index, lambda m: m.ones(3, 7, dtype=m.float64))
    with pytest.raises(RuntimeError, match="setitem"):
        sg.zeros(4, 5, 6, dtype=sg.float64)[index] = sg.ones(3, 7, dtype=sg.float64)


@pytest.mark.parametrize(
    "shape, index",
    [((3, 1), (slice(None), [])), ((0, 3), (slice(None), [])), ((1,), ([],))],
    ids=str,
)
def test_an_empty_mask_is_checked_against_its_dims(shape, index):
    """NumPy lets a mask of size 0 pass a dim of size 1, or any dim of an empty array."""

    def make(m):
        return tuple(m.tensor(i, dtype=m.bool) if isinstance(i, list) else i for i in index)

    for m in (torch, sg):
        with pytest.raises(IndexError):
            m.zeros(shape)[make(m)]


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.tensor(2.0) > 1,
        lambda m: m.tensor(3) // 2,
        lambda m: ~m.tensor(True),
        lambda m: m.tensor(2.0).isnan(),
    ],
    ids=["greater", "floor_divide", "invert", "isnan"],
)
def test_a_0d_result_of_an_op_on_arrays_can_be_written(make):
    """Comparisons and integer division of 0-d tensors: arrays, not NumPy's read-only scalars."""
    for index in (Ellipsis, (), None):
        ours, theirs = make(sg), make(torch)
        ours[index], theirs[index] = 0, 0
        assert ours.item() == theirs.item() and ours.shape == theirs.shape


@pytest.mark.parametrize(
    "index",
    [[0.5], [1.9, 0], [-1.5], [[0.0, 1.0]], (slice(None), [0.7, 2.2]), [2.5, True]],
    ids=str,
)
def test_a_list_of_floats_indexes_as_a_long_tensor(index):
    _assert_same(lambda m: index)
    _assert_same(lambda m: index, lambda m: m.tensor(-1.0, dtype=m.float64))


@pytest.mark.parametrize(
    "index",
    [(1,), (1, 2), (0, slice(None), 2), (Ellipsis, 0), (None, 1)],
    ids=str,
)
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_a_0d_integer_tensor_indexes_as_an_int_a_view(index, dtype):
    """PyTorch reads a 0-d integer tensor as an int: the result is a view (NumPy: a copy)."""
    results = []
    for m in (torch, sg):
        x = m.arange(120, dtype=m.float64).reshape(4, 5, 6)
        as_tensors = (m.tensor(i, dtype=getattr(m, dtype)) if type(i) is int else i for i in index)
        view = x[tuple(as_tensors)]
        view.add_(1000)
        results.append(x.numpy())
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize(
    "write",
    [
        lambda x, v: x.__setitem__(0, v[0]),
        lambda x, v: x.__setitem__(slice(1, 3), v[1:] * 3),
        lambda x, v: x.copy_(v * 2),
    ],
    ids=["int", "slice", "copy_"],
)
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_writing_a_value_that_requires_grad_into_integers_is_not_recorded(write, dtype):
    """An integer or bool tensor cannot require grad: the write casts and leaves no graph."""
    results = []
    for m in (torch, sg):
        x = m.zeros(3, 4, dtype=getattr(m, dtype))
        write(x, m.ones(3, 4, requires_grad=True))
        results.append((x.tolist(), x.requires_grad, x.grad_fn is None))
    assert results[0] == results[1]


@pytest.mark.filterwarnings("ignore:indexing with dtype")
@pytest.mark.parametrize(
    "write",
    [
        lambda m: 0.0,
        lambda m: m.tensor(5.0, dtype=m.float64),
        lambda m: m.tensor([5.0], dtype=m.float64),
        lambda m: m.arange(2 * 5 * 6, dtype=m.float64).reshape(2, 5, 6),  # index_put_'s
    ],
)
def test_one_value_written_through_a_byte_mask_raises_as_masked_fill(write):
    """PyTorch hands ``x[mask] = v`` of one value to ``masked_fill_``, which refuses a legacy
    uint8 mask (scratchgrad wrote it into a tensor in no graph); several values still go
    through it."""
    results = []
    for m in (torch, sg):
        x = m.zeros(4, 5, 6, dtype=m.float64)
        try:
            x[m.tensor([1, 0, 1, 0], dtype=m.uint8)] = write(m)
            results.append(x.numpy())
        except RuntimeError as error:
            results.append(str(error))
    expected, got = results
    if isinstance(expected, str):
        assert got == expected
    else:
        np.testing.assert_array_equal(got, expected)


def test_setitem_through_a_lone_false_does_nothing_and_checks_nothing():
    # as PyTorch's setitem, which returns at once (in a tuple, False is checked as an index)
    for m in (torch, sg):
        x = m.zeros(3, requires_grad=True)
        x[False] = m.ones(5, dtype=m.int64)  # another shape, another dtype, a leaf
        assert x._version == 0 and not x.detach().any()
        with pytest.raises(RuntimeError):
            x[(False,)] = 1.0
