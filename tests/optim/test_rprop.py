"""Rprop against torch.optim.Rprop: trajectories equal bit for bit in float32 and float64 (the
same operations on the same dtypes), its state, state dicts, errors, and a jitted step."""

import io

import numpy as np
import pytest
import torch
from test_optim_optimizers import make_pair, take_step

import scratchgrad as sg
import scratchgrad.optim as optim
from scratchgrad import nn

CASES = [
    {},
    {"lr": 0.05},
    {"lr": 0.1, "etas": (0.3, 1.5), "step_sizes": (0.01, 0.15)},  # both bounds reached
    {"lr": 0.02, "maximize": True},
]


def assert_same(ours, theirs):
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("groups", [False, True])
def test_trajectory_and_state_equal_torch_s(kwargs, dtype, groups):
    ours, opt, theirs, topt = make_pair("Rprop", kwargs, dtype=dtype, groups=groups)
    grew = shrank = False  # the test is empty unless some signs held and some flipped
    extremes = (np.inf, -np.inf)  # the smallest and largest step sizes seen
    for _ in range(30):
        before = [opt.state[p]["step_size"].numpy().copy() for p in ours if opt.state[p]]
        take_step(ours, opt, theirs, topt)
        for p, t in zip(ours, theirs):
            assert_same(p, t)
        for old, p in zip(before, ours):
            grew |= bool((opt.state[p]["step_size"].numpy() > old).any())
            shrank |= bool((opt.state[p]["step_size"].numpy() < old).any())
        sizes = np.concatenate([opt.state[p]["step_size"].numpy().ravel() for p in ours])
        extremes = (min(extremes[0], sizes.min()), max(extremes[1], sizes.max()))
    assert grew and shrank
    for p, t in zip(ours, theirs):
        state, tstate = opt.state[p], topt.state[t]
        assert list(state) == list(tstate) == ["step", "prev", "step_size"]
        assert state["step"] == int(tstate["step"].item()) == 30
        assert_same(state["prev"], tstate["prev"])
        assert_same(state["step_size"], tstate["step_size"])
        assert state["step_size"].dtype == p.dtype
    if "step_sizes" in kwargs:  # both bounds were reached
        assert extremes == tuple(np.asarray(kwargs["step_sizes"], dtype))


def test_parameters_without_gradient_are_skipped():
    used, unused = sg.zeros(2, requires_grad=True), sg.ones(2, requires_grad=True)
    tused, tunused = torch.zeros(2, requires_grad=True), torch.ones(2, requires_grad=True)
    opt, topt = optim.Rprop([used, unused]), torch.optim.Rprop([tused, tunused])
    used.grad, tused.grad = sg.tensor([1.0, -1.0]), torch.tensor([1.0, -1.0])
    opt.step()
    topt.step()
    assert_same(used, tused)
    assert unused._version == 0 and not opt.state[unused] and not topt.state[tunused]


def test_a_nan_gradient_is_torch_s_sign_zero():
    """torch's sign of NaN is 0: the coordinate does not move, its step size is kept, and the
    NaN kept in ``prev`` changes nothing at the next step."""
    w, tw = sg.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    opt, topt = optim.Rprop([w]), torch.optim.Rprop([tw])
    for g in ([1.0, -1.0, 0.0], [float("nan"), 1.0, 1.0], [1.0, 1.0, 1.0]):
        w.grad, tw.grad = sg.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        assert_same(w, tw)
        for key in ("prev", "step_size"):
            assert_same(opt.state[w][key], topt.state[tw][key])
        if np.isnan(g[0]):
            assert np.isnan(opt.state[w]["prev"].numpy()[0]) and w.detach().numpy()[0] == 0.99


def test_defaults_and_state_dict_layout_are_torch_s():
    ours, opt, theirs, topt = make_pair("Rprop", {"lr": 0.05}, groups=True)
    assert list(opt.defaults.items()) == list(topt.defaults.items())
    for _ in range(3):
        take_step(ours, opt, theirs, topt)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["state"].keys() == tsd["state"].keys()
    for index, tstate in tsd["state"].items():
        assert list(sd["state"][index]) == list(tstate)
    for group, tgroup in zip(sd["param_groups"], tsd["param_groups"]):
        assert list(group.items()) == list(tgroup.items())  # switches included, in its order


def test_resumes_identically_from_a_saved_state_dict():
    ours, opt, theirs, topt = make_pair("Rprop", {"lr": 0.05, "etas": (0.4, 1.3)})
    for _ in range(5):
        take_step(ours, opt, theirs, topt)
    buffer = io.BytesIO()
    sg.save(opt.state_dict(), buffer)
    copies = [p.detach().clone().requires_grad_() for p in ours]
    fresh = optim.Rprop(copies, lr=1.0)  # the loaded state dict overrides the rates
    fresh.load_state_dict(sg.load(io.BytesIO(buffer.getvalue())))
    for _ in range(10):
        take_step(copies, fresh, theirs, topt)
    for p, t in zip(copies, theirs):
        assert_same(p, t)


@pytest.mark.parametrize(
    "kwargs", [{"lr": -0.1}, {"etas": (0.0, 1.2)}, {"etas": (0.5, 1.0)}, {"etas": (1.5, 2.0)}]
)
def test_errors_are_torch_s(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.Rprop([torch.zeros(1, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        optim.Rprop([sg.zeros(1, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_a_jitted_step_equals_the_eager_one():
    """The jit has no generated code for Rprop: it replays the optimizer's Python step, which
    must leave the model and the state where eager steps do, bit for bit."""

    def train(jit):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
        opt = optim.Rprop(model.parameters(), lr=0.01)
        x, y = sg.randn(6, 4), sg.randint(0, 3, (6,))

        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        run = sg.jit(step) if jit else step
        losses = [run(x, y).item() for _ in range(8)]
        return losses, model, opt, run

    losses, model, opt, _ = train(False)
    jit_losses, jit_model, jit_opt, run = train(True)
    assert jit_losses == losses and losses[-1] < losses[0]
    for p, q in zip(model.parameters(), jit_model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        for key in ("prev", "step_size"):
            np.testing.assert_array_equal(opt.state[p][key].numpy(), jit_opt.state[q][key].numpy())
        assert opt.state[p]["step"] == jit_opt.state[q]["step"] == 8
    assert run.calls == 8 and run.fast is not None  # it replayed


def test_doc_example_runs():
    import doctest

    from scratchgrad.optim import rprop

    result = doctest.testmod(rprop)
    assert result.attempted > 0 and result.failed == 0
