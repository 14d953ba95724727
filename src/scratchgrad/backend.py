"""The array backend: which array module computes, the dtypes, and the one random generator.

Everything else reaches NumPy (or later CuPy) through ``xp`` here, so a GPU backend can slot in
by swapping the module that computes.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy

xp = numpy


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks for reuse instead of handing them back to the system.

    An opt-in for training processes, never done on import: it changes malloc for the whole
    process, which may be running other libraries. A training step allocates the same large
    temporaries every time; handed back, each comes again as fresh pages that fault in one by
    one (see docs/benchmarks.md). The cost is that the process keeps its peak memory.
    ``scratchgrad train`` and the benchmark worker call it. Returns whether the C library took
    the settings (False where it is not glibc).

    >>> from scratchgrad.backend import keep_freed_memory
    >>> keep_freed_memory() in (True, False)
    True
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's <malloc.h>
    # 32 MiB is the largest mmap threshold glibc accepts on 64-bit machines.
    return bool(
        libc.mallopt(m_trim_threshold, 1 << 30) and libc.mallopt(m_mmap_threshold, 32 << 20)
    )


float16 = numpy.dtype(numpy.float16)
bfloat16 = numpy.dtype(ml_dtypes.bfloat16)
float32 = numpy.dtype(numpy.float32)
float64 = numpy.dtype(numpy.float64)
int32 = numpy.dtype(numpy.int32)
int64 = numpy.dtype(numpy.int64)
bool_ = numpy.dtype(numpy.bool_)

default_float = float32


def is_floating(dtype: numpy.dtype) -> bool:
    """True for the floating dtypes, the only ones that can require gradients."""
    return dtype.kind == "f" or dtype == bfloat16


def to_dtype(dtype) -> numpy.dtype:
    """Accept a dtype, a NumPy type or a name such as ``"float32"``."""
    if isinstance(dtype, str):
        dtype = bfloat16 if dtype == "bfloat16" else numpy.dtype(dtype)
    return numpy.dtype(dtype)


def result_type(x: numpy.dtype, y: numpy.dtype) -> numpy.dtype:
    """PyTorch's promotion for two tensors: a floating dtype beats an integer or bool one
    whatever their sizes; within a kind, the wider wins (bfloat16 with float16 gives float32).
    """
    if x == y:
        return x
    if is_floating(x) != is_floating(y):
        return x if is_floating(x) else y
    if bfloat16 in (x, y):
        other = y if x == bfloat16 else x
        return float32 if other == float16 else numpy.promote_types(other, float32)
    return numpy.promote_types(x, y)


def scalar_type(dtype: numpy.dtype, value) -> numpy.dtype:
    """The dtype of ``tensor op python_scalar``: the tensor's, unless the scalar's kind is wider.

    An int or bool tensor with a Python float gives the default float dtype, as in PyTorch.
    """
    if isinstance(value, bool) or (isinstance(value, int) and dtype != bool_):
        return dtype
    if isinstance(value, int):
        return int64
    return dtype if is_floating(dtype) else default_float


class Generator:
    """A seeded source of random numbers, as ``torch.Generator``.

    >>> g = Generator().manual_seed(0)
    >>> int(g.rng.integers(10)) == int(Generator().manual_seed(0).rng.integers(10))
    True
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = numpy.random.default_rng(seed)

    def manual_seed(self, seed: int) -> Generator:
        self.rng = numpy.random.default_rng(seed)
        return self


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the generator that the whole library uses (initialisation, dropout, shuffling)."""
    return default_generator.manual_seed(seed)
