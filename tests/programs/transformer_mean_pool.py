"""A Transformer-encoder text classifier that pools by a plain ``mean(dim=1)`` and is evaluated
in eval mode under ``no_grad`` with a ``src_key_padding_mask``: PyTorch's encoder then takes its
nested-tensor fast path, whose output is zero at padded positions, so the mean sees zeros there
(made-up sentences padded at the end)."""

import math

import numpy as np
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, ntoken=20, d_model=8, nhead=2, nclass=3):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 16, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.fc = nn.Linear(d_model, nclass)

    def forward(self, src, padding_mask):
        x = self.embedding(src) * math.sqrt(self.embedding.embedding_dim)
        x = self.encoder(x, src_key_padding_mask=padding_mask)
        return self.fc(x.mean(dim=1))


def make_batch(rng, n=8, length=7):
    tokens = np.zeros((n, length), dtype=np.int64)
    for row in range(n):
        k = rng.integers(2, length + 1)
        tokens[row, :k] = rng.integers(1, 20, k)
    src = torch.from_numpy(tokens)
    return src, src == 0, torch.from_numpy(rng.integers(0, 3, n))


def build():
    return Classifier()


def train(model, epochs=3):
    rng = np.random.default_rng(0)
    batches = [make_batch(rng) for _ in range(3)]
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        model.train()
        for src, mask, label in batches:
            optimizer.zero_grad()
            loss = criterion(model(src, mask), label)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            val_loss = sum(criterion(model(s, m), y).item() for s, m, y in batches)
        print(f"epoch {epoch} val loss {val_loss:.4f}")
        losses.append(val_loss)
    return losses
