"""``scratchgrad.onnx.export``: the file passes ``onnx.checker`` and onnxruntime computes what
scratchgrad's forward computes (the oracle), at batch sizes 1 and 7 from one file with a dynamic
batch; ``torch.onnx.export``'s calls give the file PyTorch's exporter gives (names, shapes,
outputs), and its options that scratchgrad cannot honour are clear errors."""

import doctest
import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
from export_helpers import MODELS, randomize_batch_norms

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.onnx import OperatorExportTypes, TrainingMode, export

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


def export_any_batch(model, example, path, **options) -> None:
    """Export with the batch dim dynamic, named "input" and "output" as the tests run them."""
    dynamic = {"input": {0: "batch"}, "output": {0: "batch"}}
    export(model, example, path, input_names=["input"], dynamic_axes=dynamic, **options)


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
    export_any_batch(model, sg.zeros(2, *shape), path)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    for batch in (1, 7):
        x = np.random.default_rng(batch).uniform(-2, 2, (batch, *shape)).astype(np.float32)
        np.testing.assert_allclose(run_onnx(path, x), forward(model, x), rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "pool",
    [
        nn.MaxPool2d(2, 2, padding=1, ceil_mode=True),
        nn.MaxPool2d(2, 3, ceil_mode=True),
        nn.MaxPool2d(2, 3, dilation=4, ceil_mode=True),  # its end padding: 2 columns of 6
        nn.AvgPool2d(2, 2, padding=1, ceil_mode=True),
        nn.AvgPool2d(4, 3, padding=2, ceil_mode=True, count_include_pad=False),
    ],
)
def test_ceil_mode_pooling_drops_a_window_starting_in_the_padding(tmp_path, pool):
    # ONNX's ceil_mode keeps a last window that PyTorch drops (7 rows, kernel 2, stride 2,
    # padding 1: 5 windows in ONNX, 4 in PyTorch): the export used to fail onnx.checker
    path = tmp_path / "pool.onnx"
    export_any_batch(nn.Sequential(pool), sg.zeros(2, 2, 7, 6), path)
    x = np.random.default_rng(0).normal(size=(3, 2, 7, 6)).astype(np.float32)
    np.testing.assert_allclose(run_onnx(path, x), forward(pool, x), rtol=0, atol=1e-6)


def test_a_weight_beyond_float32_is_an_error(tmp_path):
    model = nn.Linear(2, 1).double()
    with sg.no_grad():
        model.weight.fill_(1e39)  # inf as ONNX's FLOAT
    with pytest.raises(ValueError, match=r"weight holds values beyond float32's range"):
        export(model, (sg.zeros(1, 2, dtype=sg.float64),), tmp_path / "huge.onnx")
    assert not list(tmp_path.iterdir())


def test_embedding_takes_integer_indices(tmp_path):
    model = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Tanh())
    path = tmp_path / "embedding.onnx"
    export_any_batch(model, sg.zeros(2, 3, dtype=sg.int64), path)
    for batch in (1, 7):
        x = np.random.default_rng(batch).integers(0, 10, (batch, 3))
        np.testing.assert_allclose(run_onnx(path, x), forward(model, x), rtol=0, atol=1e-6)


def test_embedding_with_max_norm_is_an_error(tmp_path):
    # max_norm rescales the looked-up rows in forward: a plain Gather used to differ silently
    model = nn.Sequential(nn.Embedding(10, 4, max_norm=0.5))
    with pytest.raises(NotImplementedError, match="Embedding '0' has max_norm"):
        export(model, sg.zeros(2, 3, dtype=sg.int64), tmp_path / "bad.onnx")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_trained_digits_models(digits_models, tmp_path, name):
    models, test_x, _ = digits_models
    path = tmp_path / f"digits_{name}.onnx"
    dynamic = {"image": [0], "logits": [0]}  # PyTorch's list form
    names = {"input_names": ["image"], "output_names": ["logits"]}
    export(models[name], test_x[:2], path, **names, dynamic_axes=dynamic)
    x = test_x.numpy()
    for batch in (x[:1], x[:7], x):
        np.testing.assert_allclose(run_onnx(path, batch), forward(models[name], batch), atol=1e-5)


def test_fixed_shapes_without_dynamic_axes(tmp_path):
    path = tmp_path / "fixed.onnx"
    export(nn.Linear(3, 2), sg.zeros(4, 3), path)
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


# ---- torch.onnx.export's calls, run with torch and with scratchgrad as `torch` ----------------


def make_convnet(library):
    """The same convolutional classifier from either library's nn (its BatchNorm folds away)."""
    nn = library.nn
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(36, 8),
        nn.GELU(),
        nn.LayerNorm(8),
        nn.Linear(8, 3),
    )


def torch_and_ours():
    """A torch convnet with BatchNorm statistics of its own, and ours with its weights."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = make_convnet(torch).eval()
    with torch.no_grad():
        theirs[1].running_mean.uniform_(-1, 1), theirs[1].running_var.uniform_(0.5, 2)
    ours = make_convnet(sg)
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return torch, theirs, ours.eval()


def script(torch, model, x, f, dynamic_axes) -> None:
    """What a PyTorch program writes to export its model (dynamo=False: torch's TorchScript
    exporter, the one whose options these are; its torch.export one needs onnxscript)."""
    torch.onnx.export(
        model,
        (x,),
        f,
        input_names=["pixels"],
        output_names=["scores"],
        dynamic_axes=dynamic_axes,
        dynamo=False,
    )


def shapes(proto) -> list[tuple[str, list]]:
    """The graph's inputs and outputs: name and dims (a symbol's name, or a size)."""
    return [
        (v.name, [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim])
        for v in [*proto.graph.input, *proto.graph.output]
    ]


@pytest.mark.parametrize(
    "dynamic_axes",
    [
        None,
        {"pixels": {0: "batch"}, "scores": {0: "batch"}},
        {"pixels": [0], "scores": [0]},
        {"pixels": {0: "n"}},
        {"scores": {0: "n"}},
    ],
)
@pytest.mark.parametrize("to_file", [False, True])
def test_torch_onnx_export_script_gives_torchs_file(tmp_path, dynamic_axes, to_file):
    torch, theirs, ours = torch_and_ours()
    x = np.random.default_rng(0).uniform(-2, 2, (5, 2, 6, 6)).astype(np.float32)
    files = []
    for library, model in ((torch, theirs), (sg, ours)):
        f = tmp_path / f"{library.__name__}.onnx" if to_file else io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torch's: the legacy exporter
            script(library, model, library.tensor(x), f, dynamic_axes)
        files.append(f.read_bytes() if to_file else f.getvalue())
    theirs_proto, ours_proto = (onnx.load_from_string(data) for data in files)
    assert shapes(ours_proto) == shapes(theirs_proto)

    dynamic = dynamic_axes is not None and "pixels" in dynamic_axes
    batch = np.random.default_rng(1).uniform(-2, 2, (7 if dynamic else 5, 2, 6, 6))
    batch = batch.astype(np.float32)
    expected = theirs(torch.tensor(batch)).detach().numpy()
    for data in files:
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(session.run(None, {"pixels": batch})[0], expected, atol=1e-5)


def test_signature_is_torchs():
    import inspect

    torch = pytest.importorskip("torch")
    theirs = inspect.signature(torch.onnx.export).parameters.values()
    ours = inspect.signature(export).parameters.values()
    as_tuple = lambda p: (p.name, p.kind, getattr(p.default, "name", p.default))  # noqa: E731
    assert [as_tuple(p) for p in ours] == [as_tuple(p) for p in theirs]


@pytest.mark.parametrize(
    "options, error, match",
    [
        ({"output_names": ["a", "b"]}, RuntimeError, r"number of output names provided \(2\)"),
        ({"dynamic_axes": {"input": ["0"]}}, ValueError, "axis index is expected to be an int"),
    ],
)
def test_torchs_errors_for_bad_names_and_axes(tmp_path, options, error, match):
    torch = pytest.importorskip("torch")
    for library in (torch, sg):
        model = library.nn.Linear(3, 2)
        with pytest.raises(error, match=match), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            library.onnx.export(
                model,
                (library.zeros(2, 3),),
                tmp_path / "bad.onnx",
                input_names=["input"],
                dynamo=False,
                **options,
            )


@pytest.mark.parametrize(
    "args, options, error, match",
    [
        ((sg.zeros(2, 3), sg.zeros(2, 3)), {}, NotImplementedError, "args holds 2 inputs"),
        (([1.0, 2.0],), {}, TypeError, "args must be a Tensor, not list"),
        ((sg.zeros(2, 3),), {"export_params": False}, NotImplementedError, "export_params"),
        ((sg.zeros(2, 3),), {"keep_initializers_as_inputs": True}, NotImplementedError, "graph"),
        ((sg.zeros(2, 3),), {"dynamic_shapes": ({0: "b"},)}, NotImplementedError, "dynamic_axes"),
        ((sg.zeros(2, 3),), {"kwargs": {"y": 1}}, NotImplementedError, "kwargs"),
        ((sg.zeros(2, 3),), {"report": True}, NotImplementedError, "torch.export"),
        (
            (sg.zeros(2, 3),),
            {"operator_export_type": OperatorExportTypes.ONNX_ATEN},
            NotImplementedError,
            "operator_export_type",
        ),
        (
            (sg.zeros(2, 3),),
            {"training": TrainingMode.TRAINING},
            NotImplementedError,
            "training mode",
        ),
        (
            (sg.zeros(2, 3),),
            {"dynamic_axes": {"input": {0: "batch", 1: "features"}}},
            NotImplementedError,
            r"axis 1 of 'input'.*only the batch \(axis 0\)",
        ),
    ],
)
def test_what_scratchgrad_cannot_honour_is_a_clear_error(tmp_path, args, options, error, match):
    path = tmp_path / "bad.onnx"
    with pytest.raises(error, match=match):
        export(nn.Linear(3, 2), args, path, **options)
    assert not path.exists()


def test_no_file_is_an_error_not_an_onnx_program():
    with pytest.raises(TypeError, match="give f"):
        export(nn.Linear(3, 2), (sg.zeros(2, 3),))


def test_preserve_exports_a_model_in_eval_mode_only(tmp_path):
    model = nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.5))
    with pytest.raises(NotImplementedError, match="TrainingMode.PRESERVE"):
        export(model, sg.zeros(2, 3), tmp_path / "x.onnx", training=TrainingMode.PRESERVE)
    export(model.eval(), sg.zeros(2, 3), tmp_path / "x.onnx", training=TrainingMode.PRESERVE)
    assert run_onnx(tmp_path / "x.onnx", np.ones((2, 3), np.float32)).shape == (2, 2)


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, pixels):
        return self.linear(pixels)


def test_names_default_to_forwards_argument_and_output(tmp_path):
    export(Scale(), sg.zeros(2, 3), tmp_path / "scale.onnx")
    assert shapes(onnx.load(str(tmp_path / "scale.onnx"))) == [
        ("pixels", [2, 3]),
        ("output", [2, 2]),
    ]


def test_dynamic_axes_of_an_unknown_name_warn_as_torchs(tmp_path):
    with pytest.warns(UserWarning, match="Provided key x for dynamic axes is not a valid input"):
        export(nn.Linear(3, 2), sg.zeros(2, 3), tmp_path / "x.onnx", dynamic_axes={"x": [0]})
    assert shapes(onnx.load(str(tmp_path / "x.onnx"))) == [("input", [2, 3]), ("output", [2, 2])]


def test_torch_onnx_is_there_after_import_without_loading_onnx():
    code = (
        "import sys; import scratchgrad as torch; "
        "assert 'onnx' not in sys.modules and 'scratchgrad.onnx' not in sys.modules; "
        "torch.onnx.export, torch.onnx.TrainingMode.EVAL; "
        "assert 'onnx' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_mode_other_than_zeros_is_an_error(tmp_path, mode):
    # ONNX's Conv pads with zeros: exporting another mode used to give silently wrong outputs
    model = nn.Sequential(nn.Conv1d(2, 3, 3, padding=1, padding_mode=mode))
    with pytest.raises(NotImplementedError, match=f"Conv1d '0' has padding_mode='{mode}'"):
        export(model, sg.zeros(1, 2, 7), tmp_path / "bad.onnx")
    assert not list(tmp_path.iterdir())
