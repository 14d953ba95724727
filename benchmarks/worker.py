"""One framework running one workload in its own process, driven by ``run.py`` over pipes.

Usage: ``python benchmarks/worker.py FRAMEWORK WORKLOAD``. The worker builds the step, answers
with one JSON line (the first loss, its RSS after imports, the thread pools in use), then serves
requests, one JSON object per line on stdin, each answered by one JSON line on stdout:

- ``{"cmd": "round", "seconds": S}``: warm up, then time about ``S`` seconds of steps in
  samples; answer the median seconds per step. The first round also fixes the sample size.
- ``{"cmd": "epochs", "epochs": N}``: W3 only; train N epochs from the initial weights, answer
  the wall time and test accuracy.
- ``{"cmd": "peak"}``: answer the peak RSS of this process so far.
- ``{"cmd": "reset_peak"}``: start the peak RSS anew from the present RSS, free heap handed
  back first (``start_peak_anew``), so a later ``peak`` is the steps' own: the rounds after
  the first, whose steps replay what the first round's calls recorded and compiled. Answers
  whether it could.

A fresh worker per workload keeps each peak RSS about that workload alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import resource
import statistics
import sys
import time
import traceback
from collections.abc import Callable

THREADS = int(os.environ.get("OMP_NUM_THREADS", "2"))  # run.py sets it for every worker
MIN_SAMPLE_SECONDS = 100e-6  # shorter steps are timed in groups, so the clock's cost stays small
# calls before the first round sizes its samples: a jitted step records at its second and third
# call, each many times slower than a replay, and sized by those its rounds came out ~60x short
SIZING_WARMUP_CALLS = 5


def rss_mb() -> float:
    """The peak resident set size of this process so far, in MB: Linux's ``VmHWM``, else
    ``ru_maxrss``. The kernel counts resident pages per CPU and adds a CPU's count into the
    total that ``ru_maxrss`` reads 32 pages at a time, while ``/proc`` adds the CPUs' counts
    up: on this machine (Linux 6.18), touching pages one by one moved ``ru_maxrss`` in steps
    of 128 KB, up to 188 KB behind ``VmRSS``, and ``VmHWM`` by 32 KB per 8 pages."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # in KiB
    except OSError:  # not Linux
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(framework: str, workload_id: str) -> tuple[Callable, Callable | None]:
    """Import the framework and return its ``make_step(problem)`` and ``train_digits``."""
    if framework in ("numpy", "scratchgrad", "scratchgrad-loop", "scratchgrad-jit"):
        # The same opt-in for the engine and its NumPy floor (PyTorch and JAX bring their own
        # allocators): freed temporaries are kept for the next step.
        from scratchgrad.backend import keep_freed_memory

        keep_freed_memory()
    if framework == "numpy":
        import hand_numpy

        return hand_numpy.make_step, hand_numpy.train_digits
    # XLA sizes its thread pool by the CPUs it may use; pin it to the threads others get.
    if framework == "jax" and hasattr(os, "sched_setaffinity"):  # Linux
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:THREADS])
    if workload_id.startswith("P1"):
        import population

        if framework == "pytorch":
            import torch

            torch.set_num_threads(THREADS)
        return (lambda problem: population.make_step(framework, problem)), None
    if framework == "jax":
        import jax_jit

        return jax_jit.make_step, jax_jit.train_digits
    if workload_id in ("P2", "P3"):
        import evo_bench

        return (lambda problem: evo_bench.make_step(framework, problem)), None
    if workload_id == "S1":
        import scalar

        return (lambda problem: scalar.make_step(framework, problem)), None
    if framework in ("pytorch", "scratchgrad", "scratchgrad-jit"):
        import tensor_api

        if framework == "pytorch":
            import torch as lib

            lib.set_num_threads(THREADS)
        else:
            import scratchgrad as lib
        jit = framework == "scratchgrad-jit"  # the same step under scratchgrad.jit

        return (
            lambda problem: tensor_api.make_step(lib, problem, jit),
            lambda problem, epochs: tensor_api.train_digits(lib, problem, epochs, jit),
        )
    raise ValueError(f"unknown framework {framework!r}")


def thread_pools() -> list[dict]:
    """The BLAS and OpenMP libraries loaded in this process, as threadpoolctl sees them."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    keys = ("internal_api", "version", "architecture", "threading_layer", "num_threads", "prefix")
    return [{k: pool.get(k) for k in keys} for pool in threadpool_info()]


def start_peak_anew() -> bool:
    """Hand the heap's free memory back to the system (glibc's ``malloc_trim``), then set the
    peak RSS (``VmHWM``) to the present RSS (Linux's ``clear_refs``), so that a later ``peak``
    counts only what runs after. Without the trim the peak would start from whatever free
    memory earlier work left resident: after the same ``import scratchgrad`` two workers held
    55 or 60 MB (free heap below a live block, by the chance of layout), and their growth
    from there differed by as much. False where the peak cannot be reset (not Linux, or not
    allowed)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


class Timer:
    """Times a step in samples of ``repeat`` calls; the sizes are fixed by the first round.

    The rounds after the first allocate nothing of their own: the samples go into a list made
    once and sorted in place for the median. A new list of floats per round (up to 2,000, about
    60 KB with the sorted copy) took pages after ``reset_peak``, where a jitted step, which
    leaves no free memory behind it, had none to give: the peak of W1's replayed steps grew
    by 68-72 KB, the timings' own, against 0-12 KB for eager steps."""

    def __init__(self, step: Callable[[], object]) -> None:
        self.step = step
        self.repeat = 0
        self.times: list[float] = []

    def sample(self) -> float:
        step, repeat = self.step, self.repeat
        start = time.perf_counter()
        for _ in range(repeat):
            step()
        return (time.perf_counter() - start) / repeat

    def round(self, seconds: float) -> dict:
        if not self.repeat:
            self.repeat = 1
            for _ in range(SIZING_WARMUP_CALLS):
                self.step()
            guess = statistics.median(self.sample() for _ in range(3))
            self.repeat = max(1, math.ceil(MIN_SAMPLE_SECONDS / guess))
            self.times = [0.0] * max(3, min(2000, round(seconds / (guess * self.repeat))))
        times = self.times
        for _ in range(max(1, len(times) // 10)):  # warm caches and allocator after the others
            self.sample()
        for i in range(len(times)):
            times[i] = self.sample()
        times.sort()
        middle = len(times) // 2
        median = times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
        return {
            "median": median,
            "samples": len(times),
            "repeat": self.repeat,
            "cpu_s": time.process_time(),  # all threads: lets the runner spot other processes
        }


def serve(framework: str, workload_id: str, reply: Callable[[dict], None]) -> None:
    make_step, train_digits = load(framework, workload_id)
    start_peak_anew()
    rss_import = rss_mb()
    from workloads import make_problem

    problem = make_problem(workload_id)
    step, first_loss = make_step(problem)
    timer = Timer(step)
    reply(
        {
            "first_loss": float(first_loss),
            "cpu_s": time.process_time(),
            "rss_import_mb": rss_import,
            "thread_pools": thread_pools(),
        }
    )
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "round":
            reply(timer.round(request["seconds"]))
        elif request["cmd"] == "epochs":
            start = time.perf_counter()
            accuracy = train_digits(problem, request["epochs"])
            reply({"seconds": time.perf_counter() - start, "accuracy": accuracy})
        elif request["cmd"] == "peak":
            reply({"peak_rss_mb": rss_mb()})
        elif request["cmd"] == "reset_peak":
            reply({"reset": start_peak_anew()})


def main() -> None:
    framework, workload_id = sys.argv[1:3]
    # Keep the protocol on our own copy of stdout and send everything else that writes to file
    # descriptor 1 (libraries' banners, C code) to stderr, so no stray text corrupts a reply.
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def reply(message: dict) -> None:
        protocol.write(json.dumps(message) + "\n")
        protocol.flush()

    try:
        serve(framework, workload_id, reply)
    except Exception as error:
        traceback.print_exc()
        reply({"error": f"{type(error).__name__}: {error}"})


if __name__ == "__main__":
    main()
