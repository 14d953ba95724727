"""A Set Transformer (Lee et al., 2019) as its reference PyTorch code is built: MAB blocks of
``nn.MultiheadAttention(batch_first=True)`` with LayerNorms and a row-wise feed-forward, ISAB
with learned inducing points and PMA with learned seeds, both ``nn.Parameter``s initialized by
``xavier_uniform_`` and ``repeat``ed over the batch; trained to output the maximum of each set of
a variable size (sets padded and masked through ``key_padding_mask``), with an L1 loss, Adam and
``StepLR``; a permutation check (shuffled sets give the same outputs) under ``torch.no_grad``."""

import numpy as np
import torch
import torch.nn as nn


class MAB(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.attention = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.ln0 = nn.LayerNorm(dim)
        self.ln1 = nn.LayerNorm(dim)
        self.rff = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())

    def forward(self, Q, K, key_padding_mask=None):
        attended, _ = self.attention(Q, K, K, key_padding_mask=key_padding_mask)
        H = self.ln0(Q + attended)
        return self.ln1(H + self.rff(H))


class ISAB(nn.Module):
    def __init__(self, dim, num_heads, num_inds):
        super().__init__()
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim, num_heads)
        self.mab1 = MAB(dim, num_heads)

    def forward(self, X, mask=None):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X, key_padding_mask=mask)
        return self.mab1(X, H)


class PMA(nn.Module):
    def __init__(self, dim, num_heads, num_seeds):
        super().__init__()
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, num_heads)

    def forward(self, X, mask=None):
        return self.mab(self.S.repeat(X.size(0), 1, 1), X, key_padding_mask=mask)


class SetTransformer(nn.Module):
    def __init__(self, dim_input=1, dim_hidden=16, num_heads=4, num_inds=4):
        super().__init__()
        self.embed = nn.Linear(dim_input, dim_hidden)
        self.isab1 = ISAB(dim_hidden, num_heads, num_inds)
        self.isab2 = ISAB(dim_hidden, num_heads, num_inds)
        self.pma = PMA(dim_hidden, num_heads, num_seeds=1)
        self.out = nn.Linear(dim_hidden, 1)

    def forward(self, X, mask):
        H = self.isab2(self.isab1(self.embed(X), mask), mask)
        return self.out(self.pma(H, mask)).squeeze(-1).squeeze(-1)


def build():
    return SetTransformer()


def make_sets(rng, batch=16, max_size=10):
    sizes = rng.integers(3, max_size + 1, size=batch)
    values = rng.uniform(-2, 2, size=(batch, max_size, 1)).astype(np.float32)
    mask = np.arange(max_size)[None, :] >= sizes[:, None]  # True marks padding
    values[mask] = 0
    targets = np.where(mask, -np.inf, values[..., 0]).max(axis=1).astype(np.float32)
    return torch.from_numpy(values), torch.from_numpy(mask), torch.from_numpy(targets)


def train(model, steps=12):
    rng = np.random.default_rng(0)
    criterion = nn.L1Loss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    losses = []
    for step in range(steps):
        X, mask, y = make_sets(rng)
        loss = criterion(model(X, mask), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 4 == 0:
            print(f"step {step}: L1 {loss.item():.4f}, lr {scheduler.get_last_lr()[0]:.5f}")
    model.eval()
    with torch.no_grad():
        X, mask, y = make_sets(rng)
        order = torch.from_numpy(rng.permutation(X.shape[1]))
        same = torch.allclose(model(X, mask), model(X[:, order], mask[:, order]), atol=1e-5)
        losses.append(criterion(model(X, mask), y).item())
    print(f"test L1 {losses[-1]:.4f}, permutation invariant: {same}")
    return losses + [float(same)]


if __name__ == "__main__":
    train(build())
