"""The matrix products of W4 and W5 computed directly and swapped (``(b.T @ a.T).T``, as
``scratchgrad.jit`` may replay them, see docs/jit.md): their timings with one BLAS thread,
and whether the two ways (and matmul of stacks of one matrix, conv2d's call) give the same
bits with each BLAS thread count, each count in its own process (BLAS reads it at start)::

    PYTHONPATH=src .venv/bin/python benchmarks/gemm_orientation.py --threads 1,2,4
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

# (name, a's shape, b's shape, whether b is a transposed view, whether a bias is added)
PRODUCTS = [
    ("W4 layer 1 forward x @ W1.T + b1", (128, 784), (512, 784), True, True),
    ("W4 layer 2 forward h @ W2.T + b2", (128, 512), (512, 512), True, True),
    ("W4 layer 2 input gradient dz @ W2", (128, 512), (512, 512), False, False),
    ("W5 conv2 weight gradient", (16, 12544), (73, 12544), True, False),
    ("W5 conv1 weight gradient", (8, 50176), (10, 50176), True, False),
]


def operands(a_shape, b_shape, transposed, with_bias, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(a_shape, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    bias = rng.standard_normal(b_shape[0] if transposed else b_shape[1], dtype=np.float32)
    return a, b.T if transposed else b, bias if with_bias else None


def results(a, b, bias):
    """The product's bytes computed directly, swapped, and as matmul of stacks of one."""
    from scratchgrad.jit import gemm

    direct = np.dot(a, b)
    if bias is not None:
        direct += bias
    swapped = gemm.swapped(a, b, scratch_for(a, b), bias, direct.shape)
    stacked = np.matmul(a[None], b[None])[0]
    if bias is not None:
        stacked += bias
    return {"direct": direct, "swapped": swapped, "matmul": stacked}


def digests() -> None:
    """One JSON line per product: the digest of each way's bytes."""
    for seed, (name, *shapes) in enumerate(PRODUCTS):
        found = results(*operands(*shapes, seed))
        ways = {k: hashlib.md5(v.tobytes()).hexdigest()[:10] for k, v in found.items()}
        print(json.dumps({"product": name, "digests": ways}))


def scratch_for(a, b):
    """The scratch memory a swapped ``a @ b`` writes into, as a program lends it."""
    from scratchgrad.jit import gemm

    scratch = gemm.Scratch((b.shape[1], len(a)), a.dtype)
    scratch.place(np.empty(scratch.nbytes, np.uint8))
    return scratch


def timings() -> None:
    """Each product's median of 5 timings of each way, taken in turns (as the choice)."""
    for seed, (name, *shapes) in enumerate(PRODUCTS):
        taken = median_timings(*operands(*shapes, seed))
        print(f"  {name}: {taken[0] * 1e6:.0f} us direct, {taken[1] * 1e6:.0f} us swapped")


def median_timings(a, b, bias) -> list[float]:
    from scratchgrad.jit import gemm

    out = np.empty((len(a), b.shape[1]), np.float32)
    scratch = scratch_for(a, b)

    def direct():
        np.dot(a, b, out=out)
        if bias is not None:
            np.add(out, bias, out=out)

    return gemm.median_timings(direct, lambda: gemm.swapped(a, b, scratch, bias, out.shape, out))


def child(flag: str, threads: str) -> str:
    """This script's output run with ``flag`` in a process with ``threads`` BLAS threads."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    command = [sys.executable, __file__, flag]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", default="1,2", help="BLAS thread counts to compare")
    parser.add_argument("--digests", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--timings", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.digests or args.timings:
        return digests() if args.digests else timings()
    by_count = {}
    for threads in args.threads.split(","):
        by_count[threads] = [
            json.loads(line) for line in child("--digests", threads).split("\n") if line
        ]
    for i, (name, *_) in enumerate(PRODUCTS):
        print(name)
        for threads, rows in by_count.items():
            ways = rows[i]["digests"]
            same = "the same bits" if len(set(ways.values())) == 1 else "OTHER BITS"
            print(f"  {threads} thread(s): {same} direct, swapped, matmul {ways}")
    print("one BLAS thread, the median of 5 timings of each way, taken in turns:")
    print(child("--timings", "1"), end="")


if __name__ == "__main__":
    main()
