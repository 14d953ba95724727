"""The tensor workloads in JAX, with ``jax.jit`` over the whole step (forward, backward, update).

Used only where JAX is installed; the runner skips it otherwise. Optimizers are written out with
PyTorch's formulas so that the losses match the other frameworks step for step.

>>> from workloads import make_problem
>>> step, first_loss = make_step(make_problem("W1"))  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from workloads import Problem, digits_epochs


def mlp(params, x, relu: bool):
    n_layers = len(params) // 2
    for i in range(n_layers):
        x = x @ params[2 * i].T + params[2 * i + 1]
        if i < n_layers - 1:
            x = jax.nn.relu(x) if relu else jnp.tanh(x)
    return x


def conv(x, w, b):
    out = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))  # NCHW, OIHW
    return out + b[None, :, None, None]


def maxpool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def cnn(params, x):
    w1, b1, w2, b2, w3, b3 = params
    x = maxpool(jax.nn.relu(conv(x, w1, b1)))
    x = maxpool(jax.nn.relu(conv(x, w2, b2)))
    return x.reshape(len(x), -1) @ w3.T + b3


def layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * weight + bias


def gpt(params, idx, config: dict):
    """W6: scratchgrad.charlm's GPT (pre-norm blocks, causal attention, exact GELU, the output
    layer tied to the token embedding), with ``params`` in ``model.parameters()`` order."""
    wte, wpe, *blocks, ln_w, ln_b = params
    batch, time = idx.shape
    dims, heads = config["dims"], config["heads"]
    causal = jnp.tril(jnp.ones((time, time), bool))
    x = wte[idx] + wpe[:time]
    for i in range(0, len(blocks), 12):
        ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b = blocks[
            i : i + 12
        ]
        qkv = layer_norm(x, ln1_w, ln1_b) @ qkv_w.T + qkv_b
        q, k, v = (
            t.reshape(batch, time, heads, dims // heads).transpose(0, 2, 1, 3)
            for t in jnp.split(qkv, 3, axis=2)
        )
        scores = jnp.where(causal, q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(dims // heads), -jnp.inf)
        y = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(batch, time, dims)
        x = x + y @ proj_w.T + proj_b
        hidden = jax.nn.gelu(layer_norm(x, ln2_w, ln2_b) @ fc_w.T + fc_b, approximate=False)
        x = x + hidden @ out_w.T + out_b
    return (layer_norm(x, ln_w, ln_b) @ wte.T).reshape(batch * time, -1)


def cross_entropy(logits, y):
    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()


def mse(out, y):
    return jnp.mean((out - y) ** 2)


def make_update(problem: Problem):
    """``(init_state(params), update(params, grads, state) -> (params, state))``."""
    lr, momentum = problem.lr, problem.momentum
    if problem.optimizer in ("adam", "adamw"):
        # AdamW: tensor_api's betas and PyTorch's default weight decay, applied before the step
        b1, b2, eps = (0.9, 0.99, 1e-8) if problem.optimizer == "adamw" else (0.9, 0.999, 1e-8)
        decay = 0.01 if problem.optimizer == "adamw" else 0.0

        def init_adam(params):
            zeros = [jnp.zeros_like(p) for p in params]
            return (jnp.zeros((), jnp.int32), zeros, list(zeros))

        def adam(params, grads, state):
            t, m, v = state
            t = t + 1
            m = [b1 * mi + (1 - b1) * g for mi, g in zip(m, grads)]
            v = [b2 * vi + (1 - b2) * g * g for vi, g in zip(v, grads)]
            step_size = lr / (1 - b1**t)
            root = jnp.sqrt(1 - b2**t)
            params = [
                p * (1 - lr * decay) - step_size * mi / (jnp.sqrt(vi) / root + eps)
                for p, mi, vi in zip(params, m, v)
            ]
            return params, (t, m, v)

        return init_adam, adam

    def init_sgd(params):
        return (jnp.zeros((), jnp.bool_), [jnp.zeros_like(p) for p in params])

    def sgd(params, grads, state):
        started, buffers = state
        if momentum:
            # PyTorch starts the momentum buffer at the first gradient.
            buffers = [jnp.where(started, momentum * b + g, g) for b, g in zip(buffers, grads)]
            grads = buffers
        return [p - lr * g for p, g in zip(params, grads)], (jnp.ones((), jnp.bool_), buffers)

    return init_sgd, sgd


def make_train_step(problem: Problem):
    """The parameters, optimizer state and jitted ``train_step(params, state, x, y)``."""
    relu = problem.activation == "relu"
    if problem.model == "gpt":
        model = functools.partial(gpt, config=problem.extra)
    elif problem.model == "cnn":
        model = cnn
    else:
        model = functools.partial(mlp, relu=relu)
    loss_fn = cross_entropy if problem.loss == "cross_entropy" else mse
    init_state, update = make_update(problem)
    clip = problem.extra.get("clip")

    @jax.jit
    def train_step(params, state, x, y):
        loss, grads = jax.value_and_grad(lambda ps: loss_fn(model(ps, x), y))(params)
        if clip is not None:  # clip_grad_norm_: scale all gradients by one factor
            norm = jnp.sqrt(sum((g**2).sum() for g in grads))
            grads = [g * jnp.minimum(clip / (norm + 1e-6), 1.0) for g in grads]
        params, state = update(params, grads, state)
        return params, state, loss

    params = [jnp.asarray(w) for w in problem.params]
    return model, params, init_state(params), train_step


def make_step(problem: Problem) -> tuple[Callable[[], object], float]:
    """The workload's step (no arguments, returns the loss) and the loss of its first call."""
    if problem.model == "op":
        a, b = (jnp.asarray(w) for w in problem.params)
        op = jax.jit(jax.value_and_grad(lambda a, b: (a * b).sum(), argnums=(0, 1)))
        grads = [jnp.zeros_like(a), jnp.zeros_like(b)]

        def op_step():
            out, (grad_a, grad_b) = op(a, b)
            grads[0], grads[1] = grads[0] + grad_a, grads[1] + grad_b  # accumulate, as .backward()
            return out.block_until_ready()

        return op_step, op_step().item()

    _, params, state, train_step = make_train_step(problem)
    batches = itertools.cycle([(jnp.asarray(x), jnp.asarray(y)) for x, y in problem.batches])
    carry = [params, state]

    def step():
        carry[0], carry[1], loss = train_step(carry[0], carry[1], *next(batches))
        return loss.block_until_ready()  # JAX dispatches asynchronously: wait for the result

    return step, step().item()


def train_digits(problem: Problem, epochs: int) -> float:
    """Train W3 from its initial weights for ``epochs``; return the test accuracy."""
    model, params, state, train_step = make_train_step(problem)
    for batches in digits_epochs(problem, epochs):
        for x, y in batches:
            params, state, loss = train_step(params, state, jnp.asarray(x), jnp.asarray(y))
    loss.block_until_ready()
    x_test, y_test = problem.test
    return float((model(params, jnp.asarray(x_test)).argmax(1) == y_test).mean())
