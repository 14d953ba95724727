"""Barlow Twins after facebookresearch/barlowtwins' ``main.py``: two augmented views through one
backbone and a projector ending in ``BatchNorm1d(affine=False)``, the cross-correlation matrix
divided in place with ``div_``, the on-diagonal term written as
``torch.diagonal(c).add_(-1).pow_(2).sum()`` (in place on a view of a graph tensor), the
off-diagonal elements picked by the ``flatten()[:-1].view(n - 1, n + 1)[:, 1:]`` trick, and the
repository's ``LARS`` optimizer: a ``torch.optim.Optimizer`` subclass with a
``@torch.no_grad()`` step, per-parameter state, the trust ratio from nested ``torch.where``,
and the biases and norms put in a group excluded from weight decay and adaptation; the learning
rate set by hand each step with a warm-up and cosine decay (made-up 2-D point clouds as
"images", with noise and scaling drawn by NumPy as the augmentations)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


def off_diagonal(x):
    # return a flattened view of the off-diagonal elements of a square matrix
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


class BarlowTwins(nn.Module):
    def __init__(self, in_dim=12, hidden=16, sizes=(16, 24, 24), lambd=0.0051, batch_size=16):
        super().__init__()
        self.lambd, self.batch_size = lambd, batch_size
        self.backbone = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden)
        )
        layers = []
        for i in range(len(sizes) - 2):
            layers.append(nn.Linear(sizes[i], sizes[i + 1], bias=False))
            layers.append(nn.BatchNorm1d(sizes[i + 1]))
            layers.append(nn.ReLU(inplace=True))
        layers.append(nn.Linear(sizes[-2], sizes[-1], bias=False))
        self.projector = nn.Sequential(*layers)
        # normalization layer for the representations z1 and z2
        self.bn = nn.BatchNorm1d(sizes[-1], affine=False)

    def forward(self, y1, y2):
        z1 = self.projector(self.backbone(y1))
        z2 = self.projector(self.backbone(y2))
        # empirical cross-correlation matrix
        c = self.bn(z1).T @ self.bn(z2)
        c.div_(self.batch_size)
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        return on_diag + self.lambd * off_diag


class LARS(optim.Optimizer):
    def __init__(
        self,
        params,
        lr,
        weight_decay=0,
        momentum=0.9,
        eta=0.001,
        weight_decay_filter=False,
        lars_adaptation_filter=False,
    ):
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            eta=eta,
            weight_decay_filter=weight_decay_filter,
            lars_adaptation_filter=lars_adaptation_filter,
        )
        super().__init__(params, defaults)

    def exclude_bias_and_norm(self, p):
        return p.ndim == 1

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                dp = p.grad
                if dp is None:
                    continue
                if not g["weight_decay_filter"] or not self.exclude_bias_and_norm(p):
                    dp = dp.add(p, alpha=g["weight_decay"])
                if not g["lars_adaptation_filter"] or not self.exclude_bias_and_norm(p):
                    param_norm = torch.norm(p)
                    update_norm = torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(
                        param_norm > 0.0,
                        torch.where(update_norm > 0, (g["eta"] * param_norm / update_norm), one),
                        one,
                    )
                    dp = dp.mul(q)
                param_state = self.state[p]
                if "mu" not in param_state:
                    param_state["mu"] = torch.zeros_like(p)
                mu = param_state["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])


def adjust_learning_rate(optimizer, step, total, warmup=2, lr_weights=0.2, lr_biases=0.0048):
    if step < warmup:
        lr = step / warmup
    else:
        q = math.cos(math.pi * (step - warmup) / (total - warmup))
        lr = 0.5 * (1 + q) * 0.999 + 0.001
    optimizer.param_groups[0]["lr"] = lr * lr_weights
    optimizer.param_groups[1]["lr"] = lr * lr_biases


def views(rng, n=16, dim=12):
    """Two noisy, rescaled views of the same points on a few random lines."""
    base = rng.standard_normal((4, dim))[rng.integers(0, 4, n)] * rng.uniform(-2, 2, (n, 1))

    def augment():
        return (base * rng.uniform(0.8, 1.2, (n, 1)) + 0.1 * rng.standard_normal((n, dim))).astype(
            np.float32
        )

    return torch.from_numpy(augment()), torch.from_numpy(augment())


def build():
    return BarlowTwins()


def train(model, steps=8):
    rng = np.random.default_rng(0)
    param_weights, param_biases = [], []
    for param in model.parameters():
        if param.ndim == 1:
            param_biases.append(param)
        else:
            param_weights.append(param)
    parameters = [{"params": param_weights}, {"params": param_biases}]
    optimizer = LARS(
        parameters, lr=0, weight_decay=1e-6, weight_decay_filter=True, lars_adaptation_filter=True
    )
    losses = []
    for step in range(steps):
        y1, y2 = views(rng)
        adjust_learning_rate(optimizer, step, steps)
        optimizer.zero_grad()
        loss = model.forward(y1, y2)
        loss.backward()
        optimizer.step()
        print(f"step {step} lr {optimizer.param_groups[0]['lr']:.4f} loss {loss.item():.4f}")
        losses.append(loss.item())
    state = optimizer.state_dict()
    losses.append(sum(s["mu"].abs().sum().item() for s in state["state"].values()))
    losses.append(model.bn.running_var.mean().item())
    return losses


if __name__ == "__main__":
    train(build())
