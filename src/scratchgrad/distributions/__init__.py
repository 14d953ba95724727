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
from scratchgrad.distributions.bernoulli import Bernoulli
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.exponential import Exponential
from scratchgrad.distributions.independent import Independent
from scratchgrad.distributions.kl import kl_divergence, register_kl
from scratchgrad.distributions.laplace import Laplace
from scratchgrad.distributions.multivariate_normal import MultivariateNormal
from scratchgrad.distributions.normal import Normal
from scratchgrad.distributions.one_hot_categorical import OneHotCategorical
from scratchgrad.distributions.uniform import Uniform

__all__ = [
    "Bernoulli",
    "Categorical",
    "Distribution",
    "Exponential",
    "Independent",
    "Laplace",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
