"""A set classifier built on ``nn.MultiheadAttention`` called directly, as set-transformer
style repos do: padded sets of points, a self-attention block with a bool ``attn_mask`` and a
bool ``key_padding_mask`` (True: may not attend), a second with a float ``attn_mask`` (a
distance bias in the order the points were listed) and a float key padding mask of -inf,
``need_weights=True, average_attn_weights=False`` for each head's weights, residual
connections with ``LayerNorm`` and an MLP, a masked mean over the set, cross entropy and
AdamW (made-up sets drawn with NumPy: is the set's spread larger than its mean's size?)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MAX_SET, DIM = 6, 16


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x, attn_mask, key_padding_mask):
        out, weights = self.attn(
            x, x, x, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
            need_weights=True, average_attn_weights=False,
        )  # fmt: skip
        x = self.norm1(x + out)
        return self.norm2(x + self.mlp(x)), weights


class SetClassifier(nn.Module):
    def __init__(self, dim=DIM, heads=4, classes=2):
        super().__init__()
        self.embed = nn.Linear(2, dim)
        self.block1 = Block(dim, heads)
        self.block2 = Block(dim, heads)
        self.head = nn.Linear(dim, classes)
        # the first block: each point sees the points listed up to it (True: masked out)
        self.register_buffer("causal", torch.ones(MAX_SET, MAX_SET, dtype=torch.bool).triu(1))
        position = torch.arange(MAX_SET, dtype=torch.float32)
        self.register_buffer("bias", -0.5 * (position[:, None] - position[None, :]).abs())

    def forward(self, points, padding):
        x = self.embed(points)
        x, w1 = self.block1(x, self.causal, padding)
        float_padding = torch.zeros(padding.shape).masked_fill(padding, float("-inf"))
        x, w2 = self.block2(x, self.bias, float_padding)
        keep = (~padding).unsqueeze(-1).float()
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1)
        return self.head(pooled), w2


def make_batch(rng, n):
    points = np.zeros((n, MAX_SET, 2), dtype=np.float32)
    padding = np.ones((n, MAX_SET), dtype=bool)
    labels = np.zeros(n, dtype=np.int64)
    for row in range(n):
        size = rng.integers(1, MAX_SET + 1)
        points[row, :size] = rng.normal(rng.normal(0, 1, 2), rng.uniform(0.2, 2.0), (size, 2))
        padding[row, :size] = False
        labels[row] = points[row, :size].std() > np.abs(points[row, :size].mean())
    return torch.from_numpy(points), torch.from_numpy(padding), torch.from_numpy(labels)


def build():
    return SetClassifier()


def train(model, epochs=5):
    rng = np.random.default_rng(0)
    batches = [make_batch(rng, 16) for _ in range(4)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    losses = []
    for epoch in range(epochs):
        correct = 0
        for points, padding, labels in batches:
            logits, weights = model(points, padding)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            correct += (logits.argmax(dim=1) == labels).sum().item()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {losses[-1]:.4f} accuracy {correct / 64:.3f}")
        print("  head weights", tuple(weights.shape), f"{weights[0, :, 0].sum().item():.4f}")
        losses.append(weights[:, :, 0, 0].mean().item())
    return losses


if __name__ == "__main__":
    train(build())
