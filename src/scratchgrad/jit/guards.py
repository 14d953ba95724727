"""A checked recording's guards as one generated function: the fast path of a jitted call.

``Jitted.__call__`` finds a recording by building the call's guard key (each tensor's
signature, hashed into a dict) and asking each candidate whether it still matches (its
modules' stamps and modes, its leaves, its closure and globals): about 2 us of Python per
call, a tenth of a W1 step, and several times that right after a big matrix product has
pushed that Python out of the caches. The recording last replayed is usually the next one,
so its checks are also written out as straight-line code over the objects it was recorded
for, and a call tries that first::

    def call(args, kwargs):
        if kwargs or len(args) != 2:
            return MISS
        t0, t1, = args
        if type(t0) is not Tensor or type(t1) is not Tensor:
            return MISS
        a0 = t0.array
        a1 = t1.array
        if not (
            type(a0) is type9                        # numpy.ndarray: the device
            and a0.shape == (64, 2)
            and a0.dtype is dtype10
            and a0.strides == (8, 4)                 # the layout
            and t0.requires_grad is False
            and t0._ctx is None
            and t0._hooks == ()
            and type(t0._counter) is not InferenceCounter  # not an inference tensor
            ...                                      # the same of t1
            and grad_state.enabled is True
            and grad_state.inference is False
            and autocast_state.dtype is None
            and backend.default_float is dtype11     # the default dtype
            and capture_hook.changes == stamps.seen  # no module changed, no mode set
            and leaf15.array is array16              # each parameter reached: its array,
            and leaf15.requires_grad is True         # requires_grad and hooks
            and leaf15._hooks == ()
            ...
            and not post_accumulate_hooks
            and cell30.cell_contents is held31       # the closure's model and optimizer
            and cell32.cell_contents is held33
            and a1.tolist() == values34              # the values it read of an argument
        ):
            return MISS
        result = build(replay([a0, a1, ], args))
        return result

A plain value passed by position (``step(x, y, 0.5)``) is checked as the key compares it:
``type(p2) is type11 and p2 == value12``. Tuples, lists and namedtuples of them (an LSTM's
``(h, c)``, a ``PackedSequence``) are unpacked, each checked for its type and length first
(``type(s1) is not tuple or len(s1) != 2``: ``return MISS``; ``t1_0, t1_1, = s1``).
Keyword arguments are checked by their names in the order passed, as the key holds them
(``k2, k3, = kwargs``; ``k2 != 'x' or k3 != 'y'``: ``return MISS``; ``t2, t3, =
kwargs.values()``), then as positional ones. The arrays are checked to be distinct objects
(the key's set of their ids) only among those of one shape and dtype: an array passed as
two tensors of other shapes fails a shape check anyway. Each
check is the slow path's or stricter (the same strides, not only the same layout; the same
dtype object), so the fast path can only miss where the slow path would match (and then the
slow path runs), never replay where it would not. A compiled module's forward
(``compiled.CompiledForward``) keeps one too, which also checks the module's parameters and
returns the tensors its recording runs on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import autocast, capture_hook, engine
from scratchgrad.autograd.grad_mode import InferenceCounter
from scratchgrad.autograd.grad_mode import state as grad_state
from scratchgrad.jit.updates import define, function_source
from scratchgrad.tensor import Tensor

MISS = object()  # what a fast path returns when the call is not the one it was made for
UNMADE = object()  # a recording's fast path before its first replay makes it (or None)
MISSING = object()  # the value of an entry that a dict or an object's __dict__ has not

# The most arrays of one shape and dtype whose distinctness a fast path checks pairwise
# (``a0 is not a1 and ...``); more, by the size of a set of their ids, which is slower up to
# about 16 arrays (its ``id`` calls) but grows with their number, not its square.
_MOST_PAIRWISE = 12

# Plain values: what a guard compares by type and ``==`` (the guard key's own comparison for
# an argument; Outer's for a global). A fast path takes them by position, and None too.
PLAIN = (bool, int, float, str)
_ARGUMENTS = (*PLAIN, type(None))


def negative_zero(value: Any) -> bool:
    """Whether ``value`` is a float -0.0. It is ``==`` 0.0 (and hashes alike), but a step
    computing ``x / s`` gets -inf for +inf from it, so a guard comparing plain values by
    ``==`` also compares this."""
    return (
        isinstance(value, (float, backend.xp.floating))
        and value == 0
        and math.copysign(1.0, value) < 0
    )


def fast_path(
    recording: Any, args: tuple, kwargs: dict, parameters: list | None = None
) -> Callable | None:
    """The fast path of ``recording`` (a checked ``jitted.Recording``) for calls like this
    one (``args``, ``kwargs``), whose signature it was recorded for: ``call(args, kwargs)``,
    returning what a replay returns, or ``MISS`` when any guard fails. None when the call
    is not tensors of distinct arrays, and plain values or None (see ``PLAIN``), passed by
    position or by keyword, alone or in tuples and lists (the slow path handles the rest: an
    array passed twice is a key of its own, which this path's checks do not make).

    For a compiled module's recording (``compiled.Recording``), ``parameters`` are the
    module's, which its programs take after the arguments (tensors only): each must still
    hold the array it holds now (stricter than the key's shape, dtype and layout), and an
    argument's array must be none of theirs. Its ``call`` returns the tensors to run the
    recording on (the arguments, then the parameters) instead of running it."""
    plain = _ARGUMENTS if parameters is None else ()
    if any(type(name) is not str for name in kwargs):  # (a str subclass: the slow path's)
        return None
    other = "kwargs" if not kwargs else f"len(kwargs) != {len(kwargs)}"
    body = [f"if {other} or len(args) != {len(args)}:", "    return MISS"]
    code = _Code(recording)
    leaves = _unpacked("args", args, "", body, code)
    if kwargs and leaves is not None:  # the names, in the order given (as the key has them)
        keys = [f"k{i}" for i in range(len(args), len(args) + len(kwargs))]
        body += [
            f"{''.join(k + ', ' for k in keys)}= kwargs",
            f"if {' or '.join(f'{k} != {name!r}' for k, name in zip(keys, kwargs))}:",
            "    return MISS",
        ]
        values = list(kwargs.values())
        named = _unpacked("kwargs.values()", values, "", body, code, first=len(args))
        leaves = None if named is None else leaves + named
    if leaves is None:
        return None
    given = [a for _, a in leaves if type(a) is Tensor]
    if any(type(a) is not Tensor and type(a) not in plain for _, a in leaves):
        return None
    every = [*given, *(parameters or ())]
    if len({id(t.array) for t in every}) != len(every):
        return None
    names = [name for name, _ in leaves]
    tensors = [name for name in names if name[0] == "t"]
    arrays = [f"a{t[1:]}" for t in tensors]
    if tensors:
        body += [
            f"if {' or '.join(f'type({t}) is not Tensor' for t in tensors)}:",
            "    return MISS",
        ]
        body += [f"{a} = {t}.array" for t, a in zip(tensors, arrays)]
    plains = [(name, value) for name, value in leaves if name[0] == "p"]
    checks = code.arguments(tensors, given) + code.values(plains) + code.state(recording)
    if parameters is not None:
        held = code.held(parameters)
        checks += code.parameters(held, parameters, arrays)
    # the arguments it also reaches by name: the same tensors (Recording.matches)
    checks += [f"{tensors[i]} is {code.name('named', t)}" for i, t in recording.named_arguments]
    # the arguments whose values it read (a packed batch's sizes): the same values
    checks += [
        f"{arrays[i]}.tolist() == {code.name('values', v)}" for i, v in recording.values_read
    ]
    body += ["if not (", f"    {checks[0]}", *(f"    and {c}" for c in checks[1:]), "):"]
    body.append("    return MISS")
    if parameters is not None:  # what the compiled module's forward runs on (not run here:
        # the function would hold the recording, which holds it, a cycle)
        body.append(f"return [{''.join(f'{t}, ' for t in tensors + held)}]")
    else:
        code.names.update(replay=recording.replay, build=recording.build)
        # the tensors whose .grad a replay may set: the arguments, if all are tensors
        flat = not kwargs and all(type(a) is Tensor for a in args)
        passed = "args" if flat else f"[{''.join(t + ', ' for t in tensors)}]"
        body.append(f"result = build(replay([{''.join(a + ', ' for a in arrays)}], {passed}))")
        body += [
            f"{tensors[i]}.requires_grad = {code.name('flag', flag)}"
            for i, flag in recording.requires_grad_set
        ]
        body.append("return result")
    return define(function_source("def call(args, kwargs):", body), code.names, "call")


def _unpacked(
    code: str, node: tuple | list, path: str, body: list[str], names_of: _Code, first: int = 0
) -> list | None:
    """The arguments in ``node`` (named ``code``) and in the tuples, lists and namedtuples in
    it (an LSTM's ``(h, c)``, a ``PackedSequence``), each with the name the fast path's code
    gives it (see ``_name``), in the order ``jitted._flatten`` meets their tensors; the code
    unpacking them into those names is added to ``body``, each container checked for its
    type (a namedtuple's class: a global of ``names_of``) and length first. None where a
    container is of another kind (a dict: the slow path's). ``first``: the place of
    ``node``'s first item (after the positional arguments, for the keyword ones)."""
    names = [_name(item, f"{path}{i}") for i, item in enumerate(node, first)]
    if names:
        body.append(f"{''.join(name + ', ' for name in names)}= {code}")
    leaves: list[tuple[str, Any]] = []
    for i, (name, item) in enumerate(zip(names, node), first):
        if name[0] == "s":
            kind = type(item)
            kind = kind.__name__ if kind in (tuple, list) else names_of.name("type", kind)
            body += [
                f"if type({name}) is not {kind} or len({name}) != {len(item)}:",
                "    return MISS",
            ]
            inner = _unpacked(name, item, f"{path}{i}_", body, names_of)
            if inner is None:
                return None
            leaves += inner
        elif isinstance(item, (tuple, list, dict)):
            return None
        else:
            leaves.append((name, item))
    return leaves


def _name(item: Any, place: str) -> str:
    """The name of an argument at ``place`` (``1_0``: the first item of the second) in a fast
    path's code: ``t`` a tensor, ``s`` a tuple, list or namedtuple, ``p`` any other value."""
    if type(item) is Tensor:
        return f"t{place}"
    namedtuple = isinstance(item, tuple) and hasattr(type(item), "_fields")  # (as jit's key)
    return f"s{place}" if type(item) in (tuple, list) or namedtuple else f"p{place}"


def _distinct(names: list[str], arrays: list) -> list[str]:
    """The checks that the arrays named ``names`` (recorded as ``arrays``) are distinct
    objects, as the guard key's set of their ids is: only among those recorded with the same
    shape and dtype, since one array has one shape and one dtype and a fast path checks both;
    pairwise for a few, else by a set of their ids (see ``_MOST_PAIRWISE``)."""
    groups: dict[tuple, list[str]] = {}
    for name, array in zip(names, arrays):
        groups.setdefault((array.shape, array.dtype), []).append(name)
    checks = []
    for group in groups.values():
        if len(group) <= _MOST_PAIRWISE:
            checks += [f"{a} is not {b}" for i, a in enumerate(group) for b in group[i + 1 :]]
        else:
            checks.append(f"len({{{', '.join(f'id({a})' for a in group)}}}) == {len(group)}")
    return checks


class _Code:
    """The checks of a fast path, as code, and the objects that code names (its globals)."""

    def __init__(self, recording: Any) -> None:
        self.names: dict[str, Any] = {
            "MISS": MISS,
            "Tensor": Tensor,
            "InferenceCounter": InferenceCounter,
            "grad_state": grad_state,
            "autocast_state": autocast.state,
            "backend": backend,
            "capture_hook": capture_hook,
            "post_accumulate_hooks": engine._post_accumulate_hooks,
            "stamps": recording.stamps,
        }

    def name(self, prefix: str, value: Any) -> str:
        """The code naming ``value``: a literal for True, False and None, else a global."""
        if value is None or value is True or value is False:
            return repr(value)
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def requires_grad(self, code: str, tensor: Tensor, flag: bool) -> str:
        """The check that ``code`` (naming ``tensor``, or a tensor of its class) has
        ``requires_grad`` ``flag``. NOTE: read as the attribute behind Tensor's property
        where its class keeps that property (15 ns, not 50: a W1 call reads seven)."""
        kept = type(tensor).requires_grad is Tensor.requires_grad
        return (
            f"{code}.{'_requires_grad' if kept else 'requires_grad'} is {self.name('flag', flag)}"
        )

    def hooks(self, code: str, hooks: Any, same: str) -> str:
        """The check that ``code``'s hooks are ``hooks`` (by ``same``: ``==`` or ``is``)."""
        if type(hooks) is tuple and not hooks:
            return f"{code}._hooks == ()"
        return f"{code}._hooks {same} {self.name('hooks', hooks)}"

    def arguments(self, tensors: list[str], given: list) -> list[str]:
        """The checks of the tensor arguments ``given`` (named ``tensors``: ``t0, t2, ...``)
        and their arrays (``a0, a2, ...``): the guard key's (``jitted._tensor_key``), the
        strides for the layout."""
        arrays = [f"a{t[1:]}" for t in tensors]
        checks = _distinct(arrays, [t.array for t in given])
        for t, a, tensor in zip(tensors, arrays, given):
            array = tensor.array
            checks += [
                f"type({a}) is {self.name('type', type(array))}",
                f"{a}.shape == {array.shape!r}",
                f"{a}.dtype is {self.name('dtype', array.dtype)}",
                f"{a}.strides == {array.strides!r}",
                self.requires_grad(t, tensor, tensor.requires_grad),
                f"{t}._ctx is {'' if tensor._ctx is None else 'not '}None",
                self.hooks(t, tensor._hooks, "=="),
                f"type({t}._counter) is {'' if tensor.is_inference() else 'not '}InferenceCounter",
            ]
        return checks

    def values(self, plains: list[tuple[str, Any]]) -> list[str]:
        """The checks of the plain arguments (``(name, value)``: ``p1``, ``p2_0``, ...): the
        guard key's, the same type and an equal value (None is None)."""
        checks = []
        for name, value in plains:
            if value is None:
                checks.append(f"{name} is None")
            else:
                kind, same = self.name("type", type(value)), self.name("value", value)
                checks += [f"type({name}) is {kind}", f"{name} == {same}"]
                if value == 0 and type(value) is float:  # and the zero's sign
                    zero = self.name("negative_zero", negative_zero)
                    checks.append(f"{zero}({name}) is {negative_zero(value)}")
        return checks

    def held(self, tensors: list) -> list[str]:
        """The code naming each of ``tensors`` (held by the fast path)."""
        return [self.name("parameter", t) for t in tensors]

    def parameters(self, held: list[str], parameters: list, arrays: list[str]) -> list[str]:
        """The checks of a compiled module's ``parameters`` (named ``held``): each holds the
        array it holds now, with its requires_grad and hooks, and none of the arguments'
        ``arrays`` is one of theirs (the arrays are held, so their ids stay theirs)."""
        ids = self.name("ids", frozenset(id(p.array) for p in parameters))
        checks = [f"id({a}) not in {ids}" for a in arrays]
        for p, parameter in zip(held, parameters):
            checks += [
                f"{p}.array is {self.name('array', parameter.array)}",
                self.requires_grad(p, parameter, parameter.requires_grad),
                f"{p}._ctx is {'' if parameter._ctx is None else 'not '}None",
                self.hooks(p, parameter._hooks, "=="),
            ]
        return checks

    def state(self, recording: Any) -> list[str]:
        """The checks of the rest of the key (grad mode, autocast) and of what
        ``Recording.matches`` checks: its modules, its leaves, its closure and globals."""
        checks = [
            f"grad_state.enabled is {self.name('flag', grad_state.enabled)}",
            f"grad_state.inference is {self.name('flag', grad_state.inference)}",
            f"autocast_state.dtype is {self.name('dtype', autocast.state.dtype)}",
            f"backend.default_float is {self.name('dtype', backend.default_float)}",
            "capture_hook.changes == stamps.seen",  # else the slow path looks at each module
        ]
        hooked = any(entry[4] is not None for entry in recording.reached)
        for leaf, array, requires_grad, hooks, post_hooks in recording.reached:
            key, held = id(leaf), leaf
            leaf = self.name("leaf", leaf)
            checks += [
                f"{leaf}.array is {self.name('array', array)}",
                self.requires_grad(leaf, held, requires_grad),
                self.hooks(leaf, hooks, "is"),
            ]
            if hooked:  # (DistributedDataParallel's)
                checks.append(
                    f"post_accumulate_hooks.get({key}) is {self.name('hooks', post_hooks)}"
                )
        if recording.reached and not hooked:
            checks.append("not post_accumulate_hooks")
        for leaf, grad in recording.grads_read:
            checks.append(f"{self.name('leaf', leaf)}._grad is {self.name('held', grad)}")
        outer = recording.outer
        if outer.contents:  # the containers it reads (a list of scales): their contents
            checks.append(f"{self.name('outer', outer)}.contents_hold()")
        for cell, value in outer.cells:
            checks.append(f"{self.name('cell', cell)}.cell_contents is {self.name('held', value)}")
        for container, access, key, value, _ in outer.entries:  # settings["scale"], cfg.weight
            entries = self.name("container", container) + (".__dict__" if access == "attr" else "")
            if value is MISSING:  # a class attribute, not set on the instance (see Outer)
                checks.append(f"{self.name('key', key)} not in {entries}")
            else:
                held = self.name("held", value)
                checks.append(f"{entries}.get({self.name('key', key)}) is {held}")
        for scope, name, value in zip(outer.scopes, outer.names, outer.values):
            checks.append(
                f"{self.name('scope', scope)}.get({name!r}) is {self.name('held', value)}"
            )
        return checks
