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
from scratchgrad.distributions.exp_family import ExponentialFamily
from scratchgrad.distributions.bernoulli import Bernoulli
from scratchgrad.distributions.binomial import Binomial, Multinomial
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.cauchy import Cauchy
from scratchgrad.distributions.constraint_registry import biject_to, transform_to
from scratchgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from scratchgrad.distributions.exponential import Exponential
from scratchgrad.distributions.fishersnedecor import FisherSnedecor
from scratchgrad.distributions.gamma import Beta, Chi2, Dirichlet, Gamma
from scratchgrad.distributions.generalized_pareto import GeneralizedPareto
from scratchgrad.distributions.geometric import Geometric
from scratchgrad.distributions.independent import Independent
from scratchgrad.distributions.inverse_gamma import InverseGamma
from scratchgrad.distributions.kl import kl_divergence, register_kl
from scratchgrad.distributions.kumaraswamy import Kumaraswamy
from scratchgrad.distributions.laplace import Laplace
from scratchgrad.distributions.lkj_cholesky import LKJCholesky
from scratchgrad.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from scratchgrad.distributions.mixture_same_family import MixtureSameFamily
from scratchgrad.distributions.multivariate_normal import MultivariateNormal
from scratchgrad.distributions.negative_binomial import NegativeBinomial
from scratchgrad.distributions.normal import Normal
from scratchgrad.distributions.one_hot_categorical import (
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from scratchgrad.distributions.poisson import Poisson
from scratchgrad.distributions.relaxed_bernoulli import RelaxedBernoulli
from scratchgrad.distributions.relaxed_categorical import RelaxedOneHotCategorical
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
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from scratchgrad.distributions.uniform import Uniform
from scratchgrad.distributions.von_mises import VonMises
from scratchgrad.distributions.wishart import Wishart

# PyTorch's module names that hold no code of their own here (``torch.distributions.beta``...)
from scratchgrad.distributions import (  # noqa: E402, F401
    beta,
    chi2,
    dirichlet,
    gumbel,
    half_cauchy,
    half_normal,
    log_normal,
    logistic_normal,
    multinomial,
    pareto,
    studentT,
    weibull,
)

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "CatTransform",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ComposeTransform",
    "ContinuousBernoulli",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "Dirichlet",
    "Distribution",
    "ExpTransform",
    "Exponential",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "IndependentTransform",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "LowerCholeskyTransform",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StackTransform",
    "StickBreakingTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraints",
    "identity_transform",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]
