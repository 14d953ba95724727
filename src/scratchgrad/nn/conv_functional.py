"""Convolution and pooling as functions, after ``torch.nn.functional``.

Everything is built from the primitives in ``ops/conv.py``: ``Unfold`` gathers the sliding
windows into columns, a convolution is then one (batched, for groups) matrix product with the
weight, and a pooling layer one reduction over the window dim (``MaxOver`` for the maximum).
Pooling with non-overlapping windows (kernel == stride, no padding, the common ``MaxPool2d(2)``)
skips ``Unfold``: the image is reshaped into tiles ``(N, C, OH, KH, OW, KW)``, a view, and reduced
over the two tile dims. Results are ``(N, C, H, W)`` views of arrays stored batch last, the layout
the primitives work in; the next layer's windows are then cheap to gather.

Inputs are batched ``(N, C, H, W)`` (``(N, C, L)`` for 1-d) or unbatched ``(C, H, W)``, as in
PyTorch. Only zero padding; pooling supports ``ceil_mode`` but not ``return_indices``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.backend import xp
from scratchgrad.ops.conv import Fold, MaxOver, Unfold, window_offsets
from scratchgrad.ops.matmul import MatMul
from scratchgrad.tensor import Tensor, cat

IntPair = int | Sequence[int]

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "fold",
    "max_pool1d",
    "max_pool2d",
    "unfold",
]


# ---- convolution ----------------------------------------------------------------------------


@autocast_policy("lower")
def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Tensor:
    """2-d convolution (cross-correlation, as in every deep learning library).

    ``input`` is ``(N, C, H, W)`` or ``(C, H, W)``, ``weight`` is ``(O, C // groups, KH, KW)``.
    ``padding`` is a number, a pair, ``"valid"`` (none) or ``"same"`` (output as large as the
    input; stride 1 only, and any odd total goes to the bottom and right, as in PyTorch).

    >>> import scratchgrad as sg
    >>> x = sg.ones(1, 1, 3, 3)
    >>> conv2d(x, sg.ones(1, 1, 2, 2), padding=1)[0, 0]
    tensor([[1., 2., 2., 1.],
            [2., 4., 4., 2.],
            [2., 4., 4., 2.],
            [1., 2., 2., 1.]])
    """
    x, batched = _batched(input, 4, "conv2d")
    _check_conv(x, weight, bias, groups, 4, "conv2d")
    kernel_size = weight.shape[2:]
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    pads = _conv_padding(padding, kernel_size, dilation, stride)
    out_size = _output_size(x.shape[2:], kernel_size, stride, pads, dilation, "conv2d")
    if x.shape[0] == 0:
        return _empty_batch(x, weight, (weight.shape[0], *out_size))
    cols = Unfold.apply(
        x,
        kernel_size=kernel_size,
        dilation=dilation,
        padding=pads,
        stride=stride,
        ones_rows=0 if bias is None else groups,
    )  # (C*KH*KW, OH*OW*N), plus a row of ones per group to multiply the bias
    out_channels = weight.shape[0]
    filters = weight.reshape(groups, out_channels // groups, -1)
    if bias is not None:
        filters = cat([filters, bias.reshape(groups, out_channels // groups, 1)], dim=2)
    # Group g's rows of the columns meet group g's filters: a batch of G matrix products.
    out = filters @ cols.reshape(groups, -1, cols.shape[1])
    out = _batch_first(out.reshape(out_channels, *out_size, x.shape[0]))
    return out if batched else out.squeeze(0)


@autocast_policy("lower")
def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Tensor:
    """1-d convolution of ``(N, C, L)`` or ``(C, L)`` with a weight ``(O, C // groups, K)``.

    Computed as a 2-d convolution over images of height 1.

    >>> import scratchgrad as sg
    >>> conv1d(sg.tensor([[[1.0, 2.0, 3.0, 4.0]]]), sg.tensor([[[1.0, -1.0]]]))
    tensor([[[-1., -1., -1.]]])
    """
    x, batched = _batched(input, 3, "conv1d")
    _check_conv(x, weight, bias, groups, 3, "conv1d")
    stride, dilation = _single(stride, "stride"), _single(dilation, "dilation")
    if not isinstance(padding, str):
        padding = (0, _single(padding, "padding")[0])
    out = conv2d(
        x.unsqueeze(2),
        weight.unsqueeze(2),
        bias,
        stride=(1, stride[0]),
        padding=padding,
        dilation=(1, dilation[0]),
        groups=groups,
    ).squeeze(2)
    return out if batched else out.squeeze(0)


@autocast_policy("lower")
def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair = 0,
    output_padding: IntPair = 0,
    groups: int = 1,
    dilation: IntPair = 1,
) -> Tensor:
    """2-d transposed convolution (the gradient of ``conv2d`` with respect to its input), with
    a weight ``(C, O // groups, KH, KW)``: each input pixel adds its weighted kernel into the
    output, ``stride`` apart. The output is ``(H - 1) * stride - 2 * padding + dilation *
    (KH - 1) + output_padding + 1`` high (likewise wide).

    It is one (batched, for groups) matrix product ``weight.T @ input`` giving a column per
    input pixel, and ``Fold`` adding the columns into the image, cropping ``padding``.

    >>> import scratchgrad as sg
    >>> conv_transpose2d(sg.ones(1, 1, 2, 2), sg.ones(1, 1, 2, 2))[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
    """
    x, batched = _batched(input, 4, "conv_transpose2d")
    _check_conv_transpose(x, weight, bias, groups, 4, "conv_transpose2d")
    kernel_size = weight.shape[2:]
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    padding, output_padding = _pair(padding, "padding"), _pair(output_padding, "output_padding")
    _check_geometry(kernel_size, stride, _symmetric(padding), dilation, "conv_transpose2d")
    if any(o >= max(s, d) or o < 0 for o, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"conv_transpose2d: output padding {output_padding} must be smaller than either "
            f"stride {stride} or dilation {dilation}"
        )
    # the extent every column reaches, then what is cropped before and after it; an
    # output_padding past the cropping is zeros no column reaches, added at the end
    reach = [
        (n - 1) * s + d * (k - 1) + 1
        for n, s, d, k in zip(x.shape[2:], stride, dilation, kernel_size)
    ]
    crops = tuple((p, max(p - o, 0)) for p, o in zip(padding, output_padding))
    out_size = tuple(r - before - after for r, (before, after) in zip(reach, crops))
    if min(out_size) < 1:
        raise RuntimeError(
            f"conv_transpose2d: input of size {tuple(x.shape[2:])} with padding {padding} gives "
            f"an empty output {out_size}"
        )
    in_channels, out_channels = x.shape[1], weight.shape[1] * groups
    extra = [max(o - p, 0) for p, o in zip(padding, output_padding)]
    if x.shape[0] == 0:
        return _empty_batch(x, weight, (out_channels, *(o + e for o, e in zip(out_size, extra))))
    cols = x.permute(1, 2, 3, 0).reshape(groups, in_channels // groups, -1)  # batch last
    filters = weight.reshape(groups, in_channels // groups, -1).mT
    cols = (filters @ cols).reshape(filters.shape[1] * groups, cols.shape[2])  # (O*KH*KW, H*W*N)
    out = Fold.apply(
        cols,
        output_size=out_size,
        kernel_size=kernel_size,
        dilation=dilation,
        padding=crops,
        stride=stride,
    )
    if any(extra):
        out = out.pad(((0, 0), (0, 0), (0, extra[0]), (0, extra[1])))
    if bias is not None:
        out = out + bias.reshape(out_channels, 1, 1)
    return out if batched else out.squeeze(0)


@autocast_policy("lower")
def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair = 0,
    output_padding: IntPair = 0,
    groups: int = 1,
    dilation: IntPair = 1,
) -> Tensor:
    """1-d transposed convolution of ``(N, C, L)`` or ``(C, L)`` with a weight
    ``(C, O // groups, K)``, computed as a 2-d one over images of height 1.

    >>> import scratchgrad as sg
    >>> conv_transpose1d(sg.tensor([[[1.0, 2.0]]]), sg.tensor([[[1.0, -1.0]]]))
    tensor([[[ 1.,  1., -2.]]])
    """
    x, batched = _batched(input, 3, "conv_transpose1d")
    _check_conv_transpose(x, weight, bias, groups, 3, "conv_transpose1d")
    out = conv_transpose2d(
        x.unsqueeze(2),
        weight.unsqueeze(2),
        bias,
        (1, *_single(stride, "stride")),
        (0, *_single(padding, "padding")),
        (0, *_single(output_padding, "output_padding")),
        groups,
        (1, *_single(dilation, "dilation")),
    ).squeeze(2)
    return out if batched else out.squeeze(0)


def unfold(
    input: Tensor,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """Every sliding window of ``(N, C, H, W)`` as a column: ``(N, C*KH*KW, OH*OW)``.

    >>> import scratchgrad as sg
    >>> unfold(sg.arange(4.0).reshape(1, 1, 2, 2), 1).shape
    (1, 1, 4)
    """
    x, _ = _batched(input, 4, "unfold", allow_unbatched=False)
    kernel_size, dilation = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    stride, pads = _pair(stride, "stride"), _symmetric(_pair(padding, "padding"))
    _output_size(x.shape[2:], kernel_size, stride, pads, dilation, "unfold")
    cols = Unfold.apply(x, kernel_size=kernel_size, dilation=dilation, padding=pads, stride=stride)
    return cols.reshape(cols.shape[0], -1, x.shape[0]).permute(2, 0, 1)._as_base()


def fold(
    input: Tensor,
    output_size: IntPair,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """Add columns ``(N, C*KH*KW, L)`` back into an image ``(N, C, *output_size)``: the adjoint
    of ``unfold`` (overlapping windows add up).

    >>> import scratchgrad as sg
    >>> fold(sg.ones(1, 4, 4), (3, 3), 2)[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
    """
    if input.ndim != 3:
        raise RuntimeError(f"fold: expected a 3-d input (N, C*KH*KW, L), got shape {input.shape}")
    output_size, kernel_size = _pair(output_size, "output_size"), _pair(kernel_size, "kernel_size")
    dilation, stride = _pair(dilation, "dilation"), _pair(stride, "stride")
    pads = _symmetric(_pair(padding, "padding"))
    _output_size(output_size, kernel_size, stride, pads, dilation, "fold")
    return Fold.apply(
        input.permute(1, 2, 0).reshape(input.shape[1], -1),  # batch last
        output_size=output_size,
        kernel_size=kernel_size,
        dilation=dilation,
        padding=pads,
        stride=stride,
    )


# ---- pooling --------------------------------------------------------------------------------


def max_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    """The largest entry of each window. The gradient goes to one entry per window, the first
    largest (PyTorch's choice among ties); padding counts as -inf.

    >>> import scratchgrad as sg
    >>> max_pool2d(sg.arange(16.0).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices=True is not supported")
    x, batched = _batched(input, 4, "max_pool2d")
    kernel_size, stride, pads, dilation = _pool_args(kernel_size, stride, padding, dilation)
    out_size, pads = _pool_geometry(x.shape[2:], kernel_size, stride, pads, dilation, ceil_mode)
    if _tiles_fit(kernel_size, stride, pads, dilation):
        out = MaxOver.apply(_tiles(x, kernel_size, out_size), dims=(3, 5))
    else:
        cols = Unfold.apply(
            x,
            kernel_size=kernel_size,
            dilation=dilation,
            padding=pads,
            stride=stride,
            value=-math.inf,
        )
        n, c = x.shape[:2]
        out = _batch_first(MaxOver.apply(cols.reshape(c, -1, *out_size, n), dims=(1,)))
    return out if batched else out.squeeze(0)


def avg_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean of each window. With ``count_include_pad`` (the default) the zero padding counts
    in the divisor; ``divisor_override`` replaces the divisor altogether.

    >>> import scratchgrad as sg
    >>> avg_pool2d(sg.arange(16.0).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
    """
    x, batched = _batched(input, 4, "avg_pool2d")
    kernel_size, stride, pads, _ = _pool_args(kernel_size, stride, padding, 1)
    out_size, full_pads = _pool_geometry(x.shape[2:], kernel_size, stride, pads, (1, 1), ceil_mode)
    if _tiles_fit(kernel_size, stride, full_pads, (1, 1)):
        tiles = _tiles(x, kernel_size, out_size)
        # a sum of views, one per offset: NumPy reduces two short strided dims slowly
        first, *rest = (tiles[index] for index in window_offsets(tiles.shape, (3, 5)))
        sums = sum(rest, first)
    else:
        cols = Unfold.apply(
            x,
            kernel_size=kernel_size,
            dilation=(1, 1),
            padding=full_pads,
            stride=stride,
        )
        n, c = x.shape[:2]
        sums = _batch_first(cols.reshape(c, -1, *out_size, n).sum(1))
    if divisor_override is not None:
        divisor = divisor_override
    elif ceil_mode or not count_include_pad:
        divisor = Tensor(
            _window_counts(x.shape[2:], kernel_size, stride, pads, out_size, count_include_pad),
            dtype=x.dtype,
        ).to(x.device)
    else:
        divisor = kernel_size[0] * kernel_size[1]
    out = sums / divisor
    return out if batched else out.squeeze(0)


def adaptive_avg_pool2d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Mean pooling to a given output size, for any input size: output cell ``i`` averages input
    rows ``floor(i*H/OH)`` up to ``ceil((i+1)*H/OH)`` (windows may overlap), likewise columns.
    ``None`` in ``output_size`` keeps that input size.

    Windows that tile the input exactly are an ``avg_pool2d``. Otherwise the pooling is still
    separable, rows then columns, so it is two matrix products with small averaging matrices:
    ``out = A_h @ x @ A_w.T``.

    >>> import scratchgrad as sg
    >>> adaptive_avg_pool2d(sg.arange(9.0).reshape(1, 1, 3, 3), 2)
    tensor([[[[2., 3.],
              [5., 6.]]]])
    """
    x, batched = _batched(input, 4, "adaptive_avg_pool2d")
    size = x.shape[2:]
    out_size = _adaptive_size(output_size, size, "adaptive_avg_pool2d")
    if all(n % o == 0 for n, o in zip(size, out_size)):
        tile = tuple(n // o for n, o in zip(size, out_size))
        out = avg_pool2d(x, tile)
    else:
        rows, cols = (_averaging_matrix(o, n, x.dtype).to(x.device) for o, n in zip(out_size, size))
        # MatMul itself, not `@`: a pooling stays in its input's dtype under autocast, as PyTorch's
        out = MatMul.apply(MatMul.apply(rows, x), cols.mT)
    return out if batched else out.squeeze(0)


def max_pool1d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    """``max_pool2d`` of ``(N, C, L)`` or ``(C, L)``, as images of height 1.

    >>> import scratchgrad as sg
    >>> max_pool1d(sg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    tensor([[[3., 2.]]])
    """
    if return_indices:
        raise NotImplementedError("max_pool1d: return_indices=True is not supported")
    x, batched = _batched(input, 3, "max_pool1d")
    height_one = _height_one(kernel_size, stride, padding, dilation)
    out = max_pool2d(x.unsqueeze(2), *height_one, ceil_mode).squeeze(2)
    return out if batched else out.squeeze(0)


def avg_pool1d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """``avg_pool2d`` of ``(N, C, L)`` or ``(C, L)``, as images of height 1.

    >>> import scratchgrad as sg
    >>> avg_pool1d(sg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    tensor([[[2., 1.]]])
    """
    x, batched = _batched(input, 3, "avg_pool1d")
    kernel_size, stride, padding, _ = _height_one(kernel_size, stride, padding, 1)
    out = avg_pool2d(
        x.unsqueeze(2), kernel_size, stride, padding, ceil_mode, count_include_pad
    ).squeeze(2)
    return out if batched else out.squeeze(0)


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """``adaptive_avg_pool2d`` of ``(N, C, L)`` or ``(C, L)``, as images of height 1.

    >>> import scratchgrad as sg
    >>> adaptive_avg_pool1d(sg.arange(6.0).reshape(1, 1, 6), 4)
    tensor([[[0.5000, 1.5000, 3.5000, 4.5000]]])
    """
    x, batched = _batched(input, 3, "adaptive_avg_pool1d")
    (size,) = _single(output_size, "output_size")
    out = adaptive_avg_pool2d(x.unsqueeze(2), (1, size)).squeeze(2)
    return out if batched else out.squeeze(0)


def adaptive_max_pool2d(
    input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False
) -> Tensor:
    """Max pooling to a given output size, for any input size: output cell ``i`` takes the
    largest of input rows ``floor(i*H/OH)`` up to ``ceil((i+1)*H/OH)``, likewise columns.
    ``None`` in ``output_size`` keeps that input size.

    The windows are gathered as tiles ``(N, C, OH, KH, OW, KW)``, ``KH`` the longest window;
    a shorter window repeats its last row (which changes no maximum), then ``MaxOver`` reduces
    the tiles as ``max_pool2d`` does, with its gradient to the first maximum.

    >>> import scratchgrad as sg
    >>> adaptive_max_pool2d(sg.arange(9.0).reshape(1, 1, 3, 3), 2)
    tensor([[[[4., 5.],
              [7., 8.]]]])
    """
    if return_indices:
        raise NotImplementedError("adaptive_max_pool2d: return_indices=True is not supported")
    x, batched = _batched(input, 4, "adaptive_max_pool2d")
    out_size = _adaptive_size(output_size, x.shape[2:], "adaptive_max_pool2d")
    rows, cols = (_adaptive_windows(o, n) for o, n in zip(out_size, x.shape[2:]))
    tiles = x[:, :, rows][..., cols]  # (N, C, OH, KH, W) then (N, C, OH, KH, OW, KW)
    out = MaxOver.apply(tiles, dims=(3, 5))
    return out if batched else out.squeeze(0)


# ---- helpers --------------------------------------------------------------------------------


def _batched(x: Tensor, ndim: int, name: str, allow_unbatched: bool = True) -> tuple[Tensor, bool]:
    """``x`` with its batch dim, and whether it had one."""
    if x.ndim == ndim:
        return x, True
    if allow_unbatched and x.ndim == ndim - 1:
        return x.unsqueeze(0), False
    expected = f"{ndim - 1}-d or {ndim}-d" if allow_unbatched else f"{ndim}-d"
    raise RuntimeError(f"{name}: expected a {expected} input, got shape {x.shape}")


def _check_conv(x: Tensor, weight: Tensor, bias: Tensor | None, groups: int, ndim: int, name):
    if weight.ndim != ndim:
        raise RuntimeError(f"{name}: expected a {ndim}-d weight, got shape {weight.shape}")
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
    out_channels, in_per_group = weight.shape[:2]
    if x.shape[1] != in_per_group * groups:
        raise RuntimeError(
            f"{name}: input of shape {x.shape} has {x.shape[1]} channels, but weight of shape "
            f"{weight.shape} with groups={groups} expects {in_per_group * groups}"
        )
    if out_channels % groups:
        raise RuntimeError(
            f"{name}: {out_channels} output channels do not divide into groups={groups}"
        )
    _check_bias_and_dtypes(x, weight, bias, out_channels, name)


def _check_bias_and_dtypes(x, weight, bias, out_channels: int, name: str) -> None:
    if bias is not None and bias.shape != (out_channels,):
        raise RuntimeError(
            f"{name}: bias of shape {bias.shape} does not match {out_channels} output channels"
        )
    for other in (weight, bias):
        if other is not None and other.dtype != x.dtype:
            raise RuntimeError(
                f"{name}: input ({x.dtype}) and weight/bias ({other.dtype}) must have the "
                "same dtype"
            )


def _check_conv_transpose(x, weight, bias, groups: int, ndim: int, name: str) -> None:
    """``_check_conv`` for a transposed weight (in_channels, out_channels // groups, ...)."""
    if weight.ndim != ndim:
        raise RuntimeError(f"{name}: expected a {ndim}-d weight, got shape {weight.shape}")
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise RuntimeError(
            f"{name}: input of shape {x.shape} has {x.shape[1]} channels, but weight of shape "
            f"{weight.shape} with groups={groups} expects {weight.shape[0]} (divisible by groups)"
        )
    _check_bias_and_dtypes(x, weight, bias, weight.shape[1] * groups, name)


def _empty_batch(x: Tensor, weight: Tensor, shape: tuple[int, ...]) -> Tensor:
    """The result ``(0, *shape)`` of a convolution of an empty batch, in the graph (zero
    gradients)."""
    return ((x.sum() + weight.sum()) * 0).expand(0, *shape)


def _batch_first(x: Tensor) -> Tensor:
    """(C, H, W, N) -> (N, C, H, W); a view, so the memory stays batch last (but for
    is_contiguous and in-place changes the result is a tensor of its own, as in PyTorch)."""
    return x.permute(3, 0, 1, 2)._as_base()


def _pair(value: IntPair, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")
    return pair


def _single(value: IntPair, name: str) -> tuple[int]:
    single = (value,) if isinstance(value, int) else tuple(value)
    if len(single) != 1 or not isinstance(single[0], int):
        raise ValueError(f"{name} must be an int or a 1-tuple, got {value!r}")
    return single


def _symmetric(padding: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    return tuple((p, p) for p in padding)


def _conv_padding(padding, kernel_size, dilation, stride) -> tuple[tuple[int, int], ...]:
    """(before, after) per spatial dim, from a number, a pair, "valid" or "same"."""
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        # NOTE: as PyTorch, an odd total padding puts the extra row/column after the input.
        totals = [d * (k - 1) for k, d in zip(kernel_size, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, str):
        raise ValueError(f"padding must be 'valid', 'same' or numbers, got {padding!r}")
    return _symmetric(_pair(padding, "padding"))


def _output_size(size, kernel_size, stride, pads, dilation, name) -> tuple[int, int]:
    """How many windows fit along each dim, after checking the arguments make sense."""
    _check_geometry(kernel_size, stride, pads, dilation, name)
    out = tuple(
        (n + before + after - d * (k - 1) - 1) // s + 1
        for n, k, s, (before, after), d in zip(size, kernel_size, stride, pads, dilation)
    )
    if min(out) < 1:
        raise RuntimeError(
            f"{name}: input of size {tuple(size)} with padding {pads} is smaller than the kernel "
            f"{tuple(kernel_size)} with dilation {tuple(dilation)}"
        )
    return out


def _check_geometry(kernel_size, stride, pads, dilation, name) -> None:
    for label, values in (("kernel_size", kernel_size), ("stride", stride), ("dilation", dilation)):
        if min(values) < 1:
            raise ValueError(f"{name}: {label} must be positive, got {values}")
    if min(p for pair in pads for p in pair) < 0:
        raise ValueError(f"{name}: padding must be non-negative, got {pads}")


def _pool_args(kernel_size, stride, padding, dilation):
    kernel_size = _pair(kernel_size, "kernel_size")
    stride = kernel_size if stride is None or stride == () else _pair(stride, "stride")
    padding, dilation = _pair(padding, "padding"), _pair(dilation, "dilation")
    if any(p > k // 2 for p, k in zip(padding, kernel_size)):
        raise RuntimeError(
            f"pooling: padding {padding} should be at most half of kernel size {kernel_size}"
        )
    return kernel_size, stride, padding, dilation


def _pool_geometry(size, kernel_size, stride, padding, dilation, ceil_mode):
    """Output size and (before, after) padding of a pooling layer.

    With ``ceil_mode`` a last, partial window is kept when it starts inside the input or the
    left padding (PyTorch's rule); the extra padding after the input makes room for it.
    """
    pads = _symmetric(padding)
    out = list(_output_size(size, kernel_size, stride, pads, dilation, "pooling"))
    if ceil_mode:
        for i, (n, k, s, p, d) in enumerate(zip(size, kernel_size, stride, padding, dilation)):
            span = n + 2 * p - d * (k - 1) - 1
            out[i] = -(-span // s) + 1
            if (out[i] - 1) * s >= n + p:
                out[i] -= 1
        pads = tuple(
            (p, max(p, (o - 1) * s + d * (k - 1) + 1 - n - p))
            for n, k, s, p, d, o in zip(size, kernel_size, stride, padding, dilation, out)
        )
    return tuple(out), pads


def _tiles_fit(kernel_size, stride, pads, dilation) -> bool:
    """True when the windows are the tiles of a grid: a reshape gives them, no copy needed."""
    return kernel_size == stride and dilation == (1, 1) and all(p == (0, 0) for p in pads)


def _tiles(x: Tensor, kernel_size, out_size) -> Tensor:
    """``x`` as ``(N, C, OH, KH, OW, KW)`` tiles, dropping rows/columns no window reaches."""
    (kh, kw), (oh, ow) = kernel_size, out_size
    if x.shape[2:] != (oh * kh, ow * kw):
        x = x[:, :, : oh * kh, : ow * kw]
    return x.reshape(*x.shape[:2], oh, kh, ow, kw)


def _window_counts(size, kernel_size, stride, padding, out_size, include_pad):
    """Divisors of ``avg_pool2d``: how many cells each window covers in the input, with the
    padding too if ``include_pad``, but never past the padding (PyTorch's rule in ceil mode)."""
    counts = []
    for n, k, s, p, o in zip(size, kernel_size, stride, padding, out_size):
        start = xp.arange(o) * s - p
        end = xp.minimum(start + k, n + p)
        if not include_pad:
            start, end = xp.maximum(start, 0), xp.minimum(end, n)
        counts.append(end - start)
    return xp.multiply.outer(*counts)


def _averaging_matrix(out: int, size: int, dtype) -> Tensor:
    """``A`` of shape (out, size) with row i averaging entries floor(i*size/out) up to
    ceil((i+1)*size/out) of a vector: adaptive pooling along one dim is ``A @ v``."""
    i = xp.arange(out)
    start, end = (i * size) // out, -(-(i + 1) * size // out)
    j = xp.arange(size)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return Tensor(inside / (end - start)[:, None], dtype=dtype)


def _height_one(kernel_size, stride, padding, dilation):
    """1-d pooling arguments as those of a 2-d pooling over images of height 1."""
    (k,), (p,), (d,) = (
        _single(v, n)
        for v, n in ((kernel_size, "kernel_size"), (padding, "padding"), (dilation, "dilation"))
    )
    s = k if stride is None or stride == () else _single(stride, "stride")[0]
    return (1, k), (1, s), (0, p), (1, d)


def _adaptive_size(output_size, size, name: str) -> tuple[int, int]:
    """An adaptive pooling's output size, ``None`` entries taken from the input's ``size``."""
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    if len(output_size) != 2:
        raise ValueError(f"{name}: output_size must have 2 entries, got {output_size}")
    out_size = tuple(n if o is None else int(o) for o, n in zip(output_size, size))
    if min(out_size) < 1:
        raise ValueError(f"{name}: output_size must be positive, got {output_size}")
    return out_size


def _adaptive_windows(out: int, size: int):
    """(out, longest window) indices of the adaptive windows along a dim of ``size``: window
    ``i`` covers floor(i*size/out) up to ceil((i+1)*size/out); a shorter one repeats its last."""
    i = xp.arange(out)
    start, end = (i * size) // out, -(-(i + 1) * size // out)
    offsets = xp.arange(int((end - start).max()))
    return xp.minimum(start[:, None] + offsets, end[:, None] - 1)
