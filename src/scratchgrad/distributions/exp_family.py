"""``ExponentialFamily``, as ``torch.distributions.ExponentialFamily``: the base class of
densities ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``, whose entropy follows from
the log-normalizer ``F`` alone (a Bregman divergence: ``H = F(theta) - <theta, grad F(theta)>
- E[k(x)]``)."""

from __future__ import annotations

from typing import Any

from scratchgrad.autograd.engine import grad
from scratchgrad.distributions.distribution import Distribution
from scratchgrad.tensor import Tensor


class ExponentialFamily(Distribution):
    """A distribution of the exponential family: a subclass gives ``_natural_params`` (the
    tensors theta), ``_log_normalizer(*theta)`` (F) and ``_mean_carrier_measure`` (E[k(x)]);
    ``entropy`` is then computed from F by automatic differentiation.

    >>> from scratchgrad.creation import tensor
    >>> from scratchgrad.distributions import ContinuousBernoulli
    >>> d = ContinuousBernoulli(probs=tensor([0.2], dtype="float64"))
    >>> abs(ExponentialFamily.entropy(d).item() - d.entropy().item()) < 1e-12
    True
    """

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def _log_normalizer_and_gradients(self) -> tuple[list[Tensor], Tensor, tuple[Tensor, ...]]:
        """theta (detached from the parameters, as PyTorch's), F(theta) and grad F(theta)
        (taken with ``create_graph=True``, so differentiable in turn)."""
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*params)
        return params, log_normalizer, grad(log_normalizer.sum(), params, create_graph=True)

    def entropy(self) -> Tensor:
        """The entropy by the Bregman divergence of the log-normalizer."""
        result: Any = -self._mean_carrier_measure
        params, log_normalizer, gradients = self._log_normalizer_and_gradients()
        result = result + log_normalizer
        for param, g in zip(params, gradients):
            result = result - (param * g).reshape(*self._batch_shape, -1).sum(-1)
        return result
