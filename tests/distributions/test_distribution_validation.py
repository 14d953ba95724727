"""Validation as PyTorch's: bad parameters and values outside the support raise ValueError
with PyTorch's message, before anything is drawn or computed; validate_args=False and
Distribution.set_default_validate_args turn it off; the constructors' own errors."""

import pytest
import torch
import torch.distributions as TD

import scratchgrad as sg
import scratchgrad.distributions as D


def both(make):
    """``make(module, lib)`` for scratchgrad's and PyTorch's distributions."""
    return [lambda: make(D, sg), lambda: make(TD, torch)]


BAD_PARAMETERS = {
    "Normal scale": (
        lambda m, lib: m.Normal(lib.zeros(2), lib.tensor([1.0, -1.0])),
        r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
        r"Normal\(loc: \S+Size\(\[2\]\), scale: \S+Size\(\[2\]\)\) to satisfy the constraint "
        r"GreaterThan\(lower_bound=0.0\), but found invalid values:\n",
    ),
    "Normal NaN loc": (lambda m, lib: m.Normal(float("nan"), 1.0), r"parameter loc .* Real\(\)"),
    "Laplace scale": (lambda m, lib: m.Laplace(0.0, 0.0), r"parameter scale .*GreaterThan"),
    "Exponential rate": (lambda m, lib: m.Exponential(lib.tensor([-1.0])), r"parameter rate"),
    "Uniform": (
        lambda m, lib: m.Uniform(1.0, 0.0),
        r"parameter low .*Uniform\(low: 1.0, high: 0.0\).* LessThan\(upper_bound=0.0\)",
    ),
    "Bernoulli": (lambda m, lib: m.Bernoulli(1.5), r"probs .*Interval\(lower_bound=0.0, upp"),
    "Categorical": (
        lambda m, lib: m.Categorical(lib.tensor([0.5, -0.1])),
        r"parameter probs \(Tensor of shape \(2,\)\) .* Simplex\(\)",
    ),
    "Categorical NaN logits": (
        lambda m, lib: m.Categorical(logits=lib.tensor([0.0, float("nan")])),
        r"parameter logits .* IndependentConstraint\(Real\(\), 1\)",
    ),
    "OneHotCategorical": (
        lambda m, lib: m.OneHotCategorical(lib.tensor([-0.5, 1.0])),
        r"parameter probs .* Simplex",
    ),
    # ---- the second batch ----
    "Gamma": (lambda m, lib: m.Gamma(lib.tensor([1.0, 0.0]), 1.0), r"parameter concentration"),
    "Gamma rate": (lambda m, lib: m.Gamma(1.0, -1.0), r"parameter rate .*GreaterThan"),
    "Chi2": (lambda m, lib: m.Chi2(lib.tensor([-1.0])), r"parameter df \(Tensor of shape \(1,\)"),
    "Beta": (
        lambda m, lib: m.Beta(lib.tensor([1.0, -1.0]), 1.0),
        r"parameter concentration .* Dirichlet.* IndependentConstraint\(GreaterThan",
    ),
    "Dirichlet": (
        lambda m, lib: m.Dirichlet(lib.tensor([1.0, -1.0])),
        r"concentration .*Dirichlet",
    ),
    "StudentT": (lambda m, lib: m.StudentT(lib.tensor(0.0)), r"parameter df .*Chi2\(\)"),
    "Poisson": (lambda m, lib: m.Poisson(lib.tensor([-0.5])), r"rate .*GreaterThanEq"),
    "Cauchy": (lambda m, lib: m.Cauchy(0.0, -1.0), r"parameter scale .*Cauchy"),
    "HalfNormal": (
        lambda m, lib: m.HalfNormal(lib.tensor([-1.0])),
        r"parameter scale .*HalfNormal",
    ),
    "LogNormal": (lambda m, lib: m.LogNormal(0.0, 0.0), r"parameter scale .*Normal"),
    "Gumbel": (lambda m, lib: m.Gumbel(0.0, -2.0), r"parameter scale .*Gumbel\(loc: 0.0"),
    "Weibull": (lambda m, lib: m.Weibull(1.0, lib.tensor([-1.0])), r"parameter concentration"),
    "Pareto": (lambda m, lib: m.Pareto(-1.0, 1.0), r"parameter scale .*Pareto"),
    "VonMises": (lambda m, lib: m.VonMises(0.0, 0.0), r"parameter concentration .*VonMises"),
    "Geometric": (lambda m, lib: m.Geometric(lib.tensor([1.5])), r"parameter probs .*Interval"),
    "Geometric zero": (
        lambda m, lib: m.Geometric(lib.tensor([0.0, 0.5])),
        r"Expected parameter probs \(Tensor of shape \(2,\)\) of distribution Geometric\(probs: "
        r"\S+Size\(\[2\]\)\) to be positive but found invalid values",
    ),
    "Binomial count": (
        lambda m, lib: m.Binomial(lib.tensor([2.5]), lib.tensor([0.5])),
        r"parameter total_count .* IntegerGreaterThan\(lower_bound=0\)",
    ),
    "Binomial probs": (lambda m, lib: m.Binomial(3, lib.tensor([1.5])), r"parameter probs"),
    "Multinomial": (lambda m, lib: m.Multinomial(3, lib.tensor([-1.0, 2.0])), r"probs .*Simplex"),
    # singular, though rounding leaves its eigenvalues positive: no Cholesky factor, so
    # invalid, not a LinAlgError from the factorization after the check
    "MultivariateNormal singular covariance": (
        lambda m, lib: m.MultivariateNormal(
            lib.zeros(3, dtype=lib.float64),
            covariance_matrix=(
                c := lib.tensor([[0.3, 0, 0], [-1.5, 0, 0], [-0.3, -1.5, 0.3]], dtype=lib.float64)
            )
            @ c.mT,
        ),
        r"parameter covariance_matrix .* PositiveDefinite\(\)",
    ),
}


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NaN logits normalized
@pytest.mark.parametrize("name", BAD_PARAMETERS)
def test_bad_parameters_raise_as_pytorch(name):
    make, message = BAD_PARAMETERS[name]
    ours, theirs = both(make)
    with pytest.raises(ValueError, match=message):
        theirs()
    with pytest.raises(ValueError, match=message):
        ours()


OUTSIDE = {
    "Normal NaN": (lambda m, lib: m.Normal(0.0, 1.0), lambda lib: lib.tensor(float("nan"))),
    "Exponential": (lambda m, lib: m.Exponential(1.0), lambda lib: lib.tensor([-1.0])),
    "Uniform": (lambda m, lib: m.Uniform(0.0, 1.0), lambda lib: lib.tensor([0.5, 1.5])),
    "Bernoulli": (lambda m, lib: m.Bernoulli(0.3), lambda lib: lib.tensor(0.5)),
    "Categorical": (
        lambda m, lib: m.Categorical(logits=lib.zeros(3)),
        lambda lib: lib.tensor([3]),
    ),
    "Categorical non-integer": (
        lambda m, lib: m.Categorical(logits=lib.zeros(3)),
        lambda lib: lib.tensor([1.5]),
    ),
    "OneHotCategorical": (
        lambda m, lib: m.OneHotCategorical(logits=lib.zeros(3)),
        lambda lib: lib.tensor([1.0, 1.0, 0.0]),
    ),
    "Independent": (
        lambda m, lib: m.Independent(m.Bernoulli(lib.full((2, 2), 0.5)), 1),
        lambda lib: lib.tensor([[0.0, 1.0], [0.5, 1.0]]),
    ),
    "Gamma": (lambda m, lib: m.Gamma(1.0, 1.0), lambda lib: lib.tensor([-1.0])),
    "Beta": (lambda m, lib: m.Beta(1.0, 1.0), lambda lib: lib.tensor([1.5])),
    "Dirichlet": (
        lambda m, lib: m.Dirichlet(lib.ones(3)),
        lambda lib: lib.tensor([0.5, 0.6, 0.0]),
    ),
    "Poisson": (lambda m, lib: m.Poisson(1.0), lambda lib: lib.tensor([1.5])),
    "Geometric": (lambda m, lib: m.Geometric(0.5), lambda lib: lib.tensor([-1.0])),
    "Binomial": (lambda m, lib: m.Binomial(3, lib.tensor(0.5)), lambda lib: lib.tensor(4.0)),
    "Multinomial": (
        lambda m, lib: m.Multinomial(3, lib.ones(2)),
        lambda lib: lib.tensor([3.0, 1.0]),
    ),
    "LogNormal": (lambda m, lib: m.LogNormal(0.0, 1.0), lambda lib: lib.tensor(0.0)),
    "HalfCauchy": (lambda m, lib: m.HalfCauchy(1.0), lambda lib: lib.tensor(-1.0)),
    "Pareto": (lambda m, lib: m.Pareto(2.0, 1.0), lambda lib: lib.tensor(1.0)),
    "Tanh(Normal)": (
        lambda m, lib: m.TransformedDistribution(m.Normal(0.0, 1.0), m.TanhTransform()),
        lambda lib: lib.tensor(1.5),
    ),
}


@pytest.mark.parametrize("name", OUTSIDE)
def test_a_value_outside_the_support_raises_as_pytorch(name):
    make, value = OUTSIDE[name]
    for m, lib in ((TD, torch), (D, sg)):
        with pytest.raises(ValueError, match=r"Expected value argument .* to be within the supp"):
            make(m, lib).log_prob(value(lib))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, lib: m.Normal(0.0, 1.0).log_prob(1.0), "must be a Tensor"),
        (
            lambda m, lib: m.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
            r"Value is not broadcastable with batch_shape\+event_shape: \S+Size\(\[2\]\) vs",
        ),
        (
            lambda m, lib: m.OneHotCategorical(logits=lib.zeros(3)).log_prob(lib.zeros(2)),
            "The right-most size of value must match event_shape",
        ),
        (lambda m, lib: m.Categorical(), "Either `probs` or `logits` must be specified"),
        (
            lambda m, lib: m.Bernoulli(probs=0.5, logits=0.0),
            "Either `probs` or `logits` must be specified",
        ),
        (lambda m, lib: m.Categorical(lib.tensor(1.0)), "`probs` parameter must be at least"),
        (lambda m, lib: m.Dirichlet(lib.tensor(1.0)), "`concentration` parameter must be at least"),
        (lambda m, lib: m.Geometric(), "Either `probs` or `logits` must be specified"),
        (lambda m, lib: m.Binomial(3), "Either `probs` or `logits` must be specified"),
        (
            lambda m, lib: m.Independent(m.Normal(lib.zeros(2), 1.0), 2),
            r"reinterpreted_batch_ndims <= len\(base_distribution.batch_shape\), actual 2 vs 1",
        ),
    ],
)
def test_misuse_raises_as_pytorch(call, message):
    for m, lib in ((TD, torch), (D, sg)):
        with pytest.raises(ValueError, match=message):
            call(m, lib)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the log of -1, unchecked
def test_validate_args_false_and_the_default_switch():
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    try:
        D.Distribution.set_default_validate_args(False)
        d = D.Normal(0.0, -1.0)
        assert d.entropy().isnan().item()  # log of a negative scale, unchecked
        # values outside the support are scored as they are, as PyTorch's unchecked ones
        for m, lib, unchecked in ((D, sg, None), (TD, torch, False)):
            value = lib.tensor([0.0, 0.25])
            bernoulli = m.Bernoulli(0.5, validate_args=unchecked).log_prob(value).tolist()
            assert bernoulli[1] == pytest.approx(-0.6931, 1e-4)
            assert m.Exponential(1.0, unchecked).log_prob(-value).tolist() == [0.0, 0.25]
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="parameter scale"):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")
    # validate_args=True wins over a default of False, as PyTorch's
    try:
        D.Distribution.set_default_validate_args(False)
        with pytest.raises(ValueError, match="parameter scale"):
            D.Normal(0.0, -1.0, validate_args=True)
    finally:
        D.Distribution.set_default_validate_args(True)


def test_an_expanded_distribution_keeps_validating_values():
    d = D.Exponential(sg.tensor([1.0])).expand((3,))
    with pytest.raises(ValueError, match="within the support"):
        d.log_prob(sg.tensor([1.0, -1.0, 1.0]))


def test_only_the_given_parameter_is_checked():
    """logits of probabilities 0 and 1 are clamped, never -inf or NaN; probs from any logits
    are in the simplex: the parameter not given is never checked, as PyTorch's."""
    d = D.Categorical(sg.tensor([0.0, 1.0]))
    assert "logits" not in d.__dict__
    d.logits  # noqa: B018  (computed on first use, then kept)
    assert "logits" in d.__dict__
    assert D.Bernoulli(logits=sg.tensor([100.0])).probs.tolist() == [1.0]
