"""Jacobians, Hessians and Jacobian (and Hessian) products, built on ``autograd.grad``, as
``torch.autograd.functional``."""

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


def _check_strategy(strategy: str, vectorize: bool) -> None:
    """PyTorch's checks of ``strategy``; either one computes the same Jacobian here."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            f'Expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}'
        )
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
            "implemented for `vectorize=True`."
        )


def jacobian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs``: shape ``out.shape + input.shape`` per input.
    ``vectorize`` and ``strategy`` are PyTorch's speed options: checked, the same result.

    >>> import scratchgrad as sg
    >>> sg.autograd.functional.jacobian(lambda x: 3 * x, sg.ones(2))
    tensor([[3., 0.],
            [0., 3.]])
    """
    _check_strategy(strategy, vectorize)
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs)
    out = func(*xs)
    flat = out.reshape(-1)
    rows = []
    for r in range(flat.shape[0]):
        grads = grad(flat[r], xs, retain_graph=True, create_graph=create_graph, allow_unused=True)
        for i, g in enumerate(grads):
            if strict and g is None:
                raise RuntimeError(
                    f"Output {r} of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."
                )
        rows.append(_zeros_where_none(grads, xs))
    jac = tuple(
        stack([row[i] for row in rows]).reshape(*out.shape, *x.shape) for i, x in enumerate(xs)
    )
    return jac[0] if single else jac


def hessian(
    func: Callable,
    inputs: Tensor,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The second derivatives of a scalar ``func`` of one tensor: the Jacobian of its gradient,
    of shape ``inputs.shape + inputs.shape``.

    >>> import scratchgrad as sg
    >>> sg.autograd.functional.hessian(lambda x: (x**3).sum(), sg.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """

    _check_strategy(outer_jacobian_strategy, vectorize)

    def gradient(x):
        (g,) = _first_grads(func(x), (x,), strict)
        return g

    return jacobian(gradient, inputs, create_graph=create_graph)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T H)``: a vector-Hessian product of a scalar ``func``, as
    ``torch.autograd.functional.vhp`` (a tuple of products for a tuple of inputs).

    >>> import scratchgrad as sg
    >>> out, vh = sg.autograd.functional.vhp(lambda x: (x**3).sum(), sg.ones(2), sg.ones(2))
    >>> vh
    tensor([6., 6.])
    """
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), H v)``: a Hessian-vector product of a scalar ``func``, as
    ``torch.autograd.functional.hvp``: the Jacobian-vector product of the gradient (the
    double-backward trick), equal to ``vhp`` where the Hessian is symmetric.

    >>> import scratchgrad as sg
    >>> out, hv = sg.autograd.functional.hvp(lambda x: (x**3).sum(), sg.ones(2), sg.ones(2))
    >>> hv
    tensor([6., 6.])
    """
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)


def _hessian_product(name: str, func: Callable, inputs, v, create_graph: bool, strict: bool):
    """``vhp``'s ``v^T H`` (the gradient's vjp along v) or ``hvp``'s ``H v`` (the vjp of
    ``u -> H^T u``, which is linear in u, along v)."""
    single = isinstance(inputs, Tensor)
    xs = _prepare(inputs)
    out = _scalar(func(*xs), name)
    grads = _first_grads(out, xs, strict)
    if name == "vhp":
        products = _grad_along(grads, xs, _vectors(v, xs), create_graph)
    else:
        u = tuple(_zeros_like(x).requires_grad_() for x in xs)
        back = _grad_along(grads, xs, u, create_graph=True)
        products = _grad_along(back, u, _vectors(v, xs), create_graph)
    return (out if create_graph else out.detach()), products[0] if single else products


def _grad_along(outputs: tuple, xs: tuple, vectors: tuple, create_graph: bool) -> tuple:
    """The vector-Jacobian product of ``outputs`` along ``vectors`` (zeros where none of the
    outputs depends on an input, as for the gradient of a linear function)."""
    pairs = [(o, vec) for o, vec in zip(outputs, vectors) if o.requires_grad]
    if not pairs:
        return tuple(_zeros_like(x) for x in xs)
    found = grad(
        [o for o, _ in pairs],
        xs,
        [vec for _, vec in pairs],
        create_graph=create_graph,
        allow_unused=True,
    )
    return _zeros_where_none(found, xs)


def _scalar(out: Tensor, name: str) -> Tensor:
    if not isinstance(out, Tensor) or out.numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {name} should contain a single element"
        )
    return out


def _first_grads(out: Tensor, xs: tuple, strict: bool) -> tuple:
    """The gradient of ``out``, kept differentiable; with ``strict``, PyTorch's error for an
    input it does not depend on twice."""
    grads = _zeros_where_none(grad(out, xs, create_graph=True, allow_unused=True), xs)
    for i, g in enumerate(grads):
        if strict and not g.requires_grad:
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode."
            )
    return grads


def _vectors(v, xs: tuple) -> tuple:
    """The vectors ``v`` (None: a one for a single one-element input, as PyTorch allows)."""
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
        return (Tensor._make(namespace(xs[0].array).ones_like(xs[0].array)),)
    vs = _as_tuple(v)
    for x, vec in zip(xs, vs):
        if tuple(vec.shape) != tuple(x.shape):
            raise RuntimeError(
                f"The vector v and the input have different shapes: {tuple(vec.shape)} and "
                f"{tuple(x.shape)}"
            )
    return vs
