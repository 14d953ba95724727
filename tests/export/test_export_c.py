"""``scratchgrad.export.to_c``: the generated C compiles under strict flags and computes what
scratchgrad's forward computes (the oracle), for each supported layer and the trained digits
models; it needs no allocator and no stdio."""

import doctest
import subprocess

import numpy as np
import pytest
from export_helpers import MODELS, compile_library, gcc, randomize_batch_norms, run_c

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.export import to_c


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every model of MODELS exported and compiled into one library."""
    out = tmp_path_factory.mktemp("c")
    sg.manual_seed(0)
    models, sources = {}, []
    for name, (make, shape) in MODELS.items():
        model = make()
        randomize_batch_norms(model)
        models[name] = model
        sources += to_c(model, sg.zeros(2, *shape), out, name)[1:]
    return models, compile_library(sources, out / "models.so")


@pytest.mark.parametrize("name", MODELS)
def test_c_matches_forward_on_100_random_inputs(compiled, name):
    models, library = compiled
    model, shape = models[name], MODELS[name][1]
    x = np.random.default_rng(1).uniform(-2, 2, (100, *shape)).astype(np.float32)
    with sg.no_grad():
        expected = model.eval()(sg.tensor(x)).numpy().reshape(100, -1)
    actual = run_c(library, name, x, expected.shape[1])
    assert np.abs(actual - expected).max() <= 1e-5


def test_a_float64_model_runs_in_float32(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    to_c(model, sg.zeros(1, 3, dtype=sg.float64), tmp_path, "wide")
    library = compile_library([tmp_path / "wide.c"], tmp_path / "wide.so")
    x = np.random.default_rng(0).uniform(-2, 2, (50, 3))
    with sg.no_grad():
        expected = model(sg.tensor(x)).numpy()
    actual = run_c(library, "wide", x.astype(np.float32), 2)
    assert 0 < np.abs(actual - expected).max() <= 1e-5  # float32's round-off, not float64's


def test_a_weight_beyond_float32_is_an_error(tmp_path):
    model = nn.Linear(2, 1).double()
    with sg.no_grad():
        model.weight.fill_(1e39)  # inf as a C float
    with pytest.raises(ValueError, match=r"l0_weight holds inf or nan as a C float"):
        to_c(model, sg.zeros(1, 2, dtype=sg.float64), tmp_path, "huge")
    assert not list(tmp_path.iterdir())


def test_batch_norm_leaves_no_code(tmp_path):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
    source = to_c(model, sg.zeros(1, 1, 5, 5), tmp_path, "folded")[1].read_text()
    body = source[source.index("void folded_predict") :]
    assert body.count(";") == 2  # the conv and the relu
    assert "mean" not in source and "var" not in source


def test_each_module_keeps_its_own_mode(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.ReLU(), nn.Linear(4, 2))
    model[1].eval()  # frozen dropout inside a model that trains
    to_c(model, sg.zeros(1, 3), tmp_path, "modes")
    assert [m.training for m in model.modules()] == [True, True, False, True, True]


def test_weights_are_exact_hex_floats(tmp_path):
    model = nn.Linear(3, 2)
    source = to_c(model, sg.zeros(1, 3), tmp_path, "exact")[1].read_text()
    weights = source[source.index("l0_weight[6] = {") :].split("}")[0].split("{")[1]
    values = [float.fromhex(v.strip().rstrip("f")) for v in weights.split(",")]
    assert values == model.weight.detach().numpy().reshape(-1).tolist()


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_trained_digits_models_give_the_same_class_for_every_held_out_digit(
    digits_models, tmp_path, name
):
    models, test_x, _ = digits_models
    model = models[name]
    sources = to_c(model, test_x[:2], tmp_path, f"digits_{name}")[1:]
    library = compile_library(sources, tmp_path / "digits.so")
    with sg.no_grad():
        expected = model(test_x).numpy()
    actual = run_c(library, f"digits_{name}", test_x.numpy(), 10)
    assert len(actual) == 359
    np.testing.assert_array_equal(actual.argmax(1), expected.argmax(1))
    assert np.abs(actual - expected).max() <= 1e-4


def test_object_needs_no_allocator_and_no_stdio(digits_models, tmp_path):
    models, test_x, _ = digits_models
    model = nn.Sequential(*models["cnn"], nn.Softmax(dim=1))
    source = to_c(model, test_x[:1], tmp_path, "cnn")[1]
    gcc("-c", str(source), "-o", str(tmp_path / "cnn.o"))
    symbols = subprocess.run(
        ["nm", str(tmp_path / "cnn.o")], capture_output=True, text=True, check=True
    ).stdout
    undefined = {line.split()[-1] for line in symbols.splitlines() if " U " in line}
    exported = {line.split()[-1] for line in symbols.splitlines() if " T " in line}
    assert undefined <= {"expf", "logf", "tanhf", "erff", "memcpy", "memset"}, undefined
    assert exported == {"cnn_predict"}  # everything else is static


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return x + self.fc(x)


class InPlaceResidual(Residual):
    """ResNet's ``out += identity``: every layer takes its predecessor's tensor object, but
    not its values (the export used to leave the sum out, silently)."""

    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        out = self.fc(x)
        out += x
        return self.act(out)


class ScaledInPlace(Residual):
    def forward(self, x):
        return self.fc(x).mul_(2)


@pytest.mark.parametrize(
    "model, match",
    [
        (nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3)), "LayerNorm '1' is not supported"),
        (Residual(), "not the output of its last layer"),
        (InPlaceResidual(), "input of ReLU 'act' was changed in place"),
        (ScaledInPlace(), "not the output of its last layer as that layer made it"),
        (
            nn.Sequential(nn.TransformerEncoderLayer(3, 1, 4, batch_first=True)),
            "TransformerEncoderLayer '0' is not supported",
        ),
        (nn.Sequential(nn.ReLU(), nn.BatchNorm1d(3)), "follows ReLU '0'; only a BatchNorm"),
        pytest.param(
            nn.Sequential(nn.Softmax()),
            "give the dim explicitly",
            marks=pytest.mark.filterwarnings("ignore:Implicit dimension"),
        ),
        (nn.Sequential(nn.Softmax(dim=0)), "not the batch dim"),
        # the C used to return one float of each sample of 3, and the ONNX file to fail
        (nn.Sequential(nn.Flatten(0)), r"Flatten '0' turns the batch of shape \(2, 3\) into"),
        # a batch of 2 without channels is one sample of 2 channels to Conv1d(2, ...)
        (nn.Sequential(nn.Conv1d(2, 2, 1)), r"Conv1d '0' takes the batch of shape \(2, 3\) for"),
    ],
)
def test_unsupported_models_are_clear_errors(tmp_path, model, match):
    with pytest.raises(NotImplementedError, match=match):
        to_c(model, sg.zeros(2, 3), tmp_path, "bad")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_name_must_be_a_c_identifier(tmp_path):
    with pytest.raises(ValueError, match="C identifier"):
        to_c(nn.Linear(2, 2), sg.zeros(1, 2), tmp_path, "my-model")


def test_doc_examples_run():
    from scratchgrad.export import c

    assert doctest.testmod(c).failed == 0


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("quantize", [None, "int8"])
def test_padding_mode_other_than_zeros_is_an_error(tmp_path, mode, quantize):
    # the C pads with zeros: exporting another mode used to give silently wrong outputs
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode))
    x = sg.rand(4, 2, 5, 5)
    with pytest.raises(NotImplementedError, match=f"Conv2d '0' has padding_mode='{mode}'"):
        to_c(model, x[:1], tmp_path, "bad", quantize=quantize, calibration=x)
    assert not list(tmp_path.iterdir())


def test_max_pool_returning_indices_is_an_error(tmp_path):
    model = nn.Sequential(nn.MaxPool2d(2, return_indices=True))
    with pytest.raises(NotImplementedError, match="MaxPool2d '0' has return_indices=True"):
        to_c(model, sg.zeros(1, 2, 4, 4), tmp_path, "bad")
