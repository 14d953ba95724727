"""``kl_divergence`` and ``register_kl``, as ``torch.distributions.kl``: a table of KL(p || q)
formulas by the pair of types, looked up by the most specific registered pair of base classes.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

from scratchgrad import linalg
from scratchgrad.distributions.bernoulli import Bernoulli
from scratchgrad.distributions.binomial import Binomial
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.cauchy import Cauchy
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.exponential import Exponential
from scratchgrad.distributions.gamma import Beta, Dirichlet, Gamma
from scratchgrad.distributions.geometric import Geometric
from scratchgrad.distributions.independent import Independent
from scratchgrad.distributions.laplace import Laplace
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


# The formulas are PyTorch's, term for term (so are their infinities and zeros, set where
# PyTorch assigns them into the result; a ``where`` here, with the same zero gradient there).


# NOTE: PyTorch's Bernoulli pair assigns through p's and q's masks into their broadcast
# result, and raises IndexError unless both have its shape; this one broadcasts them.
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


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(
    p: MultivariateNormal, q: MultivariateNormal
) -> Tensor:
    # from https://en.wikipedia.org/wiki/Multivariate_normal_distribution#Kullback%E2%80%93Leibler_divergence
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes "
            "cannot be computed"
        )
    p_L, q_L = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    # trace(Sigma_q^-1 Sigma_p): the squared entries of q_L^-1 p_L
    trace = linalg.solve_triangular(q_L, p_L, upper=False).pow(2).sum((-2, -1))
    term3 = mahalanobis(q_L, q.loc - p.loc)
    n = p.event_shape[0]
    return half_log_det(q_L) - half_log_det(p_L) + 0.5 * (trace + term3 - n)


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
