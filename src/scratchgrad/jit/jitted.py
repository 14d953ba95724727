"""``jit(fn)``: run ``fn`` eagerly once, record it on the next two calls (which must agree),
replay the recording after.

A recording is kept per *guard key*: the structure of the arguments, each tensor's shape,
dtype, device, layout, requires_grad and hooks, the other arguments' values, grad mode and
autocast's dtype; and per variant, the train/eval mode of every module the step called, the
arrays, requires_grad and hooks of the leaves it reached by name, the objects its globals
and closure held (see ``Outer``), and no attribute set since on the modules it held (see
``ModuleStamps``). A call that matches no recording records a new one (up to ``cache_size``
per function; past it, a warning and eager calls).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import dis
import functools
import inspect
import operator
import random
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

from scratchgrad import backend
from scratchgrad.amp.grad_scaler import GradScaler
from scratchgrad.autograd import anomaly, autocast, capture_hook, forward_ad
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import InferenceCounter
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.backend import xp
from scratchgrad.jit import guards, kernels, program, updates
from scratchgrad.jit.recorder import (
    ALREADY_RUN,
    Capturing,
    JitError,
    ModuleStamps,
    Recorder,
    RecordingElsewhere,
    refuse_rebound_leaves,
    unchanged,
    users_file,
)
from scratchgrad.nn.module import Module
from scratchgrad.optim.lr_scheduler import LRScheduler
from scratchgrad.optim.optimizer import Optimizer
from scratchgrad.tensor import Tensor, laid_out, own_layout


class Recording:
    """One program and what it needs to be replayed: the modules whose train/eval mode it
    assumed, and how to rebuild the returned structure from its output arrays. Made with
    no program: ``compile`` makes it once the recording is checked (see ``Jitted.__call__``)."""

    def __init__(
        self,
        recorder: Recorder,
        build: Callable,
        values: list,
        outer: Outer,
        flipped: list,
        stored: list[tuple[int, Any]],
    ) -> None:
        self.replay: Callable | None = None
        # its guards and replay in one, made at its first replay (see guards.py)
        self.fast: Callable | None | object = guards.UNMADE
        # (index, flag) of the tensor arguments whose requires_grad the step set (an
        # adversarial input's x.requires_grad_()): Python, which each replay makes again
        self.requires_grad_set = flipped
        self.source: str | None = None
        self.build = build
        # where the step stored tensors it made (see Outer.check_state), to compare
        self.stored = stored
        self.values = values  # the Python values returned, which every replay returns again
        self.constants, self.places = recorder.constants, recorder.places
        self.calls, self.call_places = recorder.calls()  # what was seen, and where
        self.checked = False  # recorded twice with the same result (see Jitted.__call__)
        self.modules, self.training = recorder.guarded_modes()
        self.stamps = ModuleStamps(
            [*recorder.modules_held(), *outer.modules],
            self.modules,
            self.training,
            recorder.optimizers,
        )
        self.reached = list(recorder.reached.values())
        self.grads_read = list(recorder.grads_read.values())  # (leaf, its .grad the step read)
        self.outer = outer  # the objects of the step's closure and globals it was recorded for
        # watched by the next recording (see Recorder.watch)
        self.watched = ([leaf for leaf, *_ in self.reached], recorder.optimizers)
        # (index, tensor) of the tensor arguments the step also reaches by name (see
        # _named_arguments): valid only for calls that pass those same tensors there
        self.named_arguments: list[tuple[int, Tensor]] = []
        # (index, values) of the tensor arguments whose values the step read into Python
        # (a packed batch's sizes): valid only for calls passing those values there
        self.values_read = list(recorder.values_read.items())

    def compile(self, source: str, namespace: dict) -> None:
        """Make the program from its source and globals (``program.generate``) and the
        optimizer updates it calls; what only the check needed is let go first (see
        ``forget_comparison``: the program's globals hold its constants)."""
        made = [c for c in self.constants.values() if isinstance(c, updates.Update)]
        forget_comparison(self)
        self.replay, self.source = updates.define(source, namespace, "replay"), source
        for update in made:
            update.compile()
        self.checked, self.watched = True, ((), ())

    def matches(self, tensors: list) -> bool:
        """Whether every module the recording called is in the train/eval mode it had then
        and had no attribute set since (see ``ModuleStamps``), every leaf it reached by name
        has the array, requires_grad and hooks it had, each ``.grad`` it read is still its
        leaf's, the names it read from its closure and globals hold the same objects, the
        call's ``tensors`` are the ones it passed where it also reached them by name, and
        hold the values it read from them (see ``Recorder.read_values``)."""
        return (
            self.stamps.hold()
            and unchanged(self.reached)
            and all(leaf.grad is grad for leaf, grad in self.grads_read)
            and self.outer.unchanged()
            and all(tensors[i] is t for i, t in self.named_arguments)
            and (not self.values_read or values_hold(self.values_read, tensors))
        )


def forget_comparison(recording: Any) -> None:
    """Let go of what only the comparison of a checked ``recording`` (a jitted function's or
    a compiled module's) with its first recording read (``_check_same``,
    ``_check_same_stores``): its recorded calls, where they and its constants came from, its
    constants (its program's globals hold them) and where it stored tensors. A checked
    recording is never compared again (a later one of its signature is recorded when it no
    longer matches, and compared with its own first recording)."""
    recording.calls, recording.call_places, recording.places = "", (), {}
    recording.constants, recording.stored = {}, ()


class Outer:
    """The objects a function reads from its closure and its globals (but Python modules), by
    the name it reads them under: a recording holds them, so a call after one is bound to a
    new object (``opt = SGD(...)``, ``model = Net()``, ``scales = (1.0, 3.0)``, ``clip =
    1.0`` after None, another enum member or function) must record anew. So must a call
    after a plain value read there changed (a number, a flag, a string: ``if epoch >
    warmup``; compared by value), or one read into a dict or an object held there, however
    deep (``settings["scale"]``, ``cfg.loss.scale``, a class's ``CFG.lr``, a jitted method's
    ``self.epsilon``, a config passed as an argument: see ``_walk`` and ``entries``), since
    the recording froze it. Read from the function's code (and the functions defined in
    it), and, two levels deep, from the user's functions it reaches: helpers it reads by
    name or from the user's modules, the methods and properties of the user's objects it
    calls or reads (``self.loss_of(x)``, ``scaler.scale(x)``), the forwards and hooks of
    its modules, and the gradient hooks of their parameters and of the tensors it reads;
    what such a function reads from its parameters is read from each object held (see
    ``_read``). Not followed: libraries' functions. ``modules``: the modules among them,
    and the module ``fn`` is (a Module given to jit) or is a method of. ``state``: the
    Python objects among them that a step may change in place and a replay would not (a
    list it appends to, a dict, an object of the user's class: see ``python_state`` and
    ``check_state``)."""

    HELD = (Tensor, Module, Optimizer, LRScheduler)  # (the objects recordings watch besides)
    PLAIN = guards.PLAIN  # compared by type and value (see _holds)
    DEPTH = 2  # the levels of helper functions followed
    # generators of random numbers other than scratchgrad's, whose draws a replay would reuse
    GENERATORS = (random.Random, xp.random.Generator, xp.random.RandomState)

    def __init__(self, fn: Callable, args: tuple = (), kwargs: dict | None = None) -> None:
        function, bound = _unwrap(fn)
        passed, defaults = _passed(fn, args, kwargs or {})  # (their reads: cfg.scale)
        self.cells: list[tuple[Any, Any]] = []  # (cell, what it held)
        self.draws: list[str] = []  # the names of other generators read (see GENERATORS)
        # (container, "item" or "attr", key, value, the code reading it) for each value read
        # by a constant key from a dict, or from an object's own attributes (see _note_entry)
        self.entries: list[tuple[Any, str, Any, Any, str]] = []
        # each global name read, with the globals it is read from and what it held
        self.scopes: list[dict] = []
        self.names: list[str] = []
        self.values: list = []
        self.state: list[tuple[str, Any, Any]] = []  # (see _note_state)
        # (object, what it held): what getattr reads by a computed name from (see _walk), and
        # after the recording, the containers it reads (see check_state)
        self.contents: list[tuple[Any, tuple]] = []
        for name, value in bound.items():  # (self, or what a functools.partial binds)
            self._note_state("{name!r}, bound to it ({kind})", name, value)
        for name, value in passed.items():
            self._note_state(_ARGUMENT, name, value)
        for name, value in defaults.items():  # the same object at every call, as a global
            self._note_state("its default argument {name!r} ({kind})", name, value)
        passed.update(defaults)
        # (parameter, path, depth): what helpers read from their parameters (see _read)
        self._passed_reads: list[tuple[str, tuple, int]] = []
        seen: set = set()
        if function is not None:
            self._read(function, self.DEPTH, seen, {**bound, **passed})
        held = [*bound.values(), *passed.values(), *self.values]
        held += [value for _, value in self.cells]
        held += [value for *_, value, _ in self.entries]  # self.q of an agent
        # A helper's parameter may be any object the step holds: read each one so (more may be
        # guarded than is read). Its reads may follow more helpers, whose reads come after.
        objects = [value for value in held if _is_state(value)]
        for name, path, depth in self._passed_reads:
            for value in objects:
                self._walk(value, name, path, depth, seen)
        self.modules = [value for value in held if isinstance(value, Module)]
        tensors = [value for value in held if isinstance(value, Tensor)]
        for module in self.modules:  # (their attributes: see _contents)
            for inner in module.modules():
                self._watch("an attribute of its {kind} module", None, inner)
                # read as helpers: the forwards of the user's modules (self.config.dropout)
                # and the hooks, forward and backward
                self._from_class(inner, "forward", "forward", self.DEPTH, seen)
                hooks = (*inner._forward_pre_hooks, *inner._forward_hooks)
                for hook, _ in (*hooks, *inner._backward_pre_hooks, *inner._backward_hooks):
                    self._follow(hook, self.DEPTH, seen)
            tensors += module.parameters()
        for tensor in tensors:  # and their gradient hooks (p.register_hook(clip_to(cfg)))
            for hook in tensor._hooks:
                self._follow(hook, self.DEPTH, seen)

    def _read(
        self, fn: types.FunctionType, depth: int, seen: set, bound: dict, shown: str = ""
    ) -> None:
        """Note what ``fn`` holds in its closure and reads from its globals, and from the
        objects ``bound`` to its parameters by name (a method's instance: ``self.epsilon``,
        read as from a global; what a ``functools.partial`` binds); follow the user's
        functions it reaches ``depth`` levels more (see ``_walk``). ``shown``: how the step
        names the instance of a method followed (``sched`` for ``self``, in errors)."""
        seen.add(_seen(fn, bound))
        cells = {**self._read_closure(fn), **bound}
        scope = fn.__globals__
        parameters = fn.__code__.co_varnames[: _parameters(fn.__code__)]
        # a helper's parameters the step passes objects to (helper(self, x), loss_of(cfg, y)):
        # what it reads from them is read from each object the step holds (see __init__)
        unbound = () if depth == self.DEPTH else tuple(p for p in parameters if p not in bound)
        loaded = _loads(fn.__code__, (*bound, *unbound))
        for free, name, path in loaded:
            if free and name in unbound and name not in cells:
                if path:
                    self._passed_reads.append((name, path, depth))
                continue
            if free and name not in cells:  # a local of fn that a nested function reads
                continue
            value = cells[name] if free else scope.get(name)
            if not free and self._draws(value):  # RNG.random(): named so
                self.draws.append(f"{name}.{path[0][1]}" if path else name)
            self._walk(value, shown if shown and name in bound else name, path, depth, seen)
            if free:  # a loss function of the enclosing function (globals': below)
                self._follow(value, depth, seen)
        for name in dict.fromkeys(name for free, name, _ in loaded if not free):
            value = scope.get(name)
            self._note_state("the global {name!r} ({kind})", name, value)
            held = name in scope and not isinstance(value, types.ModuleType)  # (not a builtin)
            if held and not self._reads(scope, name):
                self.scopes.append(scope)
                self.names.append(name)
                self.values.append(value)
            self._follow(value, depth, seen)
        if "super" in fn.__code__.co_names and parameters and parameters[0] in bound:
            self._read_super(fn, cells.get("__class__"), bound[parameters[0]], depth, seen)

    def _read_super(
        self, fn: types.FunctionType, owner: Any, obj: Any, depth: int, seen: set
    ) -> None:
        """Follow the methods of ``obj``'s classes after ``owner`` (the class defining ``fn``)
        that ``fn`` may call through ``super()`` (each name it loads), as methods of ``obj``."""
        mro = type(obj).__mro__
        if not (depth and owner in mro):
            return
        later = mro[mro.index(owner) + 1 :]
        for name in fn.__code__.co_names:
            method = next((vars(c)[name] for c in later if name in vars(c)), None)
            if isinstance(method, types.FunctionType) and _users_function(method):
                bound = {method.__code__.co_varnames[0]: obj}
                if method.__code__.co_argcount and _seen(method, bound) not in seen:
                    self._read(method, depth - 1, seen, bound)

    def _walk(self, value: Any, code: str, path: tuple, depth: int, seen: set) -> None:
        """Guard each step of ``path`` read from ``value`` (``code`` names it): the attributes
        and the items by constant keys read in a row (``cfg.loss.scale``, ``self.opt``,
        ``settings["loss"]["scale"]``), each as an entry of the object it is read from (see
        ``_note_entry``), or read on through it (a model's submodule, an optimizer's list of
        groups: ``opt.param_groups[0]["lr"]``). A step not read so (``_read_on``) stops the
        walk: a method there (``agent.act(x)``, ``self.loss_of(x)``) or a property's getter
        is followed as the user's function it is, reading its object's attributes as
        ``self``'s; so are a custom ``autograd.Function``'s forward and backward
        (``Scale.apply(x)``)."""
        for at, (access, key) in enumerate(path):
            if access == "each":  # for group in cfg.groups: what each item is read for
                if type(value) in (list, tuple) and len(value) <= _MOST_ITEMS:
                    for item in value:
                        self._walk(item, f"{code}[...]", path[at + 1 :], depth, seen)
                return
            if access == "contents":  # getattr(cfg, name): all it holds
                if _is_state(value) and not isinstance(value, Module):
                    self.contents.append((value, _contents(value)))
                return
            absent = access == "attr?"  # getattr(cfg, "scale", 1.0): its absence too
            access = "attr" if absent else access
            code = f"{code}.{key}" if access == "attr" else f"{code}[{key!r}]"
            found = _read_on(value, access, key)
            if found is _MISSING and access == "attr" and not isinstance(value, type):
                found = self._from_class(value, key, code, depth, seen)
            if isinstance(value, type) and issubclass(value, Function):  # Scale.apply(x)
                for name in ("forward", "setup_context", "backward"):  # (staticmethods)
                    self._follow(getattr(value, name), depth, seen)
            if found is _MISSING:
                if absent and hasattr(value, "__dict__"):
                    self._note_entry(value, access, key, found, code)
                return
            self._note_entry(value, access, key, found, code)
            if self._draws(found) and not self._draws(value):  # self.rng, np.random
                self.draws.append(code)
            self._follow(found, depth, seen)  # a function of the user's module: losses.mse
            value = found

    def _follow(self, value: Any, depth: int, seen: set) -> None:
        """Read ``value`` too if it is a function of the user's code (a helper the step
        calls: a plain function, a bound method, a ``functools.partial`` of one), ``depth``
        levels down, once."""
        if not (depth and isinstance(value, _FUNCTIONS)):
            return
        function, bound = _unwrap(value)
        if _users_function(function) and _seen(function, bound) not in seen:
            self._read(function, depth - 1, seen, bound)

    def _from_class(self, obj: Any, key: str, code: str, depth: int, seen: set) -> Any:
        """What ``obj.key`` (``code``) reads from ``obj``'s class, its own ``__dict__`` having
        none. A method or a property's getter of the user's code is followed as a method of
        ``obj``, ``depth`` levels down (``_MISSING``: nothing to read on). A plain class
        attribute (``gamma = 0.99``, a default that an instance may later set for itself) is
        guarded on its class, and so is its absence from ``obj``'s ``__dict__``, and
        returned."""
        owner = next((c for c in type(obj).__mro__ if key in vars(c)), None)
        attribute = _MISSING if owner is None else vars(owner)[key]
        if isinstance(attribute, staticmethod):
            self._follow(attribute.__func__, depth, seen)
            return _MISSING
        if isinstance(attribute, property):
            attribute = attribute.fget
        if isinstance(attribute, types.FunctionType):
            followed = _users_function(attribute) or attribute in _GETTERS
            if depth and followed and attribute.__code__.co_argcount:
                bound = {attribute.__code__.co_varnames[0]: obj}
                if _seen(attribute, bound) not in seen:
                    self._read(attribute, depth - 1, seen, bound, code.rpartition(".")[0])
            return _MISSING
        if attribute is _MISSING or hasattr(type(attribute), "__get__"):  # (a descriptor)
            return _MISSING
        if hasattr(obj, "__dict__"):
            self._note_entry(obj, "attr", key, _MISSING, code)  # not set on obj since
        self._note_entry(owner, "attr", key, attribute, code)
        return attribute

    def _read_closure(self, fn: types.FunctionType) -> dict[str, Any]:
        """Note what ``fn``'s closure holds; the values of its cells by name."""
        cells = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                value = cells[name] = cell.cell_contents
            except ValueError:  # empty: bound later in the enclosing function
                continue
            if not isinstance(value, types.ModuleType):
                self.cells.append((cell, value))
            self._note_state("{name!r} of its enclosing function ({kind})", name, value)
            if self._draws(value):
                self.draws.append(name)
        return cells

    def _note_entry(self, container: Any, access: str, key: Any, value: Any, code: str) -> None:
        """Guard ``value``, which ``code`` reads from ``container`` (as a global's: the same
        object, or a plain value of the same type and equal; and what a list or dict there
        holds): a dict's item by a constant key, or an attribute an object holds in its
        ``__dict__`` (not a property, whose getter may do anything; not an ``nn.Module``'s,
        which ``ModuleStamps`` watch, but for the contents of a container there)."""
        if any(c is container and a == access and k == key for c, a, k, *_ in self.entries):
            return
        if access == "item" and type(container) is not dict:  # a list's: its contents are held
            return
        if access == "attr" and not (
            not isinstance(container, _NOT_ENTRIES)
            or _users_module(container)
            or (isinstance(container, type) and _users_class(container))  # class CFG: lr = ...
        ):
            if isinstance(container, Module):  # a list or dict it holds: what that holds
                # (self.scales[0], changed in place where ModuleStamps see no assignment)
                self._note_state("{name} ({kind})", code, value)
            return
        self.entries.append((container, access, key, value, code))
        self._note_state("{name} ({kind})", code, value)

    def _note_state(self, what: str, name: str | None, value: Any) -> None:
        """Watch ``value`` if it is Python state (``_is_state``): ``what`` (a template of
        ``name`` and its ``kind``) says how the step reaches it, in a warning."""
        if _is_state(value):
            self._watch(what, name, value)

    def _watch(self, what: str, name: str | None, value: Any) -> None:
        """Add ``value`` to ``state`` (once) for ``check_state`` (see ``_note_state``)."""
        if all(held is not value for *_, held in self.state):
            self.state.append((what, name, value))

    def python_state(self, args: tuple, kwargs: dict) -> list[tuple[str, Any, Any]]:
        """``state`` and the Python state among a call's arguments (a dict of metrics the step
        stores into): what ``_snapshot`` and ``check_state`` compare around the recording of
        that call. Given away: a recording keeps its Outer, which would hold them as long as
        the program lives, for nothing."""
        given = [*enumerate(args), *kwargs.items()]
        state, self.state = self.state, []
        watched = {id(value) for *_, value in state}  # (an argument read by name already)
        return state + [
            (_ARGUMENT, key, a) for key, a in given if _is_state(a) and id(a) not in watched
        ]

    def check_state(
        self, state: list, before: list, name: str, stacklevel: int, made: Callable | None = None
    ) -> list[tuple[Any, Any, Tensor]]:
        """After a recording: warn if an object of ``state`` (``python_state``) holds other
        contents than ``before`` (its ``_snapshot`` before the step ran). The step changed it
        in place (appended a loss to a list, counted in an attribute), which a replay runs no
        Python to do again. A warning, not an error: counting the recordings so is a way to see
        them. The containers of its globals and closure that it left as they were (a list of
        scales it loops over, a dict of weights) are held with their contents: a call after
        one changed records anew (``unchanged``).

        Where ``made`` says which tensors the step made, an object that changed only by
        having such tensors stored into its attributes or items (``nn.utils.prune``'s hook
        setting ``module.weight``, a forward keeping ``self.attention = weights``, a global
        dict of the last activations) is not warned of: those stores are returned, (object,
        key, tensor, the value it replaced), for each replay to store its own tensors there
        (``_storing``). Not an argument's: the next call's may be another object."""
        now = _snapshot(state)
        same = list(map(_same_contents, before, now))
        stores = []
        if made is not None:
            for i, ((what, _, value), old, new) in enumerate(zip(state, before, now)):
                found = None if same[i] or what is _ARGUMENT else _stores(value, old, new, made)
                if found:
                    stores += found
                    same[i] = None  # (neither changed, nor held with its contents)
        if False in same:
            what, key, value = state[same.index(False)]
            warnings.warn(
                f"scratchgrad.jit: {name}() changed "
                f"{what.format(name=key, kind=type(value).__name__)} while it was recorded: a "
                "replay runs none of its Python, so later calls leave it as it is now. Return "
                "what you keep (a loss to log, a state to carry) and store it after the call, "
                "or run it eagerly (without jit or compile).",
                stacklevel=stacklevel + 1,
            )
        self.contents += [
            (value, held)
            for (what, _, value), held, unchanged in zip(state, now, same)
            if unchanged and what is not _ARGUMENT and isinstance(value, _CONTAINERS)
        ]
        return stores

    def contents_hold(self) -> bool:
        """Whether each container of ``contents`` holds what it held when recorded."""
        return all(_same_contents(held, _contents(value)) for value, held in self.contents)

    @classmethod
    def _draws(cls, value: Any) -> bool:
        """Whether ``value`` draws random numbers outside scratchgrad: Python's or NumPy's
        random module, a generator of theirs or one of its methods (``random.random``)."""
        owner = getattr(value, "__self__", value)
        return value is random or value is xp.random or isinstance(owner, cls.GENERATORS)

    def refuse_random(self, fn: Callable, name: str) -> None:
        """Raise a JitError, before the step runs, if ``fn`` reads a generator of random
        numbers other than scratchgrad's (``random.random() < ratio`` deciding teacher
        forcing): a replay runs no Python, so it would reuse the recording's draws, and a
        branch on them takes the recorded way every time."""
        if self.draws:
            raise JitError(
                f"scratchgrad.jit: {name}() (defined at {_defined_at(fn)}) draws random "
                f"numbers outside scratchgrad ({', '.join(dict.fromkeys(self.draws))}): a "
                "replay runs no Python and would reuse the recording's draws. Draw them with "
                "scratchgrad (sg.rand, sg.randint, dropout: drawn again at each replay), or "
                "draw them outside the function and pass them as arguments."
            )

    def _reads(self, scope: dict, name: str) -> bool:
        """Whether ``name`` of ``scope`` is noted already (read by two of the functions)."""
        return any(s is scope and n == name for s, n in zip(self.scopes, self.names))

    def refuse_rebound(self, fn: Callable, name: str) -> None:
        """Raise a JitError if ``fn``, just recorded, bound one of its names to a new object
        (``global total; total = total + loss``): Python, which a replay would not run. The
        error names the name and where ``fn`` is defined."""
        if self.unchanged():
            return
        read = zip(self.scopes, self.names, self.values)
        names = [f"the global {n!r}" for scope, n, value in read if not _holds(scope.get(n), value)]
        names += [code for *entry, value, code in self.entries if not _holds(_entry(*entry), value)]
        names += [
            f"an attribute of the {type(value).__name__} it reads with getattr"
            for value, held in self.contents
            if not _same_contents(held, _contents(value))
        ]
        what = names[0] if names else "a variable of its enclosing function"
        if "param_groups" in what:  # g["lr"] = g["lr"] * 0.5 in the step
            what += " (set a learning rate with an LR scheduler: its step() is replayed)"
        raise JitError(
            f"scratchgrad.jit: {name}() (defined at {_defined_at(fn)}) binds {what} to a new "
            "object while it reads it: a replay runs no Python assignment and reads no Python "
            f"value again. {ALREADY_RUN} Change the object in place, return the new one, read "
            "the value outside the function (and pass it as an argument), or call the function "
            "without jit."
        )

    def tensors(self) -> list[Tensor]:
        """The tensors read by name: held by the closure or the globals, or read from an entry
        of a dict or an object they hold."""
        held = [*self.values, *(value for _, value in self.cells)]
        held += [value for *_, value, _ in self.entries]
        return [value for value in held if isinstance(value, Tensor)]

    def unchanged(self) -> bool:
        """Whether each cell and name still holds the object the recording was made for."""
        for cell, value in self.cells:
            if not _holds(cell.cell_contents, value):
                return False
        for container, access, key, value, _ in self.entries:
            if not _holds(_entry(container, access, key), value):
                return False
        if self.contents and not self.contents_hold():
            return False
        if not self.names:  # a step reading its model and optimizer from a closure
            return True
        if all(map(operator.is_, map(dict.get, self.scopes, self.names), self.values)):
            return True
        return all(map(_holds, map(dict.get, self.scopes, self.names), self.values))


_FUNCTIONS = (types.FunctionType, types.MethodType, functools.partial)  # (see Outer._follow)
_GETATTR = ("LOAD_GLOBAL", "getattr")  # (see _path)
_PASSES = 3  # over a function's code, at most, to find its locals' bindings (see _loads)
_MISSING = guards.MISSING  # an entry's value where the dict or the object has none
# objects whose attributes are not guarded as entries: Python modules (but the user's own: a
# library's attributes are its state), classes, and the tensors, modules and optimizers that
# recordings watch otherwise. A scheduler's are: a step reading ``sched.last_epoch`` or
# ``sched.get_last_lr()`` (below) while ``sched.step()`` runs between calls.
_NOT_ENTRIES = (types.ModuleType, type, Tensor, Module, Optimizer)
# scratchgrad's methods that return what their object holds, read as the user's methods are
# (see Outer._from_class), so a step reading ``sched.get_last_lr()[0]`` or
# ``scaler.get_scale()`` records anew when the scheduler or the scaler moves on
_GETTERS = frozenset(
    {
        LRScheduler.get_last_lr,
        GradScaler.get_scale,
        GradScaler.get_growth_factor,
        GradScaler.get_backoff_factor,
        GradScaler.get_growth_interval,
        GradScaler.is_enabled,
    }
)


# Python's containers, and its plain objects made to hold attributes (by module and name:
# argparse is not imported for this), which a step may change
_CONTAINERS = (list, dict, set, collections.deque)
_ARGUMENT = "its argument {name!r} ({kind})"  # (how a warning names an argument)
# Longer containers are compared by their length alone: a step reading a list of a data set's
# samples (or a vocabulary) would otherwise compare each item at every call.
_MOST_ITEMS = 256
_BAGS = {("types", "SimpleNamespace"), ("argparse", "Namespace")}


def _is_state(value: Any) -> bool:
    """Whether ``value`` is Python state a step may change in place: a list, dict, set or
    deque, an attribute bag (``SimpleNamespace``, ``argparse.Namespace``), the user's own
    Python module, or an object of a class of the user's code (not a library's, whose
    attributes are its own business; not a tensor, module, optimizer or scheduler, which
    recordings watch otherwise)."""
    kind = type(value)
    if isinstance(value, _CONTAINERS) or (kind.__module__, kind.__qualname__) in _BAGS:
        return True
    if _users_module(value):
        return True
    if isinstance(value, (*_NOT_ENTRIES, *Outer.HELD)) or not hasattr(value, "__dict__"):
        return False
    return _users_class(kind)


def _users_class(kind: type) -> bool:
    """Whether the class ``kind`` is defined in the user's code (a script's, a notebook's)."""
    defined_in = getattr(sys.modules.get(kind.__module__), "__file__", None)
    return users_file(defined_in) if defined_in else kind.__module__ == "__main__"


def _users_function(value: Any) -> bool:
    """Whether ``value`` is a plain function of the user's code (a helper the step calls)."""
    return isinstance(value, types.FunctionType) and users_file(value.__code__.co_filename)


def _snapshot(state: list[tuple[str, Any, Any]]) -> list:
    """What each object of ``state`` (``Outer.python_state``) holds now (see ``_contents``)."""
    return [_contents(value) for *_, value in state]


def _contents(obj: Any, depth: int = 1) -> tuple[tuple, tuple]:
    """What ``obj`` (Python state) holds: a dict's keys and values, the items of another
    container, or an object's attributes and their values (a module's public ones, ``self.
    attention = weights`` set by a forward); and ``depth`` levels down, the same of the
    Python state among them (``history["loss"]``, a list in a dict). Holding them keeps each
    alive, so that no id passes to a new object before the comparison. Tuples, and the empty
    one shared: a recording's peak of small objects is what it adds to the process. A
    container of more than ``_MOST_ITEMS`` is held by its length alone."""
    if isinstance(obj, _CONTAINERS) and len(obj) > _MOST_ITEMS:
        return (len(obj),), ()
    if isinstance(obj, _CONTAINERS) and not isinstance(obj, dict):
        items = tuple(obj)
    else:
        pairs = obj if isinstance(obj, dict) else vars(obj)
        if isinstance(obj, Module):  # what the user set (its tables and mode are watched)
            items = tuple(
                part
                for key, value in pairs.items()
                if key[0] != "_" and key != "training"
                for part in (key, value)
            )
        else:
            items = (*pairs.keys(), *pairs.values())
    inner = tuple(_contents(item, depth - 1) for item in items if _is_state(item)) if depth else ()
    return items, inner


def _stores(obj: Any, before: tuple, now: tuple, made: Callable) -> list | None:
    """The stores of tensors that the step made (``made(tensor)``) into attributes of ``obj``
    (or items of a dict) that explain all its change from ``before`` to ``now`` (its
    ``_contents``), as (obj, key, tensor, the value replaced); None if anything else changed
    (an item removed, a value that is no such tensor, a list appended to)."""
    old, new = _pairs(obj, before[0]), _pairs(obj, now[0])
    if old is None or new is None or not old.keys() <= new.keys():
        return None
    changed = [(key, value) for key, value in new.items() if old.get(key, _MISSING) is not value]
    if not all(isinstance(value, Tensor) and made(value) for _, value in changed):
        return None
    (_, inner), (_, inner_now) = before, now
    if len(inner) != len(inner_now) or not all(map(_same_contents, inner, inner_now)):
        return None
    return [(obj, key, value, old.get(key)) for key, value in changed]


_MISSING = object()


def _pairs(obj: Any, items: tuple) -> dict | None:
    """The keys and values of ``items``, what ``_contents`` found in ``obj``: its attributes
    or a dict's items (None for another container, or one held by its length)."""
    if isinstance(obj, _CONTAINERS) and (not isinstance(obj, dict) or len(obj) > _MOST_ITEMS):
        return None
    if isinstance(obj, Module):
        return dict(zip(items[0::2], items[1::2]))
    half = len(items) // 2
    return dict(zip(items[:half], items[half:]))


def _storing(build: Callable, places: list[tuple[Any, Any]]) -> Callable:
    """``build`` of a replay's ``(result, tensors)``, which stores the tensors where the
    recorded step stored its own (``places``: (object, key); see ``Outer.check_state``), then
    gives the result."""

    def build_and_store(*outputs: Any) -> Any:
        result, tensors = build(*outputs)
        for (obj, key), tensor in zip(places, tensors):
            if isinstance(obj, dict):
                obj[key] = tensor
            else:  # not setattr: a module would count it a change (ModuleStamps)
                vars(obj)[key] = tensor
        return result

    return build_and_store


def _stored_over(stores: list) -> dict[int, Callable]:
    """For each tensor that a store of ``stores`` replaced (``prev = self.last`` before
    ``self.last = y.detach()``), by id, a function reading its place at a replay: a result
    returning it must give what the previous call stored there, not the recording's tensor.
    ``build`` reads it before ``_storing`` stores the replay's own."""
    return {id(old): _reader(obj, key) for obj, key, _, old in stores if isinstance(old, Tensor)}


def refuse_reading_stored_over(recorder: Recorder, stores: list) -> None:
    """Raise a JitError if the step computed with a tensor that one of its ``stores``
    replaced (``y = self.a(x) + self.last; self.last = y.detach()``, an EMA written
    ``self.mean = 0.5 * self.mean + ...``): the program holds it as a constant, and a replay
    would read the recording's tensor forever, not the previous call's."""
    names = recorder.constant_names  # (an op takes a tensor's array, a Function the tensor)
    for obj, key, _, old in stores:
        name = isinstance(old, Tensor) and (names.get(id(old.array)) or names.get(id(old)))
        if name:
            where = f"[{key!r}]" if isinstance(obj, dict) else f".{key}"
            place = recorder.places[name]
            raise JitError(
                f"scratchgrad.jit: {recorder.name}() computes with the tensor in "
                f"{type(obj).__name__}{where} (at {place}) and then stores a new one there: a "
                f"replay would compute with the recording's tensor at every call. {ALREADY_RUN} "
                f"Update it in place instead (`...{where}.mul_(0.5).add_(...)` or "
                f"`...{where}.copy_(...)`, under no_grad()), pass it as an argument and return "
                "the new one, or call the function without jit."
            )


def _reader(obj: Any, key: Any) -> Callable:
    """A function of a replay's results giving what ``obj`` holds at ``key`` (see ``_storing``)."""
    return lambda *_: (obj if isinstance(obj, dict) else vars(obj))[key]


def _same_contents(before: tuple[tuple, tuple], now: tuple[tuple, tuple]) -> bool:
    """Whether two ``_contents`` of one object hold the same objects (or plain values of one
    type and equal), with the same contents of the state among them."""
    (items, inner), (items_now, inner_now) = before, now
    return (
        len(items) == len(items_now)
        and all(map(_holds, items_now, items))
        and len(inner) == len(inner_now)
        and all(map(_same_contents, inner, inner_now))
    )


def _users_module(value: Any) -> bool:
    """Whether ``value`` is a Python module of the user's code (``import config``), whose
    attributes are guarded like an object's; a library's are its own state."""
    return isinstance(value, types.ModuleType) and users_file(getattr(value, "__file__", "") or "")


def _unwrap(fn: Callable) -> tuple[types.FunctionType | None, dict[str, Any]]:
    """The Python function calling ``fn`` runs (None where there is none: a builtin), and
    the objects bound to its parameters before the call, by name: a method's instance, a
    callable object's (a Module's ``forward``, another's ``__call__``), and what
    ``functools.partial`` binds (``partial(train_step, model=model, cfg=cfg)``)."""
    args: list = []
    kwargs: dict[str, Any] = {}
    while isinstance(fn, functools.partial):
        args[:0], kwargs, fn = fn.args, {**fn.keywords, **kwargs}, fn.func
    if isinstance(fn, types.MethodType):
        args.insert(0, fn.__self__)
        fn = fn.__func__
    elif not isinstance(fn, types.FunctionType):
        args.insert(0, fn)
        fn = getattr(type(fn), "forward" if isinstance(fn, Module) else "__call__", None)
        if not isinstance(fn, types.FunctionType):
            return None, {}
    parameters = fn.__code__.co_varnames[: _parameters(fn.__code__)]
    bound = dict(zip(parameters[: fn.__code__.co_argcount], args))
    bound.update((name, value) for name, value in kwargs.items() if name in parameters)
    return fn, bound


def _passed(fn: Callable, args: tuple, kwargs: dict) -> tuple[dict[str, Any], dict[str, Any]]:
    """The objects a call passes to ``fn``, and those its defaults give it, by the names of
    its parameters, but tensors, plain values and the call's containers (the guard key holds
    them and what they hold; a config object is part of it by identity, so what the step
    reads from it is guarded as from a global's). A default's container is kept: the key
    holds only the call's arguments, so what it holds (``def step(x, hp=HPARAMS)`` reading
    ``hp["scale"]``) is guarded as a global's."""
    try:
        called = inspect.signature(fn.forward if isinstance(fn, Module) else fn)
        bound = called.bind(*args, **kwargs)
    except (TypeError, ValueError):  # no signature (a builtin), or a call that will raise
        return {}, {}
    given = set(bound.arguments)
    bound.apply_defaults()  # def step(x, trainer=trainer): its reads, trainer.scale
    passed, defaults = {}, {}
    for name, value in bound.arguments.items():
        if isinstance(value, Tensor) or type(value) in Outer.PLAIN:
            continue
        if name not in given:
            defaults[name] = value
        elif not _is_container(value):  # (the key holds what they hold)
            passed[name] = value
    return passed, defaults


def _seen(fn: types.FunctionType, bound: dict) -> tuple:
    """How ``Outer._read`` knows a function read already: with the same objects bound."""
    return fn, *map(id, bound.values())


def _read_on(value: Any, access: str, key: Any) -> Any:
    """What ``value``'s attribute or item ``key`` holds, read without running code: an
    attribute in its ``__dict__`` (or a module's submodule), a dict's item, a list's or
    tuple's by index (``opt.param_groups[0]``); ``_MISSING`` where there is none so."""
    if access == "attr":
        found = _entry(value, access, key)
        if found is _MISSING and isinstance(value, Module):  # self.encoder.config
            return value._modules.get(key, _MISSING)
        return found
    if type(value) is dict:
        return _entry(value, access, key)
    if type(value) in (list, tuple) and type(key) is int and -len(value) <= key < len(value):
        return value[key]
    return _MISSING


def _entry(container: Any, access: str, key: Any) -> Any:
    """The value an entry of ``Outer.entries`` reads now."""
    if access == "item":
        return container.get(key, _MISSING)
    return getattr(container, "__dict__", {}).get(key, _MISSING)


def _holds(current: Any, value: Any) -> bool:
    """Whether a name still holds what a recording read: the same object, or for a plain
    value (``Outer.PLAIN``, a NumPy number) one of its type equal to it (``epoch = 3``
    bound again, a grad scaler's new scale of the same value; a zero of the same sign, see
    ``guards.negative_zero``), and for a list or tuple one of its type holding the same (a
    scheduler's new list of the same rates at each ``step()``)."""
    if current is value:
        return True
    kind = type(value)
    if type(current) is not kind:
        return False
    if kind in Outer.PLAIN or isinstance(value, xp.generic):
        same_sign = guards.negative_zero(current) == guards.negative_zero(value)
        return bool(current == value) and same_sign
    sequence = kind in (list, tuple) and len(current) == len(value)
    return sequence and all(map(_holds, current, value))


def _loads(code: types.CodeType, arguments: tuple = ()) -> list[tuple[bool, str, tuple]]:
    """Each name ``code`` (and the code nested in it) loads from its globals or, ``free``,
    from a closure or as one of ``arguments`` (a method's ``self``), with the path read from
    it right after: the attributes (``("attr", name)``) and items by constant keys
    (``("item", key)``) read in a row, up to a method (``cfg.loss.scale``: ``(("attr",
    "loss"), ("attr", "scale"))``; ``settings["scale"]``; ``agent.act``). A local variable
    bound to such a read (``loss_cfg = cfg.loss``) continues its path where it is read
    (``loss_cfg.scale``), and so does a loop variable over one (``for group in cfg.groups:``
    then ``group.scale``: ``("each", None)``, each item). A local bound several times is read
    as each of its bindings (a loop may read a later one): what is guarded may be more than
    is read. Not ``co_names``, which also holds the names of attributes (``opt.step()``
    names ``step``, which may be a loop's global)."""
    # (name, argument) pairs, not dis's Instructions (each with its positions and a string
    # of its argument): a recording's memory peaks while it is made
    instructions = [(i.opname, i.argval) for i in dis.get_instructions(code)]
    parameters = code.co_varnames[: _parameters(code)]  # (bound by a call too)
    aliases: dict[str, set] = collections.defaultdict(set)  # local -> the reads bound to it
    for _ in range(_PASSES):  # later passes know the bindings after a read (in a loop)
        loads, known = [], sum(map(len, aliases.values()))
        for i, (op, name) in enumerate(instructions):
            if op == "LOAD_FAST" and name in aliases:
                starts = aliases[name]
            elif op in ("LOAD_GLOBAL", "LOAD_DEREF") or (op == "LOAD_FAST" and name in arguments):
                starts = {(op != "LOAD_GLOBAL", name, ())}
            else:
                continue
            read, at = _path(instructions, i + 1, instructions[i - 1] == _GETATTR)
            each = [op for op, _ in instructions[at : at + 2]] == ["GET_ITER", "FOR_ITER"]
            at += 2 * each  # for group in cfg.groups
            bound_op, bound = instructions[at] if at < len(instructions) else (op, name)
            for free, base, path in list(starts):
                loads.append((free, base, path + read))
                if bound_op == "STORE_FAST" and bound not in parameters:  # loss_cfg = cfg.loss
                    aliases[bound].add((free, base, path + read + (("each", None),) * each))
        if sum(map(len, aliases.values())) == known:
            break
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            loads += _loads(constant)
    return loads


def _path(instructions: list, at: int, in_getattr: bool = False) -> tuple[tuple, int]:
    """The attributes and constant keys read in a row from ``instructions[at]`` on (see
    ``_loads``), and the index of the instruction after them. ``in_getattr``: they are the
    first argument of ``getattr``. Its name, a constant, reads on (``getattr(cfg,
    "loss").scale``; with a constant default, ``("attr?", name)``: its absence is guarded
    too); computed (``getattr(cfg.loss, name)``), it ends the path with ``("contents",
    None)``: all the object holds is guarded."""
    path = []
    while at < len(instructions):
        op, argument = instructions[at]
        if op in ("LOAD_ATTR", "LOAD_METHOD"):
            path.append(("attr", argument))
            at += 1
            if op == "LOAD_METHOD":  # called: nothing is read after it
                break
        elif op == "LOAD_CONST" and instructions[at + 1 : at + 2] == [("BINARY_SUBSCR", None)]:
            path.append(("item", argument))
            at += 2
        elif in_getattr:
            return _getattr_path(instructions, at, path)
        else:
            break
    return tuple(path), at


def _getattr_path(instructions: list, at: int, path: list) -> tuple[tuple, int]:
    """``_path`` on from ``getattr``'s second argument, at ``at``."""
    arguments = []  # the constants before the call, up to its name and default
    while at < len(instructions) and instructions[at][0] == "LOAD_CONST" and len(arguments) < 2:
        arguments.append(instructions[at][1])
        at += 1
    at += instructions[at : at + 1] == [("PRECALL", len(arguments) + 1)]  # (Python 3.11)
    called = instructions[at : at + 1] == [("CALL", len(arguments) + 1)]
    if not (called and arguments and isinstance(arguments[0], str)):
        return (*path, ("contents", None)), at
    access = "attr" if len(arguments) == 1 else "attr?"
    more, at = _path(instructions, at + 1) if access == "attr" else ((), at + 1)
    return (*path, (access, arguments[0]), *more), at


def _parameters(code: types.CodeType) -> int:
    """How many of ``code.co_varnames`` are its parameters (bound by the call)."""
    starred = bool(code.co_flags & inspect.CO_VARARGS) + bool(
        code.co_flags & inspect.CO_VARKEYWORDS
    )
    return code.co_argcount + code.co_kwonlyargcount + starred


class Jitted:
    """The function ``jit`` returns (see ``jit``)."""

    def __init__(self, fn: Callable, cache_size: int = 8) -> None:
        functools.update_wrapper(self, fn)
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)  # a Module has none
        self.fn, self.cache_size = fn, cache_size
        self.recordings: dict[Any, list[Recording]] = {}
        self.calls = 0
        self._warned = False
        self.fast: Callable | None = None  # the last recording replayed's (see guards.py)
        # whether a recording returned tensors with a graph and ran no backward: a forward
        # whose result the caller backpropagates, which replays (detached) cannot serve;
        # ``scratchgrad.compile`` then captures the function as a compiled module's forward
        self.graph_results = False
        self.hint_compile = True  # (not under compile(fn), which captures that backward)
        # compile(fn)'s without fullgraph: what cannot be recorded runs eagerly (``give_up``)
        # instead of raising; guard key -> why its calls run eagerly
        self.lenient = False
        self.given_up: dict[Any, str] = {}

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """As a method decorator: one jitted function per instance (recordings differ)."""
        if instance is None:
            return self
        bound = instance.__dict__.get(self.__name__)
        if not isinstance(bound, Jitted):
            bound = Jitted(self.fn.__get__(instance, owner), self.cache_size)
            instance.__dict__[self.__name__] = bound
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if capture_hook.recorder is not None or capture_hook.paused is not None:
            recorder = capture_hook.recorder or capture_hook.paused
            recorder.refuse(f"calling the jitted function {self.__name__}() (nested jit)")
        self.calls += 1
        if self.fast is not None:
            result = self.fast(args, kwargs)
            if result is not guards.MISS:
                return result
        elif self.calls == 1:  # eagerly, so lazily made state (Adam's moments) exists
            return self.fn(*args, **kwargs)
        if anomaly.enabled:  # eagerly: a replay checks no gradient for NaN
            return self.fn(*args, **kwargs)
        if forward_ad.entered():  # eagerly: a replay's results have no graph to find tangents
            return self.fn(*args, **kwargs)
        tensors, key = _signature(args, kwargs)
        # autocast: other casts; the default dtype: other constants made in the step;
        # inference mode: there a step's `with enable_grad():` records no graph
        modes = (_state.enabled, _state.inference, autocast.state.dtype, backend.default_float)
        key = (key, *modes)
        if key in self.given_up:
            return self.fn(*args, **kwargs)
        recordings = self.recordings.get(key, ())
        for recording in recordings:
            if recording.matches(tensors):
                break
        else:  # a new signature or mode
            self.fast = None  # (it may be a stale recording's, which drop_stale lets go)
            drop_stale(self)
            if cache_full(self, f"scratchgrad.jit: {self.__name__}", stacklevel=2):
                return self.fn(*args, **kwargs)
            result, recording, _ = self._record(key, tensors, args, kwargs)  # to compare
            if recording is not None:
                self.recordings.setdefault(key, []).append(recording)
            return result
        if recording.checked:
            if recording.fast is guards.UNMADE:  # from a call that matched (not the recorded
                # one, whose step may have changed its arguments)
                recording.fast = guards.fast_path(recording, args, kwargs)
            self.fast = recording.fast
            result = recording.build(recording.replay([t.array for t in tensors], tensors))
            for index, flag in recording.requires_grad_set:
                tensors[index].requires_grad = flag
            return result
        # Recorded once: record again and compare, so that a value computed in Python from
        # tensor data (frozen into a recording) is caught, not replayed. The .grad of the
        # call's tensors is watched too (changed by another thread, it would not replay).
        leaves, optimizers = recording.watched
        watched = ([*leaves, *tensors], optimizers)
        result, again, generate = self._record(key, tensors, args, kwargs, watched)
        if again is None:
            return result
        try:
            _check_same(recording, again, self.__name__)
            _check_same_stores(recording, again, self.__name__)
            _check_same_values(recording.values, again.values, self.__name__, self.fn)
        except JitError as error:
            if not self.lenient:
                raise
            give_up(self, key, str(error), f"{self.__name__}()", stacklevel=3)
            return result
        # Compiled now, with the first recording freed, the step's arrays too, and the
        # recorder once the source is made: Python's compiler takes 50-170 KB while it runs.
        recordings[recordings.index(recording)] = again
        del recording
        hand_back_free_memory()
        source = generate()
        del generate  # the last reference to the recorder
        again.compile(*source)
        return result

    def _record(
        self, key: Any, tensors: list, args: tuple, kwargs: dict, watched: tuple = ((), ())
    ) -> tuple[Any, Recording | None, Callable | None]:
        """Call the function under a recorder: its result, its recording (no program yet),
        and the call making its program's source and globals (``program.generate``; it keeps
        the recorder until it is dropped). While another thread records, the function runs
        eagerly instead, without a recording (None, None): see ``Capturing``; so does a
        lenient one that cannot be recorded, whose guard ``key`` is then given up.
        ``watched``: leaves whose ``.grad`` and optimizers whose settings only recorded calls
        may change (see ``Recorder.watch``)."""
        hand_back_free_memory()
        recorder = Recorder(self.__name__)
        recorder.lenient = self.lenient
        recorder.watch(*watched)
        recorder.readable_arguments(tensors)
        inputs = []
        for index, t in enumerate(tensors):
            recorder.arguments.setdefault(id(t), index)
            if t.grad is not None:
                recorder.argument_grads.setdefault(id(t.grad.array), (index, t.grad.array))
            if t.requires_grad and not t.is_leaf:
                recorder.outside_graphs.append(index)
            inputs.append(recorder.input(t.array))
        outer = Outer(self.fn, args, kwargs)
        try:
            outer.refuse_random(self.fn, self.__name__)
        except JitError as error:  # (before the function ran)
            return self._given_up(key, error, lambda: self.fn(*args, **kwargs))
        flags = [t.requires_grad for t in tensors]
        state = outer.python_state(args, kwargs)
        before = _snapshot(state)
        try:
            with Capturing(recorder):
                result = self.fn(*args, **kwargs)
                recorder.check_watched()
        except RecordingElsewhere:
            return self.fn(*args, **kwargs), None, None
        try:
            recorder.check_kept()
            if not recorder.accumulated and any(t.grad_fn is not None for t in _flatten(result)[0]):
                self.graph_results = True
                # (named by the error of a backward through a replay's result)
                if self.hint_compile:
                    capture_hook.detached_results = self.__name__
            refuse_rebound_leaves(recorder)
            outer.refuse_rebound(self.fn, self.__name__)
            stores = outer.check_state(
                state, before, self.__name__, stacklevel=3, made=recorder.made
            )
            refuse_reading_stored_over(recorder, stores)
            del state, before  # (before the recording's tables are made)
            returned, build = _outputs(result, recorder, stores)
            flipped = [
                (i, t.requires_grad) for i, t in enumerate(tensors) if t.requires_grad != flags[i]
            ]
            stored = [(id(obj), name) for obj, name, *_ in stores]
            recording = Recording(recorder, build, _python_values(result), outer, flipped, stored)
            _refuse_shared_arrays(tensors, outer, recorder)
            recording.named_arguments = _named_arguments(tensors, outer, recorder)
        except JitError as error:
            return self._given_up(key, error, lambda: result)
        generate = functools.partial(program.generate, recorder, inputs, returned)
        return result, recording, generate

    def _given_up(self, key: Any, error: JitError, result: Callable[[], Any]) -> tuple:
        """``_record``'s answer where ``error`` was raised: raised again, or for a lenient
        function (compile's) the guard ``key`` given up and the call's ``result()`` (eager's),
        without a recording."""
        if not self.lenient:
            raise error
        give_up(self, key, str(error), f"{self.__name__}()", stacklevel=5)
        return result(), None, None


def values_hold(values_read: list[tuple[int, list]], tensors: list) -> bool:
    """Whether each of the call's ``tensors`` whose values a recording read (``(index,
    values)``) holds those values."""
    return all(tensors[i].array.tolist() == values for i, values in values_read)


def _named(outer: Outer, recorder: Recorder) -> dict[int, Tensor]:
    """The tensors the step reaches by name (by id): a tensor its closure or globals hold, a
    parameter or buffer of a module it calls or holds, a parameter of an optimizer it steps."""
    named = {id(t): t for t in outer.tensors()}
    for module in (*recorder.modules, *outer.modules):
        named.update((id(t), t) for t in (*module.parameters(), *module.buffers()))
    for optimizer in recorder.optimizers:
        named.update((id(p), p) for group in optimizer.param_groups for p in group["params"])
    return named


def _named_arguments(tensors: list, outer: Outer, recorder: Recorder) -> list[tuple[int, Tensor]]:
    """The tensor arguments (index, tensor) that the step also reaches by name (see
    ``_named``). The recording reads such a tensor through the argument both ways, so a call
    passing another there must record anew: replayed, the reads by name would take the other
    tensor's values (and its gradient, theirs)."""
    named = _named(outer, recorder)
    return [(i, t) for i, t in enumerate(tensors) if id(t) in named]


def _refuse_shared_arrays(tensors: list, outer: Outer, recorder: Recorder) -> None:
    """Raise a JitError if a tensor argument is not a tensor the step reaches by name but holds
    the array of one (``step(model.weight.detach())``, ``.data``): the recording takes that
    array for the argument, so a replay would read the next call's argument in the
    parameter's place and add the parameter's gradient to a tensor of its own, not to its
    ``.grad`` (silently: no update)."""
    named = _named(outer, recorder)
    arrays = {id(t.array): t for t in named.values()}
    for i, t in enumerate(tensors):
        if id(t) not in named and id(t.array) in arrays:
            raise JitError(
                f"scratchgrad.jit: tensor argument #{i} of {recorder.name}() holds the array "
                "of a tensor the step also reaches by name (a parameter's `.detach()` or "
                "`.data`): a replay would take the next call's argument for it. "
                f"{ALREADY_RUN} Pass the tensor itself or a copy (`.clone()`), or call the "
                "function without jit."
            )


def hand_back_free_memory() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``; nothing where
    there is none). Done once a step is recorded, before its program is made: the two
    recordings ran the step eagerly, and the memory their arrays took stays resident, free in
    the heap, where the program's compiling and first replay need not land. Without it the
    process's peak RSS rose by 0.1-0.6 MB after the recordings on W3-W5 (the compiler's and
    the first replay's blocks placed beyond the pages the eager calls had used), above an
    eager process's; with it, it stays below (docs/jit.md, Memory)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        return ctypes.CDLL("libc.so.6").malloc_trim
    return None


def drop_stale(owner: Jitted | Any) -> None:
    """Drop the recordings of ``owner`` (a jitted function or a compiled module's forward)
    made before a module they hold was changed: they cannot match again (stamps only grow),
    and would fill its cache."""
    for key, recordings in list(owner.recordings.items()):
        recordings[:] = [recording for recording in recordings if recording.stamps.unchanged()]
        if not recordings:
            del owner.recordings[key]


def cache_full(owner: Jitted | Any, name: str, stacklevel: int) -> bool:
    """Whether ``owner`` (a jitted function or a compiled module's forward) has recorded its
    ``cache_size`` programs; the first time, a warning that new signatures now run eagerly
    (``stacklevel`` names the user's call)."""
    if sum(map(len, owner.recordings.values())) < owner.cache_size:
        return False
    if not owner._warned:
        owner._warned = True
        warnings.warn(
            f"{name} has recorded {owner.cache_size} programs (cache_size): new shapes, "
            "dtypes, modes, argument values (those the step read from integer tensors too: "
            "a packed batch's lengths), values of the globals it reads (a counter "
            "changing at every call) or parameter changes (requires_grad, hooks, new arrays) "
            "now run eagerly",
            stacklevel=stacklevel + 1,
        )
    return True


def give_up(owner: Jitted | Any, key: Any, why: str, name: str, stacklevel: int) -> None:
    """Run the calls of guard key ``key`` of ``owner`` (a compiled function or module's
    forward, not ``fullgraph``) eagerly from now on, as ``torch.compile`` runs what it cannot
    capture (a graph break). ``why``, the ``JitError`` that ``fullgraph=True`` raises, is
    warned of the first time (``stacklevel`` names the user's call)."""
    owner.given_up[key] = why
    owner.recordings.pop(key, None)
    owner.fast = None
    if len(owner.given_up) == 1:
        reason = why.removeprefix("scratchgrad.jit: ").replace(f" {ALREADY_RUN}", "")
        warnings.warn(
            f"scratchgrad.compile: {name} runs eagerly for calls like this one, where "
            f"torch.compile breaks the graph (compile(..., fullgraph=True) raises instead): "
            f"{reason}",
            stacklevel=stacklevel + 1,
        )


def _check_same(first: Recording, second: Recording, name: str) -> None:
    """Raise a JitError if two recordings of one call signature differ: in their code (a
    Python branch decided by tensor data, or by Python state that changes between calls) or
    in a constant (a value computed outside scratchgrad's ops from tensor data, e.g. NumPy
    on ``.array``)."""
    what = None
    if first.calls != second.calls:
        i = _first_difference(_lines(first), _lines(second))
        what = f"different calls ({_call_at(first, i)}, then {_call_at(second, i)})"
    else:
        for key, value in first.constants.items():
            if not _same(value, second.constants[key]):
                if isinstance(value, xp.ndarray):
                    _refuse_array_made_outside(value, first.places[key], name)
                what = f"a different constant ({type(value).__name__}) at {first.places[key]}"
                break
    if what is not None:
        raise JitError(
            f"scratchgrad.jit: {name}() recorded {what} on its second and third calls: a "
            "Python branch or a value computed outside scratchgrad's ops depends on tensor "
            "data or on Python state that changes between calls (random.random(), a counter), "
            f"and a replay would freeze it. {ALREADY_RUN} Compute it with tensor operations, "
            "pass the Python value as an argument (each value records a program of its own), "
            "or call the function without jit."
        )


def _refuse_array_made_outside(array: Any, place: str, name: str) -> None:
    """The JitError of two recordings that differ in an array constant: one no recorded call
    made (NumPy called directly in the step, its random draws too), frozen into the
    program."""
    raise JitError(
        f"scratchgrad.jit: {name}() recorded a different constant (an array of shape "
        f"{array.shape}, {array.dtype}) at {place} on its second and third calls: an array "
        "made outside scratchgrad's ops (by NumPy called in the step: random draws from "
        "np.random or a Generator, values computed from `np.asarray(x)`; then "
        "`sg.from_numpy(a)`, `sg.tensor(a)` or handed to an op) is frozen into the program, "
        f"so every replay would reuse the recording's values. {ALREADY_RUN} Draw random "
        "numbers with scratchgrad's own functions (`sg.rand`, `sg.randn`, `sg.randint`, ...: "
        "each replay draws afresh from the same generator), compute it with tensor "
        "operations, pass the array as an argument (a tensor), or call the function without "
        "jit."
    )


def _check_same_stores(first: Recording, second: Recording, name: str) -> None:
    """Raise a JitError if two recordings stored the tensors they made in other places (see
    ``Outer.check_state``): a replay stores where the kept recording did."""
    if first.stored != second.stored:
        keys = [key for _, key in first.stored], [key for _, key in second.stored]
        raise JitError(
            f"scratchgrad.jit: {name}() stored the tensors it made into other attributes or "
            f"items on its second and third calls ({keys[0]}, then {keys[1]}): a replay stores "
            f"them where the recorded step did, without running Python. {ALREADY_RUN} Store "
            "them in the same places at every call, or after the call."
        )


def _check_same_values(first: list, second: list, name: str, fn: Callable) -> None:
    """Raise a JitError if the two recordings returned structures of another shape or
    different Python values (a learning rate, a count kept in Python): a replay would return
    the recorded ones (see ``_python_values``). The error names where ``fn`` is defined."""
    where = f"{name} is defined at {_defined_at(fn)}"
    if first[0] != second[0]:
        raise JitError(
            f"scratchgrad.jit: {name}() returned a structure of another shape on its second "
            f"and third calls (other lengths of its tuples or lists, other dict keys, tensors "
            f"elsewhere; {where}): a replay returns the recorded structure without running "
            f"Python. {ALREADY_RUN} Return the same structure at every call."
        )
    for a, b in zip(first[1:], second[1:]):
        if _same(a, b):
            continue
        refuse_tensors_in_objects([a], name, fn)  # a distribution, a dataclass
        raise JitError(
            f"scratchgrad.jit: {name}() returned a different Python value on its second "
            f"and third calls ({a!r}, then {b!r}; {where}): a replay returns the recorded "
            f"value without running Python. {ALREADY_RUN} Return a tensor, or read the "
            "value outside the jitted function."
        )


def refuse_tensors_in_objects(
    values: list, name: str, fn: Callable, made: Callable[[Tensor], bool] | None = None
) -> None:
    """Raise the JitError of an object among ``values`` (Python values returned) holding
    tensors (those ``made`` says yes to, else any) in its attributes, such as a distribution
    (``Categorical(logits=...)``) or a dataclass of outputs: a replay would return the
    recorded object, with the recording's tensors. The error names where ``fn`` is
    defined."""
    for value in values:
        attributes = getattr(value, "__dict__", {}).items()
        held = [key for key, inner in attributes if _holds_tensors(inner, made)]
        if held:
            raise JitError(
                f"scratchgrad.jit: {name}() returned tensors inside an object "
                f"({type(value).__name__}: {', '.join(held)}; {name} is defined at "
                f"{_defined_at(fn)}): a replay returns the recorded object, with the "
                f"recording's tensors, without running Python. {ALREADY_RUN} Return the "
                f"tensors and make the {type(value).__name__} from them after the call."
            )


def _holds_tensors(value: Any, made: Callable | None, depth: int = 2) -> bool:
    """Whether ``value`` is a tensor (one ``made`` says yes to, if given), or holds one among
    its attributes, ``depth`` objects deep (a mixture's component distribution holding its
    ``loc``)."""
    if isinstance(value, Tensor):
        return made is None or made(value)
    inner = getattr(value, "__dict__", {}).values() if depth else ()
    return any(_holds_tensors(v, made, depth - 1) for v in inner)


def _defined_at(fn: Callable) -> str:
    """``file:line`` of the definition of ``fn`` (a function or method; a module's
    ``forward``), else its name."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None and isinstance(fn, Module):  # a compiled module: where its forward is
        code = getattr(type(fn).forward, "__code__", None)
    if code is None:  # another callable object: the name of its class
        return type(fn).__qualname__
    return f"{code.co_filename}:{code.co_firstlineno}"


def _python_values(result: Any) -> list:
    """The shape of a returned structure of tuples, lists and dicts (their types, lengths
    and keys, and where its tensors are), then the values in it other than tensors."""
    values: list = []
    return [_shape(result, values), *values]


def _shape(node: Any, values: list) -> Any:
    """The shape of ``node`` for ``_python_values``; its values other than tensors are added
    to ``values``."""
    if isinstance(node, Tensor):
        return Tensor
    if type(node) is dict:
        return (dict, tuple((key, _shape(value, values)) for key, value in node.items()))
    if _is_container(node):
        return (type(node), tuple(_shape(item, values) for item in node))
    values.append(node)
    return None


def _first_difference(a: list, b: list) -> int:
    """The first index where ``a`` and ``b`` differ (or the shorter one's length)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _lines(recording: Recording) -> list[str]:
    """The calls ``recording`` made, one line each (see ``Recorder.calls``)."""
    return recording.calls.split("\n")[:-1]


def _call_at(recording: Recording, i: int) -> str:
    """The ``i``-th call ``recording`` made and the user's line that made it, for an error."""
    lines = _lines(recording)
    if i == len(lines):
        return "nothing more"
    return f"{lines[i].replace(kernels.OUT, '')!r} at {recording.call_places[i]}"


def _same(a: Any, b: Any) -> bool:
    """Whether two constants of two recordings stand for the same thing: the same object, or
    arrays of the same bits, equal numbers (a zero of the same sign), containers, or
    functions with the same code and closure."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, Tensor):
        return a.requires_grad == b.requires_grad and _same(a.array, b.array)
    if isinstance(a, xp.ndarray):
        # The same bits (a NaN equals itself, 0.0 is not -0.0: a replay is bit for bit
        # eager's). Not array_equal: its NaN test and boolean reduction are code the eager
        # step never runs, whose pages (128 KB) would count in the process's memory.
        return (a.shape, a.dtype) == (b.shape, b.dtype) and a.tobytes() == b.tobytes()
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, types.FunctionType):
        cells = [c.cell_contents for c in a.__closure__ or ()]
        return a.__code__ is b.__code__ and _same(
            cells, [c.cell_contents for c in b.__closure__ or ()]
        )
    if isinstance(a, float) and a != a:
        return b != b  # NaN
    try:
        return bool(a == b) and guards.negative_zero(a) == guards.negative_zero(b)
    except Exception:  # objects without a usable equality: only themselves
        return False


def jit(fn: Callable | None = None, *, cache_size: int = 8) -> Any:
    """Record ``fn`` (a training step, a forward pass) once and replay it as NumPy calls.

    The first call runs eagerly (lazily made state such as Adam's moments exists after it),
    the second records every array call of the forward, the backward and the optimizer
    update, the third records again and checks that both recordings agree (else JitError: a
    Python branch or a NumPy computation on tensor data would be frozen), and later calls with
    tensors of the same shapes, dtypes and layouts (and the same other arguments, grad mode
    and train/eval modes) replay the recording on the new arrays, without the autograd
    bookkeeping. Parameters, their ``.grad`` and the optimizer's state
    are updated in place, as eager steps would. Learning rates, betas, step counts and
    random draws are read when a replay runs. Returned tensors are fresh arrays, detached.

    Reading a tensor's value into Python inside ``fn`` (``.item()``, ``bool(t)``, ``print``)
    raises ``scratchgrad.JitError`` while recording: a replay would not run it.

    >>> import scratchgrad as sg
    >>> model = sg.nn.Linear(3, 1)
    >>> opt = sg.optim.SGD(model.parameters(), lr=0.1)
    >>> @sg.jit
    ... def step(x, y):
    ...     opt.zero_grad()
    ...     loss = ((model(x) - y) ** 2).mean()
    ...     loss.backward()
    ...     opt.step()
    ...     return loss
    >>> x, y = sg.randn(8, 3), sg.randn(8, 1)
    >>> losses = [step(x, y).item() for _ in range(5)]  # eager, records twice, replays
    >>> losses[4] < losses[0]
    True
    """
    if fn is None:
        return functools.partial(jit, cache_size=cache_size)
    return Jitted(fn, cache_size)


def _signature(args: tuple, kwargs: dict) -> tuple[list, Any]:
    """The tensors among the arguments and the guard key of the call (see ``_flatten``), for
    the common call of a few tensors without the tree walk."""
    if not kwargs:
        key = []
        for a in args:
            if type(a) is not Tensor:
                break
            key.append(_tensor_key(a))
        else:
            distinct = (
                args[0].array is not args[1].array  # the usual (x, y), without a set
                if len(args) == 2
                else len({id(a.array) for a in args}) == len(args)
            )
            if distinct:
                return list(args), tuple(key)
    return _flatten((args, kwargs))


def _flatten(tree: Any) -> tuple[list, Any]:
    """The tensors in ``tree`` (lists, tuples and dicts, nested) and a hashable key of the
    rest: the structure, each tensor's signature and the other leaves' values."""
    tensors: list = []

    def key_of(node: Any) -> Any:
        if isinstance(node, Tensor):
            tensors.append(node)
            return _tensor_key(node)
        if type(node) is not dict and _is_container(node):
            return (type(node), tuple(key_of(item) for item in node))
        if type(node) is dict:
            return (dict, tuple((k, key_of(v)) for k, v in node.items()))
        try:
            hash(node)
        except TypeError:
            return (type(node), _SameObject(node))  # unhashable: the same object again
        if _is_state(node):  # (a frozen dataclass: what the step reads from it is guarded
            # as that object's, so another, equal by its __eq__, may hold other values)
            return (type(node), _SameObject(node))
        return (type(node), node, guards.negative_zero(node))

    key = ("tree", key_of(tree))
    ids = [id(t.array) for t in tensors]
    if len(set(ids)) != len(ids):  # the same array passed twice: part of the key
        key = (key, tuple(ids.index(i) for i in ids))
    return tensors, key


class SparseArgument(TypeError):
    """A sparse tensor among a call's arguments: ``jit`` refuses it, a compiled module runs
    that call eagerly."""


class _SameObject:
    """The part of a guard key for an unhashable argument (a NumPy array, a set): equal only
    to the same object, which it keeps alive, so that its id cannot pass to a new object (of
    another length, say) while the recording lives."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return type(other) is _SameObject and other.obj is self.obj


def _tensor_key(t: Tensor) -> tuple:
    """A tensor's part of a guard key: its array's type (the device), shape, dtype and layout
    (C order, Fortran order, or else the strides: it decides which results are views, how
    BLAS reads a matrix, which a product's orientation was checked for, and the order in
    memory of elementwise results, in which later reductions add), whether it requires grad
    and is a leaf (a backward into a graph outside the step is refused), its gradient
    hooks (recorded into the program as the operations they made), and whether it is an
    inference tensor (outside inference mode, saving one for backward or changing it in
    place raises: a recording for normal tensors would not)."""
    if t.is_sparse:  # (only indices and values: no array to guard or replay on)
        raise SparseArgument(
            "scratchgrad.jit: a sparse tensor argument: a jitted step takes dense ones (pass "
            ".to_dense()), or call the function without jit"
        )
    a = t.array
    flags = a.flags
    c_order, f_order = flags.c_contiguous, flags.f_contiguous
    layout = (c_order, f_order) if c_order or f_order else a.strides
    inference = type(t._counter) is InferenceCounter
    return (type(a), a.shape, a.dtype, t.requires_grad, t._ctx is None, layout, t._hooks, inference)


def _outputs(result: Any, recorder: Recorder, stores: list = ()) -> tuple[list[int], Callable]:
    """The values the program returns, and a function rebuilding ``result``'s structure
    from them: tensors made in the step come back as new tensors (detached), anything else
    as it was. The tensors of ``stores`` (see ``Outer.check_state``) come back too, and the
    function stores them as the recorded step did."""
    returned: list[int] = []
    number = recorder.number  # id(array) -> the value made in the step
    replaced = _stored_over(stores)

    def leaf(t: Tensor) -> Callable:
        value = number.get(id(t.array))
        if value is None:  # not made in the step (a parameter): itself
            return replaced.get(id(t), lambda outputs: t)
        index = len(returned)
        returned.append(value)
        # (Tensor._make looked up at each call: inference_mode swaps in one that marks
        # inference tensors)
        stride = own_layout(t)
        if stride is not None:  # a clone of a transposed view: transposed again, as eagerly
            return lambda outputs: laid_out(Tensor._make(outputs[index]), stride)
        return lambda outputs: Tensor._make(outputs[index])

    if not stores:
        return returned, rebuild(result, leaf)
    build = rebuild((result, [tensor for _, _, tensor, _ in stores]), leaf)
    return returned, _storing(build, [(obj, key) for obj, key, *_ in stores])


def rebuild(node: Any, leaf: Callable[[Tensor], Callable]) -> Callable:
    """A function of a replay's results that rebuilds ``node``, a structure of tuples, lists
    and dicts around tensors: ``leaf(t)`` gives the function rebuilding each tensor. A module
    function, not a closure calling itself: that closure would be a reference cycle keeping
    the recorder alive until the cycle collector runs."""
    if isinstance(node, Tensor):
        return leaf(node)
    if _is_container(node):
        items = node.items() if type(node) is dict else enumerate(node)
        parts = [(k, rebuild(v, leaf)) for k, v in items]
        if type(node) is dict:
            return lambda *results: {k: p(*results) for k, p in parts}
        kind = type(node)
        if kind not in (tuple, list):  # a namedtuple takes its fields one by one
            return lambda *results: kind(*(p(*results) for _, p in parts))
        return lambda *results: kind(p(*results) for _, p in parts)
    return lambda *results: node


def _is_container(node: Any) -> bool:
    """Whether ``node`` is a structure jit looks into: a tuple (namedtuples too), list or
    dict (not their other subclasses, whose constructors may take other arguments)."""
    kind = type(node)
    return kind in (tuple, list, dict) or (isinstance(node, tuple) and hasattr(kind, "_fields"))


__all__ = ["JitError", "Jitted", "jit"]
