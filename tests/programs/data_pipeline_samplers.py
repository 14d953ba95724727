"""A sequence classifier whose data come through ``torch.utils.data`` as NLP scripts feed them:
a custom ``Dataset`` of variable-length token sequences (two of them joined by
``ConcatDataset``), a ``collate_fn`` padding each batch with ``pad_sequence`` and returning the
lengths, a custom ``Sampler`` bucketing the samples by length inside a ``BatchSampler`` with
``drop_last``, the validation ``Subset`` padded once into a ``TensorDataset``, an LSTM over
``pack_padded_sequence(enforce_sorted=False)``, and ``ReduceLROnPlateau`` with early stopping
on the validation loss (the best weights kept and restored). The libraries' random streams
differ, so the training/validation split is a NumPy permutation and not ``random_split``."""

import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    Sampler,
    Subset,
    TensorDataset,
)

VOCAB, CLASSES = 10, 3  # token 0 pads; tokens 1..9 fall in three groups, one per class


class SequenceDataset(Dataset):
    """Sequences whose tokens come mostly from their class's group of three."""

    def __init__(self, n, min_len, max_len, seed):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, CLASSES, n)
        self.sequences = []
        for label in self.labels:
            length = rng.integers(min_len, max_len + 1)
            own = rng.random(length) < 0.6
            tokens = np.where(
                own, 1 + 3 * label + rng.integers(0, 3, length), rng.integers(1, VOCAB, length)
            )
            self.sequences.append(torch.from_numpy(tokens))

    def __len__(self):
        return len(self.sequences)

    def __getitem__(self, idx):
        return self.sequences[idx], int(self.labels[idx])


def collate_batch(batch):
    sequences, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in sequences])
    padded = pad_sequence(sequences, batch_first=True, padding_value=0)
    return padded, lengths, torch.tensor(labels)


class BucketSampler(Sampler):
    """Indices sorted by length (ties by index), so that each batch pads little; the buckets of
    ``bucket_size`` are visited in a fixed interleaved order, longest and shortest alternating."""

    def __init__(self, lengths, bucket_size):
        self.order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
        self.bucket_size = bucket_size

    def __iter__(self):
        buckets = [
            self.order[i : i + self.bucket_size]
            for i in range(0, len(self.order), self.bucket_size)
        ]
        for k in range(len(buckets)):
            yield from buckets[k // 2] if k % 2 == 0 else buckets[-(k // 2) - 1]

    def __len__(self):
        return len(self.order)


class LSTMClassifier(nn.Module):
    def __init__(self, embed=8, hidden=16):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, embed, padding_idx=0)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, CLASSES)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(
            self.embedding(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, (h_n, _) = self.lstm(packed)
        return self.fc(h_n[-1])


def evaluate(model, loader):
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for tokens, lengths, labels in loader:
            logits = model(tokens, lengths)
            total += F.cross_entropy(logits, labels, reduction="sum").item()
            correct += (logits.argmax(dim=1) == labels).sum().item()
            count += labels.numel()
    return total / count, correct / count


def build():
    return LSTMClassifier()


def train(model, max_epochs=12, patience=3):
    dataset = ConcatDataset([SequenceDataset(60, 2, 6, seed=0), SequenceDataset(40, 7, 12, seed=1)])
    order = np.random.default_rng(2).permutation(len(dataset)).tolist()
    train_set, val_subset = Subset(dataset, order[:80]), Subset(dataset, order[80:])
    val_set = TensorDataset(*collate_batch([val_subset[i] for i in range(len(val_subset))]))

    lengths = [len(train_set[i][0]) for i in range(len(train_set))]
    batch_sampler = BatchSampler(
        BucketSampler(lengths, bucket_size=16), batch_size=12, drop_last=True
    )
    train_loader = DataLoader(
        train_set, batch_sampler=batch_sampler, collate_fn=collate_batch, pin_memory=False
    )
    val_loader = DataLoader(val_set, batch_size=8, shuffle=False, pin_memory=False)
    print(
        f"{len(dataset)} sequences: {len(train_loader)} training batches, "
        f"{len(val_loader)} validation batches"
    )

    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, mode="min", factor=0.5, patience=1
    )
    best_loss, best_state, bad_epochs = float("inf"), None, 0
    losses = []
    for epoch in range(max_epochs):
        model.train()
        running = 0.0
        for tokens, lengths, labels in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tokens, lengths), labels)
            loss.backward()
            optimizer.step()
            running += loss.item()
        val_loss, val_acc = evaluate(model, val_loader)
        scheduler.step(val_loss)
        lr = optimizer.param_groups[0]["lr"]
        print(
            f"epoch {epoch}: train loss {running / len(train_loader):.4f} "
            f"val loss {val_loss:.4f} val accuracy {val_acc:.3f} lr {lr:g}"
        )
        losses += [running / len(train_loader), val_loss, val_acc, lr]
        if val_loss < best_loss:
            best_loss, best_state, bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                print(f"early stopping after epoch {epoch}")
                break
    model.load_state_dict(best_state)
    final_loss, final_acc = evaluate(model, val_loader)
    print(f"best val loss {final_loss:.4f} accuracy {final_acc:.3f}")
    losses += [final_loss, final_acc]
    return losses


if __name__ == "__main__":
    train(build())
