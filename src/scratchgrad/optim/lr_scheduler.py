"""Learning-rate schedulers, as ``torch.optim.lr_scheduler``.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups each time ``step()`` is
called (once per epoch, after ``optimizer.step()``). The schedules are computed the way PyTorch
computes them, mostly as a factor on the current learning rate ("chainable"), so sequences match
PyTorch's to the last bit and several schedulers can act on one optimizer.

``step(epoch)``, deprecated in PyTorch, is PyTorch's: a jump to that epoch with the schedule's
closed form where it has one (``get_lr()`` where not), with PyTorch's deprecation warning. As
PyTorch's, the first ``scheduler.step()`` warns when ``optimizer.step()`` has not been called
since the optimizer got its first scheduler.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, SupportsFloat

from scratchgrad.autograd import capture_hook
from scratchgrad.optim.optimizer import Optimizer
from scratchgrad.tensor import Tensor

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)
# PyTorch's words (https://github.com/pytorch/pytorch/issues/20124)
STEP_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
    "later, you should call them in the opposite order: `optimizer.step()` before "
    "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value "
    "of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


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
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "a scheduler with last_epoch >= 0; load the optimizer's state first"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        if not optimizer._tracked_by_lr_scheduler:  # PyTorch wraps its step once, here
            optimizer._tracked_by_lr_scheduler = True
            optimizer._opt_called = False
        self._initial_step()

    def _initial_step(self) -> None:
        """Step to epoch 0; this first step only records the starting rates (SequentialLR
        takes it again for the scheduler it starts with)."""
        self._step_count = 0
        self._is_initial = True
        self._get_lr_called_within_step = False
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for ``self.last_epoch``, one per parameter group."""
        raise NotImplementedError

    def _closed_form_lr(self) -> list[float]:
        """The rates at ``last_epoch`` computed from ``base_lrs`` alone, where the schedule has
        such a formula (PyTorch's ``_get_closed_form_lr``: SequentialLR jumps to epoch 0 with
        it); ``get_lr()`` where it has none."""
        return self.get_lr()

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch and set each group's learning rate; or, given ``epoch`` (the old
        form, deprecated in PyTorch), jump to that epoch.

        >>> import scratchgrad as sg
        >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
        >>> scheduler = sg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
        >>> import warnings
        >>> with warnings.catch_warnings(record=True):  # PyTorch's deprecation warning
        ...     scheduler.step(4)
        >>> scheduler.get_last_lr()
        [0.010000000000000002]
        """
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.replayed(LRScheduler.step, self, epoch)
        if self._step_count == 1 and not self.optimizer._opt_called:
            warnings.warn(STEP_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            self._set_lrs_from(self.get_lr)
            return
        warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        self._set_lrs_from(self._closed_form_lr)

    def _set_lrs_from(self, compute: Callable[[], list[float]]) -> None:
        """Set the rates ``compute()`` gives, flagged as computed within ``step`` (PyTorch's
        ``_get_lr_called_within_step``, which a scheduler's ``get_lr`` may read)."""
        self._get_lr_called_within_step = True
        try:
            lrs = compute()
        finally:
            self._get_lr_called_within_step = False
        self._set_lrs(lrs)

    def _set_lrs(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            _set_lr(group, lr)
        self._last_lr = self._current_lrs()

    def _current_lrs(self) -> list[float]:
        return [_copy(group["lr"]) for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer (plain values: ``scratchgrad.save`` writes it)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict()``."""
        self.__dict__.update(state_dict)


def _copy(lr: Any) -> Any:
    """A learning rate to keep: a tensor's copy (PyTorch's, so that it does not change with the
    group's), a number as it is."""
    return lr.clone() if isinstance(lr, Tensor) else lr


def _set_lr(group: dict[str, Any], lr: Any) -> None:
    """Set ``group["lr"]``. A tensor rate (``lr=torch.tensor(0.01)``) is filled in place, as
    PyTorch's: it stays a tensor, rounded to its dtype, and whoever holds it sees the change."""
    if isinstance(group["lr"], Tensor):
        group["lr"].fill_(lr.item() if isinstance(lr, Tensor) else lr)
    else:
        group["lr"] = lr


class _LRScheduler(LRScheduler):
    """PyTorch's old name for ``LRScheduler``, which older schedulers still subclass."""


class _Lambdas(LRScheduler):
    """LambdaLR and MultiplicativeLR: a user's function of the epoch per parameter group."""

    requires_callable = False  # MultiplicativeLR checks its functions when made; LambdaLR not

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
        for fn in self.lr_lambdas if self.requires_callable else ():
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """As the base class, but functions cannot be saved: each lambda is stored as None, or
        as its attributes when it is a callable object (PyTorch's rule)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [_callable_state(fn) for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, saved_lambdas):
            _load_callable_state(fn, saved)


class LambdaLR(_Lambdas):
    """The initial learning rate times ``lr_lambda(epoch)`` (one function, or one per group).

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = LambdaLR(opt, lambda epoch: 0.5**epoch)
    >>> for _ in range(3):
    ...     sched.step()
    >>> sched.get_last_lr()
    [0.125]
    """

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_Lambdas):
    """Multiply the current learning rate by ``lr_lambda(epoch)`` at each step after the first
    (one function, or one per group), as ``torch.optim.lr_scheduler.MultiplicativeLR``: a
    factor on ``group["lr"]``, so it chains with other schedulers. Its state dict is
    LambdaLR's (a function is saved as None, a callable object as its attributes).

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = MultiplicativeLR(opt, lambda epoch: 0.5 if epoch % 2 else 1.0)
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(4):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    requires_callable = True

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._current_lrs())]


def _callable_state(fn: Callable | None) -> dict | None:
    """What a state dict keeps of a user's function (PyTorch's rule): nothing of a function or
    lambda (it cannot be saved), the attributes of a callable object."""
    return None if fn is None or isinstance(fn, types.FunctionType) else dict(vars(fn))


def _load_callable_state(fn: Callable | None, saved: dict | None) -> None:
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

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


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

    def _closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]

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

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


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

    def _closed_form_lr(self) -> list[float]:
        return _cosine(self.base_lrs, self.eta_min, self.last_epoch, self.T_max)


def _cosine(base_lrs: list[float], eta_min: float, t: float, T: float) -> list[float]:
    """Epoch ``t`` of the cosine from each base rate (at 0) down to ``eta_min`` (at ``T``),
    computed in PyTorch's order of operations."""
    return [eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / T)) / 2 for base in base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` until epoch ``total_iters``, then restore it.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(3):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        factor = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base * factor for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Multiply the learning rate by a factor going linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` epochs, then keep it. As PyTorch, each step scales the
    current rate by the ratio of consecutive factors, so it chains with other schedulers.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(4):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        rise = self.end_factor - self.start_factor
        ratio = 1.0 + rise / (self.total_iters * self.start_factor + (self.last_epoch - 1) * rise)
        return [lr * ratio for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        rise, T = self.end_factor - self.start_factor, self.total_iters
        factor = self.start_factor + rise * min(T, self.last_epoch) / T
        return [base * factor for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the learning rate to 0 in ``total_iters`` epochs along
    ``base_lr * (1 - epoch / total_iters) ** power``, then keep it. Chainable, as PyTorch's.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = PolynomialLR(opt, total_iters=4, power=2.0)
    >>> lrs = []
    >>> for _ in range(5):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.5625, 0.25, 0.0625, 0.0, 0.0]
    """

    def __init__(
        self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        t, T = self.last_epoch, self.total_iters
        decay = ((1.0 - t / T) / (1.0 - (t - 1) / T)) ** self.power
        return [lr * decay for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        decay = (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
        return [base * decay for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""SGDR (Loshchilov and Hutter, https://arxiv.org/abs/1608.03983): anneal the learning rate
    along a cosine from its initial value towards ``eta_min`` over ``T_i`` epochs, then restart;
    the first period is ``T_0`` epochs, each next one ``T_mult`` times longer:
    :math:`\eta_t = \eta_{min} + \frac12(\eta_{max} - \eta_{min})(1 + \cos(\pi T_{cur}/T_i))`.

    ``step(epoch)`` jumps to ``epoch``, which may be fractional to step after every batch
    (``scheduler.step(epoch + i / iters)``), as PyTorch's.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> sched = CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(6):
    ...     sched.step()
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    >>> lrs
    [1.0, 0.5, 1.0, 0.8536, 0.5, 0.1464, 1.0]
    >>> sched.step(2.5)
    >>> round(sched.get_last_lr()[0], 4), sched.last_epoch
    (0.9619, 2)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0  # the length of the current period
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch  # epochs since the last restart
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return _cosine(self.base_lrs, self.eta_min, self.T_cur, self.T_i)

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (a float steps within an epoch)."""
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.replayed(CosineAnnealingWarmRestarts.step, self, epoch)
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch < self.T_0:
            self.T_i = self.T_0
            self.T_cur = epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:  # in period n, which starts at T_0 (T_mult**n - 1) / (T_mult - 1)
            n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**n
        self.last_epoch = math.floor(epoch)
        self._set_lrs_from(self.get_lr)


class _CyclesMomentum(LRScheduler):
    """OneCycleLR and CyclicLR: with ``cycle_momentum`` they move SGD's momentum (Adam's beta1)
    against the learning rate."""

    def _init_momentum(
        self,
        optimizer: Optimizer,
        cycle_momentum: bool,
        base_momentum: float | list[float],
        max_momentum: float | list[float],
        last_epoch: int,
    ) -> tuple[list[float], list[float]]:
        """Check that the optimizer has a momentum and, starting afresh, set it to each group's
        ``max_momentum``; returns the groups' base and max momenta (none without cycling)."""
        self.cycle_momentum = cycle_momentum
        if not cycle_momentum:
            return [], []
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError(
                "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
            )
        self.use_beta1 = "betas" in optimizer.defaults
        groups = optimizer.param_groups
        highs = _per_group("max_momentum", groups, max_momentum)
        lows = _per_group("base_momentum", groups, base_momentum)
        if last_epoch == -1:
            for group, high, low in zip(groups, highs, lows):
                self._set_momentum(group, high)
                group["max_momentum"], group["base_momentum"] = high, low
        return lows, highs

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum


_PHASE_KEYS = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")


class OneCycleLR(_CyclesMomentum):
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
        # (the phase's last step, then the group keys of the rates and momenta it goes between;
        # PyTorch's names, which its state_dict has)
        end = float(pct_start * self.total_steps) - 1
        phases = [(end, "initial_lr", "max_lr", "max_momentum", "base_momentum")]
        if three_phase:
            end_down = float(2 * pct_start * self.total_steps) - 2
            phases.append((end_down, "max_lr", "initial_lr", "base_momentum", "max_momentum"))
            phases.append(
                (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")
            )
        else:
            phases.append(
                (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")
            )
        self._schedule_phases = [dict(zip(_PHASE_KEYS, phase)) for phase in phases]
        self._anneal_func_type = anneal_strategy
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, lr in zip(groups, _per_group("max_lr", groups, max_lr)):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self._init_momentum(optimizer, cycle_momentum, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

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
            for i, phase in enumerate(self._schedule_phases):
                end, lr_from, lr_to, momentum_from, momentum_to = phase.values()
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[momentum_from], group[momentum_to], pct)
                        self._set_momentum(group, momentum)
                    break
                start = end
        return lrs


class CyclicLR(_CyclesMomentum):
    """The cyclical learning rate policy (Smith, https://arxiv.org/abs/1506.01186), stepped after
    every batch: the rate climbs from ``base_lr`` to ``max_lr`` in ``step_size_up`` steps and
    comes back down in ``step_size_down`` (default: as many), the height of each cycle scaled by
    ``mode``: ``"triangular"`` (1), ``"triangular2"`` (halved every cycle), ``"exp_range"``
    (``gamma**iteration``), or by ``scale_fn`` of the cycle number (``scale_mode="cycle"``) or of
    the iteration (``"iterations"``). With ``cycle_momentum`` the momentum (Adam's beta1) moves
    the other way, between ``max_momentum`` and ``base_momentum``. Not chainable.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    >>> sched = CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2, mode="triangular2")
    >>> lrs = [round(sched.get_last_lr()[0], 4)]
    >>> for _ in range(6):
    ...     sched.step()
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    >>> lrs, round(opt.param_groups[0]["momentum"], 4)
    ([0.1, 0.3, 0.5, 0.3, 0.1, 0.2, 0.3], 0.85)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        groups = optimizer.param_groups
        base_lrs = _per_group("base_lr", groups, base_lr)
        if last_epoch == -1:
            for group, lr in zip(groups, base_lrs):
                _set_lr(group, lr)
        self.max_lrs = _per_group("max_lr", groups, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        if scale_fn is None:  # the modes scale by the cycle's number, exp_range by the iteration
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode
        lows, highs = self._init_momentum(
            optimizer, cycle_momentum, base_momentum, max_momentum, last_epoch
        )
        if cycle_momentum:  # (only then in PyTorch's state dict)
            self.base_momentums, self.max_momentums = lows, highs
        super().__init__(optimizer, last_epoch)
        # NOTE: set after the first step, which (as PyTorch's) starts from the groups' initial_lr
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The height of the cycle at ``x`` (the cycle number or the iteration), as a fraction."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        """The rates of this step; sets the momenta too (as PyTorch's ``get_lr``)."""
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle  # how far into the cycle
        up = self.step_ratio
        rise = x / up if x <= up else (x - 1) / (up - 1)  # 0 at the cycle's ends, 1 at its top
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [low + (high - low) * rise * scale for low, high in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, high in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                self._set_momentum(group, high - (high - low) * rise * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """As the base class, with ``scale_fn`` kept as LambdaLR keeps its lambdas."""
        state = super().state_dict()
        state["_scale_fn_custom"] = _callable_state(self._scale_fn_custom)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved_fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        _load_callable_state(self._scale_fn_custom, saved_fn)


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
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
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
                _set_lr(group, new_lr)

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return a < best * (1.0 - self.threshold)
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold


class _OfSchedulers(LRScheduler):
    """SequentialLR and ChainedScheduler: schedulers of one optimizer, driven together."""

    _schedulers: list[LRScheduler]

    def _check_schedulers(self, optimizer: Optimizer, schedulers: list[LRScheduler]) -> None:
        """PyTorch's checks: each has an optimizer, ``optimizer``, and no plateau to be told."""
        name = type(self).__name__
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                    "additional kwargs to be specified when calling `step`, but got one at "
                    f"index {i} in the given schedulers sequence."
                )
            if optimizer != scheduler.optimizer:
                raise ValueError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(scheduler).__name__} at index {i} has "
                    f"{scheduler.optimizer}, which is different from {type(optimizer).__name__}."
                )

    def state_dict(self) -> dict[str, Any]:
        """As the base class, with each scheduler's own state dict."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved_schedulers = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, saved in zip(self._schedulers, saved_schedulers):
            scheduler.load_state_dict(saved)


class SequentialLR(_OfSchedulers):
    """Run ``schedulers`` one after another, switching at each epoch of ``milestones``: the
    scheduler taking over restarts at its epoch 0 from its formula on the initial rates (where
    it has one, as PyTorch's ``_get_closed_form_lr``), e.g. a warmup followed by a decay.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> warmup = LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> decay = ExponentialLR(opt, gamma=0.5)
    >>> sched = SequentialLR(opt, schedulers=[warmup, decay], milestones=[2])
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(4):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler, but got no scheduler."
            )
        self._check_schedulers(optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than "
                f"the number of milestone points, but got number of schedulers {len(schedulers)} "
                f"and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            _set_lr(group, group["initial_lr"])
        self._undo_initial_steps(self)  # made when the schedulers were created
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo_initial_steps(self, scheduler: LRScheduler) -> None:
        if hasattr(scheduler, "_schedulers"):  # a SequentialLR inside: each of its schedulers
            for inner in scheduler._schedulers:
                self._undo_initial_steps(inner)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        """Advance one epoch: step the scheduler in charge, or restart the one taking over."""
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.replayed(SequentialLR.step, self)
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            scheduler.last_epoch = 0
            scheduler._set_lrs_from(scheduler._closed_form_lr)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_OfSchedulers):
    """Step all ``schedulers`` (of one optimizer) at each ``step()``, one after the other, as
    ``torch.optim.lr_scheduler.ChainedScheduler``: each chainable one scales what those before
    it left in ``group["lr"]``. ``optimizer`` defaults to the first scheduler's.

    >>> import scratchgrad as sg
    >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=1.0)
    >>> warmup = ConstantLR(opt, factor=0.5, total_iters=2)
    >>> decay = ExponentialLR(opt, gamma=0.5)
    >>> sched = ChainedScheduler([warmup, decay])
    >>> lrs = [sched.get_last_lr()[0]]
    >>> for _ in range(3):
    ...     sched.step()
    ...     lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [0.5, 0.25, 0.25, 0.125]
    """

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None
    ) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                f"{type(self).__name__} expects at least one scheduler to be chained, but got "
                "no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        self._check_schedulers(optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = self._current_lrs()

    def step(self) -> None:
        """Step each scheduler, in order."""
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.replayed(ChainedScheduler.step, self)
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()
