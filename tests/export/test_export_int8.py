"""``to_c(quantize="int8")``: the compiled C equals the NumPy int8 reference
(``QuantizedModel.forward``) bit for bit, stays close to the float model, keeps the digits
models' accuracy within a point, and holds at most half the float model's weight bytes."""

import doctest
import subprocess

import numpy as np
import pytest
from export_helpers import MODELS, compile_library, gcc, randomize_batch_norms, run_c

import scratchgrad as sg
from scratchgrad import nn, train
from scratchgrad.export import QuantizedModel, quantize, to_c

INT8_MODELS = {name: entry for name, entry in MODELS.items() if name != "softmax_channels"}
INT8_MODELS["lookups"] = (
    lambda: nn.Sequential(
        nn.Linear(5, 6), nn.LeakyReLU(0.1), nn.Linear(6, 6), nn.SiLU(), nn.Linear(6, 3),
        nn.Softmax(dim=1),
    ),
    (5,),
)  # fmt: skip


def uniform(seed: int, n: int, shape) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, (n, *shape)).astype(np.float32)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("int8")
    sg.manual_seed(0)
    models, sources = {}, []
    for name, (make, shape) in INT8_MODELS.items():
        model = make()
        randomize_batch_norms(model)
        calibration = sg.tensor(uniform(0, 1000, shape))
        models[name] = (model, QuantizedModel(model, calibration))
        sources += to_c(model, calibration, out, name, "int8", calibration)[1:]
    return models, compile_library(sources, out / "int8.so")


@pytest.mark.parametrize("name", INT8_MODELS)
def test_c_equals_the_numpy_int8_reference(compiled, name):
    models, library = compiled
    model, qmodel = models[name]
    x = uniform(1, 100, INT8_MODELS[name][1])
    expected = qmodel.forward(x)
    actual = run_c(library, name, x, expected.shape[1])
    if qmodel.softmax:  # a trailing softmax runs in float: expf may differ in the last bit
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(actual, expected)
    with sg.no_grad():  # and int8 stays near float: within 5% of the output range
        reference = model.eval()(sg.tensor(x)).numpy().reshape(100, -1)
    assert np.abs(actual - reference).max() <= 0.05 * np.abs(reference).max() + 0.02


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_digits_models_lose_at_most_one_point(digits_models, tmp_path, name):
    models, test_x, test_y = digits_models
    model = models[name]
    (train_x, _), _ = train.split_digits(seed=0)
    calibration = train_x[:256]
    sources = to_c(model, test_x[:1], tmp_path, f"q{name}", "int8", calibration)[1:]
    library = compile_library(sources, tmp_path / "q.so")
    actual = run_c(library, f"q{name}", test_x.numpy(), 10)
    np.testing.assert_array_equal(
        actual, QuantizedModel(model, calibration).forward(test_x.numpy())
    )
    with sg.no_grad():
        float_accuracy = (model(test_x).numpy().argmax(1) == test_y).mean()
    assert (actual.argmax(1) == test_y).mean() >= float_accuracy - 0.01


def _symbol_bytes(obj) -> dict[str, int]:
    """nm's sizes of the object's symbols, by name; also checks for allocator and stdio."""
    listing = subprocess.run(["nm", "-S", str(obj)], capture_output=True, text=True, check=True)
    rows = [line.split() for line in listing.stdout.splitlines()]
    undefined = {row[-1] for row in rows if row[0] == "U"}
    assert undefined <= {"expf", "logf", "memcpy", "memset"}, undefined
    return {row[-1]: int(row[1], 16) for row in rows if len(row) == 4}


def test_int8_weights_take_at_most_half_the_bytes(digits_models, tmp_path):
    models, test_x, _ = digits_models
    model = models["cnn"]
    to_c(model, test_x[:1], tmp_path, "f", calibration=None)
    to_c(model, test_x[:1], tmp_path, "q", "int8", test_x[:64])
    weights = []
    for name in ("f", "q"):
        gcc("-c", str(tmp_path / f"{name}.c"), "-o", str(tmp_path / f"{name}.o"))
        sizes = _symbol_bytes(tmp_path / f"{name}.o")
        weights.append(sum(n for symbol, n in sizes.items() if symbol.startswith("l")))
    assert weights[1] <= weights[0] / 2


def test_sum_of_rounded_inputs_beyond_127_saturates(tmp_path):
    # four ones at scale 4/127 are 32 steps each: a window summing to 128 steps used to wrap
    # to -128 in C (output -4.03 for 4) and stay 128 in the reference
    model = nn.Sequential(nn.AvgPool2d(2, divisor_override=1))
    x = sg.ones(1, 1, 2, 2)
    library = compile_library(to_c(model, x, tmp_path, "sums", "int8", x)[1:], tmp_path / "s.so")
    actual = run_c(library, "sums", x.numpy(), 1)
    np.testing.assert_array_equal(actual, QuantizedModel(model, x).forward(x.numpy()))
    np.testing.assert_allclose(actual, [[4.0]], rtol=1e-6)


def test_channel_of_zero_weights_keeps_its_bias(tmp_path):
    # its bias was quantized at the input's scale (100/127 here), so a bias of 0.3 became 0
    model = nn.Linear(2, 1)
    model.load_state_dict({"weight": sg.zeros(1, 2), "bias": sg.tensor([0.3])})
    x = sg.tensor([[100.0, -100.0], [-50.0, 20.0]])
    library = compile_library(to_c(model, x, tmp_path, "zero", "int8", x)[1:], tmp_path / "z.so")
    actual = run_c(library, "zero", x.numpy(), 1)
    np.testing.assert_array_equal(actual, QuantizedModel(model, x).forward(x.numpy()))
    np.testing.assert_allclose(actual, [[0.3], [0.3]], rtol=1e-6)


def test_requantization_multiplies_as_the_real_factor():
    factors = np.array([0.9, 0.3, 1e-3, 3.7, 2.0**-35])
    m, shift = quantize.requantization(factors)
    np.testing.assert_allclose(m / 2.0 ** shift.astype(np.float64), factors, rtol=1e-9, atol=1e-10)


def linear(weight: list, bias: float) -> nn.Linear:
    layer = nn.Linear(len(weight[0]), len(weight))
    with sg.no_grad():
        layer.weight.copy_(sg.tensor(weight))
        layer.bias.fill_(bias)
    return layer


@pytest.mark.parametrize(
    "model, calibration, match",
    [
        (nn.Linear(3, 2), None, "needs calibration="),
        (nn.Sequential(nn.Softmax(dim=1), nn.Linear(3, 2)), sg.zeros(4, 3), "not the last layer"),
        (nn.Sequential(nn.LayerNorm(3)), sg.zeros(4, 3), "LayerNorm '0' is not supported"),
        # a window that sees only padding is -inf: the scale was inf (a ValueError of hex())
        (
            nn.Sequential(nn.MaxPool2d(2, 2, padding=1, dilation=3, ceil_mode=True)),
            sg.zeros(4, 1, 2, 2),
            "MaxPool2d '0''s output holds inf or nan",
        ),
        # its bias is 1.6e13 steps of its input's scale times its weights'
        (linear([[1e-6] * 3], 1e3), sg.ones(4, 3), "the int32 sums of Linear could overflow"),
        # outputs near 1e-6 from weights of 1e6: a factor of 7.9e9 from int32 sum to output
        (linear([[1e6, -1e6, 0]], 1e-6), sg.ones(4, 3), "Linear's rescaling factor 7.87402e"),
    ],
)
def test_what_int8_cannot_do_is_a_clear_error(tmp_path, model, calibration, match):
    with pytest.raises((ValueError, NotImplementedError), match=match):
        to_c(model, sg.zeros(1, 3), tmp_path, "bad", "int8", calibration)
    assert not list(tmp_path.iterdir())


def test_doc_examples_run():
    assert doctest.testmod(quantize).failed == 0
