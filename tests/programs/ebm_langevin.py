"""An energy-based model trained by contrastive divergence with stochastic gradient Langevin
dynamics (Du & Mordatch, 2019), as the JEM/IGEBM tutorials write it: negative samples from a
replay buffer (95%) or uniform noise, refined by Langevin steps that take
``torch.autograd.grad(energy.sum(), x)`` of an input set to ``requires_grad_(True)``, update it
in place through ``x.data.add_(...)`` and ``clamp_``, with the model's parameters frozen by
``requires_grad_(False)`` during sampling and its mode switched with ``eval``/``train``; the
loss is the energy gap plus an energy-magnitude regularizer, Adam with ``betas=(0.0, 0.999)``,
a Swish module for the activations. All noise comes from NumPy."""

import numpy as np
import torch
import torch.nn as nn


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class EnergyNet(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, hidden, 3, stride=2, padding=1),
            Swish(),
            nn.Conv2d(hidden, hidden, 3, stride=2, padding=1),
            Swish(),
            nn.Flatten(),
            nn.Linear(hidden * 4, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)  # the energy: low on data


class Sampler:
    def __init__(self, model, rng, shape=(1, 8, 8), buffer_size=64):
        self.model, self.rng, self.shape = model, rng, shape
        self.buffer = [self.uniform(1) for _ in range(buffer_size)]

    def uniform(self, n):
        return torch.from_numpy(self.rng.uniform(-1, 1, (n, *self.shape)).astype(np.float32))

    def sample_new(self, n, steps=10, step_size=10.0, noise=0.005):
        fresh = int(round(n * 0.05))
        picks = self.rng.integers(0, len(self.buffer), n - fresh)
        x = torch.cat([self.uniform(fresh)] + [self.buffer[i] for i in picks], dim=0)
        x = self.langevin(x, steps, step_size, noise)
        self.buffer = list(x.split(1)) + self.buffer
        self.buffer = self.buffer[: len(self.buffer) - n]
        return x

    def langevin(self, x, steps, step_size, noise):
        is_training = self.model.training
        self.model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        x = x.detach().clone().requires_grad_(True)
        for _ in range(steps):
            eps = torch.from_numpy(self.rng.standard_normal(x.shape).astype(np.float32))
            x.data.add_(eps * noise)
            x.data.clamp_(min=-1.0, max=1.0)
            grad = torch.autograd.grad(self.model(x).sum(), x)[0]
            grad.data.clamp_(-0.03, 0.03)  # stabilizes sampling
            x.data.add_(-step_size * grad.data)
            x.data.clamp_(min=-1.0, max=1.0)
        for p in self.model.parameters():
            p.requires_grad_(True)
        self.model.train(is_training)
        return x.detach()


def build():
    return EnergyNet()


def data_batch(rng, n):
    images = -np.ones((n, 1, 8, 8), np.float32)
    rows = rng.integers(1, 7, n)
    images[np.arange(n), 0, rows, 1:7] = 1.0  # a horizontal stroke
    return torch.from_numpy(images + 0.02 * rng.standard_normal(images.shape).astype(np.float32))


def train(model, steps=8, alpha=0.1):
    rng = np.random.default_rng(0)
    sampler = Sampler(model, rng)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.0, 0.999))
    losses = []
    for step in range(steps):
        real = data_batch(rng, 16)
        fake = sampler.sample_new(16)
        energies = model(torch.cat([real, fake], dim=0))
        real_energy, fake_energy = energies.chunk(2, dim=0)
        reg_loss = alpha * (real_energy**2 + fake_energy**2).mean()
        cdiv_loss = real_energy.mean() - fake_energy.mean()
        loss = reg_loss + cdiv_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.4f}, contrastive divergence {cdiv_loss.item():.4f}")
    losses.append(fake.mean().item())
    return losses


if __name__ == "__main__":
    train(build())
