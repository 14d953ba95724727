"""Sliding-window primitives behind convolution and pooling, for any number of spatial dims.

``Unfold`` (im2col) copies every sliding window of a padded batch of images into one column;
``Fold`` (col2im) adds columns back onto the images. Each is the other's adjoint, hence the
other's gradient, so derivatives of any order come for free. ``MaxOver`` is a maximum whose
gradient goes to one winner per window, as max pooling's does in PyTorch; ``Spread`` is its
gradient; ``max_indices`` says where those winners lie (max pooling's ``return_indices``).
``Mix`` is a matrix product along one dim that keeps infinities in the windows holding them
(adaptive average pooling's windows, which overlap).

Images come and go as PyTorch's ``(N, C, *S)`` (``S`` one to three spatial sizes: ``(L,)``,
``(H, W)``, ``(D, H, W)``), but the work happens with the batch last, ``(C, *S, N)``
(cuda-convnet's layout): a window offset then picks whole runs of ``OW*N`` contiguous numbers, so
copying windows, adding them back and pooling run over long contiguous stretches instead of rows
of a few pixels. The columns are ``(C*prod(K), prod(O)*N)`` (``K`` the kernel's sizes, ``O`` the
output's), so a convolution is ONE matrix product ``weight (O, C*prod(K)) @ columns`` whose
result is again batch last: ``nn.conv_functional`` only permutes it (a view) to ``(N, O, *O)``.

Geometry arguments are already normalised by ``nn.conv_functional``: ``kernel_size``,
``dilation`` and ``stride`` hold one number per spatial dim, ``padding`` one ``(before, after)``
pair per spatial dim.
"""

import functools
import itertools
import math
from typing import NamedTuple

from scratchgrad.autograd.function import Function
from scratchgrad.backend import (
    accumulation_dtype,
    cast,
    errstate,
    keep_where,
    memory_order,
    namespace,
    widened,
    xp,
)
from scratchgrad.ops.binary import Where
from scratchgrad.ops.matmul import _product


def _windows(x, kernel_size, dilation, stride):
    """A read-only view of every window of ``x`` (C, *S, N), C-contiguous, as (C, *K, *O, N);
    nothing copied.

    Entry ``[c, *k, *o, n]`` is ``x[c, *(o * stride + k * dilation), n]``: each kernel offset
    ``k`` is a strided slice of ``x``.
    """
    shape, strides = _window_view(x.shape, x.strides, kernel_size, dilation, stride)
    module = namespace(x)
    if module is not xp:  # CuPy's as_strided has no writeable flag
        return module.lib.stride_tricks.as_strided(x, shape, strides)
    # an array over x's memory: as_strided's view in 1 us instead of 7 (a third of the time of
    # a small Unfold: 3 x 8 x 8 images)
    windows = xp.ndarray(shape, x.dtype, x, 0, strides)
    windows.flags.writeable = False
    return windows


@functools.lru_cache(maxsize=64)
def _window_view(shape, strides, kernel_size, dilation, stride) -> tuple:
    """``_windows``'s shape and strides, worked out once per geometry."""
    (c, *size, n), (s_c, *s_size, s_n) = shape, strides
    out = [
        (m - d * (k - 1) - 1) // s + 1 for m, k, d, s in zip(size, kernel_size, dilation, stride)
    ]
    steps = [d * step for d, step in zip(dilation, s_size)]
    shape = (c, *kernel_size, *out, n)
    return shape, (s_c, *steps, *[s * step for s, step in zip(stride, s_size)], s_n)


def _inside(size: int, before: int, offset: int, stride: int, count: int) -> tuple:
    """Along one dim: where the entries at kernel ``offset`` (dilation included) of ``count``
    windows ``stride`` apart land in an image of ``size`` padded by ``before``: the slice of
    the image they cover and the slice of the windows that reach it (None, None if none do)."""
    first = max(0, -((offset - before) // stride))  # ceil((before - offset) / stride)
    last = min(count - 1, (size - 1 + before - offset) // stride)
    if first > last:
        return None, None
    start = first * stride + offset - before
    return slice(start, start + (last - first) * stride + 1, stride), slice(first, last + 1)


def _padded_shape(size, padding):
    return tuple(n + before + after for n, (before, after) in zip(size, padding))


def _interior(size, padding) -> tuple:
    """The slices of a padded image that hold the image itself."""
    return tuple([slice(before, before + n) for n, (before, _) in zip(size, padding)])


@functools.lru_cache(maxsize=64)
def _padding_plan(shape, padding) -> tuple:
    """For ``unfold`` of images ``shape`` (N, C, *S): the transpose that puts the batch last,
    and, if ``padding`` pads them, the padded images' shape (C, *padded S, N) and the index of
    the images in them (else None, None). Worked out once per geometry."""
    n, c, *size = shape
    batch_last = (1, *range(2, len(shape)), 0)
    padded_size = _padded_shape(size, padding)
    if padded_size == tuple(size):
        return batch_last, None, None
    return batch_last, (c, *padded_size, n), (slice(None), *_interior(size, padding))


class Unfold(Function):
    """Sliding windows as columns: images (N, C, *S) -> (C*prod(K), prod(O)*N), batch last.

    ``value`` fills the padding: 0 for convolution, -inf for max pooling. The padding never
    receives a gradient, whatever its value.

    ``ones_rows=G`` splits the rows into G equal groups and ends each with a row of ones, so a
    weight whose last column holds the bias adds the bias in the same matrix product (G groups
    of a grouped convolution each need their own). That saves a pass over the output, and one
    over its gradient to sum the bias's.
    """

    is_view = True  # for a 1x1 kernel without padding the columns are the input itself

    @staticmethod
    def forward(ctx, x, kernel_size, dilation, padding, stride, value=0.0, ones_rows=0):
        padded_size = _padded_shape(x.shape[2:], padding)
        span = tuple(d * (k - 1) + 1 for k, d in zip(kernel_size, dilation))
        if any(s > p for s, p in zip(span, padded_size)):
            raise ValueError(
                f"unfold: the kernel {kernel_size} with dilation {dilation} spans {span}, more "
                f"than the padded input {padded_size}"
            )
        ctx.geometry = dict(
            output_size=x.shape[2:],
            kernel_size=kernel_size,
            dilation=dilation,
            padding=padding,
            stride=stride,
        )
        ctx.ones_rows = ones_rows
        return unfold(x, kernel_size, dilation, padding, stride, value, ones_rows)

    @staticmethod
    def backward(ctx, grad):
        if ctx.ones_rows:
            grouped = grad.reshape(ctx.ones_rows, -1, grad.shape[1])
            grad = grouped[:, :-1].reshape(-1, grad.shape[1])
        return Fold.apply(grad, **ctx.geometry)


def unfold(x, kernel_size, dilation, padding, stride, value=0.0, ones_rows=0):
    """``Unfold``'s forward, without its checks (the jit's kernel)."""
    xp, c = namespace(x), x.shape[1]
    batch_last, padded_shape, interior = _padding_plan(x.shape, padding)
    x = x.transpose(batch_last)  # a view, contiguous if x came from here
    if padded_shape is not None:
        padded = xp.full(padded_shape, value, x.dtype)
        padded[interior] = x  # pads and, if needed, moves N last
        x = padded
    elif not x.flags.c_contiguous:
        x = xp.ascontiguousarray(x)
    windows = _windows(x, kernel_size, dilation, stride)
    kernel, columns = math.prod(kernel_size), math.prod(windows.shape[1 + len(kernel_size) :])
    if not ones_rows:
        return windows.reshape(c * kernel, columns)  # the one copy (a view for 1x1)
    out = xp.empty((ones_rows, c // ones_rows * kernel + 1, columns), x.dtype)
    out[:, -1] = 1
    grouped = (ones_rows, c // ones_rows, *windows.shape[1:])
    out[:, :-1].reshape(grouped)[...] = windows.reshape(grouped)  # both views: one copy
    return out.reshape(-1, columns)


class Fold(Function):
    """Add columns (C*prod(K), prod(O)*N) back onto images (N, C, *S), the adjoint of ``Unfold``.

    Where windows overlap their entries add up; entries in the padding are dropped. The loop runs
    over the prod(K) kernel offsets, never over pixels: each offset is one vectorised add into a
    strided slice of the image (the part its windows reach). The result is a view of an array
    stored batch last.

    NOTE: the order of the adds is not always PyTorch's col2im order (zeros, then the offsets in
    row-major order). An offset whose windows reach every pixel (the centre of a stride-1 "same"
    convolution) starts the sum instead, as ``0.0 + x`` (so a pixel of -0.0 entries only is +0.0,
    as PyTorch's), and the others follow in row-major order: the sums may round differently from
    PyTorch's (within float rounding), for about 8 us less per call on W5's conv2 (3%, measured).
    16-bit columns add in PyTorch's order, each add rounded to 16 bits as in its col2im: bit for
    bit its ``fold``, and the input's gradient of a float16 convolution.
    """

    @staticmethod
    def forward(ctx, cols, output_size, kernel_size, dilation, padding, stride):
        windows = math.prod(_fold_plan(output_size, kernel_size, dilation, padding, stride).windows)
        rows, count = cols.shape
        if rows % math.prod(kernel_size) or count % windows:
            raise ValueError(
                f"fold: columns of shape {cols.shape} do not match windows of {kernel_size} over "
                f"an output of size {output_size} ({windows} windows per image)"
            )
        ctx.geometry = dict(
            kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride
        )
        return fold(cols, output_size, kernel_size, dilation, padding, stride)

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, **ctx.geometry)


def fold(cols, output_size, kernel_size, dilation, padding, stride):
    """``Fold``'s forward, without its checks (the jit's kernel)."""
    dtype, xp = cols.dtype, namespace(cols)
    # 16 bits: each add in float32, rounded to 16 bits, in PyTorch's order (its col2im adds
    # in the 16-bit dtype); float32 arrays, as NumPy's 16-bit loops are several times slower
    wide = accumulation_dtype(dtype)
    plan = _fold_plan(output_size, kernel_size, dilation, padding, stride, wide is not None)
    windows, first, adds = plan
    n = cols.shape[1] // math.prod(windows)
    channels = cols.shape[0] // math.prod(kernel_size)  # (not -1: the batch may be empty)
    cols = widened(cols).reshape(channels, *kernel_size, *windows, n)
    image = (xp.zeros if first is None else xp.empty)(
        (cols.shape[0], *output_size, n), wide or dtype
    )
    if first is not None:  # an offset whose windows reach every pixel starts the sum
        # 0.0 + x, not a copy: -0.0 becomes +0.0 as in a sum from zeros (1 us more in 274, W5)
        xp.add(cols[first], 0.0, out=image)
    for reached, source in adds:
        target = image[reached]
        # add(out=), not +=: ``target += ...`` would also copy the sum onto itself
        xp.add(target, cols[source], out=target)
        if wide is not None:
            target[...] = cast(cast(target, dtype), wide)
    if wide is not None:
        image = cast(image, dtype)
    return image.transpose(image.ndim - 1, *range(image.ndim - 1))


def _window_count(size, kernel_size, dilation, padding, stride) -> tuple[int, ...]:
    """How many windows fit along each dim of the padded image."""
    return tuple(
        (p - d * (k - 1) - 1) // s + 1
        for p, k, d, s in zip(_padded_shape(size, padding), kernel_size, dilation, stride)
    )


class _FoldPlan(NamedTuple):
    windows: tuple[int, ...]  # how many windows fit along each dim
    first: tuple | None  # the columns' index of an offset whose windows reach every pixel
    adds: tuple  # (the image's index its windows reach, the columns' index) per other offset


@functools.lru_cache(maxsize=64)
def _fold_plan(output_size, kernel_size, dilation, padding, stride, in_order=False) -> _FoldPlan:
    """Where ``fold`` puts each kernel offset's entries (worked out once per geometry: the
    Python here costs more than the adds of a small batch), as indices into the columns
    ``(C, *K, *O, N)`` and the image ``(C, *S, N)``. ``first`` is the first offset in row-major
    order whose windows reach every pixel (the centre of a "same" convolution), if any: its
    entries start the sum (no zeros to write, one add less), which changes the order of the adds
    from PyTorch's (see ``Fold``); never ``in_order``. ``adds`` are the other offsets, in
    row-major order."""
    windows = _window_count(output_size, kernel_size, dilation, padding, stride)
    whole_image = tuple(slice(0, n, 1) for n in output_size)
    first, adds = None, []
    for offset in itertools.product(*(range(k) for k in kernel_size)):
        reach = [
            _inside(size, before, k * d, s, count)
            for size, (before, _), k, d, s, count in zip(
                output_size, padding, offset, dilation, stride, windows
            )
        ]
        if any(reached is None for reached, _ in reach):
            continue  # all its windows' entries are padding
        reached, source = zip(*reach)
        source = (slice(None), *offset, *source)
        if reached == whole_image and first is None and not in_order:
            first = source
        else:
            adds.append(((slice(None), *reached), source))
    return _FoldPlan(windows, first, tuple(adds))


class MaxOver(Function):
    """The maximum over ``dims``, with the gradient of max pooling: all of it goes to ONE entry
    per window, the first maximum in row-major order over ``dims`` (the last NaN, if any).

    NOTE: ``Tensor.amax`` shares the gradient among ties instead. Ties are common in pooling
    (ReLU outputs are often all zero in a window), and PyTorch gives the whole gradient to one.
    The window dims are short, so the work loops over window offsets, one whole-batch array
    operation each. Where an offset's entries come in short runs (the batch-last tiles of
    ``MaxPool2d(2)``: runs of N numbers), it first copies ``x`` window offset first, one
    contiguous row per offset (one pass; the passes below then run about three times faster).
    The winners are one bool array: ``winners[k]`` marks where offset ``k`` holds its
    window's maximum.

    ``padded`` (``Unfold``'s columns of a padded image: ``(size, out_size, kernel_size, stride,
    pads, dilation)``): a window whose maximum is -inf gives its gradient to its first entry inside
    the image, as PyTorch's loop, which starts there, not to the -inf padding before it.
    """

    @staticmethod
    def forward(ctx, x, dims, padded=None):
        ctx.dims, ctx.in_shape, ctx.in_strides = dims, x.shape, x.strides
        out, marks = _first_maxima(x, dims, padded)
        ctx.save_for_backward(marks)
        return out if out.dtype == x.dtype else cast(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (winners,) = ctx.saved_tensors
        return Spread.apply(
            grad, winners, dims=ctx.dims, shape=ctx.in_shape, strides=ctx.in_strides
        )


def _first_maxima(x, dims, padded=None):
    """``MaxOver``'s forward: the maximum over ``dims`` (in float32 for a 16-bit ``x``), and the
    winners, one bool array ``(K, *other dims)``: ``winners[k]`` marks where window offset ``k``
    (row-major over ``dims``) holds its window's winner (see ``MaxOver`` for ``padded``)."""
    xp = namespace(x)
    rest, rest_shape, order, run = _rows_plan(x.shape, x.strides, x.itemsize, dims)
    wide = accumulation_dtype(x.dtype)  # 16 bits: exact in float32, and several times faster
    if wide or run < _SHORT_RUN:
        window = [x.shape[d] for d in dims]
        rows = _stacked(xp, math.prod(window), rest_shape, order, wide or x.dtype)
        xp.copyto(rows.reshape(*window, *rest_shape), x.transpose(*dims, *rest))
    else:
        rows = [x[index] for index in window_offsets(x.shape, dims)]
    marks = _stacked(xp, len(rows), rest_shape, order, bool)  # a bool row per offset
    if len(rows) == 4:  # (2 x 2 windows)
        out = _first_of_four(rows, marks)
    else:
        out = xp.maximum(rows[0], rows[1]) if len(rows) > 1 else rows[0].copy(order="K")
        for row in rows[2:]:
            xp.maximum(out, row, out=out)  # NaN propagates, as in PyTorch
        _mark_first(rows, out, marks)
    # (the one check the common case pays: a minimum is NaN where any entry is)
    if not out.size or out.min() > -math.inf:  # no NaN, no -inf
        return out, marks
    nan = xp.isnan(out)
    if nan.any():  # PyTorch's loop lets each NaN take over, so the last one wins
        nan_marks = [xp.isnan(row) & nan for row in reversed(rows)]
        _keep_first(nan_marks)
        for mark, nan_mark in zip(marks, reversed(nan_marks)):
            xp.copyto(mark, nan_mark, where=nan)  # (no row equals a NaN)
    lowest_out = out == -math.inf
    if padded is not None and lowest_out.any():
        first = xp.asarray(_first_inside(*padded))  # (K, *windows), one-hot along K
        for mark, first_here in zip(marks, first.reshape(first.shape[0], 1, *first.shape[1:], 1)):
            xp.copyto(mark, first_here, where=lowest_out)
    return out, marks


@functools.lru_cache(maxsize=64)
def _first_inside(size, out_size, kernel_size, stride, pads, dilation):
    """For each window offset (row-major) and window of a padded image, whether that offset is
    the window's first entry inside the image: a host bool array ``(K, *out_size)``."""
    offsets, windows = xp.indices(kernel_size), xp.indices(out_size)
    inside = True
    for d, n in enumerate(size):
        at = offsets[d].reshape(*kernel_size, *(1,) * len(size)) * dilation[d] + (
            windows[d] * stride[d] - pads[d][0]
        )
        inside = inside & (at >= 0) & (at < n)
    inside = inside.reshape(-1, *out_size)
    return inside & (xp.cumsum(inside, axis=0) == 1)


def max_indices(x, kernel_size, dilation, padding, stride):
    """Where max pooling's winners lie (``return_indices``): for each window of ``x``
    ``(N, C, *S)`` padded by ``padding`` (of -inf), the index into its flattened plane ``S`` of
    the entry ``MaxOver`` gives the gradient, as int64 ``(N, C, *O)``.

    PyTorch's loop starts each window at its first entry inside the image, so where a window's
    maximum is -inf and the padding comes first, that entry is the index, not the padding.
    """
    xp = namespace(x)
    n, c, *size = x.shape
    planes = xp.full((n, c, *_padded_shape(size, padding)), lowest(x), x.dtype)
    planes[(slice(None), slice(None), *_interior(size, padding))] = x
    windows = _windows(planes.reshape(n * c, *planes.shape[2:], 1), kernel_size, dilation, stride)
    dims = len(size)
    offsets = window_argmax(windows, tuple(range(1, dims + 1)))  # (N*C, *O, 1)
    # per dim, from the last (whose entries are one apart): the winner's position, whether it
    # is inside the image, and the window's first position inside (its start moved on by
    # dilation steps past the padding), each summed into a flat index
    index, first, inside, step = 0, 0, True, 1
    for i in reversed(range(dims)):
        (before, _), k, d, s = padding[i], kernel_size[i], dilation[i], stride[i]
        start = xp.arange(windows.shape[1 + dims + i]) * s - before
        start = start.reshape(-1, *(1,) * (dims - i))  # along output dim i of the offsets
        along = start + (offsets // math.prod(kernel_size[i + 1 :]) % k) * d
        inside = inside & (along >= 0) & (along < size[i])
        first = first + (start + (xp.maximum(-start, 0) + d - 1) // d * d) * step
        index, step = index + along * step, step * size[i]
    return xp.where(inside, index, first).reshape(n, c, *windows.shape[1 + dims : -1])


def lowest(x):
    """What pads ``x`` for a max: -inf, or its integer dtype's least value (-inf would be cast
    to 0 in some integer dtypes, and win over their negative entries)."""
    return namespace(x).iinfo(x.dtype).min if x.dtype.kind in "iu" else -math.inf


def window_argmax(x, dims):
    """The window offset (row-major over ``dims``) that ``MaxOver`` gives each window's
    gradient, int64 with ``x``'s other dims."""
    return _first_maxima(x, dims)[1].argmax(0).astype("int64", copy=False)


class Spread(Function):
    """Put ``x`` at each window's winner and zeros elsewhere: the gradient of ``MaxOver``.

    ``winners`` (bool, ``(K, *x.shape)``: a row per window offset, in row-major order over
    ``dims``) marks one entry per window. The result is laid out in memory like the strides
    given (those of ``MaxOver``'s input), which keeps the views of its window offsets as
    contiguous as they were there; one call fills all the offsets.
    """

    @staticmethod
    def forward(ctx, x, winners, dims, shape, strides):
        ctx.save_for_backward(winners)
        ctx.dims = dims
        return spread(x, winners, dims, shape, strides)

    @staticmethod
    def backward(ctx, grad):
        (winners,) = ctx.saved_tensors
        picked = None
        for k, index in enumerate(window_offsets(grad.shape, ctx.dims)):
            term = Where.apply(winners[k], grad[index], 0.0)
            picked = term if picked is None else picked + term
        return picked, None


def spread(x, winners, dims, shape, strides):
    """``Spread``'s forward (the jit's kernel)."""
    xp = namespace(x)
    out = _empty_like_strides(xp, shape, strides, x.dtype)
    if _memory_order(x.strides) != _memory_order(winners[0].strides):
        # one copy into the winners' layout first: mixed layouts make every pass crawl
        x = _copy_like_strides(x, winners[0].strides)
    window = [shape[d] for d in dims]
    rest = [d for d in range(len(shape)) if d not in dims]
    # the offsets cover every entry once: out is written whole
    keep_where(winners.reshape(*window, *x.shape), x, out=out.transpose(*dims, *rest))
    return out


class Mix(Function):
    """``x`` with its dim ``dim`` mixed by ``weights`` (out, in), a constant NumPy array of
    non-negative weights: ``out[i] = sum of weights[i, j] * x[j]`` over the ``j`` with a
    non-zero weight. Adaptive average pooling is this along each pooled dim (row ``i`` averages
    window ``i``); the gradient is the same with the weights transposed.

    A matrix product computes it, and is exact while ``x`` is finite. An infinity or a NaN
    would reach every output through the zero weights too (0 * inf is NaN), where PyTorch's
    sums over the windows leave those without it finite; so when the product is not finite,
    the non-finite entries are counted per window instead, and a window holding one is what
    its sum is: NaN for a NaN or for both infinities, else that infinity.

    ``taps`` (a resize's, whose weights may be negative): ``(index, coefficient)``, each
    (out, taps), the entries each output reads (-1: none) and their weights, which ``weights``
    adds up. A product that is not finite is then the sum over the taps, as PyTorch's
    interpolation kernels compute it: an infinity read with weight 0 is NaN there.
    """

    @staticmethod
    def forward(ctx, x, weights, dim, taps=None):
        ctx.weights, ctx.dim, ctx.taps = weights, dim, taps
        module = namespace(x)
        wide = accumulation_dtype(x.dtype)  # 16 bits: summed in float32, rounded once
        weights = module.asarray(weights, dtype=wide or x.dtype)
        with errstate(invalid="ignore"):  # 0 * inf: replaced below
            out = _mix(x, weights, dim)
            if not module.isfinite(out).all():  # an infinity or a NaN of x reached it
                out = (
                    _non_finite_windows(x, weights, dim)
                    if taps is None
                    else _sum_of_taps(x, taps, dim, weights.dtype)
                )
        return out if wide is None else cast(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        taps = None if ctx.taps is None else _transposed_taps(*ctx.taps, ctx.weights.shape[1])
        return Mix.apply(grad, weights=ctx.weights.T, dim=ctx.dim, taps=taps)


def _mix(x, weights, dim):
    """``Mix``'s matrix product: ``weights @ x`` along ``dim`` (in ``weights``' dtype)."""
    wide = weights.dtype if weights.dtype != x.dtype else None
    if dim == x.ndim - 1:
        return _product(x, weights.T, wide)
    shape = x.shape  # the dims after ``dim`` flattened, so that ``dim`` is the product's rows
    flat = x.reshape(*shape[: dim + 1], math.prod(shape[dim + 1 :]))
    out = _product(weights, flat, wide)
    return out.reshape(*shape[:dim], weights.shape[0], *shape[dim + 1 :])


def _non_finite_windows(x, weights, dim):
    """``Mix`` of an ``x`` holding infinities or NaNs: the product of its finite entries, and
    in each window holding others, the value of their sum."""
    module = namespace(x)
    finite = module.isfinite(x)
    out = _mix(module.where(finite, x, 0), weights, dim)
    flags = module.stack([module.isnan(x), x == math.inf, x == -math.inf])
    present = (weights != 0).astype(weights.dtype)
    nan, pos, neg = _mix(flags.astype(weights.dtype), present, dim + 1) > 0  # counts per window
    out[pos] = math.inf
    out[neg] = -math.inf
    out[nan | (pos & neg)] = math.nan
    return out


def _transposed_taps(index, coefficient, n: int):
    """The taps of the transposed ``Mix`` (its gradient), for ``n`` entries: each entry's
    reads, each output it was read by with that weight, in the order of the outputs (-1
    fills the shorter rows)."""
    rows = xp.broadcast_to(xp.arange(index.shape[0])[:, None], index.shape)
    read = index >= 0
    order = xp.argsort(index[read], kind="stable")
    entry, row, weight = index[read][order], rows[read][order], coefficient[read][order]
    counts = xp.bincount(entry, minlength=n)
    slot = xp.arange(entry.size) - (xp.cumsum(counts) - counts)[entry]
    transposed = xp.full((n, max(int(counts.max(initial=0)), 1)), -1)
    weights = xp.zeros(transposed.shape)
    transposed[entry, slot], weights[entry, slot] = row, weight
    return transposed, weights


def _sum_of_taps(x, taps, dim, dtype):
    """``Mix`` of ``x`` by its ``taps``: each output the sum of the entries it reads, each
    times its weight, tap by tap (in ``dtype``)."""
    module = namespace(x)
    index, coefficient = module.asarray(taps[0]), module.asarray(taps[1], dtype=dtype)
    shape = [1] * x.ndim
    shape[dim] = index.shape[0]
    out = module.zeros((*x.shape[:dim], index.shape[0], *x.shape[dim + 1 :]), dtype)
    for k in range(index.shape[1]):
        term = module.take(x, index[:, k], axis=dim) * coefficient[:, k].reshape(shape)
        out += module.where((index[:, k] >= 0).reshape(shape), term, 0)
    return out


def window_offsets(shape: tuple, dims: tuple) -> list[tuple]:
    """One index per window offset, in row-major order over ``dims``: ``x[index]`` holds that
    offset's entry of every window.

    >>> window_offsets((5, 2), (1,))
    [(slice(None, None, None), 0), (slice(None, None, None), 1)]
    """
    indices = []
    for offset in itertools.product(*(range(shape[d]) for d in dims)):
        index = [slice(None)] * len(shape)
        for d, i in zip(dims, offset):
            index[d] = i
        indices.append(tuple(index))
    return indices


# Runs of fewer contiguous entries than this make each NumPy pass several times slower.
_SHORT_RUN = 2048


@functools.lru_cache(maxsize=64)
def _rows_plan(shape, strides, itemsize, dims) -> tuple:
    """For ``_first_maxima`` of an array of this geometry over ``dims`` (worked out once: the
    Python here took a fifth of a small pooling's forward): the other dims, their sizes, their
    order in memory (outermost first, as indices into them), and how many entries lie one after
    another in memory along them (innermost first), as each NumPy pass over ``x[index]``
    (``index`` fixing ``dims``) meets them."""
    rest = tuple(d for d in range(len(shape)) if d not in dims)
    order = tuple(rest.index(d) for d in memory_order(strides) if d in rest)
    run, step = 1, itemsize
    for d in sorted(rest, key=lambda d: abs(strides[d])):
        if shape[d] == 1:
            continue
        if strides[d] != step:
            break
        run, step = run * shape[d], step * shape[d]
    return rest, tuple(shape[d] for d in rest), order, run


def _first_of_four(rows, marks):
    """The maximum of four rows (a window's offsets in row-major order), and into ``marks``
    the first maximum of each window, from three comparisons (two passes fewer than
    ``_mark_first``'s, for a 2 x 2 window): the second of a pair wins only where it is
    greater, the second pair only where its maximum is. Windows holding a NaN are for the
    caller to mark (NaN compares false). The maximum is ``maximum`` of the pairs' maxima, the
    same bits as ``maximum`` row after row (of tied -0.0 and +0.0, the last).

    W5's pool 1 (64 x 8 x 28 x 28, float32): 122 us instead of 131-134 for the maxima and
    marks of the copied rows; its steps (one thread, 30 rounds interleaved in one process)
    took 0.986x the time eagerly, 0.989x jitted."""
    xp = namespace(marks)
    first, second = xp.maximum(rows[0], rows[1]), xp.maximum(rows[2], rows[3])
    xp.greater(rows[1], rows[0], out=marks[1])  # the first pair's winner is its second
    xp.greater(rows[3], rows[2], out=marks[3])
    later = xp.greater(second, first)  # the window's winner is in the second pair
    xp.logical_or(marks[1], later, out=marks[0])
    xp.logical_not(marks[0], out=marks[0])
    # (for booleans, a > b is a and not b)
    xp.greater(marks[1], later, out=marks[1])
    xp.greater(later, marks[3], out=marks[2])
    xp.logical_and(later, marks[3], out=marks[3])
    return xp.maximum(first, second, out=first)


def _mark_first(rows, value, marks):
    """``marks[k]``: where ``rows[k]`` equals ``value`` and no earlier row does (in place)."""
    xp = namespace(value)
    if isinstance(rows, list):
        for row, mark in zip(rows, marks):
            xp.equal(row, value, out=mark)
    else:
        xp.equal(rows, value, out=marks)  # one call for all the rows
    _keep_first(list(marks))


def _keep_first(winners):
    """Clear, in place, every mark in ``winners`` (one bool array per window offset) that
    follows another mark in the same window, so that one winner per window remains."""
    taken = winners[0].copy(order="K")  # keep the layout: mixed layouts crawl
    greater = namespace(taken).greater
    for winner in winners[1:-1]:
        greater(winner, taken, out=winner)  # for booleans, a > b is a and not b
        taken |= winner
    if len(winners) > 1:  # the last: nothing follows it to be cleared
        greater(winners[-1], taken, out=winners[-1])


def _empty_like_strides(xp, shape, strides, dtype):
    """An uninitialised array of ``shape`` whose dims are ordered in memory as ``strides`` are."""
    return _stacked(xp, 1, shape, _memory_order(strides), dtype)[0]


def _stacked(xp, count, shape, order, dtype):
    """``count`` uninitialised arrays of ``shape`` one after another in memory, as one array
    ``(count, *shape)``, each with its dims ordered in memory as ``order`` says (the outermost
    dim first). ``shape`` and ``order`` are tuples."""
    in_memory, back = _stacking(shape, order)
    return xp.empty((count, *in_memory), dtype).transpose(back)


@functools.lru_cache(maxsize=128)
def _stacking(shape, order) -> tuple:
    """``_stacked``'s array: its shape as it lies in memory, less the count, and the transpose
    that gives it ``shape``."""
    return tuple(shape[d] for d in order), (0, *(1 + order.index(d) for d in range(len(shape))))


@functools.lru_cache(maxsize=128)
def _memory_order(strides) -> tuple:
    """``memory_order``, as a tuple, worked out once per strides."""
    return tuple(memory_order(strides))


def _copy_like_strides(x, strides):
    out = _empty_like_strides(namespace(x), x.shape, strides, x.dtype)
    out[...] = x
    return out
