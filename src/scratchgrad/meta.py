"""The "meta" device: tensors that have a shape and a dtype but no data, as PyTorch's.

What they are for here: a model moved to "meta" as a stateless template, whose parameters
``func.functional_call`` replaces at each call (PyTorch's model-ensembling recipe:
``copy.deepcopy(model).to("meta")``), and a model's shapes without its memory. A meta tensor
can be made (``empty``/``zeros``/... with ``device="meta"``, ``x.to("meta")``), its shape,
dtype and device read, and it can be moved off again with ``Module.to_empty``.

Computing on one raises ``NotImplementedError`` naming what was asked: PyTorch computes the
result's shape on this device, scratchgrad does not, rather than hand back a result made of
made-up numbers. So does reading its values (``x.to("cpu")``, ``.numpy()``, printing shows
only the shape), as in PyTorch ("Cannot copy out of meta tensor; no data!").

>>> import scratchgrad as sg
>>> x = sg.empty(2, 3, device="meta")
>>> x.shape, x.device, x.is_meta
((2, 3), device(type='meta'), True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy

NO_DATA = "Cannot copy out of meta tensor; no data!"


def _refused(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what} on the meta device: meta tensors have a shape and a dtype but no data, and "
        "scratchgrad does not compute on them (PyTorch computes only the result's shape). "
        "Move the module to a real device with Module.to_empty(device=...) first."
    )


class MetaArray:
    """The array of a meta tensor: a shape and a dtype (C-ordered strides), nothing else."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = tuple(int(n) for n in shape), numpy.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    base = None  # (a meta array is nobody's view)

    @property
    def strides(self) -> tuple[int, ...]:
        strides, step = [], self.dtype.itemsize
        for n in reversed(self.shape):
            strides.append(step)
            step *= max(n, 1)
        return tuple(reversed(strides))

    def astype(self, dtype: Any, copy: bool = True) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def copy(self, order: str = "C") -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def __deepcopy__(self, memo: dict) -> MetaArray:
        return self.copy()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __getattr__(self, name: str) -> Any:  # every other array method
        if name.startswith("__"):  # a protocol Python probes for (``__reduce_ex__``...)
            raise AttributeError(name)
        raise _refused(f".{name}")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_DATA)

    def __array_ufunc__(self, ufunc: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        raise _refused(f"numpy.{ufunc.__name__}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise _refused(f"numpy.{func.__name__}")

    def _binary(self, *args: Any) -> Any:
        raise _refused("arithmetic")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _binary
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __rpow__ = _binary
    __neg__ = __abs__ = __invert__ = _binary
    __lt__ = __le__ = __gt__ = __ge__ = _binary
    __getitem__ = __setitem__ = __iter__ = __bool__ = __float__ = __int__ = _binary
    __eq__ = __ne__ = _binary  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]


def _made(shape: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> MetaArray:
    shape = (shape,) if isinstance(shape, int) else shape
    return MetaArray(shape, numpy.float64 if dtype is None else dtype)


def _made_like(array: Any, dtype: Any = None, *args: Any, shape: Any = None, **kwargs: Any):
    return MetaArray(array.shape if shape is None else shape, dtype or array.dtype)


def _shaped_as(name: str) -> Any:
    """NumPy's ``name`` (``arange``...) as a maker of meta arrays: its result's shape and dtype."""
    make = getattr(numpy, name)
    return staticmethod(lambda *args, **kwargs: from_host(make(*args, **kwargs), "meta"))


class _Namespace:
    """The meta device's array module: what makes arrays, and nothing that computes."""

    empty = zeros = ones = staticmethod(_made)
    arange, linspace, logspace, eye = (
        _shaped_as(name) for name in ("arange", "linspace", "logspace", "eye")
    )
    empty_like = zeros_like = ones_like = staticmethod(_made_like)
    ndarray = MetaArray
    dtype = numpy.dtype

    @staticmethod
    def full(shape: Any, fill_value: Any, dtype: Any = None, *args: Any, **kwargs: Any):
        return _made(shape, numpy.result_type(fill_value) if dtype is None else dtype)

    @staticmethod
    def full_like(array: Any, fill_value: Any, dtype: Any = None, *args: Any, **kwargs: Any):
        return _made_like(array, dtype)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _refused(name)


xp = _Namespace()


def from_host(array: Any, where: Any) -> MetaArray:
    """A meta array of ``array``'s shape and dtype (what moving a tensor to "meta" keeps)."""
    return MetaArray(array.shape, array.dtype)


def to_host(array: MetaArray) -> Any:
    raise NotImplementedError(NO_DATA)


def scatter_add(target: Any, index: Any, values: Any) -> None:
    raise _refused("scatter_add")
