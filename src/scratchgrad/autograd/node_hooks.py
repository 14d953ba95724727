"""Hooks on a graph node (``grad_fn.register_prehook``, ``grad_fn.register_hook``), as PyTorch's.

A node given its first hook changes class, to a subclass of its own whose ``backward`` runs
the hooks around the op's: the engine's walk tests nothing for them, so a backward through
nodes without hooks costs what it did. The engine runs the gradient hooks of the node's
result (``Tensor.register_hook``, the node's ``hooks``) before the node's backward, so before
its pre-hooks, and an ``autograd.grad`` input's gradient is taken before them, as PyTorch's.
"""

from __future__ import annotations

from collections.abc import Callable

from scratchgrad.autograd.engine import _summed_to
from scratchgrad.autograd.function import Function, _SeveralOutputs, _Unpack
from scratchgrad.tensor import RemovableHandle, Tensor

# The nodes PyTorch makes one for all the outputs of split, chunk and unbind; here each output
# has its own, so a hook would see the gradient of one output, not all of them.
_ONE_OF_SEVERAL = ("SplitBackward0", "SplitWithSizesBackward0", "UnbindBackward0")


class NodeHooks:
    """Mixed into the class of a node that has hooks (see the module's doc string)."""

    _prehooks: tuple = ()  # hook(grad_outputs) -> None or new grad_outputs
    _posthooks: tuple = ()  # hook(grad_inputs, grad_outputs) -> None or new grad_inputs
    unhooked: type  # the node's class before it was hooked

    @staticmethod
    def backward(node: Function, grad: Tensor):
        given = grad
        (grad,) = _run(node._prehooks, (grad,), node)
        unhooked = node.unhooked
        count = len(node.parents)
        if grad is None:  # a pre-hook took the gradient away: PyTorch's undefined gradient
            if unhooked.builtin or not node.materialize_grads:
                return (None,) * count  # (its built-in backwards then return undefined too)
            grad = given.new_zeros(given.shape)
        grads = unhooked.backward(node, grad)
        grads = grads if type(grads) is tuple else (grads,)
        if count < len(grads) and all(g is None for g in grads[count:]):
            grads = grads[:count]  # (the engine's rule: it drops extra Nones)
        if len(grads) != count:
            return grads  # the engine raises its error for the count
        grads = [_fitted(node, g, p) for g, p in zip(grads, node.parents)]
        positions = _grad_input_positions(node)
        inputs = tuple(grads[i] for i in positions)
        inputs = _run(node._posthooks, inputs, node, (grad,))
        for i, g in zip(positions, inputs):
            grads[i] = g
        return tuple(grads)


def register(node: Function, attr: str, hook: Callable) -> RemovableHandle:
    """Add ``hook`` to the node's ``attr`` (``_prehooks``, ``_posthooks``), its class made the
    hooked one first."""
    if isinstance(node, (_Unpack, _SeveralOutputs)) or node.backward_name in _ONE_OF_SEVERAL:
        raise RuntimeError(
            f"{node.name()}: hooks on the node of an op with several outputs are not supported: "
            "scratchgrad gives each output a node of its own, where PyTorch's one node would "
            "hand a hook the gradients of all the outputs"
        )
    if not isinstance(node, NodeHooks):
        node.__class__ = _hooked(type(node))
    setattr(node, attr, (*getattr(node, attr), hook))
    return RemovableHandle(node, attr, hook)


_hooked_classes: dict[type, type] = {}


def _hooked(cls: type) -> type:
    """``cls``'s subclass for hooked nodes (made once per class)."""
    hooked = _hooked_classes.get(cls)
    if hooked is None:
        names = {"backward_name": cls.backward_name, "complex_safe": cls.complex_safe}
        hooked = type(cls.__name__, (NodeHooks, cls), {"__module__": cls.__module__, **names})
        hooked.__qualname__, hooked.unhooked = cls.__qualname__, cls
        # a hook may keep the gradients it returns: .grad must not adopt them without a copy
        hooked.builtin = False
        _hooked_classes[cls] = hooked
    return hooked


def _fitted(node: Function, g: Tensor | None, parent) -> Tensor | None:
    """The gradient for ``parent`` summed to its shape, as the engine does, so that the
    post-hooks see what flows on; None where no gradient flows, for a built-in op (its
    PyTorch twin computes none there)."""
    if parent is None:
        return None if node.unhooked.builtin else g
    if g is None:
        return None
    shape = parent.array.shape if isinstance(parent, Tensor) else parent.out_shape
    return g if g.array.shape == shape else _summed_to(node, g, shape)


def _grad_input_positions(node: Function) -> tuple:
    """The positions of the forward arguments that PyTorch's node has an input for: all of a
    built-in op's, the Tensors among a user's Function's arguments."""
    if node.tensor_args is None:
        return tuple(range(len(node.parents)))
    return tuple(i for i, is_tensor in enumerate(node.tensor_args) if is_tensor)


def _run(hooks: tuple, values: tuple, node: Function, grad_outputs: tuple | None = None) -> tuple:
    """Each hook in turn, given ``values`` (and ``grad_outputs``: a post-hook), may replace
    them with a tuple of as many, each None or a Tensor of the shape and dtype it replaces."""
    for hook in hooks:
        new = hook(values) if grad_outputs is None else hook(values, grad_outputs)
        if new is None:
            continue
        name = getattr(hook, "__name__", repr(hook))
        if type(new) is not tuple:
            raise TypeError(
                f"{node.name()}: expected tuple, but hook {name!r} returned '{type(new).__name__}'"
            )
        if len(new) != len(values):
            raise RuntimeError(
                f"{node.name()}: hook {name!r} has returned an incorrect number of values "
                f"(got {len(new)}, but expected {len(values)})"
            )
        for old, value in zip(values, new):
            _check_replacement(old, value, name, node)
        values = new
    return values


def _check_replacement(old: Tensor | None, new, name: str, node: Function) -> None:
    """PyTorch's checks of a gradient a node hook returned in place of ``old``."""
    if new is None:
        return
    if not isinstance(new, Tensor):
        raise TypeError(
            f"{node.name()}: expected Variable, but hook {name!r} returned '{type(new).__name__}'"
        )
    if old is None:
        raise RuntimeError(
            f"{node.name()}: can't replace a None gradient with a non-None value (hook {name!r})"
        )
    if new.shape != old.shape:
        raise RuntimeError(
            f"{node.name()}: hook {name!r} has changed the size of value (was "
            f"{tuple(old.shape)} got {tuple(new.shape)})"
        )
    if new.dtype != old.dtype:
        raise RuntimeError(
            f"{node.name()}: hook {name!r} has changed the type of value (was "
            f"{old.dtype.name} got {new.dtype.name})"
        )
