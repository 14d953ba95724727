"""``Independent``, as ``torch.distributions.Independent``."""

from __future__ import annotations

from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.utils import sum_rightmost
from scratchgrad.tensor import Size, Tensor


class Independent(Distribution):
    """``base_distribution`` with its ``reinterpreted_batch_ndims`` rightmost batch dimensions
    made event dimensions: ``log_prob`` and ``entropy`` sum over them. A diagonal Gaussian is
    ``Independent(Normal(loc, scale), 1)``.

    >>> from scratchgrad.creation import zeros, ones
    >>> from scratchgrad.distributions import Normal
    >>> d = Independent(Normal(zeros(4, 3), ones(4, 3)), 1)
    >>> d.batch_shape, d.event_shape, tuple(d.log_prob(zeros(4, 3)).shape)
    (scratchgrad.Size([4]), scratchgrad.Size([3]), (4,))
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self,
        base_distribution: Distribution,
        reinterpreted_batch_ndims: int,
        validate_args: bool | None = None,
    ) -> None:
        n, batch = reinterpreted_batch_ndims, base_distribution.batch_shape
        if n > len(batch):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {n} vs {len(batch)}"
            )
        shape = batch + base_distribution.event_shape
        cut = len(shape) - n - len(base_distribution.event_shape)
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @property
    def support(self) -> constraints.Constraint:
        support, n = self.base_dist.support, self.reinterpreted_batch_ndims
        return constraints.independent(support, n) if n else support

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
