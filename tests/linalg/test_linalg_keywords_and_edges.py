"""``scratchgrad.linalg`` and PyTorch's linear algebra outside it, against PyTorch 2.13 where a
sweep found them apart: keyword arguments, right-hand sides that are vectors or matrices,
empty matrices, dtypes, and the errors for input PyTorch refuses. Each row is one call
``call(m, *tensors)`` run in both libraries on the same arrays."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
import scratchgrad.linalg  # noqa: F401  (sg.linalg)

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
DIAGONAL = np.diag([3.0, 0.5, 0.2])
Z = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
BATCH = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)


def _flat(out) -> list:
    return [x for o in out for x in _flat(o)] if isinstance(out, tuple) else [out]


def _run(m, call, arrays):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated names warn in both
        return call(m, *(m.tensor(a) for a in arrays))


def assert_same(call, *arrays):
    """The same results in both libraries: type name, shapes, dtypes and values."""
    ours, theirs = _run(sg, call, arrays), _run(torch, call, arrays)
    assert type(ours).__name__ == type(theirs).__name__
    for x, y in zip(_flat(ours), _flat(theirs), strict=True):
        assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
        tolerance = 1e-3 if x.dtype == sg.float16 else 1e-9
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=tolerance, atol=1e-12)


def assert_same_error(call, *arrays, error=RuntimeError):
    """Both libraries raise ``error``."""
    for m in (sg, torch):
        with pytest.raises(error):
            _run(m, call, arrays)


SAME = {
    "solve_left_false_batch": (
        lambda m, A, B: m.linalg.solve(A, B, left=False),
        BATCH,
        RNG.standard_normal((4, 3)),
    ),
    "vecdot_complex": (lambda m, x, y: m.linalg.vecdot(x, y), Z, Z[::-1].copy()),
    "vecdot_complex_dim0": (lambda m, x, y: m.linalg.vecdot(x, y, dim=0), Z, Z[::-1].copy()),
    "vector_norm_widening_dtype": (lambda m, x: m.linalg.vector_norm(x, dtype=m.float64), A[0]),
    "vector_norm_complex_widening": (
        lambda m, x: m.linalg.vector_norm(x.to(m.complex64), 3, dtype=m.complex128),
        Z,
    ),
    "matrix_norm_widening_dtype": (
        lambda m, x: m.linalg.matrix_norm(x.float(), "nuc", dtype=m.float64),
        A,
    ),
    "eigh_lower_case_u": (lambda m, A: m.linalg.eigh(A + A.mT, UPLO="u").eigenvalues, A),
    "eigh_lower_case_l": (lambda m, A: m.linalg.eigh(A + A.mT, "l").eigenvalues, A),
    "eigvalsh_lower_case_u": (lambda m, A: m.linalg.eigvalsh(A, UPLO="u"), A),
    "svd_driver_none": (lambda m, A: m.linalg.svd(A, False, driver=None).S, BATCH),
    "svdvals_driver_none": (lambda m, A: m.linalg.svdvals(A, driver=None), BATCH),
    "pinv_rcond": (lambda m, A: m.linalg.pinv(A, 0.3), DIAGONAL),
    "pinv_rcond_keyword": (lambda m, A: m.linalg.pinv(A, rcond=0.1), DIAGONAL),
    "matrix_rank_tol": (lambda m, A: m.linalg.matrix_rank(A, 0.4), DIAGONAL),
    "matrix_rank_tol_keyword": (lambda m, A: m.linalg.matrix_rank(A, tol=0.1), DIAGONAL),
    "matrix_rank_tol_tensor": (
        lambda m, A: m.linalg.matrix_rank(A, m.tensor(0.4, dtype=A.dtype)),
        DIAGONAL,
    ),
    "matrix_rank_tol_hermitian": (lambda m, A: m.linalg.matrix_rank(A, 0.4, True), DIAGONAL),
    # tol=0 counts every nonzero singular value (rtol 0, not eps * n)
    "matrix_rank_tol_0": (lambda m, A: m.linalg.matrix_rank(A, tol=0.0), DIAGONAL * [1, 1e-17, 0]),
    # PyTorch factors nothing for an empty B: its rank is 0
    "lstsq_no_columns": (lambda m, A, B: m.linalg.lstsq(A, B), BATCH, BATCH[..., :0]),
    "tensorinv_1x1": (lambda m, x: m.linalg.tensorinv(x[:1, :1]), A),
    "lstsq_vector_rhs": (lambda m, A, B: m.linalg.lstsq(A, B), BATCH, BATCH[..., 0]),
}


EMPTY = [np.zeros((0, 0)), np.zeros((3, 0, 0)), np.zeros((0, 2)), np.zeros((2, 0))]
for _i, _a in enumerate(EMPTY):
    for _ord in (2, 1, math.inf, "nuc", "fro"):
        SAME[f"matrix_norm_{_ord}_empty_{_i}"] = (
            lambda m, A, o=_ord: m.linalg.matrix_norm(A, o, keepdim=True),
            _a,
        )
    for _p in (None, 2, -2, 1, -1, math.inf, -math.inf) + (("fro", "nuc") if _i < 2 else ()):
        SAME[f"cond_{_p}_empty_{_i}"] = (lambda m, A, p=_p: m.linalg.cond(A, p), _a)
SAME["matrix_norm_-1_of_0x2"] = (lambda m, A: m.linalg.matrix_norm(A, -1), EMPTY[2])
for _ord in ("fro", 1, -1, math.inf, -math.inf):
    SAME[f"matrix_norm_{_ord}_float16"] = (
        lambda m, A, o=_ord: m.linalg.matrix_norm(A, o),
        BATCH.astype(np.float16),
    )

INTEGERS = np.array([[[1, 2], [3, 4]], [[0, 1], [1, 1]]])
for _dtype in ("int64", "int32", "int8", "uint8"):
    for _n in (0, 1, 2, 5):
        SAME[f"matrix_power_{_dtype}_{_n}"] = (
            lambda m, A, n=_n: m.linalg.matrix_power(A, n),
            INTEGERS.astype(_dtype),
        )
SAME["matrix_power_bool_0"] = (lambda m, A: m.linalg.matrix_power(A, 0), INTEGERS > 1)
SAME["torch_matrix_power_int_empty_batch"] = (
    lambda m, A: m.matrix_power(A, 3),
    np.zeros((0, 2, 2), np.int64),
)

WIDE, TALL = RNG.standard_normal((2, 2, 3)), RNG.standard_normal((3, 2))
for _i, _a in enumerate((A, BATCH, WIDE, TALL, np.zeros((0, 3, 3)), np.zeros((0, 0)))):
    SAME[f"lu_unpack_{_i}"] = (lambda m, A: m.lu_unpack(*m.linalg.lu_factor_ex(A)[:2]), _a)
    SAME[f"lu_unpack_no_data_{_i}"] = (
        lambda m, A: m.lu_unpack(*m.linalg.lu_factor_ex(A)[:2], unpack_data=False),
        _a,
    )
    SAME[f"lu_unpack_no_pivots_{_i}"] = (
        lambda m, A: m.lu_unpack(*m.linalg.lu_factor_ex(A)[:2], False, False),
        _a,
    )
    SAME[f"torch_lu_{_i}"] = (lambda m, A: m.lu(A), _a)
    SAME[f"torch_lu_get_infos_{_i}"] = (lambda m, A: A.lu(get_infos=True), _a)
SAME["torch_lu_singular"] = (lambda m, A: m.lu(A, get_infos=True), np.ones((2, 3, 3)))
SAME["torch_lu_solve"] = (lambda m, A, B: m.lu_solve(B, *m.linalg.lu_factor(A)), BATCH, A)
SAME["tensor_lu_solve"] = (lambda m, A, B: B.lu_solve(*m.linalg.lu_factor(A)), A, A[:, :2])
SAME["chain_matmul"] = (lambda m, x, y: m.chain_matmul(x, y, x.mT, y), A, A[:, :2] @ A[:2])
SAME["chain_matmul_one"] = (lambda m, x: m.chain_matmul(x), TALL)
SAME["chain_matmul_int"] = (lambda m, x: m.chain_matmul(x, x, x), INTEGERS[0])


@pytest.mark.parametrize("name", SAME)
def test_as_pytorch(name):
    assert_same(*SAME[name])


ERRORS = {
    # a vector right-hand side is a column also where not left: PyTorch refuses it there
    "solve_left_false_vector": (lambda m, A, b: m.linalg.solve(A, b, left=False), A, A[0]),
    "solve_left_false_1x1_vector": (
        lambda m, A, b: m.linalg.solve(A, b, left=False),
        A[:1, :1],
        A[0, :1],
    ),
    "solve_left_false_batch_vector": (
        lambda m, A, b: m.linalg.solve(A, b, left=False),
        BATCH,
        BATCH[..., 0],
    ),
    "solve_left_false_batch_of_3x2": (
        lambda m, A, B: m.linalg.solve(A, B, left=False),
        BATCH,
        A[:, :2],
    ),
    "solve_ex_left_false_vector": (lambda m, A, b: m.linalg.solve_ex(A, b, left=False), A, A[0]),
    "matrix_norm_nuc_float16": (lambda m, A: m.linalg.matrix_norm(A, "nuc"), A.astype(np.float16)),
    "matrix_norm_2_float16": (lambda m, A: m.linalg.matrix_norm(A, 2), A.astype(np.float16)),
    "cond_fro_empty_0x2": (lambda m, A: m.linalg.cond(A, "fro"), EMPTY[2]),
    "vector_norm_narrowing_dtype": (lambda m, x: m.linalg.vector_norm(x, dtype=m.float32), A),
    "vector_norm_to_float16": (lambda m, x: m.linalg.vector_norm(x.float(), dtype=m.float16), A),
    "vector_norm_int_with_dtype": (lambda m, x: m.linalg.vector_norm(x, dtype=m.float64), A[0] > 0),
    "vector_norm_complex_to_real": (lambda m, x: m.linalg.vector_norm(x, dtype=m.float64), Z),
    "vector_norm_real_to_complex": (lambda m, x: m.linalg.vector_norm(x, dtype=m.complex128), A),
    "matrix_norm_narrowing_dtype": (lambda m, x: m.linalg.matrix_norm(x, dtype=m.float32), A),
    "matrix_norm_int_with_dtype": (
        lambda m, x: m.linalg.matrix_norm(x.long(), dtype=m.float64),
        A,
    ),
    "norm_narrowing_dtype": (lambda m, x: m.linalg.norm(x, dtype=m.float32), A),
    "svd_driver": (lambda m, A: m.linalg.svd(A, driver="gesvd"), A),
    "svdvals_driver": (lambda m, A: m.linalg.svdvals(A, driver="gesvdj"), A),
    "eigh_uplo_lower": (lambda m, A: m.linalg.eigh(A, UPLO="lower"), A),
    "matrix_power_int_negative": (lambda m, A: m.linalg.matrix_power(A, -1), INTEGERS),
    "chain_matmul_none": (lambda m: m.chain_matmul(),),
    "chain_matmul_vector": (lambda m, x: m.chain_matmul(x[0], x), A),
    "chain_matmul_batch": (lambda m, x: m.chain_matmul(x, x), BATCH),
    "lu_unpack_vector": (lambda m, x: m.lu_unpack(x[0, 0], m.ones(3, dtype=m.int32)), A),
    "lu_unpack_long_pivots": (lambda m, x: m.lu_unpack(x, m.ones(3, dtype=m.int64)), A),
    # a string order is a matrix norm whatever the dims, as PyTorch's
    "norm_nuc_of_a_vector": (lambda m, x: m.linalg.norm(x, "nuc"), A[0]),
    "norm_fro_over_one_dim": (lambda m, x: m.linalg.norm(x, "fro", dim=0), A),
    # ind beyond A's dims: PyTorch refuses it (a 0-d or size-1 A passed as a 1x1 matrix)
    "tensorinv_0d": (lambda m, x: m.linalg.tensorinv(x[0, 0]), A),
    "tensorinv_size_1": (lambda m, x: m.linalg.tensorinv(x[0, :1]), A),
    "vecdot_int": (lambda m, x: m.linalg.vecdot(x, x), np.arange(3)),
    "vecdot_bool": (lambda m, x: m.linalg.vecdot(x, x), np.ones(3, bool)),
    # (2, 3, 3) and (1, 3): a matrix of one row, not a batch of vectors
    "lstsq_one_row": (lambda m, A, B: m.linalg.lstsq(A, B), BATCH, A[:1]),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_pytorch(name):
    assert_same_error(*ERRORS[name])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, A: m.linalg.pinv(A, 0.1, atol=0.1),
        lambda m, A: m.linalg.pinv(A, rcond=0.1, rtol=0.1),
        lambda m, A: m.linalg.matrix_rank(A, 0.1, atol=0.1),
        lambda m, A: m.linalg.matrix_rank(A, tol=0.1, rtol=0.1),
    ],
)
def test_the_older_tolerance_is_not_taken_with_atol_or_rtol_as_in_pytorch(call):
    assert_same_error(call, A, error=TypeError)


def test_vector_norm_of_a_string_order_is_a_type_error_as_pytorchs():
    assert_same_error(lambda m, x: m.linalg.vector_norm(x, "fro"), A, error=TypeError)


def test_vecdot_of_complex_vectors_conjugates_the_first_and_its_gradient_as_pytorch():
    grads = []
    for m in (sg, torch):
        x, y = m.tensor(Z, requires_grad=True), m.tensor(Z[::-1].copy(), requires_grad=True)
        m.linalg.vecdot(x, y).abs().sum().backward()
        grads.append((x.grad.resolve_conj().numpy(), y.grad.resolve_conj().numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_lu_unpack_differentiates_as_pytorch():
    grads = []
    for m in (sg, torch):
        x = m.tensor(WIDE, requires_grad=True)
        P, L, U = m.lu_unpack(*m.linalg.lu_factor(x))
        (L.sum() + (U * U).sum()).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.lu(m.eye(2)),
        lambda m: m.lu_solve(m.ones(2, 1), *m.linalg.lu_factor(m.eye(2))),
        lambda m: m.chain_matmul(m.eye(2), m.eye(2)),
    ],
)
def test_the_deprecated_names_warn_as_pytorchs(call):
    # (PyTorch's warn once per process: checked by hand, not here)
    with pytest.warns(UserWarning, match="deprecated"):
        call(sg)


@pytest.mark.parametrize(
    "ord, shape", [(1, (0, 2)), (math.inf, (2, 0)), (-1, (0, 2)), (2, (0, 2, 3)), ("nuc", (2, 0))]
)
def test_norms_of_empty_matrices_differentiate_where_pytorchs_do(ord, shape):
    grads = []
    for m in (sg, torch):
        x = m.zeros(shape, dtype=m.float64, requires_grad=True)
        out = m.linalg.matrix_norm(x, ord)
        grads.append(out.requires_grad and m.autograd.grad(out.sum(), x)[0].shape)
    assert grads[0] == grads[1]


def test_cholesky_ex_reports_a_nan_pivot_in_info_as_pytorch():
    nan = np.array([[[np.nan, 1.0], [1.0, 2.0]], [[1.0, 0.0], [np.nan, 1.0]], [[2.0, 0], [0, 1]]])
    ours, theirs = (
        sg.linalg.cholesky_ex(sg.tensor(nan)),
        torch.linalg.cholesky_ex(torch.tensor(nan)),
    )
    np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())


@pytest.mark.parametrize(
    "call",
    [
        lambda m, A, tol: m.linalg.matrix_rank(A, atol=tol),
        lambda m, A, tol: m.linalg.matrix_rank(A, tol),
        lambda m, A, tol: m.linalg.pinv(A, rtol=tol),
    ],
)
def test_a_tolerance_per_matrix_raises_rather_than_a_bare_truth_value_error(call):
    torch_rank = call(torch, torch.tensor(BATCH), torch.tensor([0.1, 5.0]))  # PyTorch takes it
    assert torch_rank.shape[0] == 2
    with pytest.raises(NotImplementedError, match="a tolerance per matrix"):
        call(sg, sg.tensor(BATCH), sg.tensor([0.1, 5.0]))
