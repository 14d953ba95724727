"""Matrix product of (batched, broadcast) matrices; 1-D operands are handled by Tensor.matmul."""

import math

import numpy

from scratchgrad.autograd.function import ConjugateSaved, Function
from scratchgrad.backend import accumulation_dtype, cast, cpu_has, namespace


class MatMul(Function):
    """``x @ y``; with ``transpose_x``, ``x.mT @ y`` in one node (a weight's gradient)."""

    @staticmethod
    def forward(ctx, x, y, transpose_x=False):
        ctx._to_save = x, y  # save_for_backward's, without its call (hot)
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
        dx, dy = ctx.needs_input_grad
        x, y = ctx._saved_tensors((dy, dx))  # each factor only for the other's gradient
        if ctx.transpose_x:  # out = x.mT @ y
            return y @ grad.mT if dx else None, x @ grad if dy else None
        return grad @ y.mT if dx else None, x.mT @ grad if dy else None


class ComplexMatMul(ConjugateSaved, MatMul):
    """MatMul's node when complex numbers meet: grad @ y^H and x^H @ grad, PyTorch's."""

    backward_name = MatMul.backward_name


MatMul.complex_twin = ComplexMatMul


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

    A product with a small result but a long inner size is summed in pieces of it (see
    ``piece_length``), or computed the other way round (see ``swaps``); one with a large
    result goes through the matmul ufunc (see ``dot``).
    """
    if wide is not None:
        x, y = cast(x, wide), cast(y, wide)
    if y.ndim == 2:
        if x.ndim == 2:  # (the long inner size tested first here: small layers pay the test)
            if x.shape[1] >= LONG_INNER:
                return _whole_or_in_pieces(x, y)
            # dot's test of the result's size first, here: small layers pay no call for it
            return x.dot(y) if x.shape[0] * y.shape[1] < LARGE_RESULT else dot(x, y)
        if x.ndim > 2:
            rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
            return dot(rows, y).reshape(*x.shape[:-1], y.shape[-1])
    if y.ndim > 2 and y.strides[-2] == y.itemsize < y.strides[-1] and math.prod(y.shape[:-2]) > 1:
        y = namespace(y).ascontiguousarray(y)
    if x.ndim == 3 and x.shape[2] >= LONG_INNER:
        return _whole_or_in_pieces(x, y)
    return x @ y


def _whole_or_in_pieces(x, y):
    """``x @ y`` of two matrices (or stacks of one) whose inner size is long: summed in
    pieces of it if ``piece_length`` says so, swapped if ``swaps`` does."""
    length = piece_length(x, y)
    if length is not None:
        return summed_in_pieces(x, y, length)
    if swaps(x, y):
        return swapped_product(x, y)
    return dot(x, y) if x.ndim == 2 else x @ y


# numpy.dot zeroes its result before BLAS writes it (``cblas_matrixproduct`` in NumPy's
# cblasfuncs.c), a pass over memory that the matmul ufunc does not make; matmul's call costs
# about 0.5 us more instead. From this many elements of result the pass costs more. Two
# OpenBLAS threads on an AMD EPYC, dot against matmul, each allocating its result: 512 x 784
# with K = 128 (W4's first weight gradient) 1390 / 1344 us, 1024 x 64 with K = 64 58 / 55 us,
# 128 x 256 with K = 32 87 / 85 us; 64 x 256 with K = 64 the same (22 us), and for small
# results dot wins (128 x 10 with K = 512: 22.2 / 23.0 us).
LARGE_RESULT = 1 << 15


def dot(x, y, out=None):
    """``x @ y`` of two matrices, into ``out`` (C-ordered) if given, through ``numpy.dot``
    or, for a large result (``LARGE_RESULT``), the matmul ufunc, which skips dot's zeroing of
    it. The ufunc is taken only where both make the same BLAS call, so give the same bits:
    NumPy float32 or float64 matrices, each C- or Fortran-ordered (else dot copies it and
    matmul uses its own loops), no size 1 (else matmul does without BLAS or with gemv).

    >>> import numpy
    >>> dot(numpy.ones((256, 3)), numpy.ones((3, 128)))[0, :2]
    array([3., 3.])
    """
    if through_ufunc(x, y):
        return numpy.matmul(x, y, out=out)
    return x.dot(y) if out is None else x.dot(y, out)  # (a meta array's dot takes no out)


def through_ufunc(x, y) -> bool:
    """Whether ``dot`` multiplies the matrices ``x`` and ``y`` through the matmul ufunc."""
    return x.shape[0] * y.shape[1] >= LARGE_RESULT and _same_blas_call(x, y)


def _same_blas_call(x, y) -> bool:
    """Whether numpy.dot and the matmul ufunc make the same BLAS call for ``x @ y`` (see
    ``dot``)."""
    if type(x) is not numpy.ndarray or type(y) is not numpy.ndarray:
        return False
    if x.dtype != y.dtype or x.dtype.char not in "fd" or 1 in x.shape or 1 in y.shape:
        return False
    return all(z.flags.c_contiguous or z.flags.f_contiguous for z in (x, y))


# The most multiply-adds of one piece of a product summed in pieces: under OpenBLAS's limit
# for its kernels for small matrices (10^6 with AVX-512), which skip packing the matrices.
PIECE = 7 << 17
# Longer pieces gained nothing more, and shorter ones lost: in one-thread timings 128 x 10
# with K = 50176 took 2736 us whole, 2852 us in pieces of 512 (and 100 x 30 with K = 4000,
# 299 us whole, 312 us in pieces of 256), where 64 x 10 took 1464 us whole, 873 us in pieces
# of 1024.
LONGEST_PIECE, SHORTEST_PIECE = 1024, 768
LONG_INNER = 2 * SHORTEST_PIECE  # the shortest inner size summed in pieces
# OpenBLAS has its kernels for small matrices on AVX-512 cores only (SkylakeX and later). Without
# them each piece is packed as a whole product is, and the pieces only add calls: on an AMD EPYC
# (Haswell kernels, 2 threads) 8 x 10 with K = 50176 took 624 us whole and 659 us in pieces,
# 16 x 73 with K = 12544 1133 us and 1276 us, and W5's jitted step 2.5% longer (eager 1.2%).
SMALL_MATRIX_KERNELS = cpu_has("AVX512_SKX")
# x86 cores with AVX2 but not AVX-512 get OpenBLAS's Haswell kernels, which multiply some
# products faster the other way round (see ``swaps``; not measured on other kernels).
HASWELL_KERNELS = cpu_has("AVX2") and not SMALL_MATRIX_KERNELS


def piece_length(x, y) -> int | None:
    """How much of the inner size ``K`` each piece of ``x @ y`` takes when the product is
    summed in pieces (``summed_in_pieces``), or None when it is computed whole.

    Two NumPy float matrices (or stacks of one) whose product is too big for BLAS's kernels
    for small matrices but whose ``M x N`` result is small (a convolution's weight gradient,
    ``K`` every pixel of the batch) are multiplied a piece of ``K`` at a time, each piece
    small enough for those kernels. With one OpenBLAS thread: 8 x 10 with ``K = 50176`` (W5's
    conv1) 420 us whole, 141 us in pieces; 16 x 73 with ``K = 12544`` (its conv2) 613 us, 322
    us; 8 x 10 with ``K = 16384`` 129 us, 28 us (with ``K = 8192``, under the limit, 15 us).
    Where BLAS has no such kernels (``SMALL_MATRIX_KERNELS``), every product is computed whole.

    >>> import numpy
    >>> x, y = numpy.ones((8, 50176), "f4"), numpy.ones((50176, 10), "f4")
    >>> piece_length(x, y) == (1024 if SMALL_MATRIX_KERNELS else None)
    True
    """
    if not SMALL_MATRIX_KERNELS or not _long_blas_product(x, y):
        return None
    (m, k), n = x.shape[-2:], y.shape[-1]
    if min(m, n) == 1:
        return None  # (a matrix times a vector: BLAS's gemv, as fast whole)
    length = min(PIECE // (m * n), LONGEST_PIECE)
    return length if SHORTEST_PIECE <= length <= k // 2 and m * n * k > PIECE else None


def _long_blas_product(x, y) -> bool:
    """Whether ``x @ y`` is one BLAS call with a long inner size: two NumPy matrices (or
    stacks of one) of one dtype, float32 or float64, ``K`` at least ``LONG_INNER``."""
    if x.shape[-1] < LONG_INNER:
        return False
    if type(x) is not numpy.ndarray or type(y) is not numpy.ndarray:
        return False  # (another backend's BLAS has other kernels)
    if x.ndim != y.ndim or x.ndim not in (2, 3) or x.ndim == 3 and len(x) * len(y) != 1:
        return False
    return x.dtype == y.dtype and x.dtype.char in "fd"


# The most rows of a float32 product computed the other way round (see ``swaps``).
SWAPPED_ROWS = 16


def swaps(x, y) -> bool:
    """Whether ``x @ y`` is computed as ``(y.T @ x.T).T`` (``swapped_product``).

    With OpenBLAS's Haswell kernels (``HASWELL_KERNELS``), a float32 product with a long
    inner size ``K`` and a result of a few rows (at most ``SWAPPED_ROWS``, fewer than its
    columns: a convolution's weight gradient, ``K`` every pixel of the batch) runs faster that
    way round. On an AMD EPYC, as a weight gradient's operands are laid out (x C-ordered, y a
    transposed view, or the other way round), with one thread / two, it took this fraction
    of the time of the product as it comes: 16 x 73 with ``K = 12544`` (W5's conv2) 0.48 /
    0.83, 16 x 145 with ``K = 3136`` 0.38 / 0.59, 4 x 100 with ``K = 20000`` 0.79 / 0.46,
    8 x 10 with ``K = 50176`` 0.87-0.90 / 0.94-1.00, and 1.03 at worst (16 x 32). Float64's
    kernels gained nothing (1.05-1.2), nor did results of more rows than columns (64 x 10:
    1.13).

    >>> import numpy
    >>> x, y = numpy.ones((16, 12544), "f4"), numpy.ones((12544, 73), "f4")
    >>> swaps(x, y) == HASWELL_KERNELS
    True
    """
    if not HASWELL_KERNELS or not _long_blas_product(x, y) or x.dtype.char != "f":
        return False
    m, n = x.shape[-2], y.shape[-1]
    return 1 < m <= SWAPPED_ROWS and m < n


def swapped_product(x, y):
    """``x @ y`` of two matrices (or stacks of one) computed as ``(y.T @ x.T).T``, copied
    into a C-ordered result (as ``x @ y`` lays it out: the copy is of the smallest matrix).

    >>> import numpy
    >>> swapped_product(numpy.ones((2, 3)), numpy.ones((3, 4))).flags.c_contiguous
    True
    """
    if x.ndim == 3:
        return swapped_product(x[0], y[0])[None]
    return numpy.ascontiguousarray(y.T.dot(x.T).T)


def summed_in_pieces(x, y, length: int):
    """``x @ y`` of two matrices (or stacks of one), as the sum of the products of pieces of
    ``K``: as many pieces of equal length, at most ``length``, as fit, in one batched product
    whose results are then added up in order, plus the product of what is left over.

    >>> import numpy
    >>> x, y = numpy.ones((2, 7)), numpy.ones((7, 3))
    >>> summed_in_pieces(x, y, 3)
    array([[7., 7., 7.],
           [7., 7., 7.]])
    """
    a, b = (x[0], y[0]) if x.ndim == 3 else (x, y)
    (m, k), n = a.shape, b.shape[1]
    count = -(-k // length)
    length = k // count
    whole = count * length  # (the rest, under ``count``, is multiplied on its own)
    pieces = numpy.matmul(
        a[:, :whole].reshape(m, count, length).transpose(1, 0, 2),
        b[:whole].reshape(count, length, n),
    )
    out = pieces.sum(axis=0)
    if whole < k:
        out += a[:, whole:].dot(b[whole:])
    return out[None] if x.ndim == 3 else out


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
        ctx.inputs, ctx.output, ctx.shapes = inputs, output, [x.shape for x in xs]
        wide = accumulation_dtype(xs[0].dtype)  # 16-bit floats: computed in float32, rounded once
        operands = xs if wide is None else [cast(x, wide) for x in xs]
        out = namespace(xs[0]).einsum(
            ",".join(inputs) + "->" + output, *operands, optimize=len(xs) > 2
        )
        return out if wide is None else cast(out, xs[0].dtype)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad  # an operand is read only for the others' gradients
        xs = ctx._saved_tensors(tuple(sum(needs) - n > 0 for n in needs))
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
                full = [m if c in known else n for c, m, n in zip(letters, shape, ctx.shapes[i])]
                g = g.reshape(shape).expand(full)
            grads.append(g)
        return tuple(grads)


class ComplexEinsum(ConjugateSaved, Einsum):
    """Einsum's node when complex numbers meet: each operand's gradient is the einsum of the
    output's gradient with the conjugates of the others (it is linear in each operand)."""

    backward_name = Einsum.backward_name


Einsum.complex_twin = ComplexEinsum
