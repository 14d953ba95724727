"""The "meta" device: tensors that have a shape and a dtype but no data, as PyTorch's.

What they are for: a model's shapes without its memory (``with torch.device("meta"): model =
Net()``, whose ``__init__`` may compute tables such as rotary cos/sin ones, then
``model.to_empty(device="cpu")``), and a model moved to "meta" as a stateless template for
``func.functional_call``. A meta tensor is made as any other (``empty``/``zeros``/``arange``/
``randn``... with ``device="meta"``, ``x.to("meta")``) and moved off again with
``Module.to_empty``.

Computing on meta tensors gives meta tensors of the shape and dtype that the same op gives on
the CPU (NumPy's rules, through the same code), without making an array of the result's size:

- elementwise ops (NumPy's ufuncs: arithmetic, comparisons, math): the shape is the inputs'
  broadcast, the dtype that of the same ufunc on one-element stand-ins of the inputs' dtypes
  (so Python numbers promote as on the CPU);
- reductions (``sum``, ``max``, ``mean``, ``argmax``... with dims and keepdim) and cumulative
  ones: the shape from the dims, the dtype from one-element stand-ins; ``matmul`` and ``dot``
  from NumPy's matmul of stand-ins whose batch is empty;
- indexing: NumPy indexes a stand-in whose elements take zero bytes;
- every other NumPy function (reshape, transpose, cat, stack, einsum...) runs on stand-ins
  whose elements all share one zero in memory: exact, and free for views such as reshape and
  transpose; one that builds a new array (cat, stack, einsum) builds it for a moment, as do
  ``arange``, ``linspace`` and ``eye``.

Random draws give meta tensors and move no generator's stream (a model built on "meta" leaves
the CPU's seeded numbers as they were), and writes into a meta tensor (fills, ``copy_``,
``x[i] = v``, ``index_add_``) do nothing, as in PyTorch. Autograd records meta ops as any
other, and ``backward`` gives meta gradients. What needs values raises: reading them
(``x.to("cpu")``, ``.numpy()``, ``.item()``, ``bool(x)``; printing shows only the shape), as in
PyTorch ("Cannot copy out of meta tensor; no data!"); ops whose result's shape depends on them
(``nonzero``, ``unique``, a mask that is itself a meta tensor); and, unlike PyTorch, the few
ops that choose their path by the values (max pooling's NaN test, attention's test for rows
masked whole, cross-entropy's test of its targets), which raise ``NotImplementedError`` naming
the step. Bounds of meta indices are not checked, as in PyTorch.

>>> import scratchgrad as sg
>>> x = sg.empty(2, 3, device="meta")
>>> x.shape, x.device, x.is_meta
(scratchgrad.Size([2, 3]), device(type='meta'), True)
>>> y = (x.float() ** 2).sum(dim=0, keepdim=True) / 3
>>> y.shape, y.dtype, y.is_meta
(scratchgrad.Size([1, 3]), scratchgrad.float32, True)
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_tuple
from numpy.lib.mixins import NDArrayOperatorsMixin

NO_DATA = "Cannot copy out of meta tensor; no data!"


def _refused(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what} on the meta device: meta tensors have a shape and a dtype but no data, and "
        "this needs their values (or its result's shape depends on them). Move the module to "
        "a real device with Module.to_empty(device=...) first."
    )


class MetaArray(NDArrayOperatorsMixin):
    """The array of a meta tensor: a shape and a dtype (C-ordered strides), nothing else.
    Its operators are NumPy's ufuncs (``NDArrayOperatorsMixin``), which ``__array_ufunc__``
    answers with a meta array."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = tuple(int(n) for n in shape), numpy.dtype(dtype)

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)
    base = None  # (a meta array is nobody's view)
    # a fresh set of an empty array's flags: C-ordered and writable, and setting them does nothing
    flags = property(lambda self: numpy.empty(0).flags)

    @property
    def strides(self) -> tuple[int, ...]:
        strides, step = [], self.dtype.itemsize
        for n in reversed(self.shape):
            strides.append(step)
            step *= max(n, 1)
        return tuple(reversed(strides))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def copy(self, order: str = "C") -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def fill(self, value: Any) -> None:  # a write: there is nothing to write to
        pass

    def __deepcopy__(self, memo: dict) -> MetaArray:
        return self.copy()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __getattr__(self, name: str) -> Any:  # every other array method, as NumPy's
        if name.startswith("__"):  # a protocol Python probes for (``__reduce_ex__``...)
            raise AttributeError(name)
        if name in _SAME_AS_FUNCTION:  # ``x.sum(...)`` is ``numpy.sum(x, ...)``: see its rules
            function = getattr(numpy, name)
            return lambda *args, **kwargs: function(self, *args, **kwargs)
        found = getattr(_zero_strided(self), name)
        if isinstance(found, numpy.ndarray):  # a property: ``.T``, ``.mT``, ``.real``
            return _as_meta(found, f".{name}")
        if not callable(found):  # ``.device``, ``.data``, ``.ctypes``: the stand-in's own
            raise AttributeError(f"a meta array has no attribute {name!r}")
        return lambda *args, **kwargs: _as_meta(
            found(*_mapped(args, _zero_strided), **_mapped(kwargs, _zero_strided)), f".{name}"
        )

    def __getitem__(self, index: Any) -> MetaArray:
        # the result's dtype is always the array's
        return MetaArray(_indexed_shape(self.shape, _index(index)), self.dtype)

    def __setitem__(self, index: Any, value: Any) -> None:
        _indexed_shape(self.shape, _index(index))  # a write does nothing; a bad index raises

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(NO_DATA)

    def _no_value(self, *args: Any) -> Any:
        raise _refused("reading a value")

    __bool__ = __float__ = __int__ = __index__ = __complex__ = _no_value
    __hash__ = None  # type: ignore[assignment]

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        for x in inputs:
            if isinstance(x, numpy.ndarray) and x.ndim:  # a CPU array: Function.apply names
                raise TypeError(f"numpy.{ufunc.__name__}: arrays on the meta device and cpu")
        if method == "at":  # ``add.at``: a write, which does nothing
            return None
        if ufunc is numpy.matmul and method == "__call__" and not kwargs:
            return _matmul(*inputs)
        if ufunc.signature is not None or method not in _UFUNC_SHAPES:
            raise _refused(f"numpy.{ufunc.__name__}.{method}")
        out = kwargs.get("out")
        shape = _UFUNC_SHAPES[method](inputs, kwargs)
        with numpy.errstate(all="ignore"):  # the stand-ins' values are zeros
            small = getattr(ufunc, method)(*_mapped(inputs, _small), **_mapped(kwargs, _small))
        if out is not None:  # written in place, which does nothing: the result is ``out``
            if out[0].shape != shape:
                raise ValueError(
                    f"non-broadcastable output operand with shape {out[0].shape} doesn't "
                    f"match the broadcast shape {shape}"
                )
            return out if ufunc.nout > 1 else out[0]
        if ufunc.nout > 1:
            return tuple(MetaArray(shape, one.dtype) for one in small)
        return MetaArray(shape, small.dtype)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func in _VALUE_SHAPED:
            given = inspect.signature(func).bind(*args, **kwargs).arguments
            if type(given.get(_VALUE_SHAPED[func])) is MetaArray:
                raise _refused(f"numpy.{func.__name__}")
        rule = _FUNCTIONS.get(func, _on_stand_ins)
        return rule(func, args, kwargs)


# ---- stand-ins: NumPy arrays that NumPy's rules run on in a meta array's place ---------------


def _mapped(value: Any, stand_in: Any) -> Any:
    """``value`` with each meta array in it (also in lists, tuples, dicts) as ``stand_in(it)``."""
    if type(value) is MetaArray:
        return stand_in(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_mapped(item, stand_in) for item in value)
    if isinstance(value, dict):
        return {key: _mapped(item, stand_in) for key, item in value.items()}
    return value


def _zero_strided(array: MetaArray) -> numpy.ndarray:
    """A read-only NumPy array of ``array``'s shape and dtype whose elements are all one zero in
    memory: reshaping, transposing and slicing it are views, which cost nothing."""
    return numpy.broadcast_to(numpy.zeros((), array.dtype), array.shape)


def _indexed_shape(shape: tuple[int, ...], index: Any) -> tuple[int, ...]:
    """The shape of ``index`` applied to an array of ``shape``: NumPy's, on an array of
    zero-byte elements (``dtype([])``), which holds no memory whatever the index selects.
    NumPy still loops over the selected elements, so the dims after those the index reaches,
    which it only carries over to the end of the result, are cut to 1 there and put back
    after (a (2**20, 2**20) array indexed by 2**20 rows took 28 s).

    >>> _indexed_shape((10**6, 10**6, 3), ([1, 2, 3], slice(None, 5)))
    (3, 5, 3)
    """
    parts = index if isinstance(index, tuple) else (index,)
    reached = len(shape) if any(p is Ellipsis for p in parts) else sum(map(_dims_reached, parts))
    carried = shape[reached:] if reached < len(shape) else ()
    cut = shape[: len(shape) - len(carried)] + (1,) * len(carried)
    zero_bytes = numpy.lib.stride_tricks.as_strided(
        numpy.zeros(1, numpy.dtype([])), cut, (0,) * len(cut), writeable=False
    )
    selected = numpy.shape(zero_bytes[index])
    return selected[: len(selected) - len(carried)] + carried


def _dims_reached(part: Any) -> int:
    """How many of an array's dims one part of an index reaches: a boolean mask its own
    number of dims (none for a Python or 0-d bool), ``None`` none, any other part one."""
    if part is None:
        return 0
    if isinstance(part, (bool, numpy.bool_, list, numpy.ndarray)):
        array = numpy.asarray(part)
        return array.ndim if array.dtype == numpy.bool_ else 1
    return 1


def _small(array: MetaArray) -> numpy.ndarray:
    """A NumPy array of ``array``'s dtype and number of dims, each dim cut to at most 1 (an
    empty one stays empty): what NumPy's dtype rules see, in a few bytes."""
    return numpy.zeros(tuple(min(n, 1) for n in array.shape), array.dtype)


def _index(index: Any) -> Any:
    """An index into a meta array, with its meta arrays as zero-strided stand-ins (any of
    their positions is within the dims they index); a boolean one is refused: the shape it
    selects is its count of True."""
    parts = index if isinstance(index, tuple) else (index,)
    if any(type(part) is MetaArray and part.dtype == numpy.bool_ for part in parts):
        raise _refused("indexing with a boolean mask")
    return _mapped(index, _zero_strided)


def _as_meta(result: Any, what: str) -> Any:
    """What NumPy gave on stand-ins, as meta arrays; a Python number came from the values, and
    is refused."""
    if isinstance(result, (numpy.ndarray, numpy.generic)):
        return MetaArray(numpy.shape(result), result.dtype)
    if isinstance(result, (tuple, list)):
        items = [_as_meta(item, what) for item in result]
        # (a named tuple, such as numpy.linalg.qr's, takes its items one by one)
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    if result is None or isinstance(result, numpy.dtype):
        return result
    raise _refused(what)


def _shape(value: Any) -> tuple:
    return value.shape if isinstance(value, (MetaArray, numpy.ndarray)) else numpy.shape(value)


# ---- ufuncs: the shape by their rule, the dtype from one-element stand-ins -------------------


def _reduced_shape(shape: tuple, axis: Any, keepdims: bool) -> tuple:
    axes = range(len(shape)) if axis is None else normalize_axis_tuple(axis, len(shape))
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def _accumulated_shape(shape: tuple, axis: Any) -> tuple:
    if axis is None:  # (numpy.cumsum's default) the array flattened
        return (math.prod(shape),)
    normalize_axis_tuple(axis, len(shape))  # raises on a dim out of range
    return shape


_UFUNC_SHAPES = {
    "__call__": lambda inputs, kwargs: numpy.broadcast_shapes(
        *(_shape(x) for x in (*inputs, *(kwargs.get("out") or ()), kwargs.get("where", True)))
    ),
    "reduce": lambda inputs, kwargs: _reduced_shape(
        inputs[0].shape, kwargs.get("axis", 0), kwargs.get("keepdims", False)
    ),
    "accumulate": lambda inputs, kwargs: _accumulated_shape(inputs[0].shape, kwargs.get("axis", 0)),
    "outer": lambda inputs, kwargs: _shape(inputs[0]) + _shape(inputs[1]),
}


def _matmul(x: Any, y: Any) -> MetaArray:
    """``x @ y``: NumPy's matmul of stand-ins with the operands' last two dims and an empty
    batch (it checks the inner dims and gives the dtype, at no cost), and the batch dims
    broadcast."""
    shapes = _shape(x), _shape(y)
    batch = numpy.broadcast_shapes(*(shape[:-2] for shape in shapes))
    core = [(0, *shape[-2:]) if len(shape) > 1 else shape for shape in shapes]
    dtypes = (numpy.asarray(a).dtype if type(a) is not MetaArray else a.dtype for a in (x, y))
    small = numpy.matmul(*(numpy.zeros(c, dtype) for c, dtype in zip(core, dtypes)))
    return MetaArray(batch + small.shape[1:] if small.ndim > 1 else small.shape, small.dtype)


# ---- NumPy's functions -----------------------------------------------------------------------


def _on_stand_ins(func: Any, args: tuple, kwargs: dict) -> Any:
    """``func`` run by NumPy on zero-strided stand-ins: exact, and free for views. A NumPy
    array of numbers with them comes from the CPU (integer ones are indices, which may)."""
    for arg in (*args, *kwargs.values()):
        for array in arg if isinstance(arg, (list, tuple)) else (arg,):  # (cat's list)
            if isinstance(array, numpy.ndarray) and array.ndim and array.dtype.kind not in "biu":
                raise TypeError(f"numpy.{func.__name__}: arrays on the meta device and cpu")
    result = func(*_mapped(args, _zero_strided), **_mapped(kwargs, _zero_strided))
    return _as_meta(result, f"numpy.{func.__name__}")


def _about_layout(func: Any, args: tuple, kwargs: dict) -> Any:
    """``numpy.shape``, ``ndim``, ``may_share_memory``...: answers about the arrays, not values."""
    return func(*_mapped(args, _zero_strided), **_mapped(kwargs, _zero_strided))


def _reduction(func: Any, args: tuple, kwargs: dict) -> Any:
    """``numpy.sum``, ``max``, ``mean``, ``argmax``...: the shape from ``axis`` and
    ``keepdims``, the dtype from one-element stand-ins."""
    given = inspect.signature(func).bind(*args, **kwargs).arguments
    shape = _reduced_shape(given["a"].shape, given.get("axis"), given.get("keepdims", False))
    return _with_dtype_of(func, args, kwargs, shape, given.get("out"))


def _cumulative(func: Any, args: tuple, kwargs: dict) -> Any:
    given = inspect.signature(func).bind(*args, **kwargs).arguments
    return _with_dtype_of(
        func, args, kwargs, _accumulated_shape(given["a"].shape, given.get("axis")), None
    )


def _elementwise(func: Any, args: tuple, kwargs: dict) -> Any:
    """``numpy.where(c, x, y)``, ``clip``, ``round``...: the arguments' broadcast shape."""
    if func is numpy.where and len(args) + len(kwargs) == 1:  # numpy.nonzero
        raise _refused("numpy.where with one argument")
    shape = numpy.broadcast_shapes(*(_shape(a) for a in (*args, *kwargs.values())))
    return _with_dtype_of(func, args, kwargs, shape, kwargs.get("out"))


def _with_dtype_of(func: Any, args: tuple, kwargs: dict, shape: tuple, out: Any) -> Any:
    with numpy.errstate(all="ignore"):
        small = func(*_mapped(args, _small), **_mapped(kwargs, _small))
    return out if out is not None else MetaArray(shape, small.dtype)


def _made_like(func: Any, args: tuple, kwargs: dict) -> MetaArray:
    """``numpy.zeros_like`` and its kin: the array's shape (or ``shape=``), its dtype or the
    one given (``full_like``'s value does not change it)."""
    given = inspect.signature(func).bind(*args, **kwargs).arguments
    array, shape, dtype = args[0], given.get("shape"), given.get("dtype")
    shape = array.shape if shape is None else _made_shape(shape)
    return MetaArray(shape, array.dtype if dtype is None else dtype)


def _dot(func: Any, args: tuple, kwargs: dict) -> Any:
    """``numpy.dot`` of vectors and matrices is their matmul; of other dims, NumPy's own rule
    on stand-ins."""
    if not kwargs and all(len(_shape(a)) in (1, 2) for a in args):
        return _matmul(*args)
    return _on_stand_ins(func, args, kwargs)


def _copy_into(func: Any, args: tuple, kwargs: dict) -> None:
    """``numpy.copyto(dst, src)`` into a meta array: a write, which does nothing."""
    numpy.broadcast_shapes(_shape(args[1]), args[0].shape)  # still raises on a bad shape


def _written(func: Any, args: tuple, kwargs: dict) -> None:
    """``numpy.put``, ``put_along_axis``...: writes into a meta array, which do nothing."""


_SAME_AS_FUNCTION = {
    "sum", "prod", "max", "min", "any", "all", "mean", "var", "std", "argmax", "argmin",
    "cumsum", "cumprod", "clip", "round", "dot", "put", "nonzero", "repeat", "compress",
    "searchsorted",
}  # fmt: skip
_FUNCTIONS: dict[Any, Any] = {
    **dict.fromkeys((numpy.shape, numpy.ndim, numpy.size), _about_layout),
    **dict.fromkeys((numpy.may_share_memory, numpy.shares_memory), _about_layout),
    **dict.fromkeys(
        (
            numpy.sum,
            numpy.prod,
            numpy.max,
            numpy.min,
            numpy.amax,
            numpy.amin,
            numpy.any,
            numpy.all,
            numpy.mean,
            numpy.var,
            numpy.std,
            numpy.argmax,
            numpy.argmin,
            numpy.nansum,
            numpy.nanmax,
            numpy.nanmin,
            numpy.nanmean,
        ),
        _reduction,
    ),  # fmt: skip
    **dict.fromkeys((numpy.cumsum, numpy.cumprod), _cumulative),
    **dict.fromkeys((numpy.where, numpy.clip, numpy.round, numpy.isclose), _elementwise),
    **dict.fromkeys(
        (numpy.zeros_like, numpy.ones_like, numpy.empty_like, numpy.full_like), _made_like
    ),
    numpy.dot: _dot,
    numpy.copyto: _copy_into,
    **dict.fromkeys(
        (numpy.put, numpy.put_along_axis, numpy.place, numpy.putmask, numpy.fill_diagonal),
        _written,
    ),
}
# NumPy's functions whose result's shape depends on the values of an argument (named): refused
# when that argument is a meta array, rather than answered from its stand-in's zeros
_VALUE_SHAPED = {
    numpy.nonzero: "a", numpy.flatnonzero: "a", numpy.argwhere: "a", numpy.unique: "ar",
    numpy.unique_values: "x", numpy.unique_counts: "x", numpy.unique_inverse: "x",
    numpy.unique_all: "x", numpy.bincount: "x", numpy.trim_zeros: "filt",
    numpy.compress: "condition", numpy.extract: "condition", numpy.repeat: "repeats",
    numpy.delete: "obj", numpy.insert: "obj",
}  # fmt: skip


# ---- the namespace: what makes meta arrays ---------------------------------------------------


def _made_shape(shape: Any) -> tuple:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _made(shape: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> MetaArray:
    return MetaArray(_made_shape(shape), numpy.float64 if dtype is None else dtype)


def _shaped_as(name: str) -> Any:
    """NumPy's ``name`` (``arange``...) as a maker of meta arrays: its result's shape and dtype."""
    make = getattr(numpy, name)
    return staticmethod(lambda *args, **kwargs: from_host(make(*args, **kwargs), "meta"))


def _as_array(value: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> MetaArray:
    """``asarray`` on the meta device: a meta array as it is (or cast), host data's shape."""
    if type(value) is not MetaArray:
        value = from_host(numpy.asarray(value), "meta")
    return value if dtype is None else value.astype(dtype)


def _drawn_shape(low: Any, high: Any, size: Any) -> Any:
    """A draw's shape, as NumPy's: ``size``, else that of its parameters broadcast."""
    return numpy.broadcast_shapes(_shape(low), _shape(high)) if size is None else size


class _Draws:
    """The meta device's random generator (the methods of NumPy's ``Generator`` that the library
    calls): each draw is a meta array of NumPy's shape and dtype, and no stream moves on, so
    a model built on "meta" leaves the CPU's seeded numbers as they were."""

    def __init__(self, seed: Any = None) -> None:
        pass

    @staticmethod
    def random(size: Any = None, dtype: Any = numpy.float64, **kwargs: Any) -> MetaArray:
        return _made(() if size is None else size, dtype)

    standard_normal = standard_exponential = random

    @staticmethod
    def integers(
        low: Any, high: Any = None, size: Any = None, dtype: Any = numpy.int64, **kwargs: Any
    ) -> MetaArray:
        return _made(_drawn_shape(low, high, size), dtype)

    @staticmethod
    def uniform(low: Any = 0.0, high: Any = 1.0, size: Any = None) -> MetaArray:
        return _made(_drawn_shape(low, high, size))

    normal = uniform

    @staticmethod
    def permutation(x: Any) -> MetaArray:
        return _made(x, numpy.int64) if isinstance(x, int) else MetaArray(x.shape, x.dtype)


class _Random:
    """The meta device's ``numpy.random``: ``default_rng(seed)`` gives a generator of meta draws."""

    default_rng = _Draws


class _StrideTricks:
    """The meta device's ``numpy.lib.stride_tricks``: a strided view has the shape asked."""

    @staticmethod
    def as_strided(x: MetaArray, shape: Any = None, *args: Any, **kwargs: Any) -> MetaArray:
        return MetaArray(x.shape if shape is None else shape, x.dtype)

    sliding_window_view = staticmethod(numpy.lib.stride_tricks.sliding_window_view)


class _Lib:
    stride_tricks = _StrideTricks


class _Namespace:
    """The meta device's array module: its makers make meta arrays; every other name is
    NumPy's, whose ufuncs and functions answer meta arrays through MetaArray's protocols."""

    empty = zeros = ones = staticmethod(_made)
    arange, linspace, logspace, eye, identity, tri = (
        _shaped_as(name) for name in ("arange", "linspace", "logspace", "eye", "identity", "tri")
    )
    asarray = asanyarray = array = ascontiguousarray = staticmethod(_as_array)
    ndarray = MetaArray
    dtype = numpy.dtype
    random = _Random
    lib = _Lib

    @staticmethod
    def empty_like(array: Any, *args: Any, **kwargs: Any) -> MetaArray:
        return _made_like(numpy.empty_like, (array, *args), kwargs)

    zeros_like = ones_like = empty_like

    @staticmethod
    def full(shape: Any, fill_value: Any, dtype: Any = None, *args: Any, **kwargs: Any):
        return _made(shape, numpy.result_type(fill_value) if dtype is None else dtype)

    @staticmethod
    def full_like(array: Any, fill_value: Any, *args: Any, **kwargs: Any) -> MetaArray:
        return _made_like(numpy.full_like, (array, fill_value, *args), kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(numpy, name)


xp = _Namespace()


def from_host(array: Any, where: Any) -> MetaArray:
    """A meta array of ``array``'s shape and dtype (what moving a tensor to "meta" keeps)."""
    return MetaArray(array.shape, array.dtype)


def to_host(array: MetaArray) -> Any:
    raise NotImplementedError(NO_DATA)


def scatter_add(target: Any, index: Any, values: Any) -> None:
    """``target[index] += values`` into a meta array: a write, which does nothing."""
