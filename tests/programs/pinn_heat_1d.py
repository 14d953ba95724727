"""A physics-informed neural network for the 1-D heat equation ``u_t = nu u_xx`` on
[0, 1] x [0, 0.5] with ``u(x, 0) = sin(pi x)`` and ``u(0, t) = u(1, t) = 0`` (exact solution
``exp(-nu pi^2 t) sin(pi x)``), as PINN tutorials write it: collocation points from
``torch.meshgrid`` plus random ones, ``x`` and ``t`` as separate tensors that require grad,
``u_t``, ``u_x`` and ``u_xx`` from ``torch.autograd.grad(..., create_graph=True)``, the loss the
residual MSE plus the initial and boundary MSEs, training Adam followed by a few L-BFGS
steps with a strong-Wolfe line search, and the relative L2 error at the final time integrated
with ``torch.trapezoid`` (float64)."""

import math

import numpy as np
import torch
import torch.nn as nn

NU = 0.1


class PINN(nn.Module):
    def __init__(self, hidden=20):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))


def build():
    return PINN().double()


def residual(model, x, t):
    x = x.clone().requires_grad_(True)
    t = t.clone().requires_grad_(True)
    u = model(x, t)
    ones = torch.ones_like(u)
    u_x, u_t = torch.autograd.grad(u, [x, t], grad_outputs=ones, create_graph=True)
    u_xx = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x), create_graph=True)[0]
    return u_t - NU * u_xx


def collocation_points():
    xs = torch.linspace(0, 1, 12, dtype=torch.float64)[1:-1]
    ts = torch.linspace(0, 0.5, 8, dtype=torch.float64)[1:]
    grid_x, grid_t = torch.meshgrid(xs, ts, indexing="ij")
    # random points drawn with NumPy: torch's and scratchgrad's generators differ
    extra = torch.from_numpy(np.random.default_rng(0).uniform(size=(20, 2)))
    x = torch.cat([grid_x.reshape(-1, 1), extra[:, :1]])
    t = torch.cat([grid_t.flatten().unsqueeze(1), 0.5 * extra[:, 1:]])
    return x, t


def pinn_loss(model, interior, initial, boundary):
    f = residual(model, *interior)
    x0, u0 = initial
    xb, tb = boundary
    loss_initial = nn.functional.mse_loss(model(x0, torch.zeros_like(x0)), u0)
    loss_boundary = model(xb, tb).pow(2).mean()
    return torch.mean(f**2) + loss_initial + loss_boundary


def train(model, steps=8):
    interior = collocation_points()
    x0 = torch.linspace(0, 1, 21, dtype=torch.float64).view(-1, 1)
    initial = (x0, torch.sin(math.pi * x0))
    tb = torch.linspace(0, 0.5, 10, dtype=torch.float64).unsqueeze(1).repeat(2, 1)
    xb = torch.cat([torch.zeros(10, 1), torch.ones(10, 1)]).to(torch.float64)
    boundary = (xb, tb)

    losses = []
    adam = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(steps):
        adam.zero_grad()
        loss = pinn_loss(model, interior, initial, boundary)
        loss.backward()
        adam.step()
        losses.append(loss.item())
        if step % 4 == 0:
            print(f"adam {step}: loss {loss.item():.6f}")

    lbfgs = torch.optim.LBFGS(
        model.parameters(), lr=1.0, max_iter=5, history_size=10, line_search_fn="strong_wolfe"
    )

    def closure():
        lbfgs.zero_grad()
        loss = pinn_loss(model, interior, initial, boundary)
        loss.backward()
        return loss

    for step in range(3):
        loss = lbfgs.step(closure)
        losses.append(loss.item())
        print(f"lbfgs {step}: loss {loss.item():.6f}")

    x_test = torch.linspace(0, 1, 51, dtype=torch.float64)
    t_end = torch.full_like(x_test, 0.5)
    exact = math.exp(-NU * math.pi**2 * 0.5) * torch.sin(math.pi * x_test)
    with torch.no_grad():
        u = model(x_test.unsqueeze(1), t_end.unsqueeze(1)).squeeze(1)
    # relative L2 error at the final time, the integrals by the trapezoidal rule
    error = (
        torch.trapezoid((u - exact) ** 2, x_test).sqrt() / torch.trapezoid(exact**2, x_test).sqrt()
    )
    losses.append(error.item())
    print(f"relative L2 error at t = 0.5: {error.item():.4f}")
    return losses


if __name__ == "__main__":
    train(build())
