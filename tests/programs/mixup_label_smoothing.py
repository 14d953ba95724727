"""A small CNN trained with mixup (lambda from a Beta draw, a random pairing of the batch) and
label smoothing on both targets, then checked with soft targets; AdamW with no weight decay on
biases and norm weights, a linear warmup then cosine schedule through ``LambdaLR``, gradient
accumulation over two micro-batches and gradient clipping. Generated images; every random draw
is NumPy's, so both libraries see the same."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

NUM_CLASSES = 4


class SmallCNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.LayerNorm(16), nn.Linear(16, num_classes))

    def forward(self, x):
        return self.head(self.features(x))


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name.endswith(".bias"):  # biases and norm weights
            no_decay.append(param)
        else:
            decay.append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def warmup_cosine(warmup_steps, total_steps):
    def lr_lambda(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return lr_lambda


def mixup(x, y, rng, alpha=0.4):
    lam = float(rng.beta(alpha, alpha))
    index = torch.from_numpy(rng.permutation(x.shape[0]))
    return lam * x + (1 - lam) * x[index], y, y[index], lam


def make_data(rng, n=64):
    """Each class is a bright square in its own quadrant of an 8x8 image, plus noise."""
    y = rng.integers(0, NUM_CLASSES, n)
    x = 0.3 * rng.standard_normal((n, 1, 8, 8))
    for i, c in enumerate(y):
        row, col = divmod(int(c), 2)
        x[i, 0, 4 * row : 4 * row + 4, 4 * col : 4 * col + 4] += 1.0
    return torch.tensor(x.astype(np.float32)), torch.tensor(y)


def build():
    return SmallCNN()


def train(model, epochs=3, batch_size=16, accumulation_steps=2):
    rng = np.random.default_rng(0)
    x_train, y_train = make_data(rng)
    x_val, y_val = make_data(rng, n=32)
    optimizer = torch.optim.AdamW(param_groups(model, weight_decay=0.05), lr=1e-2)
    micro_batch = batch_size // accumulation_steps
    steps_per_epoch = len(x_train) // batch_size
    scheduler = LambdaLR(optimizer, warmup_cosine(2, epochs * steps_per_epoch))
    losses = []
    for epoch in range(epochs):
        model.train()
        order = torch.from_numpy(rng.permutation(len(x_train)))
        for step in range(steps_per_epoch):
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0
            for micro in range(accumulation_steps):
                start = step * batch_size + micro * micro_batch
                idx = order[start : start + micro_batch]
                inputs, targets_a, targets_b, lam = mixup(x_train[idx], y_train[idx], rng)
                logits = model(inputs)
                loss = lam * F.cross_entropy(logits, targets_a, label_smoothing=0.1) + (
                    1 - lam
                ) * F.cross_entropy(logits, targets_b, label_smoothing=0.1)
                (loss / accumulation_steps).backward()
                step_loss += loss.item() / accumulation_steps
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step()
            losses.append(step_loss)
            losses.append(grad_norm.item())
        model.eval()
        with torch.no_grad():
            logits = model(x_val)
            # the same check with the mixed, smoothed targets written as probabilities
            soft = F.one_hot(y_val, NUM_CLASSES).float() * 0.9 + 0.1 / NUM_CLASSES
            soft_loss = F.cross_entropy(logits, soft)
            accuracy = (logits.argmax(1) == y_val).float().mean().item()
        losses.append(soft_loss.item())
        print(
            f"epoch {epoch}: train loss {step_loss:.4f} val soft-target loss "
            f"{soft_loss.item():.4f} accuracy {accuracy:.3f} lr {scheduler.get_last_lr()[0]:.5f}"
        )
    return losses


if __name__ == "__main__":
    train(build())
