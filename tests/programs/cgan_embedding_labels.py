"""A conditional GAN on 2-D mixtures, as the cGAN tutorials write it: the class label goes
through an ``nn.Embedding`` and is concatenated (generator) or multiplied in (discriminator,
a projection discriminator's inner product), ``BCEWithLogitsLoss`` with one-sided label
smoothing, two Adam optimizers with ``betas=(0.5, 0.999)``, ``torch.randint``-free batches
(labels and noise drawn with NumPy so both libraries see the same), and per-class samples in
eval mode under ``torch.no_grad()`` made with ``repeat_interleave``."""

import numpy as np
import torch
import torch.nn as nn

N_CLASSES, LATENT, HIDDEN = 4, 6, 32


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.label_emb = nn.Embedding(N_CLASSES, N_CLASSES)
        self.model = nn.Sequential(
            # no bias before batch norm: its gradient is zero but for rounding, which Adam
            # would blow up to full steps
            nn.Linear(LATENT + N_CLASSES, HIDDEN, bias=False),
            nn.BatchNorm1d(HIDDEN, 0.8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(HIDDEN, HIDDEN),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(HIDDEN, 2),
        )

    def forward(self, noise, labels):
        # Concatenate label embedding and noise to produce input
        gen_input = torch.cat((self.label_emb(labels), noise), -1)
        return self.model(gen_input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Linear(2, HIDDEN), nn.LeakyReLU(0.2), nn.Linear(HIDDEN, HIDDEN), nn.LeakyReLU(0.2)
        )
        self.out = nn.Linear(HIDDEN, 1)
        self.embed = nn.Embedding(N_CLASSES, HIDDEN)
        nn.init.xavier_uniform_(self.embed.weight)

    def forward(self, x, labels):
        h = self.features(x)
        # projection discriminator: psi(h) + <embed(y), h>
        return self.out(h).squeeze(1) + (self.embed(labels) * h).sum(dim=1)


class CGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = Generator()
        self.discriminator = Discriminator()


def build():
    return CGAN()


def real_batch(rng, n):
    labels = rng.integers(0, N_CLASSES, n)
    angles = labels * (np.pi / 2)
    centers = np.stack([np.cos(angles), np.sin(angles)], 1) * 2
    points = centers + 0.1 * rng.standard_normal((n, 2))
    return torch.from_numpy(points.astype(np.float32)), torch.from_numpy(labels)


def train(model, n_steps=12, batch_size=32):
    rng = np.random.default_rng(0)
    generator, discriminator = model.generator, model.discriminator
    adversarial_loss = torch.nn.BCEWithLogitsLoss()
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    losses = []
    for step in range(n_steps):
        real_points, labels = real_batch(rng, batch_size)
        valid = torch.full((batch_size,), 0.9)  # one-sided label smoothing
        fake = torch.zeros(batch_size)

        # -----------------
        #  Train Generator
        # -----------------
        optimizer_G.zero_grad()
        z = torch.tensor(rng.standard_normal((batch_size, LATENT)), dtype=torch.float32)
        gen_labels = torch.LongTensor(rng.integers(0, N_CLASSES, batch_size))
        gen_points = generator(z, gen_labels)
        g_loss = adversarial_loss(discriminator(gen_points, gen_labels), valid)
        g_loss.backward()
        optimizer_G.step()

        # ---------------------
        #  Train Discriminator
        # ---------------------
        optimizer_D.zero_grad()
        d_real_loss = adversarial_loss(discriminator(real_points, labels), valid)
        d_fake_loss = adversarial_loss(discriminator(gen_points.detach(), gen_labels), fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()

        losses += [d_loss.item(), g_loss.item()]
        if step % 4 == 0:
            d, g = d_loss.item(), g_loss.item()
            print(f"[Step {step}/{n_steps}] [D loss: {d:.4f}] [G loss: {g:.4f}]")

    generator.eval()
    with torch.no_grad():
        labels = torch.arange(N_CLASSES).repeat_interleave(5)
        z = torch.from_numpy(rng.standard_normal((len(labels), LATENT)).astype(np.float32))
        samples = generator(z, labels)
        per_class = torch.stack([samples[labels == c].mean(0) for c in range(N_CLASSES)])
        scores = torch.sigmoid(discriminator(samples, labels))
    print("class means:", per_class.numpy().round(3).tolist())
    losses += per_class.flatten().tolist() + [scores.mean().item()]
    return losses


if __name__ == "__main__":
    train(build())
