"""The table of ``scratchgrad.linalg`` functions the tests generate their checks from: how to
call each (one ``call(m, *xs)`` for both libraries, ``m`` being ``scratchgrad`` or ``torch``),
how to make well-conditioned inputs for a batch shape, and which checks apply.

A call returns only what is well-defined to differentiate: for eigenvectors and singular
vectors, whose signs LAPACK builds choose differently, quantities that do not depend on them
(``V * V``, ``U @ diag(S) @ Vh``); for ``cholesky`` and ``eigh``, which read one triangle, the
symmetric part of the input, so that finite differences perturb what they read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def with_values(rng, batch, m, n, values):
    """``U diag(values) V^T`` of shape (*batch, m, n): singular values under control."""
    k = min(m, n)
    u = orthogonal(rng, batch, m)[..., :k]
    v = orthogonal(rng, batch, n)[..., :k]
    return (u * values) @ np.swapaxes(v, -1, -2)


def square(n):
    """Singular values spread over [1, 2.5] with a random sign of the determinant."""

    def make(rng, batch):
        a = with_values(rng, batch, n, n, np.linspace(1.0, 2.5, n))
        return a * rng.choice([-1.0, 1.0], (*batch, 1, 1))

    return make


def rectangular(m, n):
    """Distinct singular values in [1, 3]: svd and qr are smooth there."""
    return lambda rng, batch: with_values(rng, batch, m, n, np.linspace(3.0, 1.0, min(m, n)))


def spd(n):
    """``A A^T + n I``: symmetric positive-definite."""

    def make(rng, batch):
        a = rng.standard_normal((*batch, n, n))
        return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)

    return make


def symmetric(n):
    """Eigenvalues ``1, 2, ..., n`` (apart by 1), random eigenvectors."""

    def make(rng, batch):
        q = orthogonal(rng, batch, n)
        return (q * np.arange(1.0, n + 1)) @ np.swapaxes(q, -1, -2)

    return make


def general(eigenvalues):
    """``P diag(eigenvalues) P^-1``, P of singular values in [1, 2]: real where ``eigenvalues``
    are, a pair ``a +- bi`` given as the real block [[a, -b], [b, a]] (keyed by ``a + bi``)."""
    n = len(eigenvalues)
    block = np.zeros((n, n))
    i = 0
    while i < n:
        value = eigenvalues[i]
        if isinstance(value, complex):
            block[i : i + 2, i : i + 2] = [[value.real, -value.imag], [value.imag, value.real]]
            i += 2
        else:
            block[i, i] = value
            i += 1

    def make(rng, batch):
        p = with_values(rng, batch, n, n, np.linspace(1.0, 2.0, n))
        return p @ block @ np.linalg.inv(p)

    return make


def triangular_ready(n):
    """A random matrix whose triangles have diagonals away from 0 (in [2, 3] or [-3, -2])."""

    def make(rng, batch):
        a = rng.standard_normal((*batch, n, n)) * 0.5
        diagonal = rng.uniform(2.0, 3.0, (*batch, n)) * rng.choice([-1.0, 1.0], (*batch, n))
        return a + np.einsum("...i,ij->...ij", diagonal, np.eye(n))

    return make


def matrix(m, n):
    return lambda rng, batch: rng.standard_normal((*batch, m, n))


def vectors(*shape):
    return lambda rng, batch: rng.standard_normal((*batch, *shape))


def sym(A):
    return (A + A.mT) / 2


@dataclass
class Case:
    name: str
    call: Callable
    inputs: tuple  # one maker(rng, batch) per argument
    batches: tuple = ((), (2,), (2, 1))  # for the comparison with PyTorch
    grad: bool = True  # differentiable: gradients and gradcheck too
    gradgrad: bool = True
    check_batch: tuple = (2,)  # for gradcheck and gradgradcheck


CASES = [
    Case("inv", lambda m, A: m.linalg.inv(A), (square(3),)),
    Case("det", lambda m, A: m.linalg.det(A), (square(3),)),
    Case("slogdet", lambda m, A: tuple(m.linalg.slogdet(A)), (square(3),)),
    Case("solve", lambda m, A, B: m.linalg.solve(A, B), (square(3), matrix(3, 2))),
    Case("solve_vector", lambda m, A, b: m.linalg.solve(A, b), (square(3), vectors(3))),
    Case(
        "solve_right", lambda m, A, B: m.linalg.solve(A, B, left=False), (square(3), matrix(2, 3))
    ),
    Case(
        "solve_broadcast",
        lambda m, A, B: m.linalg.solve(A, B),
        (square(3), lambda rng, batch: rng.standard_normal((4, 1, 3, 2))),
        batches=((2, 1, 1), (3,)),
        check_batch=(1,),
    ),
    *(
        Case(
            f"solve_triangular_{'upper' if upper else 'lower'}_{'left' if left else 'right'}"
            + ("_unit" if unit else ""),
            lambda m, A, B, upper=upper, left=left, unit=unit: m.linalg.solve_triangular(
                A, B, upper=upper, left=left, unitriangular=unit
            ),
            (triangular_ready(3), matrix(3, 2) if left else matrix(2, 3)),
        )
        for upper in (False, True)
        for left in (True, False)
        for unit in (False, True)
    ),
    Case(
        "solve_triangular_broadcast",
        lambda m, A, B: m.linalg.solve_triangular(A, B, upper=False),
        (triangular_ready(3), lambda rng, batch: rng.standard_normal((4, 1, 3, 2))),
        batches=((2, 1, 1), (3,)),
        check_batch=(1,),
    ),
    Case("cholesky", lambda m, A: m.linalg.cholesky(sym(A)), (spd(3),)),
    Case("cholesky_upper", lambda m, A: m.linalg.cholesky(sym(A), upper=True), (spd(3),)),
    Case(
        "gaussian_log_density",
        lambda m, S, x: _gaussian_log_density(m, sym(S), x),
        (spd(3), vectors(5, 3)),
    ),
    Case("qr_square", lambda m, A: tuple(m.linalg.qr(A)), (rectangular(3, 3),)),
    Case("qr_tall", lambda m, A: tuple(m.linalg.qr(A)), (rectangular(4, 2),)),
    Case("qr_wide", lambda m, A: tuple(m.linalg.qr(A)), (rectangular(2, 4),)),
    Case("qr_complete_wide", lambda m, A: tuple(m.linalg.qr(A, "complete")), (rectangular(2, 3),)),
    Case("qr_r", lambda m, A: m.linalg.qr(A, "r").R.abs(), (rectangular(3, 2),), grad=False),
    Case("eigh", lambda m, A: _eigh(m, sym(A), "L"), (symmetric(3),)),
    Case("eigh_upper", lambda m, A: _eigh(m, sym(A), "U"), (symmetric(3),)),
    Case("eigvalsh", lambda m, A: m.linalg.eigvalsh(sym(A)), (symmetric(3),)),
    Case("eig_real_values", lambda m, A: _eig(m, A), (general([2.0, -1.0, 0.5]),)),
    Case("eig_complex_pair", lambda m, A: _eig(m, A), (general([1 + 1j, None, -2.0]),)),
    Case(
        "eigvals",
        lambda m, A: _real_and_imaginary(m.linalg.eigvals(A)),
        (general([1 + 2j, None, 3.0]),),
    ),
    Case("svd_tall", lambda m, A: _svd(m, A, False), (rectangular(4, 3),)),
    Case("svd_wide", lambda m, A: _svd(m, A, False), (rectangular(2, 4),)),
    Case("svd_full", lambda m, A: _svd(m, A, True), (rectangular(4, 2),)),
    Case("svd_product", lambda m, A: _svd_product(m, A), (rectangular(3, 4),)),
    Case("svdvals", lambda m, A: m.linalg.svdvals(A), (rectangular(4, 3),)),
    Case("pinv_tall", lambda m, A: m.linalg.pinv(A), (rectangular(4, 3),)),
    Case("pinv_wide", lambda m, A: m.linalg.pinv(A), (rectangular(2, 3),)),
    Case("lstsq", lambda m, A, B: m.linalg.lstsq(A, B).solution, (rectangular(4, 3), matrix(4, 2))),
    Case(
        "lstsq_vector",
        lambda m, A, b: m.linalg.lstsq(A, b).solution,
        (rectangular(4, 2), vectors(4)),
    ),
    *(
        Case(f"matrix_power_{n}", lambda m, A, n=n: m.linalg.matrix_power(A, n), (square(3),))
        for n in (0, 1, 2, 5, -1, -3)
    ),
    *(
        Case(
            f"vector_norm_{ord}", lambda m, x, ord=ord: m.linalg.vector_norm(x, ord), (vectors(4),)
        )
        for ord in (2, 1, math.inf, -math.inf, 3, 1.5, 0.5, -1, 0)
    ),
    Case(
        "vector_norm_dims",
        lambda m, x: m.linalg.vector_norm(x, 3, dim=(0, -1), keepdim=True),
        (vectors(3, 4),),
        batches=((2,),),
    ),
    *(
        Case(
            f"matrix_norm_{ord}",
            lambda m, A, ord=ord: m.linalg.matrix_norm(A, ord),
            (rectangular(3, 4),),
        )
        for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)
    ),
    Case(
        "matrix_norm_dims",
        lambda m, A: m.linalg.matrix_norm(A, "nuc", dim=(-1, 0), keepdim=True),
        (matrix(3, 4),),
        batches=((2,),),
    ),
    Case("norm_default", lambda m, A: m.linalg.norm(A), (matrix(3, 4),)),
    Case(
        "norm_matrix_2", lambda m, A: m.linalg.norm(A[0], 2), (rectangular(3, 4),), batches=((2,),)
    ),
    Case("norm_dim", lambda m, A: m.linalg.norm(A, 1, dim=-2), (matrix(3, 4),)),
    Case("norm_dims", lambda m, A: m.linalg.norm(A, -math.inf, dim=(-2, -1)), (matrix(3, 4),)),
    Case("cross", lambda m, x, y: m.linalg.cross(x, y), (vectors(4, 3), vectors(1, 3))),
    Case("cross_dim", lambda m, x, y: m.linalg.cross(x, y, dim=-2), (vectors(3, 2), vectors(3, 2))),
    Case("vecdot", lambda m, x, y: m.linalg.vecdot(x, y), (vectors(2, 4), vectors(4))),
]


def _gaussian_log_density(m, S, x):
    """What a multivariate normal's log_prob does: a Cholesky factor, a triangular solve
    broadcast over samples, and the log-determinant from the factor's diagonal."""
    L = m.linalg.cholesky(S)
    z = m.linalg.solve_triangular(L.unsqueeze(-3), x.unsqueeze(-1), upper=False).squeeze(-1)
    half_log_det = L.diagonal(0, -2, -1).log().sum(-1)
    return -0.5 * (z * z).sum(-1) - half_log_det.unsqueeze(-1)


def _eigh(m, A, uplo):
    w, v = m.linalg.eigh(A, UPLO=uplo)
    return w, v * v  # the squares do not depend on the signs


def _eig(m, A):
    """The eigenvalues and the moduli of the eigenvectors' entries (free of their phases)."""
    L, V = m.linalg.eig(A)
    return (*_real_and_imaginary(L), V.abs())


def _real_and_imaginary(z):
    return z.real, z.imag


def _svd(m, A, full_matrices):
    """The singular values and the squares of the vectors' entries (sign-free); of a full
    U or Vh only the first k = min(m, n) columns (rows), the rest being any basis."""
    U, S, Vh = m.linalg.svd(A, full_matrices=full_matrices)
    k = S.shape[-1]
    return U[..., :k] ** 2, S, Vh[..., :k, :] ** 2


def _svd_product(m, A):
    U, S, Vh = m.linalg.svd(A, full_matrices=False)
    return (U * S.unsqueeze(-2)) @ Vh
