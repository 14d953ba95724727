"""Every op of the op table that takes a dim or an index, tried with every dim in
``range(-ndim - 2, ndim + 2)`` (and every index around the bounds) on tensors of 0 to 3 dims, in
float64 and (where meaningful) int64: scratchgrad raises exactly when PyTorch raises, with the
same exception type, and otherwise returns the same values."""

import numpy as np
import pytest
import torch
from op_table import OPS
from oracle import assert_close

import scratchgrad as sg

SHAPES = [(), (3,), (3, 2), (3, 2, 4)]
DIM_OPS = [op for op in OPS if op.dim is not None]
INDEX_OPS = [op for op in OPS if op.index is not None]


def _arrays(op, shape, dtype, count):
    rng = np.random.default_rng(0)
    domains = op.domain if isinstance(op.domain, tuple) else (op.domain,) * count
    arrays = [domain(rng, shape) for domain in domains]
    if dtype == "int64":  # distinct values stay distinct: max/argmax have no ties
        arrays = [np.round(a * 10).astype(np.int64) for a in arrays]
    return arrays


def _outcome(call, *args):
    """The result of ``call(*args)`` as a list of arrays, or the type of the exception raised."""
    try:
        out = call(*args)
    except (IndexError, RuntimeError, ValueError, TypeError) as error:
        return type(error)
    outs = out if isinstance(out, tuple) else (out,)
    return [
        np.asarray(o.detach().numpy() if isinstance(o, torch.Tensor) else o.numpy()) for o in outs
    ]


def _compare(what, ours, theirs):
    if isinstance(theirs, type) or isinstance(ours, type):
        assert ours == theirs, f"{what}: scratchgrad gave {ours}, PyTorch {theirs}"
        return
    assert len(ours) == len(theirs), what
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
        assert_close(a, b, what=what)


def _dtypes(op):
    return ["float64", "int64"] if op.integer else ["float64"]


@pytest.mark.parametrize("op", DIM_OPS, ids=lambda op: op.name)
def test_every_dim_raises_or_matches_torch(op):
    arity = op.dim.__code__.co_argcount - 2
    for dtype in _dtypes(op):
        for shape in SHAPES:
            arrays = _arrays(op, shape, dtype, arity)
            ours = [sg.tensor(a) for a in arrays]
            theirs = [torch.tensor(a) for a in arrays]
            for d in range(-len(shape) - 2, len(shape) + 2):
                _compare(
                    f"{op.name} {dtype} shape {shape} dim {d}",
                    _outcome(op.dim, sg, *ours, d),
                    _outcome(op.dim, torch, *theirs, d),
                )


@pytest.mark.parametrize("op", INDEX_OPS, ids=lambda op: op.name)
def test_every_index_raises_or_matches_torch(op):
    for dtype in _dtypes(op):
        for shape in SHAPES[1:]:
            (array,) = _arrays(op, shape, dtype, 1)
            ours, theirs = sg.tensor(array), torch.tensor(array)
            for i in range(-shape[0] - 2, shape[0] + 2):
                _compare(
                    f"{op.name} {dtype} shape {shape} index {i}",
                    _outcome(op.index, sg, ours, i),
                    _outcome(op.index, torch, theirs, i),
                )


def test_an_embedding_index_out_of_range_names_the_layer_and_the_index():
    layer = sg.nn.Embedding(3, 2)
    with pytest.raises(IndexError, match=r"Embedding\(3, 2\): embedding: index 7 is out of range"):
        layer(sg.tensor([[0, 7], [1, 2]]))
    with pytest.raises(IndexError, match="index -1 is out of range"):
        layer(sg.tensor([-1]))
    with pytest.raises(IndexError, match="index out of range"):
        torch.nn.Embedding(3, 2)(torch.tensor([-1]))


def test_zero_dim_tensors_take_dim_0_and_minus_1_as_torch():
    for lib in (sg, torch):
        x = lib.tensor(3.0)
        assert x.sum(0).item() == x.sum(-1).item() == 3.0
        assert x.softmax(0).item() == 1.0
        assert x.max(0)[0].item() == 3.0 and x.argmax(-1).item() == 0
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got 1"):
        sg.tensor(3.0).sum(1)


def test_t_refuses_more_than_two_dims():
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        sg.zeros(2, 2, 2).t()


@pytest.mark.parametrize("op", DIM_OPS, ids=lambda op: op.name)
def test_a_bool_dim_raises_or_matches_torch(op):
    """A bool is an int to Python, not to PyTorch's parser: a dim True raises its TypeError
    (but in a list after the first dim, which it does not check, it is the dim 1)."""
    arity = op.dim.__code__.co_argcount - 2
    for dtype in _dtypes(op):
        arrays = _arrays(op, (3, 2, 4), dtype, arity)
        ours = [sg.tensor(a) for a in arrays]
        theirs = [torch.tensor(a) for a in arrays]
        for d in (True, False):
            _compare(
                f"{op.name} {dtype} dim {d}",
                _outcome(op.dim, sg, *ours, d),
                _outcome(op.dim, torch, *theirs, d),
            )


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.prod(None),
        lambda m, x: m.prod(x, dim=None),
        lambda m, x: x.max(dim=None),
        lambda m, x: m.min(x, None),
        lambda m, x: x.median(None),
        lambda m, x: m.nanmedian(x, dim=None),
    ],
)
def test_an_explicit_dim_none_is_refused_where_pytorch_has_no_such_overload(call):
    """prod, max, min, median and nanmedian of all entries take no dim: None is a TypeError
    in PyTorch (sum, amax, var... take it as all dims), not the product of all entries."""
    for m in (torch, sg):
        with pytest.raises(TypeError):
            call(m, m.ones(2, 3))
