"""``MixtureSameFamily``, as ``torch.distributions.MixtureSameFamily``: a mixture of K
components of one family (a batch of K distributions, the rightmost batch dimension), weighted
by a ``Categorical`` over them."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.distributions import constraints
from scratchgrad.distributions.categorical import Categorical
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.tensor import Size, Tensor


class MixtureSameFamily(Distribution):
    """A mixture: ``mixture_distribution`` (a Categorical of batch shape B) picks one of the
    K components of ``component_distribution`` (batch shape B + (K,)). Not reparameterized.

    A Gaussian mixture of two components:

    >>> from scratchgrad.creation import tensor
    >>> from scratchgrad.distributions import Categorical, Normal
    >>> mix = Categorical(probs=tensor([0.5, 0.5]))
    >>> gmm = MixtureSameFamily(mix, Normal(tensor([-1.0, 1.0]), tensor([1.0, 1.0])))
    >>> gmm.mean.item(), gmm.variance.item(), gmm.cdf(tensor(0.0)).item()
    (0.0, 2.0, 0.5)
    """

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(
                " The Mixture distribution needs to be an  instance of "
                "scratchgrad.distributions.Categorical"
            )
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "The Component distribution needs to be an instance of "
                "scratchgrad.distributions.Distribution"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                    f"`component_distribution.batch_shape`({cdbs})"
                )
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(
                f"`mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Distribution | None = None) -> Distribution:
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        new.__dict__.update(self.__dict__)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,)
        )
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._batch_shape = batch_shape
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        # the law of total variance: Var(Y) = E[Var(Y | X)] + Var(E[Y | X])
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim)
        deviation = self.component_distribution.mean - self._pad(self.mean)
        return mean_cond_var + (probs * deviation.pow(2.0)).sum(dim)

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # [S, B, K]
        log_mix_prob = self.mixture_distribution.logits.log_softmax(-1)  # [B, K]
        return (log_prob_x + log_mix_prob).logsumexp(-1)  # [S, B]

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = self.event_shape
            mix_sample = self.mixture_distribution.sample(sample_shape)  # [S, B]
            comp_samples = self.component_distribution.sample(sample_shape)  # [S, B, K, E]
            index = mix_sample.reshape((*mix_sample.shape, *(1,) * (len(es) + 1)))
            index = index.expand(*mix_sample.shape, 1, *es)
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = x.shape
        return x.reshape(*xs[:-1], *(1,) * pad_ndims, xs[-1], *(1,) * self._event_ndims)

    def __repr__(self) -> str:
        return (
            f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
        )
