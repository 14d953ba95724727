"""torch.fft against PyTorch: each transform's values and dtype (float32 gives complex64), the
sizes ``n``/``s``, dims and the three normalizations, the gradients with ``autograd.grad`` and a
random complex (or real) ``grad_outputs`` (so the Hermitian half-spectrum of rfft/irfft is
checked), gradcheck through a real round trip, the frequencies and shifts, and the errors."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def both(array: np.ndarray) -> tuple:
    return sg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def assert_same(ours: sg.Tensor, theirs: torch.Tensor, **tol) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().resolve_conj().numpy(), **tol)


def random(rng, shape, dtype: str) -> np.ndarray:
    if dtype.startswith("complex"):
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


CASES = [  # (function, input shape, complex input?, keyword arguments)
    ("fft", (3, 8), False, {}),
    ("fft", (3, 8), True, {"n": 5, "norm": "ortho"}),
    ("fft", (3, 7), True, {"n": 10, "dim": 0, "norm": "forward"}),
    ("ifft", (4, 6), True, {}),
    ("ifft", (4, 6), False, {"n": 9, "norm": "forward"}),
    ("ifft", (4, 6), True, {"dim": 0, "norm": "ortho"}),
    ("rfft", (3, 8), False, {}),
    ("rfft", (3, 7), False, {"norm": "ortho"}),
    ("rfft", (5, 4), False, {"n": 7, "dim": 0, "norm": "forward"}),
    ("irfft", (3, 5), True, {}),
    ("irfft", (3, 5), True, {"n": 9, "norm": "ortho"}),
    ("irfft", (3, 5), True, {"n": 4, "norm": "forward"}),
    ("irfft", (6, 2), False, {"dim": 0}),
    ("fft2", (2, 4, 5), True, {}),
    ("ifft2", (2, 4, 5), False, {"s": (3, 6), "norm": "ortho"}),
    ("fftn", (2, 4, 5), True, {}),
    ("fftn", (2, 4, 5), True, {"s": (3, -1), "dim": (0, 2)}),
    ("ifftn", (2, 4, 5), True, {"dim": (1,), "norm": "forward"}),
    ("rfft2", (2, 4, 6), False, {}),
    ("rfftn", (2, 4, 5), False, {"s": (3, 6)}),
    ("irfft2", (2, 4, 3), True, {"norm": "ortho"}),
    ("irfftn", (2, 4, 3), True, {"s": (5, 7)}),
    ("irfftn", (2, 4, 4), True, {"dim": (0, 2), "norm": "forward"}),
    ("hfft", (3, 5), True, {}),
    ("hfft", (3, 5), True, {"n": 7, "norm": "ortho"}),
    ("hfft", (3, 5), False, {"n": 4, "dim": 0, "norm": "forward"}),
    ("ihfft", (3, 8), False, {}),
    ("ihfft", (3, 7), False, {"n": 5, "norm": "ortho"}),
    ("ihfft", (5, 4), False, {"n": 9, "dim": 0, "norm": "forward"}),
    ("hfft2", (2, 4, 3), True, {"norm": "ortho"}),
    ("ihfft2", (2, 4, 6), False, {"s": (3, 5)}),
    ("hfftn", (2, 4, 3), True, {"s": (5, 7)}),
    ("hfftn", (2, 4, 4), True, {"dim": (0, 2), "norm": "forward"}),
    ("ihfftn", (2, 4, 5), False, {"s": (-1, 6), "dim": (-1, 0), "norm": "ortho"}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, shape, is_complex, kwargs", CASES)
def test_values_and_gradients_as_torch(name, shape, is_complex, kwargs, dtype):
    rng = np.random.default_rng(0)
    x = random(
        rng, shape, ("complex128" if dtype == "float64" else "complex64") if is_complex else dtype
    )
    ours_x, theirs_x = both(x)
    ours = getattr(sg.fft, name)(ours_x, **kwargs)
    theirs = getattr(torch.fft, name)(theirs_x, **kwargs)
    assert_same(ours, theirs, **TOL[dtype])
    g = random(rng, tuple(theirs.shape), str(theirs.dtype).split(".")[-1])
    (ours_grad,) = sg.autograd.grad(ours, ours_x, sg.tensor(g))
    (theirs_grad,) = torch.autograd.grad(theirs, theirs_x, torch.tensor(g))
    assert_same(ours_grad, theirs_grad, **TOL[dtype])


def test_integers_give_the_default_float_complex():
    assert_same(sg.fft.fft(sg.arange(4)), torch.fft.fft(torch.arange(4)))
    assert_same(sg.fft.rfft(sg.arange(5)), torch.fft.rfft(torch.arange(5)))


def test_second_gradients_as_torch():
    x = np.random.default_rng(1).normal(size=(6,))
    results = []
    for lib, t in zip((sg, torch), both(x)):
        y = lib.fft.irfft(lib.fft.rfft(t * t, norm="ortho") * lib.arange(4), n=6)
        (g,) = lib.autograd.grad((y * y).sum(), t, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), t)
        results.append((g, gg))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10)


def test_gradcheck_through_the_spectrum():
    x = sg.tensor(np.random.default_rng(2).normal(size=(3, 8)), requires_grad=True)
    w = sg.tensor(np.random.default_rng(3).normal(size=(3, 5)), requires_grad=True)

    def f(x, w):
        spectrum = sg.fft.rfft(x) * sg.complex(w, w.flip(-1))
        return sg.fft.irfft(sg.fft.ifft(sg.fft.fft(spectrum, dim=0), dim=0), n=8)

    assert sg.autograd.gradcheck(f, (x, w))


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies(name, n):
    assert_same(getattr(sg.fft, name)(n), getattr(torch.fft, name)(n))
    assert_same(
        getattr(sg.fft, name)(n, 0.5, dtype=sg.float64),
        getattr(torch.fft, name)(n, 0.5, dtype=torch.float64),
    )


@pytest.mark.parametrize("n, d", [(0, 1.0), (1, 0.0), (5, 0.0), (4, -0.0), (0, 0.0)])
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_of_no_samples_or_no_spacing_are_nan_and_inf(name, n, d):
    """PyTorch multiplies by 1 / (n * d), inf for a span of 0: 0 becomes nan, the rest inf."""
    assert_same(getattr(sg.fft, name)(n, d), getattr(torch.fft, name)(n, d))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_refuse_what_torch_refuses(name):
    for dtype, kind in (("int64", RuntimeError), ("bool", RuntimeError),
                        ("complex64", NotImplementedError)):  # fmt: skip
        for m in (torch, sg):
            with pytest.raises(kind):
                getattr(m.fft, name)(4, dtype=getattr(m, dtype))
    for m in (torch, sg):
        with pytest.raises(TypeError):
            getattr(m.fft, name)(4.0)
    with pytest.raises(RuntimeError, match="negative dimension"):
        torch.fft.fftfreq(-1)
    with pytest.raises(RuntimeError, match=f"{name}: Trying to create tensor with negative"):
        getattr(sg.fft, name)(-1)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "fftn", "irfftn"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_inputs_are_refused_as_on_torchs_cpu(name, dtype):
    for m in (torch, sg):
        with pytest.raises(RuntimeError, match="Unsupported dtype"):
            getattr(m.fft, name)(m.ones(4, 4, dtype=getattr(m, dtype)))


AUTOCAST_FLOAT32 = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                    "irfft2", "rfftn", "irfftn", "hfft", "ihfft"]  # fmt: skip


@pytest.mark.parametrize("name", [*AUTOCAST_FLOAT32, "hfft2", "ihfft2", "hfftn", "ihfftn"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_inputs_run_in_float32_under_autocast_as_torchs(name, dtype):
    """PyTorch's CPU autocast list runs the transforms in float32, but for the 2-D and n-D
    hfft family, missing from it, which then refuse 16 bits as outside autocast."""
    x = np.random.default_rng(5).normal(size=(3, 4))
    results = []
    for m in (sg, torch):
        with m.autocast("cpu", dtype=getattr(m, dtype)):
            t = m.tensor(x, dtype=getattr(m, dtype))
            if name not in AUTOCAST_FLOAT32:
                with pytest.raises(RuntimeError, match="Unsupported dtype"):
                    getattr(m.fft, name)(t)
                continue
            results.append(getattr(m.fft, name)(t))
    if results:
        assert_same(*results, **TOL["float32"])


@pytest.mark.parametrize("dim", [None, 0, (1,), (0, 1)])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name, dim):
    x = np.arange(15.0).reshape(3, 5)
    assert_same(
        getattr(sg.fft, name)(sg.tensor(x), dim), getattr(torch.fft, name)(torch.tensor(x), dim)
    )


def test_errors():
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor"):
        sg.fft.rfft(sg.tensor([1j]))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        sg.fft.fft(sg.ones(3), n=0)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        sg.fft.irfft(sg.ones(1))
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        sg.fft.fft(sg.ones(3), norm="bad")
    with pytest.raises(IndexError, match="Dimension out of range"):
        sg.fft.fft(sg.ones(3), dim=1)
    with pytest.raises(RuntimeError, match="same length"):
        sg.fft.fftn(sg.ones(3, 3), s=(2,), dim=(0, 1))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        sg.fft.fft(sg.ones(0))
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no dimensions"):
        sg.fft.fft(sg.tensor(1.0))
    for name in ["rfftn", "irfftn"]:
        with pytest.raises(RuntimeError, match=f"{name} must transform at least one axis"):
            getattr(sg.fft, name)(sg.tensor(1.0))
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        sg.fft.fftn(sg.ones(3, 3), dim=(0, -2))
    with pytest.raises(RuntimeError, match="ihfft expects a real input tensor"):
        sg.fft.ihfft(sg.tensor([1j]))
    with pytest.raises(RuntimeError, match=r"hfftn: Invalid number of data points \(0\)"):
        sg.fft.hfftn(sg.ones(3, 3), s=(2, 0))
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "Ortho"'):
        sg.fft.hfft(sg.ones(3), norm="Ortho")


# ---- found by test_fft_fuzz.py ----------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.fft.fftshift(m.tensor(1.0)),
        lambda m: m.fft.ifftshift(m.tensor(1.0)),
        lambda m: m.fft.fftshift(m.ones(3), dim=()),
        lambda m: m.fft.fftn(m.ones(3), s=(2, 2)),
        lambda m: m.fft.irfftn(m.ones(3), s=(2, 2, 2)),
        lambda m: m.fft.hfftn(m.tensor(1.0), s=(2,)),
    ],
)
def test_shifts_of_no_dims_and_more_sizes_than_dims_raise_runtime_errors_as_pytorch(call):
    """A shift of no dims (0-d input, dim=()) is PyTorch's roll error, not an IndexError or
    the input back; an s longer than the input's dims (no dim given) is PyTorch's RuntimeError
    'Got shape with 2 values but input tensor only has 1 dimensions', not an IndexError."""
    for m in (torch, sg):
        with pytest.raises(RuntimeError):
            call(m)


def test_ihfftn_of_a_complex_signal_checks_its_dims_first_as_pytorch():
    """PyTorch's ihfftn (ihfft2) checks the dims before the dtype, its rfftn and ihfft the
    dtype first; ours checked the dtype first in all of them."""
    for m in (torch, sg):
        z = m.ones(3, dtype=m.complex64)
        with pytest.raises(IndexError):
            m.fft.ihfftn(z, dim=(5,))
        with pytest.raises(RuntimeError, match="at least one axis"):
            m.fft.ihfftn(z, dim=())
        with pytest.raises(RuntimeError, match="rfftn expects a real"):
            m.fft.rfftn(z, dim=())
        with pytest.raises(RuntimeError, match="ihfft expects a real"):
            m.fft.ihfft(z, dim=5)
