"""Pooling layers: ``MaxPool2d``, ``AvgPool2d`` and ``AdaptiveAvgPool2d``, as in PyTorch.

They hold no parameters; the arithmetic lives in ``nn.conv_functional``.
"""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.nn import conv_functional as F
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor

Size = int | Sequence[int]


class MaxPool2d(Module):
    """The largest entry of each window of ``(N, C, H, W)`` or ``(C, H, W)``.

    ``stride`` defaults to ``kernel_size``; padding counts as -inf. The gradient of each window
    goes to its first largest entry, as PyTorch's does.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.MaxPool2d(2)(sg.arange(16.0).reshape(1, 1, 4, 4))
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """

    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        dilation: Size = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        if return_indices:
            raise NotImplementedError("MaxPool2d: return_indices=True is not supported")
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return F.max_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool2d(Module):
    """The mean of each window of ``(N, C, H, W)`` or ``(C, H, W)``.

    ``stride`` defaults to ``kernel_size``. With ``count_include_pad`` (the default) the zero
    padding counts in the divisor; ``divisor_override`` replaces the divisor.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AvgPool2d(2)(sg.arange(16.0).reshape(1, 1, 4, 4))
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
    """

    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Mean pooling to a fixed output size, whatever the input size (``None`` keeps a dim).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AdaptiveAvgPool2d(1)(sg.ones(2, 3, 5, 7)).shape
    (2, 3, 1, 1)
    """

    def __init__(self, output_size: int | Sequence[int | None]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
