"""Grad mode: whether new operations record a graph. Thread-local, as in PyTorch."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


class _State(threading.local):
    enabled = True
    inference = False


# The mode itself: the ops read ``state.enabled`` where a call of is_grad_enabled would cost
# a frame on every op.
state = _State()


def is_grad_enabled() -> bool:
    """True when operations on tensors that require gradients record a graph."""
    return state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (``no_grad`` and ``enable_grad`` in it keep it on;
    an ``inference_mode(False)`` turns it off), as ``torch.is_inference_mode_enabled``.

    >>> with inference_mode():
    ...     is_inference_mode_enabled()
    True
    >>> is_inference_mode_enabled()
    False
    """
    return state.inference


class _GradMode:
    """A context manager that is also a decorator; subclasses say which mode they set."""

    mode = True

    def __new__(cls, fn: Callable | None = None):
        """``@no_grad`` works without parentheses too, as in PyTorch."""
        instance = super().__new__(cls)
        return instance(fn) if callable(fn) else instance

    def __enter__(self) -> None:
        self._prev = state.enabled
        state.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        state.enabled = self._prev

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Run without recording a graph (inference, optimizer updates).

    >>> import scratchgrad as sg
    >>> x = sg.ones(2, requires_grad=True)
    >>> with sg.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    mode = False


class inference_mode(_GradMode):
    """Run without recording a graph, as ``no_grad`` (PyTorch's inference mode also skips its
    bookkeeping for speed; scratchgrad's ``no_grad`` is already that cheap).
    ``inference_mode(False)`` turns grad mode on, inside ``no_grad`` too, as PyTorch's.
    A context manager and a decorator.

    >>> import scratchgrad as sg
    >>> with sg.inference_mode():
    ...     y = sg.ones(2, requires_grad=True) * 2
    >>> y.requires_grad
    False
    """

    enabled, mode = True, False  # the defaults when used bare, as ``@inference_mode``

    def __init__(self, mode: bool = True) -> None:
        self.enabled = bool(mode)
        self.mode = not self.enabled  # grad mode

    def __enter__(self) -> None:
        super().__enter__()
        self._prev_inference = state.inference
        state.inference = self.enabled

    def __exit__(self, *exc: object) -> None:
        state.inference = self._prev_inference
        super().__exit__(*exc)

    def __call__(self, fn: Callable) -> Callable:
        enabled = self.enabled

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(enabled):
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(_GradMode):
    """Record a graph again inside a ``no_grad`` block."""

    mode = True


class set_grad_enabled(_GradMode):
    """Set grad mode on or off; takes effect at once, or for a ``with`` block.

    >>> import scratchgrad as sg
    >>> with sg.set_grad_enabled(False):
    ...     sg.is_grad_enabled()
    False
    """

    def __init__(self, mode: bool) -> None:
        self._prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: Callable) -> Callable:
        state.enabled = self._prev  # used as a decorator: restore, and set the mode per call
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper
