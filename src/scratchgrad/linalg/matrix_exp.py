"""``matrix_exp``: the exponential of a square matrix, by scaling and squaring with the [13/13]
Padé approximant (Higham 2005, "The scaling and squaring method for the matrix exponential
revisited", SIAM J. Matrix Anal. Appl. 26(4)); its gradient is the top-right block of the
exponential of ``[[A^T, grad], [0, A^T]]`` (Mathias 1996), as PyTorch computes it."""

from __future__ import annotations

from typing import Any

from scratchgrad.autograd.function import Function
from scratchgrad.backend import namespace
from scratchgrad.linalg.checks import check_input, empty_in_any_dtype
from scratchgrad.tensor import Tensor, cat

# The [13/13] Padé approximant's coefficients, and the largest 1-norm at which it is exact to
# double precision (Higham 2005, table 2.3): larger matrices are scaled down by 2^s first.
_PADE_13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
_THETA_13 = 5.371920351148152


def _expm(a: Any) -> Any:
    """``exp`` of each matrix of ``a`` (*, n, n): each scaled by its own 2^-s, the Padé
    approximant, then squared s times. A matrix with a non-finite entry gives NaN, as in
    PyTorch."""
    module = namespace(a)
    if a.size == 0:
        return a.copy()
    norm = module.abs(a).sum(-2).max(-1)  # the 1-norm: the largest column sum
    finite = module.isfinite(norm)
    ratio = module.where(finite, norm, 0) / _THETA_13
    squarings = module.ceil(module.log2(module.maximum(ratio, 1))).astype(int)
    scaled = module.where(finite[..., None, None], a, 0) / (2.0**squarings)[..., None, None]
    out = _pade_13(scaled.astype(a.dtype))
    for step in range(int(squarings.max())):  # NOTE: only the matrices that were scaled
        out = module.where((squarings > step)[..., None, None], out @ out, out)
    return module.where(finite[..., None, None], out, module.nan).astype(a.dtype)


def _pade_13(a: Any) -> Any:
    """The [13/13] Padé approximant ``(V - U)^-1 (V + U)`` of exp at ``a``: U holds the odd
    powers, V the even ones (Higham 2005, (2.1) and section 2)."""
    module = namespace(a)
    b = _PADE_13
    eye = module.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    odd = a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
    u = a @ (odd + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    return module.linalg.solve(v - u, v + u)


class MatrixExp(Function):
    """``exp(A)``; its gradient the top-right block of ``exp([[A^T, grad], [0, A^T]])``."""

    backward_name = "LinalgMatrixExpBackward0"

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _expm(a)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        top = cat([a.mT, grad], -1)
        bottom = cat([a.new_zeros(a.shape), a.mT], -1)
        return MatrixExp.apply(cat([top, bottom], -2)).narrow(-2, 0, n).narrow(-1, n, n)


@empty_in_any_dtype()
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix (or of each in a batch), as
    ``torch.linalg.matrix_exp`` and ``torch.matrix_exp``; differentiable any number of times.

    Unlike PyTorch, whose 16-bit CPU results overflow, float16 and bfloat16 raise.

    >>> import scratchgrad as sg
    >>> sg.linalg.matrix_exp(sg.tensor([[0.0, 1.0], [0.0, 0.0]]))
    tensor([[1., 1.],
            [0., 1.]])
    """
    check_input("linalg.matrix_exp", A, square=True)
    return MatrixExp.apply(A)
