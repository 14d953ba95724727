"""Every scheduler's ``state_dict`` holds PyTorch's keys and values (OneCycleLR's
``_schedule_phases`` and ``_anneal_func_type``; ``_get_lr_called_within_step`` of them all,
which a scheduler's own ``get_lr`` may read), after a few steps."""

import math

import pytest
import torch

import scratchgrad as sg

SCHEDULERS = {
    "StepLR": lambda S, o: S.StepLR(o, 2),
    "MultiStepLR": lambda S, o: S.MultiStepLR(o, [1, 2]),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, 0.9),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, 5),
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda e: 0.9),
    "MultiplicativeLR": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.9),
    "ConstantLR": lambda S, o: S.ConstantLR(o),
    "LinearLR": lambda S, o: S.LinearLR(o),
    "PolynomialLR": lambda S, o: S.PolynomialLR(o),
    "CyclicLR": lambda S, o: S.CyclicLR(o, 0.01, 0.1),
    # without cycle_momentum: no base_momentums and max_momentums (ours had empty lists)
    "CyclicLR without momentum": lambda S, o: S.CyclicLR(o, 0.01, 0.1, cycle_momentum=False),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, 1.0, total_steps=10),
    "OneCycleLR three phases": lambda S, o: S.OneCycleLR(
        o, [1.0], total_steps=10, three_phase=True, anneal_strategy="linear"
    ),
    "CosineAnnealingWarmRestarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, 3),
    "ReduceLROnPlateau": lambda S, o: S.ReduceLROnPlateau(o),
    "SequentialLR": lambda S, o: S.SequentialLR(o, [S.ConstantLR(o), S.ExponentialLR(o, 0.9)], [2]),
    "ChainedScheduler": lambda S, o: S.ChainedScheduler([S.ConstantLR(o), S.ExponentialLR(o, 0.9)]),
}


def _state_after_steps(lib, build):
    opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(2))], lr=0.1, momentum=0.9)
    scheduler = build(lib.optim.lr_scheduler, opt)
    plateau = isinstance(scheduler, lib.optim.lr_scheduler.ReduceLROnPlateau)
    for _ in range(3):
        opt.step()
        scheduler.step(*[1.0] * plateau)  # (the plateau's step takes the metric)
    return scheduler.state_dict()


def _comparable(value):
    if isinstance(value, float):
        return round(value, 12) if math.isfinite(value) else value
    if isinstance(value, list | tuple):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", SCHEDULERS)
def test_state_dict_as_torchs(name):
    ours = _state_after_steps(sg, SCHEDULERS[name])
    theirs = _state_after_steps(torch, SCHEDULERS[name])
    assert _comparable(ours) == _comparable(theirs)


def test_a_schedulers_get_lr_sees_whether_step_called_it():
    seen = []
    for lib in (sg, torch):

        class Halving(lib.optim.lr_scheduler.LRScheduler):
            def get_lr(self):
                seen.append(self._get_lr_called_within_step)
                return [group["lr"] / 2 for group in self.optimizer.param_groups]

        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        scheduler = Halving(opt)
        opt.step()
        scheduler.step()
        assert scheduler._get_lr_called_within_step is False
    assert seen == [True, True, True, True]
