"""The array backend: which array module computes, the dtypes, the devices, and the one random
generator.

Everything else reaches NumPy (or later CuPy) through ``xp`` here, so a GPU backend can slot in
by swapping the module that computes. Devices live here too: ``device`` is only a name, and the
table ``_ARRAY_MODULES`` says which array module computes for each device type that exists. A
CuPy backend would add its "cuda" row (and a ``to_device`` branch that copies across); no
user-facing name changes.
"""

from __future__ import annotations

import ctypes
from typing import Any

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

# ---- devices ------------------------------------------------------------------------------------

# The device types PyTorch's parser knows; any of them can be named, only those in
# _ARRAY_MODULES can hold tensors.
DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "mtia", "hpu", "privateuseone")
_ARRAY_MODULES = {"cpu": numpy}


class DeviceUnavailableError(AssertionError, RuntimeError):
    """Asking for a device that has no backend. PyTorch's CPU builds raise an AssertionError
    here ("Torch not compiled with CUDA enabled"); this is one too, and a RuntimeError."""


class device:
    """Where a tensor lives, as ``torch.device``: ``device("cuda:1")``, ``device("cuda", 1)``.

    Only a name: any of PyTorch's device types can be named and compared, but only the types
    with a backend (today "cpu") can hold tensors; see ``is_available``.

    >>> device("cuda:1")
    device(type='cuda', index=1)
    >>> str(device("cpu")), device("cuda") == device("cuda", 0)
    ('cpu', False)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif not isinstance(type, str):
            raise TypeError(f"device: expected a string or a device, got {_type_name(type)}")
        elif ":" in type:
            if index is not None:
                raise RuntimeError(f"device: an index is given twice: {type!r} and {index}")
            type, _, number = type.partition(":")
            if not number.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{number}'")
            index = int(number)
        if type not in DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device "
                f"string: {type}"
            )
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError("device is immutable")

    def __eq__(self, other) -> bool:  # as PyTorch: never equal to a string
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __reduce__(self):
        return device, (self.type, self.index)


def _type_name(value) -> str:
    return type(value).__name__


_Device = device  # for the signatures whose parameter is called ``device``
cpu = device("cpu")


def is_available(device_type: str) -> bool:
    """Whether tensors can live on devices of this type (a backend for it is installed)."""
    return device_type in _ARRAY_MODULES


def array_module(where: device | str | None = None):
    """The array module that computes on ``where`` (None: the CPU); raises for a device that
    cannot hold tensors, naming it."""
    if where is None or where is cpu or where == "cpu":
        return numpy
    where = device(where)
    module = _ARRAY_MODULES.get(where.type)
    if module is None:
        raise DeviceUnavailableError(
            f"device {str(where)!r} is not available: scratchgrad has no {where.type} backend "
            "yet (scratchgrad.cuda.is_available() is False); use 'cpu'"
        )
    return module


def cuda_device(index: int | str | device | None = None) -> device:
    """The device that ``.cuda(index)`` means: "cuda", "cuda:<index>", or the one given."""
    if index is None:
        return device("cuda")
    return device("cuda", index) if isinstance(index, int) else device(index)


def device_of(array) -> device:
    """The device an array lives on (every array is a NumPy one today)."""
    return cpu


def to_device(array, where: device | str | None):
    """``array`` on ``where``: the same array when it is there already."""
    array_module(where)  # raises for a device without a backend
    return array


# accumulation_dtype(dtype): the dtype to sum or multiply ``dtype`` arrays in: float32 for the
# 16-bit floats (NumPy adds them one after another in 16 bits, and has no 16-bit BLAS), else None
# (their own). A dict's get, not a def: reductions and products call it on every op.
accumulation_dtype = {float16: float32, bfloat16: float32}.get


def in_float32(ufunc: Any, *arrays: Any, **kwargs: Any) -> Any:
    """``ufunc(*arrays)`` for 16-bit floats: computed in float32 (widening is exact) and rounded
    once to the first array's dtype, as PyTorch computes 16-bit ops on a CPU. NumPy runs 16-bit
    arithmetic in scalar loops (ml_dtypes' bfloat16, its own float16), several times slower than
    widening, computing and rounding. For +, -, *, / and sqrt one rounding from float32 gives the
    correctly rounded 16-bit result (float32 has more than twice their precision, plus two bits),
    so the values are those of the 16-bit op itself.

    >>> import numpy, ml_dtypes
    >>> x = numpy.array([1.0, 3.0], ml_dtypes.bfloat16)
    >>> in_float32(numpy.maximum, x, 2.0)
    array([2, 3], dtype=bfloat16)
    """
    return cast(ufunc(*map(widened, arrays), **kwargs), arrays[0].dtype)


def widened(value: Any) -> Any:
    """A 16-bit float array in float32 (exactly); any other value as it is."""
    return cast(value, float32) if getattr(value, "dtype", None) in HALF_FLOATS else value


HALF_FLOATS = (float16, bfloat16)  # NumPy computes these in slow scalar loops


def cast(array: Any, dtype: numpy.dtype) -> Any:
    """``array.astype(dtype)`` (a new array, the same memory layout), with float32 to float16
    and back computed on the bits: NumPy converts float16 one value at a time, and values that
    are subnormal in float16 (small gradients) take its slow path, about 100 ms per million
    values instead of 2 (measured), where the bit operations take 1 to 4 ms whatever the values.

    >>> cast(numpy.full(100, 1e-6, numpy.float32), float16)[:2]
    array([1.e-06, 1.e-06], dtype=float16)
    """
    if array.size >= _BITWISE_FROM:
        if dtype == float16 and array.dtype == float32:
            return _float32_to_float16(array)
        if dtype == float32 and array.dtype == float16:
            return _float16_to_float32(array)
    return array.astype(dtype)


_BITWISE_FROM = 64  # values; for fewer, NumPy's one call costs less than the dozen bit operations


def _float32_to_float16(x: Any) -> Any:
    """Round to nearest even, overflow to inf, NaN to NaN: F. Giesen's float_to_half_fast3_rtne
    (https://gist.github.com/rygorous/2156668), without branches but for inf and NaN, in two
    scratch arrays of 32 bits."""
    bits = x.view(numpy.uint32)
    magnitude = bits & 0x7FFFFFFF
    subnormal = magnitude < 0x38800000  # below float16's smallest normal, 2**-14
    # A normal float16: drop 13 mantissa bits, rounding to nearest even, and rebias the exponent
    # from 127 to 15 (0xC8000FFF is -112 << 23 plus the rounding's 0xFFF, modulo 2**32).
    out = magnitude >> 13
    out &= 1
    out += magnitude
    out += 0xC8000FFF
    out >>= 13
    huge = magnitude >= 0x47800000  # 65520 and more round to inf; and inf and NaN themselves
    if huge.any():
        out[huge] = xp.where(magnitude[huge] > 0x7F800000, 0x7E00, 0x7C00)
    # A subnormal float16: adding 0.5 in float32 rounds to float16's subnormal grid, and the
    # low bits of the sum are the float16's; mixed in where the value is that small.
    scratch = magnitude.view(numpy.float32)
    scratch += numpy.float32(0.5)
    magnitude -= 0x3F000000
    magnitude -= out
    magnitude *= subnormal
    out += magnitude
    xp.right_shift(bits, 16, out=magnitude)
    magnitude &= 0x8000
    out |= magnitude  # the sign
    return out.astype(numpy.uint16).view(float16)


def _float16_to_float32(x: Any) -> Any:
    """Exact: the exponent and mantissa bits move to float32's places, and multiplying by 2**112
    rebiases the exponent (subnormals included); inf and NaN get float32's all-ones exponent."""
    bits = x.view(numpy.uint16)
    out = xp.left_shift(bits & 0x7FFF, 13, dtype=numpy.uint32).view(numpy.float32)
    out *= numpy.float32(2.0**112)
    special = (bits & 0x7C00) == 0x7C00
    if special.any():
        out.view(numpy.uint32)[special] |= 0x7F800000
    return xp.copysign(out, bits.view(numpy.int16), out=out)


def keep_where(condition: Any, x: Any, out: Any = None) -> Any:
    """``numpy.where(condition, x, 0)`` bit for bit (a NaN or -0.0 where the condition fails
    becomes +0.0), computed by multiplying ``x``'s bits, seen as integers of its width, by 0 or
    1: NumPy's ``where`` branches per element, and with a scattered condition (a ReLU's mask) it
    is about 40 times slower than that multiply.

    >>> keep_where(numpy.array([True, False]), numpy.array([-2.0, numpy.nan]))
    array([-2.,  0.])
    """
    bits = _BITS[x.dtype.itemsize]
    kept = xp.multiply(x.view(bits), condition, out=None if out is None else out.view(bits))
    return kept.view(x.dtype)


_BITS = {2: numpy.int16, 4: numpy.int32, 8: numpy.int64}


def is_floating(dtype: numpy.dtype) -> bool:
    """True for the floating dtypes, the only ones that can require gradients."""
    return dtype.kind == "f" or dtype == bfloat16


def to_dtype(dtype) -> numpy.dtype:
    """Accept a dtype, a NumPy type or a name such as ``"float32"``."""
    if isinstance(dtype, str):
        dtype = bfloat16 if dtype == "bfloat16" else numpy.dtype(dtype)
    return numpy.dtype(dtype)


class Generator:
    """A seeded source of random numbers, as ``torch.Generator``.

    >>> g = Generator().manual_seed(0)
    >>> int(g.rng.integers(10)) == int(Generator().manual_seed(0).rng.integers(10))
    True
    """

    def __init__(self, seed: int | None = None, device: _Device | str = "cpu") -> None:
        if isinstance(seed, (str, _Device)):  # torch.Generator("cpu"): a device comes first
            seed, device = None, seed
        array_module(device)
        self.device = _Device(device)
        self.rng = numpy.random.default_rng(seed)

    def manual_seed(self, seed: int) -> Generator:
        self.rng = numpy.random.default_rng(seed)
        return self


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the generator that the whole library uses (initialisation, dropout, shuffling)."""
    return default_generator.manual_seed(seed)
