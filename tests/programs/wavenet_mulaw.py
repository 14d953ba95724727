"""A small WaveNet (van den Oord et al., 2016) predicting the next sample of a waveform: the signal
is mu-law companded (``sign``, ``log1p``) and quantized to 32 classes, embedded with a one-hot
causal convolution, then passed through stacks of dilated causal convolutions (left padding with
``F.pad``, dilations 1, 2, 4, 8 twice over) with gated activations ``tanh(f) * sigmoid(g)``,
residual and skip 1 x 1 convolutions under weight normalization, and a softmax head trained with
``F.cross_entropy`` over (batch, classes, time). Afterwards it generates samples greedily one
step at a time and decodes them back with the inverse mu-law. The waveforms are NumPy chirps."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm

CLASSES = 32


def mu_law_encode(x, mu=CLASSES - 1):
    companded = torch.sign(x) * torch.log1p(mu * x.abs()) / np.log1p(mu)
    return ((companded + 1) / 2 * mu + 0.5).long().clamp(0, mu)


def mu_law_decode(q, mu=CLASSES - 1):
    companded = 2 * q.float() / mu - 1
    return torch.sign(companded) * torch.expm1(companded.abs() * np.log1p(mu)) / mu


class CausalConv1d(nn.Conv1d):
    def __init__(self, in_channels, out_channels, kernel_size=2, dilation=1):
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation)
        self.left = (kernel_size - 1) * dilation

    def forward(self, x):
        return super().forward(F.pad(x, (self.left, 0)))


class ResidualBlock(nn.Module):
    def __init__(self, channels, skip_channels, dilation):
        super().__init__()
        self.dilated = CausalConv1d(channels, 2 * channels, dilation=dilation)
        self.residual = weight_norm(nn.Conv1d(channels, channels, 1))
        self.skip = weight_norm(nn.Conv1d(channels, skip_channels, 1))

    def forward(self, x):
        filt, gate = self.dilated(x).chunk(2, dim=1)
        z = torch.tanh(filt) * torch.sigmoid(gate)
        return x + self.residual(z), self.skip(z)


class WaveNet(nn.Module):
    def __init__(self, channels=16, skip_channels=32, dilations=(1, 2, 4, 8) * 2):
        super().__init__()
        self.input = CausalConv1d(CLASSES, channels)
        self.blocks = nn.ModuleList(ResidualBlock(channels, skip_channels, d) for d in dilations)
        self.head = nn.Sequential(
            nn.ReLU(),
            nn.Conv1d(skip_channels, skip_channels, 1),
            nn.ReLU(),
            nn.Conv1d(skip_channels, CLASSES, 1),
        )
        self.receptive_field = 1 + sum(dilations) + 1

    def forward(self, codes):
        x = self.input(F.one_hot(codes, CLASSES).transpose(1, 2).float())
        skips = 0
        for block in self.blocks:
            x, skip = block(x)
            skips = skips + skip
        return self.head(skips)


def chirps(rng, count=8, length=96):
    t = np.linspace(0, 1, length)
    f0, f1 = rng.uniform(2, 4, (count, 1)), rng.uniform(6, 10, (count, 1))
    wave = 0.8 * np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t**2 / 2))
    return torch.tensor((wave + rng.normal(0, 0.02, wave.shape)).astype(np.float32))


def build():
    return WaveNet()


def train(model, steps=6):
    codes = mu_law_encode(chirps(np.random.default_rng(0)))
    inputs, targets = codes[:, :-1], codes[:, 1:]
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        accuracy = (logits.argmax(dim=1) == targets).float().mean()
        losses += [loss.item(), accuracy.item()]
        print(f"step {step}: loss {loss.item():.4f} accuracy {accuracy.item():.3f}")
    model.eval()
    with torch.no_grad():
        generated = codes[:2, : model.receptive_field]
        for _ in range(12):
            window = generated[:, -model.receptive_field :]
            next_code = model(window)[:, :, -1].argmax(dim=1, keepdim=True)
            generated = torch.cat([generated, next_code], dim=1)
        audio = mu_law_decode(generated)
        losses += [audio.abs().mean().item(), generated.sum().item()]
        print(f"generated codes {generated[0, -12:].tolist()}")
    return losses


if __name__ == "__main__":
    train(build())
