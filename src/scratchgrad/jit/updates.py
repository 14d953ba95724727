"""Optimizer updates for ``scratchgrad.jit`` replays as generated NumPy code.

While a step records, ``Optimizer.step`` and ``Optimizer.zero_grad`` hand themselves to the
recorder (``Recorder.replayed``), which asks ``replacement`` for code doing the same thing
faster on each replay. For SGD (plain, momentum, dampening, Nesterov, weight decay, maximize),
Adam and AdamW (amsgrad, coupled or decoupled weight decay, maximize) the answer is one
generated function per ``step`` call, a section per param group, which:

- reads at each replay what users change between steps: each group's ``lr``, ``momentum``,
  ``dampening``, ``betas``, ``eps``, ``weight_decay``, the step counts (bias corrections
  computed from them as the eager step does), ``p.grad``, ``p.array`` and the state's arrays;
- makes the eager ``_update``'s NumPy calls in the same order on the same dtypes (so the same
  bits), writing its temporaries with ``out=`` into scratch arrays made once per recording
  and the parameters and state in place, without the per-parameter Python of the eager loop;
- first checks what the code was specialised on (each group's branches: momentum or not,
  Nesterov, weight decay, maximize, amsgrad, which form of lerp; which parameters have a
  gradient; the same groups, state and hyper-parameter types) and otherwise runs the eager
  ``step``: a replay never computes something else than eager code would.

Anything else (other optimizers, subclasses, complex or mixed dtypes, ``set_to_none=False``)
gets no replacement: the recorder replays the Python call itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from scratchgrad.autograd.graph import increment_version
from scratchgrad.backend import xp
from scratchgrad.optim.adam import Adam, AdamW
from scratchgrad.optim.optimizer import Optimizer
from scratchgrad.optim.sgd import SGD
from scratchgrad.tensor import Tensor

_FLOATS = ("float16", "float32", "float64")


class Update:
    """A generated replacement for an optimizer's ``step`` or ``zero_grad``: ``run`` takes
    the same arguments and does what they do. Two are equal when they run the same code on
    the same optimizer (the jit compares its two recordings' constants)."""

    def __init__(self, optimizer: Optimizer, source: str, namespace: dict[str, Any]) -> None:
        self.optimizer, self.source = optimizer, source
        exec(source, namespace)  # noqa: S102  (the code is ours, written below)
        self.run = namespace["run"]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Update)
            and self.optimizer is other.optimizer
            and self.source == other.source
        )

    __hash__ = None  # type: ignore[assignment]


def replacement(function: Callable, args: tuple) -> Update | None:
    """Generated code for ``function(*args)`` (a call ``Recorder.replayed`` notes), or None
    where only the Python call itself can be replayed. Called right after the recording's
    eager call, so the optimizer's state exists."""
    optimizer = args[0] if args else None
    if not isinstance(optimizer, Optimizer) or "_update" in vars(optimizer):
        return None
    if function is Optimizer.zero_grad and args[1:] == (True,):
        return _zero_grad(optimizer)
    if function is Optimizer.step and args[1:] == (None,) and type(optimizer) in _WRITERS:
        return _step(optimizer, _WRITERS[type(optimizer)])
    return None


# ---- the generated code ----------------------------------------------------------------------


class _Code:
    """The constants, the guard and the lines of one generated function."""

    def __init__(self, optimizer: Optimizer, fallback: Callable) -> None:
        self.optimizer = optimizer
        self.reads: list[str] = []  # what the guard looks at, read first
        self.guard: list[str] = []  # conditions for running the lines, else the fallback
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "groups_": optimizer.param_groups,
            "state_": optimizer.state,
            "fallback_": fallback,
            "increment_version": increment_version,
            "NUMBERS": (float, int),
            **{f"np_{name}": getattr(xp, name) for name in _UFUNCS},
        }
        self.guard += ["optimizer.param_groups is groups_", f"len(groups_) == {len(self.groups)}"]
        for g, group in enumerate(self.groups):  # the same groups, the same parameter lists
            self.namespace[f"g{g}"], self.namespace[f"params{g}"] = group, group["params"]
            self.guard += [
                f"groups_[{g}] is g{g}",
                f"g{g}['params'] is params{g}",
                f"len(params{g}) == {len(group['params'])}",
            ]

    @property
    def groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    def compile(self, signature: str, fallback: str) -> Update:
        conditions = "\n        and ".join(self.guard)
        source = [
            f"def run({signature}):",
            *(f"    {line}" for line in self.reads),
            f"    if not (\n        {conditions}\n    ):",
            f"        return {fallback}",
            *(f"    {line}" for line in self.lines),
        ]
        return Update(self.optimizer, "\n".join(source) + "\n", self.namespace)


def _zero_grad(optimizer: Optimizer) -> Update:
    """``optimizer.zero_grad()`` (to None): one assignment per parameter."""
    code = _Code(optimizer, Optimizer.zero_grad)
    for g, group in enumerate(optimizer.param_groups):
        code.lines += [f"params{g}[{i}].grad = None" for i in range(len(group["params"]))]
    return code.compile("optimizer, set_to_none", "fallback_(optimizer, True)")


def _step(optimizer: Optimizer, writer: Callable) -> Update | None:
    """``optimizer.step()``: a section per param group, each written by ``writer``, after a
    guard that the same parameters have a gradient and the same state is held."""
    code = _Code(optimizer, Optimizer.step)
    code.guard += ["optimizer.state is state_", f"len(state_) == {len(optimizer.state)}"]
    scratch = _Scratch(code)
    for g, group in enumerate(optimizer.param_groups):
        params = [(i, p) for i, p in enumerate(group["params"]) if p.grad is not None]
        code.guard += [
            f"params{g}[{i}].grad {'is not' if p.grad is not None else 'is'} None"
            for i, p in enumerate(group["params"])
        ]
        if not all(_plain(p, optimizer.state.get(p, {})) for _, p in params):
            return None
        if writer(code, g, params, scratch) is False:
            return None
    scratch.allocate()
    return code.compile("optimizer, closure", "fallback_(optimizer, closure)")


def _plain(p: Tensor, state: dict) -> bool:
    """Whether a parameter, its gradient and its state's arrays are real floating arrays of
    one dtype and shape (what the scratch arrays and ``out=`` assume)."""
    tensors = [p, p.grad] + [v for k, v in state.items() if k != "step"]
    return all(
        isinstance(t, Tensor)
        and isinstance(t.array, xp.ndarray)
        and t.array.dtype.name in _FLOATS
        and (t.array.dtype, t.array.shape) == (p.array.dtype, p.array.shape)
        for t in tensors
    )


class _Scratch:
    """Scratch arrays for the temporaries of the eager update: one flat array per role and
    dtype, as large as the largest parameter, and a view of it shaped like each parameter
    (the parameters are updated one after another, so they can share it)."""

    def __init__(self, code: _Code) -> None:
        self.code = code
        self.views: list[tuple[str, str, Any]] = []  # (name, role, parameter array)

    def view(self, role: str, g: int, i: int, p: Tensor) -> str:
        name = f"{role}{g}_{i}"
        self.views.append((name, role, p.array))
        return name

    def allocate(self) -> None:
        sizes: dict[tuple[str, Any], int] = {}
        for _, role, array in self.views:
            key = (role, array.dtype)
            sizes[key] = max(sizes.get(key, 0), array.size)
        flat = {key: xp.empty(size, dtype=key[1]) for key, size in sizes.items()}
        for name, role, array in self.views:
            view = flat[role, array.dtype][: array.size].reshape(array.shape)
            self.code.namespace[name] = view


def _group(code: _Code, g: int, numbers: list[str], branches: list[str]) -> dict[str, bool]:
    """Read group ``g``'s hyper-parameters into locals (``lr_0``, ``beta1_0``, ...) and guard
    that ``numbers`` are Python numbers (a NumPy float64 learning rate would make the
    eager update promote to float64, which ``out=`` would hide) and that each of ``branches``
    (an expression over them, e.g. ``momentum == 0``) is what it is now. Returns the
    branches' values."""
    group = code.groups[g]
    values = {k: v for k, v in group.items() if k != "params"}
    for name in values:
        if name == "betas":
            code.reads.append(f"beta1_{g}, beta2_{g} = g{g}['betas']")
        elif name in numbers or any(name in re.findall(r"\w+", b) for b in branches):
            code.reads.append(f"{name}_{g} = g{g}[{name!r}]")
    if "betas" in values:
        values["beta1"], values["beta2"] = values.pop("betas")
    code.guard += [f"type({name}_{g}) in NUMBERS" for name in numbers]
    taken = {}
    for branch in branches:
        value = taken[branch] = bool(eval(branch, {}, values))  # noqa: S307  (ours, below)
        local = re.sub(r"[A-Za-z_]\w*", lambda m: f"{m[0]}_{g}" if m[0] in values else m[0], branch)
        code.guard.append(local if value else f"not ({local})")
    return taken


def _parameters(code: _Code, g: int, params: list, state: bool) -> None:
    """Name each parameter ``p0_1``, its array ``param0_1`` and (``state``) its state dict
    ``s0_1``, which the guard checks is still the optimizer's; count each in-place change
    first, as ``Optimizer.step``."""
    for i, p in params:
        code.namespace[f"p{g}_{i}"] = p
        code.lines.append(f"increment_version(p{g}_{i})")
    for i, p in params:
        code.lines.append(f"param{g}_{i} = p{g}_{i}.array")
        if state:
            code.namespace[f"s{g}_{i}"] = code.optimizer.state[p]
            code.guard.append(f"state_.get(p{g}_{i}) is s{g}_{i}")


def _direction(
    code: _Code, scratch: _Scratch, g: int, i: int, p: Tensor, maximize: bool, decay: bool
) -> str:
    """Lines computing ``update_direction(p, maximize, weight_decay)`` (optimizer.py): the
    gradient, negated to maximize, plus ``weight_decay * p``; returns its name."""
    grad = f"grad{g}_{i}"
    code.lines.append(f"{grad} = p{g}_{i}.grad.array")
    if maximize:
        negated = scratch.view("negated", g, i, p)
        code.lines.append(f"{grad} = np_negative({grad}, out={negated})")
    if decay:
        decayed = scratch.view("decayed", g, i, p)
        code.lines += [
            f"np_multiply(param{g}_{i}, weight_decay_{g}, out={decayed})",
            f"np_add({decayed}, {grad}, out={decayed})",
            f"{grad} = {decayed}",
        ]
    return grad


def _sgd(code: _Code, g: int, params: list, scratch: _Scratch) -> bool:
    """``SGD._update`` (sgd.py) for group ``g``."""
    numbers = ["lr", "momentum", "dampening", "weight_decay"]
    branches = ["maximize", "weight_decay != 0", "momentum == 0", "dampening == 0", "nesterov"]
    branch = _group(code, g, numbers, branches)
    momentum = not branch["momentum == 0"]
    state = code.optimizer.state
    if momentum and any("momentum_buffer" not in state.get(p, {}) for _, p in params):
        return False  # the buffer starts as the first gradient: left to the eager step
    _parameters(code, g, params, state=momentum)
    for i, p in params:
        grad = _direction(code, scratch, g, i, p, branch["maximize"], branch["weight_decay != 0"])
        update = scratch.view("update", g, i, p)
        if not momentum:
            code.lines.append(f"np_multiply({grad}, lr_{g}, out={update})")
        else:
            buf = f"buf{g}_{i}"
            code.lines += [f"{buf} = s{g}_{i}['momentum_buffer'].array", f"{buf} *= momentum_{g}"]
            if branch["dampening == 0"]:
                code.lines.append(f"{buf} += {grad}")
            else:
                damped = scratch.view("damped", g, i, p)
                code.lines += [
                    f"np_multiply(1 - dampening_{g}, {grad}, out={damped})",
                    f"{buf} += {damped}",
                ]
            if branch["nesterov"]:
                code.lines += [
                    f"np_multiply({buf}, momentum_{g}, out={update})",
                    f"np_add({update}, {grad}, out={update})",
                    f"np_multiply({update}, lr_{g}, out={update})",
                ]
            else:
                code.lines.append(f"np_multiply({buf}, lr_{g}, out={update})")
        code.lines.append(f"param{g}_{i} -= {update}")
    return True


def _adam(code: _Code, g: int, params: list, scratch: _Scratch) -> bool:
    """``Adam._update`` (adam.py) for group ``g``, AdamW's included."""
    numbers = ["lr", "beta1", "beta2", "eps", "weight_decay"]
    branches = [
        "maximize",
        "amsgrad",
        "decoupled_weight_decay",
        "weight_decay != 0",
        "abs(1 - beta1) < 0.5",  # which of lerp_'s two forms
    ]
    branch = _group(code, g, numbers, branches)
    decay, decoupled = branch["weight_decay != 0"], branch["decoupled_weight_decay"]
    if any(type(code.optimizer.state[p].get("step")) is not int for _, p in params):
        return False
    _parameters(code, g, params, state=True)
    for i, p in params:
        param, s, step = f"param{g}_{i}", f"s{g}_{i}", f"step{g}_{i}"
        exp_avg, exp_avg_sq = f"exp_avg{g}_{i}", f"exp_avg_sq{g}_{i}"
        if decay and decoupled:
            code.lines.append(f"{param} *= 1 - lr_{g} * weight_decay_{g}")
        grad = _direction(code, scratch, g, i, p, branch["maximize"], decay and not decoupled)
        first, update = scratch.view("scratch", g, i, p), scratch.view("update", g, i, p)
        code.lines += [
            f"{step} = {s}['step'] = {s}['step'] + 1",  # counted_state
            f"{exp_avg} = {s}['exp_avg'].array",
            f"{exp_avg_sq} = {s}['exp_avg_sq'].array",
            f"np_subtract({grad}, {exp_avg}, out={first})",  # lerp_(exp_avg, grad, 1 - beta1)
        ]
        if branch["abs(1 - beta1) < 0.5"]:
            code.lines += [
                f"np_multiply({first}, 1 - beta1_{g}, out={first})",
                f"{exp_avg} += {first}",
            ]
        else:
            code.lines += [
                f"np_multiply({first}, 1 - beta1_{g} - 1, out={first})",
                f"np_add({grad}, {first}, out={exp_avg})",
            ]
        code.lines += [  # square_average_(exp_avg_sq, grad, beta2, scratch)
            f"{exp_avg_sq} *= beta2_{g}",
            f"np_multiply({grad}, 1 - beta2_{g}, out={first})",
            f"np_multiply({first}, {grad}, out={first})",
            f"{exp_avg_sq} += {first}",
        ]
        second = exp_avg_sq
        if branch["amsgrad"]:
            second = f"max_exp_avg_sq{g}_{i}"
            code.lines += [
                f"{second} = {s}['max_exp_avg_sq'].array",
                f"np_maximum({second}, {exp_avg_sq}, out={second})",
            ]
        code.lines += [
            f"np_sqrt({second}, out={first})",
            f"np_divide({first}, (1 - beta2_{g} ** {step}) ** 0.5, out={first})",
            f"np_add({first}, eps_{g}, out={first})",
            f"np_multiply({exp_avg}, -(lr_{g} / (1 - beta1_{g} ** {step})), out={update})",
            f"np_divide({update}, {first}, out={update})",
            f"{param} += {update}",
        ]
    return True


_UFUNCS = ("add", "subtract", "multiply", "divide", "negative", "maximum", "sqrt")
_WRITERS: dict[type, Callable] = {SGD: _sgd, Adam: _adam, AdamW: _adam}
