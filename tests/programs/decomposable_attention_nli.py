"""Parikh et al.'s decomposable attention model for natural language inference, written as the
NLI repositories write it: word vectors from an ``nn.Embedding`` with ``padding_idx``, soft
alignment of premise and hypothesis by ``torch.bmm`` with the padded positions masked to a
large negative number before each ``softmax`` (over both directions, one with a
``transpose``), compare and aggregate feed-forward networks with masked sums, a
``CrossEntropyLoss``, gradient clipping, ``SequentialLR`` of a ``LinearLR`` warm-up then an
``ExponentialLR`` decay, and ``argmax`` accuracy under ``torch.no_grad()`` (toy sentences:
the hypothesis shares words with the premise or negates it)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, EMBED, HIDDEN, N_CLASSES, PAD = 20, 12, 16, 3, 0
NOT = VOCAB - 1  # the negation word


def mlp(in_dim, out_dim):
    return nn.Sequential(
        nn.Linear(in_dim, out_dim), nn.ReLU(), nn.Linear(out_dim, out_dim), nn.ReLU()
    )


class DecomposableAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED, padding_idx=PAD)
        self.attend = mlp(EMBED, HIDDEN)
        self.compare = mlp(2 * EMBED, HIDDEN)
        self.aggregate = mlp(2 * HIDDEN, HIDDEN)
        self.classifier = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, premise, hypothesis):
        mask_a, mask_b = premise != PAD, hypothesis != PAD
        a, b = self.embed(premise), self.embed(hypothesis)
        # Attend: e_ij = F(a_i)^T F(b_j)
        e = torch.bmm(self.attend(a), self.attend(b).transpose(1, 2))
        beta = torch.bmm(F.softmax(e.masked_fill(~mask_b[:, None, :], -1e9), dim=-1), b)
        alpha = torch.bmm(
            F.softmax(e.masked_fill(~mask_a[:, :, None], -1e9), dim=1).transpose(1, 2), a
        )
        # Compare
        v1 = self.compare(torch.cat([a, beta], dim=-1)) * mask_a.unsqueeze(-1)
        v2 = self.compare(torch.cat([b, alpha], dim=-1)) * mask_b.unsqueeze(-1)
        # Aggregate
        v = torch.cat([v1.sum(dim=1), v2.sum(dim=1)], dim=-1)
        return self.classifier(self.aggregate(v))


def build():
    return DecomposableAttention()


def make_pairs(rng, n):
    """0 entailment (hypothesis drawn from the premise), 1 contradiction (the same, negated),
    2 neutral (unrelated words); sentences of 3 to 7 words, padded with 0."""
    premises = np.zeros((n, 7), dtype=np.int64)
    hypotheses = np.zeros((n, 5), dtype=np.int64)
    labels = rng.integers(0, 3, n)
    for i, label in enumerate(labels):
        length = int(rng.integers(3, 8))
        premises[i, :length] = rng.integers(1, NOT, length)
        if label == 2:
            hypotheses[i, :3] = rng.integers(1, NOT, 3)
        else:
            hypotheses[i, :3] = rng.choice(premises[i, :length], 3)
        if label == 1:
            hypotheses[i, 3] = NOT
    return torch.from_numpy(premises), torch.from_numpy(hypotheses), torch.from_numpy(labels)


def train(model, epochs=3, batch_size=16):
    rng = np.random.default_rng(0)
    premises, hypotheses, labels = make_pairs(rng, 64)
    test_set = make_pairs(rng, 32)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.2, total_iters=4)
    decay = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    scheduler = torch.optim.lr_scheduler.SequentialLR(
        optimizer, schedulers=[warmup, decay], milestones=[4]
    )
    losses = []
    for epoch in range(epochs):
        model.train()
        for i in range(0, len(labels), batch_size):
            optimizer.zero_grad()
            logits = model(premises[i : i + batch_size], hypotheses[i : i + batch_size])
            loss = criterion(logits, labels[i : i + batch_size])
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            scheduler.step()
            losses += [loss.item(), scheduler.get_last_lr()[0]]
        model.eval()
        with torch.no_grad():
            logits = model(*test_set[:2])
            accuracy = (logits.argmax(dim=1) == test_set[2]).float().mean().item()
            test_loss = criterion(logits, test_set[2]).item()
        print(
            f"epoch {epoch}: train loss {losses[-2]:.4f} test loss {test_loss:.4f} "
            f"accuracy {accuracy:.3f} lr {scheduler.get_last_lr()[0]:.5f}"
        )
        losses += [test_loss, accuracy]
    return losses


if __name__ == "__main__":
    train(build())
