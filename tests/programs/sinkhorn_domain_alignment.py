"""Entropic optimal transport as a training loss (Cuturi, 2013; Genevay et al., 2018), the way
the log-domain Sinkhorn snippets in PyTorch write it: a cost matrix from ``torch.cdist`` squared,
the dual potentials iterated with ``torch.logsumexp`` over ``(g[None, :] - C) / eps``, the
marginals' logs by ``torch.full(..., 1 / n).log()``, the transport plan by ``exp``, the
debiased Sinkhorn divergence; a feature extractor trained so that the source and target domains
align while a classifier learns the source labels, SGD with momentum and ``ExponentialLR``; the
plan's marginals are checked with ``torch.allclose``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def sinkhorn(x, y, eps=0.5, n_iters=30):
    C = torch.cdist(x, y) ** 2
    n, m = C.shape
    log_a = torch.full((n,), 1.0 / n).log()
    log_b = torch.full((m,), 1.0 / m).log()
    f = torch.zeros(n)
    g = torch.zeros(m)
    for _ in range(n_iters):
        f = -eps * torch.logsumexp((g[None, :] - C) / eps + log_b[None, :], dim=1)
        g = -eps * torch.logsumexp((f[:, None] - C) / eps + log_a[:, None], dim=0)
    log_plan = (f[:, None] + g[None, :] - C) / eps + log_a[:, None] + log_b[None, :]
    plan = log_plan.exp()
    return (plan * C).sum(), plan


def sinkhorn_divergence(x, y, eps=0.5):
    xy, plan = sinkhorn(x, y, eps)
    xx, _ = sinkhorn(x, x, eps)
    yy, _ = sinkhorn(y, y, eps)
    return xy - 0.5 * (xx + yy), plan


class Aligner(nn.Module):
    def __init__(self, features=5, dim=4, classes=2):
        super().__init__()
        self.extractor = nn.Sequential(nn.Linear(features, 16), nn.ELU(), nn.Linear(16, dim))
        self.classifier = nn.Linear(dim, classes)

    def forward(self, x):
        z = self.extractor(x)
        return z, self.classifier(z)


def build():
    return Aligner()


def domains(rng, n=24):
    labels = rng.integers(0, 2, n)
    source = rng.standard_normal((n, 5)) + 2.0 * labels[:, None]
    target_labels = rng.integers(0, 2, n)
    shift = np.array([1.5, -1.0, 0.5, 0.0, 2.0])
    target = rng.standard_normal((n, 5)) + 2.0 * target_labels[:, None] + shift
    as_tensor = lambda a: torch.from_numpy(a.astype(np.float32))  # noqa: E731
    return as_tensor(source), torch.from_numpy(labels), as_tensor(target)


def train(model, steps=10, weight=0.5):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
    losses = []
    for step in range(steps):
        source, labels, target = domains(rng)
        z_source, logits = model(source)
        z_target, _ = model(target)
        ot, plan = sinkhorn_divergence(z_source, z_target)
        classification = F.cross_entropy(logits, labels)
        loss = classification + weight * ot
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses += [classification.item(), ot.item()]
        print(f"step {step}: ce {classification.item():.4f}, sinkhorn {ot.item():.4f}")
    marginal = torch.full((plan.shape[0],), 1.0 / plan.shape[0])
    balanced = torch.allclose(plan.sum(1), marginal, atol=1e-3)
    print(f"plan rows sum to the source weights: {balanced}")
    return losses + [float(balanced)]


if __name__ == "__main__":
    train(build())
