"""A Laplace approximation for a small Bayesian neural network, as the "Laplace Redux" tutorials
write it in plain PyTorch, in float64 (``.double()``): the MAP fit by Adam, the parameters
flattened with ``torch.nn.utils.parameters_to_vector`` and written back with
``vector_to_parameters``, the Hessian of the negative log posterior in the last layer by
``torch.autograd.functional.hessian`` over a function of the flat weights, its inverse by
``torch.linalg.cholesky`` and ``torch.cholesky_inverse``, the predictive variance from the
Jacobian of the test logits by ``torch.autograd.functional.jacobian(..., vectorize=True)``, the
probit approximation of the predictive probabilities, and the log marginal likelihood via
``torch.logdet``."""

import math

import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 8), nn.Tanh())
        self.last = nn.Linear(8, 1)

    def forward(self, x):
        return self.last(self.features(x)).squeeze(-1)


def build():
    return Net().double()


def moons(rng, n):
    angle = rng.uniform(0, np.pi, n)
    label = rng.integers(0, 2, n)
    x = np.stack(
        [
            np.where(label, 1 - np.cos(angle), np.cos(angle)),
            np.where(label, 0.5 - np.sin(angle), np.sin(angle)),
        ],
        1,
    )
    return torch.from_numpy(x + 0.1 * rng.standard_normal(x.shape)), torch.from_numpy(label * 1.0)


def neg_log_posterior(logits, y, weights, prior_precision):
    nll = nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="sum")
    return nll + 0.5 * prior_precision * (weights**2).sum()


def train(model, steps=25, prior_precision=1.0):
    rng = np.random.default_rng(0)
    x, y = moons(rng, 64)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    losses = []
    for step in range(steps):
        weights = nn.utils.parameters_to_vector(model.parameters())
        loss = neg_log_posterior(model(x), y, weights, prior_precision)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 5 == 0:
            print(f"step {step}: negative log posterior {loss.item():.4f}")

    features = model.features(x).detach()
    w_map = nn.utils.parameters_to_vector(model.last.parameters()).detach()

    def last_layer_loss(w):
        logits = features @ w[:-1] + w[-1]
        return neg_log_posterior(logits, y, w, prior_precision)

    H = torch.autograd.functional.hessian(last_layer_loss, w_map)
    L = torch.linalg.cholesky(H)
    covariance = torch.cholesky_inverse(L)
    log_marginal = (
        -last_layer_loss(w_map) - 0.5 * torch.logdet(H) + 0.5 * 9 * math.log(prior_precision)
    )
    x_test, y_test = moons(rng, 16)
    test_features = model.features(x_test).detach()

    def logits_of(w):
        return test_features @ w[:-1] + w[-1]

    J = torch.autograd.functional.jacobian(logits_of, w_map, vectorize=True)  # (16, 9)
    f_var = torch.einsum("ni,ij,nj->n", J, covariance, J)
    kappa = 1 / torch.sqrt(1 + math.pi / 8 * f_var)
    probs = torch.sigmoid(kappa * logits_of(w_map))
    nll = nn.functional.binary_cross_entropy(probs, y_test).item()
    nn.utils.vector_to_parameters(w_map + covariance.diagonal().sqrt(), model.last.parameters())
    shifted = model(x_test).mean().item()
    print(f"log marginal likelihood {log_marginal.item():.4f}, predictive nll {nll:.4f}")
    return losses + [log_marginal.item(), nll, f_var.mean().item(), shifted]


if __name__ == "__main__":
    train(build())
