"""Workload S1: one training step of the circle demo on scalar engines, scratchgrad vs micrograd.

The step is the circle demo's: 60 points, ``MLP(2, [8, 8, 1])`` with tanh on every layer, mean
squared error, SGD at lr 0.1, full batch. Both engines start from the same weights (copied from
``workloads.make_problem("S1")``) and run the same step code, so their losses must agree.

micrograd 0.1.0 has no ``tanh``, so it gets one here written in its own style (the closure of
Karpathy's lecture), and its neurons apply it; everything else is micrograd's own code.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/scalar.py

``make_step(engine, problem)`` is what ``worker.py`` (and so ``run.py``) calls; ``run(rounds)``
times both engines, each in its own worker process, taking turns round by round.
"""

from __future__ import annotations

import math
from collections.abc import Callable

ENGINES = ("scratchgrad", "micrograd")


def build_model(engine: str, problem):
    """The S1 network in `engine` with the problem's weights (PyTorch's (out, in) layout)."""
    if engine == "scratchgrad":
        from scratchgrad.scalar import MLP

        model = MLP(problem.sizes[0], list(problem.sizes[1:]), activation=problem.activation)
    elif engine == "micrograd":
        model = _micrograd_mlp(problem.sizes)
    else:
        raise ValueError(f"unknown scalar engine {engine!r}; choose from {ENGINES}")
    weights, biases = problem.params[0::2], problem.params[1::2]
    for layer, w, b in zip(model.layers, weights, biases):
        for neuron, w_row, b_j in zip(layer.neurons, w.tolist(), b.tolist()):
            for p, value in zip(neuron.w, w_row):
                p.data = value
            neuron.b.data = b_j
    return model


def _micrograd_mlp(sizes):
    from micrograd.engine import Value
    from micrograd.nn import MLP, Neuron

    def tanh(self):  # the lecture's tanh, closure and all
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t * t) * out.grad

        out._backward = _backward
        return out

    Value.tanh = tanh

    class TanhNeuron(Neuron):
        def __call__(self, x):
            return super().__call__(x).tanh()

    model = MLP(sizes[0], list(sizes[1:]))
    for layer in model.layers:
        layer.neurons = [TanhNeuron(len(n.w), nonlin=False) for n in layer.neurons]
    return model


def training_step(model, problem) -> Callable[[], float]:
    """One full-batch step of MSE and SGD on `model`, written once for both engines."""
    params = model.parameters()
    ((x, y),) = problem.batches
    xs, ys = x.tolist(), y[:, 0].tolist()
    lr = problem.lr

    def step() -> float:
        preds = [model(xi) for xi in xs]
        loss = sum((p - yi) ** 2 for p, yi in zip(preds, ys)) / len(ys)
        model.zero_grad()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad
        return loss.data

    return step


def make_step(engine: str, problem) -> tuple[Callable[[], float], float]:
    """The step (no arguments, returns the loss as a float) and the loss of its first call."""
    step = training_step(build_model(engine, problem), problem)
    return step, step()


def agreement(steps: int = 10) -> dict:
    """Train both engines in this process from the same weights for `steps` steps: how far
    apart their losses and weights get (they differ only in the order gradients are summed)."""
    from workloads import make_problem

    problem = make_problem("S1")
    losses, weights = {}, {}
    for engine in ENGINES:
        model = build_model(engine, problem)
        step = training_step(model, problem)
        losses[engine] = [step() for _ in range(steps)]
        weights[engine] = [p.data for p in model.parameters()]
    pairs = {"losses": zip(*losses.values()), "weights": zip(*weights.values())}
    return {
        "steps": steps,
        "first_loss": losses["scratchgrad"][0],
        **{f"max_{k}_diff": max(abs(a - b) for a, b in pair) for k, pair in pairs.items()},
    }


def run(rounds: int = 5, seconds: float = 1.0) -> dict:
    """Time S1 for both engines, in `rounds` interleaved rounds of about `seconds` of steps.

    Returns the median, min and max over rounds of each engine's per-round median milliseconds
    per step, the speedup (micrograd's median / scratchgrad's) and the agreement check.
    """
    from run import WORKLOADS, run_workload

    notes: list[str] = []
    results = run_workload(WORKLOADS["S1"], rounds, seconds, notes)
    by_engine = {r["framework"]: r for r in results}
    report = {
        engine: {
            "median_ms": r["median_s"] * 1e3,
            "min_ms": r["min_s"] * 1e3,
            "max_ms": r["max_s"] * 1e3,
            "peak_rss_mb": r["peak_rss_mb"],
            "first_loss": r["first_loss"],
        }
        for engine, r in by_engine.items()
    }
    if len(report) == len(ENGINES):
        report["speedup"] = report["micrograd"]["median_ms"] / report["scratchgrad"]["median_ms"]
    report["rounds"] = rounds
    report["agreement"] = agreement()
    report["notes"] = notes
    return report


def main() -> None:
    report = run()
    print("S1: one circle-demo training step (60 points, MLP(2, [8, 8, 1]) tanh, MSE, SGD 0.1),")
    print(f"each engine in its own process, {report['rounds']} interleaved rounds:")
    for engine in ENGINES:
        if engine in report:
            r = report[engine]
            print(
                f"  {engine:12s} {r['median_ms']:8.2f} ms/step  "
                f"[{r['min_ms']:.2f}-{r['max_ms']:.2f}]  peak RSS {r['peak_rss_mb']:.0f} MB"
            )
    if "speedup" in report:
        print(f"  scratchgrad is {report['speedup']:.1f}x faster than micrograd (goal: >= 5x)")
    agree = report["agreement"]
    print(
        f"  same weights in, {agree['steps']} steps each: losses differ by at most "
        f"{agree['max_losses_diff']:.1e}, weights by {agree['max_weights_diff']:.1e} "
        f"(first loss {agree['first_loss']:.12f})"
    )
    for note in report["notes"]:
        print(f"  note: {note}")


if __name__ == "__main__":
    main()
