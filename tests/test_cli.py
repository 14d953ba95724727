"""The command line: the demos reach their accuracy with fixed seeds, and `graph` writes a file."""

import functools
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scratchgrad import cli


def test_xor_demo_gets_all_four_right():
    result = cli.demo_xor(seed=0, progress=False)
    assert (result.correct, result.total) == (4, 4)
    assert result.loss < 0.01


@functools.cache
def circle_demo() -> cli.DemoResult:
    return cli.demo_circle(seed=0, progress=False)


def test_circle_demo_fits_its_training_points():
    result = circle_demo()
    assert result.total == 60
    assert result.correct >= 57  # at least 95%; measured: 59/60 (98.3%) with seed 0


def test_circle_data_labels_the_disc():
    xs, ys = cli.circle_data(random.Random(5), n=200)
    assert all(-1 <= v <= 1 for x in xs for v in x)
    assert all((y == 1.0) == (x0 * x0 + x1 * x1 < 0.5) for (x0, x1), y in zip(xs, ys))
    assert 0.2 < sum(y > 0 for y in ys) / len(ys) < 0.6  # the disc is pi/8 ~ 39% of the square


def test_demo_command_prints_progress_and_the_final_accuracy():
    done = subprocess.run(
        [sys.executable, "-m", "scratchgrad", "demo", "xor"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "step  500" in done.stderr + done.stdout  # tqdm.write lines
    assert "xor: final loss" in done.stdout and "accuracy 4/4 (100.0%)" in done.stdout


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_graph_command_writes_an_svg(tmp_path, capsys):
    out = tmp_path / "neuron.svg"
    assert cli.main(["graph", str(out)]) == 0
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "tanh" in svg and "data 0.7071" in svg  # the classic neuron's output
    assert list(tmp_path.iterdir()) == [out]  # the .gv source is cleaned up
    assert str(out) in capsys.readouterr().out


def test_graph_without_dot_says_how_to_install_graphviz(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` to be found
    assert cli.main(["graph", str(tmp_path / "neuron.svg")]) == 1
    error = capsys.readouterr().err
    assert error.startswith("scratchgrad: error: graph: Graphviz's `dot` program is not on PATH")
    assert "apt install graphviz" in error and len(error.splitlines()) == 1


def test_unknown_commands_and_demos_are_rejected():
    with pytest.raises(SystemExit):
        cli.main(["demo", "mnist"])
    with pytest.raises(SystemExit):
        cli.main([])


# The examples: the articles' programs, checked for what they print.

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, check=True
    )
    return done.stdout


def test_xor_example_refutes_the_claim_and_then_learns_xor():
    out = run_example("xor.py")
    median = float(re.search(r"median loss ([\d.]+)", out).group(1))
    assert median > 0.1  # nowhere near the claimed ~0.001 after 100 epochs at lr 0.05
    epochs = int(re.search(r"below 0.001 after (\d+) epochs", out).group(1))
    assert epochs > 1000
    assert "4/4 correct" in out


def test_circle_example_counts_the_parameters_and_matches_the_demo():
    out = run_example("circle.py")
    assert "has 105 parameters" in out
    correct = int(re.search(r"Final: (\d+)/60", out).group(1))
    assert correct == circle_demo().correct  # same seed, same run


# Misuse: a user's mistake ends with one line and an exit status, never a traceback.


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--epochs", "0", "must be at least 1, got 0"),
        ("--batch-size", "-2", "must be at least 1, got -2"),
        ("--lr", "0", "must be a finite number above 0, got 0"),
        ("--lr", "inf", "must be a finite number above 0, got inf"),
        ("--lr", "fast", "must be a number, got 'fast'"),
        ("--seed", "-1", "must be at least 0, got -1"),
    ],
)
def test_out_of_range_arguments_are_usage_errors(option, value, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", option, value])
    assert exit_.value.code == 2
    assert f"argument {option}: {message}" in capsys.readouterr().err


def test_a_given_learning_rate_of_zero_is_used_not_replaced_by_the_default():
    from scratchgrad import train

    history = train.train("mlp", epochs=1, lr=0.0, out=None, progress=False)
    assert history["train_acc"][0] < 0.3  # untrained: the default 3e-3 reaches ~0.9 in one epoch
    with pytest.raises(ValueError, match="epochs must be at least 1, got 0"):
        train.train("mlp", epochs=0, out=None, progress=False)


def test_an_unusable_out_folder_fails_before_training(tmp_path, capsys):
    taken = tmp_path / "file"
    taken.write_text("")
    assert cli.main(["train", "--model", "mlp", "--out", str(taken)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("scratchgrad: error: train: cannot create the output folder")
    assert len(captured.err.splitlines()) == 1
    assert "epoch" not in captured.out  # nothing was trained


def test_a_diverging_loss_stops_with_the_epoch_and_step(tmp_path, capsys):
    argv = ["train", "--model", "mlp", "--optimizer", "sgd", "--lr", "1e30", "--out", str(tmp_path)]
    with np.errstate(all="ignore"):
        assert cli.main(argv) == 1
    last = capsys.readouterr().err.split("\r")[-1]  # after the progress bar's redraws
    assert last.startswith("scratchgrad: error: train: the loss became nan at epoch 1, step 2;")


def test_debug_shows_the_traceback_instead(tmp_path):
    taken = tmp_path / "file"
    taken.write_text("")
    with pytest.raises(OSError, match="cannot create the output folder"):
        cli.main(["--debug", "train", "--out", str(taken)])


def test_an_unknown_graph_format_is_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "scratchgrad", "graph", "neuron.xyz"], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr.startswith("scratchgrad: error: unknown format: 'xyz'")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
