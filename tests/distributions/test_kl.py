"""kl_divergence against PyTorch's for every pair registered, with the gradients of both
distributions' parameters, over broadcasting batch shapes; its infinities and zeros at the
edges of the supports; register_kl's lookup by subclass; NotImplementedError otherwise."""

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


@pytest.mark.parametrize("name", EDGES)
def test_kl_infinities_and_zeros_at_the_edges_are_pytorchs(name):
    build, p_arrays, q_arrays = EDGES[name]
    _compare(build, p_arrays, q_arrays, "float64", name)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Bernoulli(logits)", "Categorical"])
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
