"""ReLU over large arrays: ``maximum`` against a row of zeros (ops/unary.py's ``relu``), which
must be PyTorch's ReLU in value and NumPy's ``maximum(x, 0)`` in bits, in every layout."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.ops.unary import relu

SPECIAL = [np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.0, -3.0]


def _values(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[: len(SPECIAL)] = SPECIAL
    flat[-len(SPECIAL) :] = SPECIAL
    return x


LAYOUTS = {
    "rows of 8192": lambda dt: _values((4, 8192), dt),
    "and a shorter last row": lambda dt: _values((3, 7, 1001), dt),
    "batch last, seen batch first": lambda dt: _values((8, 12, 12, 64), dt).transpose(3, 0, 1, 2),
    "not one block (maximum itself)": lambda dt: _values((64, 300, 2), dt)[:, :, 0],
    "small (maximum itself)": lambda dt: _values((10, 10), dt),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_relu_is_maximum_with_zero_bit_for_bit_and_torch_in_value(layout, dtype):
    x = LAYOUTS[layout](dtype)
    bits = np.int32 if dtype == np.float32 else np.int64
    out = relu(x)
    np.testing.assert_array_equal(out.view(bits), np.maximum(x, 0).view(bits))
    assert out.strides == np.maximum(x, 0).strides  # the layout maximum gives
    np.testing.assert_array_equal(out, torch.relu(torch.from_numpy(x)).numpy())
    into = x.copy(order="K")
    assert relu(into, out=into) is into
    np.testing.assert_array_equal(into.view(bits), out.view(bits))


@pytest.mark.parametrize("shape", [(4, 3, 40, 40), (2, 5)], ids=str)
def test_relu_and_its_gradient_match_torch(shape):
    x = _values(shape, np.float32)  # NaN included: its gradient goes through
    ours, theirs = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    grad = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    out = sg.nn.functional.relu(ours)
    out.backward(sg.tensor(grad))
    expected = torch.relu(theirs)
    expected.backward(torch.tensor(grad))
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
