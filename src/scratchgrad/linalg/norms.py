"""Norms and products of vectors: ``vector_norm`` (a Function with PyTorch's
``norm_backward``, which gives 0 rather than nan at the zero vector), ``matrix_norm`` and
``norm`` composed from it and the singular values, ``cross`` and ``vecdot``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.backend import accumulation_dtype, namespace
from scratchgrad.dtypes import promoted, torch_name
from scratchgrad.linalg.checks import check_floating, check_same_dtype
from scratchgrad.linalg.decompositions import svdvals
from scratchgrad.ops.reduce import sum_kept
from scratchgrad.tensor import (
    Tensor,
    broadcast_tensors,
    check_keepdim,
    where,
    wrap_dim,
    wrap_dims,
)


class VectorNorm(Function):
    """``sum(|x|**ord) ** (1 / ord)`` over ``dim`` (all dims if None), with its limits: ord
    inf / -inf the largest / smallest ``|x|``, ord 0 the number of nonzero entries."""

    backward_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, ord, dim, keepdim):
        ctx.ord, ctx.dim, ctx.keepdim = ord, dim, keepdim
        module, size = namespace(x), abs(x)
        if ord == math.inf:
            out = size.max(axis=dim, keepdims=keepdim)
        elif ord == -math.inf:
            out = size.min(axis=dim, keepdims=keepdim)
        elif ord == 0:
            out = (x != 0).sum(axis=dim, keepdims=keepdim).astype(x.dtype)
        elif ord == 1 or _one_entry_each(x.shape, dim):
            # NOTE: a norm of one entry is its |x|, as PyTorch's (squaring 1e-200 underflows)
            out = size.sum(axis=dim, keepdims=keepdim)
        elif ord == 2:
            out = module.sqrt((x * x).sum(axis=dim, keepdims=keepdim))
        else:
            out = ((size**ord).sum(axis=dim, keepdims=keepdim) ** (1 / ord)).astype(x.dtype)
        out = module.asarray(out)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, norm = ctx.saved_tensors
        p = ctx.ord
        if not ctx.keepdim:  # put the reduced dims back, as size 1
            kept = [1 if ctx.dim is None or d in ctx.dim else n for d, n in enumerate(x.shape)]
            grad, norm = grad.reshape(kept), norm.reshape(kept)
        if p == 0:  # a count: no gradient (None, as PyTorch's undefined one, not zeros)
            return None
        if p == 1:
            return x.sign() * grad
        # NOTE: the zero vector gets 0 (a subgradient), as in PyTorch; the divisions there are
        # by 1 instead of 0, so that no warning is raised for a value that is masked anyway
        zero = norm == 0
        safe_norm = where(zero, 1.0, norm)
        if p == 2:
            return grad * where(zero, 0.0, x / safe_norm)
        if math.isinf(p):  # NOTE: ties (and nan) share the gradient equally, as in PyTorch
            size = x.abs()
            mask = ((size == norm) | size.isnan()).to(x.dtype)
            return x.sign() * grad / sum_kept(mask, ctx.dim) * mask
        if p < 1:
            scaled = x.sign() * where(x == 0, 0.0, where(x == 0, 1.0, x.abs()) ** (p - 1))
            return scaled * grad * norm ** (1 - p)
        scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
        return scaled * where(zero, 0.0, grad / safe_norm ** (p - 1))


def _one_entry_each(shape: tuple, dim: tuple | None) -> bool:
    """Whether each norm over ``dim`` (all dims if None) reads one entry of ``shape``."""
    return math.prod(shape if dim is None else [shape[d] for d in dim]) == 1


def _in_dtype(op: str, x: Tensor, dtype: Any) -> Tensor:
    """``x`` cast to ``dtype`` (if given) with PyTorch's checks: a floating or complex input,
    and a ``dtype`` of its kind that does not narrow it."""
    if not x.is_complex():
        check_floating(op, x, low_precision=True)
    if dtype is None:
        return x
    if x.is_complex() != (dtype.kind == "c"):
        kind = "complex for complex" if x.is_complex() else "real for real"
        raise RuntimeError(f"{op}: dtype should be {kind} inputs, but got {torch_name(dtype)}")
    if promoted(x.dtype, dtype) != dtype:
        raise RuntimeError(
            f"{op}: the dtype of the input ({torch_name(x.dtype)}) should be convertible "
            f"without narrowing to the specified dtype ({torch_name(dtype)})"
        )
    return x.to(dtype)


def _wrapped(op: str, dim: Any, ndim: int) -> tuple[int, ...] | None:
    """``dim`` (an int, a sequence or None) as a tuple of dims in range, or None for all."""
    # (one dim may be any integer, a NumPy one or a 0-d tensor too, as PyTorch's)
    dims = () if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:  # as PyTorch: no dims, all of them
        return None
    wrapped = wrap_dims(dims, max(ndim, 1))
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"{op}: dim {dims} appears multiple times in the list of dims")
    return wrapped if ndim else None


def vector_norm(
    x: Tensor,
    ord: float = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (all entries if None), as
    ``torch.linalg.vector_norm``: ord any number, inf (largest ``|x|``), -inf, or 0 (number of
    nonzero entries). ``dtype``: the dtype x is cast to first.

    >>> import scratchgrad as sg
    >>> sg.linalg.vector_norm(sg.tensor([[3.0, 4.0], [0.0, 1.0]]), dim=1)
    tensor([5., 1.])
    """
    x = _in_dtype("linalg.vector_norm", x, dtype)
    check_keepdim("linalg.vector_norm", keepdim)
    if x.is_complex():  # the norm of the moduli: real, as PyTorch's
        return vector_norm(x.abs(), ord, dim, keepdim)
    wide = accumulation_dtype(x.dtype)
    if wide is not None:  # as PyTorch: 16-bit floats in float32 (300**2 overflows float16)
        return vector_norm(x.to(wide), ord, dim, keepdim).to(x.dtype)
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    dims = _wrapped("linalg.vector_norm", dim, x.ndim)
    if ord < 0 or math.isinf(ord):
        reduced = x.shape if dims is None else [x.shape[d] for d in dims]
        if 0 in reduced:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                "the operation does not have an identity"
            )
    return VectorNorm.apply(x, ord=float(ord), dim=dims, keepdim=keepdim)


def matrix_norm(
    A: Tensor,
    ord: str | float = "fro",
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """The matrix ``ord``-norm over the two dims ``dim``, as ``torch.linalg.matrix_norm``:
    'fro' (Frobenius), 'nuc' (sum of the singular values), 2 / -2 (the largest / smallest
    singular value), 1 / -1 (the largest / smallest column sum of ``|A|``), inf / -inf (the
    same over rows).

    >>> import scratchgrad as sg
    >>> sg.linalg.matrix_norm(sg.tensor([[1.0, -2.0], [3.0, 4.0]]), 1)
    tensor(6.)
    """
    op = "linalg.matrix_norm"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    A = _in_dtype(op, A, dtype)
    by_singular_values = ord in ("nuc", 2, -2)
    check_floating(op, A, low_precision=not by_singular_values)  # as PyTorch: 16-bit sums
    dims = _wrapped(op, dim, A.ndim)
    if dims is None or len(dims) != 2:
        got = " ".join(map(str, dim)) if isinstance(dim, (tuple, list)) else dim  # (PyTorch's)
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {got}")
    if ord == "fro":
        return vector_norm(A, 2, dims, keepdim)
    if by_singular_values:
        return _by_singular_values(A, ord, dims, keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        summed, extreme = dims if abs(ord) == 1 else dims[::-1]
        if ord > 0 and A.shape[extreme] == 0:
            return _largest_of_none(A, dims, keepdim)
        sums = A.abs().sum(summed, keepdim=True)
        out = sums.amax(extreme, keepdim=True) if ord > 0 else sums.amin(extreme, keepdim=True)
        return out if keepdim else out.reshape(_reduced_shape(A.shape, dims, False))
    raise RuntimeError(f"{op}: Order {ord} not supported.")


def _by_singular_values(A: Tensor, ord: str | int, dims: tuple, keepdim: bool) -> Tensor:
    """The nuclear norm or the largest / smallest singular value over ``dims``."""
    if ord == 2 and min(A.shape[d] for d in dims) == 0:
        return _largest_of_none(A, dims, keepdim)
    others = [d for d in range(A.ndim) if d not in dims]
    s = svdvals(A.permute((*others, *dims)))
    out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    return out.reshape(_reduced_shape(A.shape, dims, keepdim)) if keepdim else out


def _largest_of_none(A: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    """NOTE: a norm that is the largest of no values (sums or singular values) is 0, as
    PyTorch's, a constant."""
    return A.new_zeros(_reduced_shape(A.shape, dims, keepdim))


def _reduced_shape(shape: tuple, dims: tuple, keepdim: bool) -> list[int]:
    """``shape`` reduced over ``dims``: those of size 1 if ``keepdim``, else without them."""
    if keepdim:
        return [1 if d in dims else n for d, n in enumerate(shape)]
    return [n for d, n in enumerate(shape) if d not in dims]


def norm(
    A: Tensor,
    ord: str | float | None = None,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """A vector or matrix norm, as ``torch.linalg.norm``: over one dim (an int or a 1-tuple)
    ``vector_norm``, over two ``matrix_norm``; without ``dim``, the 2-norm of all entries if
    ``ord`` is None, else the norm of the 1-D or 2-D input. A string ``ord`` ('fro', 'nuc')
    is a matrix norm whatever the dims, as PyTorch's.

    >>> import scratchgrad as sg
    >>> sg.linalg.norm(sg.tensor([[3.0, 0.0], [0.0, 4.0]]), "nuc")
    tensor(7.)
    """
    dims = None if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if dims is not None and len(dims) not in (1, 2):
        raise RuntimeError(
            f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}"
        )
    if dims is None and ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if dims is None and A.ndim not in (1, 2):
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
            f"Got {A.ndim}D."
        )
    if isinstance(ord, str) or (dims and len(dims) == 2) or (dims is None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dims or (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


def cross(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim``, the other dims broadcast, as
    ``torch.linalg.cross``.

    >>> import scratchgrad as sg
    >>> sg.linalg.cross(sg.tensor([1.0, 0.0, 0.0]), sg.tensor([0.0, 1.0, 0.0]))
    tensor([0., 0., 1.])
    """
    if x.ndim != y.ndim:
        raise RuntimeError(
            "linalg.cross: inputs must have the same number of dimensions "
            f"(got shapes {x.shape} and {y.shape})."
        )
    x, y = broadcast_tensors(x, y)
    if x.shape[wrap_dim(dim, x.ndim)] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{x.shape[dim]} and {y.shape[dim]}"
        )
    return x.cross(y, dim=dim)


@autocast_policy("lower")  # on PyTorch's CPU autocast lower-precision list, as matmul
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim``, the other dims broadcast, as
    ``torch.linalg.vecdot``: ``sum(x.conj() * y)``, of floating or complex vectors.

    >>> import scratchgrad as sg
    >>> sg.linalg.vecdot(sg.tensor([[1.0, 2.0], [3.0, 4.0]]), sg.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """
    if not x.is_complex():
        check_floating("linalg.vecdot", x, low_precision=True)
    check_same_dtype("linalg.vecdot", x, y, "xy")
    return (x.conj() * y).sum(dim)
