"""Implicit neural representations of a 2-D signal: a SIREN (Sitzmann et al., 2020), with sine
activations ``sin(w0 * (W x + b))`` and the paper's initialization (``uniform_`` under
``torch.no_grad()``), and a ReLU MLP on random Fourier features (Tancik et al., 2020), both fit to
a 24 x 24 image on a ``torch.meshgrid(indexing="ij")`` grid of coordinates. The SIREN is also
supervised on the image's gradient, as in the paper's Poisson experiment: the network's spatial
gradient comes from ``torch.autograd.grad(create_graph=True)``, and its Laplacian (the second
derivatives) is reported. The image is a smooth NumPy function, so its gradient is known."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SIZE = 24


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, w0=30.0, first=False):
        super().__init__()
        self.w0 = w0
        self.linear = nn.Linear(in_features, out_features)
        bound = 1 / in_features if first else math.sqrt(6 / in_features) / w0
        with torch.no_grad():
            self.linear.weight.uniform_(-bound, bound)

    def forward(self, x):
        return torch.sin(self.w0 * self.linear(x))


class Siren(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(
            SineLayer(2, hidden, first=True), SineLayer(hidden, hidden), nn.Linear(hidden, 1)
        )

    def forward(self, coords):
        return self.net(coords)


class FourierFeatureMLP(nn.Module):
    def __init__(self, features=16, scale=3.0, hidden=32):
        super().__init__()
        rng = np.random.default_rng(1)
        basis = torch.tensor(rng.normal(0, scale, (2, features)).astype(np.float32))
        self.register_buffer("basis", basis)
        self.mlp = nn.Sequential(nn.Linear(2 * features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, coords):
        projected = 2 * math.pi * coords @ self.basis
        return self.mlp(torch.cat([torch.sin(projected), torch.cos(projected)], dim=-1))


class Both(nn.Module):
    def __init__(self):
        super().__init__()
        self.siren = Siren()
        self.fourier = FourierFeatureMLP()


def signal(coords):
    """f(x, y) = sin(3x) cos(2y) + 0.5 x y, and its gradient."""
    x, y = coords[:, 0], coords[:, 1]
    value = np.sin(3 * x) * np.cos(2 * y) + 0.5 * x * y
    grad = np.stack(
        [3 * np.cos(3 * x) * np.cos(2 * y) + 0.5 * y, -2 * np.sin(3 * x) * np.sin(2 * y) + 0.5 * x],
        axis=-1,
    )
    return value[:, None].astype(np.float32), grad.astype(np.float32)


def spatial_gradient(output, coords, create_graph=True):
    return torch.autograd.grad(output.sum(), coords, create_graph=create_graph)[0]


def laplacian(output, coords):
    grad = spatial_gradient(output, coords)
    return sum(spatial_gradient(grad[:, i], coords)[:, i] for i in range(coords.shape[1]))


def build():
    return Both()


def train(model, steps=6):
    axis = torch.linspace(-1, 1, SIZE)
    coords = torch.stack(torch.meshgrid(axis, axis, indexing="ij"), dim=-1).reshape(-1, 2)
    value, grad = (torch.tensor(a) for a in signal(coords.numpy()))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        coords.requires_grad_(True)
        out = model.siren(coords)
        siren_loss = F.mse_loss(out, value)
        grad_loss = F.mse_loss(spatial_gradient(out, coords), grad)
        fourier_loss = F.mse_loss(model.fourier(coords.detach()), value)
        loss = siren_loss + 0.1 * grad_loss + fourier_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [siren_loss.item(), grad_loss.item(), fourier_loss.item()]
        psnr = 10 * math.log10(4 / siren_loss.item())
        print(
            f"step {step}: siren {siren_loss.item():.5f} ({psnr:.1f} dB) "
            f"grad {grad_loss.item():.4f} fourier {fourier_loss.item():.5f}"
        )
    lap = laplacian(model.siren(coords), coords)
    losses.append(lap.abs().mean().item())
    print(f"mean |laplacian| {losses[-1]:.3f}")
    return losses


if __name__ == "__main__":
    train(build())
