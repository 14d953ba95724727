"""``scratchgrad export``: the checkpoints `scratchgrad train` writes become C or ONNX files,
and the command reports the files and the check it ran on the held-out digits."""

import re

import pytest

from scratchgrad.cli import main


@pytest.mark.parametrize(
    "model, fmt, suffixes",
    [("mlp", "c", [".h", ".c"]), ("cnn", "c-int8", [".h", ".c"]), ("cnn", "onnx", [".onnx"])],
)
def test_export_writes_files_and_checks_them(digits_runs, tmp_path, capsys, model, fmt, suffixes):
    if fmt == "onnx":
        pytest.importorskip("onnxruntime")
    checkpoint, accuracy = digits_runs[model]
    assert main(["export", str(checkpoint), "--format", fmt, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    for suffix in suffixes:
        path = tmp_path / f"digits_{model}{suffix}"
        assert f"wrote {path} ({path.stat().st_size:,} bytes)" in printed
    assert "same class 359/359" in printed
    measured = float(re.search(r"accuracy (\d\.\d+)", printed).group(1))
    if fmt == "c-int8":
        assert "against the NumPy int8 reference" in printed and "difference 0," in printed
        assert measured >= accuracy - 0.01
    else:
        assert measured == pytest.approx(accuracy, abs=1e-4)


def test_a_checkpoint_without_meta_is_a_one_line_error(tmp_path, capsys):
    import scratchgrad as sg
    from scratchgrad import nn

    sg.save({"model": nn.Linear(2, 2).state_dict()}, tmp_path / "old.safetensors")
    assert main(["export", str(tmp_path / "old.safetensors"), "--out", str(tmp_path)]) == 1
    assert "does not say which model" in capsys.readouterr().err
