"""Smoke tests of the benchmark harness (``benchmarks/``), not of anyone's speed.

Every framework's step runs, and all frameworks agree on the losses of the first few steps: the
same data and initial weights went in, and the hand-written NumPy backward passes and updates
(and scratchgrad's) match PyTorch's. Frameworks that are not installed are skipped.
"""

import functools
import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import hand_numpy  # noqa: E402
import run  # noqa: E402
import tensor_api  # noqa: E402
import workloads  # noqa: E402

STEPS = 4  # the first loss and three after updates
RTOL = 1e-4


def tensor_frameworks() -> dict:
    """``name -> make_step(problem)`` for each installed tensor framework."""
    frameworks = {"numpy": hand_numpy.make_step}
    for name, module in [("pytorch", "torch"), ("scratchgrad", "scratchgrad")]:
        try:
            lib = importlib.import_module(module)
        except ImportError:
            continue
        frameworks[name] = functools.partial(tensor_api.make_step, lib)
        if name == "scratchgrad" and hasattr(lib, "jit"):  # the step recorded, then replayed
            frameworks["scratchgrad-jit"] = functools.partial(tensor_api.make_step, lib, jit=True)
    return frameworks


def losses(make_step, problem) -> list[float]:
    step, first = make_step(problem)
    return [first] + [step().item() for _ in range(STEPS - 1)]


# Run in a child process: JAX's thread pools, once started in the test process, would make every
# later fork() there (DataLoader workers) unsafe.
JAX_LOSSES = f"""
import json, sys
sys.path.insert(0, {str(BENCH)!r})
import jax_jit, population, workloads

def losses(step, first):
    return [first] + [step().item() for _ in range({STEPS} - 1)]

found = {{w: losses(*jax_jit.make_step(workloads.make_problem(w)))
         for w in ("W1", "W2", "W3", "W4", "W5", "O1")}}
found["P1"] = losses(*population.make_step("jax", workloads.make_problem("P1")))
print(json.dumps(found))
"""


@functools.cache
def jax_losses() -> dict[str, list[float]]:
    """JAX's losses of the first steps of each workload; empty where JAX is not installed."""
    if importlib.util.find_spec("jax") is None:
        return {}
    child = subprocess.run(
        [sys.executable, "-c", JAX_LOSSES], capture_output=True, text=True, check=True
    )
    return json.loads(child.stdout.splitlines()[-1])


@pytest.mark.parametrize("workload_id", ["W1", "W2", "W3", "W4", "W5", "O1"])
def test_tensor_frameworks_agree_with_pytorch(workload_id):
    frameworks = tensor_frameworks()
    if "pytorch" not in frameworks:
        pytest.skip("PyTorch, the reference, is not installed")
    problem = workloads.make_problem(workload_id)
    expected = losses(frameworks.pop("pytorch"), problem)
    assert all(np.isfinite(expected))
    for name, make_step in frameworks.items():
        np.testing.assert_allclose(losses(make_step, problem), expected, rtol=RTOL, err_msg=name)
    if jax_losses():
        np.testing.assert_allclose(jax_losses()[workload_id], expected, rtol=RTOL, err_msg="jax")


@pytest.mark.skipif(not (BENCH / "scalar.py").exists(), reason="benchmarks/scalar.py is missing")
def test_scalar_engines_agree():
    pytest.importorskip("micrograd")
    scalar = importlib.import_module("scalar")
    problem = workloads.make_problem("S1")
    by_engine = []
    for engine in ("scratchgrad", "micrograd"):
        step, first = scalar.make_step(engine, problem)
        by_engine.append([first] + [float(step()) for _ in range(STEPS - 1)])
    np.testing.assert_allclose(by_engine[0], by_engine[1], rtol=1e-9)


def test_digits_training_learns_the_same_in_numpy_and_pytorch():
    torch = pytest.importorskip("torch")
    problem = workloads.make_problem("W3")
    accuracy = hand_numpy.train_digits(problem, epochs=1)
    assert accuracy > 0.6  # one epoch of Adam gets well past chance (0.1)
    assert abs(tensor_api.train_digits(torch, problem, epochs=1) - accuracy) < 0.01


@pytest.mark.parametrize("workload_id", ["L-gemm256", "L-add8"])
def test_limit_steps_compute_what_they_claim(workload_id):
    problem = workloads.make_problem(workload_id)
    a, b = problem.params
    step, _ = hand_numpy.make_step(problem)
    expected = a + b if workload_id == "L-add8" else a @ b
    np.testing.assert_allclose(step(), expected, rtol=1e-5, atol=1e-4)


def test_compare_computes_ratios_targets_and_the_first_loss_check():
    def result(framework, median, peak, first_loss):
        return {"framework": framework, "median_s": median, "peak_rss_mb": peak,
                "first_loss": first_loss}  # fmt: skip

    results = [result("scratchgrad", 3e-3, 100, 2.5), result("pytorch", 2e-3, 300, 2.0)]
    notes = []
    run.compare(workloads.WORKLOADS["W4"], results, notes)
    sg, torch = results
    assert (sg["ratio"], sg["target"], sg["met"], sg["memory_met"]) == (1.5, 1.0, False, True)
    assert torch["ratio"] == 1.0 and "target" not in torch
    assert not sg["first_loss_ok"] and torch["first_loss_ok"]
    assert notes == ["W4: scratchgrad's first loss 2.5 differs from pytorch's 2"]


def test_compare_judges_the_jit_row_against_its_own_reference():
    """W1's jit target is against the hand-written NumPy floor, not PyTorch; its memory is
    judged against eager scratchgrad's, by the growth after import."""
    results = [
        {
            "framework": name,
            "median_s": median,
            "peak_rss_mb": peak,
            "rss_import_mb": imported,
            "first_loss": 1.0,
        }
        for name, median, peak, imported in [
            ("scratchgrad-jit", 2.2e-5, 50, 44),
            ("numpy", 2e-5, 40, 38),
            ("pytorch", 2e-4, 300, 220),
            ("scratchgrad", 6e-5, 45, 41),
        ]
    ]
    notes = []
    run.compare(workloads.WORKLOADS["W1"], results, notes)
    jit = results[0]
    assert jit["ratio"] == pytest.approx(0.11) and jit["target_reference"] == "numpy"
    assert (jit["target"], jit["met"], jit["target_ratio"]) == (1.2, True, pytest.approx(1.1))
    assert (jit["memory_met"], jit["memory_reference"]) == (False, "scratchgrad")  # +6 > +4
    assert "steps_memory_met" not in jit  # no peak of the later rounds: no verdict
    results[0]["rss_import_mb"] = 46.5  # a higher peak, but a smaller growth: +3.5 <= +4
    run.compare(workloads.WORKLOADS["W1"], results, notes)
    assert results[0]["memory_met"]
    # the later rounds' own peaks: jit +4.5 against eager's +3 after import
    jit["steps_peak_rss_mb"], results[3]["steps_peak_rss_mb"] = 51, 44
    run.compare(workloads.WORKLOADS["W1"], results, notes)
    assert not jit["steps_memory_met"]
    jit["steps_peak_rss_mb"] = 49.5
    run.compare(workloads.WORKLOADS["W1"], results, notes)
    assert jit["steps_memory_met"]
    run.compare(workloads.WORKLOADS["W1"], [results[0], results[2]], notes)
    assert notes == ["W1: no verdict for scratchgrad-jit: numpy did not run"]


def test_run_writes_the_table_and_json(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    monkeypatch.setattr(run, "RESULTS", tmp_path)
    run.main(["--workloads", "W1", "--rounds", "2", "--quick"])
    report = json.loads((tmp_path / "latest.json").read_text())
    by_name = {r["framework"]: r for r in report["results"]}
    assert {"pytorch", "numpy"} <= set(by_name)
    assert by_name["pytorch"]["ratio"] == 1.0
    assert all(r["first_loss_ok"] and len(r["round_medians_s"]) == 2 for r in by_name.values())
    assert all(r["peak_rss_mb"] >= r["rss_import_mb"] > 0 for r in by_name.values())
    # the peak of the second round alone, reset after the first (Linux)
    assert all(r["peak_rss_mb"] >= r["steps_peak_rss_mb"] > 0 for r in by_name.values())
    table = (tmp_path / "latest.md").read_text()
    assert "| W1 XOR" in table and table in capsys.readouterr().out
    # the host's speed, probed before each round and at the end
    assert len(report["host_probe_s"]) == 3 and "host speed varied by" in table


def test_an_unsteady_host_is_said_in_the_table(monkeypatch):
    """The spread of the host's speed probes is the slowest over the fastest, less one; the
    table's first line gives it, and a report without probes (an older run's) has none."""
    assert run.speed_spread([0.002]) is None
    assert run.speed_spread([0.002, 0.003, 0.0025]) == pytest.approx(0.5)
    assert run.host_line([0.002, 0.0022]) == "; host speed varied by 10% (2 probes, see HostSpeed)"
    assert run.host_line([]) == ""


def test_p2_peers_agree_on_the_first_generations():
    """scratchgrad's OpenAI-ES generation and the Gymnasium + PyTorch one return the same mean
    fitness (a smaller population keeps this quick)."""
    pytest.importorskip("gymnasium")
    pytest.importorskip("torch")
    import evo_bench

    problem = workloads.make_problem("P2")
    problem.extra["popsize"] = 4
    fitness = {}
    for framework in ("scratchgrad", "pytorch"):
        step, first = evo_bench.make_step(framework, problem)
        fitness[framework] = [first, step()]
    assert fitness["scratchgrad"] == fitness["pytorch"]
    assert fitness["scratchgrad"][0] > 400  # the starting policy balances the pole


def test_population_steps_agree_with_pytorch():
    """P1: the vmapped population, the loop over 1,000 models and torch.func follow the same
    losses (and JAX where installed)."""
    pytest.importorskip("torch")
    population = importlib.import_module("population")
    problem = workloads.make_problem("P1")
    expected = losses(functools.partial(population.make_step, "pytorch"), problem)
    for name in ["scratchgrad", "scratchgrad-loop"]:
        found = losses(functools.partial(population.make_step, name), problem)
        np.testing.assert_allclose(found, expected, rtol=RTOL, err_msg=name)
    if jax_losses():
        np.testing.assert_allclose(jax_losses()["P1"], expected, rtol=RTOL, err_msg="jax")


def test_w6_gpt_is_charlms_and_both_frameworks_agree():
    """W6's model is scratchgrad.charlm's GPT (the same logits from the same weights), and
    PyTorch and scratchgrad take the same first steps."""
    import scratchgrad as sg
    from scratchgrad import charlm

    torch = pytest.importorskip("torch")
    problem = workloads.make_problem("W6")
    bench = tensor_api.build_model(sg, problem)
    model = charlm.GPT(charlm.GPTConfig())
    with sg.no_grad():
        for p, w in zip(model.parameters(), problem.params, strict=True):
            p.copy_(sg.from_numpy(w))
    x = sg.from_numpy(problem.batches[0][0])
    np.testing.assert_allclose(
        bench(x).detach().numpy(), model(x).flatten(0, 1).detach().numpy(), rtol=1e-5, atol=1e-6
    )
    ours = losses(functools.partial(tensor_api.make_step, sg), problem)
    np.testing.assert_allclose(
        ours, losses(functools.partial(tensor_api.make_step, torch), problem), rtol=RTOL
    )
