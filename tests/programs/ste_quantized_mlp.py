"""Custom ``torch.autograd.Function``s as quantization-aware-training code writes them: a
straight-through rounding quantizer (``save_for_backward``, ``needs_input_grad``, a clipping mask
returned as a second output marked non-differentiable, a ``once_differentiable`` backward) inside
a small MLP, and a smooth soft-clamp (softsign-shaped, in the newer style: ``forward`` without
``ctx`` and a ``setup_context`` saving the output) with its own exact backward checked by
``gradcheck`` and ``gradgradcheck`` on float64 inputs (data drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.function import once_differentiable


class RoundSTE(torch.autograd.Function):
    """Rounds to a grid of 1/levels in [-1, 1]; the gradient passes straight through inside."""

    @staticmethod
    def forward(ctx, x, levels):
        inside = abs(x) <= 1
        ctx.save_for_backward(inside)
        ctx.mark_non_differentiable(inside)
        return (x.clip(-1, 1) * levels).round() / levels, inside

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out, grad_inside):
        (inside,) = ctx.saved_tensors
        grad_x = grad_out * inside.to(grad_out.dtype) if ctx.needs_input_grad[0] else None
        return grad_x, None


class SoftClamp(torch.autograd.Function):
    """y = x / (1 + |x| / bound), with the derivative (1 - |y| / bound)^2 written by hand."""

    @staticmethod
    def forward(x, bound):
        return x / (1 + abs(x) / bound)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.bound = inputs[1]

    @staticmethod
    def backward(ctx, grad_out):
        (y,) = ctx.saved_tensors
        return grad_out * (1 - y.abs() / ctx.bound) ** 2, None


class QuantMLP(nn.Module):
    def __init__(self, levels=8):
        super().__init__()
        self.levels = levels
        self.fc1, self.fc2 = nn.Linear(6, 32), nn.Linear(32, 3)

    def forward(self, x):
        h = SoftClamp.apply(self.fc1(x), 2.0)
        q, inside = RoundSTE.apply(h, self.levels)
        self.clipped = 1 - inside.float().mean()
        return self.fc2(q)


def build():
    return QuantMLP()


def train(model, steps=12):
    x64 = torch.from_numpy(np.random.default_rng(1).normal(size=(4, 5))).requires_grad_()
    print("gradcheck", torch.autograd.gradcheck(lambda t: SoftClamp.apply(t, 1.5), (x64,)))
    print("gradgradcheck", torch.autograd.gradgradcheck(lambda t: SoftClamp.apply(t, 1.5), (x64,)))

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(64, 6)).astype(np.float32))
    y = torch.from_numpy((x.numpy() @ rng.normal(size=(6, 3))).argmax(1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 4 == 0:
            print(f"step {step} loss {loss.item():.4f} clipped {model.clipped.item():.3f}")
    return losses
