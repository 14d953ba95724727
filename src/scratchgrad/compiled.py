"""``scratchgrad.compile``: ``torch.compile``'s signature over ``scratchgrad.jit``.

A script written for PyTorch calls ``torch.compile(model)`` and goes on using the result as the
model; here the same call returns an ``OptimizedModule`` whose forward and backward are recorded
per input signature and training mode, then replayed (``jit/compiled.py``), and a function comes
back as a ``CompiledFunction``: ``scratchgrad.jit(fn)`` for a step, captured as a compiled
module's forward (its backward too) when it returns a result for the caller to backpropagate.
What cannot be recorded (``.item()``, a Python branch on a tensor, ``nonzero()``) runs
eagerly, as TorchDynamo breaks the graph there, with one warning saying why; ``fullgraph=True``
raises the ``JitError`` instead, as PyTorch's option makes graph breaks errors. TorchDynamo's
tuning knobs (``backend``, ``mode``, ``options``, ``dynamic``...) have nothing to tune here:
they are accepted so such scripts run, and ignored. ``disable=True`` returns the input itself,
as in PyTorch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from scratchgrad.autograd import capture_hook
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

    def __init__(self, mod: Module, fullgraph: bool = False) -> None:
        # ``__getattr__`` and the ``training`` property read _orig_mod: set it before anything.
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_initialized", False)
        super().__init__()
        self._orig_mod = mod  # now as a registered child: its parameters are ours
        self._compiled = CompiledForward(mod, fullgraph=fullgraph)
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


class CompiledFunction:
    """What ``compile(fn)`` returns for a function. PyTorch compiles both a whole training step
    (its ``backward()`` and ``optimizer.step()`` inside) and a loss whose result the caller
    backpropagates (``@torch.compile def loss_fn(logits, y, t)``, then ``loss.backward()``). The
    first is ``scratchgrad.jit(fn)``'s work, whose replays return detached tensors; the second
    needs its backward captured with it. ``fn`` starts as ``jit(fn)``; once a recording of it
    returns tensors with a graph and ran no backward, it is captured as a module's forward
    (``jit.compiled.CompiledForward``) from then on, whose replays hang their result from one
    graph node, ``CompiledFunctionBackward``, as a compiled module's. Called while a jitted
    step or a compiled module records, it runs as the plain function, whose operations that
    recording sees (TorchDynamo inlines a compiled function called by a compiled one).

    >>> import scratchgrad as sg
    >>> w = sg.ones(3, requires_grad=True)
    >>> @sg.compile
    ... def loss_fn(x, scale):
    ...     return (x * w).sum() * scale
    >>> for _ in range(4):  # eager, record (as jit: a forward), then record twice as one
    ...     loss_fn(sg.ones(3), 2.0).backward()
    >>> loss_fn(sg.ones(3), 2.0).grad_fn.name(), w.grad  # a replay
    ('CompiledFunctionBackward', tensor([8., 8., 8.]))
    """

    def __init__(self, fn: Callable, fullgraph: bool = False) -> None:
        functools.update_wrapper(self, fn)
        self._jitted = jit(fn)
        self._jitted.hint_compile = False  # (its backward is captured instead: below)
        self._jitted.lenient = not fullgraph  # (graph breaks run eagerly: see compile)
        self._fullgraph = fullgraph
        self._forward: CompiledForward | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if capture_hook.recorder is not None:  # a jitted step's or a compiled module's
            # recording sees its operations, as TorchDynamo inlines a compiled function
            return self._jitted.fn(*args, **kwargs)
        if self._forward is not None:
            return self._forward(*args, **kwargs)
        result = self._jitted(*args, **kwargs)
        if self._jitted.graph_results:  # this call recorded it: its result has eager's graph
            jitted = self._jitted
            self._forward = CompiledForward(jitted.fn, jitted.cache_size, 1, self._fullgraph)
            self._forward.calls = 1  # its eager first call is this one: record from the next
        return result

    @property
    def calls(self) -> int:
        """How many times it was called (as ``Jitted.calls``)."""
        # (the forward's count starts at the call that made it, counted by the jit)
        return self._jitted.calls + (self._forward.calls - 1 if self._forward else 0)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """As a method decorator: one compiled function per instance (recordings differ)."""
        if instance is None:
            return self
        bound = instance.__dict__.get(self.__name__)
        if not isinstance(bound, CompiledFunction):
            bound = CompiledFunction(self._jitted.fn.__get__(instance, owner), self._fullgraph)
            instance.__dict__[self.__name__] = bound
        return bound


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
    function as a ``CompiledFunction`` (``scratchgrad.jit(model)``, or a compiled forward and
    backward for a function whose result is backpropagated outside it). Without ``model`` it
    is a decorator: ``@compile`` and ``@compile(...)`` both work. ``disable=True`` returns
    ``model`` unchanged. A call whose forward (or step) cannot be recorded, where
    ``torch.compile`` breaks the graph, runs eagerly, as do the later calls of its signature,
    with one warning naming the line; ``fullgraph=True`` raises that ``JitError`` instead.
    ``dynamic``, ``backend``, ``mode``, ``options`` and the other keywords of newer PyTorch
    releases (``name``, ``recompile_limit``, ...) are accepted and ignored; as in PyTorch,
    ``mode`` and ``options`` may not both be given. See docs/jit.md for what is
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
        return OptimizedModule(model, fullgraph)
    return CompiledFunction(model, fullgraph)


def compile_in_place(
    module: Module,
    *,
    fullgraph: bool = False,
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
        module._compiled_call_impl = CompiledForward(module, wrappers=1, fullgraph=fullgraph)
        module._hooked = True


def _check_options(mode: str | None, options: dict[str, Any] | None) -> None:
    if mode is not None and options is not None:
        raise RuntimeError(
            "compile: either mode or options can be specified, but both can't be specified at "
            "the same time"
        )
