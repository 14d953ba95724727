"""Adam and AdamW: adaptive moment estimation, with coupled or decoupled weight decay.

Adam: Kingma and Ba, https://arxiv.org/abs/1412.6980. AMSGrad: Reddi et al.,
https://openreview.net/forum?id=ryQu7f-RZ. AdamW: Loshchilov and Hutter,
https://arxiv.org/abs/1711.05101.
"""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace, ndarray, xp
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


def adam_defaults(
    lr: float, betas: tuple[float, float], eps: float, weight_decay: float, **options: Any
) -> dict[str, Any]:
    """The defaults of an Adam-family optimizer: its own ``options`` and the shared ones, the
    shared ones checked first (PyTorch's ValueError for the first invalid argument)."""
    check_non_negative(lr=lr, eps=eps)
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
    check_non_negative(weight_decay=weight_decay)
    return {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, **options}


def adam_betas(group: dict[str, Any]) -> tuple[float, float]:
    """The group's ``betas`` as numbers: PyTorch takes 0-d tensors too (``betas=(torch.tensor(0.9),
    torch.tensor(0.999))``), and the updates compute on arrays."""
    beta1, beta2 = group["betas"]
    return float(beta1), float(beta2)


def adam_direction(p: Tensor, group: dict[str, Any]) -> Any:
    """The gradient an Adam-family update follows (see ``update_direction``). With
    ``decoupled_weight_decay`` (AdamW's) the decay does not enter the gradient: it shrinks
    the weights themselves, here, before the step."""
    weight_decay = group["weight_decay"]
    if not group["decoupled_weight_decay"]:
        return update_direction(p, group["maximize"], weight_decay)
    if weight_decay != 0:
        p.array *= 1 - group["lr"] * weight_decay
    return update_direction(p, group["maximize"], 0)


class Adam(Optimizer):
    r"""Adam, as ``torch.optim.Adam`` (same defaults, same formulas, including ``amsgrad``).

    :math:`m \leftarrow \beta_1 m + (1-\beta_1) g`, :math:`v \leftarrow \beta_2 v + (1-\beta_2)
    g^2` (with AMSGrad, :math:`v` in the denominator is the running maximum of all :math:`v`),
    then :math:`\theta \leftarrow \theta - \frac{\text{lr}}{1-\beta_1^t} \cdot
    \frac{m}{\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon}`: eps is added after the bias correction.
    Weight decay adds :math:`\lambda\theta` to the gradient, or with
    ``decoupled_weight_decay=True`` (AdamW) shrinks :math:`\theta` by :math:`1 -
    \text{lr}\,\lambda` before the step.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # the first step moves each entry by lr against the sign of its gradient
    tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        decoupled_weight_decay: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:  # (PyTorch's first check)
            raise ValueError(
                "lr as a Tensor is not supported for capturable=False and foreach=True"
            )
        defaults = adam_defaults(
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _update_sparse(self, group: dict[str, Any], params: list[Tensor]) -> None:
        raise RuntimeError(
            "Adam does not support sparse gradients, please consider SparseAdam instead"
        )

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, (beta1, beta2), eps = group["lr"], adam_betas(group), group["eps"]
        amsgrad = group["amsgrad"]
        moments = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")[: 3 if amsgrad else 2]
        # the gradient itself, without adam_direction's two calls a parameter (a small
        # network's step pays for each call: eager W3 ~2k instructions a parameter)
        plain = group["weight_decay"] == 0 and not group["maximize"]
        for p in params:
            param = p.array
            module = xp if type(param) is ndarray else namespace(param)
            grad = p._grad.array if plain else adam_direction(p, group)  # (the slot: see step)
            state = self.state[p]
            if state:  # counted_state's count, inline after the first step (as above)
                state["step"] = step = state["step"] + 1
            else:
                step = counted_state(state, p, moments)

            # One scratch array serves every intermediate below but the last.
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
            if param.dtype.kind == "c":  # as PyTorch's: updated as view_as_real pairs
                param, grad = real_pairs(param), real_pairs(grad)
                exp_avg, exp_avg_sq = real_pairs(exp_avg), real_pairs(exp_avg_sq)
            scratch = lerp_(exp_avg, grad, 1 - beta1)
            square_average_(exp_avg_sq, grad, beta2, scratch)
            if amsgrad:
                second = real_pairs(state["max_exp_avg_sq"].array)
                module.maximum(second, exp_avg_sq, out=second)
            else:
                second = exp_avg_sq

            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            denom = module.sqrt(second, out=scratch)
            denom /= bias_correction2**0.5
            denom += eps
            # PyTorch's addcdiv_ order, param + (-step_size * exp_avg) / denom, so that the
            # float32 results agree (not param - exp_avg / denom * step_size).
            update = exp_avg * -(lr / bias_correction1)
            update /= denom
            param += update


class AdamW(Adam):
    r"""Adam with decoupled weight decay, as ``torch.optim.AdamW`` (weight decay 0.01 by default).

    The decay shrinks the weights directly, :math:`\theta \leftarrow \theta(1 -
    \text{lr}\,\lambda)`, instead of entering the gradient, so it is not rescaled by the
    adaptive denominator.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # shrunk by 1 - 0.1 * 0.5, then the Adam step
    tensor([ 0.8500, -1.8000], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize=maximize,
            decoupled_weight_decay=True,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
        )
