"""Adafactor against torch.optim.Adafactor on parameters of every rank it treats apart: 0-d and
1-d (a full variance), 2-d and 3-d (row and column factors over the last two dimensions).

The shared optimizer table (test_optim_optimizers.py) runs it on a matrix and a vector too;
here are the ranks, the options that only change something on small gradients (eps1) or
growing ones (the clipping threshold d), and its own state dict and errors.
"""

import io

import numpy as np
import pytest
import torch

import scratchgrad as sg

RNG = np.random.default_rng(0)
SHAPES = [(), (5,), (4, 3), (2, 4, 3)]
INITIAL = [RNG.normal(size=shape) for shape in SHAPES]


def gradients(arrays, step, dtype):
    """Gradients written out from the parameters and the step, the same numbers for both
    libraries: growing with the step (so that the running variances lag behind and updates
    are clipped), and for two parameters far smaller, where eps1 decides: the vector's squares
    below eps1 squared (its variance estimate is raised to that), the matrix's mean row
    variance below eps1 (the divisor of its estimate is raised to eps1, the estimate is not)."""
    eps = np.finfo(dtype).eps
    scales = [1.0, eps / 100, eps**0.6, 1.0]
    waves = [np.cos(3 * a) + 0.3 * np.sin(5 * a + 1) for a in arrays]
    return [wave * (1 + 0.3 * step) * scale for wave, scale in zip(waves, scales)]


def run(lib, kwargs, dtype, steps=25, params=None):
    """``steps`` steps of Adafactor in ``lib`` from ``INITIAL`` (or from ``params`` and its
    optimizer); the parameters and the optimizer."""
    if params is None:
        torch_dtype = getattr(torch, np.dtype(dtype).name)
        params = [
            lib.tensor(a, dtype=torch_dtype if lib is torch else dtype, requires_grad=True)
            for a in INITIAL
        ]
        opt = lib.optim.Adafactor(params, **kwargs)
    else:
        params, opt = params
    for step in range(steps):
        arrays = [p.detach().numpy().astype(np.float64) for p in params]
        for p, g in zip(params, gradients(arrays, step, dtype)):
            p.grad = lib.tensor(g, dtype=p.dtype)
        opt.step()
    return params, opt


def assert_close(ours, theirs, rtol, atol=0.0):
    values = np.asarray(ours.detach().numpy(), np.float64)
    assert values.shape == tuple(theirs.shape) and np.isfinite(values).all()
    np.testing.assert_allclose(values, theirs.detach().double().numpy(), rtol=rtol, atol=atol)


CASES = [
    {},
    {"lr": 0.05, "weight_decay": 0.1},
    {"maximize": True},
    {"eps": (1e-30, 1e-3)},
    {"eps": (None, 0.5), "d": 1.5},
    {"lr": 0.1, "beta2_decay": -0.5, "d": 3.0, "weight_decay": 0.01},
]


@pytest.mark.parametrize(
    "dtype, rtol, atol", [(np.float64, 1e-10, 1e-13), (np.float32, 2e-5, 1e-6)], ids=str
)
@pytest.mark.parametrize("kwargs", CASES, ids=str)
def test_trajectory_and_state_dict_match_torch(kwargs, dtype, rtol, atol):
    (ours, opt), (theirs, topt) = run(sg, kwargs, dtype), run(torch, kwargs, dtype)
    for p, t, a in zip(ours, theirs, INITIAL):
        assert p.dtype == getattr(sg, np.dtype(dtype).name)
        assert_close(p, t, rtol, atol)
        assert np.abs(p.detach().numpy() - a).max() > 1e-6  # every parameter moved
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"][0]["eps"] == tsd["param_groups"][0]["eps"]
    assert sd["state"].keys() == tsd["state"].keys() == {0, 1, 2, 3}
    for index, tstate in tsd["state"].items():
        state = sd["state"][index]
        assert state.keys() == tstate.keys()
        assert state["step"] == int(tstate["step"].item()) == 25
        for key in state.keys() - {"step"}:
            assert state[key].dtype == ours[index].dtype
            assert_close(state[key], tstate[key], rtol, atol=1e-300)
    assert {key for s in sd["state"].values() for key in s} == {
        "step",
        "variance",
        "row_var",
        "col_var",
    }


def test_the_cases_exercise_clipping_and_eps1():
    """The trajectories above would pass with the clipping or eps1 left out if neither changed
    anything on these gradients: each does."""

    def final(**kwargs):
        return [p.detach().numpy() for p in run(sg, kwargs, np.float64)[0]]

    def apart(others):
        return [np.abs(a - b).max() > 1e-3 for a, b in zip(final(), others)]

    assert apart(final(d=1e9)) == [True, False, True, True]  # (the vector's steps are tiny)
    assert apart(final(eps=(0.0, 1e-3))) == [False, True, True, False]


def test_save_and_load_resume_identically():
    kwargs = {"lr": 0.05, "weight_decay": 0.1, "d": 1.5}
    ours, opt = run(sg, kwargs, np.float64, steps=5)
    buffer = io.BytesIO()
    sg.save(opt.state_dict(), buffer)
    copies = [p.detach().clone().requires_grad_() for p in ours]
    fresh = sg.optim.Adafactor(copies, lr=1.0)  # the loaded groups replace these settings
    fresh.load_state_dict(sg.load(io.BytesIO(buffer.getvalue())))
    assert fresh.param_groups[0]["lr"] == 0.05 and fresh.param_groups[0]["d"] == 1.5
    run(sg, kwargs, np.float64, steps=5, params=(ours, opt))
    run(sg, kwargs, np.float64, steps=5, params=(copies, fresh))
    for p, c in zip(ours, copies):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy())
    assert fresh.state[copies[3]]["step"] == opt.state[ours[3]]["step"] == 10


def test_loads_torchs_state_dict_and_continues_as_torch():
    """PyTorch's state dict (its ``step`` a float tensor), converted tensor by tensor, loads
    and the next steps equal PyTorch's."""
    theirs, topt = run(torch, {}, np.float64, steps=5)
    tsd = topt.state_dict()
    converted = {
        "state": {
            i: {key: sg.tensor(value.numpy()) for key, value in s.items()}
            for i, s in tsd["state"].items()
        },
        "param_groups": tsd["param_groups"],
    }
    ours = [sg.tensor(t.detach().numpy(), requires_grad=True) for t in theirs]
    opt = sg.optim.Adafactor(ours)
    opt.load_state_dict(converted)
    run(sg, {}, np.float64, steps=5, params=(ours, opt))
    run(torch, {}, np.float64, steps=5, params=(theirs, topt))
    for p, t in zip(ours, theirs):
        assert_close(p, t, rtol=1e-10, atol=1e-13)


def test_a_parameter_without_gradient_is_skipped():
    used, unused = sg.ones(4, 3, requires_grad=True), sg.ones(4, 3, requires_grad=True)
    tused = torch.ones(4, 3, requires_grad=True)
    opt = sg.optim.Adafactor([used, unused], lr=0.1, weight_decay=0.5)
    topt = torch.optim.Adafactor([tused, torch.ones(4, 3, requires_grad=True)], **opt.defaults)
    used.grad, tused.grad = sg.ones(4, 3), torch.ones(4, 3)
    opt.step()
    topt.step()
    np.testing.assert_array_equal(unused.detach().numpy(), np.ones((4, 3)))  # not even decayed
    assert unused._version == 0 and unused not in opt.state
    assert_close(used, tused, rtol=1e-6)


def test_foreach_is_accepted_and_changes_nothing():
    plain = run(sg, {}, np.float64, steps=3)[0]
    for foreach in (True, False, None):
        for p, q in zip(run(sg, {"foreach": foreach}, np.float64, steps=3)[0], plain):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    with pytest.raises(TypeError, match=r"Adafactor.__init__\(\) got an unexpected keyword"):
        sg.optim.Adafactor([sg.zeros(1, requires_grad=True)], fused=True)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": -1e-3},
        {"lr": float("nan")},
        {"beta2_decay": 0.5},
        {"eps": (-1e-30, 1e-3)},
        {"eps": (None, -1.0)},
        {"d": 0.5},
        {"weight_decay": -0.1},
    ],
    ids=str,
)
def test_invalid_arguments_raise_torchs_errors(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.Adafactor([torch.zeros(1, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        sg.optim.Adafactor([sg.zeros(1, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_doc_example_runs():
    import doctest

    from scratchgrad.optim import adafactor

    result = doctest.testmod(adafactor)
    assert result.attempted > 0 and result.failed == 0
