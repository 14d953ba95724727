"""`scratchgrad train --nproc 2` and `mpiexec -n 2 scratchgrad train`: data-parallel training
of the digits models, printed by the first process only, one checkpoint that loads alone."""

import os
import subprocess
import sys

import pytest
from mpirun import SOURCE, run_mpi

import scratchgrad as sg
from scratchgrad import train


def check_one_run(stdout: str, out, name: str) -> None:
    assert stdout.count("epoch  1:") == 1 and stdout.count("final test accuracy") == 1
    assert sorted(p.name for p in out.iterdir() if p.suffix == ".safetensors") == [
        f"digits_{name}.safetensors"
    ]
    checkpoint = sg.load(out / f"digits_{name}.safetensors")
    model = train.rebuild_model(checkpoint)  # the plain module's keys, no "module." prefix
    (_, _), (test_x, test_y) = train.split_digits(seed=0)
    accuracy, _ = train.evaluate(model, test_x, test_y)
    assert f"final test accuracy: {accuracy:.4f}" in stdout


def test_nproc_2_trains_the_cnn_data_parallel(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SOURCE))
    command = [sys.executable, "-m", "scratchgrad", "train", "--nproc", "2", "--epochs", "2"]
    done = subprocess.run(
        [*command, "--out", str(tmp_path)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    check_one_run(done.stdout, tmp_path, "cnn")
    assert float(done.stdout.split("final test accuracy: ")[1].split()[0]) >= 0.9


def test_mpiexec_scratchgrad_train(tmp_path):
    arguments = ["scratchgrad", "train", "--model", "mlp", "--epochs", "1", "--out", str(tmp_path)]
    done = run_mpi(2, "-m", *arguments, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    check_one_run(done.stdout, tmp_path, "mlp")


def test_mpiexec_scratchgrad_train_jit_equals_eager(tmp_path):
    """Each step jitted, DistributedDataParallel's all-reduces replayed: the same losses and
    accuracies, printed to the last digit, as the eager run."""
    printed = []
    for jit in ([], ["--jit"]):
        out = tmp_path / f"run{len(printed)}"
        arguments = ["scratchgrad", "train", "--model", "mlp", "--epochs", "2", "--out", str(out)]
        done = run_mpi(2, "-m", *arguments, *jit, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        printed.append([line for line in done.stdout.splitlines() if line.startswith("epoch")])
    assert len(printed[0]) == 2 and printed[1] == printed[0]


def test_a_failing_process_fails_the_run(tmp_path):
    """A learning rate that makes the loss infinite stops every process (no hang)."""
    arguments = ["scratchgrad", "train", "--model", "mlp", "--lr", "1e30", "--out", str(tmp_path)]
    done = run_mpi(2, "-m", *arguments, timeout=120)
    assert done.returncode != 0
    assert "the loss became" in done.stderr


@pytest.mark.parametrize("given", [None, "3"])
def test_the_launch_shares_the_cores_out_as_blas_threads(given, monkeypatch):
    seen = {}

    def fake_run(command, env):
        seen.update(command=command, env=env)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)  # (the suite may run with 1)
    if given:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", given)
    from scratchgrad import cli

    assert cli.main(["train", "--nproc", "2", "--model", "mlp", "--lr", "0.01"]) == 0
    assert seen["command"][1:3] == ["-n", "2"]
    assert seen["command"][3:] == [
        sys.executable, "-m", "scratchgrad", "train", "--task", "digits", "--model", "mlp",
        "--lr", "0.01", "--hidden", "128", "--optimizer", "adam", "--seed", "0",
    ]  # fmt: skip
    assert seen["env"]["OPENBLAS_NUM_THREADS"] == (given or "2")


def test_nproc_is_for_the_digits_task(capsys):
    from scratchgrad import cli

    assert cli.main(["train", "--task", "charlm", "--nproc", "2"]) == 1
    assert "--nproc is for --task digits" in capsys.readouterr().err
