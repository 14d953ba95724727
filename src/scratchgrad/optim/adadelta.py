"""Adadelta: step sizes from the ratio of running RMS of past updates and of past gradients.

Zeiler, https://arxiv.org/abs/1212.5701.
"""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
    counted_state,
    real_pairs,
    square_average_,
    update_direction,
)
from scratchgrad.tensor import Tensor


class Adadelta(Optimizer):
    r"""Adadelta, as ``torch.optim.Adadelta`` (same defaults, same formulas).

    :math:`v \leftarrow \rho v + (1-\rho) g^2`, :math:`\Delta = \frac{\sqrt{u + \epsilon}}
    {\sqrt{v + \epsilon}}\, g`, :math:`u \leftarrow \rho u + (1-\rho) \Delta^2`, then
    :math:`\theta \leftarrow \theta - \text{lr}\cdot\Delta` (``v`` is ``square_avg``, ``u``
    is ``acc_delta`` in the state).

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.Adadelta([w], lr=1.0)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # the first steps are tiny: the update RMS starts at sqrt(eps)
    tensor([ 0.9968, -1.9968], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_non_negative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative(eps=eps, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, rho, eps = group["lr"], group["rho"], group["eps"]
        maximize, weight_decay = group["maximize"], group["weight_decay"]
        for p in params:
            xp = namespace(p.array)
            state = self.state[p]
            param = real_pairs(p.array)
            grad = real_pairs(update_direction(p, maximize, weight_decay))
            counted_state(state, p, ("square_avg", "acc_delta"))

            square_avg = real_pairs(state["square_avg"].array)
            acc_delta = real_pairs(state["acc_delta"].array)
            scratch = square_average_(square_avg, grad, rho)
            std = xp.sqrt(square_avg + eps)
            delta = xp.sqrt(acc_delta + eps)
            delta /= std
            delta *= grad
            square_average_(acc_delta, delta, rho, scratch)
            delta *= lr
            param -= delta
