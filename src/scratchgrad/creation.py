"""Factories: tensors made from data, constants and random numbers, with PyTorch's names.

Every factory takes ``device=``: constants and random draws are made by that device's array
module (draws from that device's generator unless one is given), data is copied there; a device
without a backend raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.backend import Generator, xp
from scratchgrad.dtypes import to_array
from scratchgrad.tensor import Tensor, as_shape

# The factories make their arrays through capture_hook.call: while scratchgrad.jit records a
# step, each replay then makes a new array, as eager steps do (a step may change it in place:
# ``total = sg.zeros(()); total += loss`` must start from zero at every call).
_make = capture_hook.call


def _finish(array, requires_grad: bool, device: Any = None) -> Tensor:
    t = Tensor._make(array if device is None else backend.to_device(array, device))
    return t.requires_grad_() if requires_grad else t


def _xp(device: Any):
    """The array module that makes constants on ``device``."""
    return xp if device is None else backend.array_module(device)


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
    dtype('int64')
    """
    t = Tensor(data, dtype, requires_grad)
    recorder = capture_hook.recorder
    if recorder is not None:  # a new array at each replay (see _make)
        source = data.array if isinstance(data, Tensor) else data
        if isinstance(source, xp.ndarray):  # copied from it then: it may change in place
            t.array = recorder.call(to_array, source, dtype)
        else:
            t.array = recorder.call(xp.copy, t.array)
    if device is not None:
        t.array = backend.to_device(t.array, device)
    return t


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor``, but shares the memory of a NumPy array (or Tensor) when it can."""
    if isinstance(data, Tensor):
        return data.to(device, dtype)
    if backend.is_array(data) and (dtype is None or backend.to_dtype(dtype) == data.dtype):
        return _finish(data, False, device)
    return tensor(data, dtype, device)


def from_numpy(array) -> Tensor:
    """A tensor sharing ``array``'s memory and dtype."""
    return Tensor._make(array)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(_make(_xp(device).zeros, as_shape(size), _dtype(dtype)), requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(_make(_xp(device).ones, as_shape(size), _dtype(dtype)), requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _finish(_make(_xp(device).empty, as_shape(size), _dtype(dtype)), requires_grad)


def full(
    size: Any,
    fill_value: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``; the dtype follows the value's kind."""
    value = fill_value.array if isinstance(fill_value, Tensor) else fill_value
    dtype = _dtype(dtype, to_array(value, None).dtype)
    return _finish(_make(_xp(device).full, as_shape((size,)), fill_value, dtype), requires_grad)


def arange(
    start: float,
    end: float | None = None,
    step: float = 1,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``[start, end)`` in steps; int64 when all arguments are ints, else float32."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    whole = all(isinstance(v, int) for v in (start, end, step))
    dtype = _dtype(dtype, backend.int64 if whole else backend.default_float)
    return _finish(_make(_xp(device).arange, start, end, step, dtype), requires_grad)


def linspace(
    start: float,
    end: float,
    steps: int,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    _check_steps("linspace", steps)
    return _finish(
        _make(_xp(device).linspace, start, end, steps, dtype=_dtype(dtype)), requires_grad
    )


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
    if steps < 0:
        raise RuntimeError(f"{name}: number of steps must be non-negative, got {steps}")


def eye(
    n: int,
    m: int | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    return _finish(_make(_xp(device).eye, n, m, dtype=_dtype(dtype)), requires_grad)


# While a vmap runs, scratchgrad.func sets this to a function that makes a random draw as
# vmap's ``randomness`` says (refuse, draw once for all members, or once per member); None
# otherwise.
_vmap_draw = None


def _drawn(draw: Callable[[tuple], Any], shape: tuple, requires_grad: bool, device) -> Tensor:
    """``draw(shape)``, an array of random numbers, as a tensor."""
    if _vmap_draw is not None:
        return _vmap_draw(draw, shape)
    if capture_hook.recorder is not None:  # scratchgrad.jit: drawn again at every replay
        return _finish(capture_hook.recorder.call(draw, shape), requires_grad, device)
    return _finish(draw(shape), requires_grad, device)


def _random_floats(name: str, size: tuple, generator, dtype, device, requires_grad: bool) -> Tensor:
    """Samples from ``generator``'s method ``name`` ("random", "standard_normal"), drawn in
    float32 or float64 (what NumPy's generators make) and cast to ``dtype``."""
    dtype = _dtype(dtype)
    if not backend.is_floating(dtype):
        raise RuntimeError(f"random floats need a floating dtype, got {dtype}")
    drawn_dtype = backend.float64 if dtype == backend.float64 else backend.float32

    def draw(shape: tuple) -> Any:
        # The generator's NumPy generator is looked up at each draw: a step that
        # scratchgrad.jit recorded draws from the one a later manual_seed made.
        draws = getattr(backend.rng_for(generator, device), name)(shape, dtype=drawn_dtype)
        if dtype == drawn_dtype:
            return draws
        draws = draws.astype(dtype)
        return backend.below(draws, 0.0, 1.0) if name == "random" else draws  # [0, 1) still

    return _drawn(draw, as_shape(size), requires_grad, device)


def rand(
    *size: Any,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniform on [0, 1), from the library's seeded generator (see ``manual_seed``)."""
    return _random_floats("random", size, generator, dtype, device, requires_grad)


def randn(
    *size: Any,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal samples; ``randn(())`` gives a 0-d tensor."""
    return _random_floats("standard_normal", size, generator, dtype, device, requires_grad)


def randint(
    low: int,
    high: int | None = None,
    size: Any = (),
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Integers in ``[low, high)``; ``randint(high, size)`` starts at 0, as PyTorch."""
    if high is None or isinstance(high, (tuple, list)):
        low, high, size = 0, low, size if high is None else high
    dtype = _dtype(dtype, backend.int64)
    return _drawn(
        lambda shape: backend.rng_for(generator, device).integers(low, high, shape, dtype=dtype),
        as_shape((size,)),
        requires_grad,
        device,
    )


def randperm(
    n: int,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    dtype = _dtype(dtype, backend.int64)
    # drawn on the host and copied (CuPy's generators cannot permute)
    if capture_hook.recorder is not None:  # scratchgrad.jit: drawn again at every replay
        order = capture_hook.recorder.call(_permutation, generator, n, dtype)
    else:
        order = _permutation(generator, n, dtype)
    return _finish(order, requires_grad, device)


def _permutation(generator: Generator | None, n: int, dtype) -> Any:
    return backend.rng_for(generator).permutation(n).astype(dtype)


def _like(factory, t: Tensor, dtype, device, requires_grad: bool, *args) -> Tensor:
    """``factory`` with ``t``'s shape, and its dtype and device unless others are given."""
    return factory(
        t.shape,
        *args,
        dtype=dtype or t.dtype,
        device=device or t.device,
        requires_grad=requires_grad,
    )


def zeros_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad=False) -> Tensor:
    return _like(zeros, t, dtype, device, requires_grad)


def ones_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad=False) -> Tensor:
    return _like(ones, t, dtype, device, requires_grad)


def empty_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad=False) -> Tensor:
    return _like(empty, t, dtype, device, requires_grad)


def full_like(
    t: Tensor, fill_value: Any, dtype: Any = None, device: Any = None, requires_grad=False
) -> Tensor:
    return _like(full, t, dtype, device, requires_grad, fill_value)


def rand_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad=False) -> Tensor:
    return _like(rand, t, dtype, device, requires_grad)


def randn_like(t: Tensor, dtype: Any = None, device: Any = None, requires_grad=False) -> Tensor:
    return _like(randn, t, dtype, device, requires_grad)


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
    return _finish(stacked.astype(_dtype(dtype, backend.int64)), False, device)


class _LegacyTensorType(type):
    """``isinstance(t, FloatTensor)`` asks for a dtype, as in PyTorch."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype


class _LegacyTensor(metaclass=_LegacyTensorType):
    """PyTorch's typed constructors: ``FloatTensor([1, 2])`` copies data (a list or tuple is
    data); ``FloatTensor(2, 3)`` (ints) is an uninitialised tensor of that shape."""

    dtype = backend.float32

    def __new__(cls, *args: Any) -> Tensor:
        if len(args) == 1 and not isinstance(args[0], int):
            return Tensor(args[0], cls.dtype)
        return Tensor._make(xp.empty(args, cls.dtype))


class FloatTensor(_LegacyTensor):
    dtype = backend.float32


class DoubleTensor(_LegacyTensor):
    dtype = backend.float64


class HalfTensor(_LegacyTensor):
    dtype = backend.float16


class LongTensor(_LegacyTensor):
    dtype = backend.int64


class IntTensor(_LegacyTensor):
    dtype = backend.int32


class BoolTensor(_LegacyTensor):
    dtype = backend.bool_
