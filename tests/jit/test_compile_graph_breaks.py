"""``scratchgrad.compile`` where a module's forward cannot be recorded (``.item()``, a Python
branch on a tensor, ``nonzero()``, random numbers drawn outside scratchgrad): as
``torch.compile`` breaks the graph there, the calls of that signature run eagerly, warned of
once, and train bit for bit as eager ones; ``fullgraph=True`` raises the ``JitError``
(tests/jit/test_compiled_module.py), as PyTorch's option makes graph breaks errors."""

import copy
import re
import warnings

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.jit import compiled


def _line_of(fragment):
    """The number of the first line of this file holding ``fragment``."""
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if fragment in line)


class _Breaks(nn.Module):
    """Dropout and batch statistics (random draws and buffers a second run would change
    again) before the read that cannot be recorded."""

    def __init__(self, how):
        super().__init__()
        self.linear, self.drop, self.norm = nn.Linear(3, 4), nn.Dropout(0.5), nn.BatchNorm1d(4)
        self.how = how

    def forward(self, x):
        h = self.norm(self.drop(self.linear(x)))
        if self.how == "item":
            return h * (1.0 + abs(h.sum().item()))  # BREAKS item
        if self.how == "bool":
            return h * 2 if h.sum() > 0 else -h  # BREAKS bool
        return h * len((h > 0).nonzero()) / h.numel()  # BREAKS nonzero


class _DrawsOutside(_Breaks):
    def forward(self, x):
        return self.norm(self.drop(self.linear(x))) * float(np.random.rand())


def _train(model, x_requires_grad, steps=6, eval_at=()):
    """Losses and the inputs' gradients of a few steps (in eval mode at the steps
    ``eval_at``); the model keeps the final weights and buffers."""
    opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sg.manual_seed(1)
    np.random.seed(1)
    losses, input_grads = [], []
    for step in range(steps):
        model.train(step not in eval_at)
        x = sg.randn(5, 3, requires_grad=x_requires_grad)
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if x_requires_grad:
            input_grads.append(x.grad.numpy().copy())
    return losses, input_grads


@pytest.mark.parametrize("x_requires_grad", [False, True])
@pytest.mark.parametrize("how", ["item", "bool", "nonzero", "numpy"])
def test_a_forward_that_cannot_be_recorded_runs_eagerly_and_trains_as_eager(how, x_requires_grad):
    sg.manual_seed(0)
    eager = _DrawsOutside(how) if how == "numpy" else _Breaks(how)
    model = type(eager)(how)
    model.load_state_dict(eager.state_dict())
    expected = _train(eager, x_requires_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _train(sg.compile(model), x_requires_grad)
    np.testing.assert_array_equal(result[0], expected[0])
    np.testing.assert_array_equal(result[1], expected[1])
    for key, value in eager.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[key].numpy(), value.numpy(), key)
    breaks = [w for w in caught if "breaks the graph" in str(w.message)]
    assert len(breaks) == 1  # once, at the first call given up
    assert breaks[0].filename == __file__  # the line calling the model
    if how != "numpy":  # (drawn outside scratchgrad: named by the forward's definition)
        assert f"{__file__}:{_line_of(f'# BREAKS {how}')}" in str(breaks[0].message)


def test_a_module_compiled_in_place_takes_fullgraph():
    model = _Breaks("item")
    model.compile(fullgraph=True)
    model(sg.randn(5, 3))  # eager
    with pytest.raises(sg.JitError, match=r"\.item\(\) at "):
        model(sg.randn(5, 3))


class _ReadsOneRow(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 2)

    def forward(self, x):
        out = self.linear(x)
        return out * out.sum().item() if len(x) == 1 else out  # a read for one shape only


def test_only_the_signature_given_up_runs_eagerly(monkeypatch):
    """Calls of other shapes record and replay as before."""
    replays = []
    run = compiled.Recording.run
    monkeypatch.setattr(
        compiled.Recording, "run", lambda self, t: replays.append(1) or run(self, t)
    )
    net = sg.compile(_ReadsOneRow())
    with pytest.warns(UserWarning, match="breaks the graph"):
        for _ in range(4):
            net(sg.randn(1, 2)).sum().backward()
    assert not replays
    for _ in range(5):
        net(sg.randn(3, 2)).sum().backward()
    assert len(replays) == 3  # the (3, 2) calls after the two recorded


def test_a_branch_seen_only_when_the_recordings_differ_runs_eagerly_from_then_on():
    """A branch on data read out of scratchgrad's sight (NumPy on ``.array``) is caught when
    the second recording differs from the first: that call and the later ones of its
    signature run eagerly, equal to eager calls."""

    class Branch(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)

        def forward(self, x):
            out = self.linear(x)
            return out * 2 if out.array.sum() > 0 else -out

    sg.manual_seed(0)
    eager, model = Branch(), Branch()
    model.load_state_dict(eager.state_dict())
    net = sg.compile(model)
    inputs = [sg.ones(3, 2) * s for s in (100, 100, -100, 100, -100, -100)]
    with pytest.warns(UserWarning, match="recorded different calls"):
        for x in inputs:
            net(x).square().sum().backward()
    for x in inputs:
        eager(x).square().sum().backward()
    np.testing.assert_array_equal(model.linear.weight.grad.numpy(), eager.linear.weight.grad)


def _steps(compile_options, read_first=False):
    """The losses of a few training steps, each returning ``loss.item()`` (the step jitted
    by ``sg.compile(step, **compile_options)``, or eager for None), and the final weights.
    ``read_first``: the step reads the loss before its backward too (a guard against a
    diverging loss), so that its backward and Adam's update run after the break."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Dropout(0.2), nn.Linear(8, 1))
    opt = sg.optim.Adam(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        if read_first and loss > 1e6:  # BREAKS before backward
            return float("nan")
        loss.backward()
        opt.step()
        return loss.item()  # BREAKS step

    if compile_options is not None:
        step = sg.compile(step, **compile_options)
    sg.manual_seed(1)
    data = [(sg.randn(16, 3), sg.randn(16, 1)) for _ in range(6)]
    return [step(x, y) for x, y in data], model.state_dict()


@pytest.mark.parametrize("read_first", [False, True])
def test_a_compiled_training_step_reading_the_loss_runs_eagerly_and_trains_as_eager(read_first):
    """``return loss.item()`` at the end of a compiled step, common in PyTorch scripts, or a
    branch on the loss before its backward: the step runs eagerly (the recording call goes on
    eagerly from the read, its backward and update too), warned of once."""
    expected, weights = _steps(None, read_first)
    with pytest.warns(UserWarning, match="breaks the graph") as warned:
        losses, state = _steps({}, read_first)
    assert [str(w.message).count("breaks the graph") for w in warned] == [1]
    assert warned[0].filename == __file__
    line = _line_of("# BREAKS before backward" if read_first else "# BREAKS step")
    assert f"{__file__}:{line}" in str(warned[0].message)
    assert losses == expected
    for key, value in weights.items():
        np.testing.assert_array_equal(state[key].numpy(), value.numpy(), key)
    with pytest.raises(sg.JitError, match=r"\.item\(\) at "):
        _steps({"fullgraph": True})


class _InnerBreaks(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        h = self.linear(x)
        return h * (1.0 + abs(h.sum().item()))


class _Nested(nn.Module):
    """A module whose child is compiled too (its own recordings, given up by its own
    break), called between layers of the outer compiled forward."""

    def __init__(self, compile_inner=False):
        super().__init__()
        self.before, self.inner, self.after = nn.Linear(3, 3), _InnerBreaks(), nn.Linear(3, 2)
        if compile_inner:
            self.inner.compile()

    def forward(self, x):
        return self.after(self.inner(self.before(x)).tanh())


class _Hooked(nn.Module):
    """A hook reading a value into Python: at the forward, or in the backward."""

    def __init__(self, hook):
        super().__init__()
        self.linear, self.seen = nn.Linear(3, 4), []
        if hook == "forward":
            self.linear.register_forward_hook(lambda m, i, out: self.seen.append(out.sum().item()))
        else:
            self.linear.register_full_backward_hook(
                lambda m, gi, go: self.seen.append(go[0].sum().item())
            )

    def forward(self, x):
        return self.linear(x).tanh()


class _CountsAndReadsInEval(nn.Module):
    """A buffer changed in place at every call, and a read only in eval mode."""

    def __init__(self):
        super().__init__()
        self.linear, self.norm = nn.Linear(3, 4), nn.BatchNorm1d(4)
        self.register_buffer("calls", sg.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        h = self.norm(self.linear(x)) * self.calls
        return h if self.training else h * h.sum().item()


@pytest.mark.parametrize(
    "make, eval_at",
    [
        (lambda: _Hooked("forward"), ()),
        (lambda: _Hooked("backward"), ()),
        (_CountsAndReadsInEval, (1, 4, 5)),
        (lambda: _Nested(compile_inner=True), ()),
    ],
    ids=["forward-hook", "backward-hook", "buffer-then-eval-read", "nested-compiled"],
)
@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_breaks_in_hooks_eval_mode_and_compiled_children_train_as_eager(make, eval_at):
    sg.manual_seed(0)
    eager, model = make(), make()
    model.load_state_dict(eager.state_dict())
    if isinstance(eager, _Nested):  # (the eager twin's child is not compiled)
        eager = _Nested()
        eager.load_state_dict(model.state_dict())
    expected = _train(eager, True, 8, eval_at)
    result = _train(sg.compile(model), True, 8, eval_at)
    np.testing.assert_array_equal(result[0], expected[0])
    np.testing.assert_array_equal(result[1], expected[1])
    for key, value in eager.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[key].numpy(), value.numpy(), key)
    assert getattr(model, "seen", []) == getattr(eager, "seen", [])


class _ReturnsArgument(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        h = self.linear(x)
        positive = int((h > 0).sum())  # a Python int returned beside tensors
        return {"x": x, "h": h * positive, "count": positive, "pair": (h, x * 2)}


@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_a_given_up_forward_returns_its_argument_itself_and_python_values():
    sg.manual_seed(0)
    eager, model = _ReturnsArgument(), _ReturnsArgument()
    model.load_state_dict(eager.state_dict())
    compiled_model = sg.compile(model)
    for _ in range(5):
        x = sg.randn(4, 3, requires_grad=True)
        grads = []
        for called, weights in ((eager, eager), (compiled_model, model)):
            out = called(x)
            assert out["x"] is x
            loss = (
                out["h"].sum() + out["pair"][0].square().sum() + (out["pair"][1] * out["x"]).sum()
            )
            grads.append([out["count"], *sg.autograd.grad(loss, [x, *weights.parameters()])])
        assert grads[1][0] == grads[0][0]
        for a, b in zip(grads[0][1:], grads[1][1:]):
            np.testing.assert_array_equal(b.numpy(), a.numpy())


class _KeepsItsArgument(nn.Linear):
    def __init__(self):
        super().__init__(3, 2)
        self.seen = {}

    def forward(self, x):
        self.last, self.seen["x"] = x, x
        h = super().forward(x)
        return h * h.sum().item()  # a graph break


@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_a_given_up_forward_storing_its_argument_stores_the_callers_tensor():
    model = _KeepsItsArgument()
    compiled_model = sg.compile(model)
    for _ in range(4):  # (the second call is given up, the later ones eager)
        x = sg.randn(2, 3, requires_grad=True)
        compiled_model(x)
        assert model.last is x and model.seen["x"] is x


def _accumulating_steps(compiled_step, set_to_none):
    """Three steps per update (the gradients accumulated across calls), the update skipped
    when the gradients' norm (read into Python between backward and step) is too large."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Dropout(0.2), nn.Linear(8, 1))
    opt = sg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = sg.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (1 + epoch))
    calls = [0]

    def step(x, y):
        loss = nn.functional.mse_loss(model(x), y) / 3
        loss.backward()
        calls[0] += 1
        if calls[0] % 3 == 0:
            if sum(p.grad.norm() for p in model.parameters()) < 1e6:  # BREAKS between
                opt.step()
                scheduler.step()
            opt.zero_grad(set_to_none=set_to_none)
        return loss.detach()

    if compiled_step:
        step = sg.compile(step)
    sg.manual_seed(1)
    losses = [step(sg.randn(16, 3), sg.randn(16, 1)).item() for _ in range(9)]
    return losses, model.state_dict(), opt.param_groups[0]["lr"]


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.filterwarnings("ignore:scratchgrad")
def test_a_compiled_step_accumulating_gradients_and_breaking_before_the_update(set_to_none):
    expected, weights, lr = _accumulating_steps(False, set_to_none)
    losses, state, compiled_lr = _accumulating_steps(True, set_to_none)
    assert losses == expected and compiled_lr == lr
    for key, value in weights.items():
        np.testing.assert_array_equal(state[key].numpy(), value.numpy(), key)


class _KeepsAnAuxiliaryLoss(nn.Module):
    """A loss stored on the module (a mixture of experts' balance loss) beside a break."""

    def __init__(self):
        super().__init__()
        self.linear, self.aux = nn.Linear(3, 3), None

    def forward(self, x):
        h = self.linear(x).tanh()
        self.aux = (h * x).square().mean()
        return h * (1.0 + abs(h.sum().item()))


def _input_grads(model, call, leaf, steps=4):
    """What ``call(model, x, argument)`` gives at ``steps`` calls (each differentiating a
    loss), the leaves ``x`` made from one seed and passed as they are (``leaf``) or through an
    operation (a non-leaf argument); and the weight's gradient."""
    sg.manual_seed(1)
    found = []
    for _ in range(steps):
        x = sg.randn(4, 3, requires_grad=True)
        found.append(call(model, x, x if leaf else x * 2).numpy())
    return found, getattr(model, "_orig_mod", model).linear.weight.grad


def _with_the_auxiliary_loss(model, x, argument):
    out = model(argument)
    (out.sum() + getattr(model, "_orig_mod", model).aux).backward()
    return x.grad


def _through_a_gradient(model, x, argument):
    (grad,) = sg.autograd.grad(model(argument).sum(), [x], create_graph=True)
    grad.square().sum().backward()  # (as forces from an energy: a gradient of a gradient)
    return x.grad


def _second_derivative_by_name(model, x, argument):
    (grad,) = sg.autograd.grad(model(argument).sum(), [x], create_graph=True)
    return sg.autograd.grad(grad.square().sum(), [x])[0]


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non-leaf"])
@pytest.mark.parametrize(
    "call", [_with_the_auxiliary_loss, _through_a_gradient, _second_derivative_by_name]
)
@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_gradients_reaching_a_given_up_calls_argument_by_other_ways_are_eagers(call, leaf):
    """The call given up ran its forward on a copy of the argument, cut from the argument's
    graph while it was recorded and joined back when it was given up: its result is the eager
    graph, so what reaches the copy outside the call's result (a stored loss; a gradient
    differentiated again; a second derivative asked of the argument by name) reaches the
    argument as eagerly, bit for bit. Before, such sums were added in another order, the
    second derivative by name was not found (None with ``allow_unused=True``), and a stored
    loss reaching a non-leaf argument raised."""
    sg.manual_seed(0)
    eager, model = _KeepsAnAuxiliaryLoss(), _KeepsAnAuxiliaryLoss()
    model.load_state_dict(eager.state_dict())
    (expected, expected_weight), (found, weight) = (
        _input_grads(eager, call, leaf),
        _input_grads(sg.compile(model), call, leaf),
    )
    for a, b in zip(found, expected):
        np.testing.assert_array_equal(a, b)
    if expected_weight is not None:
        np.testing.assert_array_equal(weight.numpy(), expected_weight.numpy())


class _ScalesItsArgument(nn.Module):
    """A forward changing its argument in place, after keeping its gradient, with or without
    a break after."""

    def __init__(self, breaks):
        super().__init__()
        self.linear, self.breaks = nn.Linear(3, 3), breaks

    def forward(self, h):
        h.retain_grad()
        h.mul_(2)
        out = self.linear(h).tanh()
        return out * (1.0 + abs(out.sum().item())) if self.breaks else out


def _scaling_calls(model, steps=4):
    """What a loss reading the argument after each call gives: the argument's node, version
    and gradient, the output and the gradients of the leaves before and in the model."""
    sg.manual_seed(0)
    pre = nn.Linear(3, 3)
    found = []
    for _ in range(steps):
        x = sg.randn(4, 3, requires_grad=True)
        h = pre(x)
        out = model(h)
        (out.square().sum() + (h * h).sum()).backward()
        found.append([h.grad_fn.name(), h._version, out.detach().numpy(), h.grad.numpy()])
        found[-1] += [t.grad.numpy().copy() for t in (x, pre.weight, *model.parameters())]
    return found


@pytest.mark.parametrize("breaks", [False, True])
@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_a_forward_changing_a_non_leaf_argument_in_place_runs_as_eager(breaks):
    """``h.mul_(2)`` on an argument that requires grad and is not a leaf, allowed eagerly,
    raised PyTorch's error for a leaf at the recording calls (the forward saw a leaf copy).
    Its copy is not a leaf now; since no replay could give the caller's ``h`` the change's
    node, the call is given up (warned of, naming the change), and ``h`` takes that node, as
    eagerly: a loss reading ``h`` after the call gets eager's gradients bit for bit."""
    sg.manual_seed(0)
    eager, model = _ScalesItsArgument(breaks), _ScalesItsArgument(breaks)
    model.load_state_dict(eager.state_dict())
    expected = _scaling_calls(eager)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = _scaling_calls(sg.compile(model))
    for ours, theirs in zip(found, expected):
        assert ours[:2] == theirs[:2] == ["MulBackward0", 1]
        for a, b in zip(ours[2:], theirs[2:]):
            np.testing.assert_array_equal(a, b)
    why = r"changes its argument of shape \(4, 3\), which requires grad, in place \(MulBackward0\)"
    assert [re.search(why, str(w.message)) is not None for w in caught] == [not breaks]


def test_under_fullgraph_the_change_of_an_argument_in_place_raises_and_leaves_it_as_eagerly():
    compiled_model = sg.compile(_ScalesItsArgument(False), fullgraph=True)
    pre = nn.Linear(3, 3)
    compiled_model(pre(sg.randn(4, 3)))  # eager
    h = pre(sg.randn(4, 3))
    with pytest.raises(sg.JitError, match=r"argument of shape \(4, 3\), which requires grad"):
        compiled_model(h)
    assert h.grad_fn.name() == "MulBackward0" and h._version == 1


@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_a_view_argument_changed_in_place_by_a_given_up_call_raises():
    """Eagerly the change would be taken into the graph of the view's base: a given-up call
    cannot, and says so (the values are changed)."""
    compiled_model, pre = sg.compile(_ScalesItsArgument(True)), nn.Linear(3, 3)
    compiled_model(pre(sg.randn(5, 3))[1:])  # eager
    with pytest.raises(RuntimeError, match=r"argument of shape \(4, 3\), a view .* in place"):
        compiled_model(pre(sg.randn(5, 3))[1:])


def _scaled_calls(compiled, steps=4):
    """The gradients of calls of a forward reading by name a tensor made outside it with a
    graph (not a leaf, not an argument), its input requiring grad."""
    sg.manual_seed(0)
    linear, weights = nn.Linear(3, 3), sg.randn(3, requires_grad=True)
    scale = weights * 3

    class Scaled(nn.Module):
        def forward(self, x):
            return linear(x).tanh() * scale

    net = sg.compile(Scaled()) if compiled else Scaled()
    found = []
    for _ in range(steps):
        x = sg.randn(4, 3, requires_grad=True)
        net(x).square().sum().backward(retain_graph=True)  # (scale's graph, at every call)
        found.append(
            [x.grad.numpy(), weights.grad.numpy().copy(), linear.weight.grad.numpy().copy()]
        )
    return found


def test_a_forward_reading_a_tensor_with_an_outside_graph_by_name_runs_eagerly():
    """A recorded backward cannot follow such a tensor's graph (``fullgraph=True`` raises:
    ``test_a_tensor_with_an_outside_graph_reached_by_name_raises``); without it the call runs
    eagerly, as eager (before, with an argument that requires grad, it raised all the same)."""
    expected = _scaled_calls(False)
    with pytest.warns(UserWarning, match="made by operations outside it"):
        found = _scaled_calls(True)
    for ours, theirs in zip(found, expected):
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)


_SEEN = []  # what _SetsItsArgument's forward sees (on the module, a change warned of)


class _SetsItsArgument(nn.Module):
    """A forward reading its argument's autograd state (kept in ``_SEEN``), then doing
    ``how`` to it."""

    def __init__(self, how):
        super().__init__()
        self.linear, self.how = nn.Linear(3, 2), how

    def forward(self, x):
        _SEEN.append([x.is_leaf, x.grad_fn, x.grad, x.requires_grad])
        if self.how == "requires_grad_":
            x.requires_grad_(False)
        elif self.how == "twice":  # (and back: the forward's uses need its gradient again)
            x.requires_grad_(False).requires_grad_(True)
        elif self.how == "detach_":
            x.detach_()
        elif self.how == "deepcopy":  # (a new leaf, whose gradient goes nowhere)
            x = copy.deepcopy(x)
        _SEEN[-1] += [x.is_leaf, x.grad_fn, x.requires_grad]
        return self.linear(x).tanh()


def _setting_calls(model, leaf, steps=6):
    """What each call gives and leaves: its result, the argument's requires_grad and
    gradient, the weight's gradient, and what the forward saw (``_SEEN``), the argument's
    ``grad`` and ``grad_fn`` compared by identity with the caller's."""
    sg.manual_seed(0)
    pre, found = nn.Linear(3, 3), []
    _SEEN.clear()
    for _ in range(steps):
        x = sg.randn(4, 3, requires_grad=True)
        x.grad = sg.ones(4, 3)  # (what the forward reads as x.grad)
        h = x if leaf else pre(x)
        node = h.grad_fn
        out = model(h)
        out.square().sum().backward()
        found.append([out.detach().numpy(), h.requires_grad, x.grad.numpy()])
        found[-1].append(model.linear.weight.grad.numpy().copy())
        if _SEEN:  # (a replay runs no forward)
            is_leaf, grad_fn, grad, requires_grad, *after = _SEEN.pop()
            after[1] = after[1] is node
            found[-1] += [is_leaf, grad_fn is node, grad is h.grad, requires_grad, *after]
    return found


@pytest.mark.parametrize("leaf", [True, False])
@pytest.mark.parametrize("how", ["read", "requires_grad_", "twice", "detach_", "deepcopy"])
def test_a_compiled_forward_reads_and_sets_its_arguments_autograd_state_as_eagerly(how, leaf):
    """An argument that requires grad enters a recording as a copy cut from its graph: its
    ``is_leaf`` was False and ``grad_fn`` an identity node for a leaf, its ``.grad`` None,
    and ``x.requires_grad_(False)`` on a leaf raised PyTorch's error for a non-leaf (before
    the copy was a node's, the caller's flag stayed True silently). Now the copy answers
    them from the caller's tensor, and ``requires_grad_(False)`` or ``detach_()`` on a leaf
    sets the caller's flag, as eagerly, replayed at each call; on a non-leaf,
    ``requires_grad_(False)`` raises PyTorch's error as eagerly, and ``detach_()``, which no
    replay could do, is a graph break. A deep copy of a leaf's copy raised PyTorch's error
    for a non-leaf; it is the leaf's now."""
    error = "graph leaves" if how == "deepcopy" else "only change requires_grad flags of leaf"
    if how in ("requires_grad_", "twice", "deepcopy") and not leaf:
        for net in (_SetsItsArgument(how), sg.compile(_SetsItsArgument(how))):
            for _ in range(3):
                with pytest.raises(RuntimeError, match=error):
                    net(nn.Linear(3, 3)(sg.randn(4, 3)))
        return
    sg.manual_seed(0)
    eager, model = _SetsItsArgument(how), _SetsItsArgument(how)
    model.load_state_dict(eager.state_dict())
    expected = _setting_calls(eager, leaf)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = _setting_calls(sg.compile(model), leaf)
    for ours, theirs in zip(found, expected, strict=True):
        for a, b in zip(ours, theirs[: len(ours)], strict=True):
            np.testing.assert_array_equal(a, b)
    # (a deep copy's array is made outside scratchgrad's ops: frozen, as of any argument)
    breaks = how == "deepcopy" or (how == "detach_" and not leaf)
    why = "a different constant" if how == "deepcopy" else r"x\.detach_\(\) on an argument"
    given_up = [str(w.message) for w in caught if "breaks the graph" in str(w.message)]
    assert [re.search(why, message) is not None for message in given_up] == [True] * breaks
    assert len(found[-1]) == (len(expected[-1]) if breaks else 4)  # (replayed, else eager)


class _HooksItsArgument(nn.Module):
    """A forward registering a hook on its argument: one of the gradient alone, or one
    holding a tensor the call made."""

    def __init__(self, holds):
        super().__init__()
        self.linear, self.holds = nn.Linear(3, 2), holds

    def forward(self, x):
        _SEEN.append(x.shape)  # (the calls that run it: not the replays)
        out = self.linear(x)
        if self.holds:
            scale = out.detach().abs().mean() + 1
            x.register_hook(lambda grad: grad.clamp(-0.1, 0.1) * scale)
        else:
            x.register_hook(lambda grad: grad.clamp(-0.1, 0.1))
        return out.tanh()


def _hooked_calls(model, steps=6):
    """The argument's and the weight's gradients, the argument also used outside the call."""
    sg.manual_seed(0)
    found = []
    _SEEN.clear()
    for _ in range(steps):
        x = sg.randn(4, 3, requires_grad=True)
        (model(x).square().sum() + x.sum()).backward()
        found.append([x.grad.numpy(), model.linear.weight.grad.numpy().copy()])
    return found


@pytest.mark.parametrize("holds", [False, True])
def test_a_hook_a_compiled_forward_registers_on_its_argument_gets_its_whole_gradient(holds):
    """``x.register_hook`` in the forward went on the argument's copy, so it saw only the
    gradient from inside the call (eagerly: the sum with x's uses outside it). It is now
    registered on the caller's ``x``, and again at each replay, as eagerly; a hook holding a
    value of the call (a closure over a tensor it made), which a replay would register with
    the recording's value, is a graph break."""
    sg.manual_seed(0)
    eager, model = _HooksItsArgument(holds), _HooksItsArgument(holds)
    model.load_state_dict(eager.state_dict())
    expected = _hooked_calls(eager)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = _hooked_calls(sg.compile(model))
    for ours, theirs in zip(found, expected, strict=True):
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(a, b)
    why = r"x\.register_hook\(hook\) on an argument, the hook holding values of the call"
    given_up = [str(w.message) for w in caught if "breaks the graph" in str(w.message)]
    assert [re.search(why, message) is not None for message in given_up] == [True] * holds
    assert len(_SEEN) == (6 if holds else 3)  # (eager, then given up; else replayed)


def test_an_in_place_change_of_a_leaf_argument_raises_pytorchs_error_as_eagerly():
    """The copy of a leaf that requires grad was no leaf: the change was allowed, and the
    given-up call made the caller's leaf hang from the change's node."""

    class Scales(nn.Linear):
        def forward(self, x):
            x.mul_(2)
            return super().forward(x)

    net = sg.compile(Scales(3, 2))
    for _ in range(3):
        x = sg.randn(4, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
            net(x)
        assert x.is_leaf and x._version == 0


class _SetsItsArgumentsGrad(nn.Linear):
    def forward(self, x):
        x.grad = None if self.out_features == 2 else sg.zeros(4, 3)
        return super().forward(x)


def _grad_setting_calls(model, requires_grad, steps=6):
    sg.manual_seed(0)
    found = []
    for _ in range(steps):
        x = sg.randn(4, 3, requires_grad=requires_grad)
        x.grad = sg.ones(4, 3)
        out = model(x)
        found.append(x.grad)  # (before the backward: the forward's)
        out.square().sum().backward()
        found += [x.grad, model.weight.grad.numpy().copy()]
    return [None if t is None else np.array(t) for t in found]


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("out_features", [2, 5])
def test_a_compiled_forward_setting_its_arguments_grad_sets_each_calls(requires_grad, out_features):
    """``x.grad = None`` in the forward went to the argument's copy (requiring grad: the
    caller's ``.grad`` stayed) or to the recording call's tensor at each replay (not: each
    later caller's stayed). Now each call sets its own argument's, as eagerly; assigning a
    tensor, which a replay would assign again, is a graph break (as under ``jit``)."""
    sg.manual_seed(0)
    eager, model = _SetsItsArgumentsGrad(3, out_features), _SetsItsArgumentsGrad(3, out_features)
    model.load_state_dict(eager.state_dict())
    expected = _grad_setting_calls(eager, requires_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = _grad_setting_calls(sg.compile(model), requires_grad)
    for a, b in zip(found, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    why = r"breaks the graph.*assigning \.grad of tensor argument #0"
    assert [re.search(why, str(w.message)) is not None for w in caught] == [True] * (
        out_features == 5
    )
