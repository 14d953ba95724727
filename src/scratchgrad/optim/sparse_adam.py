"""SparseAdam: the lazy Adam of sparse gradients, which moves only the rows they hold."""

from __future__ import annotations

import math
from typing import Any

from scratchgrad.backend import namespace
from scratchgrad.optim.optimizer import Optimizer, ParamsT, counted_state
from scratchgrad.tensor import Tensor

_DENSE_GRAD = "SparseAdam does not support dense gradients, please consider Adam instead"


class SparseAdam(Optimizer):
    r"""Adam for sparse gradients (``nn.Embedding(sparse=True)``'s), as
    ``torch.optim.SparseAdam``: the moments and the parameters change only at the rows the
    coalesced gradient holds (a row absent from a step keeps its moments, undecayed). At such
    a row, :math:`m \leftarrow m + (1-\beta_1)(g - m)`, :math:`v \leftarrow v + (1-\beta_2)(g^2
    - v)`, then :math:`\theta \leftarrow \theta - \text{lr}\frac{\sqrt{1-\beta_2^t}}
    {1-\beta_1^t} \cdot \frac{m}{\sqrt{v} + \epsilon}`, with :math:`t` the parameter's step
    count (every step with a gradient, even an empty one). Dense gradients are refused.

    >>> import scratchgrad as sg
    >>> emb = sg.nn.Embedding(4, 2, sparse=True)
    >>> before = emb.weight.detach().clone()
    >>> opt = sg.optim.SparseAdam(emb.parameters(), lr=0.1)
    >>> emb(sg.tensor([1, 3])).sum().backward()
    >>> opt.step()
    >>> (emb.weight != before).any(dim=1)  # rows 1 and 3 moved, by lr each
    tensor([False,  True, False,  True])
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        if not lr > 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps > 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize})
        for kind, test, reason in (
            ("Sparse", lambda p: p.is_sparse, "SparseAdam requires dense parameter tensors"),
            ("Complex", Tensor.is_complex, "SparseAdam does not support complex parameters"),
        ):
            found = [
                [i, j]
                for i, group in enumerate(self.param_groups)
                for j, p in enumerate(group["params"])
                if test(p)
            ]
            if found:
                raise ValueError(f"{kind} params at indices {found}: {reason}")

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        if params:  # (all dense here)
            raise RuntimeError(_DENSE_GRAD)

    def _update_sparse(self, group: dict[str, Any], params: list[Tensor]) -> None:
        if not all(p.grad.is_sparse for p in params):
            raise RuntimeError(_DENSE_GRAD)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        for p in params:
            state = self.state[p]
            step = counted_state(state, p, ["exp_avg", "exp_avg_sq"])
            grad = (-p.grad if group["maximize"] else p.grad).coalesce()  # the rows unique
            values = grad._values().array
            if values.size == 0:
                continue
            rows = tuple(grad._indices().array)
            # PyTorch's order of operations: the moments as old + (1 - beta) * (new - old)
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
            old = exp_avg[rows]
            exp_avg[rows] = numer = (values - old) * (1 - beta1) + old
            old = exp_avg_sq[rows]
            exp_avg_sq[rows] = denom = (values * values - old) * (1 - beta2) + old
            denom = namespace(denom).sqrt(denom)
            denom += eps
            step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
            p.array[rows] -= numer / denom * step_size
