"""Memory formats: accepted and checked as PyTorch checks them, the values kept; questions about
a channels-last layout, which scratchgrad does not track, raise instead of answering wrongly."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


def test_channels_last_keeps_the_values_and_copies_as_torch():
    a = np.arange(24.0).reshape(1, 2, 3, 4)
    x = sg.tensor(a, requires_grad=True)
    y = x.to(memory_format=sg.channels_last)
    assert y is not x and y.array is not x.array  # a new layout in PyTorch: a new tensor
    np.testing.assert_array_equal(y.detach().numpy(), a)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones_like(a))
    np.testing.assert_array_equal(x.contiguous(memory_format=sg.channels_last).detach(), a)
    assert x.to(memory_format=sg.contiguous_format) is x
    assert x.contiguous(memory_format=sg.contiguous_format) is x
    z = sg.zeros(1, 2, 3, 4, 5).to(sg.float64, memory_format=sg.channels_last_3d)
    assert z.dtype == sg.float64


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.to(memory_format=m.channels_last),
        lambda m, x: x.contiguous(memory_format=m.channels_last),
        lambda m, x: x.unsqueeze(0).to(memory_format=m.channels_last_3d),
    ],
)
def test_the_wrong_rank_raises_torchs_error(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch, torch.zeros(2, 3))
    with pytest.raises(RuntimeError) as ours:
        call(sg, sg.zeros(2, 3))
    assert str(ours.value) == str(theirs.value)


def test_a_module_to_a_memory_format_keeps_its_parameters():
    model = sg.nn.Sequential(sg.nn.Conv2d(1, 2, 3), sg.nn.Flatten(), sg.nn.Linear(2, 1))
    before = [(p, p.detach().numpy().copy()) for p in model.parameters()]
    assert model.to(memory_format=sg.channels_last) is model
    for p, values in before:
        np.testing.assert_array_equal(p.detach().numpy(), values)
    with pytest.raises(TypeError, match="memory_format"):
        model.to(memory_format="channels_last")


def test_asking_about_a_channels_last_layout_raises():
    x = sg.zeros(1, 2, 3, 4).to(memory_format=sg.channels_last)
    with pytest.raises(NotImplementedError, match="does not track channels-last"):
        x.is_contiguous(memory_format=sg.channels_last)
    assert repr(sg.channels_last) == "scratchgrad.channels_last"


def test_a_channels_last_clone_under_vmap_keeps_the_values():
    # (a batched tensor has no strides of its own to lay out: clone keeps the values)
    x = sg.arange(120.0).reshape(2, 1, 3, 4, 5)
    y = sg.func.vmap(lambda t: t.clone(memory_format=sg.channels_last))(x)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
