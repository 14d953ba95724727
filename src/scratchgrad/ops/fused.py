"""Fused primitives."""

import math

from scratchgrad.autograd.function import Function
from scratchgrad.backend import xp
from scratchgrad.ops.matmul import MatMul, _product
from scratchgrad.ops.reduce import log_softmax


class TanhGrad(Function):
    """``grad * (1 - out**2)``, tanh's backward as one node instead of three (for speed, as
    PyTorch's tanh_backward); its own backward gives tanh's second derivative."""

    backward_name = "TanhBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, out):
        ctx.save_for_backward(grad, out)
        return grad * (1 - out * out)

    @staticmethod
    def backward(ctx, g):
        grad, out = ctx.saved_tensors
        d_grad, d_out = ctx.needs_input_grad
        return (
            g * (1 - out * out) if d_grad else None,
            g * grad * out * -2 if d_out else None,
        )


class Linear(Function):
    """``x @ w.T + b``, fused as PyTorch's addmm: the most common layer as one node instead of
    three (transpose, matmul, add), which is most of the cost of a small network's step."""

    @staticmethod
    def forward(ctx, x, w, b=None):
        if x.shape[-1] != w.shape[-1]:
            raise ValueError(
                f"linear: input shape {x.shape} and weight shape {w.shape} do not match: "
                f"{x.shape[-1]} != {w.shape[-1]}"
            )
        ctx.save_for_backward(x, w)
        out = _product(x, w.T)
        if b is not None:
            out += b
        return out if out.dtype == x.dtype else out.astype(x.dtype)  # 16-bit: rounded once

    def name(self) -> str:
        return "AddmmBackward0" if len(self.parents) == 3 else "MmBackward0"

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        dx, dw, db = ctx.needs_input_grad
        grad_w = None
        if dw:  # batch dims of any number (or none) are summed by one matrix product
            rows, inputs = (grad, x) if x.array.ndim == 2 else (_as_matrix(grad), _as_matrix(x))
            grad_w = MatMul.apply(rows, inputs, transpose_x=True)
        grad_x = None
        if dx:  # MatMul takes matrices; a single input vector goes through Tensor.matmul
            grad_x = MatMul.apply(grad, w) if grad.ndim > 1 else grad @ w
        return grad_x, grad_w, grad if db else None


def _as_matrix(t):
    """A tensor of any number of dims as one matrix of its last-dim rows."""
    return t.reshape(math.prod(t.shape[:-1]), t.shape[-1])


class MSELoss(Function):
    """mean((x - y)**2), or the sum; ``x`` and ``y`` have the same shape."""

    backward_name = "MseLossBackward0"

    @staticmethod
    def forward(ctx, x, y, reduction="mean"):
        diff = x - y
        ctx.save_for_backward(x, y)
        ctx.scale = 2 / max(diff.size, 1) if reduction == "mean" else 2
        total = xp.add.reduce(diff * diff, axis=None)
        # what ndarray.mean does, without its Python-level wrapper (a quarter of this op's time)
        return total / diff.size if reduction == "mean" else total

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        grad_x = MSELossGrad.apply(grad, x, y, scale=ctx.scale)
        return grad_x, -grad_x if ctx.needs_input_grad[1] else None


class MSELossGrad(Function):
    """``scale * (x - y) * grad``: MSELoss's backward as one node; it is linear in each input,
    so its own backward is three products."""

    backward_name = "MseLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, x, y, scale):
        ctx.save_for_backward(grad, x, y)
        ctx.scale = scale
        return (x - y) * (grad * scale)

    @staticmethod
    def backward(ctx, g):
        grad, x, y = ctx.saved_tensors
        d_grad, d_x, d_y = ctx.needs_input_grad
        g_x = g * grad * ctx.scale if d_x or d_y else None
        return (
            g * (x - y) * ctx.scale if d_grad else None,
            g_x,
            -g_x if d_y else None,
        )


class CrossEntropy(Function):
    """Cross entropy of (N, C) logits with N class indices: log_softmax (stable) and the
    negative log-likelihood of the targets, averaged (or summed) over the batch."""

    backward_name = "NllLossBackward0"  # PyTorch's cross_entropy ends in nll_loss

    @staticmethod
    def forward(ctx, logits, target, reduction="mean"):
        log_probs = log_softmax(logits, 1)
        ctx.save_for_backward(logits, log_probs)
        ctx.target = target
        ctx.scale = 1 / max(len(target), 1) if reduction == "mean" else 1
        return -log_probs[xp.arange(len(target)), target].sum() * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        logits, log_probs = ctx.saved_tensors
        grad_logits = CrossEntropyGrad.apply(
            grad, logits, log_probs=log_probs.array, target=ctx.target, scale=ctx.scale
        )
        return grad_logits, None


class CrossEntropyGrad(Function):
    """``(softmax(logits) - one_hot(target)) * grad * scale``: CrossEntropy's backward as one
    node, from the log-probabilities its forward kept. Its own backward uses the softmax
    Jacobian: ``p * (v - sum(v * p))`` for a row ``v``."""

    backward_name = "NllLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, logits, log_probs, target, scale):
        ctx.save_for_backward(grad, logits)
        ctx.target, ctx.scale = target, scale
        out = xp.exp(log_probs)
        out[xp.arange(len(target)), target] -= 1
        out *= grad * scale
        return out

    @staticmethod
    def backward(ctx, g):
        grad, logits = ctx.saved_tensors
        d_grad, d_logits = ctx.needs_input_grad
        p = logits.softmax(1)
        one_hot = xp.zeros(logits.shape, logits.dtype)
        one_hot[xp.arange(len(ctx.target)), ctx.target] = 1
        return (
            g * (p - one_hot) * ctx.scale if d_grad else None,
            p * (g - (g * p).sum(1, keepdim=True)) * (grad * ctx.scale) if d_logits else None,
        )
