"""A deep residual MLP trained with activation checkpointing, as memory-bound training scripts
write one: pre-norm residual blocks with dropout inside, the first half run one by one under
``torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)``, the second half as an
``nn.Sequential`` under ``checkpoint_sequential``. Before training, the gradients of one batch
with dropout on are compared with those of the same model run without checkpointing from the
same seed (the recomputation must draw the same dropout masks); then SGD with Nesterov momentum
and ``CosineAnnealingLR`` stepped per batch, with the Dropout modules put in eval mode while
training, as their random masks differ between libraries (Gaussian clusters drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class ResidualBlock(nn.Module):
    def __init__(self, dim, hidden, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.dropout(F.gelu(self.fc1(self.norm(x))))
        return x + self.fc2(h)


class DeepResMLP(nn.Module):
    def __init__(self, in_features=10, dim=32, hidden=64, depth=8, num_classes=4, dropout=0.2):
        super().__init__()
        self.stem = nn.Linear(in_features, dim)
        self.blocks = nn.ModuleList(ResidualBlock(dim, hidden, dropout) for _ in range(depth // 2))
        self.tail = nn.Sequential(*[ResidualBlock(dim, hidden, dropout) for _ in range(depth // 2)])
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_classes))
        self.use_checkpoint = True

    def forward(self, x):
        x = self.stem(x)
        checkpointed = self.use_checkpoint and self.training
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if checkpointed else block(x)
        if checkpointed:
            x = checkpoint_sequential(self.tail, 2, x, use_reentrant=False)
        else:
            x = self.tail(x)
        return self.head(x)


def make_data(rng, n, num_classes=4, in_features=10):
    centers = rng.normal(0, 2, (num_classes, in_features))
    labels = rng.integers(0, num_classes, n)
    points = centers[labels] + rng.normal(0, 1.5, (n, in_features))
    return torch.from_numpy(points.astype(np.float32)), torch.from_numpy(labels)


def gradients(model, x, y, seed):
    model.zero_grad()
    torch.manual_seed(seed)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss.item(), [p.grad.clone() for p in model.parameters()]


def check_recomputation(model, x, y):
    """The largest difference between the gradients with and without checkpointing, dropout on."""
    model.train()
    model.use_checkpoint = True
    loss, grads = gradients(model, x, y, seed=123)
    model.use_checkpoint = False
    plain_loss, plain_grads = gradients(model, x, y, seed=123)
    model.use_checkpoint = True
    model.zero_grad()
    diff = max((g - p).abs().max().item() for g, p in zip(grads, plain_grads))
    print(f"checkpointed loss {loss:.5f} plain {plain_loss:.5f} max grad diff {diff:.2e}")
    return abs(loss - plain_loss), diff


def build():
    return DeepResMLP()


def train(model, epochs=4, batch_size=32):
    rng = np.random.default_rng(0)
    x, y = make_data(rng, 128)
    losses = list(check_recomputation(model, x[:batch_size], y[:batch_size]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    steps = epochs * (len(x) // batch_size)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=1e-3)
    model.train()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.eval()
    for epoch in range(epochs):
        total = 0.0
        for i in range(0, len(x), batch_size):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[i : i + batch_size]), y[i : i + batch_size])
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {total / 4:.4f} lr {scheduler.get_last_lr()[0]:.5f}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    print(f"train accuracy {accuracy:.3f}")
    return losses + [accuracy]


if __name__ == "__main__":
    train(build())
