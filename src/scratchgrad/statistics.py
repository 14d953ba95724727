"""PyTorch's statistics of a tensor's entries: ``quantile`` and ``nanquantile``, ``nanmedian``,
``mode``, ``cov`` and ``corrcoef``, each composed of differentiable Tensor operations (sort,
gather, lerp, where, matmul), so that their gradients, second gradients, vmap and jit come from
those operations' own rules. They are also Tensor methods (attached at the end of this file),
with ``Tensor.histc`` and ``Tensor.bincount`` calling the root functions of those names.

>>> import scratchgrad as sg
>>> sg.tensor([1.0, 2.0, 4.0, 8.0]).quantile(0.5)
tensor(3.)
"""

from __future__ import annotations

import functools
import math
import operator
import warnings
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from scratchgrad import backend, cpu_order, creation
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.ops import reduce
from scratchgrad.tensor import (
    ALL_ENTRIES,
    Tensor,
    bincount,
    cat,
    check_keepdim,
    histc,
    median_of_nothing,
    names_bad_arguments,
    of_all_entries,
    refuse_complex,
    stacklevel_outside,
    takes_out,
    values_indices,
    where,
    wrap_dim,
    write_out,
)

__all__ = ["corrcoef", "cov", "histogram", "mode", "nanmedian", "nanquantile", "quantile"]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


# ---- quantiles --------------------------------------------------------------------------------


@takes_out
@names_bad_arguments
@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def quantile(
    input: Tensor,
    q: float | Tensor,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """The ``q``-th quantiles of the entries along ``dim`` (of all entries for None), as
    ``torch.quantile``: sorted, then read between the two nearest ranks ``q * (n - 1)`` as
    ``interpolation`` says (linear, lower, higher, midpoint or nearest). A 1-D ``q`` puts its
    dim first in the result. A slice holding a NaN gives NaN. The gradient flows to the one or
    two entries read.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]])
    >>> x.quantile(sg.tensor([0.25, 0.5]), dim=1)
    tensor([[0.7500, 4.7500],
            [1.5000, 5.5000]])
    >>> x.quantile(0.4, dim=1, interpolation="nearest")
    tensor([1., 5.])
    """
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


@takes_out
@names_bad_arguments
@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def nanquantile(
    input: Tensor,
    q: float | Tensor,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """``quantile`` of the entries that are not NaN, as ``torch.nanquantile`` (NaN where a
    slice holds nothing else).

    >>> import scratchgrad as sg
    >>> sg.tensor([1.0, float("nan"), 3.0]).nanquantile(0.5)
    tensor(2.)
    """
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(
    input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str, ignore_nan: bool
) -> Tensor:
    qs = _checked_q(input, q, interpolation)
    check_keepdim("nanquantile" if ignore_nan else "quantile", keepdim)
    x = input.reshape(-1) if dim is None else _along_last(input, dim)
    ordered = x.sort(dim=-1, stable=True).values  # NaN sorts last (stable: the faster sort)
    n = ordered.shape[-1]
    if ignore_nan:  # ranks among the entries that are not NaN; all NaN: rank 0, which is NaN
        count = ordered.isnan().logical_not().sum(-1, keepdim=True)
        ranks = qs * (count - 1)
        ranks = where(ranks < 0, 0, ranks)
    else:  # a slice with a NaN reads its last entry, a NaN
        ranks = where(ordered.isnan().any(-1, keepdim=True), n - 1, qs * (n - 1))
    if interpolation in ("lower", "higher", "nearest"):
        ranks = {"lower": ranks.floor, "higher": ranks.ceil, "nearest": ranks.round}[
            interpolation
        ]()
    below = ranks.long()
    out = ordered.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        above = ordered.gather(-1, ranks.ceil().long())
        out = out.lerp(above, ranks - below if interpolation == "linear" else 0.5)
    out = out.movedim(-1, 0)  # (q, the kept dims)
    if keepdim and dim is None:
        out = out.reshape(out.shape[0], *[1] * input.ndim)
    elif keepdim and input.ndim:
        out = out.unsqueeze(wrap_dim(dim, input.ndim) + 1)
    return out if isinstance(q, Tensor) and q.ndim == 1 else out.reshape(out.shape[1:])


def _checked_q(input: Tensor, q: Any, interpolation: str) -> Tensor:
    """``q`` as a 1-D tensor of ``input``'s dtype, after PyTorch's checks in PyTorch's order."""
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}"
        )
    if not isinstance(q, Tensor) and not 0 <= q <= 1:  # (NaN too)
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (backend.float32, backend.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if not isinstance(q, Tensor):
        return input.new_tensor([q])
    if q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    _check(_q_in_range, q)
    return q.reshape(-1)


def _q_in_range(q: Any) -> None:
    if not ((q >= 0) & (q <= 1)).all():
        raise RuntimeError("quantile() q values must be in the range [0, 1]")


def _check(check: Any, *tensors: Tensor) -> None:
    """``check`` on the tensors' arrays, now and (under scratchgrad.jit) at every replay, so a
    check of values needs no Python branch on a tensor."""
    capture_hook.call(check, *(t.array for t in tensors))


def _along_last(input: Tensor, dim: int) -> Tensor:
    """``input`` with ``dim`` moved last (a 0-d tensor as one entry)."""
    d = wrap_dim(dim, input.ndim)
    return input.movedim(d, -1) if input.ndim else input.reshape(1)


# ---- medians and modes ------------------------------------------------------------------------


@names_bad_arguments
def nanmedian(
    input: Tensor, dim: Any = ALL_ENTRIES, keepdim: bool = False, *, out: Any = None
) -> Any:
    """The lower median of the entries that are not NaN, of all entries or as (values,
    indices) along ``dim``, as ``torch.nanmedian``; NaN where a slice holds nothing else.
    Among equal entries the index is the one at the median's place in a stable sort, as
    PyTorch's CPU kernel picks (its comparison breaks ties by index); in a slice of only NaNs
    it is where that kernel's ``std::nth_element`` leaves one (``cpu_order``), for a CPU
    tensor of at most 65,536 entries. The gradient flows to the entry picked (of all entries,
    the entries equal to the median share it evenly, as PyTorch's).

    >>> import scratchgrad as sg
    >>> x = sg.tensor([[1.0, float("nan"), 3.0, 2.0], [4.0, 4.0, 1.0, float("nan")]])
    >>> x.nanmedian(1)
    values_indices(values=tensor([2., 4.]), indices=tensor([3, 0]))
    """
    if input.dtype == backend.bool_:
        raise NotImplementedError("\"median_cpu\" not implemented for 'Bool'")
    refuse_complex(input, "nanmedian")
    if of_all_entries("nanmedian", dim):
        if out is not None:  # (PyTorch's overload with out= has no default dim)
            raise TypeError('nanmedian() missing 1 required positional arguments: "dim"')
        if input.numel() == 0:
            return median_of_nothing(input)
        return reduce.NanMedianOfAll.apply(input, dim=tuple(range(input.ndim)))
    check_keepdim("nanmedian", keepdim)
    d = wrap_dim(dim, input.ndim)
    x = input if input.ndim else input.reshape(1)
    if x.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    order = x.argsort(dim=d, stable=True)  # NaN last
    if backend.is_floating(x.dtype):
        count = x.isnan().logical_not().sum(d, keepdim=True)
        index = _nan_slices_as_torch(x, d, count, order.gather(d, (count - 1).clamp_min(0) // 2))
    else:
        index = order.narrow(d, (x.shape[d] - 1) // 2, 1)
    return _picked(x, index, d, keepdim and input.ndim > 0, "nanmedian", out)


@names_bad_arguments
def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out: Any = None) -> values_indices:
    """The most frequent entry along ``dim`` (the smallest of equally frequent ones) and the
    index of the occurrence PyTorch's CPU kernel picks, as ``torch.mode``: the last one in
    the order its unstable sort (``std::sort``, see ``cpu_order``) leaves them, which for up
    to 16 entries along ``dim`` is the last occurrence; the gradient flows to that entry.
    A NaN equals nothing, and where that sort leaves NaNs decides among runs of one entry
    (``[nan, 2., 1.]`` gives nan at 0): replayed for a CPU tensor of at most 65,536 entries.

    >>> import scratchgrad as sg
    >>> sg.tensor([[3, 1, 3, 1], [2, 2, 1, 5]]).mode(1)
    values_indices(values=tensor([1, 2]), indices=tensor([3, 1]))
    """
    check_keepdim("mode", keepdim)
    refuse_complex(input, "mode")
    d = wrap_dim(dim, input.ndim)
    x = input if input.ndim else input.reshape(1)
    if x.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    y = x.detach().movedim(d, -1)
    order = y.argsort(dim=-1)  # ties in PyTorch's std::sort order: the last ends the run
    ordered = y.gather(-1, order)
    position = order.new_ones(order.shape).cumsum(-1) - 1
    starts = cat([position[..., :1] == 0, ordered[..., 1:] != ordered[..., :-1]], -1)
    run_start = where(starts, position, 0).cummax(-1).values
    run_end = (position - run_start).argmax(-1, keepdim=True)  # the first longest run's end
    index = order.gather(-1, run_end)
    if backend.is_floating(y.dtype):
        picked = y._indices_along(_mode_of_nan_rows, -1)
        index = where(picked < 0, index, picked)
    return _picked(x, index.movedim(-1, d), d, keepdim and input.ndim > 0, "mode", out)


def _mode_of_nan_rows(array: Any, dim: int) -> Any:
    """``mode``'s index along ``dim`` (of size 1) in each slice that holds a NaN, as PyTorch's
    CPU kernel picks it (``cpu_order.mode_index``); -1 in the others, and in all of a tensor
    past the limits ``_ties_as_torch`` keeps to (where each NaN is a run of one after the
    numbers)."""
    xp = backend.namespace(array)
    moved = xp.moveaxis(array, dim, -1)
    picked = xp.full((*moved.shape[:-1], 1), -1, backend.int64)
    if type(array) is backend.ndarray and array.size <= cpu_order.MOST_ENTRIES:
        rows, flat = moved.reshape(-1, moved.shape[-1]), picked.reshape(-1)
        for r in xp.flatnonzero(xp.isnan(rows).any(1)):  # (16-bit floats as Python floats)
            row = rows[r].astype(float).tolist()
            flat[r] = cpu_order.mode_index(list(zip(row, range(len(row)))))
    return xp.moveaxis(picked, -1, dim)


def _nan_slices_as_torch(x: Tensor, dim: int, count: Tensor, index: Tensor) -> Tensor:
    """``index`` with the slices that hold no number (``count`` 0) at PyTorch's CPU pick,
    within the limits ``_ties_as_torch`` keeps to (its CUDA kernel picks otherwise)."""
    if type(x.array) is not backend.ndarray or x.numel() > cpu_order.MOST_ENTRIES:
        return index
    # (a tensor op, not a branch on the values: a jitted step replays it on each call's)
    return index.masked_fill(count == 0, cpu_order.nan_row_median_index(x.shape[dim]))


def _picked(x: Tensor, index: Tensor, dim: int, keepdim: bool, name: str, out: Any):
    """The entries of ``x`` at ``index`` (of size 1 along ``dim``), and ``index``; written
    into ``out`` if given (``write_out``: PyTorch refuses one that partly overlaps ``x``)."""
    values = x.gather(dim, index)
    if not keepdim:
        values, index = values.squeeze(dim), index.squeeze(dim)
    result = values_indices(values, index)
    return result if out is None else write_out(name, result, out, (x,))


# ---- covariance -------------------------------------------------------------------------------


@names_bad_arguments
def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (a 1-D input: one variable)
    over the observations in its columns, as ``torch.cov``: ``fweights`` (integer) repeat the
    observations, ``aweights`` (floating) weigh them, and ``correction`` is subtracted from
    the number of observations (1: Bessel's correction), weighted as numpy.cov does.

    >>> import scratchgrad as sg
    >>> sg.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]).cov()
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    _check_cov_input(input)
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    w = _weights(fweights, aweights, n)
    if w is None:
        mean = x.sum(1) / n
        norm = max(n - correction, 0)
        if n - correction <= 0:
            _warn_dof()
    else:
        w_sum = w.sum()
        _check(_sums_to_nonzero, w_sum)
        mean = (x * w).sum(1) / w_sum
        norm = w_sum - correction * ((w * aweights).sum() / w_sum if aweights is not None else 1)
        _check(_positive_dof, norm)
        norm = where(norm > 0, norm, 0)  # as PyTorch: warn, then divide by zero
    centered = x - mean.unsqueeze(1)
    c = centered.mm((centered if w is None else centered * w).t())
    return (c / norm).squeeze()


def _check_cov_input(input: Tensor) -> None:
    if input.ndim > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.ndim} dimensions"
        )
    if input.dtype == backend.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")


def _weights(fweights: Tensor | None, aweights: Tensor | None, n: int) -> Tensor | None:
    """The product of the frequency and the accuracy weights, after PyTorch's checks."""
    w = None
    for name, weights, kind in (("fweights", fweights, "integral"), ("aweights", aweights, "")):
        if weights is None:
            continue
        if weights.ndim > 1:
            raise RuntimeError(
                f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                f"{weights.ndim} dimensions"
            )
        integral = weights.dtype.kind in "iu"
        if kind == "integral" and not integral:
            raise RuntimeError(
                f"cov(): expected fweights to have integral dtype but got fweights with "
                f"{weights.dtype.name} dtype"
            )
        if not kind and not backend.is_floating(weights.dtype):
            raise RuntimeError(
                f"cov(): expected aweights to have floating point dtype but got aweights with "
                f"{weights.dtype.name} dtype"
            )
        if weights.numel() != n:
            raise RuntimeError(
                f"cov(): expected {name} to have the same numel as there are observations in "
                f"the input but got {weights.numel()} != {n}"
            )
        if n:
            _check(_NONNEGATIVE[name], weights)
        w = weights if w is None else w * weights
    return w


def _nonnegative(name: str):
    def check(weights: Any) -> None:
        if (weights < 0).any():
            raise RuntimeError(f"cov(): {name} cannot be negative")

    return check


_NONNEGATIVE = {name: _nonnegative(name) for name in ("fweights", "aweights")}


def _sums_to_nonzero(w_sum: Any) -> None:
    if not (w_sum != 0).all():
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")


def _positive_dof(norm: Any) -> None:
    if not (norm > 0).all():
        _warn_dof()


def _warn_dof() -> None:
    warnings.warn(
        "cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
        "of observations.",
        UserWarning,
        stacklevel=stacklevel_outside(),
    )


@names_bad_arguments
def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in ``input``'s rows, as
    ``torch.corrcoef``: ``cov`` scaled by the standard deviations, clipped to [-1, 1].

    >>> import scratchgrad as sg
    >>> sg.tensor([[0.0, 1.0, 2.0], [1.0, 3.0, 2.0]]).corrcoef()
    tensor([[1.0000, 0.5000],
            [0.5000, 1.0000]])
    """
    c = cov(input)
    if c.ndim == 0:  # one variable: 1 (NaN where its variance is 0)
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    return c.clip(-1, 1)


# ---- histogram --------------------------------------------------------------------------------

histogram_result = namedtuple("histogram", ["hist", "bin_edges"])


@takes_out
def histogram(
    input: Tensor,
    bins: int | Tensor = 100,
    *,
    range: Sequence[float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> histogram_result:
    """The histogram of ``input``'s entries, as ``torch.histogram``: ``bins`` equal bins over
    ``range`` (the entries' own range when not given), or the bins between the sorted edges of
    a 1-D tensor ``bins``; each bin holds its left edge, the last one its right edge too, and
    entries outside the edges are left out. ``weight`` (``input``'s shape) weighs each entry;
    ``density`` divides each bin by the total and by its width. Floating inputs only; not
    differentiable.

    >>> import scratchgrad as sg
    >>> sg.histogram(sg.tensor([1.0, 2.0, 1.0, 4.0]), 3)
    histogram(hist=tensor([2., 1., 1.]), bin_edges=tensor([1., 2., 3., 4.]))
    """
    dtype = input.array.dtype
    if not backend.is_floating(dtype) or dtype.itemsize < 4:
        raise NotImplementedError(f'"histogramdd" not implemented for {input.dtype.name}')
    if weight is not None:
        _check_histogram_weight(input, weight)
    edges = _bin_edges(input, bins, range)
    values = input.detach().reshape(-1).array
    at = backend.namespace(values).searchsorted(edges.array, values, side="right") - 1
    number = edges.shape[0] - 1
    at[values == edges.array[-1]] = number - 1  # the last bin holds its right edge
    inside = (values >= edges.array[0]) & (values <= edges.array[-1])  # (False for NaN)
    weights = None if weight is None else weight.detach().reshape(-1).array[inside]
    hist = backend.namespace(values).bincount(at[inside], weights, minlength=number)
    hist = Tensor._make(hist.astype(dtype))
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return histogram_result(hist, edges)


def _check_histogram_weight(input: Tensor, weight: Tensor) -> None:
    if weight.shape != input.shape:
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as the "
            "input tensor excluding its innermost dimension, but got input with shape "
            f"{[input.numel(), 1]} and weight with shape {list(weight.shape)}"
        )
    if weight.dtype != input.dtype:
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
            f"should have the same dtype, but got input({input.dtype.name}), and "
            f"weight({weight.dtype.name})"
        )


def _bin_edges(input: Tensor, bins: int | Tensor, range: Sequence[float] | None) -> Tensor:
    """``bins`` checked if a tensor of edges, else ``bins + 1`` edges spread evenly over
    ``range`` or the entries' own (0 to 1 with no entries; half a unit each way of a point)."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(
                "torch.histogramdd: bins tensor should have one dimension, but got "
                f"{bins.ndim} dimensions in the bins tensor for dimension 0"
            )
        _check_bins(bins.shape[0] - 1)
        if bins.dtype != input.dtype:
            raise RuntimeError(
                "torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                f"but got input with dtype {input.dtype.name} and bins for dimension 0 with dtype "
                f"{bins.dtype.name}"
            )
        return bins.detach().clone()
    if isinstance(bins, (bool, float)) or not hasattr(bins, "__index__"):
        raise TypeError(
            f"histogram(): argument 'bins' must be an int or a Tensor, not {type(bins).__name__}"
        )
    _check_bins(bins)
    if range is not None:
        low, high = (float(end) for end in range)
    elif input.numel():
        low, high = input.min().item(), input.max().item()
    else:
        low, high = 0.0, 1.0
    if low > high:
        raise RuntimeError(
            f"torch.histogramdd: min should not exceed max, but got min {low:g} max {high:g} "
            "for dimension 0"
        )
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(
            f"torch.histogramdd: dimension 0's range [{low:g}, {high:g}] is not finite"
        )
    if low == high:
        low, high = low - 0.5, high + 0.5
    return creation.linspace(low, high, operator.index(bins) + 1, dtype=input.dtype)


def _check_bins(bins: int) -> None:
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")


def _method(function: Any) -> Any:
    """``function`` as a Tensor method, which takes no ``out=``, as PyTorch's methods."""

    @functools.wraps(function)
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            raise TypeError(f"{function.__name__}() got an unexpected keyword argument 'out'")
        return function(self, *args, **kwargs)

    return method


# The methods of the same names (x.quantile(0.5) is quantile(x, 0.5)), attached here so that
# tensor.py need not import this module.
for _function in (
    corrcoef, cov, mode, nanmedian, nanquantile, quantile, histc, bincount, histogram
):  # fmt: skip
    setattr(Tensor, _function.__name__, _method(_function))
