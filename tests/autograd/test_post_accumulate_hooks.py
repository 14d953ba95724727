"""Tensor.register_post_accumulate_grad_hook: called once per backward with .grad complete, as
PyTorch's, and as soon as the leaf's last use has run (DistributedDataParallel relies on it)."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


def record_grads(lib, seen):
    """A hook that records a copy of the leaf's .grad at the time it is called."""
    return lambda t: seen.append(np.array(t.grad.tolist()))


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_called_once_per_backward_with_the_accumulated_grad(lib):
    """A leaf used three times (twice by one node) gets one call, after the sum of its uses has
    been added to what .grad held before."""
    w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(record_grads(lib, seen))
    for _ in range(2):
        ((w * w).sum() + (w.exp() * 3).sum()).backward()
    handle.remove()
    (w * 5).sum().backward()
    once = 2 * np.array([1.0, -2.0, 3.0]) + 3 * np.exp([1.0, -2.0, 3.0])
    assert len(seen) == 2
    np.testing.assert_allclose(seen[0], once, rtol=1e-6)
    np.testing.assert_allclose(seen[1], 2 * once, rtol=1e-6)


def test_called_as_soon_as_the_last_use_has_run():
    x = sg.randn(5, 3)
    first = sg.randn(3, 4, requires_grad=True)
    last = sg.randn(4, 2, requires_grad=True)
    events = []
    for name, w in (("first", first), ("last", last)):
        w.register_post_accumulate_grad_hook(lambda t, name=name: events.append(name))
    hidden = (x @ first).relu()
    hidden.register_hook(lambda g: events.append("hidden's gradient"))
    (hidden @ last).sum().backward()
    assert events == ["last", "hidden's gradient", "first"]


def test_not_called_by_autograd_grad_and_not_on_non_leaves():
    w = sg.ones(2, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(calls.append)
    sg.autograd.grad((w * w).sum(), w)
    assert calls == [] and w.grad is None
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(calls.append)
    with pytest.raises(RuntimeError, match="does not require grad"):
        sg.ones(2).register_post_accumulate_grad_hook(calls.append)


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_handle_removes_the_hook_at_the_end_of_a_with_block(lib):
    """As PyTorch's handle: ``with`` gives the handle itself and takes the hook off on leaving,
    also when the block raises."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    with w.register_post_accumulate_grad_hook(record_grads(lib, seen)) as handle:
        (w * 3).sum().backward()
    assert hasattr(handle, "remove")
    with pytest.raises(ValueError), w.register_post_accumulate_grad_hook(seen.append):
        raise ValueError
    (w * 3).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [3.0, 3.0])


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_hook_returning_a_value_raises(lib):
    """.grad is already set when the hook runs: a returned tensor cannot replace anything."""
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda t: t.grad * 0)
    with pytest.raises(RuntimeError, match="should return None"):
        (w * w).sum().backward()
