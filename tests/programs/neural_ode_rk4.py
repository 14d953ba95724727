"""A neural ODE fit to a spiral: an MLP vector field dz/dt = f(t, z), integrated by a fixed-step
classical Runge-Kutta solver written here (no torchdiffeq), each step wrapped in
``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`` with the vector field passed to
it as an argument, so that only the states between steps are kept for backward; the trajectory
is put together with ``torch.stack`` over time. The training windows (random start times, drawn
with NumPy) run a few steps of the true damped spiral; Adam with a
``CosineAnnealingWarmRestarts`` schedule stepped with fractional epochs."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import CosineAnnealingWarmRestarts
from torch.utils.checkpoint import checkpoint


def true_spiral(t, z0=(2.0, 0.0), decay=0.1, omega=1.0):
    """The exact solution of dz/dt = [[-decay, -omega], [omega, -decay]] z."""
    r = np.exp(-decay * t)
    c, s = np.cos(omega * t), np.sin(omega * t)
    x = r * (c * z0[0] - s * z0[1])
    y = r * (s * z0[0] + c * z0[1])
    return np.stack([x, y], axis=-1).astype(np.float32)


class ODEFunc(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, t, z):
        return self.net(z)  # an autonomous field: t is unused


def rk4_step(func, t, dt, z):
    k1 = func(t, z)
    k2 = func(t + dt / 2, z + dt / 2 * k1)
    k3 = func(t + dt / 2, z + dt / 2 * k2)
    k4 = func(t + dt, z + dt * k3)
    return z + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def odeint(func, z0, t):
    """The states at every time in ``t``: shape ``(len(t), *z0.shape)``."""
    zs = [z0]
    for i in range(len(t) - 1):
        dt = t[i + 1] - t[i]
        zs.append(checkpoint(rk4_step, func, t[i], dt, zs[-1], use_reentrant=False))
    return torch.stack(zs)


def build():
    return ODEFunc()


def train(func, iterations=24, batch_size=16, window=8):
    t = torch.linspace(0.0, 6.0, 61)
    true_z = torch.from_numpy(true_spiral(t.numpy()))  # (61, 2)
    rng = np.random.default_rng(0)
    optimizer = torch.optim.Adam(func.parameters(), lr=1e-2)
    iters_per_epoch = 4
    scheduler = CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2, eta_min=1e-4)
    losses = []
    for it in range(iterations):
        starts = torch.from_numpy(rng.integers(0, len(t) - window, batch_size))
        batch_z0 = true_z[starts]  # (B, 2)
        batch_t = t[:window]
        batch_z = torch.stack([true_z[starts + i] for i in range(window)])  # (T, B, 2)
        optimizer.zero_grad()
        pred_z = odeint(func, batch_z0, batch_t)
        # squared error, not the absolute one: |r|'s gradient flips sign for residuals near 0,
        # and float32 rounding (which differs between libraries) would then decide it
        loss = F.mse_loss(pred_z, batch_z)
        loss.backward()
        optimizer.step()
        scheduler.step(it / iters_per_epoch)
        losses.append(loss.item())
        if (it + 1) % 8 == 0:
            with torch.no_grad():
                whole = odeint(func, true_z[0], t)
                test_loss = F.mse_loss(whole, true_z).item()
            print(
                f"iter {it + 1:3d} | lr {scheduler.get_last_lr()[0]:.5f} | "
                f"train loss {loss.item():.4f} | whole-trajectory loss {test_loss:.4f}"
            )
            losses.append(test_loss)
    return losses


if __name__ == "__main__":
    train(build())
