"""Transposed convolution against PyTorch: conv_transpose3d as a function and ConvTranspose3d as a
layer, and conv_transpose1d/2d, which now run through the same N-d function (conv_transpose1d in
1-d, no longer as a 2-d one of height 1). Outputs and the gradients of every input in float64
(tight) and float32 (loose) over strides, paddings, output paddings, dilations, groups, bias,
batched, unbatched and empty inputs; second derivatives against PyTorch's; the layer's
``output_size`` (spatial sizes or the whole shape); errors raised where PyTorch raises them; a
small network with ConvTranspose3d trained jitted ends where the eager one does, bit for bit.
gradcheck, gradgradcheck, jit and vmap of single calls come from the op table's conv_transpose
rows (tests/op_table.py)."""

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import (
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_against_torch,
    check_outputs_and_gradients,
    check_second_derivative,
    leaves,
    module_pair,
    parameter_pairs,
)

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import conv_functional as F

# ---- conv_transpose3d over a grid of options ------------------------------------------------


def _triple(value):
    return (value,) * 3 if isinstance(value, int) else value


GRID = [
    dict(stride=s, padding=p, output_padding=o, dilation=d, groups=g)
    for s, p, o, d, g in itertools.product(
        [1, 2, (2, 1, 3)], [0, 1, (2, 0, 1)], [0, 1, (1, 0, 2)], [1, (1, 2, 1)], [1, 2]
    )
    # PyTorch's rule: each output padding smaller than its stride or its dilation
    if all(a < max(b, c) for a, b, c in zip(_triple(o), _triple(s), _triple(d)))
]


def _arrays(groups, bias=True, x_shape=(2, 4, 3, 4, 3), kernel=(3, 2, 3), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal((x_shape[1], 6 // groups, *kernel))  # (C, O // groups, *K)
    return [x, w, rng.standard_normal(6) if bias else None]


def test_the_grid_is_wide():
    assert len(GRID) > 60
    assert {o["output_padding"] for o in GRID} == {0, 1, (1, 0, 2)}


@pytest.mark.parametrize("options", GRID, ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_conv_transpose3d_grid_float64(options, bias):
    check_against_torch(
        lambda x, w, b: F.conv_transpose3d(x, w, b, **options),
        lambda x, w, b: TF.conv_transpose3d(x, w, b, **options),
        _arrays(options["groups"], bias),
    )


@pytest.mark.parametrize("options", GRID[::5], ids=str)
def test_conv_transpose3d_grid_float32(options):
    check_against_torch(
        lambda x, w, b: F.conv_transpose3d(x, w, b, **options),
        lambda x, w, b: TF.conv_transpose3d(x, w, b, **options),
        _arrays(options["groups"]),
        dtype="float32",
    )


@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((3, 5, 4, 4, 3), (5, 2, 1, 1, 1), {}),  # 1x1x1 kernel
        ((3, 5, 4, 4, 3), (5, 2, 1, 1, 1), {"stride": 2, "output_padding": 1}),  # gaps
        ((1, 2, 1, 1, 1), (2, 3, 3, 4, 5), {}),  # one voxel: the kernel itself
        ((2, 3, 3, 2, 4), (3, 2, 4, 3, 2), {"stride": 3, "padding": (1, 2, 0)}),
        ((2, 6, 3, 3, 3), (6, 1, 3, 3, 3), {"groups": 6, "padding": 1}),  # depthwise
        ((2, 4, 3, 3, 3), (4, 2, 3, 3, 3), {"stride": 2, "padding": 2, "dilation": 3}),
        ((2, 4, 3, 3, 3), (4, 2, 2, 2, 2), {"stride": 3, "padding": 1, "output_padding": 2}),
        ((3, 3, 4, 2), (3, 2, 3, 3, 2), {"stride": 2, "output_padding": 1}),  # unbatched
        ((0, 2, 3, 3, 3), (2, 3, 3, 3, 3), {"stride": 2, "output_padding": 1}),  # empty batch
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv_transpose3d_shapes(x_shape, w_shape, options, dtype):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    arrays.append(rng.standard_normal(w_shape[1] * options.get("groups", 1)))
    check_against_torch(
        lambda x, w, b: F.conv_transpose3d(x, w, b, **options),
        lambda x, w, b: TF.conv_transpose3d(x, w, b, **options),
        arrays,
        dtype,
    )


def test_conv_transpose3d_of_a_strided_input():
    """An input that is a permuted view (as a convolution's result is: batch last in memory)."""
    x = np.random.default_rng(3).standard_normal((4, 5, 3, 3, 2)).transpose(4, 3, 2, 1, 0)
    w = np.random.default_rng(4).standard_normal((3, 2, 2, 3, 2))
    check_against_torch(
        lambda x, w: F.conv_transpose3d(x, w, stride=2, padding=1),
        lambda x, w: TF.conv_transpose3d(x, w, stride=2, padding=1),
        [x, w],
    )


def test_conv_transpose3d_second_derivative_matches_torch():
    """Through the double backward of Fold, Unfold and the matmul."""
    check_second_derivative(
        lambda F_, x, w, b: F_.conv_transpose3d(x, w, b, stride=2, padding=1, groups=2),
        _arrays(2),
    )


# ---- conv_transpose1d and conv_transpose2d: the same function -------------------------------

LOWER_GRID = [
    dict(stride=s, padding=p, output_padding=o, dilation=d, groups=g)
    for s, p, o, d, g in itertools.product([1, 3], [0, 2], [0, 1], [1, 2], [1, 2])
    if o < max(s, d)
]


@pytest.mark.parametrize("options", LOWER_GRID, ids=str)
@pytest.mark.parametrize("dims", [1, 2])
def test_conv_transpose1d_and_2d_grid(dims, options):
    rng = np.random.default_rng(dims)
    x = rng.standard_normal((2, 4, *(5, 4)[:dims]))
    w = rng.standard_normal((4, 2, *(3, 2)[:dims]))  # (C, O // groups, *K)
    arrays = [x, w, rng.standard_normal(w.shape[1] * options["groups"])]
    name = f"conv_transpose{dims}d"
    check_against_torch(
        lambda x, w, b: getattr(F, name)(x, w, b, **options),
        lambda x, w, b: getattr(TF, name)(x, w, b, **options),
        arrays,
    )


@pytest.mark.parametrize(
    "x_shape, options",
    [((3, 6), {}), ((0, 3, 6), {"stride": 2}), ((2, 3, 1), {"stride": 2, "output_padding": 1})],
    ids=str,
)
def test_conv_transpose1d_unbatched_empty_and_short(x_shape, options):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal((3, 2, 3))]
    check_against_torch(
        lambda x, w: F.conv_transpose1d(x, w, **options),
        lambda x, w: TF.conv_transpose1d(x, w, **options),
        arrays,
        "float32",
    )


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_an_empty_batch_takes_any_output_padding_as_torch(dims):
    """PyTorch checks output_padding against stride and dilation only for a batch that is not
    empty (ours refused an empty one)."""
    rng = np.random.default_rng(6)
    arrays = [np.zeros((0, 2, *(2,) * dims)), rng.standard_normal((2, 1, *(2,) * dims))]
    check_against_torch(
        lambda x, w: getattr(F, f"conv_transpose{dims}d")(x, w, output_padding=2),
        lambda x, w: getattr(TF, f"conv_transpose{dims}d")(x, w, output_padding=2),
        arrays,
    )
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, f"conv_transpose{dims}d")(
            m.zeros(1, 2, *(2,) * dims), m.zeros(2, 1, *(2,) * dims), output_padding=2
        ),
        RuntimeError,
        "output padding",
    )


def test_an_empty_batch_may_give_an_empty_size_as_torch():
    """PyTorch gives an empty batch an output of size 0 where the padding crops everything
    (ours raised), and raises where the size would be negative."""
    w = np.random.default_rng(7).standard_normal((2, 1, 1))
    check_against_torch(
        lambda x, w: F.conv_transpose1d(x, w, padding=1),
        lambda x, w: TF.conv_transpose1d(x, w, padding=1),
        [np.zeros((0, 2, 2)), w],
    )
    assert_raises_as_torch(
        lambda m: m.nn.functional.conv_transpose1d(m.zeros(0, 2, 1), m.ones(2, 1, 1), padding=1),
        RuntimeError,
        "empty output",
    )


def test_conv_transpose1d_runs_in_1d(monkeypatch):
    """No detour through 2-d: the columns are folded into a signal, not an image of height 1."""
    sizes, fold = [], F.Fold.apply

    def recorded(*args, **kwargs):
        sizes.append(kwargs["output_size"])
        return fold(*args, **kwargs)

    monkeypatch.setattr(F.Fold, "apply", recorded)
    out = F.conv_transpose1d(sg.randn(2, 3, 5), sg.randn(3, 2, 3), stride=2)
    assert out.shape == (2, 2, 11)
    assert sizes == [(11,)]


# ---- the layer -----------------------------------------------------------------------------

LAYERS = [
    ("plain", lambda nn: nn.ConvTranspose3d(2, 4, 3), (2, 2, 3, 4, 3)),
    (
        "upsample",
        lambda nn: nn.ConvTranspose3d(4, 2, 4, stride=2, padding=1),
        (2, 4, 3, 2, 3),
    ),
    (
        "options",
        lambda nn: nn.ConvTranspose3d(
            4, 6, (2, 3, 1), (2, 1, 2), (1, 1, 0), (1, 0, 1), groups=2, bias=False, dilation=2
        ),
        (2, 4, 3, 4, 3),
    ),
    ("unbatched", lambda nn: nn.ConvTranspose3d(3, 2, 2, stride=2), (3, 2, 3, 2)),
    ("empty_batch", lambda nn: nn.ConvTranspose3d(3, 2, 2, stride=2), (0, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("build, shape", [l[1:] for l in LAYERS], ids=[l[0] for l in LAYERS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_matches_torch(build, shape, dtype):
    ours, theirs = module_pair(build, dtype, init=lambda p: p.uniform_(-1, 1))
    x = np.random.default_rng(7).standard_normal(shape)
    check_against_torch(ours, theirs, [x], dtype)


@pytest.mark.parametrize("build, shape", [l[1:] for l in LAYERS], ids=[l[0] for l in LAYERS])
def test_layer_repr_and_parameters_match_torch(build, shape):
    ours, theirs = build(nn), build(torch.nn)
    assert repr(ours) == repr(theirs)
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert all(p.dtype == sg.float32 and p.requires_grad for p in ours.parameters())


# stride 2, padding 1, kernel 3 from (3, 4, 2): sizes (5, 7, 3) up to (6, 8, 4)
OUTPUT_SIZES = [
    ((2, 3, 3, 4, 2), (5, 7, 3)),  # the smallest sizes
    ((2, 3, 3, 4, 2), (6, 8, 4)),  # the largest: stride - 1 more
    ((2, 3, 3, 4, 2), (5, 8, 4)),
    ((2, 3, 3, 4, 2), [2, 4, 6, 7, 4]),  # the whole shape, as a list
    ((3, 3, 4, 2), (4, 6, 8, 3)),  # unbatched: channels and spatial sizes
    ((3, 3, 4, 2), (6, 7, 4)),
]


@pytest.mark.parametrize("shape, output_size", OUTPUT_SIZES, ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_output_size_matches_torch(shape, output_size, dtype):
    ours, theirs = module_pair(
        lambda nn: nn.ConvTranspose3d(3, 4, 3, stride=2, padding=1),
        dtype,
        init=lambda p: p.uniform_(-1, 1),
    )
    x = np.random.default_rng(8).standard_normal(shape)
    (xs, xt) = leaves(x, dtype)
    out, expected = ours(xs, output_size=output_size), theirs(xt, output_size=output_size)
    assert out.shape == tuple(expected.shape)
    check_outputs_and_gradients(
        out, expected, [(xs, xt)], dtype, params=parameter_pairs(ours, theirs)
    )


def test_default_initialisation():
    """PyTorch's: U(+-1/sqrt(fan_in)), fan_in from the weight's dim 1 (out_channels // groups)."""
    layer = nn.ConvTranspose3d(6, 64, (2, 3, 3), groups=2)
    bound = 1 / math.sqrt(32 * 2 * 3 * 3)
    for p in (layer.weight, layer.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.8 * bound
        assert abs(values.mean()) < 0.25 * bound


# ---- errors --------------------------------------------------------------------------------


def _conv_t3d(lib, x=(1, 2, 3, 3, 3), w=(2, 3, 2, 2, 2), bias=None, dtype=None, **options):
    weight = lib.ones(w) if dtype is None else lib.ones(w, dtype=dtype)
    bias = None if bias is None else lib.ones(bias)
    return lib.nn.functional.conv_transpose3d(lib.ones(x), weight, bias, **options)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda lib: _conv_t3d(lib, w=(3, 3, 2, 2, 2)), RuntimeError, "has 2 channels"),
        (
            lambda lib: _conv_t3d(lib, x=(1, 3, 3, 3, 3), w=(3, 2, 2, 2, 2), groups=2),
            RuntimeError,
            "groups=2",
        ),
        (lambda lib: _conv_t3d(lib, groups=0), RuntimeError, "groups"),
        (lambda lib: _conv_t3d(lib, output_padding=1), RuntimeError, "output padding"),
        (
            lambda lib: _conv_t3d(lib, stride=2, output_padding=(0, 2, 0)),
            RuntimeError,
            "output padding",
        ),
        (lambda lib: _conv_t3d(lib, output_padding=-1), RuntimeError, "negative output_padding"),
        (lambda lib: _conv_t3d(lib, padding=-1), RuntimeError, "padding must be non-negative"),
        (lambda lib: _conv_t3d(lib, stride=0), RuntimeError, "stride must be positive"),
        (lambda lib: _conv_t3d(lib, dilation=(1, 0, 1)), RuntimeError, "dilation must be"),
        (lambda lib: _conv_t3d(lib, stride=(1, 2)), RuntimeError, "stride must be an int or 3"),
        (lambda lib: _conv_t3d(lib, padding=(1, 2)), RuntimeError, "padding must be an int or"),
        (lambda lib: _conv_t3d(lib, output_padding=(1, 2)), RuntimeError, "output_padding"),
        (lambda lib: _conv_t3d(lib, padding="same"), TypeError, "padding must be an int"),
        (lambda lib: _conv_t3d(lib, stride=1.5), TypeError, "stride must be an int"),
        (lambda lib: _conv_t3d(lib, padding=2), RuntimeError, "empty output"),
        (lambda lib: _conv_t3d(lib, dtype=lib.float64), RuntimeError, "dtype"),
        (lambda lib: _conv_t3d(lib, x=(3, 3, 3)), RuntimeError, "expected a 4-d or 5-d input"),
        (lambda lib: _conv_t3d(lib, x=(1, 1, 2, 3, 3, 3)), RuntimeError, "4-d or 5-d"),
        (lambda lib: _conv_t3d(lib, w=(2, 3, 2, 2)), RuntimeError, "expected a 5-d weight"),
        (lambda lib: _conv_t3d(lib, bias=(2,)), RuntimeError, "bias"),
        (lambda lib: _conv_t3d(lib, x=(1, 2, 0, 3, 3)), RuntimeError, "only the batch"),
        (
            lambda lib: _conv_t3d(lib, x=(1, 0, 3, 3, 3), w=(0, 3, 2, 2, 2)),
            RuntimeError,
            "only the batch",
        ),
    ],
)
def test_conv_transpose3d_errors_as_torch(call, error, message):
    assert_raises_as_torch(call, error, message)


def _layer(lib, **options):
    return lib.nn.ConvTranspose3d(2, 3, 3, stride=2, **options)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda lib: _layer(lib, padding_mode="reflect"), ValueError, '"zeros" padding mode'),
        (lambda lib: lib.nn.ConvTranspose3d(3, 4, 3, groups=2), ValueError, "divisible"),
        (
            lambda lib: _layer(lib)(lib.ones(1, 2, 3, 3, 3), output_size=(9, 8, 8)),
            ValueError,
            "output size",
        ),
        (
            lambda lib: _layer(lib)(lib.ones(1, 2, 3, 3, 3), output_size=(6, 8, 8)),
            ValueError,
            "output size",
        ),
        (
            lambda lib: _layer(lib)(lib.ones(1, 2, 3, 3, 3), output_size=(8, 8)),
            ValueError,
            "3 or 5 entries",
        ),
        (
            lambda lib: _layer(lib)(lib.ones(1, 2, 3, 3, 3), output_size=(3, 8, 8, 8)),
            ValueError,
            "3 or 5 entries",
        ),
        (
            lambda lib: _layer(lib)(lib.ones(2, 3, 3, 3), output_size=(1, 3, 8, 8, 8)),
            ValueError,
            "3 or 4 entries",
        ),
        (lambda lib: _layer(lib)(lib.ones(1, 3, 3, 3, 3)), RuntimeError, "channels"),
    ],
)
def test_layer_errors_as_torch(call, error, message):
    assert_raises_as_torch(call, error, message)


# ---- a small network, jitted ---------------------------------------------------------------


class _Autoencoder(nn.Module):
    """Conv3d down, ConvTranspose3d back up to the input's exact size (``output_size``)."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv3d(1, 4, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose3d(4, 2, 3, stride=2, padding=1, groups=2)
        self.out = nn.ConvTranspose3d(2, 1, (1, 3, 1), padding=(0, 1, 0), bias=False)

    def forward(self, x):
        h = self.down(x).relu()
        return self.out(self.up(h, output_size=x.shape).tanh())


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_conv_transpose3d_network_trains_jitted_as_eager(optimizer):
    """Five training steps jitted end where five eager steps end, bit for bit: losses,
    parameters and gradients (a replay makes the eager step's array calls)."""
    make_opt = {
        "sgd": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9),
        "adam": lambda ps: sg.optim.Adam(ps, lr=0.01),
    }[optimizer]
    models = []
    for _ in range(2):
        sg.manual_seed(0)
        models.append(_Autoencoder())
    opts = [make_opt(model.parameters()) for model in models]

    def train_step(model, opt):
        def step(x):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), x)
            loss.backward()
            opt.step()
            return loss

        return step

    eager, jitted = train_step(models[0], opts[0]), sg.jit(train_step(models[1], opts[1]))
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(5):
        x = sg.tensor(rng.standard_normal((3, 1, 5, 6, 7)).astype(np.float32))
        losses.append((eager(x).item(), jitted(x).item()))
    assert [e for e, _ in losses] == [j for _, j in losses]
    assert losses[-1][0] != losses[0][0]  # it trained
    for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy(), err_msg=name)


def test_doc_examples():
    for function in (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d):
        assert_doc_examples_run(function, vars(F))
    assert_doc_examples_run(nn.ConvTranspose3d)
