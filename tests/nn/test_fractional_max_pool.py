"""``F.fractional_max_pool2d``/``3d`` and ``nn.FractionalMaxPool2d``/``3d`` against PyTorch's:
given the same ``_random_samples``, the same outputs, indices (ties, NaNs) and gradients;
without them, outputs that are window maxima of PyTorch's shapes; PyTorch's errors."""

import numpy as np
import pytest
import torch
from oracle import assert_raises_as_torch

import scratchgrad as sg

F = sg.nn.functional


def _cases(dims, count=40, seed=0):
    """(input, kernel, output size, samples) drawn at random: sizes up to the largest
    windows PyTorch takes, integer inputs (ties) and NaNs now and then, samples of 0 too."""
    rng = np.random.default_rng(seed + dims)
    slack = 0 if dims == 2 else 1  # (PyTorch's 3-d check is stricter by one)
    for trial in range(count):
        n, c = rng.integers(1, 3, 2)
        sizes = rng.integers(2, 8, dims)
        kernel = [int(rng.integers(1, s + 1 - slack)) for s in sizes]
        out = [int(rng.integers(0, s - k + 2 - slack)) for s, k in zip(sizes, kernel)]
        dtype = ("float64", "float32")[trial % 2]
        x = rng.standard_normal((n, c, *sizes)).astype(dtype)
        if trial % 3 == 0:
            x = np.round(x)
        if trial % 5 == 0:
            x.flat[rng.integers(0, x.size, 2)] = np.nan
        samples = rng.random((n, c, dims)).astype(dtype) * (trial % 7 != 0)
        if trial % 4 == 0 and n == 1:  # unbatched input
            x = x[0]
        yield x, kernel, out, samples


@pytest.mark.parametrize("dims", [2, 3])
def test_same_outputs_indices_and_gradients_as_torch(dims):
    name = f"fractional_max_pool{dims}d"
    for x, kernel, out, samples in _cases(dims):
        results = []
        for lib in (sg, torch):
            leaf = lib.tensor(x, requires_grad=True)
            pool = getattr(lib.nn.functional, name)
            kwargs = dict(output_size=out, return_indices=True)
            y, at = pool(leaf, kernel, **kwargs, _random_samples=lib.tensor(samples))
            weights = lib.tensor(np.arange(np.prod(y.shape)).reshape(y.shape).astype(x.dtype))
            (y * weights).sum().backward()
            results.append(
                [y.detach().numpy(), at.numpy(), leaf.grad.numpy(), str(y.dtype).split(".")[-1]]
            )
        (y, at, grad, dtype), (y_t, at_t, grad_t, dtype_t) = results
        what = f"{x.shape} kernel {kernel} output {out}"
        np.testing.assert_array_equal(at, at_t, err_msg=what)
        np.testing.assert_array_equal(y, y_t, err_msg=what)
        np.testing.assert_allclose(grad, grad_t, rtol=1e-6, err_msg=what)
        assert dtype.split(".")[-1] == dtype_t.split(".")[-1]


@pytest.mark.parametrize("dims", [2, 3])
def test_output_ratio_and_drawn_samples(dims):
    """Sizes from ``output_ratio`` are PyTorch's; drawn samples give window maxima."""
    shape = (2, 3, *[9, 7, 8][:dims])
    pool = getattr(F, f"fractional_max_pool{dims}d")
    x = sg.randn(*shape)
    out, at = pool(x, 2, output_ratio=[0.5, 0.7, 0.6][:dims], return_indices=True)
    expected = getattr(torch.nn.functional, f"fractional_max_pool{dims}d")(
        torch.randn(*shape), 2, output_ratio=[0.5, 0.7, 0.6][:dims]
    )
    assert out.shape == tuple(expected.shape) and at.dtype == sg.int64
    assert (x.flatten(-dims).gather(-1, at.flatten(-dims)).view(at.shape) == out).all()


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (lambda F, x, u: F.fractional_max_pool2d(x, 3, output_size=4), RuntimeError, "height 3"),
        (lambda F, x, u: F.fractional_max_pool2d(x, 2), ValueError, "either an output_size"),
        (
            lambda F, x, u: F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5)),
            ValueError,
            "output_ratio",
        ),
        (
            lambda F, x, u: F.fractional_max_pool2d(x, 2, output_size=(3, 4, 5)),
            RuntimeError,
            "output_size",
        ),
        (
            lambda F, x, u: F.fractional_max_pool2d(x, 2, 3, _random_samples=u[:, :1]),
            RuntimeError,
            "channel size",
        ),
        (
            lambda F, x, u: F.fractional_max_pool2d(x, 2, 3, _random_samples=u[:1]),
            RuntimeError,
            "batch size",
        ),
        (
            lambda F, x, u: F.fractional_max_pool2d(x, 2, 3, _random_samples=u[..., 0]),
            RuntimeError,
            "3 dimensions",
        ),
        (
            lambda F, x, u: F.fractional_max_pool2d(x, 2, 3, _random_samples=u.double()),
            RuntimeError,
            "same dtype",
        ),
        (
            lambda F, x, u: F.fractional_max_pool2d(x[:, :, :0], 1, 0),
            RuntimeError,
            "non-zero size",
        ),
        (
            lambda F, x, u: F.fractional_max_pool3d(x[None], 5, output_size=1),
            RuntimeError,
            "pool time 5 too large relative to input time 5",
        ),
    ],
)
def test_errors_as_torchs(call, kind, message):
    def run(lib):
        x = lib.ones(2, 5, 5, 5)
        return call(lib.nn.functional, x, lib.rand(2, 5, 2))

    assert_raises_as_torch(run, kind, message)


@pytest.mark.parametrize("dims", [2, 3])
def test_modules_as_torchs(dims):
    name = f"FractionalMaxPool{dims}d"
    samples = np.random.default_rng(0).random((1, 2, dims))
    x = np.random.default_rng(1).standard_normal((1, 2, *[6] * dims))
    outs = []
    for lib in (sg, torch):
        layer = getattr(lib.nn, name)
        plain = layer(2, output_ratio=0.5)
        fixed = layer(3, output_size=2, return_indices=True, _random_samples=lib.tensor(samples))
        outs.append((repr(plain), list(plain.state_dict()), list(fixed.state_dict())))
        outs.append([t.numpy() for t in fixed(lib.tensor(x))])
    assert outs[0] == outs[2]
    for ours, theirs in zip(outs[1], outs[3]):
        np.testing.assert_array_equal(ours, theirs)
    for kwargs, message in [
        ({}, "either an output size"),
        ({"output_size": 2, "output_ratio": 0.5}, "only one of"),
        ({"output_ratio": 1.5}, "between 0 and 1"),
    ]:
        build = lambda lib, kwargs=kwargs: getattr(lib.nn, name)(2, **kwargs)  # noqa: E731
        assert_raises_as_torch(build, ValueError, message)
