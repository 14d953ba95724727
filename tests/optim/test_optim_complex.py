"""Complex parameters in SGD, Adam and AdamW against torch.optim (which update a complex
parameter as its ``view_as_real`` pairs, so Adam's second moment squares each part): the
trajectories and state after a few steps, a jitted step (which falls back to the eager update
and so gives the same numbers), and the optimizers that refuse them."""

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
            assert ours_state[key].dtype == getattr(sg, dtype)  # kept complex, as PyTorch's
            np.testing.assert_allclose(ours_state[key].numpy(), value.numpy(), **tol)


@pytest.mark.parametrize("name, kwargs", [CASES[1], CASES[4]])
def test_jitted_step_with_complex_parameter_as_eager(name, kwargs):
    eager, _ = trajectory(sg, name, kwargs, "complex64", steps=6)
    jitted, _ = trajectory(sg, name, kwargs, "complex64", steps=6, jitted=True)
    assert np.array_equal(jitted.detach().numpy(), eager.detach().numpy())


@pytest.mark.parametrize("name", ["RMSprop", "Adagrad", "Adamax", "NAdam", "Rprop"])
def test_other_optimizers_refuse_complex_parameters(name):
    p = sg.zeros(2, dtype=sg.cfloat, requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"^{name}: complex parameters are not supp"):
        getattr(sg.optim, name)([p])
