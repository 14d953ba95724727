"""Functions of a matrix built on the solvers and factorizations: ``det``, ``slogdet``,
``pinv``, ``lstsq``, ``matrix_rank``, ``matrix_power``."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.backend import int64, namespace, xp
from scratchgrad.dtypes import torch_name
from scratchgrad.linalg.checks import (
    LinAlgError,
    check_floating,
    check_input,
    empty_in_any_dtype,
)
from scratchgrad.linalg.decompositions import SVD, eigvalsh, svdvals
from scratchgrad.linalg.systems import Solve, inv, is_vector_rhs
from scratchgrad.tensor import Tensor, broadcast_shapes, cat, where

linalg_slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


class Det(Function):
    """``det(A)``; its gradient ``grad`` times the cofactor matrix (``det(A) A^-T``)."""

    backward_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, a):
        module = namespace(a)
        out = module.asarray(module.linalg.det(a))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, d = ctx.saved_tensors
        return _det_backward(grad, d, a)


def _det_backward(grad: Tensor, d: Tensor, a: Tensor) -> Tensor:
    """PyTorch's ``linalg_det_backward``: ``grad det(A) A^-T`` by a solve where A is
    invertible, and where it is (nearly) singular, through its SVD: ``det(U) det(Vh) U
    diag(prod of the other singular values) Vh``, which needs no inverse."""
    if a.numel() == 0:
        return a.new_zeros(a.shape)
    singular = (d.abs() < 100 * xp.finfo(a.dtype).eps).array
    if not singular.any():
        return _cofactor_by_solve(a, grad * d)
    if singular.all():
        return _cofactor_by_svd(a, grad)
    # a batch of both: each path gets a harmless stand-in for the matrices it does not own
    mask = Tensor._make(singular[..., None, None])
    n = a.shape[-1]
    eye = a.new_ones(n).diag_embed()
    distinct = a.new_ones(n).cumsum(-1).diag_embed()  # distinct singular values
    by_svd = _cofactor_by_svd(where(mask, a, distinct), grad)
    by_solve = _cofactor_by_solve(where(mask, eye, a), grad * d)
    return where(mask, by_svd, by_solve)


def _cofactor_by_solve(a: Tensor, scale: Tensor) -> Tensor:
    """``scale A^-T``: A^T X = scale I."""
    eye = a.new_ones(a.shape[-1]).diag_embed()
    return Solve.apply(a.mT, scale.unsqueeze(-1).unsqueeze(-1) * eye)


def _cofactor_by_svd(a: Tensor, grad: Tensor) -> Tensor:
    u, s, vh = SVD.apply(a, full_matrices=True)
    alpha = Det.apply(u) * Det.apply(vh) * grad
    return (u * (alpha.unsqueeze(-1) * _products_of_the_others(s)).unsqueeze(-2)) @ vh


def _products_of_the_others(s: Tensor) -> Tensor:
    """Entry i: the product of all entries of the last dim but the i-th, without dividing
    (some may be 0): the running products from the left and from the right."""
    n = s.shape[-1]
    one = s.new_ones(*s.shape[:-1], 1)
    before = cat([one, s.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    after = cat([s.narrow(-1, 1, n - 1), one], -1).flip(-1).cumprod(-1).flip(-1)
    return before * after


@empty_in_any_dtype()
def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix (or of each in a batch), as ``torch.linalg.det``;
    differentiable also at singular matrices, through the SVD: the cofactor matrix, as
    PyTorch's recorded backward (``create_graph=True``) gives it. (PyTorch's first-order
    backward gives 0 at an exactly singular matrix, which is wrong for rank n - 1.)

    >>> import scratchgrad as sg
    >>> sg.linalg.det(sg.tensor([[2.0, 1.0], [1.0, 3.0]]))
    tensor(5.)
    """
    check_input("linalg.det", A, square=True)
    return Det.apply(A)


class Slogdet(Function):
    """``(sign, log|det A|)``; the gradient of the log: ``grad A^-T``. The sign is piecewise
    constant: its gradient is zero."""

    backward_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx, a):
        module = namespace(a)
        sign, logabsdet = module.linalg.slogdet(a)
        ctx.save_for_backward(a)
        return module.asarray(sign), module.asarray(logabsdet)

    @staticmethod
    def backward(ctx, grad_sign, grad_logabsdet):
        (a,) = ctx.saved_tensors
        try:
            return _cofactor_by_solve(a, grad_logabsdet)
        except LinAlgError as error:  # PyTorch returns inf and nan there
            raise LinAlgError(
                "linalg.slogdet: the gradient of logabsdet at a singular matrix is infinite "
                f"({error})"
            ) from None


def slogdet(A: Tensor) -> linalg_slogdet:
    """The sign and the natural log of the absolute value of the determinant, as
    ``torch.linalg.slogdet``; for a singular matrix (0, -inf), where the gradient of logabsdet
    raises ``LinAlgError`` (PyTorch's is inf and nan).

    >>> import scratchgrad as sg
    >>> sg.linalg.slogdet(sg.tensor([[-2.0, 0.0], [0.0, 1.0]]))
    linalg_slogdet(sign=tensor(-1.), logabsdet=tensor(0.6931))
    """
    check_input("linalg.slogdet", A, square=True)
    return linalg_slogdet(*Slogdet.apply(A))


def _tolerance(s: Any, shape: tuple, atol: float | None, rtol: float | None) -> Any:
    """PyTorch's cut-off for the singular values ``s`` (descending; an array or a tensor) of
    matrices of ``shape``: ``max(atol, rtol * largest)``, where rtol is eps * max(m, n) if
    neither is given, and 0 if only a positive atol is."""
    if rtol is None:  # a Python float: a NumPy scalar times a device array would go to NumPy
        eps = float(xp.finfo(s.dtype).eps)
        rtol = 0.0 if atol is not None and atol > 0 else eps * max(shape[-2:])
    largest = s[..., :1] if s.shape[-1] else s
    return (rtol * largest).clip(min=0.0 if atol is None else atol)


def _one_kind_of_tolerance(op: str, name: str, atol: Any, rtol: Any) -> None:
    """PyTorch's overloads take the older single tolerance ``name`` or atol and rtol."""
    if atol is not None or rtol is not None:
        raise TypeError(f"{op}: {name} cannot be given with atol or rtol")


def _check_one_value(op: str, **tolerances: Any) -> None:
    """Tolerances are numbers or one-value tensors here (PyTorch's may also be a tensor of one
    value per matrix of the batch)."""
    for name, x in tolerances.items():
        if isinstance(x, Tensor) and x.numel() != 1:
            raise NotImplementedError(
                f"{op}: {name} of shape {tuple(x.shape)}: a tolerance per matrix is not "
                "supported; pass a number or a tensor of one value"
            )


class Pinv(Function):
    """The pseudo-inverse from the SVD, singular values at or below the tolerance taken as 0;
    PyTorch's ``pinv_backward``."""

    backward_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, a, atol, rtol):
        module = namespace(a)
        u, s, vh = module.linalg.svd(a, full_matrices=False)
        kept = s > _tolerance(s, a.shape, atol, rtol)
        inverted = module.where(kept, 1 / module.where(kept, s, 1), 0).astype(a.dtype)
        out = (vh.swapaxes(-1, -2) * inverted[..., None, :]) @ u.swapaxes(-1, -2)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, p = ctx.saved_tensors
        m, n = a.shape[-2:]
        grad_t = grad.mT
        if m <= n:
            k = grad_t @ p
            kp = k @ p.mT
            return -(p @ k).mT + kp - (a @ p) @ kp + (p.mT @ p) @ (grad_t - k @ a)
        k = p @ grad_t
        pk = p.mT @ k
        return -(k @ p).mT + ((grad_t - a @ k) @ p) @ p.mT + pk - (pk @ p) @ a


def pinv(
    A: Tensor,
    rcond: float | None = None,
    hermitian: bool = False,
    *,
    atol: float | None = None,
    rtol: float | None = None,
) -> Tensor:
    """The Moore-Penrose pseudo-inverse of a matrix (or batch), as ``torch.linalg.pinv``:
    singular values at or below ``max(atol, rtol * largest)`` count as zero (rtol defaults to
    eps * max(m, n), or to 0 where only a positive atol is given); ``rcond``, NumPy's name, is
    ``rtol`` without ``atol``. ``hermitian=True`` (an eigendecomposition reading one triangle)
    is not supported.

    >>> import scratchgrad as sg
    >>> sg.linalg.pinv(sg.tensor([[2.0, 0.0], [0.0, 0.0]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    check_input("linalg.pinv", A)
    if rcond is not None:  # NumPy's relative tolerance
        _one_kind_of_tolerance("linalg.pinv", "rcond", atol, rtol)
        rtol = rcond
    _check_one_value("linalg.pinv", atol=atol, rtol=rtol)
    if hermitian:
        raise NotImplementedError(
            "linalg.pinv: hermitian=True is not supported (PyTorch reads only the lower "
            "triangle there); pass the full symmetric matrix with hermitian=False"
        )
    return Pinv.apply(A, atol=atol, rtol=rtol)


def _check_lstsq(A: Tensor, B: Tensor, rcond: float | None, driver: str | None) -> bool:
    """PyTorch's checks of lstsq's arguments, in its order and words (the shapes, the
    driver's name, then the dtype, which its default rcond's epsilon or, given rcond, its
    kernel refuses); whether ``B`` is a (batch of) vector(s)."""
    op = "torch.linalg.lstsq"
    for position, (name, x) in enumerate((("input", A), ("b", B)), 1):
        if not isinstance(x, Tensor):
            raise TypeError(
                f"linalg_lstsq(): argument '{name}' (position {position}) must be Tensor, not "
                f"{type(x).__name__}"
            )
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"{op}: Expected input and other to have the same dtype, but got input's dtype "
            f"{torch_name(A.dtype)} and other's dtype {torch_name(B.dtype)}"
        )
    shapes = f"(got shapes {A.shape} and {B.shape})"  # (added to PyTorch's words)
    if not 0 <= A.ndim - B.ndim <= 1:
        raise RuntimeError(
            f"{op}: input.dim() must be greater or equal to other.dim() and "
            f"(input.dim() - other.dim()) <= 1 {shapes}"
        )
    vector = is_vector_rhs(A, B)
    if (B.shape[-1] if vector else B.shape[-2]) != A.shape[-2]:
        other = "other.size(-1)" if vector else "other.size(-2)"
        raise RuntimeError(f"{op}: input.size(-2) should match {other} {shapes}")
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if rcond is not None:  # PyTorch reaches its kernel
        check_floating("linalg.lstsq", A, kernel="linalg_lstsq_cpu")
    elif A.dtype.kind != "c" and (not backend.is_floating(A.dtype) or A.dtype.itemsize < 4):
        raise RuntimeError("This function doesn't handle types other than float and double")
    check_floating("linalg.lstsq", A)  # (complex: not supported yet)
    if driver not in (None, "gelsy"):
        raise NotImplementedError(
            f"linalg.lstsq: driver '{driver}' is not supported; the solution is gelsy's "
            "(driver=None), without residuals or singular values"
        )
    return vector


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def lstsq(
    A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None
) -> linalg_lstsq:
    """The least-squares solution of ``A X = B``, as ``torch.linalg.lstsq`` with its CPU
    driver 'gelsy': ``(solution, residuals, rank, singular_values)`` with residuals and
    singular values empty. The solution is the minimum-norm one, ``pinv(A) B`` (singular values
    below ``rcond`` times the largest count as zero; rcond defaults to eps * max(m, n)), and
    its gradient PyTorch's. ``B`` is ``(*, m, k)`` (the batch dims broadcast) or a (batch of)
    vector(s) of ``A``'s shape without its last dim; another ``B`` of one dim fewer than ``A``
    is a matrix whose dims but the last broadcast with ``A``'s batch, as PyTorch's.

    >>> import scratchgrad as sg
    >>> A = sg.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    >>> sg.linalg.lstsq(A, sg.tensor([1.0, 2.0, 3.0])).solution
    tensor([1., 2.])
    """
    vector = _check_lstsq(A, B, rcond, driver)
    b = B.unsqueeze(-1) if vector else B  # else a matrix, its batch dims broadcast
    # a matrix B of one dim fewer than A: PyTorch broadcasts A's batch with B.unsqueeze(-1)'s
    batch = _lstsq_batch(A, B) if A.ndim - B.ndim == 1 and not vector else None
    x = Pinv.apply(A, atol=None, rtol=rcond) @ b
    if batch is not None:
        x = x.expand(*batch, *x.shape[-2:]).clone()  # (its own memory, as PyTorch's)
    residuals = x.reshape(-1)[:0].clone()  # none from gelsy, but in the graph as PyTorch's
    # NOTE: rank 0 where B is empty, as PyTorch's, which then factors nothing
    rank = matrix_rank(A, rtol=rcond) if b.numel() else A.new_zeros(A.shape[:-2], dtype=int64)
    return linalg_lstsq(x.squeeze(-1) if vector else x, residuals, rank, A.new_zeros(0))


def _lstsq_batch(A: Tensor, B: Tensor) -> tuple:
    try:
        return broadcast_shapes(A.shape[:-2], B.shape[:-1])
    except RuntimeError:
        raise RuntimeError(
            f"linalg.lstsq: the batch dims of A {A.shape} do not broadcast with B's dims but the "
            f"last, {B.shape[:-1]}, as PyTorch broadcasts a B of one dim fewer than A"
        ) from None


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def matrix_rank(
    A: Tensor,
    tol: float | None = None,
    hermitian: bool = False,
    *,
    atol: float | None = None,
    rtol: float | None = None,
) -> Tensor:
    """The number of singular values above ``max(atol, rtol * largest)`` (defaults as
    ``pinv``), as ``torch.linalg.matrix_rank``: int64, not differentiable; ``tol``, the older
    name, is ``atol`` with ``rtol`` 0. With ``hermitian``, the absolute eigenvalues of the
    lower triangle's symmetric matrix.

    >>> import scratchgrad as sg
    >>> sg.linalg.matrix_rank(sg.tensor([[1.0, 2.0], [2.0, 4.0]]))
    tensor(1)
    """
    if hermitian and rtol is not None:  # PyTorch reaches its eigh kernel, not its dtype check
        check_floating("linalg.matrix_rank", A, kernel="linalg_eigh_cpu")
    check_input("linalg.matrix_rank", A)
    if tol is not None:  # the older absolute tolerance
        _one_kind_of_tolerance("linalg.matrix_rank", "tol", atol, rtol)
        atol, rtol = tol, 0.0
    _check_one_value("linalg.matrix_rank", atol=atol, rtol=rtol)
    with no_grad():  # counted in tensor operations, which vmap batches and jit records
        # descending as svdvals': the magnitudes of ascending eigenvalues are not reversed
        # where a negative one is the largest
        s = eigvalsh(A).abs().sort(-1, descending=True).values if hermitian else svdvals(A)
        return (s > _tolerance(s, A.shape, atol, rtol)).sum(-1)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (by repeated squaring), as
    ``torch.linalg.matrix_power``; ``n = 0`` gives the identity, a negative ``n`` the power
    of the inverse. As PyTorch's, a non-negative power accepts 16-bit and integer matrices (it
    is only matrix products); a negative one needs ``inv``, which does not.

    >>> import scratchgrad as sg
    >>> sg.linalg.matrix_power(sg.tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    check_input("linalg.matrix_power", A, square=True, any_dtype=True)  # (inv checks n < 0)
    if n == 0:
        # the identity, tied to A with a zero gradient (as PyTorch's copy into A's shape)
        return where(A.new_ones(1).bool(), A.new_ones(A.shape[-1]).diag_embed(), A)
    base, out = inv(A) if n < 0 else A, None
    n = abs(n)
    while n:
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    return out
