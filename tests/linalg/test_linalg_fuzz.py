"""Random combinations of ``linalg`` calls against PyTorch: an op (with its keyword options
drawn) on a matrix of a random kind (random, well- or ill-conditioned, exactly singular,
symmetric, triangular, positive-definite, small integers), batch dims (empty batches too),
sizes 0 to 5, square or rectangular, float32, float64, int64 or bool. Both libraries must raise
or not (the same error class) and agree on the results' dtypes and shapes, their values where
they are well-defined (decompositions through quantities that do not depend on LAPACK's
choices of signs and bases: reconstructions, squared entries of Q, eigenvalues), and the
gradients of a random weighting of them where the inputs are well-conditioned and the spectra
well-separated. Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, fuzz_settings, outcome, raised_alike, same_dtype

import scratchgrad as sg

FUZZ = fuzz_settings(300)
DTYPES = {"float64": (sg.float64, torch.float64), "float32": (sg.float32, torch.float32)}
# kinds whose results are smooth functions of the entries, far from where LAPACK's choices
# (pivots, signs, bases of repeated eigenvalues) or round-off decide them
SMOOTH = ("well", "symmetric", "spd", "triangular")


# ---- matrices ---------------------------------------------------------------------------------


def orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1) + 0.5)[..., None, :]


def with_values(rng, batch, m, n, values):
    k = min(m, n)
    u, v = orthogonal(rng, batch, m)[..., :k], orthogonal(rng, batch, n)[..., :k]
    return (u * values) @ np.swapaxes(v, -1, -2)


def make_matrix(kind: str, seed: int, batch: tuple, m: int, n: int) -> np.ndarray:
    """A (*batch, m, n) matrix of ``kind``; the symmetric kinds are square (n = m)."""
    rng = np.random.default_rng(seed)
    k = min(m, n)
    if kind == "random":
        return rng.standard_normal((*batch, m, n))
    if kind == "well":  # singular values 1 to 2.5, distinct
        return with_values(rng, batch, m, n, np.linspace(2.5, 1.0, k))
    if kind == "ill":  # singular values 1 to 1e-7
        return with_values(rng, batch, m, n, np.logspace(0, -7, k))
    if kind == "integers":
        return rng.integers(-3, 4, (*batch, m, n)).astype(float)
    if kind == "singular":  # small integers, one column zero: exactly singular
        a = rng.integers(-3, 4, (*batch, m, n)).astype(float)
        if n:
            a[..., rng.integers(n)] = 0
        return a
    q = orthogonal(rng, batch, m)
    if kind == "symmetric":  # eigenvalues 1, 2, ..., m with random signs
        values = np.arange(1.0, m + 1) * rng.choice([-1.0, 1.0], m)
        return (q * values) @ np.swapaxes(q, -1, -2)
    if kind == "spd":  # eigenvalues 1 to 3, distinct
        return (q * np.linspace(1.0, 3.0, m)) @ np.swapaxes(q, -1, -2)
    if kind == "triangular":  # a diagonal away from 0
        a = np.triu(rng.standard_normal((*batch, m, m)) * 0.5)
        return a + np.eye(m) * rng.uniform(2.0, 3.0, m) * rng.choice([-1.0, 1.0], m)
    raise AssertionError(kind)


KINDS = ["random", "well", "ill", "integers", "singular", "symmetric", "spd", "triangular"]
SQUARE_KINDS = ("symmetric", "spd", "triangular")


@st.composite
def problems(draw):
    """(kind, dtype, batch, A as an array)."""
    kind = draw(st.sampled_from(KINDS))
    dtype = draw(st.sampled_from(["float64", "float64", "float32", "float32", "int64", "bool"]))
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    m = draw(st.integers(0, 5))
    square = kind in SQUARE_KINDS or draw(st.booleans())
    n = m if square else draw(st.integers(0, 5))
    return kind, dtype, batch, make_matrix(kind, draw(st.integers(0, 2**16)), batch, m, n)


def leaf(lib, array, dtype, requires_grad):
    if dtype in DTYPES:
        ours, theirs = DTYPES[dtype]
        return lib.tensor(array, dtype=ours if lib is sg else theirs, requires_grad=requires_grad)
    values = array != 0 if dtype == "bool" else array.astype(np.int64)
    return lib.tensor(values)


def like(lib, A, array):
    """``array`` as a tensor of ``A``'s dtype (a second operand, B or tau)."""
    return lib.tensor(array).to(A.dtype)


# ---- the ops: draw(data, A's shape) -> call(m, A) of gauge-invariant results ------------------


def squares(*xs):
    return tuple(x * x for x in xs)


def op_det(draw, shape):
    spelling = draw(st.sampled_from(["linalg", "torch", "method"]))
    if spelling == "linalg":
        return lambda m, A: m.linalg.det(A)
    return (lambda m, A: m.det(A)) if spelling == "torch" else (lambda m, A: A.det())


def op_slogdet(draw, shape):
    return lambda m, A: tuple(m.linalg.slogdet(A))


def op_inv(draw, shape):
    spelling = draw(st.sampled_from(["inv", "inverse", "inv_ex"]))
    if spelling == "inv":
        return lambda m, A: m.linalg.inv(A)
    if spelling == "inverse":
        return lambda m, A: m.inverse(A)
    check = draw(st.booleans())
    return lambda m, A: tuple(m.linalg.inv_ex(A, check_errors=check))


def rhs(draw, shape, left):
    """B for a system of A (*, n, n): a vector, or (*, n, k) / (*, k, n) with a batch that
    broadcasts with A's."""
    n = shape[-1]
    if left and draw(st.booleans()):
        return np.arange(1.0, n + 1) - n / 2 if draw(st.booleans()) else np.ones((*shape[:-1],))
    k = draw(st.integers(0, 3))
    batch = tuple(draw(st.sampled_from([1, size])) for size in shape[:-2])
    batch = (*draw(st.sampled_from([(), (2,)])), *batch)[-draw(st.integers(0, 3)) or len(batch) :]
    core = (n, k) if left else (k, n)
    return np.random.default_rng(n + 7 * k).standard_normal((*batch, *core))


def op_solve(draw, shape):
    left = draw(st.booleans())
    b = rhs(draw, shape, left)
    spelling = draw(st.sampled_from(["solve", "solve_ex"]))
    if spelling == "solve":
        return lambda m, A: m.linalg.solve(A, like(m, A, b), left=left)
    return lambda m, A: tuple(m.linalg.solve_ex(A, like(m, A, b), left=left))


def op_solve_triangular(draw, shape):
    upper, left, unit = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    b = rhs(draw, shape, left)
    if b.ndim < 2:
        b = b[..., None]
    if draw(st.booleans()):
        return lambda m, A: m.linalg.solve_triangular(
            A, like(m, A, b), upper=upper, left=left, unitriangular=unit
        )
    # torch.triangular_solve(b, A, upper, transpose, unitriangular): b of (*, n, k)
    b = b if left else np.swapaxes(b, -1, -2)
    transpose = draw(st.booleans())
    return lambda m, A: tuple(m.triangular_solve(like(m, A, b), A, upper, transpose, unit))


def op_cholesky(draw, shape):
    upper = draw(st.booleans())
    spelling = draw(st.sampled_from(["cholesky", "cholesky_ex", "torch"]))
    if spelling == "cholesky":
        return lambda m, A: m.linalg.cholesky(A, upper=upper)
    if spelling == "torch":
        return lambda m, A: m.cholesky(A, upper)
    check = draw(st.booleans())
    return lambda m, A: tuple(m.linalg.cholesky_ex(A, upper=upper, check_errors=check))


def op_cholesky_solve(draw, shape):
    upper = draw(st.booleans())
    b = rhs(draw, shape, True)
    b = b if b.ndim >= 2 else b[..., None]

    def call(m, A):
        factor = A.triu() if upper else A.tril()
        return m.cholesky_solve(like(m, A, b), factor, upper)

    return call


def op_cholesky_inverse(draw, shape):
    upper = draw(st.booleans())
    return lambda m, A: m.cholesky_inverse(A.triu() if upper else A.tril(), upper)


def op_qr(draw, shape):
    mode = draw(st.sampled_from(["reduced", "complete", "r"]))

    def call(m, A):
        Q, R = m.linalg.qr(A, mode=mode)
        if mode == "r":
            return (R * R,)
        k = min(A.shape[-2:])  # the columns of Q beyond k (complete) are any basis
        return (*squares(Q[..., :k], R), Q[..., :k] @ R[..., :k, :])

    return call


def op_eigh(draw, shape):
    uplo = draw(st.sampled_from(["L", "U", "l", "u"]))
    vectors = draw(st.booleans())

    def call(m, A):
        if not vectors:
            return m.linalg.eigvalsh(A, UPLO=uplo)
        w, V = m.linalg.eigh(A, UPLO=uplo)
        return w, V * V, (V * w.unsqueeze(-2)) @ V.mT

    return call


def op_svd(draw, shape):
    full = draw(st.booleans())
    spelling = draw(st.sampled_from(["svd", "svdvals", "torch"]))
    if spelling == "svdvals":
        return lambda m, A: m.linalg.svdvals(A)

    def call(m, A):
        if spelling == "svd":
            U, S, Vh = m.linalg.svd(A, full_matrices=full)
        else:
            U, S, V = m.svd(A, some=not full)
            Vh = V.mT
        k = S.shape[-1]
        U, Vh = U[..., :k], Vh[..., :k, :]
        return S, *squares(U, Vh), (U * S.unsqueeze(-2)) @ Vh

    return call


# tolerances away from the singular values of the kinds (1 to 5 apart by 1, 1 to 3 apart by a
# quarter to a half, 1 to 2.5, and such times the largest): a value on the threshold is kept
# or dropped by round-off (so is a zero singular value by a tolerance of 0)
ATOLS = [1e-3, 0.7, 1.8]
RTOLS = [1e-3, 0.35]


def tolerance_keywords(draw, hermitian_allowed=True):
    keywords = {}
    choice = draw(st.sampled_from(["none", "atol", "rtol", "both"]))
    if choice in ("atol", "both"):
        keywords["atol"] = draw(st.sampled_from(ATOLS))
    if choice in ("rtol", "both"):
        keywords["rtol"] = draw(st.sampled_from(RTOLS))
    if hermitian_allowed and draw(st.booleans()):
        keywords["hermitian"] = True
    return keywords


def op_pinv(draw, shape):
    # not hermitian=True, which raises (README: "`pinv(hermitian=True)` ... raise")
    if draw(st.booleans()):
        rcond = draw(st.sampled_from([1e-15, *RTOLS]))
        return lambda m, A: m.linalg.pinv(A, rcond=rcond)
    keywords = tolerance_keywords(draw, hermitian_allowed=False)
    return lambda m, A: m.linalg.pinv(A, **keywords)


def op_matrix_rank(draw, shape):
    keywords = tolerance_keywords(draw)
    return lambda m, A: m.linalg.matrix_rank(A, **keywords)


def op_lstsq(draw, shape):
    # only gelsy, the others raise (README: "`lstsq` drivers other than `gelsy` ... raise")
    driver = draw(st.sampled_from([None, "gelsy"]))
    rcond = draw(st.sampled_from([None, 1e-3]))
    b = rhs(draw, shape[:-1] + (shape[-2],), True)

    def call(m, A):
        solution, residuals, rank, values = m.linalg.lstsq(
            A, like(m, A, b), rcond=rcond, driver=driver
        )
        return solution, residuals, rank, values

    return call


MATRIX_ORDS = ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2]
VECTOR_ORDS = [2, 1, 0, math.inf, -math.inf, 3, 0.5, -1, -2]


def norm_dims(draw, ndim, count):
    dims = draw(st.permutations(range(ndim)))[:count]
    return tuple(d - ndim if draw(st.booleans()) else d for d in dims)


def op_norm(draw, shape):
    ndim = len(shape)
    keepdim = draw(st.booleans())
    dtype = draw(st.sampled_from([None, "float64", "float32"]))

    def cast(m):
        return {} if dtype is None else {"dtype": getattr(m, dtype)}

    family = draw(st.sampled_from(["vector", "matrix", "norm"]))
    if family == "vector":
        ord = draw(st.sampled_from(VECTOR_ORDS))
        dim = draw(st.sampled_from([None, *range(-ndim, ndim)]))
        if draw(st.booleans()):
            dim = norm_dims(draw, ndim, draw(st.integers(0, ndim)))
        return lambda m, A: m.linalg.vector_norm(A, ord, dim, keepdim, **cast(m))
    if family == "matrix":
        ord = draw(st.sampled_from(MATRIX_ORDS))
        dim = norm_dims(draw, ndim, 2)
        return lambda m, A: m.linalg.matrix_norm(A, ord, dim, keepdim, **cast(m))
    ord = draw(st.sampled_from([None, *MATRIX_ORDS, *VECTOR_ORDS]))
    dim = draw(st.sampled_from([None, norm_dims(draw, ndim, 1), norm_dims(draw, ndim, 2)]))
    return lambda m, A: m.linalg.norm(A, ord, dim, keepdim, **cast(m))


def op_cond(draw, shape):
    p = draw(st.sampled_from([None, *MATRIX_ORDS]))
    # PyTorch 2.13 cannot differentiate cond for the other p (its backward finds the inverse
    # it saved modified in place)
    return (lambda m, A: m.linalg.cond(A, p)), p in (None, "nuc", 2, -2)


def op_matrix_power(draw, shape):
    k = draw(st.integers(-3, 4))
    return lambda m, A: m.linalg.matrix_power(A, k)


def op_multi_dot(draw, shape):
    n = shape[-1]
    sizes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    rng = np.random.default_rng(sum(sizes))
    dims = [n, *sizes]
    others = [rng.standard_normal((a, b)) for a, b in zip(dims, dims[1:])]
    if draw(st.booleans()) and others and others[-1].shape[1]:
        others[-1] = others[-1][:, 0]  # a vector last

    def call(m, A):
        first = A.reshape(-1, n) if A.ndim > 2 else A
        return m.linalg.multi_dot([first, *(like(m, A, o) for o in others)])

    return call


def op_cross(draw, shape):
    threes = [d for d, size in enumerate(shape) if size == 3]  # mostly a dim of 3-vectors
    dim = draw(st.sampled_from(threes)) if threes and draw(st.integers(0, 3)) else -1
    dim -= len(shape) * draw(st.booleans()) if dim >= 0 else 0
    other = np.random.default_rng(len(shape)).standard_normal(shape)
    if draw(st.booleans()):
        return lambda m, A: m.linalg.cross(A, like(m, A, other), dim=dim)
    return lambda m, A: m.cross(A, like(m, A, other), dim=dim)


def op_vecdot(draw, shape):
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    other = np.random.default_rng(len(shape)).standard_normal(shape[-1:])
    return lambda m, A: m.linalg.vecdot(A, like(m, A, other), dim=dim)


def op_tensor(draw, shape):
    if draw(st.booleans()):
        ind = draw(st.integers(1, 2))
        return lambda m, A: m.linalg.tensorinv(A, ind=ind)
    b = np.random.default_rng(1).standard_normal(shape[:1])
    return lambda m, A: m.linalg.tensorsolve(A, like(m, A, b))


def op_lu(draw, shape):
    spelling = draw(st.sampled_from(["lu", "lu_factor", "lu_factor_ex", "lu_solve"]))
    pivot = draw(st.booleans())
    if spelling == "lu":
        return lambda m, A: tuple(m.linalg.lu(A, pivot=pivot))
    if spelling == "lu_factor":
        return lambda m, A: tuple(m.linalg.lu_factor(A, pivot=pivot))
    if spelling == "lu_factor_ex":
        check = draw(st.booleans())
        return lambda m, A: tuple(m.linalg.lu_factor_ex(A, pivot=pivot, check_errors=check))
    left, adjoint = draw(st.booleans()), draw(st.booleans())
    b = rhs(draw, shape, left)
    b = b if b.ndim >= 2 else b[..., None]

    def call(m, A):
        LU, pivots = m.linalg.lu_factor(A)
        return m.linalg.lu_solve(LU, pivots, like(m, A, b), left=left, adjoint=adjoint)

    return call


def op_householder(draw, shape):
    k = draw(st.integers(0, min(shape[-2:])))
    tau = np.random.default_rng(k).uniform(0.5, 1.5, (*shape[:-2], k))
    return lambda m, A: m.linalg.householder_product(A, like(m, A, tau))


def op_vander(draw, shape):
    N = draw(st.sampled_from([None, 0, 1, 3]))
    return lambda m, A: m.linalg.vander(A[..., 0, :], N=N)


def op_diagonal(draw, shape):
    offset = draw(st.integers(-2, 2))
    dim1, dim2 = norm_dims(draw, len(shape), 2)
    return lambda m, A: m.linalg.diagonal(A, offset=offset, dim1=dim1, dim2=dim2)


def op_matrix_exp(draw, shape):
    return lambda m, A: m.linalg.matrix_exp(A)


OPS = {
    "det": op_det,
    "slogdet": op_slogdet,
    "inv": op_inv,
    "solve": op_solve,
    "solve_triangular": op_solve_triangular,
    "cholesky": op_cholesky,
    "cholesky_solve": op_cholesky_solve,
    "cholesky_inverse": op_cholesky_inverse,
    "qr": op_qr,
    "eigh": op_eigh,
    "svd": op_svd,
    "pinv": op_pinv,
    "matrix_rank": op_matrix_rank,
    "lstsq": op_lstsq,
    "norm": op_norm,
    "cond": op_cond,
    "matrix_power": op_matrix_power,
    "multi_dot": op_multi_dot,
    "cross": op_cross,
    "vecdot": op_vecdot,
    "tensor": op_tensor,
    "lu": op_lu,
    "householder_product": op_householder,
    "vander": op_vander,
    "diagonal": op_diagonal,
    "matrix_exp": op_matrix_exp,
}


# results that grow with the condition number (inverses, solutions): compared only on the
# SMOOTH kinds, where both libraries are accurate (small integers may be singular, and round-off
# decide whether LAPACK sees it)
CONDITIONED = {"inv", "solve", "solve_triangular", "cholesky_solve", "cholesky_inverse", "pinv"}
CONDITIONED |= {"lstsq", "cond", "matrix_power", "tensor", "lu", "matrix_exp"}
CONDITIONED |= {"householder_product"}


def tolerance(kind: str, dtype: str):
    """(rtol, atol) relative to the largest entry of each result."""
    rtol = {"float64": 1e-8, "float32": 2e-3}.get(dtype, 1e-12)
    if kind not in SMOOTH:
        rtol = {"float64": 1e-6, "float32": 1e-2}.get(dtype, 1e-12)

    def bound(expected):
        scale = np.abs(expected).max() if expected.size and expected.dtype.kind == "f" else 0
        return rtol, rtol * max(scale, 1.0)

    return bound


def as_tuple(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def failed(outputs) -> bool:
    """Whether an ``_ex`` function reported a failure in its ``info``: then its other results
    are LAPACK's partial work, which PyTorch does not define."""
    info = outputs[-1]
    return info.dtype == torch.int32 and info.ndim == outputs[0].ndim - 2 and bool(info.any())


def compare_outputs(ours, theirs, kind, dtype, op, what, vectors):
    """Dtypes, shapes, requires_grad, and the values where they are defined; ``vectors``:
    whether the eigen- or singular vectors are (distinct values)."""
    ours, theirs = as_tuple(ours), as_tuple(theirs)
    assert len(ours) == len(theirs), f"{what}: {len(ours)} results, PyTorch {len(theirs)}"
    undefined = failed(theirs) or (op in CONDITIONED and kind not in SMOOTH)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        undefined |= not vectors and 0 < i < len(ours) - 1  # eigh's and svd's V * V
        # lstsq's rank of an empty A or B: PyTorch's is uninitialised memory there
        undefined |= op == "lstsq" and i == 2 and 0 in theirs[0].shape[-2:]
        where = f"{what}: result {i}"
        assert same_dtype(o, t), f"{where}: {o.dtype}, PyTorch {t.dtype}"
        assert tuple(o.shape) == tuple(t.shape), f"{where}: shape {o.shape}, PyTorch {t.shape}"
        assert o.requires_grad == t.requires_grad, f"{where}: requires_grad {o.requires_grad}"
        if not undefined or t.dtype == torch.int32:
            assert_close(o, t, dtype, where, tolerance(kind, dtype))


def compare_gradients(ours, theirs, A, tA, kind, dtype, what):
    """The gradients of the same random weighting of the results that require grad."""
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(tuple(t.shape)) for t in as_tuple(theirs)]

    def backward(results, leaf, lib):
        terms = [(r * lib.tensor(w).to(r.dtype)).sum() for r, w in zip(results, weights)]
        terms = [term for term, r in zip(terms, results) if r.requires_grad]
        if terms:
            sum(terms).backward()
        return leaf.grad

    mine = outcome(backward, as_tuple(ours), A, sg)
    expected = outcome(backward, as_tuple(theirs), tA, torch)
    if raised_alike(mine, expected, f"{what}: backward"):
        return
    if expected is None:
        assert mine is None or not mine.numpy().any(), f"{what}: a gradient where PyTorch has none"
        return
    assert_close(mine, expected, dtype, f"{what}: gradient", tolerance(kind, dtype))


def vectors_defined(op: str, kind: str, array: np.ndarray) -> bool:
    """Whether eigenvectors or singular vectors are unique up to sign, smooth functions of A:
    eigenvectors of the symmetric kinds only (eigh reads one triangle, whose eigenvalues may
    be close for the others), singular vectors of matrices with distinct singular values."""
    if op == "eigh":
        return kind in ("symmetric", "spd")
    if op == "svd":
        values = np.linalg.svd(array, compute_uv=False) if array.size else np.ones(1)
        return bool((np.abs(np.diff(values, axis=-1)) > 0.1).all() and (values > 0.1).all())
    return True


@given(problem=problems(), op=st.sampled_from(sorted(OPS)), data=st.data())
@FUZZ
def test_linalg_against_pytorch(problem, op, data):
    kind, dtype, batch, array = problem
    made = OPS[op](data.draw, array.shape)  # call, or (call, whether PyTorch differentiates it)
    call, differentiable = made if isinstance(made, tuple) else (made, True)
    what = f"{op} on a {kind} {dtype} {array.shape}"
    vectors = vectors_defined(op, kind, array)
    grad = differentiable and dtype in DTYPES and kind in SMOOTH and vectors
    A, tA = leaf(sg, array, dtype, dtype in DTYPES), leaf(torch, array, dtype, dtype in DTYPES)
    ours, theirs = outcome(call, sg, A), outcome(call, torch, tA)
    if isinstance(ours, sg.linalg.LinAlgError) and "PyTorch returns" in str(ours):
        return  # README: "Where PyTorch returns inf or NaN silently (...) scratchgrad raises"
    if known_difference(op, dtype, array, ours, theirs):
        return
    if lapack_failed_alike(ours, theirs, what) or raised_alike(ours, theirs, what):
        return
    compare_outputs(ours, theirs, kind, dtype, op, what, vectors)
    if grad and not failed(as_tuple(theirs)):
        compare_gradients(ours, theirs, A, tA, kind, dtype, what)


def known_difference(op: str, dtype: str, array: np.ndarray, ours, theirs) -> bool:
    """Differences left as they are (see the task's report): PyTorch returns an empty result
    for an empty input before checking its dtype (cond, matrix_rank, lu, eigh, torch.cholesky
    of integers) or its shape (torch.cholesky and matrix_rank(hermitian=True) of non-square
    matrices), where ours raises; PyTorch refuses bool matrix products (multi_dot,
    matrix_power), which ours computes."""
    if array.size == 0 and isinstance(ours, RuntimeError) and not isinstance(theirs, Exception):
        return dtype not in DTYPES or op in ("cholesky", "matrix_rank")
    return dtype == "bool" and op in ("multi_dot", "matrix_power")


def lapack_failed_alike(ours, theirs, what: str) -> bool:
    """Whether PyTorch raised its LinAlgError, asserting that ours raised ours, which has the
    same message (PyTorch's class is torch._C._LinAlgError, not a class to share)."""
    if not isinstance(theirs, torch.linalg.LinAlgError):
        return False
    assert isinstance(ours, sg.linalg.LinAlgError), f"{what}: {ours!r} where PyTorch: {theirs!r}"
    assert str(ours) == str(theirs), f"{what}: {ours!r} where PyTorch: {theirs!r}"
    return True
