"""Linear systems: ``inv``, ``solve`` and ``solve_triangular``, each a Function whose backward
solves the transposed system with the same Function (so second derivatives work)."""

from __future__ import annotations

from typing import Any

from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function, holomorphic_twin
from scratchgrad.backend import namespace, xp
from scratchgrad.linalg.checks import (
    LinAlgError,
    check_diagonal,
    check_input,
    check_same_dtype,
    empty_in_any_dtype,
    lapack,
    singular,
)
from scratchgrad.tensor import Tensor


class Inv(Function):
    """``A^-1``; its gradient ``-A^-T grad A^-T``."""

    backward_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx, a):
        out = lapack("linalg.inv", singular("inversion"), namespace(a).linalg.inv, a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return -(out.mT @ grad @ out.mT)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix (or of each in a batch), as ``torch.linalg.inv``.

    Raises ``LinAlgError`` for a singular matrix.

    >>> import scratchgrad as sg
    >>> sg.linalg.inv(sg.tensor([[2.0, 0.0], [0.0, 4.0]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    check_input("linalg.inv", A, square=True)
    return Inv.apply(A)


class Solve(Function):
    """``X`` with ``A X = B``, B a batch of matrices, the batch dims broadcast. Its gradients:
    ``gB`` solves ``A^T gB = grad``, and ``gA = -gB X^T``."""

    backward_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, a, b):
        module = namespace(a)
        try:
            arrays = broadcast_batch(a, b)
            x = lapack("torch.linalg.solve", _solver_failed, module.linalg.solve, *arrays)
        except LinAlgError:  # PyTorch factors A alone: the failing matrix of A's own batch
            lapack("torch.linalg.solve", _solver_failed, module.linalg.inv, a)
            raise
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        grad_b = Solve.apply(a.mT, grad)
        return -(grad_b @ x.mT) if ctx.needs_input_grad[0] else None, grad_b


holomorphic_twin(Solve)  # complex systems (eig's backward): A^H and X^H in the gradients


def _solver_failed(matrix: Any) -> str:
    return "The solver failed because the input matrix is singular."


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
@empty_in_any_dtype()
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` if not ``left``), as
    ``torch.linalg.solve``: ``A`` of shape ``(*, n, n)``, ``B`` of shape ``(*, n, k)`` or a
    (batch of) vector(s) ``(*, n)``; the batch dims broadcast.

    Raises ``LinAlgError`` for a singular ``A``.

    >>> import scratchgrad as sg
    >>> sg.linalg.solve(sg.tensor([[2.0, 0.0], [1.0, 1.0]]), sg.tensor([2.0, 3.0]))
    tensor([1., 2.])
    """
    check_input("linalg.solve", A, square=True, integers_first=True)
    if not isinstance(B, Tensor) or B.ndim == 0:
        raise RuntimeError("linalg.solve: B must be a tensor of at least 1 dimension")
    check_same_dtype("linalg.solve", A, B)
    vector = is_vector_rhs(A, B)
    b = B.unsqueeze(-1) if vector else B  # a column also where not left: PyTorch checks that
    check_system("linalg.solve", A, b, left)
    if not left:  # X A = B is A^T X^T = B^T
        if vector:
            raise RuntimeError(
                "linalg.solve: Vector broadcasting of the left hand side is not supported for "
                "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)"
            )
        return Solve.apply(A.mT, B.mT).mT
    x = Solve.apply(A, b)
    return x.squeeze(-1) if vector else x


class SolveTriangular(Function):
    """``X`` with ``A X = B`` (``X A = B`` if not ``left``), of ``A`` only its triangle read
    (and ones taken for its diagonal if ``unitriangular``). The gradient of ``A`` stays in
    that triangle."""

    backward_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, a, b, upper, left, unitriangular):
        ctx.upper, ctx.left, ctx.unitriangular = upper, left, unitriangular
        t, b = broadcast_batch(_triangle(a, upper, unitriangular), b)
        module = namespace(t)
        diagonal = module.diagonal(t, axis1=-2, axis2=-1)
        check_diagonal("linalg.solve_triangular", diagonal, _no_unique_solution)
        if left:
            x = _solved(t, b, upper)
        else:  # X A = B is A^T X^T = B^T
            x = _solved(t.swapaxes(-1, -2), b.swapaxes(-1, -2), not upper).swapaxes(-1, -2)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        upper, left, unit = ctx.upper, ctx.left, ctx.unitriangular
        grad_b = SolveTriangular.apply(a.mT, grad, upper=not upper, left=left, unitriangular=unit)
        if not ctx.needs_input_grad[0]:
            return None, grad_b
        grad_a = -(grad_b @ x.mT) if left else -(x.mT @ grad_b)
        grad_a = grad_a.triu(int(unit)) if upper else grad_a.tril(-int(unit))
        return grad_a, grad_b


def _solved(t: Any, b: Any, upper: bool) -> Any:
    """``X`` with ``t X = b`` for a (batch of) triangular ``t``, upper or lower. NumPy has no
    batched triangular solve: where all is finite its general one gives the same solution.
    An inf or a NaN would reach every row through its pivoting (NaN where PyTorch has a
    number), so then the rows are solved one at a time, as LAPACK's trsm does: each reads
    only the rows solved before it."""
    module = namespace(t)
    if module.isfinite(t).all() and module.isfinite(b).all():
        return module.linalg.solve(t, b)
    n = t.shape[-1]
    x = module.empty(b.shape, module.result_type(t, b))
    for i in reversed(range(n)) if upper else range(n):
        row, known = slice(i, i + 1), slice(i + 1, n) if upper else slice(0, i)
        rest = t[..., row, known] @ x[..., known, :]  # (zeros where nothing is known yet)
        x[..., row, :] = (b[..., row, :] - rest) / t[..., row, row]
    return x


def _triangle(a: Any, upper: bool, unitriangular: bool) -> Any:
    """The triangle of ``a`` that a triangular solve reads, with ones on the diagonal if
    ``unitriangular``."""
    module = namespace(a)
    if not unitriangular:
        return module.triu(a) if upper else module.tril(a)
    strict = module.triu(a, 1) if upper else module.tril(a, -1)
    return strict + module.eye(a.shape[-1], dtype=a.dtype)


def _no_unique_solution(index: int) -> str:
    """A triangular system with a zero on the diagonal has no unique solution: PyTorch returns
    inf and nan there, which we refuse to give silently."""
    return (
        f"The diagonal element {index} is zero, so the triangular system has no unique solution "
        "(PyTorch returns inf and nan there)"
    )


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """The solution ``X`` of the triangular system ``A X = B`` (``X A = B`` if not ``left``),
    as ``torch.linalg.solve_triangular``: only the upper (``upper=True``) or lower triangle of
    ``A`` is read, its diagonal taken to be ones if ``unitriangular``; ``B`` is a (batch of)
    matrices, the batch dims broadcast, cast to ``A``'s dtype as PyTorch casts it.

    Unlike PyTorch, which returns inf and nan, a zero on the diagonal raises ``LinAlgError``.

    >>> import scratchgrad as sg
    >>> L = sg.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> sg.linalg.solve_triangular(L, sg.tensor([[2.0], [3.0]]), upper=False)
    tensor([[1.],
            [2.]])
    """
    op = "linalg.solve_triangular"
    check_input(op, A, square=True)
    if isinstance(B, Tensor):  # PyTorch writes the solution in A's dtype, casting B to it
        B = B.to(A.dtype)
    check_input(op, B, "B")
    check_system(op, A, B, left)
    return SolveTriangular.apply(A, B, upper=upper, left=left, unitriangular=unitriangular)


def is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's rule for a right-hand side that is a (batch of) vector(s): 1-D, or A's shape
    without its last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def check_system(op: str, A: Tensor, B: Tensor, left: bool) -> None:
    """The matrices of ``A X = B`` (``X A = B``) fit, and their batch dims broadcast."""
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"{op}: Incompatible shapes of A and B for the equation {equation} "
            f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    try:
        xp.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        raise RuntimeError(
            f"{op}: the batch dims of A {A.shape} and B {B.shape} cannot be broadcast together"
        ) from None


def broadcast_batch(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` with their batch dims (all but the last two) broadcast together."""
    batch = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    module = namespace(a)
    return (
        module.broadcast_to(a, batch + a.shape[-2:]),
        module.broadcast_to(b, batch + b.shape[-2:]),
    )
