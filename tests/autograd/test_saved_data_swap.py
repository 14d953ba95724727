"""``t.data = other`` between a forward and its backward, against PyTorch: a backward reads
the new memory of an input its op saved itself, and the old memory of one that PyTorch saves
as a view made in forward (addmm's ``w.t()``, a view of an input that is not a matrix)."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

CASES = {
    "linear matrix": ((4, 3), (2, 3), lambda m, x, w: m.nn.functional.linear(x, w)),
    "linear vector": ((3,), (2, 3), lambda m, x, w: m.nn.functional.linear(x, w)),
    "linear batch": ((2, 4, 3), (2, 3), lambda m, x, w: m.nn.functional.linear(x, w)),
    "matmul matrices": ((4, 3), (3, 2), lambda m, x, y: x @ y),
    "bmm": ((2, 4, 3), (2, 3, 2), lambda m, x, y: m.bmm(x, y)),
    "mul": ((3, 2), (3, 2), lambda m, x, y: x * y),
}


def _gradients(lib, shapes, call, swapped, create_graph=False):
    rng = np.random.default_rng(0)
    x, y = (lib.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes)
    out = call(lib, x, y)
    loss = (out * lib.tensor(rng.standard_normal(tuple(out.shape)))).sum()
    target = (x, y)[swapped]
    target.data = lib.tensor(rng.standard_normal(tuple(target.shape)))
    if not create_graph:
        loss.backward()
        return x.grad, y.grad
    (grad_x,) = lib.autograd.grad(loss, x, create_graph=True)
    (grad_x**2).sum().backward()  # reaches y through its saved value
    return (y.grad,)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("swapped", [0, 1])
def test_backward_reads_what_pytorch_saved(case, swapped):
    shapes, call = CASES[case][:2], CASES[case][2]
    for ours, theirs in zip(
        _gradients(sg, shapes, call, swapped), _gradients(torch, shapes, call, swapped)
    ):
        assert_close(ours, theirs)


def test_the_old_weight_stays_in_the_graph():
    shapes, call = CASES["linear matrix"][:2], CASES["linear matrix"][2]
    (ours,) = _gradients(sg, shapes, call, 1, create_graph=True)
    (theirs,) = _gradients(torch, shapes, call, 1, create_graph=True)
    assert_close(ours, theirs)
