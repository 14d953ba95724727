"""Every optimizer on a 0-d parameter (a temperature, a log-scale) equals PyTorch's, with each
option: NumPy's ufuncs return scalars, not arrays, for 0-d operands, which must neither break
an update written with ``out=`` nor detach a state buffer from the optimizer's state."""

import itertools

import numpy as np
import pytest
import torch

import scratchgrad as sg

OPTIONS = {
    "SGD": [{}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True}, {"momentum": 0.5}],
    "Adam": [{}, {"amsgrad": True}],
    "AdamW": [{}, {"amsgrad": True}],
    "RMSprop": [{}, {"momentum": 0.9}, {"centered": True, "momentum": 0.5}],
    "NAdam": [{}, {"decoupled_weight_decay": True}],
    "RAdam": [{}, {"decoupled_weight_decay": True}],
    "Adagrad": [{}, {"lr_decay": 0.1}],
    "Adadelta": [{}],
    "Adamax": [{}],
    "ASGD": [{}],
    "Rprop": [{}],
    "Adafactor": [{}, {"d": 1.5, "eps": (1e-30, 1e-2)}],
}
CASES = [
    (name, {**options, "maximize": maximize, **({} if name == "Rprop" else {"weight_decay": wd})})
    for name, variants in OPTIONS.items()
    for options in variants
    for wd, maximize in itertools.product([0.0, 0.1], [False, True])
]


@pytest.mark.parametrize("name, options", CASES, ids=lambda c: str(c))
def test_a_0_d_parameter_steps_as_torchs(name, options):
    ours, theirs = sg.nn.Parameter(sg.tensor(0.3)), torch.nn.Parameter(torch.tensor(0.3))
    opt = getattr(sg.optim, name)([ours], lr=0.05, **options)
    t_opt = getattr(torch.optim, name)([theirs], lr=0.05, **options)
    for _ in range(4):
        for w, o in ((ours, opt), (theirs, t_opt)):
            o.zero_grad()
            ((w - 1) ** 2).backward()
            o.step()
    assert ours.shape == ()
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-5, atol=1e-6)
