"""The strict device: NumPy arrays that behave like CuPy's where CuPy differs from NumPy, so that
the CPU tests prove no code path bypasses the backend.

Importing this module registers the device type "strict" (tests only). Its arrays
(``StrictArray``) wrap a NumPy array and refuse what CuPy's refuse, and more:

- implicit conversion to NumPy (``numpy.asarray(x)``, ``numpy.array(x)``, the buffer protocol),
  as CuPy's "Implicit conversion to a NumPy array is not allowed";
- any ``numpy.*`` function or ufunc called on them (``numpy.exp(x)``, ``numpy.where(x, ...)``):
  an op must take its array module from its operands (``backend.namespace``), which for these
  arrays is ``strict_xp``, a NumPy look-alike that unwraps, computes and wraps;
- NumPy arrays and lists as operands of their operators and functions (CuPy's ufuncs reject
  them); ``strict_xp.asarray``/``array`` are the explicit host-to-device copies;
- ``add.at`` (NumPy's ``add.at`` does not dispatch to CuPy): ``backend.scatter_add`` instead;
- names CuPy lacks (``errstate``), and random methods CuPy's ``Generator`` lacks (``normal``,
  ``permutation``, ``choice``).

They also return what CuPy returns where NumPy returns something else: reductions give 0-d
arrays, not NumPy scalars, and scalar indexing a 0-d view (``old = a[k]; a[k] = 1`` changes
``old``, as on a GPU); integer-array indices out of bounds wrap around
instead of raising (so bounds must be checked before indexing).
"""

from __future__ import annotations

import operator
import types

import numpy

from scratchgrad import backend

# names of NumPy's that CuPy has not, which scratchgrad must not use on a device
MISSING_IN_CUPY = {"errstate", "seterr", "geterr", "array2string"}
# random Generator methods CuPy's Generator has (cupy/random/_generator_api.pyx)
CUPY_GENERATOR_METHODS = {
    "random", "uniform", "integers", "standard_normal", "standard_exponential", "exponential",
    "gamma", "standard_gamma", "beta", "binomial", "poisson", "bit_generator",
}  # fmt: skip
# functions that copy host data onto the device: they take NumPy arrays and lists
HOST_TO_DEVICE = {"asarray", "array", "asanyarray", "ascontiguousarray"}
# keywords NumPy takes and CuPy's function (or method) of that name does not
NUMPY_ONLY_KEYWORDS = {"as_strided": {"writeable", "subok"}, "max": {"initial", "where"},
                       "min": {"initial", "where"}, "clip": {"dtype"}}  # fmt: skip


class StrictError(TypeError):
    """A code path treated a device array as a NumPy array."""


def _unwrap(value, host_ok: bool = False):
    """The NumPy array inside ``value`` (recursing into tuples, lists and dicts); raises for a
    bare NumPy array unless ``host_ok``, as CuPy refuses them."""
    kind = type(value)
    if kind is StrictArray:
        return value._a
    if kind is numpy.ndarray and not host_ok:
        raise StrictError(
            f"strict: a NumPy array of shape {value.shape} was given where a device array was "
            "expected (move it with the backend first)"
        )
    if kind is tuple or kind is list:
        return kind(_unwrap(v, host_ok) for v in value)
    if kind is dict:
        return {k: _unwrap(v, host_ok) for k, v in value.items()}
    return value


def _wrap(value, inputs=()):
    """Device arrays for NumPy results: NumPy scalars become 0-d arrays (as CuPy's), and a
    result that is one of the inputs comes back as that input's wrapper (``astype(copy=False)``
    must keep identity)."""
    if isinstance(value, numpy.ndarray):
        for original in inputs:
            if type(original) is StrictArray and original._a is value:
                return original
        return StrictArray(value)
    if isinstance(value, numpy.generic):
        return StrictArray(numpy.asarray(value))
    if type(value) is tuple or type(value) is list:
        return type(value)(_wrap(v, inputs) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NumPy 2's QRResult, ...
        return type(value)(*(_wrap(v, inputs) for v in value))
    return value


def _strict_call(function, name: str):
    host_ok = name in HOST_TO_DEVICE
    refused = NUMPY_ONLY_KEYWORDS.get(name, set())

    def call(*args, **kwargs):
        if refused & kwargs.keys():
            _refuse(f"{name}({', '.join(sorted(refused & kwargs.keys()))}=...), which CuPy lacks,")
        result = function(*_unwrap(args, host_ok), **_unwrap(kwargs, host_ok))
        return _wrap(result, args)

    call.__name__ = name
    return call


def _refuse(what: str):
    raise StrictError(
        f"strict: {what} on a device array; take the array module from the operands "
        "(scratchgrad.backend.namespace) and move data with to_device/to_host"
    )


def _wrap_index(index, shape):
    """CuPy wraps integer-array indices that are out of bounds (it cannot raise from the GPU
    cheaply); do the same, so a missing bounds check shows as a wrong answer in the tests."""
    parts = index if type(index) is tuple else (index,)
    if any(p is Ellipsis or p is None for p in parts):
        return index
    wrapped = []
    for axis, part in enumerate(parts):
        if (
            isinstance(part, numpy.ndarray)
            and part.dtype.kind in "iu"
            and axis < len(shape)
            and shape[axis] > 0
        ):
            part = part % shape[axis]
        wrapped.append(part)
    return tuple(wrapped) if type(index) is tuple else wrapped[0]


class StrictArray:
    """A NumPy array that behaves as a CuPy one (see the module's doc string)."""

    __slots__ = ("_a",)
    __array_priority__ = 200  # above NumPy's: ndarray's operators defer to ours (which refuse)

    def __init__(self, array: numpy.ndarray) -> None:
        self._a = array

    # ---- what CuPy forbids -------------------------------------------------------------------

    def __array__(self, dtype=None, copy=None):
        _refuse("implicit conversion to a NumPy array (numpy.asarray/numpy.array)")

    def __array_function__(self, func, types, args, kwargs):
        _refuse(f"numpy.{func.__name__} called")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _refuse(f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method} called")

    def tobytes(self, *args, **kwargs):
        _refuse("tobytes (CuPy arrays have no host buffer)")

    # ---- attributes and methods: NumPy's, on the wrapped array ------------------------------

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("data", "ctypes", "tofile", "dump", "dumps"):
            # NumPy looks for __array_interface__ and the like to convert silently
            raise AttributeError(f"strict: device arrays have no {name}")
        value = getattr(self._a, name)
        if callable(value):
            return _strict_call(value, name)
        return _wrap(value)

    @property
    def T(self) -> StrictArray:
        return StrictArray(self._a.T)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        return (_wrap(row) for row in self._a)

    def __repr__(self) -> str:
        return "strict_" + repr(self._a)

    # reading one value synchronizes on CuPy and is allowed (float(x), int(x), bool(x), x.item())
    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __index__(self) -> int:
        return operator.index(self._a)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __getitem__(self, index):
        index = _unwrap(index, host_ok=True)  # CuPy copies NumPy index arrays to the device
        result = self._a[_wrap_index(index, self._a.shape)]
        if isinstance(result, numpy.generic):  # CuPy's is a 0-d view: later writes show in it
            result = self._a[(*(index if type(index) is tuple else (index,)), Ellipsis)]
        return _wrap(result, (self,))

    def __setitem__(self, index, value) -> None:
        index = _unwrap(index, host_ok=True)
        self._a[_wrap_index(index, self._a.shape)] = _unwrap(value)

    def __copy__(self) -> StrictArray:
        return StrictArray(self._a.copy())

    def __deepcopy__(self, memo) -> StrictArray:
        return StrictArray(self._a.copy())

    def __reduce__(self):
        _refuse("pickling")


def _binary(name: str):
    method = getattr(numpy.ndarray, name)

    def apply(self, other):
        return _wrap(method(self._a, _unwrap(other)), (self,))

    apply.__name__ = name
    return apply


def _unary(name: str):
    method = getattr(numpy.ndarray, name)

    def apply(self):
        return _wrap(method(self._a))

    apply.__name__ = name
    return apply


def _inplace(name: str):
    method = getattr(numpy.ndarray, name)

    def apply(self, other):
        method(self._a, _unwrap(other))
        return self

    apply.__name__ = name
    return apply


for _op in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
    "lshift", "rshift",
):  # fmt: skip
    for _name in (f"__{_op}__", f"__r{_op}__"):
        setattr(StrictArray, _name, _binary(_name))
    setattr(StrictArray, f"__i{_op}__", _inplace(f"__i{_op}__"))
for _name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(StrictArray, _name, _binary(_name))
for _name in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(StrictArray, _name, _unary(_name))
StrictArray.__hash__ = None


class _StrictUfunc:
    """A NumPy ufunc for strict arrays: calls and reductions, but no ``at`` (use
    ``backend.scatter_add``, as CuPy needs ``cupyx.scatter_add``)."""

    def __init__(self, ufunc: numpy.ufunc) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self._call = _strict_call(ufunc, ufunc.__name__)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str):
        if name == "at":
            _refuse(f"{self.__name__}.at (NumPy's does not dispatch to CuPy)")
        if name == "reduce" and self.__name__ not in ("add", "multiply"):
            _refuse(f"{self.__name__}.reduce (CuPy reduces only add and multiply)")
        value = getattr(self._ufunc, name)
        return _strict_call(value, name) if callable(value) else value


class _StrictGenerator:
    """NumPy's Generator, drawing strict arrays, with only the methods CuPy's has."""

    def __init__(self, rng: numpy.random.Generator) -> None:
        self._rng = rng

    def __getattr__(self, name: str):
        if name not in CUPY_GENERATOR_METHODS:
            _refuse(f"Generator.{name} (CuPy's Generator has no {name})")
        return _strict_call(getattr(self._rng, name), name)


class _StrictNamespace(types.ModuleType):
    """``numpy`` (or one of its submodules) for strict arrays."""

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__("strict_" + module.__name__)
        self._module = module

    def __getattr__(self, name: str):
        if name in MISSING_IN_CUPY:
            raise AttributeError(f"strict: CuPy has no {name}; scratchgrad must not use it")
        value = getattr(self._module, name)
        if name == "ndarray":
            value = StrictArray
        elif isinstance(value, numpy.ufunc):
            value = _StrictUfunc(value)
        elif isinstance(value, types.ModuleType):
            value = _StrictNamespace(value)
        elif name == "default_rng":
            value = _default_rng
        elif callable(value) and not isinstance(value, type):
            value = _strict_call(value, name)
        setattr(self, name, value)  # looked up once
        return value


def _default_rng(seed=None) -> _StrictGenerator:
    return _StrictGenerator(numpy.random.default_rng(seed))


strict_xp = _StrictNamespace(numpy)


def _scatter_add(target: StrictArray, index, values) -> None:
    numpy.add.at(target._a, _unwrap(index), _unwrap(values))


def _from_host(array: numpy.ndarray, where) -> StrictArray:
    if type(array) is not numpy.ndarray:
        raise StrictError(f"strict: from_host expects a NumPy array, got {type(array).__name__}")
    return StrictArray(array.copy())


def _to_host(array) -> numpy.ndarray:
    if type(array) is StrictArray:
        return array._a.copy()
    return numpy.asarray(array)


STRICT = backend.ArrayBackend(
    "strict",
    strict_xp,
    StrictArray,
    to_host=_to_host,
    from_host=_from_host,
    scatter_add=_scatter_add,
)
backend.register_backend(STRICT)
