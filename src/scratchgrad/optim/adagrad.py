"""Adagrad: per-coordinate step sizes from the sum of all past squared gradients.

Duchi, Hazan and Singer, https://jmlr.org/papers/v12/duchi11a.html.
"""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.creation import full_like
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
    each_part,
    real_pairs,
    update_direction,
)
from scratchgrad.tensor import Tensor


class Adagrad(Optimizer):
    r"""Adagrad, as ``torch.optim.Adagrad`` (same defaults, same formulas).

    :math:`s \leftarrow s + g^2` (``s`` starts at ``initial_accumulator_value``), then
    :math:`\theta \leftarrow \theta - \frac{\text{lr}}{1 + (t-1)\,\text{lr\_decay}} \cdot
    \frac{g}{\sqrt{s} + \epsilon}`.

    As in PyTorch the state of every parameter given to the constructor exists from the start
    (step 0 and the accumulator), not only after its first step; a group added later gets its
    state at its first step. Every accumulator starts at the constructor's
    ``initial_accumulator_value``: as PyTorch's, a group's own value is not read.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.Adagrad([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # the first step is lr against the sign of the gradient
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_non_negative(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
        )
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._state(p)

    def _state(self, p: Tensor) -> dict[str, Any]:
        """``p``'s state, started if it has none yet (step 0, the accumulator at
        ``defaults["initial_accumulator_value"]``, PyTorch's choice whatever the group says)."""
        state = self.state[p]
        if not state:
            initial = each_part(p, self.defaults["initial_accumulator_value"])
            state.update(step=0, sum=full_like(p, initial))
        return state

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        maximize, weight_decay = group["maximize"], group["weight_decay"]
        for p in params:
            xp = namespace(p.array)
            state = self._state(p)
            param = real_pairs(p.array)
            grad = real_pairs(update_direction(p, maximize, weight_decay))
            state["step"] = step = state["step"] + 1

            total = real_pairs(state["sum"].array)
            scratch = xp.multiply(grad, grad, out=xp.empty_like(param))  # (0-d: an array)
            total += scratch
            denom = xp.sqrt(total, out=scratch)
            denom += eps
            update = xp.divide(grad, denom, out=scratch)
            update *= lr / (1 + (step - 1) * lr_decay)
            param -= update

    def _update_sparse(self, group: dict[str, Any], params: list[Tensor]) -> None:
        """As PyTorch's Adagrad with sparse gradients: each gradient coalesced (the update is
        not linear in it), then only its rows' sums and parameters change. Weight decay is
        refused, as in PyTorch."""
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        for p in params:
            if not p.grad.is_sparse:
                self._update(group, [p])
                continue
            state = self._state(p)
            state["step"] = step = state["step"] + 1
            grad = p.grad.coalesce()
            rows, values = tuple(grad._indices().array), grad._values().array
            if group["maximize"]:
                values = -values
            total = state["sum"].array
            total[rows] += values * values
            std = namespace(total).sqrt(total[rows])
            std += eps
            p.array[rows] -= values / std * (lr / (1 + (step - 1) * lr_decay))
