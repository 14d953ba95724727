"""Random combinations against torch.distributions: a family drawn from the table below, its
parameters of broadcasting shapes (0-d, empty, Python numbers among tensors), float32 or
float64, each entry inside its constraint, at its edge or beyond it, with validate_args
True, False or the default. Both libraries must raise alike (construction, log_prob at a value
outside the support...) and agree on the shapes, the support, the moments, log_prob, cdf,
icdf, entropy at values inside and outside the support (NaN and inf where PyTorch gives them),
and in float64 on the gradients with respect to the parameters; then sample shapes, expand,
Independent, transformed distributions of random chains of transforms and kl_divergence.
Random draws are never compared with PyTorch's. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run
more examples."""

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.kl as torch_kl
from hypothesis import assume, given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg
import scratchgrad.distributions as D

FUZZ = fuzz_settings(80)

# (rtol, atol) of values by dtype; float64 gradients are held to 1e-8 relative
TOLERANCE = {"float64": (1e-8, 1e-10), "float32": (2e-4, 1e-5)}
INF, NAN = math.inf, math.nan

# ---- parameter domains: entries inside, at the edge of and beyond each constraint --------------

# each domain lists valid entries (drawn most often) and the edges and invalid ones
DOMAINS = {
    "real": ([-1.5, -0.3, 0.0, 0.4, 2.0], [INF, -INF, NAN]),
    "positive": ([0.3, 0.8, 1.0, 2.5], [0.0, -1.0, INF]),
    "nonnegative": ([0.0, 0.5, 1.5, 3.0], [-0.5, INF]),
    "unit": ([0.2, 0.5, 0.7], [0.0, 1.0, -0.1, 1.3]),
    "count": ([0.0, 1.0, 3.0, 5.0], [-1.0, 2.5]),
    "finite": ([-1.5, -0.3, 0.0, 0.4, 2.0], []),
    # positive without 0: see the Gaussians' note below; and a triangular solve with a zero on
    # the diagonal raises (README, linalg: "Where PyTorch returns inf or NaN silently (a
    # triangular solve with a zero on the diagonal ...) scratchgrad raises")
    "diagonal": ([0.3, 0.8, 1.0, 2.5], [-1.0]),
}


@dataclass
class Family:
    build: Callable  # (distributions module, *parameters, validate_args) -> a distribution
    domains: tuple  # one domain name per parameter
    values: tuple  # values log_prob/cdf are tried at: inside and outside the support
    methods: tuple = ("log_prob", "cdf", "icdf", "entropy")
    zero_d: tuple = ()  # the parameters given as 0-d tensors only


REALS = (-3.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5, 4.0, INF, -INF)
COUNTS = (-1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 0.5, 7.0)
NO_CDF = ("log_prob", "entropy")

FAMILIES = {
    "Normal": Family(lambda m, a, b, v: m.Normal(a, b, v), ("real", "positive"), REALS),
    "Laplace": Family(lambda m, a, b, v: m.Laplace(a, b, v), ("real", "positive"), REALS),
    "Cauchy": Family(lambda m, a, b, v: m.Cauchy(a, b, v), ("real", "positive"), REALS),
    "Gumbel": Family(lambda m, a, b, v: m.Gumbel(a, b, v), ("real", "positive"), REALS),
    "LogNormal": Family(lambda m, a, b, v: m.LogNormal(a, b, v), ("real", "positive"), REALS),
    "HalfNormal": Family(lambda m, s, v: m.HalfNormal(s, v), ("positive",), REALS),
    "HalfCauchy": Family(lambda m, s, v: m.HalfCauchy(s, v), ("positive",), REALS),
    "Exponential": Family(lambda m, r, v: m.Exponential(r, v), ("positive",), REALS),
    "Uniform": Family(lambda m, a, b, v: m.Uniform(a, b, v), ("real", "real"), REALS),
    "Gamma": Family(lambda m, c, r, v: m.Gamma(c, r, v), ("positive", "positive"), REALS),
    "Chi2": Family(lambda m, df, v: m.Chi2(df, v), ("positive",), REALS),
    "InverseGamma": Family(
        lambda m, c, r, v: m.InverseGamma(c, r, v), ("positive", "positive"), REALS, NO_CDF
    ),
    "Beta": Family(lambda m, a, b, v: m.Beta(a, b, v), ("positive", "positive"), REALS, NO_CDF),
    "Kumaraswamy": Family(
        lambda m, a, b, v: m.Kumaraswamy(a, b, v), ("positive", "positive"), REALS, NO_CDF
    ),
    "Weibull": Family(lambda m, s, k, v: m.Weibull(s, k, v), ("positive", "positive"), REALS),
    "Pareto": Family(lambda m, s, a, v: m.Pareto(s, a, v), ("positive", "positive"), REALS),
    "StudentT": Family(
        lambda m, df, a, b, v: m.StudentT(df, a, b, v), ("positive", "real", "positive"), REALS
    ),
    "FisherSnedecor": Family(
        lambda m, a, b, v: m.FisherSnedecor(a, b, v), ("positive", "positive"), REALS, NO_CDF
    ),
    "VonMises": Family(lambda m, a, k, v: m.VonMises(a, k, v), ("real", "positive"), REALS, NO_CDF),
    "GeneralizedPareto": Family(
        lambda m, a, s, c, v: m.GeneralizedPareto(a, s, c, v),
        ("real", "positive", "real"),
        REALS,
    ),
    "Poisson": Family(lambda m, r, v: m.Poisson(r, v), ("nonnegative",), COUNTS, NO_CDF),
    "Bernoulli(probs)": Family(
        lambda m, p, v: m.Bernoulli(probs=p, validate_args=v), ("unit",), COUNTS, NO_CDF
    ),
    "Bernoulli(logits)": Family(
        lambda m, x, v: m.Bernoulli(logits=x, validate_args=v), ("real",), COUNTS, NO_CDF
    ),
    "Geometric(probs)": Family(
        lambda m, p, v: m.Geometric(probs=p, validate_args=v), ("unit",), COUNTS, NO_CDF
    ),
    "Geometric(logits)": Family(
        lambda m, x, v: m.Geometric(logits=x, validate_args=v), ("real",), COUNTS, NO_CDF
    ),
    "Binomial(probs)": Family(
        lambda m, n, p, v: m.Binomial(n, probs=p, validate_args=v),
        ("count", "unit"),
        COUNTS,
        NO_CDF,
    ),
    "Binomial(logits)": Family(
        lambda m, n, x, v: m.Binomial(n, logits=x, validate_args=v),
        ("count", "real"),
        COUNTS,
        NO_CDF,
    ),
    "NegativeBinomial(probs)": Family(
        lambda m, n, p, v: m.NegativeBinomial(n, probs=p, validate_args=v),
        ("positive", "unit"),
        COUNTS,
        NO_CDF,
    ),
    "NegativeBinomial(logits)": Family(
        lambda m, n, x, v: m.NegativeBinomial(n, logits=x, validate_args=v),
        ("positive", "real"),
        COUNTS,
        NO_CDF,
    ),
    "ContinuousBernoulli(probs)": Family(
        lambda m, p, v: m.ContinuousBernoulli(probs=p, validate_args=v), ("unit",), REALS
    ),
    "ContinuousBernoulli(logits)": Family(
        lambda m, x, v: m.ContinuousBernoulli(logits=x, validate_args=v), ("real",), REALS
    ),
    "RelaxedBernoulli": Family(
        lambda m, t, p, v: m.RelaxedBernoulli(t, probs=p, validate_args=v),
        ("positive", "unit"),
        REALS,
        ("log_prob",),
        # PyTorch keeps a number temperature as it is, and its log_prob then raises
        # AttributeError: 'float' object has no attribute 'log'; nor does it broadcast the
        # temperature with probs (the batch shape is probs' alone, and a sample of a temperature
        # with more dims than probs is not of the batch shape): a 0-d tensor
        zero_d=(0,),
    ),
}
MOMENTS = ("mean", "mode", "variance", "stddev")


# ---- drawing ----------------------------------------------------------------------------------


@st.composite
def entries(draw, domain: str, shape: tuple, edges: bool = True) -> np.ndarray:
    """Entries of ``shape`` from ``domain``: all valid, or (one example in three, if
    ``edges``) any of its edges and invalid entries among them."""
    valid, invalid = DOMAINS[domain]
    pool = valid + invalid if edges and draw(st.integers(0, 2)) == 0 else valid
    size = math.prod(shape)
    return np.array(draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size))).reshape(
        shape
    )


@st.composite
def broadcastable(draw, shape: tuple) -> tuple:
    """A shape that broadcasts to ``shape``: leading dims dropped, some dims made 1."""
    kept = shape[draw(st.integers(0, len(shape))) :]
    return tuple(1 if draw(st.integers(0, 3)) == 0 else size for size in kept)


@st.composite
def parameters(draw, family: Family, batch: tuple, dtype: str, edges: bool = True):
    """[(ours, PyTorch's)] per domain: a tensor that broadcasts to ``batch`` or a 0-d one, or
    a Python number (never all numbers: PyTorch then makes float32 tensors whatever ``dtype``);
    only valid entries unless ``edges``."""
    kinds = [
        draw(st.sampled_from(["0-d"] if i in family.zero_d else ["dims", "dims", "0-d", "number"]))
        for i in range(len(family.domains))
    ]
    if all(kind == "number" for kind in kinds):
        kinds[0] = "0-d"
    pairs = []
    for domain, kind in zip(family.domains, kinds):
        shape = draw(broadcastable(batch)) if kind == "dims" else ()
        array = draw(entries(domain, shape, edges))
        pairs.append((float(array),) * 2 if kind == "number" else tensor_pair(array, dtype))
    return pairs


def tensor_pair(array: np.ndarray, dtype: str):
    """The same tensor of ``array`` in both libraries, requiring grad in float64."""
    grad = dtype == "float64"
    return (
        sg.tensor(array, dtype=getattr(sg, dtype), requires_grad=grad),
        torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=grad),
    )


# ---- comparing ----------------------------------------------------------------------------------


def to_numpy(value) -> np.ndarray:
    return np.asarray(value.detach().numpy())


def raised(ours, theirs, what: str) -> bool:
    """``raised_alike``, PyTorch's LinAlgError (a class of its own) matched by ours."""
    if isinstance(theirs, torch.linalg.LinAlgError):
        assert isinstance(ours, sg.linalg.LinAlgError), f"{what}: {ours!r}, PyTorch {theirs!r}"
        return True
    return raised_alike(ours, theirs, what)


def assert_alike(ours, theirs, what: str, dtype: str) -> None:
    """Raised alike, or equal in dtype, shape and values (NaN where PyTorch's is NaN)."""
    if raised(ours, theirs, what):
        return
    if not isinstance(theirs, torch.Tensor):
        assert ours == theirs, f"{what}: {ours!r} != {theirs!r}"
        return
    assert isinstance(ours, sg.Tensor), f"{what}: {type(ours)}"
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (
        f"{what}: {ours.dtype} != {theirs.dtype}"
    )
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol, atol, err_msg=what)


def assert_same_constraint(ours, theirs, what: str) -> None:
    """The same kind of constraint (its bounds are compared through log_prob's validation)."""
    assert type(ours).__name__ == type(theirs).__name__, f"{what}: support {ours} != {theirs}"
    assert ours.is_discrete == theirs.is_discrete, what
    assert ours.event_dim == theirs.event_dim, what


def evaluate(d, method: str, value):
    """``d``'s ``method`` (a property or a call at ``value``)."""
    if method in ("log_prob", "cdf", "icdf"):
        return getattr(d, method)(value)
    if method == "entropy":
        return d.entropy()
    return getattr(d, method)


def compare_gradients(ours, theirs, params, what: str) -> None:
    """The gradients of both results (float64) with respect to the tensor parameters."""
    leaves = [(x, t) for x, t in params if isinstance(t, torch.Tensor)]
    if not theirs.requires_grad:
        return
    if not np.isfinite(to_numpy(theirs)).all():
        return  # a NaN or inf result's gradient is NaN, or 0 where a mask keeps it out
    upstream = np.random.default_rng(0).standard_normal(tuple(theirs.shape))
    loss = (theirs * torch.tensor(upstream)).sum()
    inputs = [t for _, t in leaves]
    expected = outcome(
        lambda: torch.autograd.grad(loss, inputs, allow_unused=True, retain_graph=True)
    )
    if isinstance(expected, NotImplementedError):
        return  # PyTorch has no such gradient (igamma's with respect to the concentration)
    actual = sg.autograd.grad(
        (ours * sg.tensor(upstream)).sum(),
        [x for x, _ in leaves],
        allow_unused=True,
        retain_graph=True,
    )
    for i, (a, e) in enumerate(zip(actual, expected)):
        where = f"{what}: gradient of parameter {i}"
        if e is None:
            assert a is None or not to_numpy(a).any(), where
            continue
        assert a is not None, f"{where}: none, PyTorch's {e}"
        np.testing.assert_allclose(to_numpy(a), to_numpy(e), 1e-8, 1e-10, err_msg=where)


def tensors_of(d) -> list:
    """The tensors a PyTorch distribution holds, its base distribution's too."""
    held = [v for v in vars(d).values() if isinstance(v, torch.Tensor)]
    return held + (tensors_of(d.base_dist) if hasattr(d, "base_dist") else [])


# ---- the families -------------------------------------------------------------------------------

VALIDATE = st.sampled_from([True, False, None])


@st.composite
def batch_shapes(draw) -> tuple:
    return tuple(draw(st.lists(st.integers(0, 3), max_size=2)))


@given(
    name=st.sampled_from(sorted(FAMILIES)),
    batch=batch_shapes(),
    dtype=st.sampled_from(["float64", "float32"]),
    validate=VALIDATE,
    data=st.data(),
)
@FUZZ
def test_family_against_pytorch(name, batch, dtype, validate, data):
    with pytorchs_default_dtype(name, dtype):
        check_family(name, batch, dtype, validate, data)


@contextlib.contextmanager
def pytorchs_default_dtype(name: str, dtype: str):
    """PyTorch's GeneralizedPareto compares the concentration with a tensor of the default
    dtype ("Double did not match Float" in float64): the parameters' dtype is the default
    there."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype) if name == "GeneralizedPareto" else before)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def compared_dtype(theirs, dtype: str) -> str:
    """float32 where a number alone made a float32 tensor (probs=0.7) among ``dtype``'s."""
    return "float32" if any(p.dtype == torch.float32 for p in tensors_of(theirs)) else dtype


def check_family(name, batch, dtype, validate, data):
    family = FAMILIES[name]
    params = data.draw(parameters(family, batch, dtype))
    what = f"{name}({', '.join(repr(t) for _, t in params)}, validate_args={validate})"
    ours = outcome(family.build, D, *(x for x, _ in params), validate)
    theirs = outcome(family.build, TD, *(t for _, t in params), validate)
    if name == "RelaxedBernoulli" and validate is False and isinstance(theirs, ValueError):
        # PyTorch's does not pass validate_args on to its LogitRelaxedBernoulli, which then
        # checks probs (the default) and raises ValueError even with validate_args=False
        return
    if raised_alike(ours, theirs, what):
        assert not isinstance(theirs, ValueError) or "parameter" in str(ours), f"{what}: {ours}"
        return
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape), what
    assert tuple(ours.event_shape) == tuple(theirs.event_shape), what
    assert_same_constraint(ours.support, theirs.support, what)
    dtype = compared_dtype(theirs, dtype)
    for method in MOMENTS:
        assert_alike(
            outcome(evaluate, ours, method, None),
            outcome(evaluate, theirs, method, None),
            f"{what}.{method}",
            dtype,
        )
    sample_dims = data.draw(st.sampled_from([(), (), (2,)]))
    value_shape = sample_dims + data.draw(broadcastable(tuple(theirs.batch_shape)))
    array = data.draw(
        st.lists(
            st.sampled_from(family.values),
            min_size=math.prod(value_shape),
            max_size=math.prod(value_shape),
        )
    )
    array = np.array(array).reshape(value_shape)
    for method in family.methods:
        if method == "icdf":
            array = np.clip(np.abs(array) / 4, 0, 1.5)  # probabilities, and a few beyond 1
        value = (
            sg.tensor(array, dtype=getattr(sg, dtype)),
            torch.tensor(array, dtype=getattr(torch, dtype)),
        )
        mine = outcome(evaluate, ours, method, value[0])
        its = outcome(evaluate, theirs, method, value[1])
        where = f"{what}.{method}({array.tolist()})"
        assert_alike(mine, its, where, dtype)
        if dtype == "float64" and not isinstance(its, Exception):
            compare_gradients(mine, its, params, where)


# ---- families over vectors and categories: the parameters' trailing dims are the event's -----

K = 3  # the categories and the event size
# The Gaussians' entries are finite: scratchgrad's linalg.solve_triangular and cholesky_solve
# solve by LU, so an inf in the value, loc or scale_tril makes NaN where PyTorch's substitution
# gives inf or 0 (MultivariateNormal(0, scale_tril=[[1, 0], [1, 1]]).log_prob([0, -inf]): NaN,
# PyTorch's -inf; cholesky_inverse([[0.3, 0, 0], [-1.5, 0.3, 0], [-1.5, -1.5, inf]]), the
# precision_matrix of that scale_tril: all NaN, PyTorch's finite, 0 in the last row); its
# cholesky of [[inf, inf], [inf, inf]] returns [[inf, 0], [0, inf]] where PyTorch's raises
# (LowRankMultivariateNormal's capacitance of a zero in cov_diag: LinAlgError in PyTorch's,
# ours then checks cov_diag and raises ValueError)


def simplex_like(draw, shape: tuple) -> np.ndarray:
    """Vectors of ``shape`` (last dim K) of entries in [0, 1] summing to 1, or (one in three)
    entries from the unit domain's edges and beyond, summing to anything."""
    raw = draw(entries("unit", shape))
    if draw(st.integers(0, 2)) == 0:
        return raw
    return raw / raw.sum(-1, keepdims=True) if raw.size else raw


def one_hots(draw, shape: tuple) -> np.ndarray:
    if draw(st.integers(0, 2)) == 0:
        return draw(entries("count", shape)).clip(-1, 2)
    return np.eye(shape[-1])[draw(entries("count", shape[:-1])).clip(0, shape[-1] - 1).astype(int)]


@dataclass
class VectorFamily:
    build: Callable  # (distributions module, *parameters, validate_args) -> a distribution
    params: tuple  # (domain, trailing shape) per parameter; the domain "tril": a scale_tril
    value: Callable  # (draw, shape) -> values of shape (a batch shape + the event's)
    event: tuple = (K,)  # the values' trailing shape
    methods: tuple = ("log_prob", "entropy")
    properties: tuple = ()  # more properties compared, beside the moments
    float32_in_pytorch: tuple = ()  # methods PyTorch computes partly in float32 (see below)


VECTOR_FAMILIES = {
    "Categorical(probs)": VectorFamily(
        lambda m, p, v: m.Categorical(probs=p, validate_args=v),
        (("nonnegative", (K,)),),
        lambda draw, shape: draw(entries("count", shape)).clip(-1, K),
        event=(),
        properties=("probs", "logits"),
    ),
    "Categorical(logits)": VectorFamily(
        lambda m, x, v: m.Categorical(logits=x, validate_args=v),
        (("real", (K,)),),
        lambda draw, shape: draw(entries("count", shape)).clip(-1, K),
        event=(),
        properties=("probs", "logits"),
    ),
    "OneHotCategorical(probs)": VectorFamily(
        lambda m, p, v: m.OneHotCategorical(probs=p, validate_args=v),
        (("nonnegative", (K,)),),
        one_hots,
        properties=("probs", "logits"),
    ),
    "OneHotCategorical(logits)": VectorFamily(
        lambda m, x, v: m.OneHotCategorical(logits=x, validate_args=v),
        (("real", (K,)),),
        one_hots,
        properties=("probs", "logits"),
    ),
    "Multinomial(probs)": VectorFamily(
        lambda m, p, v: m.Multinomial(4, probs=p, validate_args=v),
        (("nonnegative", (K,)),),
        lambda draw, shape: draw(entries("count", shape)),
        properties=("probs", "logits"),
        # PyTorch's entropy takes lgamma(total_count + 1) of an int64 tensor: in float32
        float32_in_pytorch=("entropy",),
    ),
    "Multinomial(logits)": VectorFamily(
        lambda m, x, v: m.Multinomial(4, logits=x, validate_args=v),
        (("real", (K,)),),
        lambda draw, shape: draw(entries("count", shape)),
        properties=("probs", "logits"),
        # PyTorch's entropy takes lgamma(total_count + 1) of an int64 tensor: in float32
        float32_in_pytorch=("entropy",),
    ),
    "Dirichlet": VectorFamily(
        lambda m, c, v: m.Dirichlet(c, validate_args=v), (("positive", (K,)),), simplex_like
    ),
    "RelaxedOneHotCategorical": VectorFamily(
        lambda m, t, x, v: m.RelaxedOneHotCategorical(t, logits=x, validate_args=v),
        (("positive", ()), ("real", (K,))),
        simplex_like,
        methods=("log_prob",),
    ),
    "LogisticNormal": VectorFamily(
        lambda m, a, b, v: m.LogisticNormal(a, b, v),
        (("real", (K - 1,)), ("positive", (K - 1,))),
        simplex_like,
        methods=("log_prob",),
    ),
    "MultivariateNormal(scale_tril)": VectorFamily(
        lambda m, loc, tril, v: m.MultivariateNormal(loc, scale_tril=tril, validate_args=v),
        (("finite", (K,)), ("tril", (K, K))),
        lambda draw, shape: draw(entries("finite", shape)),
        properties=("covariance_matrix", "precision_matrix"),
    ),
    "MultivariateNormal(covariance)": VectorFamily(
        lambda m, loc, cov, v: m.MultivariateNormal(loc, covariance_matrix=cov, validate_args=v),
        (("finite", (K,)), ("covariance", (K, K))),
        lambda draw, shape: draw(entries("finite", shape)),
        properties=("scale_tril", "precision_matrix"),
    ),
    "LowRankMultivariateNormal": VectorFamily(
        lambda m, loc, factor, diag, v: m.LowRankMultivariateNormal(loc, factor, diag, v),
        (("finite", (K,)), ("finite", (K, 2)), ("diagonal", (K,))),
        lambda draw, shape: draw(entries("finite", shape)),
        properties=("covariance_matrix", "precision_matrix", "scale_tril"),
    ),
}


@st.composite
def vector_parameters(draw, family: VectorFamily, batch: tuple, dtype: str):
    pairs = []
    for domain, trailing in family.params:
        shape = draw(broadcastable(batch)) + trailing
        if domain == "tril":  # entries below the diagonal real, the diagonal positive
            diagonal = draw(entries("diagonal", shape[:-1]))
            array = np.tril(draw(entries("finite", shape)), -1)
            array = np.where(np.eye(shape[-1], dtype=bool), diagonal[..., None], array)
        elif domain == "covariance":  # positive-definite, or (one in three) negated
            tril = np.tril(draw(entries("finite", shape)), -1) + np.eye(shape[-1])
            array = tril @ np.swapaxes(tril, -1, -2) * draw(st.sampled_from([1.0, 1.0, -1.0]))
        else:
            array = draw(entries(domain, shape))
        pairs.append(tensor_pair(array, dtype))
    return pairs


@given(
    name=st.sampled_from(sorted(VECTOR_FAMILIES)),
    batch=batch_shapes(),
    dtype=st.sampled_from(["float64", "float32"]),
    validate=VALIDATE,
    data=st.data(),
)
@FUZZ
def test_vector_family_against_pytorch(name, batch, dtype, validate, data):
    # PyTorch's Gaussians' log_prob of an empty batch raises ZeroDivisionError (in its
    # _batch_mahalanobis)
    assume("MultivariateNormal" not in name or 0 not in batch)
    family = VECTOR_FAMILIES[name]
    params = data.draw(vector_parameters(family, batch, dtype))
    what = f"{name}({', '.join(repr(t) for _, t in params)}, validate_args={validate})"
    ours = outcome(family.build, D, *(x for x, _ in params), validate)
    theirs = outcome(family.build, TD, *(t for _, t in params), validate)
    if raised(ours, theirs, what):
        return
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape), what
    assert tuple(ours.event_shape) == tuple(theirs.event_shape), what
    for prop in (*MOMENTS, *family.properties):
        mine, its = outcome(evaluate, ours, prop, None), outcome(evaluate, theirs, prop, None)
        assert_alike(mine, its, f"{what}.{prop}", dtype)
    shape = data.draw(broadcastable(tuple(theirs.batch_shape))) + family.event
    array = family.value(data.draw, shape)
    value = tensor_pair(array, dtype)
    for method in family.methods:
        mine = outcome(evaluate, ours, method, value[0])
        its = outcome(evaluate, theirs, method, value[1])
        where = f"{what}.{method}({array.tolist()})"
        assert_alike(mine, its, where, "float32" if method in family.float32_in_pytorch else dtype)
        if (
            dtype == "float64"
            and method not in family.float32_in_pytorch
            and not isinstance(its, Exception)
        ):
            compare_gradients(mine, its, params, where)


# ---- sampling, expand, Independent ------------------------------------------------------------

SAMPLE_SHAPES = st.sampled_from([(), (0,), (2,), (2, 1), (1, 3)])


def both_built(family: Family, params: list, validate=None):
    """The distribution in both libraries, or None where PyTorch refuses the parameters (ours
    must refuse them too)."""
    ours = outcome(family.build, D, *(x for x, _ in params), validate)
    theirs = outcome(family.build, TD, *(t for _, t in params), validate)
    return None if raised(ours, theirs, "construction") else (ours, theirs)


def at_pytorchs_point(ours, theirs, method: str, point, what: str, dtype: str, params=()):
    """``method`` of both at the same value (``point``, a PyTorch tensor), and in float64 its
    gradients with respect to ``params``."""
    value = sg.tensor(point.detach().numpy())
    mine = outcome(evaluate, ours, method, value)
    its = outcome(evaluate, theirs, method, point.detach())
    assert_alike(mine, its, what, dtype)
    if params and dtype == "float64" and not isinstance(its, Exception):
        compare_gradients(mine, its, params, what)


def assert_sample_mean_near(ours, theirs, what: str, n: int = 2000) -> None:
    """The mean of ``n`` of our samples (seeded) lies within 8 standard errors of PyTorch's
    mean, where the mean and variance are finite: a bound a correct sampler does not miss."""
    moments = outcome(lambda: (theirs.mean.detach().double(), theirs.variance.detach().double()))
    if isinstance(moments, NotImplementedError):
        return  # (RelaxedBernoulli's)
    mean, variance = (moment.numpy() for moment in moments)
    sg.manual_seed(1)
    draws = ours.sample((n,)).detach().numpy().astype(np.float64)
    finite = np.isfinite(mean) & np.isfinite(variance)
    error = np.abs(draws.mean(0) - mean)
    bound = 8 * np.sqrt(variance / n) + 1e-6 * (1 + np.abs(mean))
    assert (error <= bound)[finite].all(), f"{what}: sample mean {draws.mean(0)}, mean {mean}"


@given(
    name=st.sampled_from(sorted(FAMILIES)),
    batch=batch_shapes(),
    dtype=st.sampled_from(["float64", "float32"]),
    sample_shape=SAMPLE_SHAPES,
    data=st.data(),
)
@FUZZ
def test_samples_expand_and_independent_against_pytorch(name, batch, dtype, sample_shape, data):
    with pytorchs_default_dtype(name, dtype):
        check_samples(name, batch, dtype, sample_shape, data)


def check_samples(name, batch, dtype, sample_shape, data):
    family = FAMILIES[name]
    params = data.draw(parameters(family, batch, dtype, edges=False))
    built = both_built(family, params)
    if built is None:
        return
    ours, theirs = built
    what = f"{name}({', '.join(repr(t) for _, t in params)})"
    dtype = compared_dtype(theirs, dtype)
    assert ours.has_rsample == theirs.has_rsample, what
    sg.manual_seed(0)
    for method in ("sample", "rsample") if theirs.has_rsample else ("sample",):
        mine, its = getattr(ours, method)(sample_shape), getattr(theirs, method)(sample_shape)
        where = f"{what}.{method}({sample_shape})"
        assert tuple(mine.shape) == tuple(its.shape), f"{where}: {mine.shape} != {its.shape}"
        assert str(mine.dtype).split(".")[-1] == str(its.dtype).split(".")[-1], where
        assert mine.requires_grad == its.requires_grad, where
        inside = ours.support.check(mine.detach())
        assert bool(inside.all()), f"{where}: a sample outside the support"
    if name != "VonMises":  # (its mean is the circular mean: loc, not the samples' average)
        assert_sample_mean_near(ours, theirs, what)
    point = theirs.sample((2,))  # a value inside the support, where both are compared
    new_batch = (2, *theirs.batch_shape)
    expanded = ours.expand(new_batch), theirs.expand(new_batch)
    assert tuple(expanded[0].batch_shape) == new_batch, what
    assert tuple(expanded[0].sample().shape) == tuple(expanded[1].sample().shape), what
    at_pytorchs_point(*expanded, "log_prob", point, f"{what}.expand.log_prob", dtype, params)
    dims = data.draw(st.integers(0, len(theirs.batch_shape)))
    independent = D.Independent(ours, dims), TD.Independent(theirs, dims)
    assert tuple(independent[0].batch_shape) == tuple(independent[1].batch_shape), what
    assert tuple(independent[0].event_shape) == tuple(independent[1].event_shape), what
    for prop in ("mean", "variance"):
        its = outcome(evaluate, independent[1], prop, None)
        assert_alike(outcome(evaluate, independent[0], prop, None), its, f"{what}.{prop}", dtype)
    where = f"Independent({what}, {dims})"
    at_pytorchs_point(*independent, "log_prob", point, f"{where}.log_prob", dtype, params)
    at_pytorchs_point(*independent, "entropy", point, f"{where}.entropy", dtype, params)


# ---- transformed distributions: random chains of transforms ---------------------------------

# what each transform does to the set its inputs lie in: {set: [(name, set after)]}; a chain is
# drawn as a walk, so that every transform gets inputs in its domain
STEPS = {
    "real": [("exp", "positive"), ("sigmoid", "unit"), ("tanh", "open"), ("affine", "real")]
    + [("affine_event", "real"), ("softmax", "simplex"), ("stick", "simplex")],
    "positive": [("log", "real"), ("power", "positive"), ("affine", "real")],
    "unit": [("logit", "real"), ("power", "unit"), ("affine", "real")],
    "open": [("atanh", "real"), ("affine", "real")],
    "simplex": [("stick_inv", "real"), ("affine", "real")],
}
EVENT_STEPS = {"affine_event", "softmax", "stick", "stick_inv"}  # transforms of event_dim 1


def make_transform(m, step: str, cache_size: int, affine: tuple):
    """The transform of ``step`` in distributions module ``m``; ``affine``: (loc, scale) of
    the affine ones, tensors of that library or numbers."""
    t = m.transforms
    loc, scale = affine
    make = {
        "exp": lambda: t.ExpTransform(cache_size),
        "log": lambda: t.ExpTransform(cache_size).inv,
        "sigmoid": lambda: t.SigmoidTransform(cache_size),
        "logit": lambda: t.SigmoidTransform(cache_size).inv,
        "tanh": lambda: t.TanhTransform(cache_size),
        "atanh": lambda: t.TanhTransform(cache_size).inv,
        "affine": lambda: t.AffineTransform(loc, scale, cache_size=cache_size),
        "affine_event": lambda: t.AffineTransform(loc, scale, event_dim=1, cache_size=cache_size),
        "power": lambda: t.PowerTransform(scale, cache_size),
        "softmax": lambda: t.SoftmaxTransform(cache_size),
        "stick": lambda: t.StickBreakingTransform(cache_size),
        "stick_inv": lambda: t.StickBreakingTransform(cache_size).inv,
    }
    return make[step]()


@st.composite
def chains(draw):
    """A walk of 1 to 4 steps from "real", and where each step's affine parameters are drawn
    (a positive scale, the power's exponent)."""
    where, steps = "real", []
    for _ in range(draw(st.integers(1, 4))):
        step, where = draw(st.sampled_from(STEPS[where]))
        steps.append(step)
    return steps


@given(
    steps=chains(),
    batch=batch_shapes(),
    dtype=st.sampled_from(["float64", "float32"]),
    compose=st.booleans(),
    cache_size=st.sampled_from([0, 1]),
    data=st.data(),
)
@FUZZ
def test_transformed_distribution_against_pytorch(steps, batch, dtype, compose, cache_size, data):
    # an inverse right after its transform (atanh of tanh) loses all digits of float32 near the
    # ends of the range, in either library
    undone = {("tanh", "atanh"), ("sigmoid", "logit"), ("exp", "log"), ("stick", "stick_inv")}
    assume(dtype == "float64" or not undone & set(zip(steps, steps[1:])))
    event = (K,)
    base_params = [
        tensor_pair(
            data.draw(entries(domain, data.draw(broadcastable(batch)) + event, False)), dtype
        )
        for domain in ("real", "positive")
    ]
    affines, size = [], K
    for step in steps:
        shape = data.draw(broadcastable((*batch, size))) if step.startswith("affine") else ()
        size += {"stick": 1, "stick_inv": -1}.get(step, 0)  # the event's size after the step
        scale = data.draw(entries("positive", shape, False))
        loc = data.draw(entries("real", shape, False))
        affines.append((tensor_pair(loc, dtype), tensor_pair(scale, dtype)))
    built = []
    for i, m in enumerate((D, TD)):
        transforms = [
            make_transform(m, step, cache_size, (loc[i], scale[i]))
            for step, (loc, scale) in zip(steps, affines)
        ]
        if compose:
            transforms = [m.transforms.ComposeTransform(transforms, cache_size=cache_size)]
        base = m.Normal(*(p[i] for p in base_params))
        built.append(outcome(m.TransformedDistribution, base, transforms))
    ours, theirs = built
    what = f"TransformedDistribution(Normal, {steps}, compose={compose}, cache={cache_size})"
    if raised(ours, theirs, what):
        return
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape), what
    assert tuple(ours.event_shape) == tuple(theirs.event_shape), what
    assert_same_constraint(ours.support, theirs.support, what)
    assert ours.has_rsample == theirs.has_rsample, what
    sg.manual_seed(0)
    sample_shape = data.draw(SAMPLE_SHAPES)
    assert tuple(ours.rsample(sample_shape).shape) == tuple(theirs.rsample(sample_shape).shape)
    params = base_params + [p for loc, scale in affines for p in (loc, scale)]
    y = theirs.base_dist.sample((2,))
    for ours_t, their_t in zip(ours.transforms, theirs.transforms):  # each Jacobian at its x
        x, y = y, their_t(y).detach()
        mine = outcome(ours_t.log_abs_det_jacobian, sg.tensor(x.numpy()), sg.tensor(y.numpy()))
        its = outcome(their_t.log_abs_det_jacobian, x, y)
        assert_alike(mine, its, f"{what}: {their_t}.log_abs_det_jacobian", dtype)
    at_pytorchs_point(ours, theirs, "log_prob", y, f"{what}.log_prob", dtype, params)


# ---- kl_divergence ----------------------------------------------------------------------------


def pytorch_class(name: str) -> type:
    return getattr(TD, name.split("(")[0])


# the pairs of the table PyTorch registers a KL for, drawn four times in five
REGISTERED = sorted(
    (p, q)
    for p in FAMILIES
    for q in FAMILIES
    if (pytorch_class(p), pytorch_class(q)) in torch_kl._KL_REGISTRY
)
ANY_PAIR = st.tuples(st.sampled_from(sorted(FAMILIES)), st.sampled_from(sorted(FAMILIES)))


@given(
    names=st.one_of(*[st.sampled_from(REGISTERED)] * 4, ANY_PAIR),
    batch=batch_shapes(),
    dtype=st.sampled_from(["float64", "float32"]),
    data=st.data(),
)
@FUZZ
def test_kl_divergence_against_pytorch(names, batch, dtype, data):
    """Any two families of the table: PyTorch's registered pairs compared in value and
    gradients (of both distributions' parameters), and NotImplementedError for the others."""
    if "GeneralizedPareto" in names:
        return  # (PyTorch registers no KL for it)
    pairs = [data.draw(parameters(FAMILIES[name], batch, dtype, edges=False)) for name in names]
    built = [both_built(FAMILIES[name], params) for name, params in zip(names, pairs)]
    if None in built:
        return
    (p, their_p), (q, their_q) = built
    what = f"kl_divergence({names[0]}{pairs[0]}, {names[1]}{pairs[1]})"
    mine, its = outcome(D.kl_divergence, p, q), outcome(TD.kl_divergence, their_p, their_q)
    if isinstance(its, IndexError) and "mask" in str(its):
        # README: "Bernoulli's KL and the pairs PyTorch makes infinite through a mask of one
        # argument's shape broadcast their two arguments (PyTorch's raise IndexError)"
        return
    dtype = compared_dtype(their_p, compared_dtype(their_q, dtype))
    assert_alike(mine, its, what, dtype)
    if dtype == "float64" and not isinstance(its, Exception):
        compare_gradients(mine, its, pairs[0] + pairs[1], what)


# ---- probs and logits: exactly one ------------------------------------------------------------

PROBS_OR_LOGITS = {  # (distributions module, tensor library, probs, logits) -> a distribution
    "Bernoulli": lambda m, lib, p, x: m.Bernoulli(p, x),
    "Geometric": lambda m, lib, p, x: m.Geometric(p, x),
    "Binomial": lambda m, lib, p, x: m.Binomial(2, p, x),
    "NegativeBinomial": lambda m, lib, p, x: m.NegativeBinomial(2.0, p, x),
    "ContinuousBernoulli": lambda m, lib, p, x: m.ContinuousBernoulli(p, x),
    "RelaxedBernoulli": lambda m, lib, p, x: m.RelaxedBernoulli(lib.tensor(0.5), p, x),
    "Categorical": lambda m, lib, p, x: m.Categorical(p, x),
    "OneHotCategorical": lambda m, lib, p, x: m.OneHotCategorical(p, x),
    "Multinomial": lambda m, lib, p, x: m.Multinomial(2, p, x),
    "RelaxedOneHotCategorical": lambda m, lib, p, x: m.RelaxedOneHotCategorical(
        lib.tensor(0.5), p, x
    ),
}


@pytest.mark.parametrize("name", sorted(PROBS_OR_LOGITS))
@pytest.mark.parametrize("both", [True, False])
def test_both_or_neither_of_probs_and_logits_raise_as_pytorchs(name, both):
    results = []
    for m, lib in ((D, sg), (TD, torch)):
        p, x = (lib.tensor([0.3, 0.7]), lib.tensor([0.1, -0.2])) if both else (None, None)
        results.append(outcome(PROBS_OR_LOGITS[name], m, lib, p, x))
    ours, theirs = results
    assert raised_alike(ours, theirs, f"{name}(both={both})")
    assert isinstance(theirs, ValueError), theirs
    assert "probs" in str(ours) and "logits" in str(ours), ours
