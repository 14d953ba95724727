"""kl_divergence against PyTorch's for every pair registered, with the gradients of both
distributions' parameters, over broadcasting batch shapes; its infinities and zeros at the
edges of the supports; register_kl's lookup by subclass; NotImplementedError otherwise."""

import math

import numpy as np
import pytest
import torch
import torch.distributions as TD
from oracle import check_outputs_and_gradients, leaves

import scratchgrad as sg
import scratchgrad.distributions as D

RNG = np.random.default_rng(1)
K = 3


def real(*shape):
    return RNG.standard_normal(shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def unit(*shape):
    return RNG.uniform(0.05, 0.95, shape)


def spd(*batch, n=3):
    a = RNG.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + np.eye(n)


# name -> (build(module, *parameters), p's parameters, q's parameters), q's batch shape
# broadcasting against p's
PAIRS = {
    "Normal": (
        lambda m, a, b: m.Normal(a, b),
        [real(2, 3), positive(3)],
        [real(3), positive(2, 1)],
    ),
    "Laplace": (lambda m, a, b: m.Laplace(a, b), [real(4), positive(4)], [real(4), positive(4)]),
    "Exponential": (lambda m, r: m.Exponential(r), [positive(2, 3)], [positive(3)]),
    "Uniform": (
        lambda m, low, width: m.Uniform(low, low + width),
        [real(4) * 0.1, positive(4) * 0.1],  # p inside q: finite
        [real(4) * 0.1 - 1, positive(4) + 2],
    ),
    # PyTorch's Bernoulli pair needs p and q of one shape (see the test of broadcasting below)
    "Bernoulli(probs)": (lambda m, p: m.Bernoulli(probs=p), [unit(2, 3)], [unit(2, 3)]),
    "Bernoulli(logits)": (lambda m, x: m.Bernoulli(logits=x), [real(3)], [real(3)]),
    "Categorical": (lambda m, p: m.Categorical(probs=p), [positive(2, K)], [positive(K)]),
    "Categorical(logits)": (lambda m, x: m.Categorical(logits=x), [real(K)], [real(2, K)]),
    "OneHotCategorical": (lambda m, x: m.OneHotCategorical(logits=x), [real(2, K)], [real(2, K)]),
    "Independent": (
        lambda m, a, b: m.Independent(m.Normal(a, b), 1),
        [real(2, 3), positive(2, 3)],
        [real(3), positive(3)],
    ),
    "MultivariateNormal": (
        lambda m, loc, cov: m.MultivariateNormal(loc, cov),
        [real(2, 3), spd()],
        [real(3), spd(2)],
    ),
    "MultivariateNormal(scale_tril)": (
        lambda m, loc, L: m.MultivariateNormal(loc, scale_tril=L),
        [real(3), np.linalg.cholesky(spd(2))],
        [real(4, 1, 3), np.linalg.cholesky(spd())],
    ),
    # ---- the second batch ----
    "Gamma": (
        lambda m, c, r: m.Gamma(c, r),
        [positive(2, 3), positive(3)],
        [positive(3), positive(2, 1)],
    ),
    "Beta": (
        lambda m, a, b: m.Beta(a, b),
        [positive(2, 3), positive(3)],
        [positive(3), positive(3)],
    ),
    "Dirichlet": (lambda m, c: m.Dirichlet(c), [positive(2, K)], [positive(K)]),
    "Poisson": (lambda m, r: m.Poisson(r), [positive(2, 3)], [positive(3)]),
    "Geometric": (lambda m, p: m.Geometric(probs=p), [unit(4)], [unit(4)]),
    "Geometric(logits)": (lambda m, x: m.Geometric(logits=x), [real(2, 3)], [real(3)]),
    "Binomial": (lambda m, p: m.Binomial(4, probs=p), [unit(2, 3)], [unit(3)]),
    "Gumbel": (lambda m, a, b: m.Gumbel(a, b), [real(2, 3), positive(3)], [real(3), positive(3)]),
    "HalfNormal": (lambda m, s: m.HalfNormal(s), [positive(2, 3)], [positive(3)]),
    "Pareto": (
        lambda m, s, a: m.Pareto(s, a),
        [positive(4) + 2, positive(4)],
        [positive(4), positive(4)],
    ),
    "Cauchy": (lambda m, a, b: m.Cauchy(a, b), [real(2, 3), positive(3)], [real(3), positive(3)]),
    "LogNormal": (
        lambda m, a, b: m.LogNormal(a, b),
        [real(3), positive(3)],
        [real(2, 3), positive(3)],
    ),
}

# the edges: probabilities of 0 and 1, a Uniform not inside the other
EDGES = {
    "Bernoulli": (
        lambda m, p: m.Bernoulli(probs=p),
        [np.array([0.0, 1.0, 0.3, 0.0, 1.0, 0.5])],
        [np.array([0.5, 0.5, 0.0, 0.0, 1.0, 1.0])],
    ),
    "Categorical": (
        lambda m, p: m.Categorical(probs=p),
        [np.array([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]])],
        [np.array([[0.0, 0.2, 0.8], [0.0, 0.5, 0.5]])],
    ),
    "Uniform": (
        lambda m, low, high: m.Uniform(low, high),
        [np.array([0.0, 0.0, -1.0]), np.array([1.0, 1.0, 2.0])],
        [np.array([0.5, -1.0, -1.0]), np.array([2.0, 0.5, 2.0])],
    ),
    # p's support not inside q's: infinite
    "Pareto": (
        lambda m, s, a: m.Pareto(s, a),
        [np.array([1.0, 2.0]), np.array([2.0, 2.0])],
        [np.array([1.5, 1.0]), np.array([1.0, 3.0])],
    ),
    "Binomial": (
        lambda m, n, p: m.Binomial(n, p),
        [np.array([5.0, 4.0]), np.array([0.3, 0.6])],
        [np.array([4.0, 4.0]), np.array([0.5, 0.5])],
    ),
}


def _compare(build, p_arrays, q_arrays, dtype, what):
    p_params = [leaves(a, dtype) for a in p_arrays]
    q_params = [leaves(a, dtype) for a in q_arrays]
    ours = D.kl_divergence(build(D, *(x for x, _ in p_params)), build(D, *(x for x, _ in q_params)))
    theirs = TD.kl_divergence(
        build(TD, *(t for _, t in p_params)), build(TD, *(t for _, t in q_params))
    )
    check_outputs_and_gradients(ours, theirs, [*p_params, *q_params], dtype, what)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", PAIRS)
def test_kl_is_pytorchs(name, dtype):
    _compare(*PAIRS[name], dtype, name)


def test_bernoulli_pairs_broadcast_where_pytorch_raises():
    """PyTorch's formula assigns into the broadcast result through p's and q's masks, which
    raises IndexError unless both have its shape; ours broadcasts, as the other pairs do, and
    equals PyTorch's on p expanded to q's shape."""
    p, q = unit(3), unit(2, 3)
    ours = D.kl_divergence(D.Bernoulli(sg.tensor(p)), D.Bernoulli(sg.tensor(q)))
    p_theirs = TD.Bernoulli(torch.tensor(p))
    with pytest.raises(IndexError):
        TD.kl_divergence(p_theirs, TD.Bernoulli(torch.tensor(q)))
    theirs = TD.kl_divergence(p_theirs.expand((2, 3)), TD.Bernoulli(torch.tensor(q)))
    check_outputs_and_gradients(ours, theirs, [], grad=False)


def test_bernoulli_pairs_broadcast_where_pytorchs_mask_picks_rows():
    """Where p's mask has the shape of the result's leading dims, PyTorch's pair raises
    nothing but indexes rows with it: KL(0.3 || 0.2) comes out negative and KL(0 || 0), which
    is 0, infinite. Ours equals PyTorch's on p expanded to q's shape."""
    p, q = [0.0, 0.3], [[0.5, 0.2], [0.0, 0.1]]
    ours = D.kl_divergence(D.Bernoulli(sg.tensor(p)), D.Bernoulli(sg.tensor(q)))
    p_theirs, q_theirs = TD.Bernoulli(torch.tensor(p)), TD.Bernoulli(torch.tensor(q))
    misplaced = TD.kl_divergence(p_theirs, q_theirs)
    assert misplaced[0, 1] < 0 and misplaced[1, 0] == math.inf
    theirs = TD.kl_divergence(p_theirs.expand((2, 2)), q_theirs)
    check_outputs_and_gradients(ours, theirs, [], grad=False)
    assert ours.tolist()[1][0] == 0.0


@pytest.mark.parametrize("name", EDGES)
def test_kl_infinities_and_zeros_at_the_edges_are_pytorchs(name):
    build, p_arrays, q_arrays = EDGES[name]
    _compare(build, p_arrays, q_arrays, "float64", name)


@pytest.mark.parametrize(
    "name",
    [
        "Normal",
        "Laplace",
        "Bernoulli(logits)",
        "Categorical",
        "Gamma",
        "Beta",
        "Dirichlet",
        "Gumbel",
    ],
)
def test_gradcheck(name):
    build, p_arrays, q_arrays = PAIRS[name]
    params = [sg.tensor(a, requires_grad=True) for a in (*p_arrays, *q_arrays)]

    def kl(*xs):
        n = len(p_arrays)
        return D.kl_divergence(build(D, *xs[:n]), build(D, *xs[n:]))

    assert sg.autograd.gradcheck(kl, params)


def test_an_unregistered_pair_raises_as_pytorch():
    for m in (D, TD):
        with pytest.raises(NotImplementedError, match="p type Normal and q type Categorical"):
            m.kl_divergence(
                m.Normal(0.0, 1.0), m.Categorical(logits=torch.zeros(2) if m is TD else sg.zeros(2))
            )
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(
            D.MultivariateNormal(sg.zeros(2), sg.eye(2)),
            D.MultivariateNormal(sg.zeros(3), sg.eye(3)),
        )
    with pytest.raises(NotImplementedError):  # Independent pairs of different ranks
        normal = D.Normal(sg.zeros(2, 2), 1.0)
        D.kl_divergence(D.Independent(normal, 1), D.Independent(normal, 2))


def test_register_kl_picks_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    x = sg.tensor([0.5])
    # a subclass finds its base classes' formula
    assert D.kl_divergence(MyNormal(x, 1.0), D.Normal(0.0, 1.0)).tolist() == [0.125]

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        return sg.zeros(1)

    assert D.kl_divergence(MyNormal(x, 1.0), D.Normal(0.0, 1.0)).tolist() == [0.0]
    assert D.kl_divergence(D.Normal(x, 1.0), D.Normal(0.0, 1.0)).tolist() == [0.125]
    with pytest.raises(TypeError, match="Distribution subclass"):
        D.register_kl(int, D.Normal)


def test_kl_pairs_pytorch_refuses_raise_as_pytorch():
    for m, lib in ((D, sg), (TD, torch)):
        n = lib.tensor([3.0, 5.0])
        with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
            m.kl_divergence(m.Binomial(n, lib.tensor(0.5)), m.Binomial(5, lib.tensor(0.5)))
        normal = m.Normal(lib.zeros(2), 1.0)
        tanh = m.TransformedDistribution(normal, m.TanhTransform())
        with pytest.raises(NotImplementedError):  # transforms not equal
            m.kl_divergence(tanh, m.TransformedDistribution(normal, m.ExpTransform()))
