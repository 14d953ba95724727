"""The primitives of ops/special.py: erf against math.erf over the whole float64 range and its
edge values; Erf and Softplus gradients by finite differences, second gradients too."""

import math

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad.ops.special import Erf, Softplus, erf


def test_erf_matches_math_erf_to_double_precision():
    x = np.concatenate(
        [
            np.linspace(-30, 30, 60001),
            np.geomspace(1e-300, 1.0, 2000),
            -np.geomspace(1e-300, 1.0, 2000),
            [0.46875, 0.46875 + 1e-15, 4.0, 4.0 + 1e-14, 5.9, 26.5, 26.6],
        ]
    )
    expected = np.array([math.erf(v) for v in x])
    relative = np.abs(erf(x) - expected) / np.maximum(np.abs(expected), 1e-300)
    assert relative.max() < 1e-15


def test_erf_edges_and_dtypes():
    out = erf(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300]))
    np.testing.assert_array_equal(out[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(out[1]) and np.isnan(out[4]) and out[5] == 1.0
    assert erf(np.float32([0.5, 2.0])).dtype == np.float32
    assert erf(np.array(0.3)).shape == () and erf(np.zeros((2, 0))).shape == (2, 0)
    np.testing.assert_allclose(erf(np.array([[0.1], [-2.0]])), [[math.erf(0.1)], [math.erf(-2.0)]])


def test_softplus_is_stable():
    x = sg.tensor([-1000.0, 0.0, 1000.0], dtype=sg.float64, requires_grad=True)
    out = Softplus.apply(x)
    np.testing.assert_allclose(out.array, [0.0, math.log(2), 1000.0])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.array, [0.0, 0.5, 1.0])


@pytest.mark.parametrize("op", [Erf, Softplus], ids=["erf", "softplus"])
def test_gradients(op):
    x = sg.tensor(np.linspace(-3, 3, 7), dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(op.apply, [x])
    assert sg.autograd.gradgradcheck(op.apply, [x])


def test_float32_erf_is_within_a_few_ulps_of_math_erf():
    """Float32 (and narrower) input takes the float32 rational function: checked on a dense
    grid against math.erf, relative error below 5e-7 (float32's ulp is 6e-8 to 1.2e-7)."""
    x = np.linspace(-6, 6, 200_001).astype(np.float32)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)])
    out = erf(x)
    assert out.dtype == np.float32
    relative = np.abs(out - expected) / np.maximum(np.abs(expected), 1e-30)
    assert relative.max() < 5e-7
    tiny = np.float32([1e-30, -1e-8, 0.0, np.inf, -np.inf])
    np.testing.assert_allclose(erf(tiny), [1.1283792e-30, -1.1283792e-8, 0.0, 1.0, -1.0], rtol=1e-6)
    assert np.isnan(erf(np.float32([np.nan]))).all()
    assert erf(np.float16([0.5])).dtype == np.float16
