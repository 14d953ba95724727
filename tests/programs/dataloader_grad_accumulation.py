"""A small image classifier fed through torch.utils.data as the "Datasets & DataLoaders"
tutorial and the gradient-accumulation recipes do: a TensorDataset, a SubsetRandomSampler over
the training indices, random_split of the held-out part into validation and test sets, a
shuffling DataLoader with a seeded Generator, two micro-batches accumulated per optimizer step,
clip_grad_norm_, and accuracy under model.eval() and torch.no_grad(). The libraries' random
streams differ, so the training/held-out split is a NumPy permutation and each optimizer step
accumulates the whole shuffled epoch: the losses do not depend on the order drawn (the
validation and test accuracies printed may)."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, SubsetRandomSampler, TensorDataset, random_split

rng = np.random.default_rng(3)
labels = rng.integers(0, 3, 64)
images = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
images[np.arange(64), 0, labels * 2, :] += 2.0  # each class lights up its own row
dataset = TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


def build():
    return nn.Sequential(
        nn.Conv2d(1, 6, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(6 * 4 * 4, 3),
    )


def accuracy(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += model(x).argmax(dim=1).eq(y).sum().item()
    return correct


def train(model, epochs=4, accumulation_steps=2):
    order = np.random.default_rng(4).permutation(len(dataset))
    train_indices, held_out = order[:48].tolist(), Subset(dataset, order[48:].tolist())
    generator = torch.Generator().manual_seed(42)
    val_set, test_set = random_split(held_out, [0.5, 0.5], generator=generator)
    sampler = SubsetRandomSampler(train_indices, generator=generator)
    train_loader = DataLoader(dataset, batch_size=24, sampler=sampler)
    val_loader = DataLoader(val_set, batch_size=4, shuffle=True, generator=generator)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        epoch_loss = 0.0
        for i, (x, y) in enumerate(train_loader):
            loss = criterion(model(x), y) / accumulation_steps
            loss.backward()
            epoch_loss += loss.item()
            if (i + 1) % accumulation_steps == 0:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                optimizer.step()
                optimizer.zero_grad()
        losses.append(epoch_loss)
        correct = accuracy(model, val_loader)
        print(
            f"epoch {epoch}: loss {epoch_loss:.4f}, grad norm {norm.item():.3f}, "
            f"val accuracy {correct}/{len(val_set)}"
        )
    test_correct = accuracy(model, DataLoader(test_set, batch_size=8))
    print(f"test accuracy {test_correct}/{len(test_set)}")
    return losses


if __name__ == "__main__":
    train(build())
