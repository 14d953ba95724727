"""``optim.swa_utils`` against PyTorch's: the averaged weights (SWA and EMA, one function per
tensor or per list, with and without buffers) bit for bit in float32, the SWALR schedules, the
batch-norm statistics ``update_bn`` recomputes, and the errors."""

import numpy as np
import pytest
import torch
from oracle import assert_doc_examples_run, assert_raises_as_torch

import scratchgrad as sg
from scratchgrad.optim import swa_utils


def _model(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))


def _pair():
    theirs = _model(torch)
    ours = _model(sg)
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


# the averaging options, from either library's swa_utils
AVERAGES = {
    "swa": lambda m: {},
    "ema_per_tensor": lambda m: {"avg_fn": m.get_ema_avg_fn(0.9)},
    "ema_lists_with_buffers": lambda m: {
        "multi_avg_fn": m.get_ema_multi_avg_fn(0.9),
        "use_buffers": True,
    },
    "swa_lists": lambda m: {"multi_avg_fn": m.get_swa_multi_avg_fn()},
}


@pytest.mark.parametrize("name", AVERAGES)
def test_averaged_model_matches_torch_bit_for_bit(name):
    """Five updates from a model whose parameters and buffers are set to the same random
    float32 values in both libraries each time (so any difference is the averaging's)."""
    ours, theirs = _pair()
    averaged = []
    for lib, module, model in ((sg, swa_utils, ours), (torch, torch.optim.swa_utils, theirs)):
        swa = module.AveragedModel(model, **AVERAGES[name](module))
        rng = np.random.default_rng(0)
        for _ in range(5):
            with lib.no_grad():
                for t in [*model.parameters(), model[1].running_mean, model[1].running_var]:
                    t.copy_(lib.tensor(rng.standard_normal(tuple(t.shape)).astype(np.float32)))
            swa.update_parameters(model)
        averaged.append(swa.state_dict())
    assert list(averaged[0]) == list(averaged[1])
    for key in averaged[1]:
        assert averaged[0][key].numpy().tobytes() == averaged[1][key].numpy().tobytes(), key


def test_the_averaged_model_calls_its_copy_and_starts_from_the_models_values():
    model = sg.nn.Linear(2, 1)
    swa = swa_utils.AveragedModel(model)
    swa.update_parameters(model)
    x = sg.ones(3, 2)
    assert swa(x).tolist() == model(x).tolist()
    assert swa.module is not model and swa.n_averaged.item() == 1


@pytest.mark.parametrize(
    "strategy, anneal_epochs, swa_lr",
    [("cos", 3, 0.05), ("linear", 4, [0.05, 0.2]), ("cos", 0, 0.01), ("linear", 1, 0.5)],
)
def test_swalr_matches_torch(strategy, anneal_epochs, swa_lr):
    rates = []
    for lib, module in ((sg, swa_utils), (torch, torch.optim.swa_utils)):
        groups = [
            {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.3},
            {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.1},
        ]
        optimizer = lib.optim.SGD(groups, lr=0.1)
        scheduler = module.SWALR(optimizer, swa_lr, anneal_epochs, strategy)
        seen = [scheduler.get_last_lr()]
        for _ in range(6):
            optimizer.step()
            scheduler.step()
            seen.append(scheduler.get_last_lr())
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-15)


def test_update_bn_matches_torch():
    """Fresh statistics over a loader of (input, target) pairs, as a cumulative average; the
    layers' momentum and the model's mode are restored."""
    ours, theirs = _pair()
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    for lib, module, model in ((sg, swa_utils, ours), (torch, torch.optim.swa_utils, theirs)):
        model.eval()
        module.update_bn([(lib.tensor(b), lib.zeros(6)) for b in batches], model)
        assert not model.training and model[1].momentum == 0.1
    for key in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(  # (atol: a mean near zero, summed in another order)
            ours.state_dict()[key].numpy(), theirs.state_dict()[key].numpy(), rtol=1e-6, atol=1e-7
        )


def test_update_bn_leaves_instance_norm_alone():
    """PyTorch's instance norms are not batch norms (here InstanceNorm2d subclasses one)."""
    norm = sg.nn.InstanceNorm2d(2, track_running_stats=True)
    norm(sg.randn(2, 2, 3, 3))
    before = norm.running_mean.tolist()
    swa_utils.update_bn([sg.randn(2, 2, 3, 3)], norm)
    assert norm.running_mean.tolist() == before


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (
            lambda m, lib: m.AveragedModel(
                lib.nn.Linear(1, 1),
                avg_fn=m.get_swa_avg_fn(),
                multi_avg_fn=m.get_swa_multi_avg_fn(),
            ),
            AssertionError,
            "Only one of avg_fn and multi_avg_fn should be provided",
        ),
        (lambda m, lib: m.get_ema_avg_fn(1.5), ValueError, r"Invalid decay value 1.5"),
        (lambda m, lib: m.get_ema_multi_avg_fn(-0.1), ValueError, r"Invalid decay value -0.1"),
        (
            lambda m, lib: m.SWALR(lib.optim.SGD([lib.zeros(1)], lr=1), 0.1, anneal_strategy="exp"),
            ValueError,
            "anneal_strategy must be one of 'cos' or 'linear', instead got exp",
        ),
        (
            lambda m, lib: m.SWALR(lib.optim.SGD([lib.zeros(1)], lr=1), 0.1, anneal_epochs=-1),
            ValueError,
            "anneal_epochs must be equal or greater than 0, got -1",
        ),
        (
            lambda m, lib: m.SWALR(lib.optim.SGD([lib.zeros(1)], lr=1), [0.1, 0.2]),
            ValueError,
            "swa_lr must have the same length as optimizer.param_groups",
        ),
    ],
    ids=["two_functions", "ema_decay", "multi_ema_decay", "strategy", "epochs", "per_group"],
)
def test_bad_arguments_raise_as_torch(call, kind, message):
    assert_raises_as_torch(
        lambda lib: call(swa_utils if lib is sg else torch.optim.swa_utils, lib), kind, message
    )


def test_doc_examples_run():
    for item in (swa_utils.AveragedModel, swa_utils.update_bn, swa_utils.SWALR):
        assert_doc_examples_run(item, vars(swa_utils))
