"""``compile(module)``'s forward and backward, captured together (as PyTorch's AOTAutograd).

While a compiled module's output needs a gradient, a recording runs the module's forward under
a recorder, and later, when a ``backward()`` reaches that output, the backward from it to the
module's inputs and parameters under the same recorder (with the gradient that really arrived,
so that its layout is the one later calls will see). The recording is then split where the
backward began into two programs::

    forward(arguments, parameters)         -> outputs, saved
    backward(saved, gradients of outputs)  -> gradients of the arguments and parameters

``saved`` are the forward's values the backward reads (inputs, masks, activations). A replay
runs the forward program and hangs its outputs from one graph node,
``CompiledFunctionBackward``, which keeps that call's ``saved``: when a ``backward()`` reaches
the node, it runs the backward program on them and hands the gradients to the engine, which
accumulates them into ``.grad`` (or sends them further back) as for any other node. A forward
under ``no_grad``, or with nothing requiring grad, records the forward program alone.

Recordings are kept per guard key, as ``jit``'s: the arguments' structure, shapes, dtypes,
layouts and ``requires_grad``, the same of every parameter, grad mode, the train/eval mode
of every module the forward called, and no attribute set since on those modules (see
``ModuleStamps``). As with ``jit``, the first call runs eagerly and the next
two record (and must agree) before replays begin.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from types import FunctionType
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import anomaly, autocast, capture_hook, engine, forward_ad, function
from scratchgrad.autograd.function import Alias, Function
from scratchgrad.autograd.grad_mode import enable_grad
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.backend import xp
from scratchgrad.jit import guards, program
from scratchgrad.jit.jitted import (
    Outer,
    SparseArgument,
    _check_same,
    _check_same_stores,
    _check_same_values,
    _contents,
    _flatten,
    _named_arguments,
    _python_values,
    _same_contents,
    _signature,
    _snapshot,
    _stored_over,
    _storing,
    _tensor_key,
    cache_full,
    drop_stale,
    forget_comparison,
    give_up,
    rebuild,
    refuse_reading_stored_over,
    refuse_tensors_in_objects,
    values_hold,
)
from scratchgrad.jit.recorder import (
    Capturing,
    JitError,
    ModuleStamps,
    Recorder,
    RecordingElsewhere,
    unchanged,
    user_line,
)
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor, laid_out, own_layout

_make = Tensor._make

# The most calls without a backward between two recordings of a compiled forward (see
# ``CompiledForward.__call__``).
_LONGEST_WAIT = 1024


class CompiledFunctionBackward(Function):
    """The graph node of one call of a compiled module (PyTorch's name for it): its parents
    are the arguments and parameters the recorded backward differentiates, ``saved`` the
    arrays that call's forward left for the backward program.

    >>> import scratchgrad as sg
    >>> compiled = sg.compile(sg.nn.Linear(3, 2))
    >>> x = sg.randn(4, 3, requires_grad=True)
    >>> for _ in range(4):  # eager, record twice, replay
    ...     out = compiled(x)
    ...     out.sum().backward()
    >>> out.grad_fn.name()
    'CompiledFunctionBackward'
    """

    backward_name = "CompiledFunctionBackward"

    @staticmethod
    def forward(ctx, *parents, recording, outputs, saved, versions):
        """The outputs a program computed (the parents' arrays are not read): ``apply`` makes
        this the node of the differentiable ones."""
        ctx.recording, ctx.versions, ctx.pending = recording, versions, recording.pending
        # A recording call's node saves its pending backward: the engine frees it after a
        # backward without retain_graph, as eager nodes' saved tensors, and a second one raises
        ctx.saved = saved if ctx.pending is None else (ctx.pending,)
        if len(outputs) == 1:
            return outputs[0]
        wanted = set(recording.differentiable)
        # An output with a differentiable one's array (y.detach() returned beside y) is marked
        # through a view of it: marking is by array, and would take y's gradient too.
        shared = {id(outputs[i]) for i in wanted}
        outputs = [
            a.view() if i not in wanted and id(a) in shared else a for i, a in enumerate(outputs)
        ]
        ctx.mark_non_differentiable(*(a for i, a in enumerate(outputs) if i not in wanted))
        return tuple(outputs)

    @staticmethod
    def backward(node: CompiledFunctionBackward, *grads: Tensor) -> tuple:
        if _state.enabled:  # the engine records this backward: create_graph=True
            raise RuntimeError(
                "scratchgrad.compile: the backward of a compiled module is a recorded program "
                "and cannot be differentiated again (create_graph=True, double backward); call "
                "the module itself (compiled._orig_mod) for higher-order gradients"
            )
        recording = node.recording
        upstream = [grads[i].array for i in recording.differentiable]
        if node.saved is None:  # the engine freed them after a first backward
            raise RuntimeError(
                "CompiledFunctionBackward: trying to backward through the graph a second time; "
                "pass retain_graph=True to the first backward() if you need to"
            )
        if node.pending is not None:  # a recording call: its backward is recorded now
            return node.pending.finish(upstream)
        for tensor, version in node.versions:  # as saved_tensors checks eager saved inputs
            if tensor._version != version:
                raise RuntimeError(
                    f"CompiledFunctionBackward: a tensor of shape {tensor.shape} saved for the "
                    f"gradient was modified by an in-place operation (version {version} -> "
                    f"{tensor._version}); call backward() before changing it in place"
                )
        for i, array in enumerate(upstream):
            if array.strides != recording.layouts[i]:  # another loss: see docs/jit.md
                upstream[i] = xp.ascontiguousarray(array)
        arrays = recording.backward([*node.saved, *upstream], ())
        made: dict[int, Tensor] = {}  # one tensor per array: the engine may adopt it as .grad
        return tuple(made.setdefault(id(a), _make(a)) for a in arrays)


class Recording:
    """One guard key's programs for one train/eval variant, and what a call needs to run them:
    the outputs that get a gradient, the node's parents, the arguments whose versions the
    backward checks, and how to rebuild the module's result."""

    def __init__(
        self,
        recorder: Recorder,
        build: Callable,
        differentiable: list,
        values: list,
        outer: Outer,
        stored: list[tuple[int, Any]],
        arguments: list,
    ) -> None:
        self.recorder = recorder  # until compiled
        self.stored = stored  # where the forward stored tensors it made, to compare
        self.outer = outer  # the objects of the globals the forward reads
        self.values = values  # the Python values returned, which every replay returns again
        self.modules, self.training = recorder.guarded_modes()
        self.stamps = ModuleStamps(
            [*recorder.modules_held(), *outer.modules], self.modules, self.training
        )
        self.reached = list(recorder.reached.values())
        self.grads_read = list(recorder.grads_read.values())  # (leaf, its .grad it read)
        # (index, tensor) of the arguments the forward also reaches by name: valid only for
        # calls that pass those same tensors there (see jitted._named_arguments)
        self.named_arguments = _named_arguments(arguments, outer, recorder)
        # (index, values) of the arguments whose values the forward read (see jitted's)
        self.values_read = list(recorder.values_read.items())
        self.build, self.differentiable = build, differentiable
        self.pending: _PendingBackward | None = None  # the backward not recorded yet
        self.checked = False  # recorded twice with the same result
        # the lines recorded, where, and the constants, for _check_same
        self.calls = ""
        self.call_places: list[str] = []
        self.constants, self.places = recorder.constants, recorder.places
        self.forward = self.backward = None
        # its guards in one function, made at its first replay (see guards.py)
        self.fast: Callable | None | object = guards.UNMADE
        self.forward_source = self.backward_source = ""  # the programs' code, to read
        self.parents: list = []  # per gradient: an argument's index, or a tensor reached by name
        self.versioned: list[int] = []  # arguments the backward reads
        self.layouts: list[tuple] = []  # the strides of the gradients the backward was given
        self.saved_count = 0
        self.saved_outputs: list[int] = []  # the outputs whose memory the backward reads
        # (index, flag) of the arguments whose requires_grad the forward set (an input made
        # to require grad, x.requires_grad_()): Python, which each replay sets again
        self.requires_grad_set: list[tuple[int, bool]] = []
        # the arguments the forward called retain_grad() on (it saw their copies, see _copy):
        # each call calls it on the caller's tensors, as eagerly
        self.retained: list[int] = []
        # (index, hook) of the hooks the forward registered on arguments (on the caller's
        # tensors, see _Argument.register_hook): each replay registers them again
        self.hooks: list[tuple[int, Callable]] = []

    def holds(self) -> bool:
        """Whether every module the recording called is in the train/eval mode it had then
        and had no attribute set since (see ``ModuleStamps``), every leaf it reached by name
        has the array, requires_grad and hooks it had, each ``.grad`` it read is still its
        leaf's, and every global name it reads holds the object it held."""
        return (
            self.stamps.hold()
            and unchanged(self.reached)
            and all(leaf.grad is grad for leaf, grad in self.grads_read)
            and self.outer.unchanged()
        )

    def matches(self, tensors: list) -> bool:
        """Whether the recording ``holds`` and the call's ``tensors`` are the ones it passed
        where the forward also reached them by name (see ``jitted._named_arguments``), with
        the values it read from them."""
        return (
            self.holds()
            and all(tensors[i] is t for i, t in self.named_arguments)
            and (not self.values_read or values_hold(self.values_read, tensors))
        )

    def same_variant(self, other: Recording) -> bool:
        """Whether ``other`` assumed the same modules in the same train/eval modes, and the
        same tensors passed where the forward also reads them by name, and the same values
        read from the arguments."""
        return (
            self.modules == other.modules
            and self.training == other.training
            and _identities(self.named_arguments) == _identities(other.named_arguments)
            and self.values_read == other.values_read
        )

    def compile(self, inputs: list, outputs: list, split: int, backward: tuple = ()) -> None:
        """Build the programs from the recorder's steps (the backward's begin at ``split``):
        ``backward`` is (the gradients' numbers, the upstream gradients' numbers, each
        gradient's parent), empty for a forward alone."""
        recorder, self.recorder = self.recorder, None
        self.calls, self.call_places = recorder.calls()
        saved: list[int] = []
        if backward:
            grads, upstream, self.parents = backward
            steps = recorder.steps[split:]
            live = program._live_steps(_part(recorder, steps), grads)
            needed = set(grads).union(*(step.reads for step in live))
            made = {n for step in recorder.steps[:split] for n in step.writes}
            saved = sorted(needed & (made | set(inputs)))
            self.backward, self.backward_source = program.compile(
                _part(recorder, steps), saved + upstream, grads
            )
            read = set(saved)
            self.versioned = [i for i, n in enumerate(inputs) if n in read]
            self.saved_count = len(saved)
            memory = {recorder.memory[n] for n in saved}  # (a view and its base share one)
            self.saved_outputs = [i for i, n in enumerate(outputs) if recorder.memory[n] in memory]
        self.forward, self.forward_source = program.compile(
            _part(recorder, recorder.steps[:split]), inputs, outputs + saved
        )

    def run(self, tensors: list) -> Any:
        """Replay the forward on this call's tensors (the arguments', then the parameters):
        the module's result, hanging from a new node when it needs a gradient."""
        arrays = self.forward([t.array for t in tensors], tensors)
        for i, hook in self.hooks:  # (before a flag set: the forward registered it first)
            tensors[i].register_hook(hook)
        for i, flag in self.requires_grad_set:  # (before the node: it is then a parent)
            tensors[i].requires_grad = flag
        count = len(arrays) - self.saved_count
        return self.attach(arrays[:count], arrays[count:], tensors)

    def attach(self, outputs: tuple, saved: tuple, tensors: list) -> Any:
        """The module's result built from the output arrays, the differentiable ones attached
        to one ``CompiledFunctionBackward`` node that keeps ``saved``."""
        if not self.differentiable:
            # (Tensor._make, not _make: under inference_mode, inference tensors as eagerly)
            return self.build([Tensor._make(a) for a in outputs], tensors)
        versions = [(tensors[i], tensors[i]._version) for i in self.versioned]
        for i in self.retained:
            tensors[i].retain_grad()
        # Under no_grad, outputs need a gradient only where the forward enabled grad itself
        # (`with enable_grad():` inside): the node must be made then too, as eagerly.
        with nullcontext() if _state.enabled else enable_grad():
            made = CompiledFunctionBackward.apply(
                *[tensors[p] if type(p) is int else p for p in self.parents],
                recording=self,
                outputs=outputs,
                saved=tuple(saved),
                versions=versions,
            )
        made = [made] if len(outputs) == 1 else list(made)
        # An output changed in place before backward() (out.mul_(2) after a sigmoid) must
        # raise as eagerly when the backward reads its memory, not differentiate new values.
        if self.pending is not None:  # a recording call: the graph inside saved the heads
            for i, head in zip(self.differentiable, self.pending.heads):
                if head._counter is None:
                    head._counter = [0]
                made[i]._counter = head._counter  # their in-place changes count as the head's
        versions += [(made[i], made[i]._version) for i in self.saved_outputs]
        return self.build(made, tensors)


class _PendingBackward:
    """A recording whose forward ran and whose backward will be recorded when a ``backward()``
    first reaches its output (see ``finish``): the outputs to differentiate (``heads``), the
    caller's tensors among the targets (``outside``: not an argument's copy, see ``_grad``),
    the copies and leaves to differentiate them for (``targets``, with the node's
    ``parents``), the forward's input and output numbers and where its steps end (``split``),
    ``done``, which hands the compiled recording to its ``CompiledForward``, and the Python
    ``state`` the forward reads (``Outer.python_state``), which the backward's Python (hooks)
    must leave alone."""

    def __init__(
        self,
        recording: Recording,
        heads: list,
        outside: list,
        targets: list,
        parents: list,
        inputs: list,
        outputs: list,
        split: int,
        done: Callable[[Recording], None],
        state: list,
        give_up: Callable[[str], None],
    ) -> None:
        self.recording, self.heads, self.targets, self.parents = recording, heads, targets, parents
        self.inputs, self.outputs, self.split, self.done = inputs, outputs, split, done
        self.state, self.outside, self.give_up = state, outside, give_up

    def finish(self, upstream: list) -> tuple:
        """Run the backward from the recorded outputs with the gradients that arrived, under
        the recorder; compile the recording and hand it on. The gradients, one per parent of
        the recording call's node."""
        recording = self.recording
        grads_of = [_make(a) for a in upstream]
        if recording.pending is not self:  # recorded already: a second backward runs eagerly
            return self._grad(grads_of)
        recorder = recording.recorder
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("a backward through a compiled module's recording call")
        numbers = [recorder.value(array) for array in upstream]
        before = _snapshot(self.state)
        try:
            with Capturing(recorder):
                grads = self._grad(grads_of)
        except RecordingElsewhere:
            # another thread records (see Capturing): eagerly, through the graph the recording
            # forward made, as a second backward; the recording is dropped (a later call
            # records again)
            recording.pending = None
            return self._grad(grads_of)
        self._check_state(before, recorder.name)
        recording.pending = None
        try:
            recorder.check_kept()  # (a lenient recorder's refusal)
            kept = [(g, p) for g, p in zip(grads, self.parents) if g is not None]
            grad_numbers = [_number_of_gradient(recorder, g, recorder.name) for g, _ in kept]
            recording.layouts = [array.strides for array in upstream]
            backward = (grad_numbers, numbers, [p for _, p in kept])
            recording.compile(self.inputs, self.outputs, self.split, backward)
            self.done(recording)
        except JitError as error:
            if not recorder.lenient:
                raise
            self.give_up(str(error))  # the gradients are eager's all the same
        return grads

    def _check_state(self, before: list, name: str) -> None:
        """Warn if the recorded backward changed Python state (a backward hook keeping the
        gradients it sees, ``grads["fc"] = grad_output[0]``, or setting ``module.last``): a
        replay runs no Python, so later calls would leave it as it is now, as a jitted step's
        changes (``Outer.check_state``), whose stores replays repeat, but not these."""
        for (what, key, value), old in zip(self.state, before):
            if not _same_contents(old, _contents(value)):
                warnings.warn(
                    f"scratchgrad.compile: the backward of {name}() changed "
                    f"{what.format(name=key, kind=type(value).__name__)} while it was recorded "
                    f"(at {user_line()}): a replay runs none of its Python (hooks), so later "
                    "calls leave it as it is now. Return what you keep from forward, or run "
                    "the module without compile.",
                    stacklevel=2,
                )
                return

    def _grad(self, grads_of: list) -> tuple:
        """The gradients of the targets from the heads (see ``_differentiate``)."""
        return _differentiate(self.heads, self.targets, self.outside, grads_of)


def _differentiate(heads: list, targets: list, outside: list, grads_of: list) -> tuple:
    """The gradients of ``targets`` from ``heads``, without the hooks of the caller's tensors
    among them (``outside``: ``p.register_hook(lambda g: g.clamp(-1, 1))``): the engine runs
    them on what the node returns, as eagerly; run here too, they would apply twice (and enter
    the program). (Those the forward registered on an argument are on the caller's tensor,
    see ``_Argument.register_hook``.)"""
    hooked = [(t, t._hooks) for t in outside if t._hooks]
    for t, _ in hooked:
        t._hooks = ()
    try:
        return engine.grad(heads, targets, grads_of, True, allow_unused=True)
    finally:
        for t, hooks in hooked:
            t._hooks = hooks


class CompiledForward:
    """A module's ``__call__`` captured per guard key (see the module's doc string).

    >>> import scratchgrad as sg
    >>> linear = sg.nn.Linear(2, 1)
    >>> forward = CompiledForward(linear)
    >>> x = sg.ones(3, 2)
    >>> [forward(x).sum().backward() for _ in range(4)] and linear.weight.grad
    tensor([[12., 12.]])
    """

    def __init__(
        self, module: Any, cache_size: int = 8, wrappers: int = 2, fullgraph: bool = False
    ) -> None:
        """``module``: a ``Module``, or a function (a loss ``scratchgrad.compile`` was given,
        whose result the caller backpropagates), which is called as a module without
        parameters would be. ``wrappers``: the frames between the user's call and this one's
        (an ``OptimizedModule``'s: its ``Module.__call__`` and ``forward``; a module compiled
        in place: its ``Module.__call__``), for the stack level of warnings. ``fullgraph``:
        raise what cannot be recorded (a ``JitError``) instead of running those calls
        eagerly (``give_up``), as ``torch.compile``'s option."""
        self.module, self.cache_size, self.wrappers = module, cache_size, wrappers
        self.fullgraph = fullgraph
        # guard key -> why its calls run eagerly (a recording of it was given up)
        self.given_up: dict[Any, str] = {}
        self.is_module = isinstance(module, Module)
        # (not __call__: a module compiled in place)
        self.eager = module._call_impl if self.is_module else module
        self.name = type(module).__name__ if self.is_module else module.__name__
        self.recordings: dict[Any, list[Recording]] = {}
        self.calls = 0
        self._warned = False
        # the last recording replayed and its fast path (see guards.py)
        self.fast: tuple[Recording, Callable] | None = None
        # (guard key, train mode) -> calls since a recording of it last got its backward
        self.unfinished: dict[Any, int] = {}

    def __deepcopy__(self, memo: dict) -> CompiledForward:
        """A copy of the module (``copy.deepcopy`` of a compiled model, as for an EMA) starts
        without recordings: the programs name the original's buffers and parameters."""
        module = copy.deepcopy(self.module, memo)
        return CompiledForward(module, self.cache_size, self.wrappers, self.fullgraph)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        eager = self.eager
        if capture_hook.paused is not None:
            capture_hook.paused.refuse(f"calling the compiled {self.name} inside a call it replays")
        if capture_hook.recorder is not None or function._vmap_dispatch is not None:
            return eager(*args, **kwargs)  # the jit or vmap around sees each operation
        self.calls += 1
        if self.fast is not None:
            recording, fast = self.fast
            tensors = fast(args, kwargs)
            if tensors is not guards.MISS:
                return recording.run(tensors)
        elif self.calls == 1:  # eagerly, so lazily made state exists
            return eager(*args, **kwargs)
        if anomaly.enabled:  # eagerly: a replayed backward checks no gradient for NaN
            return eager(*args, **kwargs)
        if forward_ad.entered():  # eagerly: unpack_dual differentiates the call's graph twice
            return eager(*args, **kwargs)
        try:
            tensors, key = self._signature(args, kwargs)
        except SparseArgument:  # eagerly, as PyTorch's compiled modules run one (a graph break)
            return eager(*args, **kwargs)
        if key in self.given_up:
            return eager(*args, **kwargs)
        recordings = self.recordings.get(key, ())
        for recording in recordings:
            if recording.matches(tensors):
                if recording.checked:
                    if recording.fast is guards.UNMADE:  # from a call that matched
                        parameters = tensors[key[1] :]  # (key[1]: the arguments' count)
                        recording.fast = guards.fast_path(recording, args, kwargs, parameters)
                    self.fast = None if recording.fast is None else (recording, recording.fast)
                    return recording.run(tensors)
                return self._record(key, tensors, args, kwargs)  # and check (see _finished)
        self.fast = None  # (it may be a stale recording's, which drop_stale lets go)
        if not all(isinstance(t.array, xp.ndarray) for t in tensors):
            return eager(*args, **kwargs)  # a GPU's arrays: the programs are NumPy calls
        drop_stale(self)
        # stacklevel: past the wrappers, to the user's call
        if cache_full(self, f"scratchgrad.compile: {self.name}", stacklevel=2 + self.wrappers):
            return eager(*args, **kwargs)
        # A recording is complete once its backward ran. Past two calls without one
        # (validation without no_grad), run eagerly, which is several times faster than
        # recording every call, and record again at the 4th, 8th, 16th... call, then every
        # _LONGEST_WAIT calls, for when backward is back: a validation of n calls records
        # about log2(n) times, and training in the same mode records again soon after it.
        waiting = (key, self.is_module and self.module.training)
        calls = self.unfinished[waiting] = self.unfinished.get(waiting, 0) + 1
        if calls > 2 and calls % min(1 << (calls.bit_length() - 1), _LONGEST_WAIT):
            return eager(*args, **kwargs)
        return self._record(key, tensors, args, kwargs)

    def _signature(self, args: tuple, kwargs: dict) -> tuple[list, Any]:
        """The call's tensors (the arguments', then the parameters) and its guard key: the
        arguments' as ``jit``'s, their number, the parameters', grad and inference mode,
        autocast's dtype and the default dtype."""
        parameters = _parameters(self.module)
        tensors, key = _signature(args, kwargs)
        every = tensors + parameters
        signature = tuple(map(_tensor_key, parameters))
        if len({id(t.array) for t in every}) != len(every):
            # an array passed twice (a parameter as an argument): where it is, is in the key
            key = _flatten((args, kwargs, parameters))[1]
        # (inference mode too: there, a forward's `with enable_grad():` records no graph)
        modes = (_state.enabled, _state.inference, autocast.state.dtype, backend.default_float)
        return every, (key, len(tensors), signature, *modes)

    def _record(self, key: Any, tensors: list, args: tuple, kwargs: dict) -> Any:
        """Run the module's forward under a recorder and return its result; when the result
        needs a gradient, it hangs from a node whose backward records the module's."""
        # An argument that requires grad enters as a copy cut from its graph (see _copy): the
        # recorded backward stops there, and the node hands the argument's gradient on.
        # (Inference mode records no graph: there the forward sees the argument itself.)
        arguments = tensors[: key[1]]
        graphs = not _state.inference
        copies = {id(t): _copy(t) for t in arguments if t.requires_grad and graphs}
        flags = [t.requires_grad for t in arguments]
        recorder = Recorder(f"{self.name}.forward")
        recorder.lenient = not self.fullgraph
        recorder.readable_arguments(arguments)
        # (x.grad = None in the forward: each replay sets the call's, see assign_grad)
        recorder.arguments = {id(t): i for i, t in enumerate(arguments)}
        outer = Outer(self.module)
        try:
            outer.refuse_random(self.module, f"{self.name}.forward")
        except JitError as error:  # (before the forward ran)
            if self.fullgraph:
                raise
            self.give_up(key, str(error))
            return self.eager(*args, **kwargs)
        state = outer.python_state(args, kwargs)
        before = _snapshot(state)
        inputs = [recorder.input(t.array) for t in tensors]
        start = next(function._sequence)  # nodes made before it belong to an outside graph
        casts = autocast.state.cache
        try:
            with Capturing(recorder):
                # autocast's casts of the weights, kept for a region's later ops, would enter
                # the program as constants made by an earlier call: the recording makes its own
                autocast.state.cache = None
                result = self.eager(*_replaced(args, copies), **_replaced(kwargs, copies))
        except RecordingElsewhere:  # eagerly, with an eager backward (see Capturing)
            return self.eager(*args, **kwargs)
        finally:
            autocast.state.cache = casts
        try:
            recorder.check_kept()  # (a lenient recorder's refusal)
            _refuse_changed_copies(arguments, copies, self.name)
            # stacklevel: past this, __call__ and the wrappers
            stores = outer.check_state(
                state,
                before,
                f"{self.name}.forward",
                stacklevel=3 + self.wrappers,
                made=recorder.made,
            )
            refuse_reading_stored_over(recorder, stores)
            made, build = _outputs(result, recorder, tensors, copies, stores)
            # A tensor the forward stored with a graph (``self.log_q``, read by a loss outside)
            # hangs from the node too, as a returned one: its gradient reaches the parameters.
            differentiable = [i for i, t in enumerate(made) if t.requires_grad]
            values = _python_values(result)
            # (refused now: gradients through such tensors bypass the node, into the
            # parameters by other paths than eagerly, so their sums would differ in order)
            forward = type(self.module).forward if self.is_module else self.module
            refuse_tensors_in_objects(values[1:], f"{self.name}.forward", forward, recorder.made)
            stored = [(id(obj), key) for obj, key, *_ in stores]
            recording = Recording(recorder, build, differentiable, values, outer, stored, arguments)
            recording.requires_grad_set = [
                (i, t.requires_grad) for i, t in enumerate(arguments) if t.requires_grad != flags[i]
            ]
            recording.retained = [i for i, c in _copied(arguments, copies) if c._retains]
            recording.hooks = [(i, h) for i, c in _copied(arguments, copies) for h in c._hooked]
            outputs, split = [recorder.number[id(t.array)] for t in made], len(recorder.steps)
            arrays = tuple(t.array for t in made)
            if not differentiable:
                recording.compile(inputs, outputs, split)
                self._finished(key, recording)
                _put_back(stores)  # (not before a JitError: the forward's stores stay)
                return recording.attach(arrays, (), tensors)
            heads = [made[i] for i in differentiable]
            targets, parents = _targets(heads, start, tensors, copies, self.name)
            copied = {id(copy) for copy in copies.values()}
            recording.pending = _PendingBackward(
                recording,
                heads,
                [t for t in targets if id(t) not in copied],
                targets,
                parents,
                inputs,
                outputs,
                split,
                lambda finished: self._finished(key, finished),
                state,
                lambda why: self.give_up(key, why),
            )
            recording.parents = parents
            _put_back(stores)
            return recording.attach(arrays, (), tensors)
        except JitError as error:
            _join(arguments, copies, self.name)  # (fullgraph too: as eagerly)
            caller = {id(c): c._caller for c in copies.values()}
            if self.is_module:
                _stored_back(self.module, caller)
            if self.fullgraph:
                raise
            self.give_up(key, str(error))
            if not caller:
                return result
            return rebuild(result, lambda t: lambda: caller.get(id(t), t))()  # (x returned)

    def give_up(self, key: Any, why: str) -> None:
        """Run the calls of guard key ``key`` eagerly from now on (``jitted.give_up``)."""
        give_up(self, key, why, f"{self.name}.forward", stacklevel=4 + self.wrappers)

    def _finished(self, key: Any, recording: Recording) -> None:
        """Keep a compiled recording: the first of its variant, or the second, which must
        agree with the first (a Python branch on tensor data would be frozen otherwise)."""
        for training in (True, False):  # a backward ran: gradients are wanted again
            self.unfinished.pop((key, training), None)
        drop_stale(self)
        recordings = self.recordings.setdefault(key, [])
        for index, other in enumerate(recordings):
            if other.same_variant(recording):
                if not other.holds():  # made for a tensor or global since rebound: replaced
                    recordings[index] = recording
                elif not other.checked:
                    name = f"{self.name}.forward"
                    forward = type(self.module).forward if self.is_module else self.module
                    _check_same(other, recording, name)
                    _check_same_stores(other, recording, name)
                    _check_same_values(other.values, recording.values, name, forward)
                    recording.checked, recordings[index] = True, recording
                    forget_comparison(recording)
                return
        recordings.append(recording)


def _put_back(stores: list) -> None:
    """Put back the tensors that the recorded forward's stores replaced: ``build`` makes this
    call's result too, reading them (``_stored_over``) before it stores the new ones again."""
    for obj, key, _, old in stores:
        if isinstance(old, Tensor):
            (obj if isinstance(obj, dict) else vars(obj))[key] = old


def _parameters(module: Any) -> list:
    """``list(module.parameters())`` in another order (each module's own, then its
    children's), without the generators and the names: it runs on every call."""
    found: dict[int, Tensor] = {}
    modules = [module] if isinstance(module, Module) else []  # (a function has none)
    for m in modules:  # (the list grows while it is walked)
        if m is not None:  # a child set to None
            for p in m._parameters.values():
                if p is not None:
                    found[id(p)] = p
            modules += m._modules.values()
    return list(found.values())


def _identities(pairs: list[tuple[int, Tensor]]) -> list[tuple[int, int]]:
    """``(index, tensor)`` pairs with each tensor's id, to compare."""
    return [(i, id(t)) for i, t in pairs]


def _part(recorder: Recorder, steps: list) -> Recorder:
    """The recorder with only ``steps``, for ``program.compile`` (values keep their numbers,
    sizes and memory)."""
    part = copy.copy(recorder)
    part.steps = steps
    return part


def _replaced(tree: Any, copies: dict) -> Any:
    """``tree`` (tuples, lists and dicts, nested) with the tensors in ``copies`` replaced by
    their copy."""
    if isinstance(tree, Tensor):
        return copies.get(id(tree), tree)
    if type(tree) in (tuple, list):
        return type(tree)(_replaced(item, copies) for item in tree)
    if type(tree) is dict:
        return {key: _replaced(value, copies) for key, value in tree.items()}
    return tree


class _Argument(Tensor):
    """A copy of a compiled call's argument that requires grad (``_caller``), as a recorded
    or given-up forward sees it (see ``_copy``), hanging from its ``Alias`` node (``_node``).
    What the forward reads or sets of its autograd state is the caller's, as eagerly:
    ``is_leaf``, ``grad_fn`` (until the forward changes it in place), ``.grad``,
    ``requires_grad_(False)`` on a leaf, ``detach_()``, a deep copy, ``retain_grad()`` and
    ``register_hook`` (noted in ``_retains`` and ``_hooked``: each replay does them again).
    Replays never make one: these cost nothing there."""

    __slots__ = ("_caller", "_node", "_retains", "_hooked")

    @property
    def grad_fn(self):
        return self._caller.grad_fn if self._ctx is self._node else Tensor.grad_fn.fget(self)

    grad = property(
        lambda self: self._caller.grad,
        lambda self, grad: setattr(self._caller, "grad", grad),
        lambda self: delattr(self._caller, "grad"),
    )

    def _set_requires_grad(self, requires_grad: bool) -> None:
        """On a leaf's copy (not changed in place), the leaf's flag as eagerly; the copy then
        leaves its node (the forward's uses of it need no gradient) or joins it again."""
        if self._caller._ctx is not None or not _on_node(self):
            Tensor._set_requires_grad(self, requires_grad)  # (a non-leaf's: PyTorch's error)
            return
        self._caller.requires_grad = requires_grad  # (its checks, then the copy's state)
        self._ctx, self._requires_grad = (self._node if requires_grad else None), requires_grad

    requires_grad = property(Tensor.requires_grad.fget, _set_requires_grad)

    def detach_(self) -> Tensor:
        """The caller is detached too, as eagerly: a non-leaf's cut from its graph, which
        no replay could do, gives the recording up (a graph break)."""
        if self._caller._ctx is not None:
            _refuse_in_forward(
                "x.detach_() on an argument with a graph (it cuts it)", "Detach a copy (x.detach())"
            )
        self._caller.detach_()  # (a view raises PyTorch's error)
        return Tensor.detach_(self)

    def __deepcopy__(self, memo: dict) -> Tensor:
        return copy.deepcopy(self._caller, memo)  # (a non-leaf's raises PyTorch's error)

    def retain_grad(self) -> None:
        if self.requires_grad:  # (else PyTorch's error)
            self._caller.retain_grad()  # (changed in place: _join gives it the change's node)
            self._retains = True
        else:
            Tensor.retain_grad(self)

    def register_hook(self, hook: Callable) -> Callable:
        """On the caller's tensor, which the engine gives its whole gradient (its uses
        outside the call too), as eagerly; on the copy, once the forward changed it in place
        (``_join`` gives the caller that node)."""
        if self._ctx is not self._node:
            return Tensor.register_hook(self, hook)
        if not _holds_no_call_values(hook):
            _refuse_in_forward(
                "x.register_hook(hook) on an argument, the hook holding values of the call "
                "(a closure over them, defaults), which a replay would register again",
                "Register a hook of the gradient alone (or of the module), or register it on "
                "the argument outside the module",
            )
        self._hooked.append(hook)
        return self._caller.register_hook(hook)


def _holds_no_call_values(hook: Callable) -> bool:
    """Whether registering ``hook`` again at a replay does what registering the call's own
    did: a function (or a module's method) holding nothing but modules in its closure."""
    function = getattr(hook, "__func__", hook)
    if getattr(hook, "__self__", None) is not None and not isinstance(hook.__self__, Module):
        return False
    if type(function) is not FunctionType or function.__defaults__ or function.__kwdefaults__:
        return False
    return all(_holds_a_module(cell) for cell in function.__closure__ or ())


def _holds_a_module(cell: Any) -> bool:
    try:
        return isinstance(cell.cell_contents, Module)
    except ValueError:  # an empty cell, which the call fills after registering the hook
        return False


def _refuse_in_forward(what: str, instead: str) -> None:
    """The recorder's refusal (a graph break; a ``JitError`` under ``fullgraph``), if it is
    still recording."""
    if capture_hook.recorder is not None:
        capture_hook.recorder.refuse(what, instead)


def _copy(t: Tensor) -> _Argument:
    """``t`` as a recorded forward sees it: its memory, layout and version counter
    (``t.detach()``), hanging from an ``Alias`` node whose parent, ``t``'s graph, is cut
    (kept in ``link``), so that the recorded backward stops there and never runs the caller's
    graph or its hooks. A call given up joins it back (``_join``): its result is then the
    eager graph itself, through one node more. (Not a leaf, as an argument once entered: an
    in-place change of a non-leaf argument raised where eager allows it; a leaf's copy answers
    ``is_leaf`` as its caller, see ``_Argument``.)"""
    plain, copy = t.detach(), Tensor.__new__(_Argument)
    for name in _SLOTS:
        if hasattr(plain, name):
            setattr(copy, name, getattr(plain, name))
    with enable_grad():  # (a forward under no_grad may enable grad itself)
        node = Alias.apply(t)._ctx
    node.link, node.parents = node.parents, (None,)
    copy._ctx, copy._requires_grad = node, True
    copy._caller, copy._node, copy._retains, copy._hooked = t, node, False, []
    return copy


_SLOTS = [name for name in Tensor.__slots__ if name != "__weakref__"]


def _on_node(copy: _Argument) -> bool:
    """Whether ``copy`` hangs from its ``Alias`` node, or from none (it stopped requiring
    grad): not changed in place."""
    return copy._ctx is copy._node or copy._ctx is None


def _copied(arguments: list, copies: dict) -> list[tuple[int, _Argument]]:
    """The indices of the arguments that entered as copies, with their copy."""
    return [(i, copies[id(t)]) for i, t in enumerate(arguments) if id(t) in copies]


def _changed(arguments: list, copies: dict) -> list:
    """The arguments whose copy the forward changed in place with a graph (it then hangs
    from the change's node, no more from its ``Alias``; one that stopped requiring grad
    hangs from none), with their copy."""
    return [(t, c) for t in arguments if (c := copies.get(id(t))) is not None and not _on_node(c)]


def _refuse_changed_copies(arguments: list, copies: dict, name: str) -> None:
    """Raise a ``JitError`` if the forward changed an argument that requires grad in place
    (``h.mul_(2)``): eagerly the caller's tensor then hangs from that change's node, which no
    replay could give it. The call is then given up (``_join`` gives it that node)."""
    for t, c in _changed(arguments, copies):
        raise JitError(
            f"scratchgrad.compile: {name}.forward (called at {user_line()}) changes its "
            f"argument of shape {tuple(t.shape)}, which requires grad, in place "
            f"({c._ctx.name()}): a replay could not give the caller's tensor the graph "
            "of that change. Change a copy (h = h.mul(2)), or call the module without compile"
        )


def _join(arguments: list, copies: dict, name: str) -> None:
    """Join the copies of a given-up call's arguments back to the arguments' graphs, so that
    its result is the eager graph; as eagerly, an argument the forward changed in place hangs
    from the change's node. An argument that is a view, or has views, changed in place
    raises: eagerly, its base's graph and its views' would be taken again from the change."""
    for c in copies.values():
        c._node.parents = c._node.link
    for t, c in _changed(arguments, copies):
        if hasattr(t, "_view") or any(True for _ in getattr(t, "_views", ())):
            raise RuntimeError(
                f"scratchgrad.compile: {name}.forward changed its argument of shape "
                f"{tuple(t.shape)}, a view or a tensor with views, in place (its values are "
                "changed) in a call given up (a graph break): its base's and views' graphs "
                "cannot be taken again from that change. Change a copy (h = h.mul(2)), or "
                "call the module without compile"
            )
        t._take_node(c._ctx)


def _stored_back(module: Module, caller: dict) -> None:
    """Where a given-up forward stored an argument's copy (``self.last = x``), the caller's
    tensor instead (``caller``: by the copy's id), as eagerly: in its modules' attributes, and
    the lists and dicts they hold."""
    for part in module.modules():
        attributes = vars(part)
        for holder in (attributes, *(v for v in attributes.values() if type(v) in (dict, list))):
            for key in range(len(holder)) if type(holder) is list else list(holder):
                if id(holder[key]) in caller:
                    holder[key] = caller[id(holder[key])]


def _outputs(
    result: Any, recorder: Recorder, tensors: list, copies: dict, stores: list
) -> tuple[list, Any]:
    """The tensors of ``result`` made by the forward, and ``build(made, tensors)`` rebuilding
    ``result``'s structure from new such tensors and a call's tensors: an argument returned
    as it is comes back as that call's; a tensor not made in the forward (a parameter) as
    itself. The tensors of ``stores`` (see ``Outer.check_state``) follow those of ``result``
    among the made ones, and ``build`` stores them as the recorded forward did."""
    made: list[Tensor] = []
    argument = {id(t): i for i, t in enumerate(tensors)}
    argument.update({id(copy): argument[key] for key, copy in copies.items()})
    number = recorder.number
    replaced = _stored_over(stores)

    def leaf(t: Tensor) -> Callable:
        index = argument.get(id(t))
        if index is not None:
            return lambda new, call: call[index]
        if id(t.array) not in number:  # a parameter: itself (one stored over: _stored_over)
            return replaced.get(id(t), lambda new, call: t)
        position = len(made)
        made.append(t)
        stride = own_layout(t)
        if stride is not None:  # a clone of a transposed view: transposed again, as eagerly
            return lambda new, call: laid_out(new[position], stride)
        return lambda new, call: new[position]

    build = rebuild(result, leaf)
    if not stores:
        return made, build
    stored = rebuild([tensor for _, _, tensor, _ in stores], leaf)
    both = lambda new, call: (build(new, call), stored(new, call))  # noqa: E731
    return made, _storing(both, [(obj, key) for obj, key, *_ in stores])


def _targets(heads: list, start: int, tensors: list, copies: dict, name: str) -> tuple:
    """The leaves and arguments' copies a backward from ``heads`` reaches, to differentiate
    (the arguments and parameters in their order, then tensors the forward reached by name),
    and for each, the parent the node gets: the argument's index, or the tensor itself."""
    reached: dict[int, Tensor] = {}
    copied = {id(copy._node): copy for copy in copies.values()}  # (none changed in place)
    stack = [h._ctx for h in heads]
    seen = set(map(id, stack))
    while stack:
        node = stack.pop()
        if node.sequence_nr < start:
            raise JitError(
                f"scratchgrad.compile: {name}.forward (called at {user_line()}) uses a tensor "
                "that requires grad and was made by operations outside it (a non-leaf reached "
                "by name, not passed as an argument): a recorded backward cannot follow that "
                "graph on later calls. Pass it as an argument, or call the module without "
                "compile."
            )
        for parent in node.parents:
            if isinstance(parent, Tensor):
                reached[id(parent)] = parent
            elif id(parent) in copied:
                reached[id(parent)] = copied[id(parent)]
            elif parent is not None and id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    targets, parents = [], []
    for index, t in enumerate(tensors):
        key = id(copies[id(t)]._node) if id(t) in copies else id(t)
        if key in reached:
            targets.append(reached.pop(key))
            parents.append(index)
    for leaf in reached.values():  # neither an argument nor a parameter: reached by name
        targets.append(leaf)
        parents.append(leaf)
    return targets, parents


def _number_of_gradient(recorder: Recorder, g: Tensor, name: str) -> int:
    """The value number of a gradient the recorded backward computed."""
    number = recorder.number.get(id(g.array))
    if number is None:
        raise JitError(
            f"scratchgrad.compile: a gradient of {name}() was not computed by the recorded "
            f"backward (it is a constant), in the backward() at {user_line()}; call the "
            "module without compile"
        )
    return number
