"""A masked autoregressive flow (Papamakarios et al., 2017) on a noisy ring: each layer is a MADE
whose ``nn.Linear`` weights are multiplied by mask buffers built by comparing NumPy-drawn unit
degrees, plus a ``torch.tril`` mask for the direct input-to-output path. Layers are stacked with
the coordinate order reversed by ``flip`` between them, the log-determinants summed with
``sum(dim=1)``, the base an ``Independent(Normal(...), 1)``. Negative log-likelihood with Adam
and ``ReduceLROnPlateau``; then samples by the sequential autoregressive inverse under
``torch.no_grad()``, and the samples' angles fitted by a logit-normal written as a
``TransformedDistribution`` of ``AffineTransform`` and ``SigmoidTransform``."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Independent, Normal, TransformedDistribution
from torch.distributions.transforms import AffineTransform, ComposeTransform, SigmoidTransform


class MaskedLinear(nn.Linear):
    def __init__(self, n_in, n_out, mask):
        super().__init__(n_in, n_out)
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)


class MADE(nn.Module):
    """x -> (mu, alpha), where output i sees only the inputs before i."""

    def __init__(self, dim, hidden, rng):
        super().__init__()
        d_in = torch.arange(1, dim + 1)
        d_hidden = torch.from_numpy(rng.integers(1, dim, size=hidden))  # degrees in [1, dim)
        mask_in = (d_hidden[:, None] >= d_in[None, :]).float()
        mask_hidden = (d_hidden[:, None] >= d_hidden[None, :]).float()
        mask_out = (d_in[:, None] > d_hidden[None, :]).float().repeat(2, 1)  # mu and alpha heads
        self.net = nn.Sequential(
            MaskedLinear(dim, hidden, mask_in),
            nn.Tanh(),
            MaskedLinear(hidden, hidden, mask_hidden),
            nn.Tanh(),
            MaskedLinear(hidden, 2 * dim, mask_out),
        )
        # a direct linear path from earlier inputs: strictly lower triangular
        self.direct = MaskedLinear(dim, dim, torch.tril(torch.ones(dim, dim), diagonal=-1))

    def forward(self, x):
        mu, alpha = self.net(x).chunk(2, dim=1)
        return mu + self.direct(x), torch.tanh(alpha)  # tanh keeps early scales tame


class MAF(nn.Module):
    def __init__(self, dim=2, layers=4, hidden=24):
        super().__init__()
        rng = np.random.default_rng(1)
        self.dim = dim
        self.mades = nn.ModuleList(MADE(dim, hidden, rng) for _ in range(layers))

    def base(self):
        return Independent(Normal(torch.zeros(self.dim), torch.ones(self.dim)), 1)

    def forward(self, x):  # data -> noise, all coordinates at once
        log_det = torch.zeros(x.shape[0])
        for made in self.mades:
            mu, alpha = made(x)
            x = ((x - mu) * torch.exp(-alpha)).flip(1)
            log_det = log_det - alpha.sum(dim=1)
        return x, log_det

    def log_prob(self, x):
        u, log_det = self(x)
        return self.base().log_prob(u) + log_det

    @torch.no_grad()
    def sample(self, u):  # noise -> data, one coordinate at a time in each layer
        for made in reversed(self.mades):
            u = torch.flip(u, dims=[1])
            x = torch.zeros_like(u)
            for i in range(self.dim):
                mu, alpha = made(x)
                x[:, i] = u[:, i] * torch.exp(alpha[:, i]) + mu[:, i]
            u = x
        return u


def ring(rng, n):
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = 1.0 + 0.1 * rng.standard_normal(n)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], 1).astype(np.float32)


def build():
    return MAF()


def train(flow, epochs=25, batch=128):
    rng = np.random.default_rng(0)
    data = torch.from_numpy(ring(rng, 512))
    optimizer = torch.optim.Adam(flow.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1)
    losses = []
    for epoch in range(epochs):
        perm = torch.from_numpy(rng.permutation(len(data)))
        total = 0.0
        for i in range(0, len(data), batch):
            loss = -flow.log_prob(data[perm[i : i + batch]]).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            losses.append(loss.item())
        epoch_nll = total / (len(data) // batch)
        scheduler.step(epoch_nll)
        if epoch % 5 == 4:
            print(f"epoch {epoch}: nll {epoch_nll:.4f}, lr {optimizer.param_groups[0]['lr']:.4g}")

    u = torch.from_numpy(rng.standard_normal((512, 2)).astype(np.float32))
    samples = flow.sample(u)
    with torch.no_grad():
        back, _ = flow(samples)  # the inverse undoes the forward pass
        radius = samples.norm(dim=1)
    mean_x, mean_y = samples.mean(0).tolist()
    round_trip = (back - u).abs().max().item()
    print(
        f"sample mean ({mean_x:.3f}, {mean_y:.3f}), radius {radius.mean().item():.3f} "
        f"+- {radius.std().item():.3f}, round trip error < 1e-4: {round_trip < 1e-4}"
    )

    # the angles as fractions of a turn, fitted by a logit-normal: sigmoid(m + s * N(0, 1))
    frac = (torch.atan2(samples[:, 1], samples[:, 0]) / (2 * math.pi) + 0.5).clamp(0.01, 0.99)
    logit = torch.log(frac / (1 - frac))
    m, s = logit.mean(), logit.std()
    transform = ComposeTransform([AffineTransform(m, s), SigmoidTransform()])
    logit_normal = TransformedDistribution(Normal(0.0, 1.0), transform)
    fit_nll = -logit_normal.log_prob(frac).mean()
    print(
        f"logit-normal fit to the angles: loc {m.item():.3f}, scale {s.item():.3f}, "
        f"nll {fit_nll.item():.4f}"
    )
    return (
        losses
        + samples.mean(0).tolist()
        + [radius.mean().item(), radius.std().item(), m.item(), s.item(), fit_nll.item()]
    )


if __name__ == "__main__":
    train(build())
