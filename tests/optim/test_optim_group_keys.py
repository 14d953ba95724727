"""Every optimizer class both libraries have, against PyTorch's: the keys of ``defaults`` and of
each parameter group (implementation switches ``foreach``, ``fused``, ``capturable``,
``differentiable`` included), in PyTorch's order, with its values; the switches a script may
pass; and state dicts that go from one library to the other and continue as the original."""

import inspect

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _shared_names():
    """The optimizer classes of ``torch.optim`` that ``scratchgrad.optim`` has too (walked, so
    a class added to either is tested without editing a list)."""
    names = [
        name
        for name, cls in vars(torch.optim).items()
        if isinstance(cls, type)
        and issubclass(cls, torch.optim.Optimizer)
        and cls is not torch.optim.Optimizer
        and hasattr(sg.optim, name)
    ]
    return sorted(set(names))


NAMES = _shared_names()
# (SparseAdam takes sparse gradients only: its state dicts are in test_sparse_gradients.py)
DENSE_NAMES = [name for name in NAMES if name != "SparseAdam"]
SWITCHES = ("foreach", "fused", "capturable", "differentiable")
W0 = np.random.default_rng(0).normal(size=(2, 3))


def test_the_walk_finds_the_optimizers():
    assert {"SGD", "Adam", "AdamW", "LBFGS", "Adafactor", "RAdam"} <= set(NAMES)
    assert len(NAMES) >= 13


def _pair(name, groups=None, **kwargs):
    """The optimizer ``name`` in both libraries over copies of W0 (and ``groups``' extra
    options for a second parameter, added by ``add_param_group``)."""
    ours = sg.tensor(W0, requires_grad=True)
    theirs = torch.tensor(W0, requires_grad=True)
    opt = getattr(sg.optim, name)([ours], **kwargs)
    topt = getattr(torch.optim, name)([theirs], **kwargs)
    if groups is not None:
        opt.add_param_group({"params": [sg.zeros(2, requires_grad=True)], **groups})
        topt.add_param_group({"params": [torch.zeros(2, requires_grad=True)], **groups})
    return opt, topt


def _settings(group):
    return [(key, value) for key, value in group.items() if key != "params"]


@pytest.mark.parametrize("name", NAMES)
def test_defaults_and_group_keys_are_torchs_in_its_order(name):
    opt, topt = _pair(name, groups={"lr": 0.5})
    assert list(opt.defaults.items()) == list(topt.defaults.items())
    assert len(opt.param_groups) == 2
    for group, tgroup in zip(opt.param_groups, topt.param_groups):
        assert list(group) == list(tgroup)
        assert _settings(group) == _settings(tgroup)


def _accepted_switch_values(name):
    """Each switch PyTorch's ``name`` takes, with each value both libraries accept on CPU."""
    taken = inspect.signature(getattr(torch.optim, name)).parameters
    values = {"foreach": [True, False, None], "fused": [True, False, None]}
    values.update(capturable=[False], differentiable=[False])
    return [(switch, value) for switch in SWITCHES if switch in taken for value in values[switch]]


@pytest.mark.parametrize("name", NAMES)
def test_switches_given_are_kept_in_defaults_and_groups_as_torchs(name):
    for switch, value in _accepted_switch_values(name):
        opt, topt = _pair(name, groups={}, lr=0.01, **{switch: value})
        assert opt.defaults[switch] is value
        assert list(opt.defaults.items()) == list(topt.defaults.items())
        assert [_settings(g) for g in opt.param_groups] == [_settings(g) for g in topt.param_groups]


def _with_switch(switch):
    return [
        name for name in NAMES if switch in inspect.signature(getattr(sg.optim, name)).parameters
    ]


@pytest.mark.parametrize("name", _with_switch("capturable"))
def test_capturable_is_refused_as_torch_refuses_it_on_cpu(name):
    """PyTorch refuses capturable=True for CPU parameters at the first step; ours refuses it at
    once (and in a group added later), before any state changes."""
    w = torch.tensor(W0, requires_grad=True)
    topt = getattr(torch.optim, name)([w], capturable=True)
    w.grad = torch.ones_like(w)
    with pytest.raises(AssertionError, match="capturable=True"):
        topt.step()
    with pytest.raises(NotImplementedError, match=f"{name}: capturable=True"):
        getattr(sg.optim, name)([sg.tensor(W0, requires_grad=True)], capturable=True)
    opt = getattr(sg.optim, name)([sg.tensor(W0, requires_grad=True)])
    with pytest.raises(NotImplementedError, match="capturable=True"):
        opt.add_param_group({"params": [sg.zeros(2, requires_grad=True)], "capturable": True})
    assert len(opt.param_groups) == 1


@pytest.mark.parametrize("name", _with_switch("differentiable"))
def test_differentiable_is_refused_in_the_constructor_and_in_a_group(name):
    with pytest.raises(NotImplementedError, match=f"{name}: differentiable=True"):
        getattr(sg.optim, name)([sg.tensor(W0, requires_grad=True)], differentiable=True)
    opt = getattr(sg.optim, name)([sg.tensor(W0, requires_grad=True)])
    group = {"params": [sg.zeros(2, requires_grad=True)], "differentiable": True}
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        opt.add_param_group(group)


def _gradient(array):
    """A gradient of the weights alone, the same numbers in both libraries."""
    return np.cos(3 * array) + array**3 / 5


def _steps(optimizers, steps=4):
    """Set each (parameter, optimizer) pair's gradient from its parameters, then step it."""
    for _ in range(steps):
        for params, opt in optimizers:
            for p in params:
                grad = _gradient(p.detach().numpy())
                p.grad = sg.tensor(grad) if isinstance(p, sg.Tensor) else torch.tensor(grad)
            if isinstance(opt, (sg.optim.LBFGS, torch.optim.LBFGS)):
                opt.step(lambda params=params: sum((q**2).sum() for q in params))
            else:
                opt.step()


def _params(m):
    return [m.tensor(W0, requires_grad=True), m.tensor(W0[0] / 2, requires_grad=True)]


def _make(m, name, params):
    """Two groups (the second with its own lr), PyTorch's one group for LBFGS."""
    if name == "LBFGS":
        return m.optim.LBFGS(params, lr=0.1, max_iter=1)
    return getattr(m.optim, name)([{"params": params[:1]}, {"params": params[1:], "lr": 0.003}])


def _convert(value, to, key=None):
    """A state dict's value with its tensors turned into library ``to``'s (``step``, an int in
    ours, a 0-d float32 tensor in PyTorch's)."""
    if isinstance(value, dict):
        return {k: _convert(v, to, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_convert(v, to) for v in value]
    if isinstance(value, torch.Tensor):
        return sg.tensor(value.detach().numpy().copy())
    if isinstance(value, sg.Tensor):
        return torch.from_numpy(value.detach().numpy().copy())
    if key == "step" and to is torch:
        return torch.tensor(float(value))
    return value


def _assert_same(ours, theirs):
    # (rtol 1e-10: LBFGS's steps come from dot products that NumPy's and PyTorch's BLAS sum in
    # their own orders; on an AMD EPYC its parameters, grown to ~400, were 1.4e-11 apart)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("name", DENSE_NAMES)
def test_torchs_state_dict_loads_and_continues_as_torch(name):
    theirs = _params(torch)
    topt = _make(torch, name, theirs)
    _steps([(theirs, topt)])
    tsd = topt.state_dict()
    ours = [sg.tensor(t.detach().numpy().copy(), requires_grad=True) for t in theirs]
    opt = _make(sg, name, ours)
    opt.load_state_dict(_convert(tsd, sg))
    # torch loading the same dict: its scalar state (NAdam's mu_product) becomes float64 too
    topt.load_state_dict(tsd)
    assert [_settings(g) for g in opt.param_groups] == [_settings(g) for g in topt.param_groups]
    _steps([(ours, opt), (theirs, topt)])
    _assert_same(ours, theirs)


@pytest.mark.parametrize("name", DENSE_NAMES)
def test_our_state_dict_loads_into_torch_as_its_own(name):
    """Our state dict, its tensors turned into PyTorch's, loads into ``torch.optim`` and the
    steps after equal those after loading PyTorch's own state dict from the same steps."""
    ours, theirs = _params(sg), _params(torch)
    opt, topt = _make(sg, name, ours), _make(torch, name, theirs)
    _steps([(ours, opt), (theirs, topt)])
    sd = opt.state_dict()
    assert [list(g) for g in sd["param_groups"]] == [
        list(g) for g in topt.state_dict()["param_groups"]
    ]
    from_ours = [t.detach().clone().requires_grad_() for t in theirs]
    from_theirs = [t.detach().clone().requires_grad_() for t in theirs]
    loaded, reference = _make(torch, name, from_ours), _make(torch, name, from_theirs)
    loaded.load_state_dict(_convert(sd, torch))
    reference.load_state_dict(topt.state_dict())
    assert loaded.param_groups == [
        {**g, "params": loaded.param_groups[i]["params"]} for i, g in enumerate(opt.param_groups)
    ]
    _steps([(from_ours, loaded), (from_theirs, reference)])
    _assert_same(from_ours, from_theirs)


def test_a_checkpoint_without_the_switches_takes_the_defaults():
    """A state dict saved before the switches were group keys loads with their defaults, as
    PyTorch's optimizers fill the keys an old checkpoint lacks."""
    w = sg.tensor(W0, requires_grad=True)
    opt = sg.optim.Adam([w], lr=0.1)
    sd = opt.state_dict()
    for key in SWITCHES:
        del sd["param_groups"][0][key]
    opt.load_state_dict(sd)
    assert opt.param_groups[0].keys() == torch.optim.Adam([torch.zeros(1)]).param_groups[0].keys()


def test_a_state_dict_asking_for_capturable_is_refused_before_anything_changes():
    w = sg.tensor(W0, requires_grad=True)
    opt = sg.optim.Adam([w], lr=0.1)
    sd = opt.state_dict()
    sd["param_groups"][0]["capturable"] = True
    sd["param_groups"][0]["lr"] = 0.5
    with pytest.raises(NotImplementedError, match="Adam: capturable=True"):
        opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["capturable"] is False


@pytest.mark.parametrize("name", _with_switch("fused"))
def test_fused_steps_as_torchs_fused_step(name):
    """PyTorch's CPU runs fused=True (one kernel for the whole update); ours is the same
    update, so the trajectories agree to rounding."""
    ours, theirs = _params(sg), _params(torch)
    opt = getattr(sg.optim, name)(ours, lr=0.05, fused=True)
    topt = getattr(torch.optim, name)(theirs, lr=0.05, fused=True)
    _steps([(ours, opt), (theirs, topt)], steps=10)
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
