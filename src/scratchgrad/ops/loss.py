"""Fused losses, for speed: each is one node where the composed version (nn.functional's general
path) takes four to ten. They cover the common cases only; nn.functional falls back to the
composition for the rest (weights, ignored targets, label smoothing, broadcasting).
"""

from scratchgrad.autograd.function import Function
from scratchgrad.backend import xp
from scratchgrad.ops.reduce import log_softmax


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
