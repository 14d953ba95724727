"""A small regressor prepared for deployment with TorchScript: its constant is a
``torch.jit.Final``, a helper the compiler cannot read is ``@torch.jit.ignore``d, the module
is trained through ``torch.jit.script``'s result, and the trained model is checked once more
with ``torch.jit.trace``. With scratchgrad these compile nothing and the model runs eagerly."""

import numpy as np
import torch
from torch import nn


class Regressor(nn.Module):
    scale: torch.jit.Final[float]

    def __init__(self):
        super().__init__()
        self.scale = 0.5
        self.body = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))

    @torch.jit.ignore
    def summary(self) -> str:
        shapes = [tuple(p.shape) for p in self.parameters()]
        return f"Regressor: {sum(p.numel() for p in self.parameters())} weights in {shapes}"

    def forward(self, x):
        return self.body(x) + self.scale * x[:, :1]


def make_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = np.sin(x[:, :1]) + 0.5 * x[:, 1:2] * x[:, 2:3]
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


def build():
    return Regressor()


def train(model, steps=12):
    scripted = torch.jit.script(model)
    print(scripted.summary())
    x, y = make_data()
    optimizer = torch.optim.Adam(scripted.parameters(), lr=0.02)
    losses = []
    for step in range(steps):
        loss = nn.functional.mse_loss(scripted(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 4 == 0:
            print(f"step {step}: loss {loss.item():.5f}")
    with torch.no_grad():
        traced = torch.jit.trace(model, x[:8])
        print(f"traced vs eager: {(traced(x) - model(x)).abs().max().item():.1e}")
    return losses


if __name__ == "__main__":
    train(build())
