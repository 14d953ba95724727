"""A tensor changed in place (under no_grad) between a forward and its backward, against
PyTorch: the backward raises where PyTorch's saved it, and gives PyTorch's gradients where
PyTorch did not save it (its backward never reads it)."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

TARGETS = np.array([0, 3, 1, 4])

# name -> (the inputs, as (array, requires grad), the call, which input changes)
CASES = {
    "cross_entropy logits": (
        [(np.linspace(-1, 1, 20).reshape(4, 5), True), (TARGETS, False)],
        lambda m, x, t: m.nn.functional.cross_entropy(x, t),
        0,
    ),
    "cross_entropy target": (
        [(np.linspace(-1, 1, 20).reshape(4, 5), True), (TARGETS, False)],
        lambda m, x, t: m.nn.functional.cross_entropy(x, t, reduction="sum"),
        1,
    ),
    "mul": (
        [(np.linspace(-1, 1, 6), True), (np.linspace(1, 2, 6), True)],
        lambda m, x, y: x * y,
        1,
    ),
}


def _run(lib, case):
    inputs, call, changed = CASES[case]
    tensors = [lib.tensor(a, requires_grad=grad) for a, grad in inputs]
    loss = call(lib, *tensors).sum()
    with lib.no_grad():
        tensors[changed].copy_(lib.tensor(np.roll(inputs[changed][0], 1)))
    try:
        loss.backward()
    except RuntimeError:
        return None
    return [t.grad for t in tensors if t.requires_grad]


@pytest.mark.parametrize("case", CASES)
def test_raises_where_pytorch_raises(case):
    ours, theirs = _run(sg, case), _run(torch, case)
    assert (ours is None) == (theirs is None)
    for mine, its in zip(ours or (), theirs or ()):
        assert_close(mine, its)


@pytest.mark.parametrize("call", [lambda x: x.reciprocal(), lambda x: 2.0 / x])
def test_a_reciprocal_saves_its_result(call):
    """PyTorch's reciprocal (and a number over a tensor, the reciprocal times the number)
    saves its result, so its input may change in place before backward."""
    grads = []
    for lib in (sg, torch):
        x = lib.tensor([0.5, 2.0, -4.0], requires_grad=True)
        loss = (call(x) * lib.tensor([1.0, 2.0, 3.0])).sum()
        with lib.no_grad():
            x.mul_(3)
        loss.backward()
        grads.append(x.grad)
    assert_close(*grads)
    assert (2.0 / sg.ones(1, requires_grad=True)).grad_fn.name() == "MulBackward0"
