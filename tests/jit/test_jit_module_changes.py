"""A module changed between the calls of a jitted step or of a compiled module (a layer or a
parameter replaced, ``dropout.p``, a Python attribute its forward reads) records a new
program, so that the calls go on equal to eager ones bit for bit. What leaves the modules
alone (train/eval, LR schedulers, optimizer steps, ``zero_grad``), and what a recording sets
itself (a forward caching ``self.last``), records nothing more."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn

# The models here count the runs of their Python forward in a list and keep what it computed,
# which the jit warns a replay will not do (its own tests: tests/jit/test_jit_pitfalls.py).
pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

F = nn.functional
CHANGE_AT = 5  # after the eager call, the two recordings and two replays


class Net(nn.Module):
    """A model whose forward reads Python attributes, its own and its layers'."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 8)
        self.body = nn.Sequential(nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 8))
        self.head = nn.Linear(8, 3)
        self.scale, self.use_residual = 1.0, True
        self.runs = []  # an entry per run of the Python forward (appended: no attribute set)

    def forward(self, x):
        self.runs.append(None)
        h = self.fc(x)
        out = self.body(h)
        if self.use_residual:
            out = out + h
        return self.head(out * self.scale)


class Trainer:
    """A model, its optimizer, and a training step, jitted (``how="jit"``), or calling the
    compiled model (``how="compile"``), or eager. The step reads the optimizer as an
    attribute, so that one rebuilt is not seen by itself (only a name is guarded)."""

    def __init__(self, how):
        sg.manual_seed(0)
        self.model = Net()
        self.net = sg.compile(self.model) if how == "compile" else self.model
        self.opt = sg.optim.Adam(self.net.parameters(), lr=0.01)
        self.step = sg.jit(self._step) if how == "jit" else self._step

    def _step(self, x, y):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.net(x), y)
        loss.backward()
        self.opt.step()
        return loss

    def recordings(self):
        owner = self.net._compiled if isinstance(self.step, type(self._step)) else self.step
        return sum(map(len, owner.recordings.values()))


def _new_first_layer(trainer):
    trainer.model.fc = nn.Linear(4, 8)
    trainer.opt = sg.optim.Adam(trainer.model.parameters(), lr=0.01)  # over the new weights


def _set(path, value):
    """A change setting the attribute at ``path`` (dotted, from the model) to ``value()``."""

    def change(trainer):
        owner, _, name = path.rpartition(".")
        setattr(trainer.model.get_submodule(owner), name, value())

    return change


CHANGES = {
    "a linear layer replaced, and the optimizer rebuilt": _new_first_layer,
    "a layer of a Sequential replaced": lambda t: t.model.body.__setitem__(0, nn.ReLU()),
    "a parameter replaced": _set("head.bias", lambda: nn.Parameter(sg.ones(3))),
    "a bias removed": _set("head.bias", lambda: None),
    "dropout.p": _set("body.1.p", lambda: 0.2),
    "a Python number read by forward": _set("scale", lambda: 0.5),
    "a Python flag read by forward": _set("use_residual", lambda: False),
}


def _train(how, change, steps=9):
    """The losses of ``steps`` seeded steps with ``change`` made before the step
    ``CHANGE_AT``, the model's state dict after them, and the trainer."""
    rng = np.random.default_rng(1)
    trainer, losses = Trainer(how), []
    for i in range(steps):
        if i == CHANGE_AT:
            sg.manual_seed(1)  # the new layer's weights, and the draws after
            CHANGES[change](trainer)
        x = sg.from_numpy(rng.standard_normal((6, 4)).astype(np.float32))
        losses.append(trainer.step(x, sg.from_numpy(rng.integers(0, 3, 6))).item())
    return losses, {k: v.numpy().copy() for k, v in trainer.model.state_dict().items()}, trainer


@pytest.mark.parametrize("how", ["jit", "compile"])
@pytest.mark.parametrize("change", CHANGES)
def test_a_module_changed_between_calls_records_anew_and_trains_as_eager(how, change):
    """Each change records a new program (the Python forward runs twice more) whose calls equal
    the eager steps' bit for bit: losses, and the weights at the end (the new layer's too); the
    recording made before is dropped (it cannot match again)."""
    eager_losses, eager_state, _ = _train("eager", change)
    losses, state, trainer = _train(how, change)
    assert losses == eager_losses
    assert state.keys() == eager_state.keys()
    for name, array in eager_state.items():
        np.testing.assert_array_equal(state[name], array, err_msg=name)
    assert len(trainer.model.runs) == 1 + 2 + 2  # eager; two recordings, before and after
    assert trainer.recordings() == 1


def test_a_parameter_of_a_module_the_step_reads_by_name_replaced_records_anew():
    """A module the step reads by name without calling it (a global, or a variable of the
    enclosing function) is held too, with its submodules."""
    layer = nn.Linear(2, 3)
    project = sg.jit(lambda x: x @ layer.weight.T)
    x = sg.ones(4, 2)
    for _ in range(4):  # eager, two recordings, a replay
        project(x)
    layer.weight = nn.Parameter(sg.full((3, 2), 2.0))
    assert project(x).tolist() == [[4.0, 4.0, 4.0]] * 4


class _Holder(nn.Module):
    """A module whose forward calls ``call`` (a jitted function or compiled module running
    ``model``), for ``functional_call`` to swap ``model``'s tensors around that call."""

    def __init__(self, model, call):
        super().__init__()
        self.model, self.call = model, call

    def forward(self, x):
        return self.call(x)


def _calls_with_swapped_tensors(how):
    """Per call of a model, plain, then under ``functional_call`` with a new weight and running
    mean each time: the output and (where it has a graph) the gradients."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).eval()
    calls = {"eager": model, "compile": sg.compile(model), "jit": sg.jit(lambda x: model(x))}
    holder, found = _Holder(model, calls[how]), []
    for i in range(CHANGE_AT + 4):
        x, weight = sg.randn(5, 3), sg.randn(4, 3, requires_grad=True)
        given = {"model.0.weight": weight, "model.1.running_mean": sg.randn(4)}
        out = sg.func.functional_call(holder, given, (x,)) if i >= CHANGE_AT else holder(x)
        found.append([out.detach().numpy()])
        if how != "jit":  # (jit's results are detached)
            out.square().sum().backward()
            grads = [weight.grad, *(p.grad for p in model.parameters())]
            found[-1] += [None if g is None else g.numpy().copy() for g in grads]
    return found


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_tensors_swapped_by_functional_call_are_the_ones_replays_read(how):
    """``functional_call`` puts its tensors into the module's stores without ``setattr``, so
    it stamps the modules as changed itself: a recording made with the module's own tensors
    (which it held) records anew instead of silently replaying them."""
    found, expected = _calls_with_swapped_tensors(how), _calls_with_swapped_tensors("eager")
    for call, (a, b) in enumerate(zip(found, expected)):
        for i, (x, y) in enumerate(zip(a, b)):  # (jit's: the outputs alone)
            if y is None:
                assert x is None, (call, i)
            else:
                np.testing.assert_array_equal(x, y, err_msg=f"call {call}, {i}")


class Caching(nn.Module):
    """A forward that keeps what it computed on the module (attention maps, for a picture)."""

    def __init__(self):
        super().__init__()
        self.fc, self.drop = nn.Linear(4, 3), nn.Dropout(0.3)
        self.runs = []

    def forward(self, x):
        self.runs.append(None)
        self.last = self.drop(self.fc(x))
        self.calls = len(self.runs)
        return self.last


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_what_leaves_the_modules_alone_records_nothing_more(how):
    """A training step and an evaluation, the model switched between train and eval mode, an
    LR scheduler and ``zero_grad`` called between the steps, a forward setting attributes of
    its module (at each of its runs: the eager call and the recordings, of both steps): each
    step records twice, then replays."""
    sg.manual_seed(0)
    model = Caching()
    net = sg.compile(model) if how == "compile" else model
    opt = sg.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    scheduler = sg.optim.lr_scheduler.StepLR(opt, step_size=2)

    def train(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    def evaluate(x):
        with sg.no_grad():
            return net(x).argmax(1)

    if how == "jit":
        train, evaluate = sg.jit(train), sg.jit(evaluate)
    x, y = sg.randn(5, 4), sg.randint(0, 3, (5,))
    for _ in range(8):
        net.train()
        train(x, y)
        scheduler.step()
        net.zero_grad()
        net.eval()
        evaluate(x)
    # jit: eager, two recordings, for each step; compile: one eager call, then two recordings
    # per mode (the evaluation's forward alone)
    assert len(model.runs) == (6 if how == "jit" else 5)


class ScaledByList(nn.Module):
    """A layer whose forward reads an item of a list it holds."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scales = [1.0, 2.0]

    def forward(self, x):
        return self.fc(x) * self.scales[0]


def _scaled_by_list_run(mode):
    """The losses of 8 steps of a ``ScaledByList`` run ``mode`` (eager, jit or compile), its
    first scale set to 0.5 before the step ``CHANGE_AT``, and its weight's gradient."""
    sg.manual_seed(0)
    model = ScaledByList()
    net = sg.compile(model) if mode == "compile" else model

    def step(x):
        loss = net(x).pow(2).mean()
        loss.backward()
        return loss.detach()

    step = sg.jit(step) if mode == "jit" else step
    losses = []
    for i in range(8):
        if i == CHANGE_AT:
            model.scales[0] = 0.5
        losses.append(step(sg.ones(2, 4) * i).numpy())
    return losses, model.fc.weight.grad.numpy()


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_a_list_a_forward_reads_changed_in_place_records_anew(how):
    """``model.scales[0] = 0.5`` between calls sets no attribute of the module, so its stamp
    stays; the list's contents are held as a global list's are, and the call records anew.
    (Replays kept the recorded scale, silently.)"""
    (eager, eager_grad), (replayed, grad) = map(_scaled_by_list_run, ("eager", how))
    for e, r in zip(eager, replayed):
        np.testing.assert_array_equal(r, e)
    np.testing.assert_array_equal(grad, eager_grad)
