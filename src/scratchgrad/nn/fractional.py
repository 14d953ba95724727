"""Fractional max pooling (Graham, https://arxiv.org/abs/1412.6071), as PyTorch's
``F.fractional_max_pool2d`` and ``fractional_max_pool3d``: windows of a fixed size whose
starts are spread pseudo-randomly over the input, one random sample per plane and dim.

Where each window's largest entry is, is worked out with no gradient (integer positions);
the output is then a ``gather`` of the input at those positions, whose backward sends each
output's gradient to its entry, as PyTorch's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scratchgrad import backend
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.creation import arange, rand, tensor
from scratchgrad.nn.conv_functional import IntPair, _ntuple
from scratchgrad.tensor import Tensor, cat

# the names of the spatial dims in PyTorch's messages, by how many there are
_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size: IntPair,
    output_size: IntPair | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Fractional max pooling over (N, C, H, W) or (C, H, W) input: the output and, for each
    of its entries, where in its (H, W) plane the input's entry is (flattened, int64).

    The window starts along each dim come from ``_random_samples`` (N, C, 2) in [0, 1), the
    input's dtype, one per plane for the width and then the height (drawn with ``rand`` when
    not given), by PyTorch's formula: ``int((i + u) * a) - int(u * a)`` with
    ``a = (input - kernel) / (output - 1)``, and the last window at the end. ``output_size``
    or ``output_ratio`` (of the input size, rounded down) sets the output's size.

    >>> import scratchgrad as sg
    >>> x = sg.arange(25.0).reshape(1, 1, 5, 5)
    >>> out, at = fractional_max_pool2d_with_indices(x, 2, 3, _random_samples=sg.zeros(1, 1, 2))
    >>> out
    tensor([[[[ 6.,  7.,  9.],
              [11., 12., 14.],
              [21., 22., 24.]]]])
    """
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    output_size: IntPair | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """``fractional_max_pool2d_with_indices``'s output, and its indices with
    ``return_indices``."""
    out, indices = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (out, indices) if return_indices else out


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size: IntPair,
    output_size: IntPair | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """``fractional_max_pool2d_with_indices`` over (N, C, T, H, W) or (C, T, H, W) input;
    ``_random_samples`` is (N, C, 3), one sample per plane for the time, height and width."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(
    input: Tensor,
    kernel_size: IntPair,
    output_size: IntPair | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """``fractional_max_pool3d_with_indices``'s output, and its indices with
    ``return_indices``."""
    out, indices = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (out, indices) if return_indices else out


def _fractional_max_pool(
    input: Tensor, kernel_size, output_size, output_ratio, samples: Tensor | None, dims: int
) -> tuple[Tensor, Tensor]:
    name = f"fractional_max_pool{dims}d"
    kernel = _ntuple(kernel_size, dims, f"{name}: kernel_size")
    if output_size is None:
        output_size = _sizes_from_ratio(input, output_ratio, dims, name)
    out_size = _ntuple(output_size, dims, f"{name}: output_size")
    batched = input.ndim == dims + 2
    if samples is None:  # (PyTorch's IndexError for input of too few dims comes from here too)
        count = input.shape[0] if batched else 1
        samples = rand(count, input.shape[-dims - 1], dims, dtype=input.dtype, device=input.device)
    _check(input, kernel, out_size, samples, dims, name)
    planes = input if batched else input.unsqueeze(0)
    with no_grad():
        indices = _window_maxima(planes.detach(), kernel, out_size, samples[: planes.shape[0]])
    flat = planes.flatten(-dims)
    out = flat.gather(-1, indices.flatten(-dims)).view(indices.shape)
    return (out, indices) if batched else (out.squeeze(0), indices.squeeze(0))


def _sizes_from_ratio(input: Tensor, ratio, dims: int, name: str) -> list[int]:
    if ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if isinstance(ratio, Sequence) and len(ratio) > dims:
        raise ValueError(
            f"{name} requires output_ratio to either be a single Int or tuple of Ints."
        )
    ratio = tuple(ratio) if isinstance(ratio, Sequence) else (ratio,) * dims
    return [int(size * r) for size, r in zip(input.shape[-dims:], ratio)]


def _check(input: Tensor, kernel, out_size, samples: Tensor, dims: int, name: str) -> None:
    """PyTorch's checks of the input, the sizes and the samples, with its messages."""
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: {input.shape}"
        )
    batch = input.ndim - dims - 1  # (0 or 1: where the channel dim is)
    for dim in range(batch, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                f"but got{list(input.shape)} with dimension {dim} being empty."
            )
    if min(kernel) < 1 or min(out_size) < 0:
        raise RuntimeError(
            f"{name}(): kernel_size must be positive and output_size non-negative, got "
            f"{kernel} and {out_size}"
        )
    # NOTE: PyTorch's 3-d check is stricter by one than its 2-d one (a last window that
    # ends at the input's end is refused), and its message names another function
    slack, where = (0, f"{name}()") if dims == 2 else (1, f"{name}_out()")
    for what, size, k, out in zip(_DIM_NAMES[dims], input.shape[-dims:], kernel, out_size):
        if out + k - 1 > size - slack:
            raise RuntimeError(
                f"{where}: pool {what} {k} too large relative to input {what} {size}"
            )
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[2] != dims:
        raise RuntimeError(
            f"Expect _random_samples.size(2) equals to {dims}; got {samples.shape[2]}."
        )
    if samples.shape[1] != input.shape[batch]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if batch and samples.shape[0] < input.shape[0]:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")


def _window_maxima(planes: Tensor, kernel, out_size, samples: Tensor) -> Tensor:
    """(N, C, *out_size) int64: where in each flattened plane its window's largest entry is,
    the first of ties and the last NaN, as PyTorch's loop finds it (``val > max or isnan``)."""
    dims = len(kernel)
    sizes = planes.shape[-dims:]
    # PyTorch's 2-d samples are (width, height), its 3-d ones (time, height, width)
    order = (1, 0) if dims == 2 else (0, 1, 2)
    index = None  # the flat index of each window entry, (N, C, *out_size, *kernel)
    for d, (size, k, out) in enumerate(zip(sizes, kernel, out_size)):
        starts = _starts(samples[..., order[d]], size, out, k)  # (N, C, out)
        at = starts[..., None] + arange(k, device=planes.device)  # (N, C, out, k)
        at = at.reshape((*at.shape[:2], *_spread(d, dims, out, k)))
        index = at if index is None else index * size + at
    index = index.expand((*planes.shape[:2], *out_size, *kernel))
    index = index.reshape(*index.shape[: 2 + dims], math.prod(kernel))
    values = planes.flatten(-dims).gather(-1, index.flatten(2)).view(index.shape)
    nan = values.isnan()
    first_max = values.masked_fill(nan, -math.inf).argmax(-1)
    last_nan = index.shape[-1] - 1 - nan.flip(-1).to(backend.int64).argmax(-1)
    at = first_max.where(~nan.any(-1), last_nan)
    return index.gather(-1, at.unsqueeze(-1)).squeeze(-1)


def _spread(d: int, dims: int, out: int, k: int) -> tuple[int, ...]:
    """The shape (*out_size, *kernel) with only dim ``d``'s output and kernel sizes kept."""
    shape = [1] * (2 * dims)
    shape[d], shape[dims + d] = out, k
    return tuple(shape)


def _starts(sample: Tensor, size: int, out: int, k: int) -> Tensor:
    """(N, C, out) int64: the window starts of each plane along one dim, computed in the
    samples' dtype as PyTorch's (so float32 samples round as PyTorch's do)."""
    dtype, device = sample.dtype, sample.device  # (the input's: a sample of another is refused)
    last = tensor([size - k], dtype=backend.int64, device=device).expand(*sample.shape, 1)
    if out <= 1:
        return last[..., :out]
    alpha = tensor(size - k, dtype=dtype, device=device) / tensor(
        out - 1, dtype=dtype, device=device
    )
    steps = (arange(out - 1, dtype=dtype, device=device) + sample[..., None]) * alpha
    starts = steps.to(backend.int64) - (sample * alpha).to(backend.int64)[..., None]
    return cat([starts, last], -1)
