"""Jacobians, Hessians and Jacobian (and Hessian) products, built on ``autograd.grad``, as
``torch.autograd.functional``.

Each takes a Tensor or a tuple of Tensors as ``inputs`` (the results follow: one per input for
a tuple, else one), and ``func`` may return a Tensor or a tuple of them (``jacobian``, ``vjp``,
``jvp``). The inputs are replaced by fresh leaves, so the caller's tensors are not touched;
with ``create_graph``, by views of them instead, so the results stay differentiable with respect
to the caller's tensors too. ``strict`` raises PyTorch's errors where a result is independent of
an input (otherwise zeros), and forward products use the double-vjp trick, as PyTorch's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scratchgrad.autograd.engine import grad
from scratchgrad.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from scratchgrad.backend import namespace
from scratchgrad.tensor import Tensor, stack


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), v^T J)``: a vector-Jacobian product, as ``torch.autograd.functional.vjp``.

    >>> import scratchgrad as sg
    >>> out, g = sg.autograd.functional.vjp(lambda x: x**2, sg.tensor([1.0, 2.0]), sg.ones(2))
    >>> g
    tensor([2., 4.])
    """
    with enable_grad():
        inputs_tuple, xs = _inputs(inputs, create_graph, "vjp")
        outputs_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outs, "outputs", strict)
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function returns a single "
                    "Tensor with a single element."
                )
        else:
            v = _vector(v, create_graph, "vjp")
            _validate_v(v, outs, outputs_tuple)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        found = _grads(outs, xs, v, create_graph)
        products = _fill_in_zeros(found, xs, strict, create_graph, "back")
    return (
        _unpacked(_postprocess(outs, create_graph), outputs_tuple),
        _unpacked(_postprocess(products, create_graph), inputs_tuple),
    )


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``(func(inputs), J v)``: a Jacobian-vector product, as ``torch.autograd.functional.jvp``,
    by the double-vjp trick: the vjp is linear in its vector ``u``, so differentiating it with
    respect to ``u`` along ``v`` gives J v.

    >>> import scratchgrad as sg
    >>> out, jv = sg.autograd.functional.jvp(lambda x: x**2, sg.tensor([1.0, 2.0]), sg.ones(2))
    >>> jv
    tensor([2., 4.])
    """
    with enable_grad():
        inputs_tuple, xs = _inputs(inputs, create_graph, "jvp")
        if v is None:
            _check_v_none(xs)
        else:
            v = _vector(v, create_graph, "jvp")
            _validate_v(v, xs, inputs_tuple)
        outputs_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outs, "outputs", strict)
        # the vjp is linear in u: its value does not matter (zeros: no inf or nan)
        us = tuple(_zeros_like(out).requires_grad_() for out in outs)
        back = _grads(outs, xs, us, create_graph=True)
        _check_requires_grad(back, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        found = _grads(back, us, v, create_graph)
        products = _fill_in_zeros(found, outs, strict, create_graph, "back_trick")
    return (
        _unpacked(_postprocess(outs, create_graph), outputs_tuple),
        _unpacked(_postprocess(products, create_graph), outputs_tuple),
    )


def _check_strategy(strategy: str, vectorize: bool, create_graph: bool, strict: bool) -> None:
    """PyTorch's checks of ``strategy``, in its order; either one computes the same Jacobian
    here."""
    _check_strategy_name(strategy)
    if strategy != "forward-mode":
        return
    if create_graph:
        raise NotImplementedError(_not_with_forward_mode("create_graph"))
    if strict:
        raise RuntimeError(_not_with_forward_mode("strict"))
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
            "implemented for `vectorize=True`."
        )


def _check_strategy_name(strategy: str) -> None:
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            f'Expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}'
        )


def _not_with_forward_mode(option: str) -> str:
    return (
        f'torch.autograd.functional.jacobian: `{option}=True` and `strategy="forward-mode"` '
        f"are not supported together (yet). Please either set `{option}=False` or "
        '`strategy="reverse-mode"`.'
    )


def jacobian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of ``func`` at ``inputs``: shape ``out.shape + input.shape`` per output and
    input (a tuple per output of a tuple per input, where they are tuples), as
    ``torch.autograd.functional.jacobian``. ``vectorize`` and ``strategy`` are PyTorch's speed
    options: checked, the same result.

    >>> import scratchgrad as sg
    >>> sg.autograd.functional.jacobian(lambda x: 3 * x, sg.ones(2))
    tensor([[3., 0.],
            [0., 3.]])
    """
    _check_strategy(strategy, vectorize, create_graph, strict)
    with enable_grad():
        inputs_tuple, xs = _inputs(inputs, create_graph, "jacobian")
        outs_tuple, outs = _as_tuple(func(*xs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outs, "outputs", strict)
        if strict and vectorize:  # (after func has run, as PyTorch's)
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                "supported together. Please either set `strict=False` or `vectorize=False`."
            )
        jac = tuple(_jacobian_of(i, out, xs, create_graph, strict) for i, out in enumerate(outs))
    return _unpacked(_postprocess(jac, create_graph), (outs_tuple, inputs_tuple))


def _jacobian_of(i: int, out: Tensor, xs: tuple, create_graph: bool, strict: bool) -> tuple:
    """The Jacobian of output ``i`` with respect to each input, one row per entry of it."""
    flat = out.reshape(-1)
    rows = []
    for r in range(flat.shape[0]):
        found = _grads((flat[r],), xs, None, create_graph, retain_graph=True)
        for k, g in enumerate(found):
            if strict and g is None:
                raise RuntimeError(
                    f"Output {i} of the user-provided function is independent of input {k}. "
                    "This is not allowed in strict mode."
                )
            if strict and create_graph and not g.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {k}. "
                    "This is not allowed in strict mode when create_graph=True."
                )
        rows.append(_fill_in_zeros(found, xs, False, create_graph, "back"))
    return tuple(
        stack([row[k] for row in rows]).reshape((*out.shape, *x.shape))
        if rows
        else Tensor._make(namespace(x.array).zeros((*out.shape, *x.shape), x.dtype))
        for k, x in enumerate(xs)
    )


def hessian(
    func: Callable,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The second derivatives of a scalar ``func``: the Jacobian of its gradient, of shape
    ``input.shape + input.shape`` (for a tuple of inputs, a tuple of tuples: ``[i][j]`` of
    shape ``inputs[i].shape + inputs[j].shape``), as ``torch.autograd.functional.hessian``.

    >>> import scratchgrad as sg
    >>> sg.autograd.functional.hessian(lambda x: (x**3).sum(), sg.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    _check_strategy_name(outer_jacobian_strategy)  # (jacobian checks the rest)
    inputs_tuple, xs = _as_tuple(inputs, "inputs", "hessian")

    def single_output(*x: Tensor) -> Tensor:
        return _single_output(func(*x), "hessian", strict).squeeze()

    def gradient(*x: Tensor) -> tuple:
        found = jacobian(single_output, x, create_graph=True)
        _check_requires_grad(found, "jacobian", strict)
        return found

    hess = jacobian(gradient, xs, create_graph, strict, vectorize, outer_jacobian_strategy)
    return _unpacked(hess, (inputs_tuple, inputs_tuple))


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
    with enable_grad():
        inputs_tuple, xs = _inputs(inputs, create_graph, name)
        if v is None:
            _check_v_none(xs)
        else:
            v = _vector(v, create_graph, name)
            _validate_v(v, xs, inputs_tuple)
        out = _single_output(func(*xs), name, strict)
        jac = _grads((out,), xs, None, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        if name == "hvp":
            us = tuple(_zeros_like(x).requires_grad_() for x in xs)
            back = _grads(jac, xs, us, create_graph=True)
            _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        if name == "vhp":
            products = _fill_in_zeros(
                _grads(jac, xs, v, create_graph), xs, strict, create_graph, "double_back"
            )
        else:
            products = _fill_in_zeros(
                _grads(back, us, v, create_graph), xs, strict, create_graph, "double_back_trick"
            )
    return (
        _postprocess((out,), create_graph)[0],
        _unpacked(_postprocess(products, create_graph), inputs_tuple),
    )


# ---- PyTorch's helpers, one for each step every function takes ----------------------------


def _as_tuple(values: Any, what: str, name: str) -> tuple[bool, tuple]:
    """Whether ``values`` is a tuple, and its Tensors as one (a list is refused, as PyTorch)."""
    is_tuple = isinstance(values, tuple)
    values = values if is_tuple else (values,)
    for i, value in enumerate(values):
        if not isinstance(value, Tensor):
            given = f"the value at index {i} has" if is_tuple else f"the given {what} has"
            raise TypeError(
                f"The {what} given to {name} must be either a Tensor or a tuple of Tensors but "
                f"{given} type {type(value)}."
            )
    return is_tuple, values


def _inputs(inputs: Any, create_graph: bool, name: str) -> tuple[bool, tuple]:
    """Whether ``inputs`` is a tuple, and the tensors to differentiate with respect to."""
    is_tuple, xs = _as_tuple(inputs, "inputs", name)
    return is_tuple, _preprocess(xs, create_graph, need_graph=True)


def _vector(v: Any, create_graph: bool, name: str) -> tuple:
    """The tensors of a product's vector ``v`` (made differentiable with ``create_graph``)."""
    return _preprocess(_as_tuple(v, "v", name)[1], create_graph, need_graph=False)


def _preprocess(xs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Tensors to differentiate with respect to: with ``create_graph``, a view of each caller's
    tensor that requires grad (the results stay differentiable with respect to it), else a
    detached copy that requires grad where ``need_graph``."""
    return tuple(
        x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(need_graph)
        for x in xs
    )


def _postprocess(results: tuple, create_graph: bool) -> tuple:
    """The results (or tuples of them), detached unless ``create_graph``."""
    if create_graph:
        return results
    return tuple(r.detach() if isinstance(r, Tensor) else _postprocess(r, False) for r in results)


def _unpacked(results: tuple, was_tuple: bool | tuple[bool, bool]):
    """The results with the tuples the caller did not give taken off again."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            results = tuple(r[0] for r in results)
        return results if outer else results[0]
    return results if was_tuple else results[0]


def _grads(outputs, xs, vectors, create_graph: bool, retain_graph: bool | None = None) -> tuple:
    """d outputs / d xs along ``vectors``, None where no output that needs a gradient (or none
    at all) depends on an input."""
    vectors = (None,) * len(outputs) if vectors is None else vectors
    pairs = [(o, v) for o, v in zip(outputs, vectors) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(xs)
    return grad(
        [o for o, _ in pairs],
        xs,
        [v for _, v in pairs],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


# PyTorch's words, by step, for a product independent of an input in strict mode
_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
    "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. "
    "This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{i} in the grad_jacobian. This is not allowed in strict mode as this prevents from using "
    "the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str):
    """Zeros (shaped as ``refs``) for the None gradients; ``strict`` refuses them."""
    filled = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = _zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            of = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {of} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        filled.append(g)
    return tuple(filled)


def _check_requires_grad(tensors: tuple, kind: str, strict: bool) -> None:
    """With ``strict``, PyTorch's error for a result (of ``kind``) that needs no gradient."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(_INDEPENDENT["back"].format(i=i))
        if t.requires_grad:
            continue
        if kind == "hessian":
            message = (
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."
            )
        elif kind == "jacobian":
            message = (
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is thrice "
                "differentiable and that the jacobian depends on the inputs."
            )
        elif kind == "grad_inputs":
            message = (
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode."
            )
        else:
            message = (
                f"Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."
            )
        raise RuntimeError(message)


def _validate_v(v: tuple, others: tuple, others_tuple: bool) -> None:
    """The vectors ``v`` match ``others`` (the outputs or inputs) in number and shapes."""
    if len(v) != len(others):
        if others_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(others)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (vec, other) in enumerate(zip(v, others)):
        if tuple(vec.shape) != tuple(other.shape):
            entry = f"Entry {i} in " if len(others) > 1 else ""
            raise RuntimeError(
                f"{entry}v has invalid size: should be {tuple(other.shape)} but got "
                f"{tuple(vec.shape)}."
            )


def _check_v_none(xs: tuple) -> None:
    if len(xs) != 1 or xs[0].numel() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a "
            "single Tensor with a single element."
        )


def _single_output(out: Any, name: str, strict: bool) -> Tensor:
    """The one Tensor of one element that ``hessian``, ``vhp`` and ``hvp`` differentiate."""
    out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", name)
    _check_requires_grad(outs, "outputs", strict)
    if out_tuple:
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {name} should contain a single element"
        )
    return out


def _zeros_like(x: Tensor) -> Tensor:
    return Tensor._make(namespace(x.array).zeros_like(x.array))
