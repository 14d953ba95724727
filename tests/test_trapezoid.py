"""``trapezoid`` (``trapz``) and ``cumulative_trapezoid`` against PyTorch where the op table's
rows do not reach: integer inputs, empty dims, sample points of fewer dims than ``y``, and the
errors (the values, gradients and second gradients are the op table's rows ``trapezoid_*``)."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _both(call):
    ours, theirs = call(sg), call(torch)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.trapezoid(m.arange(5)),  # integers integrate to floats
        lambda m: m.trapezoid(m.arange(5), dx=2),
        lambda m: m.cumulative_trapezoid(m.arange(5), m.arange(5)),
        lambda m: m.trapezoid(m.ones(2, 0, dtype=m.int32)),  # an empty dim: zeros, y's dtype
        lambda m: m.cumulative_trapezoid(m.ones(3, 0)),
        lambda m: m.trapezoid(m.ones(4, 1), dim=1),  # one sample point: no area
        lambda m: m.trapezoid(m.ones(3, dtype=m.float16), m.arange(3.0)),  # promoted with x
        lambda m: m.trapezoid(m.arange(24.0).reshape(2, 3, 4), m.arange(12.0).reshape(3, 4), dim=1),
        lambda m: m.cumulative_trapezoid(m.arange(6.0).reshape(2, 3), m.arange(3.0) ** 2, dim=1),
    ],
)
def test_matches_torch(call):
    _both(call)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m: m.trapezoid(m.tensor(1.0)), IndexError, "no dimensions"),
        (lambda m: m.trapezoid(m.ones(3), dim=2), IndexError, "out of range"),
        (lambda m: m.trapezoid(m.ones(3), m.ones(4)), RuntimeError, "one `x` value for each"),
        (
            lambda m: m.cumulative_trapezoid(m.ones(3), m.ones(2)),
            RuntimeError,
            "one `x` value for each",
        ),
        (lambda m: m.trapezoid(m.ones(3, dtype=m.bool)), RuntimeError, "bool"),
        (lambda m: m.trapezoid(m.ones(3), m.ones(3, dtype=m.bool)), RuntimeError, "bool"),
        (lambda m: m.trapezoid(m.ones(3), dx=True), RuntimeError, "real number"),
        (lambda m: m.trapezoid(m.ones(3), m.ones(3), dx=1), TypeError, None),
        (lambda m: m.trapezoid(m.ones(3), 2.0), TypeError, None),
    ],
)
def test_errors_as_torchs(call, error, message):
    with pytest.raises(error, match=message):
        call(torch)
    with pytest.raises(error, match=message):
        call(sg)


def test_gradient_reaches_the_sample_points():
    y = sg.tensor([1.0, 4.0, 9.0], requires_grad=True)
    x = sg.tensor([0.0, 1.0, 3.0], requires_grad=True)
    sg.trapezoid(y, x).backward()
    # area = (x1 - x0)(y0 + y1)/2 + (x2 - x1)(y1 + y2)/2
    assert y.grad.tolist() == [0.5, 1.5, 1.0]
    assert x.grad.tolist() == [-2.5, -4.0, 6.5]
