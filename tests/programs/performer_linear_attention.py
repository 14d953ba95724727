"""A Performer-style language model (Choromanski et al., 2021) as its small PyTorch
re-implementations write it: positive random features ``exp(w.x - |x|^2/2)`` with the
projection drawn once and kept as a buffer (orthogonalized by ``torch.linalg.qr``),
non-causal attention by two ``torch.einsum`` contractions, causal attention by prefix sums of
the key-value outer products with ``torch.cumsum``, a stabilizing max subtracted under
``detach``; a next-character task trained with AdamW and a ``OneCycleLR`` schedule, and the
perplexity via ``math.exp`` of a held-out loss."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def orthogonal_features(rng, num_features, dim):
    blocks = []
    for _ in range(math.ceil(num_features / dim)):
        q, _ = torch.linalg.qr(torch.from_numpy(rng.standard_normal((dim, dim)).astype(np.float32)))
        blocks.append(q.T)
    norms = torch.from_numpy(rng.chisquare(dim, size=num_features).astype(np.float32)).sqrt()
    return torch.cat(blocks)[:num_features] * norms.unsqueeze(1)


def softmax_kernel(x, projection, eps=1e-4):
    """Positive random features of x: (batch, heads, seq, dim) -> (batch, heads, seq, features)."""
    x = x * x.shape[-1] ** -0.25
    wx = torch.einsum("bhnd,md->bhnm", x, projection)
    sq_norm = (x**2).sum(dim=-1, keepdim=True) / 2
    stabilizer = wx.amax(dim=(-1, -2), keepdim=True).detach()
    return torch.exp(wx - sq_norm - stabilizer) / math.sqrt(projection.shape[0]) + eps


def linear_attention(q, k, v):
    kv = torch.einsum("bhnm,bhnd->bhmd", k, v)
    normalizer = 1.0 / torch.einsum("bhnm,bhm->bhn", q, k.sum(dim=2))
    return torch.einsum("bhnm,bhmd,bhn->bhnd", q, kv, normalizer)


def causal_linear_attention(q, k, v):
    kv = torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=2)  # (b, h, n, m, d) prefix sums
    k_cumsum = k.cumsum(dim=2)
    normalizer = 1.0 / (q * k_cumsum).sum(dim=-1, keepdim=True)
    return torch.einsum("bhnm,bhnmd->bhnd", q, kv) * normalizer


class PerformerAttention(nn.Module):
    def __init__(self, dim, heads, num_features, causal, seed):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        projection = orthogonal_features(np.random.default_rng(seed), num_features, dim // heads)
        self.register_buffer("projection", projection)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        q, k = softmax_kernel(q, self.projection), softmax_kernel(k, self.projection)
        attend = causal_linear_attention if self.causal else linear_attention
        out = attend(q, k, v).transpose(1, 2).reshape(b, n, d)
        return self.to_out(out)


class PerformerLM(nn.Module):
    def __init__(self, vocab=12, dim=16, heads=2, depth=2, seq_len=16):
        super().__init__()
        self.token_emb = nn.Embedding(vocab, dim)
        self.pos_emb = nn.Parameter(torch.zeros(1, seq_len, dim))
        self.layers = nn.ModuleList()
        for i in range(depth):
            self.layers.append(
                nn.ModuleList(
                    [
                        nn.LayerNorm(dim),
                        PerformerAttention(dim, heads, num_features=12, causal=True, seed=i),
                        nn.LayerNorm(dim),
                        nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)),
                    ]
                )
            )
        self.summary = PerformerAttention(dim, heads, num_features=12, causal=False, seed=9)
        self.to_logits = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.token_emb(tokens) + self.pos_emb[:, : tokens.shape[1]]
        for norm1, attention, norm2, feed_forward in self.layers:
            x = x + attention(norm1(x))
            x = x + feed_forward(norm2(x))
        return self.to_logits(x), self.summary(x).mean(dim=1)


def build():
    return PerformerLM()


def sequences(rng, batch, seq_len=17, vocab=12):
    start = rng.integers(0, vocab, size=(batch, 1))
    step = rng.integers(1, 3, size=(batch, 1))
    return torch.from_numpy((start + step * np.arange(seq_len)) % vocab)


def train(model, steps=12):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=steps)
    losses = []
    for step in range(steps):
        data = sequences(rng, 16)
        logits, summary = model(data[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), data[:, 1:].reshape(-1))
        loss = loss + 1e-3 * summary.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 3 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        data = sequences(rng, 16)
        logits, _ = model(data[:, :-1])
        held_out = F.cross_entropy(logits.transpose(1, 2), data[:, 1:]).item()
    print(f"held-out perplexity {math.exp(held_out):.3f}")
    return losses + [held_out]


if __name__ == "__main__":
    train(build())
