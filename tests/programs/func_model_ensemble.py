"""The ``torch.func`` model-ensembling tutorial: several MLPs of one architecture, their weights
stacked by ``stack_module_state``, a stateless copy moved to the ``"meta"`` device as the
template for ``functional_call``, and ``vmap`` running all members at once, on one minibatch
shared by all (``in_dims=(0, 0, None)``) and on one minibatch per member; then the ensemble is
trained by SGD on the stacked parameters (data drawn with NumPy)."""

import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap


class Ensemble(nn.Module):
    def __init__(self, members=4):
        super().__init__()
        self.members = nn.ModuleList(
            nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)) for _ in range(members)
        )


def build():
    return Ensemble()


def train(ensemble, steps=5, lr=0.1):
    rng = np.random.default_rng(0)
    data = torch.from_numpy(rng.normal(size=(4, 32, 8)).astype(np.float32))
    targets = torch.from_numpy(rng.integers(0, 3, size=(4, 32)))
    params, buffers = stack_module_state(list(ensemble.members))
    base = copy.deepcopy(ensemble.members[0]).to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    same = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data[0])
    print("same minibatch: outputs", tuple(same.shape))
    losses = []
    for step in range(steps):
        logits = vmap(fmodel)(params, buffers, data)
        loss = F.cross_entropy(logits.reshape(-1, 3), targets.reshape(-1))
        grads = torch.autograd.grad(loss, list(params.values()))
        with torch.no_grad():
            for p, g in zip(params.values(), grads):
                p -= lr * g
        losses.append(loss.item())
        print(f"step {step} loss {loss.item():.4f}")
    return losses
