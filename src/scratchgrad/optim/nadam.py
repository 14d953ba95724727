"""NAdam and RAdam: Adam with Nesterov momentum, and Adam with a rectified adaptive step.

NAdam: Dozat, https://openreview.net/forum?id=OM0jvwB8jIp57ZJjtNEZ (with the momentum decay
schedule of PyTorch's implementation). RAdam: Liu et al., https://arxiv.org/abs/1908.03265.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.optim.adam import adam_betas, adam_defaults, adam_direction
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
    counted_state,
    lerp_,
    real_pairs,
    scalar_state,
    square_average_,
)
from scratchgrad.tensor import Tensor


def _moments(
    p: Tensor, group: dict[str, Any], state: dict[str, Any], **initial: Callable[[], Any]
) -> tuple[Any, Any, Any, Any]:
    """Start the state if needed (``initial`` as ``counted_state``'s), count the step, and
    update Adam's two running moments. Returns the arrays of the parameter, the gradient
    followed (weight decay applied) and the two moments, a complex parameter's as their real
    pairs."""
    beta1, beta2 = adam_betas(group)
    grad = real_pairs(adam_direction(p, group))
    counted_state(state, p, ("exp_avg", "exp_avg_sq"), **initial)
    exp_avg, exp_avg_sq = real_pairs(state["exp_avg"].array), real_pairs(state["exp_avg_sq"].array)
    scratch = lerp_(exp_avg, grad, 1 - beta1)
    square_average_(exp_avg_sq, grad, beta2, scratch)
    return real_pairs(p.array), grad, exp_avg, exp_avg_sq


def _first_mu_product() -> Tensor:
    """NAdam's ``mu_product`` when its state is made: the empty product, 1."""
    return scalar_state(1.0)


class NAdam(Optimizer):
    r"""NAdam, as ``torch.optim.NAdam`` (same defaults, same formulas).

    Adam's moments :math:`m, v`, with a momentum coefficient that warms up,
    :math:`\mu_t = \beta_1 (1 - \tfrac12 \cdot 0.96^{t\psi})` (:math:`\psi` is
    ``momentum_decay``), and a Nesterov look-ahead: :math:`\theta \leftarrow \theta -
    \text{lr}\left(\frac{1-\mu_t}{1-\prod_{i\le t}\mu_i} g + \frac{\mu_{t+1}}{1-\prod_{i\le
    t+1}\mu_i} m\right) / (\sqrt{v/(1-\beta_2^t)} + \epsilon)`.

    ``state["mu_product"]`` is a 0-d float32 tensor, as in PyTorch (see ``scalar_state``).

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8944, -1.8944], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
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
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        check_non_negative(momentum_decay=momentum_decay)
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, (beta1, beta2), eps = group["lr"], adam_betas(group), group["eps"]
        momentum_decay = group["momentum_decay"]
        for p in params:
            xp = namespace(p.array)
            state = self.state[p]
            param, grad, exp_avg, exp_avg_sq = _moments(
                p, group, state, mu_product=_first_mu_product
            )
            step = state["step"]
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
            mu_product = state["mu_product"].array
            mu_product *= mu  # rounded to float32 at every step, as PyTorch's
            mu_product_next = float(mu_product) * mu_next

            denom = xp.divide(exp_avg_sq, 1 - beta2**step, out=xp.empty_like(param))
            xp.sqrt(denom, out=denom)
            denom += eps
            # PyTorch's two addcdiv_ (param + (value * moment) / denom), not one quotient of
            # their sum: that rounds otherwise, and where denom is 0 (eps 0) a zero gradient
            # gave inf where PyTorch's 0 / 0 gives NaN
            grad_step = lr * (1.0 - mu) / (1.0 - float(mu_product))
            momentum_step = lr * mu_next / (1.0 - mu_product_next)
            for moment, step_size in ((grad, grad_step), (exp_avg, momentum_step)):
                update = moment * -step_size
                update /= denom
                param += update


class RAdam(Optimizer):
    r"""RAdam, as ``torch.optim.RAdam`` (same defaults, same formulas).

    Adam's moments :math:`m, v`; while the variance of the adaptive step is too uncertain
    (the length of the approximated moving average :math:`\rho_t \le 5`) the step is plain
    momentum, :math:`\theta \leftarrow \theta - \text{lr}\, \hat m`; afterwards Adam's step
    scaled by the rectification :math:`r_t = \sqrt{\frac{(\rho_t-4)(\rho_t-2)\rho_\infty}
    {(\rho_\infty-4)(\rho_\infty-2)\rho_t}}`.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = sg.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # the first steps follow the bias-corrected momentum: lr * g
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
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
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, (beta1, beta2), eps = group["lr"], adam_betas(group), group["eps"]
        for p in params:
            xp = namespace(p.array)
            state = self.state[p]
            param, _, exp_avg, exp_avg_sq = _moments(p, group, state)
            step = state["step"]
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * beta2**step / bias_correction2

            update = exp_avg * (lr / bias_correction1)
            if rho_t > 5.0:
                rect = (
                    (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                ) ** 0.5
                denom = xp.sqrt(exp_avg_sq)
                denom += eps
                update *= bias_correction2**0.5 * rect
                update /= denom
            param -= update
