"""A denoising convolutional autoencoder in the style of the "autoencoders in PyTorch" blog
posts: strided convolutions down, Upsample (bilinear, then nearest) and convolutions back up, a
Sigmoid output; inputs corrupted with Gaussian noise (drawn with NumPy) and clamped to [0, 1];
an MSE + L1 reconstruction loss, AdamW, and CosineAnnealingWarmRestarts stepped with the
fractional epoch as its documentation shows."""

import numpy as np
import torch
import torch.nn as nn


class DenoisingAutoencoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1),
            nn.LeakyReLU(0.1),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),
            nn.LeakyReLU(0.1),
        )
        self.decoder = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
            nn.Conv2d(16, 8, 3, padding=1),
            nn.LeakyReLU(0.1),
            nn.Upsample(scale_factor=2, mode="nearest"),
            nn.Conv2d(8, 1, 3, padding=1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.decoder(self.encoder(x))


def make_digits(rng, n):
    """Bright bars and squares on a dark 16x16 canvas, a stand-in for MNIST."""
    images = np.zeros((n, 1, 16, 16), dtype=np.float32)
    for i, (r, c, h, w) in enumerate(rng.integers(1, 8, (n, 4))):
        images[i, 0, r : r + h + 2, c : c + w] = rng.uniform(0.6, 1.0)
    return torch.from_numpy(images)


def build():
    return DenoisingAutoencoder()


def train(model, epochs=3, batch_size=8, noise_factor=0.3):
    rng = np.random.default_rng(2)
    clean = make_digits(rng, 24)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=1, T_mult=2)
    mse, l1 = nn.MSELoss(), nn.L1Loss()
    iters = len(clean) // batch_size
    losses = []
    for epoch in range(epochs):
        for i in range(iters):
            target = clean[i * batch_size : (i + 1) * batch_size]
            noise = torch.from_numpy(rng.standard_normal(target.shape).astype(np.float32))
            noisy = torch.clamp(target + noise_factor * noise, 0.0, 1.0)
            output = model(noisy)
            loss = mse(output, target) + 0.1 * l1(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step(epoch + i / iters)
            losses.append(loss.item())
        psnr = -10 * torch.log10(mse(output.detach(), target))
        print(f"epoch {epoch}: loss {loss.item():.5f}, psnr {psnr.item():.2f} dB")
    return losses


if __name__ == "__main__":
    train(build())
