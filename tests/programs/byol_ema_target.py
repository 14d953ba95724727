"""BYOL (Grill et al., 2020) as its compact PyTorch ports write it: an online encoder with a
projector and a predictor, a target network made by ``copy.deepcopy`` with its parameters set
to ``requires_grad_(False)``, the normalized-MSE loss ``2 - 2 cos`` symmetrized over two views,
the target updated after each step by an exponential moving average in place under
``torch.no_grad`` (``mul_`` then ``add_(..., alpha=1 - tau)``) with tau raised on a cosine
schedule, LARS-free SGD, BatchNorm in the heads, and a linear probe fitted on frozen features
(views augmented with NumPy noise and masks)."""

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(dim, hidden, out):
    return nn.Sequential(
        nn.Linear(dim, hidden),
        nn.BatchNorm1d(hidden),
        nn.ReLU(inplace=True),
        nn.Linear(hidden, out),
    )


class BYOL(nn.Module):
    def __init__(self, in_dim=16, feature_dim=32, projection_dim=8, hidden=24):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(in_dim, feature_dim), nn.ReLU())
        self.projector = mlp(feature_dim, hidden, projection_dim)
        self.predictor = mlp(projection_dim, hidden, projection_dim)
        self.target_encoder = None
        self.target_projector = None

    def init_target(self):
        self.target_encoder = copy.deepcopy(self.encoder)
        self.target_projector = copy.deepcopy(self.projector)
        for p in list(self.target_encoder.parameters()) + list(self.target_projector.parameters()):
            p.requires_grad_(False)

    @torch.no_grad()
    def update_target(self, tau):
        pairs = [(self.encoder, self.target_encoder), (self.projector, self.target_projector)]
        for online, target in pairs:
            for p_online, p_target in zip(online.parameters(), target.parameters()):
                p_target.mul_(tau).add_(p_online, alpha=1 - tau)

    def forward(self, view_1, view_2):
        online_1 = self.predictor(self.projector(self.encoder(view_1)))
        online_2 = self.predictor(self.projector(self.encoder(view_2)))
        with torch.no_grad():
            target_1 = self.target_projector(self.target_encoder(view_1))
            target_2 = self.target_projector(self.target_encoder(view_2))
        return (regression_loss(online_1, target_2) + regression_loss(online_2, target_1)).mean()


def regression_loss(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


def augment(rng, x):
    keep = rng.random(x.shape) > 0.2
    return torch.from_numpy((x * keep + 0.1 * rng.standard_normal(x.shape)).astype(np.float32))


def build():
    return BYOL()


def train(model, steps=12, base_tau=0.9):
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((4, 16))
    labels = rng.integers(0, 4, 64)
    data = centers[labels] + 0.5 * rng.standard_normal((64, 16))
    model.init_target()
    online = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(online, lr=0.05, momentum=0.9, weight_decay=1e-4)
    losses = []
    for step in range(steps):
        batch = data[rng.permutation(64)[:32]]
        loss = model(augment(rng, batch), augment(rng, batch))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tau = 1 - (1 - base_tau) * (math.cos(math.pi * step / steps) + 1) / 2
        model.update_target(tau)
        losses.append(loss.item())
        if step % 3 == 0:
            print(f"step {step}: byol loss {loss.item():.4f}, tau {tau:.4f}")
    model.eval()
    with torch.no_grad():
        features = model.encoder(torch.from_numpy(data.astype(np.float32)))
    probe = nn.Linear(32, 4)
    with torch.no_grad():
        probe.weight.copy_(torch.from_numpy(rng.standard_normal((4, 32)).astype(np.float32) * 0.1))
        probe.bias.zero_()
    probe_optimizer = torch.optim.Adam(probe.parameters(), lr=0.05)
    targets = torch.from_numpy(labels)
    for _ in range(5):
        probe_loss = F.cross_entropy(probe(features), targets)
        probe_optimizer.zero_grad()
        probe_loss.backward()
        probe_optimizer.step()
        losses.append(probe_loss.item())
    drift = sum(
        (p - q).abs().sum()
        for p, q in zip(model.encoder.parameters(), model.target_encoder.parameters())
    )
    print(f"linear probe loss {losses[-1]:.4f}, online-target distance {drift.item():.4f}")
    return losses + [drift.item()]


if __name__ == "__main__":
    train(build())
