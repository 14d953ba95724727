"""The errors of ``scratchgrad.linalg`` and the checks its functions share: PyTorch's messages,
raised before anything is computed, and LAPACK's failures turned into ``LinAlgError`` naming the
batch element that failed."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from scratchgrad import backend
from scratchgrad.backend import namespace, xp
from scratchgrad.dtypes import torch_name
from scratchgrad.tensor import Tensor


class LinAlgError(RuntimeError):
    """A matrix on which a linear algebra function cannot work (singular, not positive-definite),
    as ``torch.linalg.LinAlgError``: a ``RuntimeError``, its message naming the function and,
    in a batch, the first matrix that failed.

    >>> import scratchgrad as sg
    >>> try:
    ...     sg.linalg.inv(sg.zeros(2, 2))
    ... except sg.linalg.LinAlgError as error:
    ...     print(str(error)[:42])
    linalg.inv: The diagonal element 1 is zero
    """


def check_input(
    op: str,
    A: Tensor,
    name: str = "A",
    square: bool = False,
    any_dtype: bool = False,
    integers_first: bool = False,
) -> None:
    """PyTorch's checks of a linalg function's matrix argument, in its order: a Tensor of at
    least 2 dims, square where ``square``, then of float32 or float64 (any dtype where
    ``any_dtype``: functions made of matrix products). With ``integers_first`` (``solve``,
    ``lu_solve``), an integer or bool tensor is refused before its shape is looked at."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be Tensor, not {type(A).__name__}")
    if integers_first and not backend.can_require_grad(A.dtype):
        check_floating(op, A)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{op}: {name} must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )
    if not any_dtype:
        check_floating(op, A)


# the functions whose 16-bit inputs PyTorch refuses with a RuntimeError of its own
_CHECKED_BY_PYTORCH = frozenset(
    {
        "linalg.inv",
        "linalg.slogdet",
        "logdet",
        "linalg.pinv",
        "linalg.matrix_rank",
        "linalg.lstsq",
        "linalg.matrix_exp",
        "linalg.matrix_norm",
    }
)


# the functions whose integer and bool inputs PyTorch lets through to its CPU kernel, whose
# dispatcher raises NotImplementedError naming the kernel: function -> kernel
_KERNELS = {
    "linalg.eigh": "linalg_eigh_cpu",
    "cholesky": "cholesky_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu",
    "cholesky_solve": "cholesky_solve_cpu",
    "triangular_solve": "triangular_solve_cpu",
    "linalg.solve_triangular": "triangular_solve_cpu",
    "linalg.lu": "lu_cpu",
    "torch.linalg.lu_factor": "lu_cpu",
    "torch.linalg.lu_factor_ex": "lu_cpu",
    "torch.linalg.householder_product": "orgqr_cpu",
}
# the kernels that only 16-bit matrices reach (PyTorch refuses integer ones before, as here)
_16BIT_KERNELS = {
    "linalg.cholesky": "cholesky_cpu",
    "linalg.qr": "geqrf_cpu",
    "linalg.svd": "linalg_svd_cpu",
    "linalg.solve": "lu_cpu",
    "linalg.det": "lu_cpu",
    "torch.linalg.ldl_factor_ex": "ldl_factor_kernel_cpu",
    "torch.linalg.ldl_solve": "ldl_solve_kernel_cpu",
}


def check_floating(
    op: str, x: Tensor, low_precision: bool = False, kernel: str | None = None
) -> None:
    """float32 or float64, as PyTorch's linalg functions on the CPU (no 16-bit LAPACK), or any
    floating dtype where ``low_precision``; an integer or bool ``x`` raises PyTorch's error
    class, a RuntimeError or the NotImplementedError of its kernel (``kernel``, or ``op``'s
    in ``_KERNELS``), as does a 16-bit one (also ``op``'s in ``_16BIT_KERNELS``). Complex
    matrices are not supported yet (README)."""
    kernel = kernel or _KERNELS.get(op)
    if x.dtype.kind == "c":
        raise RuntimeError(
            f"{op}: complex tensors are not supported by scratchgrad yet (linalg takes real "
            f"matrices), got {torch_name(x.dtype)}"
        )
    if not backend.is_floating(x.dtype):
        if kernel:
            raise kernel_error(kernel, x.dtype)
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {torch_name(x.dtype)}"
        )
    if x.dtype.itemsize < 4 and not low_precision:
        kernel = kernel or _16BIT_KERNELS.get(op)
        if kernel:
            raise kernel_error(kernel, x.dtype)
        # a RuntimeError where PyTorch checks the dtype itself; where its LAPACK kernel has no
        # 16-bit instance, the dispatcher's NotImplementedError (a RuntimeError too)
        kind = RuntimeError if op in _CHECKED_BY_PYTORCH else NotImplementedError
        raise kind(f"{op}: Low precision dtypes not supported. Got {torch_name(x.dtype)}")


def kernel_error(kernel: str, dtype: Any) -> NotImplementedError:
    """PyTorch's dispatcher's error for a CPU ``kernel`` without an instance for ``dtype``
    (its words alone: it does not name the function called)."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(dtype)}'")


def empty_in_any_dtype(integers: bool = False) -> Callable[[Callable], Callable]:
    """Decorates a linalg function whose PyTorch kernel returns at once for an empty matrix,
    before it looks at the dtype: there a float16 or bfloat16 matrix (with ``integers``, an
    integer or bool one too) gives an empty result of its dtype (a det of 1s, a cond of 0s),
    where one with entries raises. Such a matrix (the first argument, and the arguments of its
    dtype) is computed as float32 here, and the float32 results are cast back."""

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapped(A: Any, *args: Any, **kwargs: Any) -> Any:
            empty = isinstance(A, Tensor) and not A._checked_values().size  # (all of vmap's)
            if empty and _passes_empty(A.dtype, integers):
                given = [_recast(x, A.dtype, backend.float32) for x in (A, *args)]
                named = {k: _recast(x, A.dtype, backend.float32) for k, x in kwargs.items()}
                out = function(*given, **named)
                if isinstance(out, tuple):  # (a named tuple of results)
                    return type(out)(*(_recast(x, backend.float32, A.dtype) for x in out))
                return _recast(out, backend.float32, A.dtype)
            return function(A, *args, **kwargs)

        return wrapped

    return decorate


def _passes_empty(dtype: Any, integers: bool) -> bool:
    if backend.is_floating(dtype):
        return dtype.itemsize == 2
    return integers and dtype.kind != "c"


def _recast(x: Any, dtype: Any, to: Any) -> Any:
    """``x`` as ``to`` if it is a tensor of ``dtype``, else as it is."""
    return x.to(to) if isinstance(x, Tensor) and x.dtype == dtype else x


def check_same_dtype(op: str, A: Tensor, B: Tensor, names: str = "AB") -> None:
    if A.dtype != B.dtype:
        a, b = names
        raise RuntimeError(
            f"{op}: Expected {a} and {b} to have the same dtype, but found {a} of type "
            f"{torch_name(A.dtype)} and {b} of type {torch_name(B.dtype)} instead"
        )


def lapack(op: str, explain: Callable[[Any], str], compute: Callable, *arrays: Any) -> Any:
    """``compute(*arrays)``; where LAPACK fails on a matrix, a ``LinAlgError`` naming ``op``,
    the first batch element that failed and ``explain(matrix)``'s reason. The arrays share
    their batch dims (the caller broadcasts them first)."""
    try:
        return compute(*arrays)
    except xp.linalg.LinAlgError:
        pass
    batch = arrays[0].shape[:-2]
    # the count is spelled out: reshape cannot infer -1 where a matrix is empty (B of 0 columns)
    matrices = [a.reshape(math.prod(batch), *a.shape[-2:]) for a in arrays]
    for i in range(len(matrices[0])):  # the failure path only: find which matrix failed
        try:
            compute(*(m[i] for m in matrices))
        except xp.linalg.LinAlgError:
            where = f"(Batch element {i}): " if batch else ""
            raise LinAlgError(f"{op}: {where}{explain(matrices[0][i])}") from None
    raise LinAlgError(f"{op}: the factorization failed")  # a batch fails where no matrix does


def zero_pivot(matrix: Any) -> int:
    """The (1-based) index of the first zero on the diagonal of U in ``matrix = P L U`` with
    partial pivoting, as LAPACK's getrf reports it (Gaussian elimination, once per column)."""
    u = matrix.copy()
    n = u.shape[-1]
    for k in range(n):  # only to word an error: the matrix is known to be singular
        pivot = k + int(xp.argmax(xp.abs(u[k:, k])))
        if u[pivot, k] == 0:
            return k + 1
        u[[k, pivot]] = u[[pivot, k]]
        u[k + 1 :] -= xp.outer(u[k + 1 :, k] / u[k, k], u[k])
    return n


def singular(action: str) -> Callable[[Any], str]:
    """Explains an inversion's failure as PyTorch does."""

    def explain(matrix: Any) -> str:
        return (
            f"The diagonal element {zero_pivot(matrix)} is zero, the {action} could not be "
            "completed because the input matrix is singular."
        )

    return explain


def not_positive_definite(matrix: Any) -> str:
    """Explains a Cholesky factorization's failure as PyTorch does: the order of the first
    leading minor that is not positive-definite."""
    return (
        "The factorization could not be completed because the input is not positive-definite "
        f"(the leading minor of order {leading_minor(matrix)} is not positive-definite)."
    )


def leading_minor(matrix: Any) -> int:
    """The order of the first leading minor of ``matrix`` (its lower triangle read) that is not
    positive-definite, as LAPACK's potrf reports it; 0 if there is none."""
    orders = range(1, len(matrix) + 1)
    return next((k for k in orders if not _is_positive_definite(matrix[:k, :k])), 0)


def check_diagonal(op: str, diagonal: Any, explain: Callable[[int], str]) -> None:
    """A ``LinAlgError`` where a triangular factor has a zero on its ``diagonal`` (*, n): it
    names ``op``, the first batch element that has one, and ``explain(i)``, i the (1-based)
    index of its first zero."""
    zero = diagonal == 0
    if not zero.any():
        return
    flat = zero.reshape(-1, zero.shape[-1])
    element = int(flat.any(axis=-1).argmax())
    where = f"(Batch element {element}): " if zero.ndim > 1 else ""
    raise LinAlgError(f"{op}: {where}{explain(int(flat[element].argmax()) + 1)}")


def _is_positive_definite(matrix: Any) -> bool:
    try:
        factor_cholesky(matrix)
    except xp.linalg.LinAlgError:
        return False
    return True


def factor_cholesky(a: Any) -> Any:
    """The Cholesky factors of ``a`` (*, n, n); ``LinAlgError`` where one is not
    positive-definite as LAPACK's potrf decides it. NumPy's batched wrapper lets a NaN pivot
    through and its blocked factorization turns an infinite column into inf and 0 (an all-inf
    matrix "factors"), so a factor with a diagonal that is not finite is computed again
    column by column, as potrf's unblocked form."""
    module = namespace(a)
    out = module.linalg.cholesky(a)
    if not module.isfinite(module.diagonal(out, axis1=-2, axis2=-1)).all():
        return _unblocked_cholesky(a)  # (the rare path only)
    return out


def _unblocked_cholesky(a: Any) -> Any:
    """The Cholesky factors of ``a`` (*, n, n) a column at a time, as LAPACK's potf2 computes
    them (an inf entry makes inf / inf, NaN, where it meets another); ``LinAlgError`` at the
    first pivot that is not positive, NaN included."""
    module = namespace(a)
    out = module.tril(a)
    for j in range(a.shape[-1]):
        row = out[..., j, :j]
        pivot = a[..., j, j] - (row * row).sum(-1)
        if not (pivot > 0).all():
            raise xp.linalg.LinAlgError("not positive-definite")
        out[..., j, j] = module.sqrt(pivot)
        rest = a[..., j + 1 :, j] - (out[..., j + 1 :, :j] @ row[..., None])[..., 0]
        out[..., j + 1 :, j] = rest / out[..., j, j][..., None]
    return out
