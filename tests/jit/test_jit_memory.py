"""What recording and replaying a step holds in memory beyond the eager step's.

The oracles: the cycle collector (``gc.collect()`` says how many unreachable objects it
found: a recording dropped by reference counting leaves it none) and eager calls.
"""

import gc

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad import nn


@pytest.fixture
def without_cycle_collector():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def _model_and_optimizer():
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _jitted_step():
    model, opt = _model_and_optimizer()

    @sg.jit
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return {"loss": [loss]}  # a structure: rebuilt from the program's outputs

    return step


def _compiled_step():
    model, opt = _model_and_optimizer()
    compiled = sg.compile(model)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


@pytest.mark.parametrize("make_step", [_jitted_step, _compiled_step])
def test_recordings_leave_nothing_to_the_cycle_collector(make_step, without_cycle_collector):
    """The first recording (dropped when the second agrees with it), each recorder and the
    generated optimizer updates are freed as soon as they are dropped: no reference cycle
    (weak references' callbacks holding their recorder, a closure calling itself, a
    generated function in its own globals) keeps them until the cycle collector runs,
    which a replay loop allocating almost nothing may not start for a long time."""
    step = make_step()
    x, y = sg.randn(5, 6), sg.randint(0, 3, (5,))
    for _ in range(5):  # eager, record, record again and compare, replay twice
        step(x, y)
    assert gc.collect() == 0


def test_constants_of_two_recordings_are_compared_bit_for_bit():
    """A constant computed outside scratchgrad's ops from tensor data is 0.0 on one
    recording and -0.0 on the other: equal numbers, but a replay freezing either would not
    give eager's bits (here the sign of the product), so the third call raises."""

    @sg.jit
    def scaled(x):
        zero = sg.from_numpy(np.asarray(x.detach()) * 0.0)  # NumPy: a constant to the recorder
        return x * zero

    scaled(sg.tensor([1.0]))
    scaled(sg.tensor([1.0]))
    with pytest.raises(sg.JitError, match="different constant"):
        scaled(sg.tensor([-1.0]))
