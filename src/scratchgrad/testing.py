"""PyTorch's ``torch.testing``: ``assert_close`` compares tensors, numbers and containers of them
with per-dtype tolerances and PyTorch's failure messages; ``make_tensor`` draws a test tensor.

>>> import scratchgrad as sg
>>> sg.testing.assert_close(sg.tensor([1.0, 2.0]), sg.tensor([1.0, 2.0 + 1e-7]))
>>> sg.testing.make_tensor(2, 3, dtype=sg.int64, device="cpu").shape
scratchgrad.Size([2, 3])
"""

from __future__ import annotations

import cmath
import contextlib
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy

from scratchgrad import backend
from scratchgrad.backend import bfloat16, bool_, float16, float32, float64, int64
from scratchgrad.creation import as_tensor, empty, randint
from scratchgrad.dtypes import finfo, iinfo, promoted
from scratchgrad.tensor import Size, Tensor

# (rtol, atol) per dtype, PyTorch's; every other dtype (integers, bool) compares exactly
_PRECISIONS = {
    float16: (1e-3, 1e-5),
    bfloat16: (0.016, 1e-5),
    float32: (1.3e-6, 1e-5),
    float64: (1e-7, 1e-7),
}
_INTEGRAL = tuple(
    numpy.dtype(name)
    for name in ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
)
_FLOATING = (float16, bfloat16, float32, float64)


class _Failure(Exception):
    """A failed check: the exception type to raise, its message and the item it is about."""

    def __init__(self, kind: type[Exception], text: str, path: tuple = ()) -> None:
        super().__init__(text)
        self.kind, self.text, self.path = kind, text, path

    def error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        if isinstance(msg, str):  # the caller's message replaces ours, item included
            return self.kind(msg)
        text = self.text
        if self.path:
            text += f"\n\nThe failure occurred for item {''.join(str([k]) for k in self.path)}"
        return self.kind(msg(text) if callable(msg) else text)


def _name(dtype: Any) -> str:
    return str(backend.dtype_of(backend.to_dtype(dtype)))


def _is_sequence(x: Any) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str)


def _leaves(actual: Any, expected: Any, path: tuple = ()):
    """(path, actual, expected) for each pair of non-container items, depth first."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(
                AssertionError,
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                path,
            )
        for i in range(len(actual)):
            yield from _leaves(actual[i], expected[i], (*path, i))
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        keys, other = set(actual), set(expected)
        if keys != other:
            raise _Failure(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(other - keys)}\n"
                f"Additional keys in the actual mapping: {sorted(keys - other)}",
                path,
            )
        with contextlib.suppress(TypeError):  # keys of mixed types keep the set's order
            keys = sorted(keys)
        for key in keys:
            yield from _leaves(actual[key], expected[key], (*path, key))
    else:
        yield path, actual, expected


def _tolerances(dtypes: tuple, rtol: float | None, atol: float | None, path: tuple) -> tuple:
    """The (rtol, atol) given, else the loosest of the dtypes' defaults."""
    if (rtol is None) != (atol is None):
        raise _Failure(
            ValueError,
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
            f"{'rtol' if rtol is None else 'atol'}.",
            path,
        )
    if rtol is not None:
        return rtol, atol
    rtols, atols = zip(*(_PRECISIONS.get(dtype, (0.0, 0.0)) for dtype in dtypes))
    return max(rtols), max(atols)


def _number_dtype(x: int | float | complex) -> Any:
    # complex128 has float64's tolerances; bool counts as int
    return int64 if isinstance(x, int) else float64


def _as_tensors(actual: Any, expected: Any, allow_subclasses: bool) -> tuple | None:
    """Both as Tensors when their types are directly related (one an instance of the other's
    type) and both convert; None otherwise."""
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or (not allow_subclasses and type(actual) is not type(expected)):
        return None
    try:
        return tuple(x if isinstance(x, Tensor) else as_tensor(x) for x in (actual, expected))
    except (TypeError, ValueError, RuntimeError):
        return None


def _pair(path: tuple, actual: Any, expected: Any, allow_subclasses: bool, rtol, atol) -> tuple:
    """(path, actual, expected, rtol, atol) with both sides as None, bool, number or Tensor,
    tried in PyTorch's order; TypeError when no kind takes both."""
    if actual is None or expected is None:
        return path, actual, expected, 0.0, 0.0
    if all(isinstance(x, bool | numpy.bool_) for x in (actual, expected)):
        return path, bool(actual), bool(expected), 0.0, 0.0
    if all(isinstance(x, int | float | complex | numpy.number) for x in (actual, expected)):
        actual, expected = (
            x.item() if isinstance(x, numpy.number) else x for x in (actual, expected)
        )
        dtypes = (_number_dtype(actual), _number_dtype(expected))
        return path, actual, expected, *_tolerances(dtypes, rtol, atol, path)
    tensors = _as_tensors(actual, expected, allow_subclasses)
    if tensors is None:
        raise _Failure(
            TypeError,
            "No comparison pair was able to handle inputs of type "
            f"{type(actual)} and {type(expected)}.",
            path,
        )
    dtypes = (tensors[0].dtype, tensors[1].dtype)
    return path, *tensors, *_tolerances(dtypes, rtol, atol, path)


def _mismatch(what: str, extra: str, rtol: float, atol: float, abs_diff, rel_diff) -> str:
    """PyTorch's message; ``abs_diff`` and ``rel_diff`` are (value, index or None)."""
    equal = rtol == 0 and atol == 0
    lines = [f"{what} are not {'equal' if equal else 'close'}!", "", extra]
    for kind, (diff, index), tol in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        if index is None:
            line = f"{kind.title()} difference: {diff}"
        else:
            line = f"Greatest {kind} difference: {diff} at index {index}"
        lines.append(line if equal else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)


def _scalar_mismatch(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    diff = abs(actual - expected)
    relative = math.inf if expected == 0 else diff / abs(expected)
    extra = f"Expected {expected} but got {actual}."
    return _mismatch("Scalars", extra, rtol, atol, (diff, None), (relative, None))


def _tensor_mismatch(actual: Tensor, expected: Tensor, matches: Tensor, rtol, atol) -> str:
    total = matches.numel()
    wrong = total - int(matches.sum())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    shape = tuple(matches.shape)
    actual, expected, matches = actual.flatten(), expected.flatten(), matches.flatten()
    if not actual.is_floating_point():  # int64 so that the differences cannot overflow
        actual, expected = actual.to(int64), expected.to(int64)
    abs_diff = (actual - expected).abs()
    abs_diff[matches] = 0  # only the mismatches count
    rel_diff = abs_diff / expected.abs()
    rel_diff[matches] = 0
    greatest = []
    for diff in (abs_diff, rel_diff):
        value, index = diff.max(0)
        at = numpy.unravel_index(int(index), shape)
        greatest.append((value.item(), tuple(int(i) for i in at)))
    return _mismatch("Tensor-likes", extra, rtol, atol, *greatest)


def _compare_numbers(actual, expected, rtol, atol, equal_nan: bool, check_dtype: bool) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _Failure(
            AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}."
        )
    if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    diff = abs(actual - expected)
    if not (cmath.isfinite(diff) and diff <= atol + rtol * abs(expected)):
        raise _Failure(AssertionError, _scalar_mismatch(actual, expected, rtol, atol))


def _compare_attributes(actual: Tensor, expected: Tensor, checks: dict) -> None:
    """Shape always; layout, stride, device and dtype as ``checks`` asks, in PyTorch's order."""
    attributes = [("shape", Size(actual.shape), Size(expected.shape))]
    if checks["check_layout"]:
        attributes.append(("layout", actual.layout, expected.layout))
    if checks["check_stride"]:
        attributes.append(("stride()", actual.stride(), expected.stride()))
    if checks["check_device"]:
        attributes.append(("device", actual.device, expected.device))
    if checks["check_dtype"]:
        attributes.append(("dtype", _name(actual.dtype), _name(expected.dtype)))
    for name, x, y in attributes:
        if x != y:
            raise _Failure(
                AssertionError, f"The values for attribute '{name}' do not match: {x} != {y}."
            )


def _compare_tensors(actual: Tensor, expected: Tensor, rtol, atol, equal_nan, checks) -> None:
    _compare_attributes(actual, expected, checks)
    if actual.is_meta or expected.is_meta:
        return  # nothing to compare but the attributes
    actual, expected = actual.detach(), expected.detach()
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    dtype = promoted(actual.dtype, expected.dtype)
    actual, expected = actual.to(dtype), expected.to(dtype)
    matches = actual.isclose(expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all()):
        return
    if actual.ndim == 0:
        text = _scalar_mismatch(actual.item(), expected.item(), rtol, atol)
    else:
        text = _tensor_mismatch(actual, expected, matches, rtol, atol)
    raise _Failure(AssertionError, text)


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Assert that ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``:
    ``|actual - expected| <= atol + rtol * |expected|`` elementwise, infinities only equal to
    themselves, NaN equal to NaN only with ``equal_nan``, and the same shape (and device,
    dtype, layout, stride where checked). Tensors, Python or NumPy numbers, NumPy arrays (an
    array is compared with an array, a tensor with a tensor) and sequences or mappings of them,
    item by item. Without ``rtol`` and ``atol`` (give both or neither), each dtype's defaults:
    float16 (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32 (1.3e-6, 1e-5), float64 and Python
    floats (1e-7, 1e-7), exact for integers and bools; the looser of two dtypes. ``msg`` (a
    string, or a function of the generated message) replaces the message of a value mismatch.

    >>> import scratchgrad as sg
    >>> sg.testing.assert_close(sg.tensor([1.0, 2.0, 3.0]), sg.tensor([1.0, 4.0, 3.0]))
    Traceback (most recent call last):
    ...
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 3 (33.3%)
    Greatest absolute difference: 2.0 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.5 at index (1,) (up to 1.3e-06 allowed)
    >>> sg.testing.assert_close({"a": [1, 2.0]}, {"a": [1, 2.0 + 1e-9]})
    """
    checks = {
        "check_device": check_device,
        "check_dtype": check_dtype,
        "check_layout": check_layout,
        "check_stride": check_stride,
    }
    try:  # every item is checked for a comparable kind before any value is compared
        pairs = [
            _pair(path, x, y, allow_subclasses, rtol, atol)
            for path, x, y in _leaves(actual, expected)
        ]
    except _Failure as failure:
        raise failure.error() from None
    for path, x, y, pair_rtol, pair_atol in pairs:
        try:
            if x is None or y is None:
                if not (x is None and y is None):
                    raise _Failure(AssertionError, f"None mismatch: {x} is not {y}")
            elif isinstance(x, bool) and isinstance(y, bool):
                if x is not y:
                    raise _Failure(AssertionError, f"Booleans mismatch: {x} is not {y}")
            elif isinstance(x, Tensor):
                _compare_tensors(x, y, pair_rtol, pair_atol, equal_nan, checks)
            else:
                _compare_numbers(x, y, pair_rtol, pair_atol, equal_nan, check_dtype)
        except _Failure as failure:
            failure.path = path
            raise failure.error(msg) from None


def _bounds(dtype, low, high, lowest, highest, default_low, default_high) -> tuple:
    """``make_tensor``'s [low, high): the defaults filled in, checked, clamped to what the
    dtype holds, made integers for an integral dtype (both rounded up: randint excludes
    high)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and dtype in _FLOATING:
        warnings.warn(
            "Passing `low==high` to `scratchgrad.testing.make_tensor` for floating types is "
            "deprecated, as in PyTorch. Use `scratchgrad.full(...)` instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), "
            f"but {_name(dtype)} only supports [{lowest}, {highest})"
        )
    low, high = (min(max(value, lowest), highest) for value in (low, high))
    if dtype in _FLOATING:
        return low, high
    return math.ceil(low), math.ceil(high)


def make_tensor(
    *shape: int | Sequence[int],
    dtype: Any,
    device: Any,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """A tensor of ``shape`` with values drawn uniformly from [low, high), as
    ``torch.testing.make_tensor``. The defaults: [0, 2) for bool, [-9, 10) for integers (from
    0 for uint8), [-9, 9) for floats; given bounds are clamped to what the dtype holds.
    ``noncontiguous`` gives a strided view of a larger tensor (when it has two elements or
    more), ``exclude_zero`` replaces zeros by 1 (the dtype's ``finfo.tiny`` for floats),
    ``memory_format`` lays the result out as asked.

    >>> import scratchgrad as sg
    >>> x = sg.testing.make_tensor(2, 3, dtype=sg.float32, device="cpu", low=-1, high=1)
    >>> x.shape, bool(((x >= -1) & (x < 1)).all())
    (scratchgrad.Size([2, 3]), True)
    >>> sg.testing.make_tensor((4,), dtype=sg.int8, device="cpu", noncontiguous=True).stride()
    (2,)
    """
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(shape)
    dtype = backend.to_dtype(dtype)
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
            f"{noncontiguous=} and {memory_format=}"
        )
    if requires_grad and dtype not in _FLOATING:
        raise ValueError(
            "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
            f"dtype={_name(dtype)}"
        )
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice as wide, so that the view skips values that differ
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype == bool_:
        low, high = _bounds(dtype, low, high, 0, 2, 0, 2)
        out = randint(low, high, shape, dtype=dtype, device=device)
    elif dtype in _INTEGRAL:
        info = iinfo(dtype)
        # randint's bounds are int64, so int64's largest value cannot be drawn
        top = info.max + (dtype != int64)
        low, high = _bounds(dtype, low, high, info.min, top, -9, 10)
        out = randint(low, high, shape, dtype=dtype, device=device)
    elif dtype in _FLOATING:
        info = finfo(dtype)
        low, high = _bounds(dtype, low, high, info.min, info.max, -9, 9)
        out = empty(shape, dtype=dtype, device=device)
        if high - low >= info.max:  # the width overflows: draw half as wide and double
            out.uniform_(low / 2, high / 2).mul_(2)
        else:
            out.uniform_(low, high)
    else:
        raise TypeError(
            f"The requested dtype '{_name(dtype)}' is not supported by "
            "scratchgrad.testing.make_tensor()."
        )
    if noncontiguous:
        out = out[..., 1::2]  # from 1, so that a wrong offset shows too
    elif memory_format is not None:
        out = out.to(memory_format=memory_format)
    if exclude_zero:
        out[out == 0] = finfo(dtype).tiny if dtype in _FLOATING else 1
    if dtype in _FLOATING:
        out.requires_grad_(requires_grad)
    return out
