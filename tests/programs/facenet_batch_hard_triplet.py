"""A FaceNet-style embedding trained with online batch-hard triplet mining, as the
"triplet loss in PyTorch" write-ups do it: embeddings ``F.normalize``-d onto the unit sphere, the
pairwise distance matrix from ``torch.cdist``, boolean masks from ``labels.unsqueeze(0) ==
labels.unsqueeze(1)`` with the diagonal removed by ``~torch.eye(...).bool()``, the hardest
positive by ``(dist * mask).max(1)`` and the hardest negative by ``dist + max * ~mask`` then
``min(1)``, the triplets chosen with those indices fed to ``nn.TripletMarginLoss``, a second
run of the same mining written by hand with ``F.relu`` and ``F.pairwise_distance``, the
gradients clipped by value with ``clip_grad_value_``, ``Adagrad`` as in the FaceNet paper, and
a verification accuracy over thresholds from ``torch.linspace`` (made-up "identities": points
near eight random centres in 10-D)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class EmbeddingNet(nn.Module):
    def __init__(self, in_dim=10, hidden=24, dim=6):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.PReLU(), nn.Linear(hidden, hidden), nn.PReLU()
        )
        self.head = nn.Linear(hidden, dim)

    def forward(self, x):
        return F.normalize(self.head(self.body(x)), p=2, dim=1)


def batch_hard_indices(embeddings, labels):
    dist = torch.cdist(embeddings, embeddings)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    not_self = ~torch.eye(len(labels), dtype=torch.bool)
    positive_mask = same & not_self
    hardest_positive = (dist * positive_mask.float()).max(dim=1)
    max_dist = dist.max(dim=1, keepdim=True).values
    hardest_negative = (dist + max_dist * same.float()).min(dim=1)
    return hardest_positive.indices, hardest_negative.indices, hardest_positive.values


def identities(rng, centres, per_class=3):
    labels = np.repeat(np.arange(len(centres)), per_class)
    points = centres[labels] + 0.4 * rng.standard_normal((len(labels), centres.shape[1]))
    return torch.from_numpy(points.astype(np.float32)), torch.from_numpy(labels)


def build():
    return EmbeddingNet()


def train(model, steps=8, margin=0.3):
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((8, 10))
    criterion = nn.TripletMarginLoss(margin=margin, p=2)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05, initial_accumulator_value=0.1)
    losses = []
    for step in range(steps):
        x, labels = identities(rng, centres)
        emb = model(x)
        pos, neg, hardest = batch_hard_indices(emb.detach(), labels)
        loss = criterion(emb, emb[pos], emb[neg])
        by_hand = F.relu(
            F.pairwise_distance(emb, emb[pos]) - F.pairwise_distance(emb, emb[neg]) + margin
        ).mean()
        optimizer.zero_grad()
        (loss + 0.5 * by_hand).backward()
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
        optimizer.step()
        active = F.pairwise_distance(emb, emb[pos]) + margin > F.pairwise_distance(emb, emb[neg])
        print(f"step {step} loss {loss.item():.4f} active triplets {int(active.sum())}")
        losses += [loss.item(), by_hand.item(), hardest.mean().item()]
    model.eval()
    with torch.no_grad():
        x, labels = identities(rng, centres, per_class=4)
        emb = model(x)
        dist = torch.cdist(emb, emb)
        same = labels[:, None] == labels[None, :]
        pairs = torch.triu(torch.ones_like(dist, dtype=torch.bool), diagonal=1)
        accuracies = [
            ((dist[pairs] < t) == same[pairs]).float().mean() for t in torch.linspace(0.1, 1.5, 8)
        ]
        best = torch.stack(accuracies).max()
    print(f"verification accuracy {best.item():.4f}")
    return losses + [best.item(), model.body[1].weight.item()]


if __name__ == "__main__":
    train(build())
