"""A deep equilibrium model (Bai et al., 2019) as the implicit-layers tutorial writes it: the
forward finds the fixed point ``z = f(z, x)`` by Anderson-free fixed-point iteration under
``torch.no_grad``, re-engages autograd with one more call of ``f``, and the backward solves the
adjoint fixed point inside a hook registered on the output with ``register_hook`` (calling
``torch.autograd.grad`` on a detached copy with ``requires_grad_()`` and ``retain_graph=True``,
and removing the hook handle when done); a contractive ``tanh`` cell whose weight goes through
``torch.nn.utils.parametrizations.weight_norm``, a classifier trained with AdamW."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm


def fixed_point(f, z0, max_iter=30, tol=1e-4):
    z = z0
    for _ in range(max_iter):
        z_next = f(z)
        if (z_next - z).norm() / (z_next.norm() + 1e-5) < tol:
            return z_next
        z = z_next
    return z


class Cell(nn.Module):
    """tanh(W z + x), with W small enough at the start that the iteration contracts."""

    def __init__(self, dim):
        super().__init__()
        linear = nn.Linear(dim, dim, bias=False)
        nn.init.normal_(linear.weight, std=0.3 / dim**0.5)  # spectral norm about 0.6
        self.linear = weight_norm(linear)

    def forward(self, z, x):
        return torch.tanh(self.linear(z) + x)


class DEQ(nn.Module):
    def __init__(self, f, **kwargs):
        super().__init__()
        self.f = f
        self.kwargs = kwargs

    def forward(self, x):
        with torch.no_grad():
            z = fixed_point(lambda z: self.f(z, x), torch.zeros_like(x), **self.kwargs)
        z = self.f(z, x)

        z0 = z.clone().detach().requires_grad_()
        f0 = self.f(z0, x)

        def backward_hook(grad):
            if self.hook is not None:
                self.hook.remove()  # the hook's own autograd.grad calls must not re-enter
                self.hook = None
            return fixed_point(
                lambda y: torch.autograd.grad(f0, z0, y, retain_graph=True)[0] + grad,
                grad,
                **self.kwargs,
            )

        if z.requires_grad:
            self.hook = z.register_hook(backward_hook)
        return z


class DEQClassifier(nn.Module):
    def __init__(self, features=12, dim=16, classes=3):
        super().__init__()
        self.inject = nn.Linear(features, dim)
        self.deq = DEQ(Cell(dim), max_iter=40, tol=1e-5)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.deq(self.inject(x)))


def build():
    return DEQClassifier()


def train(model, steps=8):
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((3, 12)) * 1.5
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        labels = rng.integers(0, 3, 32)
        x = centers[labels] + rng.standard_normal((32, 12))
        logits = model(torch.from_numpy(x.astype(np.float32)))
        loss = F.cross_entropy(logits, torch.from_numpy(labels))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.4f}")
    return losses


if __name__ == "__main__":
    train(build())
