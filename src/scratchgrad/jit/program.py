"""A recorded step as one Python function: the recorder's lines, with dead calls pruned and
each large array dropped after its last use (so peak memory stays at eager's).

The generated code reads like the step written by hand with NumPy::

    def replay(inputs, tensors):
        v0, v1 = inputs
        x0 = new(c0); v2 = c1(x0, v0, c2, c3)     # Linear.forward(ctx, x, weight, bias)
        ...
        v9 = accumulate(c7, v8, True)              # into the weight's .grad
        c9(c10)                                    # SGD.step(optimizer)
        return (v5,)
"""

from __future__ import annotations

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
    body = []
    if inputs:
        body.append(", ".join(f"v{n}" for n in inputs) + ", = inputs")
    for index, step in enumerate(steps):
        reused = next((n for n in step.reusable if free_after.get(n, -2) == index), None)
        out = "" if reused is None else f", out=v{reused}"
        body += [line.replace(kernels.OUT, out) for line in step.lines]
        done = [
            f"v{n}"
            for n in sorted(step.reads | set(step.writes))
            if last_use.get(n, -1) <= index and recorder.sizes[n] >= _RELEASE_SIZE
        ]
        if done:
            body.append(f"del {', '.join(done)}")
    body.append(f"return ({''.join(f'v{n}, ' for n in outputs)})")
    source = "def replay(inputs, tensors):\n" + "".join(f"    {line}\n" for line in body)
    namespace = {**_HELPERS, **kernels.NAMES, **recorder.constants}
    exec(source, namespace)  # noqa: S102  (the code is ours, built from the recorded calls)
    return namespace["replay"], source


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
