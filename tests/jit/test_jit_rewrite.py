"""The jit's rewrites (jit/rewrite.py): where they apply, where they must not, and that a
rewritten step's results and gradients have the eager step's bits, on data made to find a
difference (NaN, -0.0, ties of zeros in a window, windows of negative numbers)."""

import re

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.jit import rewrite
from scratchgrad.nn import functional as F


def gradients(fn, x, jitted):
    """``fn``'s result and the gradient of ``fn(x).exp().sum()`` w.r.t. ``x`` and the weight
    of a 1x1 convolution in front (so the gradient goes on past the rewritten part), over four
    calls (eager, two recordings, a replay); the last call's, and the jitted step's source (or
    None)."""
    sg.manual_seed(0)
    conv = nn.Conv2d(x.shape[1], 3, 1).to(x.dtype)

    def step(x):
        conv.zero_grad()
        x.grad = None
        out = fn(conv(x))
        out.exp().sum().backward()  # a gradient where the output is 0 too
        return x.grad, conv.weight.grad, out.detach()

    run = sg.jit(step) if jitted else step
    for _ in range(4):
        grads = [g.numpy().copy() for g in run(x.detach().requires_grad_())]
    sources = [r.source for rs in run.recordings.values() for r in rs] if jitted else [None]
    return grads, sources[0]


def relu_then_pool(x):
    return F.max_pool2d(F.relu(x), 2)


def data(shape=(4, 2, 8, 8), seed=0):
    """Normal numbers with ties of zeros under the ReLU, a NaN, and -0.0."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x[0, :, :4, :4] = -1.0  # whole windows of zeros after the ReLU
    x[1, 0, 2, 3] = np.nan
    x[2, 1, 5, 5] = -0.0
    return sg.tensor(x)


def relu_then_pool_of_signed_zeros(x):
    """Windows of +0.0, -0.0 and negative numbers before the ReLU."""
    zeros = np.ones(x.shape, x.dtype)
    zeros[:, :, :4, :] = -0.0  # x * -0.0: -0.0 where x is positive, +0.0 where negative
    zeros[:, :, :2, :] = np.where(np.arange(x.shape[-1]) % 3 == 0, 0.0, -0.0)
    return relu_then_pool(x * sg.tensor(zeros) - sg.tensor(zeros == 1).to(x.dtype) * 3)


def assert_same_bits(ours, theirs):
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def relu_reads(source):
    """The value each ReLU line reads, with the line making that value."""
    lines = [line.strip() for line in source.splitlines()]
    made = {line.split(" = ")[0]: line for line in lines if " = " in line}
    read = [re.search(r"(?:k_relu|np_maximum)\((v\d+)", line) for line in lines]
    return [made[found[1]] for found in read if found]


@pytest.mark.parametrize("fn", [relu_then_pool, relu_then_pool_of_signed_zeros])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_mask_is_taken_on_the_pooled_values_and_the_relu_runs_on_them(fn, dtype):
    x = data().to(getattr(sg, np.dtype(dtype).name))
    (eager_x, eager_w, eager_out), _ = gradients(fn, x, jitted=False)
    (jit_x, jit_w, jit_out), source = gradients(fn, x, jitted=True)
    assert_same_bits([jit_x, jit_w, jit_out], [eager_x, eager_w, eager_out])
    (pooling,) = relu_reads(source)  # the one ReLU reads the pooled values
    assert "dims=(3, 5)" in pooling
    if fn is relu_then_pool_of_signed_zeros:  # the data test those paths
        assert (eager_out == 0).any() and not np.signbit(eager_out).any()
    # the mask compares the pooled values (4 x 3 x 4 x 4), then the spread reads the masked
    # gradient: no keep_where is left that reads the spread's result
    spread = next(line for line in source.splitlines() if "k_spread(" in line)
    masked = spread.split("k_spread(")[1].split(",")[0]
    assert any(line.strip().startswith(f"{masked} = k_keep_where(") for line in source.splitlines())
    assert source.count("k_keep_where(") == 1
    assert np.isnan(eager_x).any()  # the NaN reached the gradient: the data test that path


def test_a_relu_before_pooling_under_no_grad_runs_on_the_pooled_values():
    """Without a backward (no winners read), the ReLU moves all the same."""
    x = data()
    conv = nn.Conv2d(2, 3, 1)

    def forward(x):
        with sg.no_grad():
            return relu_then_pool(conv(x))

    jitted = sg.jit(forward)
    for _ in range(4):
        out = jitted(x).numpy()
    assert_same_bits([out], [forward(x).numpy()])
    (recording,) = [r for rs in jitted.recordings.values() for r in rs]
    (pooling,) = relu_reads(recording.source)
    assert "dims=(3, 5)" in pooling


def relu_pool_and_relu_again(x):
    y = F.relu(x)
    return F.max_pool2d(y, 2).sum() + y.sum()  # the ReLU's output read twice


def pool_then_relu(x):
    return F.relu(F.max_pool2d(x, 2))


def relu_then_avg_pool(x):
    return F.avg_pool2d(F.relu(x), 2)


@pytest.mark.parametrize("fn", [relu_pool_and_relu_again, pool_then_relu, relu_then_avg_pool])
def test_no_rewrite_where_the_mask_does_not_only_meet_a_spread(fn, monkeypatch):
    """The ReLU's gradient adds in another path, comes after the pooling, or meets no
    spread: the program is the one made without rewrites, with eager's bits."""
    x = data()
    eager, _ = gradients(fn, x, jitted=False)
    jitted, source = gradients(fn, x, jitted=True)
    for name in ("mask_before_spreading", "relu_after_pooling"):
        monkeypatch.setattr(rewrite, name, lambda recorder, steps, outputs: steps)
    _, unrewritten = gradients(fn, x, jitted=True)
    assert source == unrewritten
    assert_same_bits(jitted, eager)


def test_w5s_network_trains_as_eager_with_both_masks_and_relus_moved():
    """Both of W5's ReLU-then-pool layers get both rewrites, and six steps of SGD end where
    the eager steps end, bit for bit."""
    from test_jit import w5_like_training_source

    source = w5_like_training_source()
    spreads = [line for line in source.splitlines() if "k_spread(" in line]
    masked = {line.split("k_spread(")[1].split(",")[0] for line in spreads}
    lines = [line.strip() for line in source.splitlines()]
    assert len(spreads) == 2
    assert all(any(line.startswith(f"{v} = k_keep_where(") for line in lines) for v in masked)
    assert all("dims=(3, 5)" in pooling for pooling in relu_reads(source))
    assert len(relu_reads(source)) == 2
