"""PyTorch's linear algebra outside ``torch.linalg``: ``logdet``, ``cholesky_solve``,
``cholesky_inverse``, ``lu_unpack`` and the older APIs ``slogdet``, ``pinverse``, ``cholesky``,
``qr``, ``svd`` (U, S, V), ``triangular_solve`` (b first), ``lu``, ``lu_solve`` (b first) and
``vander`` (decreasing powers), with
their defaults, result types, messages and deprecation warnings, built on
``scratchgrad.linalg``; and the removed ``eig``, ``symeig``, ``solve``, ``lstsq`` and
``matrix_rank``, which raise PyTorch's error pointing to their ``torch.linalg`` successors."""

from __future__ import annotations

import math
import warnings
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.backend import namespace
from scratchgrad.creation import zeros
from scratchgrad.dtypes import torch_name
from scratchgrad.linalg.checks import (
    LinAlgError,
    check_diagonal,
    check_floating,
    check_input,
)
from scratchgrad.linalg.decompositions import cholesky as linalg_cholesky
from scratchgrad.linalg.decompositions import qr as linalg_qr
from scratchgrad.linalg.decompositions import svd as linalg_svd
from scratchgrad.linalg.decompositions import svdvals
from scratchgrad.linalg.derived import pinv
from scratchgrad.linalg.derived import slogdet as linalg_slogdet
from scratchgrad.linalg.lu import Permutation, lu_factor_ex, unpack
from scratchgrad.linalg.lu import lu_solve as linalg_lu_solve
from scratchgrad.linalg.systems import broadcast_batch, solve_triangular
from scratchgrad.tensor import Tensor, broadcast_shapes, cat, takes_out, where

# torch.return_types' names
slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
qr_result = namedtuple("qr", ["Q", "R"])
svd_result = namedtuple("svd", ["U", "S", "V"])
triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
lu_with_info_result = namedtuple("_lu_with_info", ["LU", "pivots", "info"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])


@contextmanager
def renamed(op: str) -> Iterator[None]:
    """A ``LinAlgError`` raised inside, named after ``op``, the function the user called (as
    PyTorch names it), instead of the ``scratchgrad.linalg`` function that raised it."""
    try:
        yield
    except LinAlgError as error:
        raise LinAlgError(f"{op}:{str(error).partition(':')[2]}") from None


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"torch.{old} is deprecated in favor of torch.linalg.{new} and will be removed in a "
        "future PyTorch release.",
        UserWarning,
        stacklevel=3,
    )


def slogdet(A: Tensor) -> slogdet_result:
    """``linalg.slogdet`` as ``torch.slogdet``, whose result type is ``slogdet``.

    >>> import scratchgrad as sg
    >>> sg.slogdet(sg.tensor([[-2.0, 0.0], [0.0, 1.0]])).sign
    tensor(-1.)
    """
    return slogdet_result(*linalg_slogdet(A))


def logdet(A: Tensor) -> Tensor:
    """The natural log of the determinant, as ``torch.logdet``: nan where it is negative and
    -inf where it is 0 (there the gradient raises ``LinAlgError``, as ``slogdet``'s).

    >>> import scratchgrad as sg
    >>> sg.logdet(sg.tensor([[[2.0, 0.0], [0.0, 1.0]], [[-2.0, 0.0], [0.0, 1.0]]]))
    tensor([0.6931,    nan])
    """
    check_input("logdet", A, square=True)
    sign, logabsdet = linalg_slogdet(A)
    return where(sign == -1, math.nan, logabsdet)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudo-inverse, as ``torch.pinverse``: ``linalg.pinv`` with singular values at or
    below ``rcond`` times the largest taken as 0.

    >>> import scratchgrad as sg
    >>> sg.pinverse(sg.tensor([[2.0, 0.0], [0.0, 1e-20]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    if input.ndim < 2 or input.dtype.kind != "f" or input.dtype.itemsize < 4:
        raise RuntimeError(
            f"linalg.pinv({torch_name(input.dtype)}{{{list(input.shape)}}}): expected a tensor "
            "with 2 or more dimensions of float, double, cfloat or cdouble types"
        )
    return pinv(input, rtol=rcond)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor, as the deprecated ``torch.cholesky``: ``linalg.cholesky`` (which
    reads only the lower triangle, or the upper one with ``upper``) under its own name.

    >>> import scratchgrad as sg
    >>> sg.cholesky(sg.tensor([[4.0, 2.0], [2.0, 5.0]]), upper=True)
    tensor([[2., 1.],
            [0., 2.]])
    """
    _deprecated("cholesky", "cholesky")
    if isinstance(input, Tensor) and not input.numel():
        return input.clone()  # NOTE: as PyTorch's, whatever its dtype and shape
    check_input("cholesky", input, square=True)
    with renamed("cholesky"):
        return linalg_cholesky(input, upper=upper)


class CholeskySolve(Function):
    """``X`` with ``L L^T X = B``, of ``L`` only the lower triangle read, the batch dims
    broadcast. Its gradients are PyTorch's: ``gB`` solves the same system for ``grad``, and
    ``gL = -(M + M^T) L`` with ``M = gB X^T``, not kept to the triangle (the gradient with
    respect to every entry of ``L`` in ``(L L^T)^-1 B``)."""

    backward_name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx, b, factor):
        module = namespace(factor)
        lower, b = broadcast_batch(module.tril(factor), b)
        x = module.linalg.solve(lower.swapaxes(-1, -2), module.linalg.solve(lower, b))
        ctx.save_for_backward(factor, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        factor, x = ctx.saved_tensors
        grad_b = CholeskySolve.apply(grad, factor)
        if not ctx.needs_input_grad[1]:
            return grad_b, None
        m = grad_b @ x.mT
        return grad_b, -((m + m.mT) @ factor)


def _check_factor(op: str, factor: Tensor, explain) -> None:
    # every member's factor inside vmap; a jitted step checks on each call
    capture_hook.call(_check_factor_diagonal, op, factor._checked_values(), explain)


def _check_factor_diagonal(op: str, factor: Any, explain) -> None:
    check_diagonal(op, factor.diagonal(0, -2, -1), explain)


def _singular(index: int) -> str:
    return (
        f"The diagonal element {index} is zero, the inversion could not be completed because "
        "the input matrix is singular."
    )


def _no_unique_solution(index: int) -> str:
    return (
        f"The diagonal element {index} of the Cholesky factor is zero, so the system has no "
        "unique solution (PyTorch returns inf or nan there)"
    )


def _check_b_and_A(op: str, b: Tensor, A: Tensor) -> None:
    """PyTorch's checks of ``b`` and ``A`` in the old solvers, after their number of dims, in
    its order: the dtypes alike, the shapes, then the dtype's kernel."""
    if b.dtype != A.dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type {torch_name(b.dtype)} "
            f"and A of type {torch_name(A.dtype)} instead."
        )
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices"
        )
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for {op}: each A matrix is {A.shape[-2]} by "
            f"{A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}"
        )
    broadcast_shapes(b.shape[:-2], A.shape[:-2])
    check_floating(op, A)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` given the Cholesky factor of ``A``, as
    ``torch.cholesky_solve(B, L)``: ``A = L L^T`` (lower triangle of ``input2`` read), or with
    ``upper``, ``A = U^T U`` (upper triangle read); the batch dims broadcast. The factor's
    gradient is PyTorch's, not kept to its triangle.

    Unlike PyTorch, which returns inf or nan, a zero on the factor's diagonal raises
    ``LinAlgError``.

    >>> import scratchgrad as sg
    >>> L = sg.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> sg.cholesky_solve(L @ L.mT @ sg.tensor([[1.0], [2.0]]), L)
    tensor([[1.],
            [2.]])
    """
    for name, x in (("b", input), ("u", input2)):
        if x.ndim < 2:
            raise RuntimeError(
                f"{name} should have at least 2 dimensions, but has {x.ndim} dimensions instead"
            )
    _check_b_and_A("cholesky_solve", input, input2)
    _check_factor("cholesky_solve", input2, _no_unique_solution)
    return CholeskySolve.apply(input, input2.mT if upper else input2)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A`` given its Cholesky factor, as ``torch.cholesky_inverse``:
    ``(L L^T)^-1`` (lower triangle read), or with ``upper``, ``(U^T U)^-1`` (upper triangle
    read). The factor's gradient is PyTorch's, not kept to its triangle.

    >>> import scratchgrad as sg
    >>> sg.cholesky_inverse(sg.tensor([[2.0, 0.0], [0.0, 1.0]]))
    tensor([[0.2500, 0.0000],
            [0.0000, 1.0000]])
    """
    check_input("cholesky_inverse", input, square=True)
    _check_factor("cholesky_inverse", input, _singular)
    eye = input.new_ones(input.shape[-1]).diag_embed()
    return CholeskySolve.apply(eye, input.mT if upper else input)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def qr(input: Tensor, some: bool = True) -> qr_result:
    """The QR factorization, as the deprecated ``torch.qr``: ``linalg.qr`` in mode 'reduced',
    or 'complete' if not ``some``.

    >>> import scratchgrad as sg
    >>> sg.qr(sg.eye(2)).R
    tensor([[1., 0.],
            [0., 1.]])
    """
    _deprecated("qr", "qr")
    return qr_result(*linalg_qr(input, "reduced" if some else "complete"))


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> svd_result:
    """The singular value decomposition ``A = U diag(S) V^T``, as ``torch.svd`` (V, not
    ``linalg.svd``'s Vh): U and V of k = min(m, n) columns, or square if not ``some``. Without
    ``compute_uv``, only S, U and V being zeros of shapes (*, m, m) and (*, n, n).

    >>> import scratchgrad as sg
    >>> sg.svd(sg.tensor([[3.0, 0.0], [0.0, -4.0]])).S
    tensor([4., 3.])
    """
    if input.ndim < 2:
        raise RuntimeError(
            "linalg.svd: input should have at least 2 dimensions, but has "
            f"{input.ndim} dimensions instead"
        )
    if compute_uv:
        U, S, Vh = linalg_svd(input, full_matrices=not some)
        return svd_result(U, S, Vh.mT)
    S = svdvals(input)
    *batch, m, n = input.shape
    return svd_result(
        zeros(*batch, m, m, dtype=input.dtype), S, zeros(*batch, n, n, dtype=input.dtype)
    )


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the vector ``x``, its columns the powers ``x ** (N - 1)`` down
    to ``x ** 0`` (up, if ``increasing``), N columns (default ``len(x)``), as ``torch.vander``
    (NumPy's order, where ``torch.linalg.vander``'s is always increasing); integers and bools
    give int64. Polynomial features: ``vander(x, 4) @ coefficients`` evaluates a cubic.

    >>> import scratchgrad as sg
    >>> sg.vander(sg.tensor([1.0, 2.0, 3.0]))
    tensor([[1., 1., 1.],
            [4., 2., 1.],
            [9., 3., 1.]])
    """
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    columns = len(x) if N is None else N
    if columns < 0:
        raise RuntimeError("N must be non-negative.")
    powers = x.unsqueeze(1).expand(len(x), max(columns - 1, 0))
    out = cat([x.new_ones(len(x), 1), powers], 1).cumprod(1)[:, :columns]
    return out if increasing else out.flip(1)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def triangular_solve(
    input: Tensor,
    A: Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
) -> triangular_solve_result:
    """The solution of the triangular system ``A X = b`` (``A^T X = b`` with ``transpose``),
    as the deprecated ``torch.triangular_solve(b, A)``: ``linalg.solve_triangular`` with the
    arguments the other way round, upper triangular by default, and a copy of ``A``.

    Unlike PyTorch, which returns inf and nan, a zero on the diagonal raises ``LinAlgError``.

    >>> import scratchgrad as sg
    >>> U = sg.tensor([[2.0, 1.0], [0.0, 1.0]])
    >>> sg.triangular_solve(sg.tensor([[3.0], [1.0]]), U).solution
    tensor([[1.],
            [1.]])
    """
    _deprecated("triangular_solve", "solve_triangular")
    for name, x in (("b", input), ("A", A)):
        if x.ndim < 2:
            raise RuntimeError(
                f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it "
                f"has {x.ndim} dimensions instead"
            )
    _check_b_and_A("triangular_solve", input, A)
    batch = broadcast_shapes(input.shape[:-2], A.shape[:-2])
    with renamed("triangular_solve"):
        solution = solve_triangular(
            A.mT if transpose else A,
            input,
            upper=upper != transpose,
            unitriangular=unitriangular,
        )
    return triangular_solve_result(solution, A.expand((*batch, *A.shape[-2:])).clone())


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, *, out: Any = None) -> tuple:
    """``(LU, pivots)`` of ``A = P L U``, as the deprecated ``torch.lu``: ``linalg.lu_factor_ex``
    without raising for a singular matrix, and with ``get_infos`` its ``info`` too. ``out``:
    as many tensors, each resized and written by ``copy_`` (any dtype: PyTorch's Python
    function does that, not ``write_out``'s checks).

    >>> import scratchgrad as sg
    >>> sg.lu(sg.tensor([[1.0, 2.0], [2.0, 4.0]]), get_infos=True).info
    tensor(2, dtype=scratchgrad.int32)
    """
    _deprecated("lu", "lu_factor / torch.linalg.lu_factor_ex")
    LU, pivots, info = _lu_with_info(A, pivot)
    result = lu_with_info_result(LU, pivots, info) if get_infos else (LU, pivots)
    if out is None:
        return result
    if len(out) != len(result):
        raise TypeError(f"expected tuple of {len(result)} elements but got {len(out)}")
    for o, r in zip(out, result):
        o.resize_(r.shape).copy_(r)
    return out


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list (not out, a copy's target)
def _lu_with_info(A: Tensor, pivot: bool) -> tuple:
    """``linalg.lu_factor_ex``'s factors, as PyTorch's ``_lu_with_info`` under ``torch.lu``."""
    return lu_factor_ex(A, pivot=pivot)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """The solution of ``A X = b`` from ``lu_factor``'s ``(LU, pivots)`` of ``A``, as the
    deprecated ``torch.lu_solve``: ``linalg.lu_solve`` with ``b`` first.

    >>> import scratchgrad as sg
    >>> LU, pivots = sg.linalg.lu_factor(sg.tensor([[2.0, 0.0], [1.0, 1.0]]))
    >>> sg.lu_solve(sg.tensor([[2.0], [3.0]]), LU, pivots)
    tensor([[1.],
            [2.]])
    """
    _deprecated("lu_solve", "lu_solve")
    return linalg_lu_solve(LU_data, LU_pivots, b)


def lu_unpack(
    LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True
) -> lu_unpack_result:
    """``(P, L, U)`` from ``lu_factor``'s packed factors and pivots, as ``torch.lu_unpack``:
    ``P`` the permutation matrix ``(*, m, m)``, ``L`` ``(*, m, k)`` with ones on its diagonal,
    ``U`` ``(*, k, n)``, k = min(m, n); differentiable in ``LU_data``. Without ``unpack_data``
    L and U are empty, without ``unpack_pivots`` P is.

    >>> import scratchgrad as sg
    >>> P, L, U = sg.lu_unpack(*sg.linalg.lu_factor(sg.tensor([[1.0, 2.0], [3.0, 4.0]])))
    >>> P
    tensor([[0., 1.],
            [1., 0.]])
    """
    op = "torch.lu_unpack"
    if LU_data.ndim < 2:
        raise RuntimeError(
            f"{op}: Expected tensor with 2 or more dimensions. Got size: {list(LU_data.shape)} "
            "instead"
        )
    m, n = LU_data.shape[-2:]
    shape = (*LU_data.shape[:-2], min(m, n))
    if LU_pivots.dtype.name != "int32" or tuple(LU_pivots.shape) != shape:
        raise RuntimeError(
            f"{op}: LU_pivots is expected to be an int32 tensor of shape {list(shape)}, got "
            f"{LU_pivots.dtype.name} of shape {list(LU_pivots.shape)}. Note: this function is "
            "intended to be used with the output produced by torch.linalg.lu_factor"
        )
    empty = LU_data.new_zeros(0)
    L, U = unpack(LU_data) if unpack_data else (empty, empty)
    if unpack_pivots:
        P = Permutation.apply(LU_pivots, m=m, dtype=LU_data.dtype, caller="lu_unpack")
    else:
        P = empty
    return lu_unpack_result(P, L, U)


# PyTorch's out= (torch.svd(A, out=(U, S, V))); logdet, pinverse and vander have none, lu its own
for _name in (
    "cholesky", "cholesky_inverse", "cholesky_solve", "lu_solve", "lu_unpack", "qr", "slogdet",
    "svd", "triangular_solve",
):  # fmt: skip
    globals()[_name] = takes_out(globals()[_name])


# Removed in PyTorch 1.9, but still defined to raise PyTorch's RuntimeError naming what replaces
# them (torch._linalg_utils), so old code fails with directions, not an AttributeError
_REMOVED = "This function was deprecated since version 1.9 and is now removed. "


def matrix_rank(input: Tensor, tol: Any = None, symmetric: bool = False, *, out: Any = None):
    """Removed: raises PyTorch's RuntimeError pointing to ``linalg.matrix_rank``."""
    raise RuntimeError(
        f"{_REMOVED.rstrip()}\nPlease use the `torch.linalg.matrix_rank` function instead. "
        "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'."
    )


def solve(input: Tensor, A: Tensor, *, out: Any = None):
    """Removed: raises PyTorch's RuntimeError pointing to ``linalg.solve``."""
    raise RuntimeError(
        f"{_REMOVED}`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
        "`torch.linalg.solve` has its arguments reversed and does not return the LU "
        "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with "
        "`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be "
        "replaced with:\nX = torch.linalg.solve(A, B)"
    )


def lstsq(input: Tensor, A: Tensor, *, out: Any = None):
    """Removed: raises PyTorch's RuntimeError pointing to ``linalg.lstsq``."""
    raise RuntimeError(
        f"{_REMOVED}`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
        "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in "
        "the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, "
        "the residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
        "should be replaced with:\nX = torch.linalg.lstsq(A, B).solution"
    )


def symeig(input: Tensor, eigenvectors: bool = False, upper: bool = True, *, out: Any = None):
    """Removed: raises PyTorch's RuntimeError pointing to ``linalg.eigh`` and ``eigvalsh``."""
    raise RuntimeError(
        f"{_REMOVED}The default behavior has changed from using the upper triangular portion of "
        "the matrix by default to using the lower triangular portion.\n\n"
        "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
        "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
        "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
        "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"
    )


def eig(self: Tensor, eigenvectors: bool = False, *, e: Any = None, v: Any = None):
    """Removed: raises PyTorch's RuntimeError pointing to ``linalg.eig`` and ``eigvals``."""
    raise RuntimeError(
        f"{_REMOVED}`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` "
        "rather than real tensors mimicking complex tensors.\n\n"
        "L, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\n"
        "and\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)"
    )
