"""``scratchgrad.compile``: ``torch.compile``'s signature over ``scratchgrad.jit``.

A script written for PyTorch calls ``torch.compile(model)`` and goes on using the result as the
model; here the same call returns an ``OptimizedModule`` whose forward and backward are recorded
per input signature and training mode, then replayed (``jit/compiled.py``), and a function comes
back as ``scratchgrad.jit(fn)``. TorchDynamo's tuning knobs (``backend``,
``mode``, ``options``, ``dynamic``, ``fullgraph``...) have nothing to tune here: they are accepted
so such scripts run, and ignored. ``disable=True`` returns the input itself, as in PyTorch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from scratchgrad.jit.compiled import CompiledForward
from scratchgrad.jit.jitted import jit
from scratchgrad.nn.module import Module


class OptimizedModule(Module):
    """What ``compile(module)`` returns, after ``torch._dynamo.eval_frame.OptimizedModule``: a
    wrapper whose forward is captured (``jit.compiled.CompiledForward``): recorded per input
    signature, parameters' ``requires_grad``, grad mode and train/eval mode, then replayed. When
    the output needs a gradient, the module's backward is recorded too and replayed by the
    output's one graph node (``CompiledFunctionBackward``) when a ``backward()`` reaches it, so
    a training loop with any loss and optimizer outside the module gives eager's results.

    The original module is registered as the child ``_orig_mod``, so the wrapper shares its
    parameters and buffers (an optimizer may take either's ``parameters()``), and its
    ``state_dict()`` keys carry the ``_orig_mod.`` prefix, as PyTorch's do: load a compiled
    model's checkpoint into the compiled model, or save ``compiled._orig_mod.state_dict()`` for
    the plain one. Other attributes are read from and written to the original module, and
    ``training`` is the original's.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> model = nn.Linear(2, 3)
    >>> compiled = sg.compile(model)
    >>> compiled.weight is model.weight, list(compiled.state_dict())
    (True, ['_orig_mod.weight', '_orig_mod.bias'])
    """

    # Attributes of the wrapper itself; every other one lives on the original module.
    _own_attributes = frozenset({"_orig_mod", "_compiled", "_initialized"})

    def __init__(self, mod: Module) -> None:
        # ``__getattr__`` and the ``training`` property read _orig_mod: set it before anything.
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_initialized", False)
        super().__init__()
        self._orig_mod = mod  # now as a registered child: its parameters are ours
        self._compiled = CompiledForward(mod)
        object.__setattr__(self, "_initialized", True)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*args, **kwargs)

    @property
    def training(self) -> bool:  # type: ignore[override]
        return self._orig_mod.training

    @training.setter
    def training(self, mode: bool) -> None:
        # Module.__init__ sets the default; the mode is the original module's after that
        # (Module.train sets it on every module: the wrapper, then the original).
        if self._initialized:
            self._orig_mod.training = mode

    def __getattr__(self, name: str) -> Any:
        if "_orig_mod" not in self.__dict__:  # a copy under construction has no attributes yet
            raise AttributeError(f"'OptimizedModule' object has no attribute '{name}'")
        return getattr(self.__dict__["_orig_mod"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._own_attributes or hasattr(type(self), name):
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._own_attributes or hasattr(type(self), name):
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __len__(self) -> int:
        return len(self._orig_mod)


def compile(
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable | None = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    **ignored: Any,
) -> Callable:
    """Capture ``model`` (a ``Module`` or a function) for replay, with ``torch.compile``'s
    signature.

    A ``Module`` comes back as an ``OptimizedModule`` that shares its parameters and whose
    forward (and the backward through it) is recorded per input signature and replayed; a
    function comes back as ``scratchgrad.jit(model)``. Without ``model`` it is a decorator:
    ``@compile`` and ``@compile(...)`` both work. ``disable=True`` returns ``model`` unchanged.
    ``fullgraph``, ``dynamic``, ``backend``, ``mode``, ``options`` and the other keywords of
    newer PyTorch releases (``name``, ``recompile_limit``, ...) are accepted and ignored; as in
    PyTorch, ``mode`` and ``options`` may not both be given. See docs/jit.md for what is
    captured and what is read again on each call.

    >>> import scratchgrad as sg
    >>> @sg.compile(mode="max-autotune")
    ... def scaled(x):
    ...     return 2 * x + 1
    >>> [scaled(sg.tensor([1.0, 2.0])).tolist() for _ in range(4)]  # eager, record twice, replay
    [[3.0, 5.0], [3.0, 5.0], [3.0, 5.0], [3.0, 5.0]]
    """
    _check_options(mode, options)
    if model is None:  # @compile(...) : the options now, the function next
        return functools.partial(
            compile,
            fullgraph=fullgraph,
            dynamic=dynamic,
            backend=backend,
            mode=mode,
            options=options,
            disable=disable,
            **ignored,
        )
    if not callable(model):
        raise TypeError(f"compile: expected a Module or a function, got {type(model).__name__}")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model)
    return jit(model)


def compile_in_place(
    module: Module,
    *,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
    **ignored: Any,
) -> None:
    """``Module.compile``: the module's own calls captured from now on, as ``compile(module)``
    captures the wrapper's, with its options (``disable=True`` leaves the module as it is).
    The capture hangs off ``Module.__call__``'s slower way (``_hooked``), so that uncompiled
    modules pay nothing for it."""
    _check_options(mode, options)
    if not disable:
        module._compiled_call_impl = CompiledForward(module, wrappers=1)
        module._hooked = True


def _check_options(mode: str | None, options: dict[str, Any] | None) -> None:
    if mode is not None and options is not None:
        raise RuntimeError(
            "compile: either mode or options can be specified, but both can't be specified at "
            "the same time"
        )
