"""A mixture density network (Bishop, 1994) on the inverse of x = y + 0.3 sin(2 pi y) + noise:
given x, y has up to three plausible values, so a single Gaussian cannot fit it. The network
outputs mixture logits, means and log standard deviations; the negative log-likelihood comes
from ``MixtureSameFamily(Categorical(logits=...), Normal(mu, sigma)).log_prob`` and is checked
against the same likelihood written with ``torch.logsumexp``. Adam on NumPy-made minibatches,
then the mixture's mean and draws from it at a few x. The draws use each library's own random
generator, so they are printed, not returned."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, MixtureSameFamily, Normal


def make_data(rng, n):
    y = rng.uniform(0.0, 1.0, (n, 1))
    x = y + 0.3 * np.sin(2 * np.pi * y) + rng.uniform(-0.1, 0.1, (n, 1))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.float32))


class MDN(nn.Module):
    def __init__(self, hidden=24, n_components=5):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.pi = nn.Linear(hidden, n_components)
        self.mu = nn.Linear(hidden, n_components)
        self.log_sigma = nn.Linear(hidden, n_components)

    def forward(self, x):
        h = self.body(x)
        # clamp keeps a collapsing component from sending the likelihood to infinity
        return self.pi(h), self.mu(h), self.log_sigma(h).clamp(min=-5.0, max=2.0)

    def distribution(self, x):
        logits, mu, log_sigma = self(x)
        return MixtureSameFamily(Categorical(logits=logits), Normal(mu, log_sigma.exp()))


def mdn_nll(logits, mu, log_sigma, y):
    """The same loss by hand: the mean over the batch of -log sum_k pi_k N(y | mu_k, sigma_k)."""
    log_pi = F.log_softmax(logits, dim=-1)
    log_normal = -0.5 * ((y - mu) / log_sigma.exp()) ** 2 - log_sigma - 0.5 * math.log(2 * math.pi)
    return -torch.logsumexp(log_pi + log_normal, dim=-1).mean()


def build():
    return MDN()


def train(model, epochs=8, batch_size=64):
    rng = np.random.default_rng(0)
    x, y = make_data(rng, 512)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for epoch in range(epochs):
        perm = torch.from_numpy(rng.permutation(len(x)))
        total = 0.0
        for i in range(0, len(x), batch_size):
            idx = perm[i : i + batch_size]
            mixture = model.distribution(x[idx])
            loss = -mixture.log_prob(y[idx].squeeze(-1)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        with torch.no_grad():
            by_hand = mdn_nll(*model(x), y).item()
            full = -model.distribution(x).log_prob(y.squeeze(-1)).mean().item()
        print(
            f"epoch {epoch}: nll {total / len(x):.4f}, "
            f"full-data nll {full:.4f} ({by_hand:.4f} by hand)"
        )
        losses += [loss.item(), full, by_hand]

    # x = 0.5 has three likely y (the curve folds back there): the mixture's mean falls between
    # them, the heaviest component's mean on one
    query = torch.tensor([[0.2], [0.5], [0.8]])
    with torch.no_grad():
        mixture = model.distribution(query)
        samples = mixture.sample((200,))  # (200, 3)
        weight, k = mixture.mixture_distribution.probs.max(dim=-1)
        branch = mixture.component_distribution.mean.gather(-1, k.unsqueeze(-1)).squeeze(-1)
    for i, x0 in enumerate(query.squeeze(-1).tolist()):
        print(
            f"x={x0:.1f}: mixture mean {mixture.mean[i].item():.3f}, heaviest component "
            f"{branch[i].item():.3f} (weight {weight[i].item():.2f}), "
            f"mean of {samples.shape[0]} draws {samples[:, i].mean().item():.3f}"
        )
    return losses + mixture.mean.tolist() + branch.tolist() + weight.tolist()


if __name__ == "__main__":
    train(build())
