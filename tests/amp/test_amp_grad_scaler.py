"""GradScaler against torch.amp.GradScaler: scale trajectories, skipped steps, parameters."""

import math
import warnings

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


# With a power-of-two learning rate (and nesterov momentum) every product in the update is exact,
# so PyTorch's fused multiply-adds (param.add_(grad, alpha=-lr) is one FMA on CPU) round like
# our multiply-then-add: the whole trajectory, parameters included, must agree bit for bit.
EXACT = {
    "sgd": lambda lib, params: lib.optim.SGD(params, lr=0.125),
    "sgd_momentum": lambda lib, params: lib.optim.SGD(params, lr=0.125, momentum=0.9),
    "sgd_nesterov": lambda lib, params: lib.optim.SGD(
        params, lr=0.125, momentum=0.5, nesterov=True
    ),
}
# Otherwise PyTorch's FMAs (add_ with alpha, lerp_, addcmul_) round once where NumPy, which has
# no FMA, rounds twice; and PyTorch's float32 sqrt is not correctly rounded on every build (on
# this machine's AVX-512 build about 1 value in 6 is an ulp off IEEE sqrt). Emulating an FMA in
# float64 would cost about 4x the update's time, so the parameters (of order 1) may drift apart
# by up to an ulp of 1 per step.
FUSED = {
    "sgd_momentum_lr0.1": lambda lib, params: lib.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda lib, params: lib.optim.Adam(params, lr=0.01),
    "adamw": lambda lib, params: lib.optim.AdamW(params, lr=0.01, weight_decay=0.1),
}


def _compare(name, clip, exact):
    optimizer = {**EXACT, **FUSED}[name]
    ours, our_state = _run(sg, optimizer, clip)
    theirs, their_state = _run(torch, optimizer, clip)
    for step, (mine, torchs) in enumerate(zip(ours, theirs)):
        (scale, stepped, grads, params), (t_scale, t_stepped, t_grads, t_params) = mine, torchs
        assert (scale, stepped) == (t_scale, t_stepped), f"step {step}"
        assert np.array_equal(grads, t_grads, equal_nan=True), f"step {step}: unscaled grads"
        if exact:
            assert np.array_equal(params, t_params), f"step {step}: {params} != {t_params}"
        else:
            atol = (step + 1) * np.finfo(np.float32).eps
            np.testing.assert_allclose(params, t_params, rtol=0, atol=atol, err_msg=f"step {step}")
    assert our_state == their_state


@pytest.mark.parametrize("clip", [False, True], ids=["plain", "unscale_then_clip"])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_scale_skipped_steps_and_parameters_equal_torchs_bit_for_bit(name, clip):
    _compare(name, clip, exact=True)


@pytest.mark.parametrize("clip", [False, True], ids=["plain", "unscale_then_clip"])
@pytest.mark.parametrize("name", sorted(FUSED))
def test_with_fused_arithmetic_only_the_parameters_differ_by_ulps(name, clip):
    _compare(name, clip, exact=False)


def test_growth_and_backoff_round_as_torchs_kernel():
    """float32 scale times a float64 factor, rounded once: 1.1 and 0.3 are not float32 numbers."""
    kwargs = {"init_scale": 3.3e4, "growth_factor": 1.1, "backoff_factor": 0.3}
    scalers = [lib.amp.GradScaler("cpu", growth_interval=1, **kwargs) for lib in (sg, torch)]
    for step in range(30):
        for lib, scaler in zip((sg, torch), scalers):
            w = lib.nn.Parameter(lib.ones(1))
            scaler.scale((w * (INF if step % 3 == 0 else 1.0)).sum()).backward()
            scaler.step(lib.optim.SGD([w], lr=0.0))
            scaler.update()
        assert scalers[0].get_scale() == scalers[1].get_scale(), f"step {step}"


def test_clipping_an_overflowed_gradient_after_unscale_warns_as_little_as_torch():
    w = sg.nn.Parameter(sg.ones(3))
    opt = sg.optim.SGD([w], lr=0.1)
    scaler = sg.amp.GradScaler()
    scaler.scale((w * sg.tensor([INF, 1.0, 0.0])).sum()).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaler.unscale_(opt)
        norm = sg.nn.utils.clip_grad_norm_([w], 1.0)
        scaler.step(opt)
    assert norm.item() == INF and w.tolist() == [1.0, 1.0, 1.0]


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
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
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


def _scaler_and_sgd(lib, grads, dtype="float32", **kwargs):
    """A scaler and an SGD over one parameter per gradient, whose ``.grad`` is set to it."""
    params = [lib.nn.Parameter(lib.ones(len(g), dtype=getattr(lib, dtype))) for g in grads]
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g, dtype=p.dtype)
    return lib.amp.GradScaler("cpu", **kwargs), lib.optim.SGD(params, lr=0.5), params


@pytest.mark.parametrize("call", ["unscale_", "step", "update"])
def test_a_scaler_that_never_scaled_refuses_to_unscale_step_or_update_as_torch(call):
    for lib in (sg, torch):
        scaler, opt, _ = _scaler_and_sgd(lib, [[1.0]], init_scale=0.1)
        scaler.load_state_dict(scaler.state_dict())  # does not make the scale either
        assert scaler.get_scale() == 0.1  # init_scale as given, not yet rounded to float32
        args = () if call == "update" else (opt,)
        with pytest.raises(AssertionError, match=f"Attempted {call} but _scale is None"):
            getattr(scaler, call)(*args)
        scaler.scale(lib.tensor(1.0))
        assert scaler.get_scale() == np.float32(0.1)


def test_a_step_with_no_gradient_to_check_raises_as_torch():
    for lib in (sg, torch):
        scaler, opt, params = _scaler_and_sgd(lib, [[1.0]])
        params[0].grad = None
        scaler.scale(lib.tensor(1.0))
        with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
            scaler.step(opt)


def test_bfloat16_gradients_are_unscaled_in_float32_and_rounded_once_as_torch():
    grads = [[1.0, 3.0, 7.0, 1000.0, -5.0, 0.1]]
    unscaled = []
    for lib in (sg, torch):
        scaler, opt, params = _scaler_and_sgd(lib, grads, "bfloat16", init_scale=3.0)
        scaler.scale(lib.tensor(1.0))
        scaler.unscale_(opt)
        unscaled.append(params[0].grad.float().numpy())
    np.testing.assert_array_equal(*unscaled)


def test_scale_takes_any_iterable_and_refuses_other_outputs_as_torch():
    for lib in (sg, torch):
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        lazily = scaler.scale(x for x in [lib.tensor(1.0), lib.tensor(2.0)])
        assert [float(x) for x in lazily] == [4.0, 8.0]
        for bad in (2.0, None):
            with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable"):
                scaler.scale(bad)


def test_setters_change_the_next_update_and_a_bad_new_scale_raises_as_torch():
    states = []
    for lib in (sg, torch):
        scaler, opt, _ = _scaler_and_sgd(lib, [[1.0]], init_scale=4.0)
        scaler.set_growth_factor(3.0)
        scaler.set_backoff_factor(0.25)
        scaler.set_growth_interval(1)
        scaler.scale(lib.tensor(1.0))
        scaler.step(opt)
        scaler.update()
        states.append(scaler.state_dict())
        for bad in (lib.tensor([5.0, 6.0]), lib.tensor(5.0, requires_grad=True)):
            with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
                scaler.update(bad)
    assert states[0] == states[1] and states[0]["scale"] == 12.0


def test_a_disabled_scaler_takes_any_settings_as_torch():
    for lib in (sg, torch):
        scaler = lib.amp.GradScaler("cpu", growth_factor=0.5, backoff_factor=2.0, enabled=False)
        assert not scaler.is_enabled() and scaler.get_scale() == 1.0
