"""A VQ-VAE (van den Oord et al., 2017) on 12 x 12 images: a conv encoder maps each image to a
3 x 3 grid of latent vectors, each snapped to its nearest codebook entry (``torch.cdist`` and
``argmin``, looked up with ``F.embedding``), and the decoder (transposed convolutions) sees the
quantized vectors through the straight-through estimator ``z + (q - z).detach()``. The loss is
reconstruction plus the commitment term; the codebook itself is not trained by gradient but by
exponential moving averages of the assigned encoder outputs (``one_hot``, ``bincount``,
``index_add_``, ``lerp_``, with Laplace smoothing of the counts), as in the paper's appendix and
most VQ-VAE code. Codebook usage is reported as perplexity. The images are blurred NumPy blobs."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_codes=16, dim=8, decay=0.9, eps=1e-5):
        super().__init__()
        self.decay, self.eps = decay, eps
        self.register_buffer("codebook", torch.randn(num_codes, dim) * 0.1)
        self.register_buffer("cluster_size", torch.zeros(num_codes))
        self.register_buffer("embed_sum", self.codebook.clone())

    def forward(self, z):
        n, c, h, w = z.shape
        flat = z.permute(0, 2, 3, 1).reshape(-1, c)
        codes = torch.cdist(flat, self.codebook).argmin(dim=1)
        quantized = F.embedding(codes, self.codebook).view(n, h, w, c).permute(0, 3, 1, 2)
        if self.training:
            self.update_codebook(flat.detach(), codes)
        commitment = F.mse_loss(z, quantized.detach())
        quantized = z + (quantized - z).detach()  # straight-through
        probs = F.one_hot(codes, len(self.codebook)).float().mean(dim=0)
        perplexity = torch.exp(-torch.sum(probs * torch.log(probs + 1e-10)))
        return quantized, commitment, perplexity, codes.view(n, h, w)

    @torch.no_grad()
    def update_codebook(self, flat, codes):
        counts = torch.bincount(codes, minlength=len(self.codebook)).float()
        sums = torch.zeros_like(self.embed_sum).index_add_(0, codes, flat)
        self.cluster_size.lerp_(counts, 1 - self.decay)
        self.embed_sum.mul_(self.decay).add_(sums, alpha=1 - self.decay)
        total = self.cluster_size.sum()
        smoothed = (self.cluster_size + self.eps) / (total + len(self.codebook) * self.eps) * total
        self.codebook.copy_(self.embed_sum / smoothed.unsqueeze(1))


class VQVAE(nn.Module):
    def __init__(self, hidden=16, dim=8):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, hidden, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(hidden, dim, 4, stride=2, padding=0),
        )
        self.quantizer = VectorQuantizerEMA(dim=dim)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(dim, hidden, 4, stride=2, padding=0),
            nn.ReLU(),
            nn.ConvTranspose2d(hidden, 1, 4, stride=2, padding=1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        quantized, commitment, perplexity, codes = self.quantizer(self.encoder(x))
        return self.decoder(quantized), commitment, perplexity, codes


def blob_images(rng, count=16, size=12):
    ys, xs = np.mgrid[:size, :size]
    images = np.zeros((count, 1, size, size), np.float32)
    for image in images:
        for _ in range(2):
            cy, cx, s = rng.uniform(2, size - 2), rng.uniform(2, size - 2), rng.uniform(1, 3)
            image[0] += np.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2 * s**2))
    return torch.tensor(np.clip(images, 0, 1))


def build():
    return VQVAE()


def train(model, epochs=3, batch_size=8, beta=0.25):
    images = blob_images(np.random.default_rng(0))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for epoch in range(epochs):
        model.train()
        for batch in images.split(batch_size):
            recon, commitment, perplexity, _ = model(batch)
            recon_loss = F.binary_cross_entropy(recon, batch)
            loss = recon_loss + beta * commitment
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses += [recon_loss.item(), commitment.item(), perplexity.item()]
        print(
            f"epoch {epoch}: recon {recon_loss.item():.4f} commit {commitment.item():.4f} "
            f"perplexity {perplexity.item():.2f}"
        )
    model.eval()
    with torch.no_grad():
        _, _, _, codes = model(images)
        used = torch.unique(codes)
        losses += [len(used), model.quantizer.codebook.norm().item()]
        print(f"codes used: {used.tolist()}")
    return losses


if __name__ == "__main__":
    train(build())
