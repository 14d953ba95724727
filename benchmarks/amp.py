"""Mixed precision on W4 and W5: step time, the bytes a forward pass saves for backward, and the
memory NumPy holds after the forward and at the peak of a step, float32 against autocast
(bfloat16, float16).

The saved bytes and the allocations are counted, not timed, so they do not depend on how busy
the machine is; the step times (wall clock and the process's CPU time) are medians of
interleaved rounds in one process. BLAS threads are NumPy's default; on a busy machine
``OMP_NUM_THREADS=1`` makes the CPU times comparable.

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


def allocated_bytes(run) -> tuple[int, int]:
    """What ``run()`` leaves allocated (NumPy's allocations, tracemalloc) and its peak, over the
    start; the result of ``run`` is kept alive until both are read."""
    tracemalloc.start()
    try:
        result = run()  # noqa: F841  (holds the graph of a forward)
        return tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()


def timed(step, steps: int) -> tuple[float, float]:
    """Milliseconds per step, wall clock and CPU time, over ``steps`` steps after a warm one."""
    step()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return ((time.perf_counter() - wall) / steps * 1e3, (time.process_time() - cpu) / steps * 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    keep_freed_memory()
    print(
        "| workload | mode | step ms (wall) | ratio | step ms (CPU) | ratio | activations saved "
        "| ratio | weight copies saved | held after forward | ratio | peak of a step |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for workload in ("W4", "W5"):
        problem = make_problem(workload)
        steps = {mode: make_step(problem, dtype) for mode, dtype in MODES.items()}
        times = {mode: [] for mode in MODES}
        for _ in range(args.rounds):  # interleaved, so a busy moment hits every mode alike
            for mode, (_, step) in steps.items():
                times[mode].append(timed(step, args.steps))
        rows = {}
        for mode, (forward, step) in steps.items():
            wall, cpu = (statistics.median(t) for t in zip(*times[mode]))
            saved, copies = saved_bytes(forward())
            held = allocated_bytes(forward)[0]
            rows[mode] = (wall, cpu, saved, copies, held, allocated_bytes(step)[1])
        base = rows["float32"]
        for mode, (wall, cpu, saved, copies, held, peak) in rows.items():
            print(
                f"| {workload} | {mode} | {wall:.2f} | {wall / base[0]:.2f}x | {cpu:.2f} | "
                f"{cpu / base[1]:.2f}x | {saved / 2**20:.2f} MiB | {saved / base[2]:.2f}x | "
                f"{copies / 2**20:.2f} MiB | {held / 2**20:.2f} MiB | {held / base[4]:.2f}x | "
                f"{peak / 2**20:.2f} MiB |"
            )


if __name__ == "__main__":
    main()
