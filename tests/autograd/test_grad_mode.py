"""Grad mode: no_grad, enable_grad and set_grad_enabled as context managers, calls and
decorators, their nesting, restoring on errors, and thread-locality, as in PyTorch.
"""

import threading

import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")


def records(x):
    """Whether an op on ``x`` (which requires grad) records a graph right now."""
    return (x * 2).requires_grad


@pytest.fixture
def x():
    return sg.ones(2, requires_grad=True)


def test_grad_is_enabled_by_default(x):
    assert sg.is_grad_enabled() and torch.is_grad_enabled()
    assert records(x)


def test_no_grad_context(x):
    with sg.no_grad():
        assert not sg.is_grad_enabled()
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert sg.is_grad_enabled()


def test_enable_grad_inside_no_grad(x):
    with sg.no_grad():
        with sg.enable_grad():
            assert records(x)
        assert not records(x)


def test_set_grad_enabled_as_context_manager(x):
    with sg.set_grad_enabled(False):
        assert not records(x)
        with sg.set_grad_enabled(True):
            assert records(x)
        assert not records(x)
    assert records(x)


def test_set_grad_enabled_as_a_plain_call(x):
    try:
        sg.set_grad_enabled(False)
        assert not sg.is_grad_enabled() and not records(x)
        sg.set_grad_enabled(True)
        assert records(x)
    finally:
        sg.set_grad_enabled(True)


def test_decorators(x):
    @sg.no_grad()
    def without(t):
        return records(t)

    @sg.enable_grad()
    def with_(t):
        return records(t)

    @sg.set_grad_enabled(False)
    def off(t):
        return records(t)

    assert sg.is_grad_enabled()  # making the set_grad_enabled decorator did not switch it off
    assert not without(x) and not off(x)
    with sg.no_grad():
        assert with_(x)
    assert sg.is_grad_enabled()


def test_decorators_keep_the_function_name_and_doc():
    @sg.no_grad()
    def evaluate():
        """Run the model."""

    assert evaluate.__name__ == "evaluate" and evaluate.__doc__ == "Run the model."


def test_bare_decorators_without_parentheses(x):
    @torch.no_grad
    def without_t(t):
        return (t * 2).requires_grad

    assert not without_t(torch.ones(1, requires_grad=True))

    @sg.no_grad
    def without(t):
        return records(t)

    assert not without(x)


def test_modes_are_restored_after_an_exception(x):
    with pytest.raises(ValueError), sg.no_grad():
        raise ValueError
    assert sg.is_grad_enabled()
    with sg.no_grad():
        with pytest.raises(ValueError), sg.enable_grad():
            raise ValueError
        assert not sg.is_grad_enabled()
    assert records(x)


def test_a_decorated_function_restores_the_mode_after_raising():
    @sg.no_grad()
    def fails():
        raise KeyError

    with pytest.raises(KeyError):
        fails()
    assert sg.is_grad_enabled()


def test_no_grad_does_not_stop_backward_of_a_graph_built_before(x):
    y = (x * 3).sum()
    with sg.no_grad():
        y.backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_grad_mode_is_thread_local(x):
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with sg.no_grad():
            seen["worker"] = sg.is_grad_enabled()
            inside.set()
            release.wait(timeout=10)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert inside.wait(timeout=10)
        # The worker is inside no_grad right now; the main thread still records.
        assert sg.is_grad_enabled() and records(x)
    finally:
        release.set()
        thread.join()
    assert seen["worker"] is False


def test_a_new_thread_starts_with_grad_enabled_even_under_no_grad():
    seen = {}

    def worker():
        seen["enabled"] = sg.is_grad_enabled()

    with sg.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert seen["enabled"] is True  # as torch: grad mode is per thread, default on


@pytest.mark.parametrize(
    "mode",
    [
        lambda m: m.no_grad(),
        lambda m: m.no_grad,
        lambda m: m.set_grad_enabled(False),
        lambda m: m.inference_mode(),
    ],
)
def test_a_decorated_generator_runs_its_body_in_the_mode_and_yields_in_the_callers(mode):
    def steps(m):
        @mode(m)
        def generate(t):
            for i in range(2):
                received = yield (t * i).requires_grad, m.is_grad_enabled()
                yield received
            return "done"

        t = m.ones(2, requires_grad=True)
        gen = generate(t)
        seen = [next(gen), m.is_grad_enabled(), gen.send("sent"), next(gen), next(gen)]
        with pytest.raises(StopIteration) as stop:
            next(gen)
        return seen, stop.value.value

    assert steps(sg) == steps(torch)
    assert steps(sg) == ([(False, False), True, "sent", (False, False), None], "done")


def test_set_grad_enabled_takes_only_a_bool():
    for m in (torch, sg):
        with pytest.raises(TypeError, match="must be bool, not int"):
            m.set_grad_enabled(1)
        assert m.is_grad_enabled()
