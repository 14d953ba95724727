"""Mixed precision on W4 and W5: step time, the bytes a forward pass saves for backward, and the
peak of NumPy's allocations during a step, float32 against autocast (bfloat16, float16).

The saved bytes and the allocation peak are counted, not timed, so they do not depend on how
busy the machine is; the step times are medians of interleaved rounds in one process.

    python benchmarks/amp.py [--rounds 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import tracemalloc

import tensor_api
from workloads import make_problem

import scratchgrad as sg
from scratchgrad.autograd.function import Function
from scratchgrad.backend import keep_freed_memory
from scratchgrad.ops.movement import Copy

MODES = {"float32": None, "bfloat16": sg.bfloat16, "float16": sg.float16}


def make_step(problem, dtype):
    """W4's or W5's training step, its forward under autocast when ``dtype`` is given."""
    model = tensor_api.build_model(sg, problem)
    optimizer = tensor_api.make_optimizer(sg, problem, model.parameters())
    x, y = (sg.from_numpy(a) for a in problem.batches[0])
    region = sg.autocast("cpu", dtype=dtype) if dtype is not None else contextlib.nullcontext()

    def forward():
        with region:
            return sg.nn.functional.cross_entropy(model(x), y)

    def step():
        optimizer.zero_grad()
        forward().backward()
        optimizer.step()

    return forward, step


def saved_bytes(loss) -> tuple[int, int]:
    """What the graph behind ``loss`` keeps for backward, each array once, as (activations,
    16-bit copies of the weights); leaves (the weights themselves, the input) are not counted.
    """
    seen, activations, weight_casts, stack = set(), 0, 0, [loss._ctx]
    while stack:
        node = stack.pop()
        if not isinstance(node, Function) or id(node) in seen:
            continue
        seen.add(id(node))
        for value, _, _ in node.saved or ():
            array = getattr(value, "array", value)
            if not hasattr(array, "nbytes") or id(array) in seen:
                continue
            seen.add(id(array))
            maker = getattr(value, "_ctx", None)
            if isinstance(value, sg.Tensor) and maker is None:
                continue  # a leaf
            if isinstance(maker, Copy) and isinstance(maker.parents[0], sg.Tensor):
                weight_casts += array.nbytes  # autocast's copy of a weight
            else:
                activations += array.nbytes
        stack.extend(node.parents)
    return activations, weight_casts


def peak_bytes(step) -> int:
    """The peak of NumPy's allocations (tracemalloc) during one step, over the start."""
    step()  # warm: optimizer state exists
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    keep_freed_memory()
    print(
        "| workload | mode | step ms (median) | ratio | activations saved | ratio "
        "| weight copies saved | peak allocated |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for workload in ("W4", "W5"):
        problem = make_problem(workload)
        steps = {mode: make_step(problem, dtype) for mode, dtype in MODES.items()}
        times = {mode: [] for mode in MODES}
        for _ in range(args.rounds):  # interleaved, so a busy moment hits every mode alike
            for mode, (_, step) in steps.items():
                step()
                start = time.perf_counter()
                for _ in range(args.steps):
                    step()
                times[mode].append((time.perf_counter() - start) / args.steps * 1e3)
        base_time = statistics.median(times["float32"])
        base_saved = saved_bytes(steps["float32"][0]())[0]
        for mode, (forward, step) in steps.items():
            ms, (saved, copies) = statistics.median(times[mode]), saved_bytes(forward())
            print(
                f"| {workload} | {mode} | {ms:.2f} | {ms / base_time:.2f}x | "
                f"{saved / 2**20:.2f} MiB | {saved / base_saved:.2f}x | {copies / 2**20:.2f} MiB "
                f"| {peak_bytes(step) / 2**20:.2f} MiB |"
            )


if __name__ == "__main__":
    main()
