"""Optimizers given sparse gradients (``embedding(..., sparse=True)``'s), against torch.optim:
``SparseAdam``, ``SGD``, ``Adagrad`` and ``LBFGS`` follow PyTorch's trajectories; the others, and
``SparseAdam`` given dense gradients, raise PyTorch's errors before changing anything."""

import numpy as np
import pytest
import torch
from oracle import ROUND_OFF, TOLERANCE, assert_close

import scratchgrad as sg

RNG = np.random.default_rng(1)
WEIGHT = RNG.normal(size=(7, 3))
BIAS = RNG.normal(size=3)
PADDING = 6
# the rows looked up at each step: repeated rows, rows absent for a while, and at step 3 only
# the padding row (an empty gradient)
BATCHES = [[0, 2, 2, 5], [1, 2, 6, 2], [0, 3, 3, 3], [6, 6, 6, 6], [5, 0, 4, 1], [2, 2, 1, 4]]
COEF = RNG.normal(size=(len(BATCHES), 4, 3))


def _train(m, make_optimizer, dtype="float64", with_bias=False):
    """The weights (and the optimizer) after each step of one library's run: ``weight`` looked
    up with a sparse gradient, ``bias`` (if ``with_bias``) a dense parameter beside it."""
    weight = m.tensor(WEIGHT, dtype=getattr(m, dtype), requires_grad=True)
    bias = m.tensor(BIAS, dtype=getattr(m, dtype), requires_grad=True)
    optimizer = make_optimizer(m, [weight, bias] if with_bias else [weight])
    seen = []
    for step in range(len(BATCHES)):
        optimizer.zero_grad()
        out = m.nn.functional.embedding(
            m.tensor(BATCHES[step]), weight, padding_idx=PADDING, sparse=True
        )
        if with_bias:
            out = out + bias
        coef = m.tensor(COEF[step], dtype=getattr(m, dtype))
        loss = (out * out * 0.5 + out * coef).sum()
        loss.backward()
        optimizer.step()
        seen.append((weight.detach().clone(), bias.detach().clone()))
    return seen, optimizer


def _check_trajectory(make_optimizer, dtype="float64", with_bias=False, state=()):
    ours, our_optimizer = _train(sg, make_optimizer, dtype, with_bias)
    theirs, their_optimizer = _train(torch, make_optimizer, dtype, with_bias)
    tolerance = ROUND_OFF if dtype == "float64" else TOLERANCE[dtype]
    for step, (mine, expected) in enumerate(zip(ours, theirs)):
        for a, b in zip(mine, expected):
            assert_close(a, b, dtype, f"step {step}", tolerance)
    for name in state:  # (the weight's state)
        ours_state = next(iter(our_optimizer.state.values()))[name]
        theirs_state = next(iter(their_optimizer.state.values()))[name]
        if name == "step":
            assert int(ours_state) == int(theirs_state)
        else:
            assert_close(ours_state, theirs_state, dtype, name, tolerance)


SPARSE_ADAM = [
    {},
    {"lr": 0.05},
    {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-3},
    {"lr": 0.02, "maximize": True},
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options", SPARSE_ADAM, ids=str)
def test_sparse_adam_follows_torch(options, dtype):
    _check_trajectory(
        lambda m, params: m.optim.SparseAdam(params, **options),
        dtype,
        state=("step", "exp_avg", "exp_avg_sq"),
    )


def test_sparse_adam_state_dict_loads_into_torch_and_continues_as_torch():
    def run(m, weight, optimizer, steps):
        for step in steps:
            optimizer.zero_grad()
            out = m.nn.functional.embedding(m.tensor(BATCHES[step]), weight, sparse=True)
            (out * out * 0.5 + out * m.tensor(COEF[step])).sum().backward()
            optimizer.step()

    ours, theirs = sg.tensor(WEIGHT, requires_grad=True), torch.tensor(WEIGHT, requires_grad=True)
    our_optimizer = sg.optim.SparseAdam([ours], lr=0.05)
    their_optimizer = torch.optim.SparseAdam([theirs], lr=0.05)
    run(sg, ours, our_optimizer, range(3))
    run(torch, theirs, their_optimizer, range(3))
    state = our_optimizer.state_dict()
    loaded_weight = torch.tensor(ours.detach().numpy(), requires_grad=True)
    loaded = torch.optim.SparseAdam([loaded_weight], lr=0.05)
    loaded.load_state_dict(
        {
            "param_groups": state["param_groups"],
            "state": {
                i: {k: v if k == "step" else torch.tensor(v.numpy()) for k, v in entry.items()}
                for i, entry in state["state"].items()
            },
        }
    )
    run(torch, loaded_weight, loaded, range(3, len(BATCHES)))
    run(torch, theirs, their_optimizer, range(3, len(BATCHES)))
    assert_close(loaded_weight.detach(), theirs.detach(), tolerance=ROUND_OFF)


def test_sparse_adam_moves_only_the_rows_looked_up():
    (after, _), *_ = _train(sg, lambda m, params: m.optim.SparseAdam(params, lr=0.1))[0]
    moved = np.flatnonzero((after.numpy() != WEIGHT).any(axis=1))
    assert moved.tolist() == [0, 2, 5]  # the first batch's rows


SGD = [
    {"lr": 0.1},
    {"lr": 0.05, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.3},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True},
    {"lr": 0.02, "maximize": True},
    {"lr": 0.02, "momentum": 0.5, "maximize": True},
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options", SGD, ids=str)
def test_sgd_with_sparse_gradients_follows_torch(options, dtype):
    _check_trajectory(lambda m, params: m.optim.SGD(params, **options), dtype, with_bias=True)


ADAGRAD = [
    {},
    {"lr": 0.1, "lr_decay": 0.01},
    {"initial_accumulator_value": 0.5},
    {"maximize": True},
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("options", ADAGRAD, ids=str)
def test_adagrad_with_sparse_gradients_follows_torch(options, dtype):
    _check_trajectory(
        lambda m, params: m.optim.Adagrad(params, **options),
        dtype,
        with_bias=True,
        state=("step", "sum"),
    )


def test_lbfgs_densifies_the_sparse_gradient_as_torch():
    def run(m):
        weight = m.tensor(WEIGHT, requires_grad=True)
        optimizer = m.optim.LBFGS([weight], lr=0.5, max_iter=5)

        def closure():
            optimizer.zero_grad()
            out = m.nn.functional.embedding(m.tensor([0, 2, 2, 5]), weight, sparse=True)
            loss = (out * out * 0.5 + out * m.tensor(COEF[0])).sum()
            loss.backward()
            return loss

        optimizer.step(closure)
        return weight.detach()

    assert_close(run(sg), run(torch), tolerance=(1e-9, 1e-11))


NO_SPARSE = {
    "Adam": "Adam does not support sparse gradients, please consider SparseAdam instead",
    "AdamW": "Adam does not support sparse gradients, please consider SparseAdam instead",
    **{
        name: f"{name} does not support sparse gradients"
        for name in ("Adadelta", "Adamax", "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop")
    },
    "Adafactor": "Adafactor does not support sparse gradients",
}


def _refused_step(m, make_optimizer, dense_first=True):
    """A step given a dense gradient and a sparse one (the dense one first): it must raise,
    and leave both parameters as they were."""
    dense = m.tensor(BIAS, requires_grad=True)
    weight = m.tensor(WEIGHT, requires_grad=True)
    (dense * dense).sum().backward()
    m.nn.functional.embedding(m.tensor([1, 1]), weight, sparse=True).sum().backward()
    optimizer = make_optimizer(m, [dense, weight] if dense_first else [weight, dense])
    try:
        optimizer.step()
    finally:
        if m is sg:  # (PyTorch's single-tensor loops may move the dense one first)
            assert_close(dense.detach(), BIAS, tolerance=(0, 0))
            assert_close(weight.detach(), WEIGHT, tolerance=(0, 0))


@pytest.mark.parametrize("name", NO_SPARSE)
def test_optimizers_without_sparse_support_raise_torchs_error(name):
    for m in (torch, sg):
        with pytest.raises(RuntimeError, match=NO_SPARSE[name]):
            _refused_step(m, lambda m, params: getattr(m.optim, name)(params, lr=0.1))


@pytest.mark.parametrize("dense_first", [True, False])
def test_sparse_adam_refuses_dense_gradients(dense_first):
    message = "SparseAdam does not support dense gradients, please consider Adam instead"
    for m in (torch, sg):
        with pytest.raises(RuntimeError, match=message):
            _refused_step(m, lambda m, params: m.optim.SparseAdam(params), dense_first)
        dense = m.ones(2, requires_grad=True)
        dense.sum().backward()
        with pytest.raises(RuntimeError, match=message):
            m.optim.SparseAdam([dense]).step()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("SGD", r"add\(sparse, dense\) is not supported"),
        ("Adagrad", "weight_decay option is not compatible with sparse gradients"),
    ],
)
def test_weight_decay_with_sparse_gradients_is_refused_as_in_torch(name, message):
    for m in (torch, sg):
        with pytest.raises(RuntimeError, match=message):
            _refused_step(
                m, lambda m, params: getattr(m.optim, name)(params, lr=0.1, weight_decay=0.1)
            )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lr": 0.0}, "Invalid learning rate: 0.0"),
        ({"eps": 0.0}, "Invalid epsilon value: 0.0"),
        ({"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
        ({"betas": (0.9, -0.5)}, "Invalid beta parameter at index 1: -0.5"),
    ],
)
def test_sparse_adam_checks_its_arguments_as_torch(options, message):
    for m in (torch, sg):
        with pytest.raises(ValueError, match=message):
            m.optim.SparseAdam([m.ones(2, requires_grad=True)], **options)


def test_sparse_adam_refuses_sparse_and_complex_parameters_as_torch():
    for m in (torch, sg):
        dense = m.ones(2, requires_grad=True)
        sparse = m.sparse_coo_tensor([[0]], [1.0], (2,), requires_grad=True)
        with pytest.raises(ValueError, match=r"Sparse params at indices \[\[1, 0\]\]: Sparse"):
            m.optim.SparseAdam([{"params": [dense]}, {"params": [sparse]}])
        complex_param = m.zeros(2, dtype=m.complex64, requires_grad=True)
        with pytest.raises(ValueError, match=r"Complex params at indices \[\[0, 1\]\]: Sparse"):
            m.optim.SparseAdam([dense, complex_param])


def test_sparse_adam_defaults_are_torchs():
    ours = sg.optim.SparseAdam([sg.ones(1, requires_grad=True)]).defaults
    assert ours == torch.optim.SparseAdam([torch.ones(1, requires_grad=True)]).defaults


@pytest.mark.parametrize("clip", ["clip_grad_norm_", "clip_grad_value_"])
def test_gradient_clipping_refuses_sparse_gradients_as_torch(clip):
    for m in (torch, sg):
        weight = m.tensor(WEIGHT, requires_grad=True)
        m.nn.functional.embedding(m.tensor([1, 1]), weight, sparse=True).sum().backward()
        with pytest.raises(NotImplementedError):
            getattr(m.nn.utils, clip)([weight], 1.0)
    with pytest.raises(NotImplementedError, match=f"{clip}: sparse gradients"):
        getattr(sg.nn.utils, clip)([weight], 1.0)
