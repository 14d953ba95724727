"""The pitfalls of docs/jit.md that tests/jit/test_jit.py does not show: what a recording
freezes (Python values, tensors reached by name, assignments), and the known problems, marked
``xfail(strict=True)``: when one is fixed, its test passes, fails as XPASS, and the mark and the
line of docs/jit.md that names it go."""

import argparse
import dataclasses
import enum
import functools
import importlib
import re
import threading
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn

# A step that counts its calls in a list changes Python state, which the jit warns a replay
# will not change again (the warning's own tests: tests/jit/test_jit_pitfalls.py).
COUNTING = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")

CALLS = 5  # eager, record, record again (checked against the first), replay, replay
ROOT = Path(__file__).resolve().parents[2]


def _line_of(fragment):
    """The number of the first line of this file holding ``fragment``."""
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if fragment in line)


def test_every_test_the_pitfalls_page_names_exists():
    """docs/jit.md links each pitfall to a test by name: the names must stay true."""
    named = set(re.findall(r"`(test_\w+)`", (ROOT / "docs" / "jit.md").read_text()))
    sources = "".join(path.read_text() for path in (ROOT / "tests").rglob("test_*.py"))
    defined = set(re.findall(r"^def (test_\w+)", sources, re.M))
    assert len(named) >= 20 and named <= defined, sorted(named - defined)


def test_python_values_read_with_getattr_record_anew():
    """``getattr`` with a name it computes (``getattr(cfg.loss, name)``) holds all the object
    holds: a value there changed records anew. With a constant name it reads on as an
    attribute does (``getattr(cfg, "aux").weight``), and with a default, the attribute's
    absence is guarded too (``getattr(cfg, "bias", 0.0)``, then ``cfg.bias = 1.0``). A
    computed name on a module (``getattr(self, f"fc{i}")``) reads its submodules, watched
    as modules are. A part not read by the step, changed, replays."""
    cfg = types.SimpleNamespace(
        loss=types.SimpleNamespace(scale=2.0, shift=0.0), aux=types.SimpleNamespace(weight=1.0)
    )
    name = "scale"

    def eager(x):
        y = x * getattr(cfg.loss, name) * getattr(cfg, "aux").weight  # noqa: B009 (the form tested)
        return y + getattr(cfg, "bias", 0.0)

    jitted, x, runs = sg.jit(eager), sg.ones(2), []
    changes = [
        lambda: setattr(cfg.loss, "scale", 5.0),
        lambda: setattr(cfg.aux, "weight", 3.0),
        lambda: setattr(cfg, "bias", 1.0),
        lambda: setattr(cfg.loss, "shift", 4.0),
    ]
    for change in [lambda: None, *changes]:
        change()
        runs.append([jitted(x).tolist() for _ in range(CALLS)])
        assert runs[-1] == [eager(x).tolist()] * CALLS
    assert [run[0] for run in runs] == [[2.0] * 2, [5.0] * 2, [15.0] * 2, [16.0] * 2, [16.0] * 2]
    name = "shift"
    assert jitted(x).tolist() == eager(x).tolist() == [13.0, 13.0]


def test_python_values_read_through_loop_variables_and_rebound_locals_record_anew():
    """What a loop variable reads from each item of a list the step reads (``for group in
    cfg.groups: group.scale``), and what a local bound a second time reads (``part =
    cfg.first`` ... ``part = cfg.second``, then ``part.weight``), is guarded: a change there
    records anew."""
    groups = [types.SimpleNamespace(scale=2.0), types.SimpleNamespace(scale=3.0)]
    cfg = types.SimpleNamespace(
        groups=groups,
        first=types.SimpleNamespace(weight=1.0),
        second=types.SimpleNamespace(weight=5.0),
    )

    def eager(x):
        for group in cfg.groups:
            x = x * group.scale
        part = cfg.first
        for _ in range(2):  # part.weight reads cfg.second.weight in the second round
            x = x * part.weight
            part = cfg.second
        return x * part.weight

    jitted, x = sg.jit(eager), sg.ones(2)
    changes = [
        lambda: setattr(groups[1], "scale", 10.0),
        lambda: setattr(cfg.second, "weight", 7.0),
        lambda: setattr(cfg.first, "weight", 0.5),
    ]
    seen = []
    for change in [lambda: None, *changes]:
        change()
        calls = [jitted(x).tolist() for _ in range(CALLS)]
        assert calls == [eager(x).tolist()] * CALLS
        seen.append(calls[0][0])
    assert seen == [150.0, 500.0, 980.0, 490.0]


def test_a_step_halving_the_learning_rate_in_a_loop_over_the_groups_raises_naming_it():
    """``for group in opt.param_groups: group["lr"] = group["lr"] * 0.5`` in the step: a
    replay would neither halve it again nor read it; the first recording raises, naming it
    and what to use instead."""
    model = nn.Linear(3, 1)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        for group in opt.param_groups:
            group["lr"] = group["lr"] * 0.5

    jitted = sg.jit(step)
    jitted(sg.ones(2, 3))
    with pytest.raises(
        sg.JitError, match=r"binds opt\.param_groups\[\.\.\.\]\['lr'\] .*LR scheduler"
    ):
        jitted(sg.ones(2, 3))


class Stack(nn.Module):
    """Layers reached by a computed name, as many PyTorch models do."""

    def __init__(self):
        super().__init__()
        self.fc0, self.fc1 = nn.Linear(2, 2), nn.Linear(2, 2)

    def forward(self, x):
        for i in range(2):
            x = getattr(self, f"fc{i}")(x)
        return x


def test_a_module_reading_its_layers_with_getattr_replays_and_follows_a_replaced_layer():
    """``getattr(self, f"fc{i}")`` in a forward holds nothing more: a layer replaced records
    anew, as any change to a module does."""
    model, x = Stack(), sg.ones(3, 2)
    jitted = sg.jit(lambda x: model(x).sum())
    for _ in range(CALLS):
        assert jitted(x).item() == model(x).sum().item()
    model.fc1 = nn.Linear(2, 2)
    assert jitted(x).item() == model(x).sum().item()


def test_a_step_changing_an_object_it_reads_with_getattr_raises_naming_it():
    cfg, name = types.SimpleNamespace(scale=2.0, calls=0), "scale"

    def step(x):
        cfg.calls += 1
        return x * getattr(cfg, name)

    jitted = sg.jit(step)
    jitted(sg.ones(2))
    with pytest.raises(
        sg.JitError, match="an attribute of the SimpleNamespace it reads with getattr"
    ):
        jitted(sg.ones(2))


class Scaler:
    """A helper object of the user's code: its method and its property read its attributes."""

    def __init__(self, factor: float) -> None:
        self.factor, self._offset = factor, 0.0

    def scale(self, x):
        return x * self.factor

    @property
    def offset(self) -> float:
        return self._offset


DEEP_CHANGES = {
    "cfg.loss.scale": lambda objects: setattr(objects["cfg"].loss, "scale", 0.5),
    'settings["loss"].scale': lambda objects: setattr(objects["settings"]["loss"], "scale", 0.25),
    "aux.weight, aux = cfg.aux": lambda objects: setattr(objects["cfg"].aux, "weight", 6.0),
    "self.cfg.scale": lambda objects: setattr(objects["self"].cfg, "scale", 7.0),
    "a method of another object": lambda objects: setattr(objects["scaler"], "factor", 9.0),
    "a property": lambda objects: setattr(objects["scaler"], "_offset", 1.0),
    "a function of the user's module": lambda objects: setattr(objects["helpers"], "WEIGHT", 3.0),
    "a tensor two steps deep": lambda objects: setattr(objects["cfg"].buffers, "bias", sg.ones(2)),
}


@pytest.mark.parametrize("change", DEEP_CHANGES)
def test_python_values_read_deep_into_objects_or_by_their_methods_record_anew(
    change, tmp_path, monkeypatch
):
    """What the step reads any number of steps into its globals' and closure's objects
    (``cfg.loss.scale``, ``self.cfg.scale``, ``settings["loss"].scale``, also through a
    local variable: ``aux = cfg.aux`` then ``aux.weight``), what a method of
    another object or a property's getter reads from it (``scaler.scale(x)`` reading
    ``self.factor``), and what a function of the user's module reads (``helpers.weighted``):
    each is guarded, so a call after one changed records anew and equals eager."""
    source = "WEIGHT = 1.0\n\ndef weighted(x):\n    return x * WEIGHT\n"
    (tmp_path / f"jit_helpers_{len(change)}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    helpers = importlib.import_module(f"jit_helpers_{len(change)}")
    cfg = types.SimpleNamespace(
        loss=types.SimpleNamespace(scale=2.0),
        aux=types.SimpleNamespace(weight=1.0),
        buffers=types.SimpleNamespace(bias=sg.zeros(2)),
    )
    settings = {"loss": types.SimpleNamespace(scale=3.0)}
    scaler = Scaler(4.0)

    class Holder:
        def __init__(self):
            self.cfg = types.SimpleNamespace(scale=5.0)

        def eager(self, x):
            aux = cfg.aux  # (read through a local variable)
            y = x * cfg.loss.scale * settings["loss"].scale * self.cfg.scale * aux.weight
            return helpers.weighted(scaler.scale(y)) + scaler.offset + cfg.buffers.bias

        step = sg.jit(eager)

    holder, x = Holder(), sg.ones(2)
    for _ in range(CALLS):
        assert holder.step(x).tolist() == [120.0, 120.0]
    objects = {"cfg": cfg, "settings": settings, "self": holder, "scaler": scaler}
    DEEP_CHANGES[change]({**objects, "helpers": helpers})
    expected = holder.eager(x).tolist()
    assert expected != [120.0, 120.0]
    for _ in range(CALLS):
        assert holder.step(x).tolist() == expected


def _trainer(read):
    """A training step whose loss is scaled by what ``read`` names, read from the scheduler
    or the grad scaler of its enclosing function; the step, the scheduler, the scaler and a
    list the step counts its runs in."""
    sg.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)
    sched = sg.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    scaler = sg.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale(sg.tensor(1.0))  # makes the scale, which update(new_scale) then sets
    runs = []

    def loss_of(x):
        runs.append(None)
        opt.zero_grad()
        return model(x).pow(2).mean()

    def by_rate(x):
        loss = loss_of(x) * sched.get_last_lr()[0]
        loss.backward()
        opt.step()
        return loss

    def by_epoch(x):
        loss = loss_of(x) * (2.0 if sched.last_epoch >= 3 else 1.0)
        loss.backward()
        opt.step()
        return loss

    def by_scale(x):
        loss = loss_of(x) * scaler.get_scale()
        loss.backward()
        opt.step()
        return loss

    steps = {"sched.get_last_lr()[0]": by_rate, "sched.last_epoch": by_epoch}
    return {**steps, "scaler.get_scale()": by_scale}[read], sched, scaler, runs


# the Python runs of 9 calls: the eager call and two recordings for each of 3 rates or
# scales; the epoch is a new number at every call, so every call records
PYTHON_RUNS = {"sched.get_last_lr()[0]": 7, "sched.last_epoch": 9, "scaler.get_scale()": 7}


@pytest.mark.parametrize("read", PYTHON_RUNS)
def test_what_a_step_reads_from_a_scheduler_or_a_scaler_records_anew(read):
    """A step reading a scheduler's rate (``sched.get_last_lr()[0]``) or epoch, or a grad
    scaler's scale, which the loop moves on between calls (``sched.step()``,
    ``scaler.update(...)``): each is guarded, so every call equals eager's, across the
    decays. A scheduler stepped without changing the rate makes a new list of the same rates,
    and a scaler's update a new NumPy number of the same scale: those replay."""
    x = sg.randn(8, 3)
    eager, jitted = _trainer(read), _trainer(read)
    step = sg.jit(jitted[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the step counts its runs; the cache fills)
        for k in range(9):
            assert eager[0](x).item() == step(x).item(), k
            for _, sched, scaler, _ in (eager, jitted):
                sched.step()
                scaler.update(4.0 * 2 ** (k // 3))
    assert len(jitted[3]) == PYTHON_RUNS[read]


def test_containers_the_step_reads_record_anew_when_their_contents_change():
    """A list the step loops over, a dict it reads (and the dicts and lists inside them), of
    its globals or its enclosing function: what they hold is part of what a recording was
    made for, checked by the fast path too. Changed between calls, the next call records
    anew; a new number equal to the old one, or nothing changed, replays."""
    scales, settings = [1.0, 2.0], {"loss": {"scale": 2.0}}

    def step(x):
        for scale in scales:
            x = x * scale
        return x * settings["loss"]["scale"]

    jitted, x = sg.jit(step), sg.ones(2)
    changes = [
        lambda: None,
        lambda: scales.append(10.0),
        lambda: settings["loss"].update(scale=0.5),
        lambda: scales.__setitem__(0, float("1.0")),  # another object, equal: replays
        lambda: settings.update(extra=1),
    ]
    recordings = []
    for change in changes:
        change()
        for _ in range(4):
            assert jitted(x).tolist() == step(x).tolist()
        assert jitted.fast is not None
        recordings.append(sum(map(len, jitted.recordings.values())))
    assert recordings == [1, 2, 3, 3, 4]


def test_a_long_container_the_step_reads_is_held_by_its_length():
    """A list of more than 256 items (a vocabulary, a data set's samples) is compared by its
    length alone, so that a call does not compare each item: appending records anew,
    replacing an item in place is not seen."""
    vocabulary = [f"w{i}" for i in range(300)]
    jitted, x = sg.jit(lambda x: x * len(vocabulary) + (vocabulary[0] == "w0")), sg.ones(2)
    for _ in range(CALLS):
        jitted(x)
    vocabulary.append("new")
    for _ in range(CALLS):  # records anew, twice, then replays
        assert jitted(x).tolist() == [302.0, 302.0]
    vocabulary[0] = "replaced"
    assert jitted(x).tolist() == [302.0, 302.0]  # the recorded comparison, not 301


class Agent:
    """A policy with its optimizer and Python settings, whose jitted ``step`` reads them as
    attributes of ``self`` (as reinforcement learning agents do: an exploration rate, a
    discount, weights of a loss's terms)."""

    def __init__(self):
        sg.manual_seed(0)
        self.policy = nn.Linear(3, 2)
        self.opt = sg.optim.SGD(self.policy.parameters(), lr=0.1)
        self.scale, self.weights = 1.0, [1.0, 0.5]

    @sg.jit
    def step(self, x):
        self.opt.zero_grad()
        out = self.policy(x)
        loss = out.pow(2).mean() * self.scale + out.abs().mean() * self.weights[1]
        loss.backward()
        self.opt.step()
        return loss


@pytest.mark.parametrize(
    "change",
    [
        lambda agent: setattr(agent, "scale", 0.25),
        lambda agent: agent.weights.__setitem__(1, 2.0),
        lambda agent: setattr(agent, "opt", sg.optim.SGD(agent.policy.parameters(), lr=1.0)),
    ],
    ids=["a number", "an item of a list", "a new optimizer"],
)
def test_a_jitted_method_records_anew_when_an_attribute_it_reads_changes(change):
    """``self.scale`` and ``self.weights[1]`` read by a jitted method are guarded as a
    global's would be: changed between calls, the next call records anew (and trains as
    eagerly), where replays kept the recorded values and optimizer."""
    results = []
    for how in ("jit", "eager"):
        agent, x = Agent(), sg.ones(4, 3)
        step = agent.step if how == "jit" else functools.partial(Agent.step.fn, agent)
        losses = [step(x).item() for _ in range(CALLS)]
        change(agent)
        losses += [step(x).item() for _ in range(CALLS)]
        results.append((losses, agent.policy.weight.detach().numpy()))
    (jitted, weight_jitted), (eager, weight_eager) = results
    assert jitted == eager
    np.testing.assert_array_equal(weight_jitted, weight_eager)


class Config:
    """A configuration as a class of class attributes (``CFG.lr`` style)."""

    scale = 1.0


class Learner:
    """A jitted ``step`` whose loss comes from a method reading ``self.beta``, a class
    attribute of another class, and a default of its own class (``self.gamma``)."""

    gamma = 1.0

    def __init__(self):
        sg.manual_seed(0)
        self.net = nn.Linear(3, 1)
        self.opt = sg.optim.SGD(self.net.parameters(), lr=0.1)
        self.beta = 1.0

    def loss_of(self, x):
        return self.net(x).pow(2).mean() * self.beta * Config.scale * self.gamma

    @sg.jit
    def step(self, x):
        self.opt.zero_grad()
        loss = self.loss_of(x)
        loss.backward()
        self.opt.step()
        return loss


@pytest.mark.parametrize(
    "change",
    [
        lambda learner: setattr(learner, "beta", 0.5),
        lambda learner: setattr(Config, "scale", 0.5),
        lambda learner: setattr(learner, "gamma", 0.5),
        lambda learner: setattr(Learner, "gamma", 0.5),
    ],
    ids=[
        "self.beta read by a method",
        "a class attribute",
        "a class default set on the instance",
        "a class default changed on the class",
    ],
)
def test_a_method_the_step_calls_on_self_and_class_attributes_are_guarded(change):
    """The methods a jitted method calls on ``self`` are read as its helpers are (two levels
    deep), and class attributes of the user's classes as an object's, also through an
    instance (``self.gamma``, a default of its class, later set on the instance or on the
    class): changed between calls, the next call records anew."""
    results = []
    try:
        for how in ("jit", "eager"):
            Config.scale = Learner.gamma = 1.0
            learner, x = Learner(), sg.ones(2, 3)
            step = learner.step if how == "jit" else functools.partial(Learner.step.fn, learner)
            losses = [step(x).item() for _ in range(CALLS)]
            change(learner)
            results.append(losses + [step(x).item() for _ in range(CALLS)])
    finally:
        Config.scale = Learner.gamma = 1.0
    assert results[0] == results[1]


class Summing:
    """A jitted method that rebinds an attribute it reads: Python, which replays would skip."""

    def __init__(self):
        self.total = sg.zeros(())

    @sg.jit
    def step(self, x):
        self.total = self.total + x.sum()  # TOTAL rebound
        return x * 2


def test_a_jitted_method_rebinding_an_attribute_it_reads_raises_naming_it():
    summing = Summing()
    summing.step(sg.ones(2))
    with pytest.raises(sg.JitError, match=r"step\(\) \(defined at .*\) binds self\.total to a new"):
        summing.step(sg.ones(2))


def test_plain_values_read_from_a_dict_or_an_object_record_anew():
    """One step into a dict or an object the step reads by name (``settings["scale"]``,
    ``cfg.aux_weight``, an argparse Namespace's ``args.lr``): another value records anew,
    through the fast path too; a new one of the same type and value replays."""
    settings = {"scale": 2.0}
    cfg = types.SimpleNamespace(shift=1.0)
    step = sg.jit(lambda x: x * settings["scale"] + cfg.shift)
    x = sg.ones(2)
    for scale, shift in [(2.0, 1.0), (5.0, 1.0), (5.0, -1.0)]:
        settings["scale"], cfg.shift = scale, shift
        for _ in range(CALLS):
            assert step(x).tolist() == [scale + shift] * 2, (scale, shift)
    settings["scale"] = settings["scale"] * 1  # an equal value: no new recording
    made = sum(len(r) for r in step.recordings.values())
    step(x)
    assert sum(len(r) for r in step.recordings.values()) == made


def test_a_value_of_the_users_config_module_records_anew(tmp_path, monkeypatch):
    """``import config`` (a module of the user's code) and ``config.SCALE`` read by the
    step: a module's attribute is guarded as an object's (a library's module is not)."""
    (tmp_path / "jit_config_module.py").write_text("SCALE = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = importlib.import_module("jit_config_module")
    step, x = sg.jit(lambda x: x * config.SCALE), sg.ones(2)
    for scale in (2.0, 3.0):
        config.SCALE = scale
        for _ in range(CALLS):
            assert step(x).tolist() == [scale, scale]


def test_a_dict_entry_the_step_sets_raises_naming_it():
    """``state["count"] += 1`` inside the step: a replay would not count."""
    state = {"count": 0}

    def counted(x):
        state["count"] = state["count"] + 1
        return x * 2

    counted_jit, x = sg.jit(counted), sg.ones(2)
    counted_jit(x)
    with pytest.raises(sg.JitError, match=r"binds state\['count'\] to a new object"):
        counted_jit(x)


@pytest.mark.parametrize("holder", ["a dict", "an object"])
def test_a_tensor_reached_by_name_is_read_in_place_and_rebound(holder):
    """The recording holds the array of a tensor it reached by name: changing that tensor in
    place is seen by replays, and a new tensor put into the dict or set as the attribute the
    step reads it from records anew."""
    state = {"bias": sg.zeros(2)}
    if holder == "a dict":
        shifted = sg.jit(lambda x: x + state["bias"])
    else:
        state = types.SimpleNamespace(**state)
        shifted = sg.jit(lambda x: x + state.bias)
    x = sg.ones(2)
    shifted(x), shifted(x), shifted(x)
    with sg.no_grad():
        (state["bias"] if holder == "a dict" else state.bias).add_(1.0)
    assert shifted(x).tolist() == [2.0, 2.0]
    if holder == "a dict":
        state["bias"] = sg.full((2,), 10.0)
    else:
        state.bias = sg.full((2,), 10.0)
    assert shifted(x).tolist() == [11.0, 11.0]


class Reduction(enum.Enum):
    SUM, MEAN = 1, 2


SCALES, CLIP, REDUCTION, ACTIVATION = (1.0, 2.0), None, Reduction.SUM, sg.tanh


def configured(x):
    for scale in SCALES:
        x = x * scale
    if CLIP is not None:
        x = x.clamp(max=CLIP)
    x = ACTIVATION(x)
    return x.sum() if REDUCTION is Reduction.SUM else x.mean()


@pytest.mark.parametrize(
    "name, value",
    [("SCALES", (1.0, 3.0)), ("CLIP", 0.5), ("REDUCTION", Reduction.MEAN), ("ACTIVATION", sg.relu)],
    ids=["a tuple", "a number after None", "an enum member", "a function"],
)
def test_any_object_rebound_to_a_name_the_step_reads_records_anew(name, value):
    """Not only tensors, modules, optimizers and plain values: whatever a global the step
    reads is bound to (a tuple, None, an enum member, a function), a new object there
    records anew, where replays ran the old one."""
    jitted, x = sg.jit(configured), sg.full((3,), 0.8)
    for _ in range(CALLS):
        recorded = jitted(x).item()
    old = globals()[name]
    try:
        globals()[name] = value
        assert configured(x).item() != recorded
        assert jitted(x).item() == configured(x).item()
    finally:
        globals()[name] = old


def test_rebinding_the_model_or_optimizer_a_step_reads_records_anew():
    """A new model or optimizer bound to the name the step reads (a global, or a variable of
    the enclosing function) records anew: the recording held the old objects."""
    model = nn.Linear(2, 1)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        return model.bias * 1

    jitted, x = sg.jit(step), sg.ones(3, 2)
    for _ in range(CALLS):
        jitted(x)
    model = nn.Linear(2, 1)
    model.bias.data = sg.zeros(1)
    opt = sg.optim.SGD(model.parameters(), lr=0.5)
    assert [jitted(x).tolist() for _ in range(CALLS)] == [[-1.5 * k] for k in range(1, 6)]


def test_assigning_none_to_grad_inside_the_step_is_replayed():
    """``p.grad = None`` (PyTorch's performance guide's way of clearing gradients) and ``del
    p.grad`` are Python assignments: each is noted as a call of the step, which every replay
    makes again, at its place (before, they raised: a replay skipping them would have added
    each backward to the last). The results, the ``.grad`` and the parameters equal eager's
    after every call, and the step's Python ran only while recording."""

    def program(wrap):
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        runs = []

        @wrap
        def step(x, y):
            runs.append(1)
            for p in model.parameters():
                p.grad = None
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            first = model[0].weight.grad.clone()
            del model[0].weight.grad  # the last layer's gradients kept, the first's cleared
            return loss, first

        results = []
        for _ in range(6):
            x, y = sg.randn(5, 3), sg.randn(5, 1)
            loss, first = step(x, y)
            grads = [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]
            results.append((loss.item(), first.numpy().copy(), grads))
        return results, [p.detach().numpy().copy() for p in model.parameters()], len(runs)

    sg.manual_seed(0)
    eager = program(lambda f: f)
    sg.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (runs.append: the step's Python, counted)
        jitted = program(sg.jit)
    assert eager[2] == 6 and jitted[2] == 3  # eager, record, record again; then replays
    for (loss, first, grads), (loss_j, first_j, grads_j) in zip(eager[0], jitted[0]):
        assert loss == loss_j and np.array_equal(first, first_j)
        assert grads[0] is None and grads_j[0] is None
        assert all(np.array_equal(a, b) for a, b in zip(grads[1:], grads_j[1:]))
    assert all(np.array_equal(a, b) for a, b in zip(eager[1], jitted[1]))


@pytest.mark.parametrize("update", ["isub", "sub_", "data"])
def test_a_hand_written_update_then_grad_set_to_none_is_replayed_on_the_parameter(update):
    """The hand-written SGD of PyTorch's tutorials, ``p -= lr * p.grad`` (or ``p.sub_``, or
    through ``p.data``) then ``p.grad = None``, under ``no_grad``: the assignment comes after
    the parameter was updated in place, whose array the recording numbers as a value of the
    step. The recorder took the parameter for a tensor the step made, assigned its ``.grad``
    without noting the call, and its watch of ``.grad`` then raised a JitError ("assigned by
    another thread?"). Now the call is replayed on the parameter itself (not on a tensor
    rebuilt from its value) and every step is eager's bit for bit."""

    def program(wrap):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))

        @wrap
        def step(x, y):
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            with sg.no_grad():
                for p in model.parameters():
                    if update == "isub":
                        p -= 0.1 * p.grad
                    elif update == "sub_":
                        p.sub_(0.1 * p.grad)
                    else:
                        p.data -= 0.1 * p.grad
                    p.grad = None
            return loss

        rng = np.random.default_rng(0)
        batches = [[rng.standard_normal(shape) for shape in ((5, 3), (5, 1))] for _ in range(7)]
        losses = [
            step(*(sg.tensor(array, dtype=sg.float32) for array in batch)).item()
            for batch in batches
        ]
        return losses, [p.detach().numpy().copy() for p in model.parameters()], model

    eager_losses, eager_params, _ = program(lambda f: f)
    losses, params, model = program(sg.jit)
    assert losses == eager_losses
    assert all(np.array_equal(a, b) for a, b in zip(params, eager_params))
    assert all(p.grad is None for p in model.parameters())


def test_assigning_none_to_an_arguments_grad_clears_the_grad_of_each_calls_tensor():
    """``x.grad = None`` on a tensor argument (a learned input): a replay clears the
    ``.grad`` of the tensor that call passes, as eagerly. Reading the ``.grad`` an argument
    came with (``x.grad.zero_()``) raises: the program would read the recording's tensor's,
    whatever tensor a replay is given (before, a replay zeroed the recording's gradient and
    added to the one passed, silently)."""
    w = sg.tensor([1.0, 2.0])

    def clear(x):
        x.grad = None
        (w * x).sum().backward()
        return x.grad.clone()

    def zero(x):
        if x.grad is not None:
            x.grad.zero_()
        (w * x).sum().backward()
        return x.grad.clone()

    x, other = sg.ones(2, requires_grad=True), sg.ones(2, requires_grad=True)
    other.grad = sg.full((2,), 7.0)
    jitted = sg.jit(clear)
    assert [jitted(x).tolist() for _ in range(CALLS)] == [[1.0, 2.0]] * CALLS
    assert jitted(other).tolist() == [1.0, 2.0] == other.grad.tolist()
    assert x.grad.tolist() == [1.0, 2.0]
    jitted = sg.jit(zero)
    jitted(x)
    with pytest.raises(sg.JitError, match="reading the .grad of tensor argument #0 as the call"):
        jitted(x)
    assert x.grad.tolist() == [1.0, 2.0]  # (the refused recording changed nothing)


def test_a_grad_the_step_reads_replaced_between_calls_records_again():
    """A step reading a parameter's ``.grad`` as the call finds it (its norm, logged before
    the backward adds to it) replays only while the parameter's ``.grad`` is the tensor it
    read: replaced between calls (``p.grad = ...`` outside the step), the call records
    again (before, replays read the old tensor, silently)."""
    p = sg.ones(2, requires_grad=True)

    def step(x):
        norm = p.grad.norm() if p.grad is not None else sg.zeros(())
        (p * x).sum().backward()
        return norm

    def run(fn):
        p.grad, norms = None, []
        for k in range(1, 8):
            norms.append(fn(sg.full((2,), float(k))).item())
            if k == 4:
                p.grad = sg.full((2,), 100.0)
        return norms

    eager = run(step)
    assert run(sg.jit(step)) == eager
    assert eager[4] == pytest.approx(100 * 2**0.5)


def test_a_grad_assigned_by_another_thread_while_recording_raises():
    """A ``.grad`` changed by no recorded call (here another thread's assignment, which runs
    eagerly outside the program) is caught by the second recording: a replay would not make
    it. The error names the next recorded call's line."""
    w = sg.ones(2, requires_grad=True)

    def clear_elsewhere(x):
        thread = threading.Thread(target=lambda: setattr(w, "grad", None))
        thread.start(), thread.join()
        (w * x).sum().backward()
        return w.grad.clone()

    jitted, x = sg.jit(clear_elsewhere), sg.ones(2)
    jitted(x), jitted(x)
    with pytest.raises(sg.JitError, match=r"\.grad changed by no recorded call .* \(2,\)") as error:
        jitted(x)
    number = int(re.search(r"test_jit_pitfalls\.py:(\d+)", str(error.value))[1])
    assert "(w * x).sum().backward()" in Path(__file__).read_text().splitlines()[number - 1]


def test_backward_reaches_the_tensor_arguments_of_each_call():
    """The gradient of an argument goes into the ``.grad`` of the tensor passed to that call,
    on replays too (not into the tensor of the call that recorded)."""

    def step(x):
        loss = (x * x).sum()
        loss.backward()
        return loss

    jitted = sg.jit(step)
    for value in range(CALLS):
        x = sg.tensor([1.0, float(value)], requires_grad=True)
        jitted(x)
        assert x.grad is not None and x.grad.tolist() == [2.0, 2.0 * value]


def test_backward_into_the_graph_of_a_non_leaf_argument_raises():
    """A tensor argument made by operations outside the step (requires grad, not a leaf): a
    backward inside the step would run on into that outside graph, which a replay cannot
    rebuild for the next call's argument. Recording refuses it, naming the argument."""
    w = sg.tensor([1.0, 2.0], requires_grad=True)

    @sg.jit
    def step(scale, x):
        (x * x).sum().backward()  # OUTSIDE backward

    step(1.0, w * 3.0)
    with pytest.raises(sg.JitError, match="tensor argument #0 .*not a leaf") as info:
        step(1.0, w * 3.0)
    assert f"test_jit_pitfalls.py:{_line_of('# OUTSIDE backward')} " in str(info.value)
    forward_only = sg.jit(lambda x: x * x)  # no backward: nothing reaches the outside graph
    assert [forward_only(w * 3.0).tolist() for _ in range(CALLS)] == [[9.0, 36.0]] * CALLS
    for _ in range(CALLS):  # recorded and replayed for a leaf, then given a non-leaf: refused
        step(1.0, sg.tensor([1.0, 2.0], requires_grad=True))  # (a replay left w.grad None)
    with pytest.raises(sg.JitError, match="tensor argument #0 .*not a leaf"):
        step(1.0, w * 3.0)


FLOAT_READ = r"of tensor argument #1 \(float32\) at .*Floating values are not guarded"
BIG_READ = r"\.tolist\(\) of tensor argument #1 \(4097 entries\) at .*at most 4096 entries"


@pytest.mark.parametrize(
    "read, given, says",
    [
        (lambda s: s.item(), sg.tensor(0.5), r"\.item\(\) " + FLOAT_READ),
        (lambda s: int(s), sg.tensor(2.0), r"int\(\) " + FLOAT_READ),
        (lambda s: float(s), sg.tensor(2.0), r"float\(\) " + FLOAT_READ),
        (lambda s: complex(s).real, sg.tensor(2.0), r"complex\(\) " + FLOAT_READ),
        (lambda s: float(f"{s:.1f}"), sg.tensor(2.0), r"format\(\).* " + FLOAT_READ),
        (lambda s: 2 if s else 1, sg.tensor(1.0), r"bool\(tensor\).* " + FLOAT_READ),
        (lambda s: len(s.tolist()), sg.zeros(4097, dtype=sg.int64), BIG_READ),
    ],
    ids=[
        "item of a float",
        "int of a float",
        "float of a float",
        "complex of a float",
        "format of a float",
        "bool of a float",
        "tolist of 4097 integers",
    ],
)
@pytest.mark.parametrize("wrap", ["jit", "compile"])
def test_reading_the_values_of_an_argument_that_is_not_guarded_says_why(read, given, says, wrap):
    """Only the values of small integer arguments are guarded: reading a float argument's,
    or those of one of more than 4096 entries, raises a JitError naming the argument, the
    line and why it is not guarded (a new program per value; a guard dearer than the step),
    and saying what to do instead (before, the generic refusal, as for computed values)."""

    def step(x, s):
        return x * read(s)

    class Reader(nn.Module):
        def forward(self, x, s):
            return step(x, s)

    call = sg.jit(step) if wrap == "jit" else sg.compile(Reader(), fullgraph=True)
    call(sg.ones(2), given)  # eager
    with pytest.raises(sg.JitError, match=says) as info:
        call(sg.ones(2), given)
    assert f"test_jit_pitfalls.py:{read.__code__.co_firstlineno} " in str(info.value)
    if given.is_floating_point():
        assert "pass the number as a Python number" in str(info.value)
    else:
        assert "Read it outside the step" in str(info.value)


@pytest.mark.parametrize(
    "read, says",
    [
        (lambda s: int(s * 1), r"int\(\) at "),
        (lambda s: len(range(s * 1)), r"operator\.index\(\) \(a tensor used as a Python int\) at "),
    ],
    ids=["int", "range"],
)
def test_reading_a_computed_number_names_what_the_step_wrote(read, says):
    """``int(t)`` and ``range(t)`` of a value the step computed are refused under the name the
    user wrote (before, as ``.item()``, which they call)."""
    step = sg.jit(lambda x, s: x * read(s))
    step(sg.ones(2), sg.tensor(2))  # eager
    with pytest.raises(sg.JitError, match=says):
        step(sg.ones(2), sg.tensor(2))


_UNIFORMS = np.random.default_rng(0)


def _uniforms(shape):
    return _UNIFORMS.random(shape).astype(np.float32)  # (three calls deep: not looked into)


def _gumbel(shape):
    return -sg.log(-sg.log(sg.from_numpy(_uniforms(shape))))  # NUMPY used


def _perturbed(x):
    return x + _gumbel(x.shape)


def _sign_mask(x):
    return x * sg.tensor(np.asarray(x.detach()) > 0)  # NUMPY mask used


@pytest.mark.parametrize(
    "step, tag, says",
    [
        (lambda x: _perturbed(x).sum(), "NUMPY used", r"\(2, 3\), float32"),
        (lambda x: _sign_mask(x).sum(), "NUMPY mask used", r"\(2, 3\), bool"),
    ],
    ids=["numpy draws", "sg.tensor of a numpy array"],
)
def test_an_array_numpy_made_in_the_step_that_changes_raises_saying_it_is_frozen(step, tag, says):
    """Arrays NumPy makes inside the step (draws of a NumPy Generator, as the Gumbel-softmax
    VAE's; a mask computed from the data) are constants to the recorder: the third call finds
    another one and raises, saying that such values are frozen and to draw with
    ``sg.rand``/``sg.randn`` or pass the array as an argument (before, the generic "different
    constant" message blamed a Python branch or a counter)."""
    jitted = sg.jit(step)
    xs = [sg.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3) * s) for s in (1, 1, -1)]
    with pytest.raises(
        sg.JitError, match=r"different constant \(an array of shape " + says
    ) as info:
        for x in xs:
            jitted(x)
    message = str(info.value)
    assert f"test_jit_pitfalls.py:{_line_of('# ' + tag)} " in message
    assert "frozen into the program" in message
    assert "`sg.rand`, `sg.randn`" in message and "pass the array as an argument" in message


def test_an_enabled_grad_scaler_inside_the_step_raises_and_a_disabled_one_equals_eager():
    """An enabled GradScaler decides in Python, from the gradients' values, whether a step is
    skipped and how its scale moves: recording refuses it with a JitError naming GradScaler
    and the line. A disabled one (``enabled=False``) passes everything through unchanged."""

    def run(jit, enabled):
        sg.manual_seed(0)
        model = nn.Linear(3, 2)
        opt = sg.optim.SGD(model.parameters(), lr=0.1)
        scaler = sg.amp.GradScaler(init_scale=2.0**4, enabled=enabled)

        def step(x):
            opt.zero_grad()
            scaler.scale(model(x).square().mean()).backward()  # SCALER scale
            scaler.step(opt)
            scaler.update()

        step = sg.jit(step) if jit else step
        x = sg.ones(4, 3)
        for _ in range(CALLS):
            step(x)
        return model.weight.detach().numpy()

    with pytest.raises(sg.JitError, match="GradScaler inside scratchgrad.jit at ") as info:
        run(jit=True, enabled=True)
    assert f"test_jit_pitfalls.py:{_line_of('# SCALER scale')} " in str(info.value)
    assert "bfloat16 autocast needs no scaler" in str(info.value)
    np.testing.assert_array_equal(run(jit=True, enabled=False), run(jit=False, enabled=False))


@pytest.mark.parametrize(
    "update",
    [
        lambda buf, x: buf.add_(x),
        lambda buf, x: buf.mul_(0.5).add_(x),  # an exponential moving average
        lambda buf, x: buf.copy_(x * 2),
        lambda buf, x: buf.__setitem__(slice(1, None), x[1:]),
        lambda buf, x: buf.fill_(3.0),
    ],
    ids=["add_", "ema", "copy_", "setitem", "fill_"],
)
def test_a_tensor_changed_only_in_place_records_anew_when_given_a_new_array(update):
    """A tensor the step reaches by name and only changes in place (a running sum, EMA
    weights under ``no_grad()``) is held by the program: given a new array (``.data = ...``)
    between calls, the next call records anew and updates the new array, as an eager call
    does (replays updated the old one, silently)."""
    buffers = {"jit": sg.zeros(3), "eager": sg.zeros(3)}

    def step(x, name):
        with sg.no_grad():
            update(buffers[name], x)
        return x * 2

    jitted, x = sg.jit(lambda x: step(x, "jit")), sg.arange(3.0)
    for k in range(2 * CALLS):
        if k == CALLS:
            buffers["jit"].data, buffers["eager"].data = sg.zeros(3), sg.zeros(3)
        jitted(x), step(x, "eager")
        assert buffers["jit"].tolist() == buffers["eager"].tolist(), k


# Globals read by helpers of the steps below (the names a jitted function reaches through the
# plain functions it calls are guarded as its own).
helper_model = None


def _forward(x):
    return helper_model(x)


def _loss_of(x):
    return _forward(x).sum()


def test_a_global_rebound_that_a_helper_of_the_step_reads_records_anew():
    """The step reads ``helper_model`` through two plain functions (``_loss_of`` calls
    ``_forward``, which reads it): binding it to a new model, or a helper to a new function,
    records anew (replays went on with the old model, silently)."""
    global helper_model, _loss_of
    step, x = sg.jit(lambda x: _loss_of(x)), sg.randn(2, 3)
    original = _loss_of
    try:
        for model in (nn.Linear(3, 1), nn.Linear(3, 1)):
            helper_model = model
            for _ in range(CALLS):
                assert step(x).tolist() == model(x).sum().tolist()
        _loss_of = lambda x: _forward(x).mean()  # noqa: E731 (a helper rebound)
        assert step(x).tolist() == helper_model(x).mean().tolist()
    finally:
        helper_model, _loss_of = None, original


def _scaled_loss(trainer, x):
    """A helper reading what the step passes it: ``trainer.scale``."""
    return trainer.model(x).pow(2).mean() * trainer.scale


class ScaledTrainer:
    """A model and a scale its loss is multiplied by."""

    def __init__(self):
        sg.manual_seed(0)
        self.model, self.scale = nn.Linear(3, 2), 1.0

    def loss(self, x):
        return self.model(x).pow(2).mean() * self.scale


class ThroughAHelper(ScaledTrainer):
    def loss(self, x):
        return _scaled_loss(self, x)


class ThroughSuper(ScaledTrainer):
    def loss(self, x):
        return super().loss(x)


class ThroughTheBaseClass(ScaledTrainer):
    def loss(self, x):
        return ScaledTrainer.loss(self, x)


def _scaled_trainer_run(trainer, jitted):
    """The losses of 8 steps calling ``trainer().loss(x)``, jitted or not, its scale set to
    3.0 before the sixth, and the weight's gradient after them."""
    t = trainer()

    def step(x):
        loss = t.loss(x)
        loss.backward()
        return loss.detach()

    step = sg.jit(step) if jitted else step
    losses = []
    for i in range(8):
        t.scale = 3.0 if i >= 5 else 1.0
        losses.append(step(sg.ones(2, 3) * i).numpy())
    return losses, t.model.weight.grad.numpy()


@pytest.mark.parametrize("trainer", [ThroughAHelper, ThroughSuper, ThroughTheBaseClass])
def test_what_a_helper_reads_from_the_objects_the_step_passes_it_records_anew(trainer):
    """A jitted step calling ``t.loss(x)``, which passes ``self`` on to a helper (also
    through ``super()`` or the base class) reading ``trainer.scale``: a new scale records
    anew. (Replays kept the recorded scale, silently: a helper's parameters were not known.)"""
    (eager, eager_grad), (replayed, grad) = (
        _scaled_trainer_run(trainer, jitted) for jitted in (False, True)
    )
    for e, r in zip(eager, replayed):
        np.testing.assert_array_equal(r, e)
    np.testing.assert_array_equal(grad, eager_grad)


def _default_argument_run(jitted):
    """``_scaled_trainer_run``'s losses for a step given its trainer as a default argument
    (``def step(x, t=t)``, as in a loop making steps)."""
    t = ScaledTrainer()

    def step(x, t=t):
        return t.loss(x).detach()

    step = sg.jit(step) if jitted else step
    losses = []
    for i in range(8):
        t.scale = 3.0 if i >= 5 else 1.0
        losses.append(step(sg.ones(2, 3) * i).numpy())
    return losses


def test_what_a_step_reads_from_a_default_argument_records_anew():
    """An object a default argument holds is read as a passed one's: a new scale records
    anew. (Replays kept the recorded scale, silently.)"""
    for e, r in zip(_default_argument_run(False), _default_argument_run(True)):
        np.testing.assert_array_equal(r, e)


def _default_container_run(jitted, kind):
    """The losses of 8 calls of a step given a dict or a list of the script's as a default
    argument (``def step(x, hp=HPARAMS)``), reading a scale from it; the script sets the
    scale to 3.0 before the sixth call."""
    hparams = {"scale": 1.0} if kind == "dict" else [1.0]
    key = "scale" if kind == "dict" else 0
    sg.manual_seed(0)
    model = nn.Linear(3, 1)

    def step(x, hp=hparams):
        model.zero_grad()
        loss = model(x).sum() * hp[key]
        loss.backward()
        return loss.detach(), model.weight.grad

    step = sg.jit(step) if jitted else step
    losses = []
    for i in range(8):
        hparams[key] = 3.0 if i >= 5 else 1.0
        losses.append([t.numpy() for t in step(sg.ones(2, 3) * i)])
    return losses


@pytest.mark.parametrize("kind", ["dict", "list"])
def test_what_a_step_reads_from_a_default_dict_or_list_records_anew(kind):
    """A dict or list given by a default argument is read as a global one: a new scale put
    into it records anew. (Replays kept the recorded scale, silently: the guard key holds
    what the call's containers hold, not what a default's holds.)"""
    for e, r in zip(_default_container_run(False, kind), _default_container_run(True, kind)):
        np.testing.assert_array_equal(r[0], e[0])
        np.testing.assert_array_equal(r[1], e[1])


class ScaledBackward(sg.autograd.Function):
    """The identity, whose backward scales the gradient by ``hook_config.scale``."""

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        return grad * hook_config.scale


hook_config = types.SimpleNamespace(scale=1.0)  # what the hook and the Function read


def _grads_with_a_config_change(how, jitted):
    """The weight's gradient after each of 8 calls of a step whose gradient passes through a
    parameter's hook (``how="hook"``) or a custom Function's backward (``"function"``), both
    reading ``hook_config.scale``, set to 3.0 before the sixth call."""
    sg.manual_seed(0)
    model = nn.Linear(3, 2)
    if how == "hook":
        model.weight.register_hook(lambda grad: grad * hook_config.scale)

    def step(x):
        model.zero_grad()
        out = model(x)
        if how == "function":
            out = ScaledBackward.apply(out)
        out.pow(2).sum().backward()

    step = sg.jit(step) if jitted else step
    grads = []
    for i in range(8):
        hook_config.scale = 3.0 if i >= 5 else 1.0
        step(sg.ones(2, 3) * i)
        grads.append(model.weight.grad.numpy())
    return grads


@pytest.mark.parametrize("how", ["hook", "function"])
def test_a_config_a_gradient_hook_or_a_custom_backward_reads_records_anew(how):
    """A parameter's gradient hook and a custom ``autograd.Function``'s backward are read as
    helpers of the step: a value they read changed between calls records anew. (Replays
    kept the recorded scale, silently.)"""
    for e, j in zip(*(_grads_with_a_config_change(how, jitted) for jitted in (False, True))):
        np.testing.assert_array_equal(j, e)


def test_a_global_rebound_that_a_compiled_or_jitted_modules_forward_reads_records_anew():
    """``compile(module)`` and ``jit(module)``: a global tensor the forward reads, bound to a
    new tensor, records anew (replays used the old one)."""
    global helper_model

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            return self.fc(x * helper_model)

    net, x = Scaled(), sg.randn(2, 3)
    try:
        for wrap in (sg.compile, sg.jit):
            wrapped = wrap(net)
            for scale in (1.0, 2.0):
                helper_model = sg.full((3,), scale)
                for _ in range(CALLS):
                    out = wrapped(x)
                    assert out.tolist() == net(x).tolist(), (wrap, scale)
                    if out.requires_grad:
                        out.sum().backward()
    finally:
        helper_model = None


class ScaledStep:
    """A training step written as a callable object: ``__call__`` reads ``self.scale``."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __call__(self, x):
        return x * self.scale * PARTIAL_SCALE


PARTIAL_SCALE = 1.0


def _scaled(x, cfg, power):
    return x**power * cfg.scale * PARTIAL_SCALE


@pytest.mark.parametrize("form", ["functools.partial", "a callable object"])
def test_a_partial_or_a_callable_object_is_read_as_its_function(form):
    """``jit(functools.partial(step, cfg=cfg))`` and ``jit(trainer)`` (an object with
    ``__call__``): the function they run is read as a step given by name, with what the
    partial binds (``cfg``) or the object read as ``self``: a global, or a value read from
    them, changed between calls records anew."""
    global PARTIAL_SCALE
    cfg, x = types.SimpleNamespace(scale=2.0), sg.full((2,), 3.0)
    if form == "functools.partial":
        fn = functools.partial(_scaled, cfg=cfg, power=2)
    else:
        fn = cfg = ScaledStep(2.0)
    jitted = sg.jit(fn)
    try:
        for change in ({}, {"scale": 5.0}, {"global": 4.0}):
            PARTIAL_SCALE = change.get("global", PARTIAL_SCALE)
            cfg.scale = change.get("scale", cfg.scale)
            for _ in range(CALLS):
                assert jitted(x).tolist() == fn(x).tolist(), change
    finally:
        PARTIAL_SCALE = 1.0


LOSS_WEIGHT = 1.0


def _weighted_loss(out, y):
    return (out - y).square().mean() * LOSS_WEIGHT


@pytest.mark.parametrize("kind", ["a function", "a bound method", "a functools.partial"])
def test_a_loss_function_of_the_enclosing_function_is_read_as_a_helper(kind):
    """``make_step(loss_fn)`` returning a jitted step that calls ``loss_fn``: the function
    held in the closure (a plain function, a bound method, a partial) is read as a helper
    of the step, so a global or an attribute it reads, changed between calls, records
    anew."""
    global LOSS_WEIGHT
    scaler = Scaler(1.0)
    loss_fn = {
        "a function": _weighted_loss,
        "a bound method": scaler.scale,
        "a functools.partial": functools.partial(_weighted_loss),
    }[kind]

    def make_step(loss_fn):
        if kind == "a bound method":
            return lambda x, y: loss_fn(x - y)
        return lambda x, y: loss_fn(x, y)

    jitted, eager, x, y = sg.jit(make_step(loss_fn)), make_step(loss_fn), sg.ones(2), sg.zeros(2)
    try:
        for weight in (1.0, 3.0):
            LOSS_WEIGHT = scaler.factor = weight
            for _ in range(CALLS):
                assert jitted(x, y).tolist() == eager(x, y).tolist()
    finally:
        LOSS_WEIGHT = 1.0


def _logged(fn):
    """A decorator of the user's code, as ``functools.wraps`` writes one."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize("decorator", ["sg.no_grad()", "a functools.wraps decorator"])
def test_a_decorated_step_is_read_through_its_decorator(decorator):
    """``@sg.jit`` over ``@sg.no_grad()`` or a decorator of the user's: the step the decorator
    holds in its closure is read as a helper, so a global it reads changed between calls
    records anew (read through the wrapper alone, it was frozen)."""
    global LOSS_WEIGHT
    wrap = {"sg.no_grad()": sg.no_grad(), "a functools.wraps decorator": _logged}[decorator]
    jitted, x = sg.jit(wrap(lambda x: x * LOSS_WEIGHT)), sg.ones(2)
    try:
        for weight in (1.0, 3.0):
            LOSS_WEIGHT = weight
            for _ in range(CALLS):
                assert jitted(x).tolist() == [weight, weight]
    finally:
        LOSS_WEIGHT = 1.0


@dataclasses.dataclass
class StepConfig:
    scale: float = 2.0


class ConfigObject:
    def __init__(self) -> None:
        self.scale = 2.0


CONFIGS = {
    "a dataclass": StepConfig,
    "an object": ConfigObject,
    "a SimpleNamespace": lambda: types.SimpleNamespace(scale=2.0),
    "an argparse Namespace": lambda: argparse.Namespace(scale=2.0),
}


@pytest.mark.parametrize("config", CONFIGS)
def test_a_config_object_passed_to_the_step_is_read_as_a_global(config):
    """``train_step(x, args)``: an object passed (a config, argparse's ``args``) is part of the
    guard key by identity, and what the step reads from it (``args.scale``) is guarded, so
    changing it between calls records anew, while calls leaving it replay."""
    cfg, x = CONFIGS[config](), sg.ones(2)

    def step(x, cfg):
        return x * cfg.scale

    jitted = sg.jit(step)
    for scale in (2.0, 5.0):
        cfg.scale = scale
        for _ in range(CALLS):
            assert jitted(x, cfg).tolist() == [scale, scale]
    assert sum(map(len, jitted.recordings.values())) == 2


@dataclasses.dataclass(frozen=True)
class FrozenConfig:
    """Hashable, and equal to another of its name whatever its scale."""

    name: str
    scale: float = dataclasses.field(compare=False)


class NamedConfig:
    """Hashable, and equal to another of its name whatever its scale."""

    def __init__(self, name: str, scale: float) -> None:
        self.name, self.scale = name, scale

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedConfig) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


@pytest.mark.parametrize("make", [FrozenConfig, NamedConfig])
def test_a_config_passed_to_the_step_is_in_the_key_by_identity_not_equality(make):
    """A new config object passed, equal to the recorded one by its ``__eq__`` but with
    another scale: a recording guards what the step reads (``cfg.scale``) on the object it
    was made for, so the key holds that object by identity and the calls passing it record
    anew (before, a hashable config was in the key by equality, and replays kept the
    recorded scale, silently)."""
    jitted, x = sg.jit(lambda x, cfg: x * cfg.scale), sg.ones(2)
    for scale in (2.0, 5.0):
        cfg = make("config", scale)
        for _ in range(CALLS):
            assert jitted(x, cfg).tolist() == [scale, scale]
    assert sum(map(len, jitted.recordings.values())) == 2


def test_a_learning_rate_the_step_reads_from_its_optimizer_records_anew():
    """``opt.param_groups[0]["lr"]`` read in the step's Python (noise scaled by the learning
    rate, as Langevin dynamics does): read into the optimizer's list of groups, it is
    guarded, so each learning rate a scheduler sets records anew and equals eager."""

    def train(jit):
        sg.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = sg.optim.SGD(model.parameters(), lr=0.1)
        scheduler = sg.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        x = sg.randn(4, 3)

        def step(x):
            loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with sg.no_grad():
                for p in model.parameters():
                    p.add_(sg.randn_like(p) * (2 * opt.param_groups[0]["lr"]) ** 0.5 * 1e-2)
            return loss.detach()

        run = sg.jit(step) if jit else step
        losses = []
        for _ in range(10):
            losses.append(run(x).item())
            scheduler.step()
        return losses, model.weight.tolist()

    assert train(True) == train(False)


@pytest.mark.parametrize("wrap", ["compile(model)", "jit(step)", "a jitted method of an agent"])
def test_a_config_a_submodules_forward_reads_records_anew(wrap):
    """A model keeping a config object (``self.config = config``, as GPT implementations do),
    whose submodule's forward reads it (``self.config.temperature``): the forwards of the
    user's modules are read as helpers of the step, so changing the config records anew,
    under ``compile(model)``, a jitted step calling the model, and a jitted method of an
    object holding the model (``self.model``)."""
    config = types.SimpleNamespace(temperature=1.0, scaled=True)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.config, self.fc = config, nn.Linear(3, 3)

        def forward(self, x):
            y = self.fc(x)
            return (y / 2 if self.config.scaled else y) / self.config.temperature

    model, x = nn.Sequential(Block(), nn.Linear(3, 1)), sg.randn(2, 3)

    class Agent:
        def __init__(self):
            self.model = model

        @sg.jit
        def act(self, x):
            return self.model(x)

    wrapped = {
        "compile(model)": sg.compile(model),
        "jit(step)": sg.jit(lambda x: model(x)),
        "a jitted method of an agent": Agent().act,
    }[wrap]
    for change in ({}, {"temperature": 2.0}, {"scaled": False}):
        vars(config).update(change)
        for _ in range(CALLS):
            with sg.no_grad():
                assert wrapped(x).tolist() == model(x).tolist(), change


def test_a_loss_over_a_boolean_mask_raises_and_its_where_form_replays():
    """``mse_loss(pred[mask], y[mask])``: the mean's divisor is the count of the recording's
    mask, which a replay would keep for every batch (silently, whenever the two recording
    calls' masks counted alike). Refused while recording, naming the line; the same loss
    with the shape kept (``where``, divided by the count) replays equal to eager."""
    model = nn.Linear(3, 1)

    def masked(x, y, mask):
        pred = model(x).squeeze(1)
        return sg.nn.functional.mse_loss(pred[mask], y[mask])  # MASKED

    def kept(x, y, mask):
        error = sg.where(mask, model(x).squeeze(1) - y, 0.0)
        return (error * error).sum() / mask.sum()

    rng = np.random.default_rng(0)
    calls = [(sg.randn(6, 3), sg.randn(6), sg.tensor(rng.random(6) > 0.5)) for _ in range(CALLS)]
    jitted = sg.jit(masked)
    jitted(*calls[0])
    with pytest.raises(
        sg.JitError, match=f"boolean mask.*test_jit_pitfalls.py:{_line_of('# MASKED')}"
    ):
        jitted(*calls[1])
    jitted = sg.jit(kept)
    for args in calls:
        assert jitted(*args).tolist() == kept(*args).tolist() == masked(*args).tolist()


def test_writing_through_a_boolean_mask_replays():
    """``y[mask] = 0`` keeps ``y``'s shape: replayed, on each call's own mask."""

    def clipped(x):
        y = x * 1
        y[x > 0] = 0.0
        return y.sum()

    jitted, rng = sg.jit(clipped), np.random.default_rng(0)
    for _ in range(CALLS + 1):
        x = sg.tensor(rng.standard_normal(5))
        assert jitted(x).tolist() == clipped(x).tolist()
    assert sum(len(r) for r in jitted.recordings.values()) == 1


def test_writing_through_a_boolean_mask_into_a_graph_replays_or_raises():
    """``logits[mask] = -1e4`` on a tensor that requires grad is a ``masked_fill``: replayed
    on each call's mask, also when its count of True entries differs from the recording's
    (the replay wrote a value of the recorded count: NumPy's broadcasting error). A value
    that requires grad goes through ``logits[mask]``, whose count a replay would keep:
    refused while recording, naming the line."""
    weight = sg.randn(4, 4, requires_grad=True)

    def masked(x, fill):
        logits = x @ weight
        logits[x > 0] = fill  # WRITTEN
        logits.sum().backward()
        return logits

    x = [sg.tensor([[1.0, -1, -1, -1], [-1, 1, -1, -1]]), sg.tensor([[1.0, 1, -1, -1]] * 2)]
    jitted = sg.jit(masked)
    for args in [x[0]] * 3 + [x[1], x[0], x[1]]:  # recorded on 2 True entries, replayed on 4
        weight.grad = None
        out = jitted(args, -1e4).tolist(), weight.grad.tolist()
        weight.grad = None
        assert out == (masked(args, -1e4).tolist(), weight.grad.tolist())
    assert sum(len(r) for r in jitted.recordings.values()) == 1
    jitted, bias = sg.jit(masked), sg.zeros((), requires_grad=True)
    jitted(x[0], bias)
    with pytest.raises(
        sg.JitError, match=f"boolean mask.*test_jit_pitfalls.py:{_line_of('# WRITTEN')}"
    ):
        jitted(x[0], bias)


AUX_WEIGHT = 0.0  # a plain global the steps below read (and tests rebind)
epoch = 0


def test_a_plain_global_or_closure_value_rebound_records_anew():
    """A number or flag the step reads from its globals or its enclosing function (``if
    epoch > 1``, ``AUX_WEIGHT * aux``) is frozen into the recording: bound to another value
    it records anew (replays went on with the old one, silently), and bound to an equal one
    again it replays."""
    global AUX_WEIGHT, epoch
    model = nn.Linear(2, 1)
    scale = 1.0

    def step(x):
        out = model(x).sum() * scale
        if epoch > 1:
            out = out + AUX_WEIGHT * x.sum()
        return out

    jitted, x = sg.jit(step), sg.ones(3, 2)
    try:
        for epoch, AUX_WEIGHT, scale in [(0, 0.0, 1.0), (2, 0.5, 1.0), (2, 1.0, 2.0)]:
            for _ in range(CALLS):
                assert jitted(x).tolist() == step(x).tolist(), (epoch, AUX_WEIGHT, scale)
            AUX_WEIGHT = AUX_WEIGHT * 1  # an equal value bound again: no new recording
            made = sum(len(r) for r in jitted.recordings.values())
            jitted(x)
            assert sum(len(r) for r in jitted.recordings.values()) == made
        AUX_WEIGHT = 1  # equal to 1.0, but of another type: a new recording, as for an argument
        jitted(x)
        assert sum(len(r) for r in jitted.recordings.values()) == made + 1
    finally:
        AUX_WEIGHT, epoch = 0.0, 0


def test_a_loop_variable_named_like_a_method_the_step_calls_is_not_guarded():
    """``for step in range(n)`` at a script's top level, and ``opt.step()`` in the jitted
    function: ``step`` is an attribute name there, not the global, so the changing loop
    variable records nothing more."""
    model = nn.Linear(2, 1)
    scope = {"model": model, "opt": sg.optim.SGD(model.parameters(), lr=0.1)}
    exec(  # noqa: S102  (a script's top level, as its own module globals)
        "def train(x):\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n",
        scope,
    )
    train, x = sg.jit(scope["train"]), sg.ones(3, 2)
    for step in range(CALLS + 3):
        scope["step"] = step
        train(x)
    assert sum(len(r) for r in train.recordings.values()) == 1


def test_a_global_counter_the_step_increments_raises_naming_it():
    """``global n; n += 1`` in the step: a replay would not count (it ran no Python)."""
    scope = {}
    exec(  # noqa: S102  (a counter at a script's top level)
        "n = 0\ndef counted(x):\n    global n\n    n += 1\n    return x * 2\n",
        scope,
    )
    counted, x = sg.jit(scope["counted"]), sg.ones(2)
    counted(x)
    with pytest.raises(sg.JitError, match="binds the global 'n' to a new object"):
        counted(x)


@COUNTING
def test_a_returned_structure_that_grows_raises_naming_the_step():
    """A step returning a structure whose length changes (``tuple(history)``, a growing list
    of tensors) would return the recorded structure from every replay: the third call
    raises, saying the call has run (a fallback to eager must not repeat it)."""
    history = []

    def step(x):
        history.append(1)
        return (x * 2).sum(), tuple(history)

    def tensors(x):
        history.append(x * 2)
        return list(history)

    for fn in (step, tensors):
        jitted, x = sg.jit(fn), sg.ones(3)
        jitted(x), jitted(x)
        pattern = rf"{fn.__name__}\(\) returned a structure of another shape.*has run the step"
        with pytest.raises(sg.JitError, match=pattern):
            jitted(x)


# ---- Python state a step changes in place: a replay does not, so the recording warns ----

MODEL = nn.Linear(3, 1)
OPT = sg.optim.SGD(MODEL.parameters(), lr=0.1)
LOSSES = []
METRICS = {}
HISTORY = {"loss": []}
ARGS = argparse.Namespace(steps=0)


class Trainer:
    def __init__(self):
        self.count, self.last = 0, None


TRAINER = Trainer()


def fit(x):
    OPT.zero_grad()
    loss = MODEL(x).pow(2).mean()
    loss.backward()
    OPT.step()
    return loss


def appending(x):
    LOSSES.append(fit(x).detach())


def storing(x):
    METRICS["loss"] = fit(x).detach()


def appending_inside_a_dict(x):
    HISTORY["loss"].append(fit(x).detach())


def counting_in_an_attribute(x):
    fit(x)
    TRAINER.count += 1


def keeping_in_an_attribute(x):
    TRAINER.last = fit(x).detach()


def counting_in_a_namespace(x):
    fit(x)
    ARGS.steps += 1


def log(loss):
    LOSSES.append(loss.detach())


def logging_through_a_helper(x):
    log(fit(x))


CHANGING = {
    appending: ("the global 'LOSSES' (list)", LOSSES, lambda: len(LOSSES)),
    appending_inside_a_dict: ("HISTORY['loss'] (list)", None, lambda: len(HISTORY["loss"])),
    counting_in_an_attribute: ("the global 'TRAINER' (Trainer)", None, lambda: TRAINER.count),
    counting_in_a_namespace: ("the global 'ARGS' (Namespace)", None, lambda: ARGS.steps),
    logging_through_a_helper: ("the global 'LOSSES' (list)", LOSSES, lambda: len(LOSSES)),
}


@pytest.mark.parametrize("step", CHANGING, ids=lambda step: step.__name__)
def test_a_step_changing_python_state_it_reads_warns_naming_it(step):
    """A list appended to, a dict stored into (or a list inside it), an attribute counted or
    set on an object of the user's class or an argparse Namespace, in the step or in a helper
    it calls by name: replays run no Python, so the two recordings warn, naming what changed
    and where the step was called; the calls after them leave it as the last recording did."""
    what, _, seen = CHANGING[step]
    jitted, x = sg.jit(step), sg.ones(2, 3)
    jitted(x)
    with pytest.warns(UserWarning, match=re.escape(f"{step.__name__}() changed {what} while")) as w:
        jitted(x), jitted(x)
    assert {record.filename for record in w} == {__file__}
    after_recordings = seen()
    jitted(x), jitted(x)
    assert seen() is after_recordings or seen() == after_recordings


@pytest.mark.parametrize(
    "step, stored",
    [(storing, lambda: METRICS["loss"]), (keeping_in_an_attribute, lambda: TRAINER.last)],
    ids=["storing", "keeping_in_an_attribute"],
)
def test_a_tensor_the_step_made_stored_in_python_state_is_stored_by_each_replay(step, stored):
    """A tensor the step made, stored into a global dict or an attribute of an object of the
    user's class: each replay stores its own (the loss before that call's update, as the
    eager step stores it), and nothing warns."""
    jitted, x = sg.jit(step), sg.ones(2, 3)
    kept = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):  # the eager call, two recordings, two replays
            with sg.no_grad():
                expected = MODEL(x).pow(2).mean()
            jitted(x)
            kept.append(stored())
            assert kept[-1].item() == expected.item()
    assert len({id(t) for t in kept}) == len(kept)  # a new tensor each call, safe to keep


KEYS = iter(range(100))
CACHE = {}


def test_a_step_storing_into_other_places_on_its_recordings_raises():
    def step(x):
        CACHE[next(KEYS)] = fit(x).detach()  # (a key the recordings cannot see coming)

    jitted, x = sg.jit(step), sg.ones(2, 3)
    jitted(x), jitted(x)
    with pytest.raises(sg.JitError, match=r"stored the tensors it made into other attributes"):
        jitted(x)


def test_a_step_storing_into_a_dict_it_is_passed_warns():
    """A dict of metrics passed as an argument is Python state too."""
    jitted, x, metrics = (
        sg.jit(lambda x, metrics: metrics.update(loss=fit(x).detach())),
        sg.ones(2, 3),
        {},
    )
    jitted(x, metrics)
    with pytest.warns(UserWarning, match=r"changed its argument 1 \(dict\) while it was recorded"):
        jitted(x, metrics)


class Attention(nn.Module):
    """A forward that keeps its attention weights on the module, for a picture."""

    def __init__(self):
        super().__init__()
        self.query = nn.Linear(3, 3)

    def forward(self, x):
        self.weights = self.query(x).softmax(-1)
        return self.weights * x


def attention_training(how):
    """A step training a model whose Attention keeps its weights, run as ``how`` says
    (eager, jit, or compile of the model); the model and the step."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), Attention())
    net = sg.compile(model) if how == "compile" else model
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()

    return model, sg.jit(step) if how == "jit" else step


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_a_forward_keeping_what_it_computed_on_its_module_keeps_each_replays(how):
    """An attribute a forward sets on its module (a submodule's, here) to a tensor it made:
    under jit (the whole step) and compile (the model) each replay sets it to its own tensor,
    what the eager steps set, bit for bit, and nothing warns."""
    (eager, eager_step), (model, step) = attention_training("eager"), attention_training(how)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in range(6):
            x = sg.tensor(np.random.default_rng(seed).standard_normal((2, 3)).astype("f4"))
            eager_step(x), step(x)
            ours, theirs = (m[1].weights.detach().numpy() for m in (model, eager))
            np.testing.assert_array_equal(ours, theirs)
    for mine, theirs in zip(model.parameters(), eager.parameters()):
        np.testing.assert_array_equal(mine.detach().numpy(), theirs.detach().numpy())


class KeepsPenalty(nn.Module):
    """A forward keeping a penalty with its graph for the loss outside (Bayes by Backprop's
    ``self.log_q``), and, with ``keep_output``, its output too."""

    def __init__(self, keep_output):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
        self.keep_output = keep_output

    def forward(self, x):
        y = self.a(x)
        self.a[0].penalty = (y * y).sum()  # on a submodule, as a BayesLinear layer keeps it
        if self.keep_output:
            self.last = y
        return y


@pytest.mark.parametrize("keep_output", [False, True])
def test_a_tensor_the_compiled_forward_stores_with_its_graph_gets_its_gradient(keep_output):
    """A loss outside reading a tensor the compiled forward stored on a (sub)module with its
    graph backpropagates through it into the parameters, as eagerly, bit for bit (before, the
    stored tensor came back detached, so the penalty's gradient was silently lost)."""
    models = []
    for how in ("eager", "compile"):
        sg.manual_seed(0)
        model = KeepsPenalty(keep_output)
        net = sg.compile(model) if how == "compile" else model
        opt = sg.optim.SGD(model.parameters(), lr=0.1)
        for seed in range(6):
            x = sg.tensor(np.random.default_rng(seed).standard_normal((2, 3)).astype("f4"))
            opt.zero_grad()
            loss = net(x).sum() + 0.5 * model.a[0].penalty
            if keep_output:
                loss = loss + model.last.mean()
            loss.backward()
            opt.step()
        assert model.a[0].penalty.requires_grad
        models.append(model)
    for mine, theirs in zip(models[1].parameters(), models[0].parameters()):
        np.testing.assert_array_equal(mine.detach().numpy(), theirs.detach().numpy())


class KeepsLast(nn.Module):
    """A forward returning, beside its output, the output the previous call kept."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.last = sg.zeros(2, 2)

    def forward(self, x):
        prev = self.last
        y = self.a(x)
        self.last = y.detach()
        return y, prev


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_a_returned_tensor_the_step_stores_over_is_each_calls(how):
    """A tensor the step reads from its module and returns after storing a new one there
    (the previous call's output): each replay returns what the previous call stored, as the
    eager calls do, bit for bit; not the recording's tensor ever after."""
    sg.manual_seed(0)
    eager = KeepsLast()
    sg.manual_seed(0)
    model = KeepsLast()
    net = sg.jit(lambda x: model(x)) if how == "jit" else sg.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in range(8):
            x = sg.tensor(np.random.default_rng(seed).standard_normal((2, 3)).astype("f4"))
            (y, prev), (eager_y, eager_prev) = net(x), eager(x)
            if how == "compile":  # (a compiled forward records until a backward ran)
                y.sum().backward(), eager_y.sum().backward()
            np.testing.assert_array_equal(prev.numpy(), eager_prev.numpy())
            np.testing.assert_array_equal(y.detach().numpy(), eager_y.detach().numpy())
            np.testing.assert_array_equal(model.last.numpy(), eager.last.numpy())


class Smoothing(nn.Module):
    """A forward keeping an average of its inputs' means, as an EMA: in place
    (``inplace``), or rebinding the attribute to a new tensor each call."""

    def __init__(self, inplace):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.mean = sg.zeros(3)
        self.inplace = inplace

    def forward(self, x):
        if self.inplace:
            with sg.no_grad():
                self.mean.mul_(0.5).add_(0.5 * x.mean(0))
        else:
            self.mean = 0.5 * self.mean + 0.5 * x.detach().mean(0)
        return self.a(x - self.mean)


def smoothing_calls(how, inplace):
    """A Smoothing model (as ``inplace`` says), an eager twin, and ``how`` (jit or compile)
    calling the model."""
    sg.manual_seed(0)
    eager = Smoothing(inplace)
    sg.manual_seed(0)
    model = Smoothing(inplace)
    compiled = sg.compile(model, fullgraph=True)  # (else that call runs eagerly, warned of)
    return model, eager, sg.jit(lambda x: model(x)) if how == "jit" else compiled


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_a_tensor_the_step_computes_with_and_then_stores_over_raises_naming_it(how):
    """``self.mean = 0.5 * self.mean + ...``: the program would hold the recording's tensor
    and compute with it at every replay. The recording raises a JitError naming the attribute
    and the in-place update, which replays as the eager calls run, bit for bit."""
    xs = [
        sg.tensor(np.random.default_rng(seed).standard_normal((4, 3)).astype("f4"))
        for seed in range(6)
    ]
    _, _, net = smoothing_calls(how, inplace=False)
    net(xs[0])  # eager
    with pytest.raises(sg.jit.JitError, match=r"tensor in Smoothing\.mean .*mul_"):
        net(xs[1])  # the first recording
    model, eager, net = smoothing_calls(how, inplace=True)
    for x in xs:
        ours, theirs = net(x), eager(x)
        if how == "compile":  # (a compiled forward records until a backward ran)
            ours.sum().backward(), theirs.sum().backward()
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
        np.testing.assert_array_equal(model.mean.numpy(), eager.mean.numpy())


class RetainsInput(nn.Linear):
    """A forward keeping its input's gradient (``x.retain_grad()``)."""

    def forward(self, x):
        x.retain_grad()
        return super().forward(x)


@pytest.mark.parametrize("inside", [True, False])
def test_a_non_leaf_arguments_retained_gradient_equals_eager(inside):
    """``x.retain_grad()`` on a non-leaf argument of a compiled module, called by the caller
    before the call or inside the forward (which sees a copy of it, and notes the call for every
    replay): ``x.grad`` is eager's at every call, bit for bit."""
    sg.manual_seed(0)
    model = RetainsInput(3, 2)
    net, w = sg.compile(model, fullgraph=True), sg.randn(4, 3, requires_grad=True)
    for _ in range(5):
        x, eager_x = w * 2, w * 2
        if not inside:
            x.retain_grad(), eager_x.retain_grad()
        net(x).square().sum().backward()
        model(eager_x).square().sum().backward()
        assert x.grad is not None
        np.testing.assert_array_equal(x.grad.numpy(), eager_x.grad.numpy())


def cumulative_batch_norm_training(how):
    """A step training a Linear and a BatchNorm1d keeping cumulative averages
    (``momentum=None``), run as ``how`` says (eager, jit of the step, compile of the model)."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=None))
    net = sg.compile(model) if how == "compile" else model
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = net(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    return model, sg.jit(step) if how == "jit" else step


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_a_batch_norm_keeping_cumulative_averages_replays_its_one_over_n(how):
    """BatchNorm's ``momentum=None`` weighs the n-th batch by 1/n, a tensor op on its count
    (no ``.item()``), which each replay computes anew: the running statistics, the losses and
    the parameters equal the eager steps', bit for bit."""
    eager, eager_step = cumulative_batch_norm_training("eager")
    model, step = cumulative_batch_norm_training(how)
    for seed in range(7):
        x = sg.tensor(np.random.default_rng(seed).standard_normal((5, 3)).astype("f4"))
        ours, theirs = step(x), eager_step(x)
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    for mine, theirs in zip(model.state_dict().values(), eager.state_dict().values()):
        np.testing.assert_array_equal(mine.detach().numpy(), theirs.detach().numpy())
    assert int(model[1].num_batches_tracked) == 7


def test_a_compiled_forward_keeping_a_python_value_on_its_module_warns():
    """What is not a tensor the forward made (a count) is set by the recordings only."""

    class Counting(nn.Linear):
        def forward(self, x):
            self.calls = getattr(self, "calls", 0) + 1
            return super().forward(x)

    net = sg.compile(Counting(3, 2))
    net(sg.ones(2, 3))
    with pytest.warns(UserWarning, match=r"changed an attribute of its Counting module while"):
        net(sg.ones(2, 3)), net(sg.ones(2, 3))


def test_a_pruned_modules_weight_after_jitted_steps_is_the_eager_steps():
    """``nn.utils.prune`` sets ``module.weight`` (the kept original times the mask) in a
    forward pre-hook: after jitted steps it is the last replay's, as after eager steps."""

    def pruned_layer_trained(jitted):
        sg.manual_seed(0)
        layer = nn.Linear(4, 3)
        nn.utils.prune.l1_unstructured(layer, "weight", amount=0.5)
        opt = sg.optim.SGD(layer.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            layer(x).pow(2).sum().backward()
            opt.step()

        step = sg.jit(step) if jitted else step
        x = sg.randn(8, 4)
        for _ in range(5):
            step(x)
        return layer.weight.detach().numpy()

    weights = [pruned_layer_trained(jitted) for jitted in (False, True)]
    np.testing.assert_array_equal(*weights)
    assert (weights[0] == 0).sum() == 6  # the mask holds


GLOBAL_MEAN = sg.zeros(3)
CLASSES = ["cat", "dog"]
SETTINGS = {"clip": 1.0}


def test_what_replays_itself_or_changes_nothing_in_python_does_not_warn():
    """Reading Python containers, a list built in the step, modes set by train() and eval(),
    an optimizer's and a scheduler's state, batch norm's statistics, a global tensor updated
    in place and module attributes set before the recordings: nothing to warn about."""
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, len(CLASSES)), nn.BatchNorm1d(len(CLASSES)))
    model.note = "set before"
    opt = sg.optim.Adam(model.parameters(), lr=0.1)
    scheduler = sg.optim.lr_scheduler.StepLR(opt, step_size=2)

    def step(x, y):
        opt.zero_grad()
        parts = [sg.nn.functional.cross_entropy(model(x), y)]
        parts.append(model[0].weight.pow(2).sum() * 0.0)
        loss = sum(parts)
        loss.backward()
        sg.nn.utils.clip_grad_norm_(model.parameters(), SETTINGS["clip"])
        opt.step()
        scheduler.step()
        with sg.no_grad():
            GLOBAL_MEAN.mul_(0.9).add_(x.mean(0) * 0.1)
        model.eval()
        return loss

    jitted = sg.jit(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(CALLS):
            model.train()  # which the step leaves in eval mode
            jitted(sg.randn(4, 3), sg.randint(0, len(CLASSES), (4,)))


def test_a_global_array_or_tensor_copied_into_a_tensor_is_copied_at_each_replay():
    """``sg.tensor(MASK)`` of a NumPy array (or a tensor) the step reads by name copies it at
    each replay, as eagerly, in its dtype: changed in place between calls, the replays see
    it (they copied the recording's copy before). ``from_numpy`` shares it anyway."""
    mask, weights = np.array([1.0, 0.0, 1.0], dtype=np.float32), sg.tensor([1.0, 2.0, 3.0])

    def step(x):
        copied = x * sg.tensor(mask) + x * sg.tensor(mask, dtype=sg.float64).float()
        return (copied * sg.tensor(weights) + x * sg.from_numpy(mask)).sum()

    jitted, x = sg.jit(step), sg.ones(3)
    for _ in range(CALLS):
        jitted(x)
    mask[1] = 5.0
    with sg.no_grad():
        weights.mul_(3.0)
    assert jitted(x).item() == step(x).item() == 1 * 2 * 3 + 10 * 6 + 2 * 9 + 7


def test_a_numpy_array_handed_to_an_op_beside_a_tensor_is_copied_at_each_replay():
    """A NumPy array the step reads by name used as an operand (``x * mask``, ``square @ x``,
    ``sg.where(c, x, mask)``, ``x.new_tensor(mask)``): copied into a tensor at each replay,
    as eagerly, so an in-place change between calls is seen (before, replays used the
    recording's copy, silently)."""
    mask = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    square = np.eye(3, dtype=np.float32)

    def step(x):
        parts = [x * mask, mask - x, x + mask, square @ x, x @ square]
        parts += [sg.where(x > 1, x, mask), x.new_tensor(mask)]
        return sum(part.sum() for part in parts)

    jitted, x = sg.jit(step), sg.ones(3)
    for _ in range(CALLS):
        assert jitted(x).item() == step(x).item() == 16.0
    mask[1], square[0, 1] = 6.0, 2.0
    assert jitted(x).item() == step(x).item() == 50.0
