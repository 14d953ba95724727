"""A WGAN-GP (Gulrajani et al., 2017) on a ring of eight Gaussians, with the constraints written
through ``torch.nn.utils.parametrize``: the critic's layers under
``parametrizations.spectral_norm`` (power iteration buffers updated in train mode), the
generator's square hidden layer under ``parametrizations.orthogonal`` and its input layer under a
custom parametrization module (unit-norm rows) added by ``register_parametrization``. The
gradient penalty differentiates the critic w.r.t. interpolated points with
``torch.autograd.grad(create_graph=True)`` and ``.norm(2, dim=1)``; both learning rates decay
linearly by ``LambdaLR`` (noise, data and mixing weights drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils.parametrizations import orthogonal, spectral_norm


class UnitRows(nn.Module):
    def forward(self, W):
        return W / W.norm(dim=1, keepdim=True)


class WGAN(nn.Module):
    def __init__(self, nz=4, hidden=32):
        super().__init__()
        self.G = nn.Sequential(
            nn.Linear(nz, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 2),
        )
        parametrize.register_parametrization(self.G[0], "weight", UnitRows())
        orthogonal(self.G[2])
        self.D = nn.Sequential(
            spectral_norm(nn.Linear(2, hidden)),
            nn.LeakyReLU(0.2),
            spectral_norm(nn.Linear(hidden, hidden)),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden, 1),
        )


def ring(rng, n):
    angles = rng.integers(0, 8, size=n) * np.pi / 4
    points = 2 * np.stack([np.cos(angles), np.sin(angles)], 1) + 0.05 * rng.normal(size=(n, 2))
    return points.astype(np.float32)


def gradient_penalty(D, real, fake, alpha):
    interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = D(interpolates)
    (grads,) = torch.autograd.grad(scores.sum(), interpolates, create_graph=True)
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def build():
    return WGAN()


def train(gan, steps=6, n_critic=3, batch=64, lam=10.0):
    rng = np.random.default_rng(0)
    opt_g = torch.optim.Adam(gan.G.parameters(), lr=1e-3, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(gan.D.parameters(), lr=1e-3, betas=(0.5, 0.9))
    decay = lambda step: 1 - step / steps  # noqa: E731
    sched_g = torch.optim.lr_scheduler.LambdaLR(opt_g, decay)
    sched_d = torch.optim.lr_scheduler.LambdaLR(opt_d, decay)

    def noise(n):
        return torch.from_numpy(rng.normal(size=(n, 4)).astype(np.float32))

    losses = []
    for step in range(steps):
        for _ in range(n_critic):
            real = torch.from_numpy(ring(rng, batch))
            fake = gan.G(noise(batch)).detach()
            alpha = torch.from_numpy(rng.uniform(size=(batch, 1)).astype(np.float32))
            wasserstein = gan.D(fake).mean() - gan.D(real).mean()
            d_loss = wasserstein + lam * gradient_penalty(gan.D, real, fake, alpha)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
        g_loss = -gan.D(gan.G(noise(batch))).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        sched_g.step()
        sched_d.step()
        losses += [d_loss.item(), g_loss.item()]
        lr = sched_g.get_last_lr()[0]
        print(f"step {step} D {d_loss.item():.4f} G {g_loss.item():.4f} lr {lr:.2e}")
    W = gan.G[2].weight
    print(f"G[2].weight orthogonal: {(W @ W.T - torch.eye(W.shape[0])).abs().max().item() < 1e-4}")
    return losses
