"""A Wave-U-Net-style speech denoiser on raw 1-D signals, written as the audio repositories
write it: a down path of ``nn.Conv1d(padding="same")`` with ``BatchNorm1d`` and ``PReLU``
decimated by ``MaxPool1d``, an up path of ``nn.ConvTranspose1d`` whose output is cropped or
resized with ``F.interpolate(mode="linear")`` to the skip's length before ``torch.cat``, a
``reflect``-padded output convolution and ``Tanh``, an L1 loss plus a multi-resolution STFT
magnitude loss (``torch.stft`` with a ``hann_window``, ``return_complex=True``, log1p
magnitudes), AdamW with
``CosineAnnealingLR``, and the SNR improvement measured in eval mode (noisy chirps)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LENGTH = 250  # not a power of two: the up path must fix the lengths


class DownBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(c_in, c_out, 7, padding="same", bias=False),
            nn.BatchNorm1d(c_out),
            nn.PReLU(c_out),
        )
        self.pool = nn.MaxPool1d(2)

    def forward(self, x):
        skip = self.conv(x)
        return self.pool(skip), skip


class UpBlock(nn.Module):
    def __init__(self, c_in, c_skip, c_out):
        super().__init__()
        self.up = nn.ConvTranspose1d(c_in, c_in, kernel_size=4, stride=2, padding=1)
        self.conv = nn.Sequential(
            nn.Conv1d(c_in + c_skip, c_out, 5, padding=2, bias=False),
            nn.BatchNorm1d(c_out),
            nn.PReLU(c_out),
        )

    def forward(self, x, skip):
        x = self.up(x)
        if x.shape[-1] != skip.shape[-1]:
            x = F.interpolate(x, size=skip.shape[-1], mode="linear", align_corners=False)
        return self.conv(torch.cat([x, skip], dim=1))


class WaveUNet(nn.Module):
    def __init__(self, channels=(1, 8, 12, 16)):
        super().__init__()
        self.downs = nn.ModuleList(DownBlock(a, b) for a, b in zip(channels, channels[1:]))
        self.bottleneck = nn.Conv1d(channels[-1], channels[-1], 3, padding=1)
        self.ups = nn.ModuleList(
            UpBlock(c, c, c_out) for c, c_out in zip(channels[:0:-1], channels[-2:0:-1] + (8,))
        )
        self.out = nn.Sequential(nn.ReflectionPad1d(2), nn.Conv1d(8 + 1, 1, 5), nn.Tanh())

    def forward(self, x):
        skips, h = [], x
        for down in self.downs:
            h, skip = down(h)
            skips.append(skip)
        h = F.leaky_relu(self.bottleneck(h), 0.1)
        for up, skip in zip(self.ups, reversed(skips)):
            h = up(h, skip)
        return self.out(torch.cat([h, x], dim=1))


def build():
    return WaveUNet()


def stft_magnitude(x, n_fft, hop):
    spec = torch.stft(
        x.squeeze(1), n_fft, hop_length=hop, window=torch.hann_window(n_fft), return_complex=True
    )
    # as ParallelWaveGAN's stft(): the floor keeps the log of silent frames finite
    return torch.sqrt(torch.clamp(spec.real**2 + spec.imag**2, min=1e-7))


def multi_resolution_stft_loss(pred, target, resolutions=((32, 8), (64, 16))):
    loss = 0.0
    for n_fft, hop in resolutions:
        p, t = stft_magnitude(pred, n_fft, hop), stft_magnitude(target, n_fft, hop)
        spectral_convergence = torch.norm(t - p, p="fro") / torch.norm(t, p="fro")
        # log1p, not log: the log of near-silent bins makes training chaotic (a 1e-14 change
        # of the weights grows to 1e-6 in four steps, in PyTorch alone)
        log_magnitude = F.l1_loss(torch.log1p(p), torch.log1p(t))
        loss = loss + spectral_convergence + log_magnitude
    return loss / len(resolutions)


def make_batch(rng, n):
    t = np.linspace(0, 1, LENGTH)
    f0 = rng.uniform(3, 8, (n, 1))
    clean = 0.6 * np.sin(2 * np.pi * (f0 * t + 6 * t**2)) * np.hanning(LENGTH)
    noisy = clean + 0.2 * rng.standard_normal((n, LENGTH))
    return (
        torch.tensor(noisy[:, None, :], dtype=torch.float32),
        torch.tensor(clean[:, None, :], dtype=torch.float32),
    )


def snr_db(estimate, clean):
    noise = estimate - clean
    return (10 * torch.log10(clean.pow(2).sum(-1) / noise.pow(2).sum(-1))).mean()


def train(model, steps=8):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    test_noisy, test_clean = make_batch(rng, 4)
    losses = []
    for step in range(steps):
        model.train()
        noisy, clean = make_batch(rng, 6)
        optimizer.zero_grad()
        denoised = model(noisy)
        loss = F.l1_loss(denoised, clean) + 0.5 * multi_resolution_stft_loss(denoised, clean)
        loss.backward()
        optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            improvement = snr_db(model(test_noisy), test_clean) - snr_db(test_noisy, test_clean)
        if step % 2 == 0:
            print(
                f"step {step}: loss {loss.item():.4f} SNR improvement {improvement.item():.2f} dB"
            )
        losses += [loss.item(), improvement.item()]
    return losses


if __name__ == "__main__":
    train(build())
