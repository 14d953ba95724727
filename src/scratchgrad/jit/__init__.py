"""Graph capture and replay: ``scratchgrad.jit`` records a training step once and replays it
as a flat list of NumPy calls (see ``jitted.jit``).

``scratchgrad.jit`` is this package and, called, the function ``jitted.jit``: ``sg.jit(fn)``,
``@sg.jit`` and ``@sg.jit(cache_size=...)`` work, and so do ``import scratchgrad.jit.recorder``
and ``from scratchgrad.jit import recorder`` (a function standing in for the package would hide
its submodules).
"""

import inspect
import sys
import types
from typing import Any

from scratchgrad.jit.jitted import Jitted, jit
from scratchgrad.jit.recorder import JitError

__all__ = ["JitError", "Jitted", "jit"]


class _CallablePackage(types.ModuleType):
    """The package's class: calling the package calls ``jitted.jit``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return jit(*args, **kwargs)


__signature__ = inspect.signature(jit)  # inspect.signature(sg.jit) shows jit's parameters
sys.modules[__name__].__class__ = _CallablePackage
