"""The LDL factorization of a symmetric (possibly indefinite) matrix, ``ldl_factor``,
``ldl_factor_ex`` and ``ldl_solve``, in LAPACK's format: Bunch-Kaufman pivoting as its unblocked
sytf2 (lower triangle) does it, since NumPy has no sytrf, and the solve as its sytrs; a complex
matrix as symmetric, or with ``hermitian`` as hermitian (hetf2 and hetrs). Neither has a
derivative, as in PyTorch.

``LD`` holds the unit lower triangular ``L`` below its diagonal and the blocks of ``D`` (1 x 1,
or 2 x 2 where a pivot is a pair of rows) on and under it; ``pivots`` (int32, 1-based) are
LAPACK's ``ipiv``: ``k`` > 0 where rows i and k were swapped for a 1 x 1 block, ``-k`` twice
for a 2 x 2 block whose second row was swapped with row k.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.function import Function
from scratchgrad.backend import int32, xp
from scratchgrad.dtypes import torch_name
from scratchgrad.linalg.checks import LinAlgError, check_floating, check_input, empty_in_any_dtype
from scratchgrad.linalg.systems import check_system
from scratchgrad.tensor import Tensor

linalg_ldl_factor = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
linalg_ldl_factor_ex = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _sytf2(a: Any, hermitian: bool) -> tuple[Any, Any, int]:
    """LAPACK's sytf2 of one matrix ``a`` (n, n), or hetf2 where ``hermitian`` (for complex
    ``a``), its lower triangle read and overwritten: ``(LD, ipiv, info)``, info the (1-based)
    first zero block of D, 0 if none. Every comparison and update in ``a``'s dtype, in
    LAPACK's order; sizes are LAPACK's |re| + |im|, and hetf2 reads only the real part of the
    diagonal (whose imaginary part it leaves 0). NOTE: no NaN test, as the LAPACK PyTorch 2.13
    links (a NaN diagonal entry gives a 2 x 2 pivot there)."""
    n = a.shape[-1]
    real = a.real.dtype.type
    alpha = (real(1) + xp.sqrt(real(17))) / real(8)
    hermitian = hermitian and a.dtype.kind == "c"  # (a real matrix's is its symmetric one)
    ipiv = xp.zeros(n, dtype=int32)
    info, k = 0, 0
    while k < n:
        step, absakk = 1, _cabs1(_diagonal(a, k, hermitian))
        imax = k + 1 + int(xp.argmax(_cabs1(a[k + 1 :, k]))) if k < n - 1 else k
        colmax = _cabs1(a[imax, k]) if k < n - 1 else real(0)
        if absakk == 0 and colmax == 0:  # a zero column: D(k, k) is 0, nothing to do
            info, kp = info or k + 1, k
        else:
            kp = k
            if absakk < alpha * colmax:
                kp = _pivot(a, k, imax, absakk, colmax, alpha, hermitian)
            if kp < 0:  # a 2 x 2 block of rows k and k + 1, this row swapped into k + 1
                step, kp = 2, -kp - 1
            _interchange(a, k, k + step - 1, kp, hermitian)
            if step == 1:
                _eliminate_one(a, k, hermitian)
            else:
                (_eliminate_two_hermitian if hermitian else _eliminate_two)(a, k)
        ipiv[k : k + step] = kp + 1 if step == 1 else -(kp + 1)
        k += step
    if hermitian:
        a[xp.diag_indices(n)] = a.diagonal().real
    return a, ipiv, info


def _cabs1(x: Any) -> Any:
    """LAPACK's size of a complex number, |re| + |im| (izamax's, cabs1), |x| of a real one."""
    return xp.abs(x.real) + xp.abs(x.imag) if x.dtype.kind == "c" else xp.abs(x)


def _diagonal(a: Any, i: int, hermitian: bool) -> Any:
    return a[i, i].real if hermitian else a[i, i]


def _pivot(a: Any, k: int, imax: int, absakk: Any, colmax: Any, alpha: Any, hermitian: bool) -> int:
    """Bunch-Kaufman's choice where column k's diagonal entry is small: k, imax (a 1 x 1 block
    of row imax), or -imax - 1 (a 2 x 2 block of rows k and imax)."""
    rowmax = _cabs1(a[imax, k:imax]).max()  # row imax left of the diagonal...
    if imax < a.shape[-1] - 1:  # ...and column imax below it
        rowmax = max(rowmax, _cabs1(a[imax + 1 :, imax]).max())
    if absakk >= alpha * colmax * (colmax / rowmax):
        return k
    if _cabs1(_diagonal(a, imax, hermitian)) >= alpha * rowmax:
        return imax
    return -imax - 1


def _interchange(a: Any, k: int, kk: int, kp: int, hermitian: bool) -> None:
    """Rows and columns kk and kp swapped in the trailing lower triangle, as sytf2 (hetf2)
    does: the entries that cross the diagonal are conjugated in a hermitian matrix."""
    if kp == kk:
        return
    a[kp + 1 :, [kk, kp]] = a[kp + 1 :, [kp, kk]]
    column, row = a[kk + 1 : kp, kk].copy(), a[kp, kk + 1 : kp].copy()
    if hermitian:
        column, row = column.conj(), row.conj()
        a[kp, kk] = a[kp, kk].conj()
    a[kk + 1 : kp, kk], a[kp, kk + 1 : kp] = row, column
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if kk > k:  # a 2 x 2 block: its off-diagonal entry moves with the row
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _eliminate_one(a: Any, k: int, hermitian: bool) -> None:
    """The trailing matrix less ``x x^T / d`` (``x x^H / d``: BLAS syr's or her's rounding),
    and ``x / d``, for the 1 x 1 pivot d = a[k, k] and its column x below it."""
    d = 1 / _diagonal(a, k, hermitian)  # (a Python 1: d keeps a's precision)
    x = a[k + 1 :, k]
    a[k + 1 :, k + 1 :] += xp.tril(xp.outer(x, -d * (x.conj() if hermitian else x)))
    a[k + 1 :, k] = x * d


def _eliminate_two(a: Any, k: int) -> None:
    """The trailing matrix less the update of the 2 x 2 pivot of rows k and k + 1, written as
    sytf2 writes it (by columns j, each W's entries first)."""
    n = a.shape[-1]
    if k >= n - 2:
        return
    d21 = a[k + 1, k]
    d11 = a[k + 1, k + 1] / d21
    d22 = a[k, k] / d21
    t = 1 / (d11 * d22 - 1)
    d21 = t / d21
    for j in range(k + 2, n):
        wk = d21 * (d11 * a[j, k] - a[j, k + 1])
        wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
        a[j:, j] = a[j:, j] - a[j:, k] * wk - a[j:, k + 1] * wkp1  # (LAPACK's order)
        a[j, k], a[j, k + 1] = wk, wkp1


def _eliminate_two_hermitian(a: Any, k: int) -> None:
    """``_eliminate_two`` as hetf2 writes it: the block's off-diagonal entry scaled to modulus
    1, the diagonal's real parts, and the update by the conjugates of W."""
    n = a.shape[-1]
    if k >= n - 2:
        return
    d = xp.hypot(a[k + 1, k].real, a[k + 1, k].imag)
    d11 = a[k + 1, k + 1].real / d
    d22 = a[k, k].real / d
    tt = 1 / (d11 * d22 - 1)
    d21 = a[k + 1, k] / d
    d = tt / d
    for j in range(k + 2, n):
        wk = d * (d11 * a[j, k] - d21 * a[j, k + 1])
        wkp1 = d * (d22 * a[j, k + 1] - d21.conj() * a[j, k])
        a[j:, j] = a[j:, j] - a[j:, k] * wk.conj() - a[j:, k + 1] * wkp1.conj()
        a[j, k], a[j, k + 1] = wk, wkp1


class LDLFactor(Function):
    """``(LD, pivots, info)`` of each matrix (a loop over the batch: the pivots differ per
    matrix), LD's strict upper triangle zero, as PyTorch's; with ``check``, a singular matrix
    raises, here so that a jitted step checks again at each replay. No derivative."""

    backward_name = "NotImplemented"  # (PyTorch's autograd fallback)
    complex_safe = True  # (its backward only raises)

    @staticmethod
    def forward(ctx, a, hermitian=False, check=None):
        where = backend.device_of(a)
        n = a.shape[-1]  # (sytf2 is a loop over entries: the host's work, on a copy)
        matrices = xp.array(backend.to_host(a), copy=True).reshape(math.prod(a.shape[:-2]), n, n)
        ipivs = xp.zeros((len(matrices), n), dtype=int32)
        infos = xp.zeros(len(matrices), dtype=int32)
        for i, matrix in enumerate(matrices):
            _, ipivs[i], infos[i] = _sytf2(matrix, hermitian)
        info = infos.reshape(a.shape[:-2])
        if check is not None:
            _raise_if_singular(check, info)
        results = xp.tril(matrices).reshape(a.shape), ipivs.reshape(a.shape[:-1]), info
        return tuple(backend.to_device(r, where) for r in results)

    @staticmethod
    def backward(ctx, grad, _pivots, _info):
        raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


@empty_in_any_dtype()
def ldl_factor_ex(
    A: Tensor, *, hermitian: bool = False, check_errors: bool = False
) -> linalg_ldl_factor_ex:
    """The LDL factorization of a symmetric matrix (or batch), of its lower triangle, as
    ``torch.linalg.ldl_factor_ex``: ``(LD, pivots, info)``, info (int32) the 1-based index of
    the first zero block of D (the matrix is singular), 0 where there is none; with
    ``check_errors`` a nonzero info raises. LAPACK's Bunch-Kaufman pivots (see the module);
    no derivative. A complex matrix is taken as symmetric, or with ``hermitian`` as hermitian
    (its diagonal's imaginary part ignored, D's diagonal real); a real one is symmetric either
    way.

    >>> import scratchgrad as sg
    >>> sg.linalg.ldl_factor_ex(sg.tensor([[0.0, 1.0], [1.0, 0.0]])).pivots
    tensor([-2, -2], dtype=scratchgrad.int32)
    """
    _check_matrix("torch.linalg.ldl_factor_ex", A)
    check = "torch.linalg.ldl_factor_ex" if check_errors else None
    return linalg_ldl_factor_ex(*LDLFactor.apply(A, hermitian=hermitian, check=check))


@empty_in_any_dtype()
def ldl_factor(A: Tensor, *, hermitian: bool = False) -> linalg_ldl_factor:
    """``(LD, pivots)`` of ``ldl_factor_ex``, as ``torch.linalg.ldl_factor``: a singular
    matrix (a zero block of D) raises ``LinAlgError`` (PyTorch 2.13 fails there with an
    internal assert, "Unknown error code").

    >>> import scratchgrad as sg
    >>> sg.linalg.ldl_factor(sg.tensor([[4.0, 2.0], [2.0, 3.0]])).LD
    tensor([[4.0000, 0.0000],
            [0.5000, 2.0000]])
    """
    _check_matrix("torch.linalg.ldl_factor_ex", A)
    LD, pivots, _ = LDLFactor.apply(A, hermitian=hermitian, check="torch.linalg.ldl_factor")
    return linalg_ldl_factor(LD, pivots)


def _check_matrix(op: str, A: Tensor) -> None:
    """PyTorch's checks of ``A`` (and of ldl_solve's ``LD``): square, real or complex."""
    check_input(op, A, square=True, any_dtype=True)
    if A.dtype.kind != "c":
        check_floating(op, A)


def _raise_if_singular(op: str, info: Any) -> None:
    codes = info.reshape(-1)
    if codes.any():
        element = int(codes.nonzero()[0][0])
        where = f"(Batch element {element}): " if info.ndim else ""
        raise LinAlgError(
            f"{op}: {where}The factorization could not be completed because the input is "
            f"singular: the diagonal block D({codes[element]}, {codes[element]}) is zero."
        )


def _sytrs(ld: Any, ipiv: Any, b: Any, hermitian: bool) -> Any:
    """LAPACK's sytrs (lower) of one factorization, or hetrs's where ``hermitian``: ``b``
    (n, k) overwritten with the solution of ``A X = b``, first ``L D Y = P b``, then
    ``L^T P^T X = Y`` (``L^H``)."""
    n, k = ld.shape[-1], 0
    while k < n:  # L D Y = P b
        if ipiv[k] > 0:
            _swap(b, k, ipiv[k] - 1)
            b[k + 1 :] -= xp.outer(ld[k + 1 :, k], b[k])
            b[k] /= ld[k, k].real if hermitian else ld[k, k]
            k += 1
            continue
        _swap(b, k + 1, -ipiv[k] - 1)
        b[k + 2 :] -= xp.outer(ld[k + 2 :, k], b[k])
        b[k + 2 :] -= xp.outer(ld[k + 2 :, k + 1], b[k + 1])
        akm1k = ld[k + 1, k]  # D's 2 x 2 block [[akm1, akm1k^H], [akm1k, ak]] (^T)
        upper = akm1k.conj() if hermitian else akm1k
        akm1, ak = ld[k, k] / upper, ld[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = b[k] / upper, b[k + 1] / akm1k
        b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    lt = ld.conj() if hermitian else ld
    k = n - 1
    while k >= 0:  # L^T P^T X = Y
        b[k] -= lt[k + 1 :, k] @ b[k + 1 :]
        if ipiv[k] > 0:
            _swap(b, k, ipiv[k] - 1)
            k -= 1
            continue
        b[k - 1] -= lt[k + 1 :, k - 1] @ b[k + 1 :]
        _swap(b, k, -ipiv[k] - 1)
        k -= 2
    return b


def _swap(b: Any, i: int, j: int) -> None:
    if i != j:
        b[[i, j]] = b[[j, i]]


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` from ``ldl_factor``'s ``(LD, pivots)`` of ``A``, as
    ``torch.linalg.ldl_solve`` (LAPACK's sytrs, or hetrs for a complex ``LD`` with
    ``hermitian``, as it was factored), the batch dims broadcast; no derivative.

    >>> import scratchgrad as sg
    >>> LD, pivots = sg.linalg.ldl_factor(sg.tensor([[4.0, 2.0], [2.0, 3.0]]))
    >>> sg.linalg.ldl_solve(LD, pivots, sg.tensor([[6.0], [5.0]]))
    tensor([[1.],
            [1.]])
    """
    op = "torch.linalg.ldl_solve"  # (PyTorch's checks, in its order)
    _check_matrix(op, LD)
    if not isinstance(B, Tensor):
        raise TypeError(
            f"linalg_ldl_solve(): argument 'B' (position 3) must be Tensor, not {type(B).__name__}"
        )
    if B.dtype != LD.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type "
            f"{torch_name(B.dtype)} and A of type {torch_name(LD.dtype)} instead."
        )
    n = LD.shape[-1]
    if B.size(-2) != n:  # (a B of fewer than 2 dims raises size's IndexError, as PyTorch's)
        raise RuntimeError(
            f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} but each b matrix "
            f"is {B.shape[-2]} by {B.shape[-1]}"
        )
    _check_pivots(op, LD, pivots)
    check_system(op, LD, B, True)  # (the batch dims)
    # the pivots as a column (*, n, 1), so that vmap lines their batch up as a matrix's
    return LDLSolve.apply(LD, pivots.unsqueeze(-1), B, hermitian=hermitian)


class LDLSolve(Function):
    """LAPACK's sytrs of each system, the batch dims of LD, the pivots (a column each) and B
    broadcast (hetrs's where ``hermitian``). No derivative."""

    backward_name = "NotImplemented"  # (PyTorch's autograd fallback)
    complex_safe = True  # (its backward only raises)

    @staticmethod
    def forward(ctx, ld, pivots, b, hermitian=False):
        where = backend.device_of(b)
        ld, pivots, b = (backend.to_host(x) for x in (ld, pivots, b))  # (sytrs: a loop too)
        batch = xp.broadcast_shapes(ld.shape[:-2], pivots.shape[:-2], b.shape[:-2])
        n, k = b.shape[-2:]
        solution = xp.array(xp.broadcast_to(b, (*batch, n, k))).reshape(-1, n, k)
        lds = xp.broadcast_to(ld, (*batch, n, n)).reshape(-1, n, n)
        ipivs = xp.broadcast_to(pivots, (*batch, n, 1)).reshape(-1, n)
        for x, factors, order in zip(solution, lds, ipivs):
            _sytrs(factors, order, x, hermitian and ld.dtype.kind == "c")
        return backend.to_device(solution.reshape(*batch, n, k), where)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


def _check_pivots(op: str, LD: Tensor, pivots: Tensor) -> None:
    if pivots.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {torch_name(pivots.dtype)}")
    if pivots.shape != LD.shape[:-1]:
        raise RuntimeError(
            f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
            f"shape {list(pivots.shape)} instead"
        )
