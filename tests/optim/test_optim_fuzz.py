"""Random optimizers, learning-rate schedulers and gradient clipping against PyTorch.

An optimizer is drawn with random options (invalid ones now and then: both libraries must
raise alike) over a few float64 parameters of random shapes (0-d and empty among them) in one
or two parameter groups; for 5 to 20 steps each parameter gets a random gradient, none, or
zeros (``zero_grad(set_to_none=False)``), and the parameters and ``state_dict()`` (state and
param_groups) must agree after every step; then both state dicts are loaded into fresh
optimizers, which continue a few steps alike. L-BFGS steps with a closure over a fixed smooth
loss instead. A scheduler is drawn over an SGD or Adam optimizer and stepped 30 times (the
rates, momenta and betas compared), then resumed from its state dict. ``clip_grad_norm_`` and
``clip_grad_value_`` run on random gradients with infinities and NaNs.
Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math
import re

import numpy as np
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

# both libraries run the same float64 formulas, in an order that may differ by a rounding
TOLERANCE = RTOL, ATOL = 1e-10, 1e-12
SHAPES = [(), (0,), (1,), (3,), (2, 3), (2, 0, 2)]
# gradients this much larger or smaller than the parameters now and then (eps then decides)
GRAD_SCALES = (1.0, 1.0, 1.0, 1e-9, 1e5)
# docs/optim.md: state["step"] is a Python int where PyTorch keeps a 0-d float tensor, and
# LBFGS's t, ro and H_diag are Python floats
NUMBERS = re.compile(r"\['(step|t|ro|H_diag)'\](\[\d+\])?$").search


# ---- comparing ---------------------------------------------------------------------------------


def assert_tree_close(ours, theirs, what: str, tolerance=TOLERANCE) -> None:
    """Two nested structures (dicts, lists, tuples, tensors, numbers) agree: the same keys and
    lengths, tensors and numbers within ``tolerance`` (rtol, atol; NaN where NaN), anything
    else equal."""
    rtol, atol = tolerance
    if isinstance(ours, (int, float)) and isinstance(theirs, torch.Tensor) and NUMBERS(what):
        assert_tree_close(ours, theirs.item(), what, tolerance)
    elif isinstance(theirs, torch.Tensor):
        assert isinstance(ours, sg.Tensor), f"{what}: {ours!r} where PyTorch has a tensor"
        assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {ours.shape}"
        expected = theirs.detach().double().numpy()
        actual = ours.detach().double().numpy()
        np.testing.assert_allclose(actual, expected, rtol, atol, err_msg=what)
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{what}: {ours!r} is not a dict"
        assert sorted(map(str, ours)) == sorted(map(str, theirs)), f"{what}: keys {list(ours)}"
        for key in theirs:
            assert_tree_close(ours[key], theirs[key], f"{what}[{key!r}]", tolerance)
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)), f"{what}: {ours!r} is not a sequence"
        assert len(ours) == len(theirs), f"{what}: length {len(ours)} != {len(theirs)}"
        for i, (o, t) in enumerate(zip(ours, theirs)):
            assert_tree_close(o, t, f"{what}[{i}]", tolerance)
    elif isinstance(theirs, float) and not isinstance(ours, (bool, str)) and ours is not None:
        assert math.isclose(float(ours), theirs, rel_tol=rtol, abs_tol=atol) or (
            math.isnan(theirs) and math.isnan(float(ours))
        ), f"{what}: {ours} != {theirs}"
    else:
        assert ours == theirs, f"{what}: {ours!r} != {theirs!r}"


# ---- optimizers --------------------------------------------------------------------------------

rate = st.sampled_from([0.0, 1e-3, 0.01, 0.1, 0.5])
decay = st.sampled_from([0.0, 0.0, 0.01, 0.3])
beta = st.sampled_from([0.0, 0.5, 0.9, 0.99])


def invalid(valid, *bad):
    """An option's ``valid`` values with ``bad`` ones both libraries must refuse (see
    ``draw_options``)."""
    return valid, bad


def valid_values(entry):
    """The strategy of an option's valid values (an entry of an options table)."""
    return entry[0] if isinstance(entry, tuple) else entry


def draw_options(draw, table, required=frozenset()):
    """Options drawn from ``table`` (name -> strategy, or ``invalid``'s pair): each now and
    then (the ``required`` always), valid, and one time in five one of them invalid."""
    options = {}
    for key, entry in table.items():
        if key in required or draw(st.integers(0, 3)):
            options[key] = draw(valid_values(entry))
    bad = {key: entry[1] for key, entry in table.items() if isinstance(entry, tuple)}
    if bad and draw(st.integers(0, 4)) == 0:
        key = draw(st.sampled_from(sorted(bad)))
        options[key] = draw(st.sampled_from(bad[key]))
    return options


def adam_family(extra=None):
    options = {
        "lr": invalid(rate, -0.1),
        "betas": invalid(st.tuples(beta, beta), (1.0, 0.9), (0.9, -0.1)),
        "eps": invalid(st.sampled_from([1e-8, 1e-3, 0.0]), -1e-8),
        "weight_decay": invalid(decay, -0.1),
        "maximize": st.booleans(),
    }
    return {**options, **(extra or {})}


OPTIMIZERS = {
    "SGD": {
        "lr": invalid(rate, -0.1),
        "momentum": invalid(st.sampled_from([0.0, 0.5, 0.9]), -0.5),
        "dampening": st.sampled_from([0.0, 0.3]),
        "nesterov": st.booleans(),
        "weight_decay": invalid(decay, -0.1),
        "maximize": st.booleans(),
    },
    "Adam": adam_family({"amsgrad": st.booleans(), "foreach": st.sampled_from([None, True])}),
    "AdamW": adam_family({"amsgrad": st.booleans(), "foreach": st.sampled_from([None, True])}),
    "NAdam": adam_family(
        {
            "momentum_decay": invalid(st.sampled_from([4e-3, 0.1]), -1.0),
            "decoupled_weight_decay": st.booleans(),
        }
    ),
    "RAdam": adam_family({"decoupled_weight_decay": st.booleans()}),
    "Adamax": adam_family(),
    "Adagrad": {
        "lr": invalid(rate, -0.1),
        "lr_decay": invalid(st.sampled_from([0.0, 0.1]), -0.1),
        "weight_decay": invalid(decay, -0.1),
        "initial_accumulator_value": invalid(st.sampled_from([0.0, 0.5]), -0.5),
        "eps": st.sampled_from([1e-10, 1e-3, 0.0]),
        "maximize": st.booleans(),
    },
    "Adadelta": {
        "lr": invalid(st.sampled_from([1.0, 0.5]), -0.1),
        "rho": invalid(st.sampled_from([0.0, 0.5, 0.9]), 1.5),
        "eps": invalid(st.sampled_from([1e-6, 1e-3, 0.0]), -1e-6),
        "weight_decay": invalid(decay, -0.1),
        "maximize": st.booleans(),
    },
    "RMSprop": {
        "lr": invalid(rate, -0.1),
        "alpha": invalid(st.sampled_from([0.0, 0.5, 0.99]), -0.5),
        "eps": invalid(st.sampled_from([1e-8, 1e-3, 0.0]), -1e-8),
        "weight_decay": invalid(decay, -0.1),
        "momentum": invalid(st.sampled_from([0.0, 0.5]), -0.5),
        "centered": st.booleans(),
        "maximize": st.booleans(),
    },
    "Rprop": {
        "lr": invalid(rate, -0.1),
        "etas": invalid(
            st.tuples(st.sampled_from([0.3, 0.5]), st.sampled_from([1.2, 2.0])),
            (1.5, 1.2),
            (0.5, 0.9),
        ),
        "step_sizes": st.tuples(st.sampled_from([0.0, 1e-6, 0.01]), st.sampled_from([0.05, 50.0])),
        "maximize": st.booleans(),
    },
    "ASGD": {
        "lr": invalid(rate, -0.1),
        "lambd": st.sampled_from([1e-4, 0.1]),
        "alpha": st.sampled_from([0.75, 0.5]),
        "t0": st.sampled_from([0.0, 3.0, 1e6]),
        "weight_decay": invalid(decay, -0.1),
        "maximize": st.booleans(),
    },
}
LBFGS = {
    "lr": st.sampled_from([1.0, 0.5, 0.1]),
    "max_iter": st.integers(1, 6),
    "history_size": st.integers(1, 5),
    "tolerance_grad": st.sampled_from([1e-7, 1e-3]),
    "tolerance_change": st.sampled_from([1e-9, 1e-4]),
    "line_search_fn": st.sampled_from([None, "strong_wolfe"]),
}


def array_of(draw, shape, scales=(1.0,)):
    """A float64 array of ``shape``: continuous entries, or small integers (zeros and ties),
    times one of ``scales``."""
    size = math.prod(shape)
    if draw(st.booleans()):
        values = st.integers(-2, 2).map(float)
    else:
        values = st.floats(-2, 2, allow_nan=False, allow_subnormal=False)
    entries = draw(st.lists(values, min_size=size, max_size=size))
    return np.array(entries, float).reshape(shape) * draw(st.sampled_from(scales))


@st.composite
def optimizer_cases(draw):
    """(name, options of the first group, options of the second or None, start arrays,
    the group of each parameter, the gradients of each step: an array, None or 'zeros')."""
    name = draw(st.sampled_from([*OPTIMIZERS, "LBFGS"]))
    table = LBFGS if name == "LBFGS" else OPTIMIZERS[name]
    # L-BFGS: at most 6 iterations in each of at most 6 steps, before the curvature pairs are
    # differences of gradients near the optimum (whose rounding decides which pairs it keeps)
    lbfgs = name == "LBFGS"
    options = draw_options(draw, table, required={"max_iter"} if lbfgs else frozenset())
    if name in ("Adam", "AdamW") and "lr" in options and draw(st.integers(0, 3)) == 0:
        options["lr"] = ("tensor", options["lr"])  # a 0-d tensor learning rate
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
    starts = [array_of(draw, shape) for shape in shapes]
    second = None
    if not lbfgs and len(shapes) > 1 and draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(sorted(table)), max_size=3, unique=True))
        # valid values only: PyTorch checks the constructor's options, not a group's (whose
        # invalid values end in NaN or in an error, depending on the optimizer's arithmetic)
        valid = {key: valid_values(table[key]) for key in keys}
        second = draw_options(draw, valid, required=keys)
    groups = [0 if second is None else draw(st.integers(0, 1)) for _ in shapes]
    steps = []
    for _ in range(draw(st.integers(5, 6 if lbfgs else 20))):
        kinds = [draw(st.sampled_from(["grad", "grad", "grad", "none", "zeros"])) for _ in shapes]
        steps.append(
            [
                array_of(draw, s, GRAD_SCALES) if kind == "grad" else kind
                for s, kind in zip(shapes, kinds)
            ]
        )
    for group in (options, {**options, **(second or {})}):
        # docs/optim.md: PyTorch's centered RMSprop subtracts the squared mean gradient by a
        # fused multiply-add, which NumPy lacks; with alpha 0 the variance is that rounding
        # alone, which the division by sqrt(variance) + eps makes as large as the step
        assume(not (name == "RMSprop" and group.get("centered") and group.get("alpha") == 0))
    return name, options, second, starts, groups, steps


def lib_options(lib, options):
    """The options for ``lib``: ('tensor', lr) as a 0-d float64 tensor of ``lib``."""
    return {
        key: lib.tensor(value[1], dtype=lib.float64)
        if isinstance(value, tuple) and value[:1] == ("tensor",)
        else value
        for key, value in options.items()
    }


def make_optimizer(lib, case, params):
    name, options, second, _, groups, _ = case
    if second is None:
        return getattr(lib.optim, name)(params, **lib_options(lib, options))
    param_groups = [
        {"params": [p for p, g in zip(params, groups) if g == index]} for index in (0, 1)
    ]
    param_groups[1].update(lib_options(lib, second))
    return getattr(lib.optim, name)(param_groups, **lib_options(lib, options))


def smooth_loss(lib, params, starts):
    """A fixed smooth loss for L-BFGS: sum over parameters of (p - start)^2 (1 + p^2) / 2 + p,
    whose minimum is not at a start."""
    return sum(((p - s) ** 2 * (1 + p * p) / 2 + p).sum() for p, s in zip(params, starts))


def step_once(lib, case, params, optimizer, grads, starts):
    """One step of ``optimizer``: with the closure of ``smooth_loss`` (L-BFGS), else after
    setting each parameter's gradient (an array, 'none' or 'zeros'). Returns the loss or None."""
    if case[0] == "LBFGS":
        targets = [lib.tensor(-s) for s in starts]

        def closure():
            optimizer.zero_grad()
            loss = smooth_loss(lib, params, targets)
            loss.backward()
            return loss

        return optimizer.step(closure)
    kinds = [grad for grad in grads if isinstance(grad, str)]
    optimizer.zero_grad(set_to_none="zeros" not in kinds)
    for p, grad in zip(params, grads):
        if isinstance(grad, np.ndarray):
            p.grad = lib.tensor(grad)
        elif grad == "none":
            p.grad = None
    return optimizer.step()


def steps_agree(ours, theirs, params, tparams, case, steps, what, tolerance) -> bool:
    """Step both optimizers through ``steps`` comparing them after each; False where both
    raised (alike) at a step."""
    for n, grads in enumerate(steps):
        loss = outcome(step_once, sg, case, params, ours, grads, case[3])
        tloss = outcome(step_once, torch, case, tparams, theirs, grads, case[3])
        if raised_alike(loss, tloss, f"{what} step {n}"):
            return False
        assert_tree_close(loss, tloss, f"{what} step {n}: loss", tolerance)
        compare_optimizers(ours, theirs, params, tparams, f"{what} step {n}", tolerance)
    return True


def compare_optimizers(ours, theirs, params, tparams, what, tolerance):
    for i, (p, t) in enumerate(zip(params, tparams)):
        assert_tree_close(p, t, f"{what}: parameter {i}", tolerance)
    expected = theirs.state_dict()
    for state in expected["state"].values():
        # docs/optim.md: PyTorch's LBFGS keeps the two-loop recursion's scratch list "al" in
        # its state; ours does not
        state.pop("al", None)
    assert_tree_close(ours.state_dict(), expected, f"{what}: state_dict", tolerance)


@given(optimizer_cases())
@fuzz_settings(60)
def test_optimizer_matches_torch(case):
    name, _, _, starts, _, steps = case
    params = [sg.tensor(s, requires_grad=True) for s in starts]
    tparams = [torch.tensor(s, requires_grad=True) for s in starts]
    ours = outcome(make_optimizer, sg, case, params)
    theirs = outcome(make_optimizer, torch, case, tparams)
    if raised_alike(ours, theirs, f"{name} {case[1]} {case[2]}"):
        return
    # docs/optim.md, "Differences from PyTorch": with a tensor lr PyTorch computes some scalars
    # in float32, so float64 trajectories differ by about 1e-9
    tensor_lr = any(isinstance(v, tuple) and v[:1] == ("tensor",) for v in case[1].values())
    tolerance = (1e-7, ATOL) if tensor_lr else (RTOL, ATOL)
    if name == "LBFGS":  # the differences of gradients (curvature pairs) grow the rounding
        tolerance = (1e-6, 1e-6)
    split = max(1, len(steps) - 4)
    if not steps_agree(ours, theirs, params, tparams, case, steps[:split], name, tolerance):
        return

    # resume: each library's state dict loaded into a fresh optimizer over the same parameters
    resumed, tresumed = make_optimizer(sg, case, params), make_optimizer(torch, case, tparams)
    resumed.load_state_dict(ours.state_dict())
    tresumed.load_state_dict(theirs.state_dict())
    what = f"{name} resumed"
    compare_optimizers(resumed, tresumed, params, tparams, what, tolerance)
    steps_agree(resumed, tresumed, params, tparams, case, steps[split:], what, tolerance)


# ---- learning-rate schedulers ------------------------------------------------------------------

EPOCHS = 30
LAMBDAS = [lambda e: 0.9**e, lambda e: 1 / (1 + e), lambda e: min(1.0, (e + 1) / 5)]
factor = st.sampled_from([0.1, 0.5, 0.9, 1.0])
# the schedulers' arguments without a default (always drawn; the others now and then)
REQUIRED = {
    *("step_size", "milestones", "gamma", "T_max", "T_0"),
    *("max_lr", "total_steps", "base_lr", "lr_lambda"),
}


def scheduler_tables():
    """The options of the schedulers that run alone or in SequentialLR and ChainedScheduler
    (simple), and of those that run only alone (whole)."""
    period = st.integers(1, 8)
    simple = {
        "StepLR": {"step_size": period, "gamma": factor},
        "MultiStepLR": {
            "milestones": st.lists(st.integers(0, 12), max_size=4),
            "gamma": factor,
        },
        "ExponentialLR": {"gamma": st.sampled_from([0.5, 0.9, 1.0])},
        "CosineAnnealingLR": {"T_max": period, "eta_min": st.sampled_from([0.0, 1e-3])},
        "CosineAnnealingWarmRestarts": {
            "T_0": invalid(period, 0),
            "T_mult": invalid(st.integers(1, 3), 0),
            "eta_min": st.sampled_from([0.0, 1e-3]),
        },
        "LinearLR": {
            "start_factor": invalid(st.sampled_from([0.25, 1 / 3, 1.0]), 0.0, 1.5),
            "end_factor": invalid(st.sampled_from([0.5, 1.0]), -0.5),
            "total_iters": period,
        },
        "ConstantLR": {"factor": invalid(factor, 1.5, -0.1), "total_iters": period},
        "PolynomialLR": {"total_iters": period, "power": st.sampled_from([0.5, 1.0, 2.0])},
        "LambdaLR": {"lr_lambda": st.sampled_from(range(len(LAMBDAS)))},
        "MultiplicativeLR": {"lr_lambda": st.sampled_from(range(len(LAMBDAS)))},
    }
    whole = {
        "OneCycleLR": {
            "max_lr": st.sampled_from([0.1, 1.0]),
            "total_steps": st.sampled_from([10, EPOCHS, EPOCHS + 5]),
            "pct_start": st.sampled_from([0.1, 0.3, 0.5]),
            "anneal_strategy": invalid(st.sampled_from(["cos", "linear"]), "square"),
            "cycle_momentum": st.booleans(),
            "div_factor": st.sampled_from([2.0, 25.0]),
            "final_div_factor": st.sampled_from([10.0, 1e4]),
            "three_phase": st.booleans(),
        },
        "CyclicLR": {
            "base_lr": st.sampled_from([1e-3, 0.01]),
            "max_lr": st.sampled_from([0.1, 0.5]),
            "step_size_up": st.integers(1, 6),
            "step_size_down": st.one_of(st.none(), st.integers(1, 6)),
            "mode": invalid(st.sampled_from(["triangular", "triangular2", "exp_range"]), "x"),
            "gamma": st.sampled_from([0.9, 1.0]),
            "cycle_momentum": st.booleans(),
        },
        "ReduceLROnPlateau": {
            "mode": invalid(st.sampled_from(["min", "max"]), "middle"),
            "factor": invalid(st.sampled_from([0.1, 0.5]), 1.0),
            "patience": st.integers(0, 3),
            "threshold": st.sampled_from([0.0, 1e-4, 0.1]),
            "threshold_mode": invalid(st.sampled_from(["rel", "abs"]), "x"),
            "cooldown": st.integers(0, 2),
            "min_lr": st.sampled_from([0.0, 1e-3]),
        },
    }
    return simple, whole


SIMPLE, WHOLE = scheduler_tables()


@st.composite
def scheduler_specs(draw):
    """(name, options) of a scheduler: SequentialLR's and ChainedScheduler's hold the specs
    of the schedulers they run, LambdaLR's and MultiplicativeLR's the index of their function
    in LAMBDAS."""
    name = draw(st.sampled_from([*SIMPLE, *WHOLE, "SequentialLR", "ChainedScheduler"]))
    if name not in ("SequentialLR", "ChainedScheduler"):
        return name, draw_options(draw, {**SIMPLE, **WHOLE}[name], REQUIRED)
    names = draw(st.lists(st.sampled_from(sorted(SIMPLE)), min_size=1, max_size=3))
    children = [(child, draw_options(draw, SIMPLE[child], REQUIRED)) for child in names]
    if name == "ChainedScheduler":
        return name, {"schedulers": children}
    count = len(children) - 1
    milestones = draw(st.lists(st.integers(1, 20), min_size=count, max_size=count, unique=True))
    return name, {"schedulers": children, "milestones": sorted(milestones)}


def make_scheduler(lib, optimizer, spec):
    name, options = spec
    options = dict(options)
    if name in ("LambdaLR", "MultiplicativeLR"):
        options["lr_lambda"] = LAMBDAS[options["lr_lambda"]]
    if "schedulers" in options:
        options["schedulers"] = [make_scheduler(lib, optimizer, s) for s in options["schedulers"]]
    if name == "ChainedScheduler":
        return lib.optim.lr_scheduler.ChainedScheduler(optimizer=optimizer, **options)
    return getattr(lib.optim.lr_scheduler, name)(optimizer, **options)


def scheduled_optimizer(lib, adam, lrs):
    """An SGD with momentum (or an Adam) over one or two groups with the rates ``lrs``."""
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    if adam:
        return lib.optim.Adam(groups, betas=(0.9, 0.99))
    return lib.optim.SGD(groups, momentum=0.9)


def schedule_step(scheduler, optimizer, metric):
    optimizer.step()
    if type(scheduler).__name__ == "ReduceLROnPlateau":
        scheduler.step(metric)
    else:
        scheduler.step()


def schedules_agree(ours, theirs, opt, topt, metrics, what) -> bool:
    """Step both schedulers with the ``metrics``, comparing the rates, momenta and betas after
    each step; False where both raised (alike) at a step."""
    for n, metric in enumerate(metrics):
        mine, expected = (
            outcome(schedule_step, ours, opt, metric),
            outcome(schedule_step, theirs, topt, metric),
        )
        if raised_alike(mine, expected, f"{what} step {n}"):
            return False
        assert_tree_close(ours.get_last_lr(), theirs.get_last_lr(), f"{what} step {n}: last lr")
        keys = ("lr", "momentum", "betas")
        for i, (group, tgroup) in enumerate(zip(opt.param_groups, topt.param_groups)):
            mine = {k: group[k] for k in keys if k in group}
            expected = {k: tgroup[k] for k in keys if k in tgroup}
            assert_tree_close(mine, expected, f"{what} step {n}: group {i}")
    return True


@given(
    spec=scheduler_specs(),
    adam=st.booleans(),
    lrs=st.lists(st.sampled_from([0.1, 0.05, 1.0]), min_size=1, max_size=2),
    metrics=st.lists(st.integers(0, 3).map(float), min_size=EPOCHS, max_size=EPOCHS),
)
@fuzz_settings(80)
def test_scheduler_matches_torch(spec, adam, lrs, metrics):
    opt, topt = scheduled_optimizer(sg, adam, lrs), scheduled_optimizer(torch, adam, lrs)
    ours = outcome(make_scheduler, sg, opt, spec)
    theirs = outcome(make_scheduler, torch, topt, spec)
    if raised_alike(ours, theirs, f"{spec}"):
        return
    split = EPOCHS - 8
    if not schedules_agree(ours, theirs, opt, topt, metrics[:split], f"{spec}"):
        return
    assert_tree_close(ours.state_dict(), theirs.state_dict(), f"{spec}: state_dict")

    # resume: a fresh optimizer and scheduler, then both state dicts loaded
    resumed_opt = scheduled_optimizer(sg, adam, lrs)
    tresumed_opt = scheduled_optimizer(torch, adam, lrs)
    resumed = make_scheduler(sg, resumed_opt, spec)
    tresumed = make_scheduler(torch, tresumed_opt, spec)
    resumed_opt.load_state_dict(opt.state_dict())
    tresumed_opt.load_state_dict(topt.state_dict())
    resumed.load_state_dict(ours.state_dict())
    tresumed.load_state_dict(theirs.state_dict())
    assert_tree_close(resumed.state_dict(), tresumed.state_dict(), f"{spec}: resumed state_dict")
    resumed_what = f"{spec} resumed"
    schedules_agree(resumed, tresumed, resumed_opt, tresumed_opt, metrics[split:], resumed_what)


# ---- gradient clipping -------------------------------------------------------------------------

SPECIALS = [math.inf, -math.inf, math.nan, 0.0, 1e300]


@st.composite
def gradient_sets(draw):
    """Start arrays of a few parameters and a gradient for each (None now and then), with
    infinities, NaN and huge entries now and then."""
    shapes = draw(st.lists(st.sampled_from(SHAPES), max_size=3))
    grads = []
    for shape in shapes:
        kind = draw(st.sampled_from(["plain", "plain", "special", "none"]))
        grad = None if kind == "none" else array_of(draw, shape)
        if kind == "special" and grad.size:
            index = draw(st.integers(0, grad.size - 1))
            grad.reshape(-1)[index] = draw(st.sampled_from(SPECIALS))
        grads.append(grad)
    return grads


def parameters_with(lib, grads, single):
    params = []
    for grad in grads:
        p = lib.zeros(() if grad is None else grad.shape, dtype=lib.float64, requires_grad=True)
        p.grad = None if grad is None else lib.tensor(grad)
        params.append(p)
    return params[0] if single and len(params) == 1 else params


def grads_of(params):
    return [p.grad for p in ([params] if isinstance(params, (sg.Tensor, torch.Tensor)) else params)]


def clipped(clip, grads, single, *args, **options):
    """``clip(parameters, *args, **options)`` in both libraries over parameters with ``grads``:
    (ours, PyTorch's) each (its result or error, the gradients after it)."""
    results = []
    for lib in (sg, torch):
        params = parameters_with(lib, grads, single)
        call = getattr(lib.nn.utils, clip)
        results.append((outcome(lambda: call(params, *args, **options)), grads_of(params)))  # noqa: B023
    return results


@given(
    grads=gradient_sets(),
    single=st.booleans(),
    max_norm=st.sampled_from([0.0, 0.5, 1.0, 100.0]),
    options=st.fixed_dictionaries(
        {
            "norm_type": st.sampled_from([1, 2, 2.0, math.inf, "inf", 0.5, 3.0, -math.inf]),
            "error_if_nonfinite": st.booleans(),
            "foreach": st.sampled_from([None, False, True]),
        }
    ),
)
@fuzz_settings(100)
def test_clip_grad_norm_matches_torch(grads, single, max_norm, options):
    (norm, clipped_grads), (tnorm, tclipped) = clipped(
        "clip_grad_norm_", grads, single, max_norm, **options
    )
    what = f"clip_grad_norm_ {max_norm} {options}"
    if not raised_alike(norm, tnorm, what):
        assert_tree_close(norm, tnorm, f"{what}: total norm")
    assert_tree_close(clipped_grads, tclipped, f"{what}: gradients")


@given(
    grads=gradient_sets(),
    single=st.booleans(),
    clip_value=st.sampled_from([0.0, 0.5, 1.0, -1.0, math.inf]),
    foreach=st.sampled_from([None, False, True]),
)
@fuzz_settings(60)
def test_clip_grad_value_matches_torch(grads, single, clip_value, foreach):
    # README, "What is different": with no gradient at all, ours does nothing (PyTorch's
    # raises an internal RuntimeError)
    assume(any(grad is not None for grad in grads))
    (done, clipped_grads), (tdone, tclipped) = clipped(
        "clip_grad_value_", grads, single, clip_value, foreach=foreach
    )
    what = f"clip_grad_value_ {clip_value} {foreach}"
    if not raised_alike(done, tdone, what):
        assert done is None
    assert_tree_close(clipped_grads, tclipped, f"{what}: gradients")
