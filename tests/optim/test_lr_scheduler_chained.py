"""MultiplicativeLR and ChainedScheduler against torch.optim.lr_scheduler: learning rates equal
to the last bit over 30 steps, state dicts that resume the schedule, torch's errors, and a
jitted training step that steps them."""

import pytest
import torch
from test_lr_scheduler_more import assert_jitted_equals_eager, optimizers, settings

from scratchgrad.optim import lr_scheduler
from scratchgrad.serialization import load, save

STEPS = 30


class Decay:
    """A callable object as lr_lambda: its attributes go into the state dict."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate if epoch % 3 else 1.02


def multiplicative(lib, opt):
    return lib.MultiplicativeLR(opt, lambda epoch: 0.95)


def multiplicative_per_group(lib, opt):
    return lib.MultiplicativeLR(opt, [Decay(0.9), lambda epoch: 1 / (1 + 0.1 * epoch)])


def warmup_and_decay(lib, opt):
    """torch's documented example: ConstantLR's warmup and ExponentialLR's decay at once."""
    return lib.ChainedScheduler(
        [lib.ConstantLR(opt, factor=0.1, total_iters=20), lib.ExponentialLR(opt, gamma=0.9)],
        optimizer=opt,
    )


def four_chained(lib, opt):
    return lib.ChainedScheduler(
        [
            lib.LinearLR(opt, start_factor=0.25, total_iters=6),
            lib.MultiplicativeLR(opt, Decay(0.97)),
            lib.StepLR(opt, step_size=7, gamma=0.5),
            lib.CosineAnnealingLR(opt, T_max=11, eta_min=0.001),
        ]
    )


def chained_in_chained(lib, opt):
    inner = lib.ChainedScheduler([lib.PolynomialLR(opt, total_iters=25, power=2.0)])
    return lib.ChainedScheduler([inner, lib.MultiStepLR(opt, milestones=[4, 9], gamma=0.3)])


def multiplicative_in_sequential(lib, opt):
    return lib.SequentialLR(
        opt,
        [lib.LinearLR(opt, start_factor=0.5, total_iters=4), lib.MultiplicativeLR(opt, Decay(0.8))],
        milestones=[5],
    )


CASES = {
    "MultiplicativeLR": multiplicative,
    "MultiplicativeLR per group": multiplicative_per_group,
    "ChainedScheduler warmup": warmup_and_decay,
    "ChainedScheduler four": four_chained,
    "ChainedScheduler nested": chained_in_chained,
    "SequentialLR of MultiplicativeLR": multiplicative_in_sequential,
}


def advance(sched, opt):
    opt.step()
    sched.step()


def assert_same(sched, opt, tsched, topt):
    # the same float operations in the same order: equal to the last bit
    assert settings(opt) == settings(topt)
    assert sched.get_last_lr() == tsched.get_last_lr()


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step:UserWarning")
@pytest.mark.parametrize("case", CASES)
def test_rates_equal_torch_s(case):
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
    assert len(seen) > STEPS // 2  # the rates did change


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step:UserWarning")
@pytest.mark.parametrize("case", CASES)
def test_state_dict_through_a_file_resumes_the_schedule(case, tmp_path):
    """15 epochs, a checkpoint, fresh optimizer and scheduler loaded from it: the next 15 rates
    are torch's without interruption (a callable object's attributes come back with it)."""
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
    for decay in _callable_objects(fresh):
        decay.rate = 0.5  # the saved rate comes back from the checkpoint
    fresh_opt.load_state_dict(checkpoint["optimizer"])
    fresh.load_state_dict(checkpoint["scheduler"])
    for _ in range(15):
        advance(fresh, fresh_opt)
        advance(tsched, topt)
        assert_same(fresh, fresh_opt, tsched, topt)


def _callable_objects(sched):
    """The Decay objects of ``sched`` and of the schedulers it drives."""
    for inner in getattr(sched, "_schedulers", ()):
        yield from _callable_objects(inner)
    yield from (fn for fn in getattr(sched, "lr_lambdas", ()) if isinstance(fn, Decay))


def test_state_dicts_hold_what_torch_s_hold():
    """A lambda is saved as None, a callable object as its attributes; a chain holds each of
    its schedulers' state dicts."""
    opt, topt = optimizers()
    sched = four_chained(lr_scheduler, opt)
    tsched = four_chained(torch.optim.lr_scheduler, topt)
    sd, tsd = sched.state_dict(), tsched.state_dict()
    assert set(sd) == set(tsd) == {"_schedulers", "_last_lr"}
    saved = [{"rate": 0.97}, {"rate": 0.97}]
    assert sd["_schedulers"][1]["lr_lambdas"] == tsd["_schedulers"][1]["lr_lambdas"] == saved
    sd = multiplicative_per_group(lr_scheduler, opt).state_dict()
    tsd = multiplicative_per_group(torch.optim.lr_scheduler, topt).state_dict()
    assert sd["lr_lambdas"] == tsd["lr_lambdas"] == [{"rate": 0.9}, None]
    for key in ("base_lrs", "last_epoch", "_last_lr"):
        assert sd[key] == tsd[key], key


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
        lambda lib, opt: lib.MultiplicativeLR(opt, 0.95),
        lambda lib, opt: lib.MultiplicativeLR(opt, [lambda e: 0.9, "0.9"]),
        lambda lib, opt: lib.MultiplicativeLR(opt, [lambda e: 0.9]),
        lambda lib, opt: lib.ChainedScheduler([]),
        lambda lib, opt: lib.ChainedScheduler([lib.StepLR(opt, 2), object()]),
        lambda lib, opt: lib.ChainedScheduler([lib.StepLR(opt, 2), lib.ReduceLROnPlateau(opt)]),
    ],
)
def test_errors_are_torch_s(make):
    ours, theirs = errors(make)
    assert ours == theirs


def test_a_chain_of_another_optimizer_s_schedulers_is_refused_as_by_torch():
    """(The text names the optimizer, whose repr differs from torch's.)"""

    def other_optimizer(lib, opt):
        other = type(opt)([p for group in opt.param_groups for p in group["params"]], lr=0.1)
        return lib.ChainedScheduler([lib.StepLR(other, 2)], optimizer=opt)

    ours, theirs = errors(other_optimizer)
    prefix = "ChainedScheduler expects all schedulers to belong to the same optimizer, but got"
    assert ours.startswith(prefix) and theirs.startswith(prefix)
    assert ours.endswith("which is different from SGD.") and theirs.endswith(ours[-28:])


def test_chained_and_multiplicative_stepped_inside_a_jitted_step_equal_eager():
    """ChainedScheduler's ``step()`` runs again at every replay (so does each scheduler in
    it), so the rates it sets are the eager ones and the model ends bit for bit where eager
    training ends."""

    assert_jitted_equals_eager(
        four_chained, STEPS, lambda opt, sched: sched.get_last_lr(), STEPS // 2 + 1
    )


def test_doc_examples_run():
    import doctest

    result = doctest.testmod(lr_scheduler)
    assert result.attempted > 0 and result.failed == 0
