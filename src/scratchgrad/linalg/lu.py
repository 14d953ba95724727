"""LU factorization with partial pivoting, ``A = P L U`` (``lu_factor``, ``lu_factor_ex``,
``lu``), and solving with it (``lu_solve``), as ``torch.linalg``.

NumPy has no LAPACK getrf, so the factorization is Gaussian elimination: one step per column,
each a few array operations over the whole batch (O(n) Python steps for O(n^3) arithmetic),
choosing LAPACK's pivots (the first entry of largest magnitude in the column). The gradient is
PyTorch's, written in Tensor operations (so gradients of gradients work); ``lu_solve`` is
triangular solves on the factors, differentiable in ``LU`` and ``B`` through them.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.backend import int32, namespace
from scratchgrad.linalg.checks import (
    LinAlgError,
    check_floating,
    check_input,
    check_same_dtype,
    empty_in_any_dtype,
)
from scratchgrad.linalg.systems import SolveTriangular, check_system
from scratchgrad.tensor import Tensor, cat

linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"])


def eliminate(a: Any) -> tuple[Any, Any, Any]:
    """LAPACK getrf on a batch ``(*, m, n)``: the packed factors (L's multipliers under the
    diagonal, U on and above it), the 1-based row swaps (int32, ``(*, min(m, n))``) and the
    1-based index of the first zero pivot (0 where there is none)."""
    module = namespace(a)
    *batch, m, n = a.shape
    lu = a.reshape(math.prod(batch), m, n).copy()
    rows = module.arange(lu.shape[0])
    pivots = module.empty((lu.shape[0], min(m, n)), dtype=int32)
    info = module.zeros(lu.shape[0], dtype=int32)
    for j in range(min(m, n)):
        p = j + module.argmax(module.abs(lu[:, j:, j]), axis=1)
        pivots[:, j] = p + 1
        lu[rows, j], lu[rows, p] = lu[rows, p], lu[rows, j].copy()
        pivot = lu[:, j, j]
        zero = pivot == 0  # the column is zero from here down: nothing to eliminate
        info[(info == 0) & zero] = j + 1
        lu[:, j + 1 :, j] /= module.where(zero, 1, pivot)[:, None]
        lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j, None] * lu[:, j, None, j + 1 :]
    shape = tuple(batch)
    return lu.reshape(a.shape), pivots.reshape(*shape, min(m, n)), info.reshape(shape)


def permutation(pivots: Any, m: int, dtype: Any) -> Any:
    """The permutation matrix ``P`` (``(*, m, m)``) of LAPACK's row swaps: ``A = P L U``."""
    module = namespace(pivots)
    flat = pivots.reshape(math.prod(pivots.shape[:-1]), pivots.shape[-1]) - 1
    rows = module.arange(flat.shape[0])
    order = module.broadcast_to(module.arange(m), (flat.shape[0], m)).copy()
    for j in range(flat.shape[1]):  # swap j with its pivot, as the elimination did
        p = flat[:, j]
        order[rows, j], order[rows, p] = order[rows, p], order[rows, j].copy()
    # row i of P^T A is row order[i] of A, so P has a one at (order[i], i)
    p = module.zeros((flat.shape[0], m, m), dtype=dtype)
    p[rows[:, None], order, module.arange(m)] = 1
    return p.reshape(*pivots.shape[:-1], m, m)


class Permutation(Function):
    """The permutation matrix of LAPACK's row swaps (a Function, so that vmap batches it and
    jit replays it: it is read off the pivots' values); a constant, without gradient. Pivots
    a user gave to ``caller`` (``lu_solve``, ``lu_unpack``) are checked first, here so that
    a replay checks them too."""

    @staticmethod
    def forward(ctx, pivots, m, dtype, caller=None):
        if caller is not None and pivots.size:
            _check_pivots(caller, int(pivots.min()), int(pivots.max()), m)
        return permutation(pivots, m, dtype)

    @staticmethod
    def backward(ctx, grad):
        return None


def _check_pivots(caller: str, low: int, high: int, m: int) -> None:
    """PyTorch's errors for pivots outside [1, m] (the rows of LU): they would pick other rows
    than lu_factor's, or none, and give a wrong result silently."""
    advice = "Did you properly pass the result of lu_factor?"
    if caller == "lu_unpack" and not 1 <= low <= high <= m:
        raise RuntimeError(
            f"pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.{advice}"
        )
    if low < 1:
        raise RuntimeError(f"Pivots given to {caller} must all be greater or equal to 1. {advice}")
    if high > m:
        raise RuntimeError(
            f"Pivots given to {caller} must all be smaller or equal to LU.size(-2). {advice}"
        )


class LUFactor(Function):
    """The packed factors and pivots of ``A = P L U``. The gradient is PyTorch's
    ``linalg_lu_backward``: for a square ``A``,
    ``P L^-T [(L^T gL) tril(-1) + (gU U^T) triu] U^-T``, and for a wide or tall one the same on
    its square part, with the extra columns of U (rows of L) solved through it."""

    backward_name = "LinalgLuFactorExBackward0"

    @staticmethod
    def forward(ctx, a, check=None):
        lu, pivots, info = eliminate(a)
        if check is not None:  # here, so that a jitted step checks again at each replay
            _raise_singular(check, info)
        ctx.save_for_backward(a, lu, pivots)
        return lu, pivots, info

    @staticmethod
    def backward(ctx, grad, _pivots, _info):
        a, lu, pivots = ctx.saved_tensors
        if is_grad_enabled():  # a recorded backward: the factors again, in the graph of a
            lu, pivots, _ = LUFactor.apply(a)
        m, n = lu.shape[-2:]
        k = min(m, n)
        L, U = unpack(lu)
        gL, gU = grad[..., :, :k].tril(-1), grad[..., :k, :].triu()
        if m < n:  # wide: U = [U1 U2], U2 = L^-1 P^T A2
            U1, gU1, gU2 = U[..., :k], gU[..., :k], gU[..., k:]
            gA2 = SolveTriangular.apply(L.mT, gU2, upper=True, left=True, unitriangular=True)
            gL = gL - (gA2 @ U[..., k:].mT).tril(-1)
            gA = cat([_square_backward(L, U1, gL, gU1), gA2], -1)
        elif m > n:  # tall: L = [L1; L2], L2 = B2 U^-1 with B = P^T A
            L1, gL1, gL2 = L[..., :k, :], gL[..., :k, :], gL[..., k:, :]
            gB2 = SolveTriangular.apply(U.mT, gL2, upper=False, left=False, unitriangular=False)
            gU = gU - (L[..., k:, :].mT @ gB2).triu()
            gA = cat([_square_backward(L1, U, gL1, gU), gB2], -2)
        else:
            gA = _square_backward(L, U, gL, gU)
        return Permutation.apply(pivots, m=m, dtype=lu.dtype) @ gA


def _square_backward(L: Tensor, U: Tensor, gL: Tensor, gU: Tensor) -> Tensor:
    """d(L U)^-1 pulled back: ``L^-T [(L^T gL) tril(-1) + (gU U^T) triu] U^-T``."""
    phi = (L.mT @ gL).tril(-1) + (gU @ U.mT).triu()
    right = SolveTriangular.apply(L.mT, phi, upper=True, left=True, unitriangular=True)
    return SolveTriangular.apply(U.mT, right, upper=False, left=False, unitriangular=False)


def unpack(LU: Tensor) -> tuple[Tensor, Tensor]:
    """``L`` (``(*, m, k)``, ones on its diagonal) and ``U`` (``(*, k, n)``) of packed
    factors, k = min(m, n)."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    eye = LU.new_ones(k).diag_embed()
    if m > k:
        eye = cat([eye, LU.new_zeros(m - k, k)], -2)
    return LU[..., :, :k].tril(-1) + eye, LU[..., :k, :].triu()


def _checked(op: str, A: Tensor, pivot: bool) -> None:
    check_input(op, A)
    if not pivot and A.numel():  # an empty A has nothing to pivot: PyTorch factors it
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")


@empty_in_any_dtype(integers=True)
def lu_factor_ex(
    A: Tensor, *, pivot: bool = True, check_errors: bool = False
) -> linalg_lu_factor_ex:
    """``(LU, pivots, info)``: the packed factors of ``A = P L U`` (L's multipliers under the
    diagonal, U on and above it), LAPACK's 1-based row swaps (int32) and, for each matrix, the
    1-based index of the first zero on U's diagonal (0 where there is none), as
    ``torch.linalg.lu_factor_ex``. A singular matrix still has its factors.

    >>> import scratchgrad as sg
    >>> sg.linalg.lu_factor_ex(sg.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=scratchgrad.int32)
    """
    op = "torch.linalg.lu_factor_ex"
    _checked(op, A, pivot)
    return linalg_lu_factor_ex(*LUFactor.apply(A, check=op if check_errors else None))


@empty_in_any_dtype(integers=True)
def lu_factor(A: Tensor, *, pivot: bool = True) -> linalg_lu_factor:
    """``(LU, pivots)`` of ``A = P L U`` (see ``lu_factor_ex``), for ``lu_solve``, as
    ``torch.linalg.lu_factor``; a singular matrix raises, since solving with it would divide
    by zero.

    >>> import scratchgrad as sg
    >>> A = sg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> LU, pivots = sg.linalg.lu_factor(A)
    >>> sg.linalg.lu_solve(LU, pivots, sg.tensor([[5.0], [11.0]]))
    tensor([[1.],
            [2.]])
    """
    op = "torch.linalg.lu_factor"
    _checked(op, A, pivot)
    LU, pivots, _ = LUFactor.apply(A, check=op)
    return linalg_lu_factor(LU, pivots)


def _raise_singular(op: str, info: Any) -> None:
    """PyTorch's error for the first matrix of the batch with a zero pivot (``info``)."""
    failed = info.reshape(-1)
    if not failed.any():
        return
    element = int(failed.nonzero()[0][0])
    where = f"(Batch element {element}): " if info.ndim else ""
    index = int(failed[element])
    raise LinAlgError(
        f"{op}: {where}U[{index},{index}] is zero and using it on lu_solve would result in a "
        "division by zero. If you still want to perform the factorization, consider calling "
        "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
    )


@empty_in_any_dtype(integers=True)
def lu(A: Tensor, *, pivot: bool = True) -> linalg_lu:
    """``(P, L, U)`` with ``A = P L U``: ``P`` a permutation matrix, ``L`` ``(*, m, k)`` lower
    triangular with ones on its diagonal, ``U`` ``(*, k, n)`` upper triangular, k = min(m, n),
    as ``torch.linalg.lu``; differentiable in ``L`` and ``U``.

    >>> import scratchgrad as sg
    >>> P, L, U = sg.linalg.lu(sg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> (P @ L @ U).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    _checked("linalg.lu", A, pivot)
    LU, pivots, _ = LUFactor.apply(A)
    L, U = unpack(LU)
    if not pivot:  # (empty A) no permutation: P is an empty tensor, as PyTorch's
        return linalg_lu(A.new_zeros(0), L, U)
    return linalg_lu(Permutation.apply(pivots, m=A.shape[-2], dtype=A.dtype), L, U)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype()
def lu_solve(
    LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False
) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` if not ``left``; ``A^T`` for ``A`` if
    ``adjoint``) from ``lu_factor``'s ``(LU, pivots)``, as ``torch.linalg.lu_solve``:
    triangular solves on the factors, differentiable in ``LU`` and ``B``.

    >>> import scratchgrad as sg
    >>> LU, pivots = sg.linalg.lu_factor(sg.tensor([[2.0, 0.0], [1.0, 1.0]]))
    >>> sg.linalg.lu_solve(LU, pivots, sg.tensor([[2.0], [3.0]]))
    tensor([[1.],
            [2.]])
    """
    op = "linalg.lu_solve"
    # (PyTorch's checks of LU call it A, and name the function "torch.linalg.lu_solve")
    # (a 16-bit LU's error after the shapes' and the pivots', as PyTorch's)
    check_input("torch.linalg.lu_solve", LU, square=True, any_dtype=True, integers_first=True)
    check_input(op, B, "B", any_dtype=True)  # (its dtype: LU's, checked below)
    check_same_dtype(op, LU, B, ("LU", "B"))  # names: the pair PyTorch's message uses
    check_system(op, LU, B, left)
    n = LU.shape[-1]
    if pivots.dtype != int32 or tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(
            f"{op}: Expected pivots to be int32 of shape {list(LU.shape[:-1])}, got "
            f"{pivots.dtype.name} of shape {list(pivots.shape)}"
        )
    P = Permutation.apply(pivots, m=n, dtype=LU.dtype, caller="lu_solve")
    check_floating("torch.linalg.lu_solve", LU)
    L, U = unpack(LU)
    lower = {"upper": False, "unitriangular": True}
    upper = {"upper": True, "unitriangular": False}
    if left and not adjoint:  # X = U^-1 L^-1 P^T B
        y = SolveTriangular.apply(L, P.mT @ B, left=True, **lower)
        return SolveTriangular.apply(U, y, left=True, **upper)
    if left:  # A^T X = B: X = P L^-T U^-T B
        y = SolveTriangular.apply(U.mT, B, left=True, upper=False, unitriangular=False)
        return P @ SolveTriangular.apply(L.mT, y, left=True, upper=True, unitriangular=True)
    if not adjoint:  # X A = B: X = B U^-1 L^-1 P^T
        y = SolveTriangular.apply(U, B, left=False, **upper)
        return SolveTriangular.apply(L, y, left=False, **lower) @ P.mT
    # X A^T = B: X = B P L^-T U^-T
    y = SolveTriangular.apply(L.mT, B @ P, left=False, upper=True, unitriangular=True)
    return SolveTriangular.apply(U.mT, y, left=False, upper=False, unitriangular=False)
