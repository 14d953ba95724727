"""Dtype policy: which dtype a tensor gets, as PyTorch decides it where NumPy decides otherwise.

From Python data (``to_array``: floats become float32, ints int64), from two operands
(``result_type``, ``promote_types``: a floating dtype beats an integer one whatever the sizes,
a 0-d tensor does not widen), from an operand and a Python number (``scalar_type``), and from
the arguments of ``.to(...)`` (``requested_device_and_dtype``). The dtypes themselves, and
which of them are floating, are the backend's.

>>> from scratchgrad import backend
>>> promote_types(backend.int64, backend.float16), promote_types(backend.bfloat16, backend.float16)
(dtype('float16'), dtype('float32'))
"""

from __future__ import annotations

from typing import Any

import numpy

from scratchgrad import backend
from scratchgrad.backend import (
    bfloat16,
    bool_,
    float16,
    float32,
    int64,
    is_floating,
    xp,
)


def promote_types(x: numpy.dtype, y: numpy.dtype) -> numpy.dtype:
    """PyTorch's promotion of two dtypes, as ``torch.promote_types``: a floating dtype beats an
    integer or bool one whatever their sizes; within a kind, the wider wins (bfloat16 with
    float16 gives float32)."""
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
    return dtype if is_floating(dtype) else backend.default_float


def result_type(x: Any, y: Any) -> numpy.dtype:
    """The dtype of an op on tensors (or arrays) ``x`` and ``y``, as ``torch.result_type``:
    ``promote_types`` of their dtypes, except that a 0-d tensor does not widen a tensor with
    dims of the same kind."""
    kind = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2}
    kx, ky = kind[x.dtype.kind], kind[y.dtype.kind]
    if (x.ndim == 0) != (y.ndim == 0) and kx == ky:
        return y.dtype if x.ndim == 0 else x.dtype
    return promote_types(x.dtype, y.dtype)


def to_array(data: Any, dtype: Any):
    """An array (copied) from Python data or a NumPy array (a tensor's ``.array``), in
    PyTorch's dtypes: Python floats become float32, ints int64; a NumPy array keeps its dtype.
    A device's array is copied by its own module, on its device."""
    if backend.is_array(data) and type(data) is not xp.ndarray:
        dtype = None if dtype is None else backend.to_dtype(dtype)
        return backend.namespace(data).array(data, dtype=dtype)
    if dtype is not None:
        return xp.array(data, dtype=backend.to_dtype(dtype))
    if isinstance(data, (xp.ndarray, xp.generic)):
        return xp.array(data)
    try:
        array = xp.array(data)
    except ValueError as error:  # NumPy's text for a ragged list: "inhomogeneous shape ..."
        raise ValueError(
            f"tensor: the nested sequences must all have the same length (a ragged list cannot "
            f"be a tensor): {error}"
        ) from None
    if array.dtype.kind == "f":
        return array.astype(backend.default_float)
    if array.dtype.kind in "iu":
        return array.astype(int64)
    if array.dtype.kind not in "b":
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} ({array.dtype})")
    return array


def set_default_dtype(dtype: Any) -> None:
    """Make ``dtype`` (a floating dtype; float32 at import) the default, as
    ``torch.set_default_dtype``: Python floats become tensors of it, the creation functions
    make it (``zeros``, ``rand``, ``arange`` of floats), new layers' parameters have it, and
    integer tensors turn into it for true division, ``exp`` and the like.

    >>> import scratchgrad as sg
    >>> sg.set_default_dtype(sg.float64)
    >>> sg.tensor([1.5]).dtype, sg.nn.Linear(2, 1).weight.dtype
    (dtype('float64'), dtype('float64'))
    >>> sg.set_default_dtype(sg.float32)
    """
    dtype = backend.to_dtype(dtype)
    if not is_floating(dtype):
        raise TypeError(f"set_default_dtype: only floating dtypes can be the default, got {dtype}")
    backend.default_float = dtype


def get_default_dtype() -> numpy.dtype:
    """The default floating dtype (see ``set_default_dtype``), as ``torch.get_default_dtype``.

    >>> import scratchgrad as sg
    >>> sg.get_default_dtype()
    dtype('float32')
    """
    return backend.default_float


def requested_device_and_dtype(args: tuple, device: Any = None, dtype: Any = None) -> tuple:
    """The device and dtype that ``.to(*args, device=..., dtype=...)`` asks for (None: keep
    it), as PyTorch reads the arguments: a device (or its name), a dtype, or a tensor to match."""
    for arg in args:
        if hasattr(arg, "requires_grad"):  # a tensor (this module sits below Tensor)
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, backend.device) or (
            isinstance(arg, str) and arg.partition(":")[0] in backend.DEVICE_TYPES
        ):
            device = arg
        elif arg is not None:
            dtype = arg
    return (
        None if device is None else backend.device(device),
        None if dtype is None else backend.to_dtype(dtype),
    )
