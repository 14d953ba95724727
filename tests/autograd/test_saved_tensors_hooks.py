"""``autograd.graph.saved_tensors_hooks`` and ``save_on_cpu`` against PyTorch's: the pack hook
sees each saved tensor (grad mode off), backward reads what the unpack hook returns (a hook
that changes the saved values changes the gradient as PyTorch's), blocks nest."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_doc_examples_run

import scratchgrad as sg

EXPRESSIONS = {
    "mul": lambda x, w: (x * w).sum(),
    "square": lambda x, w: (x * x).sum(),
    "exp": lambda x, w: x.exp().sum(),
    "sin": lambda x, w: x.sin().sum(),
    "tanh": lambda x, w: (x.tanh() * w).sum(),
}


def _run(lib, expression, pack, unpack):
    x = lib.tensor([1.0, 2.0, -0.5], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.5, -1.0, 3.0], dtype=lib.float64, requires_grad=True)
    calls = []

    def packing(t):
        calls.append(("pack", t.requires_grad, lib.is_grad_enabled()))
        return pack(t)

    def unpacking(p):
        calls.append(("unpack",))
        return unpack(p)

    with lib.autograd.graph.saved_tensors_hooks(packing, unpacking):
        y = EXPRESSIONS[expression](x, w)
    y.backward()
    return calls, x.grad, w.grad


@pytest.mark.parametrize("expression", EXPRESSIONS)
@pytest.mark.parametrize("kind", ["identity", "doubling", "as arrays"])
def test_hooks_as_torchs(expression, kind):
    def hooks(lib):
        if kind == "identity":
            return (lambda t: t), (lambda t: t)
        if kind == "doubling":  # kept doubled: the gradients see twice the saved values
            return (lambda t: t * 2), (lambda t: t)
        return (lambda t: t.detach().numpy().copy()), (lambda a: lib.tensor(a))

    calls, x_grad, w_grad = _run(sg, expression, *hooks(sg))
    expected_calls, expected_x_grad, expected_w_grad = _run(torch, expression, *hooks(torch))
    assert calls == expected_calls
    assert_close(x_grad, expected_x_grad)
    if expected_w_grad is not None:
        assert_close(w_grad, expected_w_grad)


def test_save_on_cpu_and_nested_blocks():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    grads = []
    for lib in (sg, torch):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        outer = lib.autograd.graph.saved_tensors_hooks(lambda t: t * 0, lambda t: t)
        with outer, lib.autograd.graph.save_on_cpu(pin_memory=True):  # the inner one applies
            loss = (a @ b).tanh().sum()
        loss.backward()
        grads.append((a.grad, b.grad))
    for ours, theirs in zip(*grads):
        assert_close(ours, theirs)
    assert not sg.autograd.graph.SAVED_TENSORS_HOOKS
    assert_doc_examples_run(sg.autograd.graph.saved_tensors_hooks)
