"""A 1-D Fourier neural operator (Li et al., 2021) learning the solution operator of the heat
equation u_t = nu u_xx on a periodic domain: each Fourier layer takes ``torch.fft.rfft`` of its
input, multiplies the lowest modes by learned complex weights (``torch.cfloat`` parameters,
``torch.einsum`` on complex tensors), returns with ``torch.fft.irfft`` and adds a pointwise
1 x 1 convolution. The training pairs (initial condition, solution at t = 0.1) are solved exactly
in Fourier space with NumPy; the relative L2 error is printed."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

POINTS, MODES = 64, 8


class SpectralConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, modes):
        super().__init__()
        self.modes = modes
        scale = 1 / (in_channels * out_channels)
        self.weights = nn.Parameter(
            scale * torch.rand(in_channels, out_channels, modes, dtype=torch.cfloat)
        )

    def forward(self, x):
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros(
            x.shape[0], self.weights.shape[1], x.shape[-1] // 2 + 1, dtype=torch.cfloat
        )
        out_ft[:, :, : self.modes] = torch.einsum(
            "bix,iox->box", x_ft[:, :, : self.modes], self.weights
        )
        return torch.fft.irfft(out_ft, n=x.shape[-1])


class FNO1d(nn.Module):
    def __init__(self, width=16, layers=3):
        super().__init__()
        self.lift = nn.Linear(2, width)
        self.spectral = nn.ModuleList(SpectralConv1d(width, width, MODES) for _ in range(layers))
        self.pointwise = nn.ModuleList(nn.Conv1d(width, width, 1) for _ in range(layers))
        self.project = nn.Sequential(nn.Linear(width, 32), nn.GELU(), nn.Linear(32, 1))

    def forward(self, u0):
        grid = torch.linspace(0, 1, u0.shape[-1]).expand_as(u0)
        x = self.lift(torch.stack([u0, grid], dim=-1)).permute(0, 2, 1)
        for i, (spectral, pointwise) in enumerate(zip(self.spectral, self.pointwise)):
            x = spectral(x) + pointwise(x)
            x = F.gelu(x) if i < len(self.spectral) - 1 else x
        return self.project(x.permute(0, 2, 1)).squeeze(-1)


def heat_pairs(rng, count=16, nu=0.05, t=0.1):
    k = np.fft.rfftfreq(POINTS, d=1 / POINTS)
    spectrum = rng.normal(size=(count, len(k))) + 1j * rng.normal(size=(count, len(k)))
    spectrum *= np.exp(-0.3 * k) * (k < 12)
    u0 = np.fft.irfft(spectrum, n=POINTS)
    ut = np.fft.irfft(spectrum * np.exp(-nu * (2 * np.pi * k) ** 2 * t), n=POINTS)
    return torch.tensor(u0.astype(np.float32)), torch.tensor(ut.astype(np.float32))


def build():
    return FNO1d()


def train(model, epochs=4, batch_size=8):
    u0, ut = heat_pairs(np.random.default_rng(0))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for epoch in range(epochs):
        for a, b in zip(u0.split(batch_size), ut.split(batch_size)):
            pred = model(a)
            loss = (
                torch.linalg.vector_norm(pred - b, dim=1) / torch.linalg.vector_norm(b, dim=1)
            ).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: relative L2 {loss.item():.4f}")
    return losses


if __name__ == "__main__":
    train(build())
