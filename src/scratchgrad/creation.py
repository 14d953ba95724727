"""Factories: tensors made from data, constants and random numbers, with PyTorch's names.

Every factory takes ``device=``: constants and random draws are made by that device's array
module (draws from that device's generator unless one is given), data is copied there; a device
without a backend raises.
"""

from __future__ import annotations

import builtins
import functools
import math
import numbers
import operator
import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes

from scratchgrad import backend
from scratchgrad.autograd import Function, capture_hook
from scratchgrad.backend import Generator, xp
from scratchgrad.dtypes import (
    check_memory_format,
    filled_number,
    preserve_format,
    python_number,
    to_array,
    torch_name,
)
from scratchgrad.tensor import (
    Size,
    Tensor,
    cat,
    laid_out_as,
    names_bad_arguments,
    new_shape,
    stacklevel_outside,
    write_out,
)

# The factories make their arrays through capture_hook.call: while scratchgrad.jit records a
# step, each replay then makes a new array, as eager steps do (a step may change it in place:
# ``total = sg.zeros(()); total += loss`` must start from zero at every call).
_make = capture_hook.call


def _takes_out(factory: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``factory`` with PyTorch's ``out=``: the tensor is made in ``out``'s dtype and on its
    device (unless given) and written into it (``tensor.write_out``), which is resized
    without a warning, as PyTorch's factories do; then a leaf ``out`` requires grad as
    ``requires_grad`` says (False unless given), as PyTorch sets it."""

    @functools.wraps(factory)
    def made(*args: Any, out: Tensor | None = None, **kwargs: Any) -> Tensor:
        if out is None:
            return factory(*args, **kwargs)
        if isinstance(out, Tensor):
            for key in ("dtype", "device"):
                if kwargs.get(key) is None:
                    kwargs[key] = getattr(out, key)
        requires_grad = kwargs.pop("requires_grad", False)
        result = factory(*args, **kwargs)
        if isinstance(out, Tensor) and out.shape != result.shape:
            out.resize_(result.shape)
        write_out(factory.__name__, result, out)
        if out.is_leaf:  # (one that is not keeps its graph, as PyTorch's)
            out.requires_grad_(requires_grad)
        return out

    return made


def _finish(array, requires_grad: bool, device: Any = None) -> Tensor:
    """A tensor of ``array``, moved to ``device`` if given (see ``_on``)."""
    t = Tensor._make(array if device is None else backend.to_device(array, device))
    return t if _off(requires_grad) else t.requires_grad_(requires_grad)


def _off(requires_grad: Any) -> bool:
    """Whether a factory's ``requires_grad`` is off: False or None, as PyTorch's (which takes
    None there); any other value but True is a TypeError in ``requires_grad_``."""
    return requires_grad is False or requires_grad is None


def _on(device: Any) -> Any:
    """Where a tensor made on the CPU (data, random draws) goes: ``device``, or the default
    device (None where that is the CPU: nothing to move)."""
    if device is None and backend.default_device is not backend.cpu:
        return backend.default_device
    return device


def _xp(device: Any):
    """The array module that makes constants on ``device`` (None: the default device)."""
    if device is None:
        device = backend.default_device
    return xp if device is backend.cpu else backend.array_module(device)


def _dtype(dtype: Any, default: Any = None) -> Any:
    """``dtype`` as a NumPy dtype; None: ``default``, or the default floating dtype."""
    if dtype is not None:
        return backend.to_dtype(dtype)
    return backend.default_float if default is None else default


def tensor(
    data: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A new tensor holding a copy of ``data`` (``pin_memory`` is accepted and ignored: there is
    no device to copy to asynchronously).

    >>> tensor([[1, 2], [3, 4]]).dtype
    scratchgrad.int64
    """
    if backend.is_array(data):
        _check_byte_order("tensor", data)
    t = Tensor._from_data(data, dtype, requires_grad)
    recorder = capture_hook.recorder
    if recorder is not None:  # a new array at each replay (see _make)
        source = data.array if isinstance(data, Tensor) else data
        if isinstance(source, xp.ndarray):  # copied from it then: it may change in place
            t.array = recorder.call(to_array, source, dtype)
        else:
            t.array = recorder.call(xp.copy, t.array)
    device = _on(device)
    if device is not None:
        t.array = backend.to_device(t.array, device)
    return t


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor``, but shares the memory of a NumPy array (or Tensor) when it can."""
    if isinstance(data, Tensor):
        return data.to(device, dtype)
    if backend.is_array(data) and (dtype is None or backend.to_dtype(dtype) == data.dtype):
        return _finish(_check_byte_order("as_tensor", data), False, _on(device))
    return tensor(data, dtype, device)


def asarray(
    obj: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    copy: bool | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """``obj`` as a tensor, as ``torch.asarray``: a tensor or a NumPy array is shared (the
    tensor itself when nothing changes) unless ``copy=True`` or a dtype or device asks for a
    copy, which ``copy=False`` refuses; anything else is read as ``tensor`` reads it.

    >>> import numpy as np
    >>> a = np.zeros(2)
    >>> t = asarray(a)
    >>> a[0] = 5.0
    >>> t
    tensor([5., 0.], dtype=scratchgrad.float64)
    """
    if isinstance(obj, Tensor) or backend.is_array(obj):
        source = obj if isinstance(obj, Tensor) else Tensor._make(_check_byte_order("asarray", obj))
        out = source.to(device, dtype)
        if out is source and copy:
            out = source.clone()
        elif out is not source and copy is False:
            raise ValueError(
                f"asarray: can't alias a tensor of dtype {source.dtype.name} on {source.device} "
                f"into dtype {out.dtype.name} on {out.device} (copy=False)"
            )
    elif copy is False:  # (a list's numbers are no memory a tensor could share)
        raise ValueError(f"asarray: can't alias a {type(obj).__name__} into a tensor (copy=False)")
    else:
        out = tensor(obj, dtype, device)
    return out if _off(requires_grad) else out.requires_grad_(requires_grad)


def scalar_tensor(
    s: float, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A 0-d tensor holding ``s``, of the default floating dtype unless told, as
    ``torch.scalar_tensor``."""
    return tensor(s, _dtype(dtype), device, requires_grad)


def hann_window(window_length: int, periodic: bool = True, **options: Any) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / N)``, ``N`` the length when ``periodic`` (for
    a spectrogram's frames) or one less, as ``torch.hann_window``; ``options``: ``dtype``,
    ``device``, ``requires_grad``, as for every window here.

    >>> hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return cosine_window("hann_window", (0.5, 0.5), window_length, periodic, **options)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    **options: Any,
) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi n / N)``, as ``torch.hamming_window``."""
    return cosine_window("hamming_window", (alpha, beta), window_length, periodic, **options)


def blackman_window(window_length: int, periodic: bool = True, **options: Any) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``, as
    ``torch.blackman_window``."""
    weights = (0.42, 0.5, 0.08)
    return cosine_window("blackman_window", weights, window_length, periodic, **options)


def bartlett_window(window_length: int, periodic: bool = True, **options: Any) -> Tensor:
    """The triangular window ``1 - |2 n / N - 1|``, as ``torch.bartlett_window``."""
    n, span = _window_points("bartlett_window", window_length, periodic, options.get("dtype"))
    return _window(1 - xp.abs(2 * n / span - 1), window_length, **options)


def kaiser_window(
    window_length: int, periodic: bool = True, beta: float = 12.0, **options: Any
) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2 n / N - 1)^2)) / I0(beta)`` (``I0`` the modified
    Bessel function of order 0), as ``torch.kaiser_window``: ``beta`` trades the main lobe's
    width for the side lobes' height, as in windowed-sinc filter design.

    >>> kaiser_window(5, periodic=False, beta=0.0)
    tensor([1., 1., 1., 1., 1.])
    """
    n, span = _window_points("kaiser_window", window_length, periodic, options.get("dtype"))
    radius = xp.sqrt(xp.maximum(1 - (2 * n / span - 1) ** 2, 0))  # rounding can dip below 0
    return _window(xp.i0(beta * radius) / xp.i0(beta), window_length, **options)


def cosine_window(name: str, weights: tuple, length: int, periodic: bool, **options) -> Tensor:
    """``sum_k (-1)^k weights[k] cos(2 pi k n / N)``: the Hann, Hamming and Blackman windows
    (and ``signal.windows``' cosine sums); ``name`` is the one PyTorch's errors give."""
    n, span = _window_points(name, length, periodic, options.get("dtype"))
    angle = 2 * math.pi * n / span
    values = sum((-1) ** k * w * xp.cos(k * angle) for k, w in enumerate(weights))
    return _window(values, length, **options)


def _window_points(name: str, length: int, periodic: bool, dtype: Any) -> tuple[Any, int]:
    """The sample numbers ``n`` of a window and its span ``N``, after PyTorch's checks."""
    if not isinstance(length, numbers.Integral):
        raise TypeError(
            f"{name}(): argument 'window_length' must be int, not {type(length).__name__}"
        )
    if length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={length}"
        )
    if not backend.is_floating(_dtype(dtype)):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {_dtype(dtype)}")
    return xp.arange(length, dtype=xp.float64), max(length if periodic else length - 1, 1)


def _window(values: Any, length: int, **options: Any) -> Tensor:
    """The windows here as tensors: a window of one sample is 1, as PyTorch's (not
    ``signal.windows.exponential``'s, whose one sample may be off its centre)."""
    return window_tensor(xp.ones(1) if length == 1 else values, **options)


def window_tensor(
    values: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A window's values as a tensor; the windows here and in ``signal.windows`` end in it."""
    return _finish(values.astype(_dtype(dtype)), requires_grad, _on(device))


def from_numpy(array) -> Tensor:
    """A tensor sharing ``array``'s memory and dtype (one of PyTorch's, or bfloat16); the
    library passes its device arrays too."""
    if not backend.is_array(array):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    if _check_byte_order("from_numpy", array).dtype not in _NUMPY_DTYPES:
        raise TypeError(
            f"from_numpy: can't convert np.ndarray of type {array.dtype}; the supported types "
            f"are {', '.join(sorted(map(str, _NUMPY_DTYPES)))}"
        )
    return Tensor._make(array)


_NUMPY_DTYPES = {
    *map(xp.dtype, ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")),
    *map(xp.dtype, ("uint64", "float16", "float32", "float64", "complex64", "complex128")),
    backend.bfloat16,
}


def _check_byte_order(name: str, array: Any) -> Any:
    """``array``, refused as PyTorch refuses it when its bytes are not in the machine's order
    (a tensor of NumPy's ``>f8`` would have no PyTorch dtype)."""
    if not array.dtype.isnative:
        raise ValueError(
            f"{name}: the array's byte order ({array.dtype.str}) differs from the native byte "
            f"order; conversion between byte orders is not supported (use array.astype)"
        )
    return array


@_takes_out
def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(_make(_xp(device).zeros, new_shape("zeros", size), _dtype(dtype)), requires_grad)


@_takes_out
def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(_make(_xp(device).ones, new_shape("ones", size), _dtype(dtype)), requires_grad)


@_takes_out
def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(_make(_xp(device).empty, new_shape("empty", size), _dtype(dtype)), requires_grad)


@_takes_out
def full(
    size: Any,
    fill_value: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``; the dtype follows the value's kind, read
    as a Python number as PyTorch reads it (a float64 0-d tensor or NumPy scalar fills
    float32).

    >>> full((2,), 1.5), full((1,), True).dtype
    (tensor([1.5000, 1.5000]), scratchgrad.bool)
    """
    value = fill_value.array.item() if isinstance(fill_value, Tensor) else fill_value
    if dtype is None:
        dtype = to_array(python_number(value), None).dtype
    dtype = backend.to_dtype(dtype)
    shape = new_shape("full", (size,))
    fill_value = filled_number(fill_value, dtype, math.prod(shape))  # 300 into uint8 raises
    return _finish(_make(_xp(device).full, shape, fill_value, dtype), requires_grad)


@_takes_out
def arange(
    start: float,
    end: float | None = None,
    step: float = 1,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``[start, end)`` in steps; int64 when all arguments are ints (or integer 0-d tensors),
    else float32. Float values are PyTorch's bit for bit (see ``_float_arange``).

    >>> arange(1, 2, 0.25)
    tensor([1.0000, 1.2500, 1.5000, 1.7500])
    """
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    _check_range(start, end, step)
    whole = all(isinstance(v, int) for v in (start, end, step))
    dtype, xp = _dtype(dtype, backend.int64 if whole else backend.default_float), _xp(device)
    if dtype in (backend.float32, backend.float64):
        return _finish(_make(_float_arange, xp, start, end, step, dtype), requires_grad)
    if dtype.kind in "iu" and not whole:
        return _finish(_make(_integer_arange, xp, start, end, step, dtype), requires_grad)
    return _finish(_make(xp.arange, start, end, step, dtype), requires_grad)


def _integer_arange(xp, start: float, end: float, step: float, dtype) -> Any:
    """PyTorch's arange into an integer dtype from float bounds: the values count from
    ``start`` by ``step``, both truncated to ints; their number is int64's from the truncated
    bounds (a step truncated to 0 is an error there), the other dtypes' from the float ones
    (a step truncated to 0 repeats ``start``)."""
    first, last, stride = int(start), int(end), int(step)
    if dtype == backend.int64:
        if stride == 0:
            raise ValueError(f"arange: step must be nonzero, got {step} truncated to int64")
        span = last - first + stride - (1 if stride > 0 else -1)
        n = abs(span) // abs(stride) if (span >= 0) == (stride > 0) else 0
    else:
        n = max(math.ceil((end - start) / step), 0)
    return (first + stride * xp.arange(n, dtype=xp.int64)).astype(dtype)


def _float_arange(xp, start: float, end: float, step: float, dtype) -> Any:
    """PyTorch's CPU arange kernel, in float64 (as its accumulate type) and rounded to
    ``dtype`` once: each value ``start + i * step`` one fused multiply-add, except in its
    vectorized part (every whole pair of 32-byte vectors: 16 float32 or 8 float64 values),
    where each vector counts ``step``s from its first value, rounded to ``dtype`` first.
    (NumPy's float32 arange adds float32 steps and is an ulp off at most values.) PyTorch
    builds for 64-byte vectors (AVX-512) count 16 float32 values from each first one."""
    if float(start).is_integer() and float(step).is_integer() and abs(start) + abs(end) < 2**24:
        return xp.arange(start, end, step, dtype=dtype)  # whole numbers: no rounding anywhere
    n = max(math.ceil((end - start) / step), 0)
    width = 32 // dtype.itemsize
    i = xp.arange(n, dtype=xp.float64)
    lane = i % width
    lane[n // (2 * width) * 2 * width :] = 0  # the scalar tail: every value from start
    first = _fma(step, i - lane, float(start)).astype(dtype).astype(xp.float64)
    return _fma(step, lane, first).astype(dtype)


def _check_range(start: float, end: float, step: float, op: str = "arange") -> None:
    """arange's (range's) bounds, checked as PyTorch checks them (NumPy gives an empty range)."""
    if not (step > 0 or step < 0):  # NaN too, with PyTorch's words
        raise RuntimeError(f"{op}: step must be nonzero, got {step}")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"{op}: unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"{op}: upper bound and lower bound inconsistent with step sign: {start} -> {end} "
            f"by {step}"
        )


@_takes_out
def range(  # noqa: A001 (torch's name)
    start: float,
    end: float,
    step: float = 1,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``[start, end]`` in steps, ``end`` included, as the deprecated ``torch.range`` (with its
    UserWarning): ``floor((end - start) / step) + 1`` values, of the default float dtype
    unless ``dtype`` says (ints too), each ``start + i * step`` computed as PyTorch's kernel
    does, in float64 (float32 for 16-bit dtypes; int64, the bounds truncated, for integers).

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     range(1, 2, 0.25)
    tensor([1.0000, 1.2500, 1.5000, 1.7500, 2.0000])
    """
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=stacklevel_outside(),
    )
    dtype = _dtype(dtype)
    if dtype.kind in "bc":  # PyTorch's kernel has no bool or complex instance
        raise NotImplementedError(f"\"range_cpu\" not implemented for '{torch_name(dtype)}'")
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    # PyTorch's accumulate type: the bounds are converted to it before anything is checked
    if dtype.kind in "iu":
        start, end, step, acc = int(start), int(end), int(step), xp.int64
    else:
        acc = xp.float64 if dtype.itemsize >= 4 else xp.float32
        start, end, step = (acc(v) for v in (start, end, step))
    _check_range(start, end, step, "range")
    # the count in acc's precision, truncated (a quotient of one sign: // truncates too)
    n = (end - start) // step + 1 if acc is xp.int64 else int((end - start) / step + acc(1))
    values = _xp(device).arange(n, dtype=acc) * step + start
    return _finish(values.astype(dtype), requires_grad)


@_takes_out
def linspace(
    start: float,
    end: float,
    steps: int,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` values evenly spaced from ``start`` to ``end``, both included; in a float
    dtype computed as PyTorch's (see ``_float_linspace``), so every value is PyTorch's.

    >>> linspace(0, 1, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    _check_steps("linspace", steps)
    if isinstance(start, complex) or isinstance(end, complex):
        raise NotImplementedError(f"linspace: complex ends ({start}, {end}) are not supported")
    dtype, xp = _dtype(dtype), _xp(device)
    if dtype in (backend.float32, backend.float64):
        return _finish(_make(_float_linspace, xp, start, end, steps, dtype), requires_grad)
    return _finish(_make(xp.linspace, start, end, steps, dtype=dtype), requires_grad)


def _float_linspace(xp, start: float, end: float, steps: int, dtype) -> Any:
    """PyTorch's linspace kernel: the step computed in ``dtype``, the first half of the values
    counted up from ``start`` and the rest down from ``end``, each one fused multiply-add
    rounded to ``dtype``. (NumPy's, in float64 then cast, differs by an ulp at about a third
    of float32 values and gives 0 where PyTorch gives 2e-17.)"""
    start, end = dtype.type(start), dtype.type(end)
    if steps <= 1:
        return xp.full(steps, start, dtype=dtype)
    step = float((end - start) / dtype.type(steps - 1))
    i = xp.arange(steps, dtype=xp.float64)
    up, down = _fma(step, i, float(start)), _fma(-step, steps - 1 - i, float(end))
    return xp.where(i < steps // 2, up, down).astype(dtype)


def _fma(a: float, b: Any, c: float) -> Any:
    """``a * b + c`` for a float64 array ``b``, rounded once, as a fused multiply-add: the
    product split exactly into ``p + e`` (Dekker) and the sum into ``s + t`` (Knuth), which
    NumPy's float arithmetic rounds twice. Exact for ``|a * b|`` below 1e300."""
    p = a * b
    a_hi, b_hi = _split(a), _split(b)
    e = ((a_hi * b_hi - p) + a_hi * (b - b_hi) + (a - a_hi) * b_hi) + (a - a_hi) * (b - b_hi)
    s = p + c
    back = s - p
    t = (p - (s - back)) + (c - back)
    return s + (t + e)


def _split(x: Any) -> Any:
    """The upper 26 bits of float64 ``x`` (Veltkamp's split): ``x - _split(x)`` holds the rest,
    so that products of the halves are exact."""
    scaled = 134217729.0 * x  # 2**27 + 1
    return scaled - (scaled - x)


@_takes_out
def logspace(
    start: float,
    end: float,
    steps: int,
    base: float = 10.0,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` powers of ``base`` with exponents evenly spaced from ``start`` to ``end``, as
    ``torch.logspace`` (a constant: no gradient flows to ``start`` or ``end``). For an integer
    ``dtype`` the exponents' ends are truncated to ints first and the powers after, as PyTorch's.

    >>> logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
    """
    _check_steps("logspace", steps)
    dtype = _dtype(dtype)
    if not backend.is_floating(dtype):
        start, end = int(start), int(end)
    array = _make(_xp(device).logspace, start, end, steps, base=base, dtype=dtype)
    return _finish(array, requires_grad)


def _check_steps(name: str, steps: int) -> None:
    operator.index(steps)  # a float count is a TypeError, as PyTorch's
    if steps < 0:
        raise RuntimeError(f"{name}: number of steps must be non-negative, got {steps}")


@_takes_out
def eye(
    n: int,
    m: int | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The ``n`` x ``m`` (``n`` x ``n``) identity matrix.

    >>> eye(2, 3)
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    for name, size in (("n", n), ("m", m)):
        if size is not None and size < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {size}")
    return _finish(_make(_xp(device).eye, n, m, dtype=_dtype(dtype)), requires_grad)


# While a vmap runs, scratchgrad.func sets this to a function that makes a random draw as
# vmap's ``randomness`` says (refuse, draw once for all members, or once per member); None
# otherwise.
_vmap_draw = None


def _drawn(draw: Callable[[tuple], Any], shape: tuple, requires_grad: bool, device) -> Tensor:
    """``draw(shape)``, an array of random numbers, as a tensor."""
    if capture_hook.recorder is not None:  # scratchgrad.jit: drawn again at every replay
        draw = functools.partial(capture_hook.recorder.call, draw)  # (inside vmap too)
    if _vmap_draw is not None:
        return _vmap_draw(draw, shape)
    return _finish(draw(shape), requires_grad, _on(device))


# the generator's method that draws each factory's floats
_FLOAT_DRAWS = {"rand": "random", "randn": "standard_normal"}


def _random_floats(name: str, size: tuple, generator, dtype, device, requires_grad: bool) -> Tensor:
    """Samples of the factory ``name`` ("rand", "randn"), drawn by the generator in float32 or
    float64 (what NumPy's generators make) and cast to ``dtype``. A complex dtype's parts are
    drawn as its parts' float, as PyTorch's (randn's each with variance 1/2)."""
    dtype, shape = _dtype(dtype), new_shape(name, size)
    if not backend.is_floating(dtype) and dtype.kind != "c":
        # as PyTorch's: rand checks the dtype first, randn's kernel (which refuses integers)
        # never runs on an empty tensor
        if name == "randn" and not math.prod(shape):
            return empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)
        raise NotImplementedError(
            f"{name}: not implemented for {dtype}: random floats need a floating dtype"
        )
    drawn_dtype = backend.float64 if backend.to_real(dtype) == backend.float64 else backend.float32
    method = _FLOAT_DRAWS[name]

    def draw(shape: tuple) -> Any:
        # The generator's NumPy generator is looked up at each draw: a step that
        # scratchgrad.jit recorded draws from the one a later manual_seed made. Without a
        # device, the default device's draws (under ``with device("meta")``, none of the CPU's).
        rng = backend.rng_for(generator, _on(device))
        if dtype.kind == "c":
            z = getattr(rng, method)((*shape, 2), dtype=drawn_dtype).view(dtype)[..., 0]
            return z * drawn_dtype.type(math.sqrt(0.5)) if name == "randn" else z
        draws = getattr(rng, method)(shape, dtype=drawn_dtype)
        if dtype == drawn_dtype:
            return draws
        draws = draws.astype(dtype)
        return backend.below(draws, 0.0, 1.0) if name == "rand" else draws  # [0, 1) still

    return _drawn(draw, shape, requires_grad, device)


@_takes_out
def rand(
    *size: Any,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniform on [0, 1), from the library's seeded generator (see ``manual_seed``)."""
    return _random_floats("rand", size, generator, dtype, device, requires_grad)


@_takes_out
def randn(
    *size: Any,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal samples; ``randn(())`` gives a 0-d tensor."""
    return _random_floats("randn", size, generator, dtype, device, requires_grad)


@_takes_out
def randint(
    low: int,
    high: int | None = None,
    size: Any = (),
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers in ``[low, high)``; ``randint(high, size)`` starts at 0, as PyTorch. Any
    dtype: a floating one holds the integers drawn (and may require grad); ``[low, high)``
    must fit in it, as PyTorch checks.

    >>> randint(3, 4, (2,)).tolist(), randint(2, (1,), dtype="float64").dtype
    ([3, 3], scratchgrad.float64)
    """
    if high is None or isinstance(high, (tuple, list)):
        low, high, size = 0, low, size if high is None else high
    low, high = _bound("low", low), _bound("high", high)
    dtype = _dtype(dtype, backend.int64)
    _check_integer_range(low, high, dtype)
    # floats are drawn as int64 and rounded (NumPy draws integer dtypes only)
    drawn = dtype if dtype.kind in "biu" else backend.int64

    def draw(shape: tuple) -> Any:
        draws = backend.rng_for(generator, _on(device)).integers(low, high, shape, dtype=drawn)
        return draws if drawn is dtype else draws.astype(dtype)

    return _drawn(draw, new_shape("randint", (size,)), requires_grad, device)


def randint_like(
    input: Tensor,
    low: int = 0,
    high: int | None = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = preserve_format,
) -> Tensor:
    """Integers in ``[low, high)`` in ``input``'s shape, dtype and device (unless others are
    given), laid out as ``zeros_like``'s, as ``torch.randint_like``: ``randint_like(x, high)``
    or ``randint_like(x, low, high)``; a bound may be a 0-d tensor.

    >>> randint_like(zeros(2), 5, 6)
    tensor([5., 5.])
    """
    if type(input) is not Tensor and input.is_sparse:
        _sparse_like(randint, input, dtype, device, requires_grad)  # (raises)
    if memory_format is not preserve_format:
        check_memory_format(memory_format, input.ndim, "randint_like")
    if high is None:
        low, high = 0, low
    out = randint(
        low,
        high,
        input.shape,
        generator=generator,
        dtype=input.dtype if dtype is None else dtype,
        device=input.device if device is None else device,
        requires_grad=requires_grad,
    )
    return laid_out_as(out, input, memory_format)


def _bound(name: str, value: Any) -> int:
    """A bound of ``randint``: an int, or a 0-d tensor's value, as PyTorch takes them."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"randint: {name} must be a scalar tensor, got shape {value.shape}")
        value = int(value.item())
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"randint: {name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if not -(2**63) <= value < 2**63:  # PyTorch's bounds are C int64s
        raise ValueError(f"randint: {name}={value} overflows a 64-bit integer")
    return value


def _check_integer_range(low: int, high: int, dtype) -> None:
    """PyTorch's checks of ``[low, high)`` for ``dtype`` (its ``random_``'s): not empty,
    ``low`` and ``high - 1`` in the dtype's range; a floating dtype warns past the integers it
    holds exactly (2**24 for float32)."""
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    digits = None  # a floating dtype's: its integers are exact up to 2**digits
    if dtype.kind == "b":
        lowest, largest = 0, 1
    elif dtype.kind in "iu":
        lowest, largest = int(xp.iinfo(dtype).min), int(xp.iinfo(dtype).max)
    else:
        info = ml_dtypes.finfo(dtype)  # NumPy's finfo, and bfloat16's
        lowest, largest, digits = float(info.min), float(info.max), info.nmant + 1
    for name, value in (("from", low), ("to - 1", high - 1)):
        if not lowest <= value <= largest:
            raise RuntimeError(f"randint: {name} is out of bounds for {dtype}")
        if digits is not None and abs(value) > 2**digits:
            warnings.warn(
                f"randint: {name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                f"precision limitations {dtype} can support discrete uniform distribution only "
                "within this range",
                stacklevel=3,
            )


def normal(
    mean: Tensor | float,
    std: Tensor | float = 1.0,
    size: Any = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Samples from N(mean, std**2), as ``torch.normal``: ``mean`` or ``std`` (or both) a
    tensor, broadcast together, the result in mean's dtype (std's when mean is a number); or
    both numbers and a ``size`` (a tuple), then with ``dtype``, ``device`` and
    ``requires_grad``. Drawn from the library's seeded generator (or ``generator``), again at
    each replay of a jitted step. No gradient flows to mean and std: it is zero, as PyTorch's
    (for one, write ``mean + std * randn_like(std)``).

    >>> normal(tensor([0.0, 10.0]), 0.0).tolist(), normal(2.0, 0.0, (2,)).tolist()
    ([0.0, 10.0], [2.0, 2.0])
    """
    for name, value in (("mean", mean), ("std", std)):
        if not isinstance(value, (Tensor, int, float)):
            raise TypeError(f"normal(): {name} must be a Tensor or a number, got {value!r}")
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if tensors:
        if size is not None or dtype is not None or device is not None or requires_grad:
            raise TypeError(
                "normal(): size, dtype, device and requires_grad are taken only with a number "
                "mean and std; with a tensor, the result takes its shape, dtype and device"
            )
        dtype, device = tensors[0].dtype, tensors[0].device
    elif not isinstance(size, (tuple, list)):
        raise TypeError(f"normal(): with a number mean and std, give size as a tuple, got {size!r}")
    else:
        dtype = _dtype(dtype)
    if not isinstance(std, Tensor) and not std >= 0:  # NaN fails too
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    shapes = [tuple(t.shape) for t in tensors]
    try:
        shape = xp.broadcast_shapes(*shapes) if tensors else new_shape("normal", (size,))
    except ValueError:
        raise RuntimeError(
            f"normal: the shapes of mean and std {shapes} cannot be broadcast together"
        ) from None
    if not backend.is_floating(dtype):
        raise NotImplementedError(
            f"normal: not implemented for {dtype.name}; give a floating dtype"
        )
    noise = randn(shape, generator=generator, dtype=backend.float64, device=device)
    out = Normal.apply(mean, std, noise, dtype=dtype)
    return out.requires_grad_() if requires_grad else out


class Normal(Function):
    """``noise * std + mean`` in float64, rounded once to ``dtype``: ``normal``'s node, its
    N(0, 1) noise drawn before and passed in. NOTE: PyTorch's gradient of mean and std is
    zero (the draw is not reparametrised), whatever the incoming gradient; so is this one.

    A tensor std's values are checked here, where every caller sees them (each replay of a
    jitted step; vmap, whose batched std cannot be read before): after the noise is drawn, so
    the generator has moved when it raises, where PyTorch's has not."""

    @staticmethod
    def forward(ctx, mean, std, noise, dtype):
        if backend.is_array(std) and not (std >= 0).all():  # NaN fails too
            raise RuntimeError("normal expects all elements of std >= 0.0")
        # the tensors' shapes and dtypes (None for a number), for their zero gradients
        ctx.inputs = [(x.shape, x.dtype) if backend.is_array(x) else None for x in (mean, std)]
        # PyTorch's names: NormalBackward1 (a tensor mean), 2 (a tensor std), 3 (both)
        overload = backend.is_array(mean) + 2 * backend.is_array(std)
        ctx.backward_name = f"NormalBackward{overload}"
        return (noise * std + mean).astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        zero = [
            zeros(meta[0], dtype=meta[1], device=grad.device) if needed else None
            for meta, needed in zip(ctx.inputs, ctx.needs_input_grad)
        ]
        return (*zero, None)


@_takes_out
def randperm(
    n: int,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    (n,) = new_shape("randperm", (n,))
    dtype = _dtype(dtype, backend.int64)
    where = _on(device)
    if where is not None and backend.device(where).type == "meta":  # nothing drawn, as PyTorch
        return empty(n, dtype=dtype, device=where, requires_grad=requires_grad)

    def draw(shape: tuple) -> Any:  # one permutation per vmap member before the last dim
        # drawn on the host and copied (CuPy's generators cannot permute)
        rng = backend.rng_for(generator)
        if len(shape) == 1:
            return rng.permutation(n).astype(dtype)
        orders = [rng.permutation(n) for _ in builtins.range(math.prod(shape[:-1]))]
        return xp.stack(orders).reshape(shape).astype(dtype)

    return _drawn(draw, (n,), requires_grad, where)


def _like(
    factory, t: Tensor, dtype, device, requires_grad: bool, memory_format, *args, random=False
) -> Tensor:
    """``factory`` with ``t``'s shape, and its dtype and device unless others are given, laid
    out in ``memory_format`` (``preserve_format``: as ``t``, see ``laid_out_as``). Inside
    vmap one per member of a batched ``t`` (a batch that in-place writes of batched values may
    fill, as PyTorch's), except a ``random`` factory's: its draws follow vmap's randomness."""
    if memory_format is not preserve_format:
        check_memory_format(memory_format, t.ndim, f"{factory.__name__}_like")
    if type(t) is not Tensor and t.is_sparse:
        return _sparse_like(factory, t, dtype, device, requires_grad)

    def make(shape: tuple) -> Tensor:
        options = dict(dtype=dtype or t.dtype, device=device or t.device)
        return factory(shape, *args, **options, requires_grad=requires_grad)

    return laid_out_as(make(t.shape) if random else t._made_like(make), t, memory_format)


def _sparse_like(factory, t: Tensor, dtype, device, requires_grad: bool) -> Tensor:
    """``zeros_like`` and ``empty_like`` of a sparse tensor: a sparse one without entries, of
    its sparse and dense dims, as PyTorch's. The other factories would fill every entry,
    which PyTorch's sparse kernels refuse (before, each gave a dense tensor)."""
    if factory not in (zeros, empty):
        raise NotImplementedError(
            f"{factory.__name__}_like of a sparse tensor: PyTorch has no sparse kernel for it "
            "either; make it dense first (.to_dense())"
        )
    from scratchgrad.sparse import sparse_coo_tensor  # (sparse builds on this module)

    device, sparse_dims = device or t.device, t.sparse_dim()
    indices = zeros(sparse_dims, 0, dtype=backend.int64, device=device)
    values = zeros(0, *t.shape[sparse_dims:], dtype=dtype or t.dtype, device=device)
    return sparse_coo_tensor(
        indices, values, t.shape, requires_grad=requires_grad, is_coalesced=True
    )


def zeros_like(
    t: Tensor,
    dtype: Any = None,
    device: Any = None,
    requires_grad=False,
    *,
    memory_format: Any = preserve_format,
) -> Tensor:
    return _like(zeros, t, dtype, device, requires_grad, memory_format)


def ones_like(
    t: Tensor,
    dtype: Any = None,
    device: Any = None,
    requires_grad=False,
    *,
    memory_format: Any = preserve_format,
) -> Tensor:
    return _like(ones, t, dtype, device, requires_grad, memory_format)


def empty_like(
    t: Tensor,
    dtype: Any = None,
    device: Any = None,
    requires_grad=False,
    *,
    memory_format: Any = preserve_format,
) -> Tensor:
    return _like(empty, t, dtype, device, requires_grad, memory_format)


def full_like(
    t: Tensor,
    fill_value: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad=False,
    *,
    memory_format: Any = preserve_format,
) -> Tensor:
    return _like(full, t, dtype, device, requires_grad, memory_format, fill_value)


def rand_like(
    t: Tensor,
    dtype: Any = None,
    device: Any = None,
    requires_grad=False,
    *,
    memory_format: Any = preserve_format,
) -> Tensor:
    return _like(rand, t, dtype, device, requires_grad, memory_format, random=True)


def randn_like(
    t: Tensor,
    dtype: Any = None,
    device: Any = None,
    requires_grad=False,
    *,
    memory_format: Any = preserve_format,
) -> Tensor:
    return _like(randn, t, dtype, device, requires_grad, memory_format, random=True)


def tril_indices(
    row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None
) -> Tensor:
    """The (row, column) indices of the lower triangle of a ``row`` x ``col`` matrix, as a
    2 x N int64 tensor in row-major order; ``offset`` moves the diagonal up (> 0) or down.

    >>> tril_indices(3, 3).tolist()
    [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]
    """
    return _triangle_indices(xp.tril_indices(row, offset, col), dtype, device)


def triu_indices(
    row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None
) -> Tensor:
    """The indices of the upper triangle, as ``tril_indices``.

    >>> triu_indices(2, 3, 1).tolist()
    [[0, 0, 1], [1, 2, 2]]
    """
    return _triangle_indices(xp.triu_indices(row, offset, col), dtype, device)


def _triangle_indices(rows_and_cols: tuple, dtype: Any, device: Any) -> Tensor:
    stacked = xp.stack(rows_and_cols).reshape(2, -1)  # (2, 0) when the triangle is empty
    return _finish(stacked.astype(_dtype(dtype, backend.int64)), False, _on(device))


@names_bad_arguments
def block_diag(*tensors: Tensor) -> Tensor:
    """A block diagonal matrix of the tensors (a 0-d one as 1 x 1, a 1-D one as a row), zeros
    elsewhere, in their promoted dtype, as ``torch.block_diag``; the gradient flows back to
    each block.

    >>> import scratchgrad as sg
    >>> block_diag(sg.tensor(1), sg.tensor([[2, 3]]))
    tensor([[1, 0, 0],
            [0, 2, 3]])
    """
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                "block_diag: Input tensors must have 2 or fewer dimensions. Input "
                f"{i} has {t.ndim} dimensions"
            )
    if not tensors:
        return zeros(1, 0)
    blocks = [t if t.ndim == 2 else t.reshape(1, -1) for t in tensors]
    width = sum(block.shape[1] for block in blocks)
    rows, left = [], 0
    for block in blocks:  # each block padded with zeros to its place in the full width
        right = width - left - block.shape[1]
        rows.append(block.pad(((0, 0), (left, right)), 0))
        left += block.shape[1]
    return cat(rows, 0)


@names_bad_arguments
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Every choice of ``r`` entries of a 1-D tensor in increasing position (with repeats when
    ``with_replacement``), one row each in lexicographic order, as ``torch.combinations``
    (``itertools.combinations`` as a tensor). Made, as PyTorch's, from the grid of all
    ``n ** r`` tuples of positions; the gradient flows back to the entries picked.

    >>> import scratchgrad as sg
    >>> combinations(sg.tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
    """
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    module = backend.namespace(input.array)
    grid = module.indices((input.shape[0],) * r).reshape(r, -1)
    steps = module.diff(grid, axis=0)
    increasing = (steps >= 0 if with_replacement else steps > 0).all(0)
    return input[grid[:, increasing].T]


class _LegacyTensorType(type):
    """``isinstance(t, FloatTensor)`` asks for a dtype, as in PyTorch."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype


class _LegacyTensor(metaclass=_LegacyTensorType):
    """PyTorch's typed constructors: ``FloatTensor([1, 2])`` copies data (a list or tuple is
    data), sharing the memory of a tensor or NumPy array of its dtype; ``FloatTensor(2, 3)``
    (ints, or a ``Size``) is an uninitialised tensor of that shape, ``FloatTensor()`` an empty
    vector.

    >>> import scratchgrad as sg
    >>> sg.LongTensor([1, 2]), sg.FloatTensor(sg.Size([2, 0]))
    (tensor([1, 2]), tensor([], size=(2, 0)))
    """

    dtype = backend.dtype_of(backend.float32)

    def __new__(cls, *args: Any) -> Tensor:
        return legacy_new(cls.__name__, cls.dtype, args)


def legacy_new(name: str, dtype: Any, args: tuple) -> Tensor:
    """What the legacy constructor ``name`` (``FloatTensor``, ..., or ``Tensor`` in the default
    float dtype) makes of ``args``; ``Tensor(t)`` aliases a tensor of any dtype."""
    data = args[0] if len(args) == 1 else None
    if data is None or isinstance(data, (Size, numbers.Integral)) and type(data) is not bool:
        return empty(new_shape(name, args or (0,)), dtype=dtype)
    if isinstance(data, numbers.Number):  # a float, or a bool, is no size
        raise TypeError(f"{name}: data must be a sequence (got {type(data).__name__})")
    if isinstance(data, Tensor):
        if name != "Tensor" and data.dtype != dtype:
            raise TypeError(f"{name}: expected a {dtype.name} tensor, got {data.dtype.name}")
        return data.view(data.shape)  # an alias, as PyTorch's: same memory, in the graph
    return as_tensor(data, dtype)


class FloatTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.float32)


class DoubleTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.float64)


class HalfTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.float16)


class LongTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.int64)


class IntTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.int32)


class BoolTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.bool_)


class ByteTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.uint8)


class CharTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.int8)


class ShortTensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.int16)


class BFloat16Tensor(_LegacyTensor):
    dtype = backend.dtype_of(backend.bfloat16)


def legacy_type_names() -> dict[str, Any]:
    """PyTorch's type names (``t.type()``) and their dtypes: the legacy constructors', and
    the complex and wide unsigned ones, which PyTorch names without giving them a
    constructor."""
    names = {cls.__name__: cls.dtype for cls in _LegacyTensor.__subclasses__()}
    names.update(ComplexFloatTensor=backend.complex64, ComplexDoubleTensor=backend.complex128)
    names.update({f"UInt{8 * d.itemsize}Tensor": d for d in backend.BAREBONES_UNSIGNED})
    return names
