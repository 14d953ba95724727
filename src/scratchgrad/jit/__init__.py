"""Graph capture and replay: ``scratchgrad.jit`` records a training step once and replays it
as a flat list of NumPy calls (see ``jitted.jit``).

``scratchgrad.jit`` is this package and, called, the function ``jitted.jit``: ``sg.jit(fn)``,
``@sg.jit`` and ``@sg.jit(cache_size=...)`` work, and so do ``import scratchgrad.jit.recorder``
and ``from scratchgrad.jit import recorder`` (a function standing in for the package would hide
its submodules).

PyTorch's TorchScript names (``script``, ``trace``, ``ignore``, ...) are here too, as
pass-throughs that compile nothing (see ``torchscript``).
"""

import inspect
import sys
import types
from typing import Any

from scratchgrad.jit import torchscript
from scratchgrad.jit.jitted import Jitted, jit
from scratchgrad.jit.recorder import JitError
from scratchgrad.jit.torchscript import (
    Final,
    Future,
    annotate,
    export,
    fork,
    ignore,
    is_scripting,
    is_tracing,
    load,
    save,
    script,
    trace,
    unused,
    wait,
)

__all__ = ["JitError", "Jitted", "jit", *torchscript.__all__]


class _CallablePackage(types.ModuleType):
    """The package's class: calling the package calls ``jitted.jit``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return jit(*args, **kwargs)


__signature__ = inspect.signature(jit)  # inspect.signature(sg.jit) shows jit's parameters
sys.modules[__name__].__class__ = _CallablePackage
