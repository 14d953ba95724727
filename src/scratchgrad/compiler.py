"""``torch.compiler``: the names scripts call around ``torch.compile``, over ``scratchgrad.jit``.

``compile`` is ``scratchgrad.compile``. ``is_compiling()`` says whether a jitted function or
compiled module is being recorded now (PyTorch: traced), so that code meant to run only eagerly
(logging, checks of values) can step aside while it is. ``disable`` marks a function to run
outside the compiled region in PyTorch (a graph break); a recording here has no such regions,
so the function is returned as it is and recorded with the rest (a call that cannot be replayed
still raises ``JitError``, naming its line). ``reset()`` has no caches to clear: recordings
belong to each jitted function and compiled module.

>>> import scratchgrad as sg
>>> @sg.jit
... def step(x):
...     return x * 2 if sg.compiler.is_compiling() else x * 3
>>> [step(sg.ones(1)).item() for _ in range(4)]  # eager, record twice, replay
[3.0, 2.0, 2.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable

from scratchgrad.autograd import capture_hook
from scratchgrad.compiled import compile

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "reset"]


def is_compiling() -> bool:
    """Whether a jitted function or compiled module is being recorded now."""
    return capture_hook.recorder is not None


is_dynamo_compiling = is_compiling


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """``fn`` itself (see the module's doc string); without ``fn``, a decorator."""
    if fn is None:
        return lambda inner: disable(inner, recursive, reason=reason)
    return fn


def reset() -> None:
    """Nothing to clear (see the module's doc string)."""
