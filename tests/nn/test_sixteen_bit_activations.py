"""16-bit activations and softmax against PyTorch's CPU kernels, which compute a float16 or
bfloat16 input in float32 and round the result (and the gradient) once. Composed of 16-bit
steps, each rounded, a third of bfloat16 gelu's and softmax's values were an ulp off, and
hardsigmoid's gradient next to -3 was 0 instead of 1/6."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

# on [-3, 3]: further out, float32 erf and tanh round differently under gelu's cancellation
X = np.linspace(-3, 3, 2001).astype(np.float32)
GRAD = np.cos(np.arange(X.size)).astype(np.float32)
ACTIVATIONS = {
    "gelu": lambda F, x: F.gelu(x),
    "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"),
    "silu": lambda F, x: F.silu(x),
    "mish": lambda F, x: F.mish(x),
    "hardswish": lambda F, x: F.hardswish(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "elu": lambda F, x: F.elu(x, 0.7),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 1.5),
    "softmax": lambda F, x: F.softmax(x.reshape(20, -1), dim=-1),
    "softplus": lambda F, x: F.softplus(x),
    "tanh": lambda F, x: F.tanh(x),  # its gradient: one node (TanhGrad), rounded once
    "sigmoid": lambda F, x: F.sigmoid(x),  # gradient: float16 step by step in PyTorch's order
    # its kernel along the last dim rounds the sum of exps and its log; along others, once
    "log_softmax": lambda F, x: F.log_softmax(x.reshape(20, -1) * 3, dim=-1),
    "log_softmax_dim0": lambda F, x: F.log_softmax(x.reshape(20, -1) * 3, dim=0),
    "logsigmoid": lambda F, x: F.logsigmoid(x * 3),  # gradient from exp(-|x|) in 16 bits
}


def _value_and_grad(lib, name, dtype):
    x = lib.tensor(X[:2000]).to(getattr(lib, dtype)).requires_grad_()
    out = ACTIVATIONS[name](lib.nn.functional, x)
    out.backward(lib.tensor(GRAD[:2000]).reshape(out.shape).to(getattr(lib, dtype)))
    return out.detach().float().numpy().ravel(), x.grad.float().numpy()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_sixteen_bit_activation_rounds_once_as_pytorch(name, dtype):
    ulp = 2.0**-7 if dtype == "bfloat16" else 2.0**-10  # one ulp at most, relative
    for ours, theirs in zip(_value_and_grad(sg, name, dtype), _value_and_grad(torch, name, dtype)):
        # bit for bit but for a few values on which float32 itself rounds differently
        assert np.mean(ours != theirs) < 0.01
        np.testing.assert_allclose(ours, theirs, rtol=ulp, atol=1e-6)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", ["log_softmax", "log_softmax_dim0", "logsigmoid"])
def test_log_softmax_and_logsigmoid_gradients_are_pytorchs_bits(name, dtype):
    """docs/amp.md listed these gradients as an ulp off PyTorch's on up to half the values:
    they are PyTorch's bits, the values too."""
    for ours, theirs in zip(_value_and_grad(sg, name, dtype), _value_and_grad(torch, name, dtype)):
        np.testing.assert_array_equal(ours, theirs)
