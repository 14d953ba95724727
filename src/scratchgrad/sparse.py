"""Sparse COO tensors, after PyTorch's ``torch.sparse_coo`` layout: the ``indices`` of the
stored entries, a (sparse_dim, nnz) int64 tensor, and their ``values``, a (nnz, ...) tensor; no
dense copy is ever kept. What a graph network needs is here: ``sparse_coo_tensor``,
``Tensor.to_sparse``, ``coalesce``, ``to_dense``, a sparse matrix times a dense one (``mm``,
``spmm``, ``matmul``, ``@``, differentiable in both operands), ``sum`` and scaling by a number;
and what sparse gradients need: ``embedding(..., sparse=True)``'s gradient (``Embedding``, one
row per index looked up) and sums of them (``+``, which concatenates, as PyTorch accumulates).
Every other op on a sparse tensor raises an error naming the op and the sparse layout, as
PyTorch does for the ops its sparse kernels lack, rather than compute on a dense stand-in.
"""

from __future__ import annotations

import math
import re
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.dtypes import sparse_coo
from scratchgrad.tensor import Tensor, cat, wrap_dim

__all__ = ["DoubleTensor", "FloatTensor", "SparseTensor", "mm", "sparse_coo_tensor", "spmm", "sum"]


def _unsupported(name: str) -> str:
    return (
        f"{name}: not supported on sparse tensors (layout=scratchgrad.sparse_coo); call "
        ".to_dense() first"
    )


class _NoDenseArray:
    """What ``.array`` holds on a sparse tensor: its shape and dtype (which dense code may read
    to check its operands), and nothing NumPy can compute with, so that a dense op reached by
    accident (``torch.add(sparse, x)``) raises instead of broadcasting a stand-in."""

    __slots__ = ("shape", "dtype", "ndim")
    base = None  # (the engine asks whether a gradient is a view before adopting it as .grad)

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape, self.dtype, self.ndim = shape, dtype, len(shape)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(_unsupported("converting to a dense array"))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise TypeError(_unsupported(ufunc.__name__))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise TypeError(_unsupported(func.__name__))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # NumPy's probes (__array_interface__, ...): not there
            raise AttributeError(name)
        raise TypeError(_unsupported(name))

    def _refuse(self, *args: Any) -> Any:
        raise TypeError(_unsupported("an array operation"))

    __getitem__ = __setitem__ = __len__ = __iter__ = __bool__ = __float__ = __int__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse


class SparseTensor(Tensor):
    """A tensor in the sparse COO layout, made by ``sparse_coo_tensor`` or ``to_sparse``.

    >>> import scratchgrad as sg
    >>> s = sg.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
    >>> s.indices(), s.values(), s.is_sparse
    (tensor([[0, 1],
            [1, 0]]), tensor([2., 3.]), True)
    >>> s @ sg.ones(2, 1)
    tensor([[2.],
            [3.]])
    """

    # _index: the (sparse_dim, nnz) int64 Tensor; _value: the (nnz, ...) Tensor, which may be
    # in a graph; _coalesced: the indices are sorted and unique; _leaf: _value is this
    # tensor's own leaf (made with requires_grad=True), so its gradient is this one's
    __slots__ = ("_index", "_value", "_coalesced", "_leaf")

    is_sparse = property(lambda self: True)
    layout = property(lambda self: sparse_coo)
    __format__ = object.__format__

    @staticmethod
    def _build(index: Tensor, value: Tensor, size: tuple, coalesced: bool) -> SparseTensor:
        global made_any
        _refuse_recording("making a sparse tensor")
        made_any = True
        t = object.__new__(SparseTensor)
        t.array = _NoDenseArray(tuple(size), value.dtype)
        t._ctx, t._counter, t._hooks = None, None, ()
        # (at most one entry is coalesced, as PyTorch marks it)
        t._index, t._value, t._leaf = index, value, False
        t._coalesced = coalesced or index.shape[1] <= 1
        return t

    def _with_values(self, value: Tensor) -> SparseTensor:
        return SparseTensor._build(self._index, value, self.shape, self._coalesced)

    # ---- what a sparse tensor is ----------------------------------------------------------

    @property
    def device(self) -> backend.device:
        return self._value.device

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    _requires_grad = requires_grad  # (the slot that Function.apply reads, on dense tensors)

    @property
    def is_leaf(self) -> bool:
        return self._leaf or not self._value.requires_grad

    @property
    def grad_fn(self) -> Any:
        return None if self.is_leaf else self._value.grad_fn

    @property
    def grad(self) -> SparseTensor | None:
        """A leaf's gradient, as PyTorch's: a coalesced sparse tensor at this one's entries
        (the gradient of an entry depends only on where it is, so duplicates share it)."""
        if not self._leaf or self._value.grad is None:
            return None
        index, value = _coalesced_parts(self._index, self._value.grad, self.shape, "first")
        return SparseTensor._build(index, value, self.shape, True)

    @grad.setter
    def grad(self, value: None) -> None:
        if value is not None:
            raise RuntimeError(_unsupported("assigning .grad"))
        self._value.grad = None

    _grad = grad  # (the slot that the optimizers read, on dense tensors)

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        if not self.is_leaf:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables (a sparse tensor "
                "whose values are in a graph is not a leaf)"
            )
        self._value = self._value.detach().requires_grad_(requires_grad)
        self._leaf = requires_grad
        return self

    @property
    def data(self) -> SparseTensor:
        return self.detach()

    def detach(self) -> SparseTensor:
        return self._with_values(self._value.detach())

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)

    def is_complex(self) -> bool:
        return self._value.is_complex()

    def is_floating_point(self) -> bool:
        return self._value.is_floating_point()

    def sparse_dim(self) -> int:
        return self._index.shape[0]

    def dense_dim(self) -> int:
        return len(self.shape) - self._index.shape[0]

    def _nnz(self) -> int:
        return self._index.shape[1]

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self) -> Tensor:
        return self._index

    def _values(self) -> Tensor:
        """The (nnz, ...) values as stored, out of the graph, as PyTorch's (through them, the
        copies of a repeated index of a leaf could get different gradients, which its
        ``.grad``, one value per index, cannot hold)."""
        return self._value.detach()

    def indices(self) -> Tensor:
        """The (sparse_dim, nnz) indices of a coalesced tensor."""
        self._check_coalesced("indices")
        return self._index

    def values(self) -> Tensor:
        """The (nnz, ...) values of a coalesced tensor (differentiable)."""
        self._check_coalesced("values")
        return self._value

    def _check_coalesced(self, what: str) -> None:
        if not self._coalesced:
            raise RuntimeError(
                f"Cannot get {what} on an uncoalesced tensor, please call .coalesce() first"
            )

    # ---- conversions ----------------------------------------------------------------------

    def coalesce(self) -> SparseTensor:
        """The same tensor with its indices sorted and the values of repeated ones summed."""
        if self._coalesced:
            return self
        index, value = _coalesced_parts(self._index, self._value, self.shape, "sum")
        return SparseTensor._build(index, value, self.shape, True)

    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        """The dense tensor, repeated entries summed (differentiable in the values)."""
        value = self._value if dtype is None else self._value.to(dtype)
        sparse_shape = self.shape[: self.sparse_dim()]
        flat = value.new_zeros((math.prod(sparse_shape),) + tuple(value.shape[1:]))
        flat = flat.index_add(0, _linear(self._index, sparse_shape), value)
        return flat.reshape(self.shape)

    def to_sparse(self, sparse_dim: int | None = None) -> SparseTensor:
        if sparse_dim not in (None, self.sparse_dim()):
            raise RuntimeError(_unsupported("to_sparse with another sparse_dim"))
        return self

    def to(self, *args: Any, **kwargs: Any) -> SparseTensor:
        """The tensor with its values moved or cast (``dtype``, ``device``), as ``Tensor.to``."""
        value = self._value.to(*args, **kwargs)
        index = self._index.to(value.device)
        return SparseTensor._build(index, value, self.shape, self._coalesced)

    def cpu(self) -> SparseTensor:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> SparseTensor:
        return self.to("cuda" if device is None else device)

    def double(self) -> SparseTensor:
        return self.to(backend.float64)

    def float(self) -> SparseTensor:
        return self.to(backend.float32)

    def clone(self) -> SparseTensor:
        return self._with_values(self._value.clone())

    def zero_(self) -> SparseTensor:
        """In place: no entries left (nnz 0), as PyTorch's (``zero_grad(set_to_none=False)``
        on a sparse gradient). A leaf that requires grad still does (and, as a dense one, is
        refused outside ``no_grad``); values in a graph stay in it."""
        if self._leaf:
            if is_grad_enabled():
                raise RuntimeError(
                    "zero_: a leaf Variable that requires grad is being used in an in-place "
                    "operation. Wrap the update in scratchgrad.no_grad()"
                )
            value = self._value.detach()[:0].requires_grad_()
        else:
            value = self._value[:0]
        self._index, self._value, self._coalesced = self._index[:, :0], value, True
        return self

    # ---- arithmetic -----------------------------------------------------------------------

    def mm(self, mat2: Tensor) -> Tensor:
        return mm(self, mat2)

    def matmul(self, other: Tensor) -> Tensor:
        if isinstance(other, Tensor) and other.ndim == 1:  # matrix @ vector
            return mm(self, other.unsqueeze(1)).squeeze(1)
        return mm(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other: Any) -> Tensor:
        raise RuntimeError(_unsupported("matmul of a dense and a sparse matrix (dense @ sparse)"))

    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        if keepdim:
            raise RuntimeError(_unsupported("sum with keepdim=True"))
        return sum(self, dim, dtype=dtype)

    def mul(self, other: Any) -> SparseTensor:
        """The tensor times a number (or a 0-d dense tensor), still sparse."""
        _check_scalar("mul", other)
        return self._with_values(self._value * other)

    def div(self, other: Any) -> SparseTensor:
        """The tensor divided by a number (or a 0-d dense tensor), still sparse: the values
        divided, as PyTorch's (not times the reciprocal, which can differ in the last bit)."""
        _check_scalar("div", other)
        return self._with_values(self._value / other)

    def neg(self) -> SparseTensor:
        return self._with_values(-self._value)

    def add(self, other: Tensor) -> Tensor:
        """Sparse plus sparse: the entries of both, concatenated (uncoalesced), as PyTorch sums
        two sparse gradients (its ``+`` merges two coalesced tensors instead: the same sum).
        Sparse plus dense, in either order: dense (PyTorch takes only dense + sparse).

        >>> import scratchgrad as sg
        >>> s = sg.sparse_coo_tensor([[1]], [2.0], (3,))
        >>> (s + s)._indices(), (s + sg.ones(3))
        (tensor([[1, 1]]), tensor([1., 3., 1.]))
        """
        if not isinstance(other, Tensor):
            raise RuntimeError(_unsupported(f"__add__ with a {type(other).__name__}"))
        if tuple(other.shape) != tuple(self.shape):
            raise RuntimeError(
                f"add: a sparse tensor of shape {tuple(self.shape)} and a tensor of shape "
                f"{tuple(other.shape)}: the shapes must be equal"
            )
        if not other.is_sparse:
            return other + self.to_dense()
        if other.sparse_dim() != self.sparse_dim():
            raise RuntimeError(
                "add: expected 'self' and 'other' to have same density, but 'self' has "
                f"{self.sparse_dim()} sparse dimensions while 'other' has {other.sparse_dim()} "
                "sparse dimensions"
            )
        xp = backend.namespace(self._index.array)
        index = Tensor._make(xp.concatenate([self._index.array, other._index.array], axis=1))
        value = cat([self._value, other._value])
        return SparseTensor._build(index, value, self.shape, False)

    __add__ = __radd__ = add
    __mul__ = __rmul__ = multiply = mul
    __truediv__ = true_divide = divide = div
    __neg__ = negative = neg

    def __repr__(self) -> str:
        suffixes = [f"size={tuple(self.shape)}", f"nnz={self._nnz()}"]
        if self.dtype not in (backend.default_float, backend.int64, backend.bool_):
            suffixes.append(f"dtype={self.dtype}")
        suffixes.append("layout=scratchgrad.sparse_coo")
        if self.grad_fn is not None:
            suffixes.append(f"grad_fn=<{self.grad_fn.name()}>")
        elif self.requires_grad:
            suffixes.append("requires_grad=True")
        return (
            "tensor(indices="
            + _part_repr(self._index).replace("\n", "\n" + " " * 15)
            + ",\n       values="
            + _part_repr(self._value).replace("\n", "\n" + " " * 14)
            + ",\n       "
            + ", ".join(suffixes)
            + ")"
        )

    __str__ = __repr__


def _part_repr(part: Tensor) -> str:
    """The indices or values as PyTorch prints them in a sparse tensor's repr: no dtype of
    their own, no graph, and their size when empty."""
    text = re.sub(r",\s*dtype=scratchgrad\.\w+\)$", ")", repr(part.detach()))
    if part.numel() == 0 and ", size=" not in text:
        text = f"{text[:-1]}, size={tuple(part.shape)})"
    return text


def _check_scalar(op: str, other: Any) -> None:
    if isinstance(other, Tensor) and (other.is_sparse or other.ndim != 0):
        raise RuntimeError(
            _unsupported(f"{op} by a tensor of shape {tuple(other.shape)} (only a scalar)")
        )


# Whether any sparse tensor was made in this process: the optimizers look for sparse gradients
# only then, so that dense training pays one test per parameter group
made_any = False


def _refuse_recording(what: str) -> None:
    """scratchgrad.jit cannot record sparse tensors: their indices are read by Python (the
    rows a product adds into), so a replay would keep the recorded ones."""
    if capture_hook.recorder is not None:
        capture_hook.recorder.refuse(
            f"{what} (sparse tensors' indices)", "Use dense tensors inside the step"
        )


# The object-level names a sparse tensor keeps from Tensor; every other public method and
# operator of Tensor that SparseTensor does not define raises, naming itself.
_KEPT = {"__new__", "__init__", "__hash__", "__init_subclass__", "__class_getitem__"}


def _refusing(name: str) -> Any:
    def refuse(self: SparseTensor, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(_unsupported(name))

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def _refuse_the_rest() -> None:
    defined = set(vars(SparseTensor)) | _KEPT
    for cls in Tensor.__mro__[:-1]:
        for name, attr in vars(cls).items():
            public = not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
            plain = callable(attr) and not isinstance(attr, (staticmethod, classmethod, type))
            if public and plain and name not in defined:
                setattr(SparseTensor, name, _refusing(name))
                defined.add(name)


_refuse_the_rest()


def _linear(index: Tensor, sparse_shape: tuple) -> Tensor:
    """Each entry's position in the row-major flattening of the sparse dims."""
    xp = backend.namespace(index.array)
    if not sparse_shape:  # no sparse dims: every entry is at the one place
        return Tensor._make(xp.zeros(index.shape[1], backend.int64))
    return Tensor._make(xp.ravel_multi_index(tuple(index.array), sparse_shape))


def _coalesced_parts(index: Tensor, value: Tensor, shape: tuple, duplicates: str) -> tuple:
    """Sorted unique indices and their values: the ``sum`` of each index's values (coalesce),
    or the ``first`` of them (a leaf's gradient, the same at each copy of an index)."""
    xp = backend.namespace(index.array)
    sparse_shape = shape[: index.shape[0]]
    unique, first, inverse = xp.unique(
        _linear(index, sparse_shape).array, return_index=True, return_inverse=True
    )
    if sparse_shape:
        places = xp.stack(xp.unravel_index(unique, sparse_shape))
    else:  # no sparse dims: one place
        places = xp.zeros((0, len(unique)))
    new_index = Tensor._make(places.astype(backend.int64))
    if duplicates == "first":
        return new_index, value[Tensor._make(first)]
    zeros = value.new_zeros((len(unique),) + tuple(value.shape[1:]))
    return new_index, zeros.index_add(0, Tensor._make(inverse.reshape(-1)), value)


def sparse_coo_tensor(
    indices: Any,
    values: Any,
    size: Any = None,
    *,
    dtype: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> SparseTensor:
    """A sparse COO tensor with ``values`` at ``indices`` (a (sparse_dim, nnz) integer tensor;
    ``values`` has nnz rows); ``size`` defaults to the smallest that holds the indices. The
    result is uncoalesced unless ``is_coalesced=True`` says so. Values that require grad keep
    their graph (``requires_grad=True`` changes nothing then); else ``requires_grad=True``
    makes a leaf whose ``.grad`` is sparse, as PyTorch's.
    Unlike PyTorch, indices outside ``size`` are always an error (NumPy would wrap negative
    ones silently).

    >>> import scratchgrad as sg
    >>> s = sg.sparse_coo_tensor([[0, 1, 0], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3))
    >>> s.coalesce().values(), s.to_dense()
    (tensor([4., 2.]), tensor([[0., 0., 4.],
            [2., 0., 0.]]))
    """
    index = indices.detach() if isinstance(indices, Tensor) else Tensor._from_data(indices)
    if index.dtype != backend.int64:
        index = index.to(backend.int64)
    value = values if isinstance(values, Tensor) else Tensor._from_data(values, dtype)
    if dtype is not None or device is not None:
        value = value.to(device=device, dtype=dtype)
    if value.ndim == 0:  # one entry, as PyTorch reads it
        value = value.reshape(1)
    index = index.to(value.device)
    if index.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(index.shape)}")
    if index.shape[1] != value.shape[0]:
        raise RuntimeError(
            "indices and values must have same nnz, but got nnz from indices: "
            f"{index.shape[1]}, nnz from values: {value.shape[0]}"
        )
    size = _size(index, value, size)
    # values in a graph keep it (requires_grad=True then changes nothing, as in PyTorch)
    leaf = requires_grad and not value.requires_grad
    if leaf:
        value = value.detach().requires_grad_()
    out = SparseTensor._build(index, value, size, bool(is_coalesced))
    out._leaf = leaf
    return out


def FloatTensor(indices: Any, values: Any, size: Any = None) -> SparseTensor:  # noqa: N802
    """``torch.sparse.FloatTensor(indices, values, size)``, the legacy constructor older GCN
    code calls: ``sparse_coo_tensor`` in float32."""
    return sparse_coo_tensor(indices, values, size, dtype=backend.float32)


def DoubleTensor(indices: Any, values: Any, size: Any = None) -> SparseTensor:  # noqa: N802
    """``torch.sparse.DoubleTensor``: ``sparse_coo_tensor`` in float64."""
    return sparse_coo_tensor(indices, values, size, dtype=backend.float64)


def _size(index: Tensor, value: Tensor, size: Any) -> tuple[int, ...]:
    """``size``, checked against the indices and values, or the smallest that holds them."""
    sparse_dim, dense_shape = index.shape[0], tuple(value.shape[1:])
    xp = backend.namespace(index.array)
    if size is None:
        lows = index.array.min(axis=1).tolist() if index.shape[1] else []
        for dim, low in enumerate(lows):  # (NumPy would wrap a negative index silently)
            if low < 0:
                raise RuntimeError(f"found negative index {low} for dim {dim}")
        top = index.array.max(axis=1) + 1 if index.shape[1] else xp.zeros(sparse_dim, int)
        return tuple(int(n) for n in top) + dense_shape
    size = tuple(int(n) for n in size)
    if len(size) != sparse_dim + len(dense_shape):
        raise RuntimeError(
            f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
            f"sparse_dim = {sparse_dim}, dense_dim = {len(dense_shape)}"
        )
    if size[sparse_dim:] != dense_shape:
        raise RuntimeError(
            f"values has incorrect size, expected {list(size[sparse_dim:])}, got "
            f"{list(dense_shape)}"
        )
    if index.shape[1]:
        low, high = index.array.min(axis=1), index.array.max(axis=1)
        for dim in range(sparse_dim):
            if low[dim] < 0 or high[dim] >= size[dim]:
                bad = int(low[dim] if low[dim] < 0 else high[dim])
                raise RuntimeError(
                    f"size is inconsistent with indices: for dim {dim}, size is {size[dim]} "
                    f"but found index {bad}"
                )
    return size


def to_sparse(x: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """``x`` in the sparse COO layout: its nonzero entries, coalesced (differentiable)."""
    if x.is_sparse:
        return x.to_sparse(sparse_dim)
    if sparse_dim not in (None, x.ndim) or x.ndim == 0:
        raise RuntimeError(
            f"to_sparse: only all dims sparse is supported, got sparse_dim={sparse_dim} for a "
            f"tensor of shape {tuple(x.shape)}"
        )
    xp = backend.namespace(x.array)
    where = xp.nonzero(x.array)  # row-major order: already coalesced
    index = Tensor._make(xp.stack(where).astype(backend.int64))
    value = x[tuple(Tensor._make(w) for w in where)]
    return SparseTensor._build(index, value, x.shape, True)


class SparseMM(Function):
    """``sparse @ dense`` for a (n, k) COO matrix given as its ``values`` and its ``rows`` and
    ``cols`` (static), without densifying: each entry adds its value times a row of ``dense``
    to a row of the result. Repeated indices add up, so an uncoalesced matrix needs no
    coalescing first."""

    @staticmethod
    def forward(ctx, values, dense, rows, cols, n_rows):
        ctx.save_for_backward(values, dense)
        ctx.rows, ctx.cols = rows, cols
        xp = backend.namespace(dense)
        out = xp.zeros((n_rows, dense.shape[1]), dense.dtype)
        backend.scatter_add(out, rows, values[:, None] * dense[cols])
        return out

    def name(self) -> str:
        return "MmBackward0"

    @staticmethod
    def backward(ctx, grad):
        d_values, d_dense = ctx.needs_input_grad
        values, dense = ctx.saved_tensors
        rows, cols = ctx.rows, ctx.cols
        # d out[r] / d values[e] = dense[cols[e]] at r = rows[e]; d dense is sparse^T @ grad
        return (
            (grad[Tensor._make(rows)] * dense[Tensor._make(cols)]).sum(-1) if d_values else None,
            SparseMM.apply(values, grad, rows=cols, cols=rows, n_rows=dense.shape[0])
            if d_dense
            else None,
        )


class Embedding(Function):
    """``weight[index]``, the rows of ``weight`` looked up, whose gradient for ``weight`` is a
    sparse tensor, as PyTorch's ``embedding(..., sparse=True)``: one row of values per index
    (the incoming gradient's rows, in order, repeated indices not summed), the rows looked up at
    ``padding_idx`` left out. ``scale_grad_by_freq`` fails in backward, as in PyTorch."""

    @staticmethod
    def forward(ctx, weight, index, padding_idx, scale_grad_by_freq):
        ctx.index, ctx.padding_idx, ctx.weight_shape = index, padding_idx, weight.shape
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return weight[index]

    @staticmethod
    def backward(ctx, grad):
        if ctx.scale_grad_by_freq:
            raise RuntimeError(
                "embedding_backward: scale_grad_by_freq not supported with sparse gradients"
            )
        rows = ctx.index.reshape(-1).astype(backend.int64)
        values = grad.reshape((rows.size, *ctx.weight_shape[1:]))
        if ctx.padding_idx is not None:
            kept = rows != ctx.padding_idx
            rows, values = rows[kept], values[Tensor._make(kept)]
        return SparseTensor._build(Tensor._make(rows[None]), values, ctx.weight_shape, False)


@autocast_policy("lower")
def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``torch.sparse.mm``: a sparse (n, k) matrix times a dense (k, m) one, a dense (n, m)
    result, differentiable in both (a dense ``mat1`` gives ``mat1.mm(mat2)``).

    >>> import scratchgrad as sg
    >>> s = sg.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
    >>> sg.sparse.mm(s, sg.tensor([[1.0], [10.0]]))
    tensor([[20.],
            [ 3.]])
    """
    if not mat1.is_sparse:
        if isinstance(mat2, Tensor) and mat2.is_sparse:
            raise RuntimeError(_unsupported("mm of a dense and a sparse matrix"))
        return mat1.mm(mat2)
    if not isinstance(mat2, Tensor) or mat2.is_sparse:
        raise RuntimeError(_unsupported(f"mm with a {type(mat2).__name__} second operand"))
    if mat1.ndim != 2 or mat1.sparse_dim() != 2 or mat2.ndim != 2:
        raise RuntimeError(
            f"mm: expected a 2-D sparse matrix and a 2-D dense one, got shapes "
            f"{tuple(mat1.shape)} (sparse) and {tuple(mat2.shape)}"
        )
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"mm: shapes {tuple(mat1.shape)} (sparse) and {tuple(mat2.shape)} are not aligned: "
            f"{mat1.shape[1]} != {mat2.shape[0]}"
        )
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(
            f"mm: expected tensors of the same dtype, but got: {mat1.dtype.name} != "
            f"{mat2.dtype.name}"
        )
    _refuse_recording("sparse.mm")
    index = mat1._indices().array
    return SparseMM.apply(mat1._value, mat2, rows=index[0], cols=index[1], n_rows=mat1.shape[0])


spmm = mm


def sum(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A001 (torch's name)
    """``torch.sparse.sum``: over all dims a dense 0-d tensor; over all sparse dims (and any
    dense ones) a dense tensor of the dense dims left, else a sparse tensor of the dims left
    (coalesced).

    >>> import scratchgrad as sg
    >>> s = sg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3))
    >>> sg.sparse.sum(s), sg.sparse.sum(s, 1).to_dense()
    (tensor(6.), tensor([1., 5.]))
    """
    if not input.is_sparse:
        return input.sum(dim, dtype=dtype)
    value = input._value if dtype is None else input._value.to(dtype)
    if dim is None:
        return value.sum()
    dims = [wrap_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    if len(set(dims)) < len(dims):
        repeated = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    sparse_dim = input.sparse_dim()
    dense_dims = [d for d in dims if d >= sparse_dim]
    if dense_dims:  # (dim d of the tensor is dim d - sparse_dim + 1 of the values)
        value = value.sum([d - sparse_dim + 1 for d in dense_dims])
    if len(dims) - len(dense_dims) == sparse_dim:
        return value.sum(0)
    kept = [d for d in range(input.ndim) if d not in dims]
    kept_sparse = [d for d in kept if d < sparse_dim]
    index = input._indices()[Tensor._make(backend.namespace(value.array).asarray(kept_sparse))]
    size = tuple(input.shape[d] for d in kept)
    return SparseTensor._build(index, value, size, False).coalesce()
