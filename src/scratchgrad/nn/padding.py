"""Padding layers: thin modules over ``F.pad``."""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.nn import functional as F
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


class ConstantPad2d(Module):
    """Pad the last two dims with ``value``: ``padding`` is one amount for every side, or
    (left, right, top, bottom); negative amounts crop.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ConstantPad2d((1, 0, 0, 1), 3.0)(sg.zeros(1, 1, 1)).tolist()
    [[[3.0, 0.0], [3.0, 3.0]]]
    """

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__()
        self.padding = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros; ``padding`` as ``ConstantPad2d``'s.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ZeroPad2d(1)(sg.ones(1, 1, 1)).shape
    (1, 3, 3)
    """

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"
