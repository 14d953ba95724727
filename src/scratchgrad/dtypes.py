"""Dtype policy: which dtype a tensor gets, as PyTorch decides it where NumPy decides otherwise.

From Python data (``to_array``: floats become float32, ints int64), from two operands
(``result_type``, ``promote_types``: a floating dtype beats an integer one whatever the sizes,
a 0-d tensor does not widen), from an operand and a Python number (``scalar_type``), and from
the arguments of ``.to(...)`` (``requested_device_and_dtype``). How Python numbers meet integer
dtypes, where NumPy raises and PyTorch does not: wrapped modulo 2**bits in arithmetic and
comparisons (``wrapped_int``), checked when written into a tensor (``written_number``, and
``to_array`` for ``tensor(data, dtype=...)``). What a dtype holds: ``finfo`` and ``iinfo``.
The dtypes themselves, and which of them are floating, are the backend's.

The engine computes on NumPy dtypes (``promoted``, ``result_dtype``); the public functions give
``scratchgrad.dtype`` objects (``promote_types``, ``result_type``, ``get_default_dtype``).

>>> from scratchgrad import backend
>>> promoted(backend.int64, backend.float16), promoted(backend.bfloat16, backend.float16)
(dtype('float16'), dtype('float32'))
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import ml_dtypes
import numpy

from scratchgrad import backend
from scratchgrad.backend import (
    BAREBONES_UNSIGNED,
    bfloat16,
    bool_,
    can_require_grad,
    complex64,
    float16,
    float32,
    int64,
    is_floating,
    xp,
)


def promote_types(x: Any, y: Any) -> backend.dtype:
    """PyTorch's promotion of two dtypes, as ``torch.promote_types``: a floating dtype beats an
    integer or bool one whatever their sizes; within a kind, the wider wins (bfloat16 with
    float16 gives float32, uint8 with int8 int16).

    >>> import scratchgrad as sg
    >>> sg.promote_types(sg.uint8, sg.int8), sg.promote_types(sg.int64, sg.float16)
    (scratchgrad.int16, scratchgrad.float16)
    """
    return backend.dtype_of(promoted(backend.to_dtype(x), backend.to_dtype(y)))


def promoted(x: numpy.dtype, y: numpy.dtype) -> numpy.dtype:
    """``promote_types`` on NumPy dtypes, giving a NumPy dtype: the engine's."""
    if x == y:
        return x
    if (x in BAREBONES_UNSIGNED or y in BAREBONES_UNSIGNED) and not (
        is_floating(x) or is_floating(y)
    ):
        raise RuntimeError(
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            f"{torch_name(x)} and {torch_name(y)}"
        )
    if "c" in (x.kind, y.kind):  # complex beats every kind; its parts promote as floats do
        return backend.to_complex(promoted(backend.to_real(x), backend.to_real(y)))
    if is_floating(x) != is_floating(y):
        return x if is_floating(x) else y
    if bfloat16 in (x, y):
        other = y if x == bfloat16 else x
        return float32 if other == float16 else numpy.promote_types(other, float32)
    return numpy.promote_types(x, y)


def can_cast(from_: numpy.dtype, to: numpy.dtype) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` into ``to``, as ``torch.can_cast``: never
    to a lower category (bool < integer < floating), whatever the sizes.

    >>> import scratchgrad as sg
    >>> sg.can_cast(sg.float64, sg.float16), sg.can_cast(sg.float32, sg.int32)
    (True, False)
    """
    return _category(from_) <= _category(to)


def _category(dtype: numpy.dtype) -> int:
    return 0 if dtype == bool_ else 2 if is_floating(dtype) else 3 if dtype.kind == "c" else 1


def scalar_type(dtype: numpy.dtype, value) -> numpy.dtype:
    """The dtype of ``tensor op python_scalar``: the tensor's, unless the scalar's kind is wider.

    An int or bool tensor with a Python float gives the default float dtype, as in PyTorch.
    """
    if isinstance(value, bool) or (isinstance(value, int) and dtype != bool_):
        return dtype
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        real = dtype if backend.can_require_grad(dtype) else backend.default_float
        return backend.to_complex(real)  # (a complex dtype is its own)
    return dtype if is_floating(dtype) or dtype.kind == "c" else backend.default_float


def python_number(value: Any) -> Any:
    """A NumPy scalar as the Python number PyTorch reads it as, so that it promotes by its kind
    only (``float32 tensor * float64(2)`` stays float32, where NumPy would widen); PyTorch reads
    a ``bool_`` as a float. Anything else is returned as it is.

    >>> python_number(numpy.float64(2.5)), python_number(numpy.True_), python_number("a")
    (2.5, 1.0, 'a')
    """
    if isinstance(value, numpy.generic):
        return float(value) if isinstance(value, numpy.bool_) else value.item()
    return value


def result_type(x: Any, y: Any) -> backend.dtype:
    """The dtype of an op on tensors (or arrays) ``x`` and ``y``, as ``torch.result_type``:
    ``promote_types`` of their dtypes, except that a 0-d tensor does not widen a tensor with
    dims of the same or a higher kind (a complex one makes a float one complex, keeping its
    width), and a Python number only by its kind (see ``scalar_type``).

    >>> import scratchgrad as sg
    >>> sg.result_type(sg.tensor([1], dtype=sg.uint8), sg.tensor(1000))
    scratchgrad.uint8
    >>> sg.result_type(2, sg.ones(1)), sg.result_type(sg.tensor([1, 2]), 2.5)
    (scratchgrad.float32, scratchgrad.float32)
    """
    return backend.dtype_of(result_dtype(x, y))


def result_dtype(x: Any, y: Any) -> numpy.dtype:
    """``result_type`` as a NumPy dtype: the engine's. A tensor is read by its array."""
    x, y = python_number(x), python_number(y)
    x, y = getattr(x, "array", x), getattr(y, "array", y)  # (a tensor: its NumPy dtype)
    if not hasattr(y, "dtype"):
        return scalar_type(x.dtype, y)
    if not hasattr(x, "dtype"):
        return scalar_type(y.dtype, x)
    kind = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}
    if (x.ndim == 0) != (y.ndim == 0):
        dims, zero = (y, x) if x.ndim == 0 else (x, y)
        kd, kz = kind[dims.dtype.kind], kind[zero.dtype.kind]
        if kd >= kz:  # float32 [2] + complex128 () is complex64, as PyTorch's combine_categories
            return dims.dtype
        if kd == 2 and kz == 3:
            return backend.to_complex(dims.dtype)
    return promoted(x.dtype, y.dtype)


def result_type_of(*operands: Any) -> numpy.dtype:
    """The dtype of an op on several operands at once (``addcmul``, ``addcdiv``), as PyTorch
    promotes them: the tensors with dims among themselves, the 0-d tensors among themselves,
    the Python numbers by kind; then the 0-d tensors and numbers widen only by a higher kind.
    (Pair by pair, ``int8 [1]`` with ``float16 ()`` would be float16, and a float64 ``()``
    would then not widen it.)

    >>> import scratchgrad as sg
    >>> i8, h, d = sg.ones(1, dtype=sg.int8), sg.tensor(1.0, dtype=sg.float16), sg.tensor(1.0)
    >>> result_type_of(i8, h, d.double()), result_type_of(i8, 2.5), result_type_of(h, True)
    (dtype('float64'), dtype('float32'), dtype('float16'))
    """
    # (a tensor by its array: the engine's NumPy dtypes)
    operands = [getattr(operand, "array", operand) for operand in map(python_number, operands)]
    numbers = [operand for operand in operands if not hasattr(operand, "dtype")]
    kinds = (bool, int, float, complex)
    number = max(numbers, key=lambda n: kinds.index(type(n)), default=None)
    tensors = [operand for operand in operands if hasattr(operand, "dtype")]
    zeros = [operand.dtype for operand in tensors if operand.ndim == 0]
    dims = [operand.dtype for operand in tensors if operand.ndim > 0]
    lower = number
    if zeros:
        zero = functools.reduce(promoted, zeros)
        lower = xp.zeros((), zero if number is None else scalar_type(zero, number))
    if dims:
        dims = functools.reduce(promoted, dims)
        return dims if lower is None else result_dtype(xp.zeros(1, dims), lower)
    return lower.dtype if zeros else to_array(number, None).dtype


def to_array(data: Any, dtype: Any):
    """An array (copied) from Python data or a NumPy array (a tensor's ``.array``), in
    PyTorch's dtypes: Python floats become float32, ints int64; a NumPy array keeps its dtype.
    A device's array is copied by its own module, on its device."""
    if backend.is_array(data) and type(data) is not xp.ndarray:
        dtype = None if dtype is None else backend.to_dtype(dtype)
        return backend.namespace(data).array(data, dtype=dtype)
    if isinstance(data, (xp.ndarray, xp.generic)):
        return (
            xp.array(data)
            if dtype is None
            else backend.cast(xp.asarray(data), backend.to_dtype(dtype))
        )
    if dtype is not None:
        dtype = backend.to_dtype(dtype)
        array = _from_python(data, dtype)  # (Python floats are float64: cast rounds as PyTorch's)
        _check_numbers(array, dtype)
        return _checked(array, dtype, data) if dtype.kind in "iu" else backend.cast(array, dtype)
    array = _from_python(data)
    read = _numpy_leaves_dtype(data) if isinstance(data, (list, tuple)) else None
    if read is not None:  # NumPy scalars or arrays in the list: their dtypes count
        return array.astype(read)
    if array.dtype.kind == "f":
        return array.astype(backend.default_float)
    if array.dtype.kind in "iu":
        return array.astype(int64)
    if array.dtype.kind == "c":
        return array.astype(backend.to_complex(backend.default_float))
    if array.dtype.kind not in "b":
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} ({array.dtype})")
    return array


def _check_numbers(array: Any, dtype: numpy.dtype) -> None:
    """Refuse, as PyTorch does, Python data that ``dtype`` cannot hold though NumPy casts it:
    a complex number for a real dtype but bool (NumPy would drop its imaginary part), None
    (NaN), text. (Ints past int64's range are Python objects here.)"""
    number = numbers.Number if dtype.kind in "cb" else numbers.Real
    if array.dtype.kind in ("biufc" if dtype.kind in "cb" else "biuf") or (
        array.dtype.kind == "O" and all(isinstance(value, number) for value in array.flat)
    ):
        return
    found = {type(value).__name__ for value in array.astype(object).flat} - {"int", "float", "bool"}
    raise TypeError(f"tensor: cannot make a {dtype} tensor of {', '.join(sorted(found))} data")


def _numpy_leaves_dtype(data: list | tuple) -> numpy.dtype | None:
    """The dtype PyTorch gives a nested list holding NumPy scalars or arrays: each leaf's own
    dtype (a Python float's the default float, an int's int64, a bool's bool) promoted with
    the others', so ``[float64(1), 2.0]`` is float64 and ``[int32(1), int32(2)]`` int32. None
    when no leaf is NumPy's, or a leaf is neither a number nor NumPy's."""
    dtypes, pending, numpy_leaf = set(), [data], False
    while pending:
        items = pending.pop()
        kinds = set(map(type, items))
        if kinds <= {float, int, bool}:  # a list of Python numbers: read at C speed
            dtypes |= kinds
            continue
        for leaf in items:
            kind = type(leaf)
            if kind in (list, tuple):
                pending.append(leaf)
            elif kind in (float, int, bool):
                dtypes.add(kind)
            elif isinstance(leaf, (xp.generic, xp.ndarray)):
                dtypes.add(leaf.dtype)
                numpy_leaf = True
            else:
                return None
    if not numpy_leaf:
        return None
    python = {float: backend.default_float, int: int64, bool: xp.dtype(bool)}
    return functools.reduce(promoted, (python.get(d, d) for d in dtypes))


def _from_python(data: Any, dtype: numpy.dtype | None = None) -> Any:
    """NumPy's array of Python data, with PyTorch's errors for a ragged list and for ints past
    int64's range (NumPy would make uint64 or Python objects of them) unless ``dtype`` is a
    floating or complex one, which holds them, or uint64, which holds those below 2**64."""
    try:
        array = xp.array(data)
    except ValueError as error:  # NumPy's text for a ragged list: "inhomogeneous shape ..."
        raise ValueError(
            f"tensor: the nested sequences must all have the same length (a ragged list cannot "
            f"be a tensor): {error}"
        ) from None
    if dtype is not None and backend.can_require_grad(dtype):
        return array
    if dtype == xp.uint64 and array.dtype.kind in "iuO":  # (no wrapping here, as PyTorch's)
        if array.dtype.kind == "O" or (array.dtype.kind == "i" and array.size and array.min() < 0):
            raise OverflowError(
                "tensor: uint64 takes ints from 0 to 2**64 - 1 (can't convert negative int to "
                "unsigned, or int too big to convert)"
            )
        return array
    if (
        array.dtype == xp.uint64
        or (array.dtype.kind == "O" and int in map(type, array.flat))
        or _ints_made_floats(data, array)
    ):
        raise ValueError("tensor: Overflow when unpacking long long (an int past 64 bits)")
    return array


def _ints_made_floats(data: Any, array: Any) -> bool:
    """Whether NumPy made floats of ints only, as it does when one is past int64's range and
    another is not (``[2**63, 1]``: uint64 with int64 promotes to float64). Looked at only
    when a list gives floats that large; the largest is found in Python for a short list
    (NumPy's call costs more there) and by NumPy for a long one."""
    if type(data) not in (list, tuple) or array.dtype.kind != "f" or not array.size:
        return False
    largest = max(array.ravel().tolist()) if array.size <= 32 else array.max()
    if not largest >= 2**63:  # (negative ints past int64 give objects, checked apart)
        return False
    leaves = xp.array(data, dtype=object).ravel()
    return all(isinstance(leaf, int | xp.integer) for leaf in leaves)


def _checked(array: Any, dtype: numpy.dtype, data: Any = None) -> Any:
    """Python numbers (read into ``array``, from ``data``) as integers of ``dtype``, refused as
    PyTorch refuses them when out of its range: floats (NaN and inf too) and ints alike,
    except that negative ints down to ``-max`` wrap into an unsigned dtype (-1 is 255 in
    uint8), also in a list that has floats (``[0.0, -1]``: -1.0 here, an int to PyTorch)."""
    if array.dtype.kind in "iuf" and array.size:
        low, high = _int_range(dtype)
        if dtype.kind == "u" and (array.dtype.kind != "f" or _negatives_are_ints(array, data)):
            low = -high
        if not (low <= array.min() and array.max() <= high):  # False for a NaN
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
        if dtype.kind == "u" and array.dtype.kind == "f":
            array = array.astype(int64)  # (wraps a negative one as an int; NumPy may clip it)
    return array.astype(dtype)


def _negatives_are_ints(array: Any, data: Any) -> bool:
    """Whether the negative numbers of the list ``data`` (read into the float ``array``) were
    Python ints."""
    if data is None or not array.min() < 0:
        return False
    leaves = xp.array(data, dtype=object).ravel()
    return all(type(leaf) in (int, bool) for leaf in leaves if leaf < 0)


@functools.cache
def _int_range(dtype: numpy.dtype) -> tuple[int, int]:
    """An integer dtype's lowest and highest values, as Python ints (looked up once)."""
    info = numpy.iinfo(dtype)
    return int(info.min), int(info.max)


def written_number(value: Any, dtype: numpy.dtype) -> Any:
    """A Python number written into a tensor of ``dtype`` (``fill_``, ``x[i] = v``, the value
    of ``where`` or ``masked_fill``), as PyTorch converts it: for an integer dtype, checked as
    ``tensor`` checks it (-1 is 255 in uint8, 300 raises), then returned as a Python int.

    >>> import scratchgrad as sg
    >>> written_number(-1, sg.uint8), written_number(2.7, sg.int8), written_number(2.7, sg.float32)
    (255, 2, 2.7)
    """
    if dtype.kind not in "iu" or type(value) not in (int, float):
        return value
    if type(value) is int and 0 <= value < 128:  # in every integer dtype: the common case
        return value
    return _checked(xp.array(value), dtype).item()


def checked_number(value: Any, dtype: numpy.dtype) -> Any:
    """A Python number written into ``dtype`` by an op that checks it as PyTorch's
    ``masked_fill``, ``index_fill`` and ``scatter`` do, whatever the tensor's size: as
    ``written_number`` for an integer dtype; a finite number past a floating (or complex)
    dtype's largest raises (float16's 70000, float32's 1e39; inf and nan pass), and so does a
    complex number with an imaginary part into a real dtype (without, its real part is
    written).

    >>> import scratchgrad as sg
    >>> checked_number(65504.0, sg.float16), checked_number(-math.inf, sg.float16)
    (65504.0, -inf)
    >>> checked_number(70000, sg.float16)
    Traceback (most recent call last):
    RuntimeError: value cannot be converted to type float16 without overflow
    """
    if type(value) is float and -65504.0 <= value <= 65504.0 and dtype.kind in "fc":
        return value  # (the common case first: in every floating dtype's range)
    if type(value) is complex and dtype.kind != "c":  # (as PyTorch's check)
        if value.imag:
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
        value = value.real
    if type(value) not in (int, float) or not can_require_grad(dtype):
        return written_number(value, dtype)
    if abs(value) > _largest(dtype) and value not in (math.inf, -math.inf):
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
    return value


def wrapped_float(value: Any, dtype: numpy.dtype) -> Any:
    """A Python float beside a tensor of ``dtype`` in ``where``, or written by setitem: past
    float32's largest it raises for a float32 or complex64 tensor, as PyTorch's (which reads
    it as float32 first, checked); a 16-bit tensor takes it as inf, as PyTorch's does.
    Anything but a float as it is.

    >>> import scratchgrad as sg
    >>> wrapped_float(1e39, sg.float16)
    1e+39
    >>> wrapped_float(1e39, sg.float32)
    Traceback (most recent call last):
    RuntimeError: value cannot be converted to type float32 without overflow
    """
    big = type(value) is float and not -_FLOAT32_LARGEST <= value <= _FLOAT32_LARGEST
    if big and dtype in (float32, complex64):  # (the value first: the common case is cheap)
        return checked_number(value, dtype)
    return value


_FLOAT32_LARGEST = float(ml_dtypes.finfo(numpy.float32).max)


def filled_number(value: Any, dtype: numpy.dtype, size: int) -> Any:
    """A Python number filling ``size`` entries of ``dtype`` (``fill_``, ``full``), checked as
    ``checked_number`` checks it, except that a number past a 16-bit dtype's largest filling
    exactly one entry is rounded (to inf, or float16's 65504), as PyTorch's.

    >>> import scratchgrad as sg
    >>> filled_number(1e30, sg.float16, 1)
    inf
    >>> filled_number(1e30, sg.float16, 3)
    Traceback (most recent call last):
    RuntimeError: value cannot be converted to type float16 without overflow
    """
    one_16_bit = size == 1 and dtype.itemsize <= 2 and is_floating(dtype)
    if one_16_bit and type(value) in (int, float) and abs(value) > _largest(dtype):
        with numpy.errstate(over="ignore"):  # (rounded here, silently: inf, or float16's 65504)
            return float(numpy.asarray(value, dtype))
    return checked_number(value, dtype)


@functools.cache
def _largest(dtype: numpy.dtype) -> float:
    """A floating dtype's largest finite number (looked up once)."""
    return float(ml_dtypes.finfo(dtype).max)


def wrapped_int(value: int, dtype: numpy.dtype) -> int:
    """A Python int next to an integer tensor of ``dtype`` (``x + 300``, ``x < 300``), as
    PyTorch reads it: modulo 2**bits into the dtype's range (300 is 44 for uint8, -129 is 127
    for int8), where NumPy would raise. Beyond 64 bits it raises PyTorch's OverflowError.

    >>> import scratchgrad as sg
    >>> wrapped_int(300, sg.uint8), wrapped_int(-129, sg.int8), wrapped_int(5, sg.int8)
    (44, 127, 5)
    """
    low, high = _int_range(dtype)
    if low <= value <= high:
        return value
    if not -(2**63) <= value < 2**64:
        raise OverflowError(f"int too big to convert: {value} does not fit in 64 bits")
    return (value - low) % (high - low + 1) + low


def set_default_dtype(dtype: Any) -> None:
    """Make ``dtype`` (a floating dtype; float32 at import) the default, as
    ``torch.set_default_dtype``: Python floats become tensors of it, the creation functions
    make it (``zeros``, ``rand``, ``arange`` of floats), new layers' parameters have it, and
    integer tensors turn into it for true division, ``exp`` and the like.

    >>> import scratchgrad as sg
    >>> sg.set_default_dtype(sg.float64)
    >>> sg.tensor([1.5]).dtype, sg.nn.Linear(2, 1).weight.dtype
    (scratchgrad.float64, scratchgrad.float64)
    >>> sg.set_default_dtype(sg.float32)
    """
    dtype = backend.to_dtype(dtype)
    if not is_floating(dtype):
        raise TypeError(f"set_default_dtype: only floating dtypes can be the default, got {dtype}")
    backend.default_float = dtype


def get_default_dtype() -> backend.dtype:
    """The default floating dtype (see ``set_default_dtype``), as ``torch.get_default_dtype``.

    >>> import scratchgrad as sg
    >>> sg.get_default_dtype()
    scratchgrad.float32
    """
    return backend.dtype_of(backend.default_float)


def requested_device_and_dtype(args: tuple, device: Any = None, dtype: Any = None) -> tuple:
    """The device and dtype that ``.to(*args, device=..., dtype=...)`` asks for (None: keep
    it), as PyTorch reads the arguments: a device (or its name), a dtype, or a tensor to match."""
    if len(args) > 2 or len(args) == 2 and not _is_device_then_dtype(*args):
        names = ", ".join(type(arg).__name__ for arg in args)
        raise TypeError(
            f"to() received an invalid combination of arguments ({names}): expected a dtype, a "
            f"device, a device and a dtype, or a tensor"
        )
    for arg in args:
        if hasattr(arg, "requires_grad"):  # a tensor (this module sits below Tensor)
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (bool, float, complex)):  # PyTorch's parser reads a 0-d CPU tensor
            device, dtype = backend.cpu, numpy.asarray(arg).dtype  # (bool, float64, complex128)
        elif isinstance(arg, (backend.device, str, int)):  # (a dtype's name is no device: raises)
            device = arg
        elif arg is not None:
            dtype = arg
    return (
        None if device is None else backend.device(device),
        None if dtype is None else backend.to_dtype(dtype),
    )


def split_to_arguments(
    args: tuple, tensor: Any = None, non_blocking: Any = False
) -> tuple[tuple, tuple]:
    """The positional arguments of ``.to`` that say where to (and ``tensor=``, PyTorch's
    keyword for a tensor to match), and the flags (non_blocking, copy) that end them, as in
    ``x.to(sg.float64, False, True)``. A bool first is no flag: PyTorch reads it as a tensor
    (of dtype bool). As PyTorch's, a device alone takes no flags (``x.to("cpu", True)``), and
    ``non_blocking`` (also given by keyword) is a bool."""
    start = next((i for i, arg in enumerate(args) if i and type(arg) is bool), len(args))
    flags = args[start:]
    if type(non_blocking) is not bool:
        raise TypeError(
            f"to() received an invalid combination of arguments: non_blocking must be a bool, "
            f"not {type(non_blocking).__name__}"
        )
    device_alone = start == 1 < len(args) and isinstance(args[0], (backend.device, str, type(None)))
    if len(flags) > 2 or device_alone or any(type(flag) is not bool for flag in flags):
        names = ", ".join(type(arg).__name__ for arg in args)
        raise TypeError(
            f"to() received an invalid combination of arguments ({names}): after a dtype, a "
            "device and a dtype, or a tensor come two bools at most (non_blocking, copy)"
        )
    return (*args[:start], *(() if tensor is None else (tensor,))), flags


def _is_device_then_dtype(first: Any, second: Any) -> bool:
    """Whether ``.to(first, second)`` is PyTorch's ``to(device, dtype)`` (None for either)."""
    places = (backend.device, str, int, type(None))  # an int: an accelerator's index
    return (
        isinstance(first, places)
        and not isinstance(second, (backend.device, str))
        and (
            not hasattr(second, "requires_grad")  # a tensor (this module sits below Tensor)
        )
    )


class memory_format:  # noqa: N801  (PyTorch's name)
    """How a tensor's entries lie in memory, as ``torch.memory_format`` (``channels_last``
    needs 4 dims, ``channels_last_3d`` 5): ``contiguous``, ``to``, ``clone``, the ``*_like``
    factories and ``Module.to`` lay tensors out so with PyTorch's strides, which
    ``is_contiguous(memory_format=...)`` reads. Results of ops on such tensors count as
    row-major (PyTorch's keep channels-last) and have the row-major computation's bits."""

    def __init__(self, name: str, ndim: int | None = None) -> None:
        self.name, self.ndim = name, ndim

    def __repr__(self) -> str:
        return f"scratchgrad.{self.name}"


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", 4)
channels_last_3d = memory_format("channels_last_3d", 5)


class layout:  # noqa: N801  (PyTorch's name)
    """How a tensor's entries are stored, as ``torch.layout``: ``strided`` for dense arrays,
    ``sparse_coo`` for the indices and values of ``scratchgrad.sparse`` (no CSR or mkldnn).

    >>> import scratchgrad as sg
    >>> sg.ones(2).layout
    scratchgrad.strided
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"scratchgrad.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def check_memory_format(format: Any, ndim: int | None, op: str = "to") -> None:
    """PyTorch's errors for a ``memory_format`` argument given to a tensor of ``ndim`` dims
    (None: a module's ``to``, which lays out only the parameters that have the rank)."""
    if not isinstance(format, memory_format):
        raise TypeError(
            f"{op}(): argument 'memory_format' must be torch.memory_format, not "
            f"{type(format).__name__}"
        )
    if ndim is not None and format.ndim not in (None, ndim):
        raise RuntimeError(f"required rank {format.ndim} tensor to use {format.name} format")


class _Info:
    """The read-only fields of ``finfo`` and ``iinfo``, printed as PyTorch prints them."""

    __slots__ = ()
    _shown: tuple[str, ...] = ()  # the fields in the repr, in PyTorch's order

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"attribute '{name}' of '{type(self).__name__}' objects is not writable"
        )

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    __hash__ = None  # unhashable, as PyTorch's

    def __repr__(self) -> str:
        shown = (f"{name}={float(getattr(self, name)):g}" for name in self._shown)
        return f"{type(self).__name__}({', '.join(shown)}, dtype={self.dtype})"


def _info_dtype(name: str, type: Any) -> numpy.dtype:
    """The dtype that ``finfo(type)`` or ``iinfo(type)`` asks about: a dtype or a Python type,
    not a name (PyTorch refuses strings)."""
    if isinstance(type, str) or type is None:
        raise TypeError(
            f"{name}(): argument 'type' (position 1) must be scratchgrad.dtype, not "
            f"{backend.type_name(type)}"
        )
    return backend.to_dtype(type)


# PyTorch's names of its dtypes (its ScalarType's) in the messages we share with it
_TORCH_NAMES = {
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
}


def torch_name(dtype: Any) -> str:
    """A dtype as PyTorch's messages spell it ("not implemented for 'Float'").

    >>> import scratchgrad as sg
    >>> torch_name(sg.int64), torch_name(sg.ones(1).array.dtype)
    ('Long', 'Float')
    """
    return _TORCH_NAMES.get(dtype.name, dtype.name)


class finfo(_Info):
    """The numerical properties of a floating dtype (the default one when none is given), as
    ``torch.finfo``: ``bits``, ``eps`` (the gap from 1 to the next number), ``max``, ``min``,
    ``tiny`` and ``smallest_normal`` (the smallest positive normal number), ``resolution``
    (10 to the minus the decimal digits it holds), and ``dtype`` (its name).

    >>> import scratchgrad as sg
    >>> sg.finfo(sg.float16)  # doctest: +NORMALIZE_WHITESPACE
    finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562,
          smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)
    >>> sg.finfo().eps == 2.0**-23, sg.finfo(sg.bfloat16).bits
    (True, 16)
    """

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")
    _shown = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")

    def __init__(self, type: Any = None) -> None:
        dtype = backend.default_float if type is None else _info_dtype("finfo", type)
        dtype = backend.to_real(dtype)  # a complex dtype's parts, as PyTorch's
        if not is_floating(dtype):
            raise TypeError(
                "finfo() requires a floating point input type. Use scratchgrad.iinfo to handle "
                f"'{dtype}'"
            )
        info = ml_dtypes.finfo(dtype)  # NumPy's finfo, and bfloat16's
        self._set(
            bits=int(info.bits),
            eps=float(info.eps),
            max=float(info.max),
            min=float(info.min),
            tiny=float(info.smallest_normal),
            smallest_normal=float(info.smallest_normal),
            resolution=float(f"1e-{info.precision}"),  # exactly, where ml_dtypes rounds it
            dtype=str(dtype),
        )


class iinfo(_Info):
    """The range of an integer dtype, as ``torch.iinfo``: ``bits``, ``min``, ``max`` (Python
    ints) and ``dtype`` (its name). Bool is not an integer dtype here.

    >>> import scratchgrad as sg
    >>> sg.iinfo(sg.uint8)
    iinfo(min=0, max=255, dtype=uint8)
    >>> sg.iinfo(sg.int64).max == 2**63 - 1
    True
    """

    __slots__ = ("bits", "max", "min", "dtype")
    _shown = ("min", "max")

    def __init__(self, type: Any) -> None:
        dtype = _info_dtype("iinfo", type)
        if dtype == bool_:
            raise TypeError("scratchgrad.bool is not supported by scratchgrad.iinfo")
        if dtype.kind not in "iu":
            raise TypeError(
                f"iinfo() requires an integer input type. Use scratchgrad.finfo to handle '{dtype}'"
            )
        info = numpy.iinfo(dtype)
        self._set(bits=int(info.bits), min=int(info.min), max=int(info.max), dtype=str(dtype))
