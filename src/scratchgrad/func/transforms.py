"""``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``hessian``, and the forward-mode
``jvp``, ``linearize`` and ``jacfwd``: derivatives as functions, after ``torch.func``, built on
``autograd.grad``.

Each call differentiates with respect to fresh copies of its inputs, so transforms nest: an
input that already takes part in a graph (an outer ``grad``) is passed on through an identity
op and the derivatives are built with ``create_graph``, so the outer transform differentiates
them in turn. Inside ``vmap`` the graph is that of the whole batch, so each input is first made
batched at every running vmap level (an unbatched one is repeated, a broadcast view): each
member then gets its own gradient, as in per-sample gradients ``vmap(grad(loss))``.

When ``func`` closes over tensors of the user's that require grad (a network's parameters)
and grad mode is on, the derivatives are built with ``create_graph`` too, so that gradients
flow from them (and from the values) back to those tensors, as in PyTorch; otherwise they are
detached. The leaves the transforms make are remembered, so that theirs do not count.

Forward mode is reverse mode twice (the double-vjp trick): ``vjp_fn(u) = J^T u`` is linear in
``u``, so its own vjp along a tangent ``t`` is ``J t``, exactly. It costs two backward passes
per product instead of one forward pass, and needs no second set of derivative formulas.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.engine import grad as autograd_grad
from scratchgrad.autograd.forward_ad import check_primal_or_tangent
from scratchgrad.autograd.grad_mode import enable_grad, is_grad_enabled
from scratchgrad.creation import ones_like, zeros_like
from scratchgrad.func import batching
from scratchgrad.func.batching import BatchedTensor, at_front, wrap
from scratchgrad.func.pytree import tree_flatten, tree_unflatten
from scratchgrad.ops.movement import Reshape
from scratchgrad.tensor import Tensor, stack


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function with respect to its argument(s) ``argnums``, as a
    function of the same arguments, as ``torch.func.grad``. An argument may be a tensor or a
    tuple, list or dict of tensors (the gradient has its structure). With ``has_aux``,
    ``func`` returns ``(output, aux)`` and the gradient comes with ``aux``.

    >>> import scratchgrad as sg
    >>> grad(lambda x: (x**3).sum())(sg.tensor([1.0, 2.0]))
    tensor([ 3., 12.])
    >>> grad(grad(lambda x: x**3))(sg.tensor(2.0))  # 6x
    tensor(12.)
    """

    @functools.wraps(func)
    def gradient(*args: Any, **kwargs: Any) -> Any:
        grads, (_, *aux) = _grad_and_value(func, argnums, has_aux, args, kwargs, "grad")
        return (grads, aux[0]) if has_aux else grads

    return gradient


def grad_and_value(
    func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable:
    """As ``grad``, but returns ``(gradient, value)`` (``(gradient, (value, aux))`` with
    ``has_aux``), as ``torch.func.grad_and_value``: the value costs nothing extra.

    >>> import scratchgrad as sg
    >>> grad_and_value(lambda x: (x * x).sum())(sg.tensor([3.0]))
    (tensor([6.]), tensor(9.))
    """

    @functools.wraps(func)
    def gradient_and_value(*args: Any, **kwargs: Any) -> Any:
        grads, (value, *aux) = _grad_and_value(
            func, argnums, has_aux, args, kwargs, "grad_and_value"
        )
        return (grads, (value, aux[0])) if has_aux else (grads, value)

    return gradient_and_value


def _grad_and_value(func, argnums, has_aux, args, kwargs, name) -> tuple:
    argnums = _checked_argnums(argnums, len(args))
    nums = (argnums,) if isinstance(argnums, int) else argnums
    args, inputs = list(args), []
    for n in nums:
        args[n], entries = _fresh(args[n], name)
        inputs.append(entries)
    with enable_grad(), _running(inputs):
        result = func(*args, **kwargs)
    out, aux = _split_aux(result, has_aux, name)
    if not isinstance(out, Tensor) or out.numel() != 1:
        shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise RuntimeError(
            f"{name}(f)(*args): expected f(*args) to return a tensor with one element, got "
            f"{shape}; use vjp or jacrev for other outputs"
        )
    physical, levels = _peel(out)
    leaves = [leaf for entries in inputs for leaf in entries.leaves]
    nested = _with_graph([physical], inputs)
    found = _gradients(physical, leaves, None, nested)
    grads, start = [], 0
    for entries in inputs:
        count = len(entries.leaves)
        grads.append(entries.rebuild(found[start : start + count]))
        start += count
    value = out if nested else _rewrap(physical.detach(), levels)
    aux = tuple(_unwrapped(a, inputs) for a in aux)
    return (grads[0] if isinstance(argnums, int) else tuple(grads)), (value, *aux)


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``, where ``vjp_fn(cotangents)`` gives the vector-Jacobian
    products, one per primal (a tuple), as ``torch.func.vjp``. ``vjp_fn`` can be called many
    times (and vmapped over cotangents).

    >>> import scratchgrad as sg
    >>> out, vjp_fn = vjp(lambda x: x**2, sg.tensor([1.0, 2.0]))
    >>> vjp_fn(sg.ones(2))
    (tensor([2., 4.]),)
    """
    args, inputs = [], []
    for primal in primals:
        arg, entries = _fresh(primal, "vjp")
        args.append(arg)
        inputs.append(entries)
    with enable_grad(), _running(inputs):
        result = func(*args)
    out, aux = _split_aux(result, has_aux, "vjp")
    out_leaves, out_spec = tree_flatten(out)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                "vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported "
                f"type {type(o)}"
            )
    nested = _with_graph([_peel(o)[0] for o in out_leaves if isinstance(o, Tensor)], inputs)
    leaves = [leaf for entries in inputs for leaf in entries.leaves]

    def vjp_fn(cotangents: Any) -> tuple:
        given, spec = tree_flatten(cotangents)
        if spec != out_spec or any(
            tuple(c.shape) != tuple(o.shape) for c, o in zip(given, out_leaves)
        ):
            raise RuntimeError(
                "vjp: the cotangents must have the structure and shapes of the output, "
                f"{[tuple(o.shape) for o in out_leaves]}; got {[tuple(c.shape) for c in given]}"
            )
        physical, cotangent = zip(*(_as_cotangent(o, c) for o, c in zip(out_leaves, given)))
        found = _gradients(list(physical), leaves, list(cotangent), nested)
        grads, start = [], 0
        for entries in inputs:
            count = len(entries.leaves)
            grads.append(entries.rebuild(found[start : start + count]))
            start += count
        return tuple(grads)

    shown = out if nested else tree_unflatten([o.detach() for o in out_leaves], out_spec)
    return (shown, vjp_fn, *(_unwrapped(a, inputs) for a in aux))


def jacrev(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
) -> Callable:
    """The Jacobian of ``func`` with respect to argument(s) ``argnums`` by reverse mode, one
    vector-Jacobian product per output entry: shape ``output.shape + input.shape``, as
    ``torch.func.jacrev``. For a tuple, list or dict of outputs, the Jacobians come in that
    structure, one per output. Jacobians nest (``hessian``) and vmap. ``chunk_size`` (PyTorch's
    bound on the products computed at once) is checked and changes nothing: they are computed
    one at a time here.

    >>> import scratchgrad as sg
    >>> jacrev(lambda x: x**2)(sg.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """

    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def jacobian(*args: Any, **kwargs: Any) -> Any:
        chosen, of_chosen = _chosen(func, argnums, args, kwargs)
        out, vjp_fn, *aux = vjp(of_chosen, *chosen, has_aux=has_aux)
        outs, spec = tree_flatten(out)
        jac = tree_unflatten(
            [_jacobian_rows(vjp_fn, outs, spec, k, chosen, argnums) for k in range(len(outs))],
            spec,
        )
        return (jac, aux[0]) if has_aux else jac

    return jacobian


def _jacobian_rows(vjp_fn, outs: list, spec: Any, k: int, chosen: list, argnums: Any) -> Any:
    """d outs[k] / d the chosen arguments: one vjp per entry of output k (a basis cotangent
    there, zeros on the other outputs), shaped ``outs[k].shape + argument leaf's shape``."""
    out = outs[k]
    rows = [
        vjp_fn(tree_unflatten([_basis(o, r if i == k else None) for i, o in enumerate(outs)], spec))
        for r in range(out.numel())
    ]
    jac = tuple(
        tree_unflatten(
            [
                _stacked([tree_flatten(row[i])[0][j] for row in rows], out.shape, x)
                for j, x in enumerate(tree_flatten(chosen[i])[0])
            ],
            tree_flatten(chosen[i])[1],
        )
        for i in range(len(chosen))
    )
    return jac[0] if isinstance(argnums, int) else jac


def _basis(like: Tensor, index: int | None) -> Tensor:
    """Zeros of ``like``'s shape (one batch member's) and dtype, with a one at flat ``index``
    (none for None)."""
    basis = backend.namespace(like.array).zeros(like.numel(), like.dtype)
    if index is not None:
        basis[index] = 1
    return Tensor._make(basis.reshape(like.shape))


def _chosen(func: Callable, argnums: Any, args: tuple, kwargs: dict) -> tuple[list, Callable]:
    """The arguments ``argnums`` picks, and ``func`` as a function of those alone."""
    argnums = _checked_argnums(argnums, len(args))
    nums = (argnums,) if isinstance(argnums, int) else argnums

    def of_chosen(*xs: Any) -> Any:
        full = list(args)
        for n, x in zip(nums, xs):
            full[n] = x
        return func(*full, **kwargs)

    return [args[n] for n in nums], of_chosen


def _checked_argnums(argnums: Any, count: int) -> int | tuple[int, ...]:
    """``argnums`` for a call with ``count`` positional arguments, counted from the front,
    checked as PyTorch checks them (its errors): an int, or a non-empty tuple of distinct
    ints, each in range. (A repeated one made jacrev's first Jacobian zeros.)"""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        return _checked_argnum(argnums, count)
    nums = tuple(_checked_argnum(n, count) for n in argnums)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {nums}")
    return nums


def _checked_argnum(n: Any, count: int) -> int:
    if not isinstance(n, int):
        raise RuntimeError(f"argnum must be int, got: {type(n)}")
    if not -count <= n < count:
        raise RuntimeError(f"Got argnum={n}, but only {count} positional inputs")
    return n % count


def jvp(
    func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False, has_aux: bool = False
) -> tuple:
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product, as ``torch.func.jvp``
    (one tangent per primal, of its shape; ``(output, jvp_out, aux)`` with ``has_aux``).

    >>> import scratchgrad as sg
    >>> jvp(lambda x: x**2, (sg.tensor([1.0, 3.0]),), (sg.tensor([1.0, 0.5]),))
    (tensor([1., 9.]), tensor([2., 3.]))
    """
    primals, tangents = _tuple(primals, "primals"), _tuple(tangents, "tangents")
    for primal, tangent in zip(tree_flatten(primals)[0], tree_flatten(tangents)[0]):
        check_primal_or_tangent(primal, "primal")
        check_primal_or_tangent(tangent, "tangent")
    out, push, *aux = linearize(func, *primals, has_aux=has_aux)
    return (out, push(*tangents), *aux)


def linearize(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), jvp_fn)``, where ``jvp_fn(*tangents)`` is the Jacobian-vector
    product at ``primals``, as ``torch.func.linearize``: the function is run once, and each
    call of ``jvp_fn`` is two backward passes through what it recorded.

    >>> import scratchgrad as sg
    >>> out, jvp_fn = linearize(lambda x: x.sin(), sg.tensor([0.0, 1.0]))
    >>> jvp_fn(sg.tensor([2.0, 0.0]))
    tensor([2., 0.])
    """
    out, vjp_fn, *aux = vjp(func, *primals, has_aux=has_aux)
    outs, spec = tree_flatten(out)
    # the tangent of an integer output (an index) is zeros of its dtype, as PyTorch's: only
    # the floating outputs' cotangents are differentiated with respect to
    floating = [backend.is_floating(o.dtype) for o in outs]

    def with_zeros(values: Any) -> Any:
        given = iter(values)
        return tree_unflatten(
            [next(given) if f else zeros_like(o) for o, f in zip(outs, floating)], spec
        )

    _, transposed = vjp(
        lambda *cotangents: vjp_fn(with_zeros(cotangents)),
        *(zeros_like(o) for o, f in zip(outs, floating) if f),
    )

    def jvp_fn(*tangents: Any) -> Any:
        given = [tree_flatten(t)[0] for t in tangents]
        expected = [tree_flatten(p)[0] for p in primals]
        if len(given) != len(expected) or any(
            len(g) != len(e) or any(tuple(a.shape) != tuple(b.shape) for a, b in zip(g, e))
            for g, e in zip(given, expected)
        ):
            raise RuntimeError(
                "jvp: the tangents must have the structure and shapes of the primals, "
                f"{[[tuple(p.shape) for p in e] for e in expected]}; got "
                f"{[[tuple(t.shape) for t in g] for g in given]}"
            )
        return with_zeros(transposed(tuple(tangents)))

    return (out, jvp_fn, *aux)


def _tuple(values: Any, name: str) -> tuple:
    if not isinstance(values, tuple):
        raise RuntimeError(
            f"jvp(f, primals, tangents): Expected {name} to be a tuple. E.g. it should be valid "
            "to call f(*primals)."
        )
    for value in tree_flatten(values)[0]:
        if not isinstance(value, Tensor):
            raise RuntimeError(
                f"jvp(f, primals, tangents): Expected {name} to only contain Tensors, got "
                f"{type(value)}"
            )
    return values


def jacfwd(
    func: Callable,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable:
    """The Jacobian of ``func`` with respect to argument(s) ``argnums`` by forward mode, one
    Jacobian-vector product per input entry: shape ``output.shape + input.shape`` (in the
    structure of the outputs, as ``jacrev``), as ``torch.func.jacfwd`` (``jacfwd(jacrev(f))``
    is the usual Hessian).

    >>> import scratchgrad as sg
    >>> jacfwd(lambda x: x**2)(sg.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """

    @functools.wraps(func)
    def jacobian(*args: Any, **kwargs: Any) -> Any:
        chosen, of_chosen = _chosen(func, argnums, args, kwargs)
        for primal in tree_flatten(chosen)[0]:
            check_primal_or_tangent(primal, "primal")
        out, push, *aux = linearize(of_chosen, *chosen, has_aux=has_aux)
        outs, spec = tree_flatten(out)
        trees = [tree_flatten(x) for x in chosen]
        # columns[i][j][k]: d outs[k] / d (leaf j of argument i)
        columns = [
            [_columns(push, trees, i, j, outs) for j in range(len(t[0]))]
            for i, t in enumerate(trees)
        ]
        per_output = []
        for k in range(len(outs)):
            jac = tuple(
                tree_unflatten([column[k] for column in columns[i]], trees[i][1])
                for i in range(len(chosen))
            )
            per_output.append(jac[0] if isinstance(argnums, int) else jac)
        jac = tree_unflatten(per_output, spec)
        return (jac, aux[0]) if has_aux else jac

    return jacobian


def _columns(push: Callable, trees: list, i: int, j: int, outs: list) -> list[Tensor]:
    """d outs / d (leaf j of argument i), one per output: one pushed basis tangent per entry
    of the leaf."""
    x = trees[i][0][j]
    pushed = []
    for e in range(x.numel()):
        tangents = [
            [_basis(leaf, e if (a, b) == (i, j) else None) for b, leaf in enumerate(tree[0])]
            for a, tree in enumerate(trees)
        ]
        pushed.append(
            tree_flatten(push(*(tree_unflatten(ts, t[1]) for ts, t in zip(tangents, trees))))[0]
        )
    return [
        stack([p[k] for p in pushed], -1).reshape((*out.shape, *x.shape))
        if pushed
        else Tensor._make(backend.namespace(x.array).zeros((*out.shape, *x.shape), x.dtype))
        for k, out in enumerate(outs)
    ]


def _stacked(rows: list, out_shape: tuple, x: Tensor) -> Tensor:
    if not rows:
        return Tensor._make(backend.namespace(x.array).zeros((*out_shape, *x.shape), x.dtype))
    return stack(rows).reshape((*out_shape, *x.shape))


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Hessian of a scalar ``func``: the Jacobian of its gradient, shape
    ``input.shape + input.shape`` (for a tuple ``argnums``, a tuple of tuples), as
    ``torch.func.hessian`` (here reverse over reverse).

    >>> import scratchgrad as sg
    >>> hessian(lambda x: (x**3).sum())(sg.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacrev(jacrev(func, argnums), argnums)


# ---- inputs and outputs --------------------------------------------------------------------


# the leaves ``_fresh`` made that are still alive, by id (a weak dict: gone with the leaf)
_fresh_leaves: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
# the inputs of the transforms whose function is running now, outermost first
_running_inputs: list[list[_Inputs]] = []


class _Inputs:
    """One differentiated argument: its leaves (batch-wide, requiring grad) and how to turn
    their gradients back into the argument's structure."""

    def __init__(self, spec: Any, leaves: list, levels: list, nested: bool) -> None:
        self.spec, self.leaves, self.levels, self.nested = spec, leaves, levels, nested

    def rebuild(self, grads: list) -> Any:
        return tree_unflatten(
            [_rewrap(g, levels) for g, levels in zip(grads, self.levels)], self.spec
        )


def _fresh(arg: Any, name: str) -> tuple[Any, _Inputs]:
    """``arg`` with each tensor replaced by a fresh one to differentiate with respect to."""
    tensors, spec = tree_flatten(arg)
    fresh, leaves, levels, nested = [], [], [], False
    for t in tensors:
        if not isinstance(t, Tensor):  # (PyTorch's type and words)
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
        if not backend.is_floating(t.dtype):
            raise RuntimeError(
                f"{name}: can only differentiate with respect to floating point tensors, got "
                f"{t.dtype.name}"
            )
        for level, size, _ in batching._active:
            if not _batched_at(t, level):
                t = _insert(t, level, size)
        physical, t_levels = _peel(t)
        if physical.requires_grad:  # part of an outer graph: stay connected to it
            leaf, nested = Reshape.apply(physical, shape=physical.shape), True
        else:
            leaf = physical.detach().requires_grad_()
            _fresh_leaves[id(leaf)] = leaf
        fresh.append(_rewrap(leaf, t_levels))
        leaves.append(leaf)
        levels.append(t_levels)
    return tree_unflatten(fresh, spec), _Inputs(spec, leaves, levels, nested)


def _with_graph(outputs: list[Tensor], inputs: list[_Inputs]) -> bool:
    """Whether the derivatives are built with a graph of their own (``create_graph``): when an
    input takes part in an outer graph (an outer transform differentiates them), or when grad
    mode is on and the outputs depend on a tensor requiring grad other than the inputs (a
    parameter ``func`` closes over), so that its gradient flows through the derivatives and
    the value, as in PyTorch (a Jacobian penalty on a network, trained by ``backward``)."""
    if any(entries.nested for entries in inputs):
        return True
    if not is_grad_enabled():
        return False
    nodes, seen = [], set()
    for out in outputs:
        if out.requires_grad and out.grad_fn is None and not _is_fresh(out):
            return True
        nodes.append(out.grad_fn)
    while nodes:  # iterative: graphs may be deep
        node = nodes.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for parent in node.parents:
            if isinstance(parent, Tensor):
                if not _is_fresh(parent):
                    return True
            else:
                nodes.append(parent)
    return False


def _is_fresh(leaf: Tensor) -> bool:
    """Whether ``leaf`` is one a transform made to differentiate with respect to (this call's
    or a finished one's, as the primals of jvp's inner vjp): not a tensor of the user's. The
    leaves of an enclosing transform whose function is still running count as the user's:
    that transform differentiates what an inner one returns (``grad`` of a function calling
    ``grad`` of a function closing over the outer input)."""
    if _fresh_leaves.get(id(leaf)) is not leaf:
        return False
    return not any(
        leaf is own for inputs in _running_inputs for entries in inputs for own in entries.leaves
    )


@contextlib.contextmanager
def _running(inputs: list[_Inputs]) -> Iterator[None]:
    """Marks ``inputs`` as those of a transform whose function is running."""
    _running_inputs.append(inputs)
    try:
        yield
    finally:
        _running_inputs.pop()


def _unwrapped(aux: Any, inputs: list[_Inputs]) -> Any:
    """``aux`` (tensors only, as PyTorch's) with each tensor that depends on no tensor of the
    user's requiring grad detached from the transform's own graph, as PyTorch returns it."""
    tensors, spec = tree_flatten(aux)
    kept = []
    for t in tensors:
        if not isinstance(t, Tensor):  # (PyTorch's words)
            raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
        physical, levels = _peel(t)
        if not _with_graph([physical], inputs):
            t = _rewrap(physical.detach(), levels)
        kept.append(t)
    return tree_unflatten(kept, spec)


def _split_aux(result: Any, has_aux: bool, name: str) -> tuple[Any, tuple]:
    if not has_aux:
        return result, ()
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(
            f"{name}(f, has_aux=True): f must return a pair (output, aux), got "
            f"{type(result).__name__}"
        )
    return result[0], (result[1],)


def _gradients(outputs: Any, leaves: list, cotangents: Any, nested: bool) -> list:
    """d outputs / d leaves (zeros for a leaf the outputs do not depend on)."""
    outputs = outputs if isinstance(outputs, list) else [outputs]
    if cotangents is None:
        cotangents = [ones_like(o) for o in outputs]
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    found = [None] * len(leaves)
    if pairs and leaves:
        found = autograd_grad(
            [o for o, _ in pairs],
            leaves,
            [c for _, c in pairs],
            retain_graph=True,
            # a cotangent that requires grad is being differentiated (jvp's double vjp)
            create_graph=nested or any(c.requires_grad for _, c in pairs),
            allow_unused=True,
        )
    return [g if g is not None else zeros_like(leaf) for g, leaf in zip(found, leaves)]


def _as_cotangent(out: Tensor, cotangent: Tensor) -> tuple[Tensor, Tensor]:
    """An output's batch-wide tensor and the cotangent for it. A cotangent batched by a newer
    vmap than the output's (vmapping vjp_fn) stays batched: the backward pass runs batched."""
    physical, levels = _peel(out)
    if not levels:
        return physical, cotangent
    for level in reversed(levels):
        if not _batched_at(cotangent, level):
            cotangent = _insert(cotangent, level, _size_of(out, level))
    value, cot_levels = _peel(cotangent)
    if cot_levels != levels:
        raise RuntimeError(
            "vjp: vmapping vjp_fn over cotangents is supported only for a vjp taken outside vmap"
        )
    return physical, value


# ---- batch levels --------------------------------------------------------------------------


def _peel(t: Tensor) -> tuple[Tensor, list[int]]:
    """The batch-wide tensor under all vmap levels, and the levels, newest first."""
    levels = []
    while type(t) is BatchedTensor:
        levels.append(t.level)
        t = t.value
    return t, levels


def _rewrap(t: Tensor, levels: list[int]) -> Tensor:
    for level in reversed(levels):
        t = wrap(t, level)
    return t


def _batched_at(t: Tensor, level: int) -> bool:
    while type(t) is BatchedTensor:
        if t.level == level:
            return True
        t = t.value
    return False


def _insert(t: Tensor, level: int, size: int) -> Tensor:
    """``t`` batched at ``level`` too, each member the same (newer levels stay outermost)."""
    if type(t) is BatchedTensor and t.level > level:
        return wrap(_insert(t.value, level, size), t.level)
    return wrap(at_front(t, size), level)


def _size_of(t: Tensor, level: int) -> int:
    while t.level != level:
        t = t.value
    return t.value.shape[0]
