"""Differentiable linear algebra with ``torch.linalg``'s names, arguments and results.

Every function works on a matrix or a batch of matrices ``(*, m, n)`` of float32 or float64,
and returns PyTorch's named tuples (``slogdet`` -> (sign, logabsdet), ``qr`` -> (Q, R),
``eigh`` -> (eigenvalues, eigenvectors), ``svd`` -> (U, S, Vh)). The gradients are PyTorch's
formulas written in Tensor operations, so gradients of gradients work. A singular matrix (in
``inv``, ``solve``, ``solve_triangular``) or one that is not positive-definite (``cholesky``)
raises ``LinAlgError``, naming the function and the batch element.

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
from scratchgrad.linalg.norms import cross, matrix_norm, norm, vecdot, vector_norm
from scratchgrad.linalg.systems import inv, solve, solve_triangular

__all__ = [
    "LinAlgError",
    "cholesky",
    "cross",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "lstsq",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vecdot",
    "vector_norm",
]
