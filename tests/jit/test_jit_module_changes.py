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
