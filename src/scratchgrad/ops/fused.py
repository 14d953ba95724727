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
- ``CrossEntropy``: ``F.nll_loss(F.log_softmax(x, 1), target)`` for (N, C) logits and class
  indices (those equal to an ``ignore_index`` that is no class count for nothing): log_softmax,
  pick, negate and reduce in one node.
- ``CrossEntropyGrad``: its backward ``(softmax(x) - one_hot(target)) * grad_out * scale`` in
  one node, from the log-probabilities the forward kept.
- ``Gelu``: ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (PyTorch's exact gelu), five nodes in one;
  it keeps the normal CDF it computed, so its backward needs no second erf.
- ``GeluGrad``: its backward ``grad_out * (cdf + x * pdf)`` in one node.
- ``LayerNorm``: ``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dims, nine
  nodes in one; it keeps the standardised ``y`` and ``1 / sqrt(var + eps)`` for the backward.
- ``StandardizeGrad``: the gradient through the standardisation,
  ``rstd * (g - mean(g) - y * mean(g * y))``, in one node.

In a ``*Grad`` node (an op's backward as one node, so that it has a backward of its own for
second derivatives) ``grad_out`` is the gradient the op's backward received, an input like any
other; the gradient flowing into the node itself is ``grad``, as everywhere.

Not here, because they are not shortcuts for a composition: ``log_softmax``, ``Erf``,
``Softplus`` and ``LogSigmoid`` are fused for accuracy and stability (``reduce.py``,
``special.py``), and two primitives take a speed option that is their own math in another
layout: ``MatMul``'s ``transpose_x`` (``x.mT @ y``, the weight gradient of ``Linear``) and
``Unfold``'s ``ones_rows`` (a convolution's bias inside its matrix product).
"""

import math

from scratchgrad.autograd.function import ConjugateSaved, Function, as_saved
from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.backend import accumulation_dtype, cast, namespace, ndarray, xp
from scratchgrad.ops.matmul import MatMul, _product
from scratchgrad.ops.reduce import _row_starts, _sum, log_softmax, row_major
from scratchgrad.ops.special import erf

# NaN as this machine's 0 / 0 makes it (its default NaN: the sign bit set on x86, clear on
# ARM): the mean loss of targets that all count for nothing, which PyTorch computes as 0 / 0
ZERO_BY_ZERO = math.inf * 0.0


class TanhGrad(Function):
    """``grad_out * (1 - out**2)``, tanh's backward as one node instead of three (as PyTorch's
    tanh_backward); its own backward gives tanh's second derivative."""

    backward_name = "TanhBackwardBackward0"

    @staticmethod
    def forward(ctx, grad_out, out):
        ctx._to_save = grad_out, out  # save_for_backward's, without its call (hot)
        wide = accumulation_dtype(out.dtype)
        if wide is None:
            return grad_out * (1 - out * out)
        grad_out, out = cast(grad_out, wide), cast(out, wide)  # 16-bit: rounded once, as PyTorch
        return cast(grad_out * (1 - out * out), ctx._to_save[1].dtype)

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
    three (transpose, matmul, add), which is most of the cost of a small network's step.

    NOTE: its ``next_functions`` are the leaves themselves: PyTorch's graph has a TBackward0
    between the weight and its mm/addmm, and for an input of 1 or 3+ dims the product's own
    node under the view (or squeeze) named here; as nodes they would cost every step."""

    @staticmethod
    def forward(ctx, x, w, b=None):
        if x.shape[-1] != w.shape[-1]:
            raise ValueError(
                f"linear: input shape {x.shape} and weight shape {w.shape} do not match: "
                f"{x.shape[-1]} != {w.shape[-1]}"
            )
        ctx._to_save = x, w  # save_for_backward's, without its call (hot)
        wide = accumulation_dtype(x.dtype)
        out = _product(x, w.T, wide)
        if wide is not None:
            return _sixteen_bit_biased(out, x, b)
        if b is not None:
            out += b
        return out

    def name(self) -> str:
        """PyTorch's: addmm (or mm without a bias) on a matrix input; a batch or a single
        vector goes through a view (or a squeeze) of that product."""
        biased = len(self.parents) == 3
        if len(self.out_shape) == 2:
            return "AddmmBackward0" if biased else "MmBackward0"
        if biased:
            return "ViewBackward0"
        return "SqueezeBackward4" if len(self.out_shape) == 1 else "UnsafeViewBackward0"

    @property
    def next_functions(self):
        """In PyTorch's order: addmm's (bias, input, weight), mm's (input, weight)."""
        pairs = Function.next_functions.fget(self)
        return pairs if len(pairs) == 2 else (pairs[2], *pairs[:2])

    def swapped_input(self, i, tensor, array):
        # PyTorch's addmm saves w.t(), and a view of an input that is not a matrix: views made
        # in forward, which keep the memory that `.data =` has replaced since
        return as_saved(tensor, array) if i == 1 or array.ndim != 2 else tensor

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        dx, dw, db = needs if len(needs) == 3 else (*needs, False)  # (x, w) without a bias
        x, w = ctx._saved_tensors((dw, dx))  # the input for the weight's gradient, and back
        grad_w = None
        if dw:  # batch dims of any number (or none) are summed by one matrix product
            rows, inputs = (grad, x) if x.array.ndim == 2 else (_as_matrix(grad), _as_matrix(x))
            grad_w = MatMul.apply(rows, inputs, transpose_x=True)
        grad_x = None
        if dx:  # MatMul takes matrices; a single input vector goes through Tensor.matmul
            grad_x = MatMul.apply(grad, w) if grad.array.ndim > 1 else grad @ w
        return grad_x, grad_w, grad if db else None


def _sixteen_bit_biased(out, x, b):
    """A 16-bit ``x @ w.T`` computed in float32 (``out``), plus ``b``, rounded to 16 bits as
    PyTorch's ``linear``: once (addmm), but for a strided input of 3 or more dims, whose product
    its matmul rounds before adding the bias (a quarter of such outputs were an ulp off)."""
    if b is None:
        return cast(out, x.dtype)
    if x.ndim > 2 and not x.flags.c_contiguous:
        out = cast(cast(out, x.dtype), out.dtype)
    out += b
    return cast(out, x.dtype)


class ComplexLinear(ConjugateSaved, Linear):
    """Linear's node when complex numbers meet: grad @ conj(w), grad^T @ conj(x) and grad."""


Linear.complex_twin = ComplexLinear


def _as_matrix(t):
    """A tensor of any number of dims as one matrix of its last-dim rows."""
    return t.reshape(math.prod(t.shape[:-1]), t.shape[-1])


def mse(x, y, reduction="mean"):
    """``mean((x - y) ** 2)`` (or the sum) of two arrays of one shape: MSELoss's forward, which
    a jitted step replays without the node (jit/kernels.py)."""
    diff = x - y
    add = (xp if type(diff) is ndarray else namespace(diff)).add
    total = add.reduce(diff * diff, axis=None)
    # what ndarray.mean does, without its Python-level wrapper (costly on small arrays)
    return total / diff.size if reduction == "mean" else total


def mse_grad(grad_out, x, y, scale):
    """``(x - y) * (grad_out * scale)``: MSELossGrad's forward (see ``mse``)."""
    return (x - y) * (grad_out * scale)


class MSELoss(Function):
    """mean((x - y)**2), or the sum; ``x`` and ``y`` have the same shape."""

    backward_name = "MseLossBackward0"

    @staticmethod
    def forward(ctx, x, y, reduction="mean"):
        ctx._to_save = x, y  # save_for_backward's, without its call (hot)
        ctx.scale = 2 / max(x.size, 1) if reduction == "mean" else 2
        return mse(x, y, reduction)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        grad_x = MSELossGrad.apply(grad, x, y, scale=ctx.scale)
        # (needs_input_grad[1], without the property's call and tuple: every W1 step runs this)
        return grad_x, -grad_x if ctx.parents[1] is not None else None


class MSELossGrad(Function):
    """``scale * (x - y) * grad_out``: MSELoss's backward as one node; it is linear in each
    input, so its own backward is three products."""

    backward_name = "MseLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad_out, x, y, scale):
        ctx._to_save = grad_out, x, y  # save_for_backward's, without its call (hot)
        ctx.scale = scale
        return mse_grad(grad_out, x, y, scale)

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
    negative log-likelihood of the targets, averaged (or summed) over the batch. A target equal
    to ``ignore_index`` (which is no class) counts for nothing, as PyTorch's. The forward finds
    such targets in each batch (``ignored_targets``, which also raises PyTorch's IndexError for
    any other target out of range) and leaves its backward where the counted targets are
    (``ctx.entries``), so that a jitted step takes this node for every batch, as eager steps
    do, whichever batches it was recorded on (it once replayed the path of those)."""

    backward_name = "NllLossBackward0"  # PyTorch's cross_entropy ends in nll_loss

    @staticmethod
    def forward(ctx, logits, target, reduction="mean", ignore_index=-100):
        log_probs = log_softmax(logits, 1)
        # (the target as PyTorch's nll_loss saves it: a change in place is caught, not read)
        ctx._to_save = logits, log_probs, target  # save_for_backward's, without its call (hot)
        ctx.mean = reduction == "mean"
        module = xp if type(logits) is ndarray else namespace(logits)
        ignored = ignored_targets(target, log_probs.shape[1], ignore_index, module)
        if ignored is not None:
            return _loss_ignoring(ctx, log_probs, target, ignored, module)
        ctx.entries = _target_entries(log_probs, target, module)
        picked = log_probs.reshape(-1)[ctx.entries]
        # (ndarray.sum less its wrapper; 0 - sum, not -sum: a loss of exactly 0, every
        # log-probability 0, is +0.0 as PyTorch's sum of the -log p from 0)
        total = 0.0 - module.add.reduce(picked, None)
        return total * (1 / max(len(target), 1)) if ctx.mean else total

    @staticmethod
    def backward(ctx, grad):
        # the logits only where this backward is recorded (create_graph), for the node's own
        # backward: PyTorch's reads the log-probabilities alone, and so lets the logits change
        logits, log_probs, _ = ctx._saved_tensors((is_grad_enabled(), True, True))
        grad_logits = CrossEntropyGrad.apply(
            grad, logits, log_probs=log_probs.array, entries=ctx.entries, mean=ctx.mean
        )
        return grad_logits, None


def ignored_targets(target, n_classes: int, ignore_index: int, module, dim=None):
    """None where every target is a class (one reduction: ``all_below``), else where the
    targets equal ``ignore_index``; any other out of range raises PyTorch's IndexError (its
    vmap's RuntimeError, given the batch's class ``dim``: ``check_class_indices``)."""
    if all_below(target, n_classes):
        return None
    ignored = target == ignore_index
    check_class_indices(module.where(ignored, 0, target), n_classes, dim)
    return ignored


def _loss_ignoring(ctx, log_probs, target, ignored, module):
    """CrossEntropy's loss where some targets are ignored: the others' negative
    log-likelihood, summed, or averaged over them (NaN when none counts, PyTorch's 0 / 0). The
    ignored rows of the log-probabilities the backward reads become -inf: no gradient there."""
    ctx.entries = _target_entries(log_probs, target, module)[module.logical_not(ignored)]
    picked = log_probs.reshape(-1)[ctx.entries]
    log_probs[ignored] = -math.inf
    total = 0.0 - module.add.reduce(picked, None)  # (+0.0 for 0, as in forward)
    counted = len(ctx.entries)
    if not ctx.mean:
        return total
    return total * (1 / counted) if counted else total * ZERO_BY_ZERO  # (total is 0)


class CrossEntropyGrad(Function):
    """``(softmax(logits) - one_hot(target)) * grad_out * scale``: CrossEntropy's backward as
    one node, from the log-probabilities its forward kept and where its counted targets are
    (``entries``, flat: ``scale`` is 1 for a sum, 1 over their count for a ``mean``; an ignored
    target's row is 0). Its own backward uses the softmax Jacobian: ``p * (v - sum(v * p))``
    for a row ``v``."""

    backward_name = "NllLossBackwardBackward0"

    @staticmethod
    def forward(ctx, grad_out, logits, log_probs, entries, mean):
        ctx._to_save = grad_out, logits  # save_for_backward's, without its call (hot)
        ctx.entries, ctx.mean = entries, mean
        return cross_entropy_grad(grad_out, log_probs, entries, mean)

    @staticmethod
    def backward(ctx, grad):
        grad_out, logits = ctx.saved_tensors
        d_grad_out, d_logits = ctx.needs_input_grad
        p = logits.softmax(1)
        xp = namespace(logits.array)
        one_hot = xp.zeros(logits.shape, logits.dtype)
        one_hot.reshape(-1)[ctx.entries] = 1
        counted = len(ctx.entries)
        if counted < len(one_hot):  # ignored targets: their rows are 0, whatever the logits
            kept = one_hot.sum(1, keepdims=True)
            p, grad = p * kept, grad * kept
        scale = 1 / max(counted, 1) if ctx.mean else 1
        grad_logits = None
        if d_logits:
            grad_logits = p * (grad - (grad * p).sum(1, keepdim=True)) * (grad_out * scale)
        return grad * (p - one_hot) * scale if d_grad_out else None, grad_logits


def cross_entropy_grad(grad_out, log_probs, entries, mean):
    """``(exp(log_probs) - one_hot(target)) * grad_out * scale`` (see CrossEntropyGrad):
    its forward, which a jitted step replays without the node (jit/kernels.py), on the
    entries each replay's forward found."""
    module = xp if type(log_probs) is ndarray else namespace(log_probs)
    # C-ordered, so that the flat view below writes into it (exp keeps a transposed layout)
    out = module.ascontiguousarray(module.exp(log_probs))
    out.reshape(-1)[entries] -= 1
    out *= grad_out * (1 / max(len(entries), 1) if mean else 1)
    return out


def all_below(index, n: int) -> bool:
    """Whether every entry of a non-empty integer array is in [0, ``n``). One reduction, not a
    min and a max: viewed as unsigned, a negative entry is above any ``n``. NumPy's without
    ndarray.max's Python wrapper (eager W3's step paid ~4k instructions for min and max's)."""
    unsigned = index.view(f"u{index.dtype.itemsize}")
    if type(index) is ndarray:
        return bool(xp.maximum.reduce(unsigned, None) < n)
    return bool(unsigned.max() < n)


def check_class_indices(target, n_classes: int, dim: int | None = None) -> None:
    """Raise PyTorch's IndexError for an integer class index outside [0, ``n_classes``), or,
    given the batch's class ``dim``, the RuntimeError of the gather its vmap makes."""
    if target.size and not all_below(target, n_classes):
        bad = target[(target < 0) | (target >= n_classes)].flat[0]
        if dim is None:
            raise IndexError(f"Target {bad} is out of bounds.")
        raise RuntimeError(
            f"index {bad} is out of bounds for dimension {dim} with size {n_classes}"
        )


def _target_entries(rows, target, module):
    """Where each row's target class is in the flat C-ordered (N, C) ``rows``: one flat index
    per row, cheaper to gather and scatter with than a pair of index arrays (about 1.2 against
    2.5 us on W3's (64, 10) batch, with the rows' starts kept)."""
    return _row_starts(*rows.shape, module) + target


class Gelu(Function):
    """``x * cdf(x)``, cdf the standard normal CDF ``0.5 * (1 + erf(x / sqrt(2)))``: PyTorch's
    exact gelu as one node instead of five, keeping the CDF for the backward (the erf is most of
    the cost)."""

    @staticmethod
    def forward(ctx, x):
        cdf = erf(x * (1 / math.sqrt(2)), overwrite=True)
        cdf += 1
        cdf *= 0.5
        ctx.save_for_backward(x, cdf)
        return x * cdf

    @staticmethod
    def backward(ctx, grad):
        x, cdf = ctx.saved_tensors  # cdf: a constant here; GeluGrad's backward rebuilds it
        return GeluGrad.apply(grad, x, cdf)


class GeluGrad(Function):
    """``grad_out * (cdf + x * pdf)``, gelu's derivative times the incoming gradient, as one node
    (PyTorch's gelu_backward) from the CDF gelu kept. Its own backward recomputes the CDF from
    ``x`` with Tensor operations, so every higher derivative flows through ``x``."""

    backward_name = "GeluBackwardBackward0"

    @staticmethod
    def forward(ctx, grad_out, x, cdf):
        ctx.save_for_backward(grad_out, x)
        module = xp if type(x) is ndarray else namespace(x)
        flat = x.reshape(-1)  # (out= needs arrays, and NumPy makes 0-d results scalars)
        slope = flat * -0.5  # cdf + x * pdf in one buffer, pdf = exp(-x**2 / 2) / sqrt(2 pi)
        slope *= flat
        module.exp(slope, out=slope)
        slope *= flat
        slope *= 1 / math.sqrt(2 * math.pi)
        slope += cdf.reshape(-1)
        return grad_out * slope.reshape(x.shape)  # (vmap may give a batch of grad_out: broadcast)

    @staticmethod
    def backward(ctx, grad):
        grad_out, x = ctx.saved_tensors
        d_grad_out, d_x, _ = ctx.needs_input_grad
        pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
        cdf = ((x * (1 / math.sqrt(2))).erf() + 1) * 0.5
        return (
            grad * (cdf + x * pdf) if d_grad_out else None,
            grad * grad_out * pdf * (2 - x * x) if d_x else None,  # d/dx (cdf + x pdf)
            None,
        )


class LayerNorm(Function):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``dims`` dims, with the
    biased variance (PyTorch's native_layer_norm; weight and bias may be None), as one node
    instead of nine. It keeps the standardised ``y`` and ``rstd = 1 / sqrt(var + eps)``; the
    gradient for ``x`` is StandardizeGrad's of ``grad * weight``, for the weight
    ``sum(grad * y)`` and for the bias ``sum(grad)``, over the other dims."""

    backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, dims, eps):
        axes, count = tuple(range(-dims, 0)), _count(x.shape, dims)
        y = row_major(x - _sum(x, axes, True) / count)
        rstd = 1 / namespace(x).sqrt(_sum(y * y, axes, True) / count + eps)
        y *= rstd
        # (the bias only as PyTorch's saves it too: a change in place raises)
        ctx.save_for_backward(x, weight, bias, y, rstd)
        ctx.dims, ctx.eps = dims, eps
        if weight is None and bias is None:  # a copy: an in-place op on out (relu_) keeps y
            return y.copy()
        out = y if weight is None else y * weight
        return out if bias is None else out + bias

    @staticmethod
    def backward(ctx, grad):
        x, weight, _, y, rstd = ctx.saved_tensors
        d_x, d_weight, d_bias = ctx.needs_input_grad
        if d_weight and is_grad_enabled():  # y as a function of x, for the next derivative
            y = standardized(x, ctx.dims, ctx.eps)[0]
        grad_y = grad if weight is None else grad * weight
        return (
            StandardizeGrad.apply(grad_y, x, y, rstd, dims=ctx.dims, eps=ctx.eps) if d_x else None,
            (grad * y).sum_to_size(weight.shape) if d_weight else None,
            grad.sum_to_size(x.shape[x.ndim - ctx.dims :]) if d_bias else None,
        )


def _count(shape: tuple, dims: int) -> int:
    """How many entries the last ``dims`` dims hold, at least 1: an empty normalized shape has
    no entries to divide, and 0 / 0 statistics would only warn (the results are empty)."""
    return max(math.prod(shape[len(shape) - dims :]), 1)


def standardized(x, dims: int, eps: float):
    """LayerNorm's ``y`` and ``rstd`` (without weight and bias) from Tensor operations."""
    axes = tuple(range(-dims, 0))
    centered = x - x.mean(axes, keepdim=True)
    rstd = ((centered * centered).mean(axes, keepdim=True) + eps).rsqrt()
    return centered * rstd, rstd


class StandardizeGrad(Function):
    """``rstd * (g - mean(g) - y * mean(g * y))``, the gradient through LayerNorm's
    standardisation (``g`` the incoming gradient, ``y`` the standardised ``x``), as one node
    from the ``y`` and ``rstd`` the forward kept; they are values of ``x``'s, so every
    derivative flows through ``x`` (None for them).

    Its own backward, for a gradient ``h``: the map from ``g`` is symmetric, so ``h`` goes back
    through it (``J h``); and with ``dx`` this node's result and sums over the normalised dims,
    ``-(rstd / n) * (y * sum(h * dx) + sum(g * y) * J h + sum(h * y) * dx)`` for ``x``.
    """

    @staticmethod
    def forward(ctx, grad_out, x, y, rstd, dims, eps):
        ctx.save_for_backward(grad_out, x)
        ctx.dims, ctx.eps = dims, eps
        axes = tuple(range(-dims, 0))  # from the end: a batch of gradients may have more dims
        count = _count(y.shape, dims)
        out = grad_out - y * (_sum(grad_out * y, axes, True) / count)
        out -= _sum(grad_out, axes, True) / count
        out *= rstd
        return out

    @staticmethod
    def backward(ctx, grad):
        g, x = ctx.saved_tensors
        d_g, d_x = ctx.needs_input_grad[:2]
        y, rstd = standardized(x, ctx.dims, ctx.eps)  # from x, for the derivatives after this one
        axes = tuple(range(-ctx.dims, 0))
        count = _count(x.shape, ctx.dims)
        j_h = StandardizeGrad.apply(grad, x, y, rstd, dims=ctx.dims, eps=ctx.eps)
        grad_x = None
        if d_x:
            dx = StandardizeGrad.apply(g, x, y, rstd, dims=ctx.dims, eps=ctx.eps)
            terms = y * (grad * dx).sum(axes, keepdim=True)
            terms = terms + (g * y).sum(axes, keepdim=True) * j_h
            terms = terms + (grad * y).sum(axes, keepdim=True) * dx
            grad_x = terms * (rstd * (-1 / count))
        return j_h if d_g else None, grad_x, None, None
