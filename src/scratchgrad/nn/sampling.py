"""Sampling an input at arbitrary points, as PyTorch: ``affine_grid`` makes the points of an
affine transform, ``grid_sample`` reads the input there (the spatial transformer's two halves;
both re-exported by ``nn.functional``).

A grid holds, for each output pixel, a point in the input's normalized coordinates: ``-1`` and
``1`` are the outer edges of the corner pixels (or, with ``align_corners``, their centres).
``grid_sample`` is built from differentiable operations: the point is mapped to pixel units
and through the padding mode (``border`` clamps it, ``reflection`` folds it back at the edges),
the pixels around it are gathered (``gather``, whose gradient adds into the input), and
weighted by the point's distances to them (bilinear: 2 x 2 pixels; 2 x 2 x 2 for a 5-D input;
bicubic: 4 x 4, with Keys' kernel and PyTorch's A = -0.75; nearest: one, rounded half to even,
whose position has no gradient). So the gradients with respect to the input and the grid, and
their second derivatives, are those of the arithmetic PyTorch's kernels do, including where a
point sits exactly on a clamped edge (there PyTorch's gradient for the grid is zero, as here).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.creation import linspace, ones, tensor
from scratchgrad.tensor import Tensor, stack, where

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # PyTorch's cubic convolution constant (as interpolate's bicubic mode)
_DEFAULT_CHANGED = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def _aligned(align_corners: bool | None) -> bool:
    """``align_corners``, warning as PyTorch where it was not given (``stacklevel``: past
    this, the public function and the type check ``nn.functional`` wraps it in)."""
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, UserWarning, stacklevel=4)
        return False
    return align_corners


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine transforms, for ``grid_sample``: ``theta`` is
    ``(N, 2, 3)`` for a 4-D ``size`` ``(N, C, H, W)`` (the grid is ``(N, H, W, 2)``), or
    ``(N, 3, 4)`` for a 5-D one (``(N, D, H, W, 3)``). Each output pixel's normalized
    position ``(x, y[, z], 1)`` times ``theta``'s transpose.

    >>> import scratchgrad as sg
    >>> identity = sg.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> affine_grid(identity, (1, 1, 1, 2), align_corners=True)
    tensor([[[[-1.,  0.],
              [ 1.,  0.]]]])
    """
    aligned = _aligned(align_corners)
    size = [int(n) for n in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    dims = len(size) - 2
    expected = (size[0], dims, dims + 1)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype.name}")
    if tuple(theta.shape) != expected:
        raise ValueError(
            f"Expected a batch of {dims}D affine matrices of shape Nx{dims}x{dims + 1} for "
            f"size {size}. Got {list(theta.shape)}."
        )
    if min(size[2:]) <= 0:
        raise ValueError(f"affine_grid: expected non-zero, positive spatial sizes, got {size}")
    # x runs along the last dim, y the one before, z the first: the base grid's columns
    axes = [_positions(n, aligned, theta) for n in reversed(size[2:])]
    spatial = size[2:]
    columns = []
    for k, axis in enumerate(axes):  # axis k (x, y, z) varies along spatial dim dims - 1 - k
        shape = [1] * dims
        shape[dims - 1 - k] = spatial[dims - 1 - k]
        columns.append(axis.reshape(shape).expand(spatial))
    columns.append(ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = stack(columns, -1).reshape(1, -1, dims + 1)
    return (base @ theta.transpose(1, 2)).reshape(size[0], *spatial, dims)


def _positions(steps: int, aligned: bool, like: Tensor) -> Tensor:
    """The normalized positions of ``steps`` pixel centres, as PyTorch's affine_grid."""
    if steps <= 1:
        return tensor([0.0], dtype=like.dtype, device=like.device)
    positions = linspace(-1, 1, steps, dtype=like.dtype, device=like.device)
    return positions if aligned else positions * ((steps - 1) / steps)


@autocast_policy("float32")  # PyTorch's CPU autocast list has grid_sampler
def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """``input`` ``(N, C, H, W)`` read at the points of ``grid`` ``(N, H_out, W_out, 2)``
    (``(x, y)`` in normalized coordinates), or ``(N, C, D, H, W)`` at ``(N, D_out, H_out,
    W_out, 3)``: the output is ``(N, C, H_out, W_out)`` (or 5-D), as PyTorch's grid_sample.

    ``mode``: ``"bilinear"`` (trilinear for 5-D), ``"nearest"`` or ``"bicubic"`` (4-D only).
    ``padding_mode``: what points outside the input read: ``"zeros"``, ``"border"`` (the
    nearest edge pixel) or ``"reflection"`` (the input mirrored at its edges).

    >>> import scratchgrad as sg
    >>> image = sg.tensor([[[[0.0, 10.0], [20.0, 30.0]]]])
    >>> grid_sample(image, sg.tensor([[[[0.0, 0.0]]]]), align_corners=False)  # the centre
    tensor([[[[15.]]]])
    """
    aligned = _aligned(align_corners)
    _check(input, grid, mode, padding_mode)
    # every member's grid inside vmap; a jitted step checks on each call
    capture_hook.call(_refuse_non_finite, grid._checked_values(), padding_mode)
    n, c, *spatial = input.shape
    out_spatial = grid.shape[1:-1]
    flat = input.reshape(n, c, -1)
    # pixel units per spatial dim, in the input's dim order (grid's last axis is x, y, z)
    points = [
        _unnormalize(grid[..., len(spatial) - 1 - d], size, aligned)
        for d, size in enumerate(spatial)
    ]
    if mode == "bicubic":
        taps = _bicubic_taps(points, spatial, padding_mode, aligned)
    else:
        points = [_pad(p, size, padding_mode, aligned) for p, size in zip(points, spatial)]
        taps = _nearest_taps(points) if mode == "nearest" else _linear_taps(points)
    out = None
    for indices, weight in taps:
        index, inside = _flat_index(indices, spatial)
        values = flat.gather(2, index.reshape(n, 1, -1).expand(n, c, -1))
        term = values.reshape(n, c, *out_spatial) * where(inside, weight, 0).unsqueeze(1)
        out = term if out is None else out + term
    return out


def _check(input: Tensor, grid: Tensor, mode: str, padding_mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADDINGS:
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(
            "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes "
            f"{list(grid.shape)}"
        )
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, "
            f"but got grid with sizes {list(grid.shape)}"
        )
    if input.dtype != grid.dtype:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{input.dtype.name} and grid has {grid.dtype.name}"
        )
    if mode == "bicubic" and input.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        raise RuntimeError(
            f"grid_sampler(): expected a floating point input, got {input.dtype.name}"
        )
    if 0 in input.shape[2:]:
        raise RuntimeError(
            "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
            f"has sizes {list(input.shape)}"
        )


def _refuse_non_finite(points, padding_mode: str) -> None:
    """Raise for a NaN in the grid, or an infinity outside ``border`` padding: PyTorch's result
    there depends on its kernel (NaN, zero or an edge pixel, by mode and padding)."""
    xp = backend.namespace(points)
    if xp.isfinite(points).all() or (padding_mode == "border" and not xp.isnan(points).any()):
        return
    raise RuntimeError(
        f"grid_sample: the grid holds {'nan' if xp.isnan(points).any() else 'inf'} values, "
        f"which padding_mode='{padding_mode}' has no defined result for (PyTorch gives NaN, "
        "zero or an edge pixel by mode and padding); only padding_mode='border' takes "
        "infinities (clamped to the edge)"
    )


def _unnormalize(coordinate: Tensor, size: int, aligned: bool) -> Tensor:
    """A normalized coordinate in pixel units (pixel ``i``'s centre is ``i``)."""
    if aligned:
        return (coordinate + 1) * ((size - 1) / 2)
    return ((coordinate + 1) * size - 1) / 2


def _clip(x: Tensor, size: int) -> Tensor:
    """``x`` clamped to ``[0, size - 1]``; its gradient is zero at the bounds too (PyTorch's
    ``clip_coordinates_set_grad``: only a point strictly inside moves the sample)."""
    high = size - 1
    return where(x <= 0, 0.0, where(x >= high, float(high), x))


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``x`` folded back into ``[twice_low / 2, twice_high / 2]`` at each edge it crosses, as
    PyTorch's ``reflect_coordinates``."""
    if twice_low == twice_high:
        return x * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    shifted = x - low
    distance = where(shifted < 0, -shifted, shifted)  # (its gradient is 1, not 0, at 0)
    extra = distance.fmod(span)
    even = (distance.detach() / span).floor().fmod(2) == 0
    return where(even, extra + low, (span - extra) + low)


def _pad(x: Tensor, size: int, padding_mode: str, aligned: bool) -> Tensor:
    """A coordinate (pixel units) through the padding mode: clamped (border), folded back
    then clamped (reflection), or as it is (zeros: taps outside read zero)."""
    if padding_mode == "border":
        return _clip(x, size)
    if padding_mode == "reflection":
        folded = _reflect(x, 0, 2 * (size - 1)) if aligned else _reflect(x, -1, 2 * size - 1)
        return _clip(folded, size)
    return x


def _linear_taps(points: list[Tensor]) -> list[tuple[list, Tensor]]:
    """The 2^d pixels around each point (integer positions per dim) and their weights."""
    lows = [p.detach().floor() for p in points]
    taps = [([], None)]
    for p, low in zip(points, lows):
        after = p - low  # the distance from the pixel before: that one's weight is 1 - it
        taps = [
            (indices + [low + step], factor if weight is None else weight * factor)
            for indices, weight in taps
            for step, factor in ((0, 1 - after), (1, after))
        ]
    return taps


def _nearest_taps(points: list[Tensor]) -> list[tuple[list, Tensor]]:
    """The pixel nearest each point (halves rounded to even, as PyTorch's nearbyint), with
    weight one: a function of the points whose gradient is zero, so that the grid gets
    PyTorch's zero gradient (not none)."""
    nearest = [p.detach().round() for p in points]
    return [(nearest, sum(p * 0 for p in points) + 1)]


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1 and 2 from a point ``t`` past
    the pixel before it, in PyTorch's arithmetic (``upsample_get_cubic_coefficients``)."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic_taps(
    points: list[Tensor], spatial: list[int], padding_mode: str, aligned: bool
) -> list[tuple[list, Tensor]]:
    """The 4 x 4 pixels around each point, each tap's integer position taken through the
    padding mode (PyTorch pads the taps, not the point), and their weights."""
    y, x = points
    y0, x0 = y.detach().floor(), x.detach().floor()
    wy, wx = _cubic_weights(y - y0), _cubic_weights(x - x0)
    taps = []
    for i in range(4):
        row = _pad(y0 + (i - 1), spatial[0], padding_mode, aligned).detach()
        for j in range(4):
            column = _pad(x0 + (j - 1), spatial[1], padding_mode, aligned).detach()
            taps.append(([row, column], wy[i] * wx[j]))
    return taps


def _flat_index(indices: list[Tensor], spatial: list[int]) -> tuple[Tensor, Tensor]:
    """The flat index of each tap into the input's spatial plane (0 where outside) and
    whether the tap is inside. Positions arrive as floats; a NaN or one far outside is outside."""
    inside = None
    flat = None
    for position, size in zip(indices, spatial):
        ok = (position >= 0) & (position <= size - 1)
        inside = ok if inside is None else inside & ok
    for position, size in zip(indices, spatial):
        safe = where(inside, position, 0.0).long()
        flat = safe if flat is None else flat * size + safe
    return flat, inside
