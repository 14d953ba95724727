"""Differentiable linear algebra with ``torch.linalg``'s names, arguments and results.

Every function works on a matrix or a batch of matrices ``(*, m, n)`` of float32 or float64,
and returns PyTorch's named tuples (``slogdet`` -> (sign, logabsdet), ``qr`` -> (Q, R),
``eigh`` -> (eigenvalues, eigenvectors), ``svd`` -> (U, S, Vh)). The gradients are PyTorch's
formulas written in Tensor operations, so gradients of gradients work. A singular matrix (in
``inv``, ``solve``, ``solve_triangular``, ``lu_factor``) or one that is not positive-definite
(``cholesky``) raises ``LinAlgError``, naming the function and the batch element; ``inv_ex``,
``solve_ex``, ``cholesky_ex`` and ``lu_factor_ex`` report it in ``info`` instead. ``legacy``
holds PyTorch's names outside ``torch.linalg`` (``torch.logdet``, ``torch.svd``, ...), which
the package root exports (with ``geqrf``, ``orgqr`` and ``ormqr``). ``eig`` and ``eigvals``
take complex matrices too and always give complex results; ``ldl_factor`` and ``ldl_solve``
have no derivative, as in PyTorch.

>>> import scratchgrad as sg
>>> A = sg.tensor([[4.0, 2.0], [2.0, 3.0]], requires_grad=True)
>>> sg.linalg.slogdet(A).logabsdet.backward()
>>> A.grad
tensor([[ 0.3750, -0.2500],
        [-0.2500,  0.5000]])
"""

from scratchgrad.linalg.checks import LinAlgError
from scratchgrad.linalg.decompositions import cholesky, eigh, eigvalsh, qr, svd, svdvals
from scratchgrad.linalg.derived import det, lstsq, matrix_power, matrix_rank, pinv, slogdet
from scratchgrad.linalg.eig import eig, eigvals
from scratchgrad.linalg.extras import (
    cholesky_ex,
    cond,
    diagonal,
    householder_product,
    inv_ex,
    matmul,
    multi_dot,
    solve_ex,
    tensorinv,
    tensorsolve,
    vander,
)
from scratchgrad.linalg.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from scratchgrad.linalg.lu import lu, lu_factor, lu_factor_ex, lu_solve
from scratchgrad.linalg.matrix_exp import matrix_exp
from scratchgrad.linalg.norms import cross, matrix_norm, norm, vecdot, vector_norm
from scratchgrad.linalg.systems import inv, solve, solve_triangular
from scratchgrad.tensor import takes_out

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]

# PyTorch's out= (torch.linalg.solve(A, B, out=X)) on every function but these three, which
# have none there either; cross's out may not overlap its inputs, as PyTorch checks
for _name in set(__all__) - {"LinAlgError", "diagonal", "matrix_exp", "vander"}:
    globals()[_name] = takes_out(globals()[_name], _name == "cross")
