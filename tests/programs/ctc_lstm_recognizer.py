"""A small sequence recognizer trained with CTC, as speech and handwriting tutorials do: a
bidirectional LSTM over feature frames, a linear layer to the labels plus blank,
``log_softmax`` over classes, ``nn.CTCLoss(blank=0, zero_infinity=True)`` with per-sequence
input and target lengths (padded targets), Adam and gradient clipping (synthetic frames whose
features encode the label sequence, drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn


class Recognizer(nn.Module):
    def __init__(self, features=6, hidden=10, classes=5):
        super().__init__()
        self.rnn = nn.LSTM(features, hidden, bidirectional=True)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, frames):  # (T, N, features) -> (T, N, classes) log-probabilities
        hidden, _ = self.rnn(frames)
        return self.out(hidden).log_softmax(2)


def build():
    return Recognizer()


def batch(rng, size=4, frames=12, classes=5):
    target_lengths = rng.integers(2, 5, size)
    targets = np.zeros((size, 4), dtype=np.int64)
    x = rng.normal(0, 0.3, (frames, size, 6)).astype(np.float32)
    input_lengths = np.full(size, frames)
    for n, length in enumerate(target_lengths):
        labels = rng.integers(1, classes, length)
        targets[n, :length] = labels
        for i, label in enumerate(labels):  # each label lights up its feature for 2 frames
            x[3 * i : 3 * i + 2, n, label] += 1.0
        input_lengths[n] = frames - rng.integers(0, 3)
    return (
        torch.from_numpy(x),
        torch.from_numpy(targets),
        torch.from_numpy(input_lengths),
        torch.from_numpy(target_lengths),
    )


def train(model, steps=6):
    rng = np.random.default_rng(0)
    batches = [batch(rng) for _ in range(steps)]
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for frames, targets, input_lengths, target_lengths in batches:
        optimizer.zero_grad()
        loss = criterion(model(frames), targets, input_lengths, target_lengths)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses.append(loss.item())
    print(f"ctc loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses
