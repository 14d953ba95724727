"""LinearLR, ConstantLR, PolynomialLR, CosineAnnealingWarmRestarts, SequentialLR and CyclicLR
against torch.optim.lr_scheduler: learning rates (and momenta) equal to the last bit over every
phase, chained, resumed from a state dict, and stepped inside a jitted training step."""

import math

import numpy as np
import pytest
import torch

import scratchgrad as sg
import scratchgrad.optim as optim
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.optim import lr_scheduler
from scratchgrad.serialization import load, save

# torch's inner SequentialLR steps its first scheduler when made, before any optimizer step
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step:UserWarning")

LRS = (0.1, 0.02)  # two parameter groups with different rates
STEPS = 40


def optimizers(name="SGD", **options):
    """The same two-group optimizer in both libraries (SGD with momentum, for CyclicLR)."""
    options = options or {"momentum": 0.9}
    ours = getattr(optim, name)(
        [{"params": [sg.zeros(2, requires_grad=True)], "lr": lr} for lr in LRS], lr=1.0, **options
    )
    theirs = getattr(torch.optim, name)(
        [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in LRS],
        lr=1.0,
        **options,
    )
    return ours, theirs


def settings(opt):
    """What a scheduler sets: each group's rate and momentum."""
    return [(group["lr"], group.get("momentum"), group.get("betas")) for group in opt.param_groups]


class Halving:
    """A callable object as CyclicLR's scale_fn: its attributes are saved in the state dict."""

    def __init__(self, base):
        self.base = base

    def __call__(self, x):
        return self.base**x


def one(name, **kwargs):
    """A factory making scheduler ``name`` in either library (``lib``) for ``opt``."""
    return lambda lib, opt: getattr(lib, name)(opt, **kwargs)


def warmup_then_cosine(lib, opt):
    return lib.SequentialLR(
        opt,
        [lib.LinearLR(opt, start_factor=0.1, total_iters=5), lib.CosineAnnealingLR(opt, T_max=12)],
        milestones=[5],
    )


def three_phases(lib, opt):
    """Each later scheduler restarts from its formula on the initial rates at its milestone."""
    return lib.SequentialLR(
        opt,
        [
            lib.ConstantLR(opt, factor=0.5, total_iters=20),
            lib.LinearLR(opt, start_factor=0.2, end_factor=0.9, total_iters=6),
            lib.MultiStepLR(opt, milestones=[3, 8], gamma=0.5),
            lib.CosineAnnealingWarmRestarts(opt, T_0=4, eta_min=0.001),
        ],
        milestones=[4, 12, 25],
    )


def restarts_then_steps(lib, opt):
    """Jumps to the closed forms of PolynomialLR, StepLR and ExponentialLR (and eta_min != 0 for
    CosineAnnealingLR's, whose first value then differs from its initial rate in the last bit)."""
    return lib.SequentialLR(
        opt,
        [
            lib.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2),
            lib.PolynomialLR(opt, total_iters=4, power=1.5),
            lib.StepLR(opt, step_size=3, gamma=0.7),
            lib.CosineAnnealingLR(opt, T_max=5, eta_min=0.003),
            lib.ExponentialLR(opt, gamma=0.9),
        ],
        milestones=[7, 13, 20, 30],
    )


def nested(lib, opt):
    inner = lib.SequentialLR(
        opt, [lib.StepLR(opt, 1), lib.ConstantLR(opt, factor=0.5, total_iters=2)], milestones=[3]
    )
    return lib.SequentialLR(opt, [inner, lib.ExponentialLR(opt, gamma=0.8)], milestones=[10])


CASES = {
    "LinearLR": one("LinearLR"),
    "LinearLR decaying": one("LinearLR", start_factor=1.0, end_factor=0.05, total_iters=17),
    "LinearLR to 0": one("LinearLR", start_factor=0.3, end_factor=0.0, total_iters=9),
    "ConstantLR": one("ConstantLR"),
    "ConstantLR 0.5": one("ConstantLR", factor=0.5, total_iters=12),
    "PolynomialLR": one("PolynomialLR"),
    "PolynomialLR squared": one("PolynomialLR", total_iters=25, power=2.0),
    "PolynomialLR root": one("PolynomialLR", total_iters=13, power=0.5),
    "CosineAnnealingWarmRestarts": one("CosineAnnealingWarmRestarts", T_0=7),
    "CosineAnnealingWarmRestarts doubling": one(
        "CosineAnnealingWarmRestarts", T_0=3, T_mult=2, eta_min=0.001
    ),
    "SequentialLR warmup": warmup_then_cosine,
    "SequentialLR four": three_phases,
    "SequentialLR five": restarts_then_steps,
    "SequentialLR nested": nested,
    "CyclicLR": one("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR triangular2": one(
        "CyclicLR",
        base_lr=[0.01, 0.002],
        max_lr=[0.1, 0.05],
        step_size_up=3,
        step_size_down=5,
        mode="triangular2",
        base_momentum=[0.85, 0.7],
        max_momentum=0.95,
    ),
    "CyclicLR exp_range": one(
        "CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.97
    ),
    "CyclicLR scale_fn": one(
        "CyclicLR",
        base_lr=0.01,
        max_lr=0.1,
        step_size_up=2,
        step_size_down=6,
        scale_fn=Halving(0.9),
        scale_mode="iterations",
    ),
    "CyclicLR no momentum": one(
        "CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False
    ),
}


def advance(sched, opt):
    opt.step()
    sched.step()


def assert_same(sched, opt, tsched, topt):
    # The same float operations in the same order: equal to the last bit.
    assert settings(opt) == settings(topt)
    assert sched.get_last_lr() == tsched.get_last_lr()
    assert sched.last_epoch == tsched.last_epoch


@pytest.mark.parametrize("case", CASES)
def test_sequence_matches_torch(case):
    opt, topt = optimizers()
    sched = CASES[case](lr_scheduler, opt)
    tsched = CASES[case](torch.optim.lr_scheduler, topt)
    assert_same(sched, opt, tsched, topt)
    seen = set()
    for _ in range(STEPS):
        advance(sched, opt)
        advance(tsched, topt)
        assert_same(sched, opt, tsched, topt)
        seen.add(tuple(settings(opt)))
    assert len(seen) > 1  # the schedule did change the rates (ConstantLR: once)


@pytest.mark.parametrize("case", CASES)
def test_state_dict_through_a_file_resumes_the_schedule(case, tmp_path):
    """Train 15 epochs, checkpoint optimizer and scheduler, restore both into fresh objects:
    the next 25 settings are the ones torch gives without interruption."""
    opt, topt = optimizers()
    sched = CASES[case](lr_scheduler, opt)
    tsched = CASES[case](torch.optim.lr_scheduler, topt)
    for _ in range(15):
        advance(sched, opt)
        advance(tsched, topt)
    save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp_path / "ckpt")

    checkpoint = load(tmp_path / "ckpt")
    fresh_opt, _ = optimizers()
    fresh = CASES[case](lr_scheduler, fresh_opt)  # scheduler first, then load
    if case == "CyclicLR scale_fn":
        fresh._scale_fn_custom.base = 0.5  # the saved base comes back from the checkpoint
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    fresh.load_state_dict(checkpoint["scheduler"])
    for _ in range(25):
        advance(fresh, fresh_opt)
        advance(tsched, topt)
        assert_same(fresh, fresh_opt, tsched, topt)


def test_state_dict_keeps_no_function():
    """A lambda scale_fn cannot be saved: CyclicLR's state dict holds None for it (as torch)."""
    opt, _ = optimizers()
    sched = lr_scheduler.CyclicLR(opt, 0.01, 0.1, scale_fn=lambda x: 1.0)
    assert sched.state_dict()["_scale_fn_custom"] is None
    sequential = warmup_then_cosine(lr_scheduler, opt)
    assert [type(s) for s in sequential.state_dict()["_schedulers"]] == [dict, dict]


def test_chained_with_other_schedulers_matches_torch():
    """LinearLR, ConstantLR and PolynomialLR scale what the others left in group["lr"]."""
    opt, topt = optimizers()

    def make(lib, opt):
        return [
            lib.LinearLR(opt, start_factor=0.25, total_iters=6),
            lib.ConstantLR(opt, factor=0.5, total_iters=9),
            lib.PolynomialLR(opt, total_iters=30, power=1.5),
            lib.ExponentialLR(opt, gamma=0.97),
        ]

    ours, theirs = make(lr_scheduler, opt), make(torch.optim.lr_scheduler, topt)
    for _ in range(STEPS):
        opt.step()
        topt.step()
        for s, t in zip(ours, theirs):
            s.step()
            t.step()
            assert s.get_last_lr() == t.get_last_lr()
        assert settings(opt) == settings(topt)


@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_step_to_a_float_epoch_as_torch(T_mult):
    """``step(epoch)`` with fractional epochs (a step per batch), jumps back and forth, and
    plain steps in between continue from the last epoch."""
    opt, topt = optimizers()
    sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=T_mult, eta_min=1e-3)
    tsched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        topt, T_0=3, T_mult=T_mult, eta_min=1e-3
    )
    epochs = [e + i / 4 for e in range(12) for i in range(4)]
    epochs += [None, None, 2.5, None, 26, None, 0, 7.75, None, 100.125, None]
    for epoch in epochs:
        opt.step()
        topt.step()
        sched.step(epoch)
        tsched.step(epoch)
        assert_same(sched, opt, tsched, topt)
        assert (sched.T_cur, sched.T_i) == (tsched.T_cur, tsched.T_i)


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_cyclic_cycles_momentum_and_beta1_as_torch(optimizer):
    options = {"momentum": 0.5} if optimizer == "SGD" else {"betas": (0.9, 0.99)}
    opt, topt = optimizers(optimizer, **options)
    kwargs = {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3, "mode": "triangular2"}
    sched = lr_scheduler.CyclicLR(opt, **kwargs)
    tsched = torch.optim.lr_scheduler.CyclicLR(topt, **kwargs)
    momenta = set()
    for _ in range(20):
        assert_same(sched, opt, tsched, topt)
        momenta.add(settings(opt)[0][1:])
        advance(sched, opt)
        advance(tsched, topt)
    assert len(momenta) > 3


def errors(make):
    """The errors ``make(lib, opt)`` raises in both libraries, whose texts must be equal."""
    opt, topt = optimizers()
    with pytest.raises((ValueError, TypeError)) as theirs:
        make(torch.optim.lr_scheduler, topt)
    with pytest.raises(theirs.type) as ours:
        make(lr_scheduler, opt)
    return str(ours.value), str(theirs.value)


@pytest.mark.parametrize(
    "make",
    [
        one("LinearLR", start_factor=0.0),
        one("LinearLR", start_factor=1.5),
        one("LinearLR", end_factor=-0.1),
        one("ConstantLR", factor=1.5),
        one("ConstantLR", factor=-0.5),
        one("CosineAnnealingWarmRestarts", T_0=0),
        one("CosineAnnealingWarmRestarts", T_0=2.5),
        one("CosineAnnealingWarmRestarts", T_0=3, T_mult=0),
        one("CosineAnnealingWarmRestarts", T_0=3, T_mult=1.5),
        one("CosineAnnealingWarmRestarts", T_0=3, eta_min="0"),
        one("CyclicLR", base_lr=0.01, max_lr=0.1, mode="cosine"),
        one("CyclicLR", base_lr=[0.01], max_lr=0.1),
        one("CyclicLR", base_lr=0.01, max_lr=[0.1, 0.2, 0.3]),
        one("CyclicLR", base_lr=0.01, max_lr=0.1, max_momentum=[0.9]),
        lambda lib, opt: lib.SequentialLR(opt, [], milestones=[]),
        lambda lib, opt: lib.SequentialLR(opt, [object()], milestones=[]),
        lambda lib, opt: lib.SequentialLR(opt, [lib.ReduceLROnPlateau(opt)], milestones=[]),
        lambda lib, opt: lib.SequentialLR(opt, [lib.StepLR(opt, 2)] * 2, milestones=[]),
        lambda lib, opt: lib.CosineAnnealingWarmRestarts(opt, T_0=3).step(-1),
    ],
)
def test_errors_are_torch_s(make):
    ours, theirs = errors(make)
    assert ours == theirs


def test_errors_naming_the_optimizer():
    """A scheduler of another optimizer (whose text names it: its repr differs from torch's),
    and CyclicLR with an optimizer without momentum or betas."""

    def other_optimizer(lib, opt):
        other = type(opt)([p for group in opt.param_groups for p in group["params"]], lr=0.1)
        return lib.SequentialLR(opt, [lib.StepLR(other, 2)], milestones=[])

    ours, theirs = errors(other_optimizer)
    prefix = "SequentialLR expects all schedulers to belong to the same optimizer, but got"
    assert ours.startswith(prefix) and theirs.startswith(prefix)
    assert ours.endswith("which is different from SGD.") and theirs.endswith(ours[-28:])
    adagrad = optim.Adagrad([sg.zeros(1, requires_grad=True)], lr=0.1)
    tadagrad = torch.optim.Adagrad([torch.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError) as theirs:
        torch.optim.lr_scheduler.CyclicLR(tadagrad, 0.01, 0.1)
    with pytest.raises(ValueError) as ours:
        lr_scheduler.CyclicLR(adagrad, 0.01, 0.1)
    assert str(ours.value) == str(theirs.value)
    lr_scheduler.CyclicLR(adagrad, 0.01, 0.1, cycle_momentum=False)  # fine without cycling


def test_defaults_are_torch_s():
    opt, topt = optimizers()
    keys = ["start_factor", "end_factor", "total_iters", "factor", "power"]
    for name in ["LinearLR", "ConstantLR", "PolynomialLR"]:
        ours = getattr(lr_scheduler, name)(opt)
        theirs = getattr(torch.optim.lr_scheduler, name)(topt)
        expected = {key: getattr(theirs, key) for key in keys if hasattr(theirs, key)}
        assert {key: getattr(ours, key) for key in expected} == expected, name
    cyclic = lr_scheduler.CyclicLR(opt, 0.01, 0.1)
    tcyclic = torch.optim.lr_scheduler.CyclicLR(topt, 0.01, 0.1)
    for key in ["total_size", "step_ratio", "mode", "gamma", "scale_mode", "max_momentums"]:
        assert getattr(cyclic, key) == getattr(tcyclic, key), key
    warm = lr_scheduler.CosineAnnealingWarmRestarts(opt, 5)
    twarm = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, 5)
    assert (warm.T_mult, warm.eta_min) == (twarm.T_mult, twarm.eta_min)


# ---- inside a jitted training step ------------------------------------------------------------

JIT_CASES = {
    "LinearLR": one("LinearLR", start_factor=0.2, total_iters=4),
    "ConstantLR": one("ConstantLR", factor=0.5, total_iters=3),
    "PolynomialLR": one("PolynomialLR", total_iters=6, power=2.0),
    "CosineAnnealingWarmRestarts": one("CosineAnnealingWarmRestarts", T_0=3, T_mult=2),
    "SequentialLR": three_phases,
    "CyclicLR": one("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2"),
}
JIT_STEPS = 30  # past every milestone of three_phases


def assert_jitted_equals_eager(make_scheduler, steps, read, least_distinct=2):
    """Train a small model ``steps`` times with ``make_scheduler(lr_scheduler, opt)`` stepped
    inside the step, eagerly and jitted: the rates (``read(opt, sched)``, at least
    ``least_distinct`` different ones), the losses and the final weights are the same, bit for
    bit, and the jitted step replayed."""

    def train(jit):
        sg.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        sched = make_scheduler(lr_scheduler, opt)
        x, y = sg.randn(5, 3), sg.randn(5, 1)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            return loss.detach()

        run = sg.jit(step) if jit else step
        losses, rates = [], []
        for _ in range(steps):
            losses.append(run(x, y).item())
            rates.append(read(opt, sched))
        return losses, rates, model.state_dict(), run

    (losses, rates, state, _), (jit_losses, jit_rates, jit_state, run) = train(False), train(True)
    assert jit_rates == rates and len(set(map(tuple, rates))) >= least_distinct
    assert jit_losses == losses
    for key in state:
        np.testing.assert_array_equal(jit_state[key].numpy(), state[key].numpy())
    assert run.calls == steps and run.fast is not None  # it replayed


@pytest.mark.parametrize("case", JIT_CASES)
def test_stepped_inside_a_jitted_step_equals_eager(case):
    """The scheduler's ``step()`` inside the jitted function runs again at every replay, so the
    rates (and CyclicLR's momenta) it sets are the eager ones and the model ends bit for bit
    where eager training ends."""
    assert_jitted_equals_eager(JIT_CASES[case], JIT_STEPS, lambda opt, sched: settings(opt))


def test_float_epochs_between_jitted_steps():
    """CosineAnnealingWarmRestarts stepped to fractional epochs between jitted calls (a step per
    batch) sets the rates eager training does."""

    def train(jit):
        sg.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = optim.SGD(model.parameters(), lr=0.1)
        sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
        x, y = sg.randn(4, 3), sg.randn(4, 1)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        run = sg.jit(step) if jit else step
        losses = []
        for epoch in range(3):
            for i in range(4):
                losses.append(run(x, y).item())
                sched.step(epoch + i / 4)
        return losses, opt.param_groups[0]["lr"]

    eager, jitted = train(False), train(True)
    assert jitted == eager and not math.isclose(eager[1], 0.1)
