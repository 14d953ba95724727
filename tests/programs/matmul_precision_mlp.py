"""The first lines of many current training scripts: ``torch.set_float32_matmul_precision("high")``
to allow TF32 on GPUs that have it (a no-op on a CPU), then an ordinary loop (a small MLP on
random data)."""

import numpy as np
import torch
import torch.nn as nn

torch.set_float32_matmul_precision("high")


def build():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))


def train(model, steps=6):
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((steps, 10, 8)).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal((steps, 10, 1)).astype(np.float32))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x[step]), y[step])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"loss {losses[-1]:.4f}")
    return losses
