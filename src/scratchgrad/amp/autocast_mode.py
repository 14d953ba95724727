"""``autocast``: run the ops that gain from it in a 16-bit dtype, as ``torch.autocast`` does."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.autocast import state

# The device types torch.autocast accepts (torch.amp.is_autocast_available); only "cpu" computes
_DEVICE_TYPES = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "ipu", "mtia", "maia", "privateuseone")


class autocast:  # noqa: N801  (PyTorch's name)
    """A context manager (and decorator) in which matrix products, linear layers and
    convolutions run in ``dtype`` and losses in float32; see ``autograd.autocast`` for the
    policy. Thread-local and nestable: an inner ``enabled=False`` region runs in full precision.

    >>> import scratchgrad as sg
    >>> layer = sg.nn.Linear(4, 2)
    >>> with sg.autocast("cpu", dtype=sg.bfloat16):
    ...     out = layer(sg.randn(3, 4))
    >>> out.dtype == sg.bfloat16, layer.weight.dtype == sg.float32
    (True, True)
    """

    def __init__(
        self,
        device_type: str = "cpu",
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = True,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        dtype = state.fast_dtype if dtype is None else backend.to_dtype(dtype)
        if enabled and device_type != "cpu":
            warnings.warn(
                f"autocast: device_type {device_type!r} is not available here; autocast is "
                "disabled in this region (only 'cpu' is supported)",
                stacklevel=2,
            )
            enabled = False
        if enabled and dtype not in (backend.bfloat16, backend.float16):
            warnings.warn(
                f"autocast: CPU autocast supports bfloat16 and float16, not {dtype}; autocast is "
                "disabled in this region",
                stacklevel=2,
            )
            enabled = False
        self.device, self.fast_dtype, self._enabled = device_type, dtype, enabled
        self._cache_enabled = cache_enabled is not False

    def __enter__(self) -> autocast:
        self._saved = (state.dtype, state.fast_dtype, state.cache)
        if self.device != "cpu":  # as in PyTorch, another device's region leaves the CPU's alone
            return self
        state.dtype = self.fast_dtype if self._enabled else None
        state.fast_dtype = self.fast_dtype
        if state.cache is None and self._enabled and self._cache_enabled:
            state.cache = {}  # the outermost region owns the cache of weight casts
        elif not self._cache_enabled:
            state.cache = None
        return self

    def __exit__(self, *exc: object) -> None:
        state.dtype, state.fast_dtype, state.cache = self._saved

    def __call__(self, fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(fn).__name__}. Did you "
                "mean to use autocast as a context manager (with scratchgrad.autocast(...):)?"
            )

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)

        return run


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` accepts ``device_type``, as ``torch.amp.is_autocast_available``
    (only "cpu" computes here: the others warn and disable their regions).

    >>> import scratchgrad as sg
    >>> sg.amp.is_autocast_available("cpu"), sg.amp.is_autocast_available("meta")
    (True, False)
    """
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type: str = "cpu") -> bool:
    """Whether ops run under an enabled autocast region on this thread."""
    return device_type == "cpu" and state.dtype is not None


def torch_is_autocast_enabled(device_type: str | None = None) -> bool:
    """``torch.is_autocast_enabled``: whether ``device_type``'s autocast is on, CUDA's when
    none is named (never on here, as on PyTorch's CPU builds), as PyTorch's.

    >>> import scratchgrad as sg
    >>> with sg.autocast("cpu"):
    ...     sg.is_autocast_enabled(), sg.is_autocast_enabled("cpu")
    (False, True)
    """
    return is_autocast_enabled("cuda" if device_type is None else device_type)


def get_autocast_dtype(device_type: str = "cpu") -> backend.dtype:
    """The dtype of the innermost region, enabled or not (bfloat16 outside any, PyTorch's CPU
    default): what a region given no dtype runs in.

    >>> get_autocast_dtype("cpu")
    scratchgrad.bfloat16
    """
    return backend.dtype_of(state.fast_dtype)


def custom_fwd(
    fwd: Callable | None = None, *, device_type: str = "cpu", cast_inputs: Any = None
) -> Callable:
    """For a custom ``Function.forward``: remember the autocast state for ``custom_bwd``; with
    ``cast_inputs``, cast floating inputs to that dtype and run forward with autocast off.

    >>> import scratchgrad as sg
    >>> class Square(sg.autograd.Function):
    ...     @staticmethod
    ...     @sg.amp.custom_fwd(cast_inputs=sg.float32)
    ...     def forward(ctx, x):
    ...         return x * x
    ...
    ...     @staticmethod
    ...     @sg.amp.custom_bwd
    ...     def backward(ctx, grad):
    ...         return grad
    >>> with sg.autocast("cpu"):
    ...     y = Square.apply(sg.ones(2, dtype=sg.bfloat16))
    >>> y.dtype == sg.float32
    True
    """
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        ctx._autocast_dtype = state.dtype
        if cast_inputs is None or state.dtype is None:
            return fwd(ctx, *args, **kwargs)
        dtype = backend.to_dtype(cast_inputs)
        args = tuple(_cast(a, dtype) for a in args)
        with autocast(device_type, enabled=False):
            return fwd(ctx, *args, **kwargs)

    return forward


def custom_bwd(bwd: Callable | None = None, *, device_type: str = "cpu") -> Callable:
    """For a custom ``Function.backward``: run it under the autocast state its forward saw."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx: Any, *grads: Any) -> Any:
        dtype = getattr(ctx, "_autocast_dtype", None)
        with autocast(device_type, dtype=dtype, enabled=dtype is not None):
            return bwd(ctx, *grads)

    return backward


def _cast(value: Any, dtype) -> Any:
    """A user's forward receives Tensors: cast the 16- and 32-bit floating ones."""
    kind = getattr(value, "dtype", None)
    castable = (backend.float32, backend.float16, backend.bfloat16)
    return value.to(dtype) if kind in castable and kind != dtype else value
