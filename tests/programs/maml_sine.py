"""MAML on sine-wave regression (Finn et al., 2017), as its PyTorch re-implementations write it:
a batch of tasks (amplitude and phase drawn with NumPy), for each a few inner SGD steps on the
support set whose gradients come from ``torch.autograd.grad(loss, params_dict,
create_graph=True)`` (a dict of gradients back) and whose fast weights are a parameter dict run
through ``torch.func.functional_call``; the query loss of the adapted weights, averaged over
tasks, is backpropagated through the inner steps into an outer Adam step."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call


class SineNet(nn.Module):
    def __init__(self, hidden=40):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(1, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x)


def sample_task(rng, shots=10):
    amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
    x = rng.uniform(-5, 5, size=(2 * shots, 1)).astype(np.float32)
    y = (amplitude * np.sin(x - phase)).astype(np.float32)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    return x[:shots], y[:shots], x[shots:], y[shots:]


def adapt(model, x, y, inner_steps, inner_lr):
    fast = dict(model.named_parameters())
    for _ in range(inner_steps):
        loss = F.mse_loss(functional_call(model, fast, (x,)), y)
        grads = torch.autograd.grad(loss, fast, create_graph=True)  # a dict in, a dict out
        fast = {name: p - inner_lr * grads[name] for name, p in fast.items()}
    return fast


def build():
    return SineNet()


def train(model, iterations=8, tasks=4, inner_steps=2, inner_lr=0.01):
    rng = np.random.default_rng(0)
    meta_optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for it in range(iterations):
        meta_optimizer.zero_grad()
        meta_loss = 0.0
        for _ in range(tasks):
            x_s, y_s, x_q, y_q = sample_task(rng)
            fast = adapt(model, x_s, y_s, inner_steps, inner_lr)
            meta_loss = meta_loss + F.mse_loss(functional_call(model, fast, (x_q,)), y_q)
        meta_loss = meta_loss / tasks
        meta_loss.backward()
        meta_optimizer.step()
        losses.append(meta_loss.item())
        if it % 2 == 0:
            print(f"iteration {it} meta-loss {meta_loss.item():.4f}")

    x_s, y_s, x_q, y_q = sample_task(rng)  # a new task: the query loss before and after adapting
    with torch.no_grad():
        before = F.mse_loss(model(x_q), y_q).item()
    fast = adapt(model, x_s, y_s, 5, inner_lr)
    after = F.mse_loss(functional_call(model, fast, (x_q,)), y_q).item()
    print(f"new task: query loss {before:.4f} before, {after:.4f} after 5 steps")
    return losses + [before, after]
