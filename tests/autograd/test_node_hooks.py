"""Hooks on graph nodes (``grad_fn.register_prehook``, ``grad_fn.register_hook``) as PyTorch's:
what they are given, what they may return, their order, and their errors."""

import re

import numpy as np
import pytest
import torch

import scratchgrad as sg


def _values(items) -> list:
    """Tensors (in nested tuples and lists) as lists of floats, None as None, for comparing."""
    if isinstance(items, (tuple, list)):
        return [_values(item) for item in items]
    if items is None or isinstance(items, str):
        return items
    return np.asarray(items.detach().numpy())


def _assert_same(ours, theirs) -> None:
    assert len(ours) == len(theirs), (ours, theirs)
    for a, b in zip(ours, theirs):
        if isinstance(a, list):
            _assert_same(a, b)
        elif isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        else:
            assert a == b


def _hooked_run(m, log: list, create_graph: bool = False):
    """A product whose node has two pre-hooks, two post-hooks and a tensor hook, registered
    mixed: each logs what it is given; the second pre-hook scales the gradient, the second
    post-hook adds to the first input's gradient; one more post-hook is removed again."""
    x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    c = m.tensor([3.0, 4.0], dtype=m.float64)
    y = x * c
    node = y.grad_fn
    node.register_prehook(lambda go: log.append(("pre1", go)))
    y.register_hook(lambda g: log.append(("tensor", g)))
    node.register_prehook(lambda go: (go[0] * 10,))
    node.register_hook(lambda gi, go: log.append(("post1", gi, go)))
    removed = node.register_hook(lambda gi, go: log.append(("removed",)))
    node.register_hook(lambda gi, go: (gi[0] + 1, gi[1]))
    node.register_prehook(lambda go: log.append(("pre3", go)))
    removed.remove()
    return x, y


def test_hooks_run_in_pytorchs_order_and_replace_gradients():
    results = []
    for m in (sg, torch):
        log = []
        x, y = _hooked_run(m, log)
        (y * m.tensor([1.0, 2.0], dtype=m.float64)).sum().backward(retain_graph=True)
        first = list(log)
        y.sum().backward()  # a second backward through the retained graph runs them again
        results.append((_values(first), _values(log), _values(x.grad)))
    ours, theirs = results
    _assert_same(list(ours), list(theirs))


def test_hooks_run_under_autograd_grad_and_create_graph():
    """``autograd.grad`` runs a hooked node on the way to its inputs (not the nodes of the
    inputs themselves, whose gradients are taken before their pre-hooks); with create_graph
    the hooks' results are differentiable."""
    results = []
    for m in (sg, torch):
        log = []
        x, y = _hooked_run(m, log)
        z = y * 2
        z.grad_fn.register_prehook(lambda go, log=log: log.append(("zpre", go)))
        z.grad_fn.register_hook(lambda gi, go, log=log: log.append(("zpost", gi)))
        (gy,) = m.autograd.grad(z.sum(), y, retain_graph=True)
        (gx,) = m.autograd.grad((z**2).sum(), x, create_graph=True)
        (ggx,) = m.autograd.grad(gx.sum(), x)
        results.append((_values(log), _values([gy, gx, ggx])))
    ours, theirs = results
    _assert_same(list(ours), list(theirs))


def _scale_function(m):
    """The same custom Function for each library: x * k + b, with k a number."""

    class Scale(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, b):
            ctx.k = k
            return x * k + b

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None, grad

    return Scale


def test_hooks_on_a_custom_functions_node_see_its_tensor_arguments_only():
    results = []
    for m in (sg, torch):
        log = []
        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = _scale_function(m).apply(x, 3.0, m.ones(2, dtype=m.float64))
        y.grad_fn.register_prehook(lambda go, log=log: log.append(("pre", go)))
        y.grad_fn.register_hook(lambda gi, go, log=log: log.append(("post", gi, go)))
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 2, None))
        y.sum().backward()
        results.append((_values(log), _values(x.grad), len(y.grad_fn.next_functions)))
    ours, theirs = results
    _assert_same(list(ours), list(theirs))


def test_a_pre_hook_returning_none_for_the_gradient_stops_it():
    grads = []
    for m in (sg, torch):
        x = m.ones(2, requires_grad=True)
        y = (x * 2).exp()
        y.grad_fn.register_prehook(lambda go: (None,))
        (y + x).sum().backward()
        grads.append(_values(x.grad))
    _assert_same(*grads)


def test_a_hooked_nodes_gradient_is_copied_into_grad():
    """A post-hook may keep the gradients it returns: .grad must not take one over (then a
    second backward, adding into .grad in place, would change the hook's tensor too)."""
    kept = []
    x = sg.ones(2, requires_grad=True)
    y = x.exp()
    y.grad_fn.register_hook(lambda gi, go: kept.append(gi[0] * 1) or (kept[0],))
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(kept[0].numpy(), np.exp(np.ones(2)), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(np.ones(2)), rtol=1e-6)


@pytest.mark.parametrize(
    ("kind", "hook", "error"),
    [
        ("pre", lambda go: (go[0], go[0]), "incorrect number of values (got 2, but expected 1)"),
        ("pre", lambda go: go[0], "expected tuple, but hook"),
        ("pre", lambda go: [go[0]], "expected tuple, but hook"),
        ("pre", lambda go: (go[0][:1],), "has changed the size of value"),
        ("pre", lambda go: (go[0].double(),), "has changed the type of value"),
        ("post", lambda gi, go: (gi[0],), "incorrect number of values (got 1, but expected 2)"),
        ("post", lambda gi, go: (gi[0], gi[0]), "can't replace a None gradient"),
        ("post", lambda gi, go: (3, None), "expected Variable, but hook"),
        ("post", lambda gi, go: (gi[0][:1], None), "has changed the size of value"),
    ],
)
def test_a_hook_returning_the_wrong_thing_raises_pytorchs_error(kind, hook, error):
    for m in (sg, torch):
        x = m.ones(2, requires_grad=True)
        y = x * m.tensor([3.0, 4.0])
        register = y.grad_fn.register_prehook if kind == "pre" else y.grad_fn.register_hook
        register(hook)
        with pytest.raises((RuntimeError, TypeError), match=re.escape(error)) as caught:
            y.sum().backward()
        kinds = caught.type
        assert x.grad is None
        if m is sg:
            ours = kinds
    assert ours is kinds  # the same exception type as PyTorch's


def test_hooks_on_one_node_of_several_outputs_are_refused():
    """PyTorch's split and a Function with several outputs have one node for all outputs;
    scratchgrad has one per output, so a hook there would see another gradient: refused."""
    x = sg.ones(4, requires_grad=True)

    class Two(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, a, b):
            return a * 2 + b * 3

    for out in (x.split(2)[0], x.unbind()[0], x.chunk(2)[1], Two.apply(x)[0]):
        with pytest.raises(RuntimeError, match="several outputs"):
            out.grad_fn.register_hook(lambda gi, go: None)


def test_a_jitted_step_with_node_hooks_matches_eager():
    """The hooks run while the step records, their operations are recorded, and each replay
    gives the eager step's gradients."""

    def step(w, x):
        h = x @ w
        h.grad_fn.register_prehook(lambda go: (go[0] * 3,))
        h.grad_fn.register_hook(lambda gi, go: (None, gi[1].clamp(-0.1, 0.1)))
        loss = (h.tanh() ** 2).sum()
        loss.backward()
        return loss.detach()

    jitted = sg.jit(step)
    rng = np.random.default_rng(0)
    w_eager = sg.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    w_jit = sg.tensor(w_eager.detach().numpy().copy(), requires_grad=True)
    for _ in range(4):
        x = sg.tensor(rng.standard_normal((5, 3)))
        w_eager.grad = w_jit.grad = None
        expected = step(w_eager, x)
        got = jitted(w_jit, x)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        np.testing.assert_array_equal(w_jit.grad.numpy(), w_eager.grad.numpy())


def test_a_compiled_modules_node_hooks_run_as_eagerly():
    class Net(sg.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = sg.nn.Linear(3, 2)

        def forward(self, x):
            h = self.layer(x)
            h.grad_fn.register_prehook(lambda go: (go[0] * 3,))
            return h.tanh()

    eager, twin = Net(), Net()
    twin.load_state_dict(eager.state_dict())
    compiled = sg.compile(twin)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = sg.tensor(rng.standard_normal((5, 3)), dtype=sg.float32)
        eager.zero_grad()
        twin.zero_grad()
        eager(x).sum().backward()
        compiled(x).sum().backward()
        np.testing.assert_array_equal(
            twin.layer.weight.grad.numpy(), eager.layer.weight.grad.numpy()
        )


def test_hooks_on_a_leafs_accumulate_grad_node_are_refused_naming_what_to_use():
    x = sg.ones(2, requires_grad=True)
    node = (x * 2).grad_fn.next_functions[0][0]
    with pytest.raises(RuntimeError, match="register_post_accumulate_grad_hook"):
        node.register_hook(lambda gi, go: None)
    with pytest.raises(RuntimeError, match="use the leaf's register_hook"):
        node.register_prehook(lambda go: None)
