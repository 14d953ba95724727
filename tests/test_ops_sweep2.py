"""Regressions from a differential sweep against PyTorch of sorting, scatter/gather,
manipulation and type-promotion ops: each case once differed from PyTorch."""

import operator
import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
from tests.oracle import assert_close, assert_raises_as_torch, check_against_torch

rng = np.random.default_rng(0)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_skips_1d_empty_tensors_as_torch(dim):
    """A [0] tensor joins tensors of any rank (PyTorch's legacy rule), keeping its gradient."""
    arrays = [rng.standard_normal((2, 3)), np.zeros(0), rng.standard_normal((2, 3))]
    out, expected = check_against_torch(
        lambda a, e, b: sg.cat([a, e, b], dim), lambda a, e, b: torch.cat([a, e, b], dim), arrays
    )
    assert tuple(out.shape) == tuple(expected.shape)


def test_cat_of_1d_empty_tensors_promotes_dtype_as_torch():
    ints = np.arange(6).reshape(2, 3)
    out = sg.cat([sg.tensor(ints), sg.tensor([], dtype=sg.float32)])
    expected = torch.cat([torch.tensor(ints), torch.tensor([], dtype=torch.float32)])
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert_close(out, expected)


def test_concatenate_takes_axis_as_torch():
    arrays = [rng.standard_normal((2, 3)), rng.standard_normal((2, 1))]
    check_against_torch(
        lambda a, b: sg.concatenate([a, b], axis=1),
        lambda a, b: torch.concatenate([a, b], axis=1),
        arrays,
    )


def test_gather_takes_sparse_grad_false_as_torch():
    x, index = rng.standard_normal((3, 4)), np.array([[0, 3], [1, 1], [2, 0]])
    check_against_torch(
        lambda x: sg.gather(x, 1, sg.tensor(index), sparse_grad=False),
        lambda x: torch.gather(x, 1, torch.tensor(index), sparse_grad=False),
        [x],
    )


def test_repeat_interleave_broadcasts_one_count_as_torch():
    counts = np.array([2])
    check_against_torch(
        lambda x: x.repeat_interleave(sg.tensor(counts), dim=1),
        lambda x: x.repeat_interleave(torch.tensor(counts), dim=1),
        [rng.standard_normal((3, 2))],
    )


def test_repeat_interleave_output_size_as_torch():
    counts = np.array([1, 0, 3])
    check_against_torch(
        lambda x: sg.repeat_interleave(x, sg.tensor(counts), dim=0, output_size=4),
        lambda x: torch.repeat_interleave(x, torch.tensor(counts), dim=0, output_size=4),
        [rng.standard_normal((3, 2))],
    )
    assert_raises_as_torch(
        lambda lib: lib.ones(3).repeat_interleave(lib.tensor([1, 0, 3]), output_size=5),
        RuntimeError,
        "output_size is 5",
    )


def test_repeat_interleave_of_counts_alone_as_torch():
    counts = np.array([1, 0, 3, 2])
    out = sg.repeat_interleave(sg.tensor(counts))
    expected = torch.repeat_interleave(torch.tensor(counts))
    assert out.tolist() == expected.tolist()
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]


@pytest.mark.parametrize("name", ["preserve_format", "contiguous_format", "channels_last"])
def test_clone_takes_memory_format_as_torch(name):
    check_against_torch(
        lambda x: x.clone(memory_format=getattr(sg, name)),
        lambda x: x.clone(memory_format=getattr(torch, name)),
        [rng.standard_normal((2, 3, 4, 5))],
    )


def test_clone_checks_memory_format_rank_as_torch():
    assert_raises_as_torch(
        lambda lib: lib.ones(3).clone(memory_format=lib.channels_last),
        RuntimeError,
        "required rank 4",
    )


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_refuse_bool_as_torch(name):
    assert_raises_as_torch(
        lambda lib: getattr(lib, name)(lib.tensor([True, False])),
        RuntimeError,
        f"{name}\\(\\): does not support bool input",
    )


@pytest.mark.parametrize("scalar", [True, 2, -1])
@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32"])
def test_python_number_on_the_left_of_bitwise_ops_as_torch(scalar, op, dtype):
    """``True & mask`` reflects to the tensor's ``__rand__``."""
    values = np.array([0, 1, 3]).astype(dtype)
    out, expected = op(scalar, sg.tensor(values)), op(scalar, torch.tensor(values))
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert out.tolist() == expected.tolist()


@pytest.mark.parametrize(
    "dims_dtype, zero_dtype",
    [
        ("float32", "complex128"),
        ("float64", "complex64"),
        ("complex64", "float64"),
        ("complex64", "complex128"),
        ("int32", "complex128"),
        ("float32", "float64"),
        ("int8", "float64"),
    ],
)
def test_0d_tensor_promotion_across_kinds_as_torch(dims_dtype, zero_dtype):
    """A 0-d complex tensor makes a float tensor complex of its own width (PyTorch's
    combine_categories), and a 0-d float one does not widen a complex tensor."""
    dims, zero = np.array([1, 2, 3]).astype(dims_dtype), np.array(2).astype(zero_dtype)
    out = sg.tensor(dims) + sg.tensor(zero)
    expected = torch.tensor(dims) + torch.tensor(zero)
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert str(sg.result_type(sg.tensor(zero), sg.tensor(dims))) == str(
        torch.result_type(torch.tensor(zero), torch.tensor(dims))
    ).replace("torch.", "scratchgrad.")
    assert_close(out, expected, "float32")


def test_expand_refuses_minus_one_for_a_new_dim_as_torch():
    """-1 keeps a dim's size, so a new leading dim cannot take it: it read the size of a dim
    counted from the end (``zeros(2, 3).expand(-1, 2, 3)`` had shape (3, 2, 3))."""
    assert_raises_as_torch(
        lambda lib: lib.zeros(2, 3).expand(-1, 2, 3), RuntimeError, "leading, non-existing"
    )
    assert_raises_as_torch(
        lambda lib: lib.zeros(3).broadcast_to((2, -1, 3)), RuntimeError, "dimension 1"
    )
    assert sg.zeros(1, 3).expand(2, -1, -1).shape == torch.zeros(1, 3).expand(2, -1, -1).shape


def test_mt_of_a_0_d_tensor_is_itself_with_torchs_warning():
    """(PyTorch warns once a process, so only ours is asked to warn here.)"""
    with pytest.warns(UserWarning, match="mT is deprecated on 0-D tensors"):
        y = sg.tensor(2.0, requires_grad=True).mT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.tensor(2.0).mT
    assert y.shape == expected.shape and y.item() == expected.item()
    assert_raises_as_torch(lambda lib: lib.zeros(3).mT, RuntimeError, "Got 1-D tensor")


def test_fliplr_and_flipud_refuse_too_few_dims_as_torch():
    """RuntimeError, as PyTorch's (they were flips of dim 1 or 0: an IndexError)."""
    assert_raises_as_torch(lambda lib: lib.fliplr(lib.zeros(3)), RuntimeError, ">= 2-d")
    assert_raises_as_torch(lambda lib: lib.zeros(()).flipud(), RuntimeError, ">= 1-d")


def test_movedim_of_a_0_d_tensor_counts_the_dims_given_as_torch():
    """The dims are counted as given: a 0-d tensor's dim 0 was left out before counting, so
    ``movedim((0,), ())`` passed."""
    assert_raises_as_torch(
        lambda lib: lib.tensor(1.0).movedim((0,), ()), RuntimeError, "same number of dims"
    )
    assert sg.tensor(1.0).movedim(0, -1).shape == torch.tensor(1.0).movedim(0, -1).shape


def test_stack_checks_its_dim_before_the_shapes_as_torch():
    assert_raises_as_torch(
        lambda lib: lib.stack([lib.zeros(0), lib.zeros(1)], 2), IndexError, "out of range"
    )


@pytest.mark.parametrize("shape", [(), (3,)])
def test_flip_refuses_a_repeated_dim_as_torch(shape):
    """Of a 0-d tensor too (its flip(0, 0) passed)."""
    assert_raises_as_torch(
        lambda lib: lib.zeros(shape).flip((0, 0)), RuntimeError, "appears multiple times"
    )


def test_cat_of_only_1_d_empty_tensors_reads_no_dim_as_torch():
    """PyTorch skips 1-d empty tensors, dim check included, so with only those any dim
    gives an empty result (it raised an IndexError for dim 1)."""
    for dim in (1, -2, 5):
        pieces = [sg.zeros(0, requires_grad=True), sg.zeros(0)]
        out = sg.cat(pieces, dim)
        expected = torch.cat([torch.zeros(0), torch.zeros(0)], dim)
        assert out.shape == tuple(expected.shape)
        out.sum().backward()
        assert pieces[0].grad.shape == (0,)
