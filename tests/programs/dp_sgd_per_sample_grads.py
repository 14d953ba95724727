"""Differentially private SGD written by hand, as the ``torch.func`` per-sample-gradients
tutorial sets it up: ``functional_call`` of a small CNN on detached parameters, ``vmap(grad(...),
in_dims=(None, None, 0, 0))`` for one gradient per example, each clipped to norm ``C`` across all
parameters, summed, noised (Gaussian noise drawn with NumPy) and applied in place under
``torch.no_grad()``; the per-sample gradients are checked once against a loop of ``backward``."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(x.flatten(1))


def build():
    return SmallCNN()


def train(model, steps=5, clip=1.0, noise_multiplier=0.5, lr=0.5):
    rng = np.random.default_rng(0)
    data = torch.from_numpy(rng.normal(size=(32, 1, 8, 8)).astype(np.float32))
    targets = torch.from_numpy(rng.integers(0, 3, size=32))

    def compute_loss(params, buffers, sample, target):
        batch, labels = sample.unsqueeze(0), target.unsqueeze(0)
        return F.cross_entropy(functional_call(model, (params, buffers), (batch,)), labels)

    per_sample_grad_fn = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    losses = []
    for step in range(steps):
        params = {k: v.detach() for k, v in model.named_parameters()}
        per_sample = per_sample_grad_fn(params, buffers, data, targets)
        if step == 0:  # the same as one backward per example
            model.zero_grad()
            F.cross_entropy(model(data[3:4]), targets[3:4]).backward()
            err = max(
                (per_sample[k][3] - p.grad).abs().max().item() for k, p in model.named_parameters()
            )
            print(f"per-sample grads match a loop: {err < 1e-5}")
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_sample.values()]).norm(dim=0)
        scale = (clip / (norms + 1e-6)).clamp(max=1.0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                g = (per_sample[name] * scale.view(-1, *[1] * p.dim())).sum(0)
                noise = torch.from_numpy(rng.normal(size=p.shape).astype(np.float32))
                p -= lr * (g + noise_multiplier * clip * noise) / len(data)
            loss = F.cross_entropy(model(data), targets)
        losses += [loss.item(), norms.mean().item()]
        print(f"step {step} loss {loss.item():.4f} mean per-sample norm {norms.mean().item():.3f}")
    return losses
