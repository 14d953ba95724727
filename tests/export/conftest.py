"""Two trained digits models for the export tests, trained once per session with `scratchgrad
train`'s own code (few epochs: they need to be good classifiers, not the best); their checkpoints
serve the command-line tests too.
"""

import pytest

import scratchgrad as sg
from scratchgrad import train


@pytest.fixture(scope="session")
def digits_runs(tmp_path_factory):
    """{"mlp": (checkpoint path, test accuracy), "cnn": ...}: a 64-32-10 MLP and the CNN."""
    out = tmp_path_factory.mktemp("digits")
    runs = {}
    for name, epochs, hidden in (("mlp", 8, 32), ("cnn", 1, 128)):
        history = train.train(name, epochs=epochs, out=out, progress=False, hidden=hidden)
        runs[name] = (out / f"digits_{name}.safetensors", history["test_acc"][-1])
    return runs


@pytest.fixture(scope="session")
def digits_models(digits_runs):
    """The two trained models (eval mode) and the 359 held-out digits."""
    (_, _), (test_x, test_y) = train.split_digits(seed=0)
    models = {name: train.rebuild_model(sg.load(path)) for name, (path, _) in digits_runs.items()}
    return models, test_x, test_y.numpy()
