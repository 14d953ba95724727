"""A training step with ``scratchgrad.compile(model)`` against the same step eager, and against
the whole step under ``scratchgrad.jit``, on W1's and W4's sizes (docs/jit.md quotes a run).

The loop is a PyTorch script's: ``zero_grad``, the compiled model's forward, the loss outside it,
``backward()``, ``opt.step()``. The three variants are timed in turns, in samples of ``--repeat``
steps; the medians of the samples are printed with their ratios to eager's.

    PYTHONPATH=src python benchmarks/compiled_module.py --samples 30
"""

from __future__ import annotations

import argparse
import statistics
import time

import tensor_api
from workloads import make_problem

import scratchgrad as sg


def make_step(workload: str, variant: str):
    """One training step of ``workload`` as ``variant`` (eager, compile, jit), with the model,
    optimizer, loss and batch of the workload's own definition (benchmarks/workloads.py)."""
    problem = make_problem(workload)
    model = tensor_api.build_model(sg, problem)
    net = sg.compile(model) if variant == "compile" else model
    opt = tensor_api.make_optimizer(sg, problem, net.parameters())
    criterion = getattr(sg.nn.functional, {"mse": "mse_loss"}.get(problem.loss, problem.loss))
    x, y = (sg.from_numpy(a) for a in problem.batches[0])

    def step(x, y):
        opt.zero_grad()
        loss = criterion(net(x), y)
        loss.backward()
        opt.step()
        return loss

    if variant == "jit":
        step = sg.jit(step)
    return lambda: step(x, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="W1,W4")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=0, help="steps per sample (0: ~50 ms)")
    args = parser.parse_args()
    variants = ("eager", "compile", "jit")
    for workload in args.workloads.split(","):
        steps = {v: make_step(workload, v) for v in variants}
        for step in steps.values():  # eager call, recordings, warm caches
            for _ in range(5):
                step()
        repeat = args.repeat or max(1, round(0.05 / _seconds(steps["eager"], 3) * 3))
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.samples):
            for variant, step in steps.items():
                times[variant].append(_seconds(step, repeat) / repeat)
        eager = statistics.median(times["eager"])
        for variant in variants:
            median = statistics.median(times[variant])
            print(
                f"{workload} {variant:8s} {median * 1e6:9.1f} us/step  "
                f"{median / eager:.2f}x eager  ({args.samples} samples of {repeat} steps)"
            )


def _seconds(step, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        step()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
