"""The distributions added after the first set (NegativeBinomial, RelaxedBernoulli,
RelaxedOneHotCategorical, OneHotCategoricalStraightThrough, ContinuousBernoulli,
FisherSnedecor, InverseGamma, Kumaraswamy, GeneralizedPareto, LowRankMultivariateNormal,
MixtureSameFamily, ExponentialFamily) against torch.distributions: log_prob, cdf, icdf,
entropy and moments with the gradients of every parameter, in float64; rsample against
PyTorch's formula on the same noise; sample moments against the analytic ones (100k draws,
5 sigma); validation errors; the submodule names."""

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.distributions as TD
from oracle import assert_close, check_outputs_and_gradients, leaves

import scratchgrad as sg
import scratchgrad.distributions as D

RNG = np.random.default_rng(7)
B = (3,)  # the batch shape of every case


def positive(lo=0.5, hi=2.0):
    return lambda: RNG.uniform(lo, hi, B)


@dataclass
class Case:
    build: Callable  # (the distributions module, *parameters) -> a distribution
    params: tuple  # () -> an array, one per parameter
    value: Callable  # the parameter arrays -> a value array in the support
    methods: tuple  # compared with their gradients
    constant: tuple = ()  # compared without gradients


def counts(*p):
    return RNG.integers(0, 6, (2, *B)).astype(np.float64)


def unit(*p):
    return RNG.uniform(0.05, 0.95, (2, *B))


def above_zero(*p):
    return RNG.uniform(0.2, 3.0, (2, *B))


def simplex(*p):
    x = RNG.uniform(0.1, 1.0, (2, *B, 4))
    return x / x.sum(-1, keepdims=True)


def gpd_value(loc, scale, xi):
    # inside [loc, loc - scale / xi] for xi < 0: a fraction of that length
    return loc + scale * RNG.uniform(0.05, 0.9, (2, *B)) * np.where(xi < 0, -1 / xi, 1.0)


MOMENTS = ("mean", "variance")
CASES = {
    "NegativeBinomial(probs)": Case(
        lambda m, n, p: m.NegativeBinomial(n, probs=p),
        (positive(0.5, 4.0), positive(0.1, 0.9)),
        counts,
        ("log_prob", *MOMENTS),
        ("mode",),
    ),
    "NegativeBinomial(logits)": Case(
        lambda m, n, logits: m.NegativeBinomial(n, logits=logits),
        (positive(0.5, 4.0), lambda: RNG.standard_normal(B)),
        counts,
        ("log_prob", *MOMENTS),
    ),
    "RelaxedBernoulli": Case(
        lambda m, t, p: m.RelaxedBernoulli(t, probs=p),
        (positive(0.3, 2.0), positive(0.1, 0.9)),
        unit,
        ("log_prob",),
    ),
    "RelaxedOneHotCategorical": Case(
        lambda m, t, logits: m.RelaxedOneHotCategorical(t, logits=logits),
        (lambda: RNG.uniform(0.3, 2.0, ()), lambda: RNG.standard_normal((*B, 4))),
        simplex,
        ("log_prob",),
    ),
    "ContinuousBernoulli": Case(
        lambda m, p: m.ContinuousBernoulli(probs=p),
        (lambda: np.array([0.2, 0.4995, 0.8]),),  # the middle one takes the Taylor branch
        unit,
        ("log_prob", "cdf", "icdf", "entropy", *MOMENTS),
    ),
    "ContinuousBernoulli(logits)": Case(
        lambda m, logits: m.ContinuousBernoulli(logits=logits),
        (lambda: RNG.standard_normal(B),),
        unit,
        ("log_prob", "cdf", "icdf", "entropy", *MOMENTS),
    ),
    "FisherSnedecor": Case(
        lambda m, d1, d2: m.FisherSnedecor(d1, d2),
        (positive(1.0, 6.0), lambda: np.array([3.0, 5.0, 9.0])),
        above_zero,
        ("log_prob", *MOMENTS),
        ("mode",),
    ),
    "InverseGamma": Case(
        lambda m, c, r: m.InverseGamma(c, r),
        (lambda: np.array([0.5, 1.5, 3.0]), positive()),
        above_zero,
        ("log_prob", "entropy", *MOMENTS, "mode"),
    ),
    "Kumaraswamy": Case(
        lambda m, a, b: m.Kumaraswamy(a, b),
        (positive(), positive()),
        unit,
        ("log_prob", "cdf", "icdf", "entropy", *MOMENTS),
        ("mode",),
    ),
    "GeneralizedPareto": Case(
        lambda m, loc, s, xi: m.GeneralizedPareto(loc, s, xi),
        (lambda: RNG.standard_normal(B), positive(), lambda: np.array([-0.4, 0.0, 0.3])),
        gpd_value,
        ("log_prob", "cdf", "icdf", "entropy", *MOMENTS, "mode"),
    ),
}


def _call(dist, method, value, lib):
    if method in ("log_prob", "cdf"):
        return getattr(dist, method)(value)
    if method == "icdf":
        return dist.icdf(lib.tensor(np.linspace(0.05, 0.95, 6).reshape(2, 3), dtype=lib.float64))
    if method == "entropy":
        return dist.entropy()
    return getattr(dist, method)


@pytest.fixture
def torch_float64_default():
    """PyTorch's GeneralizedPareto compares float64 parameters with a tensor of the default
    dtype (``isclose`` then raises "Double did not match Float"): float64 by default here."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)


@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients_are_pytorchs(name, torch_float64_default):
    case = CASES[name]
    arrays = [p() for p in case.params]
    value = case.value(*arrays)
    for method in case.methods + case.constant:
        pairs = [leaves(a) for a in arrays]
        v_ours, v_theirs = leaves(value, requires_grad=False)
        ours = case.build(D, *(p for p, _ in pairs))
        theirs = case.build(TD, *(t for _, t in pairs))
        out = _call(ours, method, v_ours, sg)
        expected = _call(theirs, method, v_theirs, torch)
        check_outputs_and_gradients(
            out, expected, pairs, what=f"{name}.{method}", grad=method not in case.constant
        )


def _lowrank(m, lib):
    loc = lib.tensor(RNG.standard_normal((2, 4)), requires_grad=True)
    W = lib.tensor(RNG.standard_normal((4, 2)), requires_grad=True)
    diag = lib.tensor(RNG.uniform(0.5, 2.0, (2, 4)), requires_grad=True)
    return m.LowRankMultivariateNormal(loc, W, diag), (loc, W, diag)


@pytest.mark.parametrize(
    "method",
    ["log_prob", "entropy", "variance", "covariance_matrix", "precision_matrix", "scale_tril"],
)
def test_lowrank_multivariate_normal_is_pytorchs(method):
    state = RNG.bit_generator.state
    ours, ours_params = _lowrank(D, sg)
    RNG.bit_generator.state = state
    theirs, their_params = _lowrank(TD, torch)
    value = RNG.standard_normal((5, 2, 4))
    if method == "log_prob":
        out, expected = ours.log_prob(sg.tensor(value)), theirs.log_prob(torch.tensor(value))
    elif method == "entropy":
        out, expected = ours.entropy(), theirs.entropy()
    else:
        out, expected = getattr(ours, method), getattr(theirs, method)
    check_outputs_and_gradients(out, expected, list(zip(ours_params, their_params)), what=method)
    # and the same as a full MultivariateNormal of that covariance
    full = TD.MultivariateNormal(theirs.loc, theirs.covariance_matrix)
    if method == "log_prob":
        assert_close(out, full.log_prob(torch.tensor(value)))


def _mixture(m, lib, logits, loc, scale, event):
    mix = m.Categorical(logits=logits)
    components = m.Normal(loc, scale)
    if event:
        components = m.Independent(components, 1)
    return m.MixtureSameFamily(mix, components)


@pytest.mark.parametrize("event", [False, True], ids=["univariate", "independent"])
@pytest.mark.parametrize("method", ["log_prob", "cdf", "mean", "variance"])
def test_gaussian_mixture_is_pytorchs(method, event):
    if method == "cdf" and event:
        pytest.skip("Independent has no cdf (nor has PyTorch's)")
    shape = (2, 3, 2) if event else (2, 3)
    arrays = [RNG.standard_normal((2, 3)), RNG.standard_normal(shape), RNG.uniform(0.5, 2, shape)]
    pairs = [leaves(a) for a in arrays]
    ours = _mixture(D, sg, *(p for p, _ in pairs), event)
    theirs = _mixture(TD, torch, *(t for _, t in pairs), event)
    value = RNG.standard_normal((4, 2, 2) if event else (4, 2))
    if method in ("log_prob", "cdf"):
        out = getattr(ours, method)(sg.tensor(value))
        expected = getattr(theirs, method)(torch.tensor(value))
    else:
        out, expected = getattr(ours, method), getattr(theirs, method)
    check_outputs_and_gradients(out, expected, pairs, what=method)


def test_mixture_shapes_errors_and_expand_are_pytorchs():
    mix = D.Categorical(logits=sg.zeros(2, 3))
    gmm = D.MixtureSameFamily(mix, D.Normal(sg.zeros(2, 3), sg.ones(2, 3)))
    assert gmm.batch_shape == (2,) and gmm.event_shape == ()
    assert tuple(gmm.sample((5,)).shape) == (5, 2)
    assert gmm.expand((4, 2)).batch_shape == (4, 2)
    assert tuple(gmm.expand((4, 2)).log_prob(sg.zeros(4, 2)).shape) == (4, 2)
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(mix, D.Normal(sg.zeros(2, 4), sg.ones(2, 4)))
    with pytest.raises(ValueError, match="Categorical"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(sg.zeros(3), sg.ones(3)))
    assert repr(gmm.support) == repr(
        TD.MixtureSameFamily(
            TD.Categorical(logits=torch.zeros(2, 3)), TD.Normal(torch.zeros(2, 3), 1.0)
        ).support
    )


def test_exponential_family_entropy_is_the_closed_form_and_pytorchs():
    p = np.array([0.1, 0.3, 0.7])
    ours = D.ContinuousBernoulli(probs=sg.tensor(p))
    theirs = TD.ContinuousBernoulli(probs=torch.tensor(p))
    bregman = D.ExponentialFamily.entropy(ours)
    assert_close(bregman, TD.ExponentialFamily.entropy(theirs))
    assert_close(bregman, ours.entropy())


# -- rsample: PyTorch's formula on the same noise ----------------------------------------------


def _noise(draw, seed=11):
    sg.manual_seed(seed)
    return torch.tensor(draw().numpy())


def test_relaxed_bernoulli_rsample_is_pytorchs_formula_on_the_same_noise():
    t_arr, p_arr = np.array(0.7), RNG.uniform(0.1, 0.9, B)
    (t, tt), (p, tp) = leaves(t_arr), leaves(p_arr)
    u = _noise(lambda: sg.rand((4, *B), dtype=sg.float64))
    sg.manual_seed(11)
    out = D.RelaxedBernoulli(t, probs=p).rsample((4,))
    u = u.clamp(1e-16 * 2.220446049250313, 1 - 2.220446049250313e-16)
    logit = (u.log() - (-u).log1p() + tp.log() - (-tp).log1p()) / tt
    check_outputs_and_gradients(out, torch.sigmoid(logit), [(t, tt), (p, tp)], what="rsample")


def test_relaxed_one_hot_categorical_rsample_is_pytorchs_formula_on_the_same_noise():
    (t, tt), (lg, tl) = leaves(np.array(0.5)), leaves(RNG.standard_normal((*B, 4)))
    u = _noise(lambda: sg.rand((5, *B, 4), dtype=sg.float64))
    sg.manual_seed(11)
    out = D.RelaxedOneHotCategorical(t, logits=lg).rsample((5,))
    eps = torch.finfo(torch.float64).eps
    gumbels = -(-(u.clamp(eps, 1 - eps).log())).log()
    logits = tl - tl.logsumexp(-1, keepdim=True)
    expected = ((logits + gumbels) / tt).softmax(-1)
    check_outputs_and_gradients(out, expected, [(t, tt), (lg, tl)], what="rsample")


def test_lowrank_rsample_is_pytorchs_formula_on_the_same_noise():
    state = RNG.bit_generator.state
    ours, ours_params = _lowrank(D, sg)
    RNG.bit_generator.state = state
    _, (loc, W, diag) = _lowrank(TD, torch)

    def draw():
        return sg.cat(
            [
                sg.randn(5, 2, 2, dtype=sg.float64).flatten(-2),
                sg.randn(5, 2, 4, dtype=sg.float64).flatten(-2),
            ],
            -1,
        )

    noise = _noise(draw)
    eps_w, eps_d = noise[..., :4].reshape(5, 2, 2), noise[..., 4:].reshape(5, 2, 4)
    sg.manual_seed(11)
    out = ours.rsample((5,))
    expected = loc + (W @ eps_w.unsqueeze(-1)).squeeze(-1) + diag.sqrt() * eps_d
    check_outputs_and_gradients(out, expected, list(zip(ours_params, (loc, W, diag))))


def test_straight_through_rsample_is_the_sample_with_the_gradient_of_probs():
    (p, tp) = leaves(RNG.uniform(0.1, 1.0, (*B, 4)))
    sg.manual_seed(5)
    out = D.OneHotCategoricalStraightThrough(probs=p).rsample((6,))
    sample = torch.tensor(out.detach().numpy())
    probs = tp / tp.sum(-1, keepdim=True)
    expected = sample + (probs - probs.detach())
    check_outputs_and_gradients(out, expected, [(p, tp)], what="rsample")


@pytest.mark.parametrize("name", ["ContinuousBernoulli", "GeneralizedPareto", "Kumaraswamy"])
def test_inverse_cdf_rsample_is_icdf_of_a_uniform(name, torch_float64_default):
    case = CASES[name]
    arrays = [p() for p in case.params]
    pairs = [leaves(a) for a in arrays]
    ours = case.build(D, *(p for p, _ in pairs))
    theirs = case.build(TD, *(t for _, t in pairs))
    u = _noise(lambda: sg.rand((4, *B), dtype=sg.float64))
    sg.manual_seed(11)
    out = ours.rsample((4,))
    # Kumaraswamy's transforms decrease along the way: u gives the quantile 1 - u
    expected = theirs.icdf(1 - u if name == "Kumaraswamy" else u)
    check_outputs_and_gradients(
        out, expected, pairs, what=f"{name}.rsample", tolerance=(1e-9, 1e-9)
    )


# -- sampling: moments of 100k draws within 5 standard errors ----------------------------------

N = 100_000


def _within_5_sigma(samples, mean, variance, what):
    samples, mean, variance = (np.asarray(x, dtype=np.float64) for x in (samples, mean, variance))
    err = np.abs(samples.mean(0) - mean)
    bound = 5 * np.sqrt(variance / samples.shape[0])
    assert (err <= bound).all(), f"{what}: sample mean off by {err}, bound {bound}"


@pytest.mark.parametrize(
    "build",
    [
        lambda: D.NegativeBinomial(sg.tensor([0.7, 3.0]), probs=sg.tensor([0.3, 0.6])),
        lambda: D.FisherSnedecor(sg.tensor([3.0, 8.0]), sg.tensor([12.0, 20.0])),
        lambda: D.InverseGamma(sg.tensor([5.0, 7.0]), sg.tensor([1.0, 3.0])),
        lambda: D.Kumaraswamy(sg.tensor([0.5, 2.0]), sg.tensor([1.5, 3.0])),
        lambda: D.ContinuousBernoulli(probs=sg.tensor([0.2, 0.4999, 0.9])),
        lambda: D.GeneralizedPareto(0.5, sg.tensor([1.0, 2.0]), sg.tensor([-0.3, 0.1])),
    ],
    ids=[
        "NegativeBinomial",
        "FisherSnedecor",
        "InverseGamma",
        "Kumaraswamy",
        "ContinuousBernoulli",
        "GeneralizedPareto",
    ],
)
def test_sample_means_match_the_analytic_ones(build):
    sg.manual_seed(0)
    d = build()
    x = d.sample((N,))
    assert d.support.check(x).all()
    _within_5_sigma(x.numpy(), d.mean.numpy(), d.variance.numpy(), type(d).__name__)
    # the second moment too, where the fourth is finite: E[(x - mean)^2] is the variance
    if not isinstance(d, (D.FisherSnedecor, D.InverseGamma, D.GeneralizedPareto)):
        dev = (x.numpy() - d.mean.numpy()) ** 2
        _within_5_sigma(dev, d.variance.numpy(), dev.var(0), "variance")


def test_relaxed_samples_round_to_their_discrete_law():
    # sigmoid((logit u + logit p) / T) > 1/2 exactly when u > 1 - p: probability p at any T;
    # the argmax of a relaxed one-hot sample is the Gumbel-max categorical draw
    sg.manual_seed(1)
    p = np.array([0.2, 0.7])
    x = D.RelaxedBernoulli(sg.tensor(0.3), probs=sg.tensor(p)).sample((N,)).numpy()
    _within_5_sigma(x > 0.5, p, p * (1 - p), "RelaxedBernoulli")
    probs = np.array([0.1, 0.6, 0.3])
    y = D.RelaxedOneHotCategorical(sg.tensor(2.0), probs=sg.tensor(probs)).sample((N,))
    assert D.constraints.simplex.check(y).all()
    hits = np.eye(3)[y.numpy().argmax(-1)]
    _within_5_sigma(hits, probs, probs * (1 - probs), "RelaxedOneHotCategorical")


def test_lowrank_and_mixture_sample_moments():
    sg.manual_seed(2)
    d = D.LowRankMultivariateNormal(
        sg.tensor([1.0, -1.0, 0.0]), sg.tensor([[1.0], [0.5], [-1.0]]), sg.tensor([0.5, 1.0, 2.0])
    )
    x = d.sample((N,)).numpy()
    _within_5_sigma(x, d.mean.numpy(), d.variance.numpy(), "LowRankMultivariateNormal")
    cov = np.cov(x.T)
    assert np.abs(cov - d.covariance_matrix.numpy()).max() < 0.05
    gmm = D.MixtureSameFamily(
        D.Categorical(probs=sg.tensor([0.3, 0.7])),
        D.Normal(sg.tensor([-2.0, 1.0]), sg.tensor([0.5, 1.0])),
    )
    y = gmm.sample((N,)).numpy()
    _within_5_sigma(y, gmm.mean.numpy(), gmm.variance.numpy(), "MixtureSameFamily")


# -- validation, shapes, names -----------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda m, lib: m.NegativeBinomial(lib.tensor([-1.0]), probs=lib.tensor([0.5])),
        lambda m, lib: m.NegativeBinomial(lib.tensor([1.0]), probs=lib.tensor([1.0])),
        lambda m, lib: m.FisherSnedecor(lib.tensor([0.0]), lib.tensor([1.0])),
        lambda m, lib: m.InverseGamma(lib.tensor([1.0]), lib.tensor([-1.0])),
        lambda m, lib: m.Kumaraswamy(lib.tensor([1.0]), lib.tensor([0.0])),
        lambda m, lib: m.GeneralizedPareto(0.0, lib.tensor([-1.0]), 0.0),
        lambda m, lib: m.RelaxedBernoulli(lib.tensor(1.0), probs=lib.tensor([1.5])),
        lambda m, lib: m.LowRankMultivariateNormal(
            lib.zeros(2), lib.ones(2, 1), lib.tensor([1.0, -1.0])
        ),
    ],
)
def test_invalid_parameters_raise_as_pytorch(build):
    with pytest.raises(ValueError) as theirs:
        build(TD, torch)
    with pytest.raises(ValueError) as ours:
        build(D, sg)
    assert str(ours.value).split(" (")[0] == str(theirs.value).split(" (")[0]


@pytest.mark.parametrize(
    "build, value",
    [
        (lambda m, lib: m.NegativeBinomial(lib.tensor([2.0]), probs=lib.tensor([0.5])), [0.5]),
        (lambda m, lib: m.Kumaraswamy(lib.tensor([1.0]), lib.tensor([1.0])), [1.5]),
        (lambda m, lib: m.GeneralizedPareto(0.0, 1.0, lib.tensor([-0.5])), [3.0]),
        (lambda m, lib: m.ContinuousBernoulli(probs=lib.tensor([0.3])), [-0.1]),
    ],
)
def test_values_outside_the_support_raise_as_pytorch(build, value):
    with pytest.raises(ValueError, match="to be within the support") as theirs:
        build(TD, torch).log_prob(torch.tensor(value))
    with pytest.raises(ValueError, match="to be within the support") as ours:
        build(D, sg).log_prob(sg.tensor(value))
    support = str(theirs.value).split("support (")[1].split(")")[0]
    assert support in str(ours.value) or "Interval" in support


def test_lowrank_shape_errors_are_pytorchs():
    for args in [
        (sg.zeros(()), sg.ones(2, 1), sg.ones(2)),
        (sg.zeros(2), sg.ones(2), sg.ones(2)),
        (sg.zeros(2), sg.ones(3, 1), sg.ones(2)),
        (sg.zeros(2), sg.ones(2, 1), sg.ones(3)),
    ]:
        t_args = [torch.tensor(a.numpy()) for a in args]
        with pytest.raises(ValueError) as theirs:
            TD.LowRankMultivariateNormal(*t_args)
        with pytest.raises(ValueError) as ours:
            D.LowRankMultivariateNormal(*args)
        assert str(ours.value) == str(theirs.value).replace("torch.", "scratchgrad.")


def test_expand_keeps_the_values():
    for d in [
        D.NegativeBinomial(sg.tensor(2.0), probs=sg.tensor(0.3), validate_args=False),
        D.RelaxedBernoulli(sg.tensor(0.5), logits=sg.tensor(0.3)),
        D.FisherSnedecor(sg.tensor(3.0), sg.tensor(5.0)),
        D.Kumaraswamy(sg.tensor(2.0), sg.tensor(3.0)),
        D.GeneralizedPareto(0.0, 1.0, sg.tensor(0.2)),
        D.InverseGamma(sg.tensor(3.0), sg.tensor(2.0)),
    ]:
        e = d.expand((4,))
        assert e.batch_shape == (4,)
        assert_close(e.log_prob(sg.tensor(0.5)), np.full(4, d.log_prob(sg.tensor(0.5)).item()))
    lr = D.LowRankMultivariateNormal(sg.zeros(2), sg.ones(2, 1), sg.ones(2))
    _ = lr.covariance_matrix
    assert tuple(lr.expand((3,)).covariance_matrix.shape) == (3, 2, 2)


MODULES = [
    "beta", "chi2", "constraint_registry", "continuous_bernoulli", "dirichlet", "exp_family",
    "fishersnedecor", "generalized_pareto", "gumbel", "half_cauchy", "half_normal",
    "inverse_gamma", "kumaraswamy", "log_normal", "logistic_normal",
    "lowrank_multivariate_normal", "mixture_same_family", "multinomial", "negative_binomial",
    "pareto", "relaxed_bernoulli", "relaxed_categorical", "studentT", "weibull",
]  # fmt: skip


@pytest.mark.parametrize("name", MODULES)
def test_pytorchs_submodule_names_import_the_same_classes(name):
    theirs = importlib.import_module(f"torch.distributions.{name}")
    ours = importlib.import_module(f"scratchgrad.distributions.{name}")
    assert getattr(D, name) is ours
    public = [n for n in getattr(theirs, "__all__", []) if hasattr(TD, n) and hasattr(D, n)]
    assert public, name
    for n in public:
        assert getattr(ours, n) is getattr(D, n), f"{name}.{n}"
