"""Grad mode: whether new operations record a graph. Thread-local, as in PyTorch."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any


class _State(threading.local):
    enabled = True  # whether ops record a graph
    inference = False
    grad_mode = True  # grad mode as set: inference mode keeps ops from recording all the same


# The mode itself: the ops read ``state.enabled`` where a call of is_grad_enabled would cost
# a frame on every op.
state = _State()


def _set_grad_mode(mode: bool) -> tuple[bool, bool]:
    """Set grad mode: ops record a graph if it is on, outside inference mode (as PyTorch's:
    ``enable_grad`` inside ``inference_mode`` records nothing). The state before it."""
    before = state.enabled, state.grad_mode
    state.enabled, state.grad_mode = mode and not state.inference, mode
    return before


# PyTorch's words for misusing an inference tensor outside inference mode
SAVED_INFERENCE_TENSOR = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)
INPLACE_INFERENCE_TENSOR = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)


class InferenceCounter(list):
    """The version counter of an inference tensor's memory (made inside ``inference_mode``;
    its views and ``detach`` share it, so they are inference tensors too, as PyTorch's): it
    counts nothing, as PyTorch's has no count. ``Tensor.is_inference`` tests for it.

    ``Function.apply`` reads the count when it saves a tensor for backward, and
    ``increment_version`` when a tensor changes in place: outside inference mode the read
    raises PyTorch's error (``increment_version`` words it as its own), so the checks cost
    other tensors nothing. After the count's place it holds, as every counter does, the
    ``view()`` copies of that memory to bring up to date after an in-place change
    (``Tensor.view``)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__((0,))

    def __getitem__(self, index: Any) -> Any:
        if index != 0:  # (a slice: the copies)
            return super().__getitem__(index)
        if state.inference:  # an in-place change, or enable_grad's graph, inside the mode
            return 0
        raise RuntimeError(SAVED_INFERENCE_TENSOR)

    def __setitem__(self, index: Any, value: Any) -> None:
        if index != 0:  # an in-place change inside inference mode: there is no count to move
            super().__setitem__(index, value)

    def __deepcopy__(self, memo: dict) -> None:
        """A deep copy's memory is new, and a normal tensor's, as PyTorch's deep copy of an
        inference tensor is: no counter yet (nor the copies of this memory)."""
        return None


_open_blocks = 0  # inference_mode blocks open in all threads
_open_blocks_lock = threading.Lock()


def _count_open_block(change: int) -> None:
    """Count an ``inference_mode`` block opening (+1) or closing (-1) in any thread. While
    one is open, ``Tensor._make`` is the one that marks the tensors a thread in inference mode
    makes; otherwise it is the plain one, so the eager engine pays nothing for the mark."""
    global _open_blocks
    from scratchgrad.tensor import mark_inference_tensors  # (tensor builds on this module)

    with _open_blocks_lock:
        _open_blocks += change
        mark_inference_tensors(_open_blocks > 0)


def is_grad_enabled() -> bool:
    """True when grad mode is on: operations on tensors that require gradients then record a
    graph, except inside inference mode."""
    return state.grad_mode if state.inference else state.enabled


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
        self._prev = _set_grad_mode(self.mode)

    def __exit__(self, *exc: object) -> None:
        state.enabled, state.grad_mode = self._prev

    def __call__(self, fn: Callable) -> Callable:
        return _decorated(fn, type(self))


def _decorated(fn: Callable, mode: Callable[[], Any]) -> Callable:
    """``fn`` run inside a fresh ``mode()`` block per call. A generator function's body runs
    inside it at each step, and the caller's mode is back at each ``yield``, as PyTorch's."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Any:
            steps, sent = fn(*args, **kwargs), None
            while True:
                try:
                    with mode():
                        value = steps.send(sent)
                except StopIteration as stop:
                    return stop.value
                sent = yield value

        return generator

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with mode():
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

    Tensors made inside are inference tensors (``Tensor.is_inference``), and so are their
    views and ``detach``/``.data``. Outside inference mode these raise PyTorch's errors: an op
    that records a graph and saves one for backward (``x * w``, ``x @ w``, a loss), an in-place
    change of one (``add_``, ``copy_``, ``x[i] = v``, an optimizer step; a Tensor method
    raises once the values changed, as some of PyTorch's do), ``requires_grad_()`` (and
    ``x.requires_grad = True``, ``nn.Parameter(x)``), and ``x._version``. Unlike PyTorch,
    tensors made by a ``scratchgrad.jit`` replay are not marked, and where scratchgrad's op
    saves an input that PyTorch's does not (``mul`` saves both operands), an inference tensor
    that requires grad may raise where PyTorch's does not.
    ``enable_grad`` inside inference mode turns grad mode on (``is_grad_enabled``) but records
    no graph, as PyTorch's.

    >>> import scratchgrad as sg
    >>> with sg.inference_mode():
    ...     y = sg.ones(2, requires_grad=True) * 2
    >>> y.requires_grad, y.is_inference()
    (False, True)
    """

    enabled, mode = True, False  # the defaults when used bare, as ``@inference_mode``

    def __init__(self, mode: bool = True) -> None:
        self.enabled = bool(mode)
        self.mode = not self.enabled  # grad mode

    def __enter__(self) -> None:
        self._prev_inference = state.inference
        state.inference = self.enabled
        super().__enter__()
        if self.enabled:
            _count_open_block(+1)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            _count_open_block(-1)
        state.inference = self._prev_inference
        super().__exit__(*exc)

    def __call__(self, fn: Callable) -> Callable:
        enabled = self.enabled
        return _decorated(fn, lambda: inference_mode(enabled))


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
        if not isinstance(mode, bool):  # PyTorch's check: a truthy tensor or number is refused
            raise TypeError(
                "set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                f"{type(mode).__name__}"
            )
        self.mode = mode
        self._prev = _set_grad_mode(self.mode)

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: Callable) -> Callable:
        # used as a decorator: restore, and set the mode per call
        state.enabled, state.grad_mode = self._prev
        mode = self.mode
        return _decorated(fn, lambda: set_grad_enabled(mode))
