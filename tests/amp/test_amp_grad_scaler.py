"""GradScaler against torch.amp.GradScaler: scale trajectories, skipped steps, parameters."""

import math

import numpy as np
import pytest
import torch

import scratchgrad as sg

INF, NAN = math.inf, math.nan
# One row per step: the gradient each of two parameters gets (before scaling). Infs and NaNs
# make steps that must be skipped; growth_interval=3 lets clean runs grow the scale.
SCRIPT = [
    ([1.0, -2.0], [0.5]),
    ([INF, 1.0], [0.5]),
    ([0.1, 0.2], [-0.3]),
    ([0.1, 0.2], [NAN]),
    ([3.0, 1.0], [0.25]),
    ([0.5, 0.5], [0.5]),
    ([1e-3, 2.0], [1.0]),
    ([0.2, -0.1], [0.7]),
    ([-INF, 0.0], [0.0]),
    ([0.3, 0.3], [0.3]),
]


def _run(lib, optimizer, clip):
    w = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    b = lib.nn.Parameter(lib.tensor([0.5]))
    opt = optimizer(lib, [w, b])
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=3)
    trajectory = []
    for gw, gb in SCRIPT:
        loss = (w * lib.tensor(gw)).sum() + (b * lib.tensor(gb)).sum()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        grads = np.concatenate([w.grad.numpy(), b.grad.numpy()])
        if clip:
            lib.nn.utils.clip_grad_norm_([w, b], 1.0)
        before = np.concatenate([w.detach().numpy(), b.detach().numpy()])
        scaler.step(opt)
        scaler.update()
        params = np.concatenate([w.detach().numpy(), b.detach().numpy()])
        stepped = not np.array_equal(before, params)
        trajectory.append((scaler.get_scale(), stepped, grads, params))
    return trajectory, scaler.state_dict()


OPTIMIZERS = {
    "sgd": lambda lib, params: lib.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda lib, params: lib.optim.Adam(params, lr=0.01),
}


@pytest.mark.parametrize("clip", [False, True], ids=["plain", "unscale_then_clip"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_the_scale_skipped_steps_and_parameters_follow_torch_bit_for_bit(name, clip):
    ours, our_state = _run(sg, OPTIMIZERS[name], clip)
    theirs, their_state = _run(torch, OPTIMIZERS[name], clip)
    for step, (mine, torchs) in enumerate(zip(ours, theirs)):
        (scale, stepped, grads, params), (t_scale, t_stepped, t_grads, t_params) = mine, torchs
        assert (scale, stepped) == (t_scale, t_stepped), f"step {step}"
        np.testing.assert_array_equal(grads, t_grads, err_msg=f"step {step}: unscaled grads")
        # The optimizers' own float32 arithmetic may differ from PyTorch's by an ulp (PyTorch's
        # add_ with alpha can fuse the multiply-add); the scaler's part above is bit for bit.
        np.testing.assert_allclose(params, t_params, rtol=1e-6, err_msg=f"step {step}")
    assert our_state == their_state


def test_an_inf_skips_the_step_and_halves_the_scale():
    w = sg.nn.Parameter(sg.ones(2))
    opt = sg.optim.SGD([w], lr=0.1)
    scaler = sg.amp.GradScaler(init_scale=8.0)
    scaler.scale((w * sg.tensor([INF, 1.0])).sum()).backward()
    assert scaler.step(opt) is None
    scaler.update()
    assert w.tolist() == [1.0, 1.0] and scaler.get_scale() == 4.0


def test_a_float16_gradient_that_underflows_survives_with_scaling():
    def grad_of_weight(scaler):
        layer = sg.nn.Linear(2, 2, bias=False)
        with sg.no_grad():
            layer.weight.fill_(1.0)
        with sg.autocast("cpu", dtype=sg.float16):
            out = layer(sg.ones(1, 2))  # float16
            loss = (out.float() * 1e-8).sum()  # d loss / d out = 1e-8: below float16's range
        if scaler is None:
            loss.backward()
        else:
            scaler.scale(loss).backward()
            scaler.unscale_(sg.optim.SGD(layer.parameters(), lr=0.1))
        return layer.weight.grad.numpy()

    assert not grad_of_weight(None).any()  # underflowed to zero
    np.testing.assert_allclose(grad_of_weight(sg.amp.GradScaler()), 1e-8, rtol=1e-3)


def test_misuse_raises_as_torch():
    w = sg.nn.Parameter(sg.ones(2))
    opt = sg.optim.SGD([w], lr=0.1)
    scaler = sg.amp.GradScaler()
    with pytest.raises(RuntimeError, match="No inf checks"):
        scaler.update()
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure"):
        sg.amp.GradScaler().step(opt, closure=lambda: 0.0)
    with pytest.raises(ValueError, match="growth_factor"):
        sg.amp.GradScaler(growth_factor=0.5)


def test_disabled_scaler_is_a_pass_through_and_state_dict_round_trips():
    w = sg.nn.Parameter(sg.ones(2))
    off = sg.amp.GradScaler(enabled=False)
    loss = w.sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    on = sg.amp.GradScaler(init_scale=4.0, growth_interval=7)
    other = sg.amp.GradScaler()
    other.load_state_dict(on.state_dict())
    assert (
        other.state_dict()
        == on.state_dict()
        == torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=7).state_dict()
    )
    with pytest.raises(RuntimeError, match="empty"):
        other.load_state_dict({})
    theirs = torch.amp.GradScaler("cpu", growth_factor=3.0, backoff_factor=0.25, growth_interval=5)
    ours = sg.amp.GradScaler(growth_factor=3.0, backoff_factor=0.25, growth_interval=5)
    for getter in ("get_scale", "get_growth_factor", "get_backoff_factor", "get_growth_interval"):
        assert getattr(ours, getter)() == getattr(theirs, getter)(), getter
    assert ours.is_enabled() and not off.is_enabled()
