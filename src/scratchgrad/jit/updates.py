"""Optimizer updates for ``scratchgrad.jit`` replays as generated NumPy code.

While a step records, ``Optimizer.step`` and ``Optimizer.zero_grad`` hand themselves to the
recorder (``Recorder.replayed``), which asks ``replacement`` for code doing the same thing
faster on each replay. For SGD (plain, momentum, dampening, Nesterov, weight decay, maximize),
Adam and AdamW (amsgrad, coupled or decoupled weight decay, maximize) the answer is one
generated function per ``step`` call, a section per param group, which:

- reads at each replay what users change between steps: each group's ``lr``, ``momentum``,
  ``dampening``, ``betas``, ``eps``, ``weight_decay``, the step counts (bias corrections
  computed from them as the eager step does), ``p.grad`` and ``p.array``;
- makes the eager ``_update``'s NumPy operations in the same order on the same dtypes (so the
  same bits), a bucket of small parameters at a time (see ``_Bucket``), writing its
  temporaries with ``out=`` into scratch arrays made once per recording and the parameters
  and state in place, without the per-parameter Python of the eager loop;
- first checks what the code was specialised on (each group's branches: momentum or not,
  Nesterov, weight decay, maximize, amsgrad, which form of lerp; which parameters have a
  gradient; the same groups, state and hyper-parameter types) and otherwise runs the eager
  ``step``: a replay never computes something else than eager code would.

Anything else (other optimizers, subclasses, complex or mixed dtypes, ``set_to_none=False``)
gets no replacement: the recorder replays the Python call itself.
"""

from __future__ import annotations

import functools
import io
import math
import re
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

from scratchgrad.autograd.graph import increment_version
from scratchgrad.backend import xp
from scratchgrad.optim.adam import Adam, AdamW
from scratchgrad.optim.optimizer import Optimizer
from scratchgrad.optim.sgd import SGD
from scratchgrad.tensor import Tensor

_FLOATS = (xp.float16, xp.float32, xp.float64)


class Update:
    """A generated replacement for an optimizer's ``step`` or ``zero_grad`` (``replaces``):
    ``run`` takes the same arguments and does what they do.

    Two are equal when they replace the same method of the same optimizer (the jit compares
    its two recordings' constants), even if their code differs: each runs only where its
    guard holds (the parameters with a gradient, the state, the hyper-parameters' branches),
    else the method itself, so what differs is Python state read at every replay, not a
    value frozen into the recording. (A frozen layer's gradient is zeros on one call and
    None on the next after ``zero_grad(set_to_none=True)`` takes over: the later recording,
    which is kept, guards on None.)"""

    def __init__(
        self, optimizer: Optimizer, replaces: Callable, source: str, namespace: dict[str, Any]
    ) -> None:
        self.optimizer, self.replaces = optimizer, replaces
        self.source, self.namespace = source, namespace
        # the memory its temporaries take, which the program lends it (``scratch.place``)
        # before the first replay: the memory of intermediates that are dead by then
        self.scratch: _Scratch | None = None

    def compile(self) -> None:
        """Make ``run`` the generated function. Not done while the step records: Python's
        compiler takes 40-260 KB while it runs, which need not add to the step's
        memory at its peak, and a recording that is recorded again is dropped unused
        (``jit`` compiles a recording's updates with its program, once it is checked)."""
        if "run" not in vars(self):
            self.run = define(self.source, self.namespace, "run")

    def run(self, *args: Any) -> Any:
        """What the optimizer's call does (see ``compile``, which replaces this method)."""
        self.compile()
        return self.run(*args)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Update)
            and self.optimizer is other.optimizer
            and self.replaces is other.replaces
        )

    __hash__ = None  # type: ignore[assignment]


def define(source: str, namespace: dict[str, Any], name: str) -> Callable:
    """The function ``name`` that ``source`` (code we generated) defines, run in ``namespace``,
    which becomes its globals (taken out of them: no cycle). The namespace's names are
    interned first, so that the compiled code shares them: Python interns the names a code
    object uses, and without this it holds a copy of each (about 50 bytes apiece).

    While a function made from the same source lives (a step recorded again, or the same
    model built anew and jitted), its code is reused: Python's compiler takes about 2.4 KB
    per line while it runs (264 KB for W3's Adam update), above what an eager step needs."""
    for key in namespace:
        sys.intern(key)
    namespace["__name__"] = "scratchgrad.jit.replay"  # whose NumPy warnings backend silences
    code = _compiled.get((source, name))
    if code is not None:
        return types.FunctionType(code, namespace, name)
    exec(source, namespace)  # noqa: S102  (the code is ours)
    function = namespace.pop(name)
    _compiled[source, name] = function.__code__
    return function


# The code of each living generated function, by its source (see ``define``).
_compiled: weakref.WeakValueDictionary[tuple[str, str], types.CodeType] = (
    weakref.WeakValueDictionary()
)


def function_source(header: str, body: list[str]) -> str:
    """The source of a function: ``header`` (``def f(x):``), then each line of ``body``
    indented under it. Written line by line into one buffer: joining indented copies would
    hold a small string per line at once, at the moment a recording's memory peaks (its
    optimizer update is made last), and their blocks stay with Python's small-object
    allocator afterwards."""
    out = io.StringIO()
    out.write(f"{header}\n")
    for line in body:
        out.write("    ")
        out.write(line)
        out.write("\n")
    return out.getvalue()


def recorded(function: Callable, args: tuple) -> tuple[Any, Update | None]:
    """Run ``function(*args)`` (a call ``Recorder.replayed`` notes) while the step records;
    its result and its generated code (see ``replacement``, made after the call, when the
    call's temporaries are freed). Where the generated update goes a block of rows at a time
    (see ``_BLOCK_SIZE``) and borrows less scratch memory than the eager update's largest
    temporary (a parameter's size), it is made first and run in the eager call's place (the
    same bits), so that recording the step takes no more memory than replaying it."""
    optimizer = args[0] if args else None
    if function is Optimizer.step and isinstance(optimizer, Optimizer):
        params = [p for group in optimizer.param_groups for p in group["params"]]
        if any(_block_rows(p.array) is not None for p in params):
            update = replacement(function, args)  # None where the state is not made yet
            scratch = update and update.scratch
            if scratch is not None and scratch.nbytes < max(p.array.nbytes for p in params):
                # Lent for this call only: a recording that is recorded again never replays,
                # and would hold it while the next one records and borrows its own.
                scratch.place(xp.empty(scratch.nbytes, xp.uint8))
                try:
                    return update.run(*args), update
                finally:
                    scratch.release()
    result = function(*args)
    return result, replacement(function, args)


def replacement(function: Callable, args: tuple) -> Update | None:
    """Generated code for ``function(*args)`` (a call ``Recorder.replayed`` notes), or None
    where only the Python call itself can be replayed; it needs the optimizer's state (made
    by its first step)."""
    optimizer = args[0] if args else None
    if not isinstance(optimizer, Optimizer) or "_update" in vars(optimizer):
        return None
    if optimizer._step_pre_hooks or optimizer._step_post_hooks:
        return None  # Python to run again: the replay calls the step, which runs them
    if function is Optimizer.zero_grad and args[1:] == (True,):
        return _zero_grad(optimizer)
    if function is Optimizer.step and args[1:] == (None,) and type(optimizer) in _WRITERS:
        return _step(optimizer, _WRITERS[type(optimizer)])
    return None


# ---- the generated code ----------------------------------------------------------------------


class _Code:
    """The constants, the guard and the lines of one generated function."""

    def __init__(self, optimizer: Optimizer, fallback: Callable) -> None:
        self.optimizer, self.fallback = optimizer, fallback
        self.reads: list[str] = []  # what the guard looks at, read first
        self.guard: list[str] = []  # conditions for running the lines, else the fallback
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "groups_": optimizer.param_groups,
            "state_": optimizer.state,
            "fallback_": fallback,
            "increment_version": increment_version,
            "NUMBERS": (float, int),
            "subtract_scaled": subtract_scaled,
            **_NUMPY,
        }
        self.guard += ["optimizer.param_groups is groups_", f"len(groups_) == {len(self.groups)}"]
        for g, group in enumerate(self.groups):  # the same groups, the same parameter lists
            self.namespace[f"g{g}"], self.namespace[f"params{g}"] = group, group["params"]
            self.guard += [
                f"groups_[{g}] is g{g}",
                f"g{g}['params'] is params{g}",
                f"len(params{g}) == {len(group['params'])}",
            ]

    @property
    def groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    def as_array(self, value: str, dtype: Any) -> str:
        """The name of a 0-d array of ``dtype`` holding the number ``value`` evaluates to: a
        local (a hyper-parameter read at each replay), set again only when it holds another
        object, or an expression of them, set at each replay (79 ns). It holds the value
        NumPy converts a Python number to when it meets an array of ``dtype`` (NEP 50's weak
        scalars), so the same bits. NOTE: NumPy converts a Python number at every call:
        ``np_multiply(grad, lr, out=update)`` took 0.86 us on W1's 17 numbers, 0.43 us with
        this array."""
        if not value.isidentifier():
            name = f"number{len(self.namespace)}_{dtype.name}"
            self.namespace[name] = xp.zeros((), dtype)
            self.lines.append(f"{name}[()] = {value}")
            return name
        name = f"{value}_{dtype.name}"
        if name not in self.namespace:
            self.namespace[name], self.namespace[f"{name}_of"] = xp.zeros((), dtype), [None]
            self.lines += [
                f"if {name}_of[0] is not {value}:",
                f"    {name}[()] = {name}_of[0] = {value}",
            ]
        return name

    def update(self, signature: str, fallback: str) -> Update:
        """The ``Update`` running ``run(signature)``: the reads, the guard (else
        ``return fallback``), then the lines."""
        conditions = "\n        and ".join(self.guard)
        body = [
            *self.reads,
            f"if not (\n        {conditions}\n    ):",
            f"    return {fallback}",
            *self.lines,
        ]
        source = function_source(f"def run({signature}):", body)
        return Update(self.optimizer, self.fallback, source, self.namespace)


def _zero_grad(optimizer: Optimizer) -> Update:
    """``optimizer.zero_grad()`` (to None): one assignment per parameter."""
    code = _Code(optimizer, Optimizer.zero_grad)
    for g, group in enumerate(optimizer.param_groups):
        code.lines += [f"params{g}[{i}].grad = None" for i in range(len(group["params"]))]
    return code.update("optimizer, set_to_none", "fallback_(optimizer, True)")


def _step(optimizer: Optimizer, writer: Callable) -> Update | None:
    """``optimizer.step()``: a section per param group, each written by ``writer``, after a
    guard that the same parameters are listed, have a gradient and the same state is held."""
    code = _Code(optimizer, Optimizer.step)
    code.guard += ["optimizer.state is state_", f"len(state_) == {len(optimizer.state)}"]
    scratch = _Scratch(code)
    for g, group in enumerate(optimizer.param_groups):
        params = [(i, p) for i, p in enumerate(group["params"]) if p.grad is not None]
        for i, p in enumerate(group["params"]):  # (not another put in its place in the list)
            code.namespace[f"p{g}_{i}"] = p
            code.guard += [
                f"params{g}[{i}] is p{g}_{i}",
                f"p{g}_{i}.grad {'is not' if p.grad is not None else 'is'} None",
            ]
        if not all(_plain(p, optimizer.state.get(p, {})) for _, p in params):
            return None
        if len({id(p) for _, p in params}) < len(params):
            return None  # a parameter listed twice is updated twice: not in one bucket
        if writer(code, g, params, scratch) is False:
            return None
    update = code.update("optimizer, closure", "fallback_(optimizer, closure)")
    update.scratch = scratch
    return update


def _plain(p: Tensor, state: dict) -> bool:
    """Whether a parameter, its gradient and its state's arrays are real floating arrays of
    one dtype and shape (what the scratch arrays and ``out=`` assume)."""
    tensors = [p, p.grad] + [v for k, v in state.items() if k != "step"]
    return all(
        isinstance(t, Tensor)
        and isinstance(t.array, xp.ndarray)
        and t.array.dtype.type in _FLOATS
        and (t.array.dtype, t.array.shape) == (p.array.dtype, p.array.shape)
        for t in tensors
    )


class _Scratch:
    """Scratch arrays for the temporaries of the eager update: one flat array per role (the
    update, the decayed gradient, ...) and dtype, as large as its largest use, and views of it
    (the parameters are updated one after another, so they can share it). The flat arrays
    are cut from ``nbytes`` of memory that the program places (see ``program._Plan``)."""

    def __init__(self, code: _Code) -> None:
        self.namespace = code.namespace
        # (name, role, dtype, shape, parts): parts name consecutive pieces, (name, shape) each
        self.requests: list[tuple[str, str, Any, tuple, list]] = []

    def view(self, role: str, name: str, like: Any, shape: tuple | None = None, parts=()) -> str:
        """``name`` for a view shaped like the array ``like`` (or ``shape``, in its dtype)."""
        shape = like.shape if shape is None else shape
        self.requests.append((name, role, like.dtype, shape, list(parts)))
        return name

    def role_of(self, name: str | None) -> str | None:
        """The role whose memory the scratch view ``name`` is in (None: not a scratch view)."""
        return next((role for view, role, *_ in self.requests if view == name), None)

    def _offsets(self) -> tuple[dict[tuple[str, Any], tuple[int, int]], int]:
        """Each flat array's (offset in bytes, size), aligned to 64 bytes; the bytes in all."""
        sizes: dict[tuple[str, Any], int] = {}
        for _, role, dtype, shape, _ in self.requests:
            sizes[role, dtype] = max(sizes.get((role, dtype), 0), math.prod(shape))
        offsets, end = {}, 0
        for key, size in sizes.items():
            offsets[key] = (end, size)
            end += _aligned(size * key[1].itemsize)
        return offsets, end

    @property
    def nbytes(self) -> int:
        return self._offsets()[1]

    def place(self, memory: Any) -> None:
        """Make the scratch arrays views of ``memory`` (``nbytes`` bytes, 64-byte aligned)."""
        offsets, _ = self._offsets()
        flat = {
            key: memory[offset : offset + size * key[1].itemsize].view(key[1])
            for key, (offset, size) in offsets.items()
        }
        for name, role, dtype, shape, parts in self.requests:
            array = flat[role, dtype]
            self.namespace[name] = array[: math.prod(shape)].reshape(shape)
            offset = 0
            for part, part_shape in parts:
                size = math.prod(part_shape)
                self.namespace[part] = array[offset : offset + size].reshape(part_shape)
                offset += size

    def release(self) -> None:
        """Drop the scratch arrays (``place`` makes them again)."""
        for name, _, _, _, parts in self.requests:
            self.namespace[name] = None
            for part, _ in parts:
                self.namespace[part] = None


def _aligned(offset: int) -> int:
    """The next multiple of 64 (a cache line, and every dtype's alignment) from ``offset``."""
    return -(-offset // 64) * 64


def _group(code: _Code, g: int, numbers: list[str], branches: list[str]) -> dict[str, bool] | None:
    """Read group ``g``'s hyper-parameters into locals (``lr_0``, ``beta1_0``, ...) and guard
    that ``numbers`` are Python numbers (a NumPy float64 learning rate would make the
    eager update promote to float64, which ``out=`` would hide) and that each of ``branches``
    (an expression over them, e.g. ``momentum == 0``) is what it is now. Returns the
    branches' values, or None if ``numbers`` are not Python numbers now."""
    group = code.groups[g]
    values = {k: v for k, v in group.items() if k != "params"}
    if "betas" in values:
        values["beta1"], values["beta2"] = values["betas"]
    if any(type(values[name]) not in (float, int) for name in numbers):
        return None
    for name in group:
        if name == "betas":
            code.reads.append(f"beta1_{g}, beta2_{g} = g{g}['betas']")
        elif name in numbers or any(name in re.findall(r"\w+", b) for b in branches):
            code.reads.append(f"{name}_{g} = g{g}[{name!r}]")
    code.guard += [f"type({name}_{g}) in NUMBERS" for name in numbers]
    taken = {}
    for branch in branches:
        value = taken[branch] = bool(eval(branch, {}, values))  # noqa: S307  (ours, below)
        local = re.sub(r"[A-Za-z_]\w*", lambda m: f"{m[0]}_{g}" if m[0] in values else m[0], branch)
        code.guard.append(local if value else f"not ({local})")
    return taken


def _parameters(code: _Code, g: int, params: list, state: bool) -> None:
    """Name each parameter's array ``param0_1`` (the parameter is ``p0_1``: see ``_step``)
    and (``state``) its state dict ``s0_1``, which the guard checks is still the optimizer's;
    count each in-place change first, as ``Optimizer.step`` (one call for them all)."""
    code.lines.append(f"increment_version(({''.join(f'p{g}_{i}, ' for i, _ in params)}))")
    for i, p in params:
        code.lines.append(f"param{g}_{i} = p{g}_{i}.array")
        if state:
            code.namespace[f"s{g}_{i}"] = code.optimizer.state[p]
            code.guard.append(f"state_.get(p{g}_{i}) is s{g}_{i}")


def _sgd(code: _Code, g: int, params: list, scratch: _Scratch) -> bool:
    """``SGD._update`` (sgd.py) for group ``g``, a bucket of parameters at a time."""
    numbers = ["lr", "momentum", "dampening", "weight_decay"]
    branches = ["maximize", "weight_decay != 0", "momentum == 0", "dampening == 0", "nesterov"]
    branch = _group(code, g, numbers, branches)
    if branch is None:
        return False
    momentum = not branch["momentum == 0"]
    state = code.optimizer.state
    if momentum and any("momentum_buffer" not in state.get(p, {}) for _, p in params):
        return False  # the buffer starts as the first gradient: left to the eager step
    _parameters(code, g, params, state=momentum)
    for b, bucket in enumerate(_buckets(params)):
        bucket = _Bucket(code, scratch, g, b, bucket, ["momentum_buffer"] * momentum)
        grad = bucket.direction(branch["maximize"], branch["weight_decay != 0"])
        scaled = grad  # the update is lr times it (but Nesterov's)
        if momentum:
            scaled = buf = bucket.state["momentum_buffer"]
            factor = code.as_array(f"momentum_{g}", bucket.array.dtype)
            code.lines.append(f"np_multiply({buf}, {factor}, out={buf})")
            if branch["dampening == 0"]:
                code.lines.append(f"np_add({buf}, {grad}, out={buf})")
            else:
                damped = bucket.scratch("damped")
                weight = code.as_array(f"1 - dampening_{g}", bucket.array.dtype)
                code.lines += [
                    f"np_multiply({weight}, {grad}, out={damped})",
                    f"np_add({buf}, {damped}, out={buf})",
                ]
        if branch["nesterov"]:  # (its update reads the gradients after it is first written)
            update = bucket.scratch("update", parts=True)
            lr = code.as_array(f"lr_{g}", bucket.array.dtype)
            code.lines += [
                f"np_multiply({buf}, {factor}, out={update})",
                f"np_add({update}, {grad}, out={update})",
                f"np_multiply({update}, {lr}, out={update})",
            ]
            bucket.apply("subtract", "update")  # p.array -= update
        else:
            bucket.subtract_scaled(scaled, f"lr_{g}", over=grad)
    return True


def _adam(code: _Code, g: int, params: list, scratch: _Scratch) -> bool:
    """``Adam._update`` (adam.py) for group ``g``, AdamW's included, a bucket of parameters at
    a time (see ``_Bucket``)."""
    numbers = ["lr", "beta1", "beta2", "eps", "weight_decay"]
    branches = [
        "maximize",
        "amsgrad",
        "decoupled_weight_decay",
        "weight_decay != 0",
        "abs(1 - beta1) < 0.5",  # which of lerp_'s two forms
    ]
    branch = _group(code, g, numbers, branches)
    if branch is None:
        return False
    decay, decoupled = branch["weight_decay != 0"], branch["decoupled_weight_decay"]
    if any(type(code.optimizer.state.get(p, {}).get("step")) is not int for _, p in params):
        return False
    _parameters(code, g, params, state=True)
    names = ["exp_avg", "exp_avg_sq"] + ["max_exp_avg_sq"] * branch["amsgrad"]
    for b, bucket in enumerate(_buckets(params)):
        bucket = _Bucket(code, scratch, g, b, bucket, names)
        if decay and decoupled:
            code.lines += [f"param{g}_{i} *= 1 - lr_{g} * weight_decay_{g}" for i in bucket.index]
        grad = bucket.direction(branch["maximize"], decay and not decoupled)
        step = bucket.count_step()
        exp_avg, exp_avg_sq = bucket.state["exp_avg"], bucket.state["exp_avg_sq"]
        first = bucket.scratch("scratch")
        update = bucket.scratch("update", parts=True, over=grad)  # last read before it
        number = functools.partial(code.as_array, dtype=bucket.array.dtype)
        code.lines.append(f"np_subtract({grad}, {exp_avg}, out={first})")  # lerp_
        if branch["abs(1 - beta1) < 0.5"]:
            weight = number(f"1 - beta1_{g}")
            code.lines += [
                f"np_multiply({first}, {weight}, out={first})",
                f"np_add({exp_avg}, {first}, out={exp_avg})",
            ]
        else:
            weight = number(f"1 - beta1_{g} - 1")
            code.lines += [
                f"np_multiply({first}, {weight}, out={first})",
                f"np_add({grad}, {first}, out={exp_avg})",
            ]
        beta2, weight = number(f"beta2_{g}"), number(f"1 - beta2_{g}")
        code.lines += [  # square_average_
            f"np_multiply({exp_avg_sq}, {beta2}, out={exp_avg_sq})",
            f"np_multiply({grad}, {weight}, out={first})",
            f"np_multiply({first}, {grad}, out={first})",
            f"np_add({exp_avg_sq}, {first}, out={exp_avg_sq})",
        ]
        second = exp_avg_sq
        if branch["amsgrad"]:
            second = bucket.state["max_exp_avg_sq"]
            code.lines.append(f"np_maximum({second}, {exp_avg_sq}, out={second})")
        correction = number(f"(1 - beta2_{g} ** {step}) ** 0.5")
        eps, size = number(f"eps_{g}"), number(f"-(lr_{g} / (1 - beta1_{g} ** {step}))")
        code.lines += [
            f"np_sqrt({second}, out={first})",
            f"np_divide({first}, {correction}, out={first})",
            f"np_add({first}, {eps}, out={first})",
            f"np_multiply({exp_avg}, {size}, out={update})",
            f"np_divide({update}, {first}, out={update})",
        ]
        bucket.apply("add", "update")  # p.array += update
    return True


# Parameters smaller than this many numbers are updated together, as one flat array: a NumPy
# call costs as much as a pass over thousands of numbers.
_BUCKET_SIZE = 1 << 16


def _buckets(params: list) -> list[list]:
    """``params`` split into runs of one dtype (a bucket's flat arrays have one: a float64
    parameter's moments made views of a float32 array would lose their bits) and at most
    ``_BUCKET_SIZE`` numbers (or one parameter)."""
    buckets: list[list] = []
    size, dtype = _BUCKET_SIZE, None
    for i, p in params:
        if size + p.array.size > _BUCKET_SIZE or p.array.dtype != dtype:
            buckets.append([])
            size, dtype = 0, p.array.dtype
        buckets[-1].append((i, p))
        size += p.array.size
    return buckets


# A parameter of more than this many numbers has its update made a block of rows at a time
# (blocks of 4 MB in float32): the update's scratch memory, lent by the arena, is one block,
# not a temporary of the parameter's size. Smaller blocks cost more calls than the cache
# saves at two threads: W4's jitted step over hand NumPy's, in one process (60 interleaved
# rounds each, three pairs), 1.015 / 1.022 / 1.005x with blocks of 2^16 numbers (its
# 512 x 784 weight in 7), 0.997 / 0.994 / 0.983x whole (its arena 1.6 MB instead of 852 KB,
# the process's peak still below an eager one's).
_BLOCK_SIZE = 1 << 20


def _block_rows(array: Any) -> int | None:
    """How many rows of ``array`` make a block of at most ``_BLOCK_SIZE`` numbers; None for
    an array of fewer numbers, or of rows longer than that."""
    if array.ndim == 0 or array.size <= _BLOCK_SIZE:
        return None
    rows = _BLOCK_SIZE // (array.size // array.shape[0])
    return rows if 0 < rows < array.shape[0] else None


def subtract_scaled(param: Any, x: Any, scale: float, block: Any) -> None:
    """``param -= x * scale`` as the eager update computes it (``x * scale`` rounded, then
    subtracted: elementwise, so the same bits), ``block``'s rows at a time: ``block`` holds
    each part of the product."""
    rows = block.shape[0]
    for start in range(0, param.shape[0], rows):
        part = param[start : start + rows]
        product = block[: part.shape[0]]
        xp.multiply(x[start : start + rows], scale, out=product)
        xp.subtract(part, product, out=part)


class _Bucket:
    """The arrays of a bucket of parameters an update handles with one call per operation
    (the same operations, elementwise, so the same bits as one parameter at a time): for
    several parameters, their state's arrays become views of one flat array per name, and the
    gradients are gathered into a scratch array at each replay; a single parameter is updated
    in its own arrays. ``state`` maps each state name to the code of its array."""

    def __init__(
        self, code: _Code, scratch: _Scratch, g: int, b: int, params: list, names: list[str]
    ) -> None:
        self.code, self._scratch, self.params = code, scratch, params
        # parameter i's names end in {g}_{i}, the bucket's in {g}b{b}
        self.g, self.name = g, f"{g}b{b}"
        self.index = [i for i, _ in params]
        self.array = params[0][1].array  # the dtype; the shape for a single parameter
        self.size = sum(p.array.size for _, p in params)
        self.state: dict[str, str] = {}
        states = [code.optimizer.state.get(p, {}) for _, p in params]  # (not made: a defaultdict)
        for key in names:
            self.state[key] = array = f"{key}{self.name}"
            if len(params) == 1:
                code.lines.append(f"{array} = s{self.g}_{self.index[0]}[{key!r}].array")
                continue
            code.namespace[array] = _flat([state[key] for state in states])
            for i, state in zip(self.index, states):  # still the arrays made views of it
                code.namespace[f"{key}{self.g}_{i}"] = state[key].array
                code.guard.append(f"s{self.g}_{i}[{key!r}].array is {key}{self.g}_{i}")

    def scratch(self, role: str, parts: bool = False, over: str | None = None) -> str:
        """A scratch view for the bucket's temporary ``role`` (``parts``: and a view of its
        piece for each parameter, named ``{role}{g}_{i}``). ``over``: an array of the bucket
        that nothing reads once this one is written: if it is a scratch view, this one takes
        its memory (the update's scratch, and the arena, hold one array less)."""
        memory = self._scratch.role_of(over) or role
        if len(self.params) == 1:
            return self._scratch.view(memory, f"{role}{self.name}", self.array)
        pieces = [(f"{role}{self.g}_{i}", p.array.shape) for i, p in self.params] if parts else []
        return self._scratch.view(memory, f"{role}{self.name}", self.array, (self.size,), pieces)

    def direction(self, maximize: bool, decay: bool) -> str:
        """Lines computing ``update_direction`` (optimizer.py) for the bucket: the gradients,
        negated to maximize, plus ``weight_decay`` times the parameters; returns its name."""
        g, lines = self.g, self.code.lines
        if len(self.params) == 1:
            grad = f"grad{self.name}"
            lines.append(f"{grad} = p{g}_{self.index[0]}.grad.array")
            if maximize:
                lines.append(f"{grad} = np_negative({grad}, out={self.scratch('negated')})")
        else:
            grad = self.scratch("grad")
            lines.append(f"np_concatenate({self._each('p{g}_{i}.grad.array')}, out={grad})")
            if maximize:
                lines.append(f"np_negative({grad}, out={grad})")
        if decay:
            decayed = self.scratch("decayed")
            weight_decay = self.code.as_array(f"weight_decay_{g}", self.array.dtype)
            if len(self.params) == 1:
                lines.append(
                    f"np_multiply(param{g}_{self.index[0]}, {weight_decay}, out={decayed})"
                )
            else:
                lines += [
                    f"np_concatenate({self._each('param{g}_{i}')}, out={decayed})",
                    f"np_multiply({decayed}, {weight_decay}, out={decayed})",
                ]
            lines.append(f"np_add({decayed}, {grad}, out={decayed})")
            grad = decayed
        return grad

    def count_step(self) -> str:
        """Lines counting the step in each parameter's state, as ``counted_state``; returns the
        name of the new count. The guard checks that the bucket's counts agree."""
        steps = [f"s{self.g}_{i}['step']" for i in self.index]
        step = f"step{self.name}"
        if len(steps) > 1:
            self.code.guard.append(" == ".join(steps))
        self.code.lines.append(f"{step} = {steps[0]} + 1")
        self.code.lines.append(f"{' = '.join(steps)} = {step}")
        return step

    def subtract_scaled(self, x: str, scale: str, over: str) -> None:
        """Lines for ``p.array -= x * scale`` (the product rounded into scratch memory, then
        subtracted, as eagerly) for the bucket; ``over``: see ``scratch``. A parameter of
        more than ``_BLOCK_SIZE`` numbers goes a block of its rows at a time
        (``subtract_scaled``): its scratch is one block, not a temporary its size."""
        rows = _block_rows(self.array) if len(self.params) == 1 else None
        if rows is None:
            update = self.scratch("update", parts=True, over=over)
            scale = self.code.as_array(scale, self.array.dtype)
            self.code.lines.append(f"np_multiply({x}, {scale}, out={update})")
            self.apply("subtract", "update")  # p.array -= update
            return
        name, shape = f"update{self.name}", (rows, *self.array.shape[1:])
        block = self._scratch.view("update", name, self.array, shape)
        param = f"param{self.g}_{self.index[0]}"
        self.code.lines.append(f"subtract_scaled({param}, {x}, {scale}, {block})")

    def apply(self, ufunc: str, role: str) -> None:
        """Lines updating each parameter in place with the bucket's scratch array ``role``
        (asked for with ``parts``): ``np_{ufunc}(param, piece, out=param)``."""
        for i in self.index:
            piece = f"{role}{self.name}" if len(self.params) == 1 else f"{role}{self.g}_{i}"
            self.code.lines.append(f"np_{ufunc}(param{self.g}_{i}, {piece}, out=param{self.g}_{i})")

    def _each(self, pattern: str) -> str:
        """A tuple's code (and ``axis=None``, to gather them flat) of ``pattern`` per parameter."""
        items = ", ".join(pattern.format(g=self.g, i=i) for i in self.index)
        return f"({items},), axis=None"


def _flat(tensors: list[Tensor]) -> Any:
    """One flat array holding the arrays of ``tensors`` one after another: the one they are
    views of already (made by an earlier recording), or a new one, each tensor's array then
    made a view of it (the tensors stay the state's, their values copied once)."""
    arrays = [t.array for t in tensors]
    flat = arrays[0].base
    offset = 0
    for array in arrays:
        if not (
            flat is not None
            and array.base is flat
            and array.flags.c_contiguous
            and array.ctypes.data == flat.ctypes.data + offset * flat.itemsize
        ):
            break
        offset += array.size
    else:
        if flat.ndim == 1 and flat.size == offset:
            return flat
    flat = xp.empty(sum(a.size for a in arrays), dtype=arrays[0].dtype)
    offset = 0
    for t, array in zip(tensors, arrays):
        t.array = flat[offset : offset + array.size].reshape(array.shape)
        t.array[...] = array
        offset += array.size
    return flat


_UFUNCS = ("add", "subtract", "multiply", "divide", "negative", "maximum", "sqrt", "concatenate")
_NUMPY = {f"np_{name}": getattr(xp, name) for name in _UFUNCS}  # the names the code calls
_WRITERS: dict[type, Callable] = {SGD: _sgd, Adam: _adam, AdamW: _adam}
