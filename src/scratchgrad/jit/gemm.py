"""How a replay computes each big matrix product: which way round, whole or in pieces.

``C = A @ B`` can also be computed as ``(B.T @ A.T).T``: BLAS then runs its kernel with the
roles of the two matrices swapped, and for some shapes that is much faster (with one
OpenBLAS thread, W5's conv2 weight gradient ``(16, 12544) @ (12544, 73)``: 750 us direct,
464 us swapped), for others slower. At W4's and W5's sizes each element comes out with the
same bits either way, but nothing promises it (at W5's batch of 4 its linear layer does
not: OpenBLAS has small-matrix kernels per transposition), so a swap is never assumed.
While a step records, each product big enough to matter is noted (``tried``: its operands'
shapes, strides and dtype, not their data); when the recording is compiled (the second
one: the first is only compared with it), each is computed both ways, the step's own
arrays replaced by random numbers of their layouts (a weight, a constant of the program, as
it is), and the swapped way is kept only if its result has the bytes of the forward's own
call (BLAS's order of sums depends on the layouts, not on the numbers; the recorded numbers
could be ones that every order sums exactly), and only if it was faster in two timings of a
few interleaved runs each. The generated source says which way runs,
and why, in a comment on the product's line.

The swapped product is written into scratch memory as ``B.T @ A.T`` (C-ordered, what
``numpy.dot`` writes), then copied, transposed, into the result laid out as eager's
(C-ordered), and a linear layer's bias is added to it as eagerly: later calls read the
layout they read eagerly, so they sum in the same order. The copy moves ``M * N`` numbers
and the product ``M * N * K`` multiply-adds; the swap is only tried when the inner size
``K`` is the largest, so the result is the smallest of the three matrices (a layer wider in
than out, a weight gradient summed over every pixel of a batch).

A product whose longest size is ``M`` or ``N`` (a convolution's forward, ``N`` every pixel of
the batch) may instead be split along it into pieces of at most ``PIECE`` multiply-adds, each
written in place into its rows or columns of the result: each piece runs BLAS's kernels for
small matrices, where BLAS has them (OpenBLAS with AVX-512: up to 10^6 multiply-adds, without
packing the matrices first). The sums over ``K`` are the same per element, but that is not
assumed either: a split is kept as a swap is, on its bits and two timings.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from scratchgrad.backend import xp

# Where a kernel rule's code may take an out= argument (see kernels.py, which uses it; here
# because a swapped product's line takes it too).
OUT = "@OUT@"

# Products of fewer multiply-adds are left as they are (timing them would cost more than
# they could ever save).
BIG = 1 << 20

# The swap is kept when its median timing is under this fraction of the direct product's.
# Timed alone, the operands are in cache; in the step they are not, and the swap's copy
# costs more: W4's two forward products, 0.95x and 0.97x alone, left its step at 1.003x to
# 1.009x (three runs), and W5's conv1 weight gradient, 0.89x alone, changed nothing
# measurable. W5's conv2 weight gradient, 0.61x alone, took its step to 0.93x.
MARGIN = 0.85
ROUNDS = 5

# The most multiply-adds of one piece of a split product: under OpenBLAS's limit for its
# small-matrix kernels (10^6). W5's conv1 forward, 8 x 10 @ 10 x 50176 in one process: 221 us
# whole, 143 us in pieces of 11468 columns (its jitted step 4.36 ms, then 4.21 ms).
PIECE = 7 << 17
# Thinner pieces are not tried: each is a BLAS call, and they lost (W5's conv2 input gradient
# in pieces of 785 columns: 424 us, 386 us whole; W4's weight gradients in pieces of 14 rows:
# three times as long).
SHORTEST_PIECE = 1024


def swapped(a: Any, b: Any, scratch: Scratch, bias: Any, shape: tuple, out: Any = None) -> Any:
    """``a @ b`` (plus ``bias``) of two matrices computed as ``(b.T @ a.T).T``, shaped
    ``shape``, into ``out`` if given: ``numpy.dot`` writes ``b.T @ a.T`` into the scratch
    array, whose transpose is then copied into the result (and the bias added to it)."""
    transposed = xp.dot(b.T, a.T, out=scratch.array)
    result = xp.empty(shape, a.dtype) if out is None else out
    matrix = result.reshape(transposed.shape[::-1])
    xp.copyto(matrix, transposed.T)
    if bias is not None:  # as eagerly (one pass adding while copying took a second buffer)
        matrix += bias
    return result


def split(a: Any, b: Any, bias: Any, shape: tuple, rows: bool, size: int, out: Any = None) -> Any:
    """``a @ b`` (plus ``bias``) of two matrices, shaped ``shape``, into ``out`` if given,
    computed ``size`` rows of ``a`` (``rows``) or ``size`` columns of ``b`` at a time, each
    piece written into its part of the result."""
    result = xp.empty(shape, a.dtype) if out is None else out
    matrix = result.reshape(len(a), b.shape[1])
    for start in range(0, matrix.shape[0 if rows else 1], size):
        piece = slice(start, start + size)
        if rows:  # (rows of a C-ordered result are C-ordered, as numpy.dot's out= must be)
            xp.dot(a[piece], b, out=matrix[piece])
        else:
            xp.matmul(a, b[:, piece], out=matrix[:, piece])
    if bias is not None:  # as eagerly
        matrix += bias
    return result


class Scratch:
    """The memory a swapped product writes ``b.T @ a.T`` into, lent by the program from its
    arena for the step's duration (``nbytes``, then ``place(memory)`` at the first replay:
    see ``program._Plan``)."""

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype
        self.nbytes = math.prod(shape) * dtype.itemsize
        self.array: Any = None  # till placed (or while the choice is timed)

    def place(self, memory: Any) -> None:
        self.array = memory[: self.nbytes].view(self.dtype).reshape(self.shape)

    def __eq__(self, other: object) -> bool:
        """The same scratch for two recordings of a step (``jitted._check_same``)."""
        return isinstance(other, Scratch) and (self.shape, self.dtype) == (other.shape, other.dtype)


class Product(NamedTuple):
    """What a product's kernel rule gives the recorder instead of code: ``a @ b`` (plus
    ``bias``) of two matrices, each an argument's code and its recorded array. ``code`` is
    the forward's own call (ending with ``OUT`` where the program may write out=, if the
    call takes one), and ``direct(a, b, bias, out)`` makes that call on other matrices laid
    out as ``a`` and ``b``, into ``out``."""

    code: str
    direct: Callable[[Any, Any, Any, Any], Any]
    a: tuple[str, Any]
    b: tuple[str, Any]
    bias: tuple[str, Any] | None = None


class Tried:
    """A big product the program may replay another way (``way``: ``"swapped"`` or
    ``"split"``): its operands (a constant's array, or the layout of an array the step makes:
    shape, strides, dtype), its forward's call, and the other way's line with its scratch, if
    it takes one (see ``tried``); ``decide`` chooses when the program is compiled."""

    def __init__(
        self,
        product: Product,
        result: Any,
        way: str,
        line: str,
        other: Callable[[Any, Any, Any, Any], Any],
        scratch: Scratch | None = None,
    ) -> None:
        """``other(a=, b=, bias=, out=)`` computes the product as ``line`` does."""
        self.direct, self.way, self.line, self.other = product.direct, way, line, other
        self.shape, self.dtype, self.scratch = result.shape, result.dtype, scratch
        # each a constant's array (or None), or the layout of one the step makes
        operands = (product.a, product.b, product.bias)
        self.operands = [
            None if x is None else x[1] if x[0].startswith("c") else _layout(x[1]) for x in operands
        ]
        self.timings = ""  # of the direct product and the other way, as ``decide`` saw them

    def decide(self, line: str) -> tuple[str, Scratch | None]:
        """The line the program runs, ``line`` (the forward's call) or the other way's, with
        a comment saying which way and why; and the other way's scratch if it is kept."""
        # The program's constants (a layer's weight) as they are: they live anyway, and a
        # random copy of W4's first weight (1.6 MB) took the process's peak RSS above eager's.
        # The step's own arrays, freed by now, are drawn at random; with the results, cut
        # from one block, freed at once (separate arrays left freed memory in the heap).
        drawn = [x for x in self.operands if type(x) is tuple]
        results = [self.shape, self.shape]
        if self.scratch is not None:
            results.append(self.scratch.shape)
        counts = [extent(x) for x in drawn] + [math.prod(shape) for shape in results]
        block = xp.empty(sum(counts), self.dtype)
        pieces = xp.split(block, list(itertools.accumulate(counts))[:-1])
        rng = xp.random.default_rng(0)
        randoms = iter([random_like(x, rng, memory) for x, memory in zip(drawn, pieces)])
        a, b, bias = (next(randoms) if type(x) is tuple else x for x in self.operands)
        expected, attempt, *scratch = (
            memory.reshape(shape) for memory, shape in zip(pieces[len(drawn) :], results)
        )
        if scratch:
            self.scratch.array = scratch[0]
        why = self._why_not_kept(a, b, bias, expected, attempt)
        self.operands = []  # (decided once: a parameter's array is not kept)
        if self.scratch is not None:
            self.scratch.array = None  # till the program places it
        if why is not None:
            return f"{line}  # direct: {why}", None
        return f"{self.line}  # {self.way}: {self.timings}", self.scratch

    def _why_not_kept(self, a: Any, b: Any, bias: Any, expected: Any, attempt: Any) -> str | None:
        """Why the other way is not kept for these operands, or None (its timings left in
        ``self.timings``); ``expected`` and ``attempt`` take the two ways' results."""
        self.direct(a, b, bias, expected)
        if not _same_bits(self.other(a=a, b=b, bias=bias, out=attempt), expected):
            return f"{self.way}, the bits differ"
        for _ in range(2):  # two verdicts for the other way: one busy moment cannot give it
            direct, other = median_timings(
                lambda: self.direct(a, b, bias, expected),
                lambda: self.other(a=a, b=b, bias=bias, out=attempt),
            )
            self.timings = f"{direct * 1e6:.0f} us direct, {other * 1e6:.0f} us {self.way}"
            if other >= MARGIN * direct:
                return self.timings
        return None


def tried(
    product: Product, result: Any, constant: Callable[[Any], str], target: str
) -> Tried | None:
    """The product noted for ``decide`` if it is big (else None): swapped if its inner size
    is the largest (the line ``{target} = k_swapped(...)``, naming a ``Scratch`` constant),
    split if its longest size is ``M`` or ``N`` and that makes two pieces or more
    (``{target} = k_split(...)``). What is named depends only on the shapes: the two
    recordings of a step must agree on it."""
    (a_code, a), (b_code, b) = product.a, product.b
    (m, k), n = a.shape, b.shape[1]
    if m * n * k < BIG or result.dtype.kind != "f" or not result.flags.c_contiguous:
        return None  # (not floating point: BLAS is not called, nor are sums rounded)
    bias_code = "None" if product.bias is None else product.bias[0]
    arguments = f"{a_code}, {b_code}"
    if k >= max(m, n):
        scratch = Scratch((n, m), result.dtype)
        arguments += f", {constant(scratch)}, {bias_code}, {result.shape}"
        line = f"{target} = k_swapped({arguments}{OUT})"
        other = functools.partial(swapped, scratch=scratch, shape=result.shape)
        return Tried(product, result, "swapped", line, other, scratch)
    rows = m > n
    size = PIECE // (k * (n if rows else m))
    if not SHORTEST_PIECE <= size <= max(m, n) / 2:  # (at least two pieces)
        return None
    arguments += f", {bias_code}, {result.shape}, {rows}, {size}"
    line = f"{target} = k_split({arguments}{OUT})"
    other = functools.partial(split, shape=result.shape, rows=rows, size=size)
    return Tried(product, result, "split", line, other)


def _layout(array: Any) -> tuple:
    return array.shape, array.strides, array.dtype


def _reach(layout: tuple) -> tuple[int, int]:
    """The lowest and highest element an array of ``layout`` reaches, from its first."""
    shape, strides, dtype = layout
    reach = [(n - 1) * s // dtype.itemsize for n, s in zip(shape, strides)]
    return sum(min(r, 0) for r in reach), sum(max(r, 0) for r in reach)


def extent(layout: tuple) -> int:
    """How many elements of memory an array of ``layout`` (shape, strides, dtype) spans."""
    low, high = _reach(layout)
    return high - low + 1


def random_like(layout: tuple, rng: Any, memory: Any) -> Any:
    """Numbers drawn uniformly from [-0.5, 0.5) in an array of ``layout``'s shape, strides
    (in bytes, multiples of the item size) and dtype (float32 or float64), a view of
    ``memory`` (a 1-d array of that dtype and at least ``extent(layout)`` elements)."""
    shape, strides, _ = layout
    rng.random(dtype=memory.dtype, out=memory)
    memory -= 0.5
    return xp.lib.stride_tricks.as_strided(memory[-_reach(layout)[0] :], shape, strides)


def _same_bits(x: Any, y: Any) -> bool:
    """Whether two C-ordered arrays hold the same bytes (so -0.0 is not 0.0, a NaN is itself),
    compared where they are (``tobytes`` would copy both: memory above eager's peak)."""
    same_bytes = memoryview(x).cast("B") == memoryview(y).cast("B")
    return x.shape == y.shape and x.dtype == y.dtype and same_bytes


def median_timings(*calls: Callable[[], Any]) -> list[float]:
    """Each call's median of ``ROUNDS`` timings, taken in turns (so that a busy moment of
    the machine slows all of them, or changes no median)."""
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(ROUNDS):
        for call, taken in zip(calls, times):
            start = time.perf_counter()
            call()
            taken.append(time.perf_counter() - start)
    return [sorted(taken)[len(taken) // 2] for taken in times]  # (ROUNDS is odd)
