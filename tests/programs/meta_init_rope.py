"""A model built without memory first, as torchtitan and gpt-fast build large ones: under
``with torch.device("meta")`` its ``__init__`` computes rotary cos/sin tables (arithmetic on
meta tensors, which only gives shapes), then ``to_empty(device="cpu")`` gives it memory and
``init_weights`` fills the parameters and recomputes the non-persistent buffers; a small
rotary-attention regressor trained with SGD on NumPy data."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def rope_tables(head_dim, max_len, theta=10000.0):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(max_len).float(), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryRegressor(nn.Module):
    def __init__(self, dim=8, max_len=16):
        super().__init__()
        self.dim, self.max_len = dim, max_len
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, 1)
        cos, sin = rope_tables(dim, max_len)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def init_weights(self, buffer_device="cpu"):
        with torch.device(buffer_device):
            self.cos, self.sin = rope_tables(self.dim, self.max_len)
        nn.init.normal_(self.qkv.weight, std=0.02)
        nn.init.zeros_(self.out.bias)

    def forward(self, x):
        T = x.size(1)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        cos, sin = self.cos[:T], self.sin[:T]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        h = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(h[:, -1]).squeeze(-1)


def build():
    with torch.device("meta"):
        model = RotaryRegressor()
    model.to_empty(device="cpu")
    model.init_weights()
    return model


def train(model, steps=5):
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((16, 6, 8)), dtype=torch.float32)
    y = x[:, :, 0].sum(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for step in range(steps):
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: mse {loss.item():.4f}")
    return losses


if __name__ == "__main__":
    train(build())
