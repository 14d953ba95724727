"""A recorded step as one Python function: the recorder's lines, with dead calls pruned, the
kernels' results written into buffers kept from one replay to the next (views of one arena,
which the optimizer's generated update shares; or over an input that nothing reads
afterwards), and each other large array dropped after its last use (so peak memory stays at
eager's).

The generated code reads like the step written by hand with NumPy::

    def replay(inputs, tensors):
        if placed is not arena.array():            # the first replay cuts the buffers
            place(globals())
        v0, v1, = inputs
        v2 = k_linear(v0, c2, c3, out=b0)          # Linear.forward(ctx, x, weight, bias)
        v3 = np_tanh(v2, out=v2)                   # over its dead input, so in b0 too
        ...
        v9 = accumulate(c7, v8, True)              # into the weight's .grad
        c9.run(c10, None)                          # SGD.step(optimizer), generated
        return (v5,)
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from collections.abc import Callable
from typing import Any

from scratchgrad.autograd import engine
from scratchgrad.backend import xp
from scratchgrad.jit import kernels, rewrite
from scratchgrad.jit.recorder import Recorder
from scratchgrad.jit.updates import _aligned, define, function_source
from scratchgrad.tensor import Tensor

# Arrays at least this big are released right after their last use; smaller ones live until
# the step ends (a ``del`` costs more than they do).
_RELEASE_SIZE = 4096


def accumulate(leaf: Tensor, array: Any, owned: bool) -> Any:
    """Add a gradient into ``leaf.grad`` as the eager engine does (``owned``: ``.grad`` may
    keep the array itself); the array ``.grad`` holds."""
    if owned and leaf.grad is None and array.dtype is leaf.array.dtype:
        leaf._grad = Tensor._make(array)  # the engine's case after zero_grad(), without its call
        return array
    g = Tensor._make(array)
    engine._accumulate(leaf, g, False, {g: leaf} if owned else {})
    return leaf.grad.array


def made_leaf(array: Any, grad: Any) -> Tensor:
    """A leaf the step made (``x.clone().requires_grad_()``) as a new tensor at each replay,
    as eagerly, with the ``.grad`` array it has at this point of the step (or None)."""
    leaf = Tensor._make(array)
    leaf._requires_grad = True
    leaf._grad = None if grad is None else Tensor._make(grad)
    return leaf


_HELPERS = {
    "new": object.__new__,
    "asarray": xp.asarray,
    "make": Tensor._make,
    "accumulate": accumulate,
    "made_leaf": made_leaf,
}


class Arena(threading.local):
    """The memory the programs' buffers are cut from (see ``_Plan``): one per thread
    (``ARENA``), shared by every program the thread replays, of jitted functions and compiled
    modules alike. Programs never run inside one another (a jitted function or compiled
    module called inside a step is recorded into it, or refused), and between replays the
    arena holds nothing anyone reads: each program cuts its buffers from it at its first
    replay in a thread, and again after another program made it larger. A process then
    holds the largest step's buffers, not one set per jitted function (a model built again,
    a training and an evaluation step). The programs keep the memory, the arena only a
    weak reference to it: once the last program cut from it is gone, so is the memory."""

    def __init__(self) -> None:
        self.array = _no_array  # called: the array, or None

    def reserve(self, size: int) -> Any:
        """The arena's array, made larger first if it has fewer than ``size`` bytes."""
        array = self.array()
        if array is None or array.size < size:
            array = xp.empty(size, xp.uint8)
            self.array = weakref.ref(array)
        return array


def _no_array() -> None:
    """No array yet (what a dead weak reference returns)."""


ARENA = Arena()


def compile(recorder: Recorder, inputs: list[int], outputs: list[int]) -> tuple[Callable, str]:
    """The replay function (the call's input arrays and tensors in, output arrays out) and
    its source code. The tensors are there for the gradients of tensor arguments, which go
    into the ``.grad`` of the tensors passed to each call (``tensors[i]``)."""
    source, namespace = generate(recorder, inputs, outputs)
    return define(source, namespace, "replay"), source


def generate(
    recorder: Recorder, inputs: list[int], outputs: list[int]
) -> tuple[str, dict[str, Any]]:
    """The source of ``compile``'s replay function and the globals it runs in. A caller that
    lets the recorder go before ``define`` runs them frees the recorder's tables (each
    step's lines, the values' numbers) before Python's compiler takes its memory."""
    steps = rewrite.mask_before_spreading(recorder, _live_steps(recorder, outputs), outputs)
    steps = rewrite.relu_after_pooling(recorder, steps, outputs)
    last_use = {}
    for index, step in enumerate(steps):
        for number in step.reads:
            last_use[number] = index
    for number in outputs:
        last_use[number] = len(steps)
    free_after = _free_after(recorder, steps, last_use, inputs)
    chosen = {}  # step index -> the line it runs instead of its own (which recordings compare)
    for index, step in enumerate(steps):  # which way round each big product runs (gemm.py)
        if step.tried is not None:
            chosen[index], step.scratch = step.tried.decide(step.lines[0])
    plan = _Plan(recorder, steps, free_after)
    body = [
        "if placed is not arena.array():  # the first replay, or the arena was made larger",
        "    place(globals())",
    ]
    body = body if plan.blocks else []
    if inputs:
        body.append(", ".join(f"v{n}" for n in inputs) + ", = inputs")
    memory = recorder.memory
    for index, step in enumerate(steps):
        lines = [chosen[index]] if index in chosen else step.lines
        body += [line.replace(kernels.OUT, plan.outs.get(index, "")) for line in lines]
        done = [
            f"v{n}"
            for n in sorted({*step.reads, *step.writes})
            if last_use.get(n, -1) <= index
            and recorder.sizes[n] >= _RELEASE_SIZE
            and memory[n] not in plan.block_of  # a buffer stays anyway
        ]
        if done:
            body.append(f"del {', '.join(done)}")
    body.append(f"return ({''.join(f'v{n}, ' for n in outputs)})")
    source = function_source("def replay(inputs, tensors):", body)
    # ("placed": never the arena's array, nor None, what an arena without one gives)
    namespace = {**_HELPERS, **kernels.NAMES, **recorder.constants, "placed": False}
    namespace["arena"] = ARENA
    namespace["place"] = functools.partial(_place, plan.size, plan.views, plan.scratch)
    return source, namespace


def _place(size: int, views: dict, scratch: list, namespace: dict) -> None:
    """Cut the program's buffers ``b0, b1, ...`` from its arena (``size`` bytes of it), and
    lend their memory to the steps that asked for scratch (see ``_Plan``). Done at the
    program's first replay, not when it is recorded: the recording calls run with eager's
    memory, and a recording that is recorded again is dropped before it ever replays."""
    array = namespace["arena"].reserve(size)
    for name, (offset, shape, dtype) in views.items():
        nbytes = math.prod(shape) * dtype.itemsize
        namespace[name] = array[offset : offset + nbytes].view(dtype).reshape(shape)
    for user, offset in scratch:
        user.place(array[offset : offset + user.nbytes])
    namespace["placed"] = array


class _Plan:
    """Where each kernel step writes its result, in one flat array (the arena) made at the
    first replay and reused by every replay after it.

    ``outs``: for a step's index, the code of its out= (", out=bK": the buffer bK, a view of
    the arena; ", out=vN": the input vN, dead after this step; none: a new array). A result
    goes into the arena only if nothing outside the program can ever hold its memory or a
    view of it (it is not returned, handed to ``.grad``, an optimizer or any other call with
    an effect: ``free_after`` says these are never freed). Its block of the arena is taken
    from its first write to the last read of its memory, and placed at the lowest offset no
    block alive then covers, so results of any shape and dtype whose lives do not overlap
    share the arena's bytes (and a product's result never covers its inputs). A step with a
    ``scratch`` (an optimizer's generated update: ``nbytes`` and ``place(memory)``) gets a
    block for its own duration, so its temporaries take the memory of dead intermediates.
    """

    def __init__(self, recorder: Recorder, steps: list, free_after: dict) -> None:
        self.outs: dict[int, str] = {}
        self.blocks: list[list[int]] = []  # [offset, nbytes, last step reading it]
        self.block_of: dict[int, int] = {}  # memory number -> its block
        self.views: dict[str, tuple] = {}  # buffer name -> (offset, shape, dtype)
        self.scratch: list[tuple] = []  # (the step's scratch user, offset)
        memory = recorder.memory
        for index, step in enumerate(steps):
            if step.scratch is not None:
                self.scratch.append((step.scratch, self._place(step.scratch.nbytes, index, index)))
            if step.layout is None and not step.reusable:
                continue
            (number,) = step.writes
            dies = max(free_after[number], index)
            kept = dies >= len(steps)
            reused = next(
                (
                    n
                    for n in step.reusable
                    # a kept result may take a dead input's memory, but not the arena's
                    if free_after[n] == index and not (kept and memory[n] in self.block_of)
                ),
                None,
            )
            if reused is not None:
                self.outs[index] = f", out=v{reused}"
                block = self.block_of.get(memory[reused])
                if block is not None:  # the result lives on in the input's block
                    self.blocks[block][2] = dies
                    self.block_of[memory[number]] = block
            elif step.layout is not None and not kept:
                shape, dtype = step.layout
                offset = self._place(math.prod(shape) * dtype.itemsize, index, dies)
                name = f"b{len(self.views)}"
                self.views[name] = (offset, shape, dtype)
                self.block_of[memory[number]] = len(self.blocks) - 1
                self.outs[index] = f", out={name}"

    def _place(self, nbytes: int, first: int, last: int) -> int:
        """Add a block of ``nbytes`` used from step ``first`` to step ``last``; its offset."""
        taken = sorted((o, o + n) for o, n, until in self.blocks if until >= first)
        offset = 0
        for start, stop in taken:
            if offset + nbytes <= start:
                break
            offset = max(offset, _aligned(stop))
        self.blocks.append([offset, nbytes, last])
        return offset

    @property
    def size(self) -> int:
        return max((o + n for o, n, _ in self.blocks), default=0)


def _free_after(
    recorder: Recorder, steps: list, last_use: dict, inputs: list[int]
) -> dict[int, int]:
    """For each value whose memory a ufunc may overwrite: the step after which nothing reads
    that memory any more, through it or through any other value sharing it. The caller's
    inputs and the values that escape the program's control (handed to .grad, an optimizer,
    an in-place call) are never overwritten."""
    escaped = set(inputs)
    for step in steps:
        if step.effect:
            escaped.update(step.reads, step.writes)
    last_by_memory: dict[int, int] = {}
    memory = recorder.memory
    for number, root in enumerate(memory):
        last_by_memory[root] = max(last_by_memory.get(root, -1), last_use.get(number, -1))
    for number in escaped:
        last_by_memory[memory[number]] = len(steps)
    return {number: last_by_memory[root] for number, root in enumerate(memory)}


def _live_steps(recorder: Recorder, outputs: list[int]) -> list:
    """The steps whose results are used: every step with an effect, and what they and the
    outputs read, transitively (a pure call whose result nobody reads is dead)."""
    live, kept = set(outputs), []
    for step in reversed(recorder.steps):
        if step.effect or live.intersection(step.writes):
            kept.append(step)
            live.update(step.reads)
    kept.reverse()
    return kept
