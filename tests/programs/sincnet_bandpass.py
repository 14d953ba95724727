"""A SincNet-style front end (Ravanelli & Bengio, 2018) classifying noisy tones by frequency band:
the first layer is a bank of band-pass FIR filters whose only parameters are each filter's low
cut-off and bandwidth (kept positive with ``abs``), built as the difference of two windowed
low-pass sincs (``torch.sinc``, ``torch.kaiser_window``) and applied with ``F.conv1d``; on top
are ``LayerNorm`` over time, ``LeakyReLU``, ``max_pool1d``, a second ordinary convolution and a
linear classifier. Cut-offs start on the mel scale, as in the paper. The signals are NumPy sums
of sinusoids in one of four bands, plus noise, sampled at 1 kHz."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

RATE, LENGTH = 1000.0, 256
BANDS = [(20, 60), (80, 140), (170, 260), (300, 450)]


def to_mel(hz):
    return 2595 * np.log10(1 + hz / 700)


def to_hz(mel):
    return 700 * (10 ** (mel / 2595) - 1)


class SincConv(nn.Module):
    def __init__(self, filters=8, kernel_size=31, min_low=10.0, min_band=20.0):
        super().__init__()
        self.min_low, self.min_band = min_low, min_band
        edges = to_hz(np.linspace(to_mel(min_low), to_mel(RATE / 2 - 50), filters + 1))
        self.low = nn.Parameter(torch.tensor(edges[:-1, None].astype(np.float32)))
        self.band = nn.Parameter(torch.tensor(np.diff(edges)[:, None].astype(np.float32)))
        half = (kernel_size - 1) // 2
        self.register_buffer("t", torch.arange(-half, half + 1, dtype=torch.float32) / RATE)
        self.register_buffer("window", torch.kaiser_window(kernel_size, False, beta=6.0))

    def filters(self):
        low = self.min_low + self.low.abs()
        high = torch.clamp(low + self.min_band + self.band.abs(), max=RATE / 2)

        def lowpass(cutoff):  # the ideal low-pass filter's impulse response, sampled
            return 2 * cutoff / RATE * torch.sinc(2 * cutoff * self.t)

        bandpass = (lowpass(high) - lowpass(low)) * self.window
        return bandpass / bandpass.abs().amax(dim=1, keepdim=True)

    def forward(self, x):
        return F.conv1d(x, self.filters().unsqueeze(1), padding="same")


class SincNet(nn.Module):
    def __init__(self, filters=8, classes=4):
        super().__init__()
        self.sinc = SincConv(filters)
        self.norm1 = nn.LayerNorm(LENGTH)
        self.conv = nn.Conv1d(filters, 16, 5)
        self.norm2 = nn.LayerNorm(LENGTH // 4 - 4)
        self.out = nn.Linear(16, classes)

    def forward(self, x):
        x = F.max_pool1d(F.leaky_relu(self.norm1(self.sinc(x).abs()), 0.2), 4)
        x = F.leaky_relu(self.norm2(self.conv(x)), 0.2)
        return self.out(x.mean(dim=-1))


def make_signals(rng, count=32):
    t = np.arange(LENGTH) / RATE
    labels = rng.integers(0, len(BANDS), count)
    signals = rng.normal(0, 0.3, (count, LENGTH))
    for signal, label in zip(signals, labels):
        for freq in rng.uniform(*BANDS[label], size=2):
            signal += np.sin(2 * math.pi * freq * t + rng.uniform(0, 2 * math.pi))
    return torch.tensor(signals[:, None].astype(np.float32)), torch.tensor(labels)


def build():
    return SincNet()


def train(model, epochs=3, batch_size=8):
    signals, labels = make_signals(np.random.default_rng(0))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=5e-3, alpha=0.95, eps=1e-7)
    losses = []
    for epoch in range(epochs):
        correct = 0
        for x, y in zip(signals.split(batch_size), labels.split(batch_size)):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += (logits.argmax(1) == y).sum().item()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {loss.item():.4f} accuracy {correct / len(labels):.3f}")
    low = model.sinc.min_low + model.sinc.low.abs()
    losses += [low.sum().item(), model.sinc.filters().square().sum().item()]
    print("low cut-offs (Hz):", [round(v, 1) for v in low.squeeze(1).tolist()])
    return losses


if __name__ == "__main__":
    train(build())
