"""A siamese sentence-similarity model: one shared encoder applied to both sentences,
``nn.CosineSimilarity(dim=1)`` of the two codes regressed onto the pair's similarity with
``MSELoss``, SGD with momentum (made-up sentences of word ids)."""

import numpy as np
import torch
import torch.nn as nn


class SiameseNetwork(nn.Module):
    def __init__(self, vocab=25, dim=12):
        super().__init__()
        self.encoder = nn.Sequential(nn.EmbeddingBag(vocab, dim), nn.Linear(dim, dim), nn.Tanh())
        self.cos = nn.CosineSimilarity(dim=1, eps=1e-6)

    def forward(self, input1, input2):
        return self.cos(self.encoder(input1), self.encoder(input2))


def build():
    return SiameseNetwork()


def train(model, steps=8):
    rng = np.random.default_rng(0)
    left = torch.from_numpy(rng.integers(0, 25, (steps, 6, 4)))
    right = torch.from_numpy(rng.integers(0, 25, (steps, 6, 4)))
    target = torch.from_numpy(rng.uniform(-1, 1, (steps, 6)).astype(np.float32))
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(left[step], right[step]), target[step])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"loss {losses[-1]:.4f}")
    return losses
