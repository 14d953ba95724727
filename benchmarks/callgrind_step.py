"""Instructions per eager scratchgrad step of a workload, or of one phase of it, by callgrind.

Usage (from the repository root, valgrind installed)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=src \\
        .venv/bin/python benchmarks/callgrind_step.py W3 [--phase loss] [--steps 20]

Runs itself twice under ``valgrind --tool=callgrind``, for N and 2N steps after 20 warm-up
steps, and prints the difference divided by N (docs/benchmarks.md, "Eager overhead since
8eaf157"). Only the calls of the measured phase are collected: each runs through ``eval``,
and callgrind collects inside ``builtin_eval`` alone (the namedtuples the imports make go
through ``eval`` too, the same count in both runs, so the difference drops them). Phases:
``zero`` (zero_grad), ``model``, ``loss``, ``backward``, ``step`` (the optimizer), or ``all``.
One BLAS thread, ``PYTHONHASHSEED=0``, and glibc's malloc set as ``keep_freed_memory`` sets
it (made here with ctypes, so the script also measures trees older than that function).
Compare two trees at paths of the same length: counts move by about 1k with the path.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import os
import re
import subprocess
import sys
import tempfile

PHASES = ("zero", "model", "loss", "backward", "step")
CALL = compile("call()", "<measured>", "eval")  # compiled once: a string would be parsed per call


def measure(workload: str, steps: int, phase: str) -> None:
    """Build the workload's eager step and run it, the phase's calls through ``eval``."""
    libc = ctypes.CDLL("libc.so.6")  # keep_freed_memory's settings (glibc's <malloc.h>)
    libc.mallopt(-1, 1 << 30)
    libc.mallopt(-3, 32 << 20)
    import threadpoolctl

    threadpoolctl.threadpool_limits(1)
    import tensor_api
    from workloads import make_problem

    import scratchgrad as lib

    problem = make_problem(workload)
    if problem.model == "op":  # O1: one phase only
        step, _ = tensor_api.make_step(lib, problem)
        calls = {"all": step}
    else:
        model = tensor_api.build_model(lib, problem)
        optimizer = tensor_api.make_optimizer(lib, problem, model.parameters())
        loss_fn = getattr(lib.nn.functional, {"mse": "mse_loss"}.get(problem.loss, problem.loss))
        batches = itertools.cycle(
            [(lib.from_numpy(x), lib.from_numpy(y)) for x, y in problem.batches]
        )
        state = {}
        calls = {
            "zero": optimizer.zero_grad,
            "model": lambda: state.update(out=model(state["x"])),
            "loss": lambda: state.update(loss=loss_fn(state["out"], state["y"])),
            "backward": lambda: state["loss"].backward(),
            "step": optimizer.step,
        }

    def run(measured: bool) -> None:
        if "zero" in calls:
            state["x"], state["y"] = next(batches)
        for name, call in calls.items():
            if measured and phase in (name, "all"):
                eval(CALL, {"call": call})  # noqa: S307  (collected by callgrind)
            else:
                call()

    for _ in range(20):
        run(False)
    for _ in range(steps):
        run(True)


def collected(workload: str, steps: int, phase: str) -> int:
    """The instructions callgrind collects in one run of ``steps`` steps."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            "valgrind", "--tool=callgrind", "--collect-atstart=no",
            "--toggle-collect=builtin_eval", f"--callgrind-out-file={folder}/out",
            sys.executable, __file__, workload, "--steps", str(steps), "--phase", phase,
            "--inner",
        ]  # fmt: skip
        env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        log = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stderr
    return int(re.search(r"Collected : (\d+)", log).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("--steps", type=int, default=20, help="N (default 20)")
    parser.add_argument("--phase", choices=("all", *PHASES), default="all")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if args.inner:
        measure(args.workload, args.steps, args.phase)
        return
    once = collected(args.workload, args.steps, args.phase)
    twice = collected(args.workload, 2 * args.steps, args.phase)
    print(f"{args.workload} {args.phase}: {(twice - once) // args.steps} instructions per step")


if __name__ == "__main__":
    main()
