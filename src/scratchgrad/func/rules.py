"""The batching rules: for each primitive of ``ops/`` (and Function of ``linalg``), how to run
it on batches.

A rule gets the primitive, its arguments (a batched one as its whole batch, batch dim first;
the others as they are), which ones are batched, and the static keyword arguments; it returns
the batch of results, batch dim first, computed with the same primitives (so autograd records
it). Most primitives are elementwise: line the members up and call the op as it is. The others
shift the dims they are told about by one, for the batch dim in front.

Primitives that only backward formulas call (``TanhGrad``, ``GeluGrad``, ``SoftmaxGrad``,
``StandardizeGrad``, ``MSELossGrad``, ``CrossEntropyGrad``, ``IndexAdd``, ``Spread``) have rules
too: those formulas run batched when a function made by ``vjp`` is vmapped.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable

from scratchgrad import backend
from scratchgrad.autograd import function
from scratchgrad.backend import xp
from scratchgrad.creation import Normal
from scratchgrad.distributions.gamma import StandardGamma
from scratchgrad.func.batching import _depth, _Logical, at_front, batch_size, pad_to_rank
from scratchgrad.linalg import decompositions, derived, norms, systems
from scratchgrad.linalg.eig import Eig
from scratchgrad.linalg.extras import Geqrf
from scratchgrad.linalg.ldl import LDLFactor, LDLSolve
from scratchgrad.linalg.legacy import CholeskySolve
from scratchgrad.linalg.lu import LUFactor, Permutation
from scratchgrad.linalg.matrix_exp import MatrixExp
from scratchgrad.ops import binary, conv, fused, matmul, movement, reduce, special, unary
from scratchgrad.ops import complex as complex_ops
from scratchgrad.ops import fft as fft_ops
from scratchgrad.tensor import Tensor


def elementwise(cls, values, batched, kwargs):
    """Each member lined up with the unbatched operands by broadcasting, so one call does all."""
    return cls.apply(*pad_to_rank(values, batched), **kwargs)


def reduction(cls, values, batched, kwargs):
    """``dim`` (an int, a tuple, or None for all) shifted past the batch dim."""
    (x,) = values
    kwargs["dim"] = _shifted(kwargs.get("dim"), x.ndim - 1)
    return cls.apply(x, **kwargs)


def _shifted(dim, rank: int):
    if dim is None:
        return tuple(range(1, rank + 1))
    return dim + 1 if isinstance(dim, int) else tuple(d + 1 for d in dim)


def dim_shifted(cls, values, batched, kwargs):
    """Mix: its ``dim`` shifted past the batch dim."""
    kwargs["dim"] += 1
    return cls.apply(*values, **kwargs)


def dims_shifted(cls, values, batched, kwargs):
    """Flip, Roll, MaxOver and the Fourier transforms: ``dims`` shifted past the batch dim."""
    kwargs["dims"] = _shifted(kwargs["dims"], values[0].ndim - 1)
    return cls.apply(*values, **kwargs)


def unsqueeze(cls, values, batched, kwargs):
    """The batch dim prefixed to the target shape, the new dim shifted past it."""
    (x,) = values
    return cls.apply(x, shape=(x.shape[0], *kwargs["shape"]), dim=kwargs["dim"] + 1)


def permute(cls, values, batched, kwargs):
    return cls.apply(values[0], dims=(0, *(d + 1 for d in kwargs["dims"])))


def shape_prefixed(cls, values, batched, kwargs):
    """Reshape and Expand: the batch dim prefixed to the target shape (Expand's input padded
    to the target's rank first, as broadcasting aligns shapes from the right)."""
    (x,) = pad_to_rank(values, batched) if cls is movement.Reshape else values
    shape = tuple(kwargs["shape"])
    if issubclass(cls, movement.Expand) and x.ndim - 1 < len(shape):
        x = x.reshape(x.shape[0], *(1,) * (len(shape) - x.ndim + 1), *x.shape[1:])
    return cls.apply(x, shape=(x.shape[0], *shape))


def sum_to_size(cls, values, batched, kwargs):
    """The leading dims a member loses are summed first: SumToSize itself would sum the
    batch dim, which leads."""
    (x,) = values
    shape = tuple(kwargs["shape"])
    lead = x.ndim - 1 - len(shape)
    if lead > 0:
        x = reduce.Sum.apply(x, dim=tuple(range(1, lead + 1)))
    return cls.apply(x, shape=(x.shape[0], *shape))


def diagonal(cls, values, batched, kwargs):
    """The two dims shifted past the batch dim; the diagonal's new dim goes last anyway."""
    return cls.apply(
        values[0], offset=kwargs["offset"], dim1=kwargs["dim1"] + 1, dim2=kwargs["dim2"] + 1
    )


def pad(cls, values, batched, kwargs):
    return cls.apply(values[0], widths=((0, 0), *kwargs["widths"]), value=kwargs.get("value", 0.0))


def concatenate(cls, values, batched, kwargs):
    """Unbatched pieces are repeated for every member first."""
    size = batch_size(values, batched)
    pieces = [v if b else at_front(v, size) for v, b in zip(values, batched)]
    return cls.apply(*pieces, dim=kwargs.get("dim", 0) + 1)


def index(cls, values, batched, kwargs):
    """GetItem and IndexAdd: a full slice for the batch dim in front of the index.

    NOTE: NumPy puts the dims of advanced (array) indices first when a slice separates them;
    the batch dim's slice then lands after those dims and is moved back to the front.
    """
    (x,) = values
    items = kwargs["index"]
    if any(isinstance(i, (Tensor, _Logical)) for i in items):
        raise RuntimeError(
            f"vmap: {cls.__name__} with a batched index tensor is not supported; use gather"
        )
    kwargs["index"] = (slice(None), *items)
    moved = _advanced_dims_first(items)
    if cls is movement.GetItem:
        out = cls.apply(x, **kwargs)
        return out.movedim(moved, 0) if moved else out
    kwargs["shape"] = (x.shape[0], *kwargs["shape"])
    return cls.apply(x.movedim(0, moved) if moved else x, **kwargs)


def _advanced_dims_first(items: tuple) -> int:
    """How many dims NumPy puts before the batch dim's slice: those of the advanced indices
    when a slice, Ellipsis or None separates them (integers count as advanced among arrays)."""
    arrays = [i for i, item in enumerate(items) if backend.is_array(item)]
    if not arrays:
        return 0
    advanced = [
        i
        for i, item in enumerate(items)
        if backend.is_array(item) or isinstance(item, (int, xp.integer))
    ]
    if advanced[-1] - advanced[0] == len(advanced) - 1:
        return 0
    shapes = [
        (int(item.sum()),) if item.dtype == bool else item.shape
        for item in items
        if backend.is_array(item)
    ]
    return len(xp.broadcast_shapes(*shapes))


def matmul_rule(cls, values, batched, kwargs):
    """Batched matrices times one matrix are one product of all their rows, and one matrix
    times batched matrices one product with all their columns side by side: a single BLAS call
    instead of NumPy's loop over the batch (docs/benchmarks.md), in backward too.
    Otherwise ranks are padded and the batches broadcast: ``(B, n, k) @ (B, k, m)``."""
    x, y = values
    x_batched, y_batched = batched
    if not kwargs.get("transpose_x") and y.ndim == 2 and not y_batched:
        rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
        return cls.apply(rows, y).reshape(*x.shape[:-1], y.shape[-1])
    if not kwargs.get("transpose_x") and x.ndim == 2 and not x_batched and y.ndim == 3:
        size, k, m = y.shape
        columns = y.permute(1, 0, 2).reshape(k, size * m)  # a view when y is a transposed batch
        return cls.apply(x, columns).reshape(x.shape[0], size, m).permute(1, 0, 2)
    return cls.apply(*pad_to_rank(values, batched), **kwargs)


def linear(cls, values, batched, kwargs):
    """A batch of inputs through one layer stays one Linear; a batch of layers (a population)
    is a batched product ``x @ w.mT``, plus the biases."""
    x, w, b = (*values, None)[:3]
    x_batched, w_batched, b_batched = (*batched, False)[:3]
    if not (w_batched or b_batched):
        return cls.apply(x, w, b)
    vector = x.ndim - x_batched == 1  # one input vector: a row matrix, then a row again
    rows = x.unsqueeze(-2) if vector else x
    out = matmul_rule(matmul.MatMul, [rows, w.mT], [x_batched, w_batched], {})
    out = out.squeeze(-2) if vector else out
    return (
        out
        if b is None
        else elementwise(binary.Add, [out, b], [x_batched or w_batched, b_batched], {})
    )


def mse_loss(cls, values, batched, kwargs):
    """Composed per member: the fused loss reduces over everything, the batch dim included."""
    diff = elementwise(binary.Sub, values, batched, {})
    total = reduce.Sum.apply(diff * diff, dim=tuple(range(1, diff.ndim)))
    members = diff[0].numel()
    return total / max(members, 1) if kwargs.get("reduction", "mean") == "mean" else total


def cross_entropy(cls, values, batched, kwargs):
    """Composed per member: log-softmax over the classes, the target's entry picked by a
    one-hot mask (the target may be batched too); an ignored target's row of the mask is all
    0, so it picks nothing, and a mean divides by the targets each member counts."""
    logits, target = values
    logits_batched, target_batched = batched
    module = backend.namespace(logits.array)
    ignore_index = kwargs.get("ignore_index", -100)
    # the check (of every outer level's targets too), naming the class dim of the batch
    # PyTorch's vmap gathers from, all its levels' dims in front
    dim = logits.ndim - logits_batched + max(_depth(logits), _depth(target))
    fused.ignored_targets(target._checked_values(), logits.shape[-1], ignore_index, module, dim)
    log_probs = reduce.LogSoftmax.apply(logits, dim=(logits.ndim - 1,))
    classes = Tensor._make(module.arange(logits.shape[-1]))
    one_hot = (target.unsqueeze(-1) == classes).to(log_probs.dtype)
    if not logits_batched:
        log_probs = at_front(log_probs, target.shape[0])
    if not target_batched:
        one_hot = at_front(one_hot, logits.shape[0])
    picked = -(log_probs * one_hot).sum(-1)  # (B, N)
    total = picked.sum(-1)
    if kwargs.get("reduction", "mean") != "mean":
        return total
    counted = one_hot.sum((-2, -1))
    # none counted: NaN as PyTorch's 0 / 0, with its zero gradient (0 / 0's would be NaN too)
    return (total / counted.clamp(min=1)).masked_fill(counted == 0, fused.ZERO_BY_ZERO)


def layer_norm(cls, values, batched, kwargs):
    """The members standardised over the last dims, which the batch dim in front leaves alone,
    then each one's weight and bias as elementwise products and sums."""
    x, weight, bias = values
    out = cls.apply(x, None, None, **kwargs)
    if weight is not None:
        out = elementwise(binary.Mul, [out, weight], [batched[0], batched[1]], {})
    if bias is not None:
        out = elementwise(binary.Add, [out, bias], [batched[0] or batched[1], batched[2]], {})
    return out


def unfold(cls, values, batched, kwargs):
    """The members' images as one batch of B*N images, member fastest: the columns, batch last
    (R, L*N*B), are then each member's (R, L*N) side by side in the last dim."""
    (x,) = values
    size, n = x.shape[:2]
    images = x.movedim(0, 1).reshape(n * size, *x.shape[2:])
    cols = cls.apply(images, **kwargs)
    return cols.reshape(cols.shape[0], -1, size).permute(2, 0, 1)


def fold(cls, values, batched, kwargs):
    """Unfold's rule backwards: each member's columns side by side, member fastest, are the
    columns of B*N images."""
    (cols,) = values
    size = cols.shape[0]
    images = cls.apply(cols.permute(1, 2, 0).reshape(cols.shape[1], -1), **kwargs)
    return images.reshape(-1, size, *images.shape[1:]).movedim(1, 0)


def spread(cls, values, batched, kwargs):
    """Max pooling's gradient: the window dims shifted, the batch dim prefixed to the shape.
    vmap reaches it through a ``vjp_fn`` taken outside vmap, so the winners are one set
    repeated for every member (a view, stride 0), the batch dim put after their offset dim:
    ``strides``, which only orders the result's dims in memory, puts the batch dim innermost
    as the winners have it, so that Spread's passes meet one layout."""
    size = batch_size(values, batched)
    x, winners = (v if b else at_front(v, size) for v, b in zip(values, batched))
    strides = kwargs["strides"]
    return cls.apply(
        x,
        winners.movedim(0, 1),
        dims=_shifted(kwargs["dims"], len(strides)),
        shape=(size, *kwargs["shape"]),
        strides=(0, *strides),
    )


def copy_slices(cls, values, batched, kwargs):
    """Each member's base with the entries its view selects replaced by the member's values:
    the positions are found once, on one member's shape, and filled by one scatter."""
    x, value = (v if isinstance(v, Tensor) else Tensor._make(xp.asarray(v)) for v in values)
    size = batch_size(values, batched)
    shape = x.shape[1:] if batched[0] else x.shape
    count = math.prod(shape)
    positions = movement.replay_on_array(xp.arange(count).reshape(shape), kwargs["steps"])
    positions = positions.reshape(-1)
    value = (value if batched[1] else at_front(value, size)).reshape(size, -1)
    scattered = movement.IndexAdd.apply(value, index=(slice(None), positions), shape=(size, count))
    in_view = xp.zeros(count, bool)
    in_view[positions] = True
    flat = x.reshape(size, count) if batched[0] else x.reshape(count)
    return binary.Where.apply(Tensor._make(in_view), scattered, flat).reshape(size, *shape)


def cross_entropy_grad(cls, values, batched, kwargs):
    """The loss's gradient is linear in the incoming gradient (a number per member): the
    gradient for an incoming 1, times each member's. The logits must be unbatched: the
    log-probabilities the forward kept are those of one set of logits."""
    grad, logits = values
    if batched[1]:
        raise RuntimeError("vmap: CrossEntropyGrad with batched logits is not supported")
    unit = cls.apply(Tensor._make(xp.ones((), grad.dtype)), logits, **kwargs)
    return grad.reshape(grad.shape[0], 1, 1) * unit


def saved_as_they_are(cls, values, batched, kwargs):
    """The node that saves a composition's inputs passes its batch on (their versions are not
    checked under vmap)."""
    return values[0] if batched[0] else at_front(values[0], batch_size(values, batched))


def without_derivative(cls, values, batched, kwargs):
    """The value given (the second operand) is the output: its batch passes on as it is."""
    x, y = values
    return cls.apply(x, y if batched[1] else at_front(y, batch_size(values, batched)), **kwargs)


def first_order_only(cls, values, batched, kwargs):
    """The guard on scatter_reduce's product gradient passes the batch of gradients on; its
    backward raises if any position (of any member) is not differentiable."""
    g, repeated = values
    return cls.apply(g if batched[0] else at_front(g, repeated.shape[0]), repeated)


def einsum(cls, values, batched, kwargs):
    """A letter the equation does not use, in front of the batched operands and the output."""
    used = set("".join(kwargs["inputs"]) + kwargs["output"])
    letter = next(c for c in string.ascii_letters if c not in used)
    inputs = [letter + s if b else s for s, b in zip(kwargs["inputs"], batched)]
    return cls.apply(*values, inputs=inputs, output=letter + kwargs["output"])


UNARY = [
    unary.Neg, unary.Exp, unary.Log, unary.Sin, unary.Cos, unary.Tanh, unary.Sigmoid,
    unary.Relu, unary.Sqrt, unary.Abs, unary.Step, unary.Round, special.Erf, special.Softplus,
    special.LogSigmoid, fused.Gelu, special.Erfinv,
    movement.Copy, movement.ToDevice, movement.ViewChangedRefused,
    unary.Log1p, unary.Expm1, unary.Tan, unary.Asin, unary.Acos, unary.Atan, unary.Sinh,
    unary.Cosh, unary.Asinh, unary.Acosh, unary.Atanh, unary.Log2, unary.Log10,
    unary.Reciprocal, unary.Elu,
    special.Erfc, special.Erfcx, special.Ndtri, special.LogNdtr, special.Lgamma,
    special.Polygamma, special.ModifiedBessel, special.Entr, special.Logit, special.Exp2,
    special.Frexp,
    # (view_as_complex and view_as_real read the last dim, which the batch dim is never)
    complex_ops.Real, complex_ops.Imag, complex_ops.Conj, complex_ops.Abs,
    complex_ops.ViewAsComplex, complex_ops.ViewAsReal,
]  # fmt: skip
# linalg's Functions take batches of matrices (*, m, n), the batch dims of two operands (solve's
# A and B) broadcast as elementwise operands do: the batch dim in front is one more of them
LINALG = [
    systems.Inv, systems.Solve, systems.SolveTriangular, decompositions.Cholesky,
    decompositions.QR, decompositions.Eigh, decompositions.SVD, derived.Det, derived.Slogdet,
    derived.Pinv, MatrixExp, CholeskySolve, LUFactor, Permutation, Eig, Geqrf,
    LDLFactor, LDLSolve,
]  # fmt: skip
BINARY = [
    binary.Add, binary.Sub, binary.Mul, binary.Div, binary.Pow, binary.Maximum,
    binary.Minimum, binary.Where, binary.MaskedGrad, fused.TanhGrad, fused.MSELossGrad,
    binary.Atan2, binary.Lerp,
    fused.GeluGrad, binary.Fmod, binary.Remainder, binary.FloorDivide, special.Xlogy,
    special.Zeta, binary.Hypot, special.Copysign, special.Fmax, special.Nextafter,
    special.Heaviside, special.Logaddexp, special.Igamma, special.BinaryCrossEntropy,
    complex_ops.Complex, complex_ops.Polar,
    special.Ldexp,
]  # fmt: skip

# The table: one row per primitive of ops/. A subclass without a row of its own (Amin of Amax)
# uses its parent's rule.
RULES: dict[type, Callable] = {
    **{op: elementwise for op in UNARY + BINARY + LINALG},
    Normal: elementwise,  # normal's noise * std + mean
    StandardGamma: elementwise,  # gamma samples' reparameterized gradient, entry by entry
    reduce.Sum: reduction,
    reduce.Amax: reduction,
    reduce.Prod: reduction,
    reduce.Softmax: reduction,
    reduce.LogSoftmax: reduction,
    reduce.Cumsum: reduction,
    reduce.Cumprod: reduction,
    special.Logcumsumexp: reduction,
    reduce.SumToSize: sum_to_size,
    movement.Reshape: shape_prefixed,
    movement.Unsqueeze: unsqueeze,
    movement.Expand: shape_prefixed,
    movement.Permute: permute,
    movement.Flip: dims_shifted,
    movement.Unfold: dim_shifted,
    movement.Roll: dims_shifted,
    fft_ops.FFT: dims_shifted,
    fft_ops.RFFT: dims_shifted,
    fft_ops.IRFFT: dims_shifted,
    movement.GetItem: index,
    movement.IndexAdd: index,
    movement.Diagonal: diagonal,
    movement.Pad: pad,
    movement.Cat: concatenate,
    matmul.MatMul: matmul_rule,
    fused.Linear: linear,
    matmul.Einsum: einsum,
    fused.MSELoss: mse_loss,
    fused.CrossEntropy: cross_entropy,
    fused.CrossEntropyGrad: cross_entropy_grad,
    fused.LayerNorm: layer_norm,
    # these reduce over dims counted from the end, which a batch dim in front leaves alone
    fused.StandardizeGrad: elementwise,
    reduce.SoftmaxGrad: elementwise,
    conv.Unfold: unfold,
    conv.Fold: fold,
    conv.MaxOver: dims_shifted,
    conv.Spread: spread,
    conv.Mix: dim_shifted,
    movement.CopySlices: copy_slices,
    movement._FirstOrderOnly: first_order_only,
    function._Saving: saved_as_they_are,
    movement.WithoutDerivative: without_derivative,
    norms.VectorNorm: reduction,
}
