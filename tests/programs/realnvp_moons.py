"""A RealNVP normalizing flow (Dinh et al., 2017) on two moons, as flow tutorials write it:
affine coupling layers with alternating binary masks registered as buffers, scales squashed by
``tanh`` and applied with ``torch.exp``, the log-determinant summed over dimensions, a
``MultivariateNormal`` base whose ``log_prob`` gives the negative log-likelihood, Adam, samples
through the inverse pass, and the log-determinant checked against the Jacobian's, its rows given
by ``torch.autograd.grad(..., is_grads_batched=True)`` (data and base samples drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal


class Coupling(nn.Module):
    def __init__(self, mask, hidden=32):
        super().__init__()
        self.register_buffer("mask", mask)
        self.s = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 2), nn.Tanh())
        self.t = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def scale_shift(self, fixed):  # only the unmasked coordinates are scaled and shifted
        return self.s(fixed) * (1 - self.mask), self.t(fixed) * (1 - self.mask)

    def forward(self, x):  # data -> latent
        s, t = self.scale_shift(x * self.mask)
        return x * torch.exp(s) + t, s.sum(dim=1)

    def inverse(self, z):
        s, t = self.scale_shift(z * self.mask)
        return (z - t) * torch.exp(-s)


class RealNVP(nn.Module):
    def __init__(self, layers=4):
        super().__init__()
        masks = [torch.tensor([1.0 - i % 2, float(i % 2)]) for i in range(layers)]  # alternate
        self.couplings = nn.ModuleList(Coupling(m) for m in masks)
        self.register_buffer("loc", torch.zeros(2))
        self.register_buffer("cov", torch.eye(2))

    def forward(self, x):
        log_det = torch.zeros(x.shape[0])
        for coupling in self.couplings:
            x, ld = coupling(x)
            log_det = log_det + ld
        return x, log_det

    def log_prob(self, x):
        z, log_det = self(x)
        return MultivariateNormal(self.loc, self.cov).log_prob(z) + log_det

    def sample_from(self, z):
        for coupling in reversed(self.couplings):
            z = coupling.inverse(z)
        return z


def moons(rng, n):
    angle = rng.uniform(0, np.pi, size=n)
    upper = rng.integers(0, 2, size=n)
    x = np.where(upper, np.cos(angle), 1 - np.cos(angle))
    y = np.where(upper, np.sin(angle), 0.5 - np.sin(angle))
    return np.stack([x, y], 1) + 0.05 * rng.normal(size=(n, 2))


def build():
    return RealNVP()


def train(flow, steps=30, batch=128):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.Adam(flow.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        x = torch.from_numpy(moons(rng, batch).astype(np.float32))
        loss = -flow.log_prob(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 10 == 0:
            print(f"step {step} nll {loss.item():.4f}")
    with torch.no_grad():
        samples = flow.sample_from(torch.from_numpy(rng.normal(size=(256, 2)).astype(np.float32)))
        x = torch.from_numpy(moons(rng, 256).astype(np.float32))
        held_out = -flow.log_prob(x).mean().item()
    mean_x, mean_y = samples.mean(0).tolist()
    print(f"held-out nll {held_out:.4f}, sample mean ({mean_x:.3f}, {mean_y:.3f})")

    # the coupling layers' log-determinant against the Jacobian's, its rows from batched vjps
    x = torch.from_numpy(moons(rng, 1).astype(np.float32)).requires_grad_()
    z, log_det = flow(x)
    (rows,) = torch.autograd.grad(z, x, torch.eye(2).unsqueeze(1), is_grads_batched=True)
    log_abs_det = torch.linalg.slogdet(rows[:, 0, :]).logabsdet
    print(f"log|det J| {log_abs_det.item():.4f} vs coupling sum {log_det.item():.4f}")
    return losses + [held_out, mean_x, mean_y, log_abs_det.item(), log_det.item()]
