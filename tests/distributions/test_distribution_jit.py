"""Distributions whose samples NumPy's generator draws (gamma, Poisson) under ``scratchgrad.jit``:
each replay draws again, from the same seeded stream as eager calls, and the reparameterized
gamma sample's gradient reaches the parameter as eagerly."""

import numpy as np

import scratchgrad as sg
from scratchgrad.distributions import Beta, Gamma, Poisson


def _step(concentration):
    x = Gamma(concentration, sg.tensor(2.0)).rsample()
    y = Beta(concentration, concentration + 1).rsample()
    counts = Poisson(concentration.detach()).sample()
    (x.sum() + y.sum()).backward()
    return x.detach() + y.detach() + counts


def _run(step, concentration, calls=5):
    sg.manual_seed(0)
    concentration.grad = None
    outs = [step(concentration).numpy() for _ in range(calls)]
    return outs, concentration.grad.numpy()


def test_jitted_draws_equal_eager_draws_and_gradients_call_by_call():
    concentration = sg.tensor([0.5, 1.5, 9.0], dtype=sg.float64, requires_grad=True)
    eager, eager_grad = _run(_step, concentration)
    jitted, jitted_grad = _run(sg.jit(_step), concentration)
    assert len({o.tobytes() for o in eager}) == len(eager)  # fresh draws on every call
    for e, j in zip(eager, jitted):
        np.testing.assert_array_equal(j, e)
    np.testing.assert_array_equal(jitted_grad, eager_grad)
