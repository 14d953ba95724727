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


def test_a_hook_registered_in_a_with_statement_is_removed_at_its_end_as_in_torch():
    shapes = []
    for lib in (sg, torch):
        model = mlp(lib.nn)
        with model[0].register_forward_hook(lambda m, a, out: shapes.append(out.shape)) as handle:
            model(lib.ones(2, 3))
        model(lib.ones(4, 3))
        handle.remove()  # a second removal does nothing
    assert shapes == [(2, 5), (2, 5)]


def test_a_hook_keeping_features_of_each_call_in_a_jitted_step_gets_each_replays():
    """A hook's Python runs only when the step records, but the features it keeps in a dict
    of its enclosing function (a tensor the step made) are stored again by each replay: the
    features of each call, as eagerly, and nothing warns."""
    features, kept = {}, []
    model = mlp(sg.nn)
    model[1].register_forward_hook(lambda m, args, out: features.update(tanh=out.detach()))
    step = sg.jit(lambda x: model(x).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in range(5):  # the eager call, two recordings, two replays
            x = sg.tensor(np.random.default_rng(seed).standard_normal((2, 3)), dtype=sg.float32)
            step(x)
            kept.append(features["tanh"])
            np.testing.assert_array_equal(kept[-1].numpy(), model[1](model[0](x)).detach().numpy())
    assert len({id(t) for t in kept}) == len(kept)


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


# ---- backward hooks ----------------------------------------------------------------------------


def scaling_backward_hook(module, grad_input, grad_output):
    return tuple(None if g is None else g * 0.5 for g in grad_input)


def doubling_backward_pre_hook(module, grad_output):
    return (grad_output[0] * 2,)


def observing_backward_hook(module, grad_input, grad_output):
    return None


BACKWARD_HOOKS = {  # the layer hooked (an index into mlp's model) -> what is registered
    "a full hook replacing grad_input": (2, "full", scaling_backward_hook),
    "a full hook on the activation": (1, "full", scaling_backward_hook),
    "a pre-hook replacing grad_output": (0, "pre", doubling_backward_pre_hook),
    "a full hook returning None": (2, "full", observing_backward_hook),
}


def _as_numpy(grads):
    return [None if g is None else g.detach().numpy() for g in grads]


@pytest.mark.parametrize("hook", BACKWARD_HOOKS)
def test_backward_hooks_see_and_change_gradients_as_pytorchs(hook):
    """What a full backward hook sees (``grad_input``, ``grad_output``) and a pre-hook sees,
    and the gradients of the input and the parameters after what they return replaced."""
    index, kind, function = BACKWARD_HOOKS[hook]
    seen = {}
    for model, lib in zip(module_pair(mlp), (sg, torch)):
        layer = model[index]
        if kind == "full":
            layer.register_full_backward_hook(function)
            layer.register_full_backward_hook(
                lambda m, gi, go, lib=lib: seen.update({lib: (_as_numpy(gi), _as_numpy(go))})
            )
        else:
            layer.register_full_backward_pre_hook(function)
            layer.register_full_backward_pre_hook(
                lambda m, go, lib=lib: seen.update({lib: (_as_numpy(go),)})
            )
        x = lib.tensor(X, requires_grad=True)
        model(x).square().sum().backward()
        seen[lib] += (x.grad.numpy(), [p.grad.numpy() for p in model.parameters()])
    np.testing.assert_allclose(
        np.concatenate([np.ravel(a) for part in seen[sg] for a in part]),
        np.concatenate([np.ravel(a) for part in seen[torch] for a in part]),
        rtol=1e-12,
    )


def test_a_full_hook_gets_one_gradient_per_positional_input_as_pytorch():
    """A module of several inputs: ``grad_input`` holds the gradient of a tensor that needs
    one, zeros for a tensor that does not, and None for a number; ``grad_output`` one per
    tensor output. With no tensor input needing a gradient, the hook fires with the outputs'
    gradients and None inputs, warning as PyTorch does."""

    def run(lib):
        class Mix(lib.nn.Module):
            def forward(self, a, b, scale):
                return a * b * scale, a - b

        seen = {}
        mix, first = Mix(), lib.nn.Linear(2, 1).double()
        mix.register_full_backward_hook(lambda m, gi, go: seen.update(mix=(gi, go)))
        first.register_full_backward_hook(lambda m, gi, go: seen.update(first=(gi, go)))
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([3.0, -1.0], dtype=lib.float64)
        p, q = mix(a, b, 2.0)
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients"):
            (first(b).sum() + p.sum() * 3 + q.square().sum()).backward()
        return {k: (_as_numpy(gi), _as_numpy(go)) for k, (gi, go) in seen.items()}

    ours, theirs = run(sg), run(torch)
    assert ours.keys() == theirs.keys() == {"mix", "first"}
    for key in ours:
        for mine, their in zip(ours[key], theirs[key]):
            assert [g is None for g in mine] == [g is None for g in their]
            for g, h in zip(mine, their):
                if g is not None:
                    np.testing.assert_array_equal(g, h)


def test_an_output_the_loss_does_not_use_has_none_in_grad_output_as_pytorch():
    def run(lib):
        class Three(lib.nn.Module):
            def forward(self, a):
                return a.sin(), a.cos(), a * 3

        seen, three = [], Three()
        three.register_full_backward_pre_hook(lambda m, go: seen.append(go))
        three.register_full_backward_hook(lambda m, gi, go: seen.append((*gi, *go)))
        a = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        x, _, z = three(a)
        (x * 2 + z).sum().backward()
        return [[None if g is None else g.numpy() for g in grads] for grads in seen], a.grad

    (ours, grad), (theirs, grad_t) = run(sg), run(torch)
    assert [[g is None for g in gs] for gs in ours] == [[g is None for g in gs] for gs in theirs]
    assert [[g is None for g in gs] for gs in ours] == [
        [False, True, False],
        [False] * 2 + [True, False],
    ]
    for mine, their in zip(ours, theirs):
        for g, h in zip(mine, their):
            if g is not None:
                np.testing.assert_allclose(g, h, rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), grad_t.numpy(), rtol=1e-12)


def test_grad_cam_with_a_forward_and_a_backward_hook_equals_pytorchs():
    """Grad-CAM, as its tutorials write it: a forward hook keeps the last convolution's
    activations, a full backward hook their gradients; the map (gradient-weighted channels,
    ReLU) equals PyTorch's, and removing the hooks leaves the model as it was."""

    def cnn(nn):
        return nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 6, 3), nn.ReLU(),
            nn.Flatten(), nn.Linear(6 * 4 * 4, 3),
        )  # fmt: skip

    image = np.random.default_rng(1).standard_normal((1, 1, 6, 6))
    maps = []
    for model, lib in zip(module_pair(cnn), (sg, torch)):
        kept = {}
        handles = [
            model[2].register_forward_hook(lambda m, args, out, kept=kept: kept.update(act=out)),
            model[2].register_full_backward_hook(
                lambda m, gi, go, kept=kept: kept.update(grad=go[0])
            ),
        ]
        logits = model(lib.tensor(image))
        logits[0, logits.argmax()].backward()
        weights = kept["grad"].mean(dim=(2, 3), keepdim=True)
        maps.append((weights * kept["act"]).sum(dim=1).relu().detach().numpy())
        for handle in handles:
            handle.remove()
        assert not model[2]._backward_hooks
    np.testing.assert_allclose(maps[0], maps[1], rtol=1e-10, atol=1e-12)


def test_a_hook_returning_the_wrong_number_of_gradients_raises_as_pytorch():
    layer = sg.nn.Linear(3, 2)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match=r"invalid number of values for grad_input"):
        layer(sg.ones(1, 3, requires_grad=True)).sum().backward()


def test_a_jitted_step_replays_backward_hooks_that_change_or_keep_gradients():
    """A backward hook's tensor operations are recorded with the step, so a hook scaling
    gradients replays equal to eager; one keeping gradients in a dict (Grad-CAM's) gets each
    replay's, as a forward hook keeping features does."""
    model = mlp(sg.nn)
    model[2].register_full_backward_hook(scaling_backward_hook)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).square().sum()
        loss.backward()
        opt.step()
        return loss

    eager_model = mlp(sg.nn)
    eager_model.load_state_dict(model.state_dict())
    eager_model[2].register_full_backward_hook(scaling_backward_hook)
    eager_opt = sg.optim.SGD(eager_model.parameters(), lr=0.1)
    jitted, x = sg.jit(step), sg.tensor(X, dtype=sg.float32, requires_grad=True)
    for _ in range(5):
        jitted(x)
        eager_opt.zero_grad()
        eager_model(x).square().sum().backward()
        eager_opt.step()
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())

    grads, eager_grads = {}, {}
    model[1].register_full_backward_hook(lambda m, gi, go: grads.update(tanh=go[0]))
    eager_model[1].register_full_backward_hook(lambda m, gi, go: eager_grads.update(tanh=go[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):  # a new recording (the hook stamps the module), then replays
            jitted(x)
            eager_opt.zero_grad()
            eager_model(x).square().sum().backward()
            eager_opt.step()
            ours, theirs = (g["tanh"].detach().numpy() for g in (grads, eager_grads))
            np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_changing_in_place_what_passes_through_full_backward_hooks_raises(lib):
    """Outside the module (its output, or a view of it) and inside (its input, which the hooks'
    node copied: relu_ changed the copy, not the caller's tensor)."""

    class InPlaceRelu(lib.nn.Module):
        def forward(self, x):
            return x.relu_()

    linear = lib.nn.Linear(3, 2)
    linear.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    x = lib.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    for change in (lambda y: y.mul_(2), lambda y: y[0].add_(1)):
        with pytest.raises(RuntimeError, match="view and is being modified inplace"):
            change(linear(x))
    relu = InPlaceRelu()
    relu.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    with pytest.raises(RuntimeError, match="view and is being modified inplace"):
        relu(x * 1)
    with lib.no_grad():  # outside the graph, as PyTorch
        linear(x).mul_(2)


def test_the_old_backward_hook_raises_naming_the_full_one():
    """PyTorch's deprecated register_backward_hook hooks the module's last autograd node, which
    scratchgrad's nodes cannot take: a clear error instead of an AttributeError."""
    from scratchgrad.nn.modules.module import register_module_backward_hook

    layer = sg.nn.Linear(2, 1)
    with pytest.raises(NotImplementedError, match="use Module.register_full_backward_hook"):
        layer.register_backward_hook(lambda module, grad_input, grad_output: None)
    with pytest.raises(RuntimeError, match="use register_module_full_backward_hook"):
        register_module_backward_hook(lambda module, grad_input, grad_output: None)
    assert not layer._hooked  # nothing was registered


@pytest.mark.parametrize("kind", ["full_backward_pre_hook", "full_backward_hook"])
@pytest.mark.parametrize(
    ("returned", "error"),
    [(3, TypeError), ("tensor", RuntimeError), ((3,), TypeError), ("pair", RuntimeError)],
    ids=["int", "bare_tensor", "tuple_of_int", "two_gradients"],
)
def test_a_backward_hook_returning_what_is_not_gradients_raises_as_pytorch(kind, returned, error):
    """A bare tensor too (PyTorch counts its rows as gradients), which was taken silently."""
    for lib in (sg, torch):
        layer = lib.nn.Linear(2, 2)
        x = lib.ones(3, 2, requires_grad=True)
        value = {"tensor": lib.ones(3, 2), "pair": (lib.ones(3, 2), None)}.get(returned, returned)
        getattr(layer, f"register_{kind}")(lambda *args, value=value: value)
        with pytest.raises(error):
            layer(x).sum().backward()


def test_hook_handles_count_their_ids_as_pytorchs():
    layer = sg.nn.Linear(2, 2)
    first = layer.register_forward_hook(lambda *args: None)
    second = sg.ones(1, requires_grad=True).register_hook(lambda grad: None)
    assert second.id == first.id + 1
