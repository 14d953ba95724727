"""Weight averaging for a small regression MLP with BatchNorm, as PyTorch's SWA recipe writes it:
a OneCycleLR warm phase, then SGD under SWALR while ``AveragedModel`` keeps both a running SWA
mean and an EMA (``get_ema_multi_avg_fn``, plus an EMA of the BatchNorm buffers through a custom
``avg_fn`` and ``use_buffers``), gradients clipped with ``clip_grad_norm_``; ``update_bn``
recomputes the SWA model's batch statistics, and the averaged models survive ``copy.deepcopy``
and a ``state_dict`` round trip through ``torch.save`` and ``torch.load``. Data is a noisy sine
surface drawn with NumPy; the loader does not shuffle, so both libraries see the same batches."""

import copy
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import OneCycleLR
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.data import DataLoader, TensorDataset


def make_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    y = (
        np.sin(x[:, :1] * x[:, 1:2])
        + 0.5 * np.cos(2 * x[:, 2:])
        + 0.05 * rng.standard_normal((n, 1))
    )
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.float32))


class Regressor(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(3, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x)


def build():
    return Regressor()


def ema_buffers(decay):
    """An avg_fn for ``use_buffers=True``: running statistics are averaged like the weights."""

    def avg_fn(averaged, current, num_averaged):
        return decay * averaged + (1 - decay) * current

    return avg_fn


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    return F.mse_loss(model(x), y).item()


def train(model, epochs=8, swa_start=4):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    x, y = make_data()
    x_val, y_val = make_data(n=128, seed=1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = OneCycleLR(
        optimizer, max_lr=0.1, epochs=swa_start, steps_per_epoch=len(loader), pct_start=0.3
    )
    swa_model = AveragedModel(model)
    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    ema_with_buffers = AveragedModel(model, avg_fn=ema_buffers(0.9), use_buffers=True)
    swa_scheduler = SWALR(optimizer, swa_lr=0.02, anneal_epochs=2, anneal_strategy="cos")
    losses = []
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            total += loss.item() * xb.size(0)
            if epoch < swa_start:
                scheduler.step()
            else:
                ema_model.update_parameters(model)
                ema_with_buffers.update_parameters(model)
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        losses.append(total / len(loader.dataset))
        lr = optimizer.param_groups[0]["lr"]
        print(f"epoch {epoch}: train {losses[-1]:.4f}  lr {lr:.4f}  |g| {grad_norm.item():.3f}")

    update_bn(loader, swa_model, device=device)
    update_bn(loader, ema_model, device=device)
    print(f"swa models averaged: {int(swa_model.n_averaged)}, ema: {int(ema_model.n_averaged)}")

    # the averaged model as one saves and restores it: a copy, and a state_dict into a fresh one
    buffer = io.BytesIO()
    torch.save(swa_model.state_dict(), buffer)
    buffer.seek(0)
    restored = AveragedModel(Regressor().to(device))
    restored.load_state_dict(torch.load(buffer))
    snapshot = copy.deepcopy(ema_with_buffers)
    for name, averaged in [
        ("final", model),
        ("swa", swa_model),
        ("ema", ema_model),
        ("ema+buffers", ema_with_buffers),
        ("restored swa", restored),
        ("copied ema+buffers", snapshot),
    ]:
        losses.append(evaluate(averaged, x_val, y_val))
        print(f"{name} validation mse: {losses[-1]:.4f}")
    plain = copy.deepcopy(swa_model.module)
    plain.load_state_dict(swa_model.module.state_dict())
    losses.append(evaluate(plain, x_val, y_val))
    return losses


if __name__ == "__main__":
    train(build())
