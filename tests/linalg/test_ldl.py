"""``linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve`` against PyTorch: LAPACK's
Bunch-Kaufman pivots (1 x 1 and 2 x 2 blocks) exactly, LD to rounding, solves, the singular
case, no derivative, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scratchgrad as sg

TOLERANCES = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=1e-4, atol=1e-5)}


def _symmetric(kind, shape, seed):
    """Random symmetric matrices: 'random', 'small_diagonal' (2 x 2 pivots), 'integers' (ties
    and zeros among the entries LAPACK compares), 'lower_only' (not symmetric: only the lower
    triangle is read)."""
    rng = np.random.default_rng(seed)
    if kind == "integers":
        a = rng.integers(-2, 3, shape).astype(float)
    else:
        a = rng.standard_normal(shape)
    if kind == "lower_only":
        return a
    a = a + np.swapaxes(a, -1, -2)
    if kind == "small_diagonal":
        a = a - 0.99 * np.einsum("...ii->...i", a)[..., None] * np.eye(shape[-1])
    return a


CASES = [
    (kind, shape, seed)
    for kind in ("random", "small_diagonal", "integers", "lower_only")
    for shape, seed in [((1, 1), 0), ((2, 2), 1), ((5, 5), 2), ((8, 8), 3), ((2, 3, 4, 4), 4)]
]


def _factor_both(a):
    ours = sg.linalg.ldl_factor_ex(sg.tensor(a))
    theirs = torch.linalg.ldl_factor_ex(torch.tensor(a))
    return ours, theirs


@pytest.mark.parametrize("dtype", list(TOLERANCES))
@pytest.mark.parametrize("kind, shape, seed", CASES, ids=str)
def test_factors_and_solutions_are_pytorchs(kind, shape, seed, dtype):
    a = _symmetric(kind, shape, seed).astype(dtype)
    ours, theirs = _factor_both(a)
    np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
    assert ours.pivots.dtype == ours.info.dtype == sg.int32
    np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
    np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy(), **TOLERANCES[dtype])
    if theirs.info.any():
        return
    b = np.random.default_rng(seed).standard_normal((*shape[:-1], 3)).astype(dtype)
    x = sg.linalg.ldl_solve(ours.LD, ours.pivots, sg.tensor(b))
    their_x = torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(b))
    np.testing.assert_allclose(x.numpy(), their_x.numpy(), **TOLERANCES[dtype])


def _complex_matrix(kind, shape, seed, hermitian):
    """A random complex symmetric or hermitian matrix (its diagonal complex all the same: a
    hermitian factorization reads only its real part), of the kinds of ``_symmetric``."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if kind == "integers":
        a = np.round(1.5 * a)
    a = a + (np.swapaxes(a, -1, -2).conj() if hermitian else np.swapaxes(a, -1, -2))
    if kind == "small_diagonal":
        a = a - 0.99 * np.einsum("...ii->...i", a)[..., None] * np.eye(shape[-1])
    return a


COMPLEX_TOLERANCES = {"complex128": TOLERANCES["float64"], "complex64": TOLERANCES["float32"]}


@pytest.mark.parametrize("dtype", list(COMPLEX_TOLERANCES))
@pytest.mark.parametrize("matrix", ["symmetric", "hermitian"])
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize(
    "kind, shape, seed",
    [
        (kind, shape, seed)
        for kind in ("random", "small_diagonal", "integers")
        for shape, seed in [((1, 1), 0), ((2, 2), 1), ((5, 5), 2), ((8, 8), 3), ((2, 3, 4, 4), 4)]
    ],
    ids=str,
)
def test_complex_factors_and_solutions_are_pytorchs(kind, shape, seed, hermitian, matrix, dtype):
    """Complex matrices as symmetric (LAPACK's sytf2, sizes |re| + |im|) or hermitian (hetf2:
    conjugates, a real D diagonal), each kind of matrix with each flag."""
    a = _complex_matrix(kind, shape, seed, matrix == "hermitian").astype(dtype)
    ours = sg.linalg.ldl_factor_ex(sg.tensor(a), hermitian=hermitian)
    theirs = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
    np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
    np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
    np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy(), **COMPLEX_TOLERANCES[dtype])
    assert ours.LD.dtype == getattr(sg, dtype)
    if theirs.info.any():
        return
    rng = np.random.default_rng(seed)
    b = (rng.standard_normal((*shape[:-1], 3)) + 1j * rng.standard_normal(3)).astype(dtype)
    x = sg.linalg.ldl_solve(ours.LD, ours.pivots, sg.tensor(b), hermitian=hermitian)
    their_x = torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(b), hermitian=hermitian)
    np.testing.assert_allclose(x.numpy(), their_x.numpy(), **COMPLEX_TOLERANCES[dtype])


def test_the_pairs_of_rows_are_lapacks_negative_pivots():
    LD, pivots = sg.linalg.ldl_factor(sg.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert pivots.tolist() == [-2, -2] and LD.tolist() == [[0.0, 0.0], [1.0, 0.0]]


def test_solve_broadcasts_the_batch_and_solves_the_system():
    a = _symmetric("small_diagonal", (2, 5, 5), 7)
    b = np.random.default_rng(8).standard_normal((3, 1, 5, 2))
    LD, pivots = sg.linalg.ldl_factor(sg.tensor(a))
    x = sg.linalg.ldl_solve(LD, pivots, sg.tensor(b))
    assert x.shape == (3, 2, 5, 2)
    np.testing.assert_allclose(a @ x.numpy(), np.broadcast_to(b, x.shape), atol=1e-10)
    # PyTorch's pivots of any integer dtype are taken
    np.testing.assert_array_equal(sg.linalg.ldl_solve(LD, pivots.long(), sg.tensor(b)), x)


def test_a_singular_matrix_reports_info_or_raises():
    # PyTorch's ldl_factor and check_errors=True fail with an internal assert ("Unknown error
    # code") here; scratchgrad raises LinAlgError naming the block
    a = np.stack([np.eye(3), np.zeros((3, 3))])
    ours, theirs = _factor_both(a)
    assert ours.info.tolist() == theirs.info.tolist() == [0, 1]
    np.testing.assert_array_equal(ours.LD.numpy(), theirs.LD.numpy())
    with pytest.raises(sg.linalg.LinAlgError, match=r"\(Batch element 1\).*D\(1, 1\) is zero"):
        sg.linalg.ldl_factor(sg.tensor(a))
    with pytest.raises(sg.linalg.LinAlgError, match="ldl_factor_ex"):
        sg.linalg.ldl_factor_ex(sg.tensor(a), check_errors=True)


def test_there_is_no_derivative_as_in_pytorch():
    a = _symmetric("random", (3, 3), 9)
    for m in (sg, torch):
        A = m.tensor(a, requires_grad=True)
        LD, pivots = m.linalg.ldl_factor(A)
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not"):
            LD.sum().backward()
        B = m.ones(3, 1, dtype=m.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not"):
            m.linalg.ldl_solve(LD.detach(), pivots, B).sum().backward()


def test_out_and_empty_matrices():
    LD, pivots = sg.empty(0), sg.empty(0, dtype=sg.int32)
    result = sg.linalg.ldl_factor(sg.tensor([[4.0, 2.0], [2.0, 3.0]]), out=(LD, pivots))
    assert result.LD is LD and result.pivots is pivots and pivots.tolist() == [1, 2]
    empty = sg.linalg.ldl_factor(sg.zeros(2, 0, 0, dtype=sg.float16))
    assert empty.LD.shape == (2, 0, 0) and empty.LD.dtype == sg.float16
    assert empty.pivots.shape == (2, 0)


ERRORS = {
    "non_square": lambda m: m.linalg.ldl_factor(m.ones(3, 4)),
    "vector": lambda m: m.linalg.ldl_factor_ex(m.ones(3)),
    "int": lambda m: m.linalg.ldl_factor(m.ones(2, 2, dtype=m.int64)),
    "half": lambda m: m.linalg.ldl_factor(m.ones(2, 2, dtype=m.float16)),
    "solve_rows": lambda m: m.linalg.ldl_solve(*m.linalg.ldl_factor(m.eye(3)), m.ones(4, 1)),
    "solve_dtype": lambda m: m.linalg.ldl_solve(
        *m.linalg.ldl_factor(m.eye(3)), m.ones(3, 1, dtype=m.float64)
    ),
    "solve_pivots": lambda m: m.linalg.ldl_solve(m.eye(3), m.ones(2, dtype=m.int32), m.ones(3, 1)),
    "solve_not_square": lambda m: m.linalg.ldl_solve(
        m.ones(3, 4), m.ones(3, dtype=m.int32), m.ones(3, 1)
    ),
    "bfloat16": lambda m: m.linalg.ldl_factor_ex(m.ones(2, 2, dtype=m.bfloat16)),
    "solve_half": lambda m: m.linalg.ldl_solve(
        m.eye(3, dtype=m.float16), m.ones(3, dtype=m.int32), m.ones(3, 1, dtype=m.float16)
    ),
    "solve_vector": lambda m: m.linalg.ldl_solve(*m.linalg.ldl_factor(m.eye(3)), m.ones(3)),
    "solve_0d": lambda m: m.linalg.ldl_solve(*m.linalg.ldl_factor(m.eye(3)), m.ones(())),
    # the dtypes are compared before B's shape, which is before the pivots'
    "solve_vector_dtype": lambda m: m.linalg.ldl_solve(
        *m.linalg.ldl_factor(m.eye(3)), m.ones(3, dtype=m.float64)
    ),
    "solve_vector_pivots": lambda m: m.linalg.ldl_solve(
        m.eye(3), m.ones(2, dtype=m.int32), m.ones(3)
    ),
    "solve_list": lambda m: m.linalg.ldl_solve(m.eye(3), m.ones(3, dtype=m.int32), [1.0]),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_pytorchs(name):
    """The same error type and message (the 16-bit ones are the dispatcher's, naming the
    kernel alone; a B of fewer than 2 dims is size's IndexError)."""
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](sg)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
