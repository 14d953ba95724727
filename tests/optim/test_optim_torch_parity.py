"""Differences from torch.optim found by a differential sweep, each pinned against PyTorch:
state loaded from a state dict in the parameters' dtype, ASGD's step size rounded as PyTorch's,
float32 L-BFGS computed in float32, Adagrad's accumulators started at the constructor's value,
a tensor learning rate kept a tensor by the schedulers (and refused as PyTorch refuses it),
parameters given with their names (``named_parameters()``), and betas given as tensors."""

import copy

import numpy as np
import pytest
import torch
from oracle import assert_raises_as_torch

import scratchgrad as sg

RNG = np.random.default_rng(3)
SHAPES = [(3, 4), (5,), ()]
STARTS = [RNG.normal(size=shape) for shape in SHAPES]
GRADS = [[RNG.normal(size=shape) for shape in SHAPES] for _ in range(10)]


def params(lib, dtype):
    return [lib.tensor(a.astype(dtype), requires_grad=True) for a in STARTS]


def set_grads(lib, ps, grads):
    for p, g in zip(ps, grads):
        p.grad = lib.tensor(g.astype(p.detach().numpy().dtype))


def to_ours(state_dict):
    """torch's state dict with its tensors turned into ours."""
    if isinstance(state_dict, torch.Tensor):
        return sg.tensor(state_dict.numpy().copy())
    if isinstance(state_dict, dict):
        return {k: to_ours(v) for k, v in state_dict.items()}
    if isinstance(state_dict, list):
        return [to_ours(v) for v in state_dict]
    return state_dict


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("NAdam", {"lr": 0.05}),
        ("ASGD", {"lr": 0.05}),
        ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 3}),
    ],
)
def test_loaded_scalar_state_takes_the_parameters_dtype(name, kwargs):
    """PyTorch's load_state_dict casts every state tensor but ``step`` to a floating parameter's
    dtype: NAdam's ``mu_product`` and ASGD's ``eta`` and ``mu`` (float32 until then) continue
    in float64 for float64 parameters, which moves the trajectory."""
    ours, theirs = params(sg, np.float64), params(torch, np.float64)
    opt, topt = (
        getattr(sg.optim, name)(ours, **kwargs),
        getattr(torch.optim, name)(theirs, **kwargs),
    )
    for grads in GRADS[:4]:
        set_grads(sg, ours, grads)
        set_grads(torch, theirs, grads)
        opt.step()
        topt.step()
    saved = copy.deepcopy(topt.state_dict())
    topt.load_state_dict(copy.deepcopy(saved))
    opt.load_state_dict(to_ours(saved))
    for grads in GRADS[4:]:
        set_grads(sg, ours, grads)
        set_grads(torch, theirs, grads)
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=0)
        state, tstate = opt.state[p], topt.state[t]
        for key, value in tstate.items():
            if key != "step":
                assert state[key].numpy().dtype == value.numpy().dtype == np.float64, key
                np.testing.assert_allclose(state[key].numpy(), value.numpy(), rtol=1e-12, atol=0)


def lbfgs_problem(arrays):
    """A smooth, well-conditioned loss and its gradient, written out in NumPy so that both
    libraries see the same numbers from the same weights (float64, then rounded)."""
    x = np.concatenate([a.ravel() for a in arrays]).astype(np.float64)
    n = x.size
    a = np.linspace(0.5, 3.0, n) * np.eye(n) + 0.1
    b = np.linspace(-1, 1, n)
    loss = 0.5 * x @ a @ x - b @ x + np.cos(x).sum()
    grad = a @ x - b - np.sin(x)
    return loss, np.split(grad, np.cumsum([v.size for v in arrays])[:-1])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"line_search_fn": "strong_wolfe"},
        {"line_search_fn": "strong_wolfe", "max_iter": 5},
        {"line_search_fn": "strong_wolfe", "max_iter": 10, "history_size": 5},
    ],
)
def test_lbfgs_float32_computes_in_float32_as_torch(kwargs):
    """PyTorch computes L-BFGS's curvature pairs, step lengths and line search in the
    parameters' dtype; done in float64 for float32 parameters, the line search ends elsewhere
    (5e-3 apart after a step). In float32 both drift by rounding (NumPy has no fused
    multiply-add), so fixed steps of a small lr, which amplify it, are not compared."""
    runs = []
    for lib in (sg, torch):
        ps = params(lib, np.float32)
        opt = lib.optim.LBFGS(ps, **kwargs)

        def closure(ps=ps, lib=lib, opt=opt):
            opt.zero_grad()
            loss, grads = lbfgs_problem([p.detach().numpy() for p in ps])
            for p, g in zip(ps, grads):
                p.grad = lib.tensor(g.reshape(p.shape).astype(np.float32))
            return lib.tensor(np.float32(loss))

        runs.append([])
        for _ in range(4):
            opt.step(closure)
            runs[-1].append(np.concatenate([p.detach().numpy().ravel() for p in ps]))
    for ours, theirs in zip(*runs):
        assert ours.dtype == theirs.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_adagrad_accumulators_start_at_the_constructors_value():
    """PyTorch's Adagrad starts every accumulator at the constructor's
    ``initial_accumulator_value`` (a group's own value is not read), and a group added later
    gets its state at its first step."""
    runs = []
    for lib in (sg, torch):
        a, b, c = (lib.zeros(2, requires_grad=True) for _ in range(3))
        opt = lib.optim.Adagrad(
            [{"params": [a]}, {"params": [b], "initial_accumulator_value": 2.0}],
            lr=0.1,
            initial_accumulator_value=0.25,
        )
        opt.add_param_group({"params": [c], "initial_accumulator_value": 1.0})
        started = [bool(opt.state[p]) for p in (a, b, c)]
        for p in (a, b, c):
            p.grad = lib.ones(2)
        opt.step()
        runs.append((started, [p.detach().numpy().copy() for p in (a, b, c)]))
    (started, ours), (tstarted, theirs) = runs
    assert started == tstarted == [True, True, False]
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p, t, rtol=1e-7)


SCHEDULERS = {
    "StepLR": lambda m, o: m.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    "ReduceLROnPlateau": lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(
        o, patience=0, factor=0.3
    ),
    "CyclicLR": lambda m, o: m.optim.lr_scheduler.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=3
    ),
    "OneCycleLR": lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=12),
}


@pytest.mark.parametrize("name", SCHEDULERS)
def test_a_tensor_learning_rate_stays_a_tensor(name):
    """As PyTorch's, a scheduler fills a tensor ``lr`` in place (so it keeps its float32
    rounding, and whoever holds it sees the change) and get_last_lr() returns copies."""
    runs = []
    for m in (sg, torch):
        lr = m.tensor(0.1)
        opt = m.optim.SGD([m.zeros(2, requires_grad=True)], lr=lr, momentum=0.9)
        scheduler = SCHEDULERS[name](m, opt)
        lrs, last = [], []
        for _ in range(12):
            opt.step()
            if name == "ReduceLROnPlateau":
                scheduler.step(1.0)  # never better: the rate falls at every step
            else:
                scheduler.step()
            assert opt.param_groups[0]["lr"] is lr
            (value,) = scheduler.get_last_lr()
            assert isinstance(value, m.Tensor) and value is not lr
            lrs.append(lr.item())
            last.append(value.item())
        runs.append((lrs, last))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("name", ["SGD", "Adam", "LBFGS"])
def test_named_parameters_are_taken_with_their_names(name):
    """PyTorch takes ``model.named_parameters()``: the names go to the group's
    ``param_names`` (right after ``params``) and into the state dict, which loads back."""
    groups = []
    for m in (sg, torch):
        m.manual_seed(0)
        model = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.Linear(3, 1))
        opt = getattr(m.optim, name)(model.named_parameters(), lr=0.1)
        assert opt.param_groups[0]["params"] == list(model.parameters())
        saved = opt.state_dict()["param_groups"]
        saved[0]["param_names"] = ["a", "b", "c", "d"]  # the loaded names win
        opt.load_state_dict({"state": {}, "param_groups": saved})
        groups.append([{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups])
        groups.append(list(opt.param_groups[0]))
    assert groups[0] == groups[2] and groups[1] == groups[3]
    assert groups[0][0]["param_names"] == ["a", "b", "c", "d"]


def test_named_and_unnamed_parameters_do_not_mix():
    errors = []
    for m in (sg, torch):
        a, b = m.zeros(1, requires_grad=True), m.zeros(1, requires_grad=True)
        with pytest.raises(ValueError) as missing:
            m.optim.SGD([("a", a), b], lr=0.1)
        opt = m.optim.SGD([("a", a)], lr=0.1)
        with pytest.raises(ValueError) as unnamed:
            opt.add_param_group({"params": [b]})
        errors.append((str(missing.value), str(unnamed.value)))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("name", ["Adam", "AdamW", "NAdam", "RAdam", "Adamax"])
def test_betas_given_as_tensors(name):
    """PyTorch takes ``betas`` as 0-d tensors. (It then computes the bias corrections in
    float32 tensors, so float64 parameters differ from ours by 1e-9; float32 ones agree.)"""
    runs = []
    for m in (sg, torch):
        ps = params(m, np.float32)
        opt = getattr(m.optim, name)(ps, lr=0.05, betas=(m.tensor(0.8), m.tensor(0.95)))
        for grads in GRADS:
            set_grads(m, ps, grads)
            opt.step()
        runs.append([p.detach().numpy() for p in ps])
    for ours, theirs in zip(*runs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "name",
    ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Adagrad", "Adadelta", "RMSprop"]
    + ["Rprop", "ASGD", "LBFGS"],
)
def test_a_tensor_learning_rate_of_several_entries_is_refused_as_torch(name):
    """PyTorch's ValueError; ours raised a RuntimeError (the truth value of two entries)."""
    assert_raises_as_torch(
        lambda m: getattr(m.optim, name)(params(m, np.float64), lr=m.tensor([0.1, 0.2])),
        ValueError,
        "Tensor lr must be 1-element",
    )


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_refuses_a_tensor_learning_rate_with_foreach_as_torch(name):
    """PyTorch's Adam and AdamW refuse ``lr`` as a tensor with ``foreach=True`` (its foreach
    path cannot take one); ours took it."""
    assert_raises_as_torch(
        lambda m: getattr(m.optim, name)(params(m, np.float64), lr=m.tensor(0.1), foreach=True),
        ValueError,
        "lr as a Tensor is not supported for capturable=False and foreach=True",
    )


def test_nadam_divides_each_term_by_the_denominator_as_torch():
    """PyTorch's NAdam adds its gradient and momentum terms by two ``addcdiv_``; ours divided
    their sum once, so with ``eps=0`` and a second moment of 0 (a gradient of 1e-200 squares
    to 0) a zero gradient stepped to -inf where PyTorch's 0 / 0 gives NaN."""
    runs = []
    for m in (sg, torch):
        w = m.zeros(2, dtype=m.float64, requires_grad=True)
        opt = m.optim.NAdam([w], eps=0.0)
        for grad in ([1e-200, 1.0], [0.0, 1.0]):
            w.grad = m.tensor(grad, dtype=m.float64)
            opt.step()
        runs.append(w.detach().numpy())
    assert np.isnan(runs[1][0])
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-15)
