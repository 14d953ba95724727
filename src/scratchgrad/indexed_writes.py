"""PyTorch's indexed writes: ``index_put``, ``masked_scatter``, ``put``, ``index_reduce``, the
functional views ``select_scatter``, ``slice_scatter``, ``diagonal_scatter``,
``as_strided_scatter`` and ``narrow_copy``, with their in-place forms where PyTorch has them.

Each is a composite of ops that have their own backward: a clone written through setitem (the
gradient of what was overwritten is 0, of what was written the incoming one there), ``index_add``
for the accumulating forms (a repeated position adds up, and each repeat's source gets the
gradient there) and ``scatter_reduce`` for ``index_reduce`` (whose derivatives are PyTorch's
``index_reduce_backward``, the same formulas); ``as_strided_scatter`` gathers each entry from
``src`` where it writes, else from the input. The methods are set on ``Tensor`` at the bottom.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.capture_hook import call
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.backend import namespace
from scratchgrad.dtypes import torch_name
from scratchgrad.ops import movement
from scratchgrad.tensor import (
    Tensor,
    broadcast_shapes,
    cat,
    check_tensor_number,
    named_backward,
    takes_out,
    vmapped,
    wrap_dim,
)


def _require_tensor(name: str, what: str, position: int, given: Any) -> None:
    if not isinstance(given, Tensor):
        raise TypeError(
            f"{name}(): argument '{what}' (position {position}) must be Tensor, not "
            f"{type(given).__name__}"
        )


# ---- index_put ----------------------------------------------------------------------------


def index_put(
    self: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False
) -> Tensor:
    """This tensor with ``values`` (broadcast) written at ``self[indices]``, as
    ``torch.index_put``: ``indices`` is a tuple of index tensors (int or bool), one per leading
    dim. With ``accumulate``, ``values`` are added there instead and a repeated position adds
    up; without, the last write stays (PyTorch leaves it unspecified). Differentiable in this
    tensor and ``values``.

    >>> import scratchgrad as sg
    >>> sg.zeros(3).index_put((sg.tensor([0, 2, 0]),), sg.tensor(1.0), accumulate=True)
    tensor([2., 0., 1.])
    """
    if not isinstance(indices, (tuple, list)):
        raise TypeError(
            "index_put(): argument 'indices' (position 1) must be tuple of Tensors, not "
            f"{type(indices).__name__}"
        )
    for k, item in enumerate(indices):
        if not isinstance(item, Tensor):
            raise TypeError(
                f"expected Tensor as element {k} in argument 0, but got {type(item).__name__}"
            )
    _require_tensor("index_put", "values", 2, values)
    if values.dtype != self.dtype and _a_masked_fill(indices, values, accumulate):
        check_tensor_number(values, self.dtype)  # (as PyTorch's: a masked_fill_ of its number)
        values = values.to(self.dtype)
    if values.dtype != self.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{torch_name(self.dtype)} for the destination and {torch_name(values.dtype)} "
            "for the source."
        )
    if not indices:
        raise RuntimeError("index_put(): expected at least one index tensor, got none")
    positions = _flat_positions(self, tuple(indices))
    values = _broadcast_values(values, positions.shape)
    if accumulate:
        flat = self.reshape(-1).index_add(0, positions.reshape(-1), values.reshape(-1))
        return flat.reshape(self.shape)
    batched = vmapped("_put_at", positions, values)  # per-member positions or values
    if batched is not None:
        return batched(self, positions, values)
    out = self.clone()
    out[tuple(indices)] = values
    return out


def _a_masked_fill(indices: Sequence[Tensor], values: Tensor, accumulate: bool) -> bool:
    """Whether PyTorch's ``index_put`` hands the write to ``masked_fill_`` (which casts one
    value to the tensor's dtype): one bool mask, one value, no accumulation."""
    one_mask = len(indices) == 1 and indices[0].dtype == backend.bool_
    return one_mask and values.numel() == 1 and not accumulate


def _flat_positions(self: Tensor, indices: tuple) -> Tensor:
    """The flat position of each entry ``self[indices]`` selects (int64, its shape), after
    the indexing's own checks (index dtypes, bounds, too many indices)."""
    ndim = self.ndim
    if len(indices) > ndim:  # PyTorch's count: a mask too is one index (a 0-d one into 0-d)
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {len(indices)})")
    xp = namespace(self.array)
    grid = Tensor._make(xp.arange(self.numel(), dtype=backend.int64).reshape(self.array.shape))
    return grid[indices]


def _broadcast_values(values: Tensor, shape: tuple) -> Tensor:
    """``values`` broadcast to ``shape`` (leading dims of 1 beyond it dropped, as PyTorch's),
    with PyTorch's error where they do not broadcast."""
    while values.ndim > len(shape) and values.shape[0] == 1:
        values = values[0]
    try:
        broadcast_shapes(values.shape, shape)
        if values.ndim > len(shape):
            raise ValueError
    except (RuntimeError, ValueError):
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
            f"indexing result of shape {list(shape)}"
        ) from None
    return values.expand(shape)


def index_put_(
    self: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False
) -> Tensor:
    """``index_put`` in place."""
    return self._apply_("index_put_", lambda t: index_put(t, indices, values, accumulate), values)


# ---- masked_scatter -----------------------------------------------------------------------


def masked_scatter(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """This tensor (broadcast with ``mask``) with the entries of ``source`` written, in order,
    at the positions where ``mask`` is True, as ``torch.masked_scatter``. ``source``'s
    gradient is the incoming one at those positions, in order (0 on its entries left over).

    >>> import scratchgrad as sg
    >>> sg.zeros(4).masked_scatter(sg.tensor([True, False, True, False]), sg.tensor([1.0, 2, 3]))
    tensor([1., 0., 2., 0.])
    """
    shape = _masked_scatter_checks("masked_scatter", self, mask, source)
    if capture_hook.recorder is not None:  # how many entries it takes depends on the mask
        capture_hook.recorder.refuse(
            "masked_scatter (how much of source it writes depends on the mask's values)"
        )
    mask = mask.expand(shape)
    batched = vmapped("_masked_scatter", mask, source)  # a mask or source per member
    if batched is not None:
        return batched(self.expand(shape), mask, source)
    count = int(_count_true(mask.array))
    if source.numel() < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = self.expand(shape).clone()
    out[mask] = source.reshape(-1)[:count]
    return out


def _masked_scatter_checks(name: str, self: Tensor, mask: Tensor, source: Tensor) -> tuple:
    """PyTorch's checks of ``masked_scatter``'s operands; the shape of its result."""
    _require_tensor(name, "mask", 1, mask)
    _require_tensor(name, "source", 2, source)
    if mask.dtype != backend.bool_:
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            f"{torch_name(mask.dtype)}"
        )
    if source.dtype != self.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got "
            f"{torch_name(self.dtype)} and {torch_name(source.dtype)}"
        )
    try:
        return tuple(broadcast_shapes(self.shape, mask.shape))
    except (RuntimeError, ValueError):
        raise RuntimeError(
            f"masked_scatter: the shapes of self {list(self.shape)} and mask "
            f"{list(mask.shape)} do not broadcast"
        ) from None


def _count_true(array: Any) -> Any:
    return namespace(array).count_nonzero(array)


def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``masked_scatter`` in place: ``mask`` must broadcast to this tensor's shape."""
    shape = _masked_scatter_checks("masked_scatter_", self, mask, source)
    if shape != tuple(self.shape):
        raise RuntimeError(
            f"masked_scatter_: mask of shape {list(mask.shape)} cannot be expanded to the "
            f"tensor's shape {list(self.shape)}"
        )
    return self._apply_("masked_scatter_", lambda t: masked_scatter(t, mask, source), mask, source)


# ---- put ----------------------------------------------------------------------------------


def put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """This tensor with ``source`` written at the flat positions ``index`` (int64, negative
    counted from the end), as ``torch.Tensor.put``; with ``accumulate`` added there instead
    (a repeated position adds up). Differentiable in this tensor and ``source``.

    >>> import scratchgrad as sg
    >>> sg.zeros(2, 2).put(sg.tensor([0, -1]), sg.tensor([1.0, 2.0]))
    tensor([[1., 0.],
            [0., 2.]])
    """
    _require_tensor("put", "index", 1, index)
    _require_tensor("put", "source", 2, source)
    if index.dtype != backend.int64:
        raise RuntimeError(
            f"put_(): Expected a long tensor for index, but got {torch_name(index.dtype)}"
        )
    if source.dtype != self.dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{torch_name(self.dtype)} and source.dtype = {torch_name(source.dtype)}"
        )
    if source.numel() != index.numel():
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    size = self.numel()
    if size == 0 and index.numel():
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    # a replay checks each call's index too (inside vmap, every member's)
    call(_check_flat_bounds, index._checked_values(), size)
    flat_index = index.reshape(-1) % max(size, 1)  # computed by ops: a replay reads each call's
    if accumulate:
        flat = self.reshape(-1).index_add(0, flat_index, source.reshape(-1))
        return flat.reshape(self.shape)
    batched = vmapped("_put_at", flat_index, source)  # per-member positions or values
    if batched is not None:
        return batched(self, flat_index, source)
    flat = self.reshape(-1).clone()
    flat[flat_index] = source.reshape(-1)
    return flat.reshape(self.shape)


def _check_flat_bounds(index: Any, size: int) -> None:
    """PyTorch's IndexError for the first flat index outside [-size, size)."""
    outside = (index < -size) | (index >= size)
    if outside.any():
        first = int(index[outside].reshape(-1)[0])
        raise IndexError(
            f"out of range: tried to access index {first} on a tensor of {size} elements."
        )


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``put`` in place."""
    return self._apply_("put_", lambda t: put(t, index, source, accumulate), source)


# ---- index_reduce -------------------------------------------------------------------------


def index_reduce(
    self: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """This tensor with the slices of ``source`` along ``dim`` reduced into the slices
    ``index`` points at, as ``torch.index_reduce``: ``reduce`` is "prod", "mean", "amax" or
    "amin"; without ``include_self`` the slices of this tensor that ``index`` reaches take no
    part. An integer mean is floored, as PyTorch's. Differentiable in this tensor and
    ``source`` (amax and amin split the gradient evenly among ties, as PyTorch's).

    >>> import scratchgrad as sg
    >>> sg.ones(3).index_reduce(0, sg.tensor([0, 2, 0]), sg.tensor([2.0, 3, 4]), "prod")
    tensor([8., 1., 3.])
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    _require_tensor("index_reduce", "index", 2, index)
    _require_tensor("index_reduce", "source", 3, source)
    dim = wrap_dim(dim, self.ndim)
    _index_reduce_checks(self, dim, index, source)
    if self.dtype == backend.bool_:
        raise NotImplementedError("\"index_func_\" not implemented for 'Bool'")
    if self.ndim == 0:  # as PyTorch: a 0-d tensor acts as a vector of one
        out = index_reduce(
            self.reshape(1), 0, index, source.reshape(1), reduce, include_self=include_self
        )
        return out.reshape(())
    call(_check_reduced_bounds, index._checked_values(), self.shape[dim])  # a replay checks too
    along = [1] * self.ndim
    along[dim] = index.numel()
    spread = index.to(backend.int64).reshape(along).expand(source.shape)
    return self.scatter_reduce(dim, spread, source, reduce, include_self=include_self)


def _index_reduce_checks(self: Tensor, dim: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's checks of ``index_reduce``'s index and source, in its order."""
    if index.ndim > 1:
        raise IndexError(
            f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with "
            f"type: {torch_name(index.dtype)} and size: {list(index.shape)}"
        )
    if index.dtype not in (backend.int32, backend.int64):
        raise RuntimeError(
            "index_reduce_(): Expected dtype int32/int64 for index but got: "
            f"{torch_name(index.dtype)}"
        )
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"index_reduce_(): self ({torch_name(self.dtype)}) and source "
            f"({torch_name(source.dtype)}) must have the same scalar type"
        )
    shape, count = tuple(self.shape), index.numel()
    if source.ndim == 0 or source.ndim > dim:
        size = source.shape[dim] if source.ndim else 1
        if count != size:
            raise RuntimeError(
                f"index_reduce_(): Number of indices ({count}) should be equal to "
                f"source.size(dim): ({size}), for dim: {dim}"
            )
    rest = tuple(source.shape[:dim] + source.shape[dim + 1 :])
    if (source.ndim != len(shape) and source.ndim + len(shape) != 1) or (
        shape and rest != shape[:dim] + shape[dim + 1 :]
    ):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(shape)} source.shape = {list(source.shape)}"
        )


def _check_reduced_bounds(index: Any, size: int) -> None:
    if ((index < 0) | (index >= size)).any():
        raise IndexError("index out of range in self")


def index_reduce_(
    self: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """``index_reduce`` in place."""
    return self._apply_(
        "index_reduce_",
        lambda t: index_reduce(t, dim, index, source, reduce, include_self=include_self),
        source,
    )


# ---- the scatters of views ----------------------------------------------------------------


def _written_into_view(name: str, input: Tensor, src: Any, key: tuple) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[key]``, whose shape ``src`` must
    have (its dtype is cast to ``input``'s, as PyTorch's)."""
    _require_tensor(name, "src", 2, src)
    slice_shape = input[key].shape
    if src.shape != slice_shape:
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(slice_shape)}"
        )
    out = input.clone()
    out[key] = src
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.select(dim, index)``, as
    ``torch.select_scatter``. Differentiable in both.

    >>> import scratchgrad as sg
    >>> sg.select_scatter(sg.zeros(2, 2), sg.ones(2), 0, 1)
    tensor([[0., 0.],
            [1., 1.]])
    """
    input.select(dim, index)  # its errors
    dim = wrap_dim(dim, input.ndim)
    return _written_into_view("select_scatter", input, src, (slice(None),) * dim + (index,))


@takes_out  # (PyTorch's slice_scatter takes out=, its select_ and diagonal_scatter none)
def slice_scatter(
    input: Tensor,
    src: Tensor,
    dim: int = 0,
    start: int | None = None,
    end: int | None = None,
    step: int = 1,
) -> Tensor:
    """A copy of ``input`` with ``src`` written into entries ``start:end:step`` of ``dim``,
    as ``torch.slice_scatter``. Differentiable in both.

    >>> import scratchgrad as sg
    >>> sg.slice_scatter(sg.zeros(4), sg.ones(2), start=1, step=2)
    tensor([0., 1., 0., 1.])
    """
    if input.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * dim + (slice(start, end, step),)
    return _written_into_view("slice_scatter", input, src, key)


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.diagonal(offset, dim1, dim2)``,
    as ``torch.diagonal_scatter``. Differentiable in both.

    >>> import scratchgrad as sg
    >>> sg.diagonal_scatter(sg.zeros(2, 2), sg.ones(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    _require_tensor("diagonal_scatter", "src", 2, src)
    diagonal_shape = input.diagonal(offset, dim1, dim2).shape  # (and its errors)
    if src.shape != diagonal_shape:
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(diagonal_shape)}"
        )
    out = input.clone()
    out.diagonal(offset, dim1, dim2).copy_(src)
    return out


def as_strided_scatter(
    input: Tensor,
    src: Tensor,
    size: Sequence[int],
    stride: Sequence[int],
    storage_offset: int | None = None,
) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input.as_strided(size, stride,
    storage_offset)``, as ``torch.as_strided_scatter``: the places of the storage that the
    view and ``input`` share take ``src``'s entries. Differentiable in both.

    >>> import scratchgrad as sg
    >>> sg.as_strided_scatter(sg.zeros(2, 3), sg.ones(2), (2,), (4,))
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    _require_tensor("as_strided_scatter", "src", 2, src)
    with no_grad():  # (a view kept out of the graph; detach would lose input's storage)
        view = input.as_strided(size, stride, storage_offset)  # (and its errors)
    if src.shape != view.shape:
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(view.shape)}"
        )
    size, stride = view.shape, view.stride()
    if movement.overlaps_itself(size, stride):  # which entry would win is PyTorch's loop order
        raise RuntimeError(
            "as_strided_scatter: unsupported operation: more than one element of the "
            "written-to tensor refers to a single memory location. Please clone() the tensor "
            "before performing the operation."
        )
    own = input._offset_in_storage()
    offset = own if storage_offset is None else storage_offset
    xp = namespace(input.array)
    length = max(
        movement.span(input.shape, input.stride(), own), movement.span(size, stride, offset)
    )
    # for each place of the storage, which entry of src is written there (-1: none)
    written = xp.full(length, -1, dtype=backend.int64)
    written[movement.places(xp, size, stride, offset).reshape(-1)] = xp.arange(src.numel())
    taken = written[movement.places(xp, input.shape, input.stride(), own)]
    # each entry from src where written, else its own: one gather from src and input side by side
    own_entries = src.numel() + xp.arange(input.numel()).reshape(input.shape)
    index = xp.where(taken >= 0, taken, own_entries)
    return cat([src.reshape(-1).to(input.dtype), input.reshape(-1)])[Tensor._make(index)]


def narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``narrow``'s entries as a new tensor (not a view), as ``torch.narrow_copy``.

    >>> import scratchgrad as sg
    >>> sg.arange(5).narrow_copy(0, 1, 2)
    tensor([1, 2])
    """
    if self.ndim and isinstance(dim, int) and dim >= self.ndim:  # PyTorch's type, RuntimeError
        raise RuntimeError(
            f"narrow_copy(): dim {dim} is out of range for a tensor of {self.ndim} dims"
        )
    if length < 0 and self.ndim:  # PyTorch's words, after narrow's checks of dim and start
        self.narrow(dim, start, 0)
        size = self.shape[wrap_dim(dim, self.ndim)]
        raise RuntimeError(
            f"start ({start + size if start < 0 else start}) + length ({length}) exceeds "
            f"dimension size ({size})."
        )
    return named_backward(self.narrow(dim, start, length).clone(), "NarrowCopyBackward0")


Tensor.index_put = index_put
Tensor.index_put_ = index_put_
Tensor.masked_scatter = masked_scatter
Tensor.masked_scatter_ = masked_scatter_
Tensor.put = put
Tensor.put_ = put_
Tensor.index_reduce = index_reduce
Tensor.index_reduce_ = index_reduce_
Tensor.select_scatter = select_scatter
Tensor.slice_scatter = slice_scatter
Tensor.diagonal_scatter = diagonal_scatter
Tensor.as_strided_scatter = as_strided_scatter
Tensor.narrow_copy = narrow_copy
