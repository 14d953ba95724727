"""A forecaster fed from a stream, with the training-loop idioms of small research repos: an
``IterableDataset`` of sliding windows over several series, sharded by
``get_worker_info()`` (one shard without workers), chained by ``ChainDataset``; a
``DataLoader`` batching it with ``drop_last``; weights initialised by ``model.apply``; an
exponential moving average of the weights kept with ``torch._foreach_lerp_`` on a frozen copy
(``requires_grad_(False)``); gradient accumulation with ``loss / accum_steps``; and early
stopping on the validation loss of the EMA weights, the best ``state_dict`` kept with
``copy.deepcopy`` and loaded back at the end."""

import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import ChainDataset, DataLoader, IterableDataset, get_worker_info

WINDOW, HORIZON = 12, 3


def make_series(seed, n_series=4, length=80):
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    series = [
        np.sin(2 * np.pi * t / rng.uniform(10, 20) + rng.uniform(0, 6))
        + 0.1 * rng.standard_normal(length)
        for _ in range(n_series)
    ]
    return np.stack(series).astype(np.float32)


class WindowStream(IterableDataset):
    """(window, next HORIZON values) pairs, series by series; each worker takes every
    ``num_workers``-th series."""

    def __init__(self, series, stride):
        self.series, self.stride = series, stride

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        for row in self.series[worker::workers]:
            for start in range(0, len(row) - WINDOW - HORIZON + 1, self.stride):
                window = torch.from_numpy(row[start : start + WINDOW])
                target = torch.from_numpy(row[start + WINDOW : start + WINDOW + HORIZON])
                yield window.unsqueeze(-1), target


class Forecaster(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.conv = nn.Conv1d(1, hidden, kernel_size=3, padding=1)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, HORIZON))

    def forward(self, x):  # x: (batch, WINDOW, 1)
        features = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        _, h_n = self.gru(features)
        return self.head(h_n[-1])


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight, gain=nn.init.calculate_gain("relu"))
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Conv1d):
        nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        nn.init.constant_(module.bias, 0.01)


def build():
    return Forecaster().apply(init_weights)


@torch.no_grad()
def update_ema(ema_model, model, decay):
    ema_params, params = list(ema_model.parameters()), list(model.parameters())
    torch._foreach_lerp_(ema_params, params, 1.0 - decay)


@torch.no_grad()
def evaluate(model, loader):
    total, count = 0.0, 0
    for x, y in loader:
        total += F.mse_loss(model(x), y, reduction="sum").item()
        count += y.numel()
    return total / count


def train(model, epochs=10, accum_steps=2, patience=2, min_delta=5e-3):
    train_stream = ChainDataset(
        [WindowStream(make_series(1), stride=2), WindowStream(make_series(2), stride=3)]
    )
    val_stream = WindowStream(make_series(3, n_series=2), stride=4)
    train_loader = DataLoader(train_stream, batch_size=16, drop_last=True)
    val_loader = DataLoader(val_stream, batch_size=32)
    ema = copy.deepcopy(model).requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=1e-2)
    best_loss, best_state, bad_epochs, losses = math.inf, None, 0, []
    for epoch in range(epochs):
        model.train()
        optimizer.zero_grad()
        for i, (x, y) in enumerate(train_loader):
            loss = F.smooth_l1_loss(model(x), y, beta=0.5) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
                update_ema(ema, model, decay=0.8)
            losses.append(loss.item() * accum_steps)
        val_loss = evaluate(ema.eval(), val_loader)
        losses.append(val_loss)
        print(f"epoch {epoch}: train {losses[-2]:.4f} val (EMA) {val_loss:.4f}")
        if val_loss < best_loss - min_delta:
            best_loss, best_state, bad_epochs = val_loss, copy.deepcopy(ema.state_dict()), 0
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                print(f"early stop after epoch {epoch}")
                break
    model.load_state_dict(best_state)
    losses.append(evaluate(model.eval(), val_loader))
    print(f"best validation loss {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    train(build())
