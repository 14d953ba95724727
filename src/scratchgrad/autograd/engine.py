"""The backward engine: walk the graph from the outputs in reverse topological order.

``grad`` is the core; ``backward`` is the same walk that accumulates into the leaves' ``.grad``.
Gradients are summed back to their input's shape here and only here, so no primitive has to undo
its own broadcasting.
"""

from __future__ import annotations

import heapq
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence

from scratchgrad.autograd import anomaly, capture_hook
from scratchgrad.autograd.function import Function, _node_of
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.backend import namespace, ndarray, xp
from scratchgrad.ops.reduce import SumToSize
from scratchgrad.tensor import RemovableHandle, Tensor, stack

# Hooks to call once a leaf's .grad holds this backward's gradient, by id(leaf) (an entry goes
# when its leaf does); see Tensor.register_post_accumulate_grad_hook.
_post_accumulate_hooks: dict[int, tuple[Callable[[Tensor], None], ...]] = {}


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor] | dict[str, Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...] | dict[str, Tensor | None]:
    """Gradients of ``outputs`` with respect to ``inputs``, without touching any ``.grad``.

    With ``create_graph=True`` the gradients are themselves differentiable. A dict of inputs
    gives a dict of gradients under the same keys; ``materialize_grads=True`` gives zeros
    instead of None for inputs the outputs do not use (and implies ``allow_unused``).
    ``is_grads_batched=True`` reads the first dimension of each of ``grad_outputs`` as a batch
    of vectors and gives one gradient per vector, stacked (rows of a Jacobian).

    >>> import scratchgrad as sg
    >>> x = sg.tensor(3.0, requires_grad=True)
    >>> (dy,) = sg.autograd.grad(x**3, x, create_graph=True)
    >>> (d2y,) = sg.autograd.grad(dy, x)
    >>> dy.item(), d2y.item()
    (27.0, 18.0)
    >>> sg.autograd.grad(x * 2, {"x": x, "unused": sg.ones(2, requires_grad=True)},
    ...                  materialize_grads=True)
    {'x': tensor(2.), 'unused': tensor([0., 0.])}
    >>> sg.autograd.grad(x * sg.ones(2), x, sg.eye(2), is_grads_batched=True)
    (tensor([1., 1.]),)
    """
    if not only_inputs:  # kept in PyTorch's place among the arguments, ignored as there
        warnings.warn(
            "grad: only_inputs argument is deprecated and is ignored now (defaults to True). "
            "To accumulate gradient for other parts of the graph, please use "
            "torch.autograd.backward.",
            FutureWarning,
            stacklevel=2,
        )
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "grad: expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    keys = list(inputs) if isinstance(inputs, dict) else None
    outputs = _as_tuple(outputs)
    inputs = tuple(inputs.values()) if keys is not None else _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad: `inputs` argument to `grad()` cannot be empty.")
    targets = {}
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} (shape {t.shape}) does not require grad")
        targets[_node_of(t)] = i
    if is_grads_batched:
        found = _run_batched(outputs, grad_outputs, retain_graph, create_graph, targets)
    else:
        found = _run(outputs, grad_outputs, retain_graph, create_graph, targets)
    grads = []
    for i, t in enumerate(inputs):
        g = found.get(_node_of(t))
        if g is None and materialize_grads:  # unbatched zeros even when batched, as PyTorch
            g = t.new_zeros(t.shape, requires_grad=create_graph)
        elif g is None and not allow_unused:
            raise RuntimeError(
                f"grad: input {i} (shape {t.shape}) was not used to compute the "
                "outputs; pass allow_unused=True if that is expected"
            )
        grads.append(g)
    return tuple(grads) if keys is None else dict(zip(keys, grads))


def _run_batched(outputs, grad_outputs, retain_graph, create_graph, targets) -> dict:
    """The walk once per vector of the batched ``grad_outputs``, the gradients stacked per target
    (PyTorch vmaps one walk instead; the sums are the same)."""
    given = (None,) * len(outputs) if grad_outputs is None else _as_tuple(grad_outputs)
    if len(given) != len(outputs):
        raise RuntimeError(f"grad: {len(outputs)} outputs but {len(given)} grad_outputs")
    for i, (g, out) in enumerate(zip(given, outputs)):
        if g is None:  # PyTorch's types: a 0-d output fails in its vmap, others in its seeding
            error = ValueError if out.ndim == 0 else RuntimeError
            raise error(f"grad: is_grads_batched=True needs a grad_output for output {i}")
        if g.ndim == 0 or tuple(g.shape[1:]) != tuple(out.shape):
            raise RuntimeError(
                "grad: with is_grads_batched=True, the first dimension of each grad_output is the "
                f"batch and the rest must match its output's shape: grad_output[{i}] has shape "
                f"{tuple(g.shape)} and output[{i}] has shape {tuple(out.shape)}"
            )
    sizes = sorted({g.shape[0] for g in given})
    if len(sizes) > 1:
        raise ValueError(f"grad: grad_outputs have different batch sizes {sizes}")
    if sizes[0] == 0:
        raise IndexError("grad: is_grads_batched=True with grad_outputs of batch size 0")
    walks = []
    for b in range(sizes[0]):
        last = b == sizes[0] - 1
        keep = retain_graph if last else True  # the graph must survive every walk but the last
        walks.append(_run(outputs, [g[b] for g in given], keep, create_graph, targets))
    return {node: stack([walk[node] for walk in walks]) for node in walks[0]}


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | dict[str, Tensor] | None = None,
) -> None:
    """Accumulate the gradients of ``tensors`` into ``.grad`` of every leaf that requires grad.

    Gradients add up across calls, as in PyTorch: zero them between steps. With ``inputs`` (a
    tensor, a sequence or a dict of them) only those get gradients, leaves or not: the rest of
    the graph is not run, and a non-leaf input is made to ``retain_grad()``, as in PyTorch.

    >>> import scratchgrad as sg
    >>> a, b = sg.tensor(2.0, requires_grad=True), sg.tensor(3.0, requires_grad=True)
    >>> h = a * b
    >>> sg.autograd.backward(h * h, inputs=[a, h])
    >>> a.grad, b.grad, h.grad
    (tensor(36.), None, tensor(12.))
    """
    if inputs is None:  # (the training step's path: no more work than before inputs existed)
        _run(_as_tuple(tensors), grad_tensors, retain_graph, create_graph, None)
    else:
        targets = _backward_inputs(inputs)
        _run(_as_tuple(tensors), grad_tensors, retain_graph, create_graph, targets, True)


def _backward_inputs(inputs: Tensor | Sequence[Tensor] | dict[str, Tensor]) -> dict:
    """The nodes of ``backward``'s ``inputs``, each with its tensor, checked as PyTorch does."""
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif type(inputs) is dict:
        inputs = tuple(inputs.values())
    elif isinstance(inputs, Mapping):
        raise TypeError(
            f"`inputs` argument to `backward()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported."
        )
    else:
        inputs = tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    for t in inputs:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors, but got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(
                f"can't retain_grad on Tensor that has requires_grad=False (a backward input "
                f"of shape {t.shape})"
            )
    return {_node_of(t): t for t in inputs}


def _run(outputs, grad_outputs, retain_graph, create_graph, targets, into_grad=False) -> dict:
    """The walk: each node runs once every gradient flowing into it has arrived.

    A node is created after every node it uses, so taking the newest node first (largest
    ``sequence_nr``, from a heap) is a reverse topological order found while walking, without a
    separate sort. With ``targets`` (autograd.grad) only the nodes with a path to one are run;
    ``into_grad`` (backward's ``inputs``) accumulates into the ``.grad`` of those targets
    instead of returning their gradients.
    """
    if retain_graph is None:
        retain_graph = create_graph
    given = (None,) * len(outputs) if grad_outputs is None else _as_tuple(grad_outputs)
    if len(given) != len(outputs):
        raise RuntimeError(f"backward: {len(outputs)} outputs but {len(given)} gradients")
    grads = {}  # node -> the sum of the gradients that reached it so far (Functions and leaves)
    owned = {}  # gradient -> the one leaf whose .grad may keep it as it is (see _propagate)
    for out, g in zip(outputs, given):
        node = _node_of(out)
        if node is None:
            raise RuntimeError(
                f"backward: a tensor of shape {out.shape} does not require grad and has no "
                "graph; set requires_grad=True on the inputs that should get gradients"
                + _jit_hint(capture_hook.detached_results)
            )
        g = _seed(out, g)
        grads[node] = grads[node] + g if node in grads else g
    if into_grad:  # a non-leaf input's .grad is filled by its retain_grad hook, as PyTorch's
        for t in targets.values():
            t.retain_grad()
    ready = [(-node.sequence_nr, node) for node in grads if isinstance(node, Function)]
    heapq.heapify(ready)
    # with targets (autograd.grad's inputs): the nodes whose backward runs (a path leads from
    # them to a target: not a target's own, unless it leads to another) and which get gradients
    runs = None if targets is None else _leading_to([node for _, node in ready], targets)
    wanted = None if targets is None else runs.union(targets)
    # A leaf with post-accumulate hooks is finished as soon as its last use has run, not at the
    # end: DistributedDataParallel then starts its all-reduces during the rest of the walk.
    # (With backward's inputs, only the inputs get gradients, so only they are finished.)
    uses = None
    if _post_accumulate_hooks and (targets is None or into_grad):
        uses = _uses_of_hooked_leaves([node for _, node in ready])
    found = {}
    previous_mode, _state.enabled = _state.enabled, create_graph
    try:
        while ready:
            node = heapq.heappop(ready)[1]
            g = grads.pop(node)
            if node.hooks:
                g = _run_hooks(node.hooks, g, node)
            if targets is not None and node in targets:
                found[node] = g
            if runs is None or node in runs:
                _propagate(node, g, grads, ready, wanted, owned)
            if uses:
                _finish_used_up_leaves(node, grads, uses, create_graph, owned)
            if node.saved and not retain_graph:
                node.saved = None  # free what forward saved: nothing needs it any more
        # What is left are the leaves' gradients, each summed over all its uses.
        while grads:
            leaf, g = grads.popitem()
            if targets is None:
                if leaf._hooks or _post_accumulate_hooks:
                    _finish_leaf(leaf, g, create_graph, owned)
                else:  # the common case, without _finish_leaf's frame
                    _accumulate(leaf, g, create_graph, owned)
            elif leaf not in targets:
                continue
            elif into_grad:
                _finish_leaf(leaf, g, create_graph, owned)
            else:
                found[leaf] = _run_hooks(leaf._hooks, g, leaf) if leaf._hooks else g
    finally:
        _state.enabled = previous_mode
    return found


def _finish_leaf(leaf: Tensor, g: Tensor, create_graph: bool, owned: dict) -> None:
    """Hooks on the gradient, accumulation into ``.grad``, then the post-accumulate hooks."""
    if leaf._hooks:
        g = _run_hooks(leaf._hooks, g, leaf)
        owned = {}  # a hook may keep what it was given: .grad gets a copy
    _accumulate(leaf, g, create_graph, owned)
    if _post_accumulate_hooks:
        for hook in _post_accumulate_hooks.get(id(leaf), ()):
            if hook(leaf) is not None:  # it cannot replace anything: .grad is already set
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")


def register_post_accumulate_grad_hook(leaf: Tensor, hook: Callable[[Tensor], None]):
    """Keep ``hook`` for ``leaf`` (see ``Tensor.register_post_accumulate_grad_hook``)."""
    key = id(leaf)
    if key not in _post_accumulate_hooks:
        weakref.finalize(leaf, _post_accumulate_hooks.pop, key, None)
    _post_accumulate_hooks[key] = (*_post_accumulate_hooks.get(key, ()), hook)
    return _PostAccumulateHandle(key, hook)


class _PostAccumulateHandle(RemovableHandle):
    """What ``register_post_accumulate_grad_hook`` returns: ``remove()``, or leaving a ``with``
    block the handle opened, takes the hook off. The hooks live in a dict keyed by the leaf's
    id, not on an attribute, so only ``remove`` differs from ``RemovableHandle``'s.
    """

    def __init__(self, key: int, hook: Callable) -> None:
        self._key, self._hook = key, hook

    def remove(self) -> None:
        hooks = tuple(h for h in _post_accumulate_hooks.get(self._key, ()) if h is not self._hook)
        if hooks:
            _post_accumulate_hooks[self._key] = hooks
        else:
            _post_accumulate_hooks.pop(self._key, None)


def _uses_of_hooked_leaves(roots: list[Function]) -> dict:
    """How many edges of the graph lead to each leaf that has post-accumulate hooks."""
    uses, seen, stack = {}, set(roots), list(roots)
    while stack:
        for parent in stack.pop().parents:
            if isinstance(parent, Function):
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
            elif parent is not None and id(parent) in _post_accumulate_hooks:
                uses[parent] = uses.get(parent, 0) + 1
    return uses


def _finish_used_up_leaves(
    node: Function, grads: dict, uses: dict, create_graph: bool, owned: dict
) -> None:
    """Count off ``node``'s uses of hooked leaves; finish a leaf when its last use has run."""
    for parent in node.parents:
        if parent in uses:
            uses[parent] -= 1
            if uses[parent] == 0:
                del uses[parent]
                if parent in grads:
                    _finish_leaf(parent, grads.pop(parent), create_graph, owned)


def _run_hooks(hooks: tuple, g: Tensor, owner: Function | Tensor) -> Tensor:
    """Each hook may replace the gradient, with one of the same shape and dtype."""
    for hook in hooks:
        new = hook(g)
        if new is None:
            continue
        if not isinstance(new, Tensor) or new.shape != g.shape:
            got = f"shape {tuple(new.shape)}" if isinstance(new, Tensor) else type(new).__name__
            tensor = (
                "a leaf" if isinstance(owner, Tensor) else f"the result of {type(owner).__name__}"
            )
            raise RuntimeError(
                f"hook {getattr(hook, '__qualname__', hook)!r} on {tensor} of shape "
                f"{tuple(g.shape)} returned a gradient of {got}; a hook must return None or a "
                "Tensor of that shape"
            )
        g = new
    return g


def _propagate(
    node: Function, g: Tensor, grads: dict, ready: list, wanted: set | None, owned: dict
) -> None:
    """Run one node's backward and add each input's gradient, summed to the input's shape; an
    input that gets its first gradient joins the heap of nodes to run.

    A leaf's gradient is ``owned`` (its ``.grad`` may adopt the array without a copy, as
    PyTorch's AccumulateGrad "steals" it) when the engine made it (a sum of two gradients) or a
    built-in op's backward freshly made it: not the incoming gradient, not a view, not handed
    to another leaf first. Custom Functions' results are never adopted: they may keep them.
    Only a leaf without a ``.grad`` yet uses it (the others add into theirs in place), but it
    is decided whatever ``.grad`` holds: a ``jit`` recording notes it, and a replay may find
    ``.grad`` emptied by a ``zero_grad()`` that the recording call did not meet.
    """
    input_grads = type(node).backward(node, g)
    if type(input_grads) is not tuple:
        input_grads = (input_grads,)
    count = len(node.parents)
    # extra gradients are allowed when all None (for defaults bound into a newer-style
    # Function's inputs, say), as PyTorch drops them
    if len(input_grads) != count and (
        len(input_grads) < count or any(g is not None for g in input_grads[count:])
    ):
        raise RuntimeError(
            f"{type(node).__name__}.backward returned {len(input_grads)} gradients for "
            f"{len(node.parents)} inputs"
        )
    for parent, g_in in zip(node.parents, input_grads):
        if parent is None or g_in is None or (wanted is not None and parent not in wanted):
            continue
        is_leaf = isinstance(parent, Tensor)
        shape = parent.array.shape if is_leaf else parent.out_shape
        if g_in.array.shape != shape:
            g_in = _summed_to(node, g_in, shape)
        if anomaly.enabled:  # (the output's number found here: the loop is the hot path)
            anomaly.check(node, g_in, next(i for i, g in enumerate(input_grads) if g is g_in))
        previous = grads.get(parent)
        if previous is not None:
            grads[parent] = total = previous + g_in
            if is_leaf:
                owned.pop(previous, None)  # (not kept alive by owned)
                owned[total] = parent
        elif is_leaf:
            grads[parent] = g_in
            array = g_in.array
            if type(node).builtin and array.base is None and array is not g.array:
                owned.setdefault(g_in, parent)  # a second leaf given it gets a copy
        else:
            grads[parent] = g_in
            heapq.heappush(ready, (-parent.sequence_nr, parent))


def _summed_to(node: Function, g: Tensor, shape: tuple) -> Tensor:
    """``node``'s gradient ``g`` for an input of ``shape``, summed to it (undoing broadcasting)."""
    g = SumToSize.apply(g, shape=shape)  # (Tensor.sum_to_size's node, without its two calls)
    if g.array.shape != shape:
        raise RuntimeError(
            f"{type(node).__name__}.backward returned a gradient of shape {tuple(g.shape)} for "
            f"an input of shape {shape}"
        )
    return g


def _accumulate(leaf: Tensor, g: Tensor, create_graph: bool, owned: dict) -> None:
    """Add ``g`` into ``leaf.grad``: in place normally, out of place when building a graph.
    A first gradient is kept as it is when ``owned`` gives it to this leaf (see ``_propagate``),
    else copied. A sparse gradient (``embedding(..., sparse=True)``'s) is kept as it is, and
    added out of place: to a sparse ``.grad`` by concatenation, to a dense one densely. A
    leaf that no longer requires grad (``detach_``, ``requires_grad_(False)`` after its use)
    gets nothing, as PyTorch's."""
    if not leaf._requires_grad:
        return
    recorder = capture_hook.recorder
    if recorder is not None and recorder.accumulate(leaf, g, create_graph, owned):
        return  # scratchgrad.jit noted it (a call from another thread is left to this code)
    # (the slot _grad, not the property: the gradient fits the leaf, and this is the hot path)
    if type(g) is not Tensor and g.is_sparse:  # (a type test: is_sparse is a property)
        leaf._grad = g if leaf._grad is None else leaf._grad + g
        return
    if g.array.dtype is not leaf.array.dtype:
        g = g.to(leaf.array.dtype)
        owned = {g: leaf}  # a new array
    grad = leaf._grad
    if grad is None:
        leaf._grad = g if create_graph or owned.get(g) is leaf else Tensor._make(g.array.copy())
    elif create_graph or grad._requires_grad:
        leaf._grad = grad + g
    else:
        try:
            grad.array += g.array
        except TypeError:  # a sparse .grad refuses in-place arithmetic: a dense sum, as PyTorch
            if not grad.is_sparse:
                raise
            leaf._grad = grad + g


def _leading_to(roots: list[Function], targets: dict) -> set:
    """The nodes with a path to a target through their inputs: the backward passes
    autograd.grad needs to run (a target's own only where it leads to another target, as
    PyTorch's, so a saved tensor changed in place behind it is no error). Iterative
    depth-first search, never recursive: a node is decided after its parents. A root is
    visited like any node (one output may be computed from another: a loss from the logits
    returned beside it), so it is decided before the roots that depend on it."""
    leads, visited = set(), set()
    for root in roots:
        if root in visited:
            continue
        visited.add(root)
        stack = [(root, iter(root.parents))]
        while stack:
            node, parents = stack[-1]
            for parent in parents:
                if isinstance(parent, Function) and parent not in visited:
                    visited.add(parent)
                    stack.append((parent, iter(parent.parents)))
                    break
            else:
                stack.pop()
                if any(p in targets or p in leads for p in node.parents):
                    leads.add(node)
    return leads


def _jit_hint(name: str | None) -> str:
    """Where a jitted function returns detached what it returns eagerly with a graph: what
    to use instead, for the error of a backward through a tensor without one."""
    if name is None:
        return ""
    return (
        f" (the replays of the jitted {name}() return its results detached: "
        f"scratchgrad.compile({name}) records the backward of a function whose result you "
        "backpropagate)"
    )


def _seed(out: Tensor, g: Tensor | None) -> Tensor:
    if g is None:
        if out.array.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for scalar outputs, but the "
                f"output has shape {tuple(out.shape)}; pass gradient= of that shape"
            )
        array = out.array
        if array.dtype.kind == "c":
            raise RuntimeError("grad can be implicitly created only for real scalar outputs")
        module = xp if type(array) is ndarray else namespace(array)
        return Tensor._make(module.array(1, array.dtype, ndmin=array.ndim))  # dims all 1
    if not isinstance(g, Tensor):
        raise TypeError(f"backward: gradient must be a Tensor, got {type(g).__name__}")
    if g.shape != out.shape:
        raise RuntimeError(
            f"backward: gradient of shape {tuple(g.shape)} does not match the output's shape "
            f"{tuple(out.shape)} (dtype {out.dtype.name})"
        )
    if g.dtype != out.dtype:  # cast to the output's, as PyTorch's engine (torch.ones(n) for a
        if (g.dtype.kind == "c") != (out.dtype.kind == "c"):  # float64 loss), but complex
            raise RuntimeError(
                "For complex Tensors, both grad_output and output are required to have the "
                f"same dtype. Mismatch in dtype: the gradient has dtype {g.dtype.name} and the "
                f"output {out.dtype.name}"
            )
        return g.to(out.dtype)
    return g


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)
