"""Convolution against PyTorch: conv1d, conv2d, unfold and fold as functions, Conv1d and Conv2d as
layers (weights copied across through NumPy). Outputs and the gradients of every input are
compared in float64 (tight) and float32 (loose), over a grid of strides, paddings (numbers,
"same", "valid"), dilations, groups and odd sizes; second derivatives against PyTorch's; default
initialisation against its known bounds. gradcheck and gradgradcheck come from the op table's
rows (tests/op_table.py)."""

import doctest
import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import assert_close, check_against_torch, check_second_derivative, leaves, module_pair

import scratchgrad as sg
from scratchgrad.nn import conv, conv_functional
from scratchgrad.nn import conv_functional as F
from scratchgrad.nn.conv import Conv1d, Conv2d
from scratchgrad.ops import conv as conv_ops
from scratchgrad.ops import matmul

# ---- conv2d over a grid of options ---------------------------------------------------------

GRID = [
    (stride, padding, dilation, groups)
    for stride, padding, dilation, groups in itertools.product(
        [1, 2], [0, 1, 2, "same", "valid"], [1, 2], [1, 2]
    )
    if not (padding == "same" and stride != 1)  # PyTorch refuses it too (tested below)
]


def _conv2d_arrays(groups, bias=True, in_channels=4, out_channels=6, kernel=(3, 2), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, in_channels, 7, 6))  # odd and even sizes, non-square kernel
    w = rng.standard_normal((out_channels, in_channels // groups, *kernel))
    b = rng.standard_normal(out_channels) if bias else None
    return [x, w, b]


@pytest.mark.parametrize("stride, padding, dilation, groups", GRID)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_conv2d_grid_float64(stride, padding, dilation, groups, bias):
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_against_torch(
        lambda x, w, b: F.conv2d(x, w, b, **options),
        lambda x, w, b: TF.conv2d(x, w, b, **options),
        _conv2d_arrays(groups, bias),
    )


@pytest.mark.parametrize("stride, padding, dilation, groups", GRID[::3])
def test_conv2d_grid_float32(stride, padding, dilation, groups):
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_against_torch(
        lambda x, w, b: F.conv2d(x, w, b, **options),
        lambda x, w, b: TF.conv2d(x, w, b, **options),
        _conv2d_arrays(groups),
        dtype="float32",
    )


@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((3, 5, 5, 4), (2, 5, 1, 1), {}),  # 1x1 kernel: the columns are the input itself
        ((1, 2, 4, 5), (3, 2, 4, 5), {}),  # the kernel covers the whole input
        ((2, 3, 9, 8), (4, 3, 3, 3), {"stride": (2, 3), "padding": (0, 2)}),
        ((2, 3, 8, 9), (4, 3, 2, 4), {"padding": "same", "dilation": (1, 3)}),  # odd totals
        ((2, 3, 6, 6), (4, 3, 4, 4), {"padding": "same"}),  # even kernel: extra pad after
        ((2, 6, 5, 5), (6, 1, 3, 3), {"groups": 6, "padding": 1}),  # depthwise
        ((2, 4, 5, 7), (8, 2, 3, 3), {"groups": 2, "stride": 2, "dilation": 2, "padding": 2}),
        ((3, 6, 6), (2, 3, 3, 3), {"padding": 1}),  # unbatched (C, H, W)
        ((1, 1, 28, 28), (8, 1, 3, 3), {"padding": 1}),  # the first layer of the W5 network
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv2d_shapes(x_shape, w_shape, options, dtype):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    arrays.append(rng.standard_normal(w_shape[0]))
    check_against_torch(
        lambda x, w, b: F.conv2d(x, w, b, **options),
        lambda x, w, b: TF.conv2d(x, w, b, **options),
        arrays,
        dtype,
    )


@pytest.mark.parametrize(
    "small_matrix_kernels, haswell_kernels", [(True, False), (False, True), (False, False)]
)
@pytest.mark.parametrize(
    "x_shape, w_shape", [((64, 1, 28, 28), (8, 1, 3, 3)), ((64, 8, 14, 14), (16, 8, 3, 3))]
)
def test_conv2d_weight_gradients_of_long_sums(
    x_shape, w_shape, small_matrix_kernels, haswell_kernels, monkeypatch
):
    """W5's layers at its batch of 64, whose weight gradients (``K`` = 50176 and 12544 terms)
    are summed in pieces of ``K`` where BLAS has kernels for small matrices, swapped with
    OpenBLAS's Haswell kernels, whole elsewhere (ops/matmul.py): as PyTorch's in float64, and
    in float32 at least as close to the float64 result as PyTorch's float32 is (float32 sums
    of this many terms cancel: an entry of -1.69 came out 5e-4 away from PyTorch's; whole,
    ours were 1.2e-4 to 2.1e-4 off, PyTorch's 1e-3 to 1.5e-3)."""
    monkeypatch.setattr(matmul, "SMALL_MATRIX_KERNELS", small_matrix_kernels)
    monkeypatch.setattr(matmul, "HASWELL_KERNELS", haswell_kernels)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    check_against_torch(
        lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1), arrays
    )
    g = rng.standard_normal((x_shape[0], w_shape[0], *x_shape[2:]))

    def weight_gradient(lib, dtype):
        x, w = (lib.tensor(a.astype(dtype)) for a in arrays)
        w.requires_grad_()
        lib.nn.functional.conv2d(x, w, padding=1).backward(lib.tensor(g.astype(dtype)))
        return w.grad.numpy().astype(np.float64)

    exact = weight_gradient(torch, np.float64)
    ours, theirs = (np.abs(weight_gradient(lib, np.float32) - exact).max() for lib in (sg, torch))
    assert ours <= theirs


def test_conv2d_non_contiguous_input_and_untouched_arguments():
    rng = np.random.default_rng(3)
    x_array = rng.standard_normal((5, 6, 3, 2)).transpose(3, 2, 1, 0)  # (2, 3, 6, 5), strided
    w_array, b_array = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    copies = [a.copy() for a in (x_array, w_array, b_array)]
    x = sg.from_numpy(x_array).requires_grad_()
    w, b = sg.from_numpy(w_array).requires_grad_(), sg.from_numpy(b_array).requires_grad_()
    out = F.conv2d(x, w, b, padding=1)
    out.sum().backward()
    expected = TF.conv2d(*(torch.from_numpy(a) for a in copies), padding=1)
    assert_close(out, expected)
    for array, copy in zip((x_array, w_array, b_array), copies):
        np.testing.assert_array_equal(array, copy)


def test_conv2d_1x1_sees_in_place_changes_of_its_input():
    """A 1x1 kernel's columns are the input itself (no copy): they share its version, so an
    in-place change before backward is caught instead of giving a wrong weight gradient."""
    h = F.conv2d(sg.randn(2, 3, 4, 4, requires_grad=True), sg.randn(3, 3, 1, 1))  # batch last
    out = F.conv2d(h, sg.randn(2, 3, 1, 1, requires_grad=True))
    h.mul_(2)
    with pytest.raises(RuntimeError, match="in-place"):
        out.sum().backward()


def test_conv2d_without_grad():
    x, w = _conv2d_arrays(1, bias=False)[:2]
    with sg.no_grad():
        out = F.conv2d(sg.tensor(x), sg.tensor(w, requires_grad=True), padding=1)
    assert not out.requires_grad
    assert_close(out, TF.conv2d(torch.tensor(x), torch.tensor(w), padding=1))


def test_conv2d_gradient_of_weight_only():
    """A network's first layer: the input needs no gradient, so none is computed for it."""
    x, w, b = _conv2d_arrays(1)
    xs = sg.tensor(x)
    ws, wt = leaves(w)
    bs, bt = leaves(b)
    F.conv2d(xs, ws, bs, padding=1).square().sum().backward()
    TF.conv2d(torch.tensor(x), wt, bt, padding=1).square().sum().backward()
    assert xs.grad is None
    assert_close(ws.grad, wt.grad)
    assert_close(bs.grad, bt.grad)


# ---- conv1d -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stride, padding, dilation, groups",
    [
        (s, p, d, g)
        for s, p, d, g in itertools.product([1, 2], [0, 1, "same", "valid"], [1, 2], [1, 2])
        if not (p == "same" and s != 1)
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv1d_grid(stride, padding, dilation, groups, dtype):
    rng = np.random.default_rng(4)
    arrays = [
        rng.standard_normal((3, 4, 9)),
        rng.standard_normal((6, 4 // groups, 3)),
        rng.standard_normal(6),
    ]
    options = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_against_torch(
        lambda x, w, b: F.conv1d(x, w, b, **options),
        lambda x, w, b: TF.conv1d(x, w, b, **options),
        arrays,
        dtype,
    )


def test_conv1d_unbatched_and_tuple_arguments():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((4, 10)), rng.standard_normal((2, 4, 4)), None]
    options = dict(stride=(2,), padding=(1,), dilation=(2,))
    check_against_torch(
        lambda x, w, b: F.conv1d(x, w, b, **options),
        lambda x, w, b: TF.conv1d(x, w, b, **options),
        arrays,
    )


# ---- unfold and fold ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        dict(kernel_size=2),
        dict(kernel_size=(3, 2), stride=2, padding=1),
        dict(kernel_size=3, dilation=2, padding=(2, 1), stride=(1, 2)),
    ],
)
def test_unfold_and_fold_match_torch(options):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 7, 6))
    check_against_torch(lambda t: F.unfold(t, **options), lambda t: TF.unfold(t, **options), [x])
    cols = TF.unfold(torch.tensor(x), **options).numpy()
    check_against_torch(
        lambda t: F.fold(t, (7, 6), **options),
        lambda t: TF.fold(t, (7, 6), **options),
        [rng.standard_normal(cols.shape)],
    )


def test_unbatched_unfold_and_fold_match_torch():
    """(C, H, W) unfolds to (C*KH*KW, L), and (C*KH*KW, L) folds back to (C, H, W)."""
    options = dict(kernel_size=(2, 3), dilation=2, padding=1, stride=(2, 1))
    rng = np.random.default_rng(8)
    check_against_torch(
        lambda t: F.fold(F.unfold(t, **options), (7, 8), **options),
        lambda t: TF.fold(TF.unfold(t, **options), (7, 8), **options),
        [rng.standard_normal((3, 7, 8))],
    )
    cols = rng.standard_normal(TF.unfold(torch.zeros(3, 7, 8), **options).shape)
    check_against_torch(
        lambda t: F.fold(t, (7, 8), **options), lambda t: TF.fold(t, (7, 8), **options), [cols]
    )
    with pytest.raises(IndexError, match="unfold: .*expected a 3-d or 4-d input"):
        F.unfold(sg.zeros(7, 8), 2)  # (PyTorch's IndexError: it reads a dim the input lacks)
    with pytest.raises(IndexError):
        torch.nn.functional.unfold(torch.zeros(7, 8), 2)


@pytest.mark.parametrize(
    "size, options",
    [
        ((7, 6), dict(kernel_size=3, padding=1)),  # the centre reaches every pixel: a copy
        ((1, 5), dict(kernel_size=2, padding=1, stride=2)),  # offset 0's rows: all padding
        ((3, 4), dict(kernel_size=3, padding=2)),  # windows wholly in the padding
    ],
    ids=str,
)
def test_fold_where_windows_reach_into_the_padding(size, options):
    """Fold adds each kernel offset's entries only where they land in the image."""
    torch_cols = TF.unfold(torch.zeros(1, 2, *size), **options)
    cols = np.random.default_rng(7).standard_normal((2, *torch_cols.shape[1:]))
    check_against_torch(
        lambda t: F.fold(t, size, **options), lambda t: TF.fold(t, size, **options), [cols]
    )


@pytest.mark.parametrize("shape", [(1, 4, 3), (1, 3, 1), (4, 2), (1, 4, 0), (1, 0, 1)])
def test_fold_refuses_columns_that_do_not_fit_as_torch(shape):
    """Rows that are not whole windows, or another count of columns than the output size has
    blocks, raise as PyTorch's (unbatched (4, 2) gave a batch of two images)."""
    for lib in (torch, sg):
        with pytest.raises(RuntimeError, match="" if lib is torch else "fold: "):
            lib.nn.functional.fold(lib.ones(shape), (2, 2), 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fold_of_minus_zeros_is_plus_zero_as_torch(dtype):
    """PyTorch's col2im adds onto zeros, so a pixel of -0.0 entries only is +0.0; the centre
    offset that starts Fold's sum (it reaches every pixel) must not keep its -0.0."""
    cols = np.full((2, 2 * 9, 4), -0.0, dtype)  # 3x3 windows with padding 1 over 2x2 images
    options = dict(kernel_size=3, padding=1)
    ours = F.fold(sg.from_numpy(cols), (2, 2), **options).numpy()
    theirs = TF.fold(torch.from_numpy(cols), (2, 2), **options).numpy()
    assert conv_ops._fold_plan((2, 2), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)).first
    assert not np.signbit(theirs).any()
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


@pytest.mark.parametrize(
    "shape, kernel_size, dilation, stride",
    [
        ((3, 10, 10, 2), (3, 3), (1, 1), (1, 1)),
        ((2, 9, 7, 0), (2, 3), (2, 1), (2, 3)),  # an empty batch
        ((2, 6, 5, 6, 3), (2, 2, 2), (1, 2, 1), (2, 1, 2)),
    ],
)
def test_windows_are_a_read_only_view_of_the_images(shape, kernel_size, dilation, stride):
    """``_windows`` (an ndarray over the images' memory, not ``as_strided``): entry
    ``[c, *k, *o, n]`` is ``x[c, *(o * stride + k * dilation), n]``, for images that start
    inside a larger array too, and nothing can be written through it."""
    x = np.random.default_rng(0).standard_normal((3, *shape))[1]  # (an offset into memory)
    windows = conv_ops._windows(x, kernel_size, dilation, stride)
    dims = len(kernel_size)
    for index in np.ndindex(windows.shape):
        c, k, o, n = index[0], index[1 : 1 + dims], index[1 + dims : -1], index[-1]
        at = [p * s + q * d for p, q, s, d in zip(o, k, stride, dilation)]
        assert windows[index] == x[(c, *at, n)]
    assert windows.size == 0 or np.shares_memory(windows, x)
    with pytest.raises(ValueError, match="read-only"):
        windows[...] = 0


# ---- second derivatives ----------------------------------------------------------------------
# gradcheck and gradgradcheck: the op table's conv1d, conv2d, unfold and fold rows (test_ops.py)


def test_second_derivative_matches_torch():
    """Through the double backward of Unfold, Fold and the matmul."""
    arrays = _conv2d_arrays(2, in_channels=4, out_channels=4)
    check_second_derivative(
        lambda F_, x, w, b: F_.conv2d(x, w, b, stride=2, padding=1, groups=2), arrays
    )


# ---- the layers ---------------------------------------------------------------------------

LAYERS = [
    ("conv2d", lambda nn: nn.Conv2d(1, 8, 3, padding=1), (2, 1, 9, 9)),
    ("conv2d_nobias", lambda nn: nn.Conv2d(3, 4, (2, 3), stride=2, bias=False), (2, 3, 7, 8)),
    ("conv2d_same", lambda nn: nn.Conv2d(4, 6, 4, padding="same", groups=2), (2, 4, 6, 5)),
    ("conv2d_dilated", lambda nn: nn.Conv2d(2, 3, 3, dilation=2, padding=2), (3, 2, 7, 7)),
    ("conv2d_unbatched", lambda nn: nn.Conv2d(2, 3, 3, padding="valid"), (2, 5, 6)),
    ("conv1d", lambda nn: nn.Conv1d(4, 6, 3, padding="same"), (2, 4, 10)),
    ("conv1d_strided", lambda nn: nn.Conv1d(4, 2, 5, stride=2, groups=2), (3, 4, 11)),
]


@pytest.mark.parametrize(
    "build, shape", [layer[1:] for layer in LAYERS], ids=[l[0] for l in LAYERS]
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_matches_torch(build, shape, dtype):
    # not PyTorch's default init: a wider range tests more
    ours, theirs = module_pair(build, dtype, init=lambda p: p.uniform_(-1, 1))
    x = np.random.default_rng(7).standard_normal(shape)
    check_against_torch(ours, theirs, [x], dtype)


@pytest.mark.parametrize(
    "build, shape", [layer[1:] for layer in LAYERS], ids=[l[0] for l in LAYERS]
)
def test_layer_repr_and_parameters_match_torch(build, shape):
    ours, theirs = build(conv), build(torch.nn)
    assert repr(ours) == repr(theirs)
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert all(p.dtype == sg.float32 and p.requires_grad for p in ours.parameters())


@pytest.mark.parametrize(
    "layer, fan_in",
    [(Conv2d(6, 64, 3, groups=2), 27), (Conv1d(5, 128, 4), 20), (Conv2d(1, 300, (2, 3)), 6)],
)
def test_default_initialisation(layer, fan_in):
    """PyTorch's: kaiming uniform with a = sqrt(5) is U(+-1/sqrt(fan_in)), the bias likewise."""
    bound = 1 / math.sqrt(fan_in)
    for p in (layer.weight, layer.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.8 * bound  # spread over the whole range
        assert abs(values.mean()) < 0.25 * bound
    sg.manual_seed(0)
    first = Conv2d(2, 3, 3).weight.detach().numpy().copy()
    sg.manual_seed(0)
    np.testing.assert_array_equal(Conv2d(2, 3, 3).weight.detach().numpy(), first)


# ---- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: F.conv2d(sg.ones(1, 3, 5, 5), sg.ones(2, 2, 3, 3)), RuntimeError, "channels"),
        (
            lambda: F.conv2d(sg.ones(1, 4, 5, 5), sg.ones(3, 2, 3, 3), groups=2),
            RuntimeError,
            "groups",
        ),
        (
            lambda: F.conv2d(sg.ones(1, 1, 5, 5), sg.ones(1, 1, 3, 3), stride=2, padding="same"),
            RuntimeError,
            "strided",
        ),
        (
            lambda: F.conv2d(sg.ones(1, 1, 5, 5), sg.ones(1, 1, 3, 3), padding="full"),
            RuntimeError,
            "padding",
        ),
        (lambda: F.conv2d(sg.ones(1, 1, 2, 2), sg.ones(1, 1, 3, 3)), RuntimeError, "smaller"),
        (
            lambda: F.conv2d(sg.ones(1, 1, 5, 5), sg.ones(1, 1, 3, 3).double()),
            RuntimeError,
            "dtype",
        ),
        (lambda: F.conv2d(sg.ones(5, 5), sg.ones(1, 1, 3, 3)), RuntimeError, "input"),
        (
            lambda: F.conv2d(sg.ones(1, 1, 5, 5), sg.ones(1, 1, 3, 3), sg.ones(2)),
            RuntimeError,
            "bias",
        ),
        (
            lambda: F.conv2d(sg.ones(1, 1, 5, 5), sg.ones(1, 1, 3, 3), stride=0),
            RuntimeError,
            "stride",
        ),
        (
            lambda: F.conv1d(sg.ones(1, 1, 5), sg.ones(1, 1, 3), stride=(1, 1)),
            RuntimeError,
            "stride",
        ),
        (lambda: Conv2d(3, 4, 3, groups=2), ValueError, "divisible"),
        (lambda: Conv2d(2, 4, 3, stride=2, padding="same"), ValueError, "strided"),
        (lambda: Conv2d(2, 4, 3, padding_mode="mirror"), ValueError, "padding_mode must be one"),
    ],
)
def test_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_doc_examples():
    assert doctest.testmod(conv_functional).failed == 0
    assert doctest.testmod(conv).failed == 0
    assert doctest.testmod(conv_ops).failed == 0


BFLOAT16_CONVOLUTIONS = {  # input, weight and bias shapes, options
    "conv1d": ((2, 3, 16), (4, 3, 3), (4,), {"padding": 1}),
    "conv2d": ((2, 4, 7, 7), (6, 2, 3, 3), (6,), {"stride": 2, "groups": 2}),
    "conv_transpose1d": ((2, 3, 7), (3, 4, 3), (4,), {"stride": 2}),
    "conv_transpose2d": ((2, 3, 5, 5), (3, 4, 3, 3), (4,), {"stride": 2, "dilation": 2}),
}


def bfloat16_convolution(lib, name: str, compute_dtype=None) -> list[np.ndarray]:
    """The output and the gradients of input, weight and bias of the bfloat16 convolution
    ``name`` (computed in ``compute_dtype`` from the bfloat16 values, if given), as float32."""
    *shapes, options = BFLOAT16_CONVOLUTIONS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    inputs = [lib.tensor(a).to(lib.bfloat16).to(compute_dtype or lib.bfloat16) for a in arrays]
    inputs = [t.requires_grad_() for t in inputs]
    out = getattr(lib.nn.functional, name)(*inputs, **options)
    grad = lib.tensor(np.cos(np.arange(out.numel()))).reshape(out.shape).bfloat16()
    out.backward(grad.to(out.dtype))
    if lib is sg and compute_dtype is None and "transpose" not in name:
        assert out.grad_fn.name() == "ConvolutionBackward0"
    return [t.bfloat16().float().numpy() for t in (out.detach(), *(x.grad for x in inputs))]


@pytest.mark.parametrize("name", BFLOAT16_CONVOLUTIONS)
def test_bfloat16_convolutions_round_as_pytorch_on_this_cpu(name):
    """PyTorch runs a bfloat16 convolution through oneDNN where the CPU has AVX-512 (BW, DQ,
    VL): in float32, rounded once, forward and backward (summed at each step, the overlapping
    windows of the input's gradient put a third of it an ulp off). Elsewhere (AVX2) its own
    kernels round as its float16 ones do (see the float16 test below), and so do ours: the
    output and the input's gradient bit for bit, the weight's gradient rounded once in ours,
    after each batch sample in theirs (docs/conv.md)."""
    ours, theirs = bfloat16_convolution(sg, name), bfloat16_convolution(torch, name)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if i == 2 and not conv_functional.ONEDNN_BFLOAT16:
            np.testing.assert_allclose(a, b, rtol=0, atol=2**-6 * np.abs(b).max())
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", BFLOAT16_CONVOLUTIONS)
def test_bfloat16_convolutions_round_once_where_pytorch_runs_onednn(name, monkeypatch):
    """On an AVX-512 CPU (whatever this one is): the convolution of PyTorch's float32 over the
    same bfloat16 values, each result rounded once."""
    monkeypatch.setattr(conv_functional, "ONEDNN_BFLOAT16", True)
    once = bfloat16_convolution(torch, name, compute_dtype=torch.float32)
    for ours, theirs in zip(bfloat16_convolution(sg, name), once):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", BFLOAT16_CONVOLUTIONS)
def test_float16_convolutions_sum_windows_in_float16_as_pytorch(name):
    """PyTorch's float16 convolution (on CPUs without AVX512-FP16) adds the overlapping
    windows of the input's gradient, and of conv_transpose's output, in float16 one window
    at a time; summed in float32 and rounded once, a third of them were an ulp off or more.
    Its weight's gradient is rounded after each batch sample (see docs/conv.md): not compared."""
    *shapes, options = BFLOAT16_CONVOLUTIONS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    results = []
    for lib in (sg, torch):
        x, weight, bias = (lib.tensor(a).to(lib.float16).requires_grad_() for a in arrays)
        out = getattr(lib.nn.functional, name)(x, weight, bias, **options)
        out.backward(lib.tensor(np.cos(np.arange(out.numel()))).reshape(out.shape).half())
        results.append([out.detach().float().numpy(), x.grad.float().numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("options", [{}, {"padding": 1, "stride": 2}, {"dilation": 2}])
def test_16_bit_fold_adds_windows_in_order_as_pytorch(dtype, options):
    """PyTorch's col2im adds 16-bit windows one at a time in the input's dtype, in row-major
    order of the kernel offsets (a sum in float32 rounded once was off in 3% to 20% of pixels)."""
    size = (6, 7)
    count = F.unfold(sg.zeros(1, 1, *size), 3, **options).shape[-1]
    cols = np.random.default_rng(1).standard_normal((2, 2 * 9, count))
    ours, theirs = (
        lib.nn.functional.fold(lib.tensor(cols).to(getattr(lib, dtype)), size, 3, **options)
        for lib in (sg, torch)
    )
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
