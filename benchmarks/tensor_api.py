"""The tensor workloads written once against PyTorch's API, run by PyTorch and by scratchgrad.

``lib`` is the imported module, ``torch`` or ``scratchgrad``: the code below is what a PyTorch
user writes, and that scratchgrad runs it unchanged is the point of a PyTorch-compatible API.

>>> import torch
>>> from workloads import make_problem
>>> step, first_loss = make_step(torch, make_problem("W1"))
>>> round(first_loss, 4) == round(make_step(torch, make_problem("W1"))[1], 4)
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from types import ModuleType

from workloads import Problem, digits_epochs


def build_model(lib: ModuleType, problem: Problem):
    """The workload's network with the problem's initial weights copied in."""
    nn = lib.nn
    if problem.model == "gpt":
        model = gpt(lib, problem.extra)
    elif problem.model == "cnn":
        model = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(784, 10),
        )
    else:
        activation = {"tanh": nn.Tanh, "relu": nn.ReLU}[problem.activation]
        layers = []
        for fan_in, fan_out in zip(problem.sizes, problem.sizes[1:]):
            layers += [nn.Linear(fan_in, fan_out), activation()]
        model = nn.Sequential(*layers[:-1])  # no activation after the last layer
    params = list(model.parameters())
    assert [tuple(p.shape) for p in params] == [w.shape for w in problem.params]
    with lib.no_grad():
        for p, w in zip(params, problem.params):
            p.copy_(lib.from_numpy(w))
    return model


def gpt(lib: ModuleType, config: dict):
    """scratchgrad.charlm's GPT, written against the common API (tests/test_benchmarks.py
    checks that it computes what charlm.GPT computes)."""
    nn, F = lib.nn, lib.nn.functional
    dims, heads = config["dims"], config["heads"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(dims)
            self.qkv, self.proj = nn.Linear(dims, 3 * dims), nn.Linear(dims, dims)
            self.ln_2 = nn.LayerNorm(dims)
            self.fc, self.out = nn.Linear(dims, 4 * dims), nn.Linear(4 * dims, dims)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.out(F.gelu(self.fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(config["vocab"], dims)
            self.wpe = nn.Embedding(config["block"], dims)
            self.blocks = nn.ModuleList([Block() for _ in range(config["layers"])])
            self.ln_f = nn.LayerNorm(dims)
            self.lm_head = nn.Linear(dims, config["vocab"], bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.lm_head(self.ln_f(x)).flatten(0, 1)

    return GPT()


def make_optimizer(lib: ModuleType, problem: Problem, params):
    if problem.optimizer == "adam":
        return lib.optim.Adam(params, lr=problem.lr)
    if problem.optimizer == "adamw":
        return lib.optim.AdamW(params, lr=problem.lr, betas=(0.9, 0.99))
    return lib.optim.SGD(params, lr=problem.lr, momentum=problem.momentum)


def make_train_step(lib: ModuleType, problem: Problem, jit: bool = False):
    """The model and ``train_step(x, y) -> loss``: forward, backward, optimizer update; with
    ``jit``, the whole step recorded and replayed by ``scratchgrad.jit``."""
    model = build_model(lib, problem)
    optimizer = make_optimizer(lib, problem, model.parameters())
    loss_fn = getattr(lib.nn.functional, {"mse": "mse_loss"}.get(problem.loss, problem.loss))

    clip = problem.extra.get("clip")

    def train_step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return loss

    return model, lib.jit(train_step) if jit else train_step


def make_step(
    lib: ModuleType, problem: Problem, jit: bool = False
) -> tuple[Callable[[], object], float]:
    """The workload's step (no arguments, returns the loss) and the loss of its first call.

    Data are converted to tensors once here, so a timed step is forward, backward and update.
    ``jit`` (scratchgrad only) runs the training step under ``scratchgrad.jit``.
    """
    if problem.model == "op":
        a, b = (lib.from_numpy(w).requires_grad_() for w in problem.params)

        def op_step():
            out = (a * b).sum()
            out.backward()
            return out

        return op_step, op_step().item()

    _, train_step = make_train_step(lib, problem, jit)
    batches = itertools.cycle([(lib.from_numpy(x), lib.from_numpy(y)) for x, y in problem.batches])

    def step():
        return train_step(*next(batches))

    return step, step().item()


def train_digits(lib: ModuleType, problem: Problem, epochs: int, jit: bool = False) -> float:
    """Train W3 from its initial weights for ``epochs``; return the test accuracy."""
    model, train_step = make_train_step(lib, problem, jit)
    for batches in digits_epochs(problem, epochs):
        for x, y in batches:
            train_step(lib.from_numpy(x), lib.from_numpy(y))
    x_test, y_test = problem.test
    with lib.no_grad():
        predicted = model(lib.from_numpy(x_test)).argmax(1).numpy()
    return float((predicted == y_test).mean())
