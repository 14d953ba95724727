"""Metric learning with triplets, as the metric-learning tutorials write it: a custom
``Sampler`` yielding P x K batches (P classes, K samples each; drawn with NumPy so both
libraries see the same) handed to a ``DataLoader`` as ``batch_sampler`` with a ``collate_fn``
that stacks dict samples, an embedding net of ``Conv1d``/``AvgPool1d``/``BatchNorm1d`` on
1-D signals with L2-normalized outputs, semi-hard triplets mined from ``torch.cdist``
distances with masks (the hardest negative farther than the positive, else the hardest),
``F.triplet_margin_loss`` with ``swap=True``, a ``nn.TripletMarginWithDistanceLoss`` on cosine
distance for comparison, and recall@1 from ``topk`` on the distance matrix under
``torch.no_grad()``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

N_CLASSES, PER_CLASS, LENGTH = 6, 8, 32


class Signals(Dataset):
    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        t = np.linspace(0, 1, LENGTH)
        self.labels = np.repeat(np.arange(N_CLASSES), PER_CLASS)
        freq = 1 + self.labels[:, None] + 0.2 * rng.standard_normal((len(self.labels), 1))
        phase = rng.uniform(0, 2 * np.pi, (len(self.labels), 1))
        signals = np.sin(2 * np.pi * freq * t + phase) + 0.3 * rng.standard_normal(freq.shape)
        self.signals = signals.astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"signal": torch.from_numpy(self.signals[i]), "label": int(self.labels[i])}


class PKSampler(Sampler):
    """Batches of P classes x K samples of each."""

    def __init__(self, labels, p, k, n_batches, seed=0):
        self.labels, self.p, self.k, self.n_batches = np.asarray(labels), p, k, n_batches
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        classes = np.unique(self.labels)
        for _ in range(self.n_batches):
            batch = []
            for c in self.rng.choice(classes, self.p, replace=False):
                members = np.flatnonzero(self.labels == c)
                batch += self.rng.choice(members, self.k, replace=False).tolist()
            yield batch

    def __len__(self):
        return self.n_batches


def collate(samples):
    return (
        torch.stack([s["signal"] for s in samples]).unsqueeze(1),
        torch.tensor([s["label"] for s in samples]),
    )


class EmbeddingNet(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(1, 8, 5, padding=2, bias=False),
            nn.BatchNorm1d(8),
            nn.ReLU(),
            nn.AvgPool1d(2),
            nn.Conv1d(8, 16, 5, padding=2, bias=False),
            nn.BatchNorm1d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(4),
        )
        self.fc = nn.Linear(16 * 4, dim)

    def forward(self, x):
        return F.normalize(self.fc(self.features(x).flatten(1)), dim=1)


def build():
    return EmbeddingNet()


def mine_semi_hard(embeddings, labels):
    dist = torch.cdist(embeddings, embeddings)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool)
    positive_dist = dist.masked_fill(~same | eye, -1.0)
    positives = positive_dist.argmax(dim=1)  # the hardest positive
    d_ap = dist.gather(1, positives.unsqueeze(1))
    negative_dist = dist.masked_fill(same, float("inf"))
    semi_hard = negative_dist.masked_fill(negative_dist <= d_ap, float("inf"))
    has_semi_hard = torch.isfinite(semi_hard).any(dim=1)
    negatives = torch.where(has_semi_hard, semi_hard.argmin(dim=1), negative_dist.argmin(dim=1))
    return positives, negatives


def recall_at_1(model, signals, labels):
    model.eval()
    with torch.no_grad():
        embeddings = model(signals)
        dist = torch.cdist(embeddings, embeddings).fill_diagonal_(float("inf"))
        _, nearest = dist.topk(1, dim=1, largest=False)
        return (labels[nearest.squeeze(1)] == labels).float().mean().item()


def train(model, epochs=3):
    dataset = Signals(0)
    loader = DataLoader(
        dataset, batch_sampler=PKSampler(dataset.labels, 4, 4, 6), collate_fn=collate
    )
    test_signals, test_labels = collate([Signals(1)[i] for i in range(len(dataset))])
    cosine_loss = nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1.0 - F.cosine_similarity(a, b), margin=0.2
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for epoch in range(epochs):
        model.train()
        for signals, labels in loader:
            embeddings = model(signals)
            positives, negatives = mine_semi_hard(embeddings.detach(), labels)
            anchor, positive, negative = embeddings, embeddings[positives], embeddings[negatives]
            loss = F.triplet_margin_loss(anchor, positive, negative, margin=0.3, swap=True)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                cosine = cosine_loss(anchor, positive, negative)
            losses += [loss.item(), cosine.item()]
        recall = recall_at_1(model, test_signals, test_labels)
        print(f"epoch {epoch}: triplet loss {losses[-2]:.4f} recall@1 {recall:.3f}")
        losses.append(recall)
    return losses


if __name__ == "__main__":
    train(build())
