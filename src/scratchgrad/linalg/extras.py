"""The rest of ``torch.linalg``'s real functions: ``inv_ex``, ``cholesky_ex`` and ``solve_ex``
(which report failures instead of raising), ``cond``, ``multi_dot``, ``tensorinv``,
``tensorsolve``, ``vander``, ``householder_product`` and the aliases ``diagonal`` and
``matmul``, built on the others; ``multi_dot``'s older form ``torch.chain_matmul``; and the
Householder functions outside ``torch.linalg``, ``geqrf`` and ``ormqr``."""

from __future__ import annotations

import math
import warnings
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.backend import bfloat16, float16, int32, namespace, xp
from scratchgrad.creation import eye
from scratchgrad.dtypes import torch_name
from scratchgrad.linalg.checks import (
    LinAlgError,
    check_floating,
    check_input,
    empty_in_any_dtype,
    kernel_error,
    leading_minor,
    zero_pivot,
)
from scratchgrad.linalg.decompositions import cholesky, svdvals
from scratchgrad.linalg.legacy import renamed
from scratchgrad.linalg.norms import matrix_norm
from scratchgrad.linalg.systems import inv, is_vector_rhs, solve
from scratchgrad.tensor import Tensor, cat, takes_out, where

linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"])


def _ex(
    op: str,
    compute: Callable[[Tensor], Tensor],
    A: Tensor,
    info: Callable,
    check_errors: bool,
    core_dims: int = 2,
) -> tuple[Tensor, Tensor]:
    """``compute(A)`` and LAPACK's ``info`` for each matrix (int32, 0 where it worked). Where
    it failed the result (whose last ``core_dims`` dims belong to one matrix) is nan
    (PyTorch's is whatever LAPACK left there), computed for a stand-in identity so that the
    others keep their values and gradients."""
    none_failed = Tensor._make(namespace(A.array).zeros(A.shape[:-2], dtype=int32))
    if check_errors:
        with renamed(op):
            return compute(A), none_failed
    try:
        return compute(A), none_failed
    except LinAlgError:
        pass  # find which failed
    arrays = A.array.reshape(-1, *A.shape[-2:])
    codes = xp.asarray([info(a) for a in arrays], dtype=int32)  # the failure path only
    failed = Tensor._make(namespace(A.array).asarray(codes.reshape(A.shape[:-2])))
    mask = (failed != 0).reshape(*failed.shape, 1, 1)
    result = compute(where(mask, A.new_ones(A.shape[-1]).diag_embed(), A))
    return where(mask.reshape((*failed.shape, *[1] * core_dims)), math.nan, result), failed


def _inversion_info(matrix: Any) -> int:
    try:
        xp.linalg.inv(matrix)
    except xp.linalg.LinAlgError:
        return zero_pivot(matrix)
    return 0


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def inv_ex(A: Tensor, *, check_errors: bool = False) -> linalg_inv_ex:
    """The inverse and, for each matrix, LAPACK's ``info`` (int32), as ``torch.linalg.inv_ex``:
    0 where it is invertible, else the (1-based) index of the first zero pivot of its LU
    factorization, and its inverse nan (unlike PyTorch's, which is whatever LAPACK computed).
    With ``check_errors``, a singular matrix raises ``LinAlgError`` as ``linalg.inv``.

    >>> import scratchgrad as sg
    >>> sg.linalg.inv_ex(sg.stack([sg.eye(2), sg.zeros(2, 2)])).info
    tensor([0, 1], dtype=scratchgrad.int32)
    """
    check_input("linalg.inv", A, square=True)
    return linalg_inv_ex(*_ex("linalg.inv_ex", inv, A, _inversion_info, check_errors))


@empty_in_any_dtype()
def solve_ex(
    A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False
) -> linalg_solve_ex:
    """The solution of ``A X = B`` (``X A = B`` if not ``left``) and, for each matrix, LAPACK's
    ``info`` (int32), as ``torch.linalg.solve_ex``: 0 where ``A`` is invertible, else the
    (1-based) index of the first zero pivot of its LU factorization, and its solution nan
    (unlike PyTorch's, which is whatever LAPACK computed). With ``check_errors``, a singular
    matrix raises ``LinAlgError`` as ``linalg.solve``.

    >>> import scratchgrad as sg
    >>> sg.linalg.solve_ex(sg.zeros(2, 2), sg.ones(2)).info
    tensor(1, dtype=scratchgrad.int32)
    """
    check_input("linalg.solve", A, square=True, integers_first=True)
    core_dims = 1 if isinstance(B, Tensor) and is_vector_rhs(A, B) else 2

    def solved(a: Tensor) -> Tensor:
        return solve(a, B, left=left)

    return linalg_solve_ex(
        *_ex("linalg.solve_ex", solved, A, _inversion_info, check_errors, core_dims)
    )


_COND_ORDERS = (None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype(integers=True)
def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number of ``A`` in the matrix norm ``p``, as ``torch.linalg.cond``: the
    ratio of its extreme singular values for ``p`` None, 2 or -2 (any shape), else
    ``norm(A) * norm(inv(A))`` (square matrices; inf where ``A`` is singular); 0 for empty
    matrices.

    >>> import scratchgrad as sg
    >>> sg.linalg.cond(sg.tensor([[1.0, 0.0], [0.0, 4.0]]))
    tensor(4.)
    """
    check_input("linalg.cond", A, any_dtype=True)  # (the dtype's error: svd's or inv's, below)
    if isinstance(p, str):  # as PyTorch, which checks these orders' shapes before all else
        _check_square(A, p)
    if p not in _COND_ORDERS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.numel() == 0:  # NOTE: 0, as PyTorch's (NumPy defines none for a 0x0 matrix)
        return A.new_zeros(A.shape[:-2])
    if p in (None, 2, -2):
        check_floating("linalg.svd", A)
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    _check_square(A, p)
    check_floating("linalg.svd" if p == "nuc" else "linalg.inv", A)
    inverse, info = inv_ex(A)
    value = matrix_norm(A, p) * matrix_norm(
        where(info.reshape(*info.shape, 1, 1) != 0, 0, inverse), p
    )
    return where(info != 0, math.inf, value)


def _check_square(A: Tensor, p: Any) -> None:
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype()
def cholesky_ex(
    A: Tensor, *, upper: bool = False, check_errors: bool = False
) -> linalg_cholesky_ex:
    """The Cholesky factor and, for each matrix, LAPACK's ``info`` (int32), as
    ``torch.linalg.cholesky_ex``: 0 where it is positive-definite, else the order of its first
    leading minor that is not, and its factor nan (unlike PyTorch's, which is the partial
    factorization LAPACK left). With ``check_errors``, such a matrix raises ``LinAlgError`` as
    ``linalg.cholesky``.

    >>> import scratchgrad as sg
    >>> sg.linalg.cholesky_ex(sg.tensor([[1.0, 2.0], [2.0, 1.0]])).info
    tensor(2, dtype=scratchgrad.int32)
    """
    check_input("linalg.cholesky", A, square=True)

    def factor(a: Tensor) -> Tensor:
        return cholesky(a, upper=upper)

    def info(matrix: Any) -> int:  # the lower triangle read, or the upper one
        return leading_minor(matrix.T if upper else matrix)

    return linalg_cholesky_ex(*_ex("linalg.cholesky_ex", factor, A, info, check_errors))


_MULTI_DOT_NAMES = {"float32": "float", "float64": "double"}


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of two or more matrices, multiplied in the order that costs the fewest
    operations, as ``torch.linalg.multi_dot``: all 2-D, but the first may be a (row) vector
    and the last a (column) vector, which the result then lacks.

    >>> import scratchgrad as sg
    >>> sg.linalg.multi_dot([sg.ones(3), sg.ones(3, 2), sg.ones(2)])
    tensor(6.)
    """
    _check_multi_dot(tensors)
    first, *_, last = tensors
    matrices = [
        first.unsqueeze(0) if first.ndim == 1 else first,
        *tensors[1:-1],
        last.unsqueeze(-1) if last.ndim == 1 else last,
    ]
    for i, (x, y) in enumerate(zip(matrices, matrices[1:])):
        if x.shape[1] != y.shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                f"{list(tensors[i + 1].shape)} cannot be multiplied"
            )
    sizes = [m.shape[0] for m in matrices] + [matrices[-1].shape[1]]
    out = _chain(matrices, _cheapest_splits(sizes), 0, len(matrices) - 1)
    out = out.squeeze(0) if first.ndim == 1 else out
    return out.squeeze(-1) if last.ndim == 1 else out


@takes_out
def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of one or more matrices, as the deprecated ``torch.chain_matmul``:
    ``multi_dot`` of 2-D tensors only, one matrix giving a copy of it.

    >>> import scratchgrad as sg
    >>> sg.chain_matmul(sg.ones(2, 3), sg.ones(3, 4), sg.ones(4, 1))
    tensor([[12.],
            [12.]])
    """
    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
        "than multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    for x in matrices:
        if x.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {x.ndim}, expected 2 instead.")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    return matrices[0].clone() if len(matrices) == 1 else multi_dot(matrices)


def _check_multi_dot(tensors: Sequence[Tensor]) -> None:
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, x in enumerate(tensors):
        end = "the first tensor" if i == 0 else "the last tensor" if i == len(tensors) - 1 else ""
        if x.ndim not in ((1, 2) if end else (2,)):
            where_ = end + " must be 1D or 2D" if end else f"tensor {i} must be 2D"
            raise RuntimeError(f"multi_dot(): {where_} but got {x.ndim}D")
        if x.dtype != tensors[0].dtype:
            names = [_MULTI_DOT_NAMES.get(t.dtype.name, t.dtype.name) for t in (tensors[0], x)]
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{names[0]} and tensor {i} {names[1]}"
            )


def _cheapest_splits(sizes: list[int]) -> dict:
    """For each run i..j of the matrices (matrix k of shape sizes[k] x sizes[k + 1]), where
    to split its product so that the whole costs the fewest multiplications (the classic
    dynamic programme, over a handful of matrices)."""
    n = len(sizes) - 1
    cost = {(i, i): 0 for i in range(n)}
    split = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j], split[i, j] = min(
                (cost[i, k] + cost[k + 1, j] + sizes[i] * sizes[k + 1] * sizes[j + 1], k)
                for k in range(i, j)
            )
    return split


def _chain(matrices: list[Tensor], split: dict, i: int, j: int) -> Tensor:
    if i == j:
        return matrices[i]
    k = split[i, j]
    return _chain(matrices, split, i, k).mm(_chain(matrices, split, k + 1, j))


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` with respect to ``tensordot`` over its first ``ind`` dims, as
    ``torch.linalg.tensorinv``: of shape ``A.shape[ind:] + A.shape[:ind]``, the two products
    of sizes being equal.

    >>> import scratchgrad as sg
    >>> sg.linalg.tensorinv(sg.eye(6).reshape(6, 2, 3), ind=1).shape
    scratchgrad.Size([2, 3, 6])
    """
    if not isinstance(ind, int) or isinstance(ind, bool):
        raise TypeError(f"linalg_tensorinv(): argument 'ind' must be int, not {type(ind).__name__}")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    if ind > A.ndim:  # as PyTorch's; a Python slice of the shape would quietly be short
        raise RuntimeError(f"linalg.tensorinv: ind={ind} is more than A's {A.ndim} dims")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    with renamed("inv"):  # PyTorch's name for its failure
        inverse = inv(A.reshape(rows, cols))
    return inverse.reshape((*A.shape[ind:], *A.shape[:ind]))


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None) -> Tensor:
    """``X`` with ``tensordot(A, X, X.ndim) = B``, as ``torch.linalg.tensorsolve``: ``X`` of
    shape ``A.shape[B.ndim:]``, after the ``dims`` of ``A`` are moved to its end.

    >>> import scratchgrad as sg
    >>> sg.linalg.tensorsolve(2 * sg.eye(6).reshape(2, 3, 6), sg.ones(2, 3))
    tensor([0.5000, 0.5000, 0.5000, 0.5000, 0.5000, 0.5000])
    """
    if dims is not None:
        moved = [d % A.ndim for d in dims]
        A = A.permute((*(d for d in range(A.ndim) if d not in moved), *moved))
    shape = A.shape[B.ndim :]
    size, rhs = math.prod(shape), B.numel()
    if size != rhs:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {size} != {rhs}"
        )
    return solve(A.reshape(rhs, size), B.reshape(rhs)).reshape(shape)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``A.diagonal`` over the last two dims by default, as ``torch.linalg.diagonal``.

    >>> import scratchgrad as sg
    >>> sg.linalg.diagonal(sg.arange(9.0).reshape(3, 3), offset=1)
    tensor([1., 5.])
    """
    return A.diagonal(offset, dim1, dim2)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """``input @ other``, as ``torch.linalg.matmul``.

    >>> import scratchgrad as sg
    >>> sg.linalg.matmul(sg.ones(2, 3), sg.ones(3))
    tensor([3., 3.])
    """
    return input.matmul(other)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of ``x`` (*, n): ``out[..., i, j] = x[..., i] ** j`` for j < N
    (default n), as ``torch.linalg.vander``; integers give int64, as PyTorch's cumprod; bool,
    float16 and bfloat16 raise, as PyTorch's.

    >>> import scratchgrad as sg
    >>> sg.linalg.vander(sg.tensor([1.0, 2.0, 3.0]))
    tensor([[1., 1., 1.],
            [1., 2., 4.],
            [1., 3., 9.]])
    """
    if x.dtype.kind == "b" or x.dtype in (float16, bfloat16):  # (as PyTorch's: no 16-bit)
        raise RuntimeError(
            "linalg.vander supports floating point, complex, and integer tensors, but got "
            f"{torch_name(x.dtype)}"
        )
    x = x.reshape(1) if x.ndim == 0 else x
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1)
    return cat([x.new_ones(*x.shape, 1), powers], -1).cumprod(-1)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of the product ``H_1 H_2 ... H_k`` of Householder reflections
    ``H_i = I - tau_i v_i v_i^T``, as ``torch.linalg.householder_product`` (LAPACK's orgqr):
    ``A`` (*, m, n) with m >= n holds the reflectors below its diagonal (``v_i`` is column i
    of ``A`` with zeros above row i and a 1 on it), ``tau`` (*, k) with k <= n their scales.
    Composed of matrix products, one per reflection, so its gradients are those of the
    composition.

    >>> import scratchgrad as sg
    >>> sg.linalg.householder_product(sg.tensor([[1.0], [1.0]]), sg.tensor([1.0]))
    tensor([[ 0.],
            [-1.]])
    """
    op = "torch.linalg.householder_product"
    _check_householder(op, A, tau)
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    reflectors = A[..., :k].tril(-1) + eye(m, k, dtype=A.dtype, device=A.device)
    out = eye(m, n, dtype=A.dtype, device=A.device).expand(A.shape).clone()
    for i in reversed(range(k)):  # H_k acts first
        v = reflectors[..., i : i + 1]
        out = out - (tau[..., i, None, None] * v) @ (v.mT @ out)
    if k == 0:  # no reflection: still a result of A and tau (gradient 0), as PyTorch's
        out = out + A[..., :0].sum(-1, keepdim=True) + tau.sum(-1, keepdim=True).unsqueeze(-1)
    return out


@takes_out
@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def ormqr(
    input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False
) -> Tensor:
    """``other`` multiplied by ``Q = H_1 ... H_k``, the product of the Householder reflections
    of ``(input, tau)`` as ``householder_product`` reads them (``geqrf``'s result), without
    forming Q, as ``torch.ormqr``: ``Q C`` (``C Q`` if not ``left``; ``Q^T`` for Q with
    ``transpose``). Composed of matrix products, one per reflection, so its gradients (to
    ``input``'s reflectors, ``tau`` and ``other``) are those of the composition. Real matrices.

    >>> import scratchgrad as sg
    >>> sg.ormqr(sg.tensor([[1.0], [1.0]]), sg.tensor([1.0]), sg.tensor([[1.0], [2.0]]))
    tensor([[-2.],
            [-1.]])
    """
    _check_ormqr(input, tau, other, left)
    m, k = input.shape[-2], tau.shape[-1]
    reflectors = input[..., :k].tril(-1) + eye(m, k, dtype=input.dtype, device=input.device)
    out = other
    # Q C applies H_k first, Q^T C H_1 first; C Q applies H_1 first, C Q^T H_k first
    for i in range(k) if left == transpose else reversed(range(k)):
        v, scale = reflectors[..., i : i + 1], tau[..., i, None, None]
        out = out - (scale * v) @ (v.mT @ out) if left else out - ((out @ v) * scale) @ v.mT
    return out


def _check_ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool) -> None:
    """PyTorch's checks of ormqr's arguments, in its order."""
    op = "torch.ormqr"
    for name, x in (("input", input), ("other", other)):
        if x.ndim < 2:
            raise RuntimeError(f"{op}: {name} must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{op}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(
            f"{op}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])"
        )
    for name, x, extra in (("tau", tau, 1), ("other", other, 0)):
        if input.ndim - x.ndim != extra:
            wanted = "one dimension less than" if extra else "the same number of dimensions as"
            raise RuntimeError(
                f"{op}: Expected {name} to have {wanted} input, but got {name}.ndim equal to "
                f"{x.ndim} and input.ndim is equal to {input.ndim}"
            )
    for name, batch in (("tau", tau.shape[:-1]), ("other", other.shape[:-2])):
        if batch != input.shape[:-2]:
            raise RuntimeError(
                f"{op}: Expected batch dimensions of {name} to be equal to input.shape[:-2], but "
                f"got {list(batch)}"
            )
    for name, x in (("tau", tau), ("other", other)):
        if x.dtype != input.dtype:
            raise RuntimeError(
                f"{op}: Expected input and {name} to have the same dtype, but input has dtype"
                f"{torch_name(input.dtype)} and {name} has dtype {torch_name(x.dtype)}"
            )
    check_floating(op, input, kernel="ormqr_cpu")


geqrf_result = namedtuple("geqrf", ["a", "tau"])


class Geqrf(Function):
    """LAPACK's geqrf (through NumPy's ``qr(mode="raw")``, which returns its output as it is,
    transposed): R on and above the diagonal, the reflectors below it, and their scales. It
    has no derivative, as PyTorch's."""

    backward_name = "GeqrfBackward0"
    complex_safe = True  # (its backward only raises)

    @staticmethod
    def forward(ctx, a):
        h, tau = namespace(a).linalg.qr(a, mode="raw")
        return h.swapaxes(-1, -2), tau  # column-major, as PyTorch's

    @staticmethod
    def backward(ctx, grad_a, grad_tau):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


@takes_out
@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def geqrf(input: Tensor) -> geqrf_result:
    """The QR factorization of a matrix (or batch) ``(*, m, n)`` in LAPACK's compact form, as
    ``torch.geqrf``: ``a`` holds R on and above its diagonal and the Householder vectors
    ``v_i`` below it (their 1 on the diagonal implied), ``tau`` (*, min(m, n)) their scales,
    so that ``Q = H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``: ``householder_product(a, tau)``
    (``orgqr``) forms Q. Real or complex; no gradient, as PyTorch's.

    >>> import scratchgrad as sg
    >>> sg.geqrf(sg.tensor([[3.0, 1.0], [4.0, 2.0]])).tau
    tensor([1.6000, 0.0000])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"geqrf(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if input.dtype.kind in "biu" or input.dtype.itemsize < 4:  # (no LAPACK kernel for them)
        raise kernel_error("geqrf_cpu", input.dtype)
    return geqrf_result(*Geqrf.apply(input))


def _check_householder(op: str, A: Tensor, tau: Tensor) -> None:
    """PyTorch's checks of householder_product's arguments, in its order."""
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(
            f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal "
            f"to {tau.ndim} and input.ndim is equal to {A.ndim}"
        )
    if tau.shape[:-1] != A.shape[:-2]:
        raise RuntimeError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(tau.shape[:-1])}"
        )
    if tau.dtype != A.dtype:
        raise RuntimeError(
            f"{op}: tau dtype {torch_name(tau.dtype)} does not match input dtype "
            f"{torch_name(A.dtype)}"
        )
    check_floating(op, A)
