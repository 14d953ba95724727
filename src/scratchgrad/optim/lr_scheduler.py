"""Learning-rate schedulers, as ``torch.optim.lr_scheduler``.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups each time ``step()`` is
called (once per epoch, after ``optimizer.step()``). The schedules are computed the way PyTorch
computes them, mostly as a factor on the current learning rate ("chainable"), so sequences match
PyTorch's to the last bit and several schedulers can act on one optimizer.

Differences from PyTorch: ``step(epoch)`` (deprecated there) is not offered, and no warnings
are given about calling ``scheduler.step()`` before ``optimizer.step()``.
"""

from __future__ import annotations

import math
import types
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, SupportsFloat

from scratchgrad.autograd import capture_hook
from scratchgrad.optim.optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses say in ``get_lr()`` what the learning rates become at
    ``last_epoch``.

    Creating a scheduler sets ``group["initial_lr"]`` and takes one step to epoch 0, so a
    scheduler made before ``optimizer.load_state_dict`` would overwrite the loaded rates: make
    the scheduler first, then load.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "a scheduler with last_epoch >= 0; load the optimizer's state first"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._is_initial = True  # the first step only records the starting rates
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for ``self.last_epoch``, one per parameter group."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set."""
        return self._last_lr

    def step(self) -> None:
        """Advance one epoch and set each group's learning rate."""
        if capture_hook.recorder is not None:  # scratchgrad.jit: done again at every replay
            return capture_hook.recorder.replayed(LRScheduler.step, self)
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer (plain values: ``scratchgrad.save`` writes it)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict()``."""
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """The initial learning rate times ``lr_lambda(epoch)`` (one function, or one per group).

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = LambdaLR(opt, lambda epoch: 0.5**epoch)
    >>> for _ in range(3):
    ...     sched.step()
    >>> sched.get_last_lr()
    [0.125]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        """As the base class, but functions cannot be saved: each lambda is stored as None, or
        as its attributes when it is a callable object (PyTorch's rule)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(vars(fn)) for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, saved_lambdas):
            if saved is not None:
                vars(fn).update(saved)


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each epoch listed in ``milestones`` (by
    ``gamma**n`` when an epoch is listed n times).

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
    >>> lrs = []
    >>> for _ in range(4):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.5, 0.5, 0.25, 0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current_lrs()]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self.milestones = Counter(self.milestones)  # a file gives back a plain dict


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = ExponentialLR(opt, gamma=0.5)
    >>> sched.step(); sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]


class CosineAnnealingLR(LRScheduler):
    r"""Anneal the learning rate along a cosine from its initial value to ``eta_min`` in
    ``T_max`` epochs (and back up in the next ``T_max``, and so on):
    :math:`\eta_t = \eta_{min} + \frac12(\eta_{max} - \eta_{min})(1 + \cos(\pi t/T_{max}))`.

    As PyTorch, each step scales the current rate by the ratio of consecutive cosine values, so
    changes made to ``group["lr"]`` by others carry through.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = CosineAnnealingLR(opt, T_max=2)
    >>> lrs = []
    >>> for _ in range(4):
    ...     sched.step()
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    >>> lrs
    [0.5, 0.0, 0.5, 1.0]
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if (t - 1 - T) % (2 * T) == 0:  # leaving the minimum, where the ratio below is 0/0
            return [
                lr + (base - eta_min) * (1 - math.cos(math.pi / T)) / 2
                for base, lr in zip(self.base_lrs, self._current_lrs())
            ]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - eta_min) + eta_min for lr in self._current_lrs()]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin, https://arxiv.org/abs/1708.07120), stepped after
    every batch: the rate rises from ``max_lr / div_factor`` to ``max_lr`` over the first
    ``pct_start`` of ``total_steps`` (or ``epochs * steps_per_epoch``), then falls to
    ``initial_lr / final_div_factor`` (``three_phase``: back to the initial rate first); with
    ``cycle_momentum`` the momentum (Adam's beta1) moves the other way, between
    ``max_momentum`` and ``base_momentum``. Not chainable: each step computes the rates anew,
    as PyTorch's, whose float operations it makes in the same order.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = OneCycleLR(opt, max_lr=1.0, total_steps=4)
    >>> lrs = [round(sched.get_last_lr()[0], 4)]
    >>> for _ in range(3):
    ...     sched.step()
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    >>> lrs, round(opt.param_groups[0]["momentum"], 4)
    ([0.04, 0.8117, 0.2831, 0.0], 0.95)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self.anneal_strategy = anneal_strategy
        # (the phase's last step, then the group keys of the rates and momenta it goes between)
        end = float(pct_start * self.total_steps) - 1
        self.phases = [(end, "initial_lr", "max_lr", "max_momentum", "base_momentum")]
        if three_phase:
            end_down = float(2 * pct_start * self.total_steps) - 2
            self.phases.append((end_down, "max_lr", "initial_lr", "base_momentum", "max_momentum"))
            self.phases.append(
                (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")
            )
        else:
            self.phases.append(
                (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")
            )
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, lr in zip(groups, _per_group("max_lr", groups, max_lr)):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", groups, max_momentum)
            lows = _per_group("base_momentum", groups, base_momentum)
            if last_epoch == -1:
                for group, high, low in zip(groups, highs, lows):
                    self._set_momentum(group, high)
                    group["max_momentum"], group["base_momentum"] = high, low
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def get_lr(self) -> list[float]:
        """The rates of this step; sets the momenta too (as PyTorch's ``get_lr``)."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr_from, lr_to, momentum_from, momentum_to) in enumerate(self.phases):
                if step <= end or i == len(self.phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[momentum_from], group[momentum_to], pct)
                        self._set_momentum(group, momentum)
                    break
                start = end
        return lrs


def _total_steps(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
    """OneCycleLR's length: ``total_steps``, else ``epochs * steps_per_epoch``."""
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"Expected positive integer {name}, but got {value}")
    return epochs * steps_per_epoch


def _per_group(name: str, groups: list[dict], value: Any) -> list:
    """``value`` for each param group: one for all, or a list of one per group."""
    if not isinstance(value, (list, tuple)):
        return [value] * len(groups)
    if len(value) != len(groups):
        raise ValueError(
            f"{name} must have the same length as optimizer.param_groups. {name} has "
            f"{len(value)} values, param_groups has {len(groups)}."
        )
    return list(value)


class ReduceLROnPlateau(LRScheduler):
    """Reduce the learning rate by ``factor`` when a metric has stopped improving.

    ``step(metric)`` once per epoch. In ``mode="min"`` an epoch improves when the metric is
    below ``best * (1 - threshold)`` (``threshold_mode="rel"``) or ``best - threshold``
    (``"abs"``); ``"max"`` mirrors it. After more than ``patience`` epochs without improvement
    every group's rate becomes ``max(lr * factor, min_lr)`` (unless that changes it by less than
    ``eps``), then ``cooldown`` epochs pass before bad epochs are counted again.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = ReduceLROnPlateau(opt, patience=1, factor=0.5)
    >>> for loss in [3.0, 2.0, 2.0, 2.0]:
    ...     sched.step(loss)
    >>> sched.get_last_lr()
    [0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode!r} is unknown: use 'min' or 'max'")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode!r} is unknown: use 'rel' or 'abs'")
        self.optimizer = optimizer
        self.factor = factor
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: SupportsFloat) -> None:  # type: ignore[override]
        """Record one epoch's metric and reduce the rates if it has plateaued."""
        if capture_hook.recorder is not None:  # scratchgrad.jit: done again at every replay
            return capture_hook.recorder.replayed(ReduceLROnPlateau.step, self, metrics)
        current = float(metrics)  # a 0-d tensor works too
        self.last_epoch += 1
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the optimizer ({len(groups)}) differs from "
                    f"when ReduceLROnPlateau was initialized ({len(self.min_lrs)}); set min_lrs "
                    "to one value per group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return a < best * (1.0 - self.threshold)
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold
