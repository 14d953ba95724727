"""Which way round a replay computes each big matrix product.

``C = A @ B`` can also be computed as ``(B.T @ A.T).T``: BLAS then runs its kernel with the
roles of the two matrices swapped, and for some shapes that is much faster (with one
OpenBLAS thread, W5's conv2 weight gradient ``(16, 12544) @ (12544, 73)``: 750 us direct,
464 us swapped), for others slower. At W4's and W5's sizes each element comes out with the
same bits either way, but nothing promises it (at W5's batch of 4 its linear layer does
not: OpenBLAS has small-matrix kernels per transposition), so a swap is never assumed:
while a step records, each product big enough to matter is computed both ways on the
recorded arrays, and the swapped way is kept only if its result has the bytes of the eager
forward's, and only if it was faster in a few interleaved timings. The generated source
says which way runs, and why, in a comment on the product's line.

The swapped product is written into scratch memory as ``B.T @ A.T`` (C-ordered, what
``numpy.dot`` writes), then copied, transposed, into the result laid out as eager's
(C-ordered), and a linear layer's bias is added to it as eagerly: later calls read the
layout they read eagerly, so they sum in the same order. The copy moves ``M * N`` numbers
and the product ``M * N * K`` multiply-adds; the swap is only tried when the inner size
``K`` is the largest, so the result is the smallest of the three matrices (a layer wider in
than out, a weight gradient summed over every pixel of a batch).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from scratchgrad.backend import xp

# Products of fewer multiply-adds are left as they are (timing them would cost more than
# they could ever save).
BIG = 1 << 20

# The swap is kept when its fastest timing is under this fraction of the direct product's.
# Timed alone, the operands are in cache; in the step they are not, and the swap's copy
# costs more: W4's two forward products, 0.95x and 0.97x alone, left its step at 1.003x to
# 1.009x (three runs), and W5's conv1 weight gradient, 0.89x alone, changed nothing
# measurable. W5's conv2 weight gradient, 0.62x alone, took its step to 0.93x.
MARGIN = 0.85
ROUNDS = 5


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


class Scratch:
    """The memory a swapped product writes ``b.T @ a.T`` into, lent by the program from its
    arena for the step's duration (``nbytes``, then ``place(memory)`` at the first replay:
    see ``program._Plan``)."""

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype
        self.nbytes = math.prod(shape) * dtype.itemsize
        self.array = xp.empty(shape, dtype)  # while the choice is timed, then None till placed
        self.timings = ""  # of the direct and the swapped product, as the choice saw them

    def place(self, memory: Any) -> None:
        self.array = memory[: self.nbytes].view(self.dtype).reshape(self.shape)

    def __eq__(self, other: object) -> bool:
        """The same scratch for two recordings of a step (``jitted._check_same``)."""
        return isinstance(other, Scratch) and (self.shape, self.dtype) == (other.shape, other.dtype)


class Product(NamedTuple):
    """What a product's kernel rule gives the recorder instead of code: ``a @ b`` (plus
    ``bias``) of two matrices, each an argument's code and its recorded array. ``code``
    makes the forward's own call (with ``kernels.OUT``), as ``direct(out)`` does now."""

    code: str
    direct: Callable[[Any], Any]
    a: tuple[str, Any]
    b: tuple[str, Any]
    bias: tuple[str, Any] | None = None


def choose(
    product: Product, result: Any, constant: Callable[[Any], str], target: str
) -> tuple[str | None, Scratch | None]:
    """The line ``{target} = ...`` that replays ``product`` (None: its ``code`` as it is),
    with a comment saying which way round and why, and the swapped product's scratch:
    checked and timed on the recorded arrays against ``result``, the forward's. What is
    named depends only on the shapes (the two recordings of a step must agree on it)."""
    (a_code, a), (b_code, b) = product.a, product.b
    (m, k), n = a.shape, b.shape[1]
    if m * n * k < BIG or k < max(m, n) or not result.flags.c_contiguous:
        return None, None
    scratch = Scratch((n, m), result.dtype)
    bias, bias_code = (None, "None") if product.bias is None else product.bias[::-1]
    arguments = f"{a_code}, {b_code}, {constant(scratch)}, {bias_code}, {result.shape}"
    why = _why_not_swapped(product.direct, a, b, bias, scratch, result)
    scratch.array = None  # till the program places it
    if why is not None:
        return f"{target} = {product.code}  # direct: {why}", None
    from scratchgrad.jit.kernels import OUT  # (kernels imports this module)

    return f"{target} = k_swapped({arguments}{OUT})  # swapped: {scratch.timings}", scratch


def _why_not_swapped(
    direct: Callable, a: Any, b: Any, bias: Any, scratch: Scratch, result: Any
) -> str | None:
    """Why the swapped product is not kept, or None (its timings left on ``scratch``)."""
    # (count_nonzero, not any(): a reduction the eager step never runs, whose code would add
    # 64 KB of pages to the process)
    if not xp.count_nonzero(result):
        return "the recorded result is all zeros (any order of sums gives them)"
    attempt = xp.empty(result.shape, result.dtype)
    if not _same_bits(swapped(a, b, scratch, bias, result.shape, attempt), result):
        return "swapped, the bits differ"
    timings = _timings(
        lambda: direct(out=attempt), lambda: swapped(a, b, scratch, bias, result.shape, attempt)
    )
    scratch.timings = f"{timings[0] * 1e6:.0f} us direct, {timings[1] * 1e6:.0f} us swapped"
    return scratch.timings if timings[1] >= MARGIN * timings[0] else None


def _same_bits(x: Any, y: Any) -> bool:
    """Whether two C-ordered arrays hold the same bytes (so -0.0 is not 0.0, a NaN is itself)."""
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _timings(*calls: Callable[[], Any]) -> list[float]:
    """Each call's fastest of ``ROUNDS`` timings, taken in turns (so that a busy moment of
    the machine slows all of them)."""
    best = [math.inf] * len(calls)
    for _ in range(ROUNDS):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            call()
            best[i] = min(best[i], time.perf_counter() - start)
    return best
