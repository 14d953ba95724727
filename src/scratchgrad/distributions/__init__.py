"""``scratchgrad.distributions``: probability distributions with PyTorch's
``torch.distributions`` names and semantics, for policy gradients and VAEs: ``sample`` (drawn
from the library's seeded generator), ``rsample`` (gradients flow to the parameters),
``log_prob``, ``entropy``, ``kl_divergence``; parameters and values validated as PyTorch's.

>>> from scratchgrad.creation import tensor
>>> from scratchgrad.distributions import Categorical
>>> policy = Categorical(logits=tensor([0.0, 0.0], requires_grad=True))
>>> policy.log_prob(tensor(1)).backward()
>>> policy.logits.grad is None  # the normalized logits are not the leaf
True
"""

from scratchgrad.distributions import constraints  # noqa: I001  (the base classes come first)
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions import transforms
from scratchgrad.distributions.bernoulli import Bernoulli
from scratchgrad.distributions.binomial import Binomial, Multinomial
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.cauchy import Cauchy
from scratchgrad.distributions.exponential import Exponential
from scratchgrad.distributions.gamma import Beta, Chi2, Dirichlet, Gamma
from scratchgrad.distributions.geometric import Geometric
from scratchgrad.distributions.independent import Independent
from scratchgrad.distributions.kl import kl_divergence, register_kl
from scratchgrad.distributions.laplace import Laplace
from scratchgrad.distributions.multivariate_normal import MultivariateNormal
from scratchgrad.distributions.normal import Normal
from scratchgrad.distributions.one_hot_categorical import OneHotCategorical
from scratchgrad.distributions.poisson import Poisson
from scratchgrad.distributions.student_t import StudentT
from scratchgrad.distributions.transformed_distribution import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    LogisticNormal,
    LogNormal,
    Pareto,
    TransformedDistribution,
    Weibull,
)
from scratchgrad.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
)
from scratchgrad.distributions.uniform import Uniform
from scratchgrad.distributions.von_mises import VonMises

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ComposeTransform",
    "Dirichlet",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "Gamma",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "Multinomial",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Pareto",
    "Poisson",
    "PowerTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "StickBreakingTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transforms",
]
