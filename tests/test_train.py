"""The main job: `scratchgrad train` reaches its stated accuracy on the held-out digits."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import train


@pytest.fixture(scope="module")
def cnn_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cnn")
    return train.train("cnn", seed=0, out=out, progress=False), out


def test_cnn_reaches_98_percent_on_held_out_digits(cnn_run):
    history, _ = cnn_run
    assert history["test_acc"][-1] >= 0.98
    assert history["loss"][-1] < history["loss"][0]


def test_mlp_reaches_97_percent_on_held_out_digits():
    history = train.train("mlp", seed=0, out=None, progress=False)
    assert history["test_acc"][-1] >= 0.97


def test_checkpoint_holds_model_and_optimizer_and_reloads(cnn_run):
    history, out = cnn_run
    state = sg.load(out / "digits_cnn.safetensors")
    model = train.build_model("cnn")
    model.load_state_dict(state["model"])
    (_, _), (test_x, test_y) = train.split_digits(seed=0)
    accuracy, _ = train.evaluate(model, test_x, test_y)
    assert accuracy == pytest.approx(history["test_acc"][-1])
    assert set(state["optimizer"]) == {"state", "param_groups"}


def test_checkpoint_records_the_model_so_it_can_be_rebuilt(tmp_path):
    train.train("mlp", epochs=1, out=tmp_path, progress=False, hidden=8)
    state = sg.load(tmp_path / "digits_mlp.safetensors")
    meta = {"task": "digits", "model": "mlp", "config": {"hidden": 8}, "seed": 0}
    assert state["meta"] == meta
    model = train.rebuild_model(state)
    assert model[1].weight.shape == (8, 64) and not model.training
    with pytest.raises(ValueError, match="does not say which model"):
        train.rebuild_model({"model": state["model"]})


def test_curves_are_written(cnn_run):
    pytest.importorskip("matplotlib")
    _, out = cnn_run
    assert (out / "digits_cnn_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_confusion_matrix_counts_each_pair():
    predicted, labels = np.array([0, 1, 1, 2]), np.array([0, 1, 2, 2])
    expected = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 1]])
    np.testing.assert_array_equal(train.confusion_matrix(predicted, labels, classes=3), expected)


def test_split_is_80_20_and_covers_every_image_once():
    (train_x, train_y), (test_x, test_y) = train.split_digits(seed=0)
    assert len(train_y) == 1438 and len(test_y) == 359
    images, _ = sg.datasets.load_digits()
    rows = sorted(x.tobytes() for x in np.concatenate([train_x.numpy(), test_x.numpy()]))
    assert rows == sorted(x.tobytes() for x in images.numpy())


def test_command_line_train_prints_accuracy_and_confusion(tmp_path, capsys):
    from scratchgrad.cli import main

    assert main(["train", "--model", "mlp", "--epochs", "2", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "final test accuracy" in printed and "true\\pred" in printed
    assert (tmp_path / "digits_mlp.safetensors").exists()


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown model 'rnn'"):
        train.build_model("rnn")


@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_cnn_under_mixed_precision_reaches_98_percent(amp):
    history = train.train("cnn", seed=0, out=None, progress=False, amp=amp)
    assert history["test_acc"][-1] >= 0.98


def test_jit_trains_exactly_as_eager():
    """``--jit`` replays the recorded step (a second program for the short last batch) and
    ends where the eager run ends: the same losses, accuracies and confusion matrix."""
    options = dict(epochs=2, out=None, progress=False, hidden=16)
    eager = train.train("mlp", **options)
    jitted = train.train("mlp", jit=True, **options)
    for key in ("loss", "train_acc", "test_acc"):
        assert jitted[key] == eager[key], key
    np.testing.assert_array_equal(jitted["confusion"], eager["confusion"])


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--jit", "--amp", "fp16"], "cannot replay fp16's loss scaling"),
    ],
)
def test_jit_refuses_what_it_cannot_replay(argv, error, tmp_path, capsys):
    from scratchgrad.cli import main

    assert main(["train", "--epochs", "1", "--out", str(tmp_path), *argv]) != 0
    assert error in capsys.readouterr().err
