"""Anomaly detection raises where PyTorch's does, with its message: when a backward returns a
NaN gradient. Infinite gradients pass (the derivative of sqrt or log at 0), NaNs in forward
results pass, and ``check_nan=False`` checks nothing; every case is run in PyTorch too."""

import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.autograd import anomaly


def _backward(lib, f, values, mode):
    """``f(x).sum().backward()`` under ``mode`` (detect_anomaly or set_detect_anomaly(True));
    x.grad, or the RuntimeError's message."""
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled", PyTorch's notes
        try:
            with mode(lib):
                f(lib, x).sum().backward()
        except RuntimeError as error:
            return str(error)
    return x.grad.detach().numpy()


MODES = {
    "detect_anomaly": lambda lib: lib.autograd.detect_anomaly(),
    "set_detect_anomaly": lambda lib: lib.autograd.set_detect_anomaly(True),
}

INFINITE_GRADIENTS = {  # PyTorch passes each of these
    "sqrt at 0": (lambda m, x: m.sqrt(x), [0.0, 4.0]),
    "log at 0": (lambda m, x: m.log(x), [0.0, 2.0]),
    "reciprocal at 0": (lambda m, x: 1 / x, [0.0, 2.0]),
    "pow 0.5 at 0": (lambda m, x: x**0.5, [0.0, 1.0]),
    "-inf too": (lambda m, x: -m.sqrt(x), [0.0, 1.0]),
    # inf + -inf meet in the leaf's accumulation, not in a backward's output
    "cancelling at the leaf": (lambda m, x: m.sqrt(x) - m.sqrt(x) * 2, [0.0, 1.0]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", INFINITE_GRADIENTS)
def test_infinite_gradients_and_nan_forwards_pass_as_in_torch(case, mode):
    f, values = INFINITE_GRADIENTS[case]
    ours = _backward(sg, f, values, MODES[mode])
    theirs = _backward(torch, f, values, MODES[mode])
    assert not isinstance(theirs, str), f"PyTorch raised for {case}: {theirs}"
    assert not isinstance(ours, str), f"{case}: {ours}"
    assert not np.isfinite(theirs).all()  # the case holds a non-finite gradient
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("mode", MODES)
def test_nan_forward_results_pass_as_in_torch(mode):
    """log(-1) is NaN, but every gradient is finite: nothing raises."""
    f = lambda m, x: m.log(x) * 0 + x  # noqa: E731
    ours = _backward(sg, f, [-1.0, 1.0], MODES[mode])
    theirs = _backward(torch, f, [-1.0, 1.0], MODES[mode])
    assert not isinstance(ours, str), ours
    np.testing.assert_array_equal(ours, theirs)


NAN_GRADIENTS = {  # PyTorch raises for each of these, naming the op
    "sqrt of a negative": (lambda m, x: m.sqrt(x), [-1.0, 4.0]),
    "asin past 1": (lambda m, x: m.asin(x), [2.0, 0.5]),
    "a NaN input squared": (lambda m, x: x * x, [np.nan, 1.0]),
    "inf * 0 in a product's slope": (lambda m, x: m.sqrt(x) * m.sqrt(x).detach() * 0, [0.0]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", NAN_GRADIENTS)
def test_nan_gradients_raise_torchs_error(case, mode):
    """PyTorch's message, naming the backward's output."""
    f, values = NAN_GRADIENTS[case]
    ours = _backward(sg, f, values, MODES[mode])
    theirs = _backward(torch, f, values, MODES[mode])
    assert isinstance(theirs, str) and theirs.endswith("returned nan values in its 0th output.")
    assert isinstance(ours, str), f"{case}: no error, gradient {ours}"
    assert ours == theirs


@pytest.mark.parametrize("index", [0, 1])
def test_check_names_the_output_as_torch(index):
    """``b * a`` with a NaN in the input whose gradient is output ``index`` of MulBackward0."""
    values = [[np.nan], [1.0]] if index == 1 else [[1.0], [np.nan]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as theirs, torch.autograd.set_detect_anomaly(True):
            b, a = (torch.tensor(v, requires_grad=True) for v in values)
            (b * a).sum().backward()
    b, a = (sg.tensor(v, requires_grad=True) for v in values)
    out = b * a
    nan_gradient = sg.tensor([np.nan])
    with pytest.raises(RuntimeError) as ours, sg.autograd.set_detect_anomaly(True):
        anomaly.check(out.grad_fn, nan_gradient, index)
    assert str(ours.value) == str(theirs.value)


def test_check_nan_false_checks_nothing_as_torch():
    f, values = NAN_GRADIENTS["sqrt of a negative"]
    unchecked = lambda lib: lib.autograd.detect_anomaly(check_nan=False)  # noqa: E731
    ours = _backward(sg, f, values, unchecked)
    theirs = _backward(torch, f, values, unchecked)
    assert np.isnan(theirs[0])
    np.testing.assert_array_equal(ours, theirs)
