"""Ops whose gradient PyTorch defines as zero (not none): their results require grad, have a
``grad_fn``, and send zeros back, so a loss through them backpropagates as PyTorch's."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

X = [0.3, -1.5, 2.5, 0.0, -0.0, float("nan")]

ZERO_GRADIENT = {
    "angle": lambda m, x: x.angle(),
    "torch.angle": lambda m, x: m.angle(x),
    "bernoulli": lambda m, x: m.bernoulli(x.sigmoid()),
    "Tensor.bernoulli": lambda m, x: x.sigmoid().bernoulli(),
    "bernoulli_ of a plain tensor": lambda m, x: m.zeros(6, dtype=x.dtype).bernoulli_(x.sigmoid()),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ZERO_GRADIENT)
def test_a_result_of_zero_gradient_is_in_the_graph_as_pytorchs(name, dtype):
    """angle of real numbers and bernoulli's draws did not require grad (a backward through
    them alone raised; PyTorch's gives zeros)."""
    results = []
    for m in (sg, torch):
        x = m.tensor(np.nan_to_num(X) if "bernoulli" in name else X, dtype=getattr(m, dtype))
        x.requires_grad_()
        out = ZERO_GRADIENT[name](m, x)
        (grad,) = m.autograd.grad(out.sum(), x)
        results.append((out.requires_grad, out.grad_fn is None, out.dtype.itemsize, grad.tolist()))
    assert results[0] == results[1]
