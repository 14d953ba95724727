"""A temporal convolutional network forecasting the next value of a time series, as the TCN
repos build one: residual blocks of dilated ``Conv1d`` made causal by left padding with
``F.pad``, each convolution under ``nn.utils.parametrizations.weight_norm``, GELU, a 1x1
convolution where the channels change, ``SmoothL1Loss`` (Huber), Adam with ``amsgrad=True``
stepped down by ``StepLR``, and the test MAE in eval mode (made-up noisy sums of sines drawn
with NumPy, cut into windows in a NumPy-drawn order)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm


class CausalBlock(nn.Module):
    def __init__(self, n_in, n_out, kernel_size, dilation):
        super().__init__()
        self.left = (kernel_size - 1) * dilation  # pad only the past: no step sees its future
        self.conv1 = weight_norm(nn.Conv1d(n_in, n_out, kernel_size, dilation=dilation))
        self.conv2 = weight_norm(nn.Conv1d(n_out, n_out, kernel_size, dilation=dilation))
        self.downsample = nn.Conv1d(n_in, n_out, 1) if n_in != n_out else None

    def forward(self, x):
        out = F.gelu(self.conv1(F.pad(x, (self.left, 0))))
        out = F.gelu(self.conv2(F.pad(out, (self.left, 0))))
        res = x if self.downsample is None else self.downsample(x)
        return F.gelu(out + res)


class TCN(nn.Module):
    def __init__(self, channels=(8, 8, 8), kernel_size=3):
        super().__init__()
        blocks, n_in = [], 1
        for i, n_out in enumerate(channels):
            blocks.append(CausalBlock(n_in, n_out, kernel_size, dilation=2**i))
            n_in = n_out
        self.network = nn.Sequential(*blocks)
        self.linear = nn.Linear(n_in, 1)

    def forward(self, x):  # x: (batch, 1, window)
        return self.linear(self.network(x)[:, :, -1]).squeeze(-1)


def make_windows(rng, n_steps=400, window=24):
    t = np.arange(n_steps)
    series = np.sin(t / 6) + 0.5 * np.sin(t / 17 + 1) + rng.normal(0, 0.05, n_steps)
    starts = np.arange(n_steps - window)
    x = np.stack([series[s : s + window] for s in starts])[:, None].astype(np.float32)
    y = series[starts + window].astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def build():
    return TCN()


def train(model, epochs=4, batch_size=32):
    rng = np.random.default_rng(0)
    x, y = make_windows(rng)
    x_train, y_train, x_test, y_test = x[:288], y[:288], x[288:], y[288:]
    criterion = nn.SmoothL1Loss(beta=0.5)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005, amsgrad=True)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses = []
    for epoch in range(epochs):
        model.train()
        order = torch.from_numpy(rng.permutation(len(x_train)))
        total = 0.0
        for i in range(0, len(order), batch_size):
            idx = order[i : i + batch_size]
            optimizer.zero_grad()
            loss = criterion(model(x_train[idx]), y_train[idx])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        scheduler.step()
        model.eval()
        with torch.no_grad():
            mae = (model(x_test) - y_test).abs().mean().item()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.4f} "
              f"loss {total / len(x_train):.5f} test MAE {mae:.4f}")  # fmt: skip
        losses += [total / len(x_train), mae]
    return losses


if __name__ == "__main__":
    train(build())
