"""``scratchgrad.linalg`` where it is easy to get wrong: PyTorch's errors (singular and
indefinite matrices naming the batch element, bad shapes and dtypes, raised before anything is
computed), the result types, the gradients PyTorch defines at singular matrices, repeated
eigenvalues and zero vectors, and the doc strings' examples."""

from __future__ import annotations

import doctest
import math
import sys

import numpy as np
import pytest
import torch
from oracle import outcome, raised_alike, same_dtype

import scratchgrad as sg
import scratchgrad.linalg  # noqa: F401  (sg.linalg)

SINGULAR = np.stack([np.eye(3), [[1.0, 2, 3], [2, 4, 6], [1, 1, 1]]])
INDEFINITE = np.stack([np.eye(3), np.diag([1.0, -1, 1])])
WITH_NAN = np.stack([np.eye(2), [[1.0, 0.0], [np.nan, 1.0]]])


def _message(lib, call) -> tuple[type, str]:
    with pytest.raises(RuntimeError) as info:
        call(lib)
    return info.value


ERRORS = {
    "inv_batch": lambda m: m.linalg.inv(m.tensor(SINGULAR)),
    "inv": lambda m: m.linalg.inv(m.tensor(SINGULAR[1])),
    "inv_zeros": lambda m: m.linalg.inv(m.zeros(2, 2)),
    "solve_batch": lambda m: m.linalg.solve(m.tensor(SINGULAR), m.ones(2, 3, dtype=m.float64)),
    "solve": lambda m: m.linalg.solve(m.tensor(SINGULAR[1]), m.ones(3, dtype=m.float64)),
    "cholesky_batch": lambda m: m.linalg.cholesky(m.tensor(INDEFINITE)),
    "cholesky": lambda m: m.linalg.cholesky(-m.eye(3)),
    "cholesky_upper": lambda m: m.linalg.cholesky(m.tensor(INDEFINITE), upper=True),
    # LAPACK refuses a NaN pivot (NumPy's batched cholesky returned NaN)
    "cholesky_nan": lambda m: m.linalg.cholesky(m.tensor(WITH_NAN)),
    "cholesky_ex_nan": lambda m: m.linalg.cholesky_ex(m.tensor(WITH_NAN), check_errors=True),
    # NumPy's blocked factorization "factored" an all-inf matrix (inf and 0); LAPACK's potrf
    # meets inf / inf, NaN, in the second pivot
    "cholesky_inf": lambda m: m.linalg.cholesky(m.full((2, 2), math.inf, dtype=m.float64)),
    "cholesky_inf_batch": lambda m: m.cholesky(
        m.tensor(np.stack([np.eye(2), np.full((2, 2), math.inf)]))
    ),
}


@pytest.mark.parametrize(
    "matrix",
    [
        np.full((3, 3), math.inf),
        np.full((2, 2), -math.inf),
        np.full((2, 2), math.nan),
        np.diag([math.inf, 1.0, 2.0]),
        [[4.0, math.nan], [math.nan, 4.0]],
        [[4.0, 2.0, 0.0], [2.0, math.inf, 1.0], [0.0, 1.0, 3.0]],
        np.stack([np.eye(2), np.full((2, 2), math.inf)]),
    ],
)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_ex_info_of_inf_and_nan_matrices_is_lapacks(matrix, upper):
    """cholesky_ex's info of an all-inf matrix was 0 and its factor inf and 0 (NumPy's blocked
    factorization), where PyTorch's LAPACK reports the pivot that is inf - inf; a factor that
    completes (an inf on the diagonal alone) is PyTorch's."""
    matrix = np.asarray(matrix, dtype=np.float64)  # (float32's MKL kernel differs: see README)
    ours = sg.linalg.cholesky_ex(sg.tensor(matrix), upper=upper)
    theirs = torch.linalg.cholesky_ex(torch.tensor(matrix), upper=upper)
    np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
    done = theirs.info.numpy() == 0  # (a failed factor is NaN in ours, LAPACK's leftovers there)
    np.testing.assert_array_equal(ours.L.numpy()[done], theirs.L.numpy()[done])


@pytest.mark.parametrize("name", ERRORS)
def test_singular_and_indefinite_matrices_raise_pytorchs_linalg_error(name):
    ours, theirs = _message(sg, ERRORS[name]), _message(torch, ERRORS[name])
    assert isinstance(ours, sg.linalg.LinAlgError) and isinstance(theirs, torch.linalg.LinAlgError)
    assert str(ours) == str(theirs)


BAD_INPUT = {
    "non_square": lambda m: m.linalg.inv(m.ones(3, 4)),
    "det_non_square": lambda m: m.linalg.det(m.ones(2, 3, 4)),
    "cholesky_non_square": lambda m: m.linalg.cholesky(m.ones(3, 4)),
    "eigh_non_square": lambda m: m.linalg.eigh(m.ones(3, 4)),
    "matrix_power_non_square": lambda m: m.linalg.matrix_power(m.ones(2, 3), 2),
    # PyTorch looks at a square function's shape before its dtype, but solve's (and lu_solve's)
    # integer dtype first, even before the dims; ours said the other first
    **{
        f"{name}_{what}": lambda m, call=call, A=A: call(m, A(m))
        for name, call in {
            "inv": lambda m, A: m.linalg.inv(A),
            "det": lambda m, A: m.linalg.det(A),
            "slogdet": lambda m, A: m.linalg.slogdet(A),
            "cholesky": lambda m, A: m.linalg.cholesky(A),
            "cholesky_ex": lambda m, A: m.linalg.cholesky_ex(A),
            "eigh": lambda m, A: m.linalg.eigh(A),
            "matrix_exp": lambda m, A: m.linalg.matrix_exp(A),
            "solve": lambda m, A: m.linalg.solve(A, A),
            "solve_ex": lambda m, A: m.linalg.solve_ex(A, A),
            "lu_solve": lambda m, A: m.linalg.lu_solve(A, m.zeros(2, dtype=m.int32), A),
        }.items()
        for what, A in {
            "int_non_square": lambda m: m.zeros(2, 3, dtype=m.int64),
            "empty_int_non_square": lambda m: m.zeros(0, 3, dtype=m.int64),
            "bool_non_square": lambda m: m.zeros(2, 3, dtype=m.bool),
            "half_non_square": lambda m: m.zeros(2, 3, dtype=m.float16),
            "int_vector": lambda m: m.zeros(3, dtype=m.int64),
        }.items()
    },
    "vector": lambda m: m.linalg.inv(m.ones(3)),
    "integer": lambda m: m.linalg.inv(m.ones(3, 3, dtype=m.int64)),
    "half": lambda m: m.linalg.inv(m.ones(3, 3, dtype=m.float16)),
    "solve_shapes": lambda m: m.linalg.solve(m.eye(3), m.ones(4)),
    "solve_dtypes": lambda m: m.linalg.solve(m.eye(3), m.ones(3, dtype=m.float64)),
    "triangular_vector": lambda m: m.linalg.solve_triangular(m.eye(3), m.ones(3), upper=False),
    "triangular_shapes": lambda m: m.linalg.solve_triangular(
        m.eye(3), m.ones(4, 4), upper=True, left=False
    ),
    "qr_mode": lambda m: m.linalg.qr(m.ones(3, 3), mode="x"),
    "eigh_uplo": lambda m: m.linalg.eigh(m.ones(3, 3), UPLO="X"),
    "matrix_norm_ord": lambda m: m.linalg.matrix_norm(m.ones(3, 3), 3),
    "matrix_norm_vector": lambda m: m.linalg.matrix_norm(m.ones(3), "fro"),
    "norm_3d": lambda m: m.linalg.norm(m.ones(2, 2, 2), 2),
    "norm_dims": lambda m: m.linalg.norm(m.ones(2, 3), dim=(0, 1, 1)),
    "vector_norm_integer": lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.int64)),
    "vector_norm_empty": lambda m: m.linalg.vector_norm(m.ones(0), -math.inf),
    "cross_length": lambda m: m.linalg.cross(m.ones(2, 4), m.ones(2, 4)),
    "vecdot_dtypes": lambda m: m.linalg.vecdot(m.ones(2, 4), m.ones(4, dtype=m.float64)),
}


@pytest.mark.parametrize("name", BAD_INPUT)
def test_bad_input_raises_pytorchs_runtime_error(name):
    ours, theirs = _message(sg, BAD_INPUT[name]), _message(torch, BAD_INPUT[name])
    assert str(ours) == str(theirs)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.linalg.cross(m.ones(2, 3), m.ones(3)),
        lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(5, 2)),
        lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(2, 4, 2)),
    ],
)
def test_bad_input_messages_start_as_pytorchs_and_add_the_shapes(call):
    ours, theirs = str(_message(sg, call)), str(_message(torch, call)).rstrip(".")
    assert ours.startswith(theirs) and "(got shapes" in ours


def test_a_zero_on_a_triangular_diagonal_raises_where_pytorch_gives_inf():
    A = sg.tensor(np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])]))
    with pytest.raises(sg.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 3"):
        sg.linalg.solve_triangular(A, sg.ones(3, 1, dtype=sg.float64), upper=True)
    # unitriangular: the diagonal is not read
    x = sg.linalg.solve_triangular(
        A, sg.ones(3, 1, dtype=sg.float64), upper=True, unitriangular=True
    )
    assert x.shape == (2, 3, 1) and np.isfinite(x.numpy()).all()


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_solve_triangular_with_inf_and_nan_solves_row_by_row_as_pytorch(
    upper, left, unitriangular, dtype
):
    """An inf or a NaN in A's triangle or in B reaches only the rows solved after it (the
    general solve used before spread it to every row through its pivoting: NaN where
    PyTorch has 0.5, so a MultivariateNormal's log_prob at inf was NaN, not -inf)."""
    rng = np.random.default_rng(8)
    for _ in range(20):
        a = rng.uniform(0.5, 2.0, (2, 4, 4)) * rng.choice([-1, 1], (2, 4, 4))
        b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
        for array in (a, b):  # a few non-finite entries, some outside the triangle read
            at = tuple(rng.integers(0, n, 3) for n in array.shape)
            array[at] = rng.choice([np.inf, -np.inf, np.nan], 3)
        results = [
            lib.linalg.solve_triangular(
                lib.tensor(a, dtype=getattr(lib, dtype)),
                lib.tensor(b, dtype=getattr(lib, dtype)),
                upper=upper,
                left=left,
                unitriangular=unitriangular,
            ).numpy()
            for lib in (torch, sg)
        ]
        np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_a_multivariate_normals_log_prob_at_inf_is_minus_inf():
    scale = [[2.0, 0.0], [1.0, 3.0]]
    at = [math.inf, 0.0]
    log_probs = [
        lib.distributions.MultivariateNormal(lib.zeros(2), scale_tril=lib.tensor(scale))
        .log_prob(lib.tensor(at))
        .item()
        for lib in (torch, sg)
    ]
    assert log_probs == [-math.inf, -math.inf]


@pytest.mark.parametrize(
    "a_dtype, b_dtype", [("float32", "float64"), ("float64", "float32"), ("float32", "int64")]
)
def test_solve_triangular_casts_b_to_as_dtype_as_pytorch(a_dtype, b_dtype):
    # a MultivariateNormal of float32 gives the log_prob of float64 values this way
    L, B = np.array([[2.0, 0.0], [1.0, 4.0]]), np.array([[3.0], [-2.0]])
    results = []
    for lib in (torch, sg):
        A = lib.tensor(L, dtype=getattr(lib, a_dtype), requires_grad=True)
        b = lib.tensor(B, dtype=getattr(lib, b_dtype))
        b.requires_grad_(b_dtype != "int64")
        x = lib.linalg.solve_triangular(A, b, upper=False)
        x.sum().backward()
        results.append((x, A.grad, b.grad))
    (x, dA, db), (ours, our_dA, our_db) = results
    assert str(ours.dtype).split(".")[-1] == a_dtype == str(x.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), x.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(our_dA.numpy(), dA.numpy(), rtol=1e-6)
    if db is not None:  # B's gradient keeps B's dtype
        assert str(our_db.dtype).split(".")[-1] == b_dtype
        np.testing.assert_allclose(our_db.numpy(), db.numpy(), rtol=1e-6)


def test_differentiating_what_pytorch_cannot_raises_its_errors():
    A = sg.randn(3, 2, dtype=sg.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="not computed when mode='r'"):
        sg.linalg.qr(A, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows"):
        sg.linalg.qr(A, mode="complete").Q.sum().backward()
    with pytest.raises(NotImplementedError, match="hermitian=True"):
        sg.linalg.pinv(A, hermitian=True)
    with pytest.raises(NotImplementedError, match="driver 'gelsd'"):
        sg.linalg.lstsq(A, A, driver="gelsd")


def test_the_gradient_of_slogdet_at_a_singular_matrix_raises_where_pytorchs_is_inf():
    # a zero row: singular in floating point whatever the pivoting (SINGULAR[1]'s LU leaves a
    # pivot of 1e-16 on some CPUs, and PyTorch's gradient is then finite)
    singular = [[1.0, 2, 3], [0, 0, 0], [4, 5, 6]]
    theirs = torch.tensor(singular, requires_grad=True)
    torch.linalg.slogdet(theirs).logabsdet.backward()
    assert not np.isfinite(theirs.grad.numpy()).all()
    A = sg.tensor(singular, requires_grad=True)
    sign, logabsdet = sg.linalg.slogdet(A)
    assert sign.item() == 0 and logabsdet.item() == -math.inf
    with pytest.raises(sg.linalg.LinAlgError, match="linalg.slogdet: the gradient of logabsdet"):
        logabsdet.backward()


def test_linalg_error_is_a_runtime_error():
    assert issubclass(sg.linalg.LinAlgError, RuntimeError)


def test_result_types_have_pytorchs_fields():
    A = np.random.default_rng(0).standard_normal((3, 3))
    for name, args in [("slogdet", ()), ("qr", ()), ("eigh", ()), ("svd", ()), ("lstsq", (A,))]:
        ours = getattr(sg.linalg, name)(sg.tensor(A), *(sg.tensor(a) for a in args))
        theirs = getattr(torch.linalg, name)(torch.tensor(A), *(torch.tensor(a) for a in args))
        assert type(ours).__name__ == type(theirs).__name__.rpartition(".")[2]
        assert len(ours) == len(theirs)
        for i, field in enumerate(ours._fields):
            assert getattr(theirs, field) is theirs[i] and getattr(ours, field) is ours[i]


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 2, 4)])
def test_factorizations_rebuild_their_input(shape):
    A = np.random.default_rng(1).standard_normal(shape)
    S = A @ np.swapaxes(A, -1, -2)
    w, V = sg.linalg.eigh(sg.tensor(S))
    np.testing.assert_allclose(((V * w.unsqueeze(-2)) @ V.mT).numpy(), S, atol=1e-12)
    for full in (True, False):
        U, s, Vh = sg.linalg.svd(sg.tensor(A), full_matrices=full)
        k = s.shape[-1]
        rebuilt = (U[..., :k] * s.unsqueeze(-2)) @ Vh[..., :k, :]
        np.testing.assert_allclose(rebuilt.numpy(), A, atol=1e-12)
    for mode in ("reduced", "complete"):
        Q, R = sg.linalg.qr(sg.tensor(A), mode)
        np.testing.assert_allclose((Q @ R).numpy(), A, atol=1e-12)
        eye = np.eye(Q.shape[-1])
        np.testing.assert_allclose(
            (Q.mT @ Q).numpy(), np.broadcast_to(eye, (*shape[:-2], *eye.shape)), atol=1e-12
        )


def _grads(lib, call, arrays):
    """The gradients of ``call(...).sum()``, recorded (``create_graph=True``): PyTorch's
    first-order det backward gives 0 at an exactly singular matrix, where the cofactor matrix
    (its recorded path, and ours in both modes) is not."""
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    grads = lib.autograd.grad(call(lib, *xs).sum(), xs, create_graph=True)
    return [g.detach().numpy() for g in grads]


@pytest.mark.parametrize(
    "name, call, arrays",
    [
        ("det_singular", lambda m, A: m.linalg.det(A), [SINGULAR[1]]),
        ("det_singular_rank_1", lambda m, A: m.linalg.det(A), [np.ones((3, 3))]),
        ("det_mixed_batch", lambda m, A: m.linalg.det(A), [SINGULAR]),
        ("det_1x1_zero", lambda m, A: m.linalg.det(A), [np.zeros((2, 1, 1))]),
        ("eigvalsh_repeated", lambda m, A: m.linalg.eigvalsh(A) * m.arange(1.0, 4.0), [np.eye(3)]),
        ("svdvals_repeated", lambda m, A: m.linalg.svdvals(A) ** 2, [np.eye(3)[:, :2] * 2]),
        # the zero singular values weighted 0: their vectors are any basis of the null space,
        # which LAPACK builds differently on different CPUs
        (
            "svdvals_rank_deficient",
            lambda m, A: m.linalg.svdvals(A) * m.tensor([1.0, 0, 0], dtype=A.dtype),
            [np.ones((4, 3))],
        ),
        ("nuclear_norm_repeated", lambda m, A: m.linalg.matrix_norm(A, "nuc"), [np.eye(3)]),
        ("spectral_norm_ties", lambda m, A: m.linalg.matrix_norm(A, 2), [np.diag([2.0, 2, 1])]),
        ("norm_1_ties", lambda m, A: m.linalg.matrix_norm(A, 1), [np.eye(3)]),
        ("pinv_rank_deficient", lambda m, A: m.linalg.pinv(A), [np.ones((3, 2))]),
        *(
            (
                f"vector_norm_{ord}_at_zero",
                lambda m, x, ord=ord: m.linalg.vector_norm(x, ord),
                [np.zeros(4)],
            )
            for ord in (2, 1, 3, 1.5, 0.5, math.inf)
        ),
        (
            "vector_norm_inf_ties",
            lambda m, x: m.linalg.vector_norm(x, math.inf),
            [np.array([1.0, -2, 2])],
        ),
        (
            "vector_norm_dim_with_zero_row",
            lambda m, x: m.linalg.vector_norm(x, dim=1),
            [np.array([[0.0, 0], [3, 4]])],
        ),
        ("matrix_power_0", lambda m, A: m.linalg.matrix_power(A, 0), [SINGULAR[1]]),
    ],
)
def test_gradients_where_pytorch_defines_them_specially(name, call, arrays):
    """Singular matrices (det through the SVD), repeated eigenvalues and singular values where
    only the values are used, ties, and the zero vector: finite, and PyTorch's."""
    ours, theirs = _grads(sg, call, arrays), _grads(torch, call, arrays)
    for o, t in zip(ours, theirs):
        assert np.isfinite(o).all()
        np.testing.assert_allclose(o, t, rtol=1e-7, atol=1e-9)


def test_second_derivatives_of_det_at_a_matrix_of_rank_n_minus_1():
    """The SVD route of det's gradient is itself differentiable (distinct singular values)."""
    A = sg.tensor(SINGULAR[1], requires_grad=True)
    assert sg.autograd.gradcheck(lambda a: sg.linalg.det(a), A)
    theirs = torch.autograd.functional.hessian(torch.linalg.det, torch.tensor(SINGULAR[1]))
    ours = sg.autograd.functional.hessian(sg.linalg.det, sg.tensor(SINGULAR[1]))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-9)


@pytest.mark.filterwarnings("ignore:.*(divide|invalid value):RuntimeWarning")
def test_eigenvectors_of_repeated_eigenvalues_have_no_gradient_as_in_pytorch():
    """A loss that uses the eigenvectors of a repeated eigenvalue: the gradient divides by a
    zero gap, as in PyTorch (which documents it as undefined), never a silent finite value."""
    for lib in (sg, torch):
        A = lib.tensor(np.diag([1.0, 1.0, 2.0]), requires_grad=True)
        V = lib.linalg.eigh(A).eigenvectors
        (V[:, 0] * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        assert not np.isfinite(A.grad.numpy()).all()


def test_empty_matrices_as_pytorch():
    for call in (
        lambda m: m.linalg.inv(m.ones(0, 0)),
        lambda m: m.linalg.det(m.ones(2, 0, 0)),
        lambda m: m.linalg.matrix_norm(m.ones(0, 3), "fro"),
        lambda m: m.linalg.vector_norm(m.ones(2, 3), dim=()),
    ):
        ours, theirs = call(sg), call(torch)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_rank_lstsq_and_pinv_tolerances_as_pytorch():
    rng = np.random.default_rng(3)
    low_rank = rng.standard_normal((2, 5, 2)) @ rng.standard_normal((2, 2, 4))
    small = np.diag([1.0, 1e-3, 1e-9])
    for call in (
        lambda m: m.linalg.matrix_rank(m.tensor(low_rank)),
        lambda m: m.linalg.matrix_rank(m.tensor(small)),
        lambda m: m.linalg.matrix_rank(m.tensor(small), atol=0.01),
        lambda m: m.linalg.matrix_rank(m.tensor(small), rtol=0.01),
        lambda m: m.linalg.matrix_rank(m.tensor(small), hermitian=True),
        lambda m: m.linalg.pinv(m.tensor(small), atol=0.01),
        lambda m: m.linalg.pinv(m.tensor(low_rank)),
        lambda m: m.linalg.lstsq(m.tensor(low_rank), m.tensor(low_rank[..., :1])).solution,
        lambda m: m.linalg.lstsq(m.tensor(low_rank), m.tensor(low_rank[..., :1])).rank,
    ):
        ours, theirs = call(sg), call(torch)
        assert ours.dtype == getattr(sg, str(theirs.dtype).split(".")[-1].rpartition(".")[2])
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-7, atol=1e-9)
    # rcond cuts the 1e-9 (PyTorch's gelsy agrees, but was seen to give 0 for x[0] at times)
    x = sg.linalg.lstsq(sg.tensor(small), sg.ones(3, 1, dtype=sg.float64), 1e-4).solution
    np.testing.assert_allclose(x.numpy().ravel(), [1.0, 1000.0, 0.0], rtol=1e-12)


MODULES = ["", ".checks", ".systems", ".decompositions", ".derived", ".norms"]


@pytest.mark.parametrize("module", MODULES)
def test_doc_examples_run(module):
    assert doctest.testmod(sys.modules["scratchgrad.linalg" + module]).failed == 0


@pytest.mark.filterwarnings("ignore:.*(overflow|divide|invalid value):RuntimeWarning")
@pytest.mark.parametrize("ord", [2, 3, 0.5, -1, math.inf])
def test_vector_norm_of_one_entry_is_its_absolute_value_as_pytorch(ord):
    """Each norm reading one entry: |x| exactly, as PyTorch's (squaring 1e-200 gave 0, and
    1e200 cubed gave inf), and PyTorch's gradient from it (x / |x| for ord 2)."""
    for dim in (1, (1, 2), None):
        array = np.array([[[1e-200]], [[-1e200]], [[-2.0]], [[0.0]]])[: 1 if dim is None else 4]
        ours, theirs = (
            _grads(m, lambda m, x, dim=dim: m.linalg.vector_norm(x, ord, dim), [array])
            for m in (sg, torch)
        )
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, equal_nan=True)
        x = sg.tensor(array)
        expected = torch.linalg.vector_norm(torch.tensor(array), ord, dim)
        np.testing.assert_array_equal(sg.linalg.vector_norm(x, ord, dim).numpy(), expected.numpy())


SIXTEEN_BIT = {
    "linalg.svd": lambda lib, a: lib.linalg.svd(a),
    "linalg.eigh": lambda lib, a: lib.linalg.eigh(a),
    "linalg.qr": lambda lib, a: lib.linalg.qr(a),
    "linalg.cholesky": lambda lib, a: lib.linalg.cholesky(a),
    "linalg.solve": lambda lib, a: lib.linalg.solve(a, a),
    "linalg.det": lambda lib, a: lib.linalg.det(a),
    "linalg.lu_factor": lambda lib, a: lib.linalg.lu_factor(a),
    "cholesky_solve": lambda lib, a: lib.cholesky_solve(a, a),
    "triangular_solve": lambda lib, a: lib.triangular_solve(a, a),
    "householder_product": lambda lib, a: lib.linalg.householder_product(a, a[0]),
    "linalg.cond": lambda lib, a: lib.linalg.cond(a),
    "linalg.inv": lambda lib, a: lib.linalg.inv(a),
    "linalg.slogdet": lambda lib, a: lib.linalg.slogdet(a),
    "logdet": lambda lib, a: lib.logdet(a),
    "linalg.matrix_norm": lambda lib, a: lib.linalg.matrix_norm(a, 2),
    "linalg.lstsq": lambda lib, a: lib.linalg.lstsq(a, a),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", SIXTEEN_BIT)
def test_sixteen_bit_inputs_raise_torchs_error_class(op, dtype):
    """NotImplementedError where PyTorch's LAPACK kernel has no 16-bit instance, a plain
    RuntimeError where PyTorch checks the dtype itself."""
    kinds = []
    for lib in (sg, torch):
        a = lib.eye(2, dtype=getattr(lib, dtype)) * 2
        with pytest.raises(RuntimeError) as info:
            SIXTEEN_BIT[op](lib, a)
        kinds.append(type(info.value) is NotImplementedError)
    assert kinds[0] == kinds[1], (op, kinds)


# ---- found by test_linalg_fuzz.py ------------------------------------------------------------


def test_singular_solve_with_no_columns_is_pytorchs_error():
    """A singular A with a B of no columns: PyTorch's LinAlgError (solve) or info 1 (solve_ex);
    finding the failing matrix reshaped the empty B with -1, a ValueError."""
    for A in (sg.zeros(3, 3), sg.zeros(2, 3, 3)):
        with pytest.raises(sg.linalg.LinAlgError, match="input matrix is singular"):
            sg.linalg.solve(A, sg.zeros(3, 0))
    result, info = sg.linalg.solve_ex(sg.zeros(3, 3), sg.zeros(3, 0))
    assert result.shape == (3, 0) and info.item() == 1


def test_tensorinv_of_a_singular_tensor_names_inv_as_pytorch():
    with pytest.raises(sg.linalg.LinAlgError, match="^inv: The diagonal element 1 is zero"):
        sg.linalg.tensorinv(sg.zeros(2, 1, 2), ind=2)


# Functions whose LAPACK kernels PyTorch's dispatcher refuses for integer, bool and 16-bit
# matrices alike (each test adds its own)
_KERNEL_CALLS = [
    lambda m, A: m.linalg.eigh(A),
    lambda m, A: m.linalg.eigvalsh(A),
    lambda m, A: m.cholesky(A),
    lambda m, A: m.cholesky_inverse(A),
    lambda m, A: m.cholesky_solve(A, A),
    lambda m, A: m.triangular_solve(A, A),
    lambda m, A: m.linalg.solve_triangular(A, A, upper=True),
    lambda m, A: m.linalg.lu(A),
    lambda m, A: m.linalg.lu_factor(A),
    lambda m, A: m.linalg.householder_product(A, A[0]),
]


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize(
    "call",
    [
        *_KERNEL_CALLS,
        lambda m, A: m.linalg.lu_factor_ex(A),
        lambda m, A: m.linalg.lstsq(A, A, rcond=1e-3),  # (without rcond, a RuntimeError)
        lambda m, A: m.linalg.matrix_rank(A, hermitian=True, rtol=0.5),
    ],
)
def test_integer_and_bool_matrices_raise_pytorchs_not_implemented_error(call, dtype):
    """The functions whose integer and bool matrices PyTorch hands to its CPU kernel raise
    NotImplementedError naming the kernel, as its dispatcher does; ours raised RuntimeError."""
    for m in (torch, sg):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            call(m, m.ones(3, 3, dtype=getattr(m, dtype)))
    theirs = outcome(call, torch, torch.ones(3, 3, dtype=getattr(torch, dtype)))
    ours = outcome(call, sg, sg.ones(3, 3, dtype=getattr(sg, dtype)))
    assert str(ours) == str(theirs)  # (the message word for word too)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(
    "call",
    [
        *_KERNEL_CALLS,
        lambda m, A: m.linalg.eig(A),
        lambda m, A: m.linalg.cholesky(A),
        lambda m, A: m.linalg.cholesky_ex(A),
        lambda m, A: m.ormqr(A, A[0], A),
        lambda m, A: m.geqrf(A),
        lambda m, A: m.linalg.qr(A),
        lambda m, A: m.linalg.svd(A),
        lambda m, A: m.linalg.svdvals(A),
        lambda m, A: m.linalg.solve(A, A),
        lambda m, A: m.linalg.det(A),
        lambda m, A: m.linalg.ldl_factor(A),
    ],
)
def test_16_bit_matrices_raise_their_kernels_error_as_pytorchs(call, dtype):
    """PyTorch's LAPACK kernels have no 16-bit instances: its dispatcher's NotImplementedError
    names the kernel alone ('"cholesky_cpu" not implemented for 'Half''); ours said 'Low
    precision dtypes not supported' after the function's name."""
    theirs = outcome(call, torch, torch.eye(3, dtype=getattr(torch, dtype)))
    ours = outcome(call, sg, sg.eye(3, dtype=getattr(sg, dtype)))
    assert (type(ours), str(ours)) == (type(theirs), str(theirs))


def test_cross_of_bools_raises_pytorchs_not_implemented_error():
    """Ours raised sub's RuntimeError about subtracting bools."""
    for m in (torch, sg):
        x = m.ones(2, 3, dtype=m.bool)
        with pytest.raises(NotImplementedError, match="\"cross\" not implemented for 'Bool'"):
            m.linalg.cross(x, x)
        with pytest.raises(NotImplementedError, match="\"cross\" not implemented for 'Bool'"):
            m.cross(x, x, dim=1)


def test_lstsq_residuals_and_an_empty_householder_product_require_grad_as_pytorchs():
    """lstsq's empty residuals and householder_product with no reflection (tau of size 0)
    are results of inputs that require grad, so require grad too, with a zero gradient; ours
    were tensors apart from the graph."""
    for m in (torch, sg):
        A = m.ones(3, 2, requires_grad=True)
        residuals = m.linalg.lstsq(A, m.ones(3, 1)).residuals
        assert residuals.shape == (0,) and residuals.requires_grad
        for shape in [(0, 0), (3, 2), (2, 3, 0)]:
            A = m.ones(shape, requires_grad=True)
            out = m.linalg.householder_product(A, m.zeros(shape[:-2] + (0,), requires_grad=True))
            assert out.requires_grad
            out.sum().backward()
            assert A.grad is None or not A.grad.numpy().any()
        eye = m.linalg.householder_product(m.full((2, 1), math.inf), m.zeros(0))
        np.testing.assert_array_equal(eye.numpy(), [[1.0], [0.0]])


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (2, 0), (0, 4, 4), (2, 0, 3, 3)])
def test_lu_without_pivoting_of_an_empty_matrix_is_pytorchs(shape):
    """LU without pivoting is not there on the CPU, but an empty A has nothing to pivot and
    PyTorch factors it (P an empty tensor); ours raised."""
    results = []
    for m in (torch, sg):
        A = m.zeros(shape, requires_grad=True)
        lu = m.linalg.lu(A, pivot=False)
        factor = m.linalg.lu_factor(A, pivot=False)
        results.append([*lu, *factor, *m.linalg.lu_factor_ex(A, pivot=False)])
        assert all(r.requires_grad for r in (*lu[1:], factor.LU))
    for ours, theirs in zip(*results):
        assert same_dtype(ours, theirs) and tuple(ours.shape) == tuple(theirs.shape)


def test_matrix_rank_hermitian_cuts_relative_to_the_largest_magnitude():
    """Eigenvalues -6, 1.5, 3.5: rtol 0.35 cuts at 2.1, rank 2 as PyTorch's; ours took the
    largest eigenvalue (3.5) for the largest magnitude, cut at 1.2 and counted 3."""
    A = np.diag([-6.0, 1.5, 3.5])
    ours = sg.linalg.matrix_rank(sg.tensor(A), hermitian=True, rtol=0.35)
    theirs = torch.linalg.matrix_rank(torch.tensor(A), hermitian=True, rtol=0.35)
    assert ours.item() == theirs.item() == 2


@pytest.mark.parametrize(
    "shapes", [((1, 3, 2), (3, 2)), ((2, 1, 3, 2), (1, 3, 4)), ((2, 3, 3), (3, 1))]
)
def test_lstsq_of_a_matrix_b_one_dim_short_broadcasts_as_pytorchs(shapes):
    """B of one dim fewer than A that is not a batch of vectors: PyTorch broadcasts A's batch
    with B's dims but the last (A (1, 3, 2) and B (3, 2) give 3 solutions), or raises where
    they do not broadcast; ours solved once (a (1, 2, 2) result) or solved where PyTorch
    raises."""
    a_shape, b_shape = shapes
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    results = [outcome(lambda m: m.linalg.lstsq(m.tensor(A), m.tensor(B)), m) for m in (torch, sg)]
    if isinstance(results[0], RuntimeError):
        assert isinstance(results[1], RuntimeError), results[1]
        return
    theirs, ours = results
    np.testing.assert_allclose(ours.solution.numpy(), theirs.solution.numpy(), rtol=1e-10)
    assert ours.rank.shape == theirs.rank.shape


def test_singular_a_with_a_batched_b_names_the_element_of_a_alone_as_pytorch():
    """PyTorch factors A alone, so its error names the failing matrix of A's batch (none for
    a single A), not of the batch broadcast with B's; ours said '(Batch element 0)' for a
    single singular A and a batched B."""
    for a_shape, b_shape, where in [((1, 1), (2, 1, 1), ""), ((3, 1, 1), (2, 3, 1, 1), "2")]:
        messages = []
        for m in (torch, sg):
            A = m.ones(a_shape, dtype=m.float64)
            A[-1] = 0
            with pytest.raises(RuntimeError) as error:
                m.linalg.solve(A, m.ones(b_shape, dtype=m.float64))
            messages.append(str(error.value))
        assert messages[0] == messages[1]
        assert ("Batch element" in messages[1]) == bool(where)


EMPTY_CALLS = {
    "det": lambda m, A: m.linalg.det(A),
    "solve": lambda m, A: m.linalg.solve(A, A),
    "solve_ex": lambda m, A: m.linalg.solve_ex(A, A),
    "cholesky": lambda m, A: m.linalg.cholesky(A, upper=True),
    "cholesky_ex": lambda m, A: m.linalg.cholesky_ex(A),
    "legacy cholesky": lambda m, A: m.cholesky(A),
    "matrix_exp": lambda m, A: m.linalg.matrix_exp(A),
    "lu_solve": lambda m, A: m.linalg.lu_solve(A, m.zeros(A.shape[:-1], dtype=m.int32), A),
    "lu": lambda m, A: m.linalg.lu(A),
    "lu_factor_ex": lambda m, A: m.linalg.lu_factor_ex(A),
    "eigh": lambda m, A: m.linalg.eigh(A),
    "eigvalsh": lambda m, A: m.linalg.eigvalsh(A),
    "svd": lambda m, A: m.linalg.svd(A),
    "svdvals": lambda m, A: m.linalg.svdvals(A),
    "legacy svd": lambda m, A: m.svd(A),
    "cond": lambda m, A: m.linalg.cond(A),
    "cond_1": lambda m, A: m.linalg.cond(A, 1),
    "inv": lambda m, A: m.linalg.inv(A),
    "slogdet": lambda m, A: m.linalg.slogdet(A),
    "qr": lambda m, A: m.linalg.qr(A),
    "pinv": lambda m, A: m.linalg.pinv(A),
    "matrix_norm": lambda m, A: m.linalg.matrix_norm(A),
    "vander": lambda m, A: m.linalg.vander(A),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # (the deprecated legacy functions)
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (3, 0), (0, 3)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name", EMPTY_CALLS)
def test_empty_16_bit_and_integer_matrices_as_pytorch(name, dtype, shape):
    """PyTorch's kernels of det, solve, cholesky, lu, eigh, svd, cond, ... return at once for
    an empty matrix, before looking at its dtype: a 16-bit one (for lu, eigh, cond and the
    legacy cholesky an integer or bool one too) gives an empty result (det 1, cond 0) of its
    dtype; ours raised as for a matrix with entries. linalg.vander computed 16-bit vectors,
    which PyTorch's refuses."""
    theirs = outcome(EMPTY_CALLS[name], torch, torch.zeros(shape, dtype=getattr(torch, dtype)))
    ours = outcome(EMPTY_CALLS[name], sg, sg.zeros(shape, dtype=getattr(sg, dtype)))
    if raised_alike(ours, theirs, name):
        return
    theirs, ours = (theirs, ours) if isinstance(theirs, tuple) else ((theirs,), (ours,))
    assert len(ours) == len(theirs)
    for mine, expected in zip(ours, theirs):
        assert mine.shape == tuple(expected.shape) and same_dtype(mine, expected)
        np.testing.assert_array_equal(mine.detach().double().numpy(), expected.double().numpy())


def test_an_empty_16_bit_matrix_keeps_its_gradient():
    """The empty float16 matrix computed as float32 stays in the graph: its gradient is an
    empty float16 tensor, as PyTorch's."""
    for m in (sg, torch):
        A = m.zeros(2, 0, 0, dtype=m.float16, requires_grad=True)
        m.linalg.det(A).sum().backward()
        assert A.grad.shape == (2, 0, 0) and A.grad.dtype == m.float16


@pytest.mark.parametrize("dtype", ["int64", "float16"])
@pytest.mark.parametrize(
    "call",
    [
        lambda m, dt: m.cholesky_solve(m.zeros(3, 0, dtype=dt), m.zeros(3, 0, dtype=dt)),
        lambda m, dt: m.triangular_solve(m.zeros(0, 3, dtype=dt), m.zeros(0, 3, dtype=dt)),
        lambda m, dt: m.cholesky_solve(m.zeros(2, 1, dtype=dt), m.zeros(3, 3, dtype=dt)),
        lambda m, dt: m.triangular_solve(m.zeros(2, 1, dtype=dt), m.zeros(3, 3, dtype=dt)),
        lambda m, dt: m.cholesky_solve(m.zeros(3, 1, dtype=dt), m.zeros(3, 3, dtype=dt)),
    ],
)
def test_the_old_solvers_check_shapes_before_the_dtype_as_pytorch(call, dtype):
    """cholesky_solve and triangular_solve of an integer or 16-bit A that is not square or
    does not fit b: PyTorch's shape error (a RuntimeError), then its kernel's
    NotImplementedError; ours raised the NotImplementedError first."""
    errors = []
    for m in (sg, torch):
        with pytest.raises(RuntimeError) as info:
            call(m, getattr(m, dtype))
        errors.append((type(info.value) is NotImplementedError, str(info.value)[:12]))
    assert errors[0][0] == errors[1][0]
    if not errors[0][0]:
        assert errors[0][1] == errors[1][1]


@pytest.mark.parametrize("shape", [(2, 2), (3, 2), (3, 0), (2, 3, 3)])
@pytest.mark.parametrize("p", [None, -2, "fro", "nuc", 1, math.inf, "bad", 3])
@pytest.mark.parametrize("dtype", ["int64", "float16", "float64"])
def test_cond_checks_in_pytorchs_order(dtype, p, shape):
    """cond of an integer or 16-bit matrix raises the error of the function PyTorch's calls
    (svd's NotImplementedError, or inv's RuntimeError for the orders that invert), after the
    shape checks; ours raised its own NotImplementedError before them. Values match where
    PyTorch gives some (0 for an empty matrix, of any order that needs no square one)."""
    outcomes = []
    for m in (sg, torch):
        x = m.ones(shape, dtype=getattr(m, dtype))
        x = m.eye(2, dtype=x.dtype) if shape == (2, 2) else x
        outcomes.append(outcome(m.linalg.cond, x, p))
    ours, theirs = outcomes
    if raised_alike(ours, theirs, f"cond {dtype} {p} {shape}"):
        assert type(ours) is type(theirs)
        return
    assert ours.shape == tuple(theirs.shape) and same_dtype(ours, theirs)
    np.testing.assert_allclose(ours.double().numpy(), theirs.double().numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(3, 0, 0), (0, 2, 2)])
def test_an_empty_16_bit_batch_under_vmap_as_pytorch(shape):
    """vmap of det over empty 16-bit matrices, or over no matrices at all, gives PyTorch's
    empty float16 result (the emptiness is the whole batch's)."""
    ours = sg.func.vmap(sg.linalg.det)(sg.zeros(shape, dtype=sg.float16))
    theirs = torch.func.vmap(torch.linalg.det)(torch.zeros(shape, dtype=torch.float16))
    assert ours.shape == tuple(theirs.shape) and same_dtype(ours, theirs)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "A, B, dtype, options",
    [
        ((3,), (3,), "float32", {}),
        ((2, 2), (), "float32", {}),
        ((2, 2), (2, 2), "float16", {}),
        ((2, 2), (2,), "int64", {}),
        ((2, 2), (2, 2), "bool", {}),
        ((2, 2), (3, 1), "float16", {}),  # (the shapes before the dtype)
        ((2, 2), (2, 2, 2), "float16", {}),
        ((2, 2), (3,), "float32", {}),
        ((2, 2), (3, 1), "float32", {}),
        ((2, 2), (2, 2), "float16", {"rcond": 1e-3}),  # (its kernel's NotImplementedError)
        ((3,), (3,), "float16", {"rcond": 1e-3}),
        ((2, 2), (2, 2), "float16", {"driver": "gelsd"}),
        ((2, 2), (2, 2), "float32", {"driver": "foo"}),
        ((2, 2), (2, 2), "float16", {"driver": "foo"}),
    ],
)
def test_lstsq_errors_are_pytorchs_word_for_word(A, B, dtype, options):
    """In PyTorch's order: the shapes, the driver's name, then the dtype (refused by its
    default rcond's epsilon, "This function doesn't handle types other than float and
    double"); ours checked the dtype first, in other words. (The shapes' messages add the
    shapes: see above.)"""

    def call(m):
        x, y = m.ones(A, dtype=getattr(m, dtype)), m.ones(B, dtype=getattr(m, dtype))
        return outcome(lambda: m.linalg.lstsq(x, y, **options))

    ours, theirs = call(sg), call(torch)
    assert type(ours) is type(theirs) and str(ours).startswith(str(theirs)), (ours, theirs)
    assert str(ours) == str(theirs) or "(got shapes" in str(ours)


def test_lstsq_of_mixed_dtypes_or_not_tensors_raises_pytorchs_error():
    for call in (
        lambda m: m.linalg.lstsq(m.eye(2, dtype=m.float64), m.eye(2)),
        lambda m: m.linalg.lstsq([[1.0]], m.eye(1)),
        lambda m: m.linalg.lstsq(m.eye(1), [[1.0]]),
    ):
        ours, theirs = outcome(call, sg), outcome(call, torch)
        assert (type(ours), str(ours)) == (type(theirs), str(theirs))
