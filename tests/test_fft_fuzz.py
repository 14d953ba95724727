"""Random ``fft`` calls against PyTorch: a transform of the 1-D, 2-D or n-D families (c2c, r2c,
c2r and the Hermitian pair), a shift, or the sample frequencies, with ``n``/``s`` drawn shorter
(cropping), longer (zero padding) or -1, dims negative, repeated or out of range, each ``norm``,
on real, complex, integer and bool inputs of random shapes (0-d, empty dims, lengths 1 and odd)
in single and double precision. Both libraries must raise or not (the same error class) and
agree on the result's dtype, shape and values, and for real floating inputs on the gradient of a
random weighting of the result's real and imaginary parts. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to
run more examples."""

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, fuzz_settings, normwise, outcome, raised_alike, same_dtype

import scratchgrad as sg

FUZZ = fuzz_settings(300)
DTYPES = ["float64", "float32", "complex128", "complex64", "int64", "bool"]
NORMS = [None, "backward", "forward", "ortho"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
MANY_D = [f"{name}{suffix}" for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
          for suffix in ("2", "n")]  # fmt: skip


def precision(dtype: str) -> str:
    """The real dtype whose tolerance applies."""
    return "float32" if dtype in ("float32", "complex64") else "float64"


@st.composite
def signals(draw):
    """(dtype, array) of a random shape, entries of both signs and a few sizes."""
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.sampled_from([0, 1, 1, 2, 2, 3]))
    sizes = st.sampled_from([0, 1, 1, 2, 3, 4, 5, 5])
    shape = tuple(draw(st.lists(sizes, min_size=ndim, max_size=ndim)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    array = rng.standard_normal(shape) * draw(st.sampled_from([1.0, 1e3]))
    if dtype.startswith("complex"):
        array = array + 1j * rng.standard_normal(shape)
    if dtype == "int64":
        array = rng.integers(-4, 5, shape)
    if dtype == "bool":
        array = rng.integers(0, 2, shape).astype(bool)
    return dtype, array


def leaf(lib, dtype, array, requires_grad):
    return lib.tensor(array, dtype=getattr(lib, dtype), requires_grad=requires_grad)


def a_dim(draw, ndim):
    """A dim of the signal, negative half the time, out of range now and then."""
    if not ndim or not draw(st.integers(0, 7)):
        return draw(st.sampled_from([-ndim - 1, ndim]))
    return draw(st.integers(-ndim, ndim - 1))


def transform(draw, ndim):
    """call(m, x) of a transform with its arguments drawn."""
    norm = draw(st.sampled_from(NORMS))
    if draw(st.booleans()):
        name = draw(st.sampled_from(ONE_D))
        n = draw(st.sampled_from([None, None, 1, 2, 3, 4, 5, 7, 0]))
        dim = a_dim(draw, ndim) if draw(st.booleans()) else -1
        return lambda m, x: getattr(m.fft, name)(x, n=n, dim=dim, norm=norm)
    name = draw(st.sampled_from(MANY_D))
    count = 2 if name.endswith("2") else draw(st.integers(0, 3))
    dims = tuple(a_dim(draw, ndim) for _ in range(count))  # repeated now and then
    if name.endswith("n") and draw(st.booleans()):
        dims = None  # every dim (or the last len(s))
    s = None
    if draw(st.booleans()):
        length = count if dims is not None else draw(st.integers(0, 3))
        s = tuple(draw(st.sampled_from([-1, 1, 2, 3, 4, 6])) for _ in range(length))
    keywords = {"s": s, "norm": norm}
    if dims is not None and not (name.endswith("2") and draw(st.booleans())):
        keywords["dim"] = dims  # fft2 and friends: their default (-2, -1) half the time
    return lambda m, x: getattr(m.fft, name)(x, **keywords)


def shift(draw, ndim):
    name = draw(st.sampled_from(["fftshift", "ifftshift"]))
    dim = draw(st.sampled_from([None, "one", "several"]))
    if dim == "one":
        dim = a_dim(draw, ndim)
    elif dim == "several":
        dim = tuple(draw(st.lists(st.integers(-ndim, max(ndim - 1, 0)), min_size=1, max_size=3)))
    return lambda m, x: getattr(m.fft, name)(x, dim=dim)


@given(signal=signals(), data=st.data())
@FUZZ
def test_transforms_against_pytorch(signal, data):
    dtype, array = signal
    ndim = array.ndim
    call = (transform if data.draw(st.integers(0, 4)) else shift)(data.draw, ndim)
    what = f"on {dtype} {array.shape}"
    grad = dtype in ("float32", "float64")
    x, tx = leaf(sg, dtype, array, grad), leaf(torch, dtype, array, grad)
    ours, theirs = outcome(call, sg, x), outcome(call, torch, tx)
    if isinstance(theirs, RuntimeError) and "MKL FFT error" in str(theirs):
        return  # README: "a transform over an empty batch gives an empty result where PyTorch's
        # MKL raises"
    if raised_alike(ours, theirs, what):
        return
    theirs = theirs.resolve_conj()  # (ihfft's conjugate view)
    assert same_dtype(ours, theirs), f"{what}: {ours.dtype}, PyTorch {theirs.dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} vs {theirs.shape}"
    assert ours.requires_grad == theirs.requires_grad, what
    tolerance = normwise(precision(dtype), dims=None)
    assert_close(ours, theirs, precision(dtype), what, tolerance)
    if grad:
        weights = np.random.default_rng(0).standard_normal((*theirs.shape, 2))
        mine, expected = backward(ours, x, weights, sg), backward(theirs, tx, weights, torch)
        assert_close(mine, expected, dtype, f"{what}: gradient", normwise(dtype, dims=None))


def backward(out, x, weights, lib):
    """x's gradient of the weighted sum of the result's real and imaginary parts."""
    parts = lib.view_as_real(out) if out.is_complex() else lib.stack([out, out * 0], -1)
    (parts * lib.tensor(weights).to(parts.dtype)).sum().backward()
    return x.grad


@given(
    name=st.sampled_from(["fftfreq", "rfftfreq"]),
    n=st.integers(-1, 9),
    d=st.sampled_from([1.0, 0.5, 3.0, 0.0]),
    dtype=st.sampled_from([None, "float32", "float64", "int64", "complex64"]),
)
@FUZZ
def test_frequencies_against_pytorch(name, n, d, dtype):
    def call(m):
        keywords = {} if dtype is None else {"dtype": getattr(m, dtype)}
        return getattr(m.fft, name)(n, d, **keywords)

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if name == "rfftfreq" and n == -1:
        return  # README: "Unlike PyTorch's, `rfftfreq(-1)` raises as `fftfreq(-1)` does"
    if raised_alike(ours, theirs, f"{name}({n}, {d})"):
        return
    assert same_dtype(ours, theirs)
    assert_close(ours, theirs, "float64", f"{name}({n}, {d})")
