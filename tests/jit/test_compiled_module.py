"""``scratchgrad.compile(module)`` captures the forward and the backward it records (as PyTorch's
AOTAutograd): trained with any loss and optimizer outside, the compiled module gives the eager
module's losses, gradients and states bit for bit; every guard and error, one by one."""

import copy

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.jit.compiled import CompiledFunctionBackward

# The models here count their Python calls in an attribute, which the jit warns a replay will
# not do (the warning's own tests: tests/jit/test_jit_pitfalls.py).
pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

F = nn.functional


def _counting(model):
    """``model`` with a count of the calls that ran its Python forward (the eager call and the
    recordings; a replay runs none)."""
    forward = model.forward
    model.python_calls = 0

    def counted(*args, **kwargs):
        # kept past Module.__setattr__, which would stamp the module as changed (the
        # recordings hold it) and make it record anew
        model.__dict__["python_calls"] += 1
        return forward(*args, **kwargs)

    model.forward = counted
    return model


def _mlp():
    return nn.Sequential(
        nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Dropout(0.25), nn.Linear(8, 3)
    )


def _cnn():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 3),
    )


def _batches(shape, count=2, seed=5):
    sg.manual_seed(seed)
    return [sg.randn(*shape) for _ in range(count)], sg.randint(0, 3, (shape[0],))


def _train(make, compiled, batches, labels, loss_fn=F.cross_entropy, steps=6, optimizer=None):
    """Train a fresh seeded model ``steps`` steps, compiled (True), compiled in place ("in
    place") or not: the losses, the model's and the optimizer's state, and the model."""
    sg.manual_seed(0)
    model = _counting(make())
    net = sg.compile(model) if compiled is True else model
    if compiled == "in place":
        assert model.compile() is None  # Module.compile: the model itself is captured
    opt = (optimizer or (lambda p: sg.optim.Adam(p, lr=0.01)))(net.parameters())
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn(net(batches[step % len(batches)]), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, _arrays(model.state_dict()), _arrays(opt.state_dict()["state"]), model


def _arrays(tree):
    if isinstance(tree, dict):
        return {key: _arrays(value) for key, value in tree.items()}
    return tree.numpy().copy() if isinstance(tree, sg.Tensor) else tree


def _assert_same(found, expected, where=""):
    if isinstance(expected, dict):
        assert found.keys() == expected.keys(), where
        for key in expected:
            _assert_same(found[key], expected[key], f"{where}/{key}")
    elif isinstance(expected, list):
        assert len(found) == len(expected), where
        for index, (a, b) in enumerate(zip(found, expected)):
            _assert_same(a, b, f"{where}[{index}]")
    elif isinstance(expected, np.ndarray):
        np.testing.assert_array_equal(found, expected, err_msg=where)
    else:
        assert found == expected, where


@pytest.mark.parametrize(
    "make, shape, optimizer",
    [
        (_mlp, (16, 4), None),
        (_cnn, (8, 1, 6, 6), lambda p: sg.optim.SGD(p, lr=0.05, momentum=0.9)),
    ],
    ids=["mlp-adam", "cnn-sgd-momentum"],
)
@pytest.mark.parametrize("how", [True, "in place"], ids=["compile(model)", "model.compile()"])
def test_trained_compiled_equals_eager_bit_for_bit(make, shape, optimizer, how):
    """Train-mode batch norm and seeded dropout included: losses, state dicts and the
    optimizer's state equal, and the Python forward ran three times (eager, two recordings)."""
    batches, labels = _batches(shape)
    eager = _train(make, False, batches, labels, optimizer=optimizer)
    compiled = _train(make, how, batches, labels, optimizer=optimizer)
    assert compiled[0] == eager[0]
    _assert_same(compiled[1], eager[1])
    _assert_same(compiled[2], eager[2])
    assert compiled[3].python_calls == 3
    if how == "in place":  # no wrapper: the state dict's keys are the module's own
        assert list(compiled[3].state_dict()) == list(make().state_dict())


def test_compile_in_place_takes_compiles_options():
    """``disable=True`` leaves the module eager; ``mode`` with ``options`` raises as
    ``compile`` does; other options are accepted."""
    model = _counting(nn.Linear(2, 2))
    model.compile(disable=True)
    for _ in range(4):
        model(sg.ones(1, 2)).sum().backward()
    assert model.python_calls == 4
    with pytest.raises(RuntimeError, match="either mode or options"):
        model.compile(mode="max-autotune", options={})
    model.compile(mode="reduce-overhead", fullgraph=True, dynamic=False)
    for _ in range(4):
        model(sg.ones(1, 2)).sum().backward()
    assert model.python_calls == 4 + 3


LOSSES = {
    "sum": lambda out, y: out.sum(),  # a broadcast gradient (strides 0)
    "mean-of-squares": lambda out, y: out.square().mean(),
    "cross-entropy": F.cross_entropy,
    "transposed": lambda out, y: (out.T @ sg.ones(len(out), 2)).exp().sum(),  # F order
    "column-and-transpose": lambda out, y: out[:, 0].sum() + (out.T * 2).mean(),
}


@pytest.mark.parametrize("loss_fn", LOSSES.values(), ids=LOSSES.keys())
def test_any_loss_outside_gives_the_eager_gradients(loss_fn):
    """The backward is recorded with the first gradient that arrives, in its layout (a
    transposed one included), so the replayed backward makes eager's calls on it."""
    batches, labels = _batches((8, 4))
    eager = _train(_mlp, False, batches, labels, loss_fn)
    compiled = _train(_mlp, True, batches, labels, loss_fn)
    assert compiled[0] == eager[0]
    _assert_same(compiled[1], eager[1])


def _two_forwards_then_one_backward(compiled):
    sg.manual_seed(0)
    model = _mlp()
    net = sg.compile(model) if compiled else model
    opt = sg.optim.SGD(net.parameters(), lr=0.1)
    batches, labels = _batches((16, 4), count=4, seed=3)
    found = []
    for step in range(5):
        opt.zero_grad()
        first = net(batches[step % 4])
        second = net(batches[(step + 1) % 4])
        (F.cross_entropy(first, labels) + 2 * second.square().mean()).backward()
        found.append({name: p.grad.numpy().copy() for name, p in model.named_parameters()})
        opt.step()
    return found, first.grad_fn


def test_two_forwards_then_one_backward_of_their_sum():
    """Each call's node keeps that call's saved values (dropout masks, batch statistics):
    two forwards before one backward both backpropagate, while recording and replaying."""
    eager, _ = _two_forwards_then_one_backward(False)
    compiled, node = _two_forwards_then_one_backward(True)
    assert isinstance(node, CompiledFunctionBackward)
    _assert_same(compiled, eager)


def _input_gradients(compiled):
    sg.manual_seed(0)
    before, model = nn.Linear(3, 4), _mlp()
    net = sg.compile(model) if compiled else model
    grads = []
    for step in range(5):
        sg.manual_seed(10 + step)
        leaf = sg.randn(16, 4, requires_grad=True)
        x0 = sg.randn(16, 3)
        hidden = before(x0)  # not a leaf: the gradient goes on into `before`
        (net(leaf).square().sum() + net(hidden).sum()).backward()
        grads.append([leaf.grad.numpy(), before.weight.grad.numpy().copy()])
        before.zero_grad()
        model.zero_grad()
    return grads


def test_gradients_of_inputs_reach_leaves_and_the_graph_they_came_from():
    eager, compiled = _input_gradients(False), _input_gradients(True)
    for step, (found, expected) in enumerate(zip(compiled, eager)):
        for a, b in zip(found, expected):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step}")


class _InputHooks(nn.Module):
    """A forward that hooks its input's gradient, or makes its input require grad."""

    def __init__(self, how):
        super().__init__()
        self.fc, self.how = nn.Linear(3, 2), how

    def forward(self, x):
        if self.how == "hook" and x.requires_grad:
            x.register_hook(lambda grad: grad * 3)
        elif self.how == "requires_grad_":
            x.requires_grad_()
        return self.fc(x).tanh()


@pytest.mark.parametrize("how", ["hook", "requires_grad_"])
def test_what_forward_does_to_its_input_tensors_gradient_replays(how):
    """``x.register_hook`` in forward hooks the gradient the caller's ``x`` gets (it went to
    the argument's leaf, which the recorded backward stripped of its hooks), and
    ``x.requires_grad_()`` makes it require grad and get its gradient at each replay too, as
    eagerly (before, both were lost silently)."""
    found = []
    for compiled in (False, True):
        sg.manual_seed(0)
        model = _InputHooks(how)
        net, found = sg.compile(model) if compiled else model, [*found, []]
        for _ in range(6):
            x = sg.randn(4, 3, requires_grad=how == "hook")
            net(x).square().sum().backward()
            found[-1].append([x.requires_grad, x.grad.numpy(), model.fc.weight.grad.numpy().copy()])
    _assert_same(found[1], found[0])


class _Pair(nn.Module):
    """Several outputs: two differentiable, one integer."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 2)

    def forward(self, x):
        out = self.a(x).tanh()
        return out, {"b": self.b(x) * 2}, out.argmax(1)


def test_a_module_with_several_outputs():
    grads = []
    for compiled in (False, True):
        sg.manual_seed(0)
        model = _Pair()
        net = sg.compile(model) if compiled else model
        for step in range(5):
            sg.manual_seed(step)
            out, rest, index = net(sg.randn(6, 4))
            (out.exp().sum() + rest["b"].square().sum()).backward()
        assert index.dtype == sg.int64 and not index.requires_grad
        grads.append({name: p.grad.numpy() for name, p in model.named_parameters()})
    _assert_same(grads[1], grads[0])


def test_no_grad_and_eval_mode_replay_the_forward_and_equal_eager():
    sg.manual_seed(0)
    model = _counting(_mlp())
    compiled = sg.compile(model)
    batches, _ = _batches((16, 4))
    for mode in ("train", "eval"):
        getattr(compiled, mode)()
        for _ in range(5):
            with sg.no_grad():
                found = compiled(batches[0])
            assert found.grad_fn is None and not found.requires_grad
            if mode == "eval":  # (train mode's dropout draws differ from call to call)
                np.testing.assert_array_equal(found.numpy(), model(batches[0]).detach().numpy())
                model.__dict__["python_calls"] -= 1  # the eager check's call
    assert model.python_calls == 1 + 2 + 2  # eager; two recordings per mode
    # eval mode with gradients: the backward is recorded and replayed too
    x = batches[1]
    expected = [p.grad for p in model.parameters()]
    assert all(g is None for g in expected)
    for _ in range(4):
        model.zero_grad()
        model(x).sum().backward()
        expected = [p.grad.numpy() for p in model.parameters()]
        model.zero_grad()
        out = compiled(x)
        out.sum().backward()
        for p, e in zip(model.parameters(), expected):
            np.testing.assert_array_equal(p.grad.numpy(), e)
    assert isinstance(out.grad_fn, CompiledFunctionBackward)


class _GradInside(nn.Module):
    """A forward that records a graph even when called under ``no_grad``."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        with sg.enable_grad():
            return self.fc(x).tanh()


def test_a_forward_enabling_grad_inside_no_grad_keeps_its_gradient():
    """Under ``no_grad``, a forward's ``with enable_grad():`` makes outputs that need a
    gradient, as eagerly: the recordings and replays hang them from their node too (before,
    they came back without a graph, and ``backward()`` raised). Under ``inference_mode`` it
    records none, so the programs recorded there are not replayed under ``no_grad``."""
    sg.manual_seed(0)
    model, eager = _counting(_GradInside()), _GradInside()
    eager.load_state_dict(model.state_dict())
    compiled = sg.compile(model)
    for step, mode in enumerate([sg.inference_mode] * 4 + [sg.no_grad] * 6):
        x = sg.randn(4, 3)
        with mode():
            found, expected = compiled(x), eager(x)
        assert found.requires_grad == expected.requires_grad == (mode is sg.no_grad), step
        np.testing.assert_array_equal(found.detach().numpy(), expected.detach().numpy())
        if mode is sg.no_grad:
            found.square().sum().backward()
            expected.square().sum().backward()
            for p, e in zip(model.parameters(), eager.parameters()):
                np.testing.assert_array_equal(p.grad.numpy(), e.grad.numpy())
    assert isinstance(found.grad_fn, CompiledFunctionBackward)
    assert model.python_calls == 5  # eager, two recordings per mode: then replays


def test_outputs_without_backward_run_eagerly_after_two_recordings():
    """Validation without no_grad: a recording is complete once its backward ran, so after two
    calls whose outputs got none, calls run eagerly (recording each one would be several times
    slower), recording again at the 4th, 8th, 16th... call (then every 1,024th); a backward
    brings the replays back."""
    sg.manual_seed(0)
    model = _counting(_mlp()).eval()
    compiled = sg.compile(model)
    x = _batches((16, 4))[0][0]
    expected = model(x).detach().numpy()
    outs = [compiled(x) for _ in range(20)]
    recorded = [
        i for i, out in enumerate(outs) if isinstance(out.grad_fn, CompiledFunctionBackward)
    ]
    assert recorded == [1, 2, 4, 8, 16]  # call 1 is eager; then two recordings, and the 4th...
    for out in outs:
        np.testing.assert_array_equal(out.detach().numpy(), expected)
    outs[16].sum().backward()  # completes that recording
    for _ in range(3):
        model.zero_grad()
        out = compiled(x)
        out.sum().backward()
    calls = model.python_calls
    out = compiled(x)
    assert isinstance(out.grad_fn, CompiledFunctionBackward) and model.python_calls == calls


def test_a_long_validation_without_backward_records_again_at_powers_of_two_then_every_1024th():
    """A validation of n calls without no_grad pays about log2(n) recordings, not n / 16
    (162 us each against eager's 33 us on a 64-128-10 MLP), and a backward is noticed again
    within 1,024 calls."""
    model = nn.Linear(3, 2).eval()
    compiled = sg.compile(model)
    x = sg.ones(4, 3)
    outs = [compiled(x) for _ in range(3073)]
    recorded = [
        i for i, out in enumerate(outs) if isinstance(out.grad_fn, CompiledFunctionBackward)
    ]
    assert recorded == [1 << n for n in range(12)] + [3072]  # call i + 1: its i-th without one


@pytest.mark.parametrize(
    "change",
    ["batch size", "dtype", "input requires grad", "frozen parameter", "grad mode", "eval"],
)
def test_each_guard_records_a_new_program_that_equals_eager(change):
    sg.manual_seed(0)
    model = _counting(nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2)))
    compiled = sg.compile(model)
    x = sg.randn(6, 4)
    for _ in range(4):  # eager, two recordings, a replay
        compiled(x).sum().backward()
    assert model.python_calls == 3
    if change == "batch size":
        x = sg.randn(3, 4)
    elif change == "dtype":
        model.double()
        x = x.double()
    elif change == "input requires grad":
        x = x.detach().requires_grad_()
    elif change == "frozen parameter":
        model[0].weight.requires_grad_(False)
    elif change == "eval":
        model.eval()
    context = sg.no_grad() if change == "grad mode" else sg.enable_grad()
    for _ in range(3):
        model.zero_grad()
        if x.requires_grad:
            x.grad = None
        with context:
            expected = model(x)
            model.__dict__["python_calls"] -= 1  # the eager call
            if expected.requires_grad:
                expected.square().sum().backward()
            eager = [None if p.grad is None else p.grad.numpy() for p in model.parameters()]
            eager_x = None if x.grad is None else x.grad.numpy()
            model.zero_grad()
            x.grad = None
            found = compiled(x)
            np.testing.assert_array_equal(found.detach().numpy(), expected.detach().numpy())
            if found.requires_grad:
                found.square().sum().backward()
            grads = [None if p.grad is None else p.grad.numpy() for p in model.parameters()]
            for g, e in zip(grads, eager):
                assert (g is None) == (e is None)
                if e is not None:
                    np.testing.assert_array_equal(g, e)
            if eager_x is not None:
                np.testing.assert_array_equal(x.grad.numpy(), eager_x)
    assert model.python_calls == 5  # two more recordings, then a replay


@pytest.mark.parametrize("in_place", [False, True])
def test_the_cache_limit_warns_once_then_runs_eagerly(in_place):
    model = _counting(nn.Linear(2, 2))
    compiled = model if in_place else sg.compile(model)
    if in_place:
        model.compile()
    compiled(sg.randn(1, 2))  # eager
    for rows in range(1, 9):  # eight batch sizes, one recording each
        compiled(sg.randn(rows, 2)).sum().backward()
    with pytest.warns(UserWarning, match="recorded 8 programs") as warned:
        out = compiled(sg.randn(9, 2))
    assert warned[0].filename == __file__  # the user's line
    assert not isinstance(out.grad_fn, CompiledFunctionBackward)  # eager
    compiled(sg.randn(10, 2))  # no second warning (pytest's filters would raise it)


def _line_of(fragment):
    """The number of the first line of this file holding ``fragment``."""
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if fragment in line)


class _Reads(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.linear, self.how = nn.Linear(2, 2), how

    def forward(self, x):
        out = self.linear(x)
        if self.how == "item":
            return out * out.sum().item()  # READS item
        if self.how == "bool" and out.sum() > 0:  # READS bool
            return out * 3
        if out.array.sum() > 0:  # a branch on the data, out of scratchgrad's sight
            return out * 2  # READS times two
        return -out  # READS minus


@pytest.mark.parametrize("how, says", [("item", r"\.item\(\) at "), ("bool", r"bool\(tensor\)")])
def test_reading_a_value_in_forward_raises_jit_error_naming_the_line(how, says):
    """``.item()``, or a Python branch on a tensor (where ``torch.compile`` breaks the graph
    and runs the branch eagerly: README, "What is different")."""
    compiled = sg.compile(_Reads(how), fullgraph=True)
    x = sg.ones(3, 2)
    compiled(x)  # eager
    with pytest.raises(sg.JitError, match=says) as info:
        compiled(x)
    assert f"test_compiled_module.py:{_line_of(f'# READS {how}')} " in str(info.value)


def test_a_branch_on_tensor_data_raises_when_the_second_recording_differs():
    model = _Reads("branch")
    with sg.no_grad():  # the branch's sign is the input's (not the random weights')
        model.linear.weight.fill_(1.0)
        model.linear.bias.zero_()
    compiled = sg.compile(model, fullgraph=True)
    positive = sg.ones(3, 2) * 100
    compiled(positive).sum().backward()  # eager
    compiled(positive).sum().backward()  # recorded
    with pytest.raises(sg.JitError, match="recorded different calls") as info:
        compiled(-positive).sum().backward()  # recorded again: the branch went the other way
    times_two, minus = _line_of("# READS times two"), _line_of("# READS minus")
    assert f"test_compiled_module.py:{times_two}, then " in str(info.value)
    assert f"test_compiled_module.py:{minus}) " in str(info.value)


def test_create_graph_through_a_compiled_module_raises():
    compiled = sg.compile(nn.Linear(2, 2))
    x = sg.randn(3, 2, requires_grad=True)
    for _ in range(3):
        compiled(x).sum().backward()
    with pytest.raises(RuntimeError, match="double backward"):
        sg.autograd.grad(compiled(x).square().sum(), x, create_graph=True)


def test_a_second_backward_needs_retain_graph_as_eagerly():
    """On every call: the eager one, the two recordings (before, their second backward ran
    eagerly through the graph they made and added to the gradients again) and replays."""
    model = nn.Linear(2, 2)
    compiled = sg.compile(model)
    x = sg.randn(3, 2)
    for _ in range(4):
        loss = compiled(x).sum()  # (a sum saves nothing: its second backward reaches the node)
        loss.backward()
        with pytest.raises(RuntimeError, match="a second time"):
            loss.backward()
    model.zero_grad()
    loss = compiled(x).square().sum()
    loss.backward(retain_graph=True)
    once = model.weight.grad.numpy().copy()
    loss.backward()
    np.testing.assert_array_equal(model.weight.grad.numpy(), 2 * once)
    with pytest.raises(RuntimeError, match="a second time"):
        loss.backward()


def test_changing_a_saved_input_in_place_before_backward_raises():
    compiled = sg.compile(nn.Linear(2, 2))
    for _ in range(3):
        compiled(sg.randn(3, 2)).sum().backward()
    x = sg.randn(3, 2)
    out = compiled(x)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        out.sum().backward()


@pytest.mark.parametrize("part", [lambda out: out, lambda out: out[:, :1]], ids=["all", "view"])
def test_changing_a_saved_output_in_place_before_backward_raises_as_eagerly(part):
    """A sigmoid's backward reads its output: changed in place by the caller (or through a
    view of it), backward() raises, on a recording call and on a replay, as eagerly (and as
    torch.compile's modules do), instead of differentiating the new values."""
    compiled = sg.compile(nn.Sequential(nn.Linear(2, 2), nn.Sigmoid()))
    for call in range(5):
        replay = any(r.checked for rs in compiled._compiled.recordings.values() for r in rs)
        out = compiled(sg.randn(3, 2))
        if call in (1, 4):  # a recording, whose backward runs the eager graph; a replay
            part(out).mul_(2)
            with pytest.raises(RuntimeError, match="modified by an in-place operation"):
                out.sum().backward()
        else:
            out.sum().backward()
    assert replay  # the last call replayed


def test_an_output_the_backward_does_not_read_may_be_changed_in_place():
    """Masking logits in place after the last linear layer (which saves its input, not its
    output) leaves the replayed backward as eager's."""
    grads = []
    for wrap in (lambda m: m, sg.compile):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 3))
        net = wrap(model)
        for _ in range(5):
            model.zero_grad()
            logits = net(sg.ones(4, 2))
            logits[:, 0] = -1e9
            F.cross_entropy(logits, sg.tensor([1, 2, 1, 2])).backward()
        grads.append(model[0].weight.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("backwards", [1, 2])
def test_a_parameters_gradient_hook_runs_once_as_eagerly(backwards):
    """A hook on a parameter (registered before the first call, or between replays) changes
    the gradient the engine accumulates once per backward, as eagerly; run by the recorded
    backward too, it halved the gradient twice."""
    grads = []
    for wrap in (lambda m: m, sg.compile):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        model[2].weight.register_hook(lambda g: g * 0.5)
        net = wrap(model)
        for call in range(7):
            if call == 5:
                model[0].weight.register_hook(lambda g: g.clamp(-0.01, 0.01))
            model.zero_grad()
            out = net(sg.randn(4, 3))
            for _ in range(backwards):
                out.square().sum().backward(retain_graph=True)
            grads.append([p.grad.numpy().copy() for p in model.parameters()])
    for eager, compiled in zip(grads[:7], grads[7:]):
        for e, c in zip(eager, compiled):
            np.testing.assert_array_equal(c, e)


def _keeping_gradients(model, kept, where):
    """Hooks on ``model`` (a Sequential) keeping its last layer's input and its first
    layer's output gradient in the dict ``kept``, or the gradient as an attribute of it."""
    model[2].register_forward_hook(lambda module, args, out: kept.__setitem__("x", args[0]))

    def keep(module, grad_input, grad_output):
        if where == "dict":
            kept["grad"] = grad_output[0]
        else:
            module.last_grad = grad_output[0]

    model[0].register_full_backward_hook(keep)


@pytest.mark.parametrize("where", ["dict", "module attribute"])
def test_a_backward_hook_keeping_gradients_warns_that_replays_do_not_run_it(where):
    """The backward a compiled module records runs its backward hooks' Python once, while
    recording: what they keep (Grad-CAM's gradients) is not kept again by replays, which
    must warn (before, replays left the recording's gradient there silently)."""
    sg.manual_seed(0)
    model, kept = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)), {}
    _keeping_gradients(model, kept, where)
    compiled = sg.compile(model)
    x = sg.randn(5, 3, requires_grad=True)
    compiled(x).sum().backward()  # eager
    what = "'kept' of its enclosing function" if where == "dict" else "an attribute of its Linear"
    with pytest.warns(UserWarning, match=f"the backward of Sequential.forward.. changed {what}"):
        compiled(x).sum().backward()


def test_a_tensor_with_an_outside_graph_reached_by_name_raises():
    model = nn.Linear(2, 2)
    scale = sg.ones(2, requires_grad=True) * 3  # not a leaf, not an argument

    class Scaled(nn.Module):
        def forward(self, x):
            return model(x) * scale

    compiled = sg.compile(Scaled(), fullgraph=True)
    compiled(sg.randn(3, 2))  # eager
    with pytest.raises(sg.JitError, match="made by operations outside it") as info:
        compiled(sg.randn(3, 2))  # OUTSIDE call
    assert f"Scaled.forward (called at {__file__}:{_line_of('# OUTSIDE call')})" in str(info.value)


class _ConstantGradient(sg.autograd.Function):
    """Doubles its input, and gives a gradient that is not computed from the incoming one."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return sg.Tensor._make(np.full(grad.shape, 2.0, np.float32))


def test_a_gradient_that_is_a_constant_raises():
    """A recorded backward whose gradient for an argument is a constant array (made outside
    scratchgrad's operations) cannot be replayed for another upstream gradient."""

    class Doubled(nn.Module):
        def forward(self, x):
            return _ConstantGradient.apply(x)

    compiled = sg.compile(Doubled(), fullgraph=True)
    x = sg.ones(3, 2, requires_grad=True)
    compiled(x).sum().backward()  # eager
    with pytest.raises(
        sg.JitError, match=r"Doubled\.forward\(\) was not computed .*constant"
    ) as info:
        compiled(x).sum().backward()  # CONSTANT backward
    assert f"{__file__}:{_line_of('# CONSTANT backward')};" in str(info.value)


def test_a_backward_through_a_recording_call_inside_a_jitted_step_raises():
    """The output of a compiled module's recording call, backpropagated inside a jitted step:
    the module's backward would be recorded into the step's program."""
    compiled = sg.compile(nn.Linear(2, 2))
    backward = sg.jit(lambda out: out.sum().backward())  # BACKWARD inside
    x = sg.ones(3, 2)
    backward(compiled(x))  # both eager
    with pytest.raises(
        sg.JitError, match="a backward through a compiled module's recording"
    ) as info:
        backward(compiled(x))  # both record
    assert f"test_compiled_module.py:{_line_of('# BACKWARD inside')} " in str(info.value)


def test_a_leaf_reached_by_name_given_a_new_array_records_anew():
    """A tensor the forward reads by name (not an argument, not a parameter) enters the
    programs as its array: given a new one (``.data = ...``) or made to require grad, the next
    call records anew, equal to eager."""
    scale = sg.full((2,), 2.0)

    class Scaled(nn.Module):
        def forward(self, x):
            return x * scale

    compiled, x = sg.compile(Scaled()), sg.ones(3, 2)
    for _ in range(4):
        assert compiled(x).tolist() == [[2.0, 2.0]] * 3
    scale.data = sg.full((2,), 5.0)
    assert compiled(x).tolist() == [[5.0, 5.0]] * 3
    scale.requires_grad_()
    compiled(x).sum().backward()
    assert scale.grad.tolist() == [3.0, 3.0]


def _jitted_training(compiled):
    sg.manual_seed(0)
    model = _mlp()
    net = sg.compile(model) if compiled else model
    opt = sg.optim.SGD(net.parameters(), lr=0.1)

    @sg.jit
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    batches, labels = _batches((16, 4))
    losses = [step(batches[i % 2], labels).item() for i in range(5)]
    return losses, _arrays(model.state_dict())


def test_a_compiled_module_inside_a_jitted_step_is_recorded_by_the_step():
    """The step's recording sees the module's operations (no nested capture)."""
    eager, compiled = _jitted_training(False), _jitted_training(True)
    assert compiled[0] == eager[0]
    _assert_same(compiled[1], eager[1])


def _scaled_by_name(compiled):
    sg.manual_seed(0)
    scale = sg.randn(3, requires_grad=True)  # a leaf, neither an argument nor a parameter
    linear = nn.Linear(2, 3)

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = linear

        def forward(self, x):
            return self.linear(x) * scale

    net = sg.compile(Scaled()) if compiled else Scaled()
    for _ in range(4):
        net(sg.randn(4, 2)).square().sum().backward()
    return [scale.grad.numpy(), linear.weight.grad.numpy()]


def test_a_leaf_reached_by_name_gets_its_gradient():
    _assert_same(_scaled_by_name(True), _scaled_by_name(False))


class _Power(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 2)

    def forward(self, x, *, power, shift=None):
        out = self.linear(x) ** power
        return out if shift is None else out + shift


def test_keyword_and_other_arguments_are_part_of_the_key():
    sg.manual_seed(0)
    model = _counting(_Power())
    compiled = sg.compile(model)
    x, shift = sg.randn(3, 2), sg.randn(3, 2, requires_grad=True)
    calls = [dict(power=2), dict(power=3), dict(power=2, shift=shift)]
    for _ in range(3):
        for kwargs in calls:
            for net in (model, compiled):  # eager first: the gradients it leaves are the oracle
                model.zero_grad()
                shift.grad = None
                net(x, **kwargs).sum().backward()
                grads = [p.grad.numpy() for p in model.parameters()]
                if "shift" in kwargs:
                    grads.append(shift.grad.numpy())
                if net is model:
                    expected = grads
                else:
                    _assert_same(grads, expected, str(kwargs))
    assert model.python_calls == 9 + 1 + 3 * 2  # eager ones, compile's first, two recordings each


def test_on_another_device_the_module_runs_eagerly():
    """The programs are NumPy calls: a module on a GPU (here the strict device, which
    behaves as CuPy's arrays) runs as the plain module, with eager's results."""
    pytest.importorskip("strict")  # registers the device
    sg.manual_seed(0)
    model = _counting(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)))
    compiled = sg.compile(model)
    x = sg.randn(5, 3)
    for _ in range(4):  # eager, two recordings, a replay on the CPU
        compiled(x).sum().backward()
    model.to("strict")
    model.zero_grad()
    for _ in range(3):
        out = compiled(x.to("strict"))
        assert out.device.type == "strict" and not isinstance(out.grad_fn, CompiledFunctionBackward)
    assert model.python_calls == 3 + 3


def test_autocast_is_part_of_the_key():
    """Inside an autocast region the module's casts differ: another program, equal to eager
    (outputs and gradients)."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    compiled = sg.compile(model)
    x = sg.randn(5, 3)
    for inside in (False, False, False, False, True, True, True, False, True):
        results = []
        for net in (model, compiled):
            model.zero_grad()
            with sg.autocast("cpu", dtype=sg.bfloat16, enabled=inside):
                out = net(x)
            out.float().square().sum().backward()
            results.append([out.float().detach().numpy(), model[0].weight.grad.numpy()])
        assert out.dtype == (sg.bfloat16 if inside else sg.float32)
        _assert_same(results[1], results[0], f"autocast {inside}")
    assert sum(map(len, compiled._compiled.recordings.values())) == 2


def _two_calls_in_one_autocast_region(compiled):
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    net = sg.compile(model) if compiled else model
    opt = sg.optim.SGD(net.parameters(), lr=0.5)
    x1, x2 = sg.randn(5, 3), sg.randn(5, 3)
    found = []
    for _ in range(5):
        opt.zero_grad()
        with sg.autocast("cpu", dtype=sg.bfloat16):
            first, second = net(x1), net(x2)  # eagerly, the second reuses the weights' casts
        first.float().square().mean().backward()
        opt.step()
        found.append([first.float().detach().numpy(), second.float().detach().numpy()])
    return found


def test_two_calls_in_one_autocast_region_cast_the_current_weights():
    """Autocast keeps a region's casts of the weights for its later ops; a recording must
    not freeze such a cast (made by an earlier call) into its program."""
    _assert_same(_two_calls_in_one_autocast_region(True), _two_calls_in_one_autocast_region(False))


def test_a_deep_copy_records_its_own_programs():
    """The programs name the original's arrays (batch norm's running statistics): a copy
    (an EMA model, a checkpoint) must not replay them."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    compiled = sg.compile(model)
    x = sg.randn(6, 3)
    for _ in range(4):
        compiled(x).sum().backward()
    before = model[1].running_mean.numpy().copy()
    twin = copy.deepcopy(compiled)
    eager_twin = copy.deepcopy(model)
    for _ in range(4):
        found, expected = twin(x * 5), eager_twin(x * 5)
        np.testing.assert_array_equal(found.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(model[1].running_mean.numpy(), before)
    np.testing.assert_array_equal(
        twin._orig_mod[1].running_mean.numpy(), eager_twin[1].running_mean.numpy()
    )
