"""Threads and the recording: one step records at a time in a process, and a call that would
record while another thread records runs eagerly instead of waiting (that step may be waiting
for it: a deadlock), then records on a later call.

The oracle: the same functions and modules called eagerly (bit for bit). A thread that would
wait makes the recording step's own wait time out, so a regression fails instead of hanging.
"""

import copy
import threading

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn

TIMEOUT = 10.0  # seconds; only a failing test waits this long


def while_a_step_records(works, inside_a_function=False):
    """Run each of ``works`` in another thread while a jitted step records in this one and
    waits for it, as a training step waits for a data loader's worker: each a new step, whose
    first call runs eagerly and whose second records and hands the work over. The works'
    results. ``inside_a_function``: the step waits inside a custom Function's forward, where
    the recorder's hooks are off."""
    handed, done = threading.Event(), threading.Event()
    results, errors = [], []

    def worker():
        for work in works:
            if not handed.wait(TIMEOUT):
                return
            handed.clear()
            try:
                results.append(work())
            except Exception as error:  # (raised again below, in the test's thread)
                errors.append(error)
            done.set()

    def hand_over():
        handed.set()
        if not done.wait(TIMEOUT):
            raise TimeoutError("the other thread's work did not end while the step recorded")
        done.clear()

    class HandOver(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            hand_over()
            return x + 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    def step(x, hand):
        if not hand:  # the eager first call
            return x + 1
        if inside_a_function:
            return HandOver.apply(x)
        hand_over()
        return x + 1

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    for _ in works:
        jitted = sg.jit(step)
        jitted(sg.ones(2), False)
        np.testing.assert_array_equal(jitted(sg.ones(2), True).numpy(), [2.0, 2.0])
        assert len(jitted.recordings) == 1  # (the call recorded)
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    if errors:
        raise errors[0]
    return results


def function_and_inputs(seed=0):
    rng = np.random.default_rng(seed)
    w = sg.tensor(rng.standard_normal(5))

    def f(x):
        return (x * w).tanh().sum(0) + w

    return f, [sg.tensor(rng.standard_normal((3, 5))) for _ in range(6)]


def checked(recordings):
    return [r.checked for rs in recordings.values() for r in rs]


@pytest.mark.parametrize("inside_a_function", [False, True])
def test_a_jitted_call_while_another_thread_records_runs_eagerly_then_records(inside_a_function):
    """The jitted function's second and third calls would record while the step records:
    they run eagerly (no recording), and the next two record, then it replays."""
    f, xs = function_and_inputs()
    jitted = sg.jit(f)
    got = [jitted(xs[0])]  # eager, as every first call
    got += while_a_step_records([lambda: jitted(xs[1]), lambda: jitted(xs[2])], inside_a_function)
    assert jitted.recordings == {}
    got += [jitted(x) for x in xs[3:]]  # records, records again, replays
    assert checked(jitted.recordings) == [True]
    assert jitted.fast is not None  # (set by a replay)
    for call, (x, out) in enumerate(zip(xs, got, strict=True)):
        np.testing.assert_array_equal(out.numpy(), f(x).numpy(), err_msg=str(call))


def test_a_jitted_functions_replays_while_another_thread_records_are_those_of_its_recording():
    """Replays take no lock: a jitted function recorded before replays its program while
    another thread records, with eager's results, and records nothing more."""
    f, xs = function_and_inputs(1)
    jitted = sg.jit(f)
    for x in xs[:3]:  # eager, record, record again
        jitted(x)
    recordings = {key: list(rs) for key, rs in jitted.recordings.items()}
    got = while_a_step_records([lambda: jitted(xs[3]), lambda: jitted(xs[4])])
    assert jitted.recordings == recordings and checked(recordings) == [True]
    assert jitted.fast is not None
    for x, out in zip(xs[3:5], got, strict=True):
        np.testing.assert_array_equal(out.numpy(), f(x).numpy())


def compiled_and_eager(seed):
    sg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2))
    return sg.compile(copy.deepcopy(model)), model


def backward(model, x):
    """``model(x)`` and the gradients of a loss of it, from zero."""
    model.zero_grad()
    out = model(x)
    (out**2).sum().backward()
    return [out.detach().numpy(), *(p.grad.numpy().copy() for p in model.parameters())]


def assert_same(got, expected):
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)


def recorded_and_replayed(compiled, model, xs):
    """Train both on ``xs`` (record, record again, replay), checking each call's gradients;
    that the compiled module's recording is checked and its last call a replay."""
    for x in xs:
        assert_same(backward(compiled, x), backward(model, x))
    assert checked(compiled._compiled.recordings) == [True]
    assert compiled(xs[-1]).grad_fn.name() == "CompiledFunctionBackward"


@pytest.mark.parametrize("inside_a_function", [False, True])
def test_a_compiled_modules_call_while_another_thread_records_runs_eagerly_then_records(
    inside_a_function,
):
    """A compiled module's second call, forward and backward, while another thread records:
    eager's forward and gradients, no recording; the next calls record and replay."""
    compiled, model = compiled_and_eager(0)
    xs = [sg.randn(3, 5) for _ in range(5)]
    assert_same(backward(compiled, xs[0]), backward(model, xs[0]))  # eager, as every first call
    [got] = while_a_step_records([lambda: backward(compiled, xs[1])], inside_a_function)
    assert_same(got, backward(model, xs[1]))
    assert compiled._compiled.recordings == {}
    recorded_and_replayed(compiled, model, xs[2:])


def test_a_compiled_modules_recorded_forward_gets_an_eager_backward_while_another_thread_records():
    """A forward recorded before another thread began recording: its backward, run while
    that thread records, does not wait to be recorded; it runs eagerly through the graph the
    forward made (eager's gradients), the recording is dropped, and later calls record."""
    compiled, model = compiled_and_eager(1)
    xs = [sg.randn(3, 5) for _ in range(5)]
    assert_same(backward(compiled, xs[0]), backward(model, xs[0]))  # eager
    compiled.zero_grad()
    out = compiled(xs[1])  # records its forward; the backward records when it runs

    def run_backward():
        (out**2).sum().backward()
        return [out.detach().numpy(), *(p.grad.numpy().copy() for p in compiled.parameters())]

    [grads] = while_a_step_records([run_backward])
    assert_same(grads, backward(model, xs[1]))
    assert compiled._compiled.recordings == {}
    recorded_and_replayed(compiled, model, xs[2:])


@pytest.mark.parametrize("inner", ["jitted", "compiled"])
def test_a_recording_begun_by_the_recording_thread_itself_raises_nested_jit(inner):
    """Inside a custom Function's forward the recorder's hooks are off, so a jitted function
    or compiled module called there finds no recorder, and would record: the thread already
    records, so it raises the nested jit ``JitError`` (it would wait for itself for good)."""
    callee = sg.jit(lambda x: x * 2) if inner == "jitted" else sg.compile(nn.Linear(2, 2))
    callee(sg.ones(2))  # its eager call

    class Calls(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return callee(x)

        @staticmethod
        def backward(ctx, grad):
            return grad

    step = sg.jit(Calls.apply)
    errors = []

    def record():
        try:
            step(sg.ones(2))  # eager (the callee records)
            step(sg.ones(2))  # records (the callee would record again, inside it)
        except sg.JitError as error:
            errors.append(error)

    thread = threading.Thread(target=record, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive()
    assert len(errors) == 1
    assert "() too (nested jit) at " in str(errors[0]), errors[0]
    assert "while recording apply()" in str(errors[0]), errors[0]
    f, xs = function_and_inputs(2)  # the lock was let go: another function records
    jitted = sg.jit(f)
    for x in xs[:4]:
        np.testing.assert_array_equal(jitted(x).numpy(), f(x).numpy())
    assert checked(jitted.recordings) == [True]
