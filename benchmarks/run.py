"""Run the benchmark workloads for every framework and write the comparison table.

``make bench`` runs this file. Each framework runs each workload in its own worker process
(``worker.py``); the frameworks take turns round by round (A B C A B C ...), so drift in the
machine's speed hits all of them alike, and the ratios compare medians from the same run.

    python benchmarks/run.py                      # everything, 5 rounds
    python benchmarks/run.py --workloads W1,O1    # some workloads ("L" means all of L-*)
    python benchmarks/run.py --quick              # fewer, shorter rounds: a smoke run

The table goes to stdout and, with the raw numbers, to ``benchmarks/results/latest.{md,json}``.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workloads import WORKLOADS, Workload, expand

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
THREADS = 2  # for every framework, unless --threads says otherwise
QUIET = 0.05  # above this share of CPU time used by others, the table says the machine was busy
STEADY = 0.10  # above this spread of the host's speed (HostSpeed), the table says it was unsteady
FIRST_LOSS_RTOL = 1e-4  # float32 sums in a different order differ in the last digits only
EPOCHS = 10  # W3's training run
EPOCH_RUNS = 3  # its wall time is the median of this many runs (one is too noisy)
ADDR_NO_RANDOMIZE = 0x0040000  # from Linux's <sys/personality.h>


def same_layout() -> None:
    """Run in each worker before it starts (Linux): turn off address space randomization, so
    that every worker maps its libraries, heap and stack at the same addresses. A library's
    code pages become resident in aligned windows around each page used (the kernel's fault
    around), so with random addresses the same calls cost another number of resident pages in
    each process: making W2's problem and step took 192 KB of NumPy's ``_generator`` module
    in one process and 148 KB in three others, and a whole eager W2 worker grew 544 KB or
    596 KB. Without randomization each grew the same in every run."""
    libc = ctypes.CDLL(None)
    libc.personality(libc.personality(0xFFFFFFFF) | ADDR_NO_RANDOMIZE)


class Worker:
    """A ``worker.py`` process: one framework, one workload, answering JSON requests."""

    def __init__(self, framework: str, workload_id: str, threads: int = THREADS) -> None:
        n = str(threads)
        env = dict(os.environ, OMP_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, MKL_NUM_THREADS=n)
        self.framework = framework
        self.sizes = (0, 0)  # samples per round, steps per sample: fixed by the first round
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (lives as long as the worker)
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "worker.py"), framework, workload_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            preexec_fn=same_layout if sys.platform == "linux" else None,
        )
        self.setup = self._read()
        # the peak RSS after the first round, and whether the peak was reset then (see
        # run_workload): the later rounds' peak is the replayed steps' own
        self.first_peak, self.reset = 0.0, False
        self.medians: list[float] = []  # one per round
        self.cpu_s = [self.setup.get("cpu_s", 0.0)]  # the process's CPU time after each round

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.log.seek(0)
            tail = self.log.read().strip().splitlines()[-1:] or ["no output"]
            return {"error": f"worker exited: {tail[0]}"}
        return json.loads(line)

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise RuntimeError(f"{self.framework}: {answer['error']}")
        return answer

    def round(self, seconds: float) -> None:
        """Time about ``seconds`` of steps and keep the round's median."""
        answer = self.ask(cmd="round", seconds=seconds)
        self.medians.append(answer["median"])
        self.cpu_s.append(answer["cpu_s"])
        self.sizes = (answer["samples"], answer["repeat"])

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()
        self.log.close()


class OtherProcesses:
    """How much of the machine's CPU time went to processes other than ours (Linux only).

    Timings are only as good as the machine is quiet: a busy neighbour on a core that a BLAS
    thread needs can slow a step a hundredfold. Steal time (a virtual machine's host running
    someone else) counts as another process.
    """

    def __init__(self) -> None:
        self.start = (self.machine_busy(), time.perf_counter(), time.process_time())

    @staticmethod
    def machine_busy() -> float | None:
        """CPU seconds that all processes have used since boot, from /proc/stat."""
        try:
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
        except OSError:
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields)
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")

    def share(self, workers_cpu_s: float) -> float | None:
        """The others' share of all CPU time since construction, given our workers' CPU time."""
        busy0, wall0, own0 = self.start
        busy1 = self.machine_busy()
        if busy0 is None or busy1 is None:
            return None
        ours = workers_cpu_s + time.process_time() - own0
        wall = (time.perf_counter() - wall0) * os.cpu_count()
        return max(0.0, busy1 - busy0 - ours) / wall


class HostSpeed:
    """How steady the host ran: a fixed job timed between rounds, in this process while no
    worker runs. A virtual machine's host can slow it down without any other process here and
    without reporting steal time (OtherProcesses sees neither): on 2026-12-07 the same
    single-threaded 256x256 product took 412 to 858 us within a minute on an idle machine.
    The job is pure Python integer arithmetic (no memory traffic, no BLAS), timed five times,
    the fastest kept, so that an interrupt does not count and a slowdown of a millisecond does.
    """

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def probe(self) -> None:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            total = 0
            for i in range(5_000):
                total += i * i % 7
            times.append(time.perf_counter() - start)
        self.seconds.append(min(times))


def speed_spread(probes: list[float]) -> float | None:
    """The slowest of ``HostSpeed``'s probes over the fastest, less one (None below two)."""
    return max(probes) / min(probes) - 1 if len(probes) > 1 else None


def available(framework: str, workload: Workload) -> str | None:
    """Why ``framework`` cannot run here, or None if it can."""
    module = framework.split("-")[0] if framework.startswith("scratchgrad") else framework
    module = {"pytorch": "torch"}.get(module, module)
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    if framework == "scratchgrad-jit" and not hasattr(importlib.import_module(module), "jit"):
        return "this scratchgrad has no scratchgrad.jit yet"
    if workload.id == "P2" and importlib.util.find_spec("gymnasium") is None:
        return "gymnasium (P2's environments) is not installed"
    if workload.id == "S1" and not (HERE / "scalar.py").exists():
        return "benchmarks/scalar.py (the S1 step) is missing"
    return None


def start_workers(workload: Workload, notes: list[str], threads: int) -> list[Worker]:
    """A ready worker for each framework that can run ``workload``; notes say why not."""
    workers = []
    for framework in workload.frameworks:
        reason = available(framework, workload)
        if reason:
            if f"{framework} skipped: {reason}" not in notes:  # said once, not per workload
                notes.append(f"{framework} skipped: {reason}")
            continue
        worker = Worker(framework, workload.id, threads)
        if "error" in worker.setup:
            notes.append(f"{workload.id}: {framework} failed: {worker.setup['error']}")
            worker.close()
            continue
        workers.append(worker)
    return workers


def run_workload(
    workload: Workload,
    rounds: int,
    seconds: float,
    notes: list[str],
    threads: int = THREADS,
    host: HostSpeed | None = None,
) -> list[dict]:
    """Time every available framework on one workload; one result per framework. ``host``
    is probed before each round."""
    started = start_workers(workload, notes, threads)
    workers = list(started)
    watch = OtherProcesses()
    for round_number in range(rounds):
        if host is not None:
            host.probe()
        for worker in list(workers):
            try:
                worker.round(seconds)
                if round_number == 0 < rounds - 1:  # the later rounds' own peak (steps_peak)
                    worker.first_peak = worker.ask(cmd="peak")["peak_rss_mb"]
                    worker.reset = worker.ask(cmd="reset_peak")["reset"]
            except RuntimeError as error:  # a step that fails later drops only its framework
                notes.append(f"{workload.id}: {error}")
                worker.close()
                workers.remove(worker)
            time.sleep(0.02)  # let the last worker's OpenMP threads stop spinning
    others = watch.share(sum(w.cpu_s[-1] - w.cpu_s[0] for w in started))
    if others is not None and others > QUIET:
        notes.append(
            f"{workload.id}: other processes used {others:.0%} of the machine's CPU time during "
            "the rounds: these times are not from a quiet machine"
        )
    results = []
    for worker in workers:
        result = {
            "workload": workload.id,
            "framework": worker.framework,
            "median_s": statistics.median(worker.medians),
            "min_s": min(worker.medians),
            "max_s": max(worker.medians),
            "round_medians_s": worker.medians,
            "samples_per_round": worker.sizes[0],
            "steps_per_sample": worker.sizes[1],
            "first_loss": worker.setup["first_loss"],
            "rss_import_mb": worker.setup["rss_import_mb"],
            "thread_pools": worker.setup["thread_pools"],
            "others_cpu_share": others,
        }
        steps_peak = worker.ask(cmd="peak")["peak_rss_mb"]  # the rounds', before any epochs
        if workload.id == "W3":
            runs = [worker.ask(cmd="epochs", epochs=EPOCHS) for _ in range(EPOCH_RUNS)]
            seconds = statistics.median(r["seconds"] for r in runs)
            result["epochs"] = {"epochs": EPOCHS, **runs[0], "seconds": seconds}
        peak = worker.ask(cmd="peak")["peak_rss_mb"]
        result["peak_rss_mb"] = max(peak, worker.first_peak)
        if worker.reset:
            result["steps_peak_rss_mb"] = steps_peak
        worker.close()
        results.append(result)
    compare(workload, results, notes)
    return results


def compare(workload: Workload, results: list[dict], notes: list[str]) -> None:
    """Add ratios to the reference, the first-loss check and the targets' verdicts."""
    ref = next((r for r in results if r["framework"] == workload.reference), None)
    if ref is None:
        if results and workload.reference:
            notes.append(f"{workload.id}: no ratios: the reference {workload.reference} failed")
        return
    for r in results:
        r["ratio"] = r["median_s"] / ref["median_s"]
        expected = ref["first_loss"]
        r["first_loss_ok"] = abs(r["first_loss"] - expected) <= FIRST_LOSS_RTOL * abs(expected)
        if not r["first_loss_ok"]:
            notes.append(
                f"{workload.id}: {r['framework']}'s first loss {r['first_loss']:.6g} "
                f"differs from {ref['framework']}'s {expected:.6g}"
            )
        if r["framework"] == workload.measured and workload.target is not None:
            r["target"], r["target_reference"] = workload.target, workload.reference
            r["met"] = r["ratio"] <= workload.target
            if workload.memory_target:
                r["memory_met"] = r["peak_rss_mb"] < ref["peak_rss_mb"]
                r["memory_reference"] = workload.reference
    jit = next((r for r in results if r["framework"] == "scratchgrad-jit"), None)
    if jit is not None and workload.jit_target is not None:
        target, name = workload.jit_target
        floor = next((r for r in results if r["framework"] == name), None)
        if floor is None:
            notes.append(f"{workload.id}: no verdict for scratchgrad-jit: {name} did not run")
            return
        jit["target"], jit["target_reference"] = target, name
        jit["target_ratio"] = jit["median_s"] / floor["median_s"]
        jit["met"] = jit["target_ratio"] <= target
        eager = next((r for r in results if r["framework"] == "scratchgrad"), None)
        if eager is not None:  # recording keeps no more memory than eager steps need
            # The growth after import: both import the same library, and each worker's peak
            # starts after its imports with the free heap handed back (worker.start_peak_anew).
            grown = [r["peak_rss_mb"] - r["rss_import_mb"] for r in (jit, eager)]
            jit["memory_met"] = grown[0] <= grown[1]
            jit["memory_reference"] = "scratchgrad"
            if "steps_peak_rss_mb" in jit and "steps_peak_rss_mb" in eager:
                # the rounds after the first: the steps alone, without recording and compiling
                steps = [r["steps_peak_rss_mb"] - r["rss_import_mb"] for r in (jit, eager)]
                jit["steps_memory_met"] = steps[0] <= steps[1]


# ---- reporting ----


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in ("numpy", "torch", "scratchgrad", "micrograd", "jax"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:
            versions[name] = None
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
    }


def blas_line(results: list[dict]) -> str:
    """How NumPy multiplies matrices here, from a NumPy-based worker's thread pools."""
    for r in sorted(results, key=lambda r: r["framework"] != "numpy"):
        if r["framework"] in ("numpy", "scratchgrad"):
            for pool in r["thread_pools"]:
                if pool["internal_api"] in ("openblas", "mkl", "blis", "flexiblas"):
                    arch = f", {pool['architecture']} kernel" if pool.get("architecture") else ""
                    return (
                        f"{pool['internal_api']} {pool['version']}{arch}, "
                        f"{pool['num_threads']} threads"
                    )
    return "unknown (no NumPy worker ran, or threadpoolctl is missing)"


def in_unit(seconds: float, workload: Workload) -> float:
    """A time per step in the workload's unit: ms or us per step, or GFLOP/s."""
    if workload.unit == "GFLOP/s":
        return workload.flop / seconds / 1e9
    return seconds * (1e6 if workload.unit == "us" else 1e3)


def host_line(probes: list[float]) -> str:
    """The host's speed over the run (HostSpeed), as the table's first line ends."""
    spread = speed_spread(probes)
    if spread is None:
        return ""
    return f"; host speed varied by {spread:.0%} ({len(probes)} probes, see HostSpeed)"


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        f"Benchmarks of {report['date']} on {m['cpu']} ({m['logical_cpus']} logical CPUs), "
        f"Python {m['python']}, NumPy {m['versions']['numpy']} with BLAS {report['blas']}; "
        f"threads: {report['threads']} for every framework; rounds: {report['rounds']}"
        f"{host_line(report.get('host_probe_s', []))}.",
        "",
        "| workload | framework | median [min-max] | ratio | target | met | peak RSS MB "
        "(+ workload) | first loss |",
        "|---|---|---|---|---|---|---|---|",
    ]
    previous = None
    for r in report["results"]:
        w = WORKLOADS[r["workload"]]
        label = w.id if w.id == previous else f"{w.id} {w.title}"  # the title once per workload
        previous = w.id
        unit = {"ms": "ms/step", "us": "us/call"}.get(w.unit, w.unit)
        low, high = sorted(in_unit(r[k], w) for k in ("min_s", "max_s"))
        spread = f"{in_unit(r['median_s'], w):.3g} [{low:.3g}-{high:.3g}] {unit}"
        ratio = "-"
        if "ratio" in r:  # two digits that are not all zeros (P1-loop's ratio is ~0.007)
            ratio = f"{r['ratio']:{'.2f' if r['ratio'] >= 0.1 else '.2g'}}x {w.reference}"
        target = met = "-"
        if "target" in r:
            target = f"<= {r['target']}x {r['target_reference']}"
            met = "yes" if r["met"] else "**no**"
            if "target_ratio" in r:  # a target against another framework than the ratio's
                met += f" ({r['target_ratio']:.2f}x)"
            if "memory_met" in r:
                below = "<=" if r["memory_reference"] == "scratchgrad" else "<"
                target += f"; RSS {below} {r['memory_reference']}"
                met += "; " + ("yes" if r["memory_met"] else "**no**")
            if "steps_memory_met" in r:
                met += ", steps " + ("yes" if r["steps_memory_met"] else "**no**")
        rss = f"{r['peak_rss_mb']:.0f} (+{r['peak_rss_mb'] - r['rss_import_mb']:.0f})"
        loss = "-"
        if "first_loss_ok" in r:
            loss = f"{r['first_loss']:.6g}" + ("" if r["first_loss_ok"] else " (**differs**)")
        lines.append(
            f"| {label} | {r['framework']} | {spread} | {ratio} | {target} | "
            f"{met} | {rss} | {loss} |"
        )
    lines += [
        "",
        "Median, min and max of the per-round medians. Ratio: median over the reference's median "
        "(for GFLOP/s higher is better). Peak RSS: the worker process's maximum resident set "
        "size, and in brackets its growth after the framework's import; for scratchgrad jit, "
        "'steps' says whether its peak over the rounds after the first (reset after the first "
        "round, once the step has recorded and compiled) grew no more than eager's. First "
        "loss: the loss of "
        "the first step, which must agree across frameworks (same data, same initial weights). "
        "Hand NumPy runs with glibc told to keep freed memory (no page faults from big "
        "temporaries; see benchmarks/hand_numpy.py).",
    ]
    digits = [r for r in report["results"] if "epochs" in r]
    if digits:
        lines += [
            "",
            f"W3, {EPOCHS} epochs from the initial weights, 80/20 split (wall time: the median "
            f"of {EPOCH_RUNS} runs):",
            "",
            "| framework | wall time s | test accuracy |",
            "|---|---|---|",
        ]
        for r in digits:
            e = r["epochs"]
            lines.append(f"| {r['framework']} | {e['seconds']:.3f} | {e['accuracy']:.4f} |")
    if report["notes"]:
        lines += ["", "Notes:", ""] + [f"- {note}" for note in report["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--workloads",
        default="S1,W1,W2,W3,W4,W5,W6,O1,P1,P2,P3,L",
        help="comma-separated ids, e.g. W1,W2",
    )
    parser.add_argument("--rounds", type=int, help="rounds per framework (default 5, quick 2)")
    parser.add_argument("--quick", action="store_true", help="fewer and shorter rounds")
    parser.add_argument(
        "--threads",
        type=int,
        default=THREADS,
        help="threads for every framework (default 2; 1 on a busy 2-CPU machine, where a BLAS "
        "waiting for its second thread can run a hundred times slower)",
    )
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)
    seconds = 0.03 if args.quick else 0.25  # of timed steps per framework per round

    notes: list[str] = []
    results: list[dict] = []
    host = HostSpeed()
    for workload_id in expand(args.workloads.split(",")):
        print(f"{workload_id} ...", file=sys.stderr, flush=True)
        results += run_workload(WORKLOADS[workload_id], rounds, seconds, notes, args.threads, host)
    host.probe()
    spread = speed_spread(host.seconds)
    if spread is not None and spread > STEADY:
        notes.append(
            f"the host's speed varied by {spread:.0%} during the run (a fixed job timed before "
            f"each round, {len(host.seconds)} times): these times are not from a steady host"
        )
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "blas": blas_line(results),
        "threads": args.threads,
        "rounds": rounds,
        "seconds_per_round": seconds,
        "host_probe_s": host.seconds,
        "results": results,
        "notes": notes,
    }
    table = markdown(report)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.md").write_text(table)
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
