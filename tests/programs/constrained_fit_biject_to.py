"""Maximum likelihood with constrained parameters, the torch.distributions way: unconstrained
tensors are optimized and mapped into each parameter's support with
``biject_to(dist.arg_constraints[name])`` (a Gamma's positive concentration and rate, a Beta's
too), Adam on the summed negative log-likelihood (data drawn with NumPy)."""

import numpy as np
import torch
import torch.distributions as D
import torch.nn as nn
from torch.distributions import biject_to


class Constrained(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw = nn.ParameterDict(
            {
                "concentration": nn.Parameter(torch.zeros(())),
                "rate": nn.Parameter(torch.zeros(())),
                "beta_a": nn.Parameter(torch.zeros(())),
                "beta_b": nn.Parameter(torch.zeros(())),
            }
        )

    def forward(self, gamma_data, beta_data):
        gamma_support = D.Gamma.arg_constraints
        concentration = biject_to(gamma_support["concentration"])(self.raw["concentration"])
        rate = biject_to(gamma_support["rate"])(self.raw["rate"])
        a = biject_to(D.Beta.arg_constraints["concentration1"])(self.raw["beta_a"])
        b = biject_to(D.Beta.arg_constraints["concentration0"])(self.raw["beta_b"])
        nll = -D.Gamma(concentration, rate).log_prob(gamma_data).mean()
        return nll - D.Beta(a, b).log_prob(beta_data).mean()


def build():
    return Constrained()


def train(model, steps=25):
    rng = np.random.default_rng(0)
    gamma_data = torch.from_numpy(rng.gamma(3.0, 1 / 2.0, 300).astype(np.float32))
    beta_data = torch.from_numpy(rng.beta(2.0, 5.0, 300).astype(np.float32))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(gamma_data, beta_data)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(f"nll {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses
