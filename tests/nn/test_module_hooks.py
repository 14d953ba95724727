"""Forward hooks and pre-hooks of modules against PyTorch: what each hook sees, what it
returns replacing the inputs or the output, their order (``prepend``), ``with_kwargs``,
``remove()``, gradients through what they change; and a jitted step with hooks."""

import warnings

import numpy as np
import pytest
from oracle import module_pair, parameter_pairs

import scratchgrad as sg

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).standard_normal((4, 3))


def mlp(nn):
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


def doubling_pre_hook(module, args):
    return (args[0] * 2,)


def single_value_pre_hook(module, args):
    return args[0] + 1  # one value, not a tuple: it becomes the only input


def shifting_hook(module, args, output):
    return output - args[0].sum()


def observing_hook(module, args, output):
    return None  # leaves the output


def kwargs_pre_hook(module, args, kwargs):
    return (args[0] * 3,), kwargs


def kwargs_hook(module, args, kwargs, output):
    return output * 0.5


HOOKS = {
    "a pre-hook replacing the inputs": [("pre", doubling_pre_hook, {})],
    "a pre-hook returning one value": [("pre", single_value_pre_hook, {})],
    "a hook replacing the output": [("post", shifting_hook, {})],
    "a hook returning None": [("post", observing_hook, {})],
    "hooks with kwargs": [
        ("pre", kwargs_pre_hook, {"with_kwargs": True}),
        ("post", kwargs_hook, {"with_kwargs": True}),
    ],
    "a hook prepended": [
        ("post", shifting_hook, {}),
        ("post", kwargs_hook, {"with_kwargs": True, "prepend": True}),
    ],
    "pre-hooks prepended, then one appended": [
        ("pre", doubling_pre_hook, {}),
        ("pre", single_value_pre_hook, {"prepend": True}),
        ("pre", doubling_pre_hook, {}),
    ],
}


def hooked(model, hooks):
    """Register ``hooks`` on the model's first layer; their handles."""
    layer = model[0]
    register = {"pre": layer.register_forward_pre_hook, "post": layer.register_forward_hook}
    return [register[kind](hook, **options) for kind, hook, options in hooks]


@pytest.mark.parametrize("hooks", HOOKS)
def test_hooks_change_outputs_and_gradients_as_pytorchs(hooks):
    ours, theirs = module_pair(mlp)
    hooked(ours, HOOKS[hooks]), hooked(theirs, HOOKS[hooks])
    x_ours, x_theirs = sg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    out_ours, out_theirs = ours(x_ours), theirs(x_theirs)
    np.testing.assert_allclose(out_ours.detach().numpy(), out_theirs.detach().numpy(), rtol=1e-12)
    out_ours.square().sum().backward(), out_theirs.square().sum().backward()
    np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-12)
    for _, p, q in parameter_pairs(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_a_hook_sees_the_inputs_a_pre_hook_left_and_removed_hooks_are_gone():
    seen = {}
    for lib in (sg, torch):
        model = mlp(lib.nn)
        handles = hooked(model, [("pre", doubling_pre_hook, {})])
        handles += [model[0].register_forward_hook(lambda m, a, o, lib=lib: seen.update({lib: a}))]
        x = lib.ones(2, 3)
        model(x)
        assert seen.pop(lib)[0].tolist() == (x * 2).tolist()
        for handle in handles:
            handle.remove()
        model(x)
        assert lib not in seen


def test_a_hook_keeping_features_of_each_call_in_a_jitted_step_warns():
    """A hook's Python runs only when the step records: keeping features from a hook in a
    jitted step warns, naming what it changed (the hook is read as a helper of the step)."""
    features = {}
    model = mlp(sg.nn)
    model[1].register_forward_hook(lambda m, args, out: features.update(tanh=out.detach()))
    step = sg.jit(lambda x: model(x).sum())
    step(sg.ones(2, 3))
    with pytest.warns(UserWarning, match=r"changed 'features' of its enclosing function \(dict\)"):
        step(sg.ones(2, 3)), step(sg.ones(2, 3))


def test_a_hook_registered_or_removed_between_jitted_calls_records_anew():
    """Registering a hook (and removing it) stamps the module as changed: the next jitted
    call records with (or without) the hook's operations, as eager calls run them."""
    model = mlp(sg.nn)
    step = sg.jit(lambda x: model(x).sum())
    x = sg.ones(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            assert step(x).item() == model(x).sum().item()
        handle = model[0].register_forward_hook(shifting_hook)
        for _ in range(4):
            assert step(x).item() == model(x).sum().item()
        handle.remove()
        for _ in range(4):
            assert step(x).item() == model(x).sum().item()
    assert step.fast is not None
