"""repeat_interleave and diag against PyTorch: values and gradients for each form, the errors,
and under ``scratchgrad.jit`` (a count replays; a tensor of counts is refused)."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4))


def values_and_gradient(lib, array, call):
    """``call(x)`` on ``array`` made by ``lib``, and the gradient of a weighted sum of it."""
    x = lib.tensor(array, requires_grad=True)
    out = call(lib, x)
    weights = lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape))
    (out * weights).sum().backward()
    return out.detach().numpy(), x.grad.numpy()


CASES = {
    "repeat_interleave flat": (X, lambda lib, x: x.repeat_interleave(2)),
    "repeat_interleave dim 1": (X, lambda lib, x: x.repeat_interleave(3, dim=1)),
    "repeat_interleave dim -1": (X, lambda lib, x: x.repeat_interleave(2, dim=-1)),
    "repeat_interleave counts": (
        X,
        lambda lib, x: x.repeat_interleave(lib.tensor([2, 0, 1]), dim=1),
    ),
    "repeat_interleave zero": (X, lambda lib, x: x.repeat_interleave(0, dim=0)),
    "diag of a vector": (X[0, 0], lambda lib, x: lib.diag(x)),
    "diag above": (X[0, 0], lambda lib, x: lib.diag(x, 2)),
    "diag below": (X[0, 0], lambda lib, x: lib.diag(x, -1)),
    "diag of a matrix": (X[0], lambda lib, x: x.diag()),
    "diag of a matrix above": (X[0], lambda lib, x: x.diag(1)),
    "diag of a matrix below": (X[0], lambda lib, x: x.diag(-2)),
}


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_are_pytorchs(case):
    array, call = CASES[case]
    ours, theirs = values_and_gradient(sg, array, call), values_and_gradient(torch, array, call)
    for found, expected in zip(ours, theirs):
        assert found.shape == expected.shape
        np.testing.assert_array_equal(found, expected)


def test_the_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        sg.ones(2).repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input"):
        sg.ones(3).repeat_interleave(sg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        sg.ones(2, 2, 2).diag()


def test_a_jitted_repeat_by_a_count_replays_and_by_a_tensor_of_counts_raises():
    def grouped(k):  # grouped-query attention's keys: each head used by two queries
        return k.repeat_interleave(2, dim=1) * 1

    jitted = sg.jit(grouped)
    for _ in range(5):
        k = sg.tensor(RNG.standard_normal((1, 2, 3)))
        assert jitted(k).tolist() == grouped(k).tolist()
    assert sum(map(len, jitted.recordings.values())) == 1

    counted = sg.jit(lambda x, counts: x.repeat_interleave(counts))
    counted(sg.ones(2), sg.tensor([1, 2]))
    with pytest.raises(sg.JitError, match="repeat_interleave\\(\\) by a tensor of counts"):
        counted(sg.ones(2), sg.tensor([1, 2]))
