"""Piecewise-linear activations under create_graph: their gradient is a function of the input
(PyTorch's threshold_backward, hardtanh_backward, leaky_relu_backward...), so it requires grad
when the input does, and its own gradient into the input is zeros, not None."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

# the kinks, signed zeros and NaN among ordinary values
VALUES = [1.5, -2.0, 0.3, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 6.0, 7.0, np.nan, -0.7, 2.5]

# name -> a function taking (the library, its nn.functional, x)
OPS = {
    "relu": lambda M, F, x: x.relu(),
    "F.relu": lambda M, F, x: F.relu(x),
    "nn.ReLU": lambda M, F, x: M.nn.ReLU()(x),
    "relu inplace": lambda M, F, x: F.relu(x * 1, inplace=True),
    "hardtanh": lambda M, F, x: F.hardtanh(x),
    "hardtanh inplace": lambda M, F, x: F.hardtanh(x * 1, -0.5, 2.0, inplace=True),
    "relu6": lambda M, F, x: F.relu6(x),
    "leaky_relu": lambda M, F, x: F.leaky_relu(x),
    "leaky_relu negative slope": lambda M, F, x: F.leaky_relu(x, -0.5),
    "leaky_relu inplace": lambda M, F, x: F.leaky_relu(x * 1, 0.2, inplace=True),
    "threshold": lambda M, F, x: F.threshold(x, 0.5, -1.0),
    "hardshrink": lambda M, F, x: F.hardshrink(x),
    "softshrink": lambda M, F, x: F.softshrink(x, 0.5),
    "prelu": lambda M, F, x: F.prelu(x, M.tensor([-0.25], dtype=x.dtype)),
    "rrelu eval": lambda M, F, x: F.rrelu(x, 0.1, 0.3, training=False),
    "rrelu inplace": lambda M, F, x: F.rrelu(x * 1, 0.2, 0.2, training=True, inplace=True),
    # PyTorch's gradient here does not depend on the input: it does not require grad
    "clamp": lambda M, F, x: x.clamp(-1, 1),
    "max": lambda M, F, x: x.max(),
}


def _first_gradient(M, name, dtype):
    x = M.tensor(VALUES, dtype=dtype, requires_grad=True)
    out = OPS[name](M, M.nn.functional, x)
    weights = M.tensor(np.linspace(-1.5, 1.4, out.numel()).reshape(tuple(out.shape)), dtype=dtype)
    (g,) = M.autograd.grad((out * weights).sum(), x, create_graph=True)
    return x, g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(OPS))
def test_gradient_requires_grad_and_its_gradient_is_zeros_as_torch(name, dtype):
    x, g = _first_gradient(sg, name, getattr(sg, dtype))
    tx, tg = _first_gradient(torch, name, getattr(torch, dtype))
    assert g.requires_grad == tg.requires_grad
    expected = tg.detach().numpy()
    np.testing.assert_array_equal(g.detach().numpy(), expected)
    np.testing.assert_array_equal(np.signbit(g.detach().numpy()), np.signbit(expected))
    if not tg.requires_grad:
        return
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("name", ["relu", "hardtanh", "leaky_relu", "threshold", "softshrink"])
def test_gradgradcheck_away_from_the_kinks(name):
    x = sg.tensor([1.5, -2.0, 0.3, -0.7, 2.5, 0.8], dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradgradcheck(lambda t: OPS[name](sg, sg.nn.functional, t), (x,))


def test_a_plain_backward_records_nothing():
    x = sg.tensor([1.5, -2.0, 0.3], requires_grad=True)
    (g,) = sg.autograd.grad(sg.nn.functional.leaky_relu(x).sum(), x)
    assert not g.requires_grad
    (g,) = sg.autograd.grad(x.relu().sum(), x)
    assert not g.requires_grad


def _third_order(M, name):
    x = M.tensor([1.5, -2.0, 0.3, 0.0], requires_grad=True)
    go = M.tensor([1.0, -2.0, 3.0, 0.5], requires_grad=True)
    (g,) = M.autograd.grad(OPS[name](M, M.nn.functional, x), x, go, create_graph=True)
    (h,) = M.autograd.grad((g * g).sum(), go, create_graph=True)
    (h * h).sum().backward()
    return h, x.grad


@pytest.mark.parametrize("name", ["relu", "hardtanh", "leaky_relu", "softshrink"])
def test_the_gradient_s_gradient_in_grad_output_still_reaches_the_input(name):
    h, x_grad = _third_order(sg, name)
    th, tx_grad = _third_order(torch, name)
    assert h.requires_grad and th.requires_grad
    np.testing.assert_array_equal(h.detach().numpy(), th.detach().numpy())
    np.testing.assert_array_equal(x_grad.numpy(), tx_grad.numpy())


# The ELU family (elu, selu, celu and their in-place forms: one PyTorch kernel, elu_backward):
# the first derivative takes the exponential's slope where x <= 0, the second (PyTorch's
# elu_double_backward) only where x < 0, so at 0 and -0.0 it is 0
ELU_OPS = {
    "elu": lambda F, x: F.elu(x),
    "elu alpha": lambda F, x: F.elu(x, 0.4),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 2.5),
    "celu alpha not a float32": lambda F, x: F.celu(x, 0.7),
    "elu_": lambda F, x: F.elu_(x * 1, 1.7),
    "selu_": lambda F, x: F.selu_(x * 1),
    "celu_": lambda F, x: F.celu_(x * 1, 0.7),
    "elu inplace": lambda F, x: F.elu(x * 1, 0.4, inplace=True),
}
ELU_VALUES = [0.0, -0.0, -0.5, 0.5, -3.0, 2.0, *np.random.default_rng(0).normal(0, 3, 30)]


def _elu_derivatives(M, name):
    """The values, the first derivative (with grad_output ``go``) and the second, in x and in
    go; and the name of the node."""
    x = M.tensor(ELU_VALUES, dtype=M.float64, requires_grad=True)
    go = M.tensor(np.linspace(-1.5, 1.4, len(ELU_VALUES)), dtype=M.float64, requires_grad=True)
    out = ELU_OPS[name](M.nn.functional, x)
    (g,) = M.autograd.grad(out, x, go, create_graph=True)
    weights = M.tensor(np.linspace(0.5, 2.0, len(ELU_VALUES)), dtype=M.float64)
    hx, hgo = M.autograd.grad((g * weights).sum(), (x, go))
    return [t.detach().numpy() for t in (out, g, hx, hgo)], out.grad_fn.name()


@pytest.mark.parametrize("name", list(ELU_OPS))
def test_elu_family_second_derivative_is_torchs_at_zero_and_elsewhere(name):
    (ours, our_node), (theirs, their_node) = (
        _elu_derivatives(sg, name),
        _elu_derivatives(torch, name),
    )
    assert our_node == their_node  # EluBackward0, CeluBackward0, or ...Backward1 in place
    # the values to an ulp (PyTorch's vectorised expm1 is not NumPy's): the in-place forms'
    # gradients, from the result (out + alpha * scale), may lose a few more digits
    np.testing.assert_allclose(ours[0], theirs[0], rtol=3e-16, atol=0)
    np.testing.assert_array_equal(np.signbit(ours[0]), np.signbit(theirs[0]))  # elu(-0.0): -0.0
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    assert ours[2][0] == ours[2][1] == 0  # (at 0 and -0.0)


@pytest.mark.parametrize("name", list(ELU_OPS))
def test_elu_family_gradgradcheck(name):
    x = sg.tensor(ELU_VALUES[2:12], dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradgradcheck(lambda t: ELU_OPS[name](sg.nn.functional, t), (x,))
