"""Mixed precision on a CPU, as PyTorch's autocast recipe writes it for machines without a GPU:
the forward pass and the loss under ``torch.autocast(device_type="cpu", dtype=torch.bfloat16)``
(convolutions, linear layers and matmuls run in bfloat16, softmax, layer norm and the loss in
float32), the backward outside it, no ``GradScaler`` (bfloat16 keeps float32's range), the
dtypes of the intermediate results checked once, and an evaluation under ``torch.no_grad``
that autocasts too; a conv stem feeding one self-attention block through a LayerNorm, AdamW."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# PyTorch's layer_norm backward on a bfloat16 input gives the (float32) weight and bias
# gradients a percent off their exact sums, scratchgrad's are float32 sums; the losses part by
# about 1e-4 after the first update
FLOAT32_RTOL = 2e-3


class ConvAttention(nn.Module):
    def __init__(self, channels=16, classes=4):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, channels, 3, stride=2, padding=1),
            nn.GELU(),
            nn.Conv2d(channels, channels, 1),
        )
        self.norm = nn.LayerNorm(channels)
        self.qkv = nn.Linear(channels, 3 * channels)
        self.proj = nn.Linear(channels, channels)
        self.head = nn.Linear(channels, classes)

    def forward(self, x, check=False):
        tokens = self.stem(x).flatten(2).transpose(1, 2)  # (batch, 16 tokens, channels)
        q, k, v = self.qkv(self.norm(tokens)).chunk(3, dim=-1)
        attention = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        tokens = tokens + self.proj(attention @ v)
        logits = self.head(tokens.mean(dim=1))
        if check:
            assert tokens.dtype == attention.dtype == logits.dtype == torch.bfloat16
        return logits


def build():
    return ConvAttention()


def train(model, steps=8):
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((steps, 16, 3, 8, 8)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 4, (steps, 16)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step, (x, y) in enumerate(zip(images, labels)):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            logits = model(x, check=step == 0)
            loss = F.cross_entropy(logits, y)
        assert loss.dtype == torch.float32
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.4f}")
    with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(images[0])
    losses.append(F.cross_entropy(logits.float(), labels[0]).item())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    return losses


if __name__ == "__main__":
    train(build())
