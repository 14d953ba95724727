"""Convolution and pooling as functions, after ``torch.nn.functional``.

Everything is built from the primitives in ``ops/conv.py``: ``Unfold`` gathers the sliding
windows into columns, a convolution is then one (batched, for groups) matrix product with the
weight, and a pooling layer one reduction over the window dim (``MaxOver`` for the maximum).
Pooling with non-overlapping windows (kernel == stride, no padding, the common ``MaxPool2d(2)``)
skips ``Unfold``: the image is reshaped into tiles ``(N, C, OH, KH, OW, KW)``, a view, and reduced
over the tile dims. Results are ``(N, C, *S)`` views of arrays stored batch last, the layout the
primitives work in; the next layer's windows are then cheap to gather.

The 1-d, 2-d and 3-d versions of a function are one function of the number of spatial dims
(``_convolution``, ``_conv_transpose``, ``_max_pool``, ``_avg_pool``, ``_max_unpool``,
``_adaptive_avg_pool``, ``_adaptive_max_pool``); ``unfold`` and ``fold`` are 2-d only, as
PyTorch's. Inputs are batched ``(N, C, *S)`` or unbatched ``(C, *S)``, as in PyTorch. Only zero
padding (the layers pad otherwise themselves).
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.capture_hook import call as _call
from scratchgrad.autograd.function import saving
from scratchgrad.backend import namespace, xp
from scratchgrad.ops.conv import (
    Fold,
    MaxOver,
    Mix,
    Unfold,
    lowest,
    max_indices,
    window_argmax,
    window_offsets,
)
from scratchgrad.tensor import Tensor, cat

IntPair = int | Sequence[int]  # one int for every spatial dim, or one per dim

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "unfold",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
]


# ---- convolution ----------------------------------------------------------------------------


# PyTorch runs a bfloat16 convolution through oneDNN where the CPU has AVX-512 (BW, DQ, VL),
# which computes it in float32 and rounds once; elsewhere through its own kernels, which round
# as its float16 ones do (see _bfloat16_in_float32)
ONEDNN_BFLOAT16 = backend.cpu_has("AVX512_SKX")


def _bfloat16_in_float32(conv: Callable, node_name: str | None = None) -> Callable:
    """Where PyTorch computes a bfloat16 convolution in float32 and rounds once, forward and
    backward (``ONEDNN_BFLOAT16``), so does ``conv`` here, on its input, weight and bias
    widened (in bfloat16, the sums of overlapping windows in the input's gradient, rounded at
    each step, put a third of it an ulp off). Elsewhere its kernels round as its float16 ones,
    as ``conv`` does as it is. Weights of another dtype go in as they are, to ``conv``'s error.
    ``node_name``: the node ``conv`` ends in, named again over the rounding, saving the
    tensors given (see ``saving``)."""

    @functools.wraps(conv)
    def run(input: Tensor, weight: Tensor, bias: Tensor | None, *args: Any) -> Tensor:
        dtype = input.array.dtype
        if dtype != backend.bfloat16 or weight.array.dtype != dtype or not ONEDNN_BFLOAT16:
            return conv(input, weight, bias, *args)
        if bias is not None and bias.array.dtype == dtype:
            bias = bias.float()
        out = conv(input.float(), weight.float(), bias, *args).to(dtype)
        return out if node_name is None else saving(out, input, weight, name=node_name)

    return run


@functools.partial(_bfloat16_in_float32, node_name="ConvolutionBackward0")
def _convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: IntPair,
    padding: IntPair | str,
    dilation: IntPair,
    groups: int,
    dims: int,
    name: str,
) -> Tensor:
    """The convolution over ``dims`` spatial dims that ``conv1d``, ``conv2d`` and ``conv3d``
    are, named ``name`` in its errors."""
    x, batched = _batched(input, dims + 2, name)
    _check_conv(x, weight, bias, groups, dims + 2, name)
    kernel_size = weight.shape[2:]
    stride = _ntuple_or_one(stride, dims, f"{name}: stride")
    dilation = _ntuple_or_one(dilation, dims, f"{name}: dilation")
    pads = _conv_padding(padding, kernel_size, dilation, stride, name)
    out_size = _output_size(x.shape[2:], kernel_size, stride, pads, dilation, name)
    if x.shape[0] == 0:
        return _zeros_in_graph((x, weight, bias), (0, weight.shape[0], *out_size))
    cols = Unfold.apply(
        x,
        kernel_size=kernel_size,
        dilation=dilation,
        padding=pads,
        stride=stride,
        ones_rows=0 if bias is None else groups,
    )  # (C*prod(K), prod(O)*N), plus a row of ones per group to multiply the bias
    out_channels = weight.shape[0]
    filters = weight.reshape(groups, out_channels // groups, -1)
    if bias is not None:
        filters = cat([filters, bias.reshape(groups, out_channels // groups, 1)], dim=2)
    # Group g's rows of the columns meet group g's filters: a batch of G matrix products.
    out = filters @ cols.reshape(groups, -1, cols.shape[1])
    out = _batch_first(out.reshape(out_channels, *out_size, x.shape[0]))
    out = saving(out, input, weight, name="ConvolutionBackward0")
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
    """1-d convolution of ``(N, C, L)`` or ``(C, L)`` with a weight ``(O, C // groups, K)``;
    the arguments as ``conv2d``'s, one number each.

    >>> import scratchgrad as sg
    >>> conv1d(sg.tensor([[[1.0, 2.0, 3.0, 4.0]]]), sg.tensor([[[1.0, -1.0]]]))
    tensor([[[-1., -1., -1.]]])
    """
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


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
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@autocast_policy("lower")
def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Tensor:
    """3-d convolution of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with a weight
    ``(O, C // groups, KD, KH, KW)``; the arguments as ``conv2d``'s, three numbers each.

    >>> import scratchgrad as sg
    >>> conv3d(sg.ones(1, 1, 3, 3, 3), sg.ones(1, 1, 2, 2, 2), padding="same")[0, 0, 2]
    tensor([[4., 4., 2.],
            [4., 4., 2.],
            [2., 2., 1.]])
    """
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


@_bfloat16_in_float32
def _conv_transpose(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: IntPair,
    padding: IntPair,
    output_padding: IntPair,
    groups: int,
    dilation: IntPair,
    dims: int,
    name: str,
) -> Tensor:
    """The transposed convolution over ``dims`` spatial dims that ``conv_transpose1d``,
    ``conv_transpose2d`` and ``conv_transpose3d`` are, named ``name`` in its errors.

    It is one (batched, for groups) matrix product ``weight.T @ input`` giving a column per
    input pixel, and ``Fold`` adding the columns into the image, cropping ``padding``.
    """
    x, batched = _batched(input, dims + 2, name)
    _check_conv_transpose(x, weight, bias, groups, dims + 2, name)
    kernel_size = weight.shape[2:]
    stride, dilation, padding, output_padding = (
        _ntuple_or_one(value, dims, f"{name}: {label}")
        for value, label in (
            (stride, "stride"),
            (dilation, "dilation"),
            (padding, "padding"),
            (output_padding, "output_padding"),
        )
    )
    _check_geometry(kernel_size, stride, _symmetric(padding), dilation, name)
    if min(output_padding) < 0:
        raise RuntimeError(f"{name}: negative output_padding {output_padding} is not supported")
    # (as PyTorch's, which checks the output padding's bound only for a batch that is not empty)
    too_large = any(o >= max(s, d) for o, s, d in zip(output_padding, stride, dilation))
    if too_large and x.shape[0]:
        raise RuntimeError(
            f"{name}: output padding {output_padding} must be smaller than either "
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
    extra = [max(o - p, 0) for p, o in zip(padding, output_padding)]
    full_size = tuple(n + e for n, e in zip(out_size, extra))
    if min(full_size) < (x.shape[0] > 0):  # (PyTorch gives an empty batch an empty size)
        raise RuntimeError(
            f"{name}: input of size {tuple(x.shape[2:])} with padding {padding} gives "
            f"an empty output {full_size}"
        )
    in_channels, out_channels = x.shape[1], weight.shape[1] * groups
    if x.shape[0] == 0 or min(out_size) < 1:
        # an empty batch, or a padding that crops every column (only output_padding is left)
        out = _zeros_in_graph((x, weight), (x.shape[0], out_channels, *full_size))
    else:
        cols = x.permute(1, *range(2, dims + 2), 0).reshape(groups, in_channels // groups, -1)
        filters = weight.reshape(groups, in_channels // groups, -1).mT
        cols = (filters @ cols).reshape(filters.shape[1] * groups, cols.shape[2])  # (O*K, ...)
        out = Fold.apply(
            cols,
            output_size=out_size,
            kernel_size=kernel_size,
            dilation=dilation,
            padding=crops,
            stride=stride,
        )
        if any(extra):
            out = out.pad(((0, 0), (0, 0), *((0, e) for e in extra)))
    if bias is not None:  # added in the wider dtype, rounded to the input's, as PyTorch's
        out = (out + bias.reshape(out_channels, *(1,) * dims)).to(out.dtype)
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
    ``(C, O // groups, K)``; the arguments as ``conv_transpose2d``'s, one number each.

    >>> import scratchgrad as sg
    >>> conv_transpose1d(sg.tensor([[[1.0, 2.0]]]), sg.tensor([[[1.0, -1.0]]]))
    tensor([[[ 1.,  1., -2.]]])
    """
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        1,
        "conv_transpose1d",
    )


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

    >>> import scratchgrad as sg
    >>> conv_transpose2d(sg.ones(1, 1, 2, 2), sg.ones(1, 1, 2, 2))[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
    """
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        2,
        "conv_transpose2d",
    )


@autocast_policy("lower")
def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair = 0,
    output_padding: IntPair = 0,
    groups: int = 1,
    dilation: IntPair = 1,
) -> Tensor:
    """3-d transposed convolution of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with a weight
    ``(C, O // groups, KD, KH, KW)``; the arguments as ``conv_transpose2d``'s, three numbers
    each.

    >>> import scratchgrad as sg
    >>> conv_transpose3d(sg.ones(1, 1, 2, 2, 2), sg.ones(1, 1, 2, 2, 2), stride=2).shape
    scratchgrad.Size([1, 1, 4, 4, 4])
    """
    return _conv_transpose(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        3,
        "conv_transpose3d",
    )


def unfold(
    input: Tensor,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """Every sliding window of ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) as a column:
    ``(N, C*KH*KW, OH*OW)``.

    >>> import scratchgrad as sg
    >>> unfold(sg.arange(4.0).reshape(1, 1, 2, 2), 1).shape
    scratchgrad.Size([1, 1, 4])
    """
    if input.ndim < 3:  # (PyTorch's reads a dim the input lacks: its IndexError)
        raise IndexError(
            f"unfold: Dimension out of range: expected a 3-d or 4-d input, got shape {input.shape}"
        )
    x, batched = _batched(input, 4, "unfold")
    _refuse_integers(x, "unfold")
    kernel_size, dilation, stride, padding = (
        _ntuple(value, 2, f"unfold: {label}")
        for value, label in (
            (kernel_size, "kernel_size"),
            (dilation, "dilation"),
            (stride, "stride"),
            (padding, "padding"),
        )
    )
    pads = _symmetric(padding)
    out_size = _output_size(x.shape[2:], kernel_size, stride, pads, dilation, "unfold")
    cols = Unfold.apply(x, kernel_size=kernel_size, dilation=dilation, padding=pads, stride=stride)
    windows = math.prod(out_size)  # (not -1: an empty batch leaves it undetermined)
    out = cols.reshape(cols.shape[0], windows, x.shape[0]).permute(2, 0, 1)._as_base()
    return out if batched else out.squeeze(0)


def fold(
    input: Tensor,
    output_size: IntPair,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """Add columns ``(N, C*KH*KW, L)`` (or unbatched ``(C*KH*KW, L)``) back into an image
    ``(N, C, *output_size)``: the adjoint of ``unfold`` (overlapping windows add up).

    >>> import scratchgrad as sg
    >>> fold(sg.ones(1, 4, 4), (3, 3), 2)[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
    """
    x, batched = _batched(input, 3, "fold")
    _refuse_integers(x, "fold")
    output_size, kernel_size, dilation, stride, padding = (
        _ntuple(value, 2, f"fold: {label}")
        for value, label in (
            (output_size, "output_size"),
            (kernel_size, "kernel_size"),
            (dilation, "dilation"),
            (stride, "stride"),
            (padding, "padding"),
        )
    )
    pads = _symmetric(padding)
    blocks = _output_size(output_size, kernel_size, stride, pads, dilation, "fold")
    _check_fold_input(x, kernel_size, blocks)
    out = Fold.apply(
        x.permute(1, 2, 0).reshape(x.shape[1], -1),  # batch last
        output_size=output_size,
        kernel_size=kernel_size,
        dilation=dilation,
        padding=pads,
        stride=stride,
    )
    return out if batched else out.squeeze(0)


def _check_fold_input(x: Tensor, kernel_size: tuple, blocks: tuple) -> None:
    """``fold``'s columns: whole windows of ``kernel_size``, one column per block."""
    if 0 in x.shape[1:]:
        raise RuntimeError(f"fold: only the batch may be empty, got columns of shape {x.shape}")
    if x.shape[1] % math.prod(kernel_size):
        raise RuntimeError(
            f"fold: columns of shape {x.shape} have {x.shape[1]} rows, not a multiple of the "
            f"kernel's {math.prod(kernel_size)} entries {kernel_size}"
        )
    if x.shape[2] != math.prod(blocks):
        raise RuntimeError(
            f"fold: columns of shape {x.shape} have {x.shape[2]} columns, but the output size "
            f"fits {blocks[0]} * {blocks[1]} = {math.prod(blocks)} sliding blocks"
        )


# ---- pooling --------------------------------------------------------------------------------


def _max_pool(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None,
    padding: IntPair,
    dilation: IntPair,
    ceil_mode: bool,
    return_indices: bool,
    dims: int,
    name: str,
) -> Tensor | tuple[Tensor, Tensor]:
    """The max pooling over ``dims`` spatial dims that ``max_pool1d``, ``max_pool2d`` and
    ``max_pool3d`` are, named ``name`` in its errors."""
    x, batched = _batched(input, dims + 2, name)
    _refuse_empty_dims(input, input.ndim - dims - 1, name)
    # (PyTorch's kernels: no bool or complex, and the 1-d one without indices floats only)
    if (
        x.dtype == backend.bool_
        or x.is_complex()
        or (dims == 1 and not return_indices and not x.is_floating_point())
    ):
        raise NotImplementedError(f'"{name}" not implemented for {x.dtype.name}')
    geometry = _pool_args(kernel_size, stride, padding, dilation, dims, name)
    kernel_size, stride, _, dilation = geometry
    out_size, pads = _pool_geometry(x.shape[2:], *geometry, ceil_mode, name)
    if _tiles_fit(kernel_size, stride, pads, dilation):
        tile_dims = tuple(range(3, 3 + 2 * dims, 2))
        out = MaxOver.apply(_tiles(x, kernel_size, out_size), dims=tile_dims)
    else:
        cols = Unfold.apply(
            x,
            kernel_size=kernel_size,
            dilation=dilation,
            padding=pads,
            stride=stride,
            value=lowest(x.array),
        )
        n, c = x.shape[:2]
        padded = (tuple(x.shape[2:]), tuple(out_size), kernel_size, stride, pads, dilation)
        windows = cols.reshape(c, math.prod(kernel_size), *out_size, n)
        out = _batch_first(MaxOver.apply(windows, dims=(1,), padded=padded))
    # (PyTorch's 1-d pooling is its 2-d one, of the input with one more dim)
    out = saving(out, input, name=f"MaxPool{max(dims, 2)}DWithIndicesBackward0")
    if not return_indices:
        return out if batched else out.squeeze(0)
    # a pass of its own (not MaxOver's winners): the same winners, wherever the windows came from
    indices = Tensor._make(_call(max_indices, x.array, kernel_size, dilation, pads, stride))
    return (out, indices) if batched else (out.squeeze(0), indices.squeeze(0))


def max_pool1d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """``max_pool2d`` of ``(N, C, L)`` or ``(C, L)``.

    >>> import scratchgrad as sg
    >>> max_pool1d(sg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
    (tensor([[[3., 2.]]]), tensor([[[1, 2]]]))
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d"
    )


def max_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The largest entry of each window. The gradient goes to one entry per window, the first
    largest (PyTorch's choice among ties; the last NaN if any); padding counts as -inf.

    With ``return_indices`` it also returns where each window's largest entry is (the one its
    gradient goes to), as PyTorch: an index into the flattened ``(H, W)`` plane, int64, which
    ``max_unpool2d`` takes.

    A window whose entries are all -inf gives its index and its gradient to its first entry
    inside the input, not to the padding before it, as PyTorch.

    >>> import scratchgrad as sg
    >>> max_pool2d(sg.arange(16.0).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d"
    )


def max_pool3d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """``max_pool2d`` of ``(N, C, D, H, W)`` or ``(C, D, H, W)``; the indices are into the
    flattened ``(D, H, W)`` volume. Under autocast, in float32 without ``return_indices`` and in
    the input's dtype with it, as PyTorch's (two ops there: only the first is on its float32
    list).

    >>> import scratchgrad as sg
    >>> max_pool3d(sg.arange(8.0).reshape(1, 2, 2, 2), 2, return_indices=True)
    (tensor([[[[7.]]]]), tensor([[[[7]]]]))
    """
    if not return_indices:
        return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, True, 3, "max_pool3d"
    )


@autocast_policy("float32")
def _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode) -> Tensor:
    """``max_pool3d`` without indices: PyTorch's ``max_pool3d`` op, on its float32 list."""
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, False, 3, "max_pool3d"
    )


def _avg_pool(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None,
    padding: IntPair,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    dims: int,
    name: str,
) -> Tensor:
    """The mean pooling over ``dims`` spatial dims that ``avg_pool1d``, ``avg_pool2d`` and
    ``avg_pool3d`` are, named ``name`` in its errors."""
    x, batched = _batched(input, dims + 2, name)
    _refuse_empty_dims(input, input.ndim - dims - 1, name)
    if not (x.is_floating_point() or x.dtype == backend.int64):
        raise NotImplementedError(f'"{name}" not implemented for {x.dtype.name}')
    if divisor_override == 0:
        raise RuntimeError(f"{name}: divisor_override must not be zero")
    dtype = x.dtype
    if x.array.dtype in backend.SIXTEEN_BIT:  # summed and divided in float32, as PyTorch's
        x = x.float()
    geometry = _pool_args(kernel_size, stride, padding, 1, dims, name)
    kernel_size, stride, padding, ones = geometry
    if dims == 3 and any(n < k for n, k in zip(x.shape[2:], kernel_size)):
        raise RuntimeError(  # (PyTorch's avg_pool3d check, which leaves the padding out)
            f"{name}: input image of size {tuple(x.shape[2:])} smaller than kernel size "
            f"{kernel_size}"
        )
    out_size, full_pads = _pool_geometry(x.shape[2:], *geometry, ceil_mode, name)
    if _tiles_fit(kernel_size, stride, full_pads, ones):
        tiles = _tiles(x, kernel_size, out_size)
        # a sum of views, one per offset: NumPy reduces short strided dims slowly
        tile_dims = tuple(range(3, 3 + 2 * dims, 2))
        first, *rest = (tiles[index] for index in window_offsets(tiles.shape, tile_dims))
        sums = sum(rest, first)
    else:
        cols = Unfold.apply(
            x, kernel_size=kernel_size, dilation=ones, padding=full_pads, stride=stride
        )
        n, c = x.shape[:2]
        sums = _batch_first(cols.reshape(c, math.prod(kernel_size), *out_size, n).sum(1))
    if divisor_override is not None:
        divisor = divisor_override
    elif ceil_mode or not count_include_pad:
        divisor = Tensor._from_data(
            _window_counts(x.shape[2:], kernel_size, stride, padding, out_size, count_include_pad),
            x.dtype,
        ).to(x.device)
    else:
        divisor = math.prod(kernel_size)
    # NOTE: integer inputs pool to integers, each mean truncated toward zero (PyTorch's kernel)
    out = sums / divisor if x.is_floating_point() else sums.div(divisor, rounding_mode="trunc")
    out = out if x.dtype == dtype else out.to(dtype)  # a 16-bit input's mean, rounded once
    out = saving(out, input, name=f"AvgPool{max(dims, 2)}DBackward0")  # (1-d: as max pooling)
    return out if batched else out.squeeze(0)


def avg_pool1d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """``avg_pool2d`` of ``(N, C, L)`` or ``(C, L)`` (with no ``divisor_override``, as
    PyTorch's).

    >>> import scratchgrad as sg
    >>> avg_pool1d(sg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    tensor([[[2., 1.]]])
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d"
    )


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
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        2,
        "avg_pool2d",
    )


@autocast_policy("float32")
def avg_pool3d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """``avg_pool2d`` of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` (in float32 under autocast,
    as PyTorch's).

    >>> import scratchgrad as sg
    >>> avg_pool3d(sg.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
    tensor([[[[[3.5000]]]]])
    """
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        3,
        "avg_pool3d",
    )


def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: int, stride: int | None = None, ceil_mode=False
) -> Tensor:
    """``lp_pool2d`` of ``(N, C, L)`` or ``(C, L)``.

    >>> import scratchgrad as sg
    >>> lp_pool1d(sg.tensor([[[3.0, 4.0, 1.0, 0.0]]]), 2, 2)
    tensor([[[5., 1.]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, avg_pool1d, max_pool1d)


def lp_pool2d(
    input: Tensor,
    norm_type: float,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """The ``norm_type``-norm of each window, ``(sum of x ** p) ** (1 / p)``, computed as
    PyTorch's: average pooling of ``x ** p``, times the window's size, to the power ``1 / p``
    (with PyTorch's gradients, NaN where a window's sum is 0 and ``p > 1``).

    >>> import scratchgrad as sg
    >>> lp_pool2d(sg.tensor([[[[3.0, 0.0], [0.0, 4.0]]]]), 2, 2)
    tensor([[[[5.]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, avg_pool2d, max_pool2d)


def lp_pool3d(
    input: Tensor,
    norm_type: float,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """``lp_pool2d`` of ``(N, C, D, H, W)`` or ``(C, D, H, W)``.

    >>> import scratchgrad as sg
    >>> lp_pool3d(sg.ones(1, 2, 2, 2), 1, 2)
    tensor([[[[8.]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, avg_pool3d, max_pool3d)


def _lp_pool(
    input, norm_type, kernel_size, stride, ceil_mode, dims: int, average, maximum
) -> Tensor:
    """lp_pool1d/2d/3d: PyTorch's steps, so its values and gradients come out. The infinity
    norms are the limits, each window's largest (or, for -inf, smallest) absolute value."""
    if norm_type == math.inf:
        return maximum(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -maximum(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    size = math.prod(_ntuple(kernel_size, dims, f"lp_pool{dims}d: kernel_size"))
    stride = kernel_size if stride is None else stride
    out = average(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(size).pow(1.0 / norm_type)


def _max_unpool(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None,
    padding: IntPair,
    output_size: Sequence[int] | None,
    dims: int,
    name: str,
) -> Tensor:
    """The inverse of max pooling over ``dims`` spatial dims that ``max_unpool1d``,
    ``max_unpool2d`` and ``max_unpool3d`` are, named ``name`` in its errors."""
    x, batched = _batched(input, dims + 2, name)
    kernel_size = _ntuple(kernel_size, dims, f"{name}: kernel_size")
    stride = kernel_size if stride is None else _ntuple(stride, dims, f"{name}: stride")
    padding = _ntuple(padding, dims, f"{name}: padding")
    size = _unpool_size(x.shape[2:], kernel_size, stride, padding, output_size, name)
    if not isinstance(indices, Tensor) or indices.dtype != backend.int64:
        raise RuntimeError(f"{name}: indices must be an int64 tensor, got {indices!r:.40}")
    if indices.shape != input.shape:
        raise RuntimeError(
            f"{name}: indices of shape {indices.shape} do not match the input's {input.shape}"
        )
    n, c, plane, entries = *x.shape[:2], math.prod(size), math.prod(x.shape[2:])
    flat = indices.reshape(n, c, entries)  # (sizes, not -1: the batch may be empty)
    _call(_check_unpool_indices, flat.array, plane, size, name)  # a jitted step's too
    # NOTE: where indices repeat, the last write stays (PyTorch leaves it unspecified)
    out = x.new_zeros((n, c, plane)).scatter(2, flat, x.reshape(n, c, entries))
    out = out.reshape(n, c, *size)
    return out if batched else out.squeeze(0)


@autocast_policy("float32")
def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """``max_unpool2d`` of ``(N, C, L)`` or ``(C, L)`` (in float32 under autocast, as
    PyTorch's, whose 1-d unpooling is its 2-d one).

    >>> import scratchgrad as sg
    >>> out, indices = max_pool1d(sg.tensor([[1.0, 3.0, 2.0, 0.0]]), 2, return_indices=True)
    >>> max_unpool1d(out, indices, 2)
    tensor([[0., 3., 2., 0.]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


@autocast_policy("float32")
def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """A partial inverse of ``max_pool2d``: zeros of the pooled input's size, with each entry of
    ``input`` put back where ``indices`` (``max_pool2d``'s, with ``return_indices``) say it came
    from. ``output_size`` picks among the input sizes that pool to ``input``'s (the smallest by
    default); the gradient takes each entry's back from there. In float32 under autocast, as
    PyTorch's.

    >>> import scratchgrad as sg
    >>> out, indices = max_pool2d(sg.arange(16.0).reshape(1, 4, 4), 2, return_indices=True)
    >>> max_unpool2d(out, indices, 2)
    tensor([[[ 0.,  0.,  0.,  0.],
             [ 0.,  5.,  0.,  7.],
             [ 0.,  0.,  0.,  0.],
             [ 0., 13.,  0., 15.]]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


@autocast_policy("float32")
def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """``max_unpool2d`` of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` (in float32 under autocast,
    as PyTorch's).

    >>> import scratchgrad as sg
    >>> out, indices = max_pool3d(sg.arange(8.0).reshape(1, 2, 2, 2), 2, return_indices=True)
    >>> max_unpool3d(out, indices, 2)[0, 1]
    tensor([[0., 0.],
            [0., 7.]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


def _adaptive_avg_pool(input: Tensor, output_size, dims: int, name: str) -> Tensor:
    """The adaptive mean pooling over ``dims`` spatial dims that ``adaptive_avg_pool1d``,
    ``adaptive_avg_pool2d`` and ``adaptive_avg_pool3d`` are, named ``name`` in its errors.

    Windows that tile the input exactly are an average pooling. Otherwise the pooling is still
    separable, one dim after the other, so it is a product per dim with a small averaging
    matrix ``A`` (in 2-d, ``out = A_h @ x @ A_w.T``), ``Mix``, which leaves an infinity to the
    windows that hold it, as PyTorch's sums do. (``Mix`` itself, not ``@``: a pooling stays in
    its dtype under autocast, as PyTorch's.)
    """
    x, batched = _batched(input, dims + 2, name)
    size = x.shape[2:]
    out_size = _adaptive_size(output_size, size, name)
    # as PyTorch's: the 1-d and 2-d poolings take an input without channels, the 3-d one not
    _check_adaptive_input(input, input.ndim - dims if dims < 3 else 1, name)
    wide = backend.accumulation_dtype(x.dtype)
    if wide is not None:  # 16 bits: each window's mean in float32, rounded once, as PyTorch's
        return _adaptive_avg_pool(input.to(wide), output_size, dims, name).to(input.dtype)
    # (avg_pool refuses the empty channels that adaptive pooling allows: Mix takes those)
    if x.shape[1] and all(o and n % o == 0 for n, o in zip(size, out_size)):
        tile = tuple(n // o for n, o in zip(size, out_size))
        out = _avg_pool(x, tile, None, 0, False, True, None, dims, name)
    else:
        out = x
        for i, (o, n) in enumerate(zip(out_size, size)):
            if o != n:  # (windows of one entry each leave the input as it is)
                out = Mix.apply(out, weights=_averaging_matrix(o, n), dim=2 + i)
    return out if batched else out.squeeze(0)


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """``adaptive_avg_pool2d`` of ``(N, C, L)`` or ``(C, L)``.

    >>> import scratchgrad as sg
    >>> adaptive_avg_pool1d(sg.arange(6.0).reshape(1, 1, 6), 4)
    tensor([[[0.5000, 1.5000, 3.5000, 4.5000]]])
    """
    return _adaptive_avg_pool(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Mean pooling to a given output size, for any input size: output cell ``i`` averages input
    rows ``floor(i*H/OH)`` up to ``ceil((i+1)*H/OH)`` (windows may overlap), likewise columns.
    ``None`` in ``output_size`` keeps that input size.

    An infinity in the input makes the windows holding it infinite (NaN: both infinities, or
    a NaN), the others stay finite, as PyTorch's; so does the gradient.

    >>> import scratchgrad as sg
    >>> adaptive_avg_pool2d(sg.arange(9.0).reshape(1, 1, 3, 3), 2)
    tensor([[[[2., 3.],
              [5., 6.]]]])
    """
    return _adaptive_avg_pool(input, output_size, 2, "adaptive_avg_pool2d")


@autocast_policy("float32")
def adaptive_avg_pool3d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """``adaptive_avg_pool2d`` of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` (in float32 under
    autocast, as PyTorch's).

    >>> import scratchgrad as sg
    >>> adaptive_avg_pool3d(sg.arange(8.0).reshape(1, 2, 2, 2), (1, None, 1))
    tensor([[[[2.5000],
              [4.5000]]]])
    """
    return _adaptive_avg_pool(input, output_size, 3, "adaptive_avg_pool3d")


def _adaptive_max_pool(
    input: Tensor, output_size, return_indices: bool, dims: int, name: str
) -> Tensor | tuple[Tensor, Tensor]:
    """The adaptive max pooling over ``dims`` spatial dims that ``adaptive_max_pool1d``,
    ``adaptive_max_pool2d`` and ``adaptive_max_pool3d`` are, named ``name`` in its errors.

    The windows are gathered as tiles ``(N, C, O1, K1, O2, K2, ...)``, ``Ki`` the longest window
    along dim ``i``; a shorter window repeats its last entry (which changes no maximum), then
    ``MaxOver`` reduces the tiles as max pooling does, with its gradient to the first maximum.
    """
    x, batched = _batched(input, dims + 2, name)
    size = x.shape[2:]
    out_size = _adaptive_size(output_size, size, name)
    _check_adaptive_input(input, 1, name)
    windows = tuple(_adaptive_windows(o, n) for o, n in zip(out_size, size))
    tiles = x
    for i, along in enumerate(windows):  # spatial dim i becomes (Oi, Ki)
        tiles = tiles[(slice(None),) * (2 + 2 * i) + (along,)]
    out = MaxOver.apply(tiles, dims=tuple(range(3, 3 + 2 * dims, 2)))
    if not return_indices:
        return out if batched else out.squeeze(0)
    indices = Tensor._make(_call(_adaptive_indices, tiles.array, windows, size))
    return (out, indices) if batched else (out.squeeze(0), indices.squeeze(0))


def adaptive_max_pool1d(
    input: Tensor, output_size: int | Sequence[int], return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """``adaptive_max_pool2d`` of ``(N, C, L)`` or ``(C, L)``.

    >>> import scratchgrad as sg
    >>> adaptive_max_pool1d(sg.tensor([[1.0, 3.0, 2.0, 0.0, 5.0]]), 2, return_indices=True)
    (tensor([[3., 5.]]), tensor([[1, 4]]))
    """
    return _adaptive_max_pool(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(
    input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling to a given output size, for any input size: output cell ``i`` takes the
    largest of input rows ``floor(i*H/OH)`` up to ``ceil((i+1)*H/OH)``, likewise columns.
    ``None`` in ``output_size`` keeps that input size. ``return_indices`` also returns where
    each largest entry is, as ``max_pool2d``'s.

    >>> import scratchgrad as sg
    >>> adaptive_max_pool2d(sg.arange(9.0).reshape(1, 1, 3, 3), 2)
    tensor([[[[4., 5.],
              [7., 8.]]]])
    """
    return _adaptive_max_pool(input, output_size, return_indices, 2, "adaptive_max_pool2d")


@autocast_policy("float32")
def adaptive_max_pool3d(
    input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """``adaptive_max_pool2d`` of ``(N, C, D, H, W)`` or ``(C, D, H, W)``; the indices are into
    the flattened ``(D, H, W)`` volume (in float32 under autocast, as PyTorch's).

    >>> import scratchgrad as sg
    >>> adaptive_max_pool3d(sg.arange(8.0).reshape(1, 2, 2, 2), (1, 2, 1), return_indices=True)
    (tensor([[[[5.],
              [7.]]]]), tensor([[[[5],
              [7]]]]))
    """
    return _adaptive_max_pool(input, output_size, return_indices, 3, "adaptive_max_pool3d")


# ---- the *_with_indices aliases: PyTorch's names for the pools that return (values, indices),
# whatever ``return_indices`` says (PyTorch's take the argument and ignore it too)


def _with_indices(pool: Callable) -> Callable:
    """``pool`` with ``return_indices=True``, under PyTorch's name ``<pool>_with_indices``.

    >>> import scratchgrad as sg
    >>> max_pool1d_with_indices(sg.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    (tensor([[[3., 2.]]]), tensor([[[1, 2]]]))
    """
    signature = inspect.signature(pool)

    def with_indices(*args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        bound = signature.bind(*args, **kwargs)
        bound.arguments["return_indices"] = True
        return pool(*bound.args, **bound.kwargs)  # (pool applies its own autocast policy)

    # pool's parameters (for the checks of nn.functional's wrapper), not its other attributes
    with_indices.__signature__ = signature
    with_indices.__name__ = with_indices.__qualname__ = f"{pool.__name__}_with_indices"
    with_indices.__doc__ = f"``{pool.__name__}`` with ``return_indices=True``."
    return with_indices


max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)


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
    _check_groups(groups, name)
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


def _check_groups(groups: int, name: str) -> None:
    if not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"{name}: groups must be a positive integer, got {groups}")


def _check_bias_and_dtypes(
    x, weight, bias, out_channels: int, name: str, bias_of_any_dtype: bool = False
) -> None:
    if bias is not None and bias.shape != (out_channels,):
        raise RuntimeError(
            f"{name}: bias of shape {bias.shape} does not match {out_channels} output channels"
        )
    for other in (weight, None if bias_of_any_dtype else bias):
        if other is not None and other.dtype != x.dtype:
            raise RuntimeError(
                f"{name}: input ({x.dtype.name}) and weight/bias ({other.dtype.name}) must have "
                "the "
                "same dtype"
            )


def _check_conv_transpose(x, weight, bias, groups: int, ndim: int, name: str) -> None:
    """``_check_conv`` for a transposed weight (in_channels, out_channels // groups, ...)."""
    if weight.ndim != ndim:
        raise RuntimeError(f"{name}: expected a {ndim}-d weight, got shape {weight.shape}")
    _check_groups(groups, name)
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise RuntimeError(
            f"{name}: input of shape {x.shape} has {x.shape[1]} channels, but weight of shape "
            f"{weight.shape} with groups={groups} expects {weight.shape[0]} (divisible by groups)"
        )
    if 0 in weight.shape[:1] + x.shape[2:]:  # as PyTorch: only the batch may be empty
        raise RuntimeError(
            f"{name}: only the batch may be empty, got input of shape {x.shape} and weight of "
            f"shape {weight.shape}"
        )
    # PyTorch's conv_transpose1d and 2d take a bias of any dtype (see _conv_transpose); its
    # conv_transpose3d refuses one
    _check_bias_and_dtypes(x, weight, bias, weight.shape[1] * groups, name, ndim < 5)


def _zeros_in_graph(inputs: tuple, shape: tuple[int, ...]) -> Tensor:
    """Zeros of ``shape``, the result of a convolution of an empty batch (or one no column
    reaches), in the graph of its ``inputs`` (input, weight and bias, if any): zero
    gradients, as PyTorch's, in the input's dtype (a transposed convolution's bias may have
    another)."""
    zero = sum(t.sum() for t in inputs if t is not None) * 0
    return zero.to(inputs[0].dtype).expand(shape).clone()  # (writable, as PyTorch's)


def _batch_first(x: Tensor) -> Tensor:
    """(C, *S, N) -> (N, C, *S); a view, so the memory stays batch last (but for
    is_contiguous and in-place changes the result is a tensor of its own, as in PyTorch)."""
    return x.permute(x.ndim - 1, *range(x.ndim - 1))._as_base()


def _ntuple(value: IntPair, n: int, what: str) -> tuple[int, ...]:
    """``value``, an int or ``n`` ints, as ``n`` ints; ``what`` names it in the error, which is
    PyTorch's: a TypeError for what is no int (a float, a string), a RuntimeError for a count."""
    if isinstance(value, int):
        return (value,) * n
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) for v in value):
        raise TypeError(f"{what} must be an int or {n} ints, got {value!r}")
    if len(value) != n:
        raise RuntimeError(f"{what} must be an int or {n} ints, got {value!r}")
    return tuple(value)


def _refuse_integers(x: Tensor, name: str) -> None:
    """PyTorch's im2col and col2im kernels take floating and complex dtypes only."""
    if not (x.is_floating_point() or x.is_complex()):
        raise NotImplementedError(f'"{name}" not implemented for {x.dtype.name}')


def _ntuple_or_one(value: IntPair, n: int, what: str) -> tuple[int, ...]:
    """``_ntuple``, where one number in a list stands for every dim too, as PyTorch's
    convolutions and poolings take it (its folds, adaptive and fractional poolings not)."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    return _ntuple(value, n, what)


def _symmetric(padding: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((p, p) for p in padding)


def _conv_padding(padding, kernel_size, dilation, stride, name) -> tuple[tuple[int, int], ...]:
    """(before, after) per spatial dim, from a number, one per dim, "valid" or "same"."""
    if padding == "valid":
        return ((0, 0),) * len(kernel_size)
    if padding == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError(f"{name}: padding='same' is not supported for strided convolutions")
        # NOTE: as PyTorch, an odd total padding puts the extra row/column after the input.
        totals = [d * (k - 1) for k, d in zip(kernel_size, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, str):
        raise RuntimeError(f"{name}: padding must be 'valid', 'same' or numbers, got {padding!r}")
    return _symmetric(_ntuple_or_one(padding, len(kernel_size), f"{name}: padding"))


def _output_size(size, kernel_size, stride, pads, dilation, name) -> tuple[int, ...]:
    """How many windows fit along each dim, after checking the arguments make sense."""
    _check_geometry(kernel_size, stride, pads, dilation, name)
    out = tuple(
        (n + before + after - d * (k - 1) - 1) // s + 1
        for n, k, s, (before, after), d in zip(size, kernel_size, stride, pads, dilation)
    )
    _check_not_empty(out, size, kernel_size, pads, dilation, name)
    return out


def _check_not_empty(out, size, kernel_size, pads, dilation, name) -> None:
    if min(out) < 1:
        raise RuntimeError(
            f"{name}: input of size {tuple(size)} with padding {pads} is smaller than the kernel "
            f"{tuple(kernel_size)} with dilation {tuple(dilation)}"
        )


def _check_geometry(kernel_size, stride, pads, dilation, name) -> None:
    for label, values in (("kernel_size", kernel_size), ("stride", stride), ("dilation", dilation)):
        if min(values) < 1:
            raise RuntimeError(f"{name}: {label} must be positive, got {values}")
    if min(p for pair in pads for p in pair) < 0:
        raise RuntimeError(f"{name}: padding must be non-negative, got {pads}")


def _pool_args(kernel_size, stride, padding, dilation, dims: int, name: str):
    """A pooling's kernel size, stride (the kernel size by default), padding and dilation, one
    number per spatial dim each."""
    kernel_size = _ntuple_or_one(kernel_size, dims, f"{name}: kernel_size")
    if stride is None or stride in ((), []):
        stride = kernel_size
    else:
        stride = _ntuple_or_one(stride, dims, f"{name}: stride")
    padding = _ntuple_or_one(padding, dims, f"{name}: padding")
    dilation = _ntuple_or_one(dilation, dims, f"{name}: dilation")
    if any(p > k // 2 for p, k in zip(padding, kernel_size)):
        raise RuntimeError(
            f"{name}: padding {padding} should be at most half of kernel size {kernel_size}"
        )
    return kernel_size, stride, padding, dilation


def _pool_geometry(size, kernel_size, stride, padding, dilation, ceil_mode, name):
    """Output size and (before, after) padding of a pooling layer.

    With ``ceil_mode`` a last, partial window is kept when it starts inside the input or the
    left padding (PyTorch's rule); the extra padding after the input makes room for it.
    """
    pads = _symmetric(padding)
    if not ceil_mode:
        return _output_size(size, kernel_size, stride, pads, dilation, name), pads
    _check_geometry(kernel_size, stride, pads, dilation, name)
    out = []  # (a window may outgrow the padded input, as long as it starts inside)
    for n, k, s, p, d in zip(size, kernel_size, stride, padding, dilation):
        windows = -(-(n + 2 * p - d * (k - 1) - 1) // s) + 1
        out.append(windows - 1 if (windows - 1) * s >= n + p else windows)
    _check_not_empty(out, size, kernel_size, pads, dilation, name)
    pads = tuple(
        (p, max(p, (o - 1) * s + d * (k - 1) + 1 - n - p))
        for n, k, s, p, d, o in zip(size, kernel_size, stride, padding, dilation, out)
    )
    return tuple(out), pads


def _tiles_fit(kernel_size, stride, pads, dilation) -> bool:
    """True when the windows are the tiles of a grid: a reshape gives them, no copy needed."""
    return (
        kernel_size == stride and all(d == 1 for d in dilation) and all(p == (0, 0) for p in pads)
    )


def _tiles(x: Tensor, kernel_size, out_size) -> Tensor:
    """``x`` as tiles ``(N, C, O1, K1, O2, K2, ...)``, dropping what no window reaches."""
    reached = tuple(o * k for o, k in zip(out_size, kernel_size))
    if x.shape[2:] != reached:
        x = x[(slice(None), slice(None), *(slice(r) for r in reached))]
    return x.reshape((*x.shape[:2], *(n for pair in zip(out_size, kernel_size) for n in pair)))


def _window_counts(size, kernel_size, stride, padding, out_size, include_pad):
    """Divisors of an average pooling: how many cells each window covers in the input, with the
    padding too if ``include_pad``, but never past the padding (PyTorch's rule in ceil mode)."""
    counts = []
    for n, k, s, p, o in zip(size, kernel_size, stride, padding, out_size):
        start = xp.arange(o) * s - p
        end = xp.minimum(start + k, n + p)
        if not include_pad:
            start, end = xp.maximum(start, 0), xp.minimum(end, n)
        counts.append(end - start)
    return functools.reduce(xp.multiply.outer, counts)


def _unpool_size(size, kernel_size, stride, padding, output_size, name) -> tuple[int, ...]:
    """The output size of a max unpooling: ``output_size`` (its last dims), checked against the
    input sizes that pool to ``size``, or the smallest of them."""
    default = tuple(
        (n - 1) * s + k - 2 * p for n, k, s, p in zip(size, kernel_size, stride, padding)
    )
    if output_size is None:
        return default
    dims = len(kernel_size)
    wanted = tuple(output_size)
    if len(wanted) == dims + 2:
        wanted = wanted[2:]
    if len(wanted) != dims:
        raise ValueError(
            f"{name}: output_size should have {dims} or {dims + 2} entries, got {output_size}"
        )
    for d, (o, smallest, s) in enumerate(zip(wanted, default, stride)):
        if not smallest - s < o < smallest + s:
            raise ValueError(
                f"{name}: invalid output_size {output_size} (dim {d} must be between "
                f"{smallest - s} and {smallest + s})"
            )
    return wanted


def _check_unpool_indices(indices, plane: int, size, name: str) -> None:
    """That every index points into the output plane (of ``plane`` entries, sizes ``size``)."""
    bad = (indices < 0) | (indices >= plane)
    if bad.any():
        raise RuntimeError(
            f"{name}: found an invalid max index {int(indices[bad][0])} (output volumes are of "
            f"size {'x'.join(map(str, size))})"
        )


def _averaging_matrix(out: int, size: int):
    """``A`` (a float64 NumPy array) of shape (out, size) with row i averaging entries
    floor(i*size/out) up to ceil((i+1)*size/out) of a vector: adaptive pooling along one dim is
    ``A @ v``."""
    start, end = _adaptive_bounds(out, size)
    j = xp.arange(size)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return inside / (end - start)[:, None]


def _adaptive_size(output_size, size, name: str) -> tuple[int, ...]:
    """An adaptive pooling's output size, one int per spatial dim of ``size``: ``output_size``
    is an int or one entry per dim, ``None`` entries (not in 1-d, as PyTorch) taken from
    ``size``. Errors as PyTorch's: TypeError for what is no int, RuntimeError otherwise."""
    dims = len(size)
    if _is_int(output_size):
        output_size = (output_size,) * dims
    if not isinstance(output_size, Sequence):
        raise TypeError(f"{name}: output_size must be an int or {dims} ints, got {output_size!r}")
    if len(output_size) != dims:
        raise RuntimeError(f"{name}: output_size must have {dims} entries, got {output_size}")
    out_size = []
    for o, n in zip(output_size, size):
        if not (_is_int(o) or (o is None and dims > 1)):
            raise TypeError(f"{name}: output_size must hold ints, got {output_size!r}")
        out_size.append(n if o is None else operator.index(o))
    if min(out_size) < 0:
        raise RuntimeError(f"{name}: output_size must not be negative, got {output_size}")
    return tuple(out_size)


def _is_int(value) -> bool:
    """An int, NumPy's ints included, but not a bool (PyTorch refuses those as sizes)."""
    return isinstance(value, (int, xp.integer)) and not isinstance(value, bool)


def _check_adaptive_input(x: Tensor, first: int, name: str) -> None:
    """PyTorch's checks of an adaptive pooling's input: floating point, and no empty dim from
    ``first`` on (the spatial dims, for some poolings the channels too)."""
    if not x.is_floating_point():
        raise NotImplementedError(f"{name}: not implemented for {x.dtype.name} input")
    _refuse_empty_dims(x, first, name)


def _refuse_empty_dims(x: Tensor, first: int, name: str) -> None:
    """PyTorch's check of a pooling's input: no empty dim from ``first`` on (only the batch
    may be empty)."""
    if 0 in x.shape[first:]:
        empty = x.shape.index(0, first)
        raise RuntimeError(
            f"{name}: expected an input of shape {x.shape} to have no empty dim from dim "
            f"{first} on (dim {empty} is empty)"
        )


def _adaptive_bounds(out: int, size: int):
    """Where the ``out`` adaptive windows along a dim of ``size`` start and end (arrays): window
    ``i`` covers floor(i*size/out) up to ceil((i+1)*size/out), as PyTorch's."""
    i = xp.arange(out)
    return (i * size) // out, -(-(i + 1) * size // out)


def _adaptive_windows(out: int, size: int):
    """(out, longest window) indices of the adaptive windows along a dim of ``size``: window
    ``i`` covers floor(i*size/out) up to ceil((i+1)*size/out); a shorter one repeats its last.
    No windows (``out`` 0) are (0, 1), which keeps the tiles' window dims non-empty."""
    start, end = _adaptive_bounds(out, size)
    offsets = xp.arange(int((end - start).max()) if out else 1)
    return xp.minimum(start[:, None] + offsets, end[:, None] - 1)


def _adaptive_indices(tiles, windows, size):
    """An adaptive max pooling's indices: where in its flattened plane ``size`` the winner of
    each tile of ``tiles`` (N, C, O1, K1, O2, K2, ...) lies, the tiles' entries along spatial
    dim ``i`` being input positions ``windows[i]`` (Oi, Ki)."""
    module, dims = namespace(tiles), len(windows)
    offsets = window_argmax(tiles, tuple(range(3, 3 + 2 * dims, 2)))  # (N, C, O1, O2, ...)
    along = module.unravel_index(offsets, tuple(w.shape[1] for w in windows))
    index = 0
    for i, (positions, k) in enumerate(zip(windows, along)):
        out = module.arange(len(positions)).reshape(-1, *(1,) * (dims - 1 - i))  # along dim i
        index = index * size[i] + module.asarray(positions)[out, k]
    return index
