"""Drawing computation graphs with Graphviz.

`trace` walks any graph given a function that lists a node's parents; `draw_dot` uses it to draw
a scalar `Value`'s graph: one record per value (its data and grad) and one small node per
operation, with arrows in the direction the computation ran.

>>> from scratchgrad.scalar import Value
>>> x, w = Value(2.0), Value(-3.0)
>>> y = (x * w).tanh()
>>> y.backward()
>>> dot = draw_dot(y)                # a graphviz.Digraph
>>> dot.render("graph")              # doctest: +SKIP
'graph.svg'

Rendering needs Graphviz's `dot` program (e.g. `apt install graphviz`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

try:
    import graphviz
except ImportError as error:
    raise ImportError(
        "scratchgrad.viz needs the graphviz package: pip install 'scratchgrad[viz]'"
    ) from error

from scratchgrad.scalar import Value


def trace(root: Any, parents_of: Callable[[Any], Iterable[Any]]) -> tuple[list, list]:
    """Every node reachable from `root` through `parents_of`, and every edge, without recursion.

    Returns `(nodes, edges)`: nodes in the order they were first reached (root first), edges as
    `(parent, child)` pairs, one per entry of `parents_of(child)`, so a node used twice by the
    same child (as in `x * x`) gives two edges. Nodes are told apart by identity, so they need
    not be hashable.

    >>> parents = {"c": ["a", "b"], "b": ["a"], "a": []}
    >>> trace("c", parents.__getitem__)
    (['c', 'a', 'b'], [('a', 'c'), ('b', 'c'), ('a', 'b')])
    """
    nodes, edges = [root], []
    seen = {id(root)}
    stack = [root]
    while stack:
        child = stack.pop()
        for parent in parents_of(child):
            edges.append((parent, child))
            if id(parent) not in seen:
                seen.add(id(parent))
                nodes.append(parent)
                stack.append(parent)
    return nodes, edges


def draw_dot(root: Any, rankdir: str = "LR", format: str = "svg") -> graphviz.Digraph:
    """Draw the graph that computed `root`: a scalar `Value` or a `Tensor`.

    For a Value, each value is a record of its data and grad, and each operation a small oval
    between its inputs and its result. For a Tensor, each operation (the graph node a result
    remembers) is a record of its name and its output's shape and dtype, and each leaf that
    requires grad a shaded record of its shape and dtype. Arrows run the way the computation
    did; `rankdir="LR"` lays the graph out left to right, "TB" top to bottom. Call
    `.render(path)` on the result to write an SVG (or `format="png"`) file.

    >>> from scratchgrad.scalar import Value
    >>> dot = draw_dot(Value(2.0) * 3)
    >>> dot.source.count("shape=record")    # the two inputs and the product
    3
    """
    dot = graphviz.Digraph(format=format, graph_attr={"rankdir": rankdir})
    if isinstance(root, Value):
        _draw_values(dot, root)
    else:
        _draw_tensors(dot, root)
    return dot


def _draw_values(dot: graphviz.Digraph, root: Value) -> None:
    nodes, edges = trace(root, lambda v: v._prev)
    for v in nodes:
        name = str(id(v))
        dot.node(name, f"{{ data {v.data:.4f} | grad {v.grad:.4f} }}", shape="record")
        if v._op:  # the op node sits just before the value it produced
            dot.node(name + v._op, v._op, shape="oval")
            dot.edge(name + v._op, name)
    for parent, child in edges:
        dot.edge(str(id(parent)), str(id(child)) + child._op)


def _draw_tensors(dot: graphviz.Digraph, root: Any) -> None:
    from scratchgrad.autograd import Function  # the tensor engine needs NumPy; Values do not

    def parents_of(node: Any) -> list:
        # A Function's parents are Functions, leaf Tensors, or None where no gradient flows.
        return [p for p in node.parents if p is not None] if isinstance(node, Function) else []

    nodes, edges = trace(root._ctx if root._ctx is not None else root, parents_of)
    for node in nodes:
        if isinstance(node, Function):
            label = f"{{ {node.name()} | {node.out_shape} | {node.out_dtype} }}"
            dot.node(str(id(node)), label, shape="record")
        else:
            label = f"{{ leaf | {tuple(node.shape)} | {node.dtype.name} }}"
            dot.node(str(id(node)), label, shape="record", style="filled", fillcolor="lightblue")
    for parent, child in edges:
        dot.edge(str(id(parent)), str(id(child)))
