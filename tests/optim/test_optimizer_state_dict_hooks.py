"""State-dict hooks of ``Optimizer`` against PyTorch's: ``register_state_dict_pre_hook``,
``register_state_dict_post_hook``, ``register_load_state_dict_pre_hook`` and
``register_load_state_dict_post_hook`` run in the same order (``prepend`` included), see the
same arguments, may replace the dict where PyTorch's may, and come off by their handles."""

import inspect

import numpy as np
import pytest
import torch

import scratchgrad as sg

HOOKS = [
    "register_state_dict_pre_hook",
    "register_state_dict_post_hook",
    "register_load_state_dict_pre_hook",
    "register_load_state_dict_post_hook",
]


@pytest.mark.parametrize("method", HOOKS)
def test_signatures_are_torchs(method):
    ours = inspect.signature(getattr(sg.optim.Optimizer, method)).parameters
    theirs = inspect.signature(getattr(torch.optim.Optimizer, method)).parameters
    assert [(p.name, p.default) for p in ours.values()] == [
        (p.name, p.default) for p in theirs.values()
    ]


def _optimizer(m):
    w = m.tensor([1.0, -2.0], requires_grad=True)
    opt = m.optim.SGD([w], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    opt.step()
    return opt


def _order(m):
    """The log of a save and a load with two hooks of each kind, one of them prepended, and of
    the same after one of each is removed."""
    opt, log = _optimizer(m), []
    handles = []
    for method in HOOKS:
        for label, prepend in (("a", False), ("b", True)):

            def hook(*args, method=method, label=label):
                log.append((method, label, len(args), args[0] is opt))

            handles.append(getattr(opt, method)(hook, prepend=prepend))
    opt.load_state_dict(opt.state_dict())
    for handle in handles[::2]:
        handle.remove()
    opt.load_state_dict(opt.state_dict())
    return log


def test_hooks_run_in_torchs_order_with_torchs_arguments():
    ours = _order(sg)
    assert ours == _order(torch)
    assert len(ours) == 12  # 8 hooks, then the 4 left after the removals


def _replacing(m):
    """Post-hooks that change a saved dict in place and by a new dict; load pre-hooks that
    change the copy they get and return a new dict; what each one saw."""
    opt, seen = _optimizer(m), []
    given = opt.state_dict()

    def mark(o, sd):
        sd["marked"] = True  # in place; returns None

    def wrap(o, sd):
        seen.append(sorted(sd))
        return {**sd, "extra": 1}

    def drop_extra(o, sd):
        seen.append(sorted(sd))
        sd.pop("extra")  # the top level is a copy: the caller's dict keeps it

    def slower(o, sd):
        groups = [{**g, "lr": 0.01} for g in sd["param_groups"]]
        return {**sd, "param_groups": groups}

    opt.register_state_dict_post_hook(mark)
    opt.register_state_dict_post_hook(wrap)
    saved = opt.state_dict()
    opt.register_load_state_dict_pre_hook(drop_extra)
    opt.register_load_state_dict_pre_hook(slower)
    opt.load_state_dict(saved)
    return seen, sorted(saved), opt.param_groups[0]["lr"], given["param_groups"][0]["lr"]


def test_post_hooks_and_load_pre_hooks_may_return_a_new_dict_as_torchs():
    ours = _replacing(sg)
    assert ours == _replacing(torch)
    seen, saved, lr, given_lr = ours
    assert saved == ["extra", "marked", "param_groups", "state"]
    assert seen[1] == saved and (lr, given_lr) == (0.01, 0.1)


@pytest.mark.parametrize("m", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_load_pre_hook_can_convert_an_old_checkpoint(m):
    """The use PyTorch's docs give: adapt a dict saved by another layout before it loads (here
    a momentum buffer saved under an old name)."""
    opt = _optimizer(m)
    old = opt.state_dict()
    old["state"][0] = {"velocity": old["state"][0]["momentum_buffer"]}

    def rename(o, sd):
        sd["state"] = {i: {"momentum_buffer": s["velocity"]} for i, s in sd["state"].items()}

    fresh = m.optim.SGD([m.tensor([1.0, -2.0], requires_grad=True)], lr=0.5, momentum=0.9)
    fresh.register_load_state_dict_pre_hook(rename)
    fresh.load_state_dict(old)
    (buffer,) = [s["momentum_buffer"] for s in fresh.state.values()]
    np.testing.assert_allclose(buffer.numpy(), [2.0, -4.0])
    assert "velocity" in old["state"][0]  # the caller's dict is not changed


def test_hooks_on_a_custom_optimizer_that_skips_init_and_step_ignores_them():
    class Plain(sg.optim.Optimizer):
        def __init__(self, params):  # (no super().__init__: the hooks work all the same)
            self.param_groups, self.state, self.defaults = [{"params": list(params)}], {}, {}

        def step(self, closure=None):
            for p in self.param_groups[0]["params"]:
                p.array -= p.grad.array

    w = sg.ones(2, requires_grad=True)
    opt, calls = Plain([w]), []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    w.grad = sg.ones(2)
    opt.step()
    assert calls == []
    opt.load_state_dict(opt.state_dict())
    assert calls == ["pre", "loaded"]
