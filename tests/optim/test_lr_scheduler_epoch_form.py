"""The old forms of the LR scheduler API that older training scripts still use, against
PyTorch's: ``scheduler.step(epoch)`` (a jump to that epoch, by the closed form where the
schedule has one, with PyTorch's deprecation warning) and subclassing ``_LRScheduler``."""

import math

import pytest
import torch

import scratchgrad as sg

SCHEDULES = {
    "StepLR": lambda L, o: L.StepLR(o, step_size=2, gamma=0.5),
    "MultiStepLR": lambda L, o: L.MultiStepLR(o, milestones=[1, 4], gamma=0.1),
    "ExponentialLR": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda L, o: L.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    "LinearLR": lambda L, o: L.LinearLR(o, start_factor=0.2, total_iters=4),
    "ConstantLR": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=3),
    "PolynomialLR": lambda L, o: L.PolynomialLR(o, total_iters=6, power=2.0),
    "LambdaLR": lambda L, o: L.LambdaLR(o, lambda epoch: 1.0 / (1 + epoch)),
}


def _rates(m, make, epochs):
    optimizer = m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.5)
    scheduler = make(m.optim.lr_scheduler, optimizer)
    rates = []
    for epoch in epochs:
        optimizer.step()
        scheduler.step(epoch)
        rates.append(optimizer.param_groups[0]["lr"])
    return rates, scheduler.last_epoch


@pytest.mark.filterwarnings("ignore:The epoch parameter")
@pytest.mark.parametrize("name", SCHEDULES)
def test_step_with_an_epoch_jumps_as_torchs(name):
    epochs = [1, 2, 5, 3, 3, 0, 6]  # forwards, backwards, repeated
    ours = _rates(sg, SCHEDULES[name], epochs)
    theirs = _rates(torch, SCHEDULES[name], epochs)
    assert ours[1] == theirs[1]
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)


def test_step_with_an_epoch_warns_as_torch():
    optimizer = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=0.5)
    scheduler = sg.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        scheduler.step(3)


def _halving(m):
    class Halving(m.optim.lr_scheduler._LRScheduler):
        def get_lr(self):
            return [base * 0.5**self.last_epoch for base in self.base_lrs]

    optimizer = m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.8)
    scheduler = Halving(optimizer)
    rates = []
    for _ in range(4):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    return rates, isinstance(scheduler, m.optim.lr_scheduler.LRScheduler)


def test_a_scheduler_subclassing_the_old_name_runs_as_torchs():
    assert _halving(sg) == _halving(torch)
    assert math.isclose(_halving(sg)[0][-1], 0.05)
