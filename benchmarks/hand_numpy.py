"""Hand-written NumPy forward, backward and update for each workload: the floor for NumPy engines.

No graph and no dispatch, only the array calls a careful person would write by hand: in-place
activations and updates, the same float32 math as the frameworks. An engine built on NumPy can
approach these times but not beat them (short of fusing or caching work across steps).

The worker calls ``scratchgrad.backend.keep_freed_memory()`` first, for this floor as for
scratchgrad, so the floor excludes the page faults that glibc's default malloc costs a program
allocating megabyte temporaries every step (a quarter of W5's time): any engine can avoid them
the same way, with one call at start-up.

>>> from workloads import make_problem
>>> step, first_loss = make_step(make_problem("W1"))
>>> first_loss > 0
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from workloads import Problem, digits_epochs

# ---- losses: each returns the loss and its gradient with respect to the network's output ----


def mse(out: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    diff = out - y
    return np.mean(diff * diff), diff * np.float32(2 / diff.size)


def cross_entropy(logits: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.arange(len(y))
    z = logits - logits.max(axis=1, keepdims=True)  # shift so exp cannot overflow
    e = np.exp(z)
    total = e.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(total[:, 0]) - z[rows, y])
    grad = e / total  # softmax
    grad[rows, y] -= 1
    grad *= np.float32(1 / len(y))
    return loss, grad


LOSSES = {"mse": mse, "cross_entropy": cross_entropy}

# ---- optimizers, with PyTorch's update formulas ----


class SGD:
    def __init__(self, params: list[np.ndarray], lr: float, momentum: float = 0.0) -> None:
        self.params, self.lr, self.momentum = params, np.float32(lr), np.float32(momentum)
        self.buffers: list[np.ndarray] | None = None

    def step(self, grads: list[np.ndarray]) -> None:
        if self.momentum:
            if self.buffers is None:  # PyTorch starts the buffer at the first gradient
                self.buffers = [g.copy() for g in grads]
            else:
                for buf, g in zip(self.buffers, grads):
                    buf *= self.momentum
                    buf += g
            grads = self.buffers
        for p, g in zip(self.params, grads):
            p -= self.lr * g


class Adam:
    def __init__(self, params: list[np.ndarray], lr: float, betas=(0.9, 0.999), eps=1e-8) -> None:
        self.params, self.lr, self.betas, self.eps = params, lr, betas, np.float32(eps)
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: list[np.ndarray]) -> None:
        self.t += 1
        b1, b2 = self.betas
        step_size = np.float32(self.lr / (1 - b1**self.t))
        root_correction = np.float32(np.sqrt(1 - b2**self.t))
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= np.float32(b1)
            m += np.float32(1 - b1) * g
            v *= np.float32(b2)
            v += np.float32(1 - b2) * g * g
            denom = np.sqrt(v)
            denom /= root_correction
            denom += self.eps
            p -= step_size * m / denom


def make_optimizer(problem: Problem, params: list[np.ndarray]):
    if problem.optimizer == "adam":
        return Adam(params, problem.lr)
    return SGD(params, problem.lr, problem.momentum)


# ---- the multilayer perceptron (W1-W4) ----


class MLP:
    """Linear layers with tanh or ReLU between them, weights in PyTorch's ``(out, in)`` layout."""

    def __init__(self, problem: Problem) -> None:
        self.params = [w.copy() for w in problem.params]
        self.relu = problem.activation == "relu"

    def forward(self, x: np.ndarray) -> list[np.ndarray]:
        """Each layer's input, and the network's output last."""
        acts = [x]
        n_layers = len(self.params) // 2
        for i in range(n_layers):
            w, b = self.params[2 * i], self.params[2 * i + 1]
            out = acts[-1] @ w.T
            out += b
            if i < n_layers - 1:
                if self.relu:
                    np.maximum(out, 0, out=out)
                else:
                    np.tanh(out, out=out)
            acts.append(out)
        return acts

    def backward(self, acts: list[np.ndarray], grad: np.ndarray) -> list[np.ndarray]:
        grads: list[np.ndarray] = [None] * len(self.params)  # type: ignore[list-item]
        for i in reversed(range(len(self.params) // 2)):
            grads[2 * i] = grad.T @ acts[i]
            grads[2 * i + 1] = grad.sum(axis=0)
            if i > 0:
                grad = grad @ self.params[2 * i]
                h = acts[i]  # the previous layer's activation output
                if self.relu:
                    grad *= h > 0
                else:
                    grad *= 1 - h * h  # tanh' = 1 - tanh^2
        return grads


# ---- the small CNN (W5), kept channels-last so im2col needs no transposes ----


def im2col(x: np.ndarray) -> np.ndarray:
    """3x3 patches of ``x`` (N, H, W, C) with padding 1, as rows ordered (kh, kw, C)."""
    n, h, w, c = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.empty((n, h, w, 3, 3, c), dtype=x.dtype)
    for i in range(3):
        for j in range(3):
            cols[:, :, :, i, j, :] = padded[:, i : i + h, j : j + w, :]
    return cols.reshape(n * h * w, 9 * c)


def col2im(cols: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The adjoint of ``im2col``: add each patch's gradient back where the patch came from."""
    n, h, w, c = shape
    cols = cols.reshape(n, h, w, 3, 3, c)
    padded = np.zeros((n, h + 2, w + 2, c), dtype=cols.dtype)
    for i in range(3):
        for j in range(3):
            padded[:, i : i + h, j : j + w, :] += cols[:, :, :, i, j, :]
    return padded[:, 1:-1, 1:-1, :]


def maxpool(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2x2 max pooling of (N, H, W, C); returns the output and the windowed view of ``x``."""
    n, h, w, c = x.shape
    windows = x.reshape(n, h // 2, 2, w // 2, 2, c)
    return windows.max(axis=(2, 4)), windows


def maxpool_backward(grad: np.ndarray, out: np.ndarray, windows: np.ndarray) -> np.ndarray:
    # NOTE: a tie would send the gradient to every maximum, but the inputs here are ReLU outputs,
    # whose only likely ties are zeros, and the ReLU's backward zeroes those anyway.
    mask = windows == out[:, :, None, :, None, :]
    n, h2, _, w2, _, c = windows.shape
    return (mask * grad[:, :, None, :, None, :]).reshape(n, 2 * h2, 2 * w2, c)


class CNN:
    """conv 1->8, ReLU, maxpool, conv 8->16, ReLU, maxpool, flatten, linear 784->10."""

    def __init__(self, problem: Problem) -> None:
        w1, b1, w2, b2, w3, b3 = problem.params
        # PyTorch's (out, C, kh, kw) conv weights become (out, kh*kw*C) to match im2col's rows,
        # and the linear layer's columns go from PyTorch's (C, H, W) flattening to (H, W, C).
        self.params = [
            w1.transpose(0, 2, 3, 1).reshape(8, 9).copy(),
            b1.copy(),
            w2.transpose(0, 2, 3, 1).reshape(16, 72).copy(),
            b2.copy(),
            w3.reshape(10, 16, 7, 7).transpose(0, 2, 3, 1).reshape(10, 784).copy(),
            b3.copy(),
        ]

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, list]:
        w1, b1, w2, b2, w3, b3 = self.params
        n = len(x)
        x = x.reshape(n, 28, 28, 1)  # one channel: NCHW and NHWC hold the same bytes
        cols1 = im2col(x)
        h1 = cols1 @ w1.T
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h1 = h1.reshape(n, 28, 28, 8)
        p1, windows1 = maxpool(h1)
        cols2 = im2col(p1)
        h2 = cols2 @ w2.T
        h2 += b2
        np.maximum(h2, 0, out=h2)
        h2 = h2.reshape(n, 14, 14, 16)
        p2, windows2 = maxpool(h2)
        flat = p2.reshape(n, 784)
        logits = flat @ w3.T
        logits += b3
        loss, grad = cross_entropy(logits, y)

        grad_w3, grad_b3 = grad.T @ flat, grad.sum(axis=0)
        grad = maxpool_backward((grad @ w3).reshape(p2.shape), p2, windows2)
        grad *= h2 > 0
        grad = grad.reshape(-1, 16)
        grad_w2, grad_b2 = grad.T @ cols2, grad.sum(axis=0)
        grad = col2im(grad @ w2, p1.shape)
        grad = maxpool_backward(grad, p1, windows1)
        grad *= h1 > 0
        grad = grad.reshape(-1, 8)
        grad_w1, grad_b1 = grad.T @ cols1, grad.sum(axis=0)
        return loss, [grad_w1, grad_b1, grad_w2, grad_b2, grad_w3, grad_b3]


def make_train_step(problem: Problem):
    """The model and ``train_step(x, y) -> loss``."""
    if problem.model == "cnn":
        model = CNN(problem)
        loss_and_grads = model.loss_and_grads
    else:
        model = MLP(problem)
        loss_fn = LOSSES[problem.loss]

        def loss_and_grads(x, y):
            acts = model.forward(x)
            loss, grad = loss_fn(acts[-1], y)
            return loss, model.backward(acts, grad)

    optimizer = make_optimizer(problem, model.params)

    def train_step(x, y):
        loss, grads = loss_and_grads(x, y)
        optimizer.step(grads)
        return loss

    return model, train_step


def make_step(problem: Problem) -> tuple[Callable[[], object], float]:
    """The workload's step (no arguments, returns the loss) and the loss of its first call."""
    if problem.model == "limit":
        a, b = problem.params
        if problem.extra["op"] == "add":
            return (lambda: a + b), 0.0
        out = np.empty_like(a)  # GEMM into a kept buffer: the kernel's speed, not the allocator's
        return (lambda: np.matmul(a, b, out=out)), 0.0
    if problem.model == "op":
        a, b = problem.params
        grad_a, grad_b = np.zeros_like(a), np.zeros_like(b)

        def op_step():
            out = (a * b).sum()
            grad = np.float32(1)  # d out / d out; sum's backward broadcasts it
            np.add(grad_a, grad * b, out=grad_a)  # accumulate, as .backward() does
            np.add(grad_b, grad * a, out=grad_b)
            return out

        return op_step, float(op_step())

    _, train_step = make_train_step(problem)
    batches = itertools.cycle(problem.batches)

    def step():
        return train_step(*next(batches))

    return step, float(step())


def train_digits(problem: Problem, epochs: int) -> float:
    """Train W3 from its initial weights for ``epochs``; return the test accuracy."""
    model, train_step = make_train_step(problem)
    for batches in digits_epochs(problem, epochs):
        for x, y in batches:
            train_step(x, y)
    x_test, y_test = problem.test
    return float((model.forward(x_test)[-1].argmax(1) == y_test).mean())
