"""``scratchgrad.onnx.export``: the file passes ``onnx.checker`` and onnxruntime computes what
scratchgrad's forward computes (the oracle), at batch sizes 1 and 7 from one file."""

import doctest
import sys

import numpy as np
import pytest
from export_helpers import MODELS, randomize_batch_norms

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.onnx import export

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

# ONNX has no divisor_override, and adaptive pooling only where the sizes divide (tested below)
NOT_IN_ONNX = {"avg_pool_divisor", "adaptive"}
ONNX_MODELS = {
    **{name: entry for name, entry in MODELS.items() if name not in NOT_IN_ONNX},
    "adaptive_divides": (lambda: nn.Sequential(nn.AdaptiveAvgPool2d((2, 3))), (2, 6, 6)),
    "global_pool": (lambda: nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten()), (3, 5, 4)),
    "layer_norm": (
        lambda: nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.LayerNorm(6, bias=False)),
        (3, 4),
    ),
    "encoder": (
        lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, norm=nn.LayerNorm(8)
        ),
        (5, 8),
    ),
    "encoder_layer_norm_first": (
        lambda: nn.Sequential(
            nn.TransformerEncoderLayer(
                8, 4, 12, activation="gelu", batch_first=True, norm_first=True
            ),
            nn.Flatten(),
            nn.Linear(40, 3),
        ),
        (5, 8),
    ),
    "layer_norm_2d": (
        lambda: nn.Sequential(nn.LayerNorm((3, 4), elementwise_affine=False)),
        (3, 4),
    ),
}


def run_onnx(path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def forward(model, x: np.ndarray) -> np.ndarray:
    with sg.no_grad():
        return model.eval()(sg.tensor(x)).numpy()


@pytest.mark.parametrize("name", ONNX_MODELS)
def test_onnxruntime_matches_forward_at_batch_1_and_7(tmp_path, name):
    make, shape = ONNX_MODELS[name]
    sg.manual_seed(0)
    model = make()
    randomize_batch_norms(model)
    path = tmp_path / f"{name}.onnx"
    export(model, sg.zeros(2, *shape), path)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    for batch in (1, 7):
        x = np.random.default_rng(batch).uniform(-2, 2, (batch, *shape)).astype(np.float32)
        np.testing.assert_allclose(run_onnx(path, x), forward(model, x), rtol=0, atol=1e-5)


def test_embedding_takes_integer_indices(tmp_path):
    model = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Tanh())
    path = tmp_path / "embedding.onnx"
    export(model, sg.zeros(2, 3, dtype=sg.int64), path)
    for batch in (1, 7):
        x = np.random.default_rng(batch).integers(0, 10, (batch, 3))
        np.testing.assert_allclose(run_onnx(path, x), forward(model, x), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_trained_digits_models(digits_models, tmp_path, name):
    models, test_x, _ = digits_models
    path = tmp_path / f"digits_{name}.onnx"
    export(models[name], test_x[:2], path, input_names=["image"], output_names=["logits"])
    x = test_x.numpy()
    for batch in (x[:1], x[:7], x):
        np.testing.assert_allclose(run_onnx(path, batch), forward(models[name], batch), atol=1e-5)


def test_fixed_batch_when_not_dynamic(tmp_path):
    path = tmp_path / "fixed.onnx"
    export(nn.Linear(3, 2), sg.zeros(4, 3), path, dynamic_batch=False)
    dims = onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [4, 3]
    dims = onnx.load(str(path)).graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [4, 2]


@pytest.mark.parametrize(
    "name, match",
    [("avg_pool_divisor", "divisor_override"), ("adaptive", "divides the input size")],
)
def test_what_onnx_cannot_express_is_a_clear_error(tmp_path, name, match):
    make, shape = MODELS[name]
    with pytest.raises(NotImplementedError, match=match):
        export(make(), sg.zeros(1, *shape), tmp_path / "bad.onnx")


class Double(nn.Module):
    def forward(self, x):
        return 2 * x


def test_unsupported_layer_is_named(tmp_path):
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), Double())
    with pytest.raises(NotImplementedError, match="Double '2' is not supported"):
        export(model, sg.zeros(2, 3), tmp_path / "bad.onnx")


def test_missing_onnx_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"scratchgrad\[onnx\]"):
        export(nn.Linear(2, 2), sg.zeros(1, 2), tmp_path / "x.onnx")


def test_doc_example_runs():
    import scratchgrad.onnx

    assert doctest.testmod(scratchgrad.onnx).failed == 0


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)

    def forward(self, x):
        return self.encoder(x, src_mask=nn.Transformer.generate_square_subsequent_mask(3))


@pytest.mark.parametrize(
    "model, match",
    [
        (nn.TransformerEncoderLayer(4, 2, 8), "batch_first=False"),
        (Masked(), "called with more than its input"),
    ],
)
def test_attention_that_export_cannot_take_is_a_clear_error(tmp_path, model, match):
    with pytest.raises(NotImplementedError, match=match):
        export(model, sg.zeros(2, 3, 4), tmp_path / "bad.onnx")
