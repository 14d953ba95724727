"""Adafactor: adaptive step sizes from factored second moments, with sublinear memory.

Shazeer and Stern, https://arxiv.org/abs/1804.04235, with PyTorch's choices for the learning
rate (the cap of the relative step size, and the coefficient of the decoupled weight decay) and
for eps1 (applied to the variance estimate, not to the squared gradient).
"""

from __future__ import annotations

from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.dtypes import finfo
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    counted_state,
    lerp_,
    update_direction,
)
from scratchgrad.tensor import Tensor


def _check_arguments(
    lr: float, beta2_decay: float, eps: tuple[float | None, float], d: float, weight_decay: float
) -> None:
    """PyTorch's ValueError for the first invalid argument (NaN fails every check)."""
    checks = [
        (lr >= 0.0, f"Learning rate should be >= 0 but is: {lr}"),
        (beta2_decay <= 0.0, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
        (eps[0] is None or eps[0] >= 0.0, f"epsilon1 should be >= 0 but is: {eps[0]}"),
        (eps[1] >= 0.0, f"epsilon2 should be >= 0 but is: {eps[1]}"),
        (d >= 1.0, f"Clipping threshold d should be >= 1 but is: {d}"),
        (weight_decay >= 0.0, f"weight_decay should be >= 0 but is: {weight_decay}"),
    ]
    for valid, message in checks:
        if not valid:
            raise ValueError(message)


def _rms(array: Any) -> float:
    """The root mean square of ``array``'s entries, as PyTorch computes it: its 2-norm over the
    square root of its size (a 0-d array included)."""
    return float(namespace(array).linalg.norm(array.reshape(-1))) / array.size**0.5


class Adafactor(Optimizer):
    r"""Adafactor, as ``torch.optim.Adafactor`` (same defaults, same formulas).

    At step :math:`t`, with :math:`G` the gradient (negated to maximize): :math:`\hat\beta_2 = 1
    - t^{\tau}` (:math:`\tau` is ``beta2_decay``), the relative step :math:`\rho = \min(\text{lr},
    1/\sqrt t)` and the step size :math:`\alpha = \max(\epsilon_2, \text{RMS}(\theta))\,\rho`;
    then :math:`\theta \leftarrow \theta(1 - \text{lr}\,\lambda)` (decoupled weight decay). A
    parameter of two or more dimensions keeps only the means of :math:`G^2` over its rows
    (``row_var``, :math:`R`) and columns (``col_var``, :math:`C`), running averages with weight
    :math:`1 - \hat\beta_2`, and estimates :math:`\hat V = R C / \max(\text{mean}(R),
    \epsilon_1)` (over the last two dimensions; the leading ones are a batch); a 0-d or 1-d
    one keeps the running average of :math:`G^2` itself (``variance``, :math:`\hat V`). Then
    :math:`U = G / \max(\sqrt{\hat V}, \epsilon_1)`, clipped to :math:`\hat U = U / \max(1,
    \text{RMS}(U)/d)`, and :math:`\theta \leftarrow \theta - \alpha \hat U`. ``eps=(None,
    ...)`` takes for :math:`\epsilon_1` the machine epsilon of each parameter's dtype (NOTE:
    PyTorch takes the first parameter's for its whole group, which differs only in a group of
    mixed dtypes). ``foreach`` is accepted and changes nothing.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([3.0, -4.0], requires_grad=True)
    >>> opt = sg.optim.Adafactor([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w  # the first step moves each entry by lr * RMS(w) against the sign of its gradient
    tensor([ 2.6464, -3.6464], requires_grad=True)
    """

    # the factored moments have no complex form (PyTorch refuses complex parameters too)
    complex_params = False

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        _check_arguments(lr, beta2_decay, eps, d, weight_decay)
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, beta2_decay, d = group["lr"], group["beta2_decay"], group["d"]
        (eps1, eps2), weight_decay = group["eps"], group["weight_decay"]
        for p in params:
            xp = namespace(p.array)
            param = p.array
            grad = update_direction(p, group["maximize"], 0)  # (decay is decoupled, below)
            factored = param.ndim > 1
            state = self.state[p]
            step = counted_state(state, p, (), **self._initial_state(p, factored))
            epsilon1 = finfo(p.dtype).eps if eps1 is None else eps1
            weight = step**beta2_decay  # 1 - beta2 at this step
            alpha = max(eps2, _rms(param)) * min(lr, 1 / step**0.5)  # before the decay
            if weight_decay != 0:
                param *= 1 - lr * weight_decay

            # One scratch array the size of the parameter serves every intermediate below.
            scratch = xp.multiply(grad, grad, out=xp.empty_like(param))  # (0-d: an array)
            if factored:
                row_var, col_var = state["row_var"].array, state["col_var"].array
                lerp_(row_var, scratch.mean(axis=-1, keepdims=True), weight)
                lerp_(col_var, scratch.mean(axis=-2, keepdims=True), weight)
                xp.multiply(row_var, col_var, out=scratch)  # the outer product R C
                scratch /= xp.maximum(row_var.mean(axis=-2, keepdims=True), epsilon1)
            else:
                variance = state["variance"].array
                lerp_(variance, scratch, weight)  # (lerp_'s own scratch: this one is read)
                scratch[...] = variance
            # eps1 squared under the root keeps its size: max(sqrt(V), eps1)
            xp.maximum(scratch, epsilon1 * epsilon1, out=scratch)
            update = xp.divide(grad, xp.sqrt(scratch, out=scratch), out=scratch)
            update *= -alpha / max(1.0, _rms(update) / d)
            param += update

    @staticmethod
    def _initial_state(p: Tensor, factored: bool) -> dict[str, Any]:
        """Makers of ``p``'s second-moment buffers, in PyTorch's names and shapes: a factored
        parameter's row and column means (its last, or second last, dimension of size 1), or
        the variance of a 0-d or 1-d one."""
        if not factored:
            return {"variance": lambda: p.new_zeros(p.shape)}
        rows, cols = list(p.shape), list(p.shape)
        rows[-1] = cols[-2] = 1
        return {"row_var": lambda: p.new_zeros(rows), "col_var": lambda: p.new_zeros(cols)}
