"""Autocast's state and the per-op dtype policy: the op table's autocast column.

An op declares its policy where it is defined, with ``@autocast_policy(...)``, following
PyTorch's CPU autocast lists (``torch.amp`` docs):

- ``"lower"``: run in the autocast dtype (bfloat16 or float16): matrix products, linear layers,
  convolutions, attention. These are the ops that gain from low precision.
- ``"float32"``: run in float32: losses and ``prod``, whose sums of many terms lose too much in
  16 bits.
- ``"promote"``: 16-bit inputs mixed with float32 ones run in float32 (``cat``, and so ``stack``,
  and ``index_copy``, which refuses mixed dtypes outside autocast); the other 16-bit dtype than
  the region's raises unless a float32 tensor comes first, as PyTorch's ``prioritize``.
- every other op runs in the dtype of its inputs (PyTorch's promotion applies).

Only float32, float16 and bfloat16 tensors are cast; float64 and integer tensors never are. The
casts are ordinary differentiable ``to(dtype)`` calls, so backward runs in the dtypes the forward
chose and a float32 parameter gets a float32 gradient. The public switch is
``scratchgrad.autocast`` (in ``scratchgrad.amp``); this module only holds what the ops need.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from scratchgrad.autograd.grad_mode import state as _grad_state
from scratchgrad.backend import bfloat16, float16, float32

POLICY: dict[str, str] = {}  # op name -> "lower" | "float32" | "promote": by @autocast_policy
_CASTABLE = (float32, float16, bfloat16)


class _State(threading.local):
    dtype = None  # the low dtype while an autocast region is on, else None
    # the dtype of the innermost region, even a disabled one, as PyTorch's get_autocast_dtype:
    # a region given no dtype takes it
    fast_dtype = bfloat16
    cache: dict | None = None  # casts of leaf weights, kept for one outermost region


state = _State()


def autocast_policy(policy: str) -> Callable:
    """Declare how ``fn``'s floating-point tensor arguments are cast inside autocast."""
    if policy not in ("lower", "float32", "promote"):
        raise ValueError(f"autocast_policy: unknown policy {policy!r}")

    def declare(fn: Callable) -> Callable:
        POLICY[fn.__name__] = policy

        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if state.dtype is None:  # the common case costs one attribute read
                return fn(*args, **kwargs)
            return call_with_policy(fn, policy, args, kwargs)

        op.autocast_policy = policy  # tensor.names_bad_arguments folds this wrapper into its own
        return op

    return declare


def call_with_policy(fn: Callable, policy: str, args: tuple, kwargs: dict) -> Any:
    """``fn`` on its arguments, the floating-point tensors among them cast as ``policy`` says
    (called while an autocast region is on). A float32 op runs with the region paused, as
    PyTorch's single float32 kernel: the matrix products inside a composite one (``lstsq``'s)
    stay in float32."""
    if policy == "promote":
        if kwargs.get("out") is not None:  # (PyTorch's out= variants are not autocast)
            return without_autocast(fn, *args, **kwargs)
        dtype = _promoted(fn.__name__, (*args, *kwargs.values()))
    else:
        dtype = state.dtype if policy == "lower" else float32
    args = tuple(_cast(a, dtype) for a in args)
    kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
    if policy != "float32":
        return fn(*args, **kwargs)
    return without_autocast(fn, *args, **kwargs)


def without_autocast(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with the region paused: a float32 op's inner steps, and a call
    with ``out=`` (PyTorch's out= overloads are not on its autocast lists: ``mm(a, b, out=o)``
    of float32 tensors is float32's product)."""
    low, state.dtype = state.dtype, None
    try:
        return fn(*args, **kwargs)
    finally:
        state.dtype = low


def _promoted(op: str, values: tuple) -> Any:
    """The dtype a "promote" op runs in: PyTorch's ``at::autocast::prioritize`` over its floating
    tensors in argument order, starting from the region's dtype: float64 is skipped, float32
    wins, and a tensor of the other 16-bit dtype met before any float32 one is refused (as
    PyTorch's: ``cat`` of float16 tensors raises under bfloat16 autocast)."""
    current = state.dtype
    flat = (v for value in values for v in (value if isinstance(value, (list, tuple)) else [value]))
    for value in flat:
        kind = getattr(getattr(value, "array", None), "dtype", None)
        if kind not in _CASTABLE:  # (float64, integers, not a tensor)
            continue
        if float32 in (current, kind):
            current = float32
        elif kind != current:
            raise RuntimeError(
                f"{op}: autocast to {current.name} cannot promote a {kind.name} tensor (PyTorch's "
                "'Unexpected floating ScalarType in at::autocast::prioritize': only float32 "
                "may precede the other 16-bit dtype)"
            )
    return current


def _cast(value: Any, dtype) -> Any:
    """``value`` in ``dtype`` if it is a castable tensor (or a list of them), else unchanged."""
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    array = getattr(value, "array", None)
    if array is None or array.dtype == dtype or array.dtype not in _CASTABLE:
        return value
    if state.cache is None or not value.requires_grad or value._ctx is not None:
        return value.to(dtype)
    # A weight is cast once per region; the key has its version (an optimizer step in between
    # makes a new cast) and the grad mode (a cast made under no_grad has no graph to reuse).
    key = (id(value), dtype, _grad_state.enabled)
    version = value._version
    hit = state.cache.get(key)
    if hit is not None and hit[0] is value and hit[1] == version:
        return hit[2]
    cast = value.to(dtype)
    state.cache[key] = (value, version, cast)
    return cast
