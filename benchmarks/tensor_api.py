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
    if problem.model == "cnn":
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


def make_optimizer(lib: ModuleType, problem: Problem, params):
    if problem.optimizer == "adam":
        return lib.optim.Adam(params, lr=problem.lr)
    return lib.optim.SGD(params, lr=problem.lr, momentum=problem.momentum)


def make_train_step(lib: ModuleType, problem: Problem):
    """The model and ``train_step(x, y) -> loss``: forward, backward, optimizer update."""
    model = build_model(lib, problem)
    optimizer = make_optimizer(lib, problem, model.parameters())
    loss_fn = getattr(lib.nn.functional, {"mse": "mse_loss"}.get(problem.loss, problem.loss))

    def train_step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return model, train_step


def make_step(lib: ModuleType, problem: Problem) -> tuple[Callable[[], object], float]:
    """The workload's step (no arguments, returns the loss) and the loss of its first call.

    Data are converted to tensors once here, so a timed step is forward, backward and update.
    """
    if problem.model == "op":
        a, b = (lib.from_numpy(w).requires_grad_() for w in problem.params)

        def op_step():
            out = (a * b).sum()
            out.backward()
            return out

        return op_step, op_step().item()

    _, train_step = make_train_step(lib, problem)
    batches = itertools.cycle([(lib.from_numpy(x), lib.from_numpy(y)) for x, y in problem.batches])

    def step():
        return train_step(*next(batches))

    return step, step().item()


def train_digits(lib: ModuleType, problem: Problem, epochs: int) -> float:
    """Train W3 from its initial weights for ``epochs``; return the test accuracy."""
    model, train_step = make_train_step(lib, problem)
    for batches in digits_epochs(problem, epochs):
        for x, y in batches:
            train_step(lib.from_numpy(x), lib.from_numpy(y))
    x_test, y_test = problem.test
    with lib.no_grad():
        predicted = model(lib.from_numpy(x_test)).argmax(1).numpy()
    return float((predicted == y_test).mean())
