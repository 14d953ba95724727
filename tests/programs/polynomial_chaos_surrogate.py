"""A polynomial chaos surrogate for uncertainty quantification: a model with one Gaussian input
(xi_1 ~ N(0, 1)) and one uniform input (xi_2 ~ U(-1, 1)) is expanded in the polynomials
orthogonal under those laws, probabilists' Hermite ``torch.special.hermite_polynomial_he`` and
Legendre ``torch.special.legendre_polynomial_p``, products up to total degree 5. The
coefficients are fit once by least squares (``torch.linalg.lstsq``) and once by training a
linear layer on the same features with Adam (plus a small MLP for what the basis misses, as
physics-informed hybrid models do); the output's mean and variance then come from the
coefficients alone (E[He_n^2] = n!, E[P_n^2] = 1 / (2n + 1)) and are checked against Monte
Carlo, and first-order Sobol indices from the coefficients on each input's own terms."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEGREE = 5
TERMS = [(i, j) for i in range(DEGREE + 1) for j in range(DEGREE + 1 - i)]


def simulator(xi):
    """The model whose uncertainty is propagated: smooth in both inputs, with an interaction."""
    a, b = xi[:, 0], xi[:, 1]
    return torch.exp(0.3 * a) * torch.sin(2 * b) + 0.5 * a * b**2 + 0.2 * a**2


def features(xi):
    """He_i(xi_1) P_j(xi_2) for every (i, j) of total degree <= DEGREE."""
    degrees = torch.arange(DEGREE + 1)
    hermite = torch.special.hermite_polynomial_he(xi[:, :1], degrees)
    legendre = torch.special.legendre_polynomial_p(xi[:, 1:], degrees)
    i, j = torch.tensor(TERMS).T
    return hermite[:, i] * legendre[:, j]


def norms():
    return torch.tensor([math.factorial(i) / (2 * j + 1) for i, j in TERMS])


def moments(coefficients):
    """Mean, variance and first-order Sobol indices from the expansion's coefficients."""
    partial = coefficients**2 * norms()
    i, j = torch.tensor(TERMS).T
    variance = partial[1:].sum()
    first_order = torch.stack(
        [partial[(i > 0) & (j == 0)].sum(), partial[(i == 0) & (j > 0)].sum()]
    )
    return coefficients[0], variance, first_order / variance


class HybridSurrogate(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.chaos = nn.Linear(len(TERMS), 1, bias=False)
        self.residual = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, xi, basis):
        return self.chaos(basis).squeeze(1) + 0.1 * self.residual(xi).squeeze(1)


def sample(rng, count):
    xi = np.stack([rng.standard_normal(count), rng.uniform(-1, 1, count)], axis=1)
    return torch.tensor(xi)


def build():
    return HybridSurrogate().double()


def train(model, steps=8):
    rng = np.random.default_rng(0)
    xi, test_xi = sample(rng, 200), sample(rng, 4000)
    y, basis = simulator(xi), features(xi)
    solution = torch.linalg.lstsq(basis, y.unsqueeze(1)).solution.squeeze(1)
    mean, variance, sobol = moments(solution)
    reference = simulator(test_xi)
    print(
        f"least squares: mean {mean.item():.4f} (MC {reference.mean().item():.4f}) "
        f"variance {variance.item():.4f} (MC {reference.var().item():.4f})"
    )
    print("first-order Sobol indices", [round(s, 3) for s in sobol.tolist()])
    test_error = F.mse_loss(features(test_xi) @ solution, reference)
    losses = [mean.item(), variance.item(), *sobol.tolist(), test_error.item()]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for step in range(steps):
        loss = F.mse_loss(model(xi, basis), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.6f}")
    mean, variance, _ = moments(model.chaos.weight.detach().squeeze(0))
    losses += [mean.item(), variance.item()]
    return losses


if __name__ == "__main__":
    train(build())
