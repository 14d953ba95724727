"""P1: a population of 1,000 XOR 2-4-1 tanh MLPs, each trained by SGD on the 4 points; one step
is forward, backward and update of every network.

- ``scratchgrad`` and ``pytorch``: the population as one network over stacked parameters,
  ``vmap(functional_call(...))`` (``scratchgrad.func`` and ``torch.func``), the losses summed
  and ``backward()`` once, one SGD step over the stacked parameters.
- ``scratchgrad-loop``: 1,000 separate ``nn.Sequential`` models in a Python loop, one backward
  each, one SGD step over all their parameters: what the code looks like without vmap.
- ``jax``: ``jax.vmap`` of ``value_and_grad`` and the update, under ``jax.jit`` (if installed).

Every variant's step returns the population's total loss, so the first losses must agree.

>>> from workloads import make_problem
>>> import scratchgrad
>>> step, first = make_step("scratchgrad", make_problem("P1"))
>>> loop_step, loop_first = make_step("scratchgrad-loop", make_problem("P1"))
>>> abs(first - loop_first) < 1e-4 * first
True
"""

from __future__ import annotations

from collections.abc import Callable

from workloads import Problem

NAMES = ("0.weight", "0.bias", "2.weight", "2.bias")  # nn.Sequential(Linear, Tanh, Linear)


def make_step(framework: str, problem: Problem) -> tuple[Callable[[], object], float]:
    """The population's step (returns the total loss) and its first total loss."""
    if framework == "jax":
        return _jax_step(problem)
    if framework == "pytorch":
        import torch as lib

        func = lib.func
    else:
        import scratchgrad as lib
        from scratchgrad import func
    ((x, y),) = problem.batches
    x, y = lib.from_numpy(x), lib.from_numpy(y)
    if framework == "scratchgrad-loop":
        return _loop_step(lib, problem, x, y)
    model = _model(lib)
    params = {n: lib.from_numpy(w.copy()).requires_grad_() for n, w in zip(NAMES, problem.params)}
    optimizer = lib.optim.SGD(params.values(), lr=problem.lr)

    def loss(member_params):
        return lib.nn.functional.mse_loss(func.functional_call(model, member_params, (x,)), y)

    losses = func.vmap(loss)

    def step():
        optimizer.zero_grad()
        total = losses(params).sum()
        total.backward()
        optimizer.step()
        return total

    return step, step().item()


def _model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))


def _loop_step(lib, problem: Problem, x, y):
    models = []
    for i in range(problem.extra["population"]):
        model = _model(lib)
        with lib.no_grad():
            for p, w in zip(model.parameters(), problem.params):
                p.copy_(lib.from_numpy(w[i]))
        models.append(model)
    optimizer = lib.optim.SGD([p for m in models for p in m.parameters()], lr=problem.lr)
    mse_loss = lib.nn.functional.mse_loss

    def step():
        optimizer.zero_grad()
        total = 0.0
        for model in models:
            loss = mse_loss(model(x), y)
            loss.backward()
            total += loss.item()
        optimizer.step()
        return lib.tensor(total)

    return step, step().item()


def _jax_step(problem: Problem):
    import jax
    import jax.numpy as jnp

    ((x, y),) = problem.batches
    lr = problem.lr

    def loss(p):
        w1, b1, w2, b2 = p
        out = jnp.tanh(x @ w1.T + b1) @ w2.T + b2
        return jnp.mean((out - y) ** 2)

    @jax.jit
    def update(params):
        losses, grads = jax.vmap(jax.value_and_grad(loss))(params)
        return [p - lr * g for p, g in zip(params, grads)], losses.sum()

    state = {"params": [jnp.asarray(w) for w in problem.params]}

    def step():
        state["params"], total = update(state["params"])
        return total.block_until_ready()

    return step, float(step())
