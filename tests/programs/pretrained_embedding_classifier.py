"""A bag-of-vectors text classifier on pretrained word vectors, as GloVe tutorials write it:
``nn.Embedding.from_pretrained(vectors, freeze=True, padding_idx=0)``, the mean of the
vectors of the words that are not padding, two linear layers, Adam (random vectors instead of
GloVe)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, vectors, nclass=3):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(vectors, freeze=True, padding_idx=0)
        self.fc1 = nn.Linear(vectors.size(1), 16)
        self.fc2 = nn.Linear(16, nclass)

    def forward(self, text):
        keep = (text != 0).unsqueeze(-1).float()
        pooled = (self.embedding(text) * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.fc2(F.relu(self.fc1(pooled)))


def build():
    vectors = np.random.default_rng(0).standard_normal((30, 8)).astype(np.float32)
    vectors[0] = 0
    return Net(torch.from_numpy(vectors))


def train(model, steps=8):
    rng = np.random.default_rng(1)
    text = torch.from_numpy(rng.integers(0, 30, (steps, 6, 5)))
    labels = torch.from_numpy(rng.integers(0, 3, (steps, 6)))
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(text[step]), labels[step])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"loss {losses[-1]:.4f}")
    return losses
