"""The command line: the demos reach their accuracy with fixed seeds, and `graph` writes a file."""

import random
import shutil
import subprocess
import sys

import pytest

from scratchgrad import cli


def test_xor_demo_gets_all_four_right():
    result = cli.demo_xor(seed=0, progress=False)
    assert (result.correct, result.total) == (4, 4)
    assert result.loss < 0.01


def test_circle_demo_fits_its_training_points():
    result = cli.demo_circle(seed=0, progress=False)
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


def test_unknown_commands_and_demos_are_rejected():
    with pytest.raises(SystemExit):
        cli.main(["demo", "mnist"])
    with pytest.raises(SystemExit):
        cli.main([])
