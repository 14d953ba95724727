"""The jit's rewrites (jit/rewrite.py): where they apply, where they must not, and that a
rewritten step's gradients have the eager step's bits, on data made to find a difference
(NaN, -0.0, ties of zeros in a window)."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.jit import rewrite
from scratchgrad.nn import functional as F


def gradients(fn, x, jitted):
    """The gradient of ``fn(x).exp().sum()`` w.r.t. ``x`` and the weight of a 1x1 convolution in
    front (so the gradient goes on past the rewritten part), over four calls (eager, two
    recordings, a replay); the last call's, and the jitted step's source (or None)."""
    sg.manual_seed(0)
    conv = nn.Conv2d(x.shape[1], 3, 1).to(x.dtype)

    def step(x):
        conv.zero_grad()
        x.grad = None
        out = fn(conv(x))
        out.exp().sum().backward()  # a gradient where the output is 0 too
        return x.grad, conv.weight.grad

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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_mask_is_taken_on_the_pooled_values(dtype):
    x = data().to(getattr(sg, np.dtype(dtype).name))
    (eager_x, eager_w), _ = gradients(relu_then_pool, x, jitted=False)
    (jit_x, jit_w), source = gradients(relu_then_pool, x, jitted=True)
    # the mask compares the pooled values (4 x 3 x 4 x 4), then the spread reads the masked
    # gradient: no keep_where is left that reads the spread's result
    spread = next(line for line in source.splitlines() if "k_spread(" in line)
    masked = spread.split("k_spread(")[1].split(",")[0]
    assert any(line.strip().startswith(f"{masked} = k_keep_where(") for line in source.splitlines())
    assert source.count("k_keep_where(") == 1
    np.testing.assert_array_equal(jit_x.view(np.uint8), eager_x.view(np.uint8))  # bit for bit
    np.testing.assert_array_equal(jit_w.view(np.uint8), eager_w.view(np.uint8))
    assert np.isnan(eager_x).any()  # the NaN reached the gradient: the data test that path


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
    (eager_x, eager_w), _ = gradients(fn, x, jitted=False)
    (jit_x, jit_w), source = gradients(fn, x, jitted=True)
    monkeypatch.setattr(rewrite, "mask_before_spreading", lambda recorder, steps, outputs: steps)
    _, unrewritten = gradients(fn, x, jitted=True)
    assert source == unrewritten
    np.testing.assert_array_equal(jit_x.view(np.uint8), eager_x.view(np.uint8))
    np.testing.assert_array_equal(jit_w.view(np.uint8), eager_w.view(np.uint8))


def test_w5s_network_trains_as_eager_with_both_masks_moved():
    """Both of W5's ReLU-then-pool layers are rewritten, and six steps of SGD end where the
    eager steps end, bit for bit."""
    from test_jit import w5_like_training_source

    source = w5_like_training_source()
    spreads = [line for line in source.splitlines() if "k_spread(" in line]
    masked = {line.split("k_spread(")[1].split(",")[0] for line in spreads}
    lines = [line.strip() for line in source.splitlines()]
    assert len(spreads) == 2
    assert all(any(line.startswith(f"{v} = k_keep_where(") for line in lines) for v in masked)
