"""A tiny GAN fit to a tilted 2-D Gaussian with simultaneous updates: one forward pass of the
generator and the discriminator on the fakes serves both losses, and
``backward(inputs=...)`` sends each loss's gradient only into its own network's parameters (no
``detach()``, no second forward); ``retain_graph=True`` keeps the shared part of the graph for
the second backward. Adam with GAN betas for both (data and noise drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class GAN(nn.Module):
    def __init__(self, nz=3, hidden=16):
        super().__init__()
        self.G = nn.Sequential(nn.Linear(nz, hidden), nn.Tanh(), nn.Linear(hidden, 2))
        self.D = nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 1))


def real_batch(rng, n):
    """Points of a Gaussian stretched along one diagonal and centred at (1, -0.5)."""
    mixing = np.array([[1.0, 0.6], [0.0, 0.3]])
    return (rng.normal(size=(n, 2)) @ mixing + [1.0, -0.5]).astype(np.float32)


def build():
    return GAN()


def train(gan, steps=12, batch=32, nz=3):
    rng = np.random.default_rng(0)
    opt_g = torch.optim.Adam(gan.G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(gan.D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)
    losses = []
    for step in range(steps):
        real = torch.from_numpy(real_batch(rng, batch))
        z = torch.from_numpy(rng.normal(size=(batch, nz)).astype(np.float32))
        fake_logits = gan.D(gan.G(z))
        d_loss = F.binary_cross_entropy_with_logits(gan.D(real), ones)
        d_loss = d_loss + F.binary_cross_entropy_with_logits(fake_logits, zeros)
        g_loss = F.binary_cross_entropy_with_logits(fake_logits, ones)
        opt_d.zero_grad()
        opt_g.zero_grad()
        d_loss.backward(inputs=list(gan.D.parameters()), retain_graph=True)
        g_loss.backward(inputs=list(gan.G.parameters()))
        opt_d.step()
        opt_g.step()
        losses += [d_loss.item(), g_loss.item()]
        if step % 4 == 0:
            print(f"step {step} D {d_loss.item():.4f} G {g_loss.item():.4f}")
    with torch.no_grad():
        fake = gan.G(torch.from_numpy(rng.normal(size=(256, nz)).astype(np.float32)))
        losses += fake.mean(0).tolist()
    print(f"mean of the fakes {losses[-2]:.3f} {losses[-1]:.3f}")
    return losses
