"""A recorded step as one Python function: the recorder's lines, with dead calls pruned, the
kernels' results written into buffers kept from one replay to the next (or over an input that
nothing reads afterwards), and each other large array dropped after its last use (so peak
memory stays at eager's).

The generated code reads like the step written by hand with NumPy::

    def replay(inputs, tensors):
        if b0 is None:                             # the first replay makes the buffers
            allocate()
        v0, v1, = inputs
        v2 = k_linear(v0, c2, c3, out=b0)          # Linear.forward(ctx, x, weight, bias)
        v3 = np_tanh(v2, out=v2)                   # over its dead input, so in b0 too
        ...
        v9 = accumulate(c7, v8, True)              # into the weight's .grad
        c9(c10)                                    # SGD.step(optimizer)
        return (v5,)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from scratchgrad.autograd import engine
from scratchgrad.backend import xp
from scratchgrad.jit import kernels
from scratchgrad.jit.recorder import Recorder
from scratchgrad.tensor import Tensor

# Arrays at least this big are released right after their last use; smaller ones live until
# the step ends (a ``del`` costs more than they do).
_RELEASE_SIZE = 4096


def accumulate(leaf: Tensor, array: Any, owned: bool) -> Any:
    """Add a gradient into ``leaf.grad`` as the eager engine does (``owned``: ``.grad`` may
    keep the array itself); the array ``.grad`` holds."""
    g = Tensor._make(array)
    engine._accumulate(leaf, g, False, {g: leaf} if owned else {})
    return leaf.grad.array


_HELPERS = {
    "new": object.__new__,
    "asarray": xp.asarray,
    "make": Tensor._make,
    "accumulate": accumulate,
}


def compile(recorder: Recorder, inputs: list[int], outputs: list[int]) -> tuple[Callable, str]:
    """The replay function (the call's input arrays and tensors in, output arrays out) and
    its source code. The tensors are there for the gradients of tensor arguments, which go
    into the ``.grad`` of the tensors passed to each call (``tensors[i]``)."""
    steps = _live_steps(recorder, outputs)
    last_use = {}
    for index, step in enumerate(steps):
        for number in step.reads:
            last_use[number] = index
    for number in outputs:
        last_use[number] = len(steps)
    free_after = _free_after(recorder, steps, last_use, inputs)
    outs, layouts, buffered = _plan_buffers(recorder, steps, free_after)
    body = ["if b0 is None:  # the first replay makes the buffers", "    allocate()"]
    body = body if layouts else []
    if inputs:
        body.append(", ".join(f"v{n}" for n in inputs) + ", = inputs")
    memory = recorder.memory
    for index, step in enumerate(steps):
        body += [line.replace(kernels.OUT, outs.get(index, "")) for line in step.lines]
        done = [
            f"v{n}"
            for n in sorted(step.reads | set(step.writes))
            if last_use.get(n, -1) <= index
            and recorder.sizes[n] >= _RELEASE_SIZE
            and memory[n] not in buffered  # a buffer stays anyway
        ]
        if done:
            body.append(f"del {', '.join(done)}")
    body.append(f"return ({''.join(f'v{n}, ' for n in outputs)})")
    source = "def replay(inputs, tensors):\n" + "".join(f"    {line}\n" for line in body)
    namespace = {**_HELPERS, **kernels.NAMES, **recorder.constants}
    namespace.update({f"b{k}": None for k in range(len(layouts))})
    namespace["allocate"] = functools.partial(_allocate, namespace, layouts)
    exec(source, namespace)  # noqa: S102  (the code is ours, built from the recorded calls)
    return namespace["replay"], source


def _allocate(namespace: dict, layouts: list[tuple]) -> None:
    """Make the program's buffers ``b0, b1, ...`` (at its first replay, not when recorded:
    the recording calls run with eager's memory, and a recording that is recorded again is
    dropped before it ever replays)."""
    namespace.update({f"b{k}": xp.empty(shape, dtype) for k, (shape, dtype) in enumerate(layouts)})


def _plan_buffers(
    recorder: Recorder, steps: list, free_after: dict
) -> tuple[dict[int, str], list[tuple], set]:
    """Where each kernel step writes its result: for the step's index, the code of its out=
    (", out=bK": buffer K, kept across replays; ", out=vN": the input vN, dead after this
    step; none: a new array), the buffers' (shape, dtype), and the memories living in them.

    A result goes into a buffer only if nothing outside the program can ever hold its memory
    or a view of it (it is not returned, handed to ``.grad``, an optimizer or any other call
    with an effect: ``free_after`` says these are never freed). A buffer is taken again by a
    result of its layout once every value in its memory has been read for the last time (a
    product's result never goes into a buffer one of its inputs is in)."""
    end, memory = len(steps), recorder.memory
    outs: dict[int, str] = {}
    layouts: list[tuple] = []
    busy_until: list[int] = []  # per buffer: the last step that reads what it holds
    buffer_of: dict[int, int] = {}  # memory number -> the buffer it lives in
    for index, step in enumerate(steps):
        if step.layout is None and not step.reusable:
            continue
        (number,) = step.writes
        dies = max(free_after[number], index)
        reused = next(
            (
                n
                for n in step.reusable
                # a kept result may take a dead input's memory, but not a buffer's
                if free_after[n] == index and (dies < end or memory[n] not in buffer_of)
            ),
            None,
        )
        if reused is not None:
            outs[index] = f", out=v{reused}"
            buffer = buffer_of.get(memory[reused])
        elif step.layout is not None and dies < end:
            buffer = next(
                (
                    k
                    for k, layout in enumerate(layouts)
                    if layout == step.layout and busy_until[k] < index
                ),
                None,
            )
            if buffer is None:
                buffer = len(layouts)
                layouts.append(step.layout)
                busy_until.append(dies)
            outs[index] = f", out=b{buffer}"
        else:
            continue
        if buffer is not None:
            buffer_of[memory[number]] = buffer
            busy_until[buffer] = dies
    return outs, layouts, set(buffer_of)


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
            escaped |= step.reads | set(step.writes)
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
            live |= step.reads
    kept.reverse()
    return kept
