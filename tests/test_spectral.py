"""torch.stft and torch.istft against PyTorch: values, dtypes and the gradients of the signal
and the window (random complex or real ``grad_outputs``), over frame sizes, hops, windows
shorter than the frame, centring with each pad mode, normalization, one- and two-sided
spectra, real and complex signals and windows, batches, ``length``, and PyTorch's errors."""

import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}
COMPLEX = {"float32": "complex64", "float64": "complex128"}


def random(rng, shape, dtype: str) -> np.ndarray:
    if dtype.startswith("complex"):
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def assert_same(ours, theirs, dtype) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().resolve_conj().numpy(), **TOL[dtype]
    )


def check(call, arrays: list, dtype: str) -> None:
    """``call(lib, *leaves)`` in both libraries on leaves made from ``arrays`` (None stays
    None): the outputs, then the gradients of every leaf for the same random ``grad_outputs``."""
    results = []
    for lib in (sg, torch):
        leaves = [None if a is None else lib.tensor(a, requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch's about rectangular windows
            results.append((call(lib, *leaves), [t for t in leaves if t is not None]))
    (ours, our_leaves), (theirs, their_leaves) = results
    assert_same(ours, theirs, dtype)
    g = random(np.random.default_rng(7), tuple(theirs.shape), str(ours.dtype).split(".")[-1])
    our_grads = sg.autograd.grad(ours, our_leaves, sg.tensor(g))
    their_grads = torch.autograd.grad(theirs, their_leaves, torch.tensor(g))
    for a, b in zip(our_grads, their_grads):
        assert_same(a, b, dtype)


STFT = [  # (signal shape, n_fft, keyword arguments)
    ((16,), 4, {}),
    ((3, 20), 8, {"hop_length": 3, "win_length": 5, "pad_mode": "constant"}),
    ((20,), 8, {"hop_length": 2, "win_length": 6, "normalized": True, "onesided": False}),
    ((2, 16), 5, {"hop_length": 2, "pad_mode": "replicate"}),
    ((16,), 6, {"hop_length": 1, "win_length": 3, "pad_mode": "circular"}),
    ((20,), 8, {"hop_length": 3, "win_length": 4, "center": False}),
    ((20,), 8, {"hop_length": 3, "win_length": 4, "center": False, "align_to_window": True}),
    ((20,), 8, {"hop_length": 2, "win_length": 5, "center": False, "align_to_window": False}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("complex_signal", [False, True])
@pytest.mark.parametrize("shape, n_fft, kwargs", STFT)
def test_stft_values_and_gradients_as_torch(shape, n_fft, kwargs, complex_signal, dtype):
    if complex_signal and kwargs.get("onesided") is not None:
        return
    rng = np.random.default_rng(0)
    x = random(rng, shape, COMPLEX[dtype] if complex_signal else dtype)
    window = rng.uniform(0.5, 1.5, size=kwargs.get("win_length", n_fft)).astype(dtype)
    for w in (window, None):
        check(lambda m, x, w: m.stft(x, n_fft, window=w, return_complex=True, **kwargs), [x, w],
              dtype)  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stft_of_a_complex_window_and_the_old_real_format(dtype):
    rng = np.random.default_rng(1)
    x, w = random(rng, (2, 16), dtype), random(rng, (8,), COMPLEX[dtype])
    check(lambda m, x, w: m.stft(x, 8, 2, window=w), [x, w], dtype)  # complex by default
    check(lambda m, x, w: m.stft(x, 8, 2, window=w.real, return_complex=False), [x, w], dtype)
    assert sg.ones(16).stft(4, window=sg.ones(4), return_complex=True).shape == (3, 17)


ISTFT = [  # (signal shape, n_fft, keyword arguments of stft and istft)
    ((16,), 4, {}),
    ((2, 20), 8, {"hop_length": 2, "win_length": 6}),
    ((20,), 8, {"hop_length": 2, "normalized": True, "center": False}),
    ((2, 16), 5, {"hop_length": 1, "win_length": 3}),
    ((20,), 8, {"hop_length": 2, "onesided": False}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("length", [None, 10, 17])
@pytest.mark.parametrize("shape, n_fft, kwargs", ISTFT)
def test_istft_values_and_gradients_as_torch(shape, n_fft, kwargs, length, dtype):
    rng = np.random.default_rng(2)
    window = rng.uniform(0.5, 1.5, size=kwargs.get("win_length", n_fft)).astype(dtype)
    spectrum = torch.stft(
        torch.tensor(random(rng, shape, dtype)), n_fft, window=torch.tensor(window),
        return_complex=True, **kwargs,
    ).numpy()  # fmt: skip
    for w in (window, None):
        check(lambda m, z, w: m.istft(z, n_fft, window=w, length=length, **kwargs),
              [spectrum, w], dtype)  # fmt: skip
    if kwargs.get("onesided") is False:
        check(lambda m, z, w: m.istft(z, n_fft, window=w, return_complex=True, **kwargs),
              [spectrum, window], dtype)  # fmt: skip


def test_istft_pads_a_length_beyond_the_frames_with_zeros():
    spectrum = np.random.default_rng(4).normal(size=(3, 9)) * (1 + 0.5j)
    for length in (30, 40):
        check(lambda m, z, n=length: m.istft(z, 4, 2, window=m.ones(4, dtype=m.float64), length=n),
              [spectrum], "float64")  # fmt: skip


def test_istft_inverts_stft():
    x = sg.randn(3, 40, dtype=sg.float64)
    window = sg.hann_window(16, dtype=sg.float64)
    spectrum = sg.stft(x, 16, 4, window=window, return_complex=True)
    np.testing.assert_allclose(
        sg.istft(spectrum, 16, 4, window=window, length=40).numpy(), x.numpy(), atol=1e-12
    )
    assert spectrum.istft(16, 4, window=window).shape == (3, 40)


def test_a_complex_unfold_has_torchs_gradient():
    rng = np.random.default_rng(3)
    check(lambda m, x: m.view_as_real(x.unfold(-1, 3, 2)), [random(rng, (2, 9), "complex128")],
          "float64")  # fmt: skip


ERRORS = [
    (lambda m: m.stft(m.ones(16), 4), "return_complex parameter be given for real inputs"),
    (lambda m: m.stft(m.ones(1, 1, 16), 4, return_complex=True), "expected a 1D or 2D tensor"),
    (lambda m: m.stft(m.ones(16), 0, return_complex=True, center=False), "expected 0 < n_fft"),
    (lambda m: m.stft(m.ones(16), 17, return_complex=True, center=False), "expected 0 < n_fft"),
    (lambda m: m.stft(m.ones(16), 8, 0, return_complex=True), "expected hop_length > 0"),
    (lambda m: m.stft(m.ones(16), 8, 2, 9, return_complex=True), "expected 0 < win_length"),
    (lambda m: m.stft(m.ones(16), 8, window=m.ones(7), return_complex=True), "window tensor"),
    (lambda m: m.stft(m.ones(16), 8, align_to_window=True, return_complex=True),
     "align_to_window should only be set when center = false"),
    (lambda m: m.stft(m.arange(16), 4, return_complex=True), "floating point or complex"),
    (lambda m: m.stft(m.ones(16, dtype=m.complex64), 4, onesided=True),
     "Cannot have onesided output"),
    (lambda m: m.istft(m.ones(5, 3), 8), "istft requires a complex-valued input"),
    (lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 6), "to match n_fft / 2 \\+ 1"),
    (lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, onesided=False), "to match n_fft"),
    (lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, return_complex=True),
     "Cannot have onesided output"),
    (lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, window=m.zeros(8)),
     "window overlap add min"),
    (lambda m: m.istft(m.ones(5, 3, dtype=m.complex64), 8, window=m.ones(8, dtype=m.complex64)),
     "Complex windows are incompatible with return_complex=False"),
]  # fmt: skip


@pytest.mark.parametrize("call, message", ERRORS)
def test_errors_as_torchs(call, message):
    for m in (torch, sg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match=message):
                call(m)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_stft_of_sixteen_bits_runs_in_float32_under_autocast_as_torchs(dtype):
    x = np.random.default_rng(6).normal(size=(16,))
    outs = []
    for m in (sg, torch):
        with m.autocast("cpu", dtype=getattr(m, dtype)):
            t = m.tensor(x, dtype=getattr(m, dtype))
            window = m.hann_window(4).to(getattr(m, dtype))
            outs.append(m.stft(t, 4, window=window, return_complex=True))
    assert_same(*outs, "float32")


def test_a_missing_window_warns_as_torchs_does():
    """(PyTorch warns once a process, so only ours is checked.)"""
    with pytest.warns(UserWarning, match="window was not provided"):
        sg.stft(sg.ones(16), 4, return_complex=True)
    with pytest.warns(UserWarning, match="window was not provided"):
        sg.istft(sg.ones(3, 5, dtype=sg.complex64), 4)
