"""LU factorization and its users (lu_factor, lu_factor_ex, lu, lu_solve, solve_ex, cond)
against torch.linalg: the factors, LAPACK's pivots, the gradients of square, wide and tall
matrices, finite differences, and the errors."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.autograd import gradcheck, gradgradcheck

SHAPES = [(1, 1), (4, 4), (3, 5), (5, 3), (2, 3, 3), (2, 1, 4, 2), (0, 3, 3)]


def _both(a):
    return sg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_ex_and_its_gradient_are_torchs(shape):
    rng = np.random.default_rng(len(shape) + shape[-1])
    x, t = _both(rng.standard_normal(shape))
    ours, theirs = sg.linalg.lu_factor_ex(x), torch.linalg.lu_factor_ex(t)
    np.testing.assert_allclose(ours.LU.detach(), theirs.LU.detach(), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(ours.pivots, theirs.pivots)
    np.testing.assert_array_equal(ours.info, theirs.info)
    assert ours.pivots.dtype == ours.info.dtype == sg.int32
    weights = rng.standard_normal(ours.LU.shape)
    (ours.LU * sg.tensor(weights)).sum().backward()
    (theirs.LU * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2)])
def test_lu_gradients_by_finite_differences(shape):
    a = sg.tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda x: sg.linalg.lu_factor_ex(x).LU, (a,))
    assert gradgradcheck(lambda x: sg.linalg.lu_factor_ex(x).LU, (a,))
    assert gradcheck(lambda x: sg.linalg.lu(x).L.sum(-1) + sg.linalg.lu(x).U.sum(-2)[0], (a,))


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (2, 3, 4)])
def test_lu_is_torchs(shape):
    a = np.random.default_rng(2).standard_normal(shape)
    ours, theirs = sg.linalg.lu(sg.tensor(a)), torch.linalg.lu(torch.tensor(a))
    for name in ("P", "L", "U"):
        np.testing.assert_allclose(getattr(ours, name), getattr(theirs, name), atol=1e-14)
    np.testing.assert_allclose((ours.P @ ours.L @ ours.U).numpy(), a, atol=1e-14)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_and_its_gradients_are_torchs(left, adjoint):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    (x, t), (y, u) = _both(a), _both(b)
    ours = sg.linalg.lu_solve(*sg.linalg.lu_factor(x), y, left=left, adjoint=adjoint)
    theirs = torch.linalg.lu_solve(*torch.linalg.lu_factor(t), u, left=left, adjoint=adjoint)
    np.testing.assert_allclose(ours.detach(), theirs.detach(), rtol=1e-12)
    weights = rng.standard_normal(ours.shape)
    (ours * sg.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y.grad, u.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_singular_matrices_raise_in_lu_factor_and_are_reported_by_the_ex_forms():
    singular = [[1.0, 2.0], [2.0, 4.0]]
    batch = sg.tensor([np.eye(2), singular], dtype=sg.float64)
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.lu_factor(torch.tensor(batch.numpy()))
    with pytest.raises(sg.linalg.LinAlgError) as ours:  # a RuntimeError, as PyTorch's
        sg.linalg.lu_factor(batch)
    assert str(ours.value) == str(theirs.value)
    assert sg.linalg.lu_factor_ex(batch).info.tolist() == [0, 2]
    with pytest.raises(sg.linalg.LinAlgError, match="lu_factor_ex: \\(Batch element 1\\)"):
        sg.linalg.lu_factor_ex(batch, check_errors=True)
    P, L, U = sg.linalg.lu(batch)  # the factors of a singular matrix exist
    np.testing.assert_allclose((P @ L @ U).numpy(), batch.numpy())
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        sg.linalg.lu_factor(batch, pivot=False)
    LU, pivots, _ = sg.linalg.lu_factor_ex(batch)
    with pytest.raises(sg.linalg.LinAlgError, match="diagonal element 2 is zero"):
        sg.linalg.lu_solve(LU, pivots, sg.ones(2, 2, 1, dtype=sg.float64))


def test_solve_ex_reports_singular_matrices_and_cond_is_torchs():
    a = np.array([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]]])
    result, info = sg.linalg.solve_ex(sg.tensor(a), sg.ones(2, dtype=sg.float64))
    t_result, t_info = torch.linalg.solve_ex(torch.tensor(a), torch.ones(2, dtype=torch.float64))
    assert info.tolist() == t_info.tolist() == [0, 2]
    np.testing.assert_allclose(result[0], t_result[0])
    assert np.isnan(result[1].numpy()).all()  # PyTorch's is whatever LAPACK computed
    for p in [None, 2, -2, "fro", "nuc", float("inf"), -float("inf"), 1, -1]:
        ours, theirs = sg.linalg.cond(sg.tensor(a), p), torch.linalg.cond(torch.tensor(a), p)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
        if p not in (None, 2, -2, "nuc"):  # the singular one: inf, as PyTorch
            assert ours[1].item() == theirs[1].item() == float("inf")
    with pytest.raises(RuntimeError, match="invalid norm type: 3"):
        sg.linalg.cond(sg.tensor(a), 3)
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        sg.linalg.cond(sg.ones(2, 3), "fro")


PIVOT_CALLS = {
    "lu_solve": lambda m, LU, pivots: m.linalg.lu_solve(LU, pivots, m.ones(LU.shape[-1], 1)),
    "lu_unpack": lambda m, LU, pivots: m.lu_unpack(LU, pivots).P,
}


@pytest.mark.parametrize("pivots", [[0, 0], [-1, 2], [1, 0], [3, 2], [2, 2], [2, 1]])
@pytest.mark.parametrize("name", PIVOT_CALLS)
def test_pivots_out_of_range_raise_as_pytorch(name, pivots):
    """Pivots below 1 (a zero: not from lu_factor) picked other rows silently (a wrong
    solution, or a wrong P), and one past the rows an IndexError; PyTorch raises its
    RuntimeError, as we do now, also in a jitted replay."""
    results = []
    for m in (sg, torch):
        LU, given = m.tensor([[2.0, 0.0], [1.0, 1.0]]), m.tensor(pivots, dtype=m.int32)
        try:
            results.append(PIVOT_CALLS[name](m, LU, given).tolist())
        except RuntimeError as error:
            results.append(str(error))
    assert results[0] == results[1]
    jitted = sg.jit(lambda p: PIVOT_CALLS[name](sg, sg.tensor([[2.0, 0.0], [1.0, 1.0]]), p))
    for _ in range(3):
        jitted(sg.tensor([2, 2], dtype=sg.int32))
    if isinstance(results[0], str):
        with pytest.raises(RuntimeError, match="Did you properly pass the result of lu_factor"):
            jitted(sg.tensor(pivots, dtype=sg.int32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_16_bit_lu_solve_checks_shapes_and_pivots_first_as_pytorch(dtype):
    for m in (sg, torch):
        LU = m.eye(2, dtype=getattr(m, dtype))
        with pytest.raises(RuntimeError, match="Pivots given to lu_solve must all be greater"):
            m.linalg.lu_solve(LU, m.zeros(2, dtype=m.int32), LU)
        with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
            m.linalg.lu_solve(LU, m.ones(2, dtype=m.int32), m.eye(3, dtype=LU.dtype))
        with pytest.raises(NotImplementedError):
            m.linalg.lu_solve(LU, m.ones(2, dtype=m.int32), LU)
