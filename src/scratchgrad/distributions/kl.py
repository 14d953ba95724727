"""``kl_divergence`` and ``register_kl``, as ``torch.distributions.kl``: a table of KL(p || q)
formulas by the pair of types, looked up by the most specific registered pair of base classes.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

from scratchgrad import linalg
from scratchgrad.creation import full_like
from scratchgrad.distributions.bernoulli import Bernoulli
from scratchgrad.distributions.binomial import Binomial
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.cauchy import Cauchy
from scratchgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.distributions.exponential import Exponential
from scratchgrad.distributions.gamma import Beta, Dirichlet, Gamma
from scratchgrad.distributions.geometric import Geometric
from scratchgrad.distributions.independent import Independent
from scratchgrad.distributions.laplace import Laplace
from scratchgrad.distributions.lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _lowrank_logdet,
    _lowrank_mahalanobis,
)
from scratchgrad.distributions.multivariate_normal import (
    MultivariateNormal,
    half_log_det,
    mahalanobis,
)
from scratchgrad.distributions.normal import Normal
from scratchgrad.distributions.one_hot_categorical import OneHotCategorical
from scratchgrad.distributions.poisson import Poisson
from scratchgrad.distributions.transformed_distribution import (
    EULER,
    Gumbel,
    HalfNormal,
    Pareto,
    TransformedDistribution,
)
from scratchgrad.distributions.uniform import Uniform
from scratchgrad.distributions.utils import sum_rightmost
from scratchgrad.nn.functional import softplus
from scratchgrad.special import digamma, gammaln
from scratchgrad.tensor import Tensor, where

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}  # the pairs registered
_KL_MEMOIZE: dict[tuple[type, type], Callable] = {}  # every pair looked up, to its function


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """A decorator registering ``fun(p, q)`` as KL(p || q) for p of ``type_p`` and q of
    ``type_q`` (and their subclasses, unless a more specific pair is registered).

    >>> class Point(Distribution):
    ...     arg_constraints = {}
    >>> @register_kl(Point, Point)
    ... def _kl_point_point(p, q):
    ...     return 0.0
    >>> kl_divergence(Point(), Point())
    0.0
    """
    for t in (type_p, type_q):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected a Distribution subclass but got {t}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # the most specific match may have changed
        return fun

    return decorator


@functools.total_ordering
class _Match:
    """A pair of types, ordered lexicographically by specificity (a subclass comes first)."""

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Match) and self.types == other.types

    def __le__(self, other: _Match) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Callable | None:
    """The most specific registered function for the pair, warning when the orders by p first
    and by q first disagree (register the pair itself to settle it), as PyTorch."""
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left, right = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left is not right:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return left


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), one per batch entry; NotImplementedError for a pair with no formula.

    >>> from scratchgrad.creation import tensor
    >>> kl_divergence(Normal(tensor([0.0]), 1.0), Normal(tensor([1.0]), 1.0)).tolist()
    [0.5]
    """
    key = type(p), type(q)
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
            f"{type(q).__name__}"
        )
    return fun(p, q)


# ---- two distributions of one family ----
# The formulas are PyTorch's, term for term (so are their infinities and zeros, set where
# PyTorch assigns them into the result; a ``where`` here, with the same zero gradient there).


# NOTE: PyTorch's Bernoulli pair assigns through p's and q's masks into their broadcast
# result: a mask of another shape raises IndexError, or, where it matches the result's leading
# dims (p of shape (2,), q of (2, 2)), picks whole rows, silently setting wrong entries to 0
# or inf; this one broadcasts them.
@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = where(p.probs == 1, 0.0, where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = where(p.probs == 0, 0.0, where(q.probs == 0, math.inf, t))
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    # from http://www.mast.queensu.ca/~communications/Papers/gil-msc11.pdf
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return -scale_ratio.log() + loc_abs_diff / q.scale + t3 - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    # from http://bariskurt.com/kullback-leibler-divergence-between-two-dirichlet-and-beta-distributions/
    sum_p, sum_q = p.concentration.sum(-1), q.concentration.sum(-1)
    t1 = gammaln(sum_p) - gammaln(sum_q)
    t2 = (gammaln(p.concentration) - gammaln(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = gammaln(q.concentration) - gammaln(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    # from https://math.stackexchange.com/questions/2214993/
    if (p.total_count < q.total_count).any():
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    t = p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p()
    return where(p.total_count > q.total_count, math.inf, p.total_count * t)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t3 = (ct2 + gammaln(1 + ct1) - ct3).exp()
    return t1 + ct1 * EULER + t3 - (1 + EULER)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    # from http://www.mast.queensu.ca/~communications/Papers/gil-msc11.pdf
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return where(p.scale < q.scale, math.inf, result)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    # from https://arxiv.org/abs/1905.10965
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


# ---- multivariate normals, of full or low-rank covariance ----
# KL = 1/2 (log det S_q - log det S_p + tr(S_q^-1 S_p) + d^T S_q^-1 d - n), d = m_q - m_p
# (https://en.wikipedia.org/wiki/Multivariate_normal_distribution#Kullback%E2%80%93Leibler_divergence),
# S_p written as a sum of products A A^T of its factors (L; or W and D^1/2), each trace then
# computed through q's factorization: Cholesky, or the low-rank capacitance (Woodbury).


def _log_det_cov(d: MultivariateNormal | LowRankMultivariateNormal) -> Tensor:
    if isinstance(d, LowRankMultivariateNormal):
        return _lowrank_logdet(d._unbroadcasted_cov_diag, d._capacitance_tril)
    return 2 * half_log_det(d._unbroadcasted_scale_tril)


def _cov_factors(d: MultivariateNormal | LowRankMultivariateNormal) -> list[Tensor]:
    """Matrices A whose products A A^T sum to the covariance."""
    if isinstance(d, LowRankMultivariateNormal):
        return [d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag.sqrt().diag_embed()]
    return [d._unbroadcasted_scale_tril]


def _inv_cov_quadratic(d: MultivariateNormal | LowRankMultivariateNormal, x: Tensor) -> Tensor:
    """``x^T S^-1 x``."""
    if isinstance(d, LowRankMultivariateNormal):
        W, D = d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag
        return _lowrank_mahalanobis(W, D, x, d._capacitance_tril)
    return mahalanobis(d._unbroadcasted_scale_tril, x)


def _inv_cov_trace(d: MultivariateNormal | LowRankMultivariateNormal, A: Tensor) -> Tensor:
    """``tr(S^-1 A A^T)``: the squared entries of A whitened by S."""
    if isinstance(d, LowRankMultivariateNormal):
        # S^-1 = D^-1 - D^-1 W C^-1 W^T D^-1, C = I + W^T D^-1 W (the Woodbury identity)
        W, D = d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag
        Wt_Dinv_A = (W.mT / D.unsqueeze(-2)) @ A
        correction = linalg.solve_triangular(d._capacitance_tril, Wt_Dinv_A, upper=False)
        return (A / D.sqrt().unsqueeze(-1)).pow(2).sum((-2, -1)) - correction.pow(2).sum((-2, -1))
    return linalg.solve_triangular(d._unbroadcasted_scale_tril, A, upper=False).pow(2).sum((-2, -1))


@register_kl(MultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_gaussian_gaussian(
    p: MultivariateNormal | LowRankMultivariateNormal,
    q: MultivariateNormal | LowRankMultivariateNormal,
) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(
            f"KL-divergence between two (Low Rank) Multivariate Normals with different event "
            f"shapes cannot be computed: {tuple(p.event_shape)} and {tuple(q.event_shape)}"
        )
    trace = sum(_inv_cov_trace(q, A) for A in _cov_factors(p))
    quadratic = _inv_cov_quadratic(q, q.loc - p.loc)
    log_det_ratio = _log_det_cov(q) - _log_det_cov(p)
    return 0.5 * (log_det_ratio + trace + quadratic - p.event_shape[0])


# ---- the exponential family: the Bregman divergence of the log-normalizer ----


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """``F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>`` for p and q of one
    family of log-normalizer F. NOTE: theta_p is detached, as PyTorch's, so p's parameters
    get no gradient."""
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be "
            f"computed using Bregman divergences: {type(p).__name__} and {type(q).__name__}"
        )
    p_params, p_log_normalizer, gradients = p._log_normalizer_and_gradients()
    q_params = q._natural_params
    result = q._log_normalizer(*q_params) - p_log_normalizer
    for p_param, q_param, g in zip(p_params, q_params, gradients):
        result = result - sum_rightmost((q_param - p_param) * g, len(q.event_shape))
    return result


# ---- one family against another ----
# KL(p || q) = H(p, q) - H(p), and the cross entropy H(p, q) = -E_p[log q(X)] needs only a few
# expectations under p (its mean, variance, E[log X], ...): each family q has one helper taking
# those, and each pair supplies them for its p. KL is infinite where p's support is not inside
# q's. NOTE: where PyTorch assigns those infinities through a mask of p's or q's own batch shape
# it raises IndexError unless that is the broadcast shape or its leading dims, where the mask
# picks whole rows (wrong entries set to inf); these broadcast.


def _normal_cross_entropy(q: Normal, mean: Tensor, variance: Tensor) -> Tensor:
    """``-E[log q(X)]`` for X of that mean and variance."""
    squared_error = variance + (mean - q.loc).pow(2)
    return q.scale.log() + 0.5 * math.log(2 * math.pi) + squared_error / (2 * q.scale.pow(2))


def _exponential_cross_entropy(q: Exponential, mean: Tensor) -> Tensor:
    return q.rate * mean - q.rate.log()


def _gamma_cross_entropy(q: Gamma, mean: Tensor, mean_log: Tensor) -> Tensor:
    """``-E[log q(X)]`` for X of that mean and ``E[log X]``."""
    a, b = q.concentration, q.rate
    return gammaln(a) - a * b.log() - (a - 1) * mean_log + b * mean


def _beta_cross_entropy(q: Beta, mean_log: Tensor, mean_log1m: Tensor) -> Tensor:
    """``-E[log q(X)]`` for X of ``E[log X]`` and ``E[log(1 - X)]`` those."""
    a, b = q.concentration1, q.concentration0
    log_beta = gammaln(a) + gammaln(b) - gammaln(a + b)
    return log_beta - (a - 1) * mean_log - (b - 1) * mean_log1m


def _pareto_cross_entropy(q: Pareto, mean_log: Tensor) -> Tensor:
    return (q.alpha + 1) * mean_log - q.alpha.log() - q.alpha * q.scale.log()


def _gumbel_cross_entropy(q: Gumbel, mean: Tensor, mean_exp: Tensor) -> Tensor:
    """``-E[log q(X)]`` for X of that mean and ``E[exp(-X / q.scale)]``."""
    return q.scale.log() + (mean - q.loc) / q.scale + (q.loc / q.scale).exp() * mean_exp


def _continuous_bernoulli_cross_entropy(q: ContinuousBernoulli, mean: Tensor) -> Tensor:
    return -(q._cont_bern_log_norm() + mean * q.logits + (-q.probs).log1p())


def _uniform_mean_log(low: Tensor, high: Tensor) -> Tensor:
    """``E[log X]`` for X uniform on [low, high] (an end at 0 adds 0 log 0 = 0)."""
    return (high.xlogy(high) - low.xlogy(low)) / (high - low) - 1


def _beta_mean_log(p: Beta) -> Tensor:
    return digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)


def _pareto_mean_log(p: Pareto) -> Tensor:
    return p.scale.log() + p.alpha.reciprocal()


# NOTE: Pareto's mean and variance without Pareto.mean's and .variance's clamps (they hold
# for alpha > 1 and alpha > 2): the entries where they do not are set to infinity and get a
# zero gradient, as PyTorch's.
def _pareto_mean(p: Pareto) -> Tensor:
    return p.alpha * p.scale / (p.alpha - 1)


@register_kl(Beta, Normal)
@register_kl(ContinuousBernoulli, Normal)
@register_kl(Exponential, Normal)
@register_kl(Gamma, Normal)
@register_kl(Gumbel, Normal)
@register_kl(Laplace, Normal)
@register_kl(Uniform, Normal)
def _kl_to_normal(p: Distribution, q: Normal) -> Tensor:
    return _normal_cross_entropy(q, p.mean, p.variance) - p.entropy()


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    mean = _pareto_mean(p)
    variance = mean * p.scale / ((p.alpha - 1) * (p.alpha - 2))
    kl = _normal_cross_entropy(q, mean, variance) - p.entropy()
    return where(p.alpha <= 2, math.inf, kl)


@register_kl(Beta, Exponential)
@register_kl(ContinuousBernoulli, Exponential)
@register_kl(Gamma, Exponential)
def _kl_to_exponential(p: Distribution, q: Exponential) -> Tensor:
    return _exponential_cross_entropy(q, p.mean) - p.entropy()


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    kl = _exponential_cross_entropy(q, _pareto_mean(p)) - p.entropy()
    return where(p.alpha <= 1, math.inf, kl)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    return where(p.low < 0, math.inf, _kl_to_exponential(p, q))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    return _gamma_cross_entropy(q, p.mean, _beta_mean_log(p)) - p.entropy()


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    mean_log = -EULER - p.rate.log()
    return _gamma_cross_entropy(q, p.mean, mean_log) - p.entropy()


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    kl = _gamma_cross_entropy(q, _pareto_mean(p), _pareto_mean_log(p)) - p.entropy()
    return where(p.alpha <= 1, math.inf, kl)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    kl = _gamma_cross_entropy(q, p.mean, _uniform_mean_log(p.low, p.high)) - p.entropy()
    return where(p.low < 0, math.inf, kl)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    # 1 - X is uniform on [1 - high, 1 - low]
    mean_log1m = _uniform_mean_log(1 - p.high, 1 - p.low)
    kl = _beta_cross_entropy(q, _uniform_mean_log(p.low, p.high), mean_log1m) - p.entropy()
    return where((p.low < 0) | (p.high > 1), math.inf, kl)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    kl = _pareto_cross_entropy(q, _uniform_mean_log(p.low, p.high)) - p.entropy()
    return where(p.low < q.scale, math.inf, kl)


# the Gumbel pairs: E[exp(-X / scale)] is p's moment-generating function at -1 / scale
@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    mean_exp = p.rate / (p.rate + q.scale.reciprocal())
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    mean_exp = (1 + (p.rate * q.scale).reciprocal()).pow(-p.concentration)
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_exp = (-p.loc / q.scale + 0.5 * (p.scale / q.scale).pow(2)).exp()
    return _gumbel_cross_entropy(q, p.loc, mean_exp) - p.entropy()


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    exp_low, exp_high = (-p.low / q.scale).exp(), (-p.high / q.scale).exp()
    mean_exp = q.scale * (exp_low - exp_high) / (p.high - p.low)
    return _gumbel_cross_entropy(q, p.mean, mean_exp) - p.entropy()


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E|X - c| for X normal: the mean of a folded normal
    diff = p.loc - q.loc
    z = diff / p.scale
    mean_abs = p.scale * math.sqrt(2 / math.pi) * (-0.5 * z.pow(2)).exp()
    mean_abs = mean_abs + diff * (z * math.sqrt(0.5)).erf()
    return (2 * q.scale).log() + mean_abs / q.scale - p.entropy()


@register_kl(Beta, ContinuousBernoulli)
@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_to_continuous_bernoulli(p: Distribution, q: ContinuousBernoulli) -> Tensor:
    return _continuous_bernoulli_cross_entropy(q, p.mean) - p.entropy()


def _kl_to_uniform(p: Distribution, q: Uniform) -> Tensor:
    return (q.high - q.low).log() - p.entropy()


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    return where((q.low > 0) | (q.high < 1), math.inf, _kl_to_uniform(p, q))


# NOTE: PyTorch's pairs of a ContinuousBernoulli and a Uniform are infinite also where the
# uniform's support and [0, 1] share an end (>= and <=, where Beta's pairs have > and <),
# although KL is finite there: matched.
@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    return where((q.low >= 0) | (q.high <= 1), math.inf, _kl_to_uniform(p, q))


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    kl = _kl_to_continuous_bernoulli(p, q)
    return where((p.low <= 0) | (p.high >= 1), math.inf, kl)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    # log X! = 0 for X in {0, 1}
    return q.rate - p.probs * q.rate.log() - p.entropy()


def _kl_infinite(p: Distribution, q: Distribution) -> Tensor:
    # NOTE: of p's batch shape, not broadcast with q's, as PyTorch's
    return full_like(p.mean, math.inf)


# p's support is not inside q's for any parameters
_INFINITE = {
    Beta: (Pareto,),
    ContinuousBernoulli: (Pareto,),
    Exponential: (Beta, ContinuousBernoulli, Pareto, Uniform),
    Gamma: (Beta, ContinuousBernoulli, Pareto, Uniform),
    Gumbel: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Laplace: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Normal: (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform),
    Pareto: (Beta, ContinuousBernoulli, Uniform),
    Poisson: (Bernoulli, Binomial),
}
for _type_p, _types_q in _INFINITE.items():
    for _type_q in _types_q:
        register_kl(_type_p, _type_q)(_kl_infinite)
