"""The charlm job: a tiny GPT trains for a few steps (its held-out loss falls), its checkpoint
carries the model's config, and ``scratchgrad sample`` continues a prompt from it."""

import doctest
import json

import numpy as np
import pytest
import safetensors

import scratchgrad as sg
from scratchgrad import charlm, cli

TINY = {"block_size": 16, "n_layer": 1, "n_head": 2, "n_embd": 16}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("charlm")
    cfg = charlm.TrainConfig(steps=40, batch_size=8, lr=1e-2, warmup=5, eval_every=20,
                             eval_batches=4)  # fmt: skip
    history = charlm.train("gpt", cfg, TINY, out=out, progress=False)
    return history, out / "charlm_gpt.safetensors"


def test_held_out_loss_falls(trained):
    history, _ = trained
    assert history["step"] == [0, 20, 40]
    assert history["val"][0] > np.log(65) - 0.1  # untrained: about uniform over 65 characters
    assert history["val"][-1] < history["val"][0] - 0.8
    assert len(history["loss"]) == 40 and np.isfinite(history["loss"]).all()


def test_checkpoint_holds_the_config_in_its_metadata(trained):
    _, path = trained
    with safetensors.safe_open(path, "numpy") as f:
        metadata = f.metadata()
    text = json.dumps(json.loads(metadata["scratchgrad"]))
    assert '"n_embd": 16' in text and '"model_name": "gpt"' in text
    model, chars = charlm.load_checkpoint(path)
    assert chars == "".join(sorted(set(sg.datasets.load_shakespeare())))
    assert model.lm_head.weight is model.wte.weight  # tying survives the reload


def test_greedy_sampling_is_the_argmax_continuation(trained):
    """top_k=1 keeps one candidate: the sample must be the greedy decode, computed here by a
    plain loop over the model's logits."""
    _, path = trained
    model, chars = charlm.load_checkpoint(path)
    ids = [chars.index(c) for c in "ROMEO:"]
    with sg.no_grad():
        for _ in range(20):
            ids.append(int(model(sg.tensor([ids[-16:]]))[0, -1].argmax()))
    expected = "".join(chars[i] for i in ids)
    assert charlm.sample_text(model, chars, "ROMEO:", 20, temperature=0.7, top_k=1) == expected


def test_sample_command_continues_the_prompt(trained, capsys):
    _, path = trained
    argv = ["sample", str(path), "--prompt", "KING:", "--length", "30", "--top-k", "5"]
    assert cli.main([*argv, "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("KING:") and len(text.rstrip("\n")) >= 30
    assert cli.main([*argv, "--seed", "3"]) == 0
    assert capsys.readouterr().out == text  # seeded
    assert cli.main(["sample", str(path), "--prompt", "\u00e9t\u00e9"]) == 1
    assert "characters the model never saw" in capsys.readouterr().err


def test_train_rejects_a_model_of_another_task(capsys):
    assert cli.main(["train", "--task", "charlm", "--model", "cnn"]) == 1
    assert "--model cnn is not a model of --task charlm" in capsys.readouterr().err


def test_doctests():
    assert doctest.testmod(charlm).failed == 0
    assert doctest.testmod(sg.datasets.shakespeare).failed == 0


def test_lstm_variant_trains_and_samples(tmp_path):
    cfg = charlm.TrainConfig(steps=30, batch_size=8, lr=1e-2, warmup=5, eval_every=30,
                             eval_batches=2)  # fmt: skip
    tiny = {"block_size": 12, "n_layer": 1, "n_embd": 8, "hidden_size": 32}
    history = charlm.train("lstm", cfg, tiny, out=tmp_path, progress=False)
    assert history["val"][-1] < history["val"][0] - 0.5
    model, chars = charlm.load_checkpoint(tmp_path / "charlm_lstm.safetensors")
    assert isinstance(model.lstm, sg.nn.LSTM)
    assert charlm.sample_text(model, chars, "A", 10, top_k=3).startswith("A")


@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_mixed_precision_trains(amp, tmp_path):
    cfg = charlm.TrainConfig(steps=30, batch_size=8, lr=1e-2, warmup=5, eval_every=30,
                             eval_batches=2, amp=amp)  # fmt: skip
    history = charlm.train("gpt", cfg, TINY, out=None, progress=False)
    assert history["val"][-1] < history["val"][0] - 0.5
    assert np.isfinite(history["loss"]).all()


@pytest.mark.parametrize("model", ["gpt", "lstm"])
def test_jit_trains_exactly_as_eager(model):
    """``--jit``: the step recorded and replayed (the learning rate, set between steps by
    the schedule, read at each replay) gives the eager run's losses."""
    tiny = TINY if model == "gpt" else {"block_size": 12, "n_embd": 8, "hidden_size": 16}
    histories = []
    for jit in (False, True):
        cfg = charlm.TrainConfig(steps=8, batch_size=4, warmup=3, eval_every=8, eval_batches=1,
                                 jit=jit)  # fmt: skip
        histories.append(charlm.train(model, cfg, tiny, out=None, progress=False))
    assert histories[1]["loss"] == histories[0]["loss"]
    assert histories[1]["val"] == histories[0]["val"]
