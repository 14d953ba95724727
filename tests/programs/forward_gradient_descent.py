"""Training with forward-mode AD only ("forward gradients"): each step draws a random direction
for every parameter, gets the loss's directional derivative along it from one forward pass of
dual tensors (``torch.autograd.forward_ad`` through ``functional_call``), and steps along
``slope * direction``, an unbiased guess of the gradient. Then the network's Jacobian with
respect to its input is built one column per input entry by forward mode, and checked against
reverse mode (float64, data and directions drawn with NumPy)."""

import numpy as np
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
from torch.func import functional_call


def build():
    return nn.Sequential(nn.Linear(3, 12), nn.Tanh(), nn.Linear(12, 2)).double()


def forward_step(model, params, x, y, rng, lr):
    directions = {name: torch.from_numpy(rng.normal(size=p.shape)) for name, p in params.items()}
    with fwAD.dual_level():
        duals = {name: fwAD.make_dual(p, directions[name]) for name, p in params.items()}
        loss = nn.functional.mse_loss(functional_call(model, duals, (x,)), y)
        value, slope = fwAD.unpack_dual(loss)
    new = {name: p - lr * slope * directions[name] for name, p in params.items()}
    return new, value.item()


def input_jacobian(model, point):
    columns = []
    with fwAD.dual_level():
        for j in range(point.numel()):
            basis = torch.zeros_like(point)
            basis[j] = 1.0
            columns.append(fwAD.unpack_dual(model(fwAD.make_dual(point, basis))).tangent)
    return torch.stack(columns, dim=-1)


def train(model, steps=30, lr=0.02):
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(64, 3)))
    y = torch.cat([x.sum(1, keepdim=True).sin(), x[:, :1] * x[:, 1:2]], dim=1)
    params = {name: p.detach() for name, p in model.named_parameters()}
    losses = []
    for step in range(steps):
        params, loss = forward_step(model, params, x, y, rng, lr)
        losses.append(loss)
        if step % 10 == 0:
            print(f"step {step} loss {loss:.5f}")
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(params[name])
    point = torch.from_numpy(rng.normal(size=3))
    forward = input_jacobian(model, point)
    reverse = torch.autograd.functional.jacobian(model, point)
    assert torch.allclose(forward, reverse, rtol=1e-10, atol=1e-12)
    print("input Jacobian", tuple(forward.shape), "matches reverse mode")
    return losses
