"""A hypernetwork (Ha et al., 2017) that generates the weights of a target MLP per task, as
meta-learning code writes it with ``torch.func.functional_call``: the target network's
parameter shapes read from ``named_parameters()``, a task embedding (``nn.Embedding``) mapped to
one flat vector split with ``torch.split`` over ``math.prod`` of the shapes and ``view``ed into
a dict, the target module called functionally on that dict, a weight-decay term on the
generated weights, Adam over the hypernetwork only (the target's own parameters stay untouched,
checked with ``torch.equal``), and held-out tasks evaluated per task with ``torch.no_grad``."""

import math

import numpy as np
import torch
import torch.nn as nn
from torch.func import functional_call


class TargetNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1, 12)
        self.fc2 = nn.Linear(12, 1)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class HyperNetwork(nn.Module):
    def __init__(self, num_tasks=6, embedding_dim=4, hidden=24):
        super().__init__()
        self.target = TargetNet()
        self.names = [name for name, _ in self.target.named_parameters()]
        self.shapes = [p.shape for _, p in self.target.named_parameters()]
        sizes = [math.prod(shape) for shape in self.shapes]
        self.sizes = sizes
        self.task_embedding = nn.Embedding(num_tasks, embedding_dim)
        self.generator = nn.Sequential(
            nn.Linear(embedding_dim, hidden), nn.ReLU(), nn.Linear(hidden, sum(sizes))
        )
        with torch.no_grad():
            self.generator[-1].weight.mul_(0.3)

    def weights_for(self, task):
        flat = self.generator(self.task_embedding(task))
        chunks = torch.split(flat, self.sizes)
        return {n: c.view(s) for n, c, s in zip(self.names, chunks, self.shapes)}

    def forward(self, task, x):
        params = self.weights_for(task)
        return functional_call(self.target, params, (x,)), params


def build():
    return HyperNetwork()


def task_data(rng, amplitudes, phases, task, n=20):
    x = rng.uniform(-3, 3, (n, 1))
    y = amplitudes[task] * np.sin(x + phases[task])
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.float32))


def train(model, steps=12):
    rng = np.random.default_rng(0)
    amplitudes = rng.uniform(0.5, 2.0, 6)
    phases = rng.uniform(0, np.pi, 6)
    target_before = {k: v.clone() for k, v in model.target.state_dict().items()}
    hyper_params = [p for n, p in model.named_parameters() if not n.startswith("target.")]
    optimizer = torch.optim.Adam(hyper_params, lr=3e-3)
    losses = []
    for step in range(steps):
        total = 0.0
        optimizer.zero_grad()
        for task in range(4):  # tasks 4 and 5 are held out
            x, y = task_data(rng, amplitudes, phases, task)
            prediction, params = model(torch.tensor(task), x)
            decay = sum((w**2).sum() for w in params.values())
            loss = nn.functional.mse_loss(prediction, y) + 1e-4 * decay
            (loss / 4).backward()
            total += loss.item() / 4
        optimizer.step()
        losses.append(total)
        if step % 4 == 0:
            print(f"step {step}: mean task loss {total:.4f}")
    with torch.no_grad():
        for task in (4, 5):
            x, y = task_data(rng, amplitudes, phases, task)
            held_out = nn.functional.mse_loss(model(torch.tensor(task), x)[0], y).item()
            losses.append(held_out)
            print(f"held-out task {task}: mse {held_out:.4f}")
    unchanged = all(torch.equal(v, model.target.state_dict()[k]) for k, v in target_before.items())
    print(f"target parameters unchanged: {unchanged}")
    return losses + [float(unchanged)]


if __name__ == "__main__":
    train(build())
