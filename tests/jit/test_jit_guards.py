"""The fast path of a jitted call (scratchgrad/jit/guards.py): its generated checks replay a
recording only for calls the slow path (the guard key, then ``Recording.matches``) would
replay it for.

Each test records a step, then calls its fast path directly with another call or after a
change: where the slow path's key differs, or the state it checks changed, the fast path
must miss (return ``MISS``, so that the slow path decides); where the call is the recorded
one, it must replay.
"""

import functools
import itertools
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.autograd import autocast
from scratchgrad.autograd.grad_mode import state as grad_state
from scratchgrad.jit import guards, jitted
from scratchgrad.nn import functional as F

SHAPE = (4, 3)
OFFSET = sg.zeros(3)  # a global the step reads: a program holds it


def fresh(shape=SHAPE, dtype=np.float32, seed=0):
    return sg.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def recorded_step(by_keyword=False):
    """A jitted step over a closure's model and optimizer and a global, called (``step(x,
    y)``, or ``step(x=x, y=y)`` by keyword) until its fast path exists (eager, two
    recordings, a replay); with the model and optimizer."""
    sg.manual_seed(0)
    model = nn.Linear(3, 3)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) + OFFSET - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    step = sg.jit(step)
    for _ in range(4):
        x, y = fresh(), fresh(seed=1)
        step(x=x, y=y) if by_keyword else step(x, y)
    assert step.fast is not None
    return step, model, opt


def slow_key(args, kwargs):
    """The key the slow path looks the call's recordings up by."""
    return (jitted._signature(args, kwargs)[1], grad_state.enabled, autocast.state.dtype)


def hooked(t):
    t.register_hook(lambda grad: grad * 2)
    return t


def strided(shape=SHAPE):
    """A view of every other row of a larger array: the shape, but not the layout."""
    rows = fresh((2 * shape[0], *shape[1:]))
    return rows[::2]


class Other(np.ndarray):
    """An array type of its own, as a device's arrays are."""


CALLS = {
    "the recorded one": lambda: ((fresh(), fresh(seed=1)), {}),
    "another shape": lambda: ((fresh((5, 3)), fresh((5, 3))), {}),
    "another dtype": lambda: ((fresh(dtype=np.float64), fresh(seed=1)), {}),
    "another dtype of its size": lambda: ((fresh(dtype=np.int32), fresh(seed=1)), {}),
    "another array type": lambda: ((sg.Tensor._make(fresh().numpy().view(Other)), fresh()), {}),
    "Fortran order": lambda: ((sg.tensor(np.asfortranarray(fresh().numpy())), fresh()), {}),
    "a strided view": lambda: ((strided(), fresh()), {}),
    "requiring grad": lambda: ((fresh().requires_grad_(), fresh()), {}),
    "made by a graph": lambda: ((fresh().requires_grad_() * 1, fresh()), {}),
    "with a hook": lambda: ((hooked(fresh().requires_grad_()), fresh()), {}),
    "the same tensor twice": lambda: (2 * (fresh(),), {}),
    "the same array twice": lambda: ((lambda x: (x, sg.Tensor._make(x.array)))(fresh()), {}),
    "by keyword": lambda: ((fresh(),), {"y": fresh()}),
    "one tensor fewer": lambda: ((fresh(),), {}),
    "a Parameter": lambda: ((nn.Parameter(fresh()), fresh()), {}),
    "a number": lambda: ((fresh(), 1.0), {}),
}


@pytest.mark.parametrize("call", CALLS)
def test_the_fast_path_replays_only_calls_of_the_recorded_key(call):
    step, *_ = recorded_step()
    recorded = slow_key((fresh(), fresh()), {})
    args, kwargs = CALLS[call]()
    same = slow_key(args, kwargs) == recorded
    assert (step.fast(args, kwargs) is not guards.MISS) == same
    assert same == (call == "the recorded one")


@pytest.mark.parametrize("call", ["a result of a graph", "a leaf with a hook"])
def test_the_fast_path_misses_other_leaves_requiring_grad(call):
    """Recorded for leaves that require grad, a call with a result requiring grad (whose
    backward would run into a graph outside the step) or with a hooked leaf is another key."""
    sg.manual_seed(0)
    w = sg.randn(3, requires_grad=True)
    step = sg.jit(lambda x: (x * w).sum().backward())
    for _ in range(4):
        step(fresh().requires_grad_())
    x = fresh().requires_grad_()
    x = x * 1 if call == "a result of a graph" else hooked(x)
    assert slow_key((x,), {}) != slow_key((fresh().requires_grad_(),), {})
    assert step.fast((x,), {}) is guards.MISS


class _Switched(nn.Parameter):
    """A parameter whose class has its own ``requires_grad`` property: off while ``off``."""

    off = False
    requires_grad = property(
        lambda self: self._requires_grad and not self.off, nn.Parameter.requires_grad.fset
    )


@pytest.mark.parametrize("leaf", [sg.Tensor, nn.Parameter, _Switched])
def test_the_fast_path_reads_requires_grad_as_the_leafs_class_defines_it(leaf):
    """Tensor's property is read as the attribute behind it (15 ns, not 50), a class's own
    property as itself: the fast path misses once it says False."""
    sg.manual_seed(0)
    w = sg.randn(3)
    w = leaf(w) if leaf is not sg.Tensor else w.requires_grad_()
    step = sg.jit(lambda x: (x * w).sum().backward())
    for _ in range(4):
        step(fresh(shape=3))
    names = step.fast.__code__.co_names  # (the argument, a Tensor, reads the attribute)
    assert "_requires_grad" in names and ("requires_grad" in names) == (leaf is _Switched)
    assert step.fast((fresh(shape=3),), {}) is not guards.MISS
    _Switched.off = True
    try:
        assert (step.fast((fresh(shape=3),), {}) is guards.MISS) == (leaf is _Switched)
    finally:
        _Switched.off = False


@pytest.mark.parametrize("mode", ["no_grad", "autocast"])
def test_the_fast_path_misses_in_another_grad_or_autocast_mode(mode):
    step, *_ = recorded_step()
    context = sg.no_grad() if mode == "no_grad" else sg.autocast("cpu", dtype=sg.bfloat16)
    with context:
        assert step.fast((fresh(), fresh()), {}) is guards.MISS


@settings(max_examples=40, deadline=None)
@given(
    rows=st.sampled_from([3, 4]),
    dtype=st.sampled_from([np.float32, np.float64]),
    layout=st.sampled_from(["C", "F", "strided"]),
    requires_grad=st.booleans(),
)
def test_the_fast_path_never_replays_where_the_key_differs(rows, dtype, layout, requires_grad):
    step, *_ = recorded_step()
    recorded = slow_key((fresh(), fresh()), {})
    x = fresh((rows, 3), dtype)
    if layout == "F":
        x = sg.tensor(np.asfortranarray(x.numpy()))
    elif layout == "strided":
        x = sg.tensor(np.repeat(x.numpy(), 2, axis=0))[::2]
    x.requires_grad_(requires_grad)
    args = (x, fresh())
    if slow_key(args, {}) != recorded:
        assert step.fast(args, {}) is guards.MISS
    else:
        assert step.fast(args, {}) is not guards.MISS


def _eval(model, opt):
    model.eval()


def _freeze(model, opt):
    model.weight.requires_grad_(False)


def _new_array(model, opt):
    model.weight.data = model.weight.data * 0.5


def _hook(model, opt):
    model.bias.register_hook(lambda grad: grad * 2)


def _post_accumulate_hook(model, opt):
    model.bias.register_post_accumulate_grad_hook(lambda p: None)


def _attribute(model, opt):
    model.scale = 2.0


def _new_global(model, opt):
    global OFFSET
    OFFSET = sg.zeros(3)


CHANGES = {
    "model.eval()": _eval,
    "a parameter frozen": _freeze,
    "a parameter's .data assigned": _new_array,
    "a hook on a parameter": _hook,
    "a post-accumulate-grad hook": _post_accumulate_hook,
    "an attribute set on the model": _attribute,
    "a global bound to a new tensor": _new_global,
}


@pytest.mark.parametrize("change", CHANGES)
def test_the_fast_path_misses_after_a_change_the_slow_path_checks(change):
    step, model, opt = recorded_step()
    args = (fresh(), fresh())
    assert step.fast(args, {}) is not guards.MISS
    global OFFSET
    offset = OFFSET
    try:
        CHANGES[change](model, opt)
        assert step.fast(args, {}) is guards.MISS
    finally:
        OFFSET = offset


def test_the_fast_path_misses_when_the_closure_holds_another_object():
    step, model, opt = recorded_step()
    (cell,) = [c for c in step.fn.__closure__ if c.cell_contents is opt]
    cell.cell_contents = sg.optim.SGD(model.parameters(), lr=0.1)
    assert step.fast((fresh(), fresh()), {}) is guards.MISS


def trained(how, rows):
    """A linear model's parameters after a step on each batch of ``rows`` rows, run eagerly,
    jitted (``how="jit"``) or through the compiled model (``how="compile"``)."""
    sg.manual_seed(0)
    model = nn.Linear(3, 2)
    net = sg.compile(model) if how == "compile" else model
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()

    step = sg.jit(step) if how == "jit" else step
    for i, n in enumerate(rows):
        step(fresh((n, 3), seed=i))
    return [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_calls_switching_between_two_programs_equal_eager(how):
    """Each miss falls to the slow path, whose replay makes its recording's fast path the one
    tried next: batches of 5 and 4 rows in turn, then runs of each, leave the parameters
    eager steps leave."""
    rows = [5, 4] * 6 + [4] * 8 + [5] * 4 + [4] * 2
    for eager, replayed in zip(trained("eager", rows), trained(how, rows)):
        np.testing.assert_array_equal(replayed, eager)


def compiled_model(shape=SHAPE):
    """A compiled linear model whose fast path exists (eager, two recordings, a replay; each
    with its backward) for inputs of ``shape``, with the model."""
    sg.manual_seed(0)
    model = nn.Linear(3, 3)
    net = sg.compile(model)
    for _ in range(4):
        net(fresh(shape)).sum().backward()
    assert net._compiled.fast is not None
    return net._compiled, model


def fast_of(compiled):
    """A compiled forward's fast path (it keeps the recording beside it)."""
    return compiled.fast[1]


def compiled_key(compiled, args):
    return compiled._signature(args, {})[1]


@pytest.mark.parametrize(
    "call", ["the recorded one", "another shape", "Fortran order", "requiring grad", "by keyword"]
)
def test_a_compiled_modules_fast_path_replays_only_calls_of_the_recorded_key(call):
    compiled, _ = compiled_model()
    args, kwargs = CALLS[call]()
    args = args[:1]  # the model takes one tensor
    same = not kwargs and compiled_key(compiled, args) == compiled_key(compiled, (fresh(),))
    assert (fast_of(compiled)(args, kwargs) is not guards.MISS) == same
    assert same == (call == "the recorded one")


COMPILED_CHANGES = {
    "model.eval()": _eval,
    "a parameter frozen": _freeze,
    "a parameter's .data assigned": _new_array,
    "a hook on a parameter": _hook,
}


@pytest.mark.parametrize("change", COMPILED_CHANGES)
def test_a_compiled_modules_fast_path_misses_after_a_change_its_guards_see(change):
    compiled, model = compiled_model()
    args = (fresh(),)
    assert fast_of(compiled)(args, {}) is not guards.MISS
    COMPILED_CHANGES[change](model, None)
    assert fast_of(compiled)(args, {}) is guards.MISS


def test_a_compiled_modules_fast_path_misses_a_parameters_array_as_the_argument():
    compiled, model = compiled_model((3, 3))
    args = (sg.Tensor._make(model.weight.array),)  # the weight's own (3, 3) array as x
    assert compiled_key(compiled, args) != compiled_key(compiled, (fresh((3, 3)),))
    assert fast_of(compiled)(args, {}) is guards.MISS


def test_a_fast_path_is_made_once_per_recording_even_when_none_covers_the_call(monkeypatch):
    """A call passing a dict gets no fast path: the slow path replays it, and does not try
    to make one again at every call."""
    made = []
    fast_path = guards.fast_path
    monkeypatch.setattr(guards, "fast_path", lambda *a: made.append(fast_path(*a)) or made[-1])
    w = sg.randn(3, requires_grad=True)
    step = sg.jit(lambda batch: (batch["x"] * w).sum().backward())
    for _ in range(8):
        step({"x": fresh()})
    assert made == [None] and step.fast is None


def scaled_step(recorded=1.0):
    """A jitted step taking a plain value after its tensor (``step(x, scale)``, None for no
    scaling), called with ``scale=recorded`` until its fast path exists; with its model."""
    sg.manual_seed(0)
    model = nn.Linear(3, 3)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x, scale):
        opt.zero_grad()
        loss = (model(x) * (1 if scale is None else scale)).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    step = sg.jit(step)
    for _ in range(4):
        step(fresh(), recorded)
    return step, model


PLAIN_CALLS = {
    "the recorded one": (1.0,),
    "another value": (0.5,),
    "an equal int": (1,),  # == 1.0, but the keys (int, 1) and (float, 1.0) differ
    "an equal bool": (True,),
    "None": (None,),
    "a string": ("1.0",),
    "a tensor": (fresh((1,)),),
    "not a number": (float("nan"),),
}


@pytest.mark.parametrize("call", PLAIN_CALLS)
def test_the_fast_path_checks_plain_arguments_as_the_key_does(call):
    """A plain value (a number, a string, None, a bool) passed by position is part of the
    key: the fast path replays only for one of the same type and an equal value."""
    step, _ = scaled_step()
    assert step.fast is not None
    (value,) = PLAIN_CALLS[call]
    x = fresh()
    same = slow_key((x, value), {}) == slow_key((fresh(), 1.0), {})
    assert (step.fast((x, value), {}) is not guards.MISS) == same
    assert same == (call == "the recorded one")


@pytest.mark.parametrize("where", ["argument", "config"])
def test_a_zero_of_the_other_sign_records_anew(where):
    """0.0 == -0.0 (and they hash alike), but a step dividing by one gets +inf where the
    other gives -inf: -0.0 passed, or read from a config, after recordings with 0.0 records
    anew, past the fast path too. (It replayed +inf, silently.)"""
    cfg = SimpleNamespace(s=0.0)

    def step(x, s):
        return x / (s if where == "argument" else cfg.s)

    results = []
    for fn in (step, sg.jit(step)):
        outs = []
        for s in [0.0] * 4 + [-0.0] * 2 + [0.0]:
            cfg.s = s
            outs.append(fn(sg.tensor([1.0, -2.0]), s).numpy())
        results.append(outs)
    for e, j in zip(*results):
        np.testing.assert_array_equal(j, e)


@pytest.mark.parametrize("value", [None, False, 0, "None"], ids=["None", "False", "0", "a string"])
def test_the_fast_path_of_a_call_recorded_with_none_takes_only_none(value):
    step, _ = scaled_step(recorded=None)
    assert (step.fast((fresh(), value), {}) is not guards.MISS) == (value is None)


def test_a_step_with_a_plain_argument_before_its_tensor_equals_eager():
    """Plain values first, then a tensor the step makes require grad: the fast path replays
    with the tensor's index among the tensors, so the caller's tensor ends as eagerly."""
    results = {}
    for how in ("eager", "jit"):
        sg.manual_seed(0)
        step = input_gradient_step(nn.Linear(3, 2))
        step = sg.jit(step) if how == "jit" else step
        xs = [fresh(seed=i) for i in range(6)]
        grads = [step(0.5 if i % 3 else 2.0, x).numpy().copy() for i, x in enumerate(xs)]
        results[how] = grads, [x.requires_grad for x in xs]
        if how == "jit":
            assert step.fast is not None
    for eager, replayed in zip(*results.values()):
        np.testing.assert_array_equal(np.asarray(replayed), np.asarray(eager))


def input_gradient_step(model):
    """``step(scale, x)``: the gradient of ``scale`` times the model's outputs' sum with
    respect to ``x``, made to require grad in the step."""

    def step(scale, x):
        x.requires_grad_()
        (model(x) * scale).sum().backward()
        return x.grad

    return step


def recurrent_step():
    """A jitted step taking its state as a tuple (``step(x, (h, c))``, as an LSTM's is
    passed), called until its fast path exists."""
    sg.manual_seed(0)
    cell = nn.LSTMCell(3, 3)
    opt = sg.optim.SGD(cell.parameters(), lr=0.1)

    def step(x, state):
        opt.zero_grad()
        h, c = cell(x, state)
        h.pow(2).mean().backward()
        opt.step()
        return h.detach(), c.detach()

    step = sg.jit(step)
    for _ in range(4):
        step(fresh(), (fresh(seed=1), fresh(seed=2)))
    assert step.fast is not None
    return step


State = namedtuple("State", "h c")

NESTED_CALLS = {
    "the recorded one": lambda: (fresh(), (fresh(seed=1), fresh(seed=2))),
    "a list": lambda: (fresh(), [fresh(seed=1), fresh(seed=2)]),
    "a namedtuple": lambda: (fresh(), State(fresh(seed=1), fresh(seed=2))),
    "three states": lambda: (fresh(), (fresh(seed=1), fresh(seed=2), fresh(seed=3))),
    "one state": lambda: (fresh(), (fresh(seed=1),)),
    "a state of another shape": lambda: (fresh(), (fresh((5, 3)), fresh(seed=2))),
    "a number as a state": lambda: (fresh(), (fresh(seed=1), 1.0)),
    "a state nested deeper": lambda: (fresh(), ((fresh(seed=1),), fresh(seed=2))),
    "flat": lambda: (fresh(), fresh(seed=1), fresh(seed=2)),
    "the same tensor twice": lambda: (lambda h: (fresh(), (h, h)))(fresh(seed=1)),
    "the input as a state": lambda: (lambda x: (x, (x, fresh(seed=2))))(fresh()),
}


@pytest.mark.parametrize("call", NESTED_CALLS)
def test_the_fast_path_of_a_nested_call_replays_only_calls_of_its_key(call):
    """Tensors in tuples and lists (an LSTM's ``(h, c)``) take the fast path too: it checks
    each container's type and length, and each tensor in it as an argument's."""
    step = recurrent_step()
    args = NESTED_CALLS[call]()
    same = slow_key(args, {}) == slow_key(NESTED_CALLS["the recorded one"](), {})
    assert (step.fast(args, {}) is not guards.MISS) == same
    assert same == (call == "the recorded one")


@pytest.mark.parametrize(
    "call",
    [
        (1.0, [None, ("a", 2)]),
        ((), 1.0),
        ([],),
        ((1.0,), [2.0, 3.0]),
    ],
    ids=["numbers and strings in a list", "an empty tuple", "an empty list", "two lists"],
)
def test_the_fast_path_of_nested_plain_values_checks_each_as_the_key_does(call):
    """Plain values inside tuples and lists are checked by type and value; an empty
    container by its type."""
    w = sg.randn(3, requires_grad=True)
    step = sg.jit(lambda x, *rest: (x * w).sum().backward())
    for _ in range(4):
        step(fresh((3,)), *call)
    assert step.fast is not None
    assert step.fast((fresh((3,)), *call), {}) is not guards.MISS
    other = [
        (2.0, [None, ("a", 2)]),
        (1.0, [None, ("b", 2)]),
        (1.0, [None, ["a", 2]]),
        (1.0, [None, ("a", 2.0)]),
        ((0,), 1.0),
        ((),),
        ([], []),
        ((1.0,), (2.0, 3.0)),
    ]
    for args in other:
        if slow_key((fresh((3,)), *args), {}) != slow_key((fresh((3,)), *call), {}):
            assert step.fast((fresh((3,)), *args), {}) is guards.MISS


def pair_step(w):
    def step(x, pair):
        a, b = pair
        (x * a * w + b).pow(2).sum().backward()

    return step


def test_gradients_of_tensors_passed_in_a_tuple_reach_each_calls_tensors():
    """A replay through the fast path sets the ``.grad`` of the tensors inside each call's
    tuple, as eager steps do."""
    results = {}
    for how in ("eager", "jit"):
        sg.manual_seed(0)
        step = pair_step(sg.randn(3))
        step = sg.jit(step) if how == "jit" else step
        grads = []
        for i in range(6):
            pair = (fresh((3,), seed=i).requires_grad_(), fresh((3,), seed=i + 9).requires_grad_())
            step(fresh((3,), seed=20 + i), pair)
            grads += [t.grad.numpy() for t in pair]
        if how == "jit":
            assert step.fast is not None
        results[how] = grads
    for eager, replayed in zip(*results.values()):
        np.testing.assert_array_equal(replayed, eager)


def lstm_trained(how):
    """An LSTM's outputs and parameters after six steps, each with its own ``(h0, c0)``,
    run eagerly or through the compiled module; with whether its fast path was made."""
    sg.manual_seed(0)
    lstm = nn.LSTM(3, 4, batch_first=True)
    net = sg.compile(lstm) if how == "compile" else lstm
    opt = sg.optim.SGD(lstm.parameters(), lr=0.1)
    outputs = []
    for i in range(6):
        state = (fresh((1, 2, 4), seed=i), sg.zeros(1, 2, 4))
        opt.zero_grad()
        out, (h, _) = net(fresh((2, 5, 3), seed=10 + i), state)
        (out.pow(2).mean() + h.sum()).backward()
        opt.step()
        outputs.append(out.detach().numpy())
    fast = how == "compile" and net._compiled.fast is not None
    return [*outputs, *(p.detach().numpy() for p in lstm.parameters())], fast


def test_a_compiled_lstm_called_with_its_state_tuple_takes_the_fast_path_and_equals_eager():
    (eager, _), (compiled, fast) = lstm_trained("eager"), lstm_trained("compile")
    assert fast
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(b, a)


SCALE = sg.tensor([1.0, -2.0, 0.5], requires_grad=True)  # a global a step reads by name


def eager_and_jitted_runs(step, passed):
    """Each call's result, then SCALE's and the passed tensors' .grad, eager and jitted, for
    the calls ``step(x_i, passed[i])``."""
    runs = []
    for fn in (step, sg.jit(step)):
        for t in (SCALE, *passed):
            t.grad = None
        out = [fn(sg.tensor(np.arange(3.0) + i), p).numpy() for i, p in enumerate(passed)]
        runs.append((out, [None if t.grad is None else t.grad.numpy() for t in (SCALE, *passed)]))
    return runs


@pytest.mark.parametrize("order", ["global first", "other first"])
def test_a_tensor_argument_the_step_also_reads_by_name_is_guarded_by_identity(order):
    """A step reading the global SCALE, called with SCALE as its argument: the recording
    reads both through the argument, so a call passing another tensor (of the same shape
    and dtype) must record anew, not replay SCALE's reads from that tensor. (It did: values
    and gradients silently wrong.) Recorded the other way round it is right as it stands."""
    other = sg.tensor([0.3, 0.1, 2.0], requires_grad=True)

    def step(x, p):
        loss = ((x * SCALE).tanh() * p).sum() ** 2
        loss.backward()
        return loss.detach()

    first, second = (SCALE, other) if order == "global first" else (other, SCALE)
    (eager, eager_grads), (jitted_out, jitted_grads) = eager_and_jitted_runs(
        step, [first] * 4 + [second] * 4
    )
    for e, j in zip(eager, jitted_out):
        np.testing.assert_array_equal(j, e)
    for e, j in zip(eager_grads, jitted_grads):
        np.testing.assert_array_equal(j, e)


def test_a_models_parameter_passed_as_the_argument_is_guarded_by_identity():
    """The same through a module: a parameter of the model the step calls, passed as its
    argument, then another tensor."""
    sg.manual_seed(0)
    model = nn.Linear(3, 1)
    other = nn.Parameter(sg.randn(1, 3))  # (a Parameter too: the same guard key)

    def step(x, w):
        out = (model(x) + x @ w.t()).sum()
        out.backward()
        return out.detach()

    results = []
    for fn in (step, sg.jit(step)):
        model.weight.grad = other.grad = None
        calls = [model.weight] * 4 + [other] * 3
        outs = [fn(sg.ones(2, 3) * i, w).numpy() for i, w in enumerate(calls)]
        results.append((outs, model.weight.grad.numpy(), other.grad.numpy()))
    for e, j in zip(*[r[0] for r in results]):
        np.testing.assert_array_equal(j, e)
    np.testing.assert_array_equal(results[1][1], results[0][1])
    np.testing.assert_array_equal(results[1][2], results[0][2])


@pytest.mark.parametrize("alias", [lambda p: p.detach(), lambda p: p.data], ids=["detach", "data"])
def test_an_argument_holding_a_parameters_array_raises(alias):
    """A step given ``model.weight.detach()`` (or ``.data``): another tensor holding the
    weight's array. The recording took that array for the argument, so replays read the
    weight through the argument and added its gradient to a leaf of their own: no
    ``.grad``, no update, silently. Refused once the recording call has run."""
    sg.manual_seed(0)
    model = nn.Linear(3, 3)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    step = sg.jit(step)
    step(alias(model.weight))
    with pytest.raises(sg.JitError, match=r"argument #0 of step\(\) holds the array of"):
        step(alias(model.weight))


class ScaledByGlobal(nn.Module):
    """A module whose forward reads the global SCALE besides its argument."""

    def forward(self, x, p):
        return ((x * SCALE).tanh() * p).sum() ** 2


@pytest.mark.parametrize("order", ["global first", "other first"])
def test_a_compiled_modules_argument_its_forward_also_reads_by_name_is_guarded(order):
    """As for jit: a compiled module called with the global its forward reads, then with
    another tensor, then the global again. (The other tensor's calls replayed SCALE's reads
    from it: values and gradients silently wrong.)"""
    other = sg.tensor([0.3, 0.1, 2.0], requires_grad=True)
    first, second = (SCALE, other) if order == "global first" else (other, SCALE)
    passed = [first] * 4 + [second] * 4 + [first] * 2 + [second] * 2
    runs = []
    for module in (ScaledByGlobal(), sg.compile(ScaledByGlobal())):
        SCALE.grad = other.grad = None
        outs = []
        for i, p in enumerate(passed):
            loss = module(sg.tensor(np.arange(3.0) + i), p)
            loss.backward()
            outs.append(loss.detach().numpy())
        runs.append((outs, SCALE.grad.numpy(), other.grad.numpy()))
    (eager, *eager_grads), (compiled, *compiled_grads) = runs
    for e, c in zip(eager, compiled):
        np.testing.assert_array_equal(c, e)
    for e, c in zip(eager_grads, compiled_grads):
        np.testing.assert_array_equal(c, e)


def test_inference_mode_is_in_the_guard_key():
    """A step enabling grad inside (``with enable_grad():``) records a graph under ``no_grad``
    but none under ``inference_mode``: the two modes need their own programs. (Calls under
    inference mode replayed the no_grad program: outputs requiring grad that eagerly do not.)"""
    w = sg.randn(3, requires_grad=True)

    def step(x):
        with sg.enable_grad():
            return (x * w).sum().requires_grad  # (a Python value each program returns)

    runs = []
    for fn in (step, sg.jit(step)):
        flags = []
        for i in range(8):
            with sg.inference_mode() if i >= 4 else sg.no_grad():
                flags.append(fn(sg.ones(3)))
        runs.append(flags)
    assert runs[0] == [True] * 4 + [False] * 4
    assert runs[1] == runs[0]


class SquareRoot(nn.Module):
    """``sqrt(w * x)``: its gradient is NaN where ``w * x`` is negative."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(sg.ones(3))

    def forward(self, x):
        return (self.w * x).sqrt()


@pytest.mark.parametrize("make", ["jit", "compile"])
def test_anomaly_detection_set_between_calls_runs_the_calls_eagerly(make):
    """Anomaly detection switched on between replays: a replay checks no gradient for NaN,
    so the calls run eagerly and raise naming the operation, as the eager step does (before,
    replays went on with NaN gradients, silently)."""
    module = SquareRoot()
    compiled = sg.compile(module) if make == "compile" else module

    def step(x):
        module.zero_grad()
        compiled(x).sum().backward()
        return module.w.grad

    step = sg.jit(step) if make == "jit" else step
    x = sg.tensor([1.0, -1.0, 4.0])
    for _ in range(4):  # eager, two recordings, a replay
        step(x)
    nan = "Function 'SqrtBackward0' returned nan values"
    with sg.autograd.set_detect_anomaly(True), pytest.raises(RuntimeError, match=nan):
        step(x)
    np.testing.assert_array_equal(step(x).numpy(), [0.5, np.nan, 1.0])


@pytest.mark.parametrize("make", ["jit", "compile"])
def test_an_inference_tensor_argument_raises_as_eagerly(make):
    """A tensor made under ``inference_mode()`` passed where the recordings had normal ones:
    eagerly, saving it for backward (or changing it in place) outside inference mode raises;
    being an inference tensor is part of the guard key (and of the fast path's checks), so
    the call records anew and raises that error (before, replays took it silently)."""
    sg.manual_seed(0)
    model = nn.Linear(3, 2)
    compiled = sg.compile(model) if make == "compile" else model

    def step(x):
        model.zero_grad()
        compiled(x).pow(2).sum().backward()
        return model.weight.grad

    step = sg.jit(step) if make == "jit" else step
    x = sg.randn(4, 3)
    for _ in range(4):  # eager, two recordings, a replay
        expected = step(x).numpy()
    with sg.inference_mode():
        made_there = x.clone()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        step(made_there)
    np.testing.assert_array_equal(step(x).numpy(), expected)


@pytest.mark.parametrize(
    "how", ["jit, a dual argument", "compile, a dual argument", "compile, duals by functional_call"]
)
def test_calls_inside_a_dual_level_run_eagerly_and_give_eagers_tangents(how):
    """Forward-mode AD through a jitted function or a compiled module: a dual passed to it, or
    put into its parameters by ``functional_call`` (tests/programs/forward_gradient_descent.py).
    ``unpack_dual`` finds a tangent by differentiating the call's graph twice, which a replay
    does not make, so calls inside a ``dual_level`` run eagerly, with eager's values and
    tangents bit for bit (before, a jitted function's replays gave the tangent None, silently;
    a compiled module raised that its backward cannot be differentiated again, or that its
    forward reached by name a tensor made outside it). Calls outside a level still replay."""
    fw = sg.autograd.forward_ad
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    if how.startswith("jit"):
        call = sg.jit(lambda x: model(x).sin())
        plain = lambda x: model(x).sin()  # noqa: E731
        recordings = call.recordings
    else:
        call, plain = sg.compile(model), model
        recordings = call._compiled.recordings

    def tangent_of(f, x, t):
        with fw.dual_level():
            if how.endswith("functional_call"):
                named = f.named_parameters()  # (a compiled module's: "_orig_mod." first)
                duals = {name: fw.make_dual(p.detach(), p * t.sum()) for name, p in named}
                out = sg.func.functional_call(f, duals, (x,))
            else:
                out = f(fw.make_dual(x, t))
            value, tangent = fw.unpack_dual(out)
            return value.detach().numpy(), tangent.detach().numpy()

    for i in range(5):
        x, t = fresh((2, 3), np.float64, seed=i), fresh((2, 3), np.float64, seed=10 + i)
        for got, expected in zip(tangent_of(call, x, t), tangent_of(plain, x, t)):
            np.testing.assert_array_equal(got, expected)
    with sg.no_grad():  # outside a level: recorded, then replayed
        for _ in range(4):
            np.testing.assert_array_equal(call(x).numpy(), plain(x).numpy())
    assert any(r.checked for rs in recordings.values() for r in rs)


def test_a_step_entering_its_own_dual_level_replays_eagers_forward_gradients():
    """A jitted step of forward gradient descent (tests/programs/forward_gradient_descent.py
    with the step jitted, not the model compiled): the level is entered inside the step, whose
    ``unpack_dual`` runs two recorded backward passes, so the step records and replays, with
    eager's losses and parameters bit for bit."""
    fw = sg.autograd.forward_ad
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x, y = fresh((8, 3), np.float64, seed=1), fresh((8, 2), np.float64, seed=2)

    def step(params, directions):
        with fw.dual_level():
            duals = {n: fw.make_dual(p, directions[n]) for n, p in params.items()}
            loss = nn.functional.mse_loss(sg.func.functional_call(model, duals, (x,)), y)
            value, slope = fw.unpack_dual(loss)
        return {n: p - 0.02 * slope * directions[n] for n, p in params.items()}, value

    def train(step):
        params = {n: p.detach().clone() for n, p in model.named_parameters()}
        out = []
        for i in range(6):
            directions = {n: fresh(p.shape, np.float64, seed=10 + i) for n, p in params.items()}
            params, value = step(params, directions)
            out.append([value.numpy(), *(p.numpy() for p in params.values())])
        return out

    jitted = sg.jit(step)
    for got, expected in zip(train(jitted), train(step)):
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)
    assert any(r.checked for rs in jitted.recordings.values() for r in rs)


class Tagger(nn.Module):
    """Token and position embeddings, a linear head, masked: ``forward(input_ids,
    attention_mask, positions)``."""

    def __init__(self):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(10, 3), nn.Embedding(5, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, input_ids, attention_mask, positions):
        h = self.tokens(input_ids) + self.positions(positions)
        return self.head(h) * attention_mask.unsqueeze(-1)


def tagger_batch(seed):
    """Token ids, a mask, positions, targets, weights, and a shift of the logits whose
    gradient the step asks for."""
    rng = np.random.default_rng(seed)
    return (
        sg.tensor(rng.integers(0, 10, (2, 5))),
        sg.tensor((rng.random((2, 5)) > 0.3).astype(np.float32)),
        sg.tensor(np.tile(np.arange(5), (2, 1))),
        sg.tensor(rng.integers(0, 2, (2, 5))),
        sg.tensor(rng.random((2, 5)).astype(np.float32)),
        fresh((2, 5, 2), seed=seed).requires_grad_(),
    )


def tagger_trained(how, monkeypatch):
    """A step's losses, the gradients of its shifts and the model's parameters after eight
    batches: eager, jitted (six tensors, two by keyword), or calling the compiled model by
    keyword. From the fifth call on, each must take the fast path."""
    sg.manual_seed(0)
    model = Tagger()
    net = sg.compile(model) if how == "compile" else model
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    def step(ids, mask, positions, targets, weights=None, shift=None):
        opt.zero_grad()
        logits = net(input_ids=ids, attention_mask=mask, positions=positions) + shift
        losses = F.cross_entropy(logits.reshape(-1, 2), targets.reshape(-1), reduction="none")
        loss = (losses * weights.reshape(-1)).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    step = sg.jit(step) if how == "jit" else step
    batches = [tagger_batch(i) for i in range(8)]
    losses = []
    for i, (*by_position, weights, shift) in enumerate(batches):
        if i == 4 and how != "eager":  # eager, two recordings, a replay: the fast path now
            called, slow = (step, jitted) if how == "jit" else (net._compiled, net._compiled)
            assert called.fast is not None
            monkeypatch.setattr(slow, "_signature", slow_path_taken)
        losses.append(step(*by_position, shift=shift, weights=weights))
    monkeypatch.undo()
    return [
        t.detach().numpy() for t in [*losses, *(b[-1].grad for b in batches), *model.parameters()]
    ]


@pytest.mark.parametrize("how", ["jit", "compile"])
def test_calls_by_keyword_of_six_tensors_take_the_fast_path_and_equal_eager(how, monkeypatch):
    """A jitted step of six tensors, two passed by keyword, and a compiled model called by
    keyword (``model(input_ids=..., attention_mask=..., positions=...)``): the fast path is
    made and takes every call after, and the losses, the ``.grad`` of a tensor passed by
    keyword (set through the call's list of tensors) and the parameters end as eagerly."""
    for eager, replayed in zip(
        tagger_trained("eager", monkeypatch), tagger_trained(how, monkeypatch)
    ):
        np.testing.assert_array_equal(replayed, eager)


def slow_path_taken(args, kwargs):
    raise AssertionError("the call took the slow path")


KEYWORD_CALLS = {
    "the recorded one": lambda: ((), {"x": fresh(), "y": fresh(seed=1)}),
    "another order": lambda: ((), {"y": fresh(seed=1), "x": fresh()}),
    "a keyword renamed": lambda: ((), {"x": fresh(), "z": fresh(seed=1)}),
    "a keyword missing": lambda: ((), {"x": fresh()}),
    "a keyword more": lambda: ((), {"x": fresh(), "y": fresh(seed=1), "z": fresh(seed=2)}),
    "by position": lambda: ((fresh(), fresh(seed=1)), {}),
    "the first by position": lambda: ((fresh(),), {"y": fresh(seed=1)}),
    "another shape": lambda: ((), {"x": fresh((5, 3)), "y": fresh((5, 3))}),
    "another dtype": lambda: ((), {"x": fresh(), "y": fresh(dtype=np.float64)}),
    "Fortran order": lambda: ((), {"x": fresh(), "y": sg.tensor(np.asfortranarray(fresh()))}),
    "a strided view": lambda: ((), {"x": fresh(), "y": strided()}),
    "requiring grad": lambda: ((), {"x": fresh(), "y": fresh().requires_grad_()}),
    "with a hook": lambda: ((), {"x": fresh(), "y": hooked(fresh().requires_grad_())}),
    "the same array twice": lambda: (lambda x: ((), {"x": x, "y": sg.Tensor._make(x.array)}))(
        fresh()
    ),
    "a number": lambda: ((), {"x": fresh(), "y": 1.0}),
    "a tuple": lambda: ((), {"x": fresh(), "y": (fresh(),)}),
}


@pytest.mark.parametrize("call", KEYWORD_CALLS)
def test_the_fast_path_of_a_call_by_keyword_replays_only_calls_of_its_key(call):
    """The keywords' names and their order are part of the key (as passed): a call with
    another name, one fewer or more, or another order, misses, and so does each tensor
    passed by keyword that differs as a positional one would."""
    step, *_ = recorded_step(by_keyword=True)
    recorded = slow_key(*KEYWORD_CALLS["the recorded one"]())
    args, kwargs = KEYWORD_CALLS[call]()
    same = slow_key(args, kwargs) == recorded
    assert (step.fast(args, kwargs) is not guards.MISS) == same
    assert same == (call == "the recorded one")


# the tensors of a step taking many (shape, dtype): several of one shape and dtype, whose
# arrays the fast path compares pairwise; in "fourteen", more of one than it compares so
# (``guards._MOST_PAIRWISE``), compared by a set of their ids
MANY = {
    "six": [((4, 3), np.float32)] * 3 + [((2, 3), np.float32), (SHAPE, np.float64), ((3,), None)],
    "fourteen": [(SHAPE, np.float32)] * 13 + [((2, 3), np.float32)],
}


def many_tensors(kind, seed=0):
    return [
        fresh(shape, dtype or np.float32, seed + i) for i, (shape, dtype) in enumerate(MANY[kind])
    ]


@functools.cache
def many_step(kind):
    """A jitted step over ``MANY[kind]``'s tensors, passed by position, called until its
    fast path exists (it only reads them: the cached step serves every example)."""
    assert len(MANY["fourteen"]) - 1 > guards._MOST_PAIRWISE
    w = sg.randn(3, requires_grad=True)

    def step(*tensors):
        loss = sum((t * w).sum() for t in tensors)
        loss.backward()
        return loss.detach()

    step = sg.jit(step)
    for _ in range(4):
        step(*many_tensors(kind))
    assert step.fast is not None
    return step


MANY_CHANGES = {
    "none": lambda tensors, i, j: tensors[i],
    "the array of another": lambda tensors, i, j: sg.Tensor._make(tensors[j].array),
    "another tensor of it": lambda tensors, i, j: tensors[j].detach(),
    "another shape": lambda tensors, i, j: fresh((5, 3)),
    "another dtype": lambda tensors, i, j: (
        tensors[i].double() if tensors[i].dtype == sg.float32 else tensors[i].float()
    ),
    "a strided view": lambda tensors, i, j: sg.tensor(np.repeat(tensors[i].numpy(), 2, axis=0))[
        ::2
    ],
    "requiring grad": lambda tensors, i, j: tensors[i].detach().requires_grad_(),
}


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(list(MANY)), change=st.sampled_from(list(MANY_CHANGES)), data=st.data())
def test_the_fast_path_of_many_tensors_replays_only_calls_of_their_key(kind, change, data):
    """Past four tensors (a GPT step's ids, targets, mask and positions; a packed sequence and
    more), the fast path is made too, and checks each tensor as for two: one tensor changed
    (its array another's, as where one is passed twice, its shape, dtype, layout,
    requires_grad) misses exactly where the slow path's key differs."""
    step = many_step(kind)
    tensors = many_tensors(kind, seed=7)
    i, j = data.draw(st.permutations(range(len(tensors))))[:2]
    tensors[i] = MANY_CHANGES[change](tensors, i, j)
    same = slow_key(tuple(tensors), {}) == slow_key(tuple(many_tensors(kind)), {})
    assert (step.fast(tuple(tensors), {}) is not guards.MISS) == same
    if change == "none":
        assert same


@pytest.mark.parametrize("kind", MANY)
def test_the_fast_path_of_many_tensors_misses_any_array_passed_twice(kind):
    """Each pair of places given one array (its key has the places): the fast path misses,
    whether the two were recorded with one shape and dtype (compared as arrays) or not."""
    step = many_step(kind)
    for i, j in itertools.permutations(range(len(MANY[kind])), 2):
        tensors = many_tensors(kind, seed=7)
        tensors[i] = sg.Tensor._make(tensors[j].array)
        assert slow_key(tuple(tensors), {}) != slow_key(tuple(many_tensors(kind)), {})
        assert step.fast(tuple(tensors), {}) is guards.MISS, (i, j)
