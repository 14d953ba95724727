"""The GPU check: everything ``scripts/gpu_check.sh`` reports, in one run on a machine with a GPU.

1. the op table on the device against the CPU (float32, forward and gradients, rtol 1e-5);
2. ``scratchgrad train``'s digits CNN trained on the device (held-out accuracy, target >= 98%);
3. step times, device against CPU: W4 (the wide MLP 784-512-512-10, SGD with momentum) at batch
   4096, and the character-level GPT (``scratchgrad train --task charlm``'s model);

then one summary table. ``--device strict`` runs it all on the tests' strict device instead, so
the script itself is checked on a machine without a GPU (its timings then mean nothing).

    python scripts/gpu_check.py            # on "cuda"
    python scripts/gpu_check.py --device strict --quick
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad import charlm, nn
from scratchgrad.train import train

TESTS = Path(__file__).resolve().parents[1] / "tests"
RTOL, ATOL = 1e-5, 1e-6  # float32


def _host(t: sg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _close(actual: sg.Tensor, expected: sg.Tensor) -> bool:
    return actual.shape == expected.shape and np.allclose(
        _host(actual), _host(expected), RTOL, ATOL, equal_nan=True
    )


def check_op_table(device: str) -> tuple[int, list[str]]:
    """Every op-table row in float32 on ``device`` and on the CPU: forward and gradients.
    Returns the number of rows and the names of those that differ (with why)."""
    sys.path.insert(0, str(TESTS))
    from op_table import OPS

    class OnDevice:  # scratchgrad whose factories make tensors on the device
        def __getattr__(self, name):
            value = getattr(sg, name)
            if name in ("tensor", "zeros", "ones", "full", "arange", "empty", "eye"):
                return lambda *args, **kwargs: value(*args, **{"device": device, **kwargs})
            return value

    failed = []
    for op in OPS:
        rng = np.random.default_rng(0)
        arity = op.call.__code__.co_argcount - 1
        domains = op.domain if isinstance(op.domain, tuple) else (op.domain,) * arity
        arrays = [d(rng, s) for d, s in zip(domains, op.check_shapes[:arity])]
        try:
            cpu = [sg.tensor(a, dtype=sg.float32, requires_grad=op.grad) for a in arrays]
            dev = [t.detach().to(device).requires_grad_(op.grad) for t in cpu]
            expected, out = op.call(sg, *cpu), op.call(OnDevice(), *dev)
            ok = out.device.type == device and _close(out, expected)
            if ok and op.grad:
                g = rng.standard_normal(expected.shape)
                expected.backward(sg.tensor(g, dtype=expected.dtype))
                out.backward(sg.tensor(g, dtype=out.dtype, device=device))
                ok = all(
                    (t.grad is None) == (x.grad is None)
                    and (t.grad is None or _close(x.grad, t.grad))
                    for x, t in zip(dev, cpu)
                )
            if not ok:
                failed.append(f"{op.name} (values differ)")
        except Exception as error:  # noqa: BLE001  (reported, and the check goes on)
            failed.append(f"{op.name} ({type(error).__name__}: {str(error)[:120]})")
    return len(OPS), failed


def _synchronized(t: sg.Tensor) -> float:
    return t.item()  # reading a value waits for the device's queued work


def time_steps(model: nn.Module, batch, opt, steps: int, loss_of) -> float:
    """Seconds per training step (after two warm-up steps)."""
    for i in range(steps + 2):
        if i == 2:
            start = time.perf_counter()
        loss = loss_of(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    _synchronized(loss)
    return (time.perf_counter() - start) / steps


def w4_step_time(device: str, batch_size: int, steps: int) -> float:
    sg.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    ).to(device)  # fmt: skip
    rng = np.random.default_rng(15)
    x = sg.tensor(rng.standard_normal((batch_size, 784)), dtype=sg.float32, device=device)
    y = sg.tensor(rng.integers(0, 10, batch_size), device=device)
    opt = sg.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return time_steps(model, (x, y), opt, steps, lambda m, b: F.cross_entropy(m(b[0]), b[1]))


def charlm_step_time(device: str, steps: int) -> float:
    sg.manual_seed(0)
    cfg = charlm.TrainConfig()
    data = charlm.CharData(sg.datasets.load_shakespeare())
    model = charlm.build_model("gpt", len(data.chars)).to(device)
    x, y = data.batch("train", cfg.batch_size, model.config.block_size, np.random.default_rng(0))
    opt = charlm.make_optimizer(model, cfg)

    def loss_of(m, batch):
        return F.cross_entropy(m(batch[0]).flatten(0, 1), batch[1].flatten())

    return time_steps(model, (x.to(device), y.to(device)), opt, steps, loss_of)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="fewer epochs and steps")
    args = parser.parse_args()
    device = args.device
    if device == "strict":
        sys.path.insert(0, str(TESTS))
        import strict  # noqa: F401  (registers the device)
    elif not sg.cuda.is_available():
        print("gpu_check: scratchgrad.cuda.is_available() is False (no CuPy, or no GPU)")
        return 2
    else:
        print(
            f"GPU: {sg.cuda.get_device_name()}, CuPy {sg.backend.array_module('cuda').__version__}"
        )
    rows, ok = [], True

    def report(what: str, value: str, passed: bool | None = None) -> None:
        nonlocal ok
        ok = ok and passed is not False
        mark = {True: "pass", False: "FAIL", None: ""}[passed]
        rows.append((what, value, mark))
        print(f"{what}: {value} {mark}", flush=True)

    start = time.perf_counter()
    count, failed = check_op_table(device)
    report(
        f"op table on {device} vs CPU (float32, rtol {RTOL:g})",
        f"{count - len(failed)}/{count} rows",
        not failed,
    )
    for name in failed:
        print(f"  differs: {name}")

    try:
        epochs = 2 if args.quick else 10
        t0 = time.perf_counter()
        history = train("cnn", epochs=epochs, out=None, progress=False, device=device)
        accuracy = history["test_acc"][-1]
        seconds = time.perf_counter() - t0
        report(
            f"digits CNN on {device}, {epochs} epochs",
            f"{accuracy:.2%} held out ({seconds:.0f} s)",
            accuracy >= 0.98 or args.quick,
        )
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        report(f"digits CNN on {device}", "error", False)

    batch, steps = (256, 2) if args.quick else (4096, 20)
    for name, timed in (
        (f"W4 step, batch {batch}", lambda d: w4_step_time(d, batch, steps if d != "cpu" else 3)),
        ("charlm GPT step, batch 12", lambda d: charlm_step_time(d, steps if d != "cpu" else 3)),
    ):
        try:
            on_cpu, on_device = timed("cpu"), timed(device)
            ratio = on_cpu / on_device
            times = f"CPU {on_cpu * 1e3:.1f} ms, {device} {on_device * 1e3:.1f} ms"
            report(name, f"{times}: {ratio:.1f}x")
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            report(name, "error", False)

    width = max(len(r[0]) for r in rows)
    print(f"\nsummary ({time.perf_counter() - start:.0f} s, {time.strftime('%Y-%m-%d')})")
    print(f"| {'check':<{width}} | result | |")
    print(f"|{'-' * (width + 2)}|---|---|")
    for what, value, mark in rows:
        print(f"| {what:<{width}} | {value} | {mark} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
