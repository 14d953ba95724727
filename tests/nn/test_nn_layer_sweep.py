"""Differences a differential sweep of the nn layers against PyTorch found, each against torch:
the float64 gradient of ``Embedding(scale_grad_by_freq=True)``; activation and dropout modules
built with ``inplace=True`` writing into their input; an in-place dropout that changes nothing
leaving its input's version alone; an in-place activation after a layer norm without
weight and bias; ``hardtanh``/``relu6`` of integer tensors; integer inputs refused by ``silu``,
``leaky_relu`` and ``softplus``; ``rms_norm``'s dtype where the weight's differs; batch norm of
an empty batch; the error types of ``embedding_bag``'s bad offsets and of padding past a dim;
``hardswish`` and ``prelu`` at infinite and NaN inputs; ``threshold``, ``hardshrink`` and
``softshrink`` of NaN; ``normalize`` of an empty dim and of zeros."""

import numpy as np
import pytest
import torch
from oracle import ROUND_OFF, assert_close, assert_raises_as_torch, check_against_torch

import scratchgrad as sg


def _normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_embedding_scale_grad_by_freq_float64_gradient_has_no_float32_rounding():
    # the counts' inverses were made in the default dtype (float32): 1/3 rounded to 1e-8
    index = np.array([[1, 2, 4, 2], [4, 3, 2, 9]])
    grads = []
    for m in (sg, torch):
        weight = m.tensor(_normal(10, 3), requires_grad=True)
        out = m.nn.functional.embedding(m.tensor(index), weight, scale_grad_by_freq=True)
        (out * m.tensor(_normal(2, 4, 3, seed=1))).sum().backward()
        grads.append(weight.grad)
    assert grads[0].dtype == sg.float64
    assert_close(*grads, tolerance=ROUND_OFF)


INPLACE_MODULES = [
    ("ReLU", {}),
    ("LeakyReLU", {"negative_slope": 0.2}),
    ("SiLU", {}),
    ("ELU", {"alpha": 0.5}),
    ("SELU", {}),
    ("Mish", {}),
    ("Hardtanh", {"min_val": -1.0, "max_val": 0.5}),
    ("ReLU6", {}),
]


@pytest.mark.parametrize(("name", "options"), INPLACE_MODULES, ids=[n for n, _ in INPLACE_MODULES])
def test_inplace_activation_module_writes_into_its_input_as_torch(name, options):
    results = []
    for m in (sg, torch):
        x = m.tensor(_normal(3, 4) * 3, requires_grad=True)
        y = x * 1.0
        out = getattr(m.nn, name)(inplace=True, **options)(y)
        (y * m.tensor(_normal(3, 4, seed=1))).sum().backward()
        results.append((out is y, y.detach(), x.grad))
    (ours_same, ours_y, ours_grad), (theirs_same, theirs_y, theirs_grad) = results
    assert ours_same and theirs_same
    assert_close(ours_y, theirs_y)
    assert_close(ours_grad, theirs_grad)


@pytest.mark.parametrize("norm", ["layer_norm", "group_norm"])
def test_inplace_relu_after_norm_without_weight_and_bias_as_torch(norm):
    # the fused layer norm kept its output as the standardised values its backward reads
    grads = []
    for m in (sg, torch):
        x = m.tensor(_normal(2, 4, 3), requires_grad=True)
        F = m.nn.functional
        y = F.layer_norm(x, (3,)) if norm == "layer_norm" else F.group_norm(x, 2)
        F.relu(y, inplace=True)
        (y * m.tensor(_normal(2, 4, 3, seed=1))).sum().backward()
        grads.append(x.grad)
    assert_close(*grads)


# (an unsigned dtype with a lower bound below 0 after truncation raises; tested below)
HARDTANH_CASES = [
    *[(d, "hardtanh", b) for d in ("int64", "int32") for b in ((-1.7, 2.7), (-2.0, 0.0))],
    *[(d, "hardtanh", b) for d in ("int64", "int32", "uint8") for b in ((-0.5, 3.5), (0.5, 3))],
    *[(d, "relu6", ()) for d in ("int64", "int32", "uint8")],
]


@pytest.mark.parametrize(("dtype", "name", "bounds"), HARDTANH_CASES)
def test_hardtanh_of_integers_stays_integer_with_truncated_bounds_as_torch(dtype, name, bounds):
    values = [-5, -3, -2, 0, 1, 2, 3, 7] if dtype != "uint8" else [0, 1, 2, 3, 7, 200]
    out = getattr(sg.nn.functional, name)(sg.tensor(values, dtype=getattr(sg, dtype)), *bounds)
    expected = getattr(torch.nn.functional, name)(
        torch.tensor(values, dtype=getattr(torch, dtype)), *bounds
    )
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert out.tolist() == expected.tolist()


@pytest.mark.parametrize(
    ("values", "dtype", "message"),
    [
        ([True, False], "bool", "Bool inputs not supported for hardtanh"),
        ([1, 2], "uint8", "cannot do hardtanh on an unsigned type with negative limits"),
    ],
)
def test_hardtanh_refuses_bool_and_negative_unsigned_bounds_as_torch(values, dtype, message):
    assert_raises_as_torch(
        lambda m: m.nn.functional.hardtanh(m.tensor(values, dtype=getattr(m, dtype))),
        RuntimeError,
        message,
    )


@pytest.mark.parametrize("name", ["silu", "leaky_relu", "softplus"])
def test_activation_refuses_integer_input_as_torch(name):
    assert_raises_as_torch(
        lambda m: getattr(m.nn.functional, name)(m.tensor([-1, 0, 2])),
        NotImplementedError,
        f"{name}: not implemented for int64",
    )


@pytest.mark.parametrize(
    ("dtype", "weight_dtype"), [("float32", "float64"), ("float64", "float32")]
)
def test_rms_norm_keeps_the_input_dtype_when_the_weight_dtype_differs_as_torch(dtype, weight_dtype):
    results = []
    for m in (sg, torch):
        x = m.tensor(_normal(2, 3), dtype=getattr(m, dtype), requires_grad=True)
        weight = m.tensor(_normal(3, seed=1), dtype=getattr(m, weight_dtype), requires_grad=True)
        out = m.nn.functional.rms_norm(x, (3,), weight)
        (out * out).sum().backward()
        results.append((out, x.grad, weight.grad))
    for ours, theirs in zip(*results):
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert_close(ours, theirs, "float32")


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_of_an_empty_batch_in_training_leaves_the_running_statistics(momentum):
    results = []
    for m in (sg, torch):
        layer = m.nn.BatchNorm2d(3, momentum=momentum)
        x = m.zeros(0, 3, 2, 2, requires_grad=True)
        out = layer(x)
        out.sum().backward()
        results.append((out.shape, layer.running_mean, layer.running_var, layer.weight.grad))
        assert layer.num_batches_tracked.item() == 1
    (ours_shape, *ours), (theirs_shape, *theirs) = results
    assert tuple(ours_shape) == tuple(theirs_shape)
    for a, b in zip(ours, theirs):
        assert_close(a, b)


@pytest.mark.parametrize("offsets", [[1, 3], [0, 7]])
def test_embedding_bag_bad_offsets_raise_runtime_error_as_torch(offsets):
    assert_raises_as_torch(
        lambda m: m.nn.functional.embedding_bag(m.arange(5), m.ones(5, 3), m.tensor(offsets)),
        RuntimeError,
        "offsets .* must start at 0",
    )


@pytest.mark.parametrize(("mode", "padding"), [("reflect", (3, 0)), ("circular", (0, 4))])
def test_pad_beyond_the_dim_raises_runtime_error_as_torch(mode, padding):
    assert_raises_as_torch(
        lambda m: m.nn.functional.pad(m.zeros(1, 3), padding, mode),
        RuntimeError,
        "should be less than|wraps around more than once",
    )


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("Dropout", (2, 3)),
        ("Dropout1d", (2, 3, 4)),
        ("Dropout2d", (2, 3, 2, 2)),
        ("Dropout3d", (2, 3, 2, 2, 2)),
        ("AlphaDropout", (2, 3)),  # (PyTorch's alpha dropouts ignore inplace)
        ("FeatureAlphaDropout", (2, 3, 2)),
    ],
)
def test_inplace_dropout_module_writes_into_its_input_as_torch(name, shape):
    # p=1 drops everything: no random draw to match
    results = []
    for m in (sg, torch):
        y = m.ones(shape) * 1.0
        out = getattr(m.nn, name)(1.0, inplace=True)(y)
        results.append((out is y, y))
    (ours_same, ours_y), (theirs_same, theirs_y) = results
    assert ours_same == theirs_same
    assert_close(ours_y, theirs_y)


@pytest.mark.parametrize(("p", "training"), [(0.5, False), (0.0, True)])
@pytest.mark.parametrize("name", ["dropout", "dropout2d", "alpha_dropout"])
def test_inplace_dropout_that_changes_nothing_keeps_a_saved_output_valid(name, p, training):
    # sigmoid's backward reads its output: a no-op dropout_ must not count as a change
    grads = []
    for m in (sg, torch):
        x = m.tensor(_normal(2, 3, 4), requires_grad=True)
        y = x.sigmoid()
        getattr(m.nn.functional, name)(y, p, training, inplace=True)
        y.sum().backward()
        grads.append(x.grad)
    assert_close(*grads)


def test_hardswish_at_the_infinities_and_nan_as_torch():
    # the unused middle piece's gradient at +-inf was 0 * inf = NaN, and hardswish(-inf) was 0
    # (PyTorch's -inf * 0: NaN); at NaN the gradient is NaN, as PyTorch's vectorized kernel's
    x = np.array([np.inf, -np.inf, np.nan, 3.0, -3.0, -4.0, 1.0, 2.9, -2.9])
    check_against_torch(
        lambda x: sg.nn.functional.hardswish(x), lambda x: torch.nn.functional.hardswish(x), [x]
    )


@pytest.mark.parametrize("slopes", [[0.25], [0.25, -2.0]])
def test_prelu_weight_gradient_at_infinite_and_nan_inputs_as_torch(slopes):
    # the weight's gradient took 0 * inf = NaN from a positive infinite input
    x = np.array([[np.inf, -1.0], [np.nan, 2.0], [-np.inf, 0.0]])
    check_against_torch(
        lambda x, w: sg.nn.functional.prelu(x, w),
        lambda x, w: torch.nn.functional.prelu(x, w),
        [x, np.array(slopes)],
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.nn.functional.threshold(x, 1.0, 2.0),
        lambda m, x: m.nn.functional.hardshrink(x, 0.5),
        lambda m, x: m.nn.functional.softshrink(x, 0.5),
    ],
    ids=["threshold", "hardshrink", "softshrink"],
)
def test_threshold_and_shrinks_keep_nan_as_torch(call):
    # NaN became the threshold's value, or 0 (the comparisons were the other way round); the
    # gradient at NaN is left out: PyTorch's is 0 or 1 by where the entry falls in its kernel
    x = np.array([np.nan, np.inf, -np.inf, 0.5, -0.5, 0.0, 1.0, -1.0, 0.7])
    check_against_torch(lambda x: call(sg, x), lambda x: call(torch, x), [x], grad=False)


def test_normalize_of_an_empty_dim_by_the_inf_norm_raises_runtime_error_as_torch():
    # it raised amax's IndexError
    assert_raises_as_torch(
        lambda m: m.nn.functional.normalize(m.zeros(0, 2), float("inf"), 0),
        RuntimeError,
        "cannot compute the inf norm",
    )


def test_normalize_gradient_of_a_zero_slice_without_eps_as_torch():
    # 0 / 0: the gradient was inf, PyTorch's (through the norm's own gradient at 0) is NaN
    check_against_torch(
        lambda x: sg.nn.functional.normalize(x, 0.5, 0, eps=0.0),
        lambda x: torch.nn.functional.normalize(x, 0.5, 0, eps=0.0),
        [np.zeros(2)],
    )


def test_group_norm_of_one_value_per_group_raises_before_the_divisibility_check_as_torch():
    # 3 channels in 2 groups of a batch of 1: PyTorch's ValueError comes first
    assert_raises_as_torch(
        lambda m: m.nn.functional.group_norm(m.zeros(1, 3), 2),
        ValueError,
        "Expected more than 1 value per channel",
    )
