"""Averaging a model's weights over training, as ``torch.optim.swa_utils``: stochastic weight
averaging (SWA, https://arxiv.org/abs/1803.05407) and exponential moving averages (EMA).

``AveragedModel`` keeps a copy of a model whose parameters are the running average of the
model's (``update_parameters`` after each step or epoch), ``SWALR`` anneals the learning rate
to a constant for the averaging phase, and ``update_bn`` recomputes batch-norm statistics for
the averaged weights. The arithmetic is PyTorch's on CPU, so averages equal its bit for bit.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import tensor
from scratchgrad.nn.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from scratchgrad.nn.module import Module
from scratchgrad.optim.lr_scheduler import LRScheduler, _per_group
from scratchgrad.optim.optimizer import Optimizer
from scratchgrad.tensor import Tensor

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``avg_fn(averaged, current, n)``: the exponential moving average
    ``decay * averaged + (1 - decay) * current``, for ``AveragedModel``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """``avg_fn(averaged, current, n)``: the running mean ``averaged + (current - averaged) /
    (n + 1)``, for ``AveragedModel`` (its default)."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """``multi_avg_fn(averaged, current, n)``: the exponential moving average of lists of
    tensors, in place (PyTorch's ``lerp``; integer tensors as ``get_ema_avg_fn``)."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_params: list, current_params: list, num_averaged: Any) -> None:
        for ema, current in zip(ema_params, current_params):
            if ema.is_floating_point():
                ema.lerp_(current, 1 - decay)
            else:
                ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """``multi_avg_fn(averaged, current, n)``: the running mean of lists of tensors, in place
    (PyTorch's ``lerp`` by ``1 / (n + 1)``; integer tensors as ``get_swa_avg_fn``)."""

    @no_grad()
    def swa_update(averaged_params: list, current_params: list, num_averaged: Any) -> None:
        for averaged, current in zip(averaged_params, current_params):
            if averaged.is_floating_point():
                averaged.lerp_(current, 1 / (float(num_averaged) + 1))
            else:
                averaged.add_((current - averaged) / (num_averaged + 1))

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and with ``use_buffers`` its buffers) are an
    average of ``model``'s over the calls of ``update_parameters``: the running mean (SWA) by
    default, or what ``avg_fn(averaged, current, n)`` returns, or what
    ``multi_avg_fn(averaged_list, current_list, n)`` does in place. The first call copies the
    model's values. Without ``use_buffers`` the buffers are copied from the model at each
    call. ``n_averaged`` (a buffer) counts the calls; calling the module calls the copy.

    >>> import scratchgrad as sg
    >>> model = sg.nn.Linear(1, 1, bias=False)
    >>> swa = AveragedModel(model)
    >>> for value in (1.0, 2.0, 6.0):
    ...     with sg.no_grad():
    ...         _ = model.weight.fill_(value)
    ...     swa.update_parameters(model)
    >>> swa.module.weight.item(), swa.n_averaged.item()
    (3.0, 3)
    """

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _averaged(self, model: Module) -> tuple[list, list]:
        """The tensors averaged, in the copy and in ``model`` (detached)."""
        if self.use_buffers:
            ours = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            ours, theirs = self.parameters(), model.parameters()
        pairs = [(a.detach(), b.detach().to(a.device)) for a, b in zip(ours, theirs)]
        return [a for a, _ in pairs], [b for _, b in pairs]

    @no_grad()
    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current parameters (and buffers) into the copy's."""
        averaged, current = self._averaged(model)
        n = self.n_averaged
        if n.item() == 0:
            for a, c in zip(averaged, current):
                a.copy_(c)
        elif self.multi_avg_fn is not None:
            self.multi_avg_fn(averaged, current, n)
        else:
            average = self.avg_fn or get_swa_avg_fn()  # (PyTorch's on CPU: no foreach kernel)
            for a, c in zip(averaged, current):
                a.copy_(average(a, c, n))
        if not self.use_buffers:  # kept as the model's
            for ours, theirs in zip(self.module.buffers(), model.buffers()):
                ours.detach().copy_(theirs.detach().to(ours.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable, model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every batch-norm layer of ``model`` over one pass
    of ``loader`` (batches, or tuples whose first item is the input), as the cumulative
    average of the batches' (momentum ``None``); for a model whose weights were averaged.

    >>> import scratchgrad as sg
    >>> model = sg.nn.BatchNorm1d(1)
    >>> update_bn([sg.tensor([[0.0], [2.0]]), sg.tensor([[4.0], [6.0]])], model)
    >>> model.running_mean.item()
    3.0
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d)):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        model(input if device is None else input.to(device))
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` (one, or one per group) over
    ``anneal_epochs`` steps, by a cosine (``"cos"``) or a straight line (``"linear"``), then
    keep it there: the schedule of SWA's averaging phase.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> scheduler = SWALR(opt, swa_lr=0.5, anneal_epochs=2, anneal_strategy="linear")
    >>> [scheduler.step() or round(scheduler.get_last_lr()[0], 3) for _ in range(3)]
    [0.75, 0.5, 0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        for rate, group in zip(
            _per_group("swa_lr", optimizer.param_groups, swa_lr), optimizer.param_groups
        ):
            group["swa_lr"] = rate
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return t if self.anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    def get_lr(self) -> list[float]:
        """Each group's rate one step further from where the last step left it: the rate
        before annealing is recovered from the current one, as PyTorch does."""
        step = max(1, self.last_epoch) if self.anneal_epochs == 0 else self.last_epoch
        span = max(1, self.anneal_epochs)
        before = self._anneal(max(0, min(1, (step - 1) / span)))
        alpha = self._anneal(max(0, min(1, step / span)))
        rates = []
        for group in self.optimizer.param_groups:
            swa_lr = group["swa_lr"]
            start = swa_lr if before == 1 else (group["lr"] - before * swa_lr) / (1 - before)
            rates.append(swa_lr * alpha + start * (1 - alpha))
        return rates
