"""Resizing, as in PyTorch: ``interpolate`` (re-exported by ``nn.functional``) with every mode
of ``torch.nn.functional.interpolate``, ``pixel_shuffle`` and ``pixel_unshuffle``, and the
layers ``Upsample``, ``PixelShuffle`` and ``PixelUnshuffle``, which hold no parameters.

Every interpolating mode is separable and linear in the input: along each spatial dim,
output entry ``i`` is a weighted sum of input entries, so the resize is one product with a small
(out, in) weight matrix per dim, built from the sizes alone (a constant of the graph), and the
gradient is the product with its transpose. The matrix adds up each output's taps (the entries
PyTorch's kernels read for it, and their weights); where the input holds an infinity or a NaN,
which the product would spread through the zero weights to every output, the result is the
sum over the taps instead, as PyTorch's: NaN where an infinity is read with weight 0
(``Mix``). The modes differ only in their weights: linear (two taps), cubic (four, Keys' kernel
with PyTorch's A = -0.75, out-of-range taps clamped to the edge) and the antialiased filters (a
tent or a cubic stretched over the input entries each output covers, as PIL). Area is adaptive
average pooling, as PyTorch's (whose infinities stay in the windows that hold them, and whose
5-D inputs run in float32 under autocast). Nearest modes pick entries by index; their
gradient adds up at repeated ones.

Source positions follow PyTorch's arithmetic to the rounding (see ``_step`` and
``_nearest_index``), so float64 results match PyTorch's to round-off.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

from scratchgrad import backend
from scratchgrad.backend import xp
from scratchgrad.nn.conv_functional import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
)
from scratchgrad.nn.module import Module
from scratchgrad.ops.conv import Mix
from scratchgrad.tensor import Tensor

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
# the modes bound to one input rank; the others take 3-, 4- and 5-D inputs
_RANK = {"linear": 3, "bilinear": 4, "bicubic": 4, "lanczos": 4, "trilinear": 5}
_UNALIGNED = ("nearest", "area", "nearest-exact")  # the modes that refuse align_corners
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution constant; PIL's antialiased -0.5
# area mode by input rank: PyTorch's interpolate calls these
_AREA = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}


def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims (all but the first two) of a 3-, 4- or 5-D input to ``size``, or
    scale them by ``scale_factor``, as ``torch.nn.functional.interpolate``.

    ``mode``: ``"nearest"`` (PyTorch's floor of ``i * in / out``), ``"nearest-exact"`` (the
    nearest pixel centre, as PIL and scikit-image), ``"linear"`` (3-D), ``"bilinear"`` and
    ``"bicubic"`` (4-D), ``"trilinear"`` (5-D), ``"area"`` (adaptive average pooling).
    ``align_corners`` maps the corner pixels' centres onto each other (the interpolating modes
    only); otherwise pixel areas line up. A given ``scale_factor`` sets the source positions
    unless ``recompute_scale_factor`` asks for the ratio of the sizes. ``antialias`` (bilinear
    and bicubic, 4-D) widens the filter when shrinking, as PIL; ``"lanczos"`` is refused.

    NOTE: the gradient is the derivative of the forward. PyTorch 2.13's backward is not, and
    its gradient differs from ours, where a scale factor moves the positions of a dim that
    keeps its size: nearest on 3-D and 5-D inputs, in such a dim or one resized to twice its
    size (its backward copies, or halves, the gradient there), and bicubic when every dim
    keeps its size (its backward copies the gradient). The forwards agree.

    >>> import scratchgrad as sg
    >>> interpolate(sg.tensor([[[1.0, 2.0]]]), scale_factor=2)
    tensor([[[1., 1., 2., 2.]]])
    >>> interpolate(sg.tensor([[[1.0, 2.0]]]), size=3, mode="linear", align_corners=True)
    tensor([[[1.0000, 1.5000, 2.0000]]])
    >>> interpolate(sg.tensor([[[[0.0, 1.0, 2.0, 3.0]]]]), size=(1, 2), mode="bicubic")
    tensor([[[[0.4062, 2.5938]]]])
    >>> interpolate(sg.tensor([[[1.0, 2.0, 3.0, 5.0]]]), size=2, mode="area")
    tensor([[[1.5000, 4.0000]]])
    """
    if mode in _UNALIGNED and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | "
            "bilinear | bicubic | trilinear"
        )
    align_corners = bool(align_corners)
    in_size = input.shape[2:]
    # area always resizes to a size (adaptive pooling): the scale's positions play no part
    recompute = recompute_scale_factor or (mode == "area" and size is None)
    out_size, scales = _output_size(in_size, size, scale_factor, recompute)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )
    _check_mode(input, mode, align_corners, antialias)
    _check_sizes(input, out_size, mode)
    _check_dtype(input, mode, antialias)
    if mode == "area":
        return _AREA[input.ndim](input, out_size)
    # a 16-bit image or volume resampled in float32 (weights too) and rounded once, as PyTorch's
    # kernels, its gradient too (a nearest one sums the copies of each entry over every dim);
    # its 1-d linear kernel takes weights in the input's dtype, as ours do
    wide = input.ndim > 3 and input.array.dtype in backend.SIXTEEN_BIT
    out = input.float() if wide else input
    for dim, (n, m, scale) in enumerate(zip(in_size, out_size, scales), start=2):
        if mode in ("nearest", "nearest-exact"):
            index = _nearest_index(n, m, scale, mode, input.dtype, input.ndim == 4)
            out = out[(slice(None),) * dim + (index,)]
        else:
            taps = _taps(mode, n, m, scale, align_corners, antialias)
            out = Mix.apply(out, weights=_weights(taps, n), dim=dim, taps=taps)
    return out.to(input.dtype) if wide else out


# ---- PyTorch's deprecated aliases of interpolate, with its warnings. stacklevel 3: the user's
# line, past nn.functional's argument-naming wrapper (the way these are reached)


def upsample(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """``interpolate`` under its old name, with PyTorch's deprecation warning.

    >>> import warnings
    >>> import scratchgrad as sg
    >>> from scratchgrad.nn import functional as F
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     F.upsample(sg.tensor([[[1.0, 2.0]]]), scale_factor=2)
    tensor([[[1., 1., 2., 2.]]])
    """
    warnings.warn(
        "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
) -> Tensor:
    """``interpolate(..., mode="nearest")``, deprecated (with PyTorch's warning)."""
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
) -> Tensor:
    """``interpolate(..., mode="bilinear", align_corners=True)``, deprecated (with PyTorch's
    warning)."""
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _output_size(in_size: tuple, size, scale_factor, recompute) -> tuple[tuple, tuple]:
    """The output size, and the scale factor each dim's source positions use (None: the ratio
    of the sizes, as after ``recompute``), with PyTorch's checks of ``size``, ``scale_factor``
    and ``recompute`` in its order."""
    dims = len(in_size)
    if (size is None) == (scale_factor is None):
        raise ValueError(
            "only one of size or scale_factor should be defined"
            if size is not None
            else "either size or scale_factor should be defined"
        )
    if size is not None:
        if not isinstance(size, (list, tuple)):
            size = [size] * dims
        elif len(size) != dims:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {list(in_size)} and output size of {size}. "
                "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        if not all(isinstance(n, int) for n in size):
            raise TypeError(
                "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                f"Tuple[int, int, int], but got size with types {[type(n) for n in size]}"
            )
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return tuple(size), (None,) * dims
    scales = scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor] * dims
    if len(scales) != dims:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {list(in_size)} and scale_factor of "
            f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
            "and scale_factor in (s1, s2, ...,sK) format."
        )
    if not all(isinstance(s, numbers.Real) for s in scales):
        raise TypeError(
            f"interpolate: scale_factor must be a float or a tuple of floats, got {scale_factor!r}"
        )
    if not all(math.isfinite(n * s) for n, s in zip(in_size, scales)):
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    out_size = tuple(int(n * s) for n, s in zip(in_size, scales))  # truncated, as PyTorch's
    return out_size, (None,) * dims if recompute else tuple(float(s) for s in scales)


def _check_mode(input: Tensor, mode: str, align_corners: bool, antialias: bool) -> None:
    """PyTorch's errors for a mode that does not fit the input's rank, and ours for the mode
    not built here."""
    ndim, needed = input.ndim, _RANK.get(mode, input.ndim)
    if ndim in (3, 4, 5) and ndim != needed and mode in ("linear", "bilinear", "trilinear"):
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {needed}D input")
    if ndim not in (3, 4, 5) or ndim != needed or mode not in _MODES.split(" | "):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the "
            f"modes: {_MODES} (got {mode})"
        )
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        raise NotImplementedError(
            "interpolate: mode 'lanczos' (antialiased Lanczos-3) is not supported; use "
            "'bicubic' with antialias=True"
        )


def _check_sizes(input: Tensor, out_size: tuple, mode: str) -> None:
    """PyTorch's checks of the sizes: positive ones, and channels, for the resizing modes;
    those of adaptive average pooling for ``area``."""
    shape, k = list(input.shape), input.ndim - 2
    if mode == "area":
        _check_pooling_sizes(shape, out_size)
        return
    if min(*shape[2:], *out_size) <= 0:
        names = "DHW"[3 - k :]
        given = ", ".join(f"{d}: {n}" for d, n in zip(names, shape[2:]))
        wanted = ", ".join(f"{d}: {n}" for d, n in zip(names, out_size))
        joint = ") and output (" if k == 1 else ") output ("
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({given}{joint}"
            f"{wanted})"
        )
    if shape[1] == 0:  # an empty batch is fine, empty channels are not
        raise RuntimeError(
            f"Non-empty {input.ndim}D data tensor expected but got a tensor with sizes {shape}"
        )


def _check_pooling_sizes(shape: list, out_size: tuple) -> None:
    """The checks of the adaptive average pooling PyTorch's area mode calls: a 3-D input pools
    as (N, C, 1, L) in 2-d, whose channels may be empty; in 3-d they may not."""
    if len(shape) == 3:
        shape, out_size = [*shape[:2], 1, shape[2]], (1, *out_size)
    name, first = ("adaptive_avg_pool3d", 1) if len(shape) == 5 else ("adaptive_avg_pool2d", 2)
    if min(out_size) < 0:
        received = ", ".join(map(str, out_size))
        if len(out_size) == 3:  # PyTorch's own spacing
            received = f"{out_size[0]}, {out_size[1]},{out_size[2]}"
        raise RuntimeError(
            f"{name}: elements of output_size must be greater than or equal to 0 but received "
            f"{{{received}}}"
        )
    for dim in range(first, len(shape)):
        if shape[dim] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {shape} with dimension {dim} being empty"
            )


def _check_dtype(input: Tensor, mode: str, antialias: bool) -> None:
    """Floating inputs for every mode (float32 and float64 when antialiased), and uint8 images
    for the nearest ones, as PyTorch (whose uint8 bilinear and bicubic round fixed-point
    weights: not built here)."""
    dtype = input.array.dtype
    if antialias and dtype not in (backend.float32, backend.float64):
        raise NotImplementedError(
            f"interpolate: antialias=True is not implemented for {dtype} inputs, as in PyTorch; "
            "give a float32 or float64 one"
        )
    if backend.is_floating(dtype) or (dtype == backend.uint8 and mode.startswith("nearest")):
        return
    fixed_point = dtype == backend.uint8 and mode in ("bilinear", "bicubic")
    hint = " (PyTorch's fixed-point uint8 path is not built here)" if fixed_point else ""
    raise NotImplementedError(
        f"interpolate: mode {mode!r} is not implemented for {dtype} inputs{hint}; give a "
        "floating one (x.float())"
    )


def _step(n: int, m: int, scale: float | None, align_corners: bool = False) -> float:
    """The distance in the input between neighbouring outputs' positions, as PyTorch's
    ``area_pixel_compute_scale``: (n - 1) / (m - 1) when corners align, else 1 / scale_factor
    if given, else n / m."""
    if align_corners:
        return (n - 1) / (m - 1) if m > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n / m


def _nearest_index(n: int, m: int, scale: float | None, mode: str, dtype, image: bool):
    """Which of ``n`` entries each of ``m`` outputs copies, with PyTorch's rounding: positions
    in float64 for float64 inputs, else float32, then rounded to float32 before the floor
    (PyTorch's ``floorf``). Nearest takes ``floor(i * step)``; nearest-exact the pixel centre
    ``floor((i + 0.5) * step)``, as ``max((i + 0.5) * step - 0.5, 0) + 0.5``.

    NOTE: PyTorch's nearest on 4-D inputs (``image``) copies a dim resized to its own size and
    takes ``i // 2`` for one resized to twice its size, whatever the scale factor given."""
    if image and mode == "nearest" and m in (n, 2 * n):
        return xp.arange(m) // (m // n)
    real = xp.float64 if dtype == backend.float64 else xp.float32
    step = real(_step(n, m, scale))
    if mode == "nearest-exact":
        source = xp.maximum((xp.float64(step) * (xp.arange(m) + 0.5) - 0.5).astype(real), 0)
        source = source.astype(xp.float64) + 0.5
    else:
        source = xp.arange(m).astype(real) * step
    return xp.minimum(xp.floor(source.astype(xp.float32)).astype(xp.int64), n - 1)


def _taps(mode: str, n: int, m: int, scale: float | None, align_corners: bool, antialias: bool):
    """``(index, coefficient)``, each (m, taps): which of ``n`` entries each of ``m`` outputs
    reads in ``mode`` and with what weight (float64), as PyTorch's kernels read them; an index
    of -1 is a tap not read (the antialiased windows differ in width)."""
    if antialias:
        return _antialias_taps(n, m, scale, align_corners, cubic=mode == "bicubic")
    if mode == "bicubic":
        return _cubic_taps(n, m, scale, align_corners)
    return _linear_taps(n, m, scale, align_corners)


def _weights(taps: tuple, n: int):
    """The (m, n) matrix of ``taps``: the weights each output gives each entry, added up."""
    index, coefficient = taps
    weights = xp.zeros((index.shape[0], n))
    rows = xp.broadcast_to(xp.arange(index.shape[0])[:, None], index.shape)
    read = index >= 0
    xp.add.at(weights, (rows[read], index[read]), coefficient[read])
    return weights


def _source_positions(n: int, m: int, scale: float | None, align_corners: bool, cubic: bool):
    """Where in the input each output's value is read, as PyTorch's
    ``area_pixel_compute_source_index``; for the linear modes, positions before the first
    pixel centre are clamped to it (the cubic ones read beyond it, clamping the taps)."""
    step = _step(n, m, scale, align_corners)
    if align_corners:
        return xp.arange(m) * step
    source = (xp.arange(m) + 0.5) * step - 0.5
    return source if cubic else xp.maximum(source, 0.0)


def _split(source, n: int):
    """The entry at or before each position, and the fraction past it in [0, 1]; the floor is
    taken of the position rounded to float32, as PyTorch's ``floorf``."""
    low = xp.minimum(xp.floor(source.astype(xp.float32)).astype(xp.int64), n - 1)
    return low, xp.clip(source - low, 0.0, 1.0)


def _linear_taps(n: int, m: int, scale: float | None, align_corners: bool):
    """Two taps per output, the second clamped into the input; NOTE: as PyTorch, a dim resized
    to its own size is copied, each output reading its entry twice, with weights 1 and 0."""
    if n == m:
        index = xp.stack([xp.arange(n)] * 2, 1)
        return index, xp.broadcast_to(xp.array([1.0, 0.0]), index.shape)
    low, frac = _split(_source_positions(n, m, scale, align_corners, cubic=False), n)
    return xp.stack([low, xp.minimum(low + 1, n - 1)], 1), xp.stack([1 - frac, frac], 1)


def _cubic_taps(n: int, m: int, scale: float | None, align_corners: bool):
    """Four taps per output, at the entries around its position (clamped into the input: a tap
    beyond an edge reads the edge entry), weighted by Keys' cubic convolution kernel
    (https://en.wikipedia.org/wiki/Bicubic_interpolation) at the distances 1 + t, t, 1 - t and
    2 - t."""
    low, t = _split(_source_positions(n, m, scale, align_corners, cubic=True), n)
    index = xp.stack([xp.clip(low - 1 + k, 0, n - 1) for k in range(4)], 1)
    return index, xp.stack([_cubic_kernel(d, _CUBIC_A) for d in (1 + t, t, 1 - t, 2 - t)], 1)


def _cubic_kernel(d, a: float):
    """Keys' cubic convolution kernel at distances ``d`` >= 0 (zero from 2 on)."""
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return xp.where(d < 1, near, xp.where(d < 2, far, 0.0))


def _antialias_taps(n: int, m: int, scale: float | None, align_corners: bool, cubic: bool):
    """PIL's resampling filter, as PyTorch's antialiased modes: when shrinking, the tent
    (bilinear) or Keys' cubic with a = -0.5 (bicubic) is stretched by the scale, so that each
    output averages every input entry it covers; the taps that fall inside the input are
    normalised to sum to 1. As PyTorch, a dim resized to its own size is copied.

    NOTE: PyTorch 2.13's CPU kernel gives every output row the first one's values when it
    resizes the height of an image whose output width is 1 (``(3, 1) -> (5, 1)``: five equal
    rows); we resize each dim as for any other width, as PyTorch itself does on the transposed
    image. Its backward does not copy a dim that keeps its size: it reads the entries' neighbours
    too, with weight 0, so that an infinite incoming gradient makes theirs NaN; ours copies the
    gradient there as the forward copies the entries."""
    if n == m:
        return xp.arange(n)[:, None], xp.ones((n, 1))
    step = _step(n, m, scale, align_corners)
    stretch = max(step, 1.0)
    support = (2.0 if cubic else 1.0) * stretch
    centre = step * (xp.arange(m) + 0.5)
    # NOTE: truncation toward zero, as the C cast PyTorch and PIL use
    start = xp.maximum(xp.trunc(centre - support + 0.5), 0).astype(xp.int64)
    stop = xp.minimum(xp.trunc(centre + support + 0.5).astype(xp.int64), n)
    stop = xp.minimum(stop, start + 2 * math.ceil(support) + 1)  # PyTorch's most taps
    index = start[:, None] + xp.arange(max(int((stop - start).max()), 1))
    read = index < stop[:, None]
    distance = xp.abs((index - centre[:, None] + 0.5) / stretch)
    kernel = _cubic_kernel(distance, -0.5) if cubic else xp.maximum(1 - distance, 0.0)
    kernel = xp.where(read, kernel, 0.0)
    total = kernel.sum(1, keepdims=True)
    return xp.where(read, index, -1), kernel / xp.where(total == 0, 1.0, total)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r), r = ``upscale_factor``: each group of r*r channels
    becomes an r-by-r block of pixels (Shi et al., 2016, https://arxiv.org/abs/1609.05158).

    >>> import scratchgrad as sg
    >>> pixel_shuffle(sg.arange(4.0).reshape(1, 4, 1, 1), 2)
    tensor([[[[0., 1.],
              [2., 3.]]]])
    """
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    k = len(batch)
    out = input.reshape(*batch, c // (r * r), r, r, h, w)
    out = out.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return out.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), r = ``downscale_factor``: the inverse of
    ``pixel_shuffle``.

    >>> import scratchgrad as sg
    >>> pixel_unshuffle(sg.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
    tensor([0., 1., 2., 3.])
    """
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{input.ndim} dimension(s)"
        )
    *batch, c, h, w = input.shape
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({dim})={size} is not divisible by {r}"
            )
    k = len(batch)
    out = input.reshape(*batch, c, h // r, r, w // r, r)
    out = out.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return out.reshape(*batch, c * r * r, h // r, w // r)


class Upsample(Module):
    """Resize the spatial dims to ``size`` or by ``scale_factor`` (``F.interpolate``), with
    ``mode`` "nearest", "nearest-exact", "linear" (3-D input), "bilinear" or "bicubic" (4-D),
    "trilinear" (5-D) or "area".

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    >>> up(sg.ones(1, 3, 4, 5)).shape
    scratchgrad.Size([1, 3, 8, 10])
    >>> up
    Upsample(scale_factor=2.0, mode='bilinear')
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        elif isinstance(scale_factor, Sequence):  # (PyTorch's reads a list with float())
            raise TypeError(
                f"Upsample: scale_factor must be a number or a tuple of numbers, not "
                f"{type(scale_factor).__name__} ({scale_factor})"
            )
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            return f"scale_factor={self.scale_factor!r}, mode={self.mode!r}"
        return f"size={self.size!r}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample`` in mode "nearest", for (N, C, H, W) inputs (deprecated in PyTorch, without
    a warning).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.UpsamplingNearest2d(scale_factor=2)(sg.tensor([[[[1.0, 2.0]]]]))
    tensor([[[[1., 1., 2., 2.],
              [1., 1., 2., 2.]]]])
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample`` in mode "bilinear" with ``align_corners=True``, for (N, C, H, W) inputs
    (deprecated in PyTorch, without a warning).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.UpsamplingBilinear2d(size=(1, 3))(sg.tensor([[[[1.0, 2.0]]]]))
    tensor([[[[1.0000, 1.5000, 2.0000]]]])
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r), r = ``upscale_factor`` (``F.pixel_shuffle``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.PixelShuffle(3)(sg.ones(1, 9, 4, 4)).shape
    scratchgrad.Size([1, 1, 12, 12])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), r = ``downscale_factor``: the inverse of
    ``PixelShuffle`` (``F.pixel_unshuffle``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.PixelUnshuffle(3)(sg.ones(1, 1, 12, 12)).shape
    scratchgrad.Size([1, 9, 4, 4])
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
