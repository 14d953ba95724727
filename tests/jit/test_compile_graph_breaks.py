"""``scratchgrad.compile`` where a module's forward cannot be recorded (``.item()``, a Python
branch on a tensor, ``nonzero()``, random numbers drawn outside scratchgrad): as
``torch.compile`` breaks the graph there, the calls of that signature run eagerly, warned of
once, and train bit for bit as eager ones; ``fullgraph=True`` raises the ``JitError``
(tests/jit/test_compiled_module.py), as PyTorch's option makes graph breaks errors."""

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


def _input_grads(model, call, steps=4):
    """The inputs' gradients of ``steps`` calls of ``call(model, x)`` (each backpropagating a
    loss), the inputs leaves made from one seed."""
    sg.manual_seed(1)
    grads = []
    for _ in range(steps):
        x = sg.randn(4, 3, requires_grad=True)
        call(model, x)
        grads.append(x.grad.numpy().copy())
    return grads


def _with_the_auxiliary_loss(model, x):
    out = model(x)
    (out.sum() + getattr(model, "_orig_mod", model).aux).backward()


def _through_a_gradient(model, x):
    (grad,) = sg.autograd.grad(model(x).sum(), [x], create_graph=True)
    grad.square().sum().backward()  # (as forces from an energy: a gradient of a gradient)


@pytest.mark.parametrize("call", [_with_the_auxiliary_loss, _through_a_gradient])
@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_gradients_reaching_a_given_up_calls_argument_by_other_ways_reach_the_argument(call):
    """The call given up ran its forward on a leaf copy of the argument: what reaches the copy
    outside the call's result (a stored loss; a gradient differentiated again) went nowhere,
    silently (the argument's .grad lacked it, None for the gradient's gradient)."""
    sg.manual_seed(0)
    eager, model = _KeepsAnAuxiliaryLoss(), _KeepsAnAuxiliaryLoss()
    model.load_state_dict(eager.state_dict())
    expected = _input_grads(eager, call)
    result = _input_grads(sg.compile(model), call)
    for a, b in zip(result, expected):  # (the given-up call's sums in another order)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.linear.weight.grad.numpy(), eager.linear.weight.grad, 1e-5)


@pytest.mark.filterwarnings("ignore:scratchgrad.compile")
def test_a_stored_loss_reaching_a_given_up_calls_non_leaf_argument_raises():
    compiled_model = sg.compile(_KeepsAnAuxiliaryLoss())
    for _ in range(2):  # the second call records, and is given up
        x = sg.randn(4, 3, requires_grad=True) * 2
        out = compiled_model(x)
    with pytest.raises(RuntimeError, match=r"argument of shape \(4, 3\) .* given up"):
        (out.sum() + compiled_model.aux).backward()
