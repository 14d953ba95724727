"""ASGD: stochastic gradient descent with a decaying step and a running average of the iterates.

Polyak and Juditsky, https://doi.org/10.1137/0330046.
"""

from __future__ import annotations

from typing import Any

from scratchgrad.creation import zeros_like
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
    real_pairs,
    scalar_state,
    update_direction,
)
from scratchgrad.tensor import Tensor


class ASGD(Optimizer):
    r"""Averaged SGD, as ``torch.optim.ASGD`` (same defaults, same formulas).

    :math:`\theta \leftarrow \theta (1 - \lambda\eta) - \eta g` with the step size
    :math:`\eta_t = \text{lr} / (1 + \lambda\,\text{lr}\,t)^\alpha`; the average
    :math:`\bar\theta` (``state["ax"]``) follows :math:`\theta` until step ``t0``, then
    averages the iterates since, :math:`\bar\theta \leftarrow \bar\theta + \mu(\theta -
    \bar\theta)`, :math:`\mu_t = 1/\max(1, t - t_0)`. Evaluate with ``ax`` copied into the
    parameters to use the average.

    ``state["eta"]`` and ``state["mu"]`` are 0-d float32 tensors, as in PyTorch (see
    ``scalar_state``).

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.ASGD([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_non_negative(lr=lr, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, lambd = group["lr"], group["lambd"]
        for p in params:
            state = self.state[p]
            param = real_pairs(p.array)
            grad = real_pairs(update_direction(p, group["maximize"], group["weight_decay"]))
            if not state:  # lazy initialisation, as PyTorch: state appears at the first step
                state["step"] = 0
                state["eta"] = scalar_state(lr)
                state["mu"] = scalar_state(1.0)
                state["ax"] = zeros_like(p)
            state["step"] = step = state["step"] + 1

            eta, mu = float(state["eta"].array), float(state["mu"].array)
            param *= 1 - lambd * eta  # decay, then the gradient step
            param -= grad * eta
            average = real_pairs(state["ax"].array)
            if mu != 1:
                average += (param - average) * mu
            else:
                average[...] = param
            # rounded to the default dtype first (PyTorch's torch.as_tensor of a number) even
            # where the state is float64 (a loaded state dict's, see Optimizer.load_state_dict)
            eta = lr / (1 + lambd * lr * step) ** group["alpha"]
            state["eta"].array[...] = scalar_state(eta).array
            state["mu"].array[...] = scalar_state(1 / max(1, step - group["t0"])).array
