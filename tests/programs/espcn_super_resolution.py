"""Super-resolution as the ESPCN example (Shi et al., 2016) in PyTorch's examples does it: low-res
images are made by a Gaussian blur (``torch.signal.windows.gaussian``) and downsampling with
``F.interpolate`` (``area``), the network works in low-res space with reflect-padded
convolutions and ends in ``nn.PixelShuffle``, and it learns the residual over a bicubic
upsample. Around it, the image operations such code uses: ``F.pad`` in its replicate and
circular modes, bilinear and nearest resizes by ``scale_factor`` and by ``size`` (with
``align_corners`` both ways), ``pixel_unshuffle``, and overlapping patches cut with
``F.unfold`` and put back with ``F.fold`` (divided by the fold of ones, to average overlaps).
Images are smooth random fields made with NumPy; PSNR is printed."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SCALE = 2


class ESPCN(nn.Module):
    def __init__(self, channels=1, width=16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 5, padding=2, padding_mode="reflect"),
            nn.Tanh(),
            nn.Conv2d(width, width // 2, 3, padding=1, padding_mode="replicate"),
            nn.Tanh(),
            nn.Conv2d(width // 2, channels * SCALE**2, 3, padding=1),
        )
        self.shuffle = nn.PixelShuffle(SCALE)

    def forward(self, low):
        base = F.interpolate(low, scale_factor=SCALE, mode="bicubic", align_corners=False)
        return base + self.shuffle(self.body(low))


def smooth_images(rng, count=6, size=24):
    """Sums of a few random low-frequency sinusoids, in [0, 1]."""
    ys, xs = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    images = np.zeros((count, 1, size, size))
    for image in images:
        for _ in range(4):
            fy, fx, phase = rng.uniform(0.03, 0.15), rng.uniform(0.03, 0.15), rng.uniform(0, 6)
            image[0] += np.sin(2 * np.pi * (fy * ys + fx * xs) + phase)
    return torch.tensor(((images - images.min()) / np.ptp(images)).astype(np.float32))


def gaussian_blur(images, size=5, std=0.8):
    """Anti-aliasing before downsampling: a separable Gaussian from ``torch.signal.windows``."""
    g = torch.signal.windows.gaussian(size, std=std)
    kernel = (g[:, None] * g[None, :]) / g.sum() ** 2
    padded = F.pad(images, (size // 2,) * 4, mode="reflect")
    return F.conv2d(padded, kernel.expand(images.shape[1], 1, size, size), groups=images.shape[1])


def psnr(mse):
    return 10 * math.log10(1.0 / mse)


def patch_average(images, size=6, stride=3):
    """Cut overlapping patches, scale each by its mean, and put the image back together."""
    n, c, h, w = images.shape
    patches = F.unfold(images, kernel_size=size, stride=stride)
    patches = patches * patches.mean(dim=1, keepdim=True)
    summed = F.fold(patches, output_size=(h, w), kernel_size=size, stride=stride)
    counts = F.fold(torch.ones_like(patches), output_size=(h, w), kernel_size=size, stride=stride)
    return summed / counts


def image_ops(images):
    """One number per operation, so each is compared with PyTorch's."""
    results = []
    for mode in ["reflect", "replicate", "circular"]:
        results.append(F.pad(images, (2, 3, 1, 2), mode=mode).square().mean())
    results.append(F.pad(images, (1, 1, 1, 1), value=0.5).mean())
    for align in [True, False]:
        up = F.interpolate(images, size=(31, 17), mode="bilinear", align_corners=align)
        results.append((up * torch.linspace(0, 1, 17)).sum())
    results.append(F.interpolate(images, scale_factor=1.5, mode="nearest").std())
    results.append(F.interpolate(images, scale_factor=0.5, mode="bilinear").std())
    results.append(F.pixel_unshuffle(images, 2)[:, 1:3].mean())
    results.append(patch_average(images).sum())
    return [r.item() for r in results]


def build():
    return ESPCN()


def train(model, steps=8):
    rng = np.random.default_rng(0)
    high = smooth_images(rng)
    low = F.interpolate(gaussian_blur(high), scale_factor=1 / SCALE, mode="area")
    losses = image_ops(high)
    bicubic = F.interpolate(low, scale_factor=SCALE, mode="bicubic", align_corners=False)
    baseline = F.mse_loss(bicubic, high).item()
    print(f"bicubic PSNR {psnr(baseline):.2f} dB")
    losses.append(baseline)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(steps):
        loss = F.mse_loss(model(low), high)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.6f} PSNR {psnr(loss.item()):.2f} dB")
    return losses


if __name__ == "__main__":
    train(build())
