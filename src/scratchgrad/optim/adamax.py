"""Adamax: Adam with the infinity norm of past gradients in place of their RMS.

Kingma and Ba, https://arxiv.org/abs/1412.6980, section 7.
"""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.optim.adam import adam_betas, adam_defaults
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    counted_state,
    lerp_,
    real_pairs,
    update_direction,
)
from scratchgrad.tensor import Tensor


class Adamax(Optimizer):
    r"""Adamax, as ``torch.optim.Adamax`` (same defaults, same formulas).

    :math:`m \leftarrow \beta_1 m + (1-\beta_1) g`, :math:`u \leftarrow \max(\beta_2 u,
    |g| + \epsilon)`, then :math:`\theta \leftarrow \theta - \frac{\text{lr}}{1-\beta_1^t}
    \cdot \frac{m}{u}` (``u`` is ``exp_inf`` in the state).

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # the first step moves each entry by lr against the sign of its gradient
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = adam_defaults(
            lr,
            betas,
            eps,
            weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, (beta1, beta2), eps = group["lr"], adam_betas(group), group["eps"]
        maximize, weight_decay = group["maximize"], group["weight_decay"]
        for p in params:
            xp = namespace(p.array)
            state = self.state[p]
            param = real_pairs(p.array)
            grad = real_pairs(update_direction(p, maximize, weight_decay))
            step = counted_state(state, p, ("exp_avg", "exp_inf"))

            exp_avg = real_pairs(state["exp_avg"].array)
            exp_inf = real_pairs(state["exp_inf"].array)
            scratch = lerp_(exp_avg, grad, 1 - beta1)
            exp_inf *= beta2
            xp.abs(grad, out=scratch)
            scratch += eps
            xp.maximum(exp_inf, scratch, out=exp_inf)
            update = xp.divide(exp_avg, exp_inf, out=scratch)
            update *= lr / (1 - beta1**step)
            param -= update
