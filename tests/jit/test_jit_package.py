"""scratchgrad.jit is both the package and the function: its submodules import, and calling
it jits as before."""

import importlib
import inspect

import pytest

import scratchgrad as sg

# A step that counts its calls in a list changes Python state, which the jit warns a replay
# will not change again (the warning's own tests: tests/jit/test_jit_pitfalls.py).
COUNTING = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")


def test_submodules_import_in_every_form():
    import scratchgrad.jit.program
    import scratchgrad.jit.recorder as recorder_as
    from scratchgrad.jit import recorder

    assert recorder is recorder_as is scratchgrad.jit.recorder
    assert scratchgrad.jit.program.__name__ == "scratchgrad.jit.program"
    assert scratchgrad.JitError is recorder.JitError


def test_package_is_what_sg_jit_names():
    assert sg.jit is importlib.import_module("scratchgrad.jit")
    assert sg.jit.recorder is importlib.import_module("scratchgrad.jit.recorder")
    assert list(inspect.signature(sg.jit).parameters) == ["fn", "cache_size"]


@COUNTING
def test_calling_the_package_jits():
    calls = []

    def double(x):
        calls.append(1)
        return x * 2

    for jitted in (sg.jit(double), sg.jit(cache_size=3)(double)):
        calls.clear()
        x = sg.tensor([1.0, 2.0])
        outs = [jitted(x).tolist() for _ in range(4)]  # eager, two recordings, a replay
        assert outs == [[2.0, 4.0]] * 4
        assert len(calls) == 3  # the replay ran no Python
    assert sg.jit(cache_size=3)(double).cache_size == 3

    @sg.jit
    def add_one(x):
        return x + 1

    assert add_one(sg.tensor([1.0])).tolist() == [2.0]
