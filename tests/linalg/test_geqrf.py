"""``geqrf`` (and ``orgqr``, ``householder_product``'s older name) against PyTorch: LAPACK's
compact QR to rounding, for tall, wide, square, batched and empty matrices, real and complex;
Q formed from it; no derivative; PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scratchgrad as sg

TOLERANCES = {
    "float64": dict(rtol=1e-12, atol=1e-13),
    "complex128": dict(rtol=1e-12, atol=1e-13),
    "float32": dict(rtol=1e-5, atol=1e-6),
    "complex64": dict(rtol=1e-5, atol=1e-6),
}
SHAPES = [(4, 3), (3, 4), (3, 3), (2, 5, 2), (2, 1, 3, 3), (0, 3), (3, 0), (2, 0, 0)]


def _matrix(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", list(TOLERANCES))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_values_are_pytorchs(shape, dtype):
    a = _matrix(shape, dtype)
    ours, theirs = sg.geqrf(sg.tensor(a)), torch.geqrf(torch.tensor(a))
    assert type(ours).__name__ == "geqrf" and ours._fields == ("a", "tau")
    for o, t in zip(ours, theirs):
        assert o.shape == tuple(t.shape) and str(o.dtype)[12:] == str(t.dtype)[6:]
        np.testing.assert_allclose(o.numpy(), t.numpy(), **TOLERANCES[dtype])


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4)], ids=str)
def test_householder_product_of_it_is_q(shape):
    a = _matrix(shape, "float64", seed=1)
    factors = sg.tensor(a).geqrf()
    Q = sg.orgqr(factors.a, factors.tau)
    R = factors.a[..., : shape[-1], :].triu()
    np.testing.assert_allclose((Q @ R).numpy(), a, atol=1e-12)
    np.testing.assert_array_equal(
        factors.a.orgqr(factors.tau).numpy(), sg.linalg.householder_product(*factors).numpy()
    )
    np.testing.assert_allclose(Q.numpy(), torch.orgqr(*torch.geqrf(torch.tensor(a))), atol=1e-12)


def test_zero_columns_below_the_diagonal_make_no_reflection_as_lapacks():
    # LAPACK's larfg: tau 0 (H = I) where the entries under the diagonal are 0, even for a
    # negative diagonal entry or a NaN on it
    a = np.array([[-2.0, 1.0], [0.0, 1.0]])
    for value in (a, np.where(a == -2.0, np.nan, a)):
        ours, theirs = sg.geqrf(sg.tensor(value)), torch.geqrf(torch.tensor(value))
        np.testing.assert_array_equal(ours.tau.numpy(), theirs.tau.numpy())
        np.testing.assert_array_equal(ours.a.numpy(), theirs.a.numpy())


def test_it_has_no_derivative_as_pytorchs():
    a = _matrix((3, 2), "float64")
    for m in (sg, torch):
        result = m.geqrf(m.tensor(a, requires_grad=True))
        assert result.a.requires_grad and result.tau.requires_grad
        with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not"):
            result.a.sum().backward()


def test_out_is_written():
    a, tau = sg.empty(0, dtype=sg.float64), sg.empty(0, dtype=sg.float64)
    result = sg.geqrf(sg.tensor(_matrix((4, 3), "float64")), out=(a, tau))
    assert result.a is a and result.tau is tau and a.shape == (4, 3) and tau.shape == (3,)


ERRORS = {
    "vector": (lambda m: m.geqrf(m.ones(3)), RuntimeError, "at least 2 dimensions"),
    "int": (lambda m: m.geqrf(m.ones(2, 2, dtype=m.int64)), NotImplementedError, "'Long'"),
    "half": (lambda m: m.geqrf(m.ones(2, 2, dtype=m.float16)), NotImplementedError, "'Half'"),
    "empty_half": (lambda m: m.geqrf(m.ones(0, 2, dtype=m.float16)), NotImplementedError, "Half"),
    "bool": (lambda m: m.geqrf(m.ones(2, 2, dtype=m.bool)), NotImplementedError, "'Bool'"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_pytorchs(name):
    call, error, match = ERRORS[name]
    for m in (torch, sg):
        with pytest.raises(error, match=match):
            call(m)


def test_vmap_is_the_batched_call():
    A = sg.tensor(_matrix((3, 4, 2), "float64"))
    for ours, whole in zip(sg.func.vmap(sg.geqrf)(A), sg.geqrf(A)):
        np.testing.assert_array_equal(ours.numpy(), whole.numpy())
