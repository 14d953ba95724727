"""16-bit kernels that run in float32 for speed: the same bits as the 16-bit computation."""

import ml_dtypes
import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.backend import cast, in_float32, keep_where
from scratchgrad.nn import functional as F

HALVES = {"bfloat16": np.dtype(ml_dtypes.bfloat16), "float16": np.dtype(np.float16)}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -3e-39, 6e-8, 65504.0, 7e4]


def _values(dtype, size=19_989):
    """Normal numbers over many decades, both signs, and the special values, in ``dtype``."""
    rng = np.random.default_rng(0)
    normal = rng.standard_normal(size) * 10.0 ** rng.integers(-8, 8, size)
    with np.errstate(over="ignore"):
        return np.concatenate([normal, SPECIAL]).astype(dtype)


def _same_bits(x, y):
    """Equal bit patterns, any NaN matching any NaN (NumPy and ml_dtypes' payloads differ)."""
    both_nan = np.isnan(x.astype(np.float32)) & np.isnan(y.astype(np.float32))
    bits = f"u{x.dtype.itemsize}"
    return x.dtype == y.dtype and np.array_equal(x.view(bits)[~both_nan], y.view(bits)[~both_nan])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_keep_where_is_numpys_where_with_zero_bit_for_bit(dtype):
    dtype = HALVES.get(dtype, np.dtype(dtype))
    x = _values(dtype).reshape(-1, 20)
    mask = np.random.default_rng(1).random(x.shape) < 0.5
    for condition, values in [(mask, x), (mask[:, :1], x), (mask, x[0])]:  # and broadcast
        expected = np.where(condition, values, 0)
        out = keep_where(condition, values)
        assert out.dtype == expected.dtype
        assert np.array_equal(out.view(f"u{dtype.itemsize}"), expected.view(f"u{dtype.itemsize}"))


@pytest.mark.parametrize("low", sorted(HALVES))
@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.divide, np.sqrt])
def test_in_float32_rounds_once_to_the_16_bit_ops_own_result(ufunc, low):
    x = _values(HALVES[low])
    operands = (x, np.random.default_rng(2).permutation(x))[: ufunc.nin]
    with np.errstate(all="ignore"):
        assert _same_bits(in_float32(ufunc, *operands), ufunc(*operands))


@pytest.mark.parametrize("low", sorted(HALVES))
def test_in_float32_maximum_is_the_16_bit_maximum(low):
    x = _values(HALVES[low])
    y = np.random.default_rng(2).permutation(x)
    with np.errstate(all="ignore"):  # (of 0.0 and -0.0 either may come out, in NumPy too)
        ours, numpys = in_float32(np.maximum, x, y), np.maximum(x, y)
    assert ours.dtype == numpys.dtype
    np.testing.assert_array_equal(ours.astype(np.float32), numpys.astype(np.float32))


@pytest.mark.parametrize("low", sorted(HALVES))
def test_comparisons_of_16_bit_tensors_are_numpys(low):
    x, y = _values(HALVES[low]), np.random.default_rng(3).permutation(_values(HALVES[low]))
    a, b = sg.from_numpy(x), sg.from_numpy(y)
    for ours, numpys in [
        (a > b, x > y),
        (a <= 0, x <= 0),
        (a == b, x == y),
        (a != y[0], x != y[0]),
    ]:
        assert np.array_equal(ours.numpy(), numpys)


@pytest.mark.parametrize("low", sorted(HALVES))
def test_comparisons_with_numbers_round_the_number_to_the_tensors_dtype_as_torch(low):
    values = [0.1, 0.1001, 0.0999, 1 / 3, 1e-3, 1e-5, 300.0, -2.0]
    ours = sg.tensor(values).to(HALVES[low])
    theirs = torch.tensor(values).to(getattr(torch, low))
    for number in values + [0, 2]:
        for name in ("__gt__", "__ge__", "__lt__", "__le__", "__eq__", "__ne__"):
            mine, torchs = getattr(ours, name)(number), getattr(theirs, name)(number)
            assert mine.tolist() == torchs.tolist(), (name, number)


@pytest.mark.parametrize("low", sorted(HALVES))
def test_relu_and_max_pooling_in_16_bits_select_what_float32_selects(low):
    """Both only pick values: the 16-bit results and gradients are the float32 ones, exactly."""
    values = _values(HALVES[low])[: 2 * 3 * 8 * 8].reshape(2, 3, 8, 8)
    x32 = sg.from_numpy(values.astype(np.float32))
    x32 = sg.where(x32.isnan(), 1.0, x32)  # a NaN in a window makes its gradient PyTorch's choice
    x = x32.to(HALVES[low])
    results = []
    for inputs in (x32, x):
        inputs = inputs.detach().requires_grad_()
        out = F.max_pool2d(F.relu(inputs), 2)
        grad = sg.from_numpy(np.linspace(-2, 2, out.numel(), dtype=np.float32).reshape(out.shape))
        out.backward(grad.to(out.dtype))
        results.append((out.detach().numpy(), inputs.grad.numpy()))
    (out32, grad32), (out, grad) = results
    assert _same_bits(out, out32.astype(HALVES[low]))
    assert _same_bits(grad, grad32.astype(HALVES[low]))


def test_relu_gives_no_gradient_where_it_is_flat_even_a_nan_as_torch():
    grad = [np.nan, -1.0, np.nan, 2.0]
    x = [-1.0, -2.0, 3.0, 4.0]
    ours = sg.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    sg.nn.functional.relu(ours).backward(sg.tensor(grad))
    torch.nn.functional.relu(theirs).backward(torch.tensor(grad))
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("low", sorted(HALVES))
def test_folding_16_bit_columns_adds_one_offset_at_a_time_as_pytorch(low):
    """Each offset's add rounded to 16 bits, in row-major order: PyTorch's col2im, bit for bit
    (in float32 and rounded once, as it was, 29% of these pixels were an ulp or more off)."""
    rng = np.random.default_rng(4)
    cols = rng.standard_normal((2, 3 * 3 * 3, 25)).astype(HALVES[low])
    ours = F.fold(sg.from_numpy(cols), (7, 7), 3)
    theirs = torch.nn.functional.fold(
        torch.tensor(cols.astype(np.float32)).to(getattr(torch, low)), (7, 7), 3
    )
    assert ours.dtype == HALVES[low]
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


def test_float16_casts_by_bits_are_numpys_on_every_float16_and_every_midpoint():
    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    wide = every.astype(np.float64)
    finite = np.isfinite(wide)
    midpoints = ((wide[finite][:-1] + wide[finite][1:]) / 2).astype(np.float32)
    rng = np.random.default_rng(5)
    spread = rng.standard_normal(100_000) * 10.0 ** rng.integers(-12, 7, 100_000)
    special = [np.inf, -np.inf, np.nan, 65504, 65519.996, 65520, 3e38, 1e-45, -0.0, 0.0]
    with np.errstate(all="ignore"):
        values = np.concatenate(
            [
                every.astype(np.float32),
                midpoints,  # ties: to even
                np.nextafter(midpoints, np.float32(np.inf)),
                np.nextafter(midpoints, np.float32(-np.inf)),
                spread.astype(np.float32),
                np.array(special, np.float32),
            ]
        )
        expected = values.astype(np.float16)
    assert _same_bits(cast(values, np.float16), expected)
    assert _same_bits(cast(every, np.float32), every.astype(np.float32))
    # any memory layout is kept, and a few values go through NumPy itself
    grid = values[:4096].reshape(16, 16, 16).transpose(2, 0, 1)[::2]
    for x in (grid, values[:5], values[0].reshape(())):
        with np.errstate(all="ignore"):
            ours, numpys = cast(x, np.float16), x.astype(np.float16)
        assert ours.shape == numpys.shape and ours.strides == numpys.strides
        assert _same_bits(ours, numpys)
        assert _same_bits(cast(ours, np.float32), numpys.astype(np.float32))
