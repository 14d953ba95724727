"""PyTorch's implementation switches (foreach, fused, capturable, differentiable): accepted by the
optimizers that take them in PyTorch, without effect on the result, and refused as PyTorch refuses
them elsewhere. ``capturable=True`` and ``differentiable=True`` are refused
(``test_optim_group_keys.py``)."""

import inspect

import numpy as np
import pytest
import torch

import scratchgrad as sg

NAMES = ["SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "RMSprop"]
NAMES += ["Rprop", "ASGD"]
SWITCHES = ("foreach", "fused", "capturable", "differentiable")


def _torch_switches(name):
    return [s for s in SWITCHES if s in inspect.signature(getattr(torch.optim, name)).parameters]


def _steps(name, **switches):
    w = sg.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    opt = getattr(sg.optim, name)([w], lr=0.1, **switches)
    for _ in range(3):
        opt.zero_grad()
        (w**4).sum().backward()
        opt.step()
    return w.detach().numpy()


@pytest.mark.parametrize("name", NAMES)
def test_the_switches_pytorch_takes_are_accepted_and_change_nothing(name):
    switches = _torch_switches(name)
    assert {"foreach", "differentiable"} <= set(switches)
    plain = _steps(name)
    for switch in switches:
        if switch in ("foreach", "fused"):  # (how PyTorch computes the update, not what)
            np.testing.assert_array_equal(_steps(name, **{switch: True}), plain)
        np.testing.assert_array_equal(_steps(name, **{switch: False}), plain)


@pytest.mark.parametrize("name", NAMES)
def test_the_switches_are_in_the_signature_as_in_pytorchs(name):
    # nanoGPT passes fused=True only if "fused" in inspect.signature(torch.optim.AdamW).parameters
    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    ours = inspect.signature(getattr(sg.optim, name)).parameters
    defaults = {s: ours[s].default for s in SWITCHES if s in ours}
    assert defaults == {s: theirs[s].default for s in SWITCHES if s in theirs}


@pytest.mark.parametrize("name", NAMES)
def test_a_switch_pytorch_lacks_is_pythons_type_error(name):
    for switch in sorted(set(SWITCHES) - set(_torch_switches(name))) + ["fusedd"]:
        message = f"{name}.__init__() got an unexpected keyword argument '{switch}'"
        with pytest.raises(TypeError) as theirs:
            getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **{switch: True})
        assert str(theirs.value) == message
        with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
            getattr(sg.optim, name)([sg.zeros(1, requires_grad=True)], **{switch: True})


def test_fused_and_foreach_together_and_a_differentiable_step_are_refused():
    w = [sg.zeros(1, requires_grad=True)]
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        sg.optim.AdamW(w, fused=True, foreach=True)
    with pytest.raises(NotImplementedError, match="SGD: differentiable=True"):
        sg.optim.SGD(w, lr=0.1, differentiable=True)
