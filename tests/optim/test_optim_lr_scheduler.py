"""Learning-rate schedulers against torch.optim.lr_scheduler: 30-step learning-rate sequences."""

import math

import numpy as np
import pytest
import torch

import scratchgrad as sg
import scratchgrad.optim as optim
from scratchgrad.optim import lr_scheduler
from scratchgrad.serialization import load, save

LRS = (0.1, 0.02)  # two parameter groups with different rates


def optimizers():
    ours = optim.SGD(
        [{"params": [sg.zeros(2, requires_grad=True)], "lr": lr} for lr in LRS], lr=1.0
    )
    theirs = torch.optim.SGD(
        [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in LRS], lr=1.0
    )
    return ours, theirs


def inverse_decay(epoch):
    return 1 / (1 + epoch)


def wave(epoch):
    return 1 + 0.5 * math.sin(epoch)


CASES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("StepLR", {"step_size": 1, "gamma": 0.9}),
    ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.001}),
    ("CosineAnnealingLR", {"T_max": 10}),
    ("LambdaLR", {"lr_lambda": inverse_decay}),
    ("LambdaLR", {"lr_lambda": [inverse_decay, wave]}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 30}),
    ("OneCycleLR", {"max_lr": [0.5, 0.1], "epochs": 3, "steps_per_epoch": 10, "pct_start": 0.4}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 30, "anneal_strategy": "linear"}),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 31, "three_phase": True, "div_factor": 10.0}),
]


def lrs(opt):
    return [group["lr"] for group in opt.param_groups]


@pytest.mark.parametrize("name, kwargs", CASES)
def test_sequence_matches_torch(name, kwargs):
    opt, topt = optimizers()
    sched = getattr(lr_scheduler, name)(opt, **kwargs)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    assert lrs(opt) == lrs(topt) and sched.get_last_lr() == tsched.get_last_lr()
    seen = set()
    for _ in range(30):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        # The same float operations in the same order: equal to the last bit.
        assert lrs(opt) == lrs(topt)
        assert sched.get_last_lr() == tsched.get_last_lr()
        assert sched.last_epoch == tsched.last_epoch
        seen.add(tuple(lrs(opt)))
    assert len(seen) > 3  # the schedule did change the rates


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
def test_one_cycle_cycles_momentum_and_beta1_as_torch(optimizer):
    """OneCycleLR moves SGD's momentum (Adam's beta1) against the rate, bit for bit as
    PyTorch's, and refuses to step past ``total_steps``."""
    options = {"momentum": 0.9} if optimizer == "SGD" else {"betas": (0.9, 0.99)}
    opt = getattr(optim, optimizer)([sg.zeros(2, requires_grad=True)], lr=1.0, **options)
    topt = getattr(torch.optim, optimizer)([torch.zeros(2, requires_grad=True)], lr=1.0, **options)
    kwargs = {"max_lr": 0.3, "total_steps": 12, "base_momentum": 0.8, "three_phase": True}
    sched = lr_scheduler.OneCycleLR(opt, **kwargs)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, **kwargs)
    key = "momentum" if optimizer == "SGD" else "betas"
    for _ in range(12):
        assert opt.param_groups[0][key] == topt.param_groups[0][key]
        assert sched.get_last_lr() == tsched.get_last_lr()
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    with pytest.raises(ValueError, match="Tried to step 13 times"):
        sched.step()


def test_one_cycle_errors_are_torch_s():
    opt, topt = optimizers()
    bad = [
        {"max_lr": 0.1},
        {"max_lr": 0.1, "total_steps": 0},
        {"max_lr": 0.1, "epochs": 2, "steps_per_epoch": -1},
        {"max_lr": 0.1, "total_steps": 5, "pct_start": 1.5},
        {"max_lr": 0.1, "total_steps": 5, "anneal_strategy": "step"},
        {"max_lr": [0.1], "total_steps": 5},
    ]
    for kwargs in bad:
        with pytest.raises(ValueError) as theirs:
            torch.optim.lr_scheduler.OneCycleLR(topt, **kwargs)
        with pytest.raises(ValueError) as ours:
            lr_scheduler.OneCycleLR(opt, **kwargs)
        assert str(ours.value) == str(theirs.value)
    adagrad = optim.Adagrad([sg.zeros(1, requires_grad=True)], lr=0.1)  # no momentum, no betas
    tadagrad = torch.optim.Adagrad([torch.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError) as theirs:
        torch.optim.lr_scheduler.OneCycleLR(tadagrad, max_lr=0.1, total_steps=5)
    with pytest.raises(ValueError) as ours:
        lr_scheduler.OneCycleLR(adagrad, max_lr=0.1, total_steps=5)
    assert str(ours.value) == str(theirs.value)


def test_chained_schedulers_match_torch():
    """Chainable schedules compose: each scales what the other left in group["lr"]."""
    opt, topt = optimizers()
    ours = [lr_scheduler.ExponentialLR(opt, 0.95), lr_scheduler.StepLR(opt, 4, 0.5)]
    theirs = [
        torch.optim.lr_scheduler.ExponentialLR(topt, 0.95),
        torch.optim.lr_scheduler.StepLR(topt, 4, 0.5),
    ]
    for _ in range(20):
        opt.step()
        topt.step()
        for s, t in zip(ours, theirs):
            s.step()
            t.step()
        assert lrs(opt) == lrs(topt)


METRICS = [1.0, 0.9, 0.9, 0.95, 0.9, 0.91, 0.85, 0.85, 0.86, 0.87, 0.88, 0.5, 0.5, 0.5, 0.5]
METRICS += list(np.round(np.random.default_rng(1).uniform(0.3, 0.6, 25), 3))

PLATEAU_CASES = [
    {"patience": 2},
    {"patience": 0, "factor": 0.5},
    {"mode": "max", "patience": 1, "factor": 0.7},
    {"patience": 1, "threshold": 0.05, "threshold_mode": "abs"},
    {"mode": "max", "patience": 1, "threshold": 0.05, "threshold_mode": "abs"},
    {"patience": 1, "cooldown": 3, "factor": 0.5},
    {"patience": 0, "factor": 0.5, "min_lr": [0.01, 0.005]},
    {"patience": 0, "factor": 0.5, "min_lr": 0.004},
    {"patience": 0, "factor": 0.5, "eps": 0.03},
]


@pytest.mark.parametrize("kwargs", PLATEAU_CASES)
def test_reduce_on_plateau_matches_torch(kwargs):
    opt, topt = optimizers()
    sched = lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    seen = set()
    for metric in METRICS:
        sched.step(sg.tensor(metric) if metric == 0.5 else metric)  # 0-d tensors work too
        tsched.step(metric)
        assert lrs(opt) == lrs(topt)
        assert sched.get_last_lr() == tsched.get_last_lr()
        for key in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
            assert getattr(sched, key) == getattr(tsched, key), key
        seen.add(tuple(lrs(opt)))
    assert len(seen) > 1


def test_reduce_on_plateau_arguments():
    opt, _ = optimizers()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode 'median' is unknown"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="median")
    with pytest.raises(ValueError, match="threshold mode 'pct' is unknown"):
        lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 2 min_lrs"):
        lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1])


def test_scheduler_needs_an_optimizer_and_initial_lr_to_resume():
    with pytest.raises(TypeError, match="is not an Optimizer"):
        lr_scheduler.StepLR(object(), 3)
    opt, _ = optimizers()
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(opt, 3, last_epoch=4)


def test_lambda_lr_needs_one_lambda_per_group():
    opt, _ = optimizers()
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(opt, [inverse_decay])


class Warmup:
    """A callable object: its attributes are saved in LambdaLR's state dict (functions are not)."""

    def __init__(self, epochs):
        self.epochs = epochs

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.epochs)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        *CASES,
        ("LambdaLR", {"lr_lambda": Warmup(5)}),
        ("ReduceLROnPlateau", {"patience": 1, "cooldown": 2, "factor": 0.5}),
    ],
)
def test_state_dict_through_a_file_resumes_the_schedule(name, kwargs, tmp_path):
    """Train 10 epochs, checkpoint optimizer and scheduler, restore both into fresh objects:
    the next 10 learning rates are the ones torch gives without interruption."""
    plateau = name == "ReduceLROnPlateau"
    opt, topt = optimizers()
    sched = getattr(lr_scheduler, name)(opt, **kwargs)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)

    def advance(s, o, epoch):
        o.step()
        s.step(METRICS[epoch]) if plateau else s.step()

    for epoch in range(10):
        advance(sched, opt, epoch)
        advance(tsched, topt, epoch)
    save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp_path / "ckpt")

    checkpoint = load(tmp_path / "ckpt")
    fresh_opt, _ = optimizers()
    if name == "LambdaLR" and isinstance(kwargs["lr_lambda"], Warmup):
        kwargs = {"lr_lambda": Warmup(1)}  # the epochs come back from the checkpoint
    fresh = getattr(lr_scheduler, name)(fresh_opt, **kwargs)  # scheduler first, then load
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    fresh.load_state_dict(checkpoint["scheduler"])
    for epoch in range(10, 20):
        advance(fresh, fresh_opt, epoch)
        advance(tsched, topt, epoch)
        assert lrs(fresh_opt) == lrs(topt)
        assert fresh.get_last_lr() == tsched.get_last_lr()
