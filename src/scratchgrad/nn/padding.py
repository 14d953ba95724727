"""Padding layers: thin modules over ``F.pad``, one family per mode (constant, zero, reflect,
replicate, circular), one class per number of padded dims (1 to 3), as PyTorch's."""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.nn import functional as F
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


class _PadNd(Module):
    """Pad the last ``dims`` dims in ``mode``: ``padding`` is one amount for every side, or
    (before, after) for the last dim, then the one before it, and so on (PyTorch's order, kept
    as given); negative amounts crop. The repr shows the padding tuple."""

    mode = ""
    dims = 0

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Pad with ``value``."""

    mode = "constant"

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``: ``padding`` is one amount for both sides, or
    (left, right).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ConstantPad1d((1, 2), 3.0)(sg.zeros(1, 1)).tolist()
    [[3.0, 0.0, 3.0, 3.0]]
    """

    dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``: ``padding`` is one amount for every side, or
    (left, right, top, bottom); negative amounts crop.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ConstantPad2d((1, 0, 0, 1), 3.0)(sg.zeros(1, 1, 1)).tolist()
    [[[3.0, 0.0], [3.0, 3.0]]]
    """

    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``: ``padding`` is one amount for every side, or
    (left, right, top, bottom, front, back).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ConstantPad3d(1, 3.0)(sg.zeros(1, 1, 1, 1)).shape
    scratchgrad.Size([1, 3, 3, 3])
    """

    dims = 3


class _ZeroPad:
    """A constant pad of zeros, whose repr shows only the padding (as PyTorch's ZeroPadNd, each
    a subclass of its ConstantPadNd)."""

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pad the last dim with zeros; ``padding`` as ``ConstantPad1d``'s.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ZeroPad1d((0, 1))(sg.ones(1, 2)).tolist()
    [[1.0, 1.0, 0.0]]
    """


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pad the last two dims with zeros; ``padding`` as ``ConstantPad2d``'s.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ZeroPad2d(1)(sg.ones(1, 1, 1)).shape
    scratchgrad.Size([1, 3, 3])
    """


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pad the last three dims with zeros; ``padding`` as ``ConstantPad3d``'s.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ZeroPad3d((1, 0, 0, 0, 0, 1))(sg.ones(1, 1, 1, 1)).shape
    scratchgrad.Size([1, 2, 1, 2])
    """


class ReflectionPad1d(_PadNd):
    """Pad the last dim of (C, W) or (N, C, W) with its mirror image about the edge (the edge
    itself not repeated); each amount must be below the dim's size.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ReflectionPad1d((2, 1))(sg.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """

    mode, dims = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Pad the last two dims of (C, H, W) or (N, C, H, W) by reflection; ``padding`` is one
    amount or (left, right, top, bottom).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ReflectionPad2d(1)(sg.tensor([[[1.0, 2.0], [3.0, 4.0]]])).tolist()[0][0]
    [4.0, 3.0, 4.0, 3.0]
    """

    mode, dims = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Pad the last three dims of (C, D, H, W) or (N, C, D, H, W) by reflection.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ReflectionPad3d(1)(sg.randn(1, 2, 2, 2)).shape
    scratchgrad.Size([1, 4, 4, 4])
    """

    mode, dims = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Pad the last dim of (C, W) or (N, C, W) by repeating its edge entries.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ReplicationPad1d((2, 1))(sg.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[1.0, 1.0, 1.0, 2.0, 3.0, 3.0]]
    """

    mode, dims = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Pad the last two dims of (C, H, W) or (N, C, H, W) by repeating the edges.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ReplicationPad2d((1, 0, 0, 0))(sg.tensor([[[1.0, 2.0]]])).tolist()
    [[[1.0, 1.0, 2.0]]]
    """

    mode, dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Pad the last three dims of (C, D, H, W) or (N, C, D, H, W) by repeating the edges.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.ReplicationPad3d(2)(sg.randn(1, 1, 1, 1)).shape
    scratchgrad.Size([1, 5, 5, 5])
    """

    mode, dims = "replicate", 3


class _CircularPadNd(_PadNd):
    """Pad by wrapping around: the entries from the other end. As PyTorch's, the layer checks
    the input's number of dims itself (a ValueError), batched or not."""

    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(
                f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.ndim}D input)"
            )
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pad the last dim of (C, W) or (N, C, W) circularly.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.CircularPad1d((2, 1))(sg.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[2.0, 3.0, 1.0, 2.0, 3.0, 1.0]]
    """

    dims = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last two dims of (C, H, W) or (N, C, H, W) circularly.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.CircularPad2d((1, 0, 0, 1))(sg.tensor([[[1.0, 2.0]]])).tolist()
    [[[2.0, 1.0, 2.0], [2.0, 1.0, 2.0]]]
    """

    dims = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last three dims of (C, D, H, W) or (N, C, D, H, W) circularly.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.CircularPad3d(1)(sg.randn(1, 2, 2, 2)).shape
    scratchgrad.Size([1, 4, 4, 4])
    """

    dims = 3
