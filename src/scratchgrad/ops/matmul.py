"""Matrix product of (batched, broadcast) matrices; 1-D operands are handled by Tensor.matmul."""

import math

from scratchgrad.autograd.function import Function
from scratchgrad.backend import accumulation_dtype, cast, namespace


class MatMul(Function):
    """``x @ y``; with ``transpose_x``, ``x.mT @ y`` in one node (a weight's gradient)."""

    @staticmethod
    def forward(ctx, x, y, transpose_x=False):
        ctx.save_for_backward(x, y)
        ctx.transpose_x = transpose_x
        if transpose_x:
            x = x.swapaxes(-1, -2)
        if x.shape[-1] != y.shape[-2]:
            raise ValueError(
                f"matmul: shapes {x.shape} and {y.shape} are not aligned: "
                f"{x.shape[-1]} != {y.shape[-2]}"
            )
        wide = accumulation_dtype(x.dtype)
        out = _product(x, y, wide)
        return out if wide is None else cast(out, x.dtype)  # 16-bit: rounded once

    def name(self) -> str:
        return "BmmBackward0" if len(self.out_shape) > 2 else "MmBackward0"

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        if ctx.transpose_x:  # out = x.mT @ y
            return y @ grad.mT if dx else None, x @ grad if dy else None
        return grad @ y.mT if dx else None, x.mT @ grad if dy else None


def _product(x, y, wide=None):
    """``x @ y`` (in ``wide`` if given). For two matrices ``ndarray.dot`` makes the same BLAS
    call through a cheaper NumPy entry than the matmul ufunc's, a cost small layers pay on every
    product. (``dot`` of more dims is not a batched product, hence the test.)

    16-bit floats are multiplied in float32 (the callers' ``wide``, from accumulation_dtype)
    and come back so: NumPy has no 16-bit GEMM (its own loops are far slower than BLAS), so
    they go through float32 BLAS and the caller rounds once.

    A stack of matrices times one matrix is one matrix product of the stack's rows: NumPy's
    matmul broadcasts the matrix without BLAS when it is a transposed view.
    (docs/benchmarks.md measures all three.)

    A stack of transposed matrices on the right (an attention's ``key.mT``) is copied in
    order first: NumPy hands BLAS one small product per matrix, and OpenBLAS multiplies by a
    transposed right operand slower than the copy costs (0.155 ms with the copy against
    0.20 ms for (12, 4, 64, 32) @ (12, 4, 32, 64), one thread). A stack of one matrix (conv2d's
    products) stays as it is: the jit replays those as they come (jit/kernels.py), and a copy
    here would give other bits.
    """
    if wide is not None:
        x, y = cast(x, wide), cast(y, wide)
    if y.ndim == 2:
        if x.ndim == 2:
            return x.dot(y)
        if x.ndim > 2:
            rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
            return rows.dot(y).reshape(*x.shape[:-1], y.shape[-1])
    if y.ndim > 2 and y.strides[-2] == y.itemsize < y.strides[-1] and math.prod(y.shape[:-2]) > 1:
        y = namespace(y).ascontiguousarray(y)
    return x @ y


class Einsum(Function):
    """``numpy.einsum`` over explicit subscripts (``inputs`` per operand, ``output``), no
    ellipsis and no letter twice in one operand (``Tensor``'s ``einsum`` spells those out).

    The gradient for an operand is another einsum: the output's gradient with the other
    operands, kept to that operand's letters. Letters only that operand has were summed away,
    so their gradient is broadcast back over them.
    """

    @staticmethod
    def forward(ctx, *xs, inputs, output):
        ctx.save_for_backward(*xs)
        ctx.inputs, ctx.output = inputs, output
        wide = accumulation_dtype(xs[0].dtype)  # 16-bit floats: computed in float32, rounded once
        operands = xs if wide is None else [cast(x, wide) for x in xs]
        out = namespace(xs[0]).einsum(
            ",".join(inputs) + "->" + output, *operands, optimize=len(xs) > 2
        )
        return out if wide is None else cast(out, xs[0].dtype)

    @staticmethod
    def backward(ctx, grad):
        xs = ctx.saved_tensors
        grads = []
        for i, (needed, letters) in enumerate(zip(ctx.needs_input_grad, ctx.inputs)):
            if not needed:
                grads.append(None)
                continue
            others = [(ctx.output, grad)]
            others += [(s, x) for j, (s, x) in enumerate(zip(ctx.inputs, xs)) if j != i]
            known = "".join(s for s, _ in others)
            kept = "".join(c for c in letters if c in known)
            g = Einsum.apply(*(t for _, t in others), inputs=[s for s, _ in others], output=kept)
            if kept != letters:  # put the summed-away dims back, as size 1, and broadcast
                sizes = iter(g.shape)
                shape = [next(sizes) if c in known else 1 for c in letters]
                full = [m if c in known else n for c, m, n in zip(letters, shape, xs[i].shape)]
                g = g.reshape(shape).expand(full)
            grads.append(g)
        return tuple(grads)
