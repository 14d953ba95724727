"""A sequence classifier over a batch of sequences of different lengths, as NLP tutorials write
one: embedded tokens packed with ``pack_padded_sequence`` (unsorted), a bidirectional LSTM,
each sequence's final states and the mean of its outputs (unpacked with
``pad_packed_sequence``) into a linear layer, cross entropy and Adam."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Classifier(nn.Module):
    def __init__(self, vocab=20, dims=8, hidden=12, classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dims, padding_idx=0)
        self.lstm = nn.LSTM(dims, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(4 * hidden, classes)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(
            self.embedding(tokens), lengths, batch_first=True, enforce_sorted=False
        )
        outputs, (h_n, _) = self.lstm(packed)
        padded, steps = pad_packed_sequence(outputs, batch_first=True)  # zeros past the end
        mean = padded.sum(dim=1) / steps.unsqueeze(1).float()
        return self.out(torch.cat([h_n[-2], h_n[-1], mean], dim=1))


def build():
    return Classifier()


def train(model, epochs=3):
    rng = np.random.default_rng(0)
    lengths = [torch.tensor(rng.integers(1, 7, 5)) for _ in range(3)]
    batches = []
    for length in lengths:
        tokens = np.zeros((5, 6), dtype=np.int64)
        for row, n in enumerate(length.tolist()):
            tokens[row, :n] = rng.integers(1, 20, n)
        batches.append((torch.tensor(tokens), length, torch.tensor(rng.integers(0, 3, 5))))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        for tokens, length, target in batches:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tokens, length), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
