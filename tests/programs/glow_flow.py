"""A Glow-style flow (Kingma & Dhariwal, 2018) on small images, as its PyTorch ports write it:
a squeeze by ``view``/``permute``, ActNorm with data-dependent initialization on a first
batch (statistics copied into the parameters under ``torch.no_grad``, an ``initialized`` buffer),
an invertible 1x1 convolution initialized by a QR decomposition whose log-determinant is
``torch.slogdet``'s, affine couplings with a ``sigmoid`` scale and a zero-initialized last
convolution, a standard normal prior, the loss in bits per dimension with uniform dequantization
noise (NumPy), and an inverse pass through ``torch.inverse`` checked against the input."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def squeeze2d(x):
    b, c, h, w = x.shape
    x = x.view(b, c, h // 2, 2, w // 2, 2)
    x = x.permute(0, 1, 3, 5, 2, 4).contiguous()
    return x.view(b, c * 4, h // 2, w // 2)


class ActNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.log_scale = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))

    def initialize(self, x):
        with torch.no_grad():
            mean = x.mean(dim=(0, 2, 3), keepdim=True)
            std = x.std(dim=(0, 2, 3), keepdim=True)
            self.loc.data.copy_(-mean)
            self.log_scale.data.copy_(torch.log(1 / (std + 1e-6)))
            self.initialized.fill_(1)

    def forward(self, x):
        if self.initialized.item() == 0:
            self.initialize(x)
        h, w = x.shape[2:]
        logdet = h * w * torch.sum(self.log_scale)
        return (x + self.loc) * torch.exp(self.log_scale), logdet

    def reverse(self, y):
        return y * torch.exp(-self.log_scale) - self.loc


class InvConv2d(nn.Module):
    def __init__(self, channels):
        super().__init__()
        weight = torch.linalg.qr(torch.randn(channels, channels))[0]
        self.weight = nn.Parameter(weight)

    def forward(self, x):
        h, w = x.shape[2:]
        out = F.conv2d(x, self.weight.unsqueeze(2).unsqueeze(3))
        logdet = h * w * torch.slogdet(self.weight.double())[1].float()
        return out, logdet

    def reverse(self, y):
        return F.conv2d(y, self.weight.inverse().unsqueeze(2).unsqueeze(3))


class AffineCoupling(nn.Module):
    def __init__(self, channels, hidden=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(channels // 2, hidden, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(hidden, hidden, 1),
            nn.ReLU(inplace=True),
        )
        self.zero_conv = nn.Conv2d(hidden, channels, 3, padding=1)
        self.zero_conv.weight.data.zero_()
        self.zero_conv.bias.data.zero_()

    def scale_shift(self, x_a):
        log_s, t = self.zero_conv(self.net(x_a)).chunk(2, 1)
        return torch.sigmoid(log_s + 2), t

    def forward(self, x):
        x_a, x_b = x.chunk(2, 1)
        s, t = self.scale_shift(x_a)
        y_b = (x_b + t) * s
        logdet = torch.sum(torch.log(s).view(x.shape[0], -1), 1)
        return torch.cat([x_a, y_b], 1), logdet

    def reverse(self, y):
        y_a, y_b = y.chunk(2, 1)
        s, t = self.scale_shift(y_a)
        return torch.cat([y_a, y_b / s - t], 1)


class FlowStep(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.actnorm = ActNorm(channels)
        self.invconv = InvConv2d(channels)
        self.coupling = AffineCoupling(channels)

    def forward(self, x):
        x, logdet0 = self.actnorm(x)
        x, logdet1 = self.invconv(x)
        x, logdet2 = self.coupling(x)
        return x, logdet0 + logdet1 + logdet2

    def reverse(self, z):
        return self.actnorm.reverse(self.invconv.reverse(self.coupling.reverse(z)))


class Glow(nn.Module):
    def __init__(self, in_channels=1, n_flow=3):
        super().__init__()
        self.flows = nn.ModuleList([FlowStep(in_channels * 4) for _ in range(n_flow)])

    def forward(self, x):
        z = squeeze2d(x)
        logdet = 0
        for flow in self.flows:
            z, ld = flow(z)
            logdet = logdet + ld
        log_p = (-0.5 * (z**2 + math.log(2 * math.pi))).view(x.shape[0], -1).sum(1)
        return z, log_p, logdet

    def reverse_flows(self, z):
        for flow in reversed(self.flows):
            z = flow.reverse(z)
        return z


def build():
    return Glow()


def bits_per_dim(log_p, logdet, n_pixel, n_bins=16):
    loss = -math.log(n_bins) * n_pixel + logdet + log_p
    return (-loss / (math.log(2) * n_pixel)).mean()


def train(model, steps=10, n_bins=16):
    rng = np.random.default_rng(0)
    base = rng.integers(0, n_bins, size=(1, 1, 8, 8))

    def batch(n):
        levels = np.clip(base + rng.integers(-1, 2, size=(n, 1, 8, 8)), 0, n_bins - 1)
        image = torch.from_numpy((levels / n_bins - 0.5).astype(np.float32))
        noise = torch.from_numpy(rng.uniform(0, 1 / n_bins, image.shape).astype(np.float32))
        return image, image + noise

    with torch.no_grad():  # ActNorm's data-dependent init on a batch of its own
        model(batch(64)[1])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        image, dequantized = batch(16)
        z, log_p, logdet = model(dequantized)
        loss = bits_per_dim(log_p, logdet, 64, n_bins)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: {loss.item():.4f} bits/dim")
    with torch.no_grad():
        z, _, _ = model(image)
        reconstructed = model.reverse_flows(z)
        losses.append(float(torch.allclose(reconstructed, squeeze2d(image), atol=1e-5)))
        z_sample = torch.from_numpy(rng.standard_normal(z.shape).astype(np.float32))
        samples = model.reverse_flows(0.7 * z_sample)  # sampled at temperature 0.7
        losses.append(samples.std().item())
        print(f"reconstructed: {bool(losses[-2])}, sample std {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
