"""A training loop in today's style: ``AdamW(..., fused=torch.cuda.is_available())`` (the fused
kernel where there is a GPU, the default implementation on a CPU) and the learning rate read
from ``scheduler.get_last_lr()`` (a small MLP on random data)."""

import numpy as np
import torch
import torch.nn as nn


def build():
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1))


def train(model, steps=6):
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((steps, 10, 8)).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal((steps, 10, 1)).astype(np.float32))
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=1e-2, weight_decay=0.1, fused=torch.cuda.is_available()
    )
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses = []
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x[step]), y[step])
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    print(f"loss {losses[-1]:.4f} lr {scheduler.get_last_lr()[0]}")
    return losses
