"""Random small models exported to float C, int8 C and ONNX, each compared with the model's own
forward in eval mode (the oracle): random chains of the layers the exports document (Linear,
Conv1d/Conv2d with stride, padding, dilation and groups, BatchNorm with its own running
statistics, pooling with padding, dilation, ceil_mode, count_include_pad and divisor_override,
the activations, Flatten, Dropout, Identity, a trailing Softmax, LayerNorm for ONNX) inside
Sequentials and modules of one's own, on random shapes, with weights of large, small, zero and
negative values, in float32 and float64. Where an export documents a refusal (a padding_mode,
divisor_override or a non-dividing adaptive pool in ONNX, a layer it lacks, a forward that is
not a straight line of layers) it must raise an error naming it and write nothing; everywhere
else its program must compute what the model computes: float C and ONNX within float32
round-off, int8 C equal to its NumPy reference (``QuantizedModel``) bit for bit and within its
quantization error of the float model. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import copy
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from export_helpers import compile_library, run_c
from hypothesis import assume, given
from hypothesis import strategies as st
from oracle import fuzz_settings

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.export import QuantizedModel, to_c
from scratchgrad.onnx import export

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

FUZZ = fuzz_settings(50)
EXPORTS = ("c", "int8", "onnx")
# what int8 cannot represent: a sum beyond int32 or a rescaling beyond 2**30
INT8_RANGE = re.compile(r"to_c\(int8\): .*(could overflow|too large)")


# ---- models -----------------------------------------------------------------------------------


class Drawn:
    """A model being drawn: its layers, the shape of one sample after them, and the errors the
    exports must raise (export -> substrings, any of which the message holds)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.layers: list[nn.Module] = []
        self.in_shape = self.shape = shape
        self.refusals: dict[str, list[str]] = {}
        self.seed = 0  # of the weights

    def __repr__(self) -> str:
        return f"Drawn(in_shape={self.in_shape}, weights={self.seed}, refusals={self.refusals})"

    def add(self, layer: nn.Module) -> None:
        """Append ``layer`` if it takes a sample of the current shape (else reject the draw)."""
        try:
            with sg.no_grad():
                out = layer.eval()(sg.zeros(2, *self.shape))
        except (ValueError, RuntimeError):
            assume(False)
        # a max pool window that sees only padding is -inf (int8 refuses it, tested there)
        assume(out.numel() > 0 and bool(np.isfinite(out.numpy()).all()))
        self.layers.append(layer)
        self.shape = tuple(out.shape[1:])

    def refuse(self, exports, *messages: str) -> None:
        for export_name in exports:
            self.refusals.setdefault(export_name, []).extend(messages)


def activations(draw, drawn: Drawn) -> None:
    """Nothing, or an elementwise layer."""
    kind = draw(st.sampled_from(["none", "relu", "leaky", "tanh", "sigmoid", "gelu", "silu"]))
    if kind == "leaky":
        drawn.add(nn.LeakyReLU(draw(st.sampled_from([0.01, 0.2, -0.5, 1.5]))))
    elif kind == "gelu":
        drawn.add(nn.GELU(draw(st.sampled_from(["none", "tanh"]))))
    elif kind != "none":
        layer = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "silu": nn.SiLU}[kind]
        drawn.add(layer())
    if draw(st.integers(0, 4)) == 0:
        drawn.add(draw(st.sampled_from([nn.Dropout(0.5), nn.Identity()])))


def batch_norm(draw, drawn: Drawn, kind: type) -> None:
    if draw(st.booleans()):
        drawn.add(kind(drawn.shape[0], affine=draw(st.booleans())))


def linear_block(draw, drawn: Drawn) -> None:
    n_out = draw(st.integers(1, 6))
    drawn.add(nn.Linear(drawn.shape[-1], n_out, bias=draw(st.booleans())))
    if len(drawn.shape) == 1:
        batch_norm(draw, drawn, nn.BatchNorm1d)
    if draw(st.integers(0, 5)) == 0:  # ONNX only
        drawn.add(nn.LayerNorm(drawn.shape[-1], bias=draw(st.booleans())))
        drawn.refuse(("c", "int8"), "LayerNorm")
    activations(draw, drawn)


def conv_block(draw, drawn: Drawn) -> None:
    dims = len(drawn.shape) - 1
    c_in = drawn.shape[0]
    groups = draw(st.sampled_from([g for g in range(1, c_in + 1) if c_in % g == 0]))
    c_out = groups * draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    padding = draw(st.sampled_from(["ints", "same", "valid"]))
    if padding == "ints" or (padding == "same" and max(stride) > 1):
        padding = tuple(draw(st.integers(0, 2)) for _ in range(dims))
    padding_mode = draw(st.sampled_from(["zeros"] * 6 + ["reflect", "replicate", "circular"]))
    conv = (nn.Conv1d, nn.Conv2d)[dims - 1]
    layer = conv(
        c_in, c_out, kernel, stride, padding, dilation, groups, draw(st.booleans()), padding_mode
    )
    drawn.add(layer)
    if padding_mode != "zeros":
        drawn.refuse(EXPORTS, "padding_mode")
    batch_norm(draw, drawn, (nn.BatchNorm1d, nn.BatchNorm2d)[dims - 1])
    activations(draw, drawn)


def pool(draw, drawn: Drawn) -> None:
    kind = draw(st.sampled_from(["max", "avg", "adaptive"]))
    if kind == "adaptive":
        size = drawn.shape[1:]
        out = tuple(draw(st.integers(1, n)) for n in size)
        drawn.add(nn.AdaptiveAvgPool2d(out))
        if any(n % o for n, o in zip(size, out)) and out != (1, 1):
            drawn.refuse(["onnx"], "divides")
        return
    kernel = draw(st.sampled_from([2, 3, 1, 4]))
    stride = draw(st.sampled_from([2, None, 1, 3]))
    padding = draw(st.sampled_from(range(kernel // 2, -1, -1)))
    ceil_mode = draw(st.sampled_from([True, False]))
    if kind == "max":
        dilation = draw(st.integers(1, 3))
        drawn.add(nn.MaxPool2d(kernel, stride, padding, dilation, ceil_mode=ceil_mode))
        return
    divisor = draw(st.sampled_from([None] * 4 + [1, 3]))
    drawn.add(nn.AvgPool2d(kernel, stride, padding, ceil_mode, draw(st.booleans()), divisor))
    if divisor:
        drawn.refuse(["onnx"], "divisor_override")


def softmax(draw, drawn: Drawn) -> None:
    """A last Softmax or LogSoftmax over any dim but the batch's."""
    dim = draw(st.integers(1, len(drawn.shape)))
    dim -= draw(st.sampled_from([0, len(drawn.shape) + 1]))  # negative now and then
    drawn.add(draw(st.sampled_from([nn.Softmax, nn.LogSoftmax]))(dim=dim))


@st.composite
def layer_chains(draw) -> Drawn:
    """A straight chain of layers on one of four kinds of sample."""
    kind = draw(st.sampled_from(["features", "rows", "signal", "image"]))
    sizes = st.integers(1, 5)
    if kind == "features":
        drawn = Drawn((draw(sizes),))
    elif kind == "rows":
        drawn = Drawn((draw(sizes), draw(sizes)))
    else:
        spatial = (draw(st.integers(3, 9)),) * (1 if kind == "signal" else 2)
        if kind == "image" and draw(st.booleans()):
            spatial = (spatial[0], draw(st.integers(3, 9)))
        drawn = Drawn((draw(st.integers(1, 4)), *spatial))
        for _ in range(draw(st.integers(1, 2))):
            if kind == "image" and draw(st.booleans()):
                pool(draw, drawn)
            else:
                conv_block(draw, drawn)
        if draw(st.booleans()):
            drawn.add(nn.Flatten())
    for _ in range(draw(st.integers(0 if kind in ("signal", "image") else 1, 2))):
        linear_block(draw, drawn)
    if draw(st.integers(0, 3)) == 0:
        softmax(draw, drawn)
    return drawn


class Chain(nn.Module):
    """A model of one's own: a body and a head, called one after the other."""

    def __init__(self, body: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.body, self.head = body, head

    def forward(self, x):
        return self.head(self.body(x))


class Residual(nn.Module):
    """``x + block(x)``, written as a sum or in place (ResNet's ``out += identity``)."""

    def __init__(self, block: nn.Module, in_place: bool) -> None:
        super().__init__()
        self.block, self.in_place = block, in_place

    def forward(self, x):
        out = self.block(x)
        if self.in_place:
            out += x
            return out
        return out + x


@st.composite
def models(draw):
    """(model, the drawn chain, dtype): a chain of layers in a structure, with random
    weights and BatchNorm statistics."""
    drawn = draw(layer_chains())
    layers = drawn.layers
    structures = ["sequential", "nested", "own"]
    if drawn.shape == drawn.in_shape:  # a block whose output adds to its input
        structures.append("residual")
    structure = draw(st.sampled_from(structures))
    if structure == "nested" and len(layers) > 1:
        cut = draw(st.integers(1, len(layers) - 1))
        model = nn.Sequential(nn.Sequential(*layers[:cut]), *layers[cut:])
    elif structure == "own" and len(layers) > 1:
        cut = draw(st.integers(1, len(layers) - 1))
        model = Chain(nn.Sequential(*layers[:cut]), nn.Sequential(*layers[cut:]))
    elif structure == "residual":
        model = Residual(nn.Sequential(*layers), in_place=draw(st.booleans()))
        drawn.refuse(EXPORTS, "straight line", "not the output of its last layer")
    else:
        model = nn.Sequential(*layers)
    drawn.seed = draw(st.integers(0, 2**32 - 1))
    randomize(model, drawn.seed)
    dtype = draw(st.sampled_from([np.float32] * 4 + [np.float64]))
    return model.to(sg.float64) if dtype == np.float64 else model, drawn, dtype


def randomize(model: nn.Module, seed: int) -> None:
    """Weights of one magnitude per tensor (tiny to large), some of them zero or all of them,
    and BatchNorm statistics far from 0 and 1 (a variance near 0 too)."""
    rng = np.random.default_rng(seed)
    for module in model.modules():
        for name, value in [*module._parameters.items(), *module._buffers.items()]:
            if value is None or not value.is_floating_point():
                continue
            magnitude = rng.choice([1.0, 1.0, 1e-3, 30.0, 0.0])
            new = rng.normal(size=value.shape) * magnitude * (rng.random(value.shape) > 0.2)
            if name == "running_var":
                new = np.abs(new) + rng.choice([1e-4, 0.5, 3.0])
            with sg.no_grad():
                value.copy_(sg.tensor(new.astype(np.float32)))


# ---- the exports, run -------------------------------------------------------------------------


def outcomes(model: nn.Module, x: np.ndarray, where: Path) -> dict:
    """Each export's outputs on the batch ``x`` (one row per sample), or the error it raised."""
    example = sg.tensor(x)
    results, sources = {}, []
    for name, options in (("c", {}), ("int8", {"quantize": "int8", "calibration": example})):
        try:
            sources += to_c(model, example, where / name, f"fuzz_{name}", **options)[1:]
        except (NotImplementedError, ValueError) as error:
            results[name] = error
    if sources:
        library = compile_library(sources, where / "fuzz.so")
        for name in ("c", "int8"):
            if name not in results:
                results[name] = run_c(library, f"fuzz_{name}", x, out_size(model, x))
    (where / "onnx").mkdir()
    try:
        export(model, (example,), where / "onnx" / "fuzz.onnx")
    except (NotImplementedError, ValueError) as error:
        results["onnx"] = error
    else:
        session = ort.InferenceSession(str(where / "onnx" / "fuzz.onnx"))
        inputs = {session.get_inputs()[0].name: x.astype(np.float32)}
        results["onnx"] = session.run(None, inputs)[0].reshape(len(x), -1)
    return results


def forward(model: nn.Module, x: np.ndarray) -> np.ndarray:
    with sg.no_grad():
        return model.eval()(sg.tensor(x)).numpy().reshape(len(x), -1)


def out_size(model: nn.Module, x: np.ndarray) -> int:
    return forward(model, x[:1]).shape[1]


@FUZZ
@given(models(), st.integers(1, 3), st.sampled_from([1.0, 1e-2, 20.0]), st.integers(0, 2**32 - 1))
def test_exports_compute_what_the_model_computes_or_refuse_it(drawn_model, batch, scale, seed):
    model, drawn, dtype = drawn_model
    x = (np.random.default_rng(seed).normal(size=(batch, *drawn.in_shape)) * scale).astype(dtype)
    expected = forward(model, x)
    with tempfile.TemporaryDirectory() as where:
        results = outcomes(model, x, Path(where))
        for name, result in results.items():
            if name in drawn.refusals:
                assert isinstance(result, NotImplementedError), f"{name}: no refusal, {result}"
                assert any(m in str(result) for m in drawn.refusals[name]), (name, result)
                assert not list((Path(where) / name).glob("fuzz*")), f"{name} wrote a file"
                continue
            if name == "int8" and INT8_RANGE.search(str(result)):
                continue  # weights and bias of far apart magnitudes: a clear refusal
            assert not isinstance(result, Exception), f"{name} raised {result!r}"
            if name == "int8":
                check_int8(model, x, result, expected)
            else:
                assert_close(result, expected, round_off(model, x), name)


def assert_close(actual, expected, round_off: np.ndarray, what: str) -> None:
    """Within float32 round-off: of the largest output, or as large as the model's own float32
    forward is from its float64 one, where cancellation (or GELU's tail, 1 + erf(x) near 0)
    leaves few correct digits."""
    allowed = 1e-4 * (np.abs(expected).max() + np.abs(expected)) + 1e-6 + 4 * round_off
    far = np.abs(actual - expected) > allowed
    assert not far.any(), f"{what}: {actual[far]} where the model gives {expected[far]}"


def round_off(model: nn.Module, x: np.ndarray) -> np.ndarray:
    """How far the model's forward in float32 is from its forward in float64, on ``x``."""
    low, high = (
        forward(copy.deepcopy(model).to(getattr(sg, dtype)), x.astype(dtype))
        for dtype in ("float32", "float64")
    )
    return np.abs(low.astype(np.float64) - high)


def check_int8(model: nn.Module, x: np.ndarray, actual: np.ndarray, expected: np.ndarray) -> None:
    """The C equals the NumPy reference of the int8 rules, and stays within the error those
    rules allow of the float model (calibrated on ``x`` itself, so nothing saturates)."""
    qmodel = QuantizedModel(model, sg.tensor(x))
    reference = qmodel.forward(x)
    # equal, but for expf and logf of a trailing softmax in the last bit
    np.testing.assert_allclose(actual, reference, rtol=1e-6, atol=1e-6, err_msg="int8 reference")
    bound = int8_error_bound(qmodel) * (1 + 1e-5) + 1e-5 * np.abs(expected).max()
    assert np.abs(actual - expected).max() <= bound, ("int8 error bound", bound)


def int8_error_bound(qmodel: QuantizedModel) -> float:
    """The largest error the int8 rules allow: each rounding adds half a step of its tensor's
    scale, and each layer passes on the error it gets times its Lipschitz constant (a weight
    row's absolute sum; 1.13 for the smooth activations, GELU's; a window's size over
    divisor_override), a rounded weight adding its half step times the largest input."""
    error, scale = qmodel.input_scale / 2, qmodel.input_scale
    for layer in qmodel.layers:
        module, step, out_step = layer.step.module, layer.step, layer.scale / 2
        if isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            w = step.weight.reshape(len(step.weight), -1)
            w_step = np.abs(w).max(1) / 127
            bias_step = np.where(w_step > 0, scale * w_step, layer.scale)
            rounded = w.shape[1] * w_step / 2 * 127 * scale + bias_step / 2
            error = (np.abs(w).sum(1) * error + rounded).max() + out_step
        elif isinstance(module, nn.AvgPool2d):
            window = math.prod(_pair(module.kernel_size))
            error = error * window / (module.divisor_override or window) + out_step
        elif isinstance(module, nn.AdaptiveAvgPool2d):
            error += out_step
        elif "table" in layer.arrays:
            slope = abs(module.negative_slope) if isinstance(module, nn.LeakyReLU) else 1.13
            error = max(1.0, slope) * error + out_step
        scale = layer.scale
    log_softmax = any(isinstance(step.module, nn.LogSoftmax) for step in qmodel.softmax)
    return 2 * error if log_softmax else error  # log_softmax(x)_i = x_i - logsumexp(x)


def _pair(value) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)
