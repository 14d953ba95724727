"""A keyword-spotting CNN on log-mel spectrograms, as torchaudio-free audio tutorials write it:
``torch.stft`` with a ``torch.hann_window`` and ``return_complex=True``, the power spectrum by
``.abs().pow(2)``, a triangular mel filterbank built by hand from ``torch.linspace`` and
``torch.clamp``, ``log10`` of the clamped energies, per-utterance normalization, SpecAugment
time and frequency masks applied with ``masked_fill`` (positions from NumPy), a small
Conv2d/BatchNorm2d/MaxPool2d network, Adam with ``ReduceLROnPlateau`` on the validation loss,
and the confusion counts via ``torch.bincount``."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE, N_FFT, HOP, N_MELS = 4000, 128, 32, 16


def hz_to_mel(f):
    return 2595.0 * math.log10(1.0 + f / 700.0)


def mel_filterbank(n_freqs, n_mels, sample_rate):
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_pts = torch.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2)
    f_pts = 700.0 * (10 ** (m_pts / 2595.0) - 1.0)
    f_diff = f_pts[1:] - f_pts[:-1]  # (n_mels + 1)
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)  # (n_freqs, n_mels + 2)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up_slopes = slopes[:, 2:] / f_diff[1:]
    return torch.clamp(torch.min(down_slopes, up_slopes), min=0.0)  # (n_freqs, n_mels)


class LogMel(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.register_buffer("filterbank", mel_filterbank(N_FFT // 2 + 1, N_MELS, SAMPLE_RATE))

    def forward(self, waveform):  # (batch, samples) -> (batch, 1, mels, frames)
        spec = torch.stft(waveform, N_FFT, HOP, window=self.window, return_complex=True)
        power = spec.abs().pow(2)
        mel = torch.matmul(power.transpose(1, 2), self.filterbank).transpose(1, 2)
        log_mel = torch.log10(torch.clamp(mel, min=1e-10))
        mean = log_mel.mean(dim=(1, 2), keepdim=True)
        std = log_mel.std(dim=(1, 2), keepdim=True)
        return ((log_mel - mean) / (std + 1e-5)).unsqueeze(1)


class KeywordNet(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.features = LogMel()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d((2, 2)),
            nn.Flatten(),
            nn.Linear(64, n_classes),
        )

    def forward(self, waveform, mask=None):
        features = self.features(waveform)
        if mask is not None:
            features = features.masked_fill(mask, 0.0)
        return self.net(features)


def make_waveforms(rng, n, samples=1024):
    labels = rng.integers(0, 3, n)
    t = np.arange(samples) / SAMPLE_RATE
    base = np.array([300.0, 700.0, 1300.0])[labels][:, None]
    chirp = base * (1 + 0.5 * t[None, :] * labels[:, None])
    waves = np.sin(2 * np.pi * chirp * t[None, :]) + 0.3 * rng.standard_normal((n, samples))
    return torch.from_numpy(waves.astype(np.float32)), torch.from_numpy(labels)


def spec_augment(rng, n, frames, max_width=3):
    mask = np.zeros((n, 1, N_MELS, frames), dtype=bool)
    for i in range(n):
        f0, t0 = rng.integers(0, N_MELS - max_width), rng.integers(0, frames - max_width)
        mask[i, :, f0 : f0 + rng.integers(1, max_width + 1), :] = True
        mask[i, :, :, t0 : t0 + rng.integers(1, max_width + 1)] = True
    return torch.from_numpy(mask)


def build():
    return KeywordNet()


def train(model, epochs=3, batches=3):
    rng = np.random.default_rng(0)
    train_data = [make_waveforms(rng, 16) for _ in range(batches)]
    val_x, val_y = make_waveforms(rng, 24)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    frames = 1024 // HOP + 1
    losses = []
    for epoch in range(epochs):
        model.train()
        for x, y in train_data:
            loss = F.cross_entropy(model(x, spec_augment(rng, len(x), frames)), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            logits = model(val_x)
            val_loss = F.cross_entropy(logits, val_y).item()
            confusion = torch.bincount(val_y * 3 + logits.argmax(1), minlength=9).view(3, 3)
        scheduler.step(val_loss)
        losses.append(val_loss)
        print(f"epoch {epoch}: train {losses[-2]:.4f} val {val_loss:.4f}")
        print(f"  confusion {confusion.tolist()}, lr {optimizer.param_groups[0]['lr']:.5f}")
    return losses


if __name__ == "__main__":
    train(build())
