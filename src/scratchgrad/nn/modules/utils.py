"""``torch.nn.modules.utils``: the argument helpers layers and user code import from there
(``_pair(3) == (3, 3)``), and ``consume_prefix_in_state_dict_if_present``.

>>> from scratchgrad.nn.modules.utils import _pair, _triple
>>> _pair(3), _triple((1, 2, 3))
((3, 3), (1, 2, 3))
"""

from collections.abc import Callable, Iterable
from itertools import repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    """A function that repeats a single value ``n`` times and turns an iterable into a tuple
    (of any length: PyTorch's checks none)."""

    def parse(x: Any) -> tuple:
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """Each of ``t`` repeated ``n`` times, last first: a layer's per-dim padding as ``F.pad``
    takes it (``(1, 2)`` -> ``(2, 2, 1, 1)``)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: Any, defaults: list[int]) -> Any:
    """An adaptive pool's ``output_size`` with each None replaced by the input's size there."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` in place (and of its ``_metadata``),
    so that a checkpoint of a ``DistributedDataParallel`` model (keys ``module.*``) loads into
    the bare model.

    >>> sd = {"module.weight": 1, "module.bias": 2}
    >>> consume_prefix_in_state_dict_if_present(sd, "module.")
    >>> sorted(sd)
    ['bias', 'weight']
    """
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix) :]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    for key in list(metadata):
        # "" is the wrapper's own entry (kept); "module" the model's, "module.x" the rest
        if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
            metadata[key[len(prefix) :]] = metadata.pop(key)
