"""Adaptive average pooling and ``interpolate(mode="area")`` of inputs holding inf, -inf and NaN,
against PyTorch: a window holding an infinity is that infinity, one holding both or a NaN is
NaN, and the windows beside them stay finite (a matrix product made them NaN, 0 * inf). Random
shapes and output sizes (overlapping windows, repeated entries, tiles), forward and gradient
(the incoming gradient holding infinities too), equal where non-finite and close elsewhere."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from oracle import DTYPES, assert_close

import scratchgrad as sg
from scratchgrad.func import vmap
from scratchgrad.nn import functional as F

SEEDS = range(12)


def _sprinkled(rng, shape, share=0.1):
    """Standard normal entries, about ``share`` of them each inf, -inf and NaN."""
    x = rng.standard_normal(shape)
    draw = rng.random(shape)
    x[draw < share] = np.inf
    x[(draw >= share) & (draw < 2 * share)] = -np.inf
    x[(draw >= 2 * share) & (draw < 3 * share)] = np.nan
    return x


def _case(dims: int, seed: int):
    """An input shape (N, C, *S), an output size (smaller, larger or equal per dim: windows
    that overlap, repeat entries or tile) and how much of the input is not finite."""
    rng = np.random.default_rng(1000 * dims + seed)
    batch, channels = (int(n) for n in rng.integers(1, 3, 2))
    size = tuple(int(n) for n in rng.integers(1, 9, dims))
    out = tuple(int(rng.integers(1, n + 4)) for n in size)
    return rng, (batch, channels, *size), out, rng.choice([0.02, 0.1])


def _assert_same(ours, theirs, dtype: str, what: str) -> None:
    """NaN, inf and -inf at the same places; the finite entries close."""
    actual = np.asarray(ours.detach().numpy(), dtype=np.float64)
    expected = theirs.detach().double().numpy()
    for mask in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(mask(actual), mask(expected), err_msg=f"{what}: {mask}")
    assert_close(actual, expected, dtype, what)


def _pool(lib, dims: int, how: str):
    functional = F if lib is sg else TF
    if how == "area":
        return lambda x, size: functional.interpolate(x, size=size, mode="area")
    return getattr(functional, f"adaptive_avg_pool{dims}d")


@pytest.mark.parametrize("how", ["adaptive_avg_pool", "area"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("seed", SEEDS)
def test_infinities_stay_in_their_windows_as_torch(seed, dims, dtype, how):
    rng, shape, size, share = _case(dims, seed)
    x = _sprinkled(rng, shape, share)
    out_shape = (*shape[:2], *size)
    grad = _sprinkled(rng, out_shape, share / 2)  # a gradient with infinities spreads them too
    ours = sg.tensor(x, dtype=DTYPES[dtype][0], requires_grad=True)
    theirs = torch.tensor(x, dtype=DTYPES[dtype][1], requires_grad=True)
    with np.errstate(invalid="ignore"):  # tiles sum inf and -inf in NumPy, which warns
        out = _pool(sg, dims, how)(ours, size)
        out.backward(sg.tensor(grad, dtype=out.dtype))
    expected = _pool(torch, dims, how)(theirs, size)
    expected.backward(torch.tensor(grad, dtype=expected.dtype))
    what = f"{how} {dims}-d {shape} -> {size}"
    _assert_same(out, expected, dtype, what)
    _assert_same(ours.grad, theirs.grad, dtype, f"{what}, gradient")


@pytest.mark.parametrize(
    "values, expected",
    [
        ([1.0, np.inf, 2.0, 3.0, 4.0], [np.inf, np.inf, 3.5]),
        ([1.0, np.inf, -np.inf, 3.0, 4.0], [np.inf, np.nan, 3.5]),  # both in one window: NaN
        ([1.0, 2.0, np.nan, 3.0, 4.0], [1.5, np.nan, 3.5]),
        ([-np.inf, 2.0, 3.0, 4.0, np.inf], [-np.inf, 3.0, np.inf]),
    ],
)
def test_overlapping_windows_of_five_entries(values, expected):
    """Five entries into three windows: [0, 2), [1, 4), [3, 5), the middle one overlapping
    both others; without NumPy's warnings (of 0 * inf, which PyTorch never computes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = F.adaptive_avg_pool1d(sg.tensor([[values]], dtype=sg.float64), 3)
    theirs = TF.adaptive_avg_pool1d(torch.tensor([[values]], dtype=torch.float64), 3)
    _assert_same(ours, theirs, "float64", f"{values}")
    assert_close(ours[0, 0], np.array(expected), what=f"{values}")


def test_an_infinite_gradient_reaches_only_its_window_entries():
    x = sg.zeros(1, 1, 5, requires_grad=True)
    F.adaptive_avg_pool1d(x, 3).backward(sg.tensor([[[1.0, 0.0, -np.inf]]]))
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [0.5, 0.5, 0.0, -np.inf, -np.inf])


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_16_bit_inputs_with_infinities_as_torch(low):
    rng = np.random.default_rng(3)
    x = _sprinkled(rng, (2, 3, 7, 6))
    ours = F.adaptive_avg_pool2d(sg.tensor(x, dtype=DTYPES[low][0]), (4, 5))
    theirs = TF.adaptive_avg_pool2d(torch.tensor(x, dtype=DTYPES[low][1]), (4, 5))
    assert ours.dtype == DTYPES[low][0]
    _assert_same(ours, theirs, low, f"{low} adaptive_avg_pool2d")


def test_vmap_with_infinities_as_torch():
    rng = np.random.default_rng(4)
    x = _sprinkled(rng, (3, 2, 7, 5))
    ours = vmap(lambda v: F.adaptive_avg_pool2d(v, (3, 4)))(sg.tensor(x))
    theirs = torch.func.vmap(lambda v: TF.adaptive_avg_pool2d(v, (3, 4)))(torch.tensor(x))
    _assert_same(ours, theirs, "float64", "vmap of adaptive_avg_pool2d")


def test_second_derivative_with_an_infinite_input_as_torch():
    """The pooling is linear: its second derivative does not see the infinity, PyTorch's not
    either."""
    x = np.random.default_rng(5).standard_normal((1, 2, 7, 5))
    x[0, 1, 3, 2] = np.inf
    results = []
    for lib, functional in ((sg, F), (torch, TF)):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor(np.linspace(-1.0, 1.0, 24).reshape(1, 2, 3, 4), requires_grad=True)
        out = functional.adaptive_avg_pool2d(xt, (3, 4))
        (gx,) = lib.autograd.grad((out * w).sum(), xt, create_graph=True)
        (gx * gx).sum().backward()
        results.append(w.grad)
    assert_close(*results)


@pytest.mark.parametrize(
    ("x", "call"),
    [
        ([[-np.inf, -np.inf]], lambda F, x: F.max_pool1d(x, 2, padding=1)),
        ([[-np.inf, -np.inf, 3.0, -np.inf]], lambda F, x: F.max_pool1d(x, 3, 1, 1)),
        ([[[-np.inf, -np.inf], [-np.inf, 1.0]]], lambda F, x: F.max_pool2d(x, 3, 1, 1)),
        ([[[[-np.inf] * 3] * 3]], lambda F, x: F.max_pool3d(x, 2, 2, 1, ceil_mode=True)),
    ],
    ids=["1d", "overlapping", "2d", "3d_ceil"],
)
def test_a_window_of_minus_infinities_gives_its_gradient_to_its_first_entry_inside(x, call):
    """As PyTorch's loop, which starts at the window's first entry inside the image (the -inf
    padding before it won the tie, and the gradient was lost)."""
    grads = []
    for lib, functional in ((sg, F), (torch, TF)):
        leaf = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        out = call(functional, leaf)
        out.backward(lib.arange(1.0, out.numel() + 1, dtype=lib.float64).reshape(out.shape))
        grads.append(leaf.grad)
    assert_close(*grads)
