"""scratchgrad.signal.windows against torch.signal.windows: every window over lengths 0 to 16,
symmetric and periodic, float32 and float64, with each window's own parameters, and PyTorch's
errors for bad lengths, dtypes and parameters."""

import doctest
import types

import numpy as np
import pytest
import torch

import scratchgrad as sg
import scratchgrad.signal.windows

# name -> keyword arguments to try besides the defaults
WINDOWS = {
    "bartlett": [{}],
    "blackman": [{}],
    "cosine": [{}],
    "exponential": [{}, {"tau": 2.5}],
    "gaussian": [{}, {"std": 2.5}],
    "general_cosine": [{"a": [0.4, 0.3, 0.2]}, {"a": (1.0,)}],
    "general_hamming": [{}, {"alpha": 0.6}],
    "hamming": [{}],
    "hann": [{}],
    "kaiser": [{}, {"beta": 0.0}, {"beta": 5.0}],
    "nuttall": [{}],
}


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("M", [0, 1, 2, 5, 16])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows_are_torchs(name, M, sym, dtype):
    for kwargs in WINDOWS[name]:
        ours = getattr(sg.signal.windows, name)(M, sym=sym, dtype=getattr(sg, dtype), **kwargs)
        theirs = getattr(torch.signal.windows, name)(
            M, sym=sym, dtype=getattr(torch, dtype), **kwargs
        )
        assert str(ours.dtype).split(".")[-1] == dtype and ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(
            ours.numpy(), theirs.numpy(), atol=1e-6 if dtype == "float32" else 1e-12
        )


def test_periodic_exponential_takes_its_centre_and_windows_take_the_tensor_options():
    for center in (0.0, 1.5, 7.0):
        np.testing.assert_allclose(
            sg.signal.windows.exponential(6, center=center, sym=False).numpy(),
            torch.signal.windows.exponential(6, center=center, sym=False).numpy(),
            atol=1e-6,
        )
    window = sg.signal.windows.hann(4, requires_grad=True)
    assert window.requires_grad and window.dtype == sg.float32


ERRORS = [
    (lambda w: w.hann(-1), ValueError, "general_cosine requires non-negative window length"),
    (lambda w: w.blackman(-2), ValueError, "blackman requires non-negative window length, got M"),
    (lambda w: w.gaussian(3, dtype=sg.int64), ValueError, "float64 dtypes, got: torch.int64"),
    (lambda w: w.kaiser(3, dtype=sg.float16), ValueError, "float32 or float64"),
    (lambda w: w.kaiser(3, beta=-1.0), ValueError, "beta must be non-negative"),
    (lambda w: w.gaussian(3, std=0.0), ValueError, "Standard deviation must be positive"),
    (lambda w: w.exponential(3, tau=-1.0), ValueError, "Tau must be positive"),
    (lambda w: w.exponential(3, center=1.0), ValueError, "Center must be None for symmetric"),
    (lambda w: w.general_cosine(3, a=0.5), TypeError, "Coefficients must be a list/tuple"),
    (lambda w: w.general_cosine(3, a=[]), ValueError, "Coefficients cannot be empty"),
]  # fmt: skip


@pytest.mark.parametrize("call, kind, message", ERRORS)
def test_the_errors_are_torchs(call, kind, message):
    """Each call is made on scratchgrad's windows, then on PyTorch's with its dtypes."""
    torch_windows = types.SimpleNamespace(
        **{name: _with_torch_dtype(getattr(torch.signal.windows, name)) for name in WINDOWS}
    )
    for windows in (sg.signal.windows, torch_windows):
        with pytest.raises(kind, match=message):
            call(windows)


def _with_torch_dtype(window):
    def call(M, **kwargs):
        if "dtype" in kwargs:
            kwargs["dtype"] = getattr(torch, str(kwargs["dtype"]).split(".")[-1])
        return window(M, **kwargs)

    return call


def test_a_periodic_exponential_window_of_one_sample_off_its_centre_is_torchs():
    """PyTorch's exponential window has no special case for one sample: exp(-|0 - center| /
    tau), not 1 as the other windows of one sample."""
    for center, tau in ((1.0, 1.0), (-2.0, 0.5), (0.0, 3.0)):
        ours = sg.signal.windows.exponential(1, center=center, tau=tau, sym=False)
        theirs = torch.signal.windows.exponential(1, center=center, tau=tau, sym=False)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("a", [[], 0.5, [0.3, 0.7]])
@pytest.mark.parametrize("M", [0, 1])
def test_general_cosine_of_no_or_one_sample_looks_at_no_coefficients(M, a):
    for sym in (True, False):
        ours = sg.signal.windows.general_cosine(M, a=a, sym=sym)
        theirs = torch.signal.windows.general_cosine(M, a=a, sym=sym)
        assert ours.tolist() == theirs.tolist()


def test_general_cosine_takes_any_iterable_of_coefficients():
    ours = sg.signal.windows.general_cosine(5, a=(w for w in (0.5, 0.5)))
    theirs = torch.signal.windows.general_cosine(5, a=(w for w in (0.5, 0.5)))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-7)


@pytest.mark.parametrize("name", WINDOWS)
def test_a_float_length_is_a_type_error(name):
    kwargs = WINDOWS[name][0]
    for windows in (sg.signal.windows, torch.signal.windows):
        with pytest.raises(TypeError):
            getattr(windows, name)(4.0, **kwargs)


def test_doc_examples_run():
    assert doctest.testmod(scratchgrad.signal.windows).failed == 0
