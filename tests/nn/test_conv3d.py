"""3-d convolution and pooling against PyTorch: conv3d, max_pool3d and avg_pool3d as functions,
Conv3d (every padding mode), MaxPool3d and AvgPool3d as layers. Outputs and the gradients of every
input in float64 (tight) and float32 (loose), over strides, paddings (numbers, "same", "valid"),
dilations, groups, ceil mode, batched and unbatched inputs; second derivatives against PyTorch's;
errors raised where PyTorch raises them; a small Conv3d network trained jitted ends where the
eager one does, bit for bit. gradcheck, gradgradcheck, jit and vmap of single calls come from the
op table's conv3d and pool3d rows (tests/op_table.py)."""

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
    check_second_derivative,
    module_pair,
)

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn import conv_functional as F

# PyTorch warns that "same" with an even kernel copies the input; nothing to check there
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")

# ---- conv3d over a grid of options ---------------------------------------------------------

GRID = [
    (stride, padding, dilation, groups)
    for stride, padding, dilation, groups in itertools.product(
        [1, 2, (1, 2, 1)], [0, 1, (1, 0, 2), "same", "valid"], [1, (2, 1, 1)], [1, 2]
    )
    if not (padding == "same" and stride != 1)  # PyTorch refuses it too (tested below)
]


def _conv3d_arrays(groups, bias=True, kernel=(3, 2, 3), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 4, 5, 6, 5))  # odd and even sizes, a kernel of both
    w = rng.standard_normal((6, 4 // groups, *kernel))
    return [x, w, rng.standard_normal(6) if bias else None]


@pytest.mark.parametrize("stride, padding, dilation, groups", GRID, ids=str)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_conv3d_grid_float64(stride, padding, dilation, groups, bias):
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_against_torch(
        lambda x, w, b: F.conv3d(x, w, b, **options),
        lambda x, w, b: TF.conv3d(x, w, b, **options),
        _conv3d_arrays(groups, bias),
    )


@pytest.mark.parametrize("stride, padding, dilation, groups", GRID[::4], ids=str)
def test_conv3d_grid_float32(stride, padding, dilation, groups):
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_against_torch(
        lambda x, w, b: F.conv3d(x, w, b, **options),
        lambda x, w, b: TF.conv3d(x, w, b, **options),
        _conv3d_arrays(groups),
        dtype="float32",
    )


@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((3, 5, 4, 4, 3), (2, 5, 1, 1, 1), {}),  # 1x1x1 kernel: the columns are the input itself
        ((1, 2, 3, 4, 5), (3, 2, 3, 4, 5), {}),  # the kernel covers the whole input
        ((2, 3, 4, 5, 6), (4, 3, 2, 2, 4), {"padding": "same", "dilation": (1, 3, 1)}),
        ((2, 6, 4, 4, 4), (6, 1, 3, 3, 3), {"groups": 6, "padding": 1}),  # depthwise
        ((3, 6, 5, 4), (2, 3, 3, 3, 2), {"padding": 1}),  # unbatched (C, D, H, W)
        ((0, 2, 4, 4, 4), (3, 2, 3, 3, 3), {"padding": 1}),  # an empty batch
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv3d_shapes(x_shape, w_shape, options, dtype):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    arrays.append(rng.standard_normal(w_shape[0]))
    check_against_torch(
        lambda x, w, b: F.conv3d(x, w, b, **options),
        lambda x, w, b: TF.conv3d(x, w, b, **options),
        arrays,
        dtype,
    )


def test_conv3d_of_a_strided_input():
    """An input that is a permuted view (as a previous convolution's result is)."""
    x = np.random.default_rng(3).standard_normal((4, 5, 6, 3, 2)).transpose(4, 3, 2, 1, 0)
    w = np.random.default_rng(4).standard_normal((2, 3, 2, 2, 2))
    check_against_torch(
        lambda x, w: F.conv3d(x, w, padding=1),
        lambda x, w: TF.conv3d(x, w, padding=1),
        [x, w],
    )


def test_conv3d_second_derivative_matches_torch():
    """Through the double backward of Unfold, Fold and the matmul."""
    check_second_derivative(
        lambda F_, x, w, b: F_.conv3d(x, w, b, stride=2, padding=1, groups=2), _conv3d_arrays(2)
    )


# ---- the layer -----------------------------------------------------------------------------

LAYERS = [
    ("conv3d", lambda nn: nn.Conv3d(2, 4, 3, padding=1), (2, 2, 5, 4, 6)),
    (
        "nobias_strided",
        lambda nn: nn.Conv3d(3, 2, (2, 3, 1), stride=2, bias=False),
        (2, 3, 5, 7, 4),
    ),
    (
        "same_groups",
        lambda nn: nn.Conv3d(4, 6, (2, 3, 4), padding="same", groups=2),
        (2, 4, 4, 5, 6),
    ),
    (
        "dilated",
        lambda nn: nn.Conv3d(2, 3, 3, dilation=(1, 2, 1), padding=(1, 2, 0)),
        (1, 2, 4, 6, 5),
    ),
    ("unbatched", lambda nn: nn.Conv3d(2, 3, 2, padding="valid"), (2, 4, 5, 3)),
    (
        "reflect",
        lambda nn: nn.Conv3d(2, 3, 3, padding=(1, 2, 1), padding_mode="reflect"),
        (2, 2, 4, 5, 3),
    ),
    (
        "replicate",
        lambda nn: nn.Conv3d(2, 3, 3, stride=2, padding=2, padding_mode="replicate"),
        (2, 2, 5, 4, 6),
    ),
    (
        "circular",
        lambda nn: nn.Conv3d(2, 2, (3, 2, 3), padding=1, padding_mode="circular"),
        (2, 2, 4, 4, 5),
    ),
    (
        "circular_same",
        lambda nn: nn.Conv3d(2, 2, (3, 2, 4), padding="same", padding_mode="circular"),
        (2, 2, 4, 5, 6),
    ),
    (
        "reflect_unbatched",
        lambda nn: nn.Conv3d(2, 2, 3, padding=1, padding_mode="reflect"),
        (2, 4, 3, 5),
    ),
]


@pytest.mark.parametrize("build, shape", [l[1:] for l in LAYERS], ids=[l[0] for l in LAYERS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_matches_torch(build, shape, dtype):
    # not PyTorch's default init: a wider range tests more
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


def test_default_initialisation():
    """PyTorch's: kaiming uniform with a = sqrt(5) is U(+-1/sqrt(fan_in)), the bias likewise."""
    layer = nn.Conv3d(6, 64, (2, 3, 3), groups=2)
    bound = 1 / math.sqrt(3 * 2 * 3 * 3)  # fan_in: in_channels // groups times the kernel
    for p in (layer.weight, layer.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.8 * bound  # spread over the whole range
        assert abs(values.mean()) < 0.25 * bound


# ---- pooling in 3-d ------------------------------------------------------------------------

MAX_GRID = [
    dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=c)
    for k, s, p, d, c in itertools.product(
        [2, (3, 2, 2)], [None, 1, (2, 1, 2)], [0, 1], [1, (1, 2, 1)], [False, True]
    )
]
AVG_GRID = [
    dict(kernel_size=k, stride=s, padding=p, ceil_mode=c, count_include_pad=i)
    for k, s, p, c, i in itertools.product(
        [2, (3, 2, 3)], [None, 1, (2, 1, 2)], [0, 1], [False, True], [True, False]
    )
]


def _volume(shape=(2, 3, 5, 6, 5), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("options", MAX_GRID, ids=str)
def test_max_pool3d_grid(options):
    check_against_torch(
        lambda x: F.max_pool3d(x, **options), lambda x: TF.max_pool3d(x, **options), [_volume()]
    )


@pytest.mark.parametrize("options", AVG_GRID, ids=str)
def test_avg_pool3d_grid(options):
    check_against_torch(
        lambda x: F.avg_pool3d(x, **options), lambda x: TF.avg_pool3d(x, **options), [_volume()]
    )


@pytest.mark.parametrize(
    "pool, options",
    [
        ("max_pool3d", dict(kernel_size=2)),  # tiles
        ("max_pool3d", dict(kernel_size=3, stride=2, padding=1)),  # Unfold's columns
        ("avg_pool3d", dict(kernel_size=2, divisor_override=3)),
        ("avg_pool3d", dict(kernel_size=3, stride=2, padding=1, divisor_override=5)),
        ("avg_pool3d", dict(kernel_size=(1, 2, 3), ceil_mode=True)),
    ],
    ids=str,
)
@pytest.mark.parametrize(
    "shape", [(2, 3, 5, 6, 4), (3, 4, 5, 7), (0, 2, 4, 5, 3)], ids=["batched", "unbatched", "empty"]
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_pool3d_options_and_unbatched(pool, options, shape, dtype):
    check_against_torch(
        lambda x: getattr(F, pool)(x, **options),
        lambda x: getattr(TF, pool)(x, **options),
        [_volume(shape)],
        dtype,
    )


@pytest.mark.parametrize("options", [dict(kernel_size=2), dict(kernel_size=3, padding=1)], ids=str)
def test_max_pool3d_ties_go_to_the_first_maximum(options):
    """Few distinct values: PyTorch gives each window's gradient to its first maximum."""
    x = np.random.default_rng(3).integers(0, 3, (2, 2, 4, 5, 6)).astype(float)
    check_against_torch(
        lambda t: F.max_pool3d(t, **options), lambda t: TF.max_pool3d(t, **options), [x]
    )


POOL_LAYERS = [
    ("maxpool", lambda nn: nn.MaxPool3d(2)),
    (
        "maxpool_options",
        lambda nn: nn.MaxPool3d((3, 2, 2), stride=1, padding=1, dilation=(1, 2, 1)),
    ),
    ("maxpool_ceil", lambda nn: nn.MaxPool3d(3, 2, ceil_mode=True)),
    ("avgpool", lambda nn: nn.AvgPool3d(2)),
    ("avgpool_options", lambda nn: nn.AvgPool3d(3, 2, 1, count_include_pad=False)),
    ("avgpool_divisor", lambda nn: nn.AvgPool3d((2, 1, 2), divisor_override=3)),
]


@pytest.mark.parametrize("build", [l[1] for l in POOL_LAYERS], ids=[l[0] for l in POOL_LAYERS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_pool_layer_matches_torch(build, dtype):
    check_against_torch(build(nn), build(torch.nn), [_volume()], dtype)
    assert repr(build(nn)) == repr(build(torch.nn))
    assert list(build(nn).parameters()) == []


# ---- errors --------------------------------------------------------------------------------


def _conv3d(lib, x=(1, 2, 5, 5, 5), w=(3, 2, 3, 3, 3), bias=None, dtype=None, **options):
    weight = lib.ones(w) if dtype is None else lib.ones(w, dtype=dtype)
    bias = None if bias is None else lib.ones(bias)
    return lib.nn.functional.conv3d(lib.ones(x), weight, bias, **options)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda lib: _conv3d(lib, w=(3, 3, 3, 3, 3)), "has 2 channels"),
        (lambda lib: _conv3d(lib, x=(1, 4, 5, 5, 5), groups=2), "groups=2"),
        (lambda lib: _conv3d(lib, x=(1, 2, 5, 5, 5), w=(3, 1, 3, 3, 3), groups=2), "groups=2"),
        (lambda lib: _conv3d(lib, groups=0), "groups"),
        (lambda lib: _conv3d(lib, stride=2, padding="same"), "strided"),
        (lambda lib: _conv3d(lib, padding="full"), "padding"),
        (lambda lib: _conv3d(lib, padding=-1), "padding must be non-negative"),
        (lambda lib: _conv3d(lib, stride=0), "stride must be positive"),
        (lambda lib: _conv3d(lib, dilation=(1, 0, 1)), "dilation must be positive"),
        (lambda lib: _conv3d(lib, stride=(1, 1)), "stride must be an int or 3 ints"),
        (lambda lib: _conv3d(lib, padding=(1, 1)), "padding must be an int or 3 ints"),
        (lambda lib: _conv3d(lib, x=(1, 2, 2, 5, 5)), "smaller than the kernel"),
        (lambda lib: _conv3d(lib, x=(1, 2, 5, 5, 5), padding=(0, 0, 0), dilation=3), "smaller"),
        (lambda lib: _conv3d(lib, dtype=lib.float64), "dtype"),
        (lambda lib: _conv3d(lib, x=(5, 5, 5)), "expected a 4-d or 5-d input"),
        (lambda lib: _conv3d(lib, w=(3, 2, 3, 3)), "expected a 5-d weight"),
        (lambda lib: _conv3d(lib, bias=(2,)), "bias"),
    ],
)
def test_conv3d_errors_as_torch(call, message):
    assert_raises_as_torch(call, RuntimeError, message)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda lib: lib.nn.Conv3d(3, 4, 3, groups=2), ValueError, "divisible"),
        (lambda lib: lib.nn.Conv3d(2, 4, 3, stride=2, padding="same"), ValueError, "strided"),
        (lambda lib: lib.nn.Conv3d(2, 4, 3, padding="full"), ValueError, "padding"),
        (lambda lib: lib.nn.Conv3d(2, 4, 3, padding_mode="mirror"), ValueError, "padding_mode"),
        (lambda lib: lib.nn.Conv3d(2, 4, 3)(lib.ones(1, 3, 5, 5, 5)), RuntimeError, "channels"),
    ],
)
def test_conv3d_layer_errors_as_torch(call, error, message):
    assert_raises_as_torch(call, error, message)


def _pool(lib, name, shape=(1, 2, 4, 4, 4), *args, **options):
    return getattr(lib.nn.functional, name)(lib.ones(shape), *args, **options)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda lib: _pool(lib, "max_pool3d", (1, 1, 4, 4, 4), 2, padding=2), "half"),
        (lambda lib: _pool(lib, "avg_pool3d", (1, 1, 4, 4, 4), 3, padding=2), "half"),
        (lambda lib: _pool(lib, "max_pool3d", (1, 1, 4, 4, 4), (2, 2)), "kernel_size"),
        (lambda lib: _pool(lib, "avg_pool3d", (1, 1, 4, 4, 4), (2, 2)), "kernel_size"),
        (lambda lib: _pool(lib, "max_pool3d", (1, 1, 4, 4, 4), 2, stride=0), "stride"),
        (lambda lib: _pool(lib, "max_pool3d", (4, 4, 4), 2), "expected a 4-d or 5-d input"),
        (lambda lib: _pool(lib, "avg_pool3d", (4, 4, 4), 2), "expected a 4-d or 5-d input"),
        (lambda lib: _pool(lib, "max_pool3d", (1, 1, 1, 4, 4), 2), "smaller"),
        (lambda lib: _pool(lib, "avg_pool3d", (1, 1, 4, 4, 4), 2, divisor_override=0), "zero"),
        (lambda lib: _pool(lib, "avg_pool2d", (1, 1, 4, 4), 2, divisor_override=0), "zero"),
    ],
)
def test_pool3d_errors_as_torch(call, message):
    assert_raises_as_torch(call, RuntimeError, message)


# ---- a small network, jitted ---------------------------------------------------------------


def _volume_cnn(seed=0):
    sg.manual_seed(seed)
    return nn.Sequential(
        nn.Conv3d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool3d(2),
        nn.Conv3d(4, 4, (1, 3, 3), padding="same", groups=2, padding_mode="replicate"),
        nn.ReLU(),
        nn.AvgPool3d(2, ceil_mode=True),
        nn.Flatten(),
        nn.Linear(4 * 2 * 2 * 2, 3),
    )


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_conv3d_network_trains_jitted_as_eager(optimizer):
    """Five training steps jitted end where five eager steps end, bit for bit: losses,
    parameters and gradients (a replay makes the eager step's array calls)."""
    make_opt = {
        "sgd": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9),
        "adam": lambda ps: sg.optim.Adam(ps, lr=0.01),
    }[optimizer]
    models = _volume_cnn(), _volume_cnn()
    opts = [make_opt(model.parameters()) for model in models]

    def train_step(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    eager, jitted = train_step(models[0], opts[0]), sg.jit(train_step(models[1], opts[1]))
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(5):
        x = sg.tensor(rng.standard_normal((3, 1, 6, 7, 8)).astype(np.float32))
        y = sg.tensor(rng.integers(0, 3, 3))
        losses.append((eager(x, y).item(), jitted(x, y).item()))
    assert [e for e, _ in losses] == [j for _, j in losses]
    assert losses[-1][0] != losses[0][0]  # it trained
    for (name, p), q in zip(models[0].named_parameters(), models[1].parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy(), err_msg=name)


def test_doc_examples():
    for function in (F.conv3d, F.max_pool3d, F.avg_pool3d):
        assert_doc_examples_run(function, vars(F))
    for layer in (nn.Conv3d, nn.MaxPool3d, nn.AvgPool3d):
        assert_doc_examples_run(layer)
