"""Tensor.unfold (sliding windows as a new last dim) against torch: values, the view it is,
0-d tensors, and PyTorch's errors. Gradients, vmap and jit come from the op table's rows."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


@pytest.mark.parametrize(
    "shape, args",
    [((10,), (0, 3, 2)), ((10,), (0, 0, 1)), ((10,), (-1, 10, 3)), ((4, 6, 5), (1, 4, 1))],
)
def test_windows_are_torchs(shape, args):
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    ours, theirs = sg.tensor(a).unfold(*args), torch.tensor(a).unfold(*args)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_a_transposed_input_and_a_0_d_one():
    a = np.arange(12.0).reshape(3, 4)
    ours, theirs = sg.tensor(a).T.unfold(0, 2, 1), torch.tensor(a).T.unfold(0, 2, 1)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for size in (0, 1):
        ours, theirs = sg.tensor(5.0).unfold(0, size, 1), torch.tensor(5.0).unfold(0, size, 1)
        assert ours.shape == tuple(theirs.shape) and ours.tolist() == theirs.tolist()


def test_it_is_a_view_writes_go_through():
    ours, theirs = sg.zeros(7), torch.zeros(7)
    ours.unfold(0, 2, 3).fill_(1.0)
    theirs.unfold(0, 2, 3).fill_(1.0)
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("write", ["add_", "fill_", "setitem"])
def test_overlapping_windows_refuse_writes(write):
    """PyTorch writes an entry that two windows hold twice (``add_`` adds 2), NumPy once: rather
    than differ silently, overlapping windows are read-only, with PyTorch's error for writes
    into shared memory. Their values and gradient are unaffected."""
    x = sg.arange(5.0, requires_grad=True)
    windows = x.detach().unfold(0, 2, 1)
    do = {"add_": lambda: windows.add_(1), "fill_": lambda: windows.fill_(7),
          "setitem": lambda: windows.__setitem__((0, 0), 9)}[write]  # fmt: skip
    with pytest.raises(RuntimeError, match="refers to a single memory location"):
        do()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    (x.unfold(0, 2, 1) ** 2).sum().backward()
    reference = torch.arange(5.0, requires_grad=True)
    (reference.unfold(0, 2, 1) ** 2).sum().backward()
    assert x.grad.tolist() == reference.grad.tolist()


@pytest.mark.parametrize("args", [(0, 11, 1), (0, 3, 0), (0, 3, -1), (1, 2, 1)])
def test_errors_are_torchs(args):
    with pytest.raises((RuntimeError, IndexError)) as theirs:
        torch.arange(10.0).unfold(*args)
    with pytest.raises(type(theirs.value)) as ours:
        sg.arange(10.0).unfold(*args)
    assert str(ours.value) == str(theirs.value)
