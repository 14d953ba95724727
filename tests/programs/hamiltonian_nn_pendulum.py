"""A Hamiltonian neural network (Greydanus et al., 2019) for the pendulum, as its PyTorch
re-implementations write it: a network maps ``(q, p)`` to one scalar ``H`` per sample, the
vector field ``(dH/dp, -dH/dq)`` comes from ``torch.autograd.grad(H.sum(), z, create_graph=True)``
split with ``chunk``, and the loss compares it with the true time derivatives. Then the learned
field is integrated as a neural ODE with a hand-written RK4 loop (the trajectory stacked with
``torch.stack``) and trained by backpropagating through the solver; last, Sobolev training
matches the field's Jacobian too, computed with ``torch.func.vmap(jacrev(...))`` of a field made
with ``torch.func.grad``, the loss backpropagated into the parameters (float64, states drawn
with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
from torch.func import grad, jacrev, vmap


class HNN(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, hidden),
            nn.Softplus(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, z):
        return self.net(z).squeeze(-1)  # H(q, p), one scalar per sample

    def time_derivative(self, z):
        with torch.enable_grad():
            if not z.requires_grad:
                z = z.requires_grad_(True)
            dH = torch.autograd.grad(self(z).sum(), z, create_graph=True)[0]
        dHdq, dHdp = dH.chunk(2, dim=-1)
        return torch.cat([dHdp, -dHdq], dim=-1)


def build():
    return HNN().double()


def pendulum_field(z):
    q, p = torch.split(z, 1, dim=-1)
    return torch.cat([p, -torch.sin(q)], dim=-1)


def rk4(f, z0, dt, steps):
    trajectory = [z0]
    z = z0
    for _ in range(steps):
        k1 = f(z)
        k2 = f(z + 0.5 * dt * k1)
        k3 = f(z + 0.5 * dt * k2)
        k4 = f(z + dt * k3)
        z = z + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        trajectory.append(z)
    return torch.stack(trajectory)  # (steps + 1, batch, 2)


def field_and_jacobian(model, z):
    """The learned field and its Jacobian at each state, with torch.func."""

    def field(state):
        dq, dp = grad(model)(state).unbind()
        return torch.stack([dp, -dq])

    return vmap(field)(z), vmap(jacrev(field))(z)  # (batch, 2), (batch, 2, 2)


def pendulum_jacobian(z):
    q = z[:, 0]
    zero, one = torch.zeros_like(q), torch.ones_like(q)
    return torch.stack([torch.stack([zero, one], -1), torch.stack([-torch.cos(q), zero], -1)], 1)


def train(model, steps=6, rollout_steps=4):
    rng = np.random.default_rng(0)
    z = torch.from_numpy(rng.uniform(-2, 2, size=(64, 2))).requires_grad_(True)
    dz = pendulum_field(z.detach())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = (model.time_derivative(z) - dz).pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"derivative step {step}: loss {loss.item():.6f}")

    z0 = torch.from_numpy(rng.uniform(-1, 1, size=(16, 2)))
    with torch.no_grad():
        target = rk4(pendulum_field, z0, dt=0.1, steps=10)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(rollout_steps):
        optimizer.zero_grad()
        predicted = rk4(model.time_derivative, z0, dt=0.1, steps=10)
        loss = nn.functional.mse_loss(predicted, target)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        losses.append(loss.item())
        print(f"rollout step {step}: loss {loss.item():.6f}")

    # Sobolev training: match the field's Jacobian too, the loss backpropagated through
    # torch.func's transforms into the parameters they close over
    z_sobolev = z.detach()[:16]
    for step in range(3):
        optimizer.zero_grad()
        field, jacobian = field_and_jacobian(model, z_sobolev)
        loss = nn.functional.mse_loss(field, dz[:16]) + nn.functional.mse_loss(
            jacobian, pendulum_jacobian(z_sobolev)
        )
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"sobolev step {step}: loss {loss.item():.6f}")

    with torch.no_grad():
        energy = model(predicted.detach().reshape(-1, 2)).view(11, 16)
        drift = (energy[-1] - energy[0]).abs().mean()
    divergence = jacobian.detach().diagonal(dim1=-2, dim2=-1).sum(-1).abs().max()
    losses.append(drift.item())
    print(f"energy drift {drift.item():.2e}, max |div| {divergence.item():.1e}")
    return losses


if __name__ == "__main__":
    train(build())
