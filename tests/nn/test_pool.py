"""Pooling against PyTorch: max_pool2d, avg_pool2d and adaptive_avg_pool2d as functions and as
layers. Outputs and input gradients in float64 (tight) and float32 (loose) over kernels, strides,
paddings, dilations and ceil mode, on odd sizes; max pooling's gradient on ties (it goes to the
first maximum of each window) and on NaN; a small CNN end to end. gradcheck and gradgradcheck
come from the op table's rows (tests/op_table.py)."""

import doctest
import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_close, assert_raises_as_torch, check_against_torch, leaves

import scratchgrad as sg
from scratchgrad.nn import conv_functional, pooling
from scratchgrad.nn import conv_functional as F
from scratchgrad.ops import conv as conv_ops


def _input(shape=(2, 3, 7, 6), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- max_pool2d ---------------------------------------------------------------------------

MAX_GRID = [
    dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=c)
    for k, s, p, d, c in itertools.product(
        [2, 3, (3, 2)], [None, 1, 2], [0, 1], [1, 2], [False, True]
    )
]


@pytest.mark.parametrize("options", MAX_GRID, ids=str)
def test_max_pool2d_grid(options):
    check_against_torch(
        lambda x: F.max_pool2d(x, **options), lambda x: TF.max_pool2d(x, **options), [_input()]
    )


@pytest.mark.parametrize("options", MAX_GRID[::5], ids=str)
def test_max_pool2d_grid_float32(options):
    check_against_torch(
        lambda x: F.max_pool2d(x, **options),
        lambda x: TF.max_pool2d(x, **options),
        [_input()],
        dtype="float32",
    )


@pytest.mark.parametrize(
    "options",
    [
        dict(kernel_size=2),  # tiles: the reshape path
        dict(kernel_size=2, stride=1),  # overlapping windows: the unfold path
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=(2, 3), ceil_mode=True),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_max_pool2d_ties_go_to_the_first_maximum(options, dtype):
    """Few distinct values, so most windows hold ties; PyTorch gives each window's gradient to
    its first maximum (not shared among ties, as amax does)."""
    x = np.random.default_rng(3).integers(0, 3, (2, 3, 8, 9)).astype(float)
    check_against_torch(
        lambda t: F.max_pool2d(t, **options), lambda t: TF.max_pool2d(t, **options), [x], dtype
    )


def test_max_pool2d_after_relu_has_all_zero_windows():
    x = _input((4, 2, 8, 8)) - 1.5  # most entries are negative: many windows are all zeros
    check_against_torch(
        lambda t: F.max_pool2d(t.relu(), 2),
        lambda t: TF.max_pool2d(t.relu(), 2),
        [x],
    )


@pytest.mark.parametrize("options", [dict(kernel_size=2), dict(kernel_size=2, padding=1)], ids=str)
def test_max_pool2d_nan(options):
    """A NaN wins its window, and its gradient goes to the last NaN, as PyTorch's loop does."""
    nan = np.nan
    x = np.array([[1, nan, 3, nan], [nan, 5, 2, 1], [1, 2, nan, nan], [3, 3, 1, 3]])
    x = x.reshape(4, 1, 2, 2)
    xs, xt = leaves(x)
    out, expected = F.max_pool2d(xs, **options), TF.max_pool2d(xt, **options)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_array_equal(xs.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("path", ["rows copied", "views"])
@pytest.mark.parametrize(
    "shape, options",
    [
        ((2, 3, 8, 8), dict(kernel_size=3, stride=2, padding=1)),  # over Unfold's columns
        ((8, 2, 8, 8), dict(kernel_size=2)),  # over tiles of the batch-last input
    ],
    ids=str,
)
def test_max_pool2d_ties_and_nan_whether_or_not_rows_are_copied(shape, options, path, monkeypatch):
    """MaxOver compares over contiguous rows (a copy, window offset first) or over views of
    its input, depending on how long its input's runs are (``_SHORT_RUN``, set here so that
    each case takes each path); both pick PyTorch's winners."""
    monkeypatch.setattr(conv_ops, "_SHORT_RUN", math.inf if path == "rows copied" else 0)
    rng = np.random.default_rng(8)
    x = rng.integers(0, 3, shape).astype(float)  # ties everywhere
    x[rng.random(shape) < 0.02] = np.nan
    batch_last = np.ascontiguousarray(x.transpose(1, 2, 3, 0)).transpose(3, 0, 1, 2)
    xs = sg.from_numpy(batch_last).requires_grad_()  # laid out as a convolution's output
    xt = torch.tensor(x, requires_grad=True)
    out, expected = F.max_pool2d(xs, **options), TF.max_pool2d(xt, **options)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    grad = rng.standard_normal(out.shape)
    out.backward(sg.tensor(grad))
    expected.backward(torch.tensor(grad))
    # (where windows overlap, an entry's gradients add up in another order than PyTorch's)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("path", ["rows copied", "views"])
@pytest.mark.parametrize(
    "pool, shape",
    [
        (lambda f, t: f.max_pool2d(t, 2), (6, 3, 4, 6)),  # 2 x 2 tiles
        (lambda f, t: f.max_pool2d(t, 2, stride=1, padding=1), (2, 3, 5, 3)),  # Unfold's
        (lambda f, t: f.max_pool1d(t, 4), (3, 2, 9)),  # four offsets along one dim
        (lambda f, t: f.max_pool3d(t, (2, 1, 2)), (2, 2, 4, 3, 5)),
    ],
    ids=["2x2", "2x2 padded", "1d of 4", "3d 2x1x2"],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_max_pool_of_four_offsets_ties_infinities_and_nan(pool, shape, dtype, path, monkeypatch):
    """Windows of four entries are compared in pairs (``_first_of_four``): the first maximum
    still wins ties (of -0.0 and +0.0 too), a window of -inf gives its gradient to its first
    entry inside the image, and NaN to the last NaN, as PyTorch's loop does."""
    monkeypatch.setattr(conv_ops, "_SHORT_RUN", math.inf if path == "rows copied" else 0)
    values = np.array([-np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan])
    rng = np.random.default_rng(11)
    cases = itertools.product(
        ([0, 1, 3, 3, 1, 0, 0], [2, 0, 1, 1, 0, 2, 0], [1, 1, 1, 1, 1, 1, 1]), [False, True]
    )
    for weights, batch_last in cases:
        x = values[rng.choice(len(values), shape, p=np.array(weights) / sum(weights))]
        xs, xt = leaves(x, dtype)
        if batch_last:  # laid out as a convolution's output
            moved = np.ascontiguousarray(np.moveaxis(xs.detach().numpy(), 0, -1))
            xs = sg.from_numpy(np.moveaxis(moved, -1, 0)).requires_grad_()
        out, expected = pool(F, xs), pool(TF, xt)
        np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
        grad = rng.standard_normal(out.shape)
        out.backward(sg.tensor(grad, dtype=xs.dtype))
        expected.backward(torch.tensor(grad, dtype=xt.dtype))
        # (where windows overlap, an entry's gradients add up in another order than PyTorch's)
        rtol = 1e-6 if dtype == "float32" else 1e-14
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=rtol)


def test_max_pool2d_unbatched_and_non_divisible():
    check_against_torch(
        lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [_input((3, 7, 5))]
    )


# ---- avg_pool2d ---------------------------------------------------------------------------

AVG_GRID = [
    dict(kernel_size=k, stride=s, padding=p, ceil_mode=c, count_include_pad=i)
    for k, s, p, c, i in itertools.product(
        [2, 3, (3, 2)], [None, 1, 2], [0, 1], [False, True], [True, False]
    )
]


@pytest.mark.parametrize("options", AVG_GRID, ids=str)
def test_avg_pool2d_grid(options):
    check_against_torch(
        lambda x: F.avg_pool2d(x, **options), lambda x: TF.avg_pool2d(x, **options), [_input()]
    )


@pytest.mark.parametrize("options", AVG_GRID[::5], ids=str)
def test_avg_pool2d_grid_float32(options):
    check_against_torch(
        lambda x: F.avg_pool2d(x, **options),
        lambda x: TF.avg_pool2d(x, **options),
        [_input()],
        dtype="float32",
    )


@pytest.mark.parametrize(
    "options",
    [dict(kernel_size=2, divisor_override=3), dict(kernel_size=3, padding=1, divisor_override=2)],
    ids=str,
)
def test_avg_pool2d_divisor_override(options):
    check_against_torch(
        lambda x: F.avg_pool2d(x, **options), lambda x: TF.avg_pool2d(x, **options), [_input()]
    )


@pytest.mark.parametrize(
    "pool, options",
    [
        ("avg_pool1d", dict(kernel_size=2)),
        ("avg_pool2d", dict(kernel_size=2)),
        ("avg_pool2d", dict(kernel_size=(1, 3), padding=(0, 1), ceil_mode=True)),
        ("avg_pool2d", dict(kernel_size=3, padding=1, count_include_pad=False)),
        ("avg_pool2d", dict(kernel_size=2, divisor_override=3)),
        ("avg_pool3d", dict(kernel_size=(1, 2, 2))),
    ],
    ids=str,
)
def test_avg_pool_of_int64_truncates_as_torch(pool, options):
    """int64 pools to int64, each mean truncated toward zero; other integer dtypes raise."""
    shape = {"avg_pool1d": (2, 3, 5), "avg_pool2d": (2, 3, 4, 5), "avg_pool3d": (1, 2, 3, 4, 5)}
    x = np.random.default_rng(9).integers(-9, 10, shape[pool])
    ours = getattr(F, pool)(sg.tensor(x), **options)
    theirs = getattr(TF, pool)(torch.tensor(x), **options)
    assert ours.dtype == sg.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(NotImplementedError, match="not implemented for int32"):
        getattr(F, pool)(sg.tensor(x, dtype=sg.int32), **options)


# ---- adaptive_avg_pool2d ------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, output_size",
    [
        ((2, 3, 8, 6), (4, 3)),  # divides: an avg_pool2d
        ((2, 3, 7, 6), 1),  # global average pooling
        ((2, 3, 7, 6), 3),  # overlapping windows in H
        ((2, 3, 5, 7), (3, 4)),
        ((2, 3, 4, 5), (6, 7)),  # larger than the input: windows repeat entries
        ((2, 3, 7, 6), (None, 4)),
        ((3, 7, 6), (2, 5)),  # unbatched
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adaptive_avg_pool2d(shape, output_size, dtype):
    check_against_torch(
        lambda x: F.adaptive_avg_pool2d(x, output_size),
        lambda x: TF.adaptive_avg_pool2d(x, output_size),
        [_input(shape)],
        dtype,
    )


# ---- derivatives: gradcheck and gradgradcheck are the op table's pooling rows (test_ops.py) ---


def test_max_pool2d_second_derivative_matches_torch():
    x = _input((2, 2, 6, 6))
    results = []
    for lib, F_ in ((sg, F), (torch, TF)):
        xt = lib.tensor(x, requires_grad=True)
        out = F_.max_pool2d(xt * xt, 2)
        (g,) = lib.autograd.grad((out * out).sum(), xt, create_graph=True)
        (g * g).sum().backward()
        results.append(xt.grad)
    assert_close(*results)


# ---- the layers ---------------------------------------------------------------------------

LAYERS = [
    ("maxpool", lambda nn: nn.MaxPool2d(2)),
    ("maxpool_options", lambda nn: nn.MaxPool2d((3, 2), stride=1, padding=1, dilation=(1, 2))),
    ("maxpool_ceil", lambda nn: nn.MaxPool2d(3, 2, ceil_mode=True)),
    ("avgpool", lambda nn: nn.AvgPool2d(2)),
    ("avgpool_options", lambda nn: nn.AvgPool2d(3, 2, 1, count_include_pad=False)),
    ("adaptive", lambda nn: nn.AdaptiveAvgPool2d((2, 3))),
    ("adaptive_none", lambda nn: nn.AdaptiveAvgPool2d((None, 1))),
]


@pytest.mark.parametrize("build", [layer[1] for layer in LAYERS], ids=[l[0] for l in LAYERS])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_matches_torch(build, dtype):
    check_against_torch(build(pooling), build(torch.nn), [_input()], dtype)


@pytest.mark.parametrize("build", [layer[1] for layer in LAYERS], ids=[l[0] for l in LAYERS])
def test_layer_repr_matches_torch(build):
    ours = build(pooling)
    assert repr(ours) == repr(build(torch.nn))
    assert list(ours.parameters()) == []


class _SmallCNN:
    """The W5 network (conv, ReLU, max pool, twice, then linear), for either library."""

    def __init__(self, nn):
        self.layers = [
            nn.Conv2d(1, 8, 3, padding=1),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.MaxPool2d(2),
        ]

    def __call__(self, x, w, b):
        conv1, pool1, conv2, pool2 = self.layers
        h = pool2(conv2(pool1(conv1(x).relu())).relu())
        return h.reshape(h.shape[0], -1) @ w.T + b


def test_small_cnn_end_to_end_float32():
    """Forward and every gradient of the benchmark's CNN, weights copied from PyTorch's."""
    torch.manual_seed(0)
    ours, theirs = _SmallCNN(sg.nn), _SmallCNN(torch.nn)
    for mine, their in zip(ours.layers, theirs.layers):
        for name, p in their.named_parameters():
            getattr(mine, name).data = sg.tensor(p.detach().numpy())
    rng = np.random.default_rng(8)
    arrays = [
        rng.standard_normal((16, 1, 28, 28)),
        rng.standard_normal((10, 784)) * 0.05,
        rng.standard_normal(10),
    ]
    pairs = [leaves(a, "float32") for a in arrays]
    out, expected = ours(*(p[0] for p in pairs)), theirs(*(p[1] for p in pairs))
    assert_close(out, expected, "float32", "logits")
    out.log_softmax(1).sum().backward()
    expected.log_softmax(1).sum().backward()
    for mine, their in zip(ours.layers, theirs.layers):
        for name, p in their.named_parameters():
            assert_close(getattr(mine, name).grad, p.grad, "float32", name)
    for (s, t), name in zip(pairs, ("x", "w", "b")):
        assert_close(s.grad, t.grad, "float32", name)


# ---- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: F.max_pool2d(sg.ones(1, 1, 4, 4), 2, padding=2), RuntimeError, "half"),
        (lambda: F.avg_pool2d(sg.ones(1, 1, 4, 4), 3, padding=2), RuntimeError, "half"),
        (lambda: F.max_pool2d(sg.ones(1, 1, 2, 2), 3), RuntimeError, "smaller"),
        (lambda: F.max_pool2d(sg.ones(4, 4), 2), RuntimeError, "input"),
        (lambda: F.adaptive_avg_pool2d(sg.ones(1, 1, 4, 4), (2, 2, 2)), RuntimeError, "2 entries"),
        (lambda: F.max_pool2d(sg.ones(1, 1, 4, 4), 2, stride=0), RuntimeError, "stride"),
    ],
)
def test_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_doc_examples():
    assert doctest.testmod(pooling).failed == 0
    assert doctest.testmod(conv_functional).failed == 0


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    "dims, options", [(1, {}), (2, {}), (2, {"padding": 1, "ceil_mode": True})]
)
def test_sixteen_bit_avg_pool_sums_in_float32_and_rounds_once(dtype, dims, options):
    # as PyTorch's kernel: adding 16-bit windows one rounded step at a time put 44% of bfloat16
    # 2x2 means an ulp or more off
    x = np.random.default_rng(0).standard_normal((2, 3) + (6,) * dims).astype(np.float32)
    outs = []
    for lib in (torch, sg):
        pool = getattr(lib.nn.functional, f"avg_pool{dims}d")
        outs.append(pool(lib.tensor(x).to(getattr(lib, dtype)), 2, **options).float().numpy())
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.parametrize("name", ["max_pool", "avg_pool"])
@pytest.mark.parametrize(
    ("dims", "shape"),
    [(1, (2, 0, 4)), (1, (0, 4)), (2, (2, 0, 4, 4)), (2, (0, 4, 4)), (3, (2, 0, 4, 4, 4))],
)
def test_pooling_refuses_empty_channels_as_torch(name, dims, shape):
    # (only the batch may be empty)
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, f"{name}{dims}d")(m.zeros(shape), 2),
        RuntimeError,
        f"{name}{dims}d: expected an input of shape .* to have no empty dim",
    )


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"])
def test_pooling_of_an_empty_batch_as_torch(name):
    ours = getattr(sg.nn.functional, name)(sg.zeros(0, 3, 4, 4), 2)
    assert ours.shape == getattr(TF, name)(torch.zeros(0, 3, 4, 4), 2).shape
