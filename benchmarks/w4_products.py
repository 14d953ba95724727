"""W4's jitted step against its eight matrix products alone (issue 14's aim: at most 1.4x).

The products have the shapes and operand layouts of the jitted program's (``x @ W.T`` for the
forward, ``g.T @ a`` for the weight gradients, ``g @ W`` for the input gradients), written into
buffers as the program writes them. The two run interleaved in one process, in blocks of 40
steps, and the ratio of each pair of blocks is reported::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        PYTHONPATH=src .venv/bin/python benchmarks/w4_products.py --blocks 20
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import tensor_api
from workloads import make_problem

import scratchgrad


def products() -> Callable[[], None]:
    """W4's eight products (784-512-512-10, batch 128, float32) on random operands."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784), dtype=np.float32)
    w1, w2, w3 = (
        rng.standard_normal(s, dtype=np.float32) for s in [(512, 784), (512, 512), (10, 512)]
    )
    g3 = rng.standard_normal((128, 10), dtype=np.float32)
    h1, h2, d2, d1 = (np.empty((128, 512), np.float32) for _ in range(4))
    logits = np.empty((128, 10), np.float32)

    def run() -> None:
        np.dot(x, w1.T, out=h1)
        np.dot(h1, w2.T, out=h2)
        np.dot(h2, w3.T, out=logits)
        np.dot(g3.T, h2)
        np.dot(g3, w3, out=d2)
        np.dot(d2.T, h1)
        np.dot(d2, w2, out=d1)
        np.dot(d1.T, x)

    return run


def seconds_per_call(call: Callable[[], object], calls: int = 40) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20)
    args = parser.parse_args()
    scratchgrad.backend.keep_freed_memory()
    step, _ = tensor_api.make_step(scratchgrad, make_problem("W4"), jit=True)
    for _ in range(5):  # records and compiles
        step()
    product_calls = products()
    steps, alone = [], []
    for _ in range(args.blocks):
        steps.append(seconds_per_call(step))
        alone.append(seconds_per_call(product_calls))
    ratios = [s / p for s, p in zip(steps, alone)]
    print(
        f"jitted step {statistics.median(steps) * 1e3:.3f} ms, products alone "
        f"{statistics.median(alone) * 1e3:.3f} ms: {statistics.median(ratios):.3f}x "
        f"[{min(ratios):.3f}-{max(ratios):.3f}]"
    )


if __name__ == "__main__":
    main()
