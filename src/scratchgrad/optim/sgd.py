"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any

from scratchgrad import backend
from scratchgrad.backend import namespace
from scratchgrad.creation import from_numpy
from scratchgrad.optim.optimizer import (
    Optimizer,
    ParamsT,
    check_non_negative,
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
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        maximize, weight_decay = group["maximize"], group["weight_decay"]
        plain = weight_decay == 0 and not maximize  # the gradient itself, as Adam's (one call less)
        if plain and momentum == 0:  # the textbook step, p -= lr * g: its tests out of the loop
            for p in params:
                p.array -= p._grad.array * lr
            return
        for p in params:
            grad = p._grad.array if plain else update_direction(p, maximize, weight_decay)
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

    def _update_sparse(self, group: dict[str, Any], params: list[Tensor]) -> None:
        """As PyTorch's SGD with sparse gradients: without momentum, each entry's ``lr * value``
        is added to its row in turn (repeated rows too, PyTorch's ``index_add_``), the other
        rows untouched; with momentum the step is the dense one, from a dense buffer (PyTorch's
        buffer is sparse, with the same numbers). Weight decay is refused, as in PyTorch."""
        if group["weight_decay"] != 0:
            raise RuntimeError(
                "SGD: weight_decay is not supported with sparse gradients (PyTorch: "
                "add(sparse, dense) is not supported. Use add(dense, sparse) instead.)"
            )
        lr = group["lr"]
        for p in params:
            grad = p.grad
            if not grad.is_sparse:
                self._update(group, [p])
            elif group["momentum"] == 0:
                step = grad._values().array * (lr if group["maximize"] else -lr)
                backend.scatter_add(p.array, tuple(grad._indices().array), step)
            else:  # the dense update, on the dense gradient for the time of the step
                p.grad = grad.to_dense()
                try:
                    self._update(group, [p])
                finally:
                    p.grad = grad
