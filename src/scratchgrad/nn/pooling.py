"""Pooling layers: ``MaxPool1d``, ``MaxPool2d``, ``MaxPool3d``, ``AvgPool1d``, ``AvgPool2d``,
``AvgPool3d``, ``AdaptiveAvgPool1d``, ``AdaptiveAvgPool2d``, ``AdaptiveAvgPool3d``,
``AdaptiveMaxPool1d``, ``AdaptiveMaxPool2d``, ``AdaptiveMaxPool3d``, max pooling's partial
inverses ``MaxUnpool1d``, ``MaxUnpool2d`` and ``MaxUnpool3d``, and ``FractionalMaxPool2d`` and
``FractionalMaxPool3d``, as in PyTorch.

They hold no parameters; the arithmetic lives in ``nn.conv_functional`` (and
``nn.fractional``).
"""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.nn import conv_functional as F
from scratchgrad.nn import fractional
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor

Size = int | Sequence[int]


class _MaxPoolNd(Module):
    """What MaxPool1d, MaxPool2d and MaxPool3d share; each names the function that pools.
    With ``return_indices`` the result is ``(out, indices)``, as PyTorch's."""

    pool = None

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
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return self.pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
            self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """The largest entry of each window of ``(N, C, L)`` or ``(C, L)``, as ``MaxPool2d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.MaxPool1d(2)(sg.tensor([[1.0, 3.0, 2.0, 0.0]]))
    tensor([[3., 2.]])
    """

    pool = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """The largest entry of each window of ``(N, C, H, W)`` or ``(C, H, W)``.

    ``stride`` defaults to ``kernel_size``; padding counts as -inf. The gradient of each window
    goes to its first largest entry, as PyTorch's does.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.MaxPool2d(2)(sg.arange(16.0).reshape(1, 1, 4, 4))
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """

    pool = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """The largest entry of each window of ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as
    ``MaxPool2d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.MaxPool3d(2, return_indices=True)(sg.arange(8.0).reshape(1, 2, 2, 2))
    (tensor([[[[7.]]]]), tensor([[[[7]]]]))
    """

    pool = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """The mean of each window of ``(N, C, L)`` or ``(C, L)``, as ``AvgPool2d`` (with no
    ``divisor_override``, as PyTorch's).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AvgPool1d(2)(sg.tensor([[1.0, 3.0, 2.0, 0.0]]))
    tensor([[2., 1.]])
    """

    def __init__(
        self,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        # as PyTorch, kept as 1-tuples (and shown so)
        self.kernel_size = F._ntuple(kernel_size, 1, "kernel_size")
        self.stride = self.kernel_size if stride is None else F._ntuple(stride, 1, "stride")
        self.padding = F._ntuple(padding, 1, "padding")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    """What AvgPool2d and AvgPool3d share; each names the function that pools."""

    pool = None

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
        return self.pool(
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


class AvgPool2d(_AvgPoolNd):
    """The mean of each window of ``(N, C, H, W)`` or ``(C, H, W)``.

    ``stride`` defaults to ``kernel_size``. With ``count_include_pad`` (the default) the zero
    padding counts in the divisor; ``divisor_override`` replaces the divisor.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AvgPool2d(2)(sg.arange(16.0).reshape(1, 1, 4, 4))
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
    """

    pool = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """The mean of each window of ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as ``AvgPool2d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AvgPool3d(2)(sg.arange(8.0).reshape(1, 2, 2, 2))
    tensor([[[[3.5000]]]])
    """

    pool = staticmethod(F.avg_pool3d)


class _LPPoolNd(Module):
    """What LPPool1d, LPPool2d and LPPool3d share; each names the function that pools."""

    pool = None

    def __init__(
        self,
        norm_type: float,
        kernel_size: Size,
        stride: Size | None = None,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride = norm_type, kernel_size, stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return self.pool(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """The ``norm_type``-norm of each window of ``(N, C, L)`` or ``(C, L)`` (see
    ``F.lp_pool2d``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.LPPool1d(2, 2)(sg.tensor([[[3.0, 4.0]]]))
    tensor([[[5.]]])
    """

    pool = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """The ``norm_type``-norm of each window of ``(N, C, H, W)`` or ``(C, H, W)``: p = 1 sums,
    large p approaches max pooling (see ``F.lp_pool2d``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.LPPool2d(1, 2)(sg.ones(1, 1, 2, 2))
    tensor([[[[4.]]]])
    """

    pool = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """The ``norm_type``-norm of each window of ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.LPPool3d(1, 2)(sg.ones(1, 2, 2, 2))
    tensor([[[[8.]]]])
    """

    pool = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    """What MaxUnpool1d, MaxUnpool2d and MaxUnpool3d share; each names its function and how
    many spatial dims it has."""

    unpool = None
    dims = 0

    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0) -> None:
        super().__init__()
        # as PyTorch, kept as tuples (and shown so)
        self.kernel_size = F._ntuple(kernel_size, self.dims, "kernel_size")
        stride = kernel_size if stride is None else stride
        self.stride = F._ntuple(stride, self.dims, "stride")
        self.padding = F._ntuple(padding, self.dims, "padding")

    def forward(
        self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None
    ) -> Tensor:
        return self.unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """A partial inverse of ``MaxPool1d``: see ``MaxUnpool2d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out, indices = nn.MaxPool1d(2, return_indices=True)(sg.tensor([[1.0, 3.0, 2.0, 0.0]]))
    >>> nn.MaxUnpool1d(2)(out, indices)
    tensor([[0., 3., 2., 0.]])
    """

    unpool = staticmethod(F.max_unpool1d)
    dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """A partial inverse of ``MaxPool2d``: each entry put back where the indices (those of
    ``MaxPool2d(return_indices=True)``) say it was, zeros elsewhere. ``output_size`` in
    ``forward`` picks among the input sizes that pool to the same size.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    >>> unpool(*pool(sg.arange(9.0).reshape(1, 1, 3, 3)), output_size=(3, 3))
    tensor([[[[0., 0., 0.],
              [0., 4., 0.],
              [0., 0., 0.]]]])
    """

    unpool = staticmethod(F.max_unpool2d)
    dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """A partial inverse of ``MaxPool3d``: see ``MaxUnpool2d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out, indices = nn.MaxPool3d(2, return_indices=True)(sg.ones(1, 1, 2, 2, 2))
    >>> nn.MaxUnpool3d(2)(out, indices).sum()
    tensor(1.)
    """

    unpool = staticmethod(F.max_unpool3d)
    dims = 3


class _AdaptivePoolNd(Module):
    """What the adaptive poolings share; each names the function that pools."""

    pool = None

    def __init__(self, output_size: int | Sequence[int | None]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return self.pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Mean pooling of ``(N, C, L)`` or ``(C, L)`` to a fixed length, whatever the input's.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AdaptiveAvgPool1d(2)(sg.ones(2, 3, 5)).shape
    scratchgrad.Size([2, 3, 2])
    """

    pool = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Mean pooling to a fixed output size, whatever the input size (``None`` keeps a dim).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AdaptiveAvgPool2d(1)(sg.ones(2, 3, 5, 7)).shape
    scratchgrad.Size([2, 3, 1, 1])
    """

    pool = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Mean pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to a fixed output size, whatever
    the input size (``None`` keeps a dim).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AdaptiveAvgPool3d((1, None, 2))(sg.ones(2, 3, 4, 5, 7)).shape
    scratchgrad.Size([2, 3, 1, 5, 2])
    """

    pool = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    """What the adaptive max poolings share: with ``return_indices`` the result is
    ``(out, indices)``, as PyTorch's."""

    def __init__(
        self, output_size: int | Sequence[int | None], return_indices: bool = False
    ) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return self.pool(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling of ``(N, C, L)`` or ``(C, L)`` to a fixed length, whatever the input's.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AdaptiveMaxPool1d(2, return_indices=True)(sg.tensor([[1.0, 3.0, 2.0, 0.0, 5.0]]))
    (tensor([[3., 5.]]), tensor([[1, 4]]))
    """

    pool = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output size, whatever the input size (``None`` keeps a dim).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AdaptiveMaxPool2d((2, None))(sg.ones(2, 3, 5, 7)).shape
    scratchgrad.Size([2, 3, 2, 7])
    """

    pool = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to a fixed output size, whatever
    the input size (``None`` keeps a dim).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.AdaptiveMaxPool3d((2, None, 1))(sg.ones(2, 3, 4, 5, 7)).shape
    scratchgrad.Size([2, 3, 2, 5, 1])
    """

    pool = staticmethod(F.adaptive_max_pool3d)


class _FractionalMaxPoolNd(Module):
    """What ``FractionalMaxPool2d`` and ``3d`` share, as PyTorch's: the sizes (one per spatial
    dim), and ``_random_samples``, a buffer (None unless given: then each call draws new
    window starts)."""

    dims = 0
    pool = None

    def __init__(
        self,
        kernel_size: Size,
        output_size: Size | None = None,
        output_ratio: float | Sequence[float] | None = None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = _repeated(kernel_size, self.dims)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else _repeated(output_size, self.dims)
        self.output_ratio = None if output_ratio is None else _repeated(output_ratio, self.dims)
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return type(self).pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


def _repeated(value, n: int) -> tuple:
    """``value`` n times, or the sequence given as a tuple (PyTorch's ``_ntuple``: unchecked)."""
    return tuple(value) if isinstance(value, Sequence) else (value,) * n


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, H, W) or (C, H, W) input (``F.fractional_max_pool2d``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.FractionalMaxPool2d(3, output_ratio=0.5)(sg.randn(2, 4, 10, 12)).shape
    scratchgrad.Size([2, 4, 5, 6])
    """

    dims = 2
    pool = staticmethod(fractional.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W) input
    (``F.fractional_max_pool3d``)."""

    dims = 3
    pool = staticmethod(fractional.fractional_max_pool3d)
