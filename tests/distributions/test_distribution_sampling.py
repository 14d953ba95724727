"""Samples: their numbers cannot be PyTorch's, so their statistics are checked on large
seeded samples (means, variances and frequencies within a few standard errors of PyTorch's
moments), and so are their shapes and dtypes (PyTorch's), that scratchgrad.manual_seed
reproduces them, that ``sample`` carries no gradient, and that ``rsample``'s gradient is the
reparameterization's: for a draw x = g(theta, u), dx/dtheta = -(dF/dtheta) / p(x) with F the
CDF at x, computed by PyTorch's autograd on its own cdf."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import scratchgrad as sg
import scratchgrad.distributions as D

N = 200_000
Z = 5  # standard errors allowed

# name -> build(module, t): batched parameters, made by t (a list -> a tensor)
BUILDS = {
    "Normal": lambda m, t: m.Normal(t([0.0, -2.0, 3.0]), t([1.0, 0.5, 2.0])),
    "Laplace": lambda m, t: m.Laplace(t([0.0, 1.0]), t([1.0, 3.0])),
    "Exponential": lambda m, t: m.Exponential(t([0.5, 1.0, 4.0])),
    "Uniform": lambda m, t: m.Uniform(t([-1.0, 2.0]), t([1.0, 2.5])),
    "Bernoulli": lambda m, t: m.Bernoulli(t([0.0, 0.1, 0.5, 0.9, 1.0])),
    "Bernoulli(logits)": lambda m, t: m.Bernoulli(logits=t([-2.0, 0.0, 3.0])),
    # zero probabilities first, inside and last: never drawn
    "OneHotCategorical": lambda m, t: m.OneHotCategorical(
        t([[0.0, 0.2, 0.0, 0.5, 0.3, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    ),
    "Independent": lambda m, t: m.Independent(
        m.Normal(t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [0.5, 0.1]])), 1
    ),
}
RSAMPLED = ["Normal", "Laplace", "Exponential", "Uniform"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", BUILDS)
def test_means_and_variances_are_within_a_few_standard_errors(name, dtype):
    ours = BUILDS[name](D, lambda v: sg.tensor(v, dtype=dtype))
    theirs = BUILDS[name](TD, lambda v: torch.tensor(v, dtype=torch.float64))
    sg.manual_seed(0)
    x = ours.sample((N,)).numpy().astype(np.float64)
    mean, var = theirs.mean.numpy(), theirs.variance.numpy()
    assert np.all(np.abs(x.mean(0) - mean) <= Z * np.sqrt(var / N) + 1e-12), name
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    assert np.all(np.abs(x.var(0) - var) <= Z * np.sqrt((m4 - var**2) / N) + 1e-12), name


def test_categorical_frequencies_and_zero_probabilities():
    probs = np.array([[0.0, 0.2, 0.0, 0.5, 0.3, 0.0], [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]])
    for logits in (False, True):
        with np.errstate(divide="ignore"):  # logits of -inf: probabilities of zero
            arg = sg.tensor(np.log(probs) if logits else probs * 7)  # unnormalized probs
        d = D.Categorical(logits=arg) if logits else D.Categorical(arg)
        sg.manual_seed(1)
        x = d.sample((N,)).numpy()
        assert x.shape == (N, 2) and x.dtype == np.int64
        freq = np.stack([(x == k).mean(0) for k in range(6)], -1)
        assert np.all(freq[probs == 0] == 0)
        assert np.all(np.abs(freq - probs) <= Z * np.sqrt(probs * (1 - probs) / N))


@pytest.mark.parametrize("name", BUILDS)
def test_shapes_dtypes_and_no_gradient_are_pytorchs(name):
    ours, theirs = BUILDS[name](D, sg.tensor), BUILDS[name](TD, torch.tensor)
    for shape in [(), (4,), (2, 3)]:
        x, t = ours.sample(shape), theirs.sample(shape)
        assert x.shape == tuple(t.shape) and str(x.dtype) == str(t.dtype).removeprefix("torch.")
        assert not x.requires_grad
    if name in RSAMPLED:
        float32 = BUILDS[name](D, lambda v: sg.tensor(v, dtype=sg.float32, requires_grad=True))
        assert float32.sample().dtype == sg.float32
        assert float32.rsample((2,)).dtype == sg.float32
        assert float32.rsample((2,)).requires_grad and not float32.sample((2,)).requires_grad


@pytest.mark.parametrize("name", BUILDS)
def test_manual_seed_reproduces_the_samples(name):
    d = BUILDS[name](D, sg.tensor)
    draws = []
    for seed in (3, 3, 4):
        sg.manual_seed(seed)
        draws.append(d.sample((1000,)).numpy())
    assert np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])


@pytest.mark.parametrize("name", RSAMPLED)
def test_rsample_gradients_are_the_reparameterizations(name):
    params = [sg.tensor(np.asarray(p), requires_grad=True) for p in _params(name)]
    d = _build(name, D, params)
    sg.manual_seed(0)
    x = d.rsample((50,))
    w = np.random.default_rng(0).standard_normal(x.shape)
    (x * sg.tensor(w)).sum().backward()
    # the same gradient by implicit differentiation of F(x; theta) = u (u fixed)
    theirs = [torch.tensor(np.asarray(p), requires_grad=True) for p in _params(name)]
    t = _build(name, TD, theirs)
    xt = torch.tensor(x.detach().numpy())
    density = t.log_prob(xt).exp().detach()
    (-(torch.tensor(w) / density) * t.cdf(xt)).sum().backward()
    for ours, expected in zip(params, theirs):
        np.testing.assert_allclose(ours.grad.numpy(), expected.grad.numpy(), rtol=1e-8)


def _params(name):
    return {
        "Normal": ([0.5, -1.0], [1.5, 0.2]),
        "Laplace": ([0.5, -1.0], [1.5, 0.2]),
        "Exponential": ([0.5, 3.0],),
        "Uniform": ([0.5, -1.0], [1.5, 0.2]),
    }[name]


def _build(name, m, params):
    return getattr(m, name)(*params)


def test_multivariate_normal_samples_and_their_gradients():
    """Means and covariances within a few standard errors; rsample is loc + L eps with eps
    the draws of randn (so its gradients are PyTorch's for the same eps)."""
    loc = np.array([[1.0, -1.0, 0.0], [0.0, 2.0, 5.0]])
    a = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [-0.3, 0.8, 0.5]])
    cov = a @ a.T
    d = D.MultivariateNormal(sg.tensor(loc), sg.tensor(cov))
    sg.manual_seed(0)
    x = d.sample((N,)).numpy()
    assert x.shape == (N, 2, 3) and not d.sample().requires_grad
    se = np.sqrt(np.diag(cov) / N)
    assert np.all(np.abs(x.mean(0) - loc) <= Z * se)
    for b in range(2):
        c = x[:, b] - x[:, b].mean(0)
        emp = c.T @ c / N
        se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / N)  # Gaussian entries
        assert np.all(np.abs(emp - cov) <= Z * se)
    grads = []
    for lib, m in ((sg, D), (torch, TD)):
        loc_, L = lib.tensor(loc, requires_grad=True), lib.tensor(a, requires_grad=True)
        sg.manual_seed(1)
        if lib is sg:
            z = m.MultivariateNormal(loc_, scale_tril=L).rsample((4,))
        else:
            eps = torch.tensor(sg.randn(4, 2, 3, dtype=sg.float64).numpy())
            z = loc_ + (L @ eps.unsqueeze(-1)).squeeze(-1)
        (z * lib.tensor(np.arange(24.0).reshape(4, 2, 3))).sum().backward()
        grads.append((z.detach().numpy(), loc_.grad.numpy(), L.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
