"""The fast path: primitives that fuse several rows of the table into one node, for speed.

Everything here is also written, more slowly, as a composition of the primitives in the other
``ops/`` files, which are the math. Each fused node does what its composed twin does in one
node (one NumPy pass where it can), where PyTorch fuses too; ``nn.functional`` takes the fused
node for the cases it covers and the composition for the rest. The op table checks each pair
(``tests/op_table.py``'s ``twin``): the same values and gradients, to float64 rounding.

Each node, its composed twin, and what it saves (a W1 step went from 22 nodes to 11):

- ``TanhGrad``: tanh's backward ``grad_out * (1 - out * out)``, three nodes in one (PyTorch's
  tanh_backward); every tanh layer's backward takes it.
- ``Linear``: ``x @ w.mT + b``, PyTorch's addmm: transpose, product and add in one node, and
  a backward of two matrix products.
- ``MSELoss``: ``F.mse_loss(x, y, reduction="none").mean()`` (or ``.sum()``): subtract,
  square and reduce in one node, without NumPy's Python-level ``mean``.
- ``MSELossGrad``: its backward ``(x - y) * (grad_out * scale)`` in one node.
- ``CrossEntropy``: ``F.nll_loss(F.log_softmax(x, 1), target)`` for (N, C) logits and valid
  class indices: log_softmax, pick, negate and reduce in one node.
- ``CrossEntropyGrad``: its backward ``(softmax(x) - one_hot(target)) * grad_out * scale`` in
  one node, from the log-probabilities the forward kept.

In a ``*Grad`` node (an op's backward as one node, so that it has a backward of its own for
second derivatives) ``grad_out`` is the gradient the op's backward received, an input like any
other; the gradient flowing into the node itself is ``grad``, as everywhere.

Not here, because they are not shortcuts for a composition: ``log_softmax``, ``Erf`` and
``Softplus`` are fused for accuracy and stability (``reduce.py``, ``special.py``), and two
primitives take a speed option that is their own math in another layout: ``MatMul``'s
``transpose_x`` (``x.mT @ y``, the weight gradient of ``Linear``) and ``Unfold``'s
``ones_rows`` (a convolution's bias inside its matrix product).
"""

import math

from scratchgrad.autograd.function import Function
from scratchgrad.backend import accumulation_dtype, cast, namespace, ndarray, xp
from scratchgrad.ops.matmul import MatMul, _product
from scratchgrad.ops.reduce import log_softmax


class TanhGrad(Function):
    """``grad_out * (1 - out**2)``, tanh's backward as one node instead of three (as PyTorch's
    tanh_backward); its own backward gives tanh's second derivative."""

    backward_name = "TanhBackwardBackward0"

    @staticmethod
    def forward(ctx, grad_out, out):
        ctx.save_for_backward(grad_out, out)
        return grad_out * (1 - out * out)

    @staticmethod
    def backward(ctx, grad):
        grad_out, out = ctx.saved_tensors
        d_grad_out, d_out = ctx.needs_input_grad
        return (
            grad * (1 - out * out) if d_grad_out else None,
            grad * grad_out * out * -2 if d_out else None,
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
        wide = accumulation_dtype(x.dtype)
        out = _product(x, w.T, wide)
        if b is not None:
            out += b
        return out if wide is None else cast(out, x.dtype)  # 16-bit: rounded once

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
            grad_x = MatMul.apply(grad, w) if grad.array.ndim > 1 else grad @ w
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
        add = (xp if type(diff) is ndarray else namespace(diff)).add
        total = add.reduce(diff * diff, axis=None)
        # what ndarray.mean does, without its Python-level wrapper (costly on small arrays)
        return total / diff.size if reduction == "mean" else total

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        grad_x = MSELossGrad.apply(grad, x, y, scale=ctx.scale)
        return grad_x, -grad_x if ctx.needs_input_grad[1] else None


class MSELossGrad(Function):
    """``scale * (x - y) * grad_out``: MSELoss's backward as one node; it is linear in each
    input, so its own backward is three products."""

    backward_name = "MseLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad_out, x, y, scale):
        ctx.save_for_backward(grad_out, x, y)
        ctx.scale = scale
        return (x - y) * (grad_out * scale)

    @staticmethod
    def backward(ctx, grad):
        grad_out, x, y = ctx.saved_tensors
        d_grad_out, d_x, d_y = ctx.needs_input_grad
        grad_x = grad * grad_out * ctx.scale if d_x or d_y else None
        return (
            grad * (x - y) * ctx.scale if d_grad_out else None,
            grad_x,
            -grad_x if d_y else None,
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
        rows = (xp if type(logits) is ndarray else namespace(logits)).arange(len(target))
        return -log_probs[rows, target].sum() * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        logits, log_probs = ctx.saved_tensors
        grad_logits = CrossEntropyGrad.apply(
            grad, logits, log_probs=log_probs.array, target=ctx.target, scale=ctx.scale
        )
        return grad_logits, None


class CrossEntropyGrad(Function):
    """``(softmax(logits) - one_hot(target)) * grad_out * scale``: CrossEntropy's backward as
    one node, from the log-probabilities its forward kept. Its own backward uses the softmax
    Jacobian: ``p * (v - sum(v * p))`` for a row ``v``."""

    backward_name = "NllLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad_out, logits, log_probs, target, scale):
        ctx.save_for_backward(grad_out, logits)
        ctx.target, ctx.scale = target, scale
        module = xp if type(log_probs) is ndarray else namespace(log_probs)
        out = module.exp(log_probs)
        out[module.arange(len(target)), target] -= 1
        out *= grad_out * scale
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_out, logits = ctx.saved_tensors
        d_grad_out, d_logits = ctx.needs_input_grad
        p = logits.softmax(1)
        xp = namespace(logits.array)
        one_hot = xp.zeros(logits.shape, logits.dtype)
        one_hot[xp.arange(len(ctx.target)), ctx.target] = 1
        grad_logits = None
        if d_logits:
            grad_logits = p * (grad - (grad * p).sum(1, keepdim=True)) * (grad_out * ctx.scale)
        return grad * (p - one_hot) * ctx.scale if d_grad_out else None, grad_logits
