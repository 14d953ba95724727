"""PyTorch's linear algebra outside ``torch.linalg`` (``sg.logdet``, ``sg.cholesky_solve``,
the old ``sg.svd``, ``sg.qr``, ``sg.cholesky``, ``sg.triangular_solve``, ...), the Tensor
methods of the same names, and ``linalg``'s extras (``inv_ex``, ``cholesky_ex``,
``multi_dot``, ``tensorinv``, ``tensorsolve``, ``diagonal``, ``matmul``, ``vander``,
``householder_product``) and the root's ``vander``: values
and gradients against PyTorch over batch shapes (float64 tight, float32 loose), finite
differences, PyTorch's errors and result types."""

from __future__ import annotations

import doctest
import math
import sys

import numpy as np
import pytest
import torch
from linalg_cases import Case, matrix, rectangular, spd, square, sym, triangular_ready, vectors
from test_linalg_against_torch import _close, _inputs

import scratchgrad as sg

pytestmark = pytest.mark.filterwarnings("ignore:torch\\..* is deprecated:UserWarning")


def _svd_old(m, A, some):
    """The singular values and the squares of the vectors' first k columns (sign-free)."""
    U, S, V = m.svd(A, some=some)
    k = S.shape[-1]
    return U[..., :k] ** 2, S, V[..., :k] ** 2


def _triangular_solve(m, b, A, upper, transpose, unit):
    return tuple(m.triangular_solve(b, A, upper, transpose, unit))


CASES = [
    Case("inverse", lambda m, A: m.inverse(A), (square(3),)),
    Case("Tensor.inverse", lambda m, A: A.inverse(), (square(3),)),
    Case("Tensor.det", lambda m, A: A.det(), (square(3),)),
    Case("logdet", lambda m, A: m.logdet(sym(A)), (spd(3),)),
    Case("Tensor.logdet", lambda m, A: sym(A).logdet(), (spd(3),)),
    Case("slogdet", lambda m, A: tuple(m.slogdet(A)), (square(3),)),
    Case("Tensor.slogdet", lambda m, A: tuple(A.slogdet()), (square(3),)),
    Case("pinverse", lambda m, A: m.pinverse(A), (rectangular(4, 3),)),
    Case("Tensor.pinverse", lambda m, A: A.pinverse(rcond=1e-3), (rectangular(2, 3),)),
    Case("Tensor.matrix_power", lambda m, A: A.matrix_power(-2), (square(3),)),
    Case("cholesky", lambda m, A: m.cholesky(sym(A)), (spd(3),)),
    Case("Tensor.cholesky_upper", lambda m, A: sym(A).cholesky(upper=True), (spd(3),)),
    Case(
        "cholesky_solve",
        lambda m, B, L: m.cholesky_solve(B, L.tril()),
        (matrix(3, 2), triangular_ready(3)),
    ),
    Case(
        "Tensor.cholesky_solve_upper",
        lambda m, B, U: B.cholesky_solve(U.triu(), upper=True),
        (matrix(3, 2), triangular_ready(3)),
    ),
    Case(
        "cholesky_solve_broadcast",
        lambda m, B, L: m.cholesky_solve(B, L.tril()),
        (lambda rng, batch: rng.standard_normal((4, 1, 3, 2)), triangular_ready(3)),
        batches=((2, 1, 1), (3,)),
        check_batch=(1,),
    ),
    Case("cholesky_inverse", lambda m, L: m.cholesky_inverse(L.tril()), (triangular_ready(3),)),
    Case(
        "Tensor.cholesky_inverse_upper",
        lambda m, U: U.triu().cholesky_inverse(upper=True),
        (triangular_ready(3),),
    ),
    Case("qr", lambda m, A: tuple(m.qr(A)), (rectangular(4, 2),)),
    Case("Tensor.qr_complete_wide", lambda m, A: tuple(A.qr(some=False)), (rectangular(2, 3),)),
    Case("svd_tall", lambda m, A: _svd_old(m, A, True), (rectangular(4, 3),)),
    Case("svd_full", lambda m, A: _svd_old(m, A, False), (rectangular(2, 4),)),
    Case(
        "Tensor.svd_product",
        lambda m, A: (lambda U, S, V: (U * S.unsqueeze(-2)) @ V.mT)(*A.svd()),
        (rectangular(3, 4),),
    ),
    Case(
        "svd_no_uv",
        lambda m, A: tuple(m.svd(A, some=False, compute_uv=False)),
        (rectangular(4, 3),),
    ),
    *(
        Case(
            f"triangular_solve_{'upper' if upper else 'lower'}"
            + ("_transpose" if transpose else "")
            + ("_unit" if unit else ""),
            lambda m, b, A, upper=upper, transpose=transpose, unit=unit: _triangular_solve(
                m, b, A, upper, transpose, unit
            ),
            (matrix(3, 2), triangular_ready(3)),
        )
        for upper in (True, False)
        for transpose in (False, True)
        for unit in (False, True)
    ),
    Case(
        "Tensor.triangular_solve_broadcast",
        lambda m, b, A: tuple(b.triangular_solve(A, upper=False)),
        (lambda rng, batch: rng.standard_normal((4, 1, 3, 2)), triangular_ready(3)),
        batches=((2, 1, 1), (3,)),
        check_batch=(1,),
    ),
    Case("inv_ex", lambda m, A: tuple(m.linalg.inv_ex(A)), (square(3),)),
    Case("cholesky_ex", lambda m, A: tuple(m.linalg.cholesky_ex(sym(A))), (spd(3),)),
    Case(
        "cholesky_ex_upper",
        lambda m, A: tuple(m.linalg.cholesky_ex(sym(A), upper=True)),
        (spd(3),),
    ),
    Case(
        "multi_dot",
        lambda m, *xs: m.linalg.multi_dot(xs),
        (matrix(2, 5), matrix(5, 3), matrix(3, 6), matrix(6, 1)),
        batches=((),),
        check_batch=(),
    ),
    Case(
        "multi_dot_vectors",
        lambda m, *xs: m.linalg.multi_dot(xs),
        (vectors(4), matrix(4, 3), matrix(3, 5), vectors(5)),
        batches=((),),
        check_batch=(),
    ),
    Case(
        "multi_dot_two",
        lambda m, x, y: m.linalg.multi_dot([x, y]),
        (vectors(4), matrix(4, 3)),
        batches=((),),
        check_batch=(),
    ),
    Case(
        "tensorinv",
        lambda m, A: m.linalg.tensorinv(A.reshape(6, 2, 3), ind=1),
        (square(6),),
        batches=((),),
        check_batch=(),
    ),
    Case(
        "tensorsolve",
        lambda m, A, B: m.linalg.tensorsolve(A.reshape(2, 3, 3, 2), B),
        (square(6), matrix(2, 3)),
        batches=((),),
        check_batch=(),
    ),
    Case(
        "tensorsolve_dims",
        lambda m, A, B: m.linalg.tensorsolve(A.reshape(6, 2, 3), B, dims=(0,)),
        (square(6), matrix(2, 3)),
        batches=((),),
        check_batch=(),
    ),
    Case("diagonal", lambda m, A: m.linalg.diagonal(A, offset=-1), (matrix(3, 4),)),
    Case(
        "matmul",
        lambda m, A, x: m.linalg.matmul(A, x),
        (matrix(3, 4), lambda rng, batch: rng.standard_normal(4)),
    ),
    Case("vander", lambda m, x: m.linalg.vander(x), (vectors(3),)),
    Case("vander_N", lambda m, x: m.linalg.vander(x, N=5), (vectors(4),)),
    Case(
        "householder_product",
        lambda m, A, tau: m.linalg.householder_product(A, tau),
        (matrix(5, 3), vectors(2)),
    ),
    Case(
        "householder_product_square",
        lambda m, A, tau: m.linalg.householder_product(A, tau),
        (matrix(3, 3), vectors(3)),
    ),
]
IDS = [case.name for case in CASES]


def _run(lib, case, arrays, weights):
    """The case's outputs and the gradients of sum(output * weight) over all outputs (as
    ``test_linalg_against_torch._run``, whose zip with the inputs drops the outputs beyond
    the number of inputs)."""
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    outs = case.call(lib, *xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    dtype = arrays[0].dtype
    loss = sum((o * lib.tensor(w.astype(dtype))).sum() for o, w in zip(outs, weights))
    grads = lib.autograd.grad(loss, xs, allow_unused=True)
    return [o.detach().numpy() for o in outs], [
        np.zeros(a.shape) if g is None else g.numpy() for g, a in zip(grads, arrays)
    ]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_and_gradients_are_pytorchs(case, dtype):
    for batch in case.batches:
        arrays, rng = _inputs(case, batch)
        arrays = [a.astype(dtype) for a in arrays]
        theirs = case.call(torch, *(torch.tensor(a) for a in arrays))
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        weights = [rng.standard_normal(t.shape) for t in theirs]
        values, grads = _run(sg, case, arrays, weights)
        their_values, their_grads = _run(torch, case, arrays, weights)
        _close(values, their_values, dtype, case, batch)
        _close(grads, their_grads, dtype, case, batch)
        assert [v.dtype for v in values] == [v.dtype for v in their_values]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradcheck_and_gradgradcheck(case):
    arrays, _ = _inputs(case, case.check_batch, seed=1)

    def call(*ts):
        out = case.call(sg, *ts)
        return tuple(o for o in out if o.dtype.kind == "f") if isinstance(out, tuple) else out

    xs = [sg.tensor(a, requires_grad=True) for a in arrays]
    assert sg.autograd.gradcheck(call, xs)
    assert sg.autograd.gradgradcheck(call, xs)


def _grad(lib, call, array):
    A = lib.tensor(array, requires_grad=True)
    (grad,) = lib.autograd.grad(call(lib, A), [A])
    return grad.numpy()


def test_logdet_is_nan_for_a_negative_determinant_and_minus_inf_for_zero():
    arrays = np.stack([np.diag([2.0, 3.0]), np.diag([-2.0, 3.0]), np.zeros((2, 2))])
    ours, theirs = sg.logdet(sg.tensor(arrays)), torch.logdet(torch.tensor(arrays))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert np.isnan(ours.numpy()[1]) and ours.numpy()[2] == -math.inf


def test_logdet_gradient_is_zero_where_the_determinant_is_negative():
    arrays = square(3)(np.random.default_rng(4), (6,))
    assert {-1.0, 1.0} <= set(np.sign(np.linalg.det(arrays)))

    def call(m, A):
        return m.where(m.logdet(A).isnan(), 0.0, m.logdet(A)).sum()

    ours, theirs = _grad(sg, call, arrays), _grad(torch, call, arrays)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert (ours[np.linalg.det(arrays) < 0] == 0).all()


def test_cholesky_solve_and_inverse_gradients_reach_the_whole_factor_as_pytorchs():
    """The forward reads one triangle; PyTorch's gradient of the factor is not kept to it."""
    rng = np.random.default_rng(5)
    L, B = triangular_ready(3)(rng, (2,)), rng.standard_normal((2, 3, 2))
    for upper in (False, True):
        for call in (
            lambda m, F, upper=upper: m.cholesky_solve(m.tensor(B), F, upper=upper).sum(),
            lambda m, F, upper=upper: (
                m.cholesky_inverse(F, upper=upper) * m.tensor(B[..., :1])
            ).sum(),
        ):
            ours, theirs = _grad(sg, call, L), _grad(torch, call, L)
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
            assert np.abs(np.triu(ours, 1) if not upper else np.tril(ours, -1)).max() > 0


def test_svd_without_uv_gives_zero_u_and_v_of_full_shapes():
    A = np.random.default_rng(6).standard_normal((2, 4, 3))
    ours, theirs = sg.svd(sg.tensor(A), compute_uv=False), torch.svd(torch.tensor(A), False, False)
    for o, t in zip(ours, theirs):
        assert o.shape == tuple(t.shape)
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12, atol=1e-14)
    assert ours.U.shape == (2, 4, 4) and not ours.U.numpy().any()


def test_ex_functions_report_failures_in_info_as_pytorch():
    singular = np.stack([np.eye(3), np.zeros((3, 3)), [[1.0, 2, 3], [2, 4, 6], [1, 1, 1]]])
    indefinite = np.stack([np.eye(3), [[1.0, 2, 0], [2, 1, 0], [0, 0, 1]], -np.eye(3)])
    for call, array in (
        (lambda m, A: m.linalg.inv_ex(A), singular),
        (lambda m, A: m.linalg.cholesky_ex(A), indefinite),
        (lambda m, A: m.linalg.cholesky_ex(A, upper=True), indefinite.swapaxes(-1, -2)),
    ):
        out, info = call(sg, sg.tensor(array))
        their_out, their_info = call(torch, torch.tensor(array))
        assert info.dtype == sg.int32 and info.tolist() == their_info.tolist() != [0, 0, 0]
        np.testing.assert_allclose(out.numpy()[0], their_out.numpy()[0])
        assert np.isnan(out.numpy()[1:]).all()  # PyTorch's: whatever LAPACK left there


def test_ex_functions_gradients_reach_the_matrices_that_worked():
    array = np.stack([np.diag([2.0, 4.0]), np.zeros((2, 2))])
    A = sg.tensor(array, requires_grad=True)
    sg.linalg.inv_ex(A).inverse[0].sum().backward()
    np.testing.assert_allclose(A.grad.numpy()[0], -np.outer([0.5, 0.25], [0.5, 0.25]))
    assert not A.grad.numpy()[1].any()


def _raised(lib, call):
    with pytest.raises(RuntimeError) as info:
        call(lib)
    return info.value


SINGULAR = np.stack([np.eye(2), np.diag([1.0, 0.0])])
INDEFINITE = np.stack([np.eye(2), np.diag([1.0, -1.0])])

ERRORS = {
    "inverse": lambda m: m.inverse(m.ones(2, 3)),
    "logdet_non_square": lambda m: m.logdet(m.ones(2, 3)),
    "logdet_vector": lambda m: m.ones(3).logdet(),
    "logdet_integer": lambda m: m.logdet(m.ones(2, 2, dtype=m.int64)),
    "logdet_half": lambda m: m.logdet(m.ones(2, 2, dtype=m.float16)),
    "pinverse_vector": lambda m: m.pinverse(m.ones(3)),
    "pinverse_integer": lambda m: m.ones(3, 3, dtype=m.int64).pinverse(),
    "matrix_power": lambda m: m.ones(2, 3).matrix_power(2),
    "cholesky": lambda m: m.cholesky(m.tensor(INDEFINITE)),
    "cholesky_upper": lambda m: m.tensor(INDEFINITE).cholesky(upper=True),
    "cholesky_non_square": lambda m: m.cholesky(m.ones(2, 3)),
    "cholesky_solve_b": lambda m: m.cholesky_solve(m.ones(2), m.eye(2)),
    "cholesky_solve_u": lambda m: m.cholesky_solve(m.ones(2, 1), m.ones(2)),
    "cholesky_solve_dtypes": lambda m: m.cholesky_solve(m.ones(2, 1, dtype=m.float64), m.eye(2)),
    "cholesky_solve_square": lambda m: m.cholesky_solve(m.ones(2, 1), m.ones(2, 3)),
    "cholesky_solve_sizes": lambda m: m.cholesky_solve(m.ones(2, 1), m.eye(3)),
    "cholesky_inverse": lambda m: m.cholesky_inverse(m.tensor(SINGULAR)),
    "cholesky_inverse_vector": lambda m: m.cholesky_inverse(m.ones(3)),
    "cholesky_inverse_square": lambda m: m.ones(2, 3).cholesky_inverse(),
    "qr": lambda m: m.qr(m.ones(3)),
    "qr_integer": lambda m: m.ones(2, 2, dtype=m.int64).qr(),
    "svd": lambda m: m.svd(m.ones(3)),
    "svd_integer": lambda m: m.ones(2, 2, dtype=m.int64).svd(),
    "triangular_solve_b": lambda m: m.triangular_solve(m.ones(2), m.eye(2)),
    "triangular_solve_A": lambda m: m.ones(2, 1).triangular_solve(m.ones(2)),
    "triangular_solve_dtypes": lambda m: m.triangular_solve(
        m.ones(2, 1, dtype=m.float64), m.eye(2)
    ),
    "triangular_solve_square": lambda m: m.triangular_solve(m.ones(3, 1), m.ones(3, 2)),
    "triangular_solve_sizes": lambda m: m.triangular_solve(m.ones(3, 1), m.eye(2)),
    "inv_ex": lambda m: m.linalg.inv_ex(m.tensor(SINGULAR), check_errors=True),
    "inv_ex_shape": lambda m: m.linalg.inv_ex(m.ones(2, 3)),
    "cholesky_ex": lambda m: m.linalg.cholesky_ex(m.tensor(INDEFINITE), check_errors=True),
    "cholesky_ex_integer": lambda m: m.linalg.cholesky_ex(m.ones(2, 2, dtype=m.int64)),
    "multi_dot_one": lambda m: m.linalg.multi_dot([m.ones(2, 2)]),
    "multi_dot_first": lambda m: m.linalg.multi_dot([m.ones(2, 2, 2), m.ones(2, 2)]),
    "multi_dot_middle": lambda m: m.linalg.multi_dot([m.ones(2, 2), m.ones(2), m.ones(2, 2)]),
    "multi_dot_last": lambda m: m.linalg.multi_dot([m.ones(2, 2), m.ones(2, 2, 2)]),
    "multi_dot_0d": lambda m: m.linalg.multi_dot([m.tensor(1.0), m.ones(3, 2)]),
    "multi_dot_shapes": lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(3, 2), m.ones(3, 2)]),
    "multi_dot_dtypes": lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(3, 2, dtype=m.float64)]),
    "tensorinv_ind": lambda m: m.linalg.tensorinv(m.ones(4, 2, 3), ind=0),
    "tensorinv_sizes": lambda m: m.linalg.tensorinv(m.ones(4, 2, 3), ind=1),
    "tensorsolve_sizes": lambda m: m.linalg.tensorsolve(m.ones(2, 3, 4), m.ones(2, 3)),
    "tensorsolve_dims": lambda m: m.linalg.tensorsolve(m.ones(2, 6, 3), m.ones(2, 3), dims=(0,)),
    "tensorsolve_singular": lambda m: m.linalg.tensorsolve(m.ones(2, 3, 6), m.ones(3, 2)),
    "vander_N": lambda m: m.linalg.vander(m.ones(3), N=1),
    "vander_one": lambda m: m.linalg.vander(m.ones(1)),
    "vander_bool": lambda m: m.linalg.vander(m.tensor([True, False])),
    "householder_vector": lambda m: m.linalg.householder_product(m.ones(3), m.ones(1)),
    "householder_wide": lambda m: m.linalg.householder_product(m.ones(2, 3), m.ones(1)),
    "householder_tau": lambda m: m.linalg.householder_product(m.ones(4, 2), m.ones(3)),
    "householder_batch": lambda m: m.linalg.householder_product(m.ones(2, 4, 2), m.ones(3, 2)),
    "householder_ndim": lambda m: m.linalg.householder_product(m.ones(2, 4, 3), m.ones(2)),
    "householder_dtypes": lambda m: m.linalg.householder_product(
        m.ones(4, 3), m.ones(2, dtype=m.float64)
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_bad_input_raises_pytorchs_error(name):
    ours, theirs = _raised(sg, ERRORS[name]), _raised(torch, ERRORS[name])
    if isinstance(theirs, torch.linalg.LinAlgError):
        assert isinstance(ours, sg.linalg.LinAlgError)
    assert str(ours) == str(theirs)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.cholesky_solve(m.ones(3, 2, 1), m.eye(2).expand(4, 2, 2)),
        lambda m: m.triangular_solve(m.ones(3, 2, 1), m.eye(2).expand(4, 2, 2)),
        lambda m: m.cholesky_solve(m.ones(2, 1, dtype=m.int64), m.eye(2, dtype=m.int64)),
        lambda m: m.triangular_solve(m.ones(2, 1, dtype=m.int64), m.eye(2, dtype=m.int64)),
        lambda m: m.linalg.tensorinv(m.eye(4), ind=1.0),
        lambda m: m.linalg.householder_product(
            m.ones(3, 2, dtype=m.int32), m.ones(1, dtype=m.int32)
        ),
    ],
)
def test_bad_input_raises_an_error_of_pytorchs_type(call):
    """Batch dims that do not broadcast, integer dtypes (PyTorch: NotImplementedError, a
    RuntimeError), an ``ind`` that is no int."""
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(TypeError if isinstance(theirs.value, TypeError) else RuntimeError):
        call(sg)


def test_a_zero_on_the_factors_diagonal_raises_where_pytorch_gives_nan_or_inf():
    theirs = torch.cholesky_solve(torch.ones(2, 1, dtype=torch.float64), torch.tensor(SINGULAR[1]))
    assert theirs.isnan().any()
    with pytest.raises(sg.linalg.LinAlgError, match=r"cholesky_solve: The diagonal element 2"):
        sg.cholesky_solve(sg.ones(2, 1, dtype=sg.float64), sg.tensor(SINGULAR[1]))
    # where the rest of the row does not cancel, PyTorch's is inf, not nan: the message says both
    factor = [[2.0, 0.0], [1.0, 0.0]]
    theirs = torch.cholesky_solve(torch.tensor([[1.0], [2.0]]), torch.tensor(factor))
    assert theirs.isinf().all()
    with pytest.raises(sg.linalg.LinAlgError, match=r"\(PyTorch returns inf or nan there\)"):
        sg.cholesky_solve(sg.tensor([[1.0], [2.0]]), sg.tensor(factor))
    A = sg.tensor(SINGULAR)
    with pytest.raises(sg.linalg.LinAlgError, match=r"^triangular_solve: \(Batch element 1\)"):
        sg.triangular_solve(sg.ones(2, 1, dtype=sg.float64), A)
    with pytest.warns(UserWarning, match="triangular_solve is deprecated"):  # unit: not read
        assert sg.triangular_solve(sg.ones(2, 1, dtype=sg.float64), A, unitriangular=True)


@pytest.mark.parametrize(
    "call, old, new",
    [
        (lambda m: m.cholesky(m.eye(2)), "cholesky", "cholesky"),
        (lambda m: m.eye(2).qr(), "qr", "qr"),
        (
            lambda m: m.triangular_solve(m.ones(2, 1), m.eye(2)),
            "triangular_solve",
            "solve_triangular",
        ),
    ],
)
def test_deprecated_functions_warn_as_pytorch(call, old, new):
    """PyTorch warns once per process (so not here, where it has warned before): "torch.qr is
    deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch release."."""
    with pytest.warns(
        UserWarning,
        match=f"^torch.{old} is deprecated in favor of torch.linalg.{new} and will be removed in",
    ):
        call(sg)


def _error_of(call):
    with pytest.raises(Exception) as caught:
        call()
    return type(caught.value), str(caught.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, A: m.eig(A),
        lambda m, A: m.eig(A, eigenvectors=True),
        lambda m, A: A.eig(True),
        lambda m, A: m.symeig(A, True, upper=False),
        lambda m, A: A.symeig(),
        lambda m, A: m.solve(A, A),
        lambda m, A: A.solve(A),
        lambda m, A: m.lstsq(A, A),
        lambda m, A: A.lstsq(A),
        lambda m, A: m.matrix_rank(A, symmetric=True),
        lambda m, A: m.solve(A),  # (a missing argument is a TypeError)
    ],
)
def test_removed_functions_raise_pytorchs_error(call):
    """torch.eig, symeig, solve, lstsq and matrix_rank were removed in PyTorch 1.9 but still
    raise a RuntimeError saying which torch.linalg function replaces them (and the methods too,
    but for matrix_rank, which Tensor lacks in both)."""
    A = [[2.0, 1.0], [1.0, 3.0]]
    assert _error_of(lambda: call(sg, sg.tensor(A))) == _error_of(
        lambda: call(torch, torch.tensor(A))
    )
    assert not hasattr(sg.ones(1), "matrix_rank") and not hasattr(torch.ones(1), "matrix_rank")


def test_result_types_have_pytorchs_names_and_fields():
    A = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
    for call in (
        lambda m, A: m.slogdet(A),
        lambda m, A: A.slogdet(),
        lambda m, A: m.qr(A),
        lambda m, A: m.svd(A),
        lambda m, A: A.svd(),
        lambda m, A: m.triangular_solve(A, A),
        lambda m, A: m.linalg.inv_ex(A),
        lambda m, A: m.linalg.cholesky_ex(A),
    ):
        ours, theirs = call(sg, sg.tensor(A.numpy())), call(torch, A)
        assert type(ours).__name__ == type(theirs).__name__.rpartition(".")[2]
        assert len(ours) == len(theirs)
        assert all(getattr(theirs, f) is theirs[i] for i, f in enumerate(ours._fields))


def test_vander_of_integers_and_a_0d_tensor_as_pytorch():
    for call in (
        lambda m: m.linalg.vander(m.tensor([1, 2, 3], dtype=m.int32)),
        lambda m: m.linalg.vander(m.tensor([1, 2], dtype=m.uint8), N=3),
        lambda m: m.linalg.vander(m.tensor(2.0), N=3),
    ):
        ours, theirs = call(sg), call(torch)
        assert ours.dtype == getattr(sg, str(theirs.dtype).split(".")[-1].rpartition(".")[2])
        assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("N", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_vander_is_torchs(N, increasing, dtype):
    x = np.array([1.5, -2, 0, 3]).astype(dtype)
    ours = sg.vander(sg.tensor(x), N=N, increasing=increasing)
    theirs = torch.vander(torch.tensor(x), N=N, increasing=increasing)
    assert ours.dtype == getattr(sg, str(theirs.dtype).split(".")[-1].rpartition(".")[2])
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_vanders_gradient_and_errors():
    """torch.vander's own backward raises in PyTorch 2.13 (it writes into a saved tensor), so the
    gradient is compared with that of ``linalg.vander`` flipped, the same matrix."""
    x = np.array([1.5, -2.0, 0.0, 0.5])
    weights = np.random.default_rng(3).standard_normal((4, 5))
    ours = sg.tensor(x, requires_grad=True)
    (sg.vander(ours, N=5) * sg.tensor(weights)).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    (torch.linalg.vander(theirs, N=5).flip(-1) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    assert sg.autograd.gradcheck(lambda t: sg.vander(t, 3, True), sg.tensor(x, requires_grad=True))
    for bad, message in (
        (lambda m: m.vander(m.ones(2, 2)), "one-dimensional"),
        (lambda m: m.vander(m.tensor(2.0)), "one-dimensional"),
        (lambda m: m.vander(m.ones(2), N=-1), "N must be non-negative"),
    ):
        for m in (sg, torch):
            with pytest.raises(RuntimeError, match=message):
                bad(m)


def test_the_module_functions_are_the_methods():
    A = sg.tensor(spd(3)(np.random.default_rng(7), (2,)))
    for name in ("inverse", "det", "logdet", "pinverse", "matrix_exp", "cholesky_inverse"):
        np.testing.assert_array_equal(getattr(sg, name)(A).numpy(), getattr(A, name)().numpy())
    assert sg.slogdet is sg.linalg.legacy.slogdet and sg.matrix_exp is sg.linalg.matrix_exp


@pytest.mark.parametrize("module", [".legacy", ".extras"])
def test_doc_examples_run(module):
    assert doctest.testmod(sys.modules["scratchgrad.linalg" + module]).failed == 0


METHODS = ["logdet", "matrix_exp", "svd"]  # the new Tensor methods with examples


@pytest.mark.parametrize("name", METHODS)
def test_method_doc_examples_run(name):
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for test in finder.find(getattr(sg.Tensor, name), name, globs={}):
        runner.run(test)
    assert runner.summarize(verbose=False) == (0, 2 if name != "svd" else 3)
