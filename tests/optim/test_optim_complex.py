"""Complex parameters in the optimizers against torch.optim (which update a complex parameter
as its ``view_as_real`` pairs, so Adam's second moment squares each part): the trajectories and
state after a few steps, a jitted step (which falls back to the eager update and so gives the
same numbers), and Adafactor, which refuses them as PyTorch's."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

RNG = np.random.default_rng(0)
P0 = RNG.normal(size=(3, 2)) + 1j * RNG.normal(size=(3, 2))
C = RNG.normal(size=(3, 2)) + 1j * RNG.normal(size=(3, 2))


def loss(m, p):
    """|p * c - 1|^2 plus a quartic term: a real loss of a complex parameter whose gradient
    has parts of different sizes (where Adam's per-part squares differ from |g|^2)."""
    w = p * m.tensor(C, dtype=p.dtype) - 1
    return m.view_as_real(w).pow(2).sum() + 0.1 * m.view_as_real(p).pow(4).sum()


CASES = [
    ("SGD", {"lr": 0.02}),
    ("SGD", {"lr": 0.02, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.02, "momentum": 0.8, "dampening": 0.3, "maximize": True}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "maximize": True, "betas": (0.8, 0.9)}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.9, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.3}),
    ("Adadelta", {"lr": 0.5, "rho": 0.7, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.05, "momentum_decay": 0.1}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.05}),  # rho_t > 5 from step 6 on: both branches run
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1)}),
]


def trajectory(m, name: str, kwargs: dict, dtype: str, steps: int = 5, jitted: bool = False):
    p = m.tensor(P0.astype(dtype), requires_grad=True)
    opt = getattr(m.optim, name)([p], **kwargs)

    def step():
        opt.zero_grad()
        loss(m, p).backward()
        opt.step()

    step = sg.jit(step) if jitted else step
    for _ in range(steps):
        step()
    return p, opt.state[p]


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name, kwargs", CASES)
def test_complex_parameter_as_torch(name, kwargs, dtype):
    ours, ours_state = trajectory(sg, name, kwargs, dtype)
    theirs, theirs_state = trajectory(torch, name, kwargs, dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "complex128" else dict(rtol=1e-5, atol=1e-6)
    assert ours.dtype == getattr(sg, dtype)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tol)
    assert sorted(ours_state) == sorted(theirs_state)
    for key, value in theirs_state.items():
        if key != "step":
            # buffers kept complex, scalar state (NAdam's mu_product) real, as PyTorch's
            assert ours_state[key].numpy().dtype == value.numpy().dtype
            np.testing.assert_allclose(ours_state[key].numpy(), value.numpy(), **tol)


@pytest.mark.parametrize("name, kwargs", [CASES[1], CASES[4], CASES[7], CASES[12]])
def test_jitted_step_with_complex_parameter_as_eager(name, kwargs):
    eager, _ = trajectory(sg, name, kwargs, "complex64", steps=6)
    jitted, _ = trajectory(sg, name, kwargs, "complex64", steps=6, jitted=True)
    assert np.array_equal(jitted.detach().numpy(), eager.detach().numpy())


def test_adafactor_refuses_complex_parameters_as_torch():
    p, tp = sg.zeros(2, dtype=sg.cfloat, requires_grad=True), torch.zeros(2, dtype=torch.cfloat)
    with pytest.raises(NotImplementedError, match="^Adafactor: complex parameters are not supp"):
        sg.optim.Adafactor([p])
    tp.grad = torch.zeros(2, dtype=torch.cfloat)
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        torch.optim.Adafactor([tp]).step()


@pytest.mark.parametrize(
    "kwargs", [{"max_iter": 4}, {"max_iter": 4, "line_search_fn": "strong_wolfe"}]
)
def test_lbfgs_takes_a_complex_parameters_parts_as_entries(kwargs):
    """PyTorch's L-BFGS flattens a complex parameter's ``view_as_real`` pairs into its
    vector, next to the real parameters'."""
    results = []
    for m in (sg, torch):
        p = m.tensor(P0, requires_grad=True)
        b = m.tensor(P0.real[0], requires_grad=True)
        opt = m.optim.LBFGS([p, b], **kwargs)

        def closure(m=m, p=p, b=b, opt=opt):
            opt.zero_grad()
            total = loss(m, p) + ((b - 1) ** 2).sum()
            total.backward()
            return total

        for _ in range(2):
            opt.step(closure)
        results.append([p.detach().numpy(), b.detach().numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)
