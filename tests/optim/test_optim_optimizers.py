"""Optimizers against torch.optim: 20-step trajectories, state, state dicts, parameter groups."""

import io

import numpy as np
import pytest
import torch

import scratchgrad as sg
import scratchgrad.optim as optim

RNG = np.random.default_rng(0)
W0 = RNG.normal(size=(3, 4))
B0 = RNG.normal(size=3)
C = RNG.normal(size=(3, 4))
V = RNG.normal(size=4)
TARGET = RNG.normal(size=3)


def gradients(w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of f(W, b) = sum(C sin W) + |W v + b - t|^2 / 2 + sum(b^4) / 10, written
    out by hand so that both libraries get exactly the same gradient from the same weights:
    a difference in the trajectories can then only come from the optimizers."""
    residual = w @ V + b - TARGET
    return C * np.cos(w) + np.outer(residual, V), residual + 0.4 * b**3


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.1, "nesterov": True}),
    ("SGD", {"lr": 0.002, "momentum": 0.5, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "betas": (0.9, 0.9), "amsgrad": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-3, "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adam", {"lr": 0.01, "maximize": True}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "betas": (0.5, 0.7), "weight_decay": 0.3, "amsgrad": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1, "alpha": 0.9}),
    ("RMSprop", {"lr": 0.002, "eps": 1e-2, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1, "eps": 1e-3}),
    ("Adagrad", {"lr": 0.01, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1}),
    ("Adadelta", {"lr": 0.5, "maximize": True}),
    ("Adamax", {"lr": 0.05}),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.01, "maximize": True}),
    ("NAdam", {"lr": 0.05}),
    ("NAdam", {"lr": 0.05, "momentum_decay": 0.05, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {"lr": 0.01, "betas": (0.5, 0.9), "maximize": True}),
    ("RAdam", {"lr": 0.05}),  # rho_t > 5 from step 6 on: both branches run
    ("RAdam", {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.01, "maximize": True}),
    ("ASGD", {"lr": 0.05}),
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.01, "t0": 0, "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.05, "weight_decay": 0.1, "d": 1.5}),
    ("Adafactor", {"eps": (1e-30, 1e-2), "beta2_decay": -0.5, "maximize": True}),
]
SCALAR_STATE = {"mu_product", "eta", "mu"}  # 0-d float32 tensors in both libraries


def make_pair(name, kwargs, dtype=np.float64, groups=False):
    """The same optimizer in both libraries over copies of W0 and B0 (two groups if asked:
    the bias with its own learning rate)."""
    ours = [sg.tensor(W0, dtype=dtype, requires_grad=True), sg.tensor(B0, dtype=dtype)]
    ours[1].requires_grad_()
    theirs = [torch.tensor(a, dtype=getattr(torch, np.dtype(dtype).name)) for a in (W0, B0)]
    for t in theirs:
        t.requires_grad_()

    def params(ps):
        return [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.03}] if groups else ps

    opt = getattr(optim, name)(params(ours), **kwargs)
    topt = getattr(torch.optim, name)(params(theirs), **kwargs)
    return ours, opt, theirs, topt


def take_step(ours, opt, theirs, topt):
    for ps, lib in ((ours, sg), (theirs, torch)):
        grads = gradients(*(p.detach().numpy().astype(np.float64) for p in ps))
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g, dtype=p.dtype)
    opt.step()
    topt.step()


def assert_close(ours, theirs, rtol=1e-12, atol=1e-13):
    values = np.asarray(ours.detach().numpy(), np.float64)
    assert np.isfinite(values).all()
    np.testing.assert_allclose(
        values,
        theirs.detach().double().numpy(),
        rtol=rtol,
        atol=atol,
    )


@pytest.mark.parametrize("name, kwargs", CASES)
def test_trajectory_matches_torch_float64(name, kwargs):
    ours, opt, theirs, topt = make_pair(name, kwargs)
    for _ in range(20):
        take_step(ours, opt, theirs, topt)
        for p, t in zip(ours, theirs):
            assert_close(p, t)
    moved = np.abs(ours[0].detach().numpy() - W0).max()
    assert moved > 1e-3  # the test would be empty if nothing moved
    # The state holds the same buffers, under the same names.
    for p, t in zip(ours, theirs):
        state, tstate = opt.state[p], topt.state[t]
        assert set(state) == set(tstate)
        for key, value in tstate.items():
            if key == "step":
                assert state[key] == int(value.item())
            elif key in SCALAR_STATE:
                assert state[key].dtype == sg.float32 and state[key].shape == ()
                assert state[key].item() == value.item()
            else:
                assert_close(state[key], value)
        if kwargs.get("amsgrad"):  # the running maximum must have mattered somewhere
            assert (state["max_exp_avg_sq"].numpy() > state["exp_avg_sq"].numpy()).any()


@pytest.mark.parametrize("name, kwargs", [case for case in CASES if case[0] != "SGD"][::3])
def test_trajectory_matches_torch_with_two_groups(name, kwargs):
    ours, opt, theirs, topt = make_pair(name, kwargs, groups=True)
    for _ in range(20):
        take_step(ours, opt, theirs, topt)
    for p, t in zip(ours, theirs):
        assert_close(p, t)


NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]
NAMES += ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Adafactor"]


@pytest.mark.parametrize("name", NAMES)
def test_float32_stays_float32_and_matches_loosely(name):
    kwargs = {"lr": 0.01, "momentum": 0.9} if name == "SGD" else {"lr": 0.01}
    ours, opt, theirs, topt = make_pair(name, kwargs, dtype=np.float32, groups=True)
    for _ in range(20):
        take_step(ours, opt, theirs, topt)
    for p, t in zip(ours, theirs):
        assert p.dtype == sg.float32
        assert all(v.dtype == sg.float32 for v in opt.state[p].values() if isinstance(v, sg.Tensor))
        assert_close(p, t, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_bfloat16_parameters_are_updated_in_their_dtype(name):
    kwargs = {"lr": 0.01, "momentum": 0.9} if name == "SGD" else {"lr": 0.01}
    w = sg.tensor(W0, dtype=sg.bfloat16, requires_grad=True)
    tw = torch.tensor(W0, dtype=torch.bfloat16, requires_grad=True)
    opt, topt = getattr(optim, name)([w], **kwargs), getattr(torch.optim, name)([tw], **kwargs)
    for _ in range(3):
        g = gradients(W0, B0)[0]
        w.grad, tw.grad = sg.tensor(g, dtype=sg.bfloat16), torch.tensor(g, dtype=torch.bfloat16)
        opt.step()
        topt.step()
    assert w.dtype == sg.bfloat16
    # bfloat16 has 8 bits of mantissa: agree to its rounding.
    np.testing.assert_allclose(
        w.detach().numpy().astype(float), tw.detach().float().numpy(), atol=2e-2
    )


def test_end_to_end_with_autograd_and_closure():
    """A tiny network trained through each library's own autograd and a closure."""
    x = RNG.normal(size=(16, 4))
    y = RNG.normal(size=(16, 3))
    ours = [sg.tensor(W0, requires_grad=True, dtype=sg.float64), sg.tensor(B0, dtype=sg.float64)]
    ours[1].requires_grad_()
    theirs = [torch.tensor(a, requires_grad=True) for a in (W0, B0)]
    opt = optim.Adam(ours, lr=0.05, amsgrad=True)
    topt = torch.optim.Adam(theirs, lr=0.05, amsgrad=True)

    def closure_for(lib, ps, o, xs, ys):
        def closure():
            o.zero_grad()
            loss = (((xs @ ps[0].T + ps[1]).tanh() - ys) ** 2).mean()
            loss.backward()
            return loss

        return closure

    closure = closure_for(sg, ours, opt, sg.tensor(x), sg.tensor(y))
    tclosure = closure_for(torch, theirs, topt, torch.tensor(x), torch.tensor(y))
    losses = []
    for _ in range(20):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        losses.append(loss.item())
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-12)
    assert losses[-1] < losses[0] / 2
    for p, t in zip(ours, theirs):
        assert_close(p, t, rtol=1e-10, atol=1e-12)


# ---- behaviour around the update -------------------------------------------------------------


@pytest.mark.parametrize("name, kwargs", [case for case in CASES if case[1].get("weight_decay")])
def test_step_leaves_the_gradient_alone(name, kwargs):
    ours, opt, theirs, topt = make_pair(name, {**kwargs, "maximize": True})
    take_step(ours, opt, theirs, topt)
    np.testing.assert_array_equal(ours[0].grad.numpy(), gradients(W0, B0)[0])


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Adafactor"])
def test_parameters_without_gradient_are_skipped(name):
    used, unused = sg.zeros(2, requires_grad=True), sg.ones(2, requires_grad=True)
    opt = (
        getattr(optim, name)([used, unused], lr=0.1, momentum=0.9)
        if name == "SGD"
        else (getattr(optim, name)([used, unused], lr=0.1))
    )
    tused, tunused = torch.zeros(2, requires_grad=True), torch.ones(2, requires_grad=True)
    topt = getattr(torch.optim, name)([tused, tunused], **opt.defaults)
    used.grad, tused.grad = sg.ones(2), torch.ones(2)
    opt.step()
    topt.step()
    np.testing.assert_array_equal(unused.detach().numpy(), [1.0, 1.0])
    assert unused._version == 0 and used._version == 1
    assert bool(opt.state[unused]) == bool(topt.state[tunused])  # only Adagrad starts state early


def test_version_counts_in_place_updates():
    w = sg.zeros(3, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    for expected in (1, 2, 3):
        w.grad = sg.ones(3)
        opt.step()
        assert w._version == expected


def test_zero_grad():
    w = sg.ones(3, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(3))
    opt.zero_grad()
    assert w.grad is None


def test_zero_grad_detaches_a_gradient_that_has_a_graph():
    w = sg.ones(3, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * w * w).sum().backward(create_graph=True)
    assert w.grad.requires_grad
    opt.zero_grad(set_to_none=False)
    assert not w.grad.requires_grad and w.grad.grad_fn is None
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(3))


def test_step_builds_no_graph():
    w = sg.ones(3, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w.is_leaf and w.grad_fn is None and w.requires_grad


# ---- construction and parameter groups -------------------------------------------------------


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: optim.SGD(p, lr=-1), "Invalid learning rate"),
        (lambda p: optim.SGD(p, momentum=-0.1), "Invalid momentum"),
        (lambda p: optim.SGD(p, weight_decay=-1), "Invalid weight_decay"),
        (lambda p: optim.SGD(p, nesterov=True), "Nesterov momentum requires"),
        (lambda p: optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
        (lambda p: optim.Adam(p, betas=(1.0, 0.9)), "beta parameter at index 0"),
        (lambda p: optim.Adam(p, betas=(0.9, -0.1)), "beta parameter at index 1"),
        (lambda p: optim.Adam(p, eps=-1), "Invalid epsilon"),
        (lambda p: optim.AdamW(p, lr=float("nan")), "Invalid learning rate"),
        (lambda p: optim.RMSprop(p, alpha=-1), "Invalid alpha"),
        (lambda p: optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay"),
        (lambda p: optim.Adagrad(p, initial_accumulator_value=-1), "initial_accumulator"),
        (lambda p: optim.SGD([]), "empty parameter list"),
        (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho"),
        (lambda p: optim.Adamax(p, betas=(0.9, 1.0)), "beta parameter at index 1"),
        (lambda p: optim.NAdam(p, momentum_decay=-1), "Invalid momentum_decay"),
        (lambda p: optim.RAdam(p, eps=-1), "Invalid epsilon"),
        (lambda p: optim.ASGD(p, weight_decay=-1), "Invalid weight_decay"),
        (lambda p: optim.LBFGS(p, lr=-1), "Invalid learning rate"),
        (lambda p: optim.LBFGS(p, line_search_fn="armijo"), "strong_wolfe"),
        (lambda p: optim.LBFGS([{"params": p}, {"params": [sg.zeros(1)]}]), "parameter groups"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make([sg.zeros(1, requires_grad=True)])


def test_defaults_match_torch():
    for name in [*NAMES, "LBFGS"]:
        ours = getattr(optim, name)([sg.zeros(1, requires_grad=True)]).defaults
        theirs = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)]).defaults
        for key, value in ours.items():
            assert theirs[key] == value, (name, key)


def test_parameter_groups():
    a, b, c = (sg.zeros(2, requires_grad=True) for _ in range(3))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": [c], "momentum": 0.0})
    groups = opt.param_groups
    assert [g["lr"] for g in groups] == [0.1, 0.5, 0.1]
    assert [g["momentum"] for g in groups] == [0.9, 0.9, 0.0]
    assert groups[1]["params"][0] is b  # a lone tensor becomes a list of one
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="non-leaf"):
        opt.add_param_group({"params": [a * 2]})
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {sg.zeros(1, requires_grad=True)}})
    with pytest.raises(TypeError, match="only optimize Tensors"):
        opt.add_param_group({"params": [np.zeros(2)]})
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(a, lr=0.1)
    with pytest.warns(UserWarning, match="duplicate"):
        optim.SGD([a, a], lr=0.1)


def test_repr():
    text = repr(optim.Adam([sg.zeros(1, requires_grad=True)], lr=0.5))
    assert text.startswith("Adam (") and "lr: 0.5" in text and "Parameter Group 0" in text


# ---- state dicts -------------------------------------------------------------------------------


@pytest.mark.parametrize("name, kwargs", CASES[1::2])
def test_state_dict_has_torchs_layout(name, kwargs):
    ours, opt, theirs, topt = make_pair(name, kwargs, groups=True)
    for _ in range(3):
        take_step(ours, opt, theirs, topt)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sd["state"].keys() == tsd["state"].keys()
    for index, tstate in tsd["state"].items():
        assert sd["state"][index].keys() == tstate.keys()
    for group, tgroup in zip(sd["param_groups"], tsd["param_groups"]):
        assert list(group.items()) == list(tgroup.items())  # the same keys in the same order


@pytest.mark.parametrize("name, kwargs", CASES[::2])
def test_load_state_dict_resumes_identically(name, kwargs):
    ours, opt, theirs, topt = make_pair(name, kwargs, groups=True)
    for _ in range(5):
        take_step(ours, opt, theirs, topt)
    # A fresh optimizer (with other hyper-parameters, which the state dict overrides) over
    # copies of the parameters, loaded from the first one's state dict.
    copies = [p.detach().clone().requires_grad_() for p in ours]
    fresh = getattr(optim, name)([{"params": [copies[0]]}, {"params": [copies[1]]}], lr=1.0)
    fresh.load_state_dict(opt.state_dict())
    assert [g["lr"] for g in fresh.param_groups] == [g["lr"] for g in opt.param_groups]
    for _ in range(5):
        for ps in (ours, copies):
            for p, g in zip(ps, gradients(*(q.detach().numpy() for q in ps))):
                p.grad = sg.tensor(g)
        opt.step()
        fresh.step()
    # NAdam's float32 mu_product is loaded as float64 (PyTorch casts the state to the
    # parameters' dtype), which moves its trajectory by 1e-11, in PyTorch too
    atol = 1e-10 if name == "NAdam" else 0
    for p, c in zip(ours, copies):
        np.testing.assert_allclose(p.detach().numpy(), c.detach().numpy(), rtol=0, atol=atol)


def test_load_state_dict_copies_buffers_into_the_parameters_dtype():
    w = sg.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = sg.ones(2)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["momentum_buffer"] = sd["state"][0]["momentum_buffer"].double()
    w32 = sg.ones(2, requires_grad=True)
    other = optim.SGD([w32], lr=0.1, momentum=0.9)
    other.load_state_dict(sd)
    buf = other.state[w32]["momentum_buffer"]
    assert buf.dtype == sg.float32
    buf.array[...] = 7
    assert opt.state[w]["momentum_buffer"].numpy()[0] == 1.0  # no aliasing


def test_load_state_dict_accepts_a_tensor_step():
    """PyTorch keeps ``step`` in a 0-d tensor; such a state dict still loads."""
    w = sg.ones(2, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    w.grad = sg.ones(2)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["step"] = sg.tensor(1.0)
    fresh = optim.Adam([sg.ones(2, requires_grad=True)], lr=0.1)
    fresh.load_state_dict(sd)
    assert next(iter(fresh.state.values()))["step"] == 1


def test_load_state_dict_rejects_a_different_layout():
    a, b = sg.zeros(2, requires_grad=True), sg.zeros(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)


def test_torch_loads_our_state_dict():
    """Our state dict, turned into torch tensors, is one torch.optim loads and continues from."""
    ours, opt, theirs, topt = make_pair("Adam", {"lr": 0.05, "amsgrad": True})
    for _ in range(5):
        take_step(ours, opt, theirs, topt)
    sd = opt.state_dict()
    converted = {
        "state": {
            i: {
                k: torch.tensor(float(v)) if k == "step" else torch.from_numpy(v.numpy().copy())
                for k, v in s.items()
            }
            for i, s in sd["state"].items()
        },
        "param_groups": sd["param_groups"],
    }
    fresh_params = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ours]
    fresh = torch.optim.Adam(fresh_params, lr=0.05, amsgrad=True)
    fresh.load_state_dict(converted)
    for _ in range(5):
        take_step(ours, opt, fresh_params, fresh)
    for p, t in zip(ours, fresh_params):
        assert_close(p, t)


# ---- LBFGS ------------------------------------------------------------------------------------


def loss_value(w: np.ndarray, b: np.ndarray) -> float:
    """f(W, b) of ``gradients``."""
    residual = w @ V + b - TARGET
    return float((C * np.sin(w)).sum() + residual @ residual / 2 + (b**4).sum() / 10)


def lbfgs_closure(lib, ps, opt):
    """A closure that sets the hand-written gradients and returns the loss, so both libraries
    see the same numbers from the same weights."""

    def closure():
        opt.zero_grad()
        arrays = [p.detach().numpy() for p in ps]
        for p, g in zip(ps, gradients(*arrays)):
            p.grad = lib.tensor(g)
        return lib.tensor(loss_value(*arrays))

    return closure


LBFGS_CASES = [
    {"max_iter": 3},
    {"lr": 0.5, "max_iter": 4, "history_size": 2},
    {"max_iter": 3, "line_search_fn": "strong_wolfe"},
    {"lr": 0.8, "max_iter": 5, "max_eval": 6, "history_size": 3, "line_search_fn": "strong_wolfe"},
]


@pytest.mark.parametrize("kwargs", LBFGS_CASES)
def test_lbfgs_trajectory_matches_torch_float64(kwargs):
    ours, opt, theirs, topt = make_pair("LBFGS", kwargs)
    closure, tclosure = lbfgs_closure(sg, ours, opt), lbfgs_closure(torch, theirs, topt)
    for _ in range(20):
        loss, tloss = opt.step(closure), topt.step(tclosure)
        assert loss.item() == pytest.approx(tloss.item(), rel=1e-10)
        for p, t in zip(ours, theirs):
            assert_close(p, t, rtol=1e-9, atol=1e-10)
    state, tstate = opt.state[ours[0]], topt.state[theirs[0]]
    assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert len(state["old_dirs"]) == len(tstate["old_dirs"]) <= kwargs.get("history_size", 100)
    assert_close(state["d"], tstate["d"], rtol=1e-8, atol=1e-10)
    assert loss_value(*(p.detach().numpy() for p in ours)) < loss_value(W0, B0) - 1


@pytest.mark.parametrize("seed", [1, 2])
def test_lbfgs_fits_a_network_through_autograd_as_torch_does(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(16, 4)), rng.normal(size=(16, 3))

    def run(lib):
        w, b = (lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (W0, B0))
        opt = lib.optim.LBFGS([w, b], max_iter=5, history_size=5, line_search_fn="strong_wolfe")
        xs, ys = lib.tensor(x), lib.tensor(y)

        def closure():
            opt.zero_grad()
            loss = (((xs @ w.T + b).tanh() - ys) ** 2).mean()
            loss.backward()
            return loss

        return [opt.step(closure).item() for _ in range(5)]

    # Rounding differences (NumPy's and PyTorch's sums) grow on this network, from 1e-16 to
    # 1e-13 in ten iterations; 25 iterations keep them below 1e-8.
    losses, tlosses = run(sg), run(torch)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-8)
    assert losses[-1] < losses[0] / 2


def test_lbfgs_stops_at_once_when_the_gradient_is_zero():
    w = sg.zeros(2, requires_grad=True)
    opt = optim.LBFGS([w])
    calls = []

    def closure():
        calls.append(1)
        w.grad = sg.zeros(2)
        return sg.tensor(0.0)

    opt.step(closure)
    assert len(calls) == 1 and w._version == 0
    with pytest.raises(RuntimeError, match="requires a closure"):
        opt.step(None)


def test_lbfgs_refuses_parameters_without_entries_as_torch():
    """PyTorch's LBFGS raises a RuntimeError (the max of an empty gradient); ours raised
    NumPy's ValueError, after calling the closure."""

    def step(lib):
        w = lib.zeros(0, requires_grad=True)
        lib.optim.LBFGS([w]).step(lambda: (w * w).sum())

    with pytest.raises(RuntimeError):
        step(torch)
    with pytest.raises(RuntimeError, match="LBFGS.step: the parameters have no entries"):
        step(sg)


def test_lbfgs_resumes_identically_from_a_saved_state_dict():
    kwargs = {"max_iter": 3, "history_size": 4, "line_search_fn": "strong_wolfe"}
    ours, opt, _, _ = make_pair("LBFGS", kwargs)
    for _ in range(3):
        opt.step(lbfgs_closure(sg, ours, opt))
    buffer = io.BytesIO()
    sg.save(opt.state_dict(), buffer)
    copies = [p.detach().clone().requires_grad_() for p in ours]
    fresh = optim.LBFGS(copies, **kwargs)
    fresh.load_state_dict(sg.load(io.BytesIO(buffer.getvalue())))
    for _ in range(3):
        opt.step(lbfgs_closure(sg, ours, opt))
        fresh.step(lbfgs_closure(sg, copies, fresh))
    for p, c in zip(ours, copies):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy())


def test_doc_examples_run():
    import doctest

    from scratchgrad.optim import optimizer

    result = doctest.testmod(optimizer)
    assert result.attempted > 0 and result.failed == 0
