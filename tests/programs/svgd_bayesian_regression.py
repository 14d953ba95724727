"""Stein variational gradient descent (Liu & Wang, 2016) for Bayesian logistic regression, as
its PyTorch notebooks write it: particles held in one tensor with ``requires_grad_``, the score
``torch.autograd.grad(log_prob.sum(), particles)``, an RBF kernel on ``torch.cdist`` distances
with the median heuristic (``torch.median`` of the squared distances), the repulsive term from a
second ``autograd.grad`` through the kernel, the update applied by ``Adam`` on ``-phi`` written
into ``particles.grad``; a ``build()``'s model holds the particles as a parameter, and the
predictive accuracy and log-likelihood are printed each step (data from NumPy)."""

import math

import numpy as np
import torch
import torch.nn as nn


class Particles(nn.Module):
    def __init__(self, n=20, features=4):
        super().__init__()
        self.theta = nn.Parameter(torch.randn(n, features + 1))  # weights and a bias

    def log_prob(self, theta, x, y, prior_std=2.0):
        logits = x @ theta[:, :-1].T + theta[:, -1]  # (data, particles)
        log_lik = -nn.functional.binary_cross_entropy_with_logits(
            logits, y.unsqueeze(1).expand_as(logits), reduction="none"
        ).sum(0)
        log_prior = -0.5 * (theta**2).sum(1) / prior_std**2
        return log_lik + log_prior


def rbf_kernel(theta):
    sq_dist = torch.cdist(theta, theta) ** 2
    h = torch.median(sq_dist) / math.log(theta.shape[0] + 1)
    return torch.exp(-sq_dist / h.detach())


def svgd_direction(model, x, y):
    theta = model.theta.detach().clone().requires_grad_(True)
    score = torch.autograd.grad(model.log_prob(theta, x, y).sum(), theta)[0]
    kernel = rbf_kernel(theta)
    repulsion = torch.autograd.grad(kernel.sum(), theta)[0]
    return (kernel.detach() @ score + repulsion) / theta.shape[0]


def build():
    return Particles()


def train(model, steps=15):
    rng = np.random.default_rng(0)
    w_true = rng.standard_normal(4)
    x_np = rng.standard_normal((80, 4))
    y_np = (x_np @ w_true + 0.3 * rng.standard_normal(80) > 0).astype(np.float32)
    x, y = torch.from_numpy(x_np.astype(np.float32)), torch.from_numpy(y_np)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        phi = svgd_direction(model, x, y)
        optimizer.zero_grad()
        model.theta.grad = -phi
        optimizer.step()
        with torch.no_grad():
            probs = torch.sigmoid(x @ model.theta[:, :-1].T + model.theta[:, -1]).mean(1)
            nll = nn.functional.binary_cross_entropy(probs, y).item()
            accuracy = ((probs > 0.5).float() == y).float().mean().item()
        losses.append(nll)
        if step % 3 == 0:
            print(f"step {step}: predictive nll {nll:.4f}, accuracy {accuracy:.3f}")
    spread = model.theta.detach().std(0).mean().item()
    print(f"particle spread {spread:.4f}")
    return losses + [spread]


if __name__ == "__main__":
    train(build())
