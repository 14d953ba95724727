"""Jacobians, Hessians and Jacobian products, built on ``autograd.grad``."""

from __future__ import annotations

from collections.abc import Callable

from scratchgrad.autograd.engine import _as_tuple, grad
from scratchgrad.backend import namespace
from scratchgrad.tensor import Tensor, stack


def _prepare(inputs) -> tuple[Tensor, ...]:
    """Fresh leaves that require grad, so the caller's tensors are not touched."""
    return tuple(Tensor._make(x.array).requires_grad_() for x in _as_tuple(inputs))


def _zeros_where_none(grads, like):
    return tuple(g if g is not None else _zeros_like(x) for g, x in zip(grads, like))


def _zeros_like(x: Tensor) -> Tensor:
    return Tensor._make(namespace(x.array).zeros_like(x.array))


def vjp(func: Callable, inputs, v=None, create_graph: bool = False):
    """``(func(inputs), v^T J)``: a vector-Jacobian product, as ``torch.autograd.functional.vjp``.

    >>> import scratchgrad as sg
    >>> out, g = sg.autograd.functional.vjp(lambda x: x**2, sg.tensor([1.0, 2.0]), sg.ones(2))
    >>> g
    tensor([2., 4.])
    """
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs)
    out = func(*xs)
    grads = grad(out, xs, v, create_graph=create_graph, allow_unused=True)
    grads = _zeros_where_none(grads, xs)
    return (out if create_graph else out.detach()), grads[0] if single else grads


def jvp(func: Callable, inputs, v, create_graph: bool = False):
    """``(func(inputs), J v)``: a Jacobian-vector product, by the double-vjp trick: the vjp is
    linear in its vector ``u``, so differentiating it with respect to ``u`` along ``v`` gives J v.
    """
    xs = _prepare(inputs)
    out = func(*xs)
    u = _zeros_like(out).requires_grad_()
    g = grad(out, xs, u, create_graph=True, allow_unused=True)
    pairs = [(gi, vi) for gi, vi in zip(g, _as_tuple(v)) if gi is not None and gi.requires_grad]
    out = out if create_graph else out.detach()
    if not pairs:
        return out, _zeros_like(out)
    (jv,) = grad(
        [p for p, _ in pairs],
        u,
        [q for _, q in pairs],
        create_graph=create_graph,
        allow_unused=True,
    )
    jv = jv if jv is not None else _zeros_like(out)
    return out, jv


def jacobian(func: Callable, inputs, create_graph: bool = False):
    """The Jacobian of ``func`` at ``inputs``: shape ``out.shape + input.shape`` per input.

    >>> import scratchgrad as sg
    >>> sg.autograd.functional.jacobian(lambda x: 3 * x, sg.ones(2))
    tensor([[3., 0.],
            [0., 3.]])
    """
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs)
    out = func(*xs)
    flat = out.reshape(-1)
    rows = []
    for r in range(flat.shape[0]):
        grads = grad(flat[r], xs, retain_graph=True, create_graph=create_graph, allow_unused=True)
        rows.append(_zeros_where_none(grads, xs))
    jac = tuple(
        stack([row[i] for row in rows]).reshape(*out.shape, *x.shape) for i, x in enumerate(xs)
    )
    return jac[0] if single else jac


def hessian(func: Callable, inputs: Tensor):
    """The second derivatives of a scalar ``func`` of one tensor: the Jacobian of its gradient,
    of shape ``inputs.shape + inputs.shape``.

    >>> import scratchgrad as sg
    >>> sg.autograd.functional.hessian(lambda x: (x**3).sum(), sg.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """

    def gradient(x):
        (g,) = _zeros_where_none(grad(func(x), x, create_graph=True, allow_unused=True), (x,))
        return g

    return jacobian(gradient, inputs)
