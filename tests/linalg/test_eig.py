"""``linalg.eig`` and ``linalg.eigvals`` against PyTorch where ``linalg_cases.py``'s real rows do
not reach: complex matrices, the results' dtypes, checks that do not depend on the eigenvectors'
phases (``A V = V diag(L)``, ``|V|``), the phase-dependent loss PyTorch refuses, and the errors.
Complex inputs go through gradcheck as their real and imaginary parts."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from linalg_cases import general

import scratchgrad as sg

TOLERANCES = {"complex128": dict(rtol=1e-9, atol=1e-10), "complex64": dict(rtol=2e-4, atol=2e-5)}


def _complex_matrix(batch, n=3, seed=0):
    """A random complex matrix whose eigenvalues are apart (a random one's may be close)."""
    rng = np.random.default_rng(seed)
    real = general([2.0, -1.0, 1.5][:n])(rng, batch)
    return real + 0.5j * rng.standard_normal((*batch, n, n))


def _invariant_loss(m, A, weights):
    """A loss of the eigenvalues and of the eigenvectors' moduli, free of their phases."""
    L, V = m.linalg.eig(A)
    w_l, w_v = (m.tensor(w) for w in weights)
    return (L.real * w_l).sum() + (L.imag * w_l.flip(-1)).sum() + (V.abs() * w_v).sum()


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("batch", [(), (2,), (2, 1)], ids=str)
def test_complex_values_and_gradients_are_pytorchs(batch, dtype):
    a = _complex_matrix(batch).astype(dtype)
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((*batch, 3)), rng.standard_normal((*batch, 3, 3))
    results = []
    for m in (sg, torch):
        A = m.tensor(a, requires_grad=True)
        L, V = m.linalg.eig(A)
        (grad,) = m.autograd.grad(_invariant_loss(m, A, weights), A)
        results.append([L.detach().numpy(), V.abs().detach().numpy(), grad.numpy()])
        assert L.dtype == V.dtype == A.dtype
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, **TOLERANCES[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_eigenpairs_solve_the_problem_with_unit_vectors(dtype):
    a = np.random.default_rng(2).standard_normal((2, 4, 4)).astype(dtype)
    L, V = sg.linalg.eig(sg.tensor(a))
    their_dtype = torch.linalg.eig(torch.tensor(a)).eigenvalues.dtype
    assert str(L.dtype).split(".")[-1] == str(their_dtype).split(".")[-1] == str(V.dtype)[12:]
    tolerance = 1e-12 if dtype.endswith(("64", "128")) and dtype != "complex64" else 1e-5
    residual = (sg.tensor(a).to(V.dtype) @ V - V * L.unsqueeze(-2)).abs().max().item()
    assert residual < tolerance * 10
    np.testing.assert_allclose(sg.linalg.vector_norm(V, dim=-2).numpy(), 1, atol=tolerance)


def test_eigvals_are_eigs_eigenvalues_and_differentiate_alike():
    a = _complex_matrix((2,))
    A, T = sg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours, theirs = sg.linalg.eigvals(A), torch.linalg.eigvals(T)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-10)
    (grad,) = sg.autograd.grad((ours * ours).real.sum(), A)
    (their_grad,) = torch.autograd.grad((theirs * theirs).real.sum(), T)
    np.testing.assert_allclose(grad.numpy(), their_grad.numpy(), rtol=1e-9, atol=1e-10)


def _of_parts(function):
    """``function`` of the complex matrix made of two real ones: gradcheck perturbs real entries."""
    return lambda re, im: function(sg.complex(re, im))


def _parts(seed):
    a = _complex_matrix((2,), seed=seed)
    return [sg.tensor(part, requires_grad=True) for part in (a.real, a.imag)]


CHECKED = {
    "eig": lambda A: (lambda L, V: (L.real, L.imag, V.abs()))(*sg.linalg.eig(A)),
    "eig_vectors_only": lambda A: sg.linalg.eig(A).eigenvectors.abs(),
    "eigvals": lambda A: sg.linalg.eigvals(A).imag,
}


@pytest.mark.parametrize("name", CHECKED)
def test_complex_gradcheck_and_gradgradcheck(name):
    assert sg.autograd.gradcheck(_of_parts(CHECKED[name]), _parts(seed=3))
    assert sg.autograd.gradgradcheck(_of_parts(CHECKED[name]), _parts(seed=4))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_second_derivatives_of_the_vectors_are_pytorchs(dtype):
    # the second derivative reaches V by two nodes here (the backward computes eig again):
    # they must drop the phase parts of diag(V^H grad_V) alike, which once gave 0.6 off
    a = general([1 + 1j, None, -2.0])(np.random.default_rng(5), ())
    a = a + (0.3j * a.T if dtype == "complex128" else 0)
    rng = np.random.default_rng(6)
    weights, u = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    results = []
    for m in (sg, torch):
        A = m.tensor(a, requires_grad=True)
        loss = (m.linalg.eig(A).eigenvectors.abs() * m.tensor(weights)).sum()
        (grad,) = m.autograd.grad(loss, A, create_graph=True)
        (second,) = m.autograd.grad((grad.real * m.tensor(u)).sum(), A)
        results.append(second.numpy())
    np.testing.assert_allclose(*results, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_a_loss_of_the_phases_raises_as_pytorchs(dtype):
    a = general([1 + 1j, None, -2.0])(np.random.default_rng(7), ())  # complex vectors
    a = a + (0.5j * a.T if dtype == "complex128" else 0)
    for m in (sg, torch):
        V = m.linalg.eig(m.tensor(a, requires_grad=True)).eigenvectors
        with pytest.raises(RuntimeError, match=r"specified up to multiplication by e\^\{i phi\}"):
            V.real.sum().backward()


def test_eigvals_of_a_matrix_with_an_inf_is_nan_without_a_gradient_and_raises_with_one():
    a = np.array([[[1.0, np.inf], [0.0, 1.0]], [[2.0, 1.0], [0.0, 3.0]]])
    for m in (sg, torch):
        values = m.linalg.eigvals(m.tensor(a)).numpy()
        assert np.isnan(values[0]).all()
        np.testing.assert_allclose(values[1], [2, 3])
        with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
            m.linalg.eigvals(m.tensor(a, requires_grad=True))
        with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
            m.linalg.eig(m.tensor(a))


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)], ids=str)
def test_empty_matrices_give_empty_complex_results(shape):
    for dtype in ("float32", "float64"):
        L, V = sg.linalg.eig(sg.zeros(shape, dtype=getattr(sg, dtype)))
        theirs = torch.linalg.eig(torch.zeros(shape, dtype=getattr(torch, dtype)))
        assert L.shape == theirs.eigenvalues.shape and V.shape == theirs.eigenvectors.shape
        assert str(L.dtype)[12:] == str(theirs.eigenvalues.dtype)[6:]


ERRORS = {
    "non_square": (lambda m: m.linalg.eig(m.ones(3, 4)), "A must be batches of square matrices"),
    "vector": (lambda m: m.linalg.eigvals(m.ones(3)), "must have at least 2 dimensions"),
    "int": (lambda m: m.linalg.eig(m.ones(2, 2, dtype=m.int64)), "Unknown Complex ScalarType"),
    "half": (lambda m: m.linalg.eig(m.ones(2, 2, dtype=m.float16)), "linalg_eig_out_cpu"),
    "bfloat16": (lambda m: m.linalg.eigvals(m.ones(2, 2, dtype=m.bfloat16)), "'BFloat16'"),
    "empty_half": (lambda m: m.linalg.eig(m.ones(0, 0, dtype=m.float16)), "'Half'"),
    "nan": (lambda m: m.linalg.eig(m.tensor([[1.0, float("nan")], [0, 1]])), "infs or NaNs"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_pytorchs(name):
    call, match = ERRORS[name]
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=match):
        call(sg)


def test_out_takes_complex_tensors_and_refuses_real_ones():
    A = sg.tensor([[2.0, 1.0], [0.0, 3.0]])
    values, vectors = sg.empty(2, dtype=sg.complex64), sg.empty(2, 2, dtype=sg.complex64)
    result = sg.linalg.eig(A, out=(values, vectors))
    assert result[0] is values and result[1] is vectors
    np.testing.assert_allclose(values.numpy(), [2, 3])
    out = sg.empty(2, dtype=sg.complex128)
    assert sg.linalg.eigvals(A, out=out) is out
    with pytest.raises(RuntimeError):
        sg.linalg.eigvals(A, out=sg.empty(2))
    # PyTorch casts into wider complex outs (it refused several outs of another dtype)
    values, vectors = sg.empty(2, dtype=sg.complex128), sg.empty(2, 2, dtype=sg.complex128)
    sg.linalg.eig(A, out=(values, vectors))
    np.testing.assert_allclose(values.numpy(), torch.linalg.eigvals(torch.tensor(A.numpy())))
    with pytest.raises(RuntimeError):
        sg.linalg.eig(A, out=(sg.empty(2), sg.empty(2, 2)))


def test_vmap_of_values_and_gradients_is_the_batched_call():
    # (real matrices: func.grad takes no complex inputs yet)
    A = sg.tensor(general([1 + 1j, None, -2.0])(np.random.default_rng(9), (3,)), requires_grad=True)

    def loss(x):
        return _invariant_loss(sg, x, (np.ones(3), np.ones((3, 3))))

    np.testing.assert_array_equal(
        sg.func.vmap(sg.linalg.eigvals)(A).detach().numpy(), sg.linalg.eigvals(A).detach().numpy()
    )
    batched = sg.func.vmap(sg.func.grad(loss))(A)
    (whole,) = sg.autograd.grad(loss(A), A)
    np.testing.assert_allclose(batched.detach().numpy(), whole.numpy(), rtol=1e-12, atol=1e-13)
