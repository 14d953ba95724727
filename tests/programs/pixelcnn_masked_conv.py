"""A PixelCNN (van den Oord et al., 2016) on binary images, as the tutorials write it: a
``MaskedConv2d`` subclass of ``nn.Conv2d`` that registers its causal mask as a buffer (type A for
the first layer, B after) and multiplies it into ``self.weight.data`` before each call, residual
1x1 blocks, per-pixel logits trained with ``binary_cross_entropy_with_logits``, Adam, and
sampling pixel by pixel under ``torch.no_grad`` with Bernoulli draws made from NumPy uniforms
compared against ``torch.sigmoid`` (``torch.bernoulli`` streams differ)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == "B") :] = 0
        self.mask[:, :, kH // 2 + 1 :] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


class PixelCNN(nn.Module):
    def __init__(self, channels=16, layers=3):
        super().__init__()
        self.input = MaskedConv2d("A", 1, channels, 5, padding=2, bias=False)
        self.hidden = nn.ModuleList(
            [MaskedConv2d("B", channels, channels, 3, padding=1, bias=False) for _ in range(layers)]
        )
        self.norms = nn.ModuleList([nn.BatchNorm2d(channels) for _ in range(layers)])
        self.output = nn.Conv2d(channels, 1, 1)

    def forward(self, x):
        h = F.relu(self.input(x))
        for conv, norm in zip(self.hidden, self.norms):
            h = h + F.relu(norm(conv(h)))
        return self.output(h)


def build():
    return PixelCNN()


def binary_images(rng, n, size=8):
    # vertical bars of random widths: a structure a causal model can learn
    widths = rng.integers(1, size // 2, size=n)
    columns = np.arange(size)[None, :] < widths[:, None]
    images = np.repeat(columns[:, None, None, :], size, axis=2).astype(np.float32)
    flips = rng.random(images.shape) < 0.05
    return np.where(flips, 1 - images, images)


def train(model, steps=12):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        x = torch.from_numpy(binary_images(rng, 16))
        logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits, x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 4 == 0:
            print(f"step {step}: nll {loss.item():.4f} nats/pixel")
    model.eval()
    sample = torch.zeros(2, 1, 8, 8)
    with torch.no_grad():
        for i in range(8):
            for j in range(8):
                probs = torch.sigmoid(model(sample)[:, :, i, j])
                draws = torch.from_numpy(rng.random(probs.shape).astype(np.float32))
                sample[:, :, i, j] = (draws < probs).float()
    losses.append(sample.mean().item())
    losses.append(F.binary_cross_entropy_with_logits(model(sample), sample).item())
    print(f"sampled {sample.sum().item():.0f} lit pixels")
    return losses


if __name__ == "__main__":
    train(build())
