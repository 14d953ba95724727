"""Sliding-window primitives behind convolution and pooling.

``Unfold`` (im2col) copies every sliding window of a padded batch of images into one column, in
the layout of ``torch.nn.functional.unfold``: ``(N, C*KH*KW, L)`` with ``L = OH*OW`` windows. A
convolution is then one matrix product ``weight (O, C*KH*KW) @ columns``, whose result is already
``(N, O, OH*OW)``, channels first, so nothing needs transposing. ``Fold`` (col2im) adds columns
back onto an image. Each is the other's adjoint, hence the other's gradient, so derivatives of any
order come for free. ``MaxOver`` is a maximum whose gradient goes to one winner per window, as
max pooling's does in PyTorch.

Geometry arguments are already normalised by ``nn.conv_functional``: ``kernel_size``,
``dilation`` and ``stride`` are ``(h, w)`` pairs, ``padding`` is ``((top, bottom), (left, right))``.
"""

import itertools

from scratchgrad.autograd.function import Function
from scratchgrad.backend import xp
from scratchgrad.ops.binary import Where


def _windows(x, kernel_size, dilation, stride, writeable=False):
    """A view of every window of ``x`` (N, C, H, W) as (N, C, KH, KW, OH, OW); nothing copied.

    Entry ``[n, c, i, j, oh, ow]`` is ``x[n, c, oh*sh + i*dh, ow*sw + j*dw]``: each kernel offset
    ``(i, j)`` is a strided slice of ``x``, which is what ``Fold`` adds into.
    """
    n, c, h, w = x.shape
    (kh, kw), (dh, dw), (sh, sw) = kernel_size, dilation, stride
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    s_n, s_c, s_h, s_w = x.strides
    return xp.lib.stride_tricks.as_strided(
        x,
        (n, c, kh, kw, oh, ow),
        (s_n, s_c, dh * s_h, dw * s_w, sh * s_h, sw * s_w),
        writeable=writeable,
    )


def _padded_shape(size, padding):
    return tuple(n + before + after for n, (before, after) in zip(size, padding))


class Unfold(Function):
    """Sliding windows as columns: (N, C, H, W) -> (N, C*KH*KW, OH*OW).

    ``value`` fills the padding: 0 for convolution, -inf for max pooling. The padding never
    receives a gradient, whatever its value.
    """

    @staticmethod
    def forward(ctx, x, kernel_size, dilation, padding, stride, value=0.0):
        n, c, h, w = x.shape
        padded_size = _padded_shape((h, w), padding)
        span = tuple(d * (k - 1) + 1 for k, d in zip(kernel_size, dilation))
        if any(s > p for s, p in zip(span, padded_size)):
            raise ValueError(
                f"unfold: the kernel {kernel_size} with dilation {dilation} spans {span}, more "
                f"than the padded input {padded_size}"
            )
        if any(before or after for before, after in padding):
            (top, _), (left, _) = padding
            padded = xp.full((n, c, *padded_size), value, x.dtype)
            padded[:, :, top : top + h, left : left + w] = x
            x = padded
        ctx.geometry = ((h, w), kernel_size, dilation, padding, stride)
        windows = _windows(x, kernel_size, dilation, stride)
        _, _, kh, kw, oh, ow = windows.shape
        return windows.reshape(n, c * kh * kw, oh * ow)  # the one copy (a view for 1x1 kernels)

    @staticmethod
    def backward(ctx, grad):
        return Fold.apply(grad, *ctx.geometry)


class Fold(Function):
    """Add columns (N, C*KH*KW, OH*OW) back onto an image (N, C, H, W), the adjoint of ``Unfold``.

    Where windows overlap their entries add up. The loop runs over the KH*KW kernel offsets, never
    over pixels: each offset is one vectorised add into a strided slice.
    """

    @staticmethod
    def forward(ctx, cols, output_size, kernel_size, dilation, padding, stride):
        (h, w), (kh, kw) = output_size, kernel_size
        n, rows, _ = cols.shape
        out = xp.zeros((n, rows // (kh * kw), *_padded_shape(output_size, padding)), cols.dtype)
        windows = _windows(out, kernel_size, dilation, stride, writeable=True)
        if cols.shape[2] != windows.shape[4] * windows.shape[5] or rows % (kh * kw):
            raise ValueError(
                f"fold: columns of shape {cols.shape} do not match {kh}x{kw} windows over an "
                f"output of size {output_size} ({windows.shape[4] * windows.shape[5]} windows)"
            )
        cols = cols.reshape(windows.shape)
        for i in range(kh):
            for j in range(kw):
                windows[:, :, i, j] += cols[:, :, i, j]
        ctx.geometry = (kernel_size, dilation, padding, stride)
        (top, _), (left, _) = padding
        return out[:, :, top : top + h, left : left + w]

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, *ctx.geometry)


class MaxOver(Function):
    """The maximum over ``dims``, with the gradient of max pooling: all of it goes to ONE entry
    per window, the first maximum in row-major order over ``dims``.

    NOTE: ``Tensor.amax`` shares the gradient among ties instead. Ties are common in pooling
    (ReLU outputs are often all zero in a window), and PyTorch gives the whole gradient to the
    first. In a window holding NaN the output is NaN, as in PyTorch; its gradient goes to the first
    NaN here, to the last in PyTorch.
    """

    @staticmethod
    def forward(ctx, x, dims):
        out = x.max(axis=dims, keepdims=True)
        winner = x == out
        nan = xp.isnan(out)
        if nan.any():
            winner |= xp.isnan(x) & nan
        if xp.count_nonzero(winner) != out.size:  # a tie: keep only the first maximum
            _keep_first(winner, dims)
        ctx.save_for_backward(winner)
        ctx.kept_shape = out.shape
        return out.reshape([n for d, n in enumerate(x.shape) if d not in dims])

    @staticmethod
    def backward(ctx, grad):
        (winner,) = ctx.saved_tensors
        return Where.apply(winner, grad.reshape(ctx.kept_shape), 0.0)


def _keep_first(mask, dims):
    """Clear, in place, every True of ``mask`` that follows another in its window over ``dims``.

    Walks the window offsets in row-major order (KH*KW steps, each a whole-batch operation).
    """
    window_shape = tuple(mask.shape[d] for d in dims)
    taken = None
    for offset in itertools.product(*map(range, window_shape)):
        index = [slice(None)] * mask.ndim
        for d, i in zip(dims, offset):
            index[d] = i
        entry = mask[tuple(index)]  # a view: the updates land in mask
        if taken is None:
            taken = entry.copy()
            continue
        xp.greater(entry, taken, out=entry)  # for booleans, a > b is a and not b
        taken |= entry
