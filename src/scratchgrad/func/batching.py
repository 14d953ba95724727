"""``vmap``: a function of one example, run on a whole batch at once.

A batched value is a ``BatchedTensor``: a thin wrapper whose ``value`` holds every batch
member with the batch dim first, and whose ``level`` says which vmap made it (nested vmaps
wrap again, the newest outermost). To the function it looks like one member: its shape is the
member's. While a vmap runs, ``Function.apply`` hands every op with a batched argument to
``dispatch``, which looks up the op's batching rule (``rules.RULES``) and runs the same
primitives on the values. So the work is done by the ordinary Functions on whole batches: it is
recorded by autograd like any other computation, and gradients flow through vmap both ways
(``vmap(grad(f))`` and ``grad`` of a vmapped function).

Code that reads a batched tensor's values without a Function (``.item()``, ``.numpy()``) fails
with an error saying so; a Function without a rule fails with an error naming it.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

from scratchgrad import creation
from scratchgrad.autograd import capture_hook, function
from scratchgrad.backend import xp
from scratchgrad.dtypes import check_memory_format, contiguous_format, written_number
from scratchgrad.func.pytree import tree_flatten, tree_unflatten
from scratchgrad.nn.functional import (
    check_embedding_index,
    embedding,
    embedding_bag,
    one_hot,
    renorm_embedding_rows,
)
from scratchgrad.ops import binary
from scratchgrad.ops.fused import check_class_indices
from scratchgrad.ops.movement import span
from scratchgrad.tensor import (
    IN_PLACE_FORMS,
    Tensor,
    as_shape,
    cat,
    check_index_copied,
    index_mask,
    new_shape,
    refuse_cast,
    restride_,
    searchsorted,
    stack,
    where,
    wrap_dim,
)

# The running vmaps, outermost first: (level, batch size, randomness).
_active: list[tuple[int, int, str]] = []


class _Logical:
    """Stands in for a batched tensor's array: the shape and dtype of one batch member, and
    nothing else (there is no single array of one member's values)."""

    __slots__ = ("shape", "dtype")
    base = None  # not a view of another array (the engine asks before keeping a gradient)

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # protocol probes (copy, NumPy) must see a missing attribute
            raise AttributeError(name)
        raise _direct_read(name)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise _direct_read("the array")

    def __array_ufunc__(self, ufunc: Any, *args: Any, **kwargs: Any) -> Any:
        raise _direct_read(ufunc.__name__)

    def __array_function__(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        raise _direct_read(func.__name__)

    def _refuse(self, *args: Any) -> Any:
        raise _direct_read("a Python operator")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __len__ = _refuse
    __getitem__ = __iter__ = __float__ = __int__ = __index__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse
    __hash__ = None


def _direct_read(what: str) -> RuntimeError:
    return RuntimeError(
        f"vmap: {what} of a batched tensor was used directly, not through a Function, so it "
        "cannot be batched (as .item(), .numpy() or data-dependent Python control flow in "
        "torch.func.vmap); compute it with tensor operations instead"
    )


def _along_batch(name: str) -> staticmethod:
    """vmap's version of the Tensor method ``name`` (gather, scatter, scatter_add,
    scatter_reduce): it reads its index's values, so every operand is batched (an unbatched
    one repeated for each member) and ``dim``, a member's dim with at least 1 dim (0-d ones
    came as 1-d), moves past the batch dim; keyword arguments (``reduce``, ``include_self``)
    are passed on."""

    def batched(x: Tensor, dim: int, *operands: Any, **options: Any) -> Tensor:
        level, (x, *operands) = all_batched((x, *operands))
        return wrap(getattr(x, name)(dim + 1, *operands, **options), level)

    return staticmethod(batched)


class BatchedTensor(Tensor):
    """One vmap level's view of a batch: looks like a single member (``shape``, ``dtype``),
    holds all of them in ``value``. Made by ``vmap``; users meet it only inside the function."""

    __slots__ = ("value", "level")

    def __repr__(self) -> str:
        return f"BatchedTensor(level={self.level}, bdim=0, value={self.value!r})"

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "vmap: backward() on a batched tensor is not supported; compute gradients inside "
            "vmap with scratchgrad.func.grad (or vjp), or differentiate the vmapped function"
        )

    def _checked_values(self) -> Any:
        return self.value._checked_values()

    def _made_like(self, make: Callable[[tuple], Tensor]) -> Tensor:
        return wrap(self.value._made_like(make), self.level)

    def _new(self, name: str, size, fill: tuple, dtype, device, requires_grad: bool) -> Tensor:
        """``new_zeros``, ``new_ones``, ``new_empty``, ``new_full``: one per member, as
        PyTorch's (so batched values may be written into them)."""
        shape = (self.value.shape[0], *new_shape(f"new_{name}", size))
        return wrap(self.value._new(name, (shape,), fill, dtype, device, requires_grad), self.level)

    def detach(self) -> Tensor:
        return wrap(self.value.detach(), self.level)

    def view(self, *shape: Any, dtype: Any = None, size: Any = None) -> Tensor:
        """A view of every member: the batch's view, its batch dim kept first, which raises
        where the batch's layout allows none (a copy would lose the writes through it)."""
        if dtype is None and len(shape) == 1 and not isinstance(shape[0], int | tuple | list):
            dtype = shape[0]
        if dtype is not None:
            return wrap(self.value.view(dtype), self.level)
        sizes = as_shape(shape if size is None else (size,))
        return wrap(self.value.view(self.value.shape[0], *sizes), self.level)

    def stride(self, dim: int | None = None) -> Any:
        """A member's strides: the batch's with its batch dims left out, as PyTorch's."""
        plain, depth = _plain(self)
        strides = plain.stride()[depth:]
        return strides if dim is None else strides[wrap_dim(dim, self.ndim)]

    def storage_offset(self) -> int:
        """The batch's storage offset (the first member's), as PyTorch's."""
        return _plain(self)[0].storage_offset()

    def is_contiguous(self, memory_format: Any = contiguous_format) -> bool:
        """Whether each member's entries lie in row-major order, as PyTorch answers inside
        vmap (the batch dims left out), so that ``contiguous`` copies a member that is not:
        its copy puts the batch dims first and each member in row-major order; PyTorch's
        error for another format."""
        check_memory_format(memory_format, None, "is_contiguous")
        if memory_format is not contiguous_format:
            raise RuntimeError(
                "NYI: querying is_contiguous inside of vmap for memory_format other than "
                "torch.contiguous_format"
            )
        return _row_major(self.shape, self.stride())

    # In-place changes: each member becomes the op's out-of-place result (batched or not),
    # written into the batch's value in place, so that views of the batch and the tensor
    # vmap was given see it, as in torch.func.vmap.

    def _write(self, name: str, new: Tensor) -> BatchedTensor:
        """Each member becomes ``new``'s (of a member's shape, in this batch's dtype)."""
        self._refuse_a_newer_batch(name, new)
        if tuple(new.shape) != tuple(self.shape):
            raise RuntimeError(
                f"{name}: output with shape {list(self.shape)} doesn't match the broadcast "
                f"shape {list(new.shape)}"
            )
        value, (new_value,) = self.value, unwrap((new,), self.level)[0]
        value.copy_(new_value.to(self.dtype))
        return self

    def _refuse_a_newer_batch(self, name: str, value: Any) -> None:
        """PyTorch's error for values batched by a newer vmap than this batch's: a member
        would take a whole batch of values."""
        if level_of((value,)) > self.level:
            BatchedTensor._refuse_writing_a_batch(name)

    @staticmethod
    def _refuse_writing_a_batch(name: str) -> None:
        """Writing batched values into a tensor not batched as newly: each of its members
        would take a whole batch of values."""
        raise RuntimeError(
            f"vmap: {name} is not possible because the values written are batched and the "
            "tensor written into is not (PyTorch's inplace arithmetic error): compute a new "
            "tensor out of place instead"
        )

    def _inplace(self, name: str, out_of_place: Callable, ufunc: str, other: Any) -> Tensor:
        return self._apply_(name, lambda old: out_of_place(old, other))

    def _apply_(
        self, name: str, op: Callable[[Tensor], Tensor], *arguments: Any, promotes: bool = False
    ) -> Tensor:
        # computed from a copy of the old values, as Tensor's recorded in-place ops are: the
        # op may save them for its gradient, and the write changes them
        new = op(wrap(self.value.clone(), self.level))
        refuse_cast(name, new.array.dtype, self.array.dtype)
        return self._write(name, new)

    def fill_(self, value: Any) -> Tensor:
        if not isinstance(value, Tensor):  # the same number for every member
            self.value.fill_(value)
            return self
        Tensor.fill_(_stand_in(self), _stand_in(value))  # its checks (a 0-d value)
        return self._write("fill_", value.expand(self.shape))

    def copy_(self, src: Any) -> Tensor:
        return self._copy_from("copy_", src)

    def _copy_from(self, name: str, src: Any) -> Tensor:  # (copy_, and the random fills)
        if not isinstance(src, Tensor):  # numbers, the same for every member
            self.value.copy_(src)
            return self
        return self._write(name, src.expand(self.shape))

    def __setitem__(self, index: Any, value: Any) -> None:
        """``x[index] = value`` of each member, as ``x.value[:, index] = value``: ints,
        slices, None, Ellipsis and unbatched index tensors that are adjacent (which keep the
        batch dim first); ``value`` batched or not. Batched index tensors, or index tensors
        apart from each other, are written at the positions they select."""
        items = index if isinstance(index, tuple) else (index,)
        tensors = [i for i, item in enumerate(items) if not _basic_item(item)]
        if level_of(items) or (tensors and tensors[-1] - tensors[0] >= len(tensors)):
            self._write_at_positions(items, value)
            return
        self._refuse_a_newer_batch("setitem", value)
        if type(value) is BatchedTensor and value.level == self.level:
            target = self.value[(slice(None), *items)]
            value = pad_to_rank([target, value.value], [True, True])[1]
        self.value[(slice(None), *items)] = value

    def _write_at_positions(self, items: tuple, value: Any) -> None:
        """``x[items] = value`` by the members' flat positions that ``items`` select (found by
        indexing a grid of them, each member by its own index tensors), written by a scatter:
        the last of repeated positions stays, as PyTorch's. PyTorch's checks of the dtypes and
        shapes run first, on zeros of one member's shapes."""
        Tensor.__setitem__(_stand_in(self), tuple(map(_stand_in, items)), _stand_in(value))
        grid = creation.arange(self.numel(), device=self.device).reshape(self.shape)
        positions = grid[items]
        if not isinstance(value, Tensor):
            value = creation.full((), written_number(value, self.dtype), dtype=self.dtype)
        leading = max(value.ndim - positions.ndim, 0)  # size-1 dims, dropped as PyTorch's
        values = value.to(self.dtype).reshape(value.shape[leading:]).expand(positions.shape)

        def written(t: Tensor) -> Tensor:
            flat = t.reshape(-1).scatter(0, positions.reshape(-1), values.reshape(-1))
            return flat.reshape(t.shape)

        self._apply_("setitem", written)

    # Tensor methods that compute on arrays directly instead of through a Function: each runs
    # the same method on the batch and wraps the result (they are elementwise, or shift dims).

    def _compare(self, ufunc: str, other: Any) -> Tensor:
        level = level_of((self, other))
        (x, y), batched = unwrap((self, other), level)
        x, y = pad_to_rank((x, y), batched)
        if isinstance(y, BatchedTensor) and not isinstance(x, BatchedTensor):
            return wrap(y._compare(_MIRRORED.get(ufunc, ufunc), x), level)
        return wrap(x._compare(ufunc, y), level)

    def _elementwise_values(self, name: str) -> Tensor:
        return wrap(self.value._elementwise_values(name), self.level)

    def isclose(
        self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
    ) -> Tensor:
        return _divided(lambda x, y: x.isclose(y, rtol, atol, equal_nan), self, other)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        if isinstance(min, Tensor) or isinstance(max, Tensor):  # composed of batched ops
            return Tensor.clamp(self, min, max)
        return wrap(self.value.clamp(min, max), self.level)

    clip = clamp

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return self._reduce_values("argmax", dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return self._reduce_values("argmin", dim, keepdim)

    def any(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return self._reduce_values("any", dim, keepdim)

    def all(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return self._reduce_values("all", dim, keepdim)

    def _reduce_values(self, name: str, dim: int | None, keepdim: bool) -> Tensor:
        value = self.value
        if dim is None or self.ndim == 0:  # over all of a member's entries: flatten each first
            if dim is not None:
                wrap_dim(dim, 0)  # (a 0-d member takes dim 0 or -1)
            out = getattr(value.reshape(value.shape[0], -1), name)(1)
            return wrap(
                out.reshape(value.shape[0], *(1,) * self.ndim) if keepdim else out, self.level
            )
        return wrap(getattr(value, name)(wrap_dim(dim, self.ndim) + 1, keepdim), self.level)

    def _indices_along(self, compute: Callable, dim: int, *args: Any) -> Tensor:
        """Sorts, top k, order statistics (median, kthvalue) and running extremes (cummax,
        cummin) find their indices here: on the whole batch, ``dim`` moved past the batch dim
        (a 0-d member never gets here: those ops answer it without reading a value)."""
        return wrap(
            self.value._indices_along(compute, wrap_dim(dim, self.ndim) + 1, *args), self.level
        )

    def _on_diagonal(self, diagonal: int) -> Tensor:
        return wrap(self.value.diag_embed(diagonal), self.level)

    # Integer division (``%``, ``//``, ``fmod``) calls NumPy's exact integer functions on the
    # arrays, not a Function: a batch runs the operator on its whole batch. The reflected
    # operators also get a plain tensor on the left: Python asks a subclass on the right first.

    def __mod__(self, other: Any) -> Tensor:
        return _divided(operator.mod, self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return _divided(operator.mod, _left_operand(self, other), self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _divided(operator.floordiv, self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _divided(operator.floordiv, _left_operand(self, other), self)

    @staticmethod
    def _fmod(x: Tensor, y: Any) -> Tensor:
        """``x.fmod(y)`` where either is batched (for ``tensor.vmapped``)."""
        return _divided(lambda a, b: a.fmod(b), x, y)

    # Ops that read several operands' arrays: Tensor's code hands them here (tensor.vmapped)
    # when any operand is batched, which need not be the first

    _gather = _along_batch("gather")
    _scatter = _along_batch("scatter")
    _scatter_add = _along_batch("scatter_add")
    _scatter_reduce = _along_batch("scatter_reduce")

    # index_fill and index_copy read their index's values outside a Function (index_copy also
    # writes into a copy in place): a batched one runs here, composed of ops vmap batches. Their
    # checks of shapes and dtypes are Tensor's own, run on zeros of one member's shapes first.

    def index_fill(self, dim: int, index: Tensor, value: Any) -> Tensor:
        """``Tensor.index_fill`` with the positions each member's index selects: a mask made
        by comparing the index, wrapped to [0, size), with every position along ``dim``."""
        if type(index) is not BatchedTensor:  # one mask for every member: Tensor's own
            return super().index_fill(dim, index, value)
        Tensor.index_fill(*map(_stand_in, (self, dim, index, value)))
        if self.ndim == 0:  # as PyTorch: a 0-d tensor acts as a vector of one
            return self.reshape(1).index_fill(0, index, value).reshape(())
        dim = wrap_dim(dim, self.ndim)
        size = self.shape[dim]
        capture_hook.call(index_mask, index._checked_values().reshape(-1), self.shape, dim)
        positions = creation.arange(size, device=self.device)
        hit = (index.reshape(-1, 1) % max(size, 1) == positions).any(0)
        mask = hit.reshape([size if d == dim else 1 for d in range(self.ndim)])
        if isinstance(value, Tensor):
            value = value.to(self.dtype)
        else:
            value = written_number(value, self.dtype)
        return binary.Where.apply(mask, value, self)

    def index_copy(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """``Tensor.index_copy`` as a scatter of ``source`` along ``dim`` (its slices at the
        index's positions): as index_copy, the last of repeated positions stays, and each
        repeat's slice of ``source`` gets the gradient there."""
        Tensor.index_copy(*map(_stand_in, (self, dim, index, source)))
        if self.ndim == 0:  # as PyTorch: a 0-d tensor acts as a vector of one
            return self.reshape(1).index_copy(0, index, source.reshape(-1)).reshape(())
        dim = wrap_dim(dim, self.ndim)
        size = self.shape[dim]
        capture_hook.call(check_index_copied, index._checked_values(), size, dim)
        source = source.reshape(1) if source.ndim == 0 else source
        along = [-1 if d == dim else 1 for d in range(source.ndim)]
        return self.scatter(dim, index.reshape(along).expand(source.shape), source)

    @staticmethod
    def _index_add(x: Tensor, dim: int, index: BatchedTensor, source: Tensor) -> Tensor:
        """``x.index_add(dim, index, source)`` with a batched index (checked, ``dim`` wrapped,
        ``alpha`` applied): a scatter_add of ``source`` at each member's positions."""
        along = [-1 if d == dim else 1 for d in range(source.ndim)]
        return x.scatter_add(dim, index.reshape(along).expand(source.shape), source)

    @staticmethod
    def _put_at(x: Tensor, positions: Tensor, values: Tensor) -> Tensor:
        """``index_put`` and ``put`` (without accumulate) where the flat ``positions`` they
        write ``values`` (of their shape) at are batched, or the values are: a scatter into
        ``x`` flattened (a write into a batch's member refuses per-member positions, and one
        into an unbatched tensor a batch of values)."""
        flat = x.reshape(-1).scatter(0, positions.reshape(-1), values.reshape(-1))
        return flat.reshape(x.shape)

    @staticmethod
    def _masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
        """``masked_scatter`` (``x`` and ``mask`` of one shape) with a batched mask or source:
        each member's k-th True position takes its source's k-th entry, gathered by the
        running count of its mask."""
        flat = mask.reshape(-1)
        capture_hook.call(_check_masked_count, flat._checked_values(), source.numel())
        taken = (flat.long().cumsum(0) - 1).clamp(min=0)
        return where(mask, source.reshape(-1).gather(0, taken).reshape(x.shape), x)

    # a plain tensor's index_fill with a batched index, and index_copy with a batched index
    # or source, come here (Tensor's hand them over: see tensor.vmapped)
    _index_fill, _index_copy = index_fill, index_copy

    @staticmethod
    def _as_strided(x: BatchedTensor, size: tuple, stride: tuple, offset: Any) -> Tensor:
        """``x.as_strided(size, stride, offset)`` of each member, as torch.func.vmap's rule:
        member i's view starts at ``offset`` (default: the batch's own storage offset) plus
        i steps of the batch dim, as if each member's storage began where the batch's does
        (so not as a loop, where ``offset`` counts from the one storage of all members). The
        batch's own view, its batch dim's size and stride in front, holds them all; an older
        vmap's batch dims are added by its own call of this in turn."""
        if len(size) != len(stride):
            raise RuntimeError(
                "Tensor.as_strided(size, stride, ...): size and stride must have the same "
                f"length! Got size {list(size)} and stride {list(stride)}"
            )
        value = x.value
        (batch, *shape), (step, *steps) = value.shape, value.stride()
        base = _plain(value)[0]._offset_in_storage()
        start = base if offset is None else operator.index(offset)
        _check_within_a_member(size, stride, start, (shape, steps, base))
        return wrap(value.as_strided((batch, *size), (step, *stride), offset), x.level)

    @staticmethod
    def _getitem(x: Tensor, index: Any) -> Tensor:
        """``x[index]`` with batched index tensors, each member indexed by its own: an arange
        over the members indexes the batch dim of ``x`` (repeated as a view if unbatched)
        beside the index tensors, so NumPy places the advanced dims as a member's. Side by side
        (ints count among them), they go where the first one is: the batch dim is moved there
        first, and the advanced dims back to the front after; apart, they go first anyway."""
        items = index if isinstance(index, tuple) else (index,)
        if any(isinstance(item, Tensor) and item.dtype == xp.bool_ for item in items):
            raise RuntimeError(
                "vmap: x[mask] with a batched index is not supported (each member's mask "
                "would select a different number of entries), as in torch.func.vmap; use "
                "sg.where(mask, x, 0) instead"
            )
        level = level_of((x, *items))
        (x, *items), batched = unwrap((x, *items), level)
        size = batch_size((x, *items), batched)
        x = x if batched[0] else at_front(x, size)
        rank = max(xp.ndim(i) - b for i, b in zip(items, batched[1:]) if not _basic_item(i))
        items = [
            i.reshape(size, *(1,) * (rank - i.ndim + 1), *i.shape[1:]) if b else i
            for i, b in zip(items, batched[1:])
        ]
        members = creation.arange(size, device=x.device).reshape(size, *(1,) * rank)
        advanced = [k for k, item in enumerate(items) if not _basic_item(item)]
        advanced += [k for k, item in enumerate(items) if isinstance(item, int)]
        first, last = min(advanced), max(advanced)
        if last - first >= len(advanced):  # apart: NumPy puts the advanced dims first
            return wrap(x[(members, *items)], level)
        taken = sum(1 for item in items if item is not None and item is not Ellipsis)
        before = 0  # the result's dims before the advanced ones, as a member's
        for item in items[:first]:
            before += x.ndim - 1 - taken if item is Ellipsis else 1
        dim = before - sum(1 for item in items[:first] if item is None)  # (None takes no dim)
        out = x.movedim(0, dim)[(*items[:first], members, *items[first:])]
        return wrap(out.movedim(before, 0), level)

    @staticmethod
    def _embedding(
        input: BatchedTensor, weight: Tensor, padding_idx: Any, max_norm: Any, *options: Any
    ) -> Tensor:
        """``F.embedding`` with per-member indices (``options``: norm_type, scale_grad_by_freq,
        sparse). A weight every member shares is indexed by the whole batch of indices at once,
        as PyTorch's rule (which also counts scale_grad_by_freq's repeats over the whole
        batch); batched weights are looked up as the rows of all members side by side, each
        member's indices shifted to its own rows. ``max_norm`` rescales each member's weight
        at its own indices, in place, as PyTorch's; a weight the members share would be
        rewritten by all of them, which PyTorch's vmap refuses too."""
        level = level_of((input, weight))
        (index, weight), (index_batched, weight_batched) = unwrap((input, weight), level)
        if max_norm is not None and not (index_batched and weight_batched):
            raise RuntimeError(
                "vmap: embedding with max_norm, batched indices and a weight the members share "
                "is not supported (each member would rescale the shared weight in place, as "
                "PyTorch's vmap refuses too); batch the weight, or renormalize it outside vmap"
            )
        if not index_batched:  # only the weight is batched here (the index by an older vmap)
            out = embedding(index, weight.movedim(0, 1), padding_idx, None, *options)
            return wrap(out.movedim(-2, 0), level)
        if not weight_batched:
            return wrap(embedding(index, weight, padding_idx, None, *options), level)
        if type(index) is BatchedTensor:  # its values could not be checked against n
            raise RuntimeError(
                "vmap: embedding with indices and weights both batched, the indices by an outer "
                "vmap too, is not supported; batch the indices by the inner vmap only"
            )
        size, n = weight.shape[:2]
        check_embedding_index(index, n, padding_idx)
        if max_norm is not None:  # each member's rows at its indices (member i's row r: i, r)
            members = xp.arange(size).reshape(size, *(1,) * (index.ndim - 1))
            renorm_embedding_rows(weight, (members, index.array), max_norm, options[0])
        first_rows = creation.arange(0, size * n, n, device=index.device)
        shifted = index + first_rows.reshape(size, *(1,) * (index.ndim - 1)).to(index.dtype)
        out = embedding(shifted, weight.reshape(size * n, *weight.shape[2:]), None, None, *options)
        if padding_idx is None:
            return wrap(out, level)
        return wrap(where(index.unsqueeze(-1) == padding_idx % n, out.detach(), out), level)

    @staticmethod
    def _embedding_bag(operands: tuple, **options: Any) -> Tensor:
        """``F.embedding_bag`` with per-member indices, offsets or per-sample weights
        (``operands``: input, weight, offsets, per_sample_weights): called on each member, the
        results stacked, as a loop of calls would give (the bags' lengths come from each
        member's offsets, so one call cannot take the batch)."""
        level = level_of(operands)
        values, batched = unwrap(operands, level)
        members = []
        for member in range(batch_size(values, batched)):
            input, weight, offsets, weights = (
                v[member] if b else v for v, b in zip(values, batched)
            )
            members.append(
                embedding_bag(input, weight, offsets, per_sample_weights=weights, **options)
            )
        return wrap(stack(members), level)

    @staticmethod
    def _nll(
        log_probs: Tensor, target: Tensor, class_dim: int, weight: Any, ignore_index: int
    ) -> tuple:
        """``nll_loss``'s (and ``cross_entropy``'s) loss per target, the targets' weights and
        which are ignored, with per-member targets or class weights: as Tensor ops (an
        ignored target points at class 0 and weighs 0), every member's indices checked."""
        ignored = target == ignore_index
        safe = where(ignored, 0, target).long()
        # (PyTorch's vmap gathers from the batch, all its levels' dims in front)
        dim = class_dim + max(_depth(log_probs), _depth(target))
        capture_hook.call(
            check_class_indices, safe._checked_values(), log_probs.shape[class_dim], dim
        )
        dtype = log_probs.dtype
        if weight is None:
            weights = (~ignored).to(dtype)
        else:
            weights = where(ignored, 0.0, weight.to(dtype)[safe])
        picked = log_probs.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
        return where(ignored, 0.0, -picked * weights), weights, ignored

    @staticmethod
    def _one_hot(labels: BatchedTensor, num_classes: int) -> Tensor:
        """``F.one_hot`` of every member's labels at once; as PyTorch's vmap, the number of
        classes must be given (one member's maximum would give members different shapes)."""
        if num_classes < 1:
            raise RuntimeError(
                "vmap: one_hot of batched labels needs an explicit positive num_classes, as "
                "in torch.func.vmap"
            )
        return wrap(one_hot(labels.value, num_classes), labels.level)

    @staticmethod
    def _index_select(x: Tensor, dim: int, index: BatchedTensor) -> Tensor:
        """``index_select`` with per-member indices (vectors): a gather along ``dim`` of each
        member (an unbatched ``x`` repeated for every member as a view), the indices
        broadcast over the other dims."""
        if x.ndim == 0:  # as PyTorch: a 0-d tensor is read as a vector of one
            return x.reshape(1).index_select(0, index.reshape(-1)).reshape(())
        dim = wrap_dim(dim, x.ndim)
        level, (x, index) = all_batched((x, index.reshape(-1)))
        along = [index.shape[1] if d == dim else 1 for d in range(x.ndim - 1)]
        positions = index.reshape(index.shape[0], *along)
        shape = list(x.shape)
        shape[dim + 1] = index.shape[1]
        return wrap(x.gather(dim + 1, positions.expand(shape)), level)

    @staticmethod
    def _searchsorted(boundaries: Tensor, input: Any, sorter: Any, **options: Any) -> Tensor:
        """1-D boundaries that every member shares search the whole batch of values in one
        call; otherwise every operand is batched, and a member's 1-D boundaries search its
        values flattened into one row (N-D boundaries line their rows up with the values')."""
        level = level_of((boundaries, input, sorter))
        if boundaries.ndim == 1 and level_of((boundaries, sorter)) < level:
            return wrap(searchsorted(boundaries, input.value, sorter=sorter, **options), level)
        if not isinstance(input, Tensor):  # a number, as searchsorted reads it: one 0-d member
            input = Tensor._make(xp.asarray(input))
        level, (b, values, sorter) = all_batched((boundaries, input, sorter))
        if boundaries.ndim > 1:
            return wrap(searchsorted(b, values, sorter=sorter, **options), level)
        rows = values.reshape(values.shape[0], -1)
        return wrap(searchsorted(b, rows, sorter=sorter, **options).reshape(values.shape), level)


def _basic_item(item: Any) -> bool:
    """Whether an index item selects as basic indexing does (keeps the dims around it)."""
    return item is None or item is Ellipsis or isinstance(item, int | slice)


def _check_masked_count(masks: Any, size: int) -> None:
    """masked_scatter's error where a member's mask (the last dim of ``masks``) has more
    True entries than its source has entries."""
    if (masks.sum(-1) > size).any():
        raise RuntimeError("Number of elements of source < number of ones in mask")


def _row_major(shape: tuple, stride: tuple) -> bool:
    """Whether entries of ``shape`` laid out by ``stride`` lie in row-major order (a dim of
    size 1 may have any stride, and an empty tensor is contiguous), as PyTorch tells."""
    if 0 in shape:
        return True
    expected = 1
    for n, step in zip(reversed(shape), reversed(stride)):
        if n != 1 and step != expected:
            return False
        expected *= n
    return True


def _check_within_a_member(size: tuple, stride: tuple, offset: int, member: tuple) -> None:
    """PyTorch's check of ``as_strided`` under vmap (and its error): the view of ``size``,
    ``stride`` and ``offset`` reaches no memory before or past what the first member
    (``member``: its shape, strides and storage offset) spans, so that the batch's view, each
    member's moved by its steps of the batch dim, lies within the storage."""
    reach = span(size, stride, 0)  # (0: no entries; the strides' own checks come later)
    if not reach:
        return
    shape, steps, base = member
    spanned = span(shape, steps, 0)
    call = f"result = tensor.as_strided({list(size)}, {list(stride)}, {offset}) can access "
    advice = (
        "This is not supported inside of vmap, please try to rewrite the `as_strided` call as "
        "a sequence of PyTorch view operations"
    )
    if not spanned:
        raise RuntimeError(
            f"{call}memory outside of `tensor`. `tensor` has no storage but the passed-in "
            f"(size, stride, storage_offset) imply a result with some storage. {advice}"
        )
    if offset < base or offset + reach > base + spanned:
        raise RuntimeError(
            f"{call}memory outside of `tensor`. `result` can access some memory in range "
            f"[{offset}, {offset + reach}], but `tensor` can only access some memory in range "
            f"[{base}, {base + spanned}]. {advice}"
        )


def _stand_in(x: Any) -> Any:
    """Zeros of a tensor's (one member's) shape and dtype, on its device; anything else as it
    is: for running an op's checks of shapes and dtypes without reading values."""
    if not isinstance(x, Tensor):
        return x
    return creation.zeros(x.shape, dtype=x.dtype, device=x.device)


def _divided(op: Callable, x: Tensor, y: Any) -> Tensor:
    """``op(x, y)`` with a batched operand: promoted as one member's operands are (a batched
    0-d member promotes as a 0-d tensor, not as its 1-d batch), then run on the batches,
    their members lined up as broadcasting lines up the members' shapes."""
    x, y = x._operands(y)
    level = level_of((x, y))
    values, batched = unwrap((x, y), level)
    return wrap(op(*pad_to_rank(values, batched)), level)


def _left_operand(right: BatchedTensor, left: Any) -> Tensor:
    """The left operand of a reflected operator: a tensor as it is, a number (``7 % x``) as a
    0-d tensor of the dtype the two promote to."""
    return left if isinstance(left, Tensor) else right._reflected(left)


_MIRRORED = {  # by the ufuncs' names, which Tensor._compare takes
    "less": "greater",
    "greater": "less",
    "less_equal": "greater_equal",
    "greater_equal": "less_equal",
}


def _refuse_in_place(name: str) -> Callable:
    """A batched tensor's in-place method ``name`` that is not written through
    ``BatchedTensor._write`` (``as_strided_``, ``resize_``, ``apply_``): it raises, naming
    the op."""

    def in_place(self: BatchedTensor, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            f"vmap: {name} writes into a batched tensor in place, which vmap does not batch; "
            "compute the new tensor out of place instead (y = x + 1, sg.where(mask, v, x), "
            "x.masked_fill(mask, v))"
        )

    in_place.__name__ = name
    return in_place


def _in_place_view(name: str) -> Callable:
    """A batched tensor's in-place view op ``name`` (``unsqueeze_``, ``transpose_``, ...), as
    PyTorch's: the plain batch under it becomes, in place, the batch of the members' views
    (through ``restride_``, so it stays a view of the same memory: the tensor vmap was given
    changes shape with it where its batch dim is in front), and each level's member shape
    follows."""
    op = getattr(Tensor, name[:-1])

    def in_place(self: BatchedTensor, *args: Any, **kwargs: Any) -> Tensor:
        chain, plain = [], self  # the batched tensors from self inwards, and the plain batch
        while type(plain) is BatchedTensor:
            chain.append(plain)
            plain = plain.value

        def batch_view(old: Tensor) -> Tensor:
            for t in reversed(chain):
                old = wrap(old, t.level)
            out = op(old, *args, **kwargs)
            for _ in chain:
                out = out.value
            return out

        given = _given.get(id(plain)) if len(chain) == 1 else None
        if given is not None:  # the tensor vmap was given, its batch dim not in front, first
            _, x, bdim = given  # (so that a leaf raises PyTorch's error before any change)
            moved = _moved_batch_dim(name, plain.shape[1:], bdim, args, kwargs)
            restride_(x, name, lambda old: batch_view(old.movedim(bdim, 0)).movedim(0, moved))
            _given[id(plain)] = (plain, x, moved)
        restride_(plain, name, batch_view)
        for dims, t in enumerate(reversed(chain), 1):  # the innermost has one batch dim
            t.array = _Logical(plain.shape[dims:], plain.dtype)
        return self

    in_place.__name__ = name
    return in_place


for _name in ("squeeze_", "unsqueeze_", "transpose_", "swapaxes_", "swapdims_", "t_"):
    setattr(BatchedTensor, _name, _in_place_view(_name))


def _moved_batch_dim(name: str, member_shape: tuple, bdim: int, args: tuple, kwargs: dict) -> int:
    """Where the batch dim of a tensor vmap was given (at ``bdim``) is after its members'
    in-place view op ``name``: PyTorch's rules keep it between the same member dims (a dim
    unsqueezed at ``bdim`` goes after it)."""
    dim = args[0] if args else kwargs.get("dim")
    if name == "unsqueeze_":
        return bdim + (dim % (len(member_shape) + 1) < bdim)
    if name == "squeeze_" and member_shape:
        rank = len(member_shape)
        dims = range(rank) if dim is None else (dim,) if isinstance(dim, int) else dim
        squeezed = {d % rank for d in dims if member_shape[d] == 1}
        return bdim - sum(d < bdim for d in squeezed)
    return bdim  # (transposes swap member dims only)


def _written_out_of_place(name: str) -> Callable:
    """A batched tensor's in-place method ``name`` whose Tensor version writes by its own
    route (``index_add_``, ``lerp_``, ``absolute_``): each member becomes the out-of-place
    method's result, through ``BatchedTensor._apply_``."""
    method = name[:-1]

    def in_place(self: BatchedTensor, *args: Any, **kwargs: Any) -> Tensor:
        return self._apply_(name, lambda t: getattr(t, method)(*args, **kwargs))

    in_place.__name__ = name
    return in_place


for _name in ("index_add_", "lerp_", "absolute_"):
    setattr(BatchedTensor, _name, _written_out_of_place(_name))

# Tensor's in-place methods that BatchedTensor._write does not batch, refused on a batch: all
# but the arithmetic methods (the operators, ``+=``, ``x[i] = v``, go through it too),
# fill_, zero_, copy_, the random fills (drawn as vmap's randomness says, then written
# through _copy_from), the in-place forms of out-of-place ops (``clamp_``,
# ``masked_fill_``: see tensor.IN_PLACE_FORMS) and the others Tensor writes through
# ``_apply_`` or setitem (index_put_, the comparisons, fill_diagonal_), besides those
# BatchedTensor has (index_add_, the in-place view changes); not requires_grad_, which sets
# a flag (scratchgrad.func.grad sets it on batched leaves)
_WRITTEN = {"requires_grad_", "add_", "sub_", "subtract_", "mul_", "div_", "fill_", "zero_"}
_WRITTEN |= {"uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_"}
_WRITTEN |= {"log_normal_", "cauchy_", "index_put_", "put_", "masked_scatter_", "index_reduce_"}
_WRITTEN |= {"float_power_", "eq_", "ne_", "not_equal_", "lt_", "less_", "le_", "less_equal_"}
_WRITTEN |= {"gt_", "greater_", "ge_", "greater_equal_", "fill_diagonal_"}
for _name in [n for n in dir(Tensor) if n.endswith("_") and not n.startswith("_")]:
    if _name not in _WRITTEN | IN_PLACE_FORMS and _name not in BatchedTensor.__dict__:
        setattr(BatchedTensor, _name, _refuse_in_place(_name))


def wrap(value: Tensor, level: int) -> BatchedTensor:
    """A batched tensor of ``level`` over ``value`` (batch dim first)."""
    t = object.__new__(BatchedTensor)
    t.array = _Logical(value.shape[1:], value.dtype)
    t._grad, t._requires_grad, t._ctx, t._counter, t._hooks = None, False, None, None, ()
    t.value, t.level = value, level
    return t


def level_of(args: Any) -> int:
    """The newest vmap level among ``args`` (0: none is batched)."""
    level = 0
    for a in args:
        if type(a) is BatchedTensor and a.level > level:
            level = a.level
    return level


def _depth(t: Any) -> int:
    """How many vmap levels batch ``t`` (the batch dims in front of its members')."""
    return _plain(t)[1]


def _plain(t: Any) -> tuple[Any, int]:
    """The plain batch under ``t`` (``t`` itself if not batched), and how many vmap levels'
    batch dims lead it (``t``'s own dims are its last ones)."""
    depth = 0
    while type(t) is BatchedTensor:
        t, depth = t.value, depth + 1
    return t, depth


def unwrap(args: Any, level: int) -> tuple[list, list[bool]]:
    """Each argument's batch (batch dim first) where it is batched at ``level``, else itself;
    and which were."""
    values, batched = [], []
    for a in args:
        is_batched = type(a) is BatchedTensor and a.level == level
        values.append(a.value if is_batched else a)
        batched.append(is_batched)
    return values, batched


def batch_size(values: Any, batched: Any) -> int:
    return next(v.shape[0] for v, b in zip(values, batched) if b)


def all_batched(args: Any) -> tuple[int, list]:
    """The newest vmap level among ``args``, and each argument's batch there: an unbatched
    tensor repeated for every member (a view), anything else (a number, None) as it is."""
    level = level_of(args)
    values, batched = unwrap(args, level)
    size = batch_size(values, batched)
    return level, [
        at_front(v, size) if isinstance(v, Tensor) and not b else v for v, b in zip(values, batched)
    ]


def at_front(t: Tensor, size: int) -> Tensor:
    """``t`` repeated ``size`` times along a new first dim (a broadcast view, not a copy)."""
    return t.unsqueeze(0).expand(size, *t.shape)


def pad_to_rank(values: Any, batched: Any) -> list:
    """Batches with size-1 dims after the batch dim, so each has the rank of the largest
    member: broadcasting then lines members up as it lines up unbatched operands."""
    rank = max((v.ndim - b for v, b in zip(values, batched) if isinstance(v, Tensor)), default=0)
    return [
        v.reshape(v.shape[0], *(1,) * (rank - v.ndim + 1), *v.shape[1:])
        if b and v.ndim - 1 < rank
        else v
        for v, b in zip(values, batched)
    ]


def dispatch(cls: type, args: tuple, kwargs: dict) -> Tensor | tuple | None:
    """Run ``cls`` on batched arguments through its batching rule; None if none is batched.

    Arguments batched at older levels only are passed on as they are: the rule's own calls
    dispatch them in turn, one level at a time.
    """
    level = level_of(args)
    if not level:
        return None
    rule = next((RULES[k] for k in cls.__mro__ if k in RULES), None)  # or a parent's rule
    if rule is None and not cls.builtin:  # a user's Function
        if not cls.generate_vmap_rule:
            raise RuntimeError(
                f"vmap: you tried to vmap over {cls.__name__}, but it does not have vmap "
                "support: set its generate_vmap_rule = True, as in PyTorch"
            )
        rule = _member_by_member
    if rule is None:
        shapes = ", ".join(str(tuple(a.shape)) for a in args if isinstance(a, Tensor))
        raise RuntimeError(
            f"vmap: {cls.__name__} has no batching rule (arguments of shapes {shapes}); add "
            "one to scratchgrad.func.rules.RULES, or call the function on one example at a time"
        )
    values, batched = unwrap(args, level)
    out = rule(cls, values, batched, dict(kwargs))
    # a Function with several results (qr's Q and R) gives a tuple: each one batched
    return tuple(wrap(o, level) for o in out) if isinstance(out, tuple) else wrap(out, level)


def _member_by_member(cls: type, values: list, batched: list, kwargs: dict) -> Any:
    """The rule of a user's Function with ``generate_vmap_rule = True``: applied to each batch
    member, the results stacked. Each member's node runs the Function's own backward, so a
    custom gradient (a straight-through estimator) holds under ``vmap(grad(f))`` too."""
    size = batch_size(values, batched)
    outs = [
        cls.apply(*(v[i] if b else v for v, b in zip(values, batched)), **kwargs)
        for i in range(size)
    ]
    if isinstance(outs[0], tuple):
        return tuple(stack(list(member)) for member in zip(*outs))
    return stack(outs)


def draw(
    sample: Callable[..., Any], shape: tuple, into: Tensor | None = None, params: tuple = ()
) -> Tensor:
    """A random draw of ``shape`` inside vmap, as the running vmaps' ``randomness`` says:
    "different" adds that vmap's batch dim to the draw, "same" does not, "error" refuses.
    ``sample(full_shape, *arrays)`` makes it, from the arrays of ``params`` (the tensors the
    draw reads, of ``shape``: poisson's rates) spread over those batch dims, so each member
    draws from its own. As PyTorch's, the vmaps are asked newest first, and refuse "same"
    where they batch ``params`` (one draw cannot take each member's), and "different" where
    they do not batch ``into``, the tensor an in-place fill writes the draw into (its members
    would all take one draw)."""
    levels = _drawing_levels(into, params)
    sizes = tuple(size for _, size in levels)
    arrays = [_spread(p, levels).expand(*sizes, *shape).array for p in params]
    out = Tensor._make(sample((*sizes, *shape), *arrays))
    for level, _ in levels:  # the oldest level's batch dim comes first
        out = wrap(out, level)
    return out


def _drawing_levels(into: Tensor | None, params: tuple) -> list[tuple[int, int]]:
    """(level, batch size) of each running vmap that draws per member, oldest first, after
    the checks of ``draw``."""
    batching = set().union(*map(_levels, params))
    levels = []
    for level, size, randomness in reversed(_active):
        if randomness == "error":
            raise RuntimeError(
                "vmap: called a random operation, but randomness='error' (the default); pass "
                "randomness='different' for a draw per member or 'same' for one draw for all"
            )
        if randomness == "same" and level in batching:
            raise RuntimeError(
                "vmap: a random draw from a batched tensor (bernoulli's probabilities, "
                "poisson's rates) with randomness='same' is not supported, as in PyTorch; use "
                "randomness='different'"
            )
        if randomness == "different":
            if into is not None and level not in _levels(into):
                raise RuntimeError(
                    "vmap: cannot ask for different in-place randomness on an unbatched "
                    "tensor (its members would all take the same draws, as PyTorch says); "
                    "fill a batched tensor, or use randomness='same'"
                )
            levels.append((level, size))
    return levels[::-1]


def _levels(t: Tensor) -> set[int]:
    """The vmap levels that batch ``t`` (a batch of an older level's batches is nested)."""
    levels = set()
    while type(t) is BatchedTensor:
        levels.add(t.level)
        t = t.value
    return levels


def _spread(t: Tensor, levels: list) -> Tensor:
    """The plain batch under ``t``'s levels (the oldest one's dim first), with a dim for each
    of ``levels`` (oldest first; they include ``t``'s): size 1 where ``t`` is not batched."""
    value = t.detach()
    while type(value) is BatchedTensor:
        value = value.value
    own = _levels(t)
    sizes = [size if level in own else 1 for level, size in levels]
    return value.reshape(*sizes, *value.shape[len(own) :])


def vmap(
    func: Callable,
    in_dims: int | None | tuple = 0,
    out_dims: int | tuple = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """``func`` mapped over a dim of its inputs, as ``torch.func.vmap``: the result of calling
    it on each slice, stacked along ``out_dims``, computed in one pass of batched operations.

    ``in_dims`` gives each positional argument's batch dim (None: the same for every member),
    as one int for all or a tuple with an entry per argument (which may itself be a tuple,
    list or dict for a tuple, list or dict argument); keyword arguments are not batched.
    ``randomness`` says what random draws inside ``func`` do: "error" refuses them, "same"
    draws once for the whole batch, "different" draws for each member. ``chunk_size`` runs
    the batch that many members at a time (less memory, more calls). vmaps nest, and compose
    with ``grad``, ``vjp``, ``jacrev`` and ``functional_call``.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> vmap(lambda row: row @ row)(x)
    tensor([ 5., 25.])
    >>> vmap(lambda a, b: a * b, in_dims=(0, None))(x, sg.tensor([10.0, 1.0]))
    tensor([[10.,  2.],
            [30.,  4.]])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(  # (PyTorch's type)
            f"vmap: randomness must be 'error', 'different' or 'same', got {randomness!r}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be None or a positive int, got {chunk_size!r}")

    @functools.wraps(func)
    def batched(*args: Any, **kwargs: Any) -> Any:
        leaves, spec = tree_flatten(args)
        dims = _leaf_dims(in_dims, args, len(leaves))
        size = _size(leaves, dims)
        if chunk_size is None or chunk_size >= size:
            return _call(func, leaves, dims, spec, kwargs, size, out_dims, randomness)
        outs = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            chunk = [x if d is None else x.narrow(d, start, n) for x, d in zip(leaves, dims)]
            outs.append(_call(func, chunk, dims, spec, kwargs, n, out_dims, randomness))
        return _join(outs, out_dims)

    return batched


def _call(func, leaves, dims, spec, kwargs, size, out_dims, randomness) -> Any:
    level = _active[-1][0] + 1 if _active else 1
    inputs = [x if d is None else wrap(_at_front(x, d), level) for x, d in zip(leaves, dims)]
    _active.append((level, size, randomness))
    function._vmap_dispatch, creation._vmap_draw = dispatch, draw
    try:
        out = func(*tree_unflatten(inputs, spec), **kwargs)
    finally:
        _active.pop()
        if not _active:
            function._vmap_dispatch = creation._vmap_draw = None
            _given.clear()
    outs, out_spec = tree_flatten(out)
    dims = _leaf_dims(out_dims, out if isinstance(out, tuple) else (out,), len(outs), "out_dims")
    return tree_unflatten([_unbatched(t, level, size, d) for t, d in zip(outs, dims)], out_spec)


# id(batch) -> (batch, x, dim) while vmap runs, for each batch that is x (a tensor vmap was
# given) with its batch dim moved from dim to the front: the members' in-place view ops
# (unsqueeze_, ...) change x too, as PyTorch's (whose batch is x itself)
_given: dict[int, tuple] = {}


def _at_front(x: Tensor, dim: int) -> Tensor:
    if dim % x.ndim == 0:
        return x
    out = x.movedim(dim, 0)
    _given[id(out)] = (out, x, dim % x.ndim)
    return out


def _unbatched(t: Any, level: int, size: int, dim: int | None) -> Tensor:
    """An output of ``func`` as a plain batch, its batch dim at ``dim``; an output that does
    not depend on the batch is repeated for every member, as torch.func does, or returned
    once where ``dim`` is None."""
    if not isinstance(t, Tensor):
        raise ValueError(
            f"vmap: the function must return tensors (or tuples, lists, dicts of them), "
            f"got {type(t).__name__}"
        )
    batched = type(t) is BatchedTensor and t.level == level
    if dim is None:
        if batched:
            raise ValueError(
                "vmap: the function can not return a batched tensor (one that depends on the "
                "batch) where out_dims is None"
            )
        return t
    value = t.value if batched else at_front(t, size)
    return value if dim % value.ndim == 0 else value.movedim(0, dim)


def _join(outs: list, out_dims: Any) -> Any:
    flats = [tree_flatten(out) for out in outs]
    _, spec = flats[0]
    columns = zip(*(leaves for leaves, _ in flats))
    first = outs[0]
    dims = _leaf_dims(
        out_dims, first if isinstance(first, tuple) else (first,), len(flats[0][0]), "out_dims"
    )
    return tree_unflatten(
        [col[0] if d is None else cat(list(col), d) for col, d in zip(columns, dims)], spec
    )


def _leaf_dims(dims: Any, args: tuple, count: int, name: str = "in_dims") -> list:
    """One batch dim (or None) per leaf of ``args``, from an int, None, or a tuple with an
    entry per argument (itself an int, None, or a tree shaped like the argument)."""
    if dims is None or isinstance(dims, int):
        return [dims] * count
    if not isinstance(dims, (tuple, list)) or len(dims) != len(args):
        raise ValueError(
            f"vmap: {name} must be an int, None, or a tuple with one entry per "
            f"{'argument' if name == 'in_dims' else 'output'} ({len(args)}), got {dims!r}"
        )
    out = []
    for arg, d in zip(args, dims):
        leaves, _ = tree_flatten(arg)
        if d is None or isinstance(d, int):
            out += [d] * len(leaves)
        else:
            sub, _ = tree_flatten(d)
            if len(sub) != len(leaves):
                raise ValueError(
                    f"vmap: the {name} entry {d!r} does not match the structure of its argument"
                )
            out += sub
    return out


def _size(leaves: list, dims: list) -> int:
    sizes = set()
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        if not isinstance(x, Tensor):
            raise ValueError(
                f"vmap: input {i} is a {type(x).__name__}, not a tensor, but has in_dim {d}; "
                "give it in_dim None"
            )
        if not -x.ndim <= d < x.ndim:
            raise ValueError(
                f"vmap: in_dim {d} is out of range for input {i} of shape {tuple(x.shape)}"
            )
        sizes.add(x.shape[d])
    if not sizes:
        raise ValueError("vmap: at least one input must be batched (every in_dim is None)")
    if len(sizes) > 1:
        raise ValueError(
            f"vmap: the batched inputs have different sizes along their in_dims: {sorted(sizes)}"
        )
    return sizes.pop()


from scratchgrad.func.rules import RULES  # noqa: E402  (the rules build on the helpers above)
