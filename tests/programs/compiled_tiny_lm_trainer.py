"""A nanoGPT-style loop on a tiny character model: ``model = torch.compile(model)`` on a model
whose output layer shares the embedding's weight, AdamW with decay and no-decay parameter
groups, a ``Trainer`` whose ``compute_loss`` method is decorated with ``@torch.compile`` (label
smoothing passed as a Python float), an evaluation function under both ``@torch.no_grad()`` and
``@torch.compile``, and a linear warmup by ``LambdaLR``. The compile uses the ``aot_eager``
backend: no C++ compiler, a second on a CPU."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = "the quick brown fox jumps over the lazy dog and the cat naps in the warm sun "


class TinyLM(nn.Module):
    def __init__(self, vocab, dim=16, context=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(context, dim))
        self.mix = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU())
        self.proj = nn.Linear(4 * dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.out.weight = self.embed.weight  # tied, as GPT-2's

    def forward(self, idx):
        h = self.embed(idx) + self.position[: idx.shape[1]]
        causal = torch.tril(torch.ones(idx.shape[1], idx.shape[1])) / torch.arange(
            1, idx.shape[1] + 1
        ).unsqueeze(1)
        h = h + causal @ self.proj(self.mix(h))  # a running mean over earlier positions
        return self.out(self.norm(h))


class Trainer:
    def __init__(self, model, smoothing):
        self.model = model
        self.smoothing = smoothing

    @torch.compile(backend="aot_eager")
    def compute_loss(self, logits, targets, smoothing):
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), label_smoothing=smoothing)


@torch.no_grad()
@torch.compile(backend="aot_eager")
def evaluate(model, idx, targets):
    logits = model(idx)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def vocabulary():
    return sorted(set(TEXT))


def build():
    return TinyLM(len(vocabulary()))


def batch(data, rng, size=6, context=8):
    starts = rng.integers(0, len(data) - context - 1, size)
    x = np.stack([data[s : s + context] for s in starts])
    y = np.stack([data[s + 1 : s + context + 1] for s in starts])
    return torch.from_numpy(x), torch.from_numpy(y)


def train(model, steps=16):
    stoi = {c: i for i, c in enumerate(vocabulary())}
    data = np.array([stoi[c] for c in TEXT], dtype=np.int64)
    rng = np.random.default_rng(0)
    compiled = torch.compile(model, backend="aot_eager")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=3e-2,
        betas=(0.9, 0.95),
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 4))
    trainer = Trainer(compiled, smoothing=0.1)
    val_x, val_y = batch(data, np.random.default_rng(1), size=10)
    losses = []
    for step in range(steps):
        x, y = batch(data, rng)
        smoothing = trainer.smoothing if step < steps // 2 else 0.0
        loss = trainer.compute_loss(trainer.model(x), y, smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 4 == 3:
            val = evaluate(compiled, val_x, val_y).item()
            losses.append(val)
            print(f"step {step}: loss {loss.item():.4f} val {val:.4f}")
    tied = model.out.weight is model.embed.weight
    print(f"weights still tied: {tied}")
    return losses


if __name__ == "__main__":
    train(build())
