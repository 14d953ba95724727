"""The warning PyTorch gives when ``scheduler.step()`` comes before ``optimizer.step()``, and
the ``_step_count`` it keeps for it in the state dict, against torch.optim.lr_scheduler."""

import warnings

import pytest
import torch

import scratchgrad as sg
from scratchgrad.optim import lr_scheduler

SCHEDULERS = {
    "StepLR": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, 3),
    "CyclicLR": lambda lib, opt: lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1),
    "CosineAnnealingWarmRestarts": (
        lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 5)
    ),
    "SequentialLR": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt,
        [lib.optim.lr_scheduler.LinearLR(opt), lib.optim.lr_scheduler.ExponentialLR(opt, 0.9)],
        milestones=[2],
    ),
}

# the orders of calls: "o" an optimizer step, "s" a scheduler step, "m" making the scheduler
ORDERS = ["mss", "moss", "omss", "mosos", "msos"]


def warned(lib, make, order):
    """The messages of the warnings given by the calls of ``order``."""
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    scheduler = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for call in order:
            if call == "m":
                scheduler = make(lib, opt)
            elif call == "o":
                opt.step()
            else:
                scheduler.step()
    return [str(w.message) for w in caught], sorted(scheduler.state_dict())


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("name", SCHEDULERS)
def test_scheduler_stepped_before_the_optimizer_warns_as_torchs(name, order):
    theirs, their_keys = warned(torch, SCHEDULERS[name], order)
    ours, our_keys = warned(sg, SCHEDULERS[name], order)
    assert ours == theirs
    assert lr_scheduler.STEP_ORDER_WARNING in ours or not theirs
    assert our_keys == their_keys
