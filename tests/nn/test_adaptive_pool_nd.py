"""Adaptive pooling in 1-3 dims against PyTorch: adaptive_avg_pool3d, adaptive_max_pool1d and
adaptive_max_pool3d (new) and adaptive_avg_pool1d/2d, adaptive_max_pool2d (now the same N-d
functions) as functions, and their layers. Outputs and gradients in float64 (tight) and float32
(loose) over windows that tile the input, overlap, repeat entries (outputs larger than the
input), ``None`` and zero sizes, unbatched and empty batches; max pooling's indices equal to
PyTorch's, ties and NaNs included; autocast's dtypes; errors raised where PyTorch raises them.
gradcheck, gradgradcheck, jit and vmap of single calls come from the op table's adaptive rows
(tests/op_table.py)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import (
    assert_close,
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_against_torch,
)

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import conv_functional as F

# (input shape, output_size) per number of spatial dims
GEOMETRIES = {
    1: [
        ((2, 3, 8), 4),  # windows that tile the input
        ((2, 3, 7), 3),  # overlapping windows
        ((2, 3, 7), (5,)),
        ((2, 3, 4), 7),  # larger than the input: windows repeat entries
        ((3, 9), 4),  # unbatched
        ((0, 3, 5), 2),  # an empty batch
        ((2, 3, 5), 0),  # no output at all, as PyTorch allows
        ((2, 3, 5), 5),  # windows of one entry
    ],
    2: [
        ((2, 3, 8, 6), (4, 3)),
        ((2, 3, 7, 6), 3),
        ((2, 3, 5, 7), (None, 4)),
        ((2, 3, 4, 5), (6, 7)),
        ((3, 7, 6), (2, 5)),
        ((0, 2, 5, 4), 3),
        ((2, 3, 5, 4), (0, 2)),
    ],
    3: [
        ((2, 3, 4, 6, 8), (2, 3, 4)),  # tiles
        ((2, 3, 5, 7, 6), (3, 4, 4)),  # overlapping in every dim
        ((2, 3, 5, 7, 6), 3),
        ((2, 2, 3, 4, 5), (5, 6, 7)),  # larger than the input
        ((2, 3, 5, 7, 6), (None, 2, 5)),  # None keeps a dim
        ((2, 3, 5, 7, 6), (5, None, 6)),  # only the last dim pooled
        ((2, 3, 5, 7, 6), (2, 7, None)),  # only the first dim pooled
        ((3, 5, 4, 6), (2, 3, 4)),  # unbatched
        ((0, 2, 4, 5, 3), 2),  # an empty batch
        ((2, 3, 4, 5, 3), (2, 0, 3)),  # a zero output size
        ((1, 1, 9, 1, 1), (4, 1, 1)),
    ],
}
CASES = [(dims, shape, size) for dims, cases in GEOMETRIES.items() for shape, size in cases]


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _grad_ok(shape, size) -> bool:
    """PyTorch's backward of an adaptive pooling refuses an empty output (ours gives zeros), so
    those cases compare forward only."""
    out = (size,) * (len(shape) - 2) if isinstance(size, int) else size
    return 0 not in out


@pytest.mark.parametrize("dims, shape, output_size", CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adaptive_avg_pool_matches_torch(dims, shape, output_size, dtype):
    name = f"adaptive_avg_pool{dims}d"
    check_against_torch(
        lambda x: getattr(F, name)(x, output_size),
        lambda x: getattr(TF, name)(x, output_size),
        [_input(shape)],
        dtype,
        grad=_grad_ok(shape, output_size),
    )


@pytest.mark.parametrize("dims, shape, output_size", CASES, ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adaptive_max_pool_matches_torch(dims, shape, output_size, dtype):
    """Values, indices (int64, equal) and the gradient, which goes to the first maximum."""
    name = f"adaptive_max_pool{dims}d"
    ours, theirs = check_against_torch(
        lambda x: getattr(F, name)(x, output_size, return_indices=True),
        lambda x: getattr(TF, name)(x, output_size, return_indices=True),
        [_input(shape)],
        dtype,
        grad=_grad_ok(shape, output_size),
    )
    assert ours[1].dtype == sg.int64 and not ours[1].requires_grad
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


@pytest.mark.parametrize("dims, shape, output_size", CASES, ids=str)
@pytest.mark.parametrize("values", ["ties", "nan"])
def test_adaptive_max_pool_indices_with_ties_and_nans(dims, shape, output_size, values):
    """Few distinct values (ties: the first maximum wins) and NaNs (the NaN wins), as PyTorch."""
    rng = np.random.default_rng(dims)
    x = rng.integers(0, 3, shape).astype(float)
    if values == "nan":
        x[rng.random(shape) < 0.15] = np.nan
    name = f"adaptive_max_pool{dims}d"
    ours = getattr(F, name)(sg.tensor(x), output_size, return_indices=True)
    theirs = getattr(TF, name)(torch.tensor(x), output_size, return_indices=True)
    for mine, their in zip(ours, theirs):
        np.testing.assert_array_equal(mine.numpy(), their.numpy())
    if values == "ties" and _grad_ok(shape, output_size):
        check_against_torch(
            lambda t: getattr(F, name)(t, output_size),
            lambda t: getattr(TF, name)(t, output_size),
            [x],
        )


def test_adaptive_avg_pool3d_second_derivative_matches_torch():
    """d/dx of |d loss/dx|^2 through the window sums (the gradient of a linear map is constant,
    so the pooling of a square is taken)."""
    x = _input((2, 2, 5, 4, 6))
    results = []
    for lib, functional in ((sg, F), (torch, TF)):
        xt = lib.tensor(x, requires_grad=True)
        out = functional.adaptive_avg_pool3d(xt * xt, (3, 3, 4))
        (gx,) = lib.autograd.grad((out * out).sum(), xt, create_graph=True)
        (gx * gx).sum().backward()
        results.append(xt.grad)
    assert_close(*results)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    "name, output_size",
    [
        ("adaptive_avg_pool3d", (2, 3, 2)),
        ("adaptive_max_pool3d", (2, 3, 2)),
        ("adaptive_max_pool1d", 3),
        ("adaptive_avg_pool1d", 3),
    ],
)
def test_autocast_dtypes_as_torch(name, output_size, low):
    """PyTorch's CPU autocast runs the 3-d adaptive poolings in float32; the others keep the
    input's dtype."""
    x = _input((1, 2, 5, 4, 6) if name.endswith("3d") else (1, 2, 7))
    outs = []
    for lib, region in ((sg, sg.autocast), (torch, torch.autocast)):
        with region("cpu", dtype=getattr(lib, low)):
            out = getattr(lib.nn.functional, name)(
                lib.tensor(x, dtype=getattr(lib, low)), output_size
            )
        outs.append(out)
    assert str(outs[0].dtype).split(".")[-1] == str(outs[1].dtype).split(".")[-1]
    assert_close(outs[0], outs[1], low)


# ---- layers ----------------------------------------------------------------------------------

LAYERS = [
    ("avg3d", lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)), (2, 3, 5, 4, 7)),
    ("avg3d_int", lambda nn: nn.AdaptiveAvgPool3d(3), (3, 5, 4, 7)),
    ("max1d", lambda nn: nn.AdaptiveMaxPool1d(3), (2, 3, 7)),
    ("max1d_indices", lambda nn: nn.AdaptiveMaxPool1d(4, return_indices=True), (3, 9)),
    ("max3d", lambda nn: nn.AdaptiveMaxPool3d((3, 2, None)), (2, 3, 5, 4, 7)),
    ("max3d_indices", lambda nn: nn.AdaptiveMaxPool3d(2, True), (2, 3, 5, 4, 7)),
    ("max2d_indices", lambda nn: nn.AdaptiveMaxPool2d((3, 2), True), (2, 3, 5, 7)),
]


@pytest.mark.parametrize("build, shape", [l[1:] for l in LAYERS], ids=[l[0] for l in LAYERS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_matches_torch(build, shape, dtype):
    ours, theirs = build(nn), build(torch.nn)
    assert repr(ours) == repr(theirs)
    assert list(ours.parameters()) == [] and list(ours.state_dict()) == []
    out, expected = check_against_torch(ours, theirs, [_input(shape)], dtype)
    if isinstance(expected, tuple):
        np.testing.assert_array_equal(out[1].numpy(), expected[1].numpy())


# ---- errors ----------------------------------------------------------------------------------


def _pool(lib, name, shape, output_size, dtype=None):
    x = lib.ones(shape) if dtype is None else lib.ones(shape, dtype=dtype)
    return getattr(lib.nn.functional, name)(x, output_size)


ERRORS = [
    # output sizes of another count, negative, or not ints
    ("adaptive_avg_pool3d", (1, 2, 4, 4, 4), (2, 2), RuntimeError, "3 entries"),
    ("adaptive_max_pool3d", (1, 2, 4, 4, 4), (2, 2, 2, 2), RuntimeError, "3 entries"),
    ("adaptive_max_pool1d", (1, 2, 4), (2, 2), RuntimeError, "1 entries"),
    ("adaptive_avg_pool1d", (1, 2, 4), (2, 2), RuntimeError, "1 entries"),
    ("adaptive_avg_pool2d", (1, 2, 4, 4), (2, 2, 2), RuntimeError, "2 entries"),
    ("adaptive_avg_pool3d", (1, 2, 4, 4, 4), (2, -2, 2), RuntimeError, "negative"),
    ("adaptive_max_pool3d", (1, 2, 4, 4, 4), (2, -2, 2), RuntimeError, "negative"),
    ("adaptive_max_pool1d", (1, 2, 4), -1, RuntimeError, "negative"),
    ("adaptive_avg_pool3d", (1, 2, 4, 4, 4), (2, 2.5, 2), TypeError, "ints"),
    ("adaptive_max_pool3d", (1, 2, 4, 4, 4), 2.0, TypeError, "ints"),
    ("adaptive_avg_pool3d", (1, 2, 4, 4, 4), True, TypeError, "ints"),
    ("adaptive_max_pool1d", (1, 2, 4), None, TypeError, "ints"),
    ("adaptive_max_pool3d", (1, 2, 4, 4, 4), None, TypeError, "ints"),
    ("adaptive_avg_pool1d", (1, 2, 4), (None,), TypeError, "ints"),
    # inputs of another rank, with empty dims, of integers
    ("adaptive_avg_pool3d", (4, 4, 4), 2, RuntimeError, "expected a 4-d or 5-d input"),
    ("adaptive_max_pool3d", (1, 1, 2, 4, 4, 4), 2, RuntimeError, "4-d or 5-d"),
    ("adaptive_max_pool1d", (4,), 2, RuntimeError, "expected a 2-d or 3-d input"),
    ("adaptive_max_pool1d", (1, 2, 3, 4), 2, RuntimeError, "2-d or 3-d"),
    ("adaptive_avg_pool3d", (2, 3, 0, 4, 4), 2, RuntimeError, "dim 2 is empty"),
    ("adaptive_avg_pool3d", (2, 0, 4, 4, 4), 2, RuntimeError, "dim 1 is empty"),
    ("adaptive_avg_pool3d", (3, 0, 4, 4), 2, RuntimeError, "dim 1 is empty"),
    ("adaptive_max_pool3d", (2, 0, 4, 4, 4), 2, RuntimeError, "dim 1 is empty"),
    ("adaptive_max_pool1d", (2, 0, 4), 2, RuntimeError, "dim 1 is empty"),
    ("adaptive_max_pool1d", (2, 3, 0), 2, RuntimeError, "dim 2 is empty"),
    ("adaptive_max_pool2d", (2, 0, 4, 4), 2, RuntimeError, "dim 1 is empty"),
    ("adaptive_avg_pool2d", (2, 3, 0, 4), 2, RuntimeError, "dim 2 is empty"),
    ("adaptive_avg_pool1d", (0, 3, 0), 2, RuntimeError, "dim 2 is empty"),
]


@pytest.mark.parametrize(
    "name, shape, output_size, error, message", ERRORS, ids=[str(e[:3]) for e in ERRORS]
)
def test_errors_as_torch(name, shape, output_size, error, message):
    assert_raises_as_torch(lambda lib: _pool(lib, name, shape, output_size), error, message)


@pytest.mark.parametrize(
    "name", ["adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool1d"]
)
def test_integer_inputs_are_refused_as_torch(name):
    shape = (1, 1, 4, 4, 4) if name.endswith("3d") else (1, 1, 4)
    assert_raises_as_torch(
        lambda lib: _pool(lib, name, shape, 2, dtype=lib.int64), NotImplementedError, "int64"
    )


@pytest.mark.parametrize(
    "name, shape",
    [
        ("adaptive_avg_pool1d", (2, 0, 5)),  # the 1-d and 2-d averages take no channels
        ("adaptive_avg_pool2d", (2, 0, 5, 4)),
        ("adaptive_avg_pool1d", (0, 5)),  # unbatched: no channels
        ("adaptive_max_pool1d", (0, 5)),
        ("adaptive_max_pool3d", (0, 5, 4, 3)),
    ],
)
def test_empty_inputs_torch_takes(name, shape):
    out = _pool(sg, name, shape, 2)
    assert out.shape == tuple(_pool(torch, name, shape, 2).shape)


def test_doc_examples():
    for function in (
        F.adaptive_avg_pool1d,
        F.adaptive_avg_pool3d,
        F.adaptive_max_pool1d,
        F.adaptive_max_pool3d,
    ):
        assert_doc_examples_run(function, vars(F))
    for layer in (nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool3d):
        assert_doc_examples_run(layer)
