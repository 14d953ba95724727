"""A truncated Newton method for logistic regression, as optimization tutorials write it with
``torch.autograd.functional``: each step solves ``H d = -g`` by a few conjugate-gradient
iterations whose Hessian-vector products come from ``hvp``, then takes the step in place under
``no_grad`` (float64, data drawn with NumPy)."""

import numpy as np
import torch
import torch.nn as nn
from torch.autograd.functional import hvp


class Logistic(nn.Module):
    def __init__(self, features=5):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(features, dtype=torch.float64))


def build():
    return Logistic()


def train(model, steps=4):
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(200, 5)))
    truth = torch.from_numpy(np.array([1.5, -2.0, 0.5, 0.0, 1.0]))
    y = (x @ truth + torch.from_numpy(rng.normal(size=200)) > 0).double()

    def loss_of(w):
        logits = x @ w
        penalty = 1e-2 * (w * w).sum()
        return nn.functional.binary_cross_entropy_with_logits(logits, y) + penalty

    losses = []
    for _ in range(steps):
        w = model.w.detach()
        g = torch.autograd.grad(loss_of(w.requires_grad_()), w)[0]
        d, r = torch.zeros_like(g), -g
        p = r.clone()
        for _ in range(5):  # conjugate gradients on H d = -g
            _, hp = hvp(loss_of, model.w.detach(), p)
            alpha = (r @ r) / (p @ hp)
            d = d + alpha * p
            r_new = r - alpha * hp
            p = r_new + (r_new @ r_new) / (r @ r) * p
            r = r_new
        with torch.no_grad():
            model.w.add_(d)
        losses.append(loss_of(model.w.detach()).item())
    print(f"loss {losses[-1]:.6f}")
    return losses
