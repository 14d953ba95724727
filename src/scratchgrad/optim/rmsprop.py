"""RMSprop: divide the gradient by a running root mean square of recent gradients.

Hinton's lecture 6e, https://www.cs.toronto.edu/~tijmen/csc321/slides/lecture_slides_lec6.pdf;
the centered variant is from Graves, https://arxiv.org/abs/1308.0850.
"""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
    counted_state,
    lerp_,
    real_pairs,
    square_average_,
    update_direction,
)
from scratchgrad.tensor import Tensor


class RMSprop(Optimizer):
    r"""RMSprop, as ``torch.optim.RMSprop`` (same defaults, same formulas).

    :math:`v \leftarrow \alpha v + (1-\alpha) g^2`; centered, :math:`\bar g \leftarrow \alpha
    \bar g + (1-\alpha) g` and the denominator is :math:`\sqrt{v - \bar g^2} + \epsilon`,
    otherwise :math:`\sqrt{v} + \epsilon` (eps outside the root). With momentum :math:`\mu`,
    :math:`b \leftarrow \mu b + g/\text{denominator}` and :math:`\theta \leftarrow \theta -
    \text{lr}\, b`; without, :math:`\theta \leftarrow \theta - \text{lr}\, g/\text{denominator}`.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # the first step is lr / sqrt(1 - alpha) against the sign of the gradient
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_non_negative(
            lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha
        )
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        momentum, centered = group["momentum"], group["centered"]
        maximize, weight_decay = group["maximize"], group["weight_decay"]
        wanted = {"square_avg": True, "momentum_buffer": momentum > 0, "grad_avg": centered}
        buffers = [name for name, needed in wanted.items() if needed]
        for p in params:
            xp = namespace(p.array)
            state = self.state[p]
            param = real_pairs(p.array)
            grad = real_pairs(update_direction(p, maximize, weight_decay))
            counted_state(state, p, buffers)

            # One scratch array serves every intermediate below.
            square_avg = real_pairs(state["square_avg"].array)
            scratch = square_average_(square_avg, grad, alpha)
            if centered:
                # moves toward g, as square_avg toward g^2
                grad_avg = real_pairs(state["grad_avg"].array)
                lerp_(grad_avg, grad, 1 - alpha, scratch)
                xp.multiply(grad_avg, grad_avg, out=scratch)
                xp.subtract(square_avg, scratch, out=scratch)  # the variance estimate
                denom = xp.sqrt(scratch, out=scratch)
            else:
                denom = xp.sqrt(square_avg, out=scratch)
            denom += eps

            if momentum > 0:
                buf = real_pairs(state["momentum_buffer"].array)
                buf *= momentum
                buf += xp.divide(grad, denom, out=scratch)
                xp.multiply(buf, lr, out=scratch)
            else:
                xp.divide(grad, denom, out=scratch)
                scratch *= lr
            param -= scratch
