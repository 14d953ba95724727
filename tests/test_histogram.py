"""``histogram`` (statistics.py) against ``torch.histogram``: counts and edges for a number of
bins (over the entries' range, a given range, a single point, no entries) and for a tensor of
edges, with weights and density, float64 tight and float32 loose; the result's type and
fields, the method form, and PyTorch's errors."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

LIBS = {"scratchgrad": sg, "torch": torch}
rng = np.random.default_rng(0)
VALUES = rng.standard_normal(60)

CASES = {
    "bins": (VALUES, 7, {}),
    "default_bins": (VALUES, None, {}),
    "range": (VALUES, 5, {"range": (-1.0, 1.5)}),
    "density": (VALUES, 6, {"density": True}),
    "weight": (VALUES, 4, {"weight": np.abs(VALUES)}),
    "weight_density": (VALUES, 4, {"weight": np.abs(VALUES), "density": True}),
    "edges": (VALUES, np.array([-2.0, -0.5, 0.0, 0.1, 3.0]), {}),
    "edges_weight_density": (
        VALUES, np.array([-1.0, 0.0, 2.0]), {"weight": VALUES**2, "density": True},
    ),
    "matrix": (VALUES.reshape(6, 10), 3, {"weight": np.ones((6, 10))}),
    "a_point": (np.full(4, 2.0), 2, {}),
    "range_a_point": (VALUES, 3, {"range": (1.0, 1.0)}),
    "no_entries": (np.zeros(0), 3, {}),
    "on_edges": (np.array([0.0, 1.0, 2.0, 3.0, 4.0]), 4, {}),
    "outside_and_nan_with_range": (np.array([-5.0, 0.5, np.nan, 1.0, 9.0]), 2, {"range": (0, 1)}),
}  # fmt: skip


def _histogram(m, name, dtype):
    values, bins, options = CASES[name]
    dtype = getattr(m, dtype)
    options = {
        key: m.tensor(value, dtype=dtype) if isinstance(value, np.ndarray) else value
        for key, value in options.items()
    }
    if isinstance(bins, np.ndarray):
        bins = m.tensor(bins, dtype=dtype)
    args = () if bins is None else (bins,)
    return m.histogram(m.tensor(values, dtype=dtype), *args, **options)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", CASES)
def test_matches_torch(name, dtype):
    ours, theirs = (_histogram(m, name, dtype) for m in LIBS.values())
    assert type(ours).__name__ == "histogram" and ours._fields == ("hist", "bin_edges")
    assert_close(ours.hist, theirs.hist, dtype, f"{name} hist")
    assert_close(ours.bin_edges, theirs.bin_edges, dtype, f"{name} bin_edges")
    assert ours.hist.dtype == ours.bin_edges.dtype == getattr(sg, dtype)


def test_the_method_and_keywords():
    hists = [
        m.tensor([1.0, 2.0, 1.0, 4.0]).histogram(bins=2, range=[0, 4]).hist.tolist()
        for m in (sg, torch)
    ]
    assert hists[0] == hists[1] == [2.0, 2.0]


def test_no_gradient_flows():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    hist, edges = sg.histogram(x, 2)
    assert not hist.requires_grad and not edges.requires_grad


X = [1.0, 2.0, 1.0, 4.0, 2.5]


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda m, x: m.histogram(x.long(), 3), NotImplementedError, "histogramdd"),
        (lambda m, x: m.histogram(x.half(), 3), NotImplementedError, "histogramdd"),
        (lambda m, x: m.histogram(x, 0), RuntimeError, "bins must be > 0, but got 0"),
        (lambda m, x: m.histogram(x, m.tensor([1.0])), RuntimeError,
         "bins must be > 0, but got 0"),
        (lambda m, x: m.histogram(x, 3, range=(2.0, 1.0)), RuntimeError,
         "min should not exceed max, but got min 2 max 1"),
        (lambda m, x: m.histogram(x, 3, range=(0.0, float("inf"))), RuntimeError,
         r"dimension 0's range \[0, inf\] is not finite"),
        (lambda m, x: m.histogram(m.tensor([1.0, float("nan")]), 3), RuntimeError,
         "is not finite"),
        (lambda m, x: m.histogram(x, m.tensor([[0.0, 1.0]])), RuntimeError,
         "bins tensor should have one dimension, but got 2 dimensions"),
        (lambda m, x: m.histogram(x, m.tensor([0.0, 1.0], dtype=m.float64)), RuntimeError,
         "input tensor and bins tensors should have the same dtype"),
        (lambda m, x: m.histogram(x, 3, weight=m.ones(4)), RuntimeError,
         r"same shape as the input tensor excluding its innermost dimension, but got input with "
         r"shape \[5, 1\] and weight with shape \[4\]"),
        (lambda m, x: m.histogram(x, 3, weight=m.ones(5, dtype=m.float64)), RuntimeError,
         "input tensor and weight tensor should have the same dtype"),
        (lambda m, x: m.histogram(x, 2.0), TypeError, "histogram()"),
    ],
)  # fmt: skip
def test_errors_match_torch(call, kind, message):
    for m in (sg, torch):
        with pytest.raises(kind, match=message):
            call(m, m.tensor(X))
