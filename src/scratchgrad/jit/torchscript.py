"""PyTorch's TorchScript names under ``scratchgrad.jit``, as pass-throughs: no TorchScript
compilation happens, so a PyTorch program that scripts or traces its model runs it eagerly,
with the same results. ``scratchgrad.jit(fn)`` and ``scratchgrad.compile`` are the capture.

``torch.jit.save`` and ``torch.jit.load`` write and read TorchScript archives, which need
PyTorch's C++ runtime: here they raise, naming ``scratchgrad.save`` (safetensors) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar  # (Final: torch.jit.Final is typing.Final)

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.tensor import Tensor

__all__ = [
    "Final",
    "Future",
    "annotate",
    "export",
    "fork",
    "ignore",
    "is_scripting",
    "is_tracing",
    "load",
    "save",
    "script",
    "trace",
    "unused",
    "wait",
]

T = TypeVar("T")


def script(
    obj: T, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None, example_inputs: Any = None
) -> T:
    """``obj`` itself (a module or a function), unchanged, as ``torch.jit.script`` would
    return it compiled: its ``state_dict``, parameters and results are the original's.

    >>> import scratchgrad as sg
    >>> model = sg.nn.Linear(2, 1)
    >>> sg.jit.script(model) is model
    True
    """
    return obj


def trace(
    func: T,
    example_inputs: Any = None,
    optimize: Any = None,
    check_trace: bool = True,
    check_inputs: Any = None,
    check_tolerance: float = 1e-5,
    strict: bool = True,
    example_kwarg_inputs: dict | None = None,
) -> T:
    """``func`` itself (a module or a function), after a run on the example inputs (a tensor
    or a tuple of arguments, and ``example_kwarg_inputs``) under ``no_grad`` to check that it
    runs, as ``torch.jit.trace`` runs it to record its ops. The checking options are accepted
    and need nothing: what runs later is ``func`` itself.

    >>> import scratchgrad as sg
    >>> double = sg.jit.trace(lambda x: x * 2, sg.ones(2))
    >>> double(sg.tensor([1.0, 3.0]))
    tensor([2., 6.])
    """
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("trace: give example_inputs or example_kwarg_inputs to run on")
    args = (example_inputs,) if isinstance(example_inputs, Tensor) else example_inputs or ()
    with no_grad():
        func(*args, **(example_kwarg_inputs or {}))
    return func


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` and ``@torch.jit.ignore(drop=True)``: the function, unchanged
    (nothing is compiled, so nothing needs to be left to Python).

    >>> import scratchgrad as sg
    >>> @sg.jit.ignore
    ... def debug(x):
    ...     return x + 1
    >>> debug(1)
    2
    """
    return drop if callable(drop) else unused


def unused(fn: T) -> T:
    """``@torch.jit.unused`` (and ``@torch.jit.export``, the same here): the function (or
    method), unchanged.

    >>> import scratchgrad as sg
    >>> sg.jit.export(abs)(-2)
    2
    """
    return fn


export = unused


def is_scripting() -> bool:
    """False: nothing runs as TorchScript here (``torch.jit.is_scripting`` is True only inside
    a scripted function).

    >>> import scratchgrad as sg
    >>> sg.jit.is_scripting(), sg.jit.is_tracing()
    (False, False)
    """
    return False


def is_tracing() -> bool:
    """False: ``trace`` records nothing, so no code runs while tracing."""
    return False


def annotate(the_type: Any, the_value: T) -> T:
    """``the_value``: the type is for TorchScript's compiler only, as in eager PyTorch.

    >>> import scratchgrad as sg
    >>> sg.jit.annotate(list[int], [])
    []
    """
    return the_value


class Future:
    """The result of ``fork``: already computed, since ``fork`` runs its function at once.

    >>> import scratchgrad as sg
    >>> sg.jit.wait(sg.jit.fork(lambda x: x + 1, 2))
    3
    """

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    value = wait


def fork(func: Callable, *args: Any, **kwargs: Any) -> Future:
    """Run ``func(*args, **kwargs)`` now and return its ``Future`` (PyTorch runs it in
    parallel only inside TorchScript; eagerly, at once as here)."""
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    """The value of a ``fork``'s future."""
    return future.wait()


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Refused: a TorchScript archive needs PyTorch's C++ runtime to mean anything."""
    raise NotImplementedError(_ARCHIVES.format("save"))


def load(f: Any, map_location: Any = None, _extra_files: Any = None) -> Any:
    """Refused: a TorchScript archive needs PyTorch's C++ runtime to run."""
    raise NotImplementedError(_ARCHIVES.format("load"))


_ARCHIVES = (
    "jit.{}: TorchScript archives need PyTorch's C++ runtime, which scratchgrad does not "
    "have; save and load the weights with scratchgrad.save(model.state_dict(), path) and "
    "model.load_state_dict(scratchgrad.load(path)) (safetensors files) instead"
)
