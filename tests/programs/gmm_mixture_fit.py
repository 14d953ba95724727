"""A Gaussian mixture fitted by gradient descent, as the torch.distributions examples do it:
``MixtureSameFamily(Categorical(logits), Normal(loc, softplus(raw_scale)))`` as a module whose
``log_prob`` of the data is maximized with Adam (1-D data from three clusters, drawn with
NumPy so both libraries see the same)."""

import numpy as np
import torch
import torch.distributions as D
import torch.nn as nn
import torch.nn.functional as F


class GaussianMixture(nn.Module):
    def __init__(self, components=3):
        super().__init__()
        self.logits = nn.Parameter(torch.zeros(components))
        self.loc = nn.Parameter(torch.linspace(-1.0, 1.0, components))
        self.raw_scale = nn.Parameter(torch.zeros(components))

    def forward(self):
        mixture = D.Categorical(logits=self.logits)
        components = D.Normal(self.loc, F.softplus(self.raw_scale))
        return D.MixtureSameFamily(mixture, components)


def build():
    return GaussianMixture()


def train(model, steps=30):
    rng = np.random.default_rng(0)
    centers = np.array([-3.0, 0.5, 4.0])
    data = centers[rng.integers(0, 3, 400)] + rng.normal(0, 0.6, 400)
    x = torch.from_numpy(data.astype(np.float32))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = -model().log_prob(x).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 10 == 0:
            print(f"step {step}: nll {loss.item():.4f}")
    with torch.no_grad():
        print("means", [round(m, 2) for m in model().mean.reshape(1).tolist()])
    return losses
