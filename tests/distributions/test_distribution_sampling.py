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
# the second batch (heavy-tailed ones, with no moments, in QUANTILED only)
BUILDS.update(
    {
        "Gamma": lambda m, t: m.Gamma(t([0.3, 1.0, 7.5, 40.0]), t([1.0, 2.0, 0.5, 3.0])),
        "Chi2": lambda m, t: m.Chi2(t([1.0, 4.0])),
        "Beta": lambda m, t: m.Beta(t([0.5, 2.0, 9.0]), t([0.5, 5.0, 1.0])),
        "Dirichlet": lambda m, t: m.Dirichlet(t([[0.5, 1.0, 3.0], [10.0, 2.0, 0.2]])),
        "StudentT": lambda m, t: m.StudentT(t([5.0, 9.0]), t([1.0, -1.0]), t([2.0, 0.5])),
        "LogNormal": lambda m, t: m.LogNormal(t([0.0, 1.0]), t([0.25, 0.5])),
        "Gumbel": lambda m, t: m.Gumbel(t([0.0, 2.0]), t([1.0, 0.5])),
        "HalfNormal": lambda m, t: m.HalfNormal(t([1.0, 3.0])),
        "Weibull": lambda m, t: m.Weibull(t([1.0, 2.0]), t([0.8, 3.0])),
        "Pareto": lambda m, t: m.Pareto(t([1.0, 2.0]), t([5.0, 9.0])),
        "Poisson": lambda m, t: m.Poisson(t([0.0, 0.5, 4.0, 30.0])),
        "Geometric": lambda m, t: m.Geometric(t([0.1, 0.5, 1.0])),
        "Binomial": lambda m, t: m.Binomial(t([10.0, 3.0, 7.0]), t([0.3, 0.9, 0.0])),
        "Multinomial": lambda m, t: m.Multinomial(6, t([[0.2, 0.0, 0.8], [1.0, 1.0, 1.0]])),
    }
)
# quantiles checked instead of moments: F(x) < q for a fraction q of the samples
QUANTILED = {
    "Cauchy": lambda m, t: m.Cauchy(t([0.0, 3.0]), t([1.0, 0.1])),
    "HalfCauchy": lambda m, t: m.HalfCauchy(t([1.0, 5.0])),
    "LogNormal": BUILDS["LogNormal"],
    "Gumbel": BUILDS["Gumbel"],
    "Weibull": BUILDS["Weibull"],
    "Pareto": lambda m, t: m.Pareto(t([1.0, 2.0]), t([0.5, 3.0])),
    "Affine(Normal)": lambda m, t: m.TransformedDistribution(
        m.Normal(t([0.0, 1.0]), t([1.0, 0.5])), m.AffineTransform(1.0, t([2.0, -3.0]))
    ),
    "Sigmoid(Normal)": lambda m, t: m.TransformedDistribution(
        m.Normal(t([0.0, 1.0]), t([1.0, 0.5])), m.SigmoidTransform()
    ),
}
RSAMPLED = ["Normal", "Laplace", "Exponential", "Uniform", "Cauchy", "LogNormal", "Gumbel"]
RSAMPLED += ["HalfNormal", "HalfCauchy", "Weibull", "Pareto"]


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


@pytest.mark.parametrize("name", QUANTILED)
def test_quantiles_are_within_a_few_standard_errors(name):
    ours = QUANTILED[name](D, sg.tensor)
    theirs = QUANTILED[name](TD, lambda v: torch.tensor(v, dtype=torch.float64))
    sg.manual_seed(0)
    x = torch.tensor(ours.sample((N,)).numpy())
    for q in (0.1, 0.5, 0.9):
        below = (x <= theirs.icdf(torch.tensor(q, dtype=torch.float64))).double().mean(0)
        assert np.all(np.abs(below.numpy() - q) <= Z * np.sqrt(q * (1 - q) / N)), (name, q)


def test_von_mises_circular_moments():
    """E cos(x - loc) = 1 - the circular variance; E sin(x - loc) = 0; draws in [-pi, pi)."""
    loc, k = np.array([0.5, -3.0, 2.0]), np.array([0.1, 1.0, 20.0])
    d = D.VonMises(sg.tensor(loc), sg.tensor(k))
    sg.manual_seed(0)
    x = d.sample((N,)).numpy()
    assert x.min() >= -np.pi and x.max() < np.pi
    cos, sin = np.cos(x - loc), np.sin(x - loc)
    expected = 1 - TD.VonMises(torch.tensor(loc), torch.tensor(k)).variance.numpy()
    assert np.all(np.abs(cos.mean(0) - expected) <= Z * cos.std(0) / np.sqrt(N))
    assert np.all(np.abs(sin.mean(0)) <= Z * sin.std(0) / np.sqrt(N))


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
        assert (
            x.shape == tuple(t.shape) and str(x.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        )
        assert not x.requires_grad
    if name in RSAMPLED:
        float32 = BUILDS[name](D, lambda v: sg.tensor(v, dtype=sg.float32, requires_grad=True))
        assert float32.sample().dtype == sg.float32
        assert float32.rsample((2,)).dtype == sg.float32
        assert float32.rsample((2,)).requires_grad and not float32.sample((2,)).requires_grad


def test_sample_n_is_sample_with_pytorchs_future_warning():
    ours, theirs = BUILDS["Normal"](D, sg.tensor), BUILDS["Normal"](TD, torch.tensor)
    with pytest.warns(FutureWarning) as our_warning:
        x = ours.sample_n(4)
    with pytest.warns(FutureWarning) as their_warning:
        t = theirs.sample_n(4)
    assert str(our_warning[0].message) == str(their_warning[0].message)
    assert x.shape == tuple(t.shape) == (4, 3) and not x.requires_grad


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
        "Cauchy": ([0.5, -1.0], [1.5, 0.2]),
        "LogNormal": ([0.5, -1.0], [1.5, 0.2]),
        "Gumbel": ([0.5, -1.0], [1.5, 0.2]),
        "HalfNormal": ([1.5, 0.2],),
        "HalfCauchy": ([1.5, 0.2],),
        "Weibull": ([1.5, 0.2], [0.7, 3.0]),
        "Pareto": ([1.5, 0.2], [0.7, 3.0]),
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


def test_gamma_rsample_gradient_is_pytorchs_formula_and_the_implicit_derivative():
    """d sample / d concentration: PyTorch's ``_standard_gamma_grad`` at our draws (float64
    tight), and within its approximation's error (2e-3 relative) of finite differences of
    the exact inverse CDF (SciPy) with the draw's quantile held fixed."""
    import scipy.special

    concentration = np.repeat([0.3, 0.9, 2.0, 5.0, 12.0, 150.0], 200)
    rate = np.full(concentration.shape, 2.0)
    c, r = (sg.tensor(a, requires_grad=True) for a in (concentration, rate))
    sg.manual_seed(0)
    x = D.Gamma(c, r).rsample()
    w = np.random.default_rng(0).standard_normal(x.shape)
    (x * sg.tensor(w)).sum().backward()
    g = (x * r).detach().numpy()  # the standard gamma draws
    dg = torch._standard_gamma_grad(torch.tensor(concentration), torch.tensor(g)).numpy()
    np.testing.assert_allclose(c.grad.numpy(), w * dg / rate, rtol=1e-10)
    np.testing.assert_allclose(r.grad.numpy(), -w * g / rate**2, rtol=1e-10)
    u, h = scipy.special.gammainc(concentration, g), 1e-6 * concentration
    fd = scipy.special.gammaincinv(concentration + h, u) - scipy.special.gammaincinv(
        concentration - h, u
    )
    fd /= 2 * h
    inside = (u > 1e-10) & (u < 1 - 1e-10)  # away from the tails, where FD loses digits
    assert inside.mean() > 0.99
    np.testing.assert_allclose((dg)[inside], fd[inside], rtol=2e-3)


@pytest.mark.parametrize("name", ["Gamma", "Chi2", "Beta", "Dirichlet", "StudentT"])
def test_rsample_gradients_average_to_the_gradient_of_the_mean(name):
    """E[d x / d theta] = d E[x] / d theta for a reparameterized sample x: each of n samples
    gets parameters of its own (the rows of leaves of shape (n, ...)), so their gradients
    are per sample; their mean is within a few standard errors of the gradient of PyTorch's
    analytic mean (of a weighted sum over the last dimension: a Dirichlet's sums to 1)."""
    n = 50_000
    made = []

    def leaf(v):
        made.append(sg.tensor(np.broadcast_to(v, (n, *np.shape(v))).copy(), requires_grad=True))
        return made[-1]

    ours = BUILDS[name](D, leaf)
    sg.manual_seed(0)
    x = ours.rsample()
    w = np.arange(1.0, x.shape[-1] + 1)
    (x * sg.tensor(w)).sum().backward()
    params = []
    theirs = BUILDS[name](
        TD, lambda v: params.append(torch.tensor(v, requires_grad=True)) or params[-1]
    )
    (theirs.mean * torch.tensor(w)).sum().backward()
    for ours_leaf, expected in zip(made, params):
        grads = ours_leaf.grad.numpy()
        se = grads.std(0) / np.sqrt(n)
        # a parameter the mean does not depend on (StudentT's df and scale): zero
        target = 0.0 if expected.grad is None else expected.grad.numpy()
        assert np.all(np.abs(grads.mean(0) - target) <= Z * se + 1e-12), name
