"""scratchgrad.distributions against torch.distributions: one table of distributions (how to
build each in both libraries, its parameters' domains, a value in its support), and from it
log_prob, cdf, icdf, entropy and the moments compared with PyTorch's, with the gradients of
every parameter (and of the value), over batch shapes that broadcast the parameters and a
sample dimension on the value, in float64 and float32; gradcheck of the same in float64;
expand; and kl_divergence over its table of pairs."""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.distributions as TD
from oracle import assert_close, check_outputs_and_gradients, leaves

import scratchgrad as sg
import scratchgrad.distributions as D

RNG = np.random.default_rng(0)
K = 4  # the categories of the categorical cases


def real(shape):
    return RNG.standard_normal(shape)


def positive(shape):
    return RNG.uniform(0.5, 2.0, shape)


def unit(shape):
    return RNG.uniform(0.05, 0.95, shape)


def above_two(shape):
    return RNG.uniform(2.5, 4.0, shape)


def vector(domain):
    """A domain of K-vectors: the shape given is the batch shape."""
    return lambda shape: domain((*shape, K))


@dataclass
class Case:
    build: Callable  # (the distributions module, *parameters) -> a distribution
    domains: tuple  # one per parameter: shape -> an array
    value: Callable  # (shape, the parameter arrays broadcast to it) -> an array in the support
    methods: tuple  # compared with their gradients
    constant: tuple = ()  # compared without gradients (mode, NaN means)
    vector: bool = False  # the last dimension of the parameters is the event's


def anywhere(shape, params):
    return real(shape)


def above_zero(shape, params):
    return positive(shape)


def within(shape, params):
    low, high = params
    return low + RNG.uniform(0.1, 0.9, shape) * (high - low)


def above_scale(shape, params):
    return params[0] + positive(shape)


def in_unit(shape, params):
    return unit(shape)


def in_open_interval(shape, params):
    return RNG.uniform(-0.95, 0.95, shape)


def counts(upper):
    return lambda shape, params: RNG.integers(0, upper + 1, shape).astype(np.float64)


def simplex(shape, params):
    """Points of the simplex of the last dimension's size."""
    return RNG.dirichlet(np.ones(shape[-1]), shape[:-1])


def multinomial_counts(shape, params):
    return RNG.multinomial(5, np.ones(K) / K, shape[:-1]).astype(np.float64)


def bits(shape, params):
    return RNG.integers(0, 2, shape).astype(np.float64)


def indices(shape, params):
    return RNG.integers(0, K, shape)


def one_hots(shape, params):
    return np.eye(K)[RNG.integers(0, K, shape)]


MOMENTS = ("entropy", "mean", "variance", "stddev")
CONTINUOUS = ("log_prob", "cdf", "icdf", *MOMENTS)
NO_CDF = ("log_prob", *MOMENTS)

CASES = {
    "Normal": Case(
        lambda m, a, b: m.Normal(a, b), (real, positive), anywhere, CONTINUOUS, ("mode",)
    ),
    "Laplace": Case(
        lambda m, a, b: m.Laplace(a, b), (real, positive), anywhere, CONTINUOUS, ("mode",)
    ),
    "Exponential": Case(
        lambda m, a: m.Exponential(a), (positive,), above_zero, CONTINUOUS, ("mode",)
    ),
    # high is low plus a positive width: its leaf is the width's sum, built in both libraries
    "Uniform": Case(
        lambda m, low, width: m.Uniform(low, low + width),
        (real, positive),
        lambda shape, params: within(shape, (params[0], params[0] + params[1])),
        CONTINUOUS,
        ("mode",),  # NaN
    ),
    "Bernoulli(probs)": Case(
        lambda m, p: m.Bernoulli(probs=p), (unit,), bits, ("log_prob", *MOMENTS), ("mode",)
    ),
    "Bernoulli(logits)": Case(
        lambda m, x: m.Bernoulli(logits=x), (real,), bits, ("log_prob", *MOMENTS), ("mode",)
    ),
    "Categorical(probs)": Case(
        lambda m, p: m.Categorical(probs=p),
        (vector(positive),),
        indices,
        ("log_prob", "entropy", "probs", "logits"),
        ("mode", "mean", "variance"),
    ),
    "Categorical(logits)": Case(
        lambda m, x: m.Categorical(logits=x),
        (vector(real),),
        indices,
        ("log_prob", "entropy", "probs", "logits"),
        ("mode", "mean", "variance"),
    ),
    "OneHotCategorical": Case(
        lambda m, x: m.OneHotCategorical(logits=x),
        (vector(real),),
        one_hots,
        ("log_prob", "entropy", "probs", "logits", "mean", "variance"),
        ("mode",),
    ),
    "Independent(Normal)": Case(
        lambda m, a, b: m.Independent(m.Normal(a, b), 1),
        (real, positive),
        anywhere,
        ("log_prob", *MOMENTS),
        ("mode",),
    ),
    "Independent(Bernoulli)": Case(
        lambda m, x: m.Independent(m.Bernoulli(logits=x), 2),
        (real,),
        bits,
        ("log_prob", "entropy", "mean", "variance"),
        ("mode",),
    ),
    # ---- the second batch: transformed distributions and the gamma family ----
    "LogNormal": Case(
        lambda m, a, b: m.LogNormal(a, b), (real, positive), above_zero, CONTINUOUS, ("mode",)
    ),
    "Gumbel": Case(
        lambda m, a, b: m.Gumbel(a, b), (real, positive), anywhere, CONTINUOUS, ("mode",)
    ),
    "HalfNormal": Case(
        lambda m, s: m.HalfNormal(s), (positive,), above_zero, CONTINUOUS, ("mode",)
    ),
    "HalfCauchy": Case(
        lambda m, s: m.HalfCauchy(s),
        (positive,),
        above_zero,
        ("log_prob", "cdf", "icdf", "entropy"),
        ("mode", "mean", "variance"),  # inf
    ),
    "Cauchy": Case(
        lambda m, a, b: m.Cauchy(a, b),
        (real, positive),
        anywhere,
        ("log_prob", "cdf", "icdf", "entropy", "mode"),
        ("mean", "variance"),  # NaN, inf
    ),
    "Weibull": Case(
        lambda m, s, k: m.Weibull(s, k), (positive, positive), above_zero, CONTINUOUS, ("mode",)
    ),
    "Pareto": Case(
        lambda m, s, a: m.Pareto(s, a), (positive, above_two), above_scale, CONTINUOUS, ("mode",)
    ),
    "Gamma": Case(
        lambda m, c, r: m.Gamma(c, r), (positive, positive), above_zero, NO_CDF, ("mode",)
    ),
    "Chi2": Case(lambda m, df: m.Chi2(df), (above_two,), above_zero, NO_CDF, ("mode",)),
    "Beta": Case(lambda m, a, b: m.Beta(a, b), (above_two, positive), in_unit, NO_CDF, ("mode",)),
    "Dirichlet": Case(
        lambda m, c: m.Dirichlet(c), (vector(positive),), simplex, NO_CDF, ("mode",), vector=True
    ),
    "StudentT": Case(
        lambda m, df, a, b: m.StudentT(df, a, b),
        (above_two, real, positive),
        anywhere,
        NO_CDF,
        ("mode",),
    ),
    "VonMises": Case(
        lambda m, a, k: m.VonMises(a, k),
        (real, positive),
        anywhere,
        ("log_prob", "mean", "variance"),
        ("mode",),
    ),
    "Poisson": Case(
        lambda m, r: m.Poisson(r),
        (positive,),
        counts(6),
        ("log_prob", "mean", "variance"),
        ("mode",),
    ),
    "Geometric(probs)": Case(
        lambda m, p: m.Geometric(probs=p), (unit,), counts(6), ("log_prob", *MOMENTS), ("mode",)
    ),
    "Geometric(logits)": Case(
        lambda m, x: m.Geometric(logits=x), (real,), counts(6), ("log_prob", *MOMENTS), ("mode",)
    ),
    "Binomial(probs)": Case(
        lambda m, p: m.Binomial(5, probs=p), (unit,), counts(5), ("log_prob", *MOMENTS), ("mode",)
    ),
    "Binomial(logits)": Case(
        lambda m, x: m.Binomial(5, logits=x), (real,), counts(5), ("log_prob", *MOMENTS), ("mode",)
    ),
    "Multinomial": Case(
        lambda m, x: m.Multinomial(5, logits=x),
        (vector(real),),
        multinomial_counts,
        ("log_prob", *MOMENTS, "probs", "logits"),
        vector=True,
    ),
    "Tanh(Normal)": Case(
        lambda m, a, b: m.TransformedDistribution(m.Normal(a, b), [m.TanhTransform()]),
        (real, positive),
        in_open_interval,
        ("log_prob", "cdf", "icdf"),
    ),
    "Affine(Exp(Normal))": Case(
        lambda m, a, b: m.TransformedDistribution(
            m.Normal(a, b), [m.ExpTransform(), m.AffineTransform(1.0, -2.0)]
        ),
        (real, positive),
        lambda shape, params: 1.0 - positive(shape),
        ("log_prob", "cdf", "icdf"),  # a decreasing map: the CDF flipped
    ),
    "Sigmoid(Normal)": Case(
        lambda m, a, b: m.TransformedDistribution(m.Normal(a, b), m.SigmoidTransform()),
        (real, positive),
        in_unit,
        ("log_prob", "cdf", "icdf"),
    ),
    "Power(Exponential)": Case(
        lambda m, r, k: m.TransformedDistribution(m.Exponential(r), m.PowerTransform(k)),
        (positive, positive),
        above_zero,
        ("log_prob", "cdf", "icdf"),
    ),
    "LogisticNormal": Case(
        lambda m, a, b: m.LogisticNormal(a, b),
        (vector(real), vector(positive)),
        simplex,
        ("log_prob",),
        vector=True,
    ),
}

# the parameters' shapes (broadcast together), one tuple per shape family
SHAPES = {
    1: [(), (3,), (2, 3)],
    2: [((), ()), ((3,), (1,)), ((2, 1), (3,)), ((4,), ())],
    3: [((), (), ()), ((3,), (1,), ()), ((2, 1), (3,), (1,))],
}


def shape_families(name: str) -> list:
    n = len(CASES[name].domains)
    families = [s if n > 1 else (s,) for s in SHAPES[n]]
    if name.startswith("Independent"):  # enough batch dimensions to reinterpret
        families = [tuple((2, 3) for _ in range(n))]
    return families


CASE_SHAPES = [(name, shapes) for name in CASES for shapes in shape_families(name)]


def _call(d, method: str, value, q):
    if method in ("log_prob", "cdf"):
        return getattr(d, method)(value)
    if method == "icdf":
        return d.icdf(q)
    if method == "entropy":
        return d.entropy()
    return getattr(d, method)


def _case_inputs(name: str, shapes: tuple, dtype: str):
    """The parameter leaves, a value's leaf (a sample dimension before the batch) and the
    icdf's probabilities, in both libraries."""
    case = CASES[name]
    arrays = [domain(shape) for domain, shape in zip(case.domains, shapes)]
    batch = np.broadcast_shapes(*(a.shape for a in arrays))
    batch = batch[:-1] if "Categorical" in name else batch  # without the categories
    if case.vector:  # one more value dimension beside the parameters' last
        batch = (*batch[:-1], batch[-1] + 1) if name == "LogisticNormal" else batch
    value = case.value((2, *batch), arrays)
    q = RNG.uniform(0.05, 0.95, (2, *batch))
    return [leaves(a, dtype) for a in arrays], leaves(value, dtype), leaves(q, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "shapes"), CASE_SHAPES, ids=str)
def test_values_and_gradients_are_pytorchs(name, shapes, dtype):
    case = CASES[name]
    params, value, q = _case_inputs(name, shapes, dtype)
    ours = case.build(D, *(x for x, _ in params))
    theirs = case.build(TD, *(t for _, t in params))
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.event_shape == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    outs = [_call(ours, m, value[0], q[0]) for m in case.methods]
    expected = [_call(theirs, m, value[1], q[1]) for m in case.methods]
    check_outputs_and_gradients(outs, expected, [*params, value, q], dtype, name)
    outs = [_call(ours, m, value[0], q[0]) for m in case.constant]
    expected = [_call(theirs, m, value[1], q[1]) for m in case.constant]
    check_outputs_and_gradients(outs, expected, [], dtype, f"{name} constants", grad=False)


@pytest.mark.parametrize("name", CASES)
def test_gradcheck(name):
    """Finite differences of every compared method at once, in float64 (of the value too,
    where the support is continuous)."""
    case = CASES[name]
    params, value, q = _case_inputs(name, shape_families(name)[-1], "float64")
    params = [x for x, _ in params]
    support = case.build(D, *params).support
    # values perturbed off the simplex would leave the support
    value = value[0].requires_grad_(
        not support.is_discrete and support is not D.constraints.simplex
    )

    def outputs(*xs):
        *ps, v, probabilities = xs
        d = case.build(D, *ps)
        return sg.cat([_call(d, m, v, probabilities).reshape(-1) for m in case.methods])

    assert sg.autograd.gradcheck(outputs, [*params, value, q[0]])


def test_numbers_as_parameters_make_default_dtype_tensors_and_an_empty_batch():
    for lib, m in ((sg, D), (torch, TD)):
        d = m.Normal(0.5, 2.0)
        assert tuple(d.batch_shape) == () and d.loc.dtype == lib.float32
        # a number beside a tensor takes the tensor's dtype, and its shape
        d = m.Laplace(lib.zeros(3, dtype=lib.float64), 1.0)
        assert tuple(d.scale.shape) == (3,) and d.scale.dtype == lib.float64
    value = np.linspace(-2, 2, 5)
    for build in (lambda m: m.Normal(0.5, 2.0), lambda m: m.Bernoulli(0.3)):
        v = (value > 0).astype(np.float32) if "Bern" in str(build(TD)) else value
        assert_close(build(D).log_prob(sg.tensor(v)), build(TD).log_prob(torch.tensor(v)))


EXPANDS = {
    "Normal": (lambda m, a, b: m.Normal(a, b), [real((1, 3)), positive((3,))], (4, 3), anywhere),
    "Bernoulli": (lambda m, x: m.Bernoulli(logits=x), [real((3, 1))], (2, 3, 5), bits),
    "Categorical": (lambda m, p: m.Categorical(p), [positive((1, K))], (5,), indices),
    "OneHotCategorical": (lambda m, x: m.OneHotCategorical(logits=x), [real((K,))], (3,), one_hots),
    "Independent": (
        lambda m, a, b: m.Independent(m.Normal(a, b), 1),
        [real((1, 3)), positive((1, 3))],
        (4,),
        lambda shape, params: real((*shape, 3)),
    ),
}


@pytest.mark.parametrize("name", EXPANDS)
def test_expand(name):
    build, arrays, batch, value = EXPANDS[name]
    params = [leaves(a) for a in arrays]
    ours = build(D, *(x for x, _ in params)).expand(batch)
    theirs = build(TD, *(t for _, t in params)).expand(batch)
    assert type(ours) is type(ours.expand(batch)) and ours.batch_shape == batch
    assert ours.event_shape == tuple(theirs.event_shape)
    v = leaves(value((2, *batch), arrays))
    outs = [ours.log_prob(v[0]), ours.entropy()]
    expected = [theirs.log_prob(v[1]), theirs.entropy()]
    check_outputs_and_gradients(outs, expected, [*params, v], what=name)
    assert tuple(ours.sample((2,)).shape) == tuple(theirs.sample((2,)).shape)


def spd(batch, n=3):
    """Symmetric positive-definite matrices: A A^T + I."""
    a = RNG.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + np.eye(n)


def lower_cholesky(batch, n=3):
    return np.linalg.cholesky(spd(batch, n))


MVN_MATRICES = {"covariance_matrix": spd, "precision_matrix": spd, "scale_tril": lower_cholesky}
# (loc's shape, the matrix's batch shape): broadcast both ways
MVN_SHAPES = [((3,), ()), ((2, 3), ()), ((3,), (2,)), ((4, 1, 3), (2,))]
MVN_METHODS = (
    "log_prob",
    "entropy",
    "mean",
    "variance",
    "stddev",
    "covariance_matrix",
    "precision_matrix",
    "scale_tril",
)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("loc_shape", "batch"), MVN_SHAPES, ids=str)
@pytest.mark.parametrize("given", MVN_MATRICES)
def test_multivariate_normal_is_pytorchs(given, loc_shape, batch, dtype):
    loc, matrix = leaves(real(loc_shape), dtype), leaves(MVN_MATRICES[given](batch), dtype)
    ours = D.MultivariateNormal(loc[0], **{given: matrix[0]})
    theirs = TD.MultivariateNormal(loc[1], **{given: matrix[1]})
    assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == (3,)
    value = leaves(real((2, *theirs.batch_shape, 3)), dtype)  # a sample dimension in front
    outs = [_call(ours, m, value[0], None) for m in MVN_METHODS]
    expected = [_call(theirs, m, value[1], None) for m in MVN_METHODS]
    check_outputs_and_gradients(outs, expected, [loc, matrix, value], dtype, given)
    expanded = ours.expand((5, *ours.batch_shape)).log_prob(value[0][:1])
    assert_close(expanded, theirs.expand((5, *theirs.batch_shape)).log_prob(value[1][:1]), dtype)


@pytest.mark.parametrize("given", MVN_MATRICES)
def test_multivariate_normal_gradcheck(given):
    loc = sg.tensor(real((2, 3)), requires_grad=True)
    matrix = sg.tensor(MVN_MATRICES[given](()), requires_grad=True)
    value = sg.tensor(real((2, 3)), requires_grad=True)

    def outputs(loc, matrix, value):
        # perturbations kept symmetric (lower triangular): the constraints hold
        matrix = matrix.tril() if given == "scale_tril" else (matrix + matrix.mT) / 2
        d = D.MultivariateNormal(loc, **{given: matrix})
        return sg.cat([d.log_prob(value), d.entropy().reshape(-1), d.variance.reshape(-1)])

    assert sg.autograd.gradcheck(outputs, [loc, matrix, value])


COVARIANCE = [[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]
FLOAT32_DISTRIBUTIONS = {  # the distribution, its parameters, the values' shape
    "Normal": (lambda m, loc: m.Normal(loc, 1.0), [[0.3, -0.5]], (4, 2)),
    "Gamma": (lambda m, c: m.Gamma(c, 3.0), [[0.7, 1.8]], (4, 2)),
    "Chi2": (lambda m, df: m.Chi2(df), [[0.9, 2.5]], (4, 2)),
    "HalfNormal": (lambda m, scale: m.HalfNormal(scale), [[0.9, 2.5]], (4, 2)),
    "HalfCauchy": (lambda m, scale: m.HalfCauchy(scale), [[0.9, 2.5]], (4, 2)),
    "MultivariateNormal": (
        lambda m, loc, cov: m.MultivariateNormal(loc, cov),
        [[0.1, -0.2, 0.3], COVARIANCE],
        (4, 3),
    ),
}


@pytest.mark.parametrize("name", FLOAT32_DISTRIBUTIONS)
def test_float32_log_prob_of_float64_values_has_pytorchs_dtype(name):
    # values straight from NumPy are float64: PyTorch's Normal and HalfNormal promote, its
    # Gamma, HalfCauchy and MultivariateNormal keep their own float32
    build, params, shape = FLOAT32_DISTRIBUTIONS[name]
    value = np.random.default_rng(1).uniform(0.1, 2.0, shape)
    ours = build(D, *(sg.tensor(p, dtype=sg.float32) for p in params))
    theirs = build(TD, *(torch.tensor(p, dtype=torch.float32) for p in params))
    ours, theirs = ours.log_prob(sg.tensor(value)), theirs.log_prob(torch.tensor(value))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert_close(ours, theirs, "float32")


def test_gamma_log_prob_takes_a_number_as_pytorch():
    assert_close(D.Gamma(2.0, 3.0).log_prob(0.5), TD.Gamma(2.0, 3.0).log_prob(0.5), "float32")


def test_multivariate_normal_misuse_raises_as_pytorch():
    for m, lib in ((TD, torch), (D, sg)):
        eye = lib.eye(2, dtype=lib.float64)
        with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision"):
            m.MultivariateNormal(lib.zeros(2, dtype=lib.float64), eye, scale_tril=eye)
        with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
            m.MultivariateNormal(lib.tensor(0.0, dtype=lib.float64), eye)
        with pytest.raises(ValueError, match=r"covariance_matrix .* PositiveDefinite\(\)"):
            m.MultivariateNormal(lib.zeros(2, dtype=lib.float64), -eye)
        with pytest.raises(ValueError, match=r"scale_tril .* LowerCholesky\(\)"):
            m.MultivariateNormal(lib.zeros(2, dtype=lib.float64), scale_tril=eye.flip(0))


@pytest.mark.parametrize("expand", [True, False])
def test_enumerate_support_and_perplexity(expand):
    builds = [
        lambda m, t: m.Categorical(logits=t(real((2, 3, K)))),
        lambda m, t: m.Bernoulli(t(unit((2, 3)))),
        lambda m, t: m.OneHotCategorical(t(positive((3, K)))),
        lambda m, t: m.Independent(m.Bernoulli(t(unit((2, 3)))), 0),
    ]
    for build in builds:
        state = RNG.bit_generator.state
        ours = build(D, sg.tensor)
        RNG.bit_generator.state = state  # the same parameters
        theirs = build(TD, torch.tensor)
        assert ours.has_enumerate_support == theirs.has_enumerate_support
        expected = theirs.enumerate_support(expand)
        check_outputs_and_gradients(ours.enumerate_support(expand), expected, [], grad=False)
        assert_close(ours.perplexity(), theirs.perplexity())
