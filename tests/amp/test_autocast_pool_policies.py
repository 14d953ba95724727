"""Pooling under CPU autocast against torch.autocast: max_pool3d, avg_pool3d and max_unpool1d,
2d and 3d run in float32 (PyTorch's float32 list; its max_unpool1d is its max_unpool2d), the
1-d and 2-d max and average poolings keep the input's dtype, and interpolate's area mode follows
the adaptive pooling it is (float32 for 5-D inputs). Inputs in float32, bfloat16, float16 and
float64 (never cast); output dtypes, values and the gradient's dtype and values."""

import numpy as np
import pytest
import torch
from oracle import DTYPES, assert_close, same_dtype

import scratchgrad as sg
from scratchgrad.autograd.autocast import POLICY


def _unpool(dims: int):
    """max_unpool{dims}d of max_pool{dims}d's output, the pooling done outside autocast in
    float32 (its indices), its values then in the input's dtype."""

    def call(m, x):
        functional = m.nn.functional
        with m.autocast("cpu", enabled=False):
            out, indices = getattr(functional, f"max_pool{dims}d")(
                x.float(), 2, return_indices=True
            )
        return getattr(functional, f"max_unpool{dims}d")(out.to(x.dtype), indices, 2)

    return call


CASES = {  # name -> (call(m, x), input shape, PyTorch's dtype under autocast: float32 or None)
    "max_pool3d": (lambda m, x: m.nn.functional.max_pool3d(x, 2), (1, 2, 4, 4, 4), "float32"),
    # with indices it is another op in PyTorch (max_pool3d_with_indices), not on the list
    "max_pool3d_indices": (
        lambda m, x: m.nn.functional.max_pool3d(x, 2, return_indices=True)[0],
        (2, 4, 3, 4),
        None,
    ),
    "avg_pool3d": (
        lambda m, x: m.nn.functional.avg_pool3d(x, 2, stride=1, padding=1),
        (1, 2, 3, 4, 4),
        "float32",
    ),
    "max_unpool1d": (_unpool(1), (1, 2, 6), "float32"),
    "max_unpool2d": (_unpool(2), (1, 2, 4, 6), "float32"),
    "max_unpool3d": (_unpool(3), (1, 2, 4, 2, 4), "float32"),
    "area_5d": (
        lambda m, x: m.nn.functional.interpolate(x, size=(3, 2, 3), mode="area"),
        (1, 2, 5, 4, 4),
        "float32",
    ),
    # the input's dtype
    "max_pool1d": (lambda m, x: m.nn.functional.max_pool1d(x, 2), (1, 2, 6), None),
    "max_pool2d": (lambda m, x: m.nn.functional.max_pool2d(x, 2), (1, 2, 4, 6), None),
    "avg_pool1d": (lambda m, x: m.nn.functional.avg_pool1d(x, 3), (1, 2, 6), None),
    "avg_pool2d": (lambda m, x: m.nn.functional.avg_pool2d(x, 2), (1, 2, 4, 6), None),
    "area_4d": (
        lambda m, x: m.nn.functional.interpolate(x, size=(3, 4), mode="area"),
        (1, 2, 5, 7),
        None,
    ),
}


@pytest.mark.parametrize("input_dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", CASES)
def test_pooling_dtypes_under_autocast_as_torch(name, low, input_dtype):
    call, shape, policy = CASES[name]
    x = np.random.default_rng(0).permutation(np.prod(shape)).reshape(shape) / 8  # no ties
    ours = sg.tensor(x, dtype=DTYPES[input_dtype][0], requires_grad=True)
    theirs = torch.tensor(x, dtype=DTYPES[input_dtype][1], requires_grad=True)
    with sg.autocast("cpu", dtype=DTYPES[low][0]):
        out = call(sg, ours)
    with torch.autocast("cpu", dtype=DTYPES[low][1]):
        expected = call(torch, theirs)
    assert same_dtype(out, expected), f"{name}: {out.dtype}, PyTorch's {expected.dtype}"
    if input_dtype in ("bfloat16", "float16"):  # the case tells the policies apart
        assert out.dtype == (sg.float32 if policy else ours.dtype)
    tolerance = "float64" if input_dtype == "float64" else low
    assert_close(out, expected, tolerance, f"{name} under autocast")
    weights = np.linspace(-1.0, 1.0, out.numel()).reshape(out.shape)
    (out * sg.tensor(weights, dtype=out.dtype)).sum().backward()
    (expected * torch.tensor(weights, dtype=expected.dtype)).sum().backward()
    assert ours.grad.dtype == ours.dtype
    assert_close(ours.grad, theirs.grad, tolerance, f"{name} gradient under autocast")


LAYERS = [  # name, build(nn), input shape, the output's dtype under autocast
    ("MaxPool3d", lambda nn: nn.MaxPool3d(2), (1, 2, 4, 4, 4), "float32"),
    ("MaxPool3d_indices", lambda nn: nn.MaxPool3d(2, return_indices=True), (2, 4, 4, 4), None),
    ("AvgPool3d", lambda nn: nn.AvgPool3d(2, stride=1), (2, 3, 3, 4), "float32"),
]


@pytest.mark.parametrize("build, shape, dtype", [c[1:] for c in LAYERS], ids=[c[0] for c in LAYERS])
def test_layers_under_autocast_as_torch(build, shape, dtype):
    x = np.random.default_rng(1).standard_normal(shape)
    outs = []
    for lib in (sg, torch):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = build(lib.nn)(lib.tensor(x, dtype=lib.bfloat16))
        outs.append(out[0] if isinstance(out, tuple) else out)
    assert same_dtype(*outs) and str(outs[0].dtype).split(".")[-1] == (dtype or "bfloat16")
    assert_close(*outs, "bfloat16")


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_unpool_layers_run_in_float32_under_autocast_as_torch(dims):
    x = np.random.default_rng(dims).standard_normal((1, 2, *(4,) * dims))
    outs = []
    for lib in (sg, torch):
        pooled, indices = getattr(lib.nn, f"MaxPool{dims}d")(2, return_indices=True)(
            lib.tensor(x, dtype=lib.float32)
        )
        with lib.autocast("cpu", dtype=lib.bfloat16):
            outs.append(getattr(lib.nn, f"MaxUnpool{dims}d")(2)(pooled.bfloat16(), indices))
    assert same_dtype(*outs) and outs[0].dtype == sg.float32
    assert_close(*outs, "bfloat16")


def test_the_policy_lists_them_as_float32():
    """(``_max_pool3d``: max_pool3d without indices, PyTorch's op on its float32 list.)"""
    names = ["_max_pool3d", "avg_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]
    assert {name: POLICY.get(name) for name in names} == dict.fromkeys(names, "float32")
