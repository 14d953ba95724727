"""unique(dim=...) and unique_consecutive (dim=None and along a dim), module functions and
methods, against PyTorch: values, inverse indices and counts with their dtypes, on many ties
(random small integers, every dim of 1- to 4-D tensors), floats with -0.0 and NaN, bools and
empty tensors; PyTorch's errors."""

import numpy as np
import pytest
import torch
from oracle import assert_doc_examples_run, assert_raises_as_torch, same_dtype

import scratchgrad as sg

RNG = np.random.default_rng(0)


def assert_same(ours, theirs):
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert same_dtype(o, t), (o.dtype, t.dtype)
        assert not o.requires_grad
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def _ties(shape):
    """Entries 0 or 1: slices along short dims repeat often."""
    return RNG.integers(0, 2, shape)


TENSORS = {
    "1-D": _ties(9),
    "2-D": _ties((7, 2)),
    "3-D": _ties((3, 4, 2)),
    "4-D": _ties((2, 3, 2, 2)),
    "one row": _ties((1, 5)),
    "floats with -0.0": np.array([[0.0, 1.5], [-0.0, 1.5], [2.0, -1.0], [0.0, 1.5]]),
    "NaN rows apart": np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 1.0], [2.0, 3.0]]),
    "bool": RNG.integers(0, 2, (6, 2)).astype(bool),
    "float32": RNG.integers(-2, 2, (5, 3)).astype(np.float32),
}
OPTIONS = [
    dict(),
    dict(return_inverse=True),
    dict(return_counts=True),
    dict(return_inverse=True, return_counts=True),
]


def _dims(array):
    return range(-array.ndim, array.ndim)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("case", TENSORS)
def test_unique_along_every_dim_as_torch(case, options):
    array = TENSORS[case]
    ours, theirs = sg.tensor(array), torch.tensor(array)
    for dim in _dims(array):
        assert_same(sg.unique(ours, dim=dim, **options), torch.unique(theirs, dim=dim, **options))
        assert_same(ours.unique(dim=dim, **options), theirs.unique(dim=dim, **options))
        unsorted = dict(options, sorted=False)  # PyTorch sorts slices all the same
        assert_same(ours.unique(dim=dim, **unsorted), theirs.unique(dim=dim, **unsorted))


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("case", TENSORS)
def test_unique_consecutive_as_torch(case, options):
    array = TENSORS[case]
    ours, theirs = sg.tensor(array), torch.tensor(array)
    assert_same(sg.unique_consecutive(ours, **options), torch.unique_consecutive(theirs, **options))
    for dim in _dims(array):
        assert_same(
            ours.unique_consecutive(dim=dim, **options),
            theirs.unique_consecutive(dim=dim, **options),
        )


def test_unique_consecutive_of_runs_nan_and_scalars_as_torch():
    options = dict(return_inverse=True, return_counts=True)
    for array in (
        np.array([1, 1, 2, 2, 3, 1, 1, 2]),
        np.array([1.0, np.nan, np.nan, 2.0, 2.0]),  # NaNs in a row stay apart
        np.array([[1, 1], [2, 2]]),  # dim=None runs over the flattened tensor
        np.array(5),
        np.zeros(0),
        np.zeros((2, 0)),
    ):
        assert_same(
            sg.unique_consecutive(sg.tensor(array), **options),
            torch.unique_consecutive(torch.tensor(array), **options),
        )


@pytest.mark.parametrize("shape, dim", [((0, 3), 0), ((2, 0), 1), ((3, 0, 2), 1), ((0,), 0)])
def test_an_empty_selected_dim_as_torch(shape, dim):
    options = dict(return_inverse=True, return_counts=True)
    for function in ("unique", "unique_consecutive"):
        assert_same(
            getattr(sg, function)(sg.zeros(shape), dim=dim, **options),
            getattr(torch, function)(torch.zeros(shape), dim=dim, **options),
        )


def test_slices_holding_nan_are_each_distinct():
    x = sg.tensor([[np.nan, 1.0], [np.nan, 1.0], [0.0, 1.0], [0.0, 1.0]])
    values, inverse, counts = x.unique(dim=0, return_inverse=True, return_counts=True)
    assert counts.tolist() == [2, 1, 1]
    np.testing.assert_array_equal(values.numpy(), [[0.0, 1.0], [np.nan, 1.0], [np.nan, 1.0]])
    assert inverse.tolist() == [1, 2, 0, 0]


def test_the_result_is_not_a_view_of_the_input():
    x = sg.tensor([[1.0, 2.0]])
    x.unique(dim=0).add_(5.0)
    x.unique_consecutive(dim=0).add_(5.0)
    assert x.tolist() == [[1.0, 2.0]]


def test_the_values_require_grad_and_the_counts_do_not_as_torchs():
    """(The values did not require grad here; PyTorch's do, and their backward raises: see
    test_a_result_without_derivative_stays_in_the_graph_as_torchs.)"""
    flags = []
    for m in (torch, sg):
        x = m.tensor([[1.0, 2.0], [1.0, 2.0]], requires_grad=True)
        outs = (*x.unique(dim=0, return_counts=True), x.unique_consecutive(dim=1))
        flags.append([out.requires_grad for out in outs])
    assert flags[1] == flags[0] == [True, False, True]


def test_jit_refuses_a_shape_read_from_the_values():
    x = sg.tensor([[1.0, 2.0], [1.0, 2.0]])
    for call, name in ((lambda x: x.unique(dim=0), "unique"), (sg.unique_consecutive, "unique_c")):
        step = sg.jit(call)
        step(x)  # the first call runs eagerly; the second records
        with pytest.raises(sg.JitError, match=f"{name}.*its shape depends on the values"):
            step(x)


ERRORS = [
    (lambda m: m.unique(m.tensor(3), dim=0), IndexError, "Dimension specified as 0.*no dim"),
    (lambda m: m.unique(m.ones(2, 3), dim=2), IndexError, r"range of \[-2, 1\], but got 2"),
    (lambda m: m.unique(m.ones(2, 3), dim=-3), IndexError, r"range of \[-2, 1\], but got -3"),
    (lambda m: m.unique(m.zeros(2, 0), dim=0), RuntimeError, "0 sized dimensions.*selected"),
    (lambda m: m.unique(m.zeros(0, 3, 0), dim=1), RuntimeError, "aren't selected"),
    (lambda m: m.unique(m.zeros(0, 0), dim=1), RuntimeError, "more than one"),
    (lambda m: m.unique_consecutive(m.zeros(2, 0), dim=0), RuntimeError, "aren't selected"),
    (lambda m: m.unique_consecutive(m.tensor(5), dim=0), IndexError, "no dimensions"),
    (lambda m: m.unique_consecutive(m.ones(2, 3), dim=3), IndexError, "but got 3"),
    (lambda m: m.unique_consecutive([1, 2]), TypeError, "unique_consecutive.*Tensor.*list"),
]


@pytest.mark.parametrize("call, kind, message", ERRORS)
def test_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


@pytest.mark.parametrize("function", [sg.Tensor.unique, sg.Tensor.unique_consecutive])
def test_doc_examples_run(function):
    assert_doc_examples_run(function)


# the ops without a derivative whose results PyTorch keeps in the graph of an input that
# requires grad: a backward through them raises instead of leaving their part out
NO_DERIVATIVE = {
    "unique": lambda m, x: m.unique(x, return_counts=True)[0],
    "unique along a dim": lambda m, x: x.unique(dim=0),
    "unique_consecutive": lambda m, x: m.unique_consecutive(x),
    "unique_consecutive along a dim": lambda m, x: x.unique_consecutive(dim=0),
    "bernoulli with p": lambda m, x: m.bernoulli(x, 0.5),
    "Tensor.bernoulli with p": lambda m, x: x.bernoulli(0.5),
}


@pytest.mark.parametrize("call", NO_DERIVATIVE.values(), ids=NO_DERIVATIVE)
def test_a_result_without_derivative_stays_in_the_graph_as_torchs(call):
    """x.unique() and x.bernoulli(0.5) of an x that requires grad did not require grad
    here: (x * 2).sum() + x.unique().sum() then silently gave the gradient of the first
    term alone, where PyTorch raises (its node and its error)."""
    seen = []
    for m in (torch, sg):
        x = m.tensor([0.25, 0.75, 0.75, 0.0], requires_grad=True)
        out = call(m, x)
        with pytest.raises((RuntimeError, NotImplementedError)) as error:
            ((x * 2).sum() + out.sum()).backward()
        seen.append(
            (out.requires_grad, out.grad_fn.name().split("::")[-1], error.type, str(error.value))
        )
    assert seen[1] == seen[0]
    with sg.no_grad():
        assert not call(sg, sg.ones(2, requires_grad=True)).requires_grad
