"""Gamma.cdf (and Chi2's, InverseGamma's through it): the regularized incomplete gamma
function, against torch.distributions in float64, with gradients in value and rate."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import scratchgrad as sg
import scratchgrad.distributions as D


def test_gamma_cdf_and_its_gradients_are_torchs():
    rng = np.random.default_rng(0)
    c, r, v = rng.uniform(0.2, 8, 50), rng.uniform(0.3, 3, 50), rng.uniform(0.01, 10, 50)
    rate, value = sg.tensor(r, requires_grad=True), sg.tensor(v, requires_grad=True)
    t_rate, t_value = torch.tensor(r, requires_grad=True), torch.tensor(v, requires_grad=True)
    ours = D.Gamma(sg.tensor(c), rate).cdf(value)
    theirs = TD.Gamma(torch.tensor(c), t_rate).cdf(t_value)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(rate.grad.numpy(), t_rate.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(value.grad.numpy(), t_value.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    "make",
    [
        lambda m, t: m.Chi2(t([3.0, 0.7])),
        lambda m, t: m.InverseGamma(t([2.0, 0.5]), t([1.0, 3.0])),
    ],
)
def test_chi2_and_inverse_gamma_cdfs_are_torchs(make):
    ours = make(D, lambda x: sg.tensor(x, dtype=sg.float64)).cdf(
        sg.tensor([0.7, 2.5], dtype=sg.float64)
    )
    theirs = make(TD, lambda x: torch.tensor(x, dtype=torch.float64)).cdf(
        torch.tensor([0.7, 2.5], dtype=torch.float64)
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
