"""Rprop: resilient backpropagation, a step size per coordinate driven by the gradient's sign.

Riedmiller and Braun, https://doi.org/10.1109/ICNN.1993.298623.
"""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.creation import full_like, zeros_like
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
    each_part,
    real_pairs,
    update_direction,
)
from scratchgrad.tensor import Tensor


class Rprop(Optimizer):
    r"""Rprop, as ``torch.optim.Rprop`` (same defaults, same formulas).

    Only the sign of the gradient moves a parameter: each coordinate's step size (``lr`` at
    first) is multiplied by ``etaplus`` while its gradient keeps its sign, by ``etaminus``
    when the sign flips (and that step is skipped: the gradient counts as 0 until the next),
    and kept within ``step_sizes = (min, max)``; then :math:`\theta \leftarrow \theta -
    \text{sign}(g) \cdot \text{step\_size}`. The state holds ``step``, ``prev`` (the last
    gradient used) and ``step_size``. Meant for full-batch training: a mini-batch's noisy
    signs flip the step sizes at random.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.Rprop([w], lr=0.1)
    >>> for _ in range(2):
    ...     opt.zero_grad()
    ...     (w * w).sum().backward()
    ...     opt.step()
    >>> w  # steps of 0.1, then 0.12: the sign held
    tensor([ 0.7800, -1.7800], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_non_negative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p in params:
            xp = namespace(p.array)
            state = self.state[p]
            param = real_pairs(p.array)
            grad = real_pairs(update_direction(p, group["maximize"], 0))
            if not state:  # made at the first step, as PyTorch's
                step_size = full_like(p, each_part(p, group["lr"]))
                state.update(step=0, prev=zeros_like(p), step_size=step_size)
            state["step"] += 1
            prev, step_size = real_pairs(state["prev"].array), real_pairs(state["step_size"].array)

            # The sign of g * prev picks the factor: etaplus where the sign held, etaminus
            # where it flipped, 1 where either is 0 or NaN (PyTorch's sign of NaN is 0).
            factor = xp.multiply(grad, prev, out=xp.empty_like(prev))  # (0-d: an array)
            held, flipped = factor > 0, factor < 0
            factor.fill(1)
            factor[held] = etaplus
            factor[flipped] = etaminus
            step_size *= factor
            xp.clip(step_size, step_size_min, step_size_max, out=step_size)

            # Where the sign flipped no step is taken, and the next step sees no previous sign.
            prev[...] = grad
            prev[flipped] = 0
            direction = xp.nan_to_num(xp.sign(prev, out=factor), copy=False)
            param -= xp.multiply(direction, step_size, out=factor)
