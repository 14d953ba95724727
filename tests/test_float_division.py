"""Floored division and remainder of floats as PyTorch computes them, from fmod: ``1.0 // 0.1``
is 9 and ``1.0 % 0.1`` 0.0999... (``floor(x / y)`` gave 10 and 0: ``x / y`` rounds up to
10), signed zeros and infinities included; the remainder's gradient is PyTorch's."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg


def _operands(dtype):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-10, 10, 500), [1.0, -1.0, 0.0, -0.0, 7.5, -7.5, 1e30]])
    y = np.concatenate([rng.uniform(-3, 3, 500), [0.1, -0.1, 1.0, 1.0, -2.0, 2.0, 1e-30]])
    return x.astype(dtype), y.astype(dtype)


def _same_bits_or_both_nan(ours, theirs):
    ours, theirs = ours.numpy(), theirs.numpy()
    nan = np.isnan(theirs)
    assert (np.isnan(ours) == nan).all()
    assert ours[~nan].tobytes() == theirs[~nan].tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "op",
    [
        lambda m, x, y: x // y,
        lambda m, x, y: x % y,
        lambda m, x, y: m.remainder(x, y),
        lambda m, x, y: m.floor_divide(x, y),
        lambda m, x, y: x % 0.1,
        lambda m, x, y: 1.0 % y,
        lambda m, x, y: x // 0.0,
    ],
    ids=["//", "%", "remainder", "floor_divide", "%_number", "number_%", "//_zero"],
)
def test_values_equal_torchs_bit_for_bit(op, dtype):
    x, y = _operands(dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        ours = op(sg, sg.tensor(x), sg.tensor(y))
    _same_bits_or_both_nan(ours, op(torch, torch.tensor(x), torch.tensor(y)))


def test_the_remainders_gradient_is_torchs():
    """1 for the dividend, minus the floored quotient for the divisor."""
    x, y = _operands("float64")
    grads = []
    for lib in (sg, torch):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        (a % b).sum().backward()
        grads.append((a.grad, b.grad))
    for ours, theirs in zip(*grads):
        assert_close(ours, theirs)


def test_the_floored_quotients_gradient_is_zero():
    """PyTorch has none (its backward raises); here the step's derivative, 0."""
    x = sg.tensor([1.0, 2.5], requires_grad=True)
    (x // 0.1).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
