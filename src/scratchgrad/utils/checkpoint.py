"""Activation checkpointing, as ``torch.utils.checkpoint``: trade compute for memory.

Backpropagation needs what each op saved during the forward pass (its inputs, masks, results),
so a network's activations all stay alive from the forward pass until the backward pass
reaches them: the memory of a step grows with the depth. ``checkpoint(function, *args)`` runs
``function`` under ``no_grad``, so none of its ops saves anything and each intermediate is freed
as soon as the next op has used it; only the arguments (and the result) are kept. When the
backward pass reaches the result, ``function`` runs again with gradients on (with the random
state of the first run, so dropout draws the same masks) and the gradient is propagated through
that fresh graph, which is freed at once. The activations of one checkpointed segment are
alive only while its gradient is computed: ``checkpoint_sequential`` over ``n`` segments
keeps the segment boundaries and one segment's activations instead of all of them, for one
more forward pass of the network.

Measured with ``tracemalloc`` on a float32 MLP of 20 ``Linear(256, 256)`` + ``ReLU`` layers and
a batch of 1024 (activations of 1 MB a layer, weights of 0.26 MB): the peak of one training step
(forward, backward, SGD step, gradients set to None before) is 24.1 MB without checkpointing,
17.9 MB with ``checkpoint_sequential(model, 2, x)``, 16.1 MB with 4 segments and 29.2 MB with
20 (each segment's input is kept: too many segments keep more than they save), for a step up
to 1.7 times as long (4 segments: the forward pass runs twice, and a graph is built anew).

Both of PyTorch's variants are offered; they compute the same gradients, which are those of
calling ``function`` directly: for every tensor argument, and for every parameter the function
uses (also through ``autograd.grad``, as PyTorch's ``use_reentrant=False``). What differs is
PyTorch's: without ``use_reentrant`` it warns and takes ``True``; with ``True``, keyword
arguments are refused, and when no tensor argument requires grad it warns and the result has
no gradient. Parameters are found among the function's references (a module, a bound method
of one, what its closure and globals name) and its arguments that are not tensors (a module
or a list of parameters passed in); a tensor that requires grad and is found
elsewhere raises during backward (pass it as an argument), as does a backward with
``create_graph=True`` (a gradient to differentiate again), which PyTorch's non-reentrant
variant allows.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.autocast import state as autocast_state
from scratchgrad.autograd.engine import grad
from scratchgrad.autograd.function import AccumulateGrad, Function
from scratchgrad.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from scratchgrad.nn import Module, Sequential
from scratchgrad.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs: Any,
) -> Any:
    """``function(*args, **kwargs)``, without keeping its intermediate results for backward:
    they are computed again when the gradient reaches the result (see the module's doc string).
    ``function`` returns a tensor or a tuple of tensors. ``determinism_check``, ``debug`` and
    ``early_stop`` are PyTorch's options for its checks of the recomputation and when to stop
    it: checked as PyTorch's, and the same result.

    >>> import scratchgrad as sg
    >>> layer = sg.nn.Linear(3, 3)
    >>> x = sg.ones(2, 3, requires_grad=True)
    >>> y = checkpoint(lambda x: layer(x).tanh(), x, use_reentrant=False)
    >>> y.sum().backward()
    >>> x.grad.shape, layer.weight.grad.shape
    (scratchgrad.Size([2, 3]), scratchgrad.Size([3, 3]))
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and debug:
        raise ValueError(
            "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
        )
    if not use_reentrant and determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    if use_reentrant and not any(t.requires_grad for t in tensors):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )
        with no_grad():
            return function(*args)
    if not is_grad_enabled() or capture_hook.recorder is not None:
        # (no backward to prepare; a jitted step is recorded whole: nothing to save there)
        return function(*args, **kwargs)
    run = _Run(function, args, kwargs, tensors, preserve_rng_state)
    out = _Checkpoint.apply(*tensors, *run.leaves, run=run)
    outs = out if isinstance(out, tuple) else (out,)
    run.made = max((o.grad_fn.sequence_nr for o in outs if o.grad_fn is not None), default=0)
    return out


def checkpoint_sequential(
    functions: Sequential | list[Callable[[Any], Any]],
    segments: int,
    input: Tensor,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Tensor:
    """``functions`` (a ``Sequential`` or a list of modules or functions of one tensor) applied
    in turn to ``input``, cut into ``segments`` parts of ``len(functions) // segments`` (the
    last takes the rest); each part but the last is checkpointed. ``preserve_rng_state`` may
    be passed as a keyword.

    >>> import scratchgrad as sg
    >>> model = sg.nn.Sequential(*[sg.nn.Linear(4, 4) for _ in range(4)])
    >>> x = sg.ones(1, 4, requires_grad=True)
    >>> y = checkpoint_sequential(model, 2, x, use_reentrant=False)
    >>> bool((y == model(x)).all())
    True
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    size = len(functions) // segments
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        segment = functools.partial(_run_in_turn, functions[start:end])
        input = checkpoint(segment, input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return _run_in_turn(functions[end:], input)


def _run_in_turn(functions: list[Callable[[Any], Any]], input: Any) -> Any:
    for function in functions:
        input = function(input)
    return input


class _Run:
    """What a checkpointed call keeps for its backward: the function and its arguments, the
    parameters it uses, and the random and autocast states it ran with."""

    def __init__(
        self,
        function: Callable[..., Any],
        args: tuple,
        kwargs: dict,
        tensors: list[Tensor],
        preserve_rng_state: bool,
    ) -> None:
        self.function, self.args, self.kwargs, self.tensors = function, args, kwargs, tensors
        # a module may come in as an argument (``checkpoint(step, model, x)``), not a reference
        others = [a for a in (*args, *kwargs.values()) if not isinstance(a, Tensor)]
        self.leaves = _parameters_of([*_references(function), *others])
        self.rng_state = _rng_state(tensors) if preserve_rng_state else None
        self.autocast_dtype = autocast_state.dtype
        self.made = 0  # the sequence number of the result's node: older nodes are outside

    @contextmanager
    def replaying(self) -> Iterator[None]:
        """Gradients on, and the random and autocast states of the first run."""
        now = backend.get_rng_state() if self.rng_state is not None else None
        saved_autocast = autocast_state.dtype, autocast_state.cache
        autocast_state.dtype, autocast_state.cache = self.autocast_dtype, None
        try:
            if self.rng_state is not None:
                backend.set_rng_state(self.rng_state)
            with enable_grad():
                yield
        finally:
            autocast_state.dtype, autocast_state.cache = saved_autocast
            if now is not None:
                backend.set_rng_state(now)


class _Checkpoint(Function):
    """The node of a checkpointed call: its inputs are the call's tensor arguments and the
    parameters its function uses; ``forward`` runs the function under no_grad, ``backward``
    runs it again with a graph and propagates through that."""

    @staticmethod
    def forward(ctx, *arrays, run):
        ctx.run = run
        with no_grad():
            out = run.function(*run.args, **run.kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        if not all(isinstance(o, Tensor) for o in outs):
            raise TypeError(
                "checkpoint: the function must return a tensor or a tuple of tensors, got "
                + ", ".join(type(o).__name__ for o in outs)
            )
        run.shapes = [(o.shape, o.dtype) for o in outs]
        return tuple(o.array for o in outs) if isinstance(out, tuple) else out.array

    @staticmethod
    def backward(ctx, *grads):
        if is_grad_enabled():  # (the engine records a backward only for create_graph=True)
            raise RuntimeError(
                "checkpoint: create_graph=True (differentiating the gradient again) is not "
                "supported through checkpoint: call the function directly instead"
            )
        run = ctx.run
        inputs = {id(t): t.detach().requires_grad_(t.requires_grad) for t in run.tensors}
        args = [inputs.get(id(a), a) for a in run.args]
        kwargs = {k: inputs.get(id(v), v) for k, v in run.kwargs.items()}
        with run.replaying():
            out = run.function(*args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        if [(o.shape, o.dtype) for o in outs] != run.shapes:
            raise RuntimeError(
                f"checkpoint: the function's results when run again, "
                f"{[(tuple(o.shape), o.dtype) for o in outs]}, differ from the first run's, "
                f"{[(tuple(s), d) for s, d in run.shapes]}"
            )
        targets = [*(inputs[id(t)] for t in run.tensors), *run.leaves]
        used = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
        _check_leaves(used, targets, run.made)
        wanted = [t for t in targets if t.requires_grad]
        found = {}
        if used and wanted:
            outputs, given = zip(*used)
            found = dict(zip(map(id, wanted), grad(outputs, wanted, given, allow_unused=True)))
        return tuple(found.get(id(t)) for t in targets)


def _parameters_of(values: list[Any]) -> list[Tensor]:
    """The leaf tensors that require grad among ``values`` (what the function refers to, see
    ``_references``, and its arguments that are not tensors), directly or in a list, tuple or
    dict: themselves, or a module's parameters."""
    found: dict[int, Tensor] = {}
    for value in values:
        if isinstance(value, dict):
            value = list(value.values())
        for item in value if isinstance(value, (list, tuple)) else (value,):
            for t in item.parameters() if isinstance(item, Module) else (item,):
                if isinstance(t, Tensor) and t.requires_grad and t.is_leaf:
                    found.setdefault(id(t), t)
    return list(found.values())


def _references(function: Any) -> Iterator[Any]:
    """``function``, the object of a bound method, what its closure holds and the globals it
    names; a ``functools.partial``'s arguments and its function's references."""
    if isinstance(function, functools.partial):
        yield from (*function.args, *function.keywords.values())
        yield from _references(function.func)
        return
    yield function
    yield getattr(function, "__self__", None)
    yield from (cell.cell_contents for cell in getattr(function, "__closure__", None) or ())
    code, names = getattr(function, "__code__", None), getattr(function, "__globals__", {})
    yield from (names.get(name) for name in (code.co_names if code is not None else ()))


def _check_leaves(used: list[tuple[Tensor, Tensor]], targets: list[Tensor], made: int) -> None:
    """Refuse a graph that reaches a tensor requiring grad that checkpoint does not pass
    gradients to: a leaf other than ``targets``, or a result of ops made before the call (a
    node older than ``made``), which its gradient would not reach."""
    known = {id(t) for t in targets}
    stack, seen = [o.grad_fn for o, _ in used if o.grad_fn is not None], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.sequence_nr <= made:
            _refuse(node.out_shape, "made by ops before the call")
        for parent, _ in node.next_functions:
            if isinstance(parent, AccumulateGrad):
                if id(parent.variable) not in known:
                    _refuse(parent.variable.shape, "neither an argument nor a parameter it uses")
            elif parent is not None:
                stack.append(parent)


def _refuse(shape: tuple, what: str) -> None:
    raise RuntimeError(
        f"checkpoint: the function used a tensor of shape {tuple(shape)} that requires grad, "
        f"{what}: its gradient would be lost; pass it to checkpoint as an argument"
    )


def _rng_state(tensors: list[Tensor]) -> Tensor:
    """The CPU generator's state, which the run draws from (dropout); refused for a tensor on
    another device, whose generator's state cannot be read."""
    for t in tensors:
        if t.device.type != "cpu":
            raise RuntimeError(
                f"checkpoint: preserve_rng_state=True restores the CPU generator only, and an "
                f"argument is on {t.device}, whose generator's state cannot be read; pass "
                "preserve_rng_state=False if the function draws no random numbers"
            )
    return backend.get_rng_state()
