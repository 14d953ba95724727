"""Nested tuples, lists and dicts of tensors ("pytrees"), flattened to a list of leaves and
rebuilt: how the transforms accept a dict of parameters as one argument."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def tree_flatten(tree: Any) -> tuple[list, Any]:
    """The leaves of ``tree`` in order, and a spec that ``tree_unflatten`` rebuilds it from.

    >>> leaves, spec = tree_flatten({"a": 1, "b": (2, [3])})
    >>> leaves, tree_unflatten([10, 20, 30], spec)
    ([1, 2, 3], {'a': 10, 'b': (20, [30])})
    """
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree: Any, leaves: list) -> Any:
    if isinstance(tree, dict):
        return (dict, list(tree), [_flatten(v, leaves) for v in tree.values()])
    if isinstance(tree, (tuple, list)):
        return (type(tree), None, [_flatten(v, leaves) for v in tree])
    leaves.append(tree)
    return None


def tree_unflatten(leaves: list, spec: Any) -> Any:
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it, spec: Any) -> Any:
    if spec is None:
        return next(it)
    kind, keys, children = spec
    values = [_unflatten(it, child) for child in children]
    if kind is dict:
        return dict(zip(keys, values))
    return kind(values) if kind in (tuple, list) else kind(*values)  # namedtuples


def tree_map(fn: Callable, tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)
