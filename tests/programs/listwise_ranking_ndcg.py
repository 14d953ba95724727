"""Learning to rank, as the LTR tutorials write it: queries with a varying number of
documents padded to one width with ``pad_sequence`` (padding value -1 marks the holes), a
scoring MLP, a RankNet pairwise loss (``BCEWithLogits`` on all score differences, pairs
picked with ``torch.sign`` and masks) plus a ListNet loss (``log_softmax`` with the holes
masked to ``-inf``), full-batch ``Rprop``, and NDCG@3 from ``torch.sort(descending=True)``,
``gather`` and ``log2`` discounts; the pairwise ``nn.MarginRankingLoss`` is reported too."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

N_FEATURES = 6


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(N_FEATURES, 16), nn.Mish(), nn.Linear(16, 1))

    def forward(self, x):
        return self.mlp(x).squeeze(-1)


def build():
    return Scorer()


def make_queries(rng, n_queries):
    weights = rng.standard_normal(N_FEATURES)
    features, relevances = [], []
    for _ in range(n_queries):
        n_docs = int(rng.integers(3, 9))
        x = rng.standard_normal((n_docs, N_FEATURES))
        relevance = np.digitize(x @ weights + 0.3 * rng.standard_normal(n_docs), [-1, 0, 1])
        features.append(torch.tensor(x, dtype=torch.float32))
        relevances.append(torch.tensor(relevance, dtype=torch.float32))
    return (
        pad_sequence(features, batch_first=True),
        pad_sequence(relevances, batch_first=True, padding_value=-1.0),
    )


def ranknet_loss(scores, labels, mask):
    score_diffs = scores.unsqueeze(2) - scores.unsqueeze(1)
    label_diffs = labels.unsqueeze(2) - labels.unsqueeze(1)
    pair_mask = mask.unsqueeze(2) & mask.unsqueeze(1) & (label_diffs != 0)
    targets = (torch.sign(label_diffs) + 1) / 2
    return F.binary_cross_entropy_with_logits(score_diffs[pair_mask], targets[pair_mask])


def listnet_loss(scores, labels, mask):
    scores = scores.masked_fill(~mask, float("-inf"))
    true_dist = F.softmax(labels.masked_fill(~mask, float("-inf")), dim=1)
    log_pred = F.log_softmax(scores, dim=1)
    return -(true_dist * log_pred.masked_fill(~mask, 0.0)).sum(dim=1).mean()


def ndcg_at_k(scores, labels, mask, k=3):
    scores = scores.masked_fill(~mask, float("-inf"))
    gains = (2 ** labels.clamp(min=0) - 1) * mask
    _, order = torch.sort(scores, dim=1, descending=True)
    ideal, _ = torch.sort(gains, dim=1, descending=True)
    discounts = 1.0 / torch.log2(torch.arange(k, dtype=torch.float32) + 2.0)
    dcg = (torch.gather(gains, 1, order)[:, :k] * discounts).sum(dim=1)
    idcg = (ideal[:, :k] * discounts).sum(dim=1)
    return torch.where(idcg > 0, dcg / idcg, torch.ones_like(dcg)).mean()


def train(model, steps=12):
    rng = np.random.default_rng(0)
    x, y = make_queries(rng, 20)
    x_test, y_test = make_queries(rng, 10)
    mask, mask_test = y >= 0, y_test >= 0
    optimizer = torch.optim.Rprop(model.parameters(), lr=0.01, etas=(0.5, 1.2))
    margin_loss = nn.MarginRankingLoss(margin=0.5)
    losses = []
    for step in range(steps):
        model.train()
        optimizer.zero_grad()
        scores = model(x)
        loss = ranknet_loss(scores, y, mask) + listnet_loss(scores, y, mask)
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            test_scores = model(x_test)
            ndcg = ndcg_at_k(test_scores, y_test, mask_test).item()
            first, second = test_scores[:, 0], test_scores[:, 1]
            target = torch.sign(y_test[:, 0] - y_test[:, 1])
            pairwise = margin_loss(first[target != 0], second[target != 0], target[target != 0])
        if step % 3 == 0:
            print(f"step {step}: loss {loss.item():.4f} NDCG@3 {ndcg:.4f} margin {pairwise:.4f}")
        losses += [loss.item(), ndcg, pairwise.item()]
    return losses


if __name__ == "__main__":
    train(build())
