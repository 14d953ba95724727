"""Forward-mode AD with dual tensors, as ``torch.autograd.forward_ad``: inside a
``dual_level()``, ``make_dual(x, t)`` pairs a tensor with a tangent, and ``unpack_dual(out)``
gives ``out``'s value and its tangent ``J t`` (the sum over every dual of the level).

PyTorch carries a tangent beside each value through every op (a second set of derivative
formulas). scratchgrad has one set, the backward rules, so a dual here is a tensor whose graph
is recorded from it, and ``unpack_dual`` gets the tangent from that graph by reverse mode twice
(the double-vjp trick of ``func.linearize``): with ``u`` a fresh zero cotangent for ``out``, the
first pass gives ``g = J^T u`` with a graph (linear in ``u``), and the second, the vjp of ``g``
along the tangents, gives ``J t`` exactly. Each ``unpack_dual`` of a new output thus costs two
backward passes (and a walk of its graph), where PyTorch's tangents cost about one more forward
pass in all; the result is kept, so unpacking the same output again is free. What differs:

- a dual (and what is computed from it) requires grad here, since its graph is what gives the
  tangent; in PyTorch it does only when the primal does. ``backward`` through a dual works as
  there: a dual of a tensor that requires grad is a view of it, so gradients reach it.
- ops run under ``no_grad`` record nothing, so their results have no tangent (PyTorch's
  tangents ignore grad mode).
- a custom ``autograd.Function``'s ``jvp`` is never called: the tangent flows through its
  ``backward`` (which must be written with Tensor ops); one without ``backward`` is an error.

As in PyTorch, only one level at a time is supported (``torch.func.jvp`` nests instead), and
leaving it forgets the tangents. A level keeps every dual made in it until it is left, so a
loop making new duals at each step should enter a level per step.

>>> import scratchgrad as sg
>>> import scratchgrad.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(sg.tensor([0.0, 1.0]), sg.tensor([1.0, 2.0]))
...     fwAD.unpack_dual((x * x).sum()).tangent  # 2 x . t
tensor(4.)
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from typing import NamedTuple

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.engine import grad as autograd_grad
from scratchgrad.autograd.function import Alias, Function, _node_of
from scratchgrad.autograd.grad_mode import enable_grad
from scratchgrad.tensor import Tensor

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the value and the tangent (None where there is none)."""

    primal: Tensor
    tangent: Tensor | None


class _Level:
    """One dual level: its duals and their tangents (the duals are kept alive, as the graph of
    an output may need them after the caller dropped them: ``f(make_dual(x, t))``), which
    leaves are our own (those behind duals of tensors not requiring grad), and what was
    unpacked."""

    def __init__(self) -> None:
        self.duals: list[Tensor] = []  # what each tangent is differentiated with respect to
        # the duals make_dual gave, their versions and nodes then
        self.shown: list[tuple[Tensor, int, Function]] = []
        self.tangents: list[Tensor] = []
        self.own: set[int] = set()
        # id(output) -> (weak reference to it, its version then, whether its primal is
        # differentiable, its tangent): an entry goes with its output
        self.unpacked: dict[int, tuple[weakref.ref, int, bool, Tensor | None]] = {}


_levels: list[_Level] = []  # PyTorch supports one level at a time: at most one entry


def enter_dual_level() -> int:
    """Enter a new forward AD level and return it (0): ``make_dual`` and ``unpack_dual`` use
    it by default. Levels do not nest, as in PyTorch.

    >>> level = enter_dual_level()
    >>> exit_dual_level(level=level)
    """
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append(_Level())
    capture_hook.changes += 1  # scratchgrad.jit's calls look again: they run eagerly (entered)
    return 0


def entered() -> bool:
    """Whether a level is entered. A jitted function or compiled module called then runs
    eagerly: a replay's results carry no graph, from which a tangent is found here."""
    return bool(_levels)


def exit_dual_level(*, level: int | None = None) -> None:
    """Leave the current forward AD level: its tangents are dropped (``unpack_dual`` then gives
    ``tangent=None``).

    >>> enter_dual_level()
    0
    >>> exit_dual_level()
    """
    current = len(_levels) - 1
    level = current if level is None else level
    if level != current:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    # (the outputs still alive hold the found tangents, through their weak references'
    # callbacks: let go of them now)
    _levels.pop().unpacked.clear()
    capture_hook.changes += 1  # (scratchgrad.jit's calls look again: they may replay now)


class dual_level(contextlib.ContextDecorator):
    """A context (or decorator) inside which forward AD happens: it enters a level and exits it
    afterwards, so tangents are dropped on the way out. It does not nest, as in PyTorch.

    >>> import scratchgrad as sg
    >>> with dual_level():
    ...     x = make_dual(sg.tensor(2.0), sg.tensor(1.0))
    ...     out = x**3
    ...     unpack_dual(out).tangent  # 3 x**2
    tensor(12.)
    >>> unpack_dual(out).tangent is None
    True
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """``tensor`` paired with ``tangent`` (of its shape) at the current level, as
    ``torch.autograd.forward_ad.make_dual``. The result is a view of ``tensor`` when that
    requires grad (so ``backward`` reaches it), else a new leaf sharing its memory.

    >>> import scratchgrad as sg
    >>> with dual_level():
    ...     x = make_dual(sg.tensor([1.0, 2.0]), sg.tensor([0.5, 0.5]))
    ...     unpack_dual(x.exp()).tangent
    tensor([1.3591, 3.6945])
    """
    current = len(_levels) - 1
    level = current if level is None else level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    for name, t in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual: expected the {name} to be a Tensor, got {type(t)}")
        check_primal_or_tangent(t, name)
    if level != current:
        raise RuntimeError("Invalid level given to _make_dual")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    found = _Walk(tensor, _levels[level])
    if found.reaches_dual:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level} is not supported."
        )
    dual = _paired(tensor, _levels[level])
    _levels[level].tangents.append(tangent)
    return dual


def check_primal_or_tangent(t: Tensor, what: str) -> None:
    """PyTorch's refusal of an integer primal or tangent (``what``), as its ``make_dual``'s."""
    if not backend.is_floating(t.dtype):
        raise ValueError(
            f"Expected {what} to be floating point or complex, but got: {t.dtype.name}"
        )


def _paired(tensor: Tensor, level: _Level) -> Tensor:
    """The dual itself: a tensor the graph is recorded from, kept by the level. Of a tensor
    that requires no grad it is recorded from a hidden leaf (the one differentiated with
    respect to) by ``Alias``, so that it is no leaf and may be changed in place, as PyTorch's
    dual, and writes through it reach ``tensor``'s memory and version counter."""
    if tensor.requires_grad:
        with enable_grad():  # (under no_grad too: a dual must take part in the graph)
            dual = source = tensor.view_as(tensor)
    else:
        source = tensor.detach().requires_grad_()
        level.own.add(id(source))  # (kept alive by the level: the id stays its own)
        with enable_grad():
            dual = Alias.apply(source)
        dual._counter = tensor._shared_counter()
        dual.retain_grad()  # (backward fills its .grad, as a leaf's: PyTorch's dual is one)
    level.duals.append(source)
    level.shown.append((dual, dual._version, dual._ctx))
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``, as ``torch.autograd.forward_ad.unpack_dual``: the
    value (differentiable where ``tensor`` depends on a tensor requiring grad) and the tangent,
    None if ``tensor`` depends on no dual of the level (or no level is entered). A dual's own
    tangent comes back as given; another's is found by two backward passes, then kept until
    ``tensor`` changes in place.

    >>> import scratchgrad as sg
    >>> with dual_level():
    ...     x = make_dual(sg.tensor([1.0, 2.0]), sg.tensor([1.0, 1.0]))
    ...     unpack_dual(x.cumsum(0))
    UnpackedDualTensor(primal=tensor([1., 3.]), tangent=tensor([1., 2.]))
    """
    current = len(_levels) - 1
    level = current if level is None else level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(
            "_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    if current < 0:
        return UnpackedDualTensor(tensor, None)
    entered = _levels[current]
    known = entered.unpacked.get(id(tensor))
    if level == current and known and known[0]() is tensor and known[1] == tensor._version:
        differentiable, tangent = known[2:]
    else:
        found = _Walk(tensor, entered)
        if level != current and found.reaches_dual:  # (PyTorch checks only a dual's level)
            raise RuntimeError("Invalid level given to _fw_primal")
        differentiable = found.reaches_user
        tangent = _tangent(tensor, entered, found) if level == current else None
        if level == current:
            forget = functools.partial(entered.unpacked.pop, id(tensor), None)
            entered.unpacked[id(tensor)] = (
                weakref.ref(tensor, lambda _: forget()),
                tensor._version,
                differentiable,
                tangent,
            )
    primal = tensor.view_as(tensor) if differentiable else tensor.detach()
    return UnpackedDualTensor(primal, tangent)


def _tangent(out: Tensor, level: _Level, found: _Walk) -> Tensor | None:
    """``J t`` summed over the level's duals: the vjp along the tangents of ``J^T u``."""
    for (dual, version, _), tangent in zip(level.shown, level.tangents):
        if dual is out and out._version == version:  # (changed in place: found as any other)
            return tangent
    if not found.reaches_dual:
        return None
    for (dual, _, node), source in zip(level.shown, level.duals):
        if source is dual and dual._ctx is not node:  # its node, differentiated, is gone
            raise RuntimeError(
                "unpack_dual: a dual of a tensor that requires grad (a view of it) was changed "
                "in place, which forward AD here cannot follow (PyTorch's tangents do): make "
                "the dual of a tensor that requires no grad, or change a copy"
            )
    if found.no_backward:
        raise RuntimeError(
            f"unpack_dual: {found.no_backward} has no backward; forward AD here differentiates "
            "by backward passes (a custom Function's jvp is not used): define its backward"
        )
    u = out.new_zeros(out.shape).requires_grad_()
    duals = [level.duals[i] for i in found.duals]
    tangents = [level.tangents[i] for i in found.duals]
    firsts = autograd_grad(out, duals, u, retain_graph=True, create_graph=True, allow_unused=True)
    pairs = [(g, t.to(g.dtype)) for g, t in zip(firsts, tangents) if g is not None]
    # (a g without a graph back to u is a constant zero: round, sign, ... pass nothing)
    pairs = [(g, t) for g, t in pairs if g.requires_grad]
    if not pairs:
        return out.new_zeros(out.shape)
    # the tangent is differentiable where PyTorch's is: in the tangents and in the tensors
    # requiring grad that out depends on
    graph = found.reaches_user or any(t.requires_grad for _, t in pairs)
    (tangent,) = autograd_grad(
        [g for g, _ in pairs],
        u,
        [t for _, t in pairs],
        retain_graph=True,  # (out's own graph must stay for a later backward)
        create_graph=graph,
        allow_unused=True,
    )
    return out.new_zeros(out.shape) if tangent is None else tangent


class _Walk:
    """What ``tensor`` was computed from, found by walking its graph (iteratively: graphs may
    be deep): which duals of the level it depends on, whether it depends on a leaf of the user's
    requiring grad, and the name of a custom Function on the way without backward (or None)."""

    def __init__(self, tensor: Tensor, level: _Level) -> None:
        self.reaches_user, self.no_backward = False, None
        nodes, seen = [_node_of(tensor)], set()
        while nodes:
            node = nodes.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if isinstance(node, Tensor):
                self.reaches_user = self.reaches_user or id(node) not in level.own
                continue
            if type(node).backward is Function.backward:
                self.no_backward = self.no_backward or type(node).__name__
            nodes.extend(node.parents)
        # the level's duals found on the way (by index), the only ones the tangent needs
        self.duals = [i for i, d in enumerate(level.duals) if _node_of(d) in seen]
        self.reaches_dual = bool(self.duals)
