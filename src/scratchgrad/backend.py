"""The array backend: which array module computes, the dtypes, the devices, and the random
generators.

Devices live here: ``device`` is only a name, and one ``ArrayBackend`` per device type that can
hold tensors says which array module computes there (NumPy on "cpu", CuPy on "cuda", imported on
first use) and how arrays cross to it. An op never names NumPy: it takes its array module from
its operands with ``namespace(array)``, one dict lookup keyed by the array's class, so the CPU
pays nothing for the other devices. ``xp`` (NumPy) remains for what is made on the host: dtypes,
data read from files, index bookkeeping.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy

xp = numpy

# NumPy warns when a float op meets a zero divisor, an invalid value or an overflow; PyTorch
# returns the same inf or NaN without a word. The warnings raised by scratchgrad's own array
# calls (its modules and its jitted replays) are therefore silenced, with no cost per op; a
# user's own NumPy calls still warn.
warnings.filterwarnings(
    "ignore",
    r"(divide by zero|invalid value|overflow|underflow) encountered",
    RuntimeWarning,
    r"scratchgrad\.",
)


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


_threads: int | None = None  # set_num_threads's, where threadpoolctl is not installed


def set_num_threads(count: int) -> None:
    """Let BLAS use ``count`` threads, as ``torch.set_num_threads`` (through threadpoolctl,
    the bench extra's; without it the count is only kept, for ``get_num_threads``).

    >>> import scratchgrad as sg
    >>> threads = sg.get_num_threads()
    >>> sg.set_num_threads(threads)  # (a script sets 1 before it starts, to time one core)
    """
    global _threads
    if not isinstance(count, int) or count < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        _threads = count
        return
    threadpool_limits(count, user_api="blas")
    _threads = None


def get_num_threads() -> int:
    """The threads BLAS uses (``set_num_threads``'s count without threadpoolctl)."""
    if _threads is not None:
        return _threads
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return os.cpu_count() or 1
    blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    return max(blas, default=1)


_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted as ``torch.use_deterministic_algorithms``: NumPy's and CuPy's kernels here are
    deterministic already, so this only records the setting its getters read."""
    _deterministic.update(mode=bool(mode), warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


# NumPy's switch for floating-point warnings (a host setting: CuPy's kernels never warn)
errstate = numpy.errstate


def cpu_has(feature: str) -> bool:
    """Whether this CPU has ``feature``, by NumPy's name for it ("AVX2", "AVX512_SKX": AVX-512
    with BW, DQ and VL, "ASIMD"): PyTorch's CPU kernels round some results by what it has.

    >>> cpu_has("NO_SUCH_FEATURE")
    False
    """
    from numpy._core._multiarray_umath import __cpu_features__  # (what show_runtime reads)

    return __cpu_features__.get(feature, False)


float16 = numpy.dtype(numpy.float16)
bfloat16 = numpy.dtype(ml_dtypes.bfloat16)
float32 = numpy.dtype(numpy.float32)
float64 = numpy.dtype(numpy.float64)
int8 = numpy.dtype(numpy.int8)
uint8 = numpy.dtype(numpy.uint8)
uint16 = numpy.dtype(numpy.uint16)
uint32 = numpy.dtype(numpy.uint32)
uint64 = numpy.dtype(numpy.uint64)
# PyTorch's "barebones" unsigned dtypes: they promote with no other integer dtype
BAREBONES_UNSIGNED = frozenset({uint16, uint32, uint64})
int16 = numpy.dtype(numpy.int16)
int32 = numpy.dtype(numpy.int32)
int64 = numpy.dtype(numpy.int64)
bool_ = numpy.dtype(numpy.bool_)
complex64 = numpy.dtype(numpy.complex64)
complex128 = numpy.dtype(numpy.complex128)
# their classes (NumPy's DType classes): ``type(dtype) in COMPLEX_DTYPES`` is the cheapest test
COMPLEX_DTYPES = frozenset({type(complex64), type(complex128)})

default_float = float32


class dtype:
    """A tensor's dtype, as ``torch.dtype``: ``scratchgrad.float32`` and its kin, one object per
    dtype. The engine computes on NumPy dtypes (the constants above, ``tensor.array.dtype``);
    this object is what the public API gives and takes. It holds its NumPy dtype as ``.dtype``,
    which NumPy reads wherever it takes a dtype, and is equal to it and hashed as it, so that
    ``x.dtype == numpy.float32`` holds and tables keyed by NumPy dtypes find it.

    >>> import numpy, scratchgrad as sg
    >>> sg.float32, sg.bfloat16.is_floating_point, sg.int8.is_signed, sg.complex64.to_real()
    (scratchgrad.float32, True, True, scratchgrad.float32)
    >>> sg.float32 == numpy.float32, numpy.zeros(2, sg.int64).dtype
    (True, dtype('int64'))
    """

    __slots__ = ("dtype", "kind", "itemsize", "is_floating_point", "is_complex", "is_signed")

    def __init__(self, of: numpy.dtype) -> None:
        fields = dict(
            dtype=of,
            kind=of.kind,  # (read by the engine's checks)
            itemsize=of.itemsize,
            is_floating_point=is_floating(of),
            is_complex=of.kind == "c",
            is_signed=of.kind in "ifc" or of == bfloat16,
        )
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        # one object per dtype, shared by every tensor: changing it would change them all
        raise AttributeError(f"attribute '{name}' of 'scratchgrad.dtype' objects is not writable")

    def __repr__(self) -> str:
        return f"scratchgrad.{self.dtype.name}"

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        return self is other or self.dtype == other

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __reduce__(self) -> str:
        return self.dtype.name  # copy and deepcopy give the object itself, as torch.dtype's

    def __getattr__(self, name: str) -> Any:
        # NOTE: NumPy's other dtype attributes (name, char, type, str, ...) are forwarded, so
        # code written for NumPy dtypes (the engine's, and a user's) reads them as before;
        # torch.dtype has none of them, so no PyTorch program depends on their absence.
        if name.startswith("_"):
            raise AttributeError(f"'scratchgrad.dtype' object has no attribute '{name}'")
        return getattr(self.dtype, name)

    def to_real(self) -> dtype:
        """The dtype of this one's real and imaginary parts (float32 for complex64); a real
        dtype is its own, as ``torch.dtype.to_real``."""
        return dtype_of(to_real(self.dtype))

    def to_complex(self) -> dtype:
        """The complex dtype whose parts are this dtype (complex64 for float32 and bfloat16),
        as ``torch.dtype.to_complex``; a complex dtype is its own."""
        if self.dtype == float16:
            raise TypeError("to_complex: scratchgrad has no complex32 (PyTorch's for float16)")
        if not can_require_grad(self.dtype):
            raise RuntimeError(f"to_complex: {self} has no complex dtype")
        return dtype_of(to_complex(self.dtype))


class _DtypeTable(dict):
    """NumPy dtype -> its ``scratchgrad.dtype``, made on first sight (uint16 from NumPy data)."""

    def __missing__(self, of: numpy.dtype) -> dtype:
        return self.setdefault(of, dtype(of))


# dtype_of(numpy_dtype): the ``scratchgrad.dtype`` of a NumPy dtype, one dict lookup
dtype_of = _DtypeTable().__getitem__

# ---- devices ------------------------------------------------------------------------------------

# The device types PyTorch's parser knows; any of them can be named, only those with an
# ArrayBackend (below) can hold tensors. register_backend adds a new type (the tests' "strict").
TORCH_DEVICE_TYPES = (
    "cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "mtia", "hpu", "privateuseone",
)  # fmt: skip
DEVICE_TYPES = TORCH_DEVICE_TYPES


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
        elif isinstance(type, int) and not isinstance(type, bool):  # PyTorch: an accelerator's
            type, index = _accelerator_type(), type
        elif not isinstance(type, str):
            raise TypeError(f"device: expected a string or a device, got {type_name(type)}")
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

    def __enter__(self) -> device:
        """``with device("meta"):``, as PyTorch's: the default device (``set_default_device``)
        inside the block, the one before after it."""
        _entered.append(get_default_device())
        set_default_device(self)
        return self

    def __exit__(self, *exception: Any) -> None:
        set_default_device(_entered.pop())


# CPython's Py_TPFLAGS_HEAPTYPE: a class made by a class statement
_HEAP_TYPE = 1 << 9


def type_name(value: Any) -> str:
    """The name of ``value``'s type as PyTorch's errors print it (its C ``tp_name``): ``float``,
    ``numpy.bool``; a class written in Python by its name alone (``Tensor``, ``Fraction``).

    >>> type_name(1.5), type_name(numpy.float32(1.5))
    ('float', 'numpy.float32')
    """
    kind = type(value)
    if kind.__module__ == "builtins" or kind.__flags__ & _HEAP_TYPE:
        return kind.__name__
    return f"{kind.__module__}.{kind.__name__}"


_Device = device  # for the signatures whose parameter is called ``device``
cpu = device("cpu")
# Where the factories make tensors when not told (set_default_device), and the ones that
# ``with device(...)`` blocks replaced, innermost last.
default_device = cpu
_entered: list[device] = []


def set_default_device(where: device | str | None) -> None:
    """Make ``where`` the device of tensors made without ``device=`` (the factories, new
    layers' parameters), as ``torch.set_default_device``; None or "cpu": the CPU again. A
    device without a backend raises.

    >>> import scratchgrad as sg
    >>> sg.set_default_device("meta")
    >>> sg.zeros(2).device, sg.nn.Linear(3, 2).weight.is_meta
    (device(type='meta'), True)
    >>> sg.set_default_device(None)
    """
    global default_device
    where = cpu if where is None else device(where)
    array_backend(where)  # raises for a device without a backend
    default_device = cpu if where == cpu else where


def get_default_device() -> device:
    """The device of tensors made without ``device=`` (see ``set_default_device``).

    >>> get_default_device()
    device(type='cpu')
    """
    return default_device


@dataclass(frozen=True)
class ArrayBackend:
    """What computes on one device type: its array module and how arrays cross to and from it.

    ``to_host`` gives a NumPy array (a copy unless on the CPU; it waits for the device);
    ``from_host(array, device)`` copies a NumPy array onto ``device``; ``scatter_add(target,
    index, values)`` does ``target[index] += values`` with repeated indices summed (NumPy's
    ``add.at``); ``index_of`` gives the device index an array lives on.
    """

    type: str
    xp: Any
    array_type: type
    to_host: Callable
    from_host: Callable
    scatter_add: Callable
    index_of: Callable = lambda array: None


CPU_BACKEND = ArrayBackend(
    "cpu",
    numpy,
    numpy.ndarray,
    to_host=numpy.asarray,
    from_host=lambda array, where: array,
    scatter_add=numpy.add.at,
)
_BACKENDS: dict[str, ArrayBackend] = {"cpu": CPU_BACKEND}
_BACKEND_OF_CLASS: dict[type, ArrayBackend] = {numpy.ndarray: CPU_BACKEND}
_NAMESPACE_OF_CLASS: dict[type, Any] = {numpy.ndarray: numpy}
ndarray = numpy.ndarray  # the CPU's array class, for the fast paths that test it first
ARRAY_CLASSES = _BACKEND_OF_CLASS.keys()  # a live view: ``type(a) in ARRAY_CLASSES`` is cheap
# device types whose backend is imported on first use (CuPy takes a second to import)
_LOADERS: dict[str, Callable[[], ArrayBackend | None]] = {}


def _load_cupy() -> ArrayBackend | None:
    """CuPy's backend for "cuda", when CuPy imports and sees a GPU (the ``cuda`` extra)."""
    try:
        import cupy
        import cupyx

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # ImportError, or CUDA's own error on a machine without a driver
        return None

    def from_host(array: numpy.ndarray, where: device):
        with cupy.cuda.Device(where.index or 0):
            return cupy.asarray(array)

    return ArrayBackend(
        "cuda",
        cupy,
        cupy.ndarray,
        to_host=cupy.asnumpy,
        from_host=from_host,
        scatter_add=cupyx.scatter_add,
        index_of=lambda array: array.device.id,
    )


def _load_meta() -> ArrayBackend:
    """The "meta" device's backend: arrays with a shape and a dtype, and no data (meta.py)."""
    from scratchgrad import meta

    return ArrayBackend(
        "meta",
        meta.xp,
        meta.MetaArray,
        to_host=meta.to_host,
        from_host=meta.from_host,
        scatter_add=meta.scatter_add,
    )


_LOADERS["cuda"] = _load_cupy
_LOADERS["meta"] = _load_meta


def register_backend(array_backend: ArrayBackend) -> None:
    """Let tensors live on ``array_backend.type`` devices (a new type becomes a device name)."""
    global DEVICE_TYPES
    if array_backend.type not in DEVICE_TYPES:
        DEVICE_TYPES = (*DEVICE_TYPES, array_backend.type)
    _BACKENDS[array_backend.type] = array_backend
    _BACKEND_OF_CLASS[array_backend.array_type] = array_backend
    _NAMESPACE_OF_CLASS[array_backend.array_type] = array_backend.xp


def _backend(device_type: str) -> ArrayBackend | None:
    found = _BACKENDS.get(device_type)
    if found is None and device_type in _LOADERS:
        found = _LOADERS.pop(device_type)()  # tried once: a failed import stays failed
        if found is not None:
            register_backend(found)
    return found


def namespace(array: Any, _of_class=_NAMESPACE_OF_CLASS.get, _numpy=numpy):
    """The array module that computes on ``array`` (NumPy for NumPy arrays and plain numbers).
    Every op calls it: one dict lookup by class, with its globals bound as defaults. The ops
    that every training step runs skip even that call for NumPy's arrays, ``xp if type(x) is
    ndarray else namespace(x)``: the call is a tenth of a microsecond, and a small op's whole
    cost is ten.

    >>> import numpy
    >>> namespace(numpy.ones(2)) is numpy
    True
    """
    return _of_class(type(array), _numpy)


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array of one of the backends (not a number, list or Tensor)."""
    return type(value) in ARRAY_CLASSES


def as_array(value: Any):
    """``value`` as an array: device arrays as they are, numbers and NumPy scalars (what NumPy's
    reductions return) as 0-d NumPy arrays."""
    return value if type(value) in ARRAY_CLASSES else numpy.asarray(value)


def is_available(device_type: str) -> bool:
    """Whether tensors can live on devices of this type (a backend for it is installed)."""
    return _backend(device_type) is not None


def accelerator_types() -> list[str]:
    """The device types other than the CPU that can hold tensors here: PyTorch's accelerators
    (not the test-only devices, nor meta, which holds no data: PyTorch does not count it)."""
    kinds = TORCH_DEVICE_TYPES
    return [kind for kind in kinds if kind not in ("cpu", "meta") and is_available(kind)]


def _accelerator_type() -> str:
    """The device type an index alone names (``device(0)``, ``.to(0)``), as PyTorch's."""
    kinds = accelerator_types()
    if not kinds:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return kinds[0]


def array_backend(where: device | str | None = None) -> ArrayBackend:
    """The backend of ``where`` (None: the default device, the CPU unless
    ``set_default_device`` said otherwise); raises for a device that cannot hold tensors,
    naming it."""
    if where is None:
        where = default_device
    if where is cpu or where == "cpu":
        return CPU_BACKEND
    where = device(where)
    found = _backend(where.type)
    if found is None:
        raise DeviceUnavailableError(
            f"device {str(where)!r} is not available: scratchgrad has no {where.type} backend "
            f"here (scratchgrad.{where.type}.is_available() is False); use 'cpu'"
            + (
                " or install scratchgrad[cuda] on a machine with a GPU"
                if where.type == "cuda"
                else ""
            )
        )
    return found


def array_module(where: device | str | None = None):
    """The array module that computes on ``where`` (None: the default device); raises as
    ``array_backend``."""
    return array_backend(where).xp


def shared_copy(array: Any) -> Any:
    """A copy of the NumPy ``array`` in anonymous shared memory (``mmap``, ``MAP_SHARED``),
    which processes forked afterwards share: a write by one is seen by all."""
    if type(array) is not numpy.ndarray:
        raise RuntimeError(f"share_memory_: only CPU tensors can be shared, not {type(array)}")
    memory = mmap.mmap(-1, max(array.nbytes, 1))
    out = numpy.frombuffer(memory, array.dtype, count=array.size).reshape(array.shape)
    out[...] = array
    return out


def memory_owner(array: Any) -> Any:
    """The array that owns the memory ``array`` views: the end of its chain of bases. A view
    made by ``as_strided`` (a convolution's windows) has NumPy's ``DummyArray`` as its base,
    which holds the array it views as its own ``base``.

    >>> a = numpy.zeros(6)
    >>> memory_owner(a.reshape(2, 3)[1:]) is a, memory_owner(a) is a
    (True, True)
    """
    arrays, owner = type(array), array
    while True:
        base = owner.base
        if not isinstance(base, arrays):
            base = getattr(base, "base", None)  # as_strided's DummyArray, or None
            if not isinstance(base, arrays):
                return owner
        owner = base


def is_shared(array: Any) -> bool:
    """Whether ``array`` (or the array it views) lives in ``shared_copy``'s memory."""
    while isinstance(array, numpy.ndarray):
        array = array.base
    return isinstance(array, memoryview) and isinstance(array.obj, mmap.mmap)


def cuda_device(index: int | str | device | None = None) -> device:
    """The device that ``.cuda(index)`` means: "cuda", "cuda:<index>", or the one given."""
    if index is None:
        return device("cuda")
    return device("cuda", index) if isinstance(index, int) else device(index)


def _backend_of(array: Any) -> ArrayBackend:
    return _BACKEND_OF_CLASS.get(type(array), CPU_BACKEND)


def device_of(array: Any) -> device:
    """The device an array lives on (the CPU for NumPy arrays and plain numbers)."""
    found = _backend_of(array)
    return cpu if found is CPU_BACKEND else device(found.type, found.index_of(array))


def is_on(array: Any, where: device | str | None) -> bool:
    """Whether ``array`` lives on ``where`` ("cuda" means any CUDA device, as in ``.to``)."""
    where = cpu if where is None else device(where)
    found = _backend_of(array)
    return found.type == where.type and where.index in (None, found.index_of(array))


def to_device(array: Any, where: device | str | None):
    """``array`` on ``where`` (None: the CPU): the same array when it is there already, else a
    copy."""
    where = cpu if where is None else where
    target = array_backend(where)  # raises for a device without a backend
    if is_on(array, where):
        return array
    return target.from_host(
        _backend_of(array).to_host(array), cpu if where is None else device(where)
    )


def to_host(array: Any) -> numpy.ndarray:
    """``array`` as a NumPy array (itself when it is one): for printing, files, ``.cpu()``."""
    return _backend_of(array).to_host(array)


def scatter_add(target: Any, index: Any, values: Any) -> None:
    """``target[index] += values`` where repeated indices add up (NumPy's ``add.at``, which
    CuPy spells ``cupyx.scatter_add``)."""
    _backend_of(target).scatter_add(target, index, values)


def scatter_reduce(target: Any, index: Any, values: Any, ufunc: str) -> None:
    """``target[index] = ufunc(target[index], values)`` where a repeated index reduces its
    values one after another (NumPy's ``ufunc.at``) for ``ufunc`` "add", "multiply",
    "maximum" or "minimum". Off the CPU, all but "add" go through the host: CuPy has no
    scatter product, and its scatter max and min may treat NaN otherwise than NumPy."""
    if ufunc == "add":
        return scatter_add(target, index, values)
    if type(target) is numpy.ndarray:
        return getattr(numpy, ufunc).at(target, index, values)
    host = to_host(target)
    index = tuple(map(to_host, index)) if isinstance(index, tuple) else to_host(index)
    getattr(numpy, ufunc).at(host, index, to_host(values))
    target[...] = to_device(host, device_of(target))


def same_device_error(op: str, arrays: tuple) -> RuntimeError | None:
    """PyTorch's error for an op given arrays on two devices (None when they share one)."""
    devices = []
    for array in arrays:
        if hasattr(array, "shape") and device_of(array) not in devices:
            devices.append(device_of(array))
    if len(devices) < 2:
        return None
    return RuntimeError(
        f"{op}: Expected all tensors to be on the same device, but found at least two devices, "
        f"{devices[0]} and {devices[1]}!"
    )


# accumulation_dtype(dtype): the dtype to sum or multiply ``dtype`` arrays in: float32 for the
# 16-bit floats (NumPy adds them one after another in 16 bits, and has no 16-bit BLAS), else None
# (their own). A dict's get, not a def: reductions and products call it on every op.
accumulation_dtype = {float16: float32, bfloat16: float32}.get
# scan_dtype(dtype): the dtype PyTorch's CPU scans (cumsum, cumprod, logcumsumexp) run in, its
# acc_type off CUDA: float64 for float32 (complex128 for complex64), float32 for the 16-bit
# floats, else None (their own). A float32 cumsum of 1e5 entries in float32 is 7e-6 off.
scan_dtype = {float16: float32, bfloat16: float32, float32: float64, complex64: complex128}.get


def in_float32(ufunc: Any, *arrays: Any, **kwargs: Any) -> Any:
    """``ufunc(*arrays)`` for 16-bit floats: computed in float32 (widening is exact) and rounded
    once to the first array's dtype, as PyTorch computes 16-bit ops on a CPU. NumPy runs 16-bit
    arithmetic in scalar loops (ml_dtypes' bfloat16, its own float16), several times slower than
    widening, computing and rounding. For +, -, *, / and sqrt one rounding from float32 gives the
    correctly rounded 16-bit result (float32 has more than twice their precision, plus two bits),
    so the values are those of the 16-bit op itself.

    >>> import numpy, ml_dtypes
    >>> x = numpy.array([1.0, 3.0], ml_dtypes.bfloat16)
    >>> y = in_float32(numpy.maximum, x, 2.0)
    >>> y.tolist(), y.dtype == ml_dtypes.bfloat16
    ([2.0, 3.0], True)
    """
    return cast(ufunc(*map(widened, arrays), **kwargs), arrays[0].dtype)


def widened(value: Any) -> Any:
    """A 16-bit float array in float32 (exactly); any other value as it is."""
    wide = accumulation_dtype(getattr(value, "dtype", None))
    return value if wide is None else cast(value, wide)


def rounded(array: Any, dtype: Any) -> Any:
    """``array``, computed in float32 for a 16-bit input (``widened``), rounded once to the
    input's ``dtype``, as PyTorch computes 16-bit floats on a CPU; as it is in that dtype."""
    return array if array.dtype == dtype else cast(array, dtype)


def cast(array: Any, dtype: numpy.dtype) -> Any:
    """``array.astype(dtype)`` (a new array, the same memory layout); float64 to a 16-bit
    float goes through float32, as PyTorch's; float32 to float16 and back are computed on the
    bits: NumPy converts float16 one value at a time, and values that
    are subnormal in float16 (small gradients) take its slow path, about 100 ms per million
    values instead of 2 (measured), where the bit operations take 1 to 4 ms whatever the values.

    >>> cast(numpy.full(100, 1e-6, numpy.float32), float16)[:2]
    array([1.e-06, 1.e-06], dtype=float16)
    """
    if dtype in (float16, bfloat16) and array.dtype == float64:
        array = array.astype(float32)  # as PyTorch: through float32, rounded twice
    if array.dtype == bfloat16 and dtype.kind in "iu":  # (ml_dtypes clips -1.0 to uint8's 0,
        array = array.astype(float32)  # where PyTorch's cast, as float32's, gives 255)
    if array.size >= _BITWISE_FROM:
        if dtype == float16 and array.dtype == float32:
            return _float32_to_float16(array)
        if dtype == float32 and array.dtype == float16:
            return _float16_to_float32(array)
    return array.astype(dtype)


class SixteenBitNumber(float):
    """A Python number beside a 16-bit float array (``x * 0.1``, ``x + 2`` on a float16 or
    bfloat16 tensor), computed as PyTorch's CPU kernels compute it. NumPy hands every ufunc call
    with it to ``__array_ufunc__`` (a float subclass is not one of its own scalars), which
    multiplies, divides and floor-divides by it in float32, the number in float32, rounding the
    result once: PyTorch's "opmath" path for a scalar right operand, where NumPy would round
    the number to 16 bits first (about a third of the products one bit off). Every other ufunc
    gets the number rounded to the array's dtype, as PyTorch's add, sub, comparisons... see it.
    ``number / x`` is PyTorch's ``x.reciprocal() * number``, each step rounded to 16 bits, and
    bfloat16's ``x ** 3`` and ``x ** -2`` its products rounded one by one. Python arithmetic
    on it gives plain floats; only the 16-bit branch of ``Tensor._operands`` makes one.

    >>> x = numpy.array([1.5], float16)
    >>> (x * SixteenBitNumber(0.1)).item(), (x * numpy.float16(0.1)).item()
    (0.1500244140625, 0.14990234375)
    """

    __slots__ = ()

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        array = inputs[1] if inputs[0] is self else inputs[0]
        if method == "__call__" and len(inputs) == 2 and hasattr(array, "dtype"):
            out = _sixteen_bit(ufunc.__name__, array, float(self), inputs[1] is self)
            if out is not None:
                if "out" not in kwargs:
                    return out
                kwargs["out"][0][...] = out
                return kwargs["out"][0]
        number = namespace(array).asarray(float(self), array.dtype)
        return getattr(ufunc, method)(*(number if a is self else a for a in inputs), **kwargs)


def _sixteen_bit(name: str, x: Any, number: float, right: bool) -> Any:
    """``x (name) number`` (``number (name) x`` unless ``right``) as PyTorch's CPU kernels
    compute it for a 16-bit float array ``x``, or None where that is the ufunc on the number
    rounded to ``x``'s dtype."""
    dtype, xp_ = x.dtype, namespace(x)
    if name in _OPMATH and (right or name == "multiply"):
        return cast(getattr(xp_, name)(widened(x), xp_.float32(number)), dtype)
    if name in ("divide", "true_divide") and not right:  # Tensor.__rdiv__
        return cast(widened(cast(xp_.reciprocal(widened(x)), dtype)) * xp_.float32(number), dtype)
    if name == "power" and right and dtype == bfloat16 and number in (3, -2):
        square = widened(cast(widened(x) * widened(x), dtype))
        if number == 3:
            return cast(square * widened(x), dtype)
        return cast(xp_.reciprocal(square), dtype)
    return None


# the ufuncs whose PyTorch kernels take a scalar right operand in float32 (BinaryOpsKernel.cpp)
_OPMATH = frozenset({"multiply", "divide", "true_divide", "floor_divide"})

# the 16-bit float dtypes, as a set: ``dtype in SIXTEEN_BIT`` is one hash lookup
SIXTEEN_BIT = frozenset({float16, bfloat16})


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
    xp = namespace(x)
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
    bits, xp = x.view(numpy.uint16), namespace(x)
    out = xp.left_shift(bits & 0x7FFF, 13, dtype=numpy.uint32).view(numpy.float32)
    out *= numpy.float32(2.0**112)
    special = (bits & 0x7C00) == 0x7C00
    if special.any():
        out.view(numpy.uint32)[special] |= 0x7F800000
    return xp.copysign(out, bits.view(numpy.int16), out=out)


def below(draws: Any, low: float, high: float) -> Any:
    """Uniform ``draws`` from [low, high), rounded to their dtype from a wider one, kept in
    [low, high) as PyTorch's are: one that rounded up to ``high`` becomes the dtype's largest
    number below it (but not below ``low``). In place; returns ``draws``.

    >>> below(numpy.asarray([0.5, 1.0], float16), 0.0, 1.0)
    array([0.5   , 0.9995], dtype=float16)
    """
    top = numpy.asarray(high, draws.dtype)  # on the host: any device's dtype is NumPy's
    if top >= high:
        top = numpy.nextafter(top, numpy.asarray(-numpy.inf, draws.dtype))
    top = max(float(top), float(numpy.asarray(low, draws.dtype)))  # exact in the dtype
    return namespace(draws).minimum(draws, top, out=draws)


def keep_where(condition: Any, x: Any, out: Any = None) -> Any:
    """``numpy.where(condition, x, 0)`` bit for bit (a NaN or -0.0 where the condition fails
    becomes +0.0), computed by multiplying ``x``'s bits, seen as integers of its width, by 0 or
    1: NumPy's ``where`` branches per element, and with a scattered condition (a ReLU's mask) it
    is about 40 times slower than that multiply.

    >>> keep_where(numpy.array([True, False]), numpy.array([-2.0, numpy.nan]))
    array([-2.,  0.])
    """
    bits = _BITS[x.dtype.itemsize]
    multiply = (numpy if type(x) is ndarray else namespace(x)).multiply
    kept = multiply(x.view(bits), condition, out=None if out is None else out.view(bits))
    return kept.view(x.dtype)


_BITS = {2: numpy.int16, 4: numpy.int32, 8: numpy.int64}


def memory_order(strides: tuple) -> list[int]:
    """The dims from the outermost in memory to the innermost, by the size of their strides.

    >>> memory_order((4, 32, 8))
    [1, 2, 0]
    """
    return sorted(range(len(strides)), key=lambda d: -abs(strides[d]))


def block_order(array: Any) -> tuple | None:
    """The dims of ``array`` from the outermost in memory to the innermost, if its entries fill
    one block in that order (C order up to a permutation of the dims, such as the batch-last
    images of a convolution seen batch first); else None.

    >>> block_order(numpy.zeros((2, 3, 4)).transpose(2, 0, 1))
    (1, 2, 0)
    """
    if array.flags.c_contiguous:
        return tuple(range(array.ndim))
    order = tuple(memory_order(array.strides))
    return order if array.transpose(order).flags.c_contiguous else None


def is_floating(dtype: numpy.dtype) -> bool:
    """True for the floating dtypes, the only ones that can require gradients."""
    return dtype.kind == "f" or dtype == bfloat16


def can_require_grad(dtype: numpy.dtype) -> bool:
    """True for the dtypes a gradient can flow through: the floating ones and the complex."""
    return dtype.kind in "fc" or dtype == bfloat16


def to_complex(dtype: numpy.dtype) -> numpy.dtype:
    """The complex dtype whose parts are ``dtype`` (complex64 for float32 and narrower floats),
    as PyTorch's ``toComplexType``; a complex dtype is its own."""
    return complex128 if dtype in (float64, complex128) else complex64


def to_real(dtype: numpy.dtype) -> numpy.dtype:
    """The dtype of a complex dtype's parts (float32 for complex64); any other dtype is its own."""
    return float64 if dtype == complex128 else float32 if dtype == complex64 else dtype


def to_dtype(dtype) -> numpy.dtype:
    """Accept a dtype, a NumPy type or a name such as ``"float32"``."""
    if isinstance(dtype, str):
        dtype = bfloat16 if dtype == "bfloat16" else numpy.dtype(dtype)
    return numpy.dtype(dtype)


# While scratchgrad.jit records a step, its recorder (as ``autograd.capture_hook.recorder``,
# which this bottom layer cannot import); None otherwise. A seeding inside the step is then
# noted, so that every replay seeds again, as the eager step does.
recorder = None


class Generator:
    """A seeded source of random numbers, as ``torch.Generator``; it draws on its device.
    Unseeded, it starts from PyTorch's default seed, 67280421310721.

    >>> g = Generator().manual_seed(0)
    >>> int(g.rng.integers(10)) == int(Generator().manual_seed(0).rng.integers(10))
    True
    >>> Generator().initial_seed()
    67280421310721
    """

    def __init__(self, seed: int | None = None, device: _Device | str = "cpu") -> None:
        if isinstance(seed, (str, _Device)):  # torch.Generator("cpu"): a device comes first
            seed, device = None, seed
        self._random = array_module(device).random
        self.device = _Device(device)
        self.manual_seed(_DEFAULT_SEED if seed is None else seed)

    def manual_seed(self, seed: int) -> Generator:
        """Seed it with an int from -2**63 to 2**64 - 1 (a negative one counts modulo 2**64,
        as PyTorch's); returns it."""
        # scratchgrad.jit: seeded again at every replay
        if recorder is not None and recorder.here():
            return recorder.replayed(Generator.manual_seed, self, seed)
        seed = _as_seed(seed)
        # The generator is made at the first draw, as PyTorch seeds CUDA lazily: a DataLoader
        # worker forked from a process that used the GPU seeds every device's generator, and
        # must not touch the GPU (CUDA cannot start in a forked child).
        self._seed, self._rng = seed, None
        return self

    def seed(self) -> int:
        """Seed it with a fresh random 64-bit number from the operating system, and return it.

        >>> g = Generator()
        >>> g.seed() == g.initial_seed()
        True
        """
        if recorder is not None and recorder.here():  # scratchgrad.jit: a new seed at every replay
            return recorder.replayed(Generator.seed, self)
        new = _fresh_seed()
        self.manual_seed(new)
        return new

    def initial_seed(self) -> int:
        """The seed it was last seeded with (by ``manual_seed``, ``seed`` or ``set_state``)."""
        return self._seed

    def get_state(self) -> Any:
        """Its state, as ``torch.Generator.get_state``: a 1-D uint8 tensor that ``set_state``
        takes back to draw the same numbers again. It holds the seed and NumPy's PCG64 state
        (the words of ``_STATE_FIELDS``), not PyTorch's Mersenne Twister state: states do
        not cross between the two libraries.

        >>> g = Generator().manual_seed(3)
        >>> state = g.get_state()
        >>> first = g.rng.random()
        >>> g.set_state(state).rng.random() == first
        True
        """
        if recorder is not None and recorder.here():  # scratchgrad.jit: read again at every replay
            return recorder.replayed(Generator.get_state, self)
        from scratchgrad.tensor import Tensor  # the state is a tensor (see test_layering)

        bit_state = self._numpy_rng("get_state").bit_generator.state
        if bit_state["bit_generator"] != "PCG64":  # a generator set through ``rng``
            raise RuntimeError(
                f"get_state: only a PCG64 generator's state can be saved, this one draws with "
                f"{bit_state['bit_generator']}"
            )
        words = (
            self._seed,
            bit_state["state"]["state"],
            bit_state["state"]["inc"],
            bit_state["has_uint32"],
            bit_state["uinteger"],
        )
        packed = _STATE_TAG + b"".join(
            word.to_bytes(size, "little") for word, (_, size) in zip(words, _STATE_FIELDS)
        )
        return Tensor._make(numpy.frombuffer(packed, numpy.uint8).copy())

    def set_state(self, new_state: Any) -> Generator:
        """Go back to a state ``get_state`` gave (of any CPU generator); returns it. A tensor
        that ``get_state`` did not make is refused.

        >>> a, b = Generator().manual_seed(1), Generator().manual_seed(2)
        >>> b.set_state(a.get_state()).initial_seed()
        1
        """
        if recorder is not None and recorder.here():  # scratchgrad.jit: set again at every replay
            return recorder.replayed(Generator.set_state, self, new_state)
        words = _unpack_state(new_state)
        rng = self._numpy_rng("set_state")
        # in place: whoever holds ``rng`` (a sampler's iterator) draws on from the new state
        rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": words["state"], "inc": words["inc"]},
            "has_uint32": words["has_uint32"],
            "uinteger": words["uinteger"],
        }
        self._seed = words["seed"]
        return self

    def _numpy_rng(self, op: str) -> Any:
        """Its NumPy generator; another array module's (CuPy's) keeps a state it cannot
        hand out, so ``op`` is refused there."""
        if self._random is not numpy.random:
            raise RuntimeError(
                f"{op}: the state of a {self.device.type} generator cannot be read or set; "
                "only a CPU generator's can (seed this one with manual_seed instead)"
            )
        return self.rng

    @property
    def rng(self) -> Any:
        """The array module's random generator that draws the numbers."""
        if self._rng is None:
            self._rng = self._random.default_rng(self._seed)
        return self._rng

    @rng.setter
    def rng(self, rng: Any) -> None:
        self._rng = rng


_DEFAULT_SEED = 67280421310721  # PyTorch's seed of a new Generator

# A saved state (``Generator.get_state``): a tag, then these little-endian words: the seed and
# NumPy's PCG64 state (its 128-bit state and increment, and the spare 32-bit half of a 64-bit
# draw that the next 32-bit draw uses, with the flag saying whether there is one).
_STATE_TAG = b"scratchgrad PCG64 state 1\0"
_STATE_FIELDS = (("seed", 8), ("state", 16), ("inc", 16), ("has_uint32", 1), ("uinteger", 4))
_STATE_SIZE = len(_STATE_TAG) + sum(size for _, size in _STATE_FIELDS)


def _unpack_state(state: Any) -> dict[str, int]:
    """The words of a state that ``get_state`` made; anything else raises."""
    array = getattr(state, "array", None)  # a Tensor (a bottom layer cannot name the class)
    if array is None or array.dtype != numpy.uint8:
        raise TypeError(
            "set_state: the state must be a uint8 tensor made by get_state, got "
            + (f"a {array.dtype} tensor" if array is not None else type_name(state))
        )
    packed = to_host(array).tobytes()
    if len(packed) != _STATE_SIZE or not packed.startswith(_STATE_TAG):
        raise RuntimeError(
            f"set_state: not a state made by get_state (expected {_STATE_SIZE} bytes starting "
            f"with {_STATE_TAG!r}, got {len(packed)} bytes); PyTorch's states are not read"
        )
    words, at = {}, len(_STATE_TAG)
    for name, size in _STATE_FIELDS:
        words[name] = int.from_bytes(packed[at : at + size], "little")
        at += size
    return words


def _as_seed(seed: Any) -> int:
    """``seed`` as the unsigned 64-bit seed PyTorch takes it for: an int in [-2**63, 2**64),
    a negative one modulo 2**64."""
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise RuntimeError(f"manual_seed expected a long, but got {type_name(seed)}")
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"manual_seed: the seed {seed} is outside [-2**63, 2**64)")
    return seed % 2**64


def _fresh_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


default_generator = Generator(0)
# the default generator of each device type that has drawn; seeded together by manual_seed
_default_generators = {"cpu": default_generator}
_last_seed = 0


def default_generator_for(where: device | str | None) -> Generator:
    """The generator that draws on ``where`` when no generator is given (one per device type,
    made on first use from the last seed given to ``manual_seed``)."""
    kind = "cpu" if where is None else device(where).type
    found = _default_generators.get(kind)
    if found is None:
        found = _default_generators[kind] = Generator(_last_seed, kind)
    return found


def rng_for(generator: Generator | None, where: device | str | None = None) -> Any:
    """The array module's random generator that ``generator`` draws with, else that of the
    default generator of ``where`` (looked up at each draw: a ``manual_seed`` since counts).

    >>> rng_for(None) is default_generator.rng
    True
    """
    return (generator or default_generator_for(where)).rng


def manual_seed(seed: int) -> Generator:
    """Seed the generators the whole library uses (initialisation, dropout, shuffling), on
    every device, as ``torch.manual_seed`` (``int(seed)`` first: 2.7 seeds with 2); returns
    the CPU's."""
    if recorder is not None and recorder.here():  # scratchgrad.jit: seeded again at every replay
        return recorder.replayed(manual_seed, seed)
    global _last_seed
    _last_seed = _as_seed(int(seed))
    for generator in _default_generators.values():
        generator.manual_seed(_last_seed)
    return default_generator


def seed() -> int:
    """Seed every device's generator with a fresh random 64-bit number, and return it, as
    ``torch.seed``.

    >>> new = seed()
    >>> initial_seed() == new
    True
    """
    if recorder is not None and recorder.here():  # scratchgrad.jit: a new seed at every replay
        return recorder.replayed(seed)
    new = _fresh_seed()
    manual_seed(new)
    return new


def initial_seed() -> int:
    """The seed of the CPU's default generator, as ``torch.initial_seed``."""
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    """The CPU's default generator's state, a uint8 tensor, as ``torch.get_rng_state`` (see
    ``Generator.get_state``).

    >>> state = get_rng_state()
    >>> first = rng_for(None).random()
    >>> set_rng_state(state)
    >>> rng_for(None).random() == first
    True
    """
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """Set the CPU's default generator's state to one ``get_rng_state`` gave, as
    ``torch.set_rng_state``."""
    default_generator.set_state(new_state)
