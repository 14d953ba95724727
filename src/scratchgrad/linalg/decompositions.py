"""Factorizations: ``cholesky``, ``qr``, ``eigh``/``eigvalsh`` and ``svd``/``svdvals``, with
PyTorch's backward formulas (torch/csrc/autograd/FunctionsManual.cpp) written in Tensor ops.

A Function with several results keeps them only as values (``_several_outputs`` copies them),
so a backward that is itself recorded (``create_graph=True``) factorizes again from the input:
the second derivative then reaches the input through the factors (see ``_factors``).

The eigenvectors and singular vectors are defined up to sign (and, for repeated values, up to
a rotation), and LAPACK builds may choose differently from PyTorch's; as PyTorch documents, only
losses that do not depend on that choice have a well-defined gradient, and for repeated
eigenvalues (singular values) the gradient of the vectors divides by zero: inf or nan, as in
PyTorch.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.backend import namespace
from scratchgrad.creation import zeros
from scratchgrad.linalg.checks import (
    check_input,
    empty_in_any_dtype,
    factor_cholesky,
    lapack,
    not_positive_definite,
)
from scratchgrad.linalg.systems import SolveTriangular
from scratchgrad.tensor import Tensor, cat

linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])


def _factors(ctx: Function, cls: type, **static: Any) -> tuple:
    """The input and the results a multi-output Function saved; when the backward is itself
    recorded, the results computed again from the input, so that they are in the graph."""
    a, *results = ctx.saved_tensors
    if is_grad_enabled():
        results = cls.apply(a, **static)
    return (a, *results)


def _given(grad: Tensor) -> Tensor | None:
    """None for an output's gradient that is all zeros: PyTorch's undefined gradient of an
    output the loss did not use, whose terms (divisions by gaps between eigenvalues or by
    singular values) must not turn 0 into nan. Inside vmap, all zeros in every member."""
    return grad if grad._checked_values().any() else None


def _eye(like: Tensor, n: int) -> Tensor:
    return like.new_ones(n).diag_embed()


class Cholesky(Function):
    """``L`` with ``A = L L^T``, of ``A`` only the lower triangle read. The gradient (Murray
    2016, arXiv:1602.07527) is symmetric: ``L^-T Phi(L^T grad) L^-1``, symmetrized."""

    backward_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, a):
        out = lapack("linalg.cholesky", not_positive_definite, factor_cholesky, a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (L,) = ctx.saved_tensors
        phi = (L.mT @ grad).tril()  # tril(L^T triu(grad, 1)) is 0: grad's lower part will do
        phi = 0.5 * (phi + phi.tril(-1).mT)
        phi = SolveTriangular.apply(L.mT, phi, upper=True, left=True, unitriangular=False)
        return SolveTriangular.apply(L, phi, upper=False, left=False, unitriangular=False)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype()
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of a symmetric positive-definite matrix (or batch), as
    ``torch.linalg.cholesky``: ``L`` lower triangular with ``A = L L^T`` (reading the lower
    triangle of ``A``), or with ``upper``, ``U = L^T`` (reading the upper triangle).

    Raises ``LinAlgError`` where ``A`` is not positive-definite. Its gradient is symmetric,
    as PyTorch's.

    >>> import scratchgrad as sg
    >>> sg.linalg.cholesky(sg.tensor([[4.0, 2.0], [2.0, 5.0]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    check_input("linalg.cholesky", A, square=True)
    return Cholesky.apply(A.mT).mT if upper else Cholesky.apply(A)


class QR(Function):
    """``(Q, R)`` with ``A = Q R``; PyTorch's ``linalg_qr_backward``."""

    backward_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, a, mode):
        ctx.mode = mode
        q, r = namespace(a).linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
        ctx.save_for_backward(a, q, r)
        return q, r

    @staticmethod
    def backward(ctx, grad_q, grad_r):
        if ctx.mode == "r":
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                "through linalg.qr."
            )
        _, q, r = _factors(ctx, QR, mode=ctx.mode)
        m, n = q.shape[-2], r.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError(
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
            )
        grad = grad_r @ r.mT - q.mT @ grad_q
        if m >= n:
            sym = grad.triu()
            sym = sym + sym.mT
            sym = sym - (0.5 * sym.diagonal(0, -2, -1)).diag_embed()
            grad = q @ sym + grad_q
            return SolveTriangular.apply(r.mT, grad, upper=False, left=False, unitriangular=False)
        skew = (grad.mT - grad).tril()  # X - X^T of X = -grad: zero on the diagonal
        grad = SolveTriangular.apply(
            r.narrow(-1, 0, m).mT, q @ skew, upper=False, left=False, unitriangular=False
        )
        grad = cat([grad, grad.new_zeros(*grad.shape[:-1], n - m)], -1)
        return grad + q @ grad_r


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def qr(A: Tensor, mode: str = "reduced") -> linalg_qr:
    """The QR factorization ``A = Q R`` of a matrix (or batch), as ``torch.linalg.qr``:
    ``mode`` 'reduced' (Q of shape ``(*, m, k)``, k = min(m, n)), 'complete' (Q square) or
    'r' (R only; Q is an empty tensor, and no gradient flows). Differentiable where PyTorch's
    is: not for 'complete' with m > n.

    >>> import scratchgrad as sg
    >>> Q, R = sg.linalg.qr(sg.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> (Q @ R).allclose(sg.tensor([[3.0, 1.0], [4.0, 2.0]]))
    True
    """
    check_input("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    Q, R = QR.apply(A, mode=mode)
    return linalg_qr(zeros(0, dtype=A.dtype) if mode == "r" else Q, R)


class Eigh(Function):
    """``(eigenvalues, eigenvectors)`` of a symmetric matrix, ascending; PyTorch's
    ``linalg_eig_backward`` for Hermitian matrices."""

    backward_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, a, uplo):
        ctx.uplo = uplo
        w, v = lapack("linalg.eigh", _no_convergence, _eigh(uplo), a)
        ctx.save_for_backward(a, w, v)
        return w, v

    @staticmethod
    def backward(ctx, grad_w, grad_v):
        _, w, v = _factors(ctx, Eigh, uplo=ctx.uplo)
        if _given(grad_v) is None:
            return (v * grad_w.unsqueeze(-2)) @ v.mT
        vtgv = v.mT @ grad_v
        vtgv = 0.5 * (vtgv - vtgv.mT)  # the tangent space of the orthogonal group at V
        gaps = w.unsqueeze(-2) - w.unsqueeze(-1) + _eye(w, w.shape[-1])  # w_j - w_i, 1 on diag
        return v @ (vtgv / gaps + grad_w.diag_embed()) @ v.mT


def _eigh(uplo: str):
    def compute(a):
        return namespace(a).linalg.eigh(a, UPLO=uplo)

    return compute


def _no_convergence(matrix: Any) -> str:
    return (
        "The algorithm failed to converge because the input matrix is ill-conditioned or has "
        "too many repeated eigenvalues."
    )


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype(integers=True)
def eigh(A: Tensor, UPLO: str = "L") -> linalg_eigh:
    """The eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric matrix
    (or batch), as ``torch.linalg.eigh``, reading only its lower (``UPLO='L'``) or upper
    (``'U'``; either case) triangle.

    The gradient is symmetric. It is well-defined only for losses that do not depend on the
    eigenvectors' signs, and for distinct eigenvalues where the loss uses the eigenvectors
    (repeated ones give inf or nan, as in PyTorch).

    >>> import scratchgrad as sg
    >>> sg.linalg.eigh(sg.tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
    tensor([1., 2.])
    """
    check_input("linalg.eigh", A, square=True)
    uplo = UPLO.upper()  # as PyTorch, either case
    if uplo not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return linalg_eigh(*Eigh.apply(A, uplo=uplo))


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype(integers=True)
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of a symmetric matrix (or batch), as
    ``torch.linalg.eigvalsh``; their gradient is ``V diag(grad) V^T``.

    >>> import scratchgrad as sg
    >>> sg.linalg.eigvalsh(sg.tensor([[2.0, 1.0], [1.0, 2.0]]))
    tensor([1., 3.])
    """
    return eigh(A, UPLO).eigenvalues


class SVD(Function):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``; PyTorch's ``svd_backward``."""

    backward_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, a, full_matrices):
        ctx.full_matrices = full_matrices
        u, s, vh = lapack("linalg.svd", _no_convergence, _svd(full_matrices), a)
        ctx.save_for_backward(a, u, s, vh)
        return u, s, vh

    @staticmethod
    def backward(ctx, grad_u, grad_s, grad_vh):
        _, u, s, vh = _factors(ctx, SVD, full_matrices=ctx.full_matrices)
        k = s.shape[-1]
        if ctx.full_matrices:  # the extra columns of U and rows of Vh do not depend on A
            u, vh = u.narrow(-1, 0, k), vh.narrow(-2, 0, k)
            grad_u, grad_vh = grad_u.narrow(-1, 0, k), grad_vh.narrow(-2, 0, k)
        return _svd_backward(_given(grad_u), grad_s, _given(grad_vh), u, s, vh)


def _svd(full_matrices: bool):
    def compute(a):
        return namespace(a).linalg.svd(a, full_matrices=full_matrices)

    return compute


def _svd_backward(grad_u, grad_s, grad_vh, u, s, vh) -> Tensor:
    m, n = u.shape[-2], vh.shape[-1]
    if grad_u is None and grad_vh is None:
        return u @ (grad_s.unsqueeze(-1) * vh) if m >= n else (u * grad_s.unsqueeze(-2)) @ vh
    s2 = s * s
    gaps = s2.unsqueeze(-2) - s2.unsqueeze(-1) + _eye(s, s.shape[-1])  # s_j^2 - s_i^2
    utgu = None if grad_u is None else _skew(u.mT @ grad_u)
    vtgv = None if grad_vh is None else _skew(vh @ grad_vh.mT)
    if vtgv is None:
        grad = (utgu / gaps) * s.unsqueeze(-2)
    elif utgu is None:
        grad = s.unsqueeze(-1) * (vtgv / gaps)
    else:
        grad = (utgu * s.unsqueeze(-2) + s.unsqueeze(-1) * vtgv) / gaps
    grad = grad + grad_s.diag_embed()
    if m > n and grad_u is not None:  # U's columns beyond n: their part orthogonal to U
        grad_u_scaled = grad_u / s.unsqueeze(-2)
        grad = u @ grad + grad_u_scaled - u @ (u.mT @ grad_u_scaled)
        return grad @ vh
    if m < n and grad_vh is not None:
        scaled_grad_vh = grad_vh / s.unsqueeze(-1)
        grad = grad @ vh + scaled_grad_vh - (scaled_grad_vh @ vh.mT) @ vh
        return u @ grad
    return u @ grad @ vh


def _skew(x: Tensor) -> Tensor:
    return x - x.mT


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype()
def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> linalg_svd:
    """The singular value decomposition ``A = U diag(S) Vh`` of a matrix (or batch), as
    ``torch.linalg.svd``: S descending; with ``full_matrices`` U and Vh square, else of k =
    min(m, n) columns (rows). ``driver`` chooses a cuSOLVER algorithm: None on the CPU, as
    PyTorch's.

    Its gradient is well-defined only for losses that do not depend on the singular vectors'
    signs, and for distinct singular values where the loss uses the vectors (as PyTorch
    documents).

    >>> import scratchgrad as sg
    >>> sg.linalg.svd(sg.tensor([[3.0, 0.0], [0.0, -4.0]])).S
    tensor([4., 3.])
    """
    check_input("linalg.svd", A)
    if driver is not None:
        raise RuntimeError(
            "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
            "cuSOLVER backend."
        )
    return linalg_svd(*SVD.apply(A, full_matrices=full_matrices))


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype()
def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values of a matrix (or batch), descending, as ``torch.linalg.svdvals``;
    their gradient is ``U diag(grad) Vh``.

    >>> import scratchgrad as sg
    >>> sg.linalg.svdvals(sg.tensor([[3.0, 0.0], [0.0, -4.0]]))
    tensor([4., 3.])
    """
    return svd(A, full_matrices=False, driver=driver).S
