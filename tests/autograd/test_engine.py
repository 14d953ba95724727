"""The backward engine: graph lifetime, deep graphs, and PyTorch's semantics for backward, grad,
hooks, retain_graph and in-place updates.

Every expected value comes from PyTorch (float64) or from a known closed form, never from
scratchgrad itself.
"""

import functools
import gc
import weakref

import numpy as np
import oracle
import pytest
from oracle import leaves

import scratchgrad as sg
from scratchgrad.autograd.function import Function

torch = pytest.importorskip("torch")


# the engine's results are NumPy's own float64 arithmetic: only round-off may differ
assert_close = functools.partial(oracle.assert_close, tolerance=oracle.ROUND_OFF)


def live(kind: type) -> int:
    """How many objects of ``kind`` (subclasses included) the garbage collector can see."""
    # issubclass on the type: isinstance would read __class__, which some modules' lazy
    # objects answer with a deprecation warning
    return sum(1 for obj in gc.get_objects() if issubclass(type(obj), kind))


class refcount_only:
    """Run a block with the cycle collector off, then report what only it could have freed.

    On exit, ``self.cycles`` lists the Tensors and graph nodes that were unreachable yet still
    alive: they sat in reference cycles, so plain reference counting could not free them.
    """

    def __enter__(self):
        gc.collect()
        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        gc.set_debug(gc.DEBUG_SAVEALL)  # keep what the collector finds so we can look at it
        try:
            gc.collect()
            self.cycles = [o for o in gc.garbage if isinstance(o, (sg.Tensor, Function))]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if self._was_enabled:
                gc.enable()


# ---- graph lifetime -------------------------------------------------------------------------


def test_the_cycle_check_itself_finds_a_cycle():
    with refcount_only() as check:
        t, u = sg.ones(2), sg.ones(2)
        t.grad, u.grad = u, t  # a deliberate cycle (a tensor as its own grad is refused)
        del t, u
    assert len(check.cycles) == 2


def test_backward_frees_a_saved_intermediate_tensor_without_the_cycle_collector():
    x = sg.randn(4, requires_grad=True)
    with refcount_only() as check:
        h = x * 2
        out = (h * h).sum()  # Mul saves h for its backward
        saved = weakref.ref(h)
        del h
        assert saved() is not None, "the graph should keep h alive until backward"
        out.backward()
        assert saved() is None, "backward should free the saved tensor at once"
        del out
    assert check.cycles == []


def test_backward_frees_a_saved_output_array_without_the_cycle_collector():
    x = sg.randn(4, requires_grad=True)
    with refcount_only() as check:
        e = x.exp()  # Exp saves its own output
        array = weakref.ref(e.array)
        out = (e * 3).sum()
        del e
        assert array() is not None
        out.backward()
        assert array() is None
        del out
    assert check.cycles == []


def test_dropping_an_unused_graph_frees_it_by_reference_counting():
    x = sg.randn(3, requires_grad=True)
    with refcount_only() as check:
        h = x.tanh()
        out = (h.exp() * h).sum()
        node = weakref.ref(out.grad_fn)
        del h, out
        assert node() is None
    assert check.cycles == []


def test_autograd_grad_with_create_graph_leaves_no_cycles():
    x = sg.randn(3, dtype=sg.float64, requires_grad=True)
    with refcount_only() as check:
        (g,) = sg.autograd.grad((x.sin() * x).sum(), x, create_graph=True)
        (g * g).sum().backward()
        del g
    assert check.cycles == []
    assert x.grad is not None


def _mlp_step(params, inputs, targets, lr=0.05):
    """One step of a 2-4-1 tanh network by hand: forward, mse, backward, SGD under no_grad."""
    w1, b1, w2, b2 = params
    hidden = (inputs @ w1 + b1).tanh()
    loss = ((hidden @ w2 + b2 - targets) ** 2).mean()
    loss.backward()
    with sg.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return loss.item()


def test_training_steps_do_not_grow_the_number_of_live_tensors():
    sg.manual_seed(0)
    inputs = sg.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    targets = sg.tensor([[0.0], [1.0], [1.0], [0.0]])
    params = [sg.randn(*shape).requires_grad_() for shape in [(2, 4), (4,), (4, 1), (1,)]]
    first = _mlp_step(params, inputs, targets)
    with refcount_only() as check:
        before = live(sg.Tensor), live(Function)
        for _ in range(1000):
            last = _mlp_step(params, inputs, targets)
        after = live(sg.Tensor), live(Function)
    assert after == before
    assert check.cycles == []
    assert last < first  # the steps did train


def test_a_million_node_chain_backwards_without_recursion():
    x = sg.tensor(0.5, dtype=sg.float64, requires_grad=True)
    y = x
    for _ in range(1_000_000):
        y = y + 1.0
    assert y.item() == 1_000_000.5
    y.backward()
    assert x.grad.item() == 1.0


def test_a_long_chain_of_products_has_the_closed_form_gradient():
    n, c = 20_000, 1.0001
    x = sg.tensor(2.0, dtype=sg.float64, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * c
    y.backward()
    assert x.grad.item() == pytest.approx(c**n, rel=1e-9)


# ---- backward, grad and accumulation --------------------------------------------------------


def test_gradients_accumulate_across_backward_calls_as_in_torch():
    x, xt = leaves([1.0, -2.0, 3.0])
    for _ in range(2):
        (x * x.sin()).sum().backward()
        (xt * xt.sin()).sum().backward()
    assert_close(x.grad, xt.grad)


def test_accumulation_does_not_alias_gradients():
    a = sg.ones(3, requires_grad=True)
    b = sg.ones(3, requires_grad=True)
    seed = sg.tensor([1.0, 2.0, 3.0])
    (a + b).backward(seed)
    assert a.grad is not seed and b.grad is not seed
    a.grad += 10  # under no_grad rules: .grad does not require grad
    np.testing.assert_array_equal(b.grad.array, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(seed.array, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("dtype", [sg.float32, sg.float64])
def test_a_bias_gradient_sums_many_rows_accurately(dtype):
    """A bias's gradient (rows summed back by the engine, as a product with ones) is within
    rounding of the exact sum for a tall batch, and is computed fresh for each batch size."""
    rng = np.random.default_rng(0)
    for rows in (100_000, 3):
        g = rng.standard_normal((rows, 5)).astype(dtype)
        bias = sg.zeros(5, dtype=dtype, requires_grad=True)
        (sg.zeros(rows, 5, dtype=dtype) + bias).backward(sg.from_numpy(g))
        exact = g.astype(np.float64).sum(0)
        tolerance = 1e-3 if dtype == sg.float32 else 1e-9
        np.testing.assert_allclose(bias.grad.array, exact, rtol=0, atol=tolerance)
        assert bias.grad.dtype == dtype


def test_a_second_backward_without_retain_graph_raises_a_clear_error():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_retain_graph_allows_a_second_backward_that_accumulates():
    x, xt = leaves([0.5, -1.5])
    y, yt = (x.exp() * x).sum(), (xt.exp() * xt).sum()
    y.backward(retain_graph=True)
    y.backward()
    yt.backward(retain_graph=True)
    yt.backward()
    assert_close(x.grad, xt.grad)


def test_gradient_argument_for_a_non_scalar_output():
    x, xt = leaves([[1.0, 2.0], [3.0, 4.0]])
    seed = [[0.5, -1.0], [2.0, 0.25]]
    (x * x).backward(sg.tensor(seed, dtype=sg.float64))
    (xt * xt).backward(torch.tensor(seed, dtype=torch.float64))
    assert_close(x.grad, xt.grad)


def test_backward_on_several_outputs_at_once():
    x, xt = leaves([1.0, 2.0])
    sg.autograd.backward([x.sin().sum(), x * 3], [None, sg.tensor([1.0, -1.0], dtype=sg.float64)])
    torch.autograd.backward(
        [xt.sin().sum(), xt * 3], [None, torch.tensor([1.0, -1.0], dtype=torch.float64)]
    )
    assert_close(x.grad, xt.grad)


def test_a_tensor_used_twice_gets_both_contributions():
    x, xt = leaves([0.3, -0.7])
    (x * x * x + x.exp() * x).sum().backward()
    (xt * xt * xt + xt.exp() * xt).sum().backward()
    assert_close(x.grad, xt.grad)


def test_each_node_runs_once_after_all_its_uses_however_the_uses_were_built():
    """The engine runs the newest node first. Here ``shared`` feeds a short path and a long
    one, and the long one was partly built before the short one: a hook on ``shared`` must
    fire once, with the sum of both paths' gradients, as in PyTorch."""
    sg_x, torch_x = leaves([0.5, -1.5, 2.0])
    seen = {}
    for name, x in (("sg", sg_x), ("torch", torch_x)):
        shared = x * x
        long_path = (shared * 3).exp()
        short_path = shared.sin()
        long_path = long_path * 0.5 + 1
        calls = []
        shared.register_hook(lambda g, calls=calls: calls.append(g.detach().clone()))
        (long_path.sum() + short_path.sum()).backward()
        seen[name] = calls, x.grad
    (sg_calls, sg_grad), (torch_calls, torch_grad) = seen["sg"], seen["torch"]
    assert len(sg_calls) == len(torch_calls) == 1
    assert_close(sg_calls[0], torch_calls[0])
    assert_close(sg_grad, torch_grad)


def test_nodes_are_numbered_in_the_order_they_were_recorded():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    first = x * 2
    second = first + x
    third = second.exp()
    numbers = [t.grad_fn.sequence_nr for t in (first, second, third)]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3


def test_backward_with_create_graph_makes_differentiable_grads():
    x, xt = leaves([0.3, 1.7])
    (x**3).sum().backward(create_graph=True)
    (xt**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (g,) = sg.autograd.grad(x.grad.sum(), x)
    (gt,) = torch.autograd.grad(xt.grad.sum(), xt)
    assert_close(g, gt)


def test_autograd_grad_leaves_dot_grad_alone():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = sg.autograd.grad((x * x).sum(), x)
    assert x.grad is None
    np.testing.assert_array_equal(g.array, [2.0, 4.0])


def test_autograd_grad_allow_unused():
    x, xt = leaves([1.0, 2.0])
    u, ut = leaves(3.0)
    with pytest.raises(RuntimeError, match="allow_unused"):
        sg.autograd.grad((x * 2).sum(), [x, u])
    gx, gu = sg.autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
    gxt, gut = torch.autograd.grad((xt * 2).sum(), [xt, ut], allow_unused=True)
    assert gu is None and gut is None
    assert_close(gx, gxt)


def test_autograd_grad_with_respect_to_non_leaf_tensors():
    x, xt = leaves([0.1, 0.2, 0.3])
    y, yt = x.exp(), xt.exp()
    z, zt = (y * y.sin()).sum() * x.sum(), (yt * yt.sin()).sum() * xt.sum()
    gy, gx = sg.autograd.grad(z, [y, x])
    gyt, gxt = torch.autograd.grad(zt, [yt, xt])
    assert_close(gy, gyt)
    assert_close(gx, gxt)


def test_autograd_grad_corner_cases_match_torch():
    x, xt = leaves([1.0, 2.0])
    b, bt = x * 2, xt * 2
    out, out_t = (b.exp() * b).sum(), (bt.exp() * bt).sum()
    # an intermediate and the leaf upstream of it, together
    for g, gt in zip(
        sg.autograd.grad(out, [b, x], retain_graph=True), torch.autograd.grad(out_t, [bt, xt])
    ):
        assert_close(g, gt)
    # the same input twice, and the output itself
    g1, g2 = sg.autograd.grad(out, [x, x], retain_graph=True)
    assert_close(g1, g2)
    (self_grad,) = sg.autograd.grad(out, out)
    assert self_grad.item() == 1.0
    # backward from a leaf
    leaf = sg.tensor(2.0, requires_grad=True)
    leaf.backward()
    assert leaf.grad.item() == 1.0


def test_autograd_grad_with_grad_outputs():
    x, xt = leaves([[1.0, 2.0, 3.0]])
    v = [[0.5, 0.0, -2.0]]
    (g,) = sg.autograd.grad(x.tanh(), x, sg.tensor(v, dtype=sg.float64))
    (gt,) = torch.autograd.grad(xt.tanh(), xt, torch.tensor(v, dtype=torch.float64))
    assert_close(g, gt)


@pytest.mark.parametrize("loss_first", [False, True])
def test_autograd_grad_of_outputs_computed_from_each_other(loss_first):
    """A loss and the logits it was computed from, differentiated together (as a compiled
    module returning both is): the loss's gradient reaches the weights through the logits,
    in either order of the outputs (it was lost: the walk skipped the nodes between)."""
    (w, wt), (x, xt) = leaves([[1.0, -2.0], [0.5, 3.0]]), leaves([[0.3, 0.7], [-1.0, 2.0]])
    grads = []
    for lib, weight, inputs in ((sg, w, x), (torch, wt, xt)):
        logits = inputs @ weight
        loss = (logits * logits).sum()
        seeds = [lib.full((2, 2), 0.25, dtype=lib.float64), lib.ones((), dtype=lib.float64)]
        outputs = [logits, loss]
        if loss_first:
            outputs, seeds = outputs[::-1], seeds[::-1]
        grads.append(lib.autograd.grad(outputs, [weight, inputs], seeds))
    for g, gt in zip(*grads):
        assert_close(g, gt)


def test_non_leaf_tensors_have_no_grad_after_backward():
    x = sg.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    assert y.grad is None
    assert not y.is_leaf and x.is_leaf


# ---- hooks and retain_grad ------------------------------------------------------------------


def test_hooks_on_leaf_and_non_leaf_replace_the_gradient_as_in_torch():
    x, xt = leaves([1.0, 2.0, 3.0])
    y, yt = x * 2, xt * 2
    seen, seen_t = [], []
    y.register_hook(lambda g: seen.append(g.array.copy()) or g * 10)
    yt.register_hook(lambda g: seen_t.append(g.numpy().copy()) or g * 10)
    x.register_hook(lambda g: g + 1)
    xt.register_hook(lambda g: g + 1)
    (y * y + y).sum().backward()
    (yt * yt + yt).sum().backward()
    assert_close(x.grad, xt.grad)
    assert len(seen) == len(seen_t) == 1  # once, with the summed gradient of both uses
    np.testing.assert_allclose(seen[0], seen_t[0])


def test_retain_grad_keeps_the_gradient_hooks_registered_after_it_leave():
    """PyTorch runs the retain_grad hook last, whenever the other hooks came."""
    x, xt = leaves([1.0, -2.0, 3.0])
    kept = []
    for t in (x, xt):
        y = t.sin()
        y.retain_grad()
        y.register_hook(lambda g: g * 7)
        y.register_hook(lambda g: g + 1)
        (y * y).sum().backward()
        kept.append(y.grad)
    assert_close(*kept)
    assert_close(x.grad, xt.grad)


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_retain_grad_on_a_tensor_that_does_not_require_grad_raises(lib):
    """It would keep nothing: PyTorch refuses rather than ignore the call."""
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        lib.tensor([1.0, 2.0]).retain_grad()


def test_a_hook_returning_none_keeps_the_gradient():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(calls.append)
    (x * 3).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(x.grad.array, [3.0, 3.0])


def test_a_hook_on_the_output_sees_the_seed_gradient():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    out = (x * x).sum()
    out.register_hook(lambda g: g * 3)
    out.backward()
    np.testing.assert_array_equal(x.grad.array, [6.0, 12.0])


def test_register_hook_on_a_tensor_without_grad_raises():
    with pytest.raises(RuntimeError):
        sg.ones(2).register_hook(lambda g: g)


def test_register_hook_returns_a_removable_handle():
    x = sg.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    x.sum().backward()
    np.testing.assert_array_equal(x.grad.array, [1.0, 1.0])


@pytest.mark.parametrize("on", ["leaf", "non-leaf", "optimizer step"])
def test_a_handle_removes_its_own_registration_of_a_hook_registered_twice(on):
    """The same function registered twice: one handle's remove() (twice, even) leaves the
    other registration on, as PyTorch's (it took both off)."""
    seen = []
    for lib in (sg, torch):
        calls = []

        def hook(*args, calls=calls):
            calls.append(1)
            return None if on == "optimizer step" else args[0] * 2

        x = lib.ones(2, requires_grad=True)
        target = x * 1 if on == "non-leaf" else x
        opt = lib.optim.SGD([x], lr=0.1)
        register = opt.register_step_post_hook if on == "optimizer step" else target.register_hook
        first, _ = register(hook), register(hook)
        first.remove()
        first.remove()
        (target * 3).sum().backward()
        opt.step()
        seen.append((x.grad.numpy().tolist(), x.detach().numpy().tolist(), len(calls)))
    assert seen[0] == seen[1]


def test_a_hook_handle_as_a_context_manager_removes_the_hook_on_exit_as_in_torch():
    grads = []
    for lib in (sg, torch):
        x = lib.ones(2, dtype=lib.float64, requires_grad=True)
        with x.register_hook(lambda g: g * 100):
            (x * 2).sum().backward()
        (x * 3).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [203.0, 203.0]


def test_retain_grad_keeps_a_non_leaf_gradient():
    x, xt = leaves([1.0, -2.0])
    y, yt = x.sin(), xt.sin()
    y.retain_grad()
    yt.retain_grad()
    (y * y * 3 + y).sum().backward()
    (yt * yt * 3 + yt).sum().backward()
    assert_close(y.grad, yt.grad)
    assert_close(x.grad, xt.grad)


def test_retain_grad_on_the_output_and_on_a_leaf():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()  # a no-op on leaves, as in torch
    out = (x * x).sum()
    out.retain_grad()
    out.backward()
    assert out.grad.item() == 1.0
    np.testing.assert_array_equal(x.grad.array, [2.0, 4.0])


# ---- detach and requires_grad propagation ---------------------------------------------------


def test_detach_cuts_the_graph_and_shares_memory():
    x, xt = leaves([1.0, 2.0])
    d, dt = x.detach(), xt.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    (x * d).sum().backward()
    (xt * dt).sum().backward()
    assert_close(x.grad, xt.grad)  # d is a constant: the gradient is d, not 2x
    d.array[0] = 5.0
    assert x.array[0] == 5.0


@pytest.mark.parametrize(
    "a_grad, b_grad",
    [(False, False), (True, False), (False, True), (True, True)],
)
def test_requires_grad_propagates_like_torch(a_grad, b_grad):
    a, at = leaves([1.0], requires_grad=a_grad)
    b, bt = leaves([2.0], requires_grad=b_grad)
    for f in (lambda p, q: p * q, lambda p, q: (p + q).exp(), lambda p, q: p.sum() + 1.0):
        out, out_t = f(a, b), f(at, bt)
        assert out.requires_grad == out_t.requires_grad
        assert out.is_leaf == out_t.is_leaf
        assert (out.grad_fn is None) == (out_t.grad_fn is None)


def test_backward_on_a_tensor_that_does_not_require_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        (sg.ones(2) * 2).sum().backward()


# ---- in-place operations --------------------------------------------------------------------


def test_in_place_on_leaves_under_no_grad_changes_values_and_bumps_the_version():
    x, xt = leaves([1.0, 2.0, 3.0])
    with sg.no_grad():
        version = x._version
        x += 1
        x -= sg.tensor([0.5, 0.5, 0.5], dtype=sg.float64)
        x *= 2
    with torch.no_grad():
        xt += 1
        xt -= torch.tensor([0.5, 0.5, 0.5], dtype=torch.float64)
        xt *= 2
    assert_close(x, xt)
    assert x._version == version + 3
    assert x.requires_grad and x.is_leaf


@pytest.mark.parametrize("op", ["__iadd__", "__isub__", "__imul__", "__itruediv__"])
def test_in_place_on_a_leaf_requiring_grad_raises_and_leaves_it_unchanged(op):
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(x, op)(2.0)
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(xt, op)(2.0)
    np.testing.assert_array_equal(x.array, [1.0, 2.0])
    assert x._version == 0 and x.is_leaf and x.grad_fn is None


@pytest.mark.parametrize(
    "write",
    [
        lambda m, y: y.fill_(5.0),
        lambda m, y: y.copy_(m.ones(3, dtype=m.float64)),
        lambda m, y: y.__setitem__(1, 7.0),
    ],
)
def test_writing_constants_into_a_result_keeps_it_in_the_graph_as_torch(write):
    """The old entries get a zero gradient and the result stays a result (PyTorch's
    FillBackward): a later in-place op on it is recorded, not refused as on a leaf."""
    grads = []
    for m in (sg, torch):
        x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        y = x * x
        write(m, y)
        assert not y.is_leaf and y.grad_fn is not None
        y.mul_(2)
        y.sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]


def test_modifying_a_saved_output_in_place_raises_instead_of_a_wrong_gradient():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()  # Exp saves its output y
    z = y + 2  # Add saves nothing, so only Exp's check can fire
    y += 1
    with pytest.raises(RuntimeError, match="in-place"):
        z.sum().backward()
    assert x.grad is None


def test_modifying_a_saved_input_in_place_raises():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = y * x  # Mul saves y for x's gradient (and Exp its output y)
    y *= 3
    with pytest.raises(RuntimeError, match="modified by an in-place"):
        z.sum().backward()
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    yt = xt.exp()
    zt = yt * xt
    yt *= 3
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        zt.sum().backward()


STEPS = ["0.9 * x", "x * mask", "x / 2.0", "x / mask", "x @ c", "c @ x", "F.linear(x, c)"]


@pytest.mark.parametrize("step", [*STEPS, "m.einsum('i,ij->j', x, c)"])
def test_a_factor_saved_for_no_gradient_may_change_as_in_torch(step):
    """PyTorch saves a factor of a product (a dividend) only for the other operand's gradient:
    returns computed backwards into one buffer, each step reading the row after it
    (``returns[t] = rewards[t] + 0.9 * returns[t + 1]``), are no in-place error, and their
    gradient is PyTorch's."""
    grads = []
    for m in (sg, torch):
        rewards = m.tensor(np.linspace(-1.0, 1.0, 12).reshape(4, 3), requires_grad=True)
        returns, mask = m.zeros(4, 3, dtype=m.float64), m.tensor([1.0, 0.0, 2.0])
        c = m.tensor(np.linspace(-0.5, 0.7, 9).reshape(3, 3))
        returns[3] = rewards[3]
        for t in reversed(range(3)):
            names = {"x": returns[t + 1], "mask": mask, "c": c, "m": m, "F": m.nn.functional}
            returns[t] = rewards[t] + eval(step, names)
        (returns * m.arange(12.0).reshape(4, 3)).sum().backward()
        grads.append(rewards.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-12)


def test_increment_version_makes_a_graph_refuse_memory_changed_behind_its_back():
    """A write into ``.array`` that the graph cannot see, counted as PyTorch counts a write
    through ``data_ptr``: the backward that saved the memory (or a view of it) then raises."""
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    y, yt = x.exp(), xt.exp()  # Exp saves its output
    view, other = y[:1], sg.ones(2)
    z, zt = y * 2, yt * 2
    y.array += 1
    yt.data.add_(1)  # the same write, which neither library counts until told
    sg.autograd.graph.increment_version([other, view])  # a list, and a view counts for its base
    torch.autograd.graph.increment_version(yt)
    assert (y._version, other._version) == (1, 1) and yt._version == 1
    with pytest.raises(RuntimeError, match="modified by an in-place"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        zt.sum().backward()


VIEWS = {
    "reshape": lambda t: t.reshape(2, 2),
    "view": lambda t: t.view(-1),
    "slice": lambda t: t[1:],
    "detach": lambda t: t.detach(),
}  # not .data: torch documents that writes through .data are not tracked


@pytest.mark.parametrize("name", VIEWS)
def test_modifying_a_saved_tensor_through_a_view_raises(name):
    x = sg.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x.exp()  # Exp saves its output y
    with sg.no_grad():
        VIEWS[name](y).mul_(0.0)
    xt = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    yt = xt.exp()
    with torch.no_grad():
        VIEWS[name](yt).mul_(0.0)
    with pytest.raises(RuntimeError, match="inplace"):
        yt.sum().backward()
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


def test_in_place_on_an_unsaved_non_leaf_gives_torchs_gradients():
    x, xt = leaves([1.0, 2.0, -1.0])
    w, wt = leaves([0.5, -0.5, 2.0])
    y, yt = x + 1, xt + 1
    y *= w
    yt *= wt
    y -= 0.5
    yt -= 0.5
    y += x
    yt += xt
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    assert_close(y, yt)
    assert_close(x.grad, xt.grad)
    assert_close(w.grad, wt.grad)


def test_in_place_with_a_grad_tensor_turns_a_plain_leaf_into_a_graph_node():
    x, xt = leaves([1.0, 2.0])
    acc, acc_t = sg.zeros(2, dtype=sg.float64), torch.zeros(2, dtype=torch.float64)
    acc += x * x
    acc_t += xt * xt
    assert acc.requires_grad and not acc.is_leaf
    acc.sum().backward()
    acc_t.sum().backward()
    assert_close(x.grad, xt.grad)


# ---- anomaly detection ----------------------------------------------------------------------


@pytest.mark.parametrize("name, f", [("Sqrt", lambda x: x.sqrt()), ("Asin", lambda x: x.asin())])
def test_detect_anomaly_names_the_op_whose_backward_made_nan(name, f):
    x = sg.tensor([-2.0, 0.5], requires_grad=True)  # sqrt(-2), asin(-2): NaN, and NaN slopes
    with (
        np.errstate(invalid="ignore"),
        sg.autograd.detect_anomaly(),
        pytest.raises(RuntimeError, match=f"^Function '{name}Backward0' returned nan values"),
    ):
        f(x).sum().backward()
    assert x.grad is None


def test_without_anomaly_detection_inf_flows_as_in_torch():
    x, xt = leaves([0.0, 4.0])
    with np.errstate(divide="ignore"):
        x.sqrt().sum().backward()
    xt.sqrt().sum().backward()
    assert_close(x.grad, xt.grad)


def test_detect_anomaly_is_off_again_after_the_block():
    x = sg.tensor([-1.0], requires_grad=True)
    with pytest.raises(RuntimeError), sg.autograd.detect_anomaly(), np.errstate(invalid="ignore"):
        x.sqrt().sum().backward()
    with np.errstate(invalid="ignore"):
        x.sqrt().sum().backward()  # no error now: the gradient is simply NaN
    assert np.isnan(x.grad.array).all()


# ---- a leaf's first gradient is adopted without a copy only when no one else refers to it ----


def _shares(a, b) -> bool:
    return np.shares_memory(a.array, b.array)


def test_a_given_gradient_handed_to_two_leaves_is_copied_for_each():
    x = sg.zeros(3, requires_grad=True)
    y = sg.zeros(3, requires_grad=True)
    seed = sg.ones(3)
    (x + y).backward(gradient=seed)  # Add's backward returns the incoming gradient to both
    assert not _shares(x.grad, seed) and not _shares(y.grad, seed)
    assert not _shares(x.grad, y.grad)
    x.grad += 1  # later accumulation happens in place: it must not leak into the others
    assert seed.tolist() == [1.0, 1.0, 1.0] and y.grad.tolist() == [1.0, 1.0, 1.0]


def test_a_view_of_the_incoming_gradient_is_copied():
    x = sg.zeros(2, 3, requires_grad=True)
    seed = sg.ones(6)
    x.reshape(6).backward(gradient=seed)
    assert not _shares(x.grad, seed)


def test_a_custom_functions_gradient_is_copied_even_when_fresh():
    kept = []

    class KeepsItsGradient(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            kept.append(grad * 2)
            return kept[-1]

    x = sg.zeros(3, requires_grad=True)
    KeepsItsGradient.apply(x).sum().backward()
    assert not _shares(x.grad, kept[0])


def test_a_gradient_a_hook_has_seen_is_copied():
    seen = []
    x = sg.zeros(3, requires_grad=True)
    x.register_hook(lambda g: seen.append(g))
    (x * 2).sum().backward()
    assert not _shares(x.grad, seen[0])


def test_a_fresh_gradient_of_a_built_in_op_is_adopted_and_accumulates_correctly():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()  # two uses of x: the engine sums them into a new array
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]


@pytest.mark.parametrize("given", ["float32", "int64", "bool"])
def test_a_gradient_of_another_real_dtype_is_cast_to_the_outputs_as_pytorchs(given):
    """``y.backward(torch.ones(n))`` for a float64 ``y``: PyTorch's engine casts the given
    gradient to the output's dtype (this raised)."""
    grads = []
    for lib in (sg, torch):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        (x * x).backward(lib.tensor([1, 0, 2], dtype=getattr(lib, given)))
        grads.append((x.grad.dtype == lib.float64, x.grad.numpy().tolist()))
    assert grads[0] == grads[1]


def test_a_gradient_of_the_wrong_shape_or_a_complex_mismatch_raises_as_pytorchs():
    for lib in (sg, torch):
        y = lib.ones(3, dtype=lib.float64, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="shape"):
            y.backward(lib.ones(2, dtype=lib.float64), retain_graph=True)
        with pytest.raises(RuntimeError, match="both grad_output and output are required"):
            y.backward(lib.ones(3, dtype=lib.complex128))


RETAIN_THEN_CHANGE = {
    "the tensor": lambda m, a: _retained_then(m, a, lambda h: h.mul_(3)),
    "through a view": lambda m, a: _retained_then(m, a, lambda h: h[0:2].mul_(3)),
    "twice": lambda m, a: _retained_then(m, a, lambda h: (h.mul_(3), h.retain_grad(), h.add_(1))),
}


def _retained_then(m, a, change):
    h = a * 2
    h.retain_grad()
    change(h)
    (h * m.tensor([1.0, 5.0, 7.0], dtype=m.float64)).sum().backward()
    return h


@pytest.mark.parametrize("change", RETAIN_THEN_CHANGE)
def test_retain_grad_follows_an_in_place_change_as_torch(change):
    """.grad of a retained tensor changed in place afterwards is the gradient of its new
    values, as PyTorch's; it was the old values' gradient (3x too large here), silently."""
    results = []
    for m in (sg, torch):
        a = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        h = RETAIN_THEN_CHANGE[change](m, a)
        results.append((h.grad.numpy(), h.retains_grad, a.grad.numpy()))
    (grad, retains, a_grad), (expected, expected_retains, expected_a) = results
    np.testing.assert_allclose(grad, expected)
    np.testing.assert_allclose(a_grad, expected_a)
    assert retains == expected_retains


def test_a_retained_view_follows_its_base_changed_in_place_as_torch():
    results = []
    for m in (sg, torch):
        h = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True) * 2
        v = h[0:2]
        v.retain_grad()
        h.mul_(3)
        (v * m.tensor([1.0, 5.0], dtype=m.float64)).sum().backward()
        results.append(v.grad.numpy())
    np.testing.assert_allclose(*results)


@pytest.mark.parametrize("stop", ["detach_", "requires_grad_"])
def test_a_leaf_that_stops_requiring_grad_gets_no_grad_as_torch(stop):
    """A leaf used in a graph, then ``detach_()``ed or ``requires_grad_(False)``: PyTorch's
    backward leaves its .grad None; it was filled."""
    for m in (sg, torch):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        b = m.tensor([3.0, 4.0], requires_grad=True)
        y = (a * b).sum()
        a.detach_() if stop == "detach_" else a.requires_grad_(False)
        y.backward()
        assert a.grad is None and b.grad.tolist() == [1.0, 2.0], m.__name__


def test_grad_of_a_result_does_not_run_its_own_backward_as_torch():
    """autograd.grad(loss, [h]) needs the gradient reaching h, not h's backward: a tensor
    h saved, changed in place since, is no error (it raised), and no work is done for it."""
    for m in (sg, torch):
        a = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
        s = a + a
        h = s * a  # saves s
        s.mul_(1.5)
        (grad,) = m.autograd.grad((3 * h).sum(), [h])
        assert grad.tolist() == [3.0, 3.0, 3.0], m.__name__
