"""``LKJCholesky``, as ``torch.distributions.LKJCholesky``: the LKJ distribution over the lower
Cholesky factors ``L`` of correlation matrices ``L L^T``, of density proportional to
``det(L L^T)^(concentration - 1)``; sampled by the onion method (Lewandowski, Kurowicka and
Joe, 2009, https://doi.org/10.1016/j.jmva.2009.04.008, Section 3)."""

from __future__ import annotations

import math

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import arange, randn
from scratchgrad.distributions import constraints
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.distributions.gamma import Beta
from scratchgrad.distributions.utils import broadcast_all
from scratchgrad.dtypes import finfo
from scratchgrad.special import gammaln
from scratchgrad.tensor import Size, Tensor, cat


class LKJCholesky(Distribution):
    """The LKJ distribution of the ``dim`` x ``dim`` lower Cholesky factors of correlation
    matrices, of ``concentration`` eta: uniform over correlation matrices for eta = 1, peaked
    at the identity for eta > 1. Each correlation of ``L L^T`` is then ``2 B - 1`` for B
    of ``Beta(eta - 1 + dim / 2, eta - 1 + dim / 2)``.

    >>> from scratchgrad.creation import eye
    >>> d = LKJCholesky(3, 2.0)
    >>> tuple(d.sample((5,)).shape), round(d.log_prob(eye(3)).item(), 4)
    ((5, 3, 3), -0.6155)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(
        self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None
    ) -> None:
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # row i > 0 of L is (sqrt(y_i) u_i, sqrt(1 - y_i)) for u_i uniform on the unit sphere
        # of R^i and y_i of Beta(i / 2, eta + (dim - 1 - i) / 2)
        c = self.concentration
        i = arange(1, dim, dtype=c.dtype, device=c.device)
        self._beta = Beta(i / 2, c.unsqueeze(-1) + (dim - 1 - i) / 2, validate_args=validate_args)
        super().__init__(c.shape, (dim, dim), validate_args=validate_args)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            # the below-diagonal entries of rows 1 ... dim - 1, normalized: uniform on spheres
            u = randn(shape, dtype=y.dtype, device=y.device).tril(-1)[..., 1:, :]
            w = y.sqrt() * u / u.norm(dim=-1, keepdim=True)
            w = cat([w.new_zeros((*shape[:-2], 1, self.dim)), w], -2)
            # clamped: rounding must not make a diagonal entry zero (L must stay invertible)
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=finfo(w.dtype).tiny).sqrt()
            return w + diagonal.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        # the density of L: prod_{i >= 2} L_ii^(dim - i + 2 (eta - 1)), i counted from 1
        c = self.concentration
        diagonal = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        i = arange(2, self.dim + 1, dtype=c.dtype, device=c.device)
        powers = 2 * (c.unsqueeze(-1) - 1) + self.dim - i
        unnormalized = (powers * diagonal.log()).sum(-1)
        # the normalizer, in closed form: pi^((dim - 1) / 2) Gamma_{dim-1}(alpha - 1/2) /
        # Gamma(alpha)^(dim - 1), alpha = eta + (dim - 1) / 2
        n = self.dim - 1
        alpha = c + 0.5 * n
        log_normalizer = (
            0.5 * n * math.log(math.pi) + (alpha - 0.5).mvlgamma(n) - n * gammaln(alpha)
        )
        return unnormalized - log_normalizer
