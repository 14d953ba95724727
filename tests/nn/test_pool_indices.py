"""Max pooling's indices against PyTorch: ``return_indices=True`` of max_pool1d, max_pool2d,
max_pool3d, adaptive_max_pool2d and their layers, and the max unpoolings that take them back
(max_unpool1d/2d/3d, MaxUnpool1d/2d/3d). The indices (int64, into each flattened plane) must equal
PyTorch's exactly, over strides, paddings, dilations, ceil mode, batched and unbatched inputs,
ties (the first maximum in window order), NaN (the last NaN) and windows of -inf; outputs and
gradients as everywhere, float64 tight and float32 loose; errors where PyTorch raises them.
gradcheck, gradgradcheck and jit of pooling into unpooling: the op table's max_unpool2d row."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import (
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_against_torch,
    leaves,
)

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import conv_functional as F


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _check_pool(ours, theirs, x, dtype="float64"):
    """Output and gradient against PyTorch, and the indices equal to PyTorch's, int64."""
    (out, indices), (expected, expected_indices) = check_against_torch(ours, theirs, [x], dtype)
    assert indices.dtype == sg.int64 and not indices.requires_grad
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    return out, indices


GRID = [
    dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=c)
    for k, s, p, d, c in itertools.product([2, 3], [None, 1, 2], [0, 1], [1, 2], [False, True])
]
SHAPES = {1: (2, 3, 11), 2: (2, 3, 7, 6), 3: (2, 2, 5, 6, 7)}


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("options", GRID, ids=str)
def test_max_pool_indices_grid(dims, options):
    name = f"max_pool{dims}d"
    _check_pool(
        lambda x: getattr(F, name)(x, **options, return_indices=True),
        lambda x: getattr(TF, name)(x, **options, return_indices=True),
        _input(SHAPES[dims]),
    )


@pytest.mark.parametrize(
    "dims, options",
    [
        (1, dict(kernel_size=3, stride=2, padding=1)),
        (2, dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
        (2, dict(kernel_size=2)),  # tiles: the reshape path
        (3, dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=1, ceil_mode=True)),
    ],
    ids=str,
)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_max_pool_indices_batched_unbatched_and_float32(dims, options, batched, dtype):
    name = f"max_pool{dims}d"
    shape = SHAPES[dims] if batched else SHAPES[dims][1:]
    _check_pool(
        lambda x: getattr(F, name)(x, **options, return_indices=True),
        lambda x: getattr(TF, name)(x, **options, return_indices=True),
        _input(shape),
        dtype,
    )


@pytest.mark.parametrize(
    "dims, options",
    [
        (1, dict(kernel_size=3, stride=1)),
        (2, dict(kernel_size=2)),
        (2, dict(kernel_size=3, stride=2, padding=1)),
        (2, dict(kernel_size=(2, 3), dilation=(2, 1), ceil_mode=True)),
        (3, dict(kernel_size=2, stride=1, padding=1)),
    ],
    ids=str,
)
def test_indices_of_ties_are_the_first_maximum(dims, options):
    """Few distinct values, so most windows hold ties; PyTorch's index (and gradient) is the
    first maximum in window order."""
    x = np.random.default_rng(3).integers(0, 3, SHAPES[dims]).astype(float)
    name = f"max_pool{dims}d"
    _check_pool(
        lambda t: getattr(F, name)(t, **options, return_indices=True),
        lambda t: getattr(TF, name)(t, **options, return_indices=True),
        x,
    )


@pytest.mark.parametrize(
    "options", [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1)], ids=str
)
def test_indices_of_nan_are_the_last_nan(options):
    """A NaN wins its window; PyTorch's loop lets each NaN take over, so the last one."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 3, (2, 2, 6, 6)).astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    xs, xt = leaves(x)
    (out, indices), (expected, expected_indices) = (
        F.max_pool2d(xs, **options, return_indices=True),
        TF.max_pool2d(xt, **options, return_indices=True),
    )
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_array_equal(xs.grad.numpy(), xt.grad.numpy())


def test_index_of_a_window_of_minus_infinity_is_its_first_entry_inside():
    """Where a window holds only -inf and padding, PyTorch's index is its first entry inside
    the input (its loop starts there), never the padding."""
    x = np.full((1, 2, 5, 5), -np.inf)
    x[0, 1, 2:, 3:] = np.arange(6.0).reshape(3, 2)
    for options in (dict(kernel_size=2, padding=1), dict(kernel_size=3, stride=2, padding=1)):
        ours = F.max_pool2d(sg.tensor(x), **options, return_indices=True)
        theirs = TF.max_pool2d(torch.tensor(x), **options, return_indices=True)
        np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


# ---- the layers ----------------------------------------------------------------------------

LAYERS = [
    ("maxpool1d", lambda nn: nn.MaxPool1d(3, 2, padding=1, return_indices=True), (2, 3, 10)),
    ("maxpool2d", lambda nn: nn.MaxPool2d(2, return_indices=True), (2, 3, 7, 6)),
    ("maxpool2d_options", lambda nn: nn.MaxPool2d((3, 2), 1, 1, (1, 2), True, True), (3, 7, 6)),
    (
        "maxpool3d",
        lambda nn: nn.MaxPool3d(2, 1, ceil_mode=True, return_indices=True),
        (2, 2, 4, 5, 3),
    ),
    ("adaptive", lambda nn: nn.AdaptiveMaxPool2d((3, 4), return_indices=True), (2, 3, 7, 6)),
    ("adaptive_none", lambda nn: nn.AdaptiveMaxPool2d((None, 4), return_indices=True), (3, 7, 9)),
]


@pytest.mark.parametrize("build, shape", [l[1:] for l in LAYERS], ids=[l[0] for l in LAYERS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_returns_the_indices_as_torch(build, shape, dtype):
    _check_pool(build(nn), build(torch.nn), _input(shape), dtype)
    assert repr(build(nn)) == repr(build(torch.nn))


# ---- adaptive_max_pool2d ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, output_size",
    [
        ((2, 3, 8, 6), (4, 3)),  # windows that tile the input
        ((2, 3, 7, 6), 3),  # overlapping windows in H
        ((2, 3, 5, 7), (3, 4)),
        ((2, 3, 4, 5), (6, 7)),  # larger than the input: windows repeat entries
        ((3, 7, 6), (2, 5)),  # unbatched
    ],
    ids=str,
)
@pytest.mark.parametrize("values", ["real", "ties", "nan"])
def test_adaptive_max_pool2d_indices(shape, output_size, values):
    rng = np.random.default_rng(5)
    x = _input(shape) if values == "real" else rng.integers(0, 3, shape).astype(float)
    if values == "nan":
        x[rng.random(shape) < 0.15] = np.nan
    ours = F.adaptive_max_pool2d(sg.tensor(x), output_size, return_indices=True)
    theirs = TF.adaptive_max_pool2d(torch.tensor(x), output_size, return_indices=True)
    assert ours[1].dtype == sg.int64
    for mine, their in zip(ours, theirs):
        np.testing.assert_array_equal(mine.numpy(), their.numpy())
    if values == "real":
        _check_pool(
            lambda t: F.adaptive_max_pool2d(t, output_size, return_indices=True),
            lambda t: TF.adaptive_max_pool2d(t, output_size, return_indices=True),
            x,
        )


# ---- max unpooling ---------------------------------------------------------------------------

UNPOOL = [
    (1, (2, 3, 11), dict(kernel_size=2), None),
    (1, (2, 3, 11), dict(kernel_size=3, stride=3, padding=1), (11,)),
    (1, (3, 9), dict(kernel_size=2, stride=2), (2, 3, 9)),  # unbatched, N and C in output_size
    (2, (2, 3, 7, 6), dict(kernel_size=2), None),
    (2, (2, 3, 7, 6), dict(kernel_size=2), (7, 6)),
    (2, (2, 3, 7, 6), dict(kernel_size=(2, 3), padding=1), (2, 3, 7, 6)),
    (2, (3, 8, 6), dict(kernel_size=(3, 2), stride=(3, 2)), (8, 6)),  # unbatched
    (2, (0, 3, 6, 6), dict(kernel_size=3, stride=3, padding=1), (6, 6)),  # an empty batch
    (3, (2, 2, 5, 4, 6), dict(kernel_size=2), (5, 4, 6)),
    (3, (2, 5, 4, 6), dict(kernel_size=(1, 2, 3), padding=(0, 1, 1)), (5, 4, 6)),  # unbatched
]


@pytest.mark.parametrize("dims, shape, options, output_size", UNPOOL, ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_max_unpool_matches_torch(dims, shape, options, output_size, dtype):
    """Pooling (windows that do not overlap, so each entry is written once) then unpooling:
    the output and the gradient of the input through both."""
    pool, unpool = f"max_pool{dims}d", f"max_unpool{dims}d"

    def round_trip(functional):
        def call(x):
            out, indices = getattr(functional, pool)(x, **options, return_indices=True)
            return getattr(functional, unpool)(out, indices, **options, output_size=output_size)

        return call

    check_against_torch(round_trip(F), round_trip(TF), [_input(shape)], dtype)


def test_max_unpool_of_given_values_and_indices():
    """Unpooling a tensor and indices it is handed (not a pooling's): entries land at the
    indices, the gradient comes back from them; a repeated index keeps one write, and its
    gradient goes back to every entry that names it, as PyTorch's."""
    rng = np.random.default_rng(6)
    values = rng.standard_normal((2, 3, 2, 2))
    indices = rng.integers(0, 16, values.shape)
    indices[0, 0, 0, :2] = 5  # a repeat, the same value written twice
    values[0, 0, 0, :2] = 1.5
    ours_i, theirs_i = sg.tensor(indices), torch.tensor(indices)
    check_against_torch(
        lambda v: F.max_unpool2d(v, ours_i, 2, output_size=(4, 4)),
        lambda v: TF.max_unpool2d(v, theirs_i, 2, output_size=(4, 4)),
        [values],
    )


UNPOOL_LAYERS = [
    ("unpool1d", lambda nn: nn.MaxUnpool1d(2), 1, (2, 3, 8)),
    ("unpool2d", lambda nn: nn.MaxUnpool2d((2, 3), padding=(0, 1)), 2, (2, 3, 6, 7)),
    ("unpool3d", lambda nn: nn.MaxUnpool3d(2, stride=2), 3, (2, 5, 4, 6)),
]


@pytest.mark.parametrize(
    "build, dims, shape", [l[1:] for l in UNPOOL_LAYERS], ids=[l[0] for l in UNPOOL_LAYERS]
)
def test_unpool_layer_matches_torch(build, dims, shape):
    ours, theirs = build(nn), build(torch.nn)
    assert repr(ours) == repr(theirs)
    options = dict(kernel_size=ours.kernel_size, stride=ours.stride, padding=ours.padding)
    x = _input(shape)
    pooled, indices = getattr(F, f"max_pool{dims}d")(sg.tensor(x), **options, return_indices=True)
    t_indices = getattr(TF, f"max_pool{dims}d")(torch.tensor(x), **options, return_indices=True)[1]
    check_against_torch(
        lambda v: ours(v, indices, output_size=shape[-dims:]),
        lambda v: theirs(v, t_indices, output_size=shape[-dims:]),
        [pooled.numpy()],
    )


# ---- errors --------------------------------------------------------------------------------


def _unpool(lib, values=(1, 2, 2, 2), indices=None, dtype=None, **options):
    x = lib.ones(values)
    indices = lib.zeros(values if indices is None else indices, dtype=dtype or lib.int64)
    return lib.nn.functional.max_unpool2d(x, indices, 2, **options)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda lib: _unpool(lib, dtype=lib.int32), RuntimeError, "int64"),
        (lambda lib: _unpool(lib, dtype=lib.float32), RuntimeError, "int64"),
        (lambda lib: _unpool(lib, indices=(1, 2, 2, 1)), RuntimeError, "do not match"),
        (lambda lib: _unpool(lib, values=(2, 2)), RuntimeError, "3-d or 4-d input"),
        (lambda lib: _unpool(lib, output_size=(6, 6)), ValueError, "between 2 and 6"),
        (lambda lib: _unpool(lib, output_size=(2, 4, 4)), ValueError, "2 or 4 entries"),
        (
            lambda lib: lib.nn.functional.max_unpool2d(
                lib.ones(1, 1, 2, 2), lib.full((1, 1, 2, 2), 16, dtype=lib.int64), 2
            ),
            RuntimeError,
            "invalid max index 16 .* 4x4",
        ),
        (
            lambda lib: lib.nn.functional.max_unpool3d(
                lib.ones(1, 1, 1, 1, 2), lib.tensor([[[[[0, -1]]]]]), 2
            ),
            RuntimeError,
            "invalid max index -1",
        ),
        (
            lambda lib: lib.nn.functional.max_unpool1d(
                lib.ones(3), lib.zeros(3, dtype=lib.int64), 2
            ),
            RuntimeError,
            "2-d or 3-d input",
        ),
    ],
)
def test_unpool_errors_as_torch(call, error, message):
    assert_raises_as_torch(call, error, message)


def test_doc_examples():
    for function in (F.max_pool1d, F.max_pool3d, F.max_unpool1d, F.max_unpool2d, F.max_unpool3d):
        assert_doc_examples_run(function, vars(F))
    for layer in (nn.MaxUnpool1d, nn.MaxUnpool2d, nn.MaxUnpool3d):
        assert_doc_examples_run(layer)
