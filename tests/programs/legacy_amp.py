"""The automatic mixed precision recipe as countless scripts still write it, with the
``torch.cuda.amp`` spellings: ``GradScaler(enabled=use_amp)`` and
``autocast(enabled=use_amp)``, both disabled on a CPU (a small MLP on random data)."""

import numpy as np
import torch
import torch.nn as nn

use_amp = torch.cuda.is_available()


def build():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))


def train(model, steps=6):
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((steps, 10, 8)).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal((steps, 10, 1)).astype(np.float32))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        with torch.cuda.amp.autocast(enabled=use_amp):
            loss = nn.functional.mse_loss(model(x[step]), y[step])
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    print(f"loss {losses[-1]:.4f}")
    return losses
