"""``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``, ``ConvTranspose2d`` and
``ConvTranspose3d``: learned filters slid over a signal, an image or a volume; and
``Unfold`` and ``Fold``, the sliding windows as columns and back.

The arithmetic lives in ``nn.conv_functional``; these modules hold the weight ``(out_channels,
in_channels // groups, *kernel_size)`` (transposed: ``(in_channels, out_channels // groups,
*kernel_size)``) and the bias ``(out_channels,)``, initialised as PyTorch does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scratchgrad.nn import conv_functional as F
from scratchgrad.nn import init
from scratchgrad.nn.functional import pad
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor

Size = int | Sequence[int]


class _ConvNd(Module):
    """What the convolutions share: arguments, checks, parameters, initialisation, repr."""

    dims = 0  # spatial dims, set by each subclass, with the function that convolves
    convolve = None
    transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Size,
        stride: Size = 1,
        padding: Size | str = 0,
        dilation: Size = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                f"divisible by groups ({groups})"
            )
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(
                "padding_mode must be one of 'zeros', 'reflect', 'replicate' or 'circular', "
                f"got {padding_mode!r}"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = self._tuple(kernel_size)
        self.stride, self.dilation = self._tuple(stride), self._tuple(dilation)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"padding must be 'valid', 'same' or numbers, got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = self._tuple(padding)
        self.padding_mode = padding_mode
        self.output_padding = (0,) * self.dims
        if self.transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = _empty_parameter(shape, device, dtype)
        if bias:
            self.bias = _empty_parameter((out_channels,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        padding = self.padding
        if self.padding_mode != "zeros" and padding != "valid":
            input = pad(input, self._padding_widths(), mode=self.padding_mode)
            padding = 0
        return self.convolve(
            input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )

    def _padding_widths(self) -> list[int]:
        """``F.pad``'s (before, after) pairs, last dim first; "same" puts the odd one after."""
        if self.padding != "same":  # (as PyTorch's: a padding of one number in a list pads one dim)
            return [p for p in reversed(self.padding) for _ in range(2)]
        widths = []
        for i in reversed(range(self.dims)):
            total = self.dilation[i] * (self.kernel_size[i] - 1)
            widths += [total // 2, total - total // 2]
        return widths

    def _tuple(self, value: Size) -> tuple[int, ...]:
        """``value`` once per dim unless it is a sequence: as PyTorch's ``_ntuple``, a float
        too, which the convolution then refuses naming the argument (padding=1.5)."""
        return tuple(value) if isinstance(value, (tuple, list)) else (value,) * self.dims

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a = sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        # (PyTorch's tests, by length: one number in a list stands for every dim)
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-d convolution over ``(N, C, L)`` or ``(C, L)``, as ``torch.nn.Conv1d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> conv = nn.Conv1d(4, 6, 3, padding="same")
    >>> conv.weight.shape, conv(sg.ones(2, 4, 10)).shape
    (scratchgrad.Size([6, 4, 3]), scratchgrad.Size([2, 6, 10]))
    """

    dims = 1
    convolve = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """2-d convolution over ``(N, C, H, W)`` or ``(C, H, W)``, as ``torch.nn.Conv2d``.

    ``padding`` is a number, a pair, ``"valid"`` or ``"same"`` (stride 1 only).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> conv = nn.Conv2d(1, 8, 3, padding=1)
    >>> conv.weight.shape, conv(sg.ones(2, 1, 28, 28)).shape
    (scratchgrad.Size([8, 1, 3, 3]), scratchgrad.Size([2, 8, 28, 28]))
    """

    dims = 2
    convolve = staticmethod(F.conv2d)


class Conv3d(_ConvNd):
    """3-d convolution over ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as ``torch.nn.Conv3d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> conv = nn.Conv3d(2, 4, (3, 3, 1), padding=(1, 1, 0), padding_mode="replicate")
    >>> conv.weight.shape, conv(sg.ones(2, 2, 5, 6, 7)).shape
    (scratchgrad.Size([4, 2, 3, 3, 1]), scratchgrad.Size([2, 4, 5, 6, 7]))
    """

    dims = 3
    convolve = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """What ConvTranspose1d, ConvTranspose2d and ConvTranspose3d share: PyTorch's argument order
    (with ``output_padding``), zero padding only, and ``output_size`` in ``forward``."""

    transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Size,
        stride: Size = 1,
        padding: Size = 0,
        output_padding: Size = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Size = 1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be numbers, got {padding!r}")
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )
        self.output_padding = self._tuple(output_padding)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        return self.convolve(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple:
        """``output_padding``, or what makes the output ``output_size``: a size per spatial
        dim, or the whole shape (batch and channels too, as PyTorch)."""
        if output_size is None:
            return self.output_padding
        wanted = tuple(output_size)
        leading = 2 if input.ndim == self.dims + 2 else 1  # the batch and channel dims
        if len(wanted) == leading + self.dims:
            wanted = wanted[leading:]
        if len(wanted) != self.dims:
            raise ValueError(
                f"{type(self).__name__}: for a {input.ndim}-d input, output_size must have "
                f"{self.dims} or {leading + self.dims} entries, got {len(wanted)}"
            )
        extra = []
        for i, size in enumerate(wanted):
            n = input.shape[input.ndim - self.dims + i]
            smallest = (
                (n - 1) * self.stride[i]
                - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1)
                + 1
            )
            if not smallest <= size < smallest + self.stride[i]:
                raise ValueError(
                    f"requested an output size of {list(wanted)}, but valid sizes range from "
                    f"{smallest} to {smallest + self.stride[i] - 1} (for an input of "
                    f"{list(input.shape[2:])})"
                )
            extra.append(size - smallest)
        return tuple(extra)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over ``(N, C, L)`` or ``(C, L)``, as
    ``torch.nn.ConvTranspose1d``: the gradient of ``Conv1d`` with respect to its input.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> up = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1)
    >>> up.weight.shape, up(sg.ones(2, 4, 10)).shape
    (scratchgrad.Size([4, 6, 3]), scratchgrad.Size([2, 6, 20]))
    """

    dims = 1
    convolve = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over ``(N, C, H, W)`` or ``(C, H, W)``, as
    ``torch.nn.ConvTranspose2d``: the gradient of ``Conv2d`` with respect to its input.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> up = nn.ConvTranspose2d(8, 1, 4, stride=2, padding=1)
    >>> up.weight.shape, up(sg.ones(2, 8, 7, 7)).shape
    (scratchgrad.Size([8, 1, 4, 4]), scratchgrad.Size([2, 1, 14, 14]))
    """

    dims = 2
    convolve = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as
    ``torch.nn.ConvTranspose3d``: the gradient of ``Conv3d`` with respect to its input.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> up = nn.ConvTranspose3d(4, 2, (3, 3, 1), stride=2, padding=(1, 1, 0))
    >>> up.weight.shape, up(sg.ones(2, 4, 3, 4, 5), output_size=(6, 8, 9)).shape
    (scratchgrad.Size([4, 2, 3, 3, 1]), scratchgrad.Size([2, 2, 6, 8, 9]))
    """

    dims = 3
    convolve = staticmethod(F.conv_transpose3d)


class _SlidingWindows(Module):
    """What ``Unfold`` and ``Fold`` share: the windows' geometry, as given, and its repr."""

    def __init__(
        self, kernel_size: Size, dilation: Size = 1, padding: Size = 0, stride: Size = 1
    ) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Unfold(_SlidingWindows):
    """Every sliding window of ``(N, C, H, W)`` as a column, ``(N, C*KH*KW, L)``: a module
    over ``F.unfold``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Unfold(2, padding=1)(sg.ones(1, 3, 4, 4)).shape
    scratchgrad.Size([1, 12, 25])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(_SlidingWindows):
    """Columns ``(N, C*KH*KW, L)`` added back into an image ``(N, C, *output_size)``, the
    adjoint of ``Unfold``: a module over ``F.fold``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Fold((3, 3), 2)(sg.ones(1, 4, 4))[0, 0].tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """

    def __init__(
        self,
        output_size: Size,
        kernel_size: Size,
        dilation: Size = 1,
        padding: Size = 0,
        stride: Size = 1,
    ) -> None:
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, {super().extra_repr()}"
