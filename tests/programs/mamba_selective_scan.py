"""A tiny Mamba language model (Gu & Dao, 2023) as the minimal single-file PyTorch ports write
it: ``nn.RMSNorm`` pre-norm residual blocks, an input projection split into ``x`` and a gate
``res`` with ``split``, a causal depthwise ``nn.Conv1d`` (padding ``d_conv - 1`` then sliced
back), the input-dependent ``delta``, ``B``, ``C`` from one projection, ``F.softplus`` on
``delta``, ``A = -torch.exp(A_log)`` with ``A_log`` initialized from ``torch.arange(...).repeat``,
the discretized ``exp(delta * A)`` by ``einsum``, a sequential selective scan in a Python loop
collected with ``torch.stack``, the skip ``D``, a SiLU gate, and an embedding tied to the head;
trained with AdamW on a copy-with-delay task."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MambaBlock(nn.Module):
    def __init__(self, d_model, d_state=4, expand=2, d_conv=3):
        super().__init__()
        self.d_inner = expand * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=False)
        self.conv1d = nn.Conv1d(
            self.d_inner, self.d_inner, kernel_size=d_conv, groups=self.d_inner, padding=d_conv - 1
        )
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + d_state * 2, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        A = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def forward(self, x):  # (b, l, d)
        b, l, _ = x.shape
        x_and_res = self.in_proj(x)
        x, res = x_and_res.split(split_size=[self.d_inner, self.d_inner], dim=-1)
        x = self.conv1d(x.transpose(1, 2))[:, :, :l].transpose(1, 2)  # causal: drop the tail
        x = F.silu(x)
        y = self.ssm(x)
        return self.out_proj(y * F.silu(res))

    def ssm(self, x):
        n = self.A_log.shape[1]
        A = -torch.exp(self.A_log.float())  # (d_in, n)
        x_dbl = self.x_proj(x)
        delta, B, C = x_dbl.split(split_size=[self.dt_rank, n, n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))  # (b, l, d_in)
        return self.selective_scan(x, delta, A, B, C, self.D.float())

    def selective_scan(self, u, delta, A, B, C, D):
        b, l, d_in = u.shape
        deltaA = torch.exp(torch.einsum("bld,dn->bldn", delta, A))
        deltaB_u = torch.einsum("bld,bln,bld->bldn", delta, B, u)
        state = torch.zeros((b, d_in, A.shape[1]), device=deltaA.device)
        ys = []
        for i in range(l):
            state = deltaA[:, i] * state + deltaB_u[:, i]
            ys.append(torch.einsum("bdn,bn->bd", state, C[:, i, :]))
        y = torch.stack(ys, dim=1)  # (b, l, d_in)
        return y + u * D


class ResidualBlock(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.mixer = MambaBlock(d_model)
        self.norm = nn.RMSNorm(d_model, eps=1e-5)

    def forward(self, x):
        return self.mixer(self.norm(x)) + x


class Mamba(nn.Module):
    def __init__(self, vocab_size=8, d_model=16, n_layer=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList([ResidualBlock(d_model) for _ in range(n_layer)])
        self.norm_f = nn.RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight  # tied

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm_f(x))


def build():
    return Mamba()


def delayed_copy(rng, batch, length=12, delay=3, vocab=8):
    tokens = rng.integers(1, vocab, size=(batch, length))
    targets = np.zeros_like(tokens)
    targets[:, delay:] = tokens[:, :-delay]
    return torch.from_numpy(tokens), torch.from_numpy(targets)


def train(model, steps=10):
    rng = np.random.default_rng(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, betas=(0.9, 0.95))
    losses = []
    for step in range(steps):
        tokens, targets = delayed_copy(rng, 16)
        logits = model(tokens)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % 3 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    return losses


if __name__ == "__main__":
    train(build())
