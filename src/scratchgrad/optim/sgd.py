"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.creation import from_numpy
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
    check_switches,
    update_direction,
)
from scratchgrad.tensor import Tensor


class SGD(Optimizer):
    r"""Stochastic gradient descent, as ``torch.optim.SGD`` (same defaults, same formulas).

    With gradient :math:`g`, momentum :math:`\mu`, dampening :math:`\tau`, weight decay
    :math:`\lambda`: :math:`g \leftarrow g + \lambda\theta`; the buffer starts as :math:`b = g`
    and then :math:`b \leftarrow \mu b + (1-\tau) g`; Nesterov uses :math:`g + \mu b`, otherwise
    :math:`b`, as the step direction; :math:`\theta \leftarrow \theta - \text{lr}\cdot` direction.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad()
    ...     (w * w).sum().backward()
    ...     opt.step()
    >>> w
    tensor([ 0.4600, -0.9200], requires_grad=True)
    """

    # linear in the gradient: the same numbers on complex parameters as on their real pairs
    complex_params = True

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_switches(type(self).__name__, foreach, fused, differentiable)
        check_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        maximize, weight_decay = group["maximize"], group["weight_decay"]
        for p in params:
            grad = update_direction(p, maximize, weight_decay)
            if momentum == 0:
                update = grad * lr
            else:
                state = self.state[p]
                if "momentum_buffer" not in state:  # the buffer starts at the first gradient
                    buf = namespace(p.array).array(grad)  # a copy (an array also when 0-d)
                    state["momentum_buffer"] = from_numpy(buf)
                else:
                    buf = state["momentum_buffer"].array
                    buf *= momentum
                    buf += grad if dampening == 0 else (1 - dampening) * grad
                if group["nesterov"]:  # look ahead: step along g + momentum * buf
                    update = buf * momentum
                    update += grad
                    update *= lr
                else:
                    update = buf * lr
            p.array -= update
