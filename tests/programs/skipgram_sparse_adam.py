"""Skip-gram with negative sampling as the popular word2vec reimplementations train it: both
embedding tables with ``sparse=True``, so that each step's gradient holds only the rows the
batch looked up (a sparse COO tensor), and ``optim.SparseAdam`` updating just those rows; the
score of a pair is ``(u * v).sum(1)`` and the loss ``-logsigmoid`` of the positive score and
of the negated negative scores. The libraries' random streams differ, so the pairs and the
negatives are drawn with NumPy."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, NEGATIVES = 40, 8, 4


class SkipGramModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.u_embeddings = nn.Embedding(VOCAB, DIM, sparse=True)
        self.v_embeddings = nn.Embedding(VOCAB, DIM, sparse=True)
        nn.init.uniform_(self.u_embeddings.weight, -1.0 / DIM, 1.0 / DIM)
        nn.init.constant_(self.v_embeddings.weight, 0.0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)  # (B, D)
        emb_v = self.v_embeddings(pos_v)  # (B, D)
        emb_neg_v = self.v_embeddings(neg_v)  # (B, K, D)
        score = torch.clamp((emb_u * emb_v).sum(dim=1), max=10, min=-10)
        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze(2)
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        return torch.mean(-F.logsigmoid(score) - F.logsigmoid(-neg_score).sum(dim=1))


def build():
    return SkipGramModel()


def train(model, steps=12, batch_size=32):
    rng = np.random.default_rng(3)
    # pairs from "documents" of 8 related words each: the context shares the center's group
    centers = rng.integers(0, VOCAB, (steps, batch_size))
    contexts = centers // 8 * 8 + rng.integers(0, 8, (steps, batch_size))
    frequency = np.bincount(centers.ravel(), minlength=VOCAB) + 1.0
    noise = frequency**0.75 / (frequency**0.75).sum()
    negatives = rng.choice(VOCAB, size=(steps, batch_size, NEGATIVES), p=noise)
    optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=0.05)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = model(
            torch.from_numpy(centers[step]),
            torch.from_numpy(contexts[step]),
            torch.from_numpy(negatives[step]),
        )
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 4 == 3:
            print(f"step {step}: loss {loss.item():.4f}")
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    train(build())
