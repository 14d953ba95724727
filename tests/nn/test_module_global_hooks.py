"""The global module hooks of ``torch.nn.modules.module`` (``register_module_forward_hook``
and the rest): the calls they see, in PyTorch's order with the modules' own hooks, and what
their results change (outputs, gradients), against PyTorch's."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_doc_examples_run, module_pair

import scratchgrad as sg


def _net(nn):
    return nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))


def _run(lib, net, x):
    """Register module and global hooks that log and change values, run forward and backward
    once, and remove the global hooks again; returns the log, the output and x's gradient."""
    nn, hooks, log = lib.nn, lib.nn.modules.module, []
    name = lambda m: type(m).__name__  # noqa: E731
    net[0].register_forward_pre_hook(lambda m, a: log.append(("own pre", name(m))))
    net[0].register_forward_hook(lambda m, a, o: log.append(("own hook", name(m))))
    net[2].register_full_backward_hook(lambda m, gi, go: log.append(("own backward", name(m))))
    handles = [
        hooks.register_module_forward_pre_hook(lambda m, a: log.append(("pre", name(m)))),
        hooks.register_module_forward_hook(
            lambda m, a, o: log.append(("hook", name(m), tuple(o.shape)))
        ),
        # a hook with kwargs that changes an output, one that scales a gradient
        hooks.register_module_forward_hook(
            lambda m, a, k, o: o * 2 if isinstance(m, nn.Tanh) else None, with_kwargs=True
        ),
        hooks.register_module_full_backward_pre_hook(
            lambda m, go: (go[0] * 3,) if isinstance(m, nn.Tanh) else None
        ),
        hooks.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("backward", name(m), len(gi), len(go)))
        ),
    ]
    out = net(x)
    out.sum().backward()
    for handle in handles:
        handle.remove()
    return log, out, x.grad


def test_global_hooks_run_as_torchs():
    ours, theirs = module_pair(_net)
    x = np.random.default_rng(0).standard_normal((4, 2))
    log, out, grad = _run(sg, ours, sg.tensor(x, requires_grad=True))
    expected_log, expected_out, expected_grad = _run(
        torch, theirs, torch.tensor(x, requires_grad=True)
    )
    assert log == expected_log
    assert_close(out, expected_out)
    assert_close(grad, expected_grad)
    # removed, they are gone (and the modules' calls take the fast way again)
    assert not sg.nn.Module._hooked
    assert_close(ours(sg.tensor(x)), theirs(torch.tensor(x)))


@pytest.mark.parametrize("lib", [sg, torch])
def test_an_always_called_global_hook_runs_after_an_error(lib):
    class Failing(lib.nn.Module):
        def forward(self, x):
            raise ValueError("no")

    seen = []
    hooks = lib.nn.modules.module
    handle = hooks.register_module_forward_hook(lambda m, a, o: seen.append(o), always_call=True)
    with handle, pytest.raises(ValueError):
        Failing()(lib.ones(1))
    Failing.forward = lambda self, x: x
    Failing()(lib.ones(1))
    assert seen == [None]


def test_a_global_hook_keeps_the_module_hooks_of_its_own():
    layer = sg.nn.Linear(2, 2)
    layer.register_forward_hook(lambda m, a, o: o * 0)
    with sg.nn.modules.module.register_module_forward_pre_hook(lambda m, a: None):
        assert sg.nn.Module._hooked
    assert not sg.nn.Module._hooked and layer._hooked
    assert (layer(sg.ones(1, 2)) == 0).all()
    assert_doc_examples_run(sg.nn.modules.module.register_module_forward_pre_hook)


def _registrations(lib):
    """The registrations a few constructions and assignments make, as the global registration
    hooks see them; a hook that replaces parameters."""
    nn, hooks, log = lib.nn, lib.nn.modules.module, []

    def shape(v):
        return None if v is None else tuple(v.shape)

    handles = [
        hooks.register_module_buffer_registration_hook(
            lambda m, n, v: log.append(("buffer", type(m).__name__, n, shape(v)))
        ),
        hooks.register_module_module_registration_hook(
            lambda m, n, v: log.append(("module", type(m).__name__, n, type(v).__name__))
        ),
        hooks.register_module_parameter_registration_hook(
            lambda m, n, v: log.append(("parameter", type(m).__name__, n, shape(v)))
        ),
    ]
    norm = nn.BatchNorm1d(2)
    norm.running_mean = lib.zeros(2)
    norm.running_var = None
    net = nn.Sequential(nn.Linear(1, 1))
    net.extra = nn.ReLU()
    net.extra = None
    layer = nn.Linear(2, 2, bias=False)
    layer.bias = None
    layer.weight = nn.Parameter(lib.zeros(1))
    layer.register_buffer("b", None)
    for handle in handles:
        handle.remove()
    made = []  # (a replacing hook's parameter is the one registered)
    with hooks.register_module_parameter_registration_hook(
        lambda m, n, v: made.append(nn.Parameter(lib.zeros(v.shape))) or made[-1]
    ):
        replaced = nn.Linear(1, 1, bias=True)
    return log, [p is q for p, q in zip(replaced.parameters(), made)]


def test_registration_hooks_as_torchs():
    assert _registrations(sg) == _registrations(torch)
    assert_doc_examples_run(sg.nn.modules.module.register_module_module_registration_hook)
