"""A quick look at convolution speed: the W5 step (small CNN, batch 64) of scratchgrad and
PyTorch, interleaved step by step in one process, so that a busy machine slows both alike.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \\
        .venv/bin/python benchmarks/conv_micro.py [--steps 300] [--numpy]

``benchmarks/run.py`` is the real benchmark (separate processes, rounds, memory); this script is
for trying a change to ``ops/conv.py`` in a minute. ``--numpy`` adds the hand-written NumPy step
as a third column.
"""

from __future__ import annotations

import argparse
import os
import time

import hand_numpy
import numpy as np
import tensor_api
import torch
from workloads import make_problem

import scratchgrad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="timed steps per framework")
    parser.add_argument("--numpy", action="store_true", help="time the hand NumPy step too")
    args = parser.parse_args()
    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    torch.set_num_threads(threads)
    problem = make_problem("W5")
    steps = {
        "scratchgrad": tensor_api.make_step(scratchgrad, problem)[0],
        "pytorch": tensor_api.make_step(torch, problem)[0],
    }
    if args.numpy:
        steps["numpy"] = hand_numpy.make_step(problem)[0]
    for _ in range(10):  # warm up: first-touch pages, BLAS buffers, caches
        for step in steps.values():
            step()
    times = {name: [] for name in steps}
    for _ in range(args.steps):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    reference = np.median(times["pytorch"])
    print(f"W5, {threads} threads, {args.steps} steps each, ms/step:")
    for name, seconds in times.items():
        ms = np.array(seconds) * 1e3
        print(
            f"  {name:12s} median {np.median(ms):6.2f}  min {ms.min():6.2f}  "
            f"({np.median(seconds) / reference:.2f}x pytorch)"
        )


if __name__ == "__main__":
    main()
