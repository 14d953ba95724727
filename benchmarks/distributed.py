"""Benchmark D1: data-parallel training throughput with ``DistributedDataParallel`` over MPI.

W4 (the wide MLP, global batch 256) and W5 (the small CNN, global batch 64) train on 1 and on 2
processes started by ``mpiexec``, each process with one BLAS thread and its share of the global
batch; the table gives the time per step, the samples per second, the speed-up over one process
and the scaling efficiency (speed-up / processes)::

    .venv/bin/python benchmarks/distributed.py                 # both workloads, 1 and 2 processes
    .venv/bin/python benchmarks/distributed.py --steps 20 --workloads W4

One process runs the plain module (no DDP, no communication): the baseline a user would have.
The row "2, no all-reduce" runs two processes of plain modules, each on its half batch: what the
machine's cores give when nothing is communicated (on a shared machine, less than 2x).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
GLOBAL_BATCH = {"W4": 256, "W5": 64}
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def worker(workload: str, steps: int, rounds: int, reduce: bool) -> None:
    """One process of the job: time ``rounds`` rounds of ``steps`` steps; rank 0 prints JSON."""
    from tensor_api import build_model, make_optimizer
    from workloads import make_problem

    import scratchgrad as sg
    import scratchgrad.distributed as dist
    from scratchgrad.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    problem = make_problem(workload)
    model = build_model(sg, problem)
    if size > 1 and reduce:
        model = DistributedDataParallel(model)
    optimizer = make_optimizer(sg, problem, model.parameters())
    batch = GLOBAL_BATCH[workload]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, *problem.batches[0][0].shape[1:]), dtype=np.float32)
    y = rng.integers(0, 10, size=batch)
    share = slice(rank * batch // size, (rank + 1) * batch // size)
    xs, ys = sg.from_numpy(x[share]), sg.from_numpy(y[share])

    def step() -> None:
        optimizer.zero_grad()
        sg.nn.functional.cross_entropy(model(xs), ys).backward()
        optimizer.step()

    for _ in range(5):  # warm-up: first-call costs, allocator
        step()
    seconds = []
    for _ in range(rounds):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        dist.barrier()
        seconds.append((time.perf_counter() - start) / steps)
    if rank == 0:
        per_step = statistics.median(seconds)
        grads = sum(p.numel() for p in model.parameters()) * 4
        print(json.dumps({"ms": per_step * 1e3, "samples": batch / per_step, "bytes": grads}))
    dist.destroy_process_group()


def measure(workload: str, nproc: int, steps: int, rounds: int, reduce: bool = True) -> dict:
    """Run the job under ``mpiexec -n nproc``; rank 0's JSON line."""
    from scratchgrad.distributed.launch import mpiexec_command

    env = dict(os.environ, **ONE_THREAD)
    me = [sys.executable, str(Path(__file__).resolve()), "--worker", workload]
    options = ["--steps", str(steps), "--rounds", str(rounds), *([] if reduce else ["--no-reduce"])]
    command = mpiexec_command(nproc, [*me, *options])
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"D1 {workload} on {nproc} processes failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(workloads: list[str], nprocs: list[int], steps: int, rounds: int, repeats: int) -> str:
    """The markdown table: each configuration run ``repeats`` times, in turn with the others, so
    that a speed-up compares runs made close in time; the median and the range of the repeats."""
    rows = [
        "| workload | processes | global batch | ms/step | samples/s | speed-up [range] "
        "| efficiency | all-reduced per step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for workload in workloads:
        configs = [(n, True) for n in nprocs] + [(n, False) for n in nprocs if n > 1]
        results = [[measure(workload, n, steps, rounds, r) for n, r in configs]]
        for _ in range(repeats - 1):
            results.append([measure(workload, n, steps, rounds, r) for n, r in configs])
        for i, (nproc, reduce) in enumerate(configs):
            ms = statistics.median(run[i]["ms"] for run in results)
            speedups = sorted(run[0]["ms"] / run[i]["ms"] for run in results)
            speedup = statistics.median(speedups)
            label = nproc if reduce else f"{nproc}, no all-reduce"
            reduced = f"{results[0][i]['bytes'] / 1e6:.2f} MB" if nproc > 1 and reduce else "-"
            rows.append(
                f"| {workload} | {label} | {GLOBAL_BATCH[workload]} | {ms:.2f} | "
                f"{GLOBAL_BATCH[workload] / ms * 1e3:,.0f} | {speedup:.2f}x "
                f"[{speedups[0]:.2f}-{speedups[-1]:.2f}] | {speedup / nproc:.0%} | {reduced} |"
            )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="W4,W5")
    parser.add_argument("--nproc", default="1,2", help="comma-separated process counts")
    parser.add_argument("--steps", type=int, default=30, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each configuration")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--no-reduce", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.steps, args.rounds, reduce=not args.no_reduce)
        return
    nprocs = [int(n) for n in args.nproc.split(",")]
    print(table(args.workloads.split(","), nprocs, args.steps, args.rounds, args.repeats))


if __name__ == "__main__":
    main()
