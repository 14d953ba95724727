"""``autograd.Variable``, the pre-0.4 wrapper old code still calls, against PyTorch's: the same
data cut from the graph, ``requires_grad`` as asked, every tensor an instance, the errors and
the warning for ``volatile``."""

import warnings

import pytest
import torch
from oracle import assert_raises_as_torch
from torch.autograd import Variable as TorchVariable

import scratchgrad as sg
from scratchgrad.autograd import Variable


@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_variable_is_the_data_detached_with_requires_grad_as_asked(requires_grad):
    for lib, var in ((sg, Variable), (torch, TorchVariable)):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        v = var(y, requires_grad=requires_grad)
        assert type(v) is lib.Tensor and v.is_leaf and v.grad_fn is None
        assert v.requires_grad is requires_grad and y.requires_grad
        v.data.add_(1)  # shares the memory of its data
        assert y.tolist() == [3.0, 3.0, 3.0]


def test_a_variable_trains_as_its_data_would():
    losses = []
    for lib, var in ((sg, Variable), (torch, TorchVariable)):
        w = var(lib.tensor([0.5, -1.0]), requires_grad=True)
        x = var(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        loss = ((x @ w) ** 2).sum()
        loss.backward()
        losses.append((loss.item(), w.grad.tolist(), x.requires_grad))
    assert losses[0] == losses[1]


def test_every_tensor_is_a_variable_and_nothing_else_is():
    assert isinstance(sg.ones(1), Variable) and isinstance(sg.nn.Parameter(sg.ones(1)), Variable)
    assert not isinstance([1.0], Variable) and not isinstance(1.0, Variable)
    assert isinstance(torch.ones(1), TorchVariable) and not isinstance([1.0], TorchVariable)


def test_variable_refuses_what_pytorch_refuses():
    def variable(lib, *args, **kwargs):
        return (Variable if lib is sg else TorchVariable)(*args, **kwargs)

    assert_raises_as_torch(lambda lib: variable(lib, [1.0, 2.0]), TypeError, "has to be a tensor")
    assert_raises_as_torch(
        lambda lib: variable(lib, lib.tensor([1, 2]), requires_grad=True),
        RuntimeError,
        "floating point",
    )


def test_volatile_warns_as_in_pytorch_and_changes_nothing():
    messages = []
    for lib, var in ((sg, Variable), (torch, TorchVariable)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            v = var(lib.ones(2), volatile=True)
        assert not v.requires_grad and w[0].category is UserWarning
        messages.append(str(w[0].message))
    assert messages[0] == messages[1]
