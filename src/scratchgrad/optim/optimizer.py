"""``Optimizer``: the base class of every optimizer, as ``torch.optim.Optimizer``.

An optimizer holds parameter groups (each a dict with ``"params"`` and its own hyper-parameters)
and per-parameter state (momentum buffers, moment estimates). Subclasses implement ``step()``;
their updates run on the parameters' NumPy arrays in place, outside the graph, so a step builds
no graph and allocates as little as it can.
"""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from scratchgrad import backend, sparse
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.grad_mode import enable_grad
from scratchgrad.autograd.graph import increment_version
from scratchgrad.backend import (
    device_of,
    float32,
    float64,
    is_floating,
    namespace,
    ndarray,
    to_device,
    xp,
)
from scratchgrad.creation import from_numpy, zeros_like
from scratchgrad.nn.module import mark_changed
from scratchgrad.tensor import RemovableHandle, Tensor

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]]


def _check_switches(optimizer: str, group: dict[str, Any]) -> None:
    """Refuse a group's implementation switches (PyTorch's ``foreach``, ``fused``,
    ``capturable``, ``differentiable``: constructor arguments, so group keys) where they ask for
    what scratchgrad does not do. ``foreach`` and ``fused`` choose only how PyTorch computes the
    same update (its CPU runs ``fused=True`` for SGD, Adam, AdamW and Adagrad), so they are kept
    and change nothing: one NumPy update serves them all (scripts pass
    ``fused=torch.cuda.is_available()``). ``capturable=True`` keeps the step count on the
    device for CUDA graphs (PyTorch refuses it for CPU parameters) and ``differentiable=True``
    differentiates through the step: both are refused."""
    if group.get("fused") and group.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if group.get("capturable"):
        raise NotImplementedError(
            f"{optimizer}: capturable=True (the step count kept on a CUDA device, for CUDA "
            "graphs) is not supported; PyTorch refuses it for CPU parameters too, and "
            "scratchgrad.jit records any optimizer's step without it"
        )
    if group.get("differentiable"):
        raise NotImplementedError(
            f"{optimizer}: differentiable=True (differentiating through the optimizer's step) "
            "is not supported"
        )


def check_non_negative(**hyperparameters: float) -> None:
    """Raise PyTorch's ValueError for the first hyper-parameter below zero (or NaN), or for
    an ``lr`` given as a tensor of more than one entry."""
    for name, value in hyperparameters.items():
        if name == "lr" and isinstance(value, Tensor) and value.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        what = {"lr": "learning rate", "eps": "epsilon value"}.get(name, f"{name} value")
        if not value >= 0.0:
            raise ValueError(f"Invalid {what}: {value}")


def update_direction(p: Tensor, maximize: bool, weight_decay: float) -> Any:
    """The gradient array an update follows: ``p.grad`` (negated to maximize) plus
    ``weight_decay * p`` (coupled L2 decay). ``p.grad`` itself is never changed: a decayed or
    negated direction is a new array.

    >>> import scratchgrad as sg
    >>> w = sg.tensor([1.0, -2.0], requires_grad=True)
    >>> (w * w).sum().backward()  # grad 2w = [2, -4]
    >>> update_direction(w, maximize=True, weight_decay=0.5)  # -2w + 0.5w
    array([-1.5,  3. ], dtype=float32)
    """
    grad = -p._grad.array if maximize else p._grad.array  # (the slot: see Optimizer.step)
    if weight_decay != 0:
        decayed = p.array * weight_decay
        decayed += grad
        grad = decayed
    return grad


def real_pairs(array: Any) -> Any:
    """A complex array's memory as its (real, imaginary) pairs in a last dim of 2, as
    ``view_as_real`` (what PyTorch's optimizers update for a complex parameter, so that a
    square is taken of each part); any other array as it is.

    >>> import numpy
    >>> real_pairs(numpy.array([1 + 2j])).tolist()
    [[1.0, 2.0]]
    """
    if array.dtype.kind != "c":
        return array
    return array[..., None].view(backend.to_real(array.dtype))


def each_part(p: Tensor, value: float) -> float | complex:
    """``value`` for each part of ``p``'s entries: ``complex(value, value)`` where ``p`` is
    complex (PyTorch's start of Adagrad's and Rprop's state, whose real pairs are updated),
    else ``value``.

    >>> import scratchgrad as sg
    >>> each_part(sg.zeros(1, dtype=sg.cfloat), 0.5), each_part(sg.zeros(1), 0.5)
    ((0.5+0.5j), 0.5)
    """
    return complex(value, value) if p.is_complex() else value


def lerp_(average: Any, target: Any, weight: float, scratch: Any = None) -> Any:
    """Move a running average toward ``target`` by ``weight``, in place, with ``scratch`` (an
    array of the same shape, or None for a new one) for the difference, which it returns for
    the caller's next intermediate. As PyTorch's ``lerp_``: ``average + weight * (target -
    average)`` for a weight under 0.5, ``target - (1 - weight) * (target - average)`` from 0.5
    on (so neither form subtracts nearly equal numbers); PyTorch fuses the multiply and the add
    (an FMA), which NumPy cannot, so a result can differ from its by an ulp."""
    module = xp if type(average) is ndarray else namespace(average)
    if scratch is None:  # (a new array, not NumPy's scalar result for a 0-d parameter)
        scratch = module.empty_like(average)
    module.subtract(target, average, out=scratch)
    if abs(weight) < 0.5:
        scratch *= weight
        average += scratch
    else:
        scratch *= weight - 1
        module.add(target, scratch, out=average)
    return scratch


def square_average_(average: Any, grad: Any, decay: float, scratch: Any = None) -> Any:
    """The running average of squared gradients, in place: ``decay * average + (1 - decay) *
    grad**2``, with ``scratch`` (or None for a new array) for the square, which it returns. In
    PyTorch's order (``average.mul_(decay).addcmul_(grad, grad, value=1 - decay)``), so that
    only its fused multiply-add can make a result differ by an ulp."""
    average *= decay
    module = xp if type(average) is ndarray else namespace(average)
    if scratch is None:  # (a new array, not NumPy's scalar result for a 0-d parameter)
        scratch = module.empty_like(average)
    module.multiply(grad, 1 - decay, out=scratch)
    scratch *= grad
    average += scratch
    return scratch


def scalar_state(value: float) -> Tensor:
    """A 0-d tensor for a scalar kept in an optimizer's state (NAdam's ``mu_product``, ASGD's
    ``eta``, ...): float64 if that is the default dtype, else float32, as PyTorch keeps them
    (rounded at every step, whatever the parameters' dtype; ours do the same, or float64
    trajectories would drift apart from PyTorch's after a few steps)."""
    dtype = float64 if backend.default_float == float64 else float32
    return from_numpy(xp.asarray(value, dtype=dtype))


def counted_state(
    state: dict[str, Any], p: Tensor, zeros: Iterable[str], **initial: Callable[[], Any]
) -> Any:
    """``p``'s optimizer ``state`` with this step counted in ``state["step"]``; made at the first
    step, as PyTorch's (state appears then): ``step``, then each ``initial`` entry's value (made
    by calling it, so only then), then a tensor of zeros like ``p`` for each name in ``zeros``.
    Returns the step number.

    >>> import scratchgrad as sg
    >>> state, p = {}, sg.ones(2)
    >>> counted_state(state, p, ["exp_avg"]), list(state), counted_state(state, p, ["exp_avg"])
    (1, ['step', 'exp_avg'], 2)
    """
    if not state:
        state["step"] = 0
        for name, make in initial.items():
            state[name] = make()
        for name in zeros:
            state[name] = zeros_like(p)
    state["step"] += 1
    return state["step"]


def _replayed_by_jit(step: Callable) -> Callable:
    """``step`` (a subclass's), noted as one call while a jitted step records (see
    ``Optimizer.__init_subclass__``); called as it is otherwise."""

    @functools.wraps(step)
    def replayed_step(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if capture_hook.recorder is None or not capture_hook.recorder.here():
            return step(self, *args, **kwargs)
        recorder = capture_hook.recorder
        called = inspect.signature(step).bind(self, *args, **kwargs)
        if called.kwargs:  # (a replay passes arguments by position)
            recorder.refuse(f"{step.__qualname__}() with keyword-only arguments")
            return step(self, *args, **kwargs)  # (a recording given up: eagerly)
        return recorder.replayed(step, *called.args)

    return replayed_step


def _read_as_numbers(group: dict[str, Any]) -> dict[str, Any]:
    """``group`` with its 0-d tensor hyper-parameters (PyTorch takes ``lr=torch.tensor(0.01)``)
    read as numbers, for the updates, which compute on arrays. ``Optimizer.step`` calls it only
    for a group with a value outside ``_PLAIN``'s types."""
    return {k: v.item() if isinstance(v, Tensor) else v for k, v in group.items()}


# the types of a group's usual values (its params list, numbers, betas, flags)
_PLAIN = frozenset({float, int, bool, str, type(None), list, tuple})


def _with_step_hooks(step: Callable) -> Callable:
    """``step``, run between the optimizer's step pre-hooks and post-hooks when it has any (see
    ``Optimizer.register_step_pre_hook``). Only the outermost step runs them: a subclass's step
    calling ``super().step()`` runs them once."""

    @functools.wraps(step)
    def hooked_step(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if not self._opt_called:  # (read by the LR schedulers' first step; set once: a set
            self._opt_called = True  # goes through __setattr__)
        if self._in_hooked_step or not (self._step_pre_hooks or self._step_post_hooks):
            return step(self, *args, **kwargs)
        return _run_hooked(self, step, args, kwargs)

    return hooked_step


def _run_hooked(self: Optimizer, step: Callable, args: tuple, kwargs: dict) -> Any:
    """``step(self, *args, **kwargs)`` between the step pre-hooks and post-hooks."""
    self._in_hooked_step = True
    args = (self, *args)  # as PyTorch's, the hooks see the optimizer first in ``args``
    try:
        for hook in self._step_pre_hooks:
            changed = hook(self, args, kwargs)
            if changed is not None:
                if not (isinstance(changed, tuple) and len(changed) == 2):
                    raise RuntimeError(
                        f"{type(self).__name__}.step's pre-hook {hook} must return None or "
                        f"a tuple of (new_args, new_kwargs), but got {changed}."
                    )
                args, kwargs = changed
        out = step(*args, **kwargs)
        for hook in self._step_post_hooks:
            hook(self, args, kwargs)
    finally:
        self._in_hooked_step = False
    return out


class Optimizer:
    """Base class for optimizers: parameter groups, per-parameter state, state dicts.

    ``params`` is an iterable of tensors, or of dicts (parameter groups) with a ``"params"``
    entry and any hyper-parameters that differ from ``defaults``.

    >>> import scratchgrad as sg
    >>> w, b = sg.zeros(2, requires_grad=True), sg.zeros(1, requires_grad=True)
    >>> opt = sg.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1)
    >>> [group["lr"] for group in opt.param_groups]
    [0.1, 0.5]
    """

    # Whether the optimizer takes complex parameters: PyTorch's updates take a complex
    # parameter (and its gradient and state) as its view_as_real pairs (see ``real_pairs``); an
    # update with no such form (Adafactor's factored moments) sets this False
    complex_params = True
    # hooks run around every step (register_step_pre_hook); class-level, so that a subclass
    # that skips Optimizer.__init__ still steps
    _step_pre_hooks: tuple[Callable, ...] = ()
    _step_post_hooks: tuple[Callable, ...] = ()
    _in_hooked_step = False
    # whether step() ran since the first LR scheduler of the optimizer was made
    _opt_called = False
    _tracked_by_lr_scheduler = False
    # hooks run around state_dict and load_state_dict (register_state_dict_pre_hook, ...)
    _state_dict_pre_hooks: tuple[Callable, ...] = ()
    _state_dict_post_hooks: tuple[Callable, ...] = ()
    _load_state_dict_pre_hooks: tuple[Callable, ...] = ()
    _load_state_dict_post_hooks: tuple[Callable, ...] = ()
    # set by a recording of scratchgrad.jit that calls the optimizer (see __setattr__)
    _jit_stamp: int | None = None
    # what a jitted step's program, which calls the step's update, would not see change
    _REPLAYED_WITHOUT = frozenset({"_step_pre_hooks", "_step_post_hooks", "step", "zero_grad"})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own ``step`` (PyTorch's way to write an optimizer: a loop reading
        ``group["lr"]``) is, like ``Optimizer.step``, run again whole by each replay of a
        ``scratchgrad.jit`` step: recorded as array calls, the hyper-parameters it reads in
        Python would be frozen (an LR scheduler's changes lost). Every subclass's ``step`` runs
        the step hooks."""
        super().__init_subclass__(**kwargs)
        step = vars(cls).get("step")
        if step is not None:
            step = _with_step_hooks(step)
            if cls.__module__.split(".")[0] != "scratchgrad":  # (LBFGS refuses)
                step = _replayed_by_jit(step)  # its hooks with it, as Optimizer.step's
            cls.step = step

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got a Tensor"
            )
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __setattr__(self, name: str, value: Any) -> None:
        """Set the attribute; a step hook registered or removed, or ``step`` or ``zero_grad``
        replaced on the instance, stamps the optimizer as changed, so that a jitted step
        recorded before records anew (its program calls the generated update or the method
        it recorded: see ``jit.ModuleStamps``)."""
        object.__setattr__(self, name, value)
        if name in self._REPLAYED_WITHOUT:
            mark_changed(self)

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join([*lines, ")"])

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (the defaults fill the rest).

        Useful when fine-tuning: unfreeze a layer and hand it to the optimizer mid-training.
        The parameters may come with their names (``model.named_parameters()``), as in PyTorch:
        the names are kept in ``param_group["param_names"]`` (and so in the state dict).

        >>> import scratchgrad as sg
        >>> opt = sg.optim.SGD(sg.nn.Linear(2, 1).named_parameters(), lr=0.1)
        >>> opt.param_groups[0]["param_names"]
        ['weight', 'bias']
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        param_group["params"] = params = _take_names(param_group, list(params))
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}"
                )
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            if p.is_complex() and not self.complex_params:
                raise NotImplementedError(
                    f"{type(self).__name__}: complex parameters are not supported (as in "
                    "PyTorch): keep a real parameter and view_as_complex it in the model"
                )
        for name, default in self.defaults.items():
            param_group.setdefault(name, default)
        _check_switches(type(self).__name__, param_group)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "each will be updated once per occurrence",
                stacklevel=3,
            )
        if any(
            ("param_names" in group) != ("param_names" in param_group)
            for group in self.param_groups
        ):
            raise ValueError(
                "all optimizer param groups should be with/without names. cannot add param group "
                f"{'with' if 'param_names' in param_group else 'without'} names to the optimizer"
            )
        taken = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in taken for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (the default), or to zeros."""
        # scratchgrad.jit: done again at every replay
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.replayed(Optimizer.zero_grad, self, set_to_none)
        if set_to_none:  # (tested once, not per parameter: the small models' hot path)
            for group in self.param_groups:
                for p in group["params"]:
                    p._grad = None  # (the slot, as in step)
            return
        for group in self.param_groups:
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                if type(grad) is not Tensor and grad.is_sparse:
                    grad.zero_()  # no entries left, as PyTorch's
                else:
                    if grad.grad_fn is not None:  # a gradient made with create_graph=True
                        p.grad = grad = grad.detach()
                    grad.requires_grad = False
                    grad.array.fill(0)

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step`` (``args`` the step's
        positional arguments, the optimizer first, as PyTorch's); it returns None, or a pair
        ``(new_args, new_kwargs)`` that the step is called with instead. Returns a handle whose
        ``remove()`` takes the hook off.

        >>> import scratchgrad as sg
        >>> w = sg.ones(1, requires_grad=True)
        >>> opt = sg.optim.SGD([w], lr=0.5)
        >>> handle = opt.register_step_pre_hook(lambda o, args, kwargs: print("stepping"))
        >>> w.sum().backward()
        >>> opt.step()
        stepping
        >>> handle.remove()
        >>> opt.step()
        """
        return self._add_hook("_step_pre_hooks", hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step`` (an EMA of the weights
        updated there, a step counter). Returns a handle whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> w = sg.ones(1, requires_grad=True)
        >>> opt = sg.optim.SGD([w], lr=0.5)
        >>> _ = opt.register_step_post_hook(lambda o, args, kwargs: print(w.item()))
        >>> w.sum().backward()
        >>> opt.step()
        0.5
        """
        return self._add_hook("_step_post_hooks", hook)

    def _add_hook(self, hooks: str, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Put ``hook`` last (first if ``prepend``) in the tuple ``self.<hooks>``; return the
        handle that takes it off. (Tuples on the instance, over the class's empty ones: a
        subclass that skips ``Optimizer.__init__`` still has them.)"""
        registered = getattr(self, hooks)
        setattr(self, hooks, (hook, *registered) if prepend else (*registered, hook))
        return RemovableHandle(self, hooks, hook)

    def register_state_dict_pre_hook(
        self, hook: Callable[[Optimizer], None], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(optimizer)`` at the start of each ``state_dict()``, after the hooks
        already registered (before them if ``prepend``). Returns a handle whose ``remove()``
        takes it off.

        >>> import scratchgrad as sg
        >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=0.1)
        >>> _ = opt.register_state_dict_pre_hook(lambda o: print("saving"))
        >>> _ = opt.register_state_dict_pre_hook(lambda o: print("first"), prepend=True)
        >>> sd = opt.state_dict()
        first
        saving
        """
        return self._add_hook("_state_dict_pre_hooks", hook, prepend)

    def register_state_dict_post_hook(
        self,
        hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
        prepend: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` at the end of each ``state_dict()``: it may
        change the dict in place, or return a new one, which ``state_dict()`` then returns (and
        the next hook sees). ``prepend`` runs it before the hooks already registered. Returns
        a handle whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=0.1)
        >>> handle = opt.register_state_dict_post_hook(lambda o, sd: {**sd, "epoch": 3})
        >>> opt.state_dict()["epoch"]
        3
        >>> handle.remove()
        >>> "epoch" in opt.state_dict()
        False
        """
        return self._add_hook("_state_dict_post_hooks", hook, prepend)

    def register_load_state_dict_pre_hook(
        self,
        hook: Callable[[Optimizer, dict[str, Any]], dict[str, Any] | None],
        prepend: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` at the start of each ``load_state_dict``,
        with a shallow copy of the dict given (so it may change its top level in place); a dict
        it returns is loaded instead (and seen by the next hook): an old checkpoint converted,
        say. ``prepend`` runs it before the hooks already registered. Returns a handle whose
        ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=0.1)
        >>> sd = opt.state_dict()
        >>> def faster(optimizer, state_dict):
        ...     groups = [{**group, "lr": 0.5} for group in state_dict["param_groups"]]
        ...     return {**state_dict, "param_groups": groups}
        >>> _ = opt.register_load_state_dict_pre_hook(faster)
        >>> opt.load_state_dict(sd)
        >>> opt.param_groups[0]["lr"], sd["param_groups"][0]["lr"]
        (0.5, 0.1)
        """
        return self._add_hook("_load_state_dict_pre_hooks", hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable[[Optimizer], None], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(optimizer)`` at the end of each ``load_state_dict``, once the state and
        the groups are loaded. ``prepend`` runs it before the hooks already registered. Returns
        a handle whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> opt = sg.optim.SGD([sg.zeros(1, requires_grad=True)], lr=0.1)
        >>> sd = opt.state_dict()
        >>> _ = opt.register_load_state_dict_post_hook(lambda o: print(o.param_groups[0]["lr"]))
        >>> sd["param_groups"][0]["lr"] = 0.01
        >>> opt.load_state_dict(sd)
        0.01
        """
        return self._add_hook("_load_state_dict_post_hooks", hook, prepend)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; return ``closure()``'s loss if given.

        The loop every optimizer shares: each group's parameters that have a gradient go to
        the subclass's ``_update`` in one call (which reads the group's hyper-parameters once,
        then moves each parameter and starts its state lazily, as PyTorch does), each counted
        as changed in place; a group with sparse gradients goes to ``_update_sparse``.
        """
        if not self._opt_called:  # (as _with_step_hooks)
            self._opt_called = True
        # scratchgrad.jit: done again at every replay, with its hooks (their Python too)
        if capture_hook.recorder is not None and capture_hook.recorder.here():
            return capture_hook.recorder.replayed(Optimizer.step, self, closure)
        # the step hooks (as _with_step_hooks, inline: this is every built-in optimizer's step;
        # the hooks see a closure among the positional arguments, however it was passed)
        if (self._step_pre_hooks or self._step_post_hooks) and not self._in_hooked_step:
            return _run_hooked(self, Optimizer.step, () if closure is None else (closure,), {})
        loss = None if closure is None else self._evaluate(closure)
        for group in self.param_groups:
            # (the slot behind .grad: its property costs each parameter a call, and the
            # property's checks are for assignments)
            params = [p for p in group["params"] if p._grad is not None]
            increment_version(params)  # first: an update that fails half-way is still seen
            # a tensor among the values (lr=torch.tensor(0.01))? One set test in C, here and
            # not in a call: each step pays it (an isinstance per value cost W1 1.2% of its
            # step, a call 0.5% of its optimizer's)
            if not _PLAIN.issuperset(map(type, group.values())):
                group = _read_as_numbers(group)
            if sparse.made_any and any(p.grad.is_sparse for p in params):
                self._update_sparse(group, params)
            else:
                self._update(group, params)
        return loss

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        """Move each of ``params`` (the group's parameters that have a gradient) in place, given
        its gradient, the group's hyper-parameters and its state, ``self.state[p]``."""
        raise NotImplementedError

    def _update_sparse(self, group: dict[str, Any], params: list[Tensor]) -> None:
        """``_update`` for a group where some gradients are sparse (``embedding(...,
        sparse=True)``'s). Here PyTorch's error, before anything changes: only the optimizers
        that override this (``SGD``, ``Adagrad``, ``SparseAdam``) take sparse gradients."""
        raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")

    @staticmethod
    def _evaluate(closure: Callable[[], Any] | None) -> Any:
        """Run the closure (which recomputes the loss and its gradients) with grad mode on."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # ---- state dicts ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout.

        ``{"state": {index: {name: value}}, "param_groups": [{..., "params": [index, ...]}]}``:
        parameters are numbered in the order the groups list them. As in PyTorch the tensors
        are the live buffers, not copies. ``scratchgrad.save`` writes it to a file.

        >>> import scratchgrad as sg
        >>> w = sg.ones(2, requires_grad=True)
        >>> opt = sg.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> sd = opt.state_dict()
        >>> sorted(sd["state"][0]), sd["param_groups"][0]["params"]
        (['momentum_buffer'], [0])

        Its hooks (``register_state_dict_pre_hook``, ``register_state_dict_post_hook``) run
        first and last.
        """
        for hook in self._state_dict_pre_hooks:
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {
            (index[id(key)] if isinstance(key, Tensor) else key): value
            for key, value in self.state.items()
        }
        state_dict = {"state": state, "param_groups": groups}
        for hook in self._state_dict_post_hooks:
            changed = hook(self, state_dict)
            if changed is not None:
                state_dict = changed
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state saved by ``state_dict()`` (possibly through save/load).

        The saved groups must list as many parameters as this optimizer's, in the same order.
        Buffers are copied, in the dtype of their parameter; unlike PyTorch they never alias
        the tensors of ``state_dict``, so two optimizers loaded from one dict stay independent.
        A saved group without a key of ``defaults`` (a checkpoint from before the key existed)
        takes its default, as PyTorch's optimizers fill theirs. Its hooks
        (``register_load_state_dict_pre_hook``, ``register_load_state_dict_post_hook``) run
        first and last.
        """
        state_dict = state_dict.copy()  # (shallow, as PyTorch's: what the pre-hooks see)
        for hook in self._load_state_dict_pre_hooks:
            changed = hook(self, state_dict)
            if changed is not None:
                state_dict = changed
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    f"of optimizer's group: {len(saved['params'])} != {len(group['params'])}"
                )
            for name, default in self.defaults.items():
                saved.setdefault(name, default)
            _check_switches(type(self).__name__, saved)
        id_map = dict(
            zip(
                itertools.chain.from_iterable(g["params"] for g in saved_groups),
                itertools.chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {name: _cast(param, name, v) for name, v in value.items()}
            else:  # state not tied to a parameter is kept as it is, as PyTorch does
                state[key] = value
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group:  # the saved names win, as in PyTorch
                saved.setdefault("param_names", group["param_names"])
        self.state = state
        self.param_groups = saved_groups
        for hook in self._load_state_dict_post_hooks:
            hook(self)


def _take_names(param_group: dict[str, Any], params: list[Any]) -> list[Any]:
    """``params`` with the names taken out of ``(name, tensor)`` pairs, as PyTorch takes
    ``named_parameters()``; the names go to ``param_group["param_names"]``."""
    names = [p[0] for p in params if isinstance(p, tuple)]
    if not names:
        return params
    if len(names) != len(params):
        raise ValueError(
            "all optimizer params should be with/without names. Some param names are missing"
        )
    param_group["param_names"] = names
    return [p[1] for p in params]


def _cast(param: Tensor, name: str, value: Any) -> Any:
    """A copy of a saved state entry ready for ``param``, as PyTorch's ``load_state_dict``:
    every tensor but the step count goes onto the parameter's device and, for a floating
    parameter, takes its dtype. Scalar state too (NAdam's ``mu_product``, ASGD's ``eta``, made
    in float32 by a step): a float64 parameter's continues in float64 after loading."""
    if not isinstance(value, Tensor):
        return value
    if name == "step":  # PyTorch keeps the step count in a 0-d tensor; here it is an int
        return int(value.item())
    array = value.array
    # astype copies, even for equal dtypes
    array = array.astype(param.dtype) if is_floating(param.dtype) else array.copy()
    return Tensor._make(to_device(array, device_of(param.array)))
