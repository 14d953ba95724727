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
    # cast into outs of another dtype, as PyTorch's (it refused several outs of another dtype)
    for m in (sg, torch):
        a, tau = m.empty(0), m.empty(0)
        m.geqrf(m.tensor(_matrix((4, 3), "float64")), out=(a, tau))
        assert a.dtype == tau.dtype == m.float32


ERRORS = {
    "vector": lambda m: m.geqrf(m.ones(3)),
    "int": lambda m: m.geqrf(m.ones(2, 2, dtype=m.int64)),
    "half": lambda m: m.geqrf(m.ones(2, 2, dtype=m.float16)),
    "empty_half": lambda m: m.geqrf(m.ones(0, 2, dtype=m.float16)),
    "bool": lambda m: m.geqrf(m.ones(2, 2, dtype=m.bool)),
    "qr_half": lambda m: m.linalg.qr(m.ones(2, 2, dtype=m.float16)),
    "ormqr_half": lambda m: m.ormqr(*(m.ones(2, 2, dtype=m.float16),) * 3),
    "householder_half": lambda m: m.linalg.householder_product(*(m.ones(2, 2, dtype=m.half),) * 2),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_pytorchs(name):
    """The same type and message: a dtype without a kernel gets the dispatcher's words alone
    ('"geqrf_cpu" not implemented for 'Half''), naming no function."""
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(Exception) as ours:
        ERRORS[name](sg)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_vmap_is_the_batched_call():
    A = sg.tensor(_matrix((3, 4, 2), "float64"))
    for ours, whole in zip(sg.func.vmap(sg.geqrf)(A), sg.geqrf(A)):
        np.testing.assert_array_equal(ours.numpy(), whole.numpy())


ORMQR_SHAPES = [  # (input, other, left): Q of input's rows (other's rows if left, else columns)
    ((5, 3), (5, 2), True),
    ((3, 5), (3, 4), True),
    ((4, 4), (2, 4), False),
    ((2, 3, 2), (2, 4, 3), False),
    ((2, 4, 3), (2, 4, 2), True),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("shapes", ORMQR_SHAPES, ids=str)
def test_ormqr_values_and_gradients_are_pytorchs(shapes, transpose, dtype):
    input_shape, other_shape, left = shapes
    a = _matrix(input_shape, dtype, seed=2)
    a, tau = (x.numpy() for x in torch.geqrf(torch.tensor(a)))
    side = other_shape[-2] if left else other_shape[-1]
    tau = tau[..., : min(side, input_shape[-1])]
    c = _matrix(other_shape, dtype, seed=3)
    weights = _matrix(other_shape, dtype, seed=4)
    results = []
    for m in (sg, torch):
        xs = [m.tensor(x, requires_grad=True) for x in (a, tau, c)]
        out = m.ormqr(*xs, left=left, transpose=transpose)
        grads = m.autograd.grad((out * m.tensor(weights)).sum(), xs)
        results.append([out.detach().numpy(), *(g.numpy() for g in grads)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **TOLERANCES[dtype])


def test_ormqr_with_geqrfs_result_is_q_times_other():
    a = _matrix((5, 3), "float64", seed=5)
    factors = sg.geqrf(sg.tensor(a))
    c = sg.tensor(_matrix((5, 2), "float64", seed=6))
    q = sg.linalg.householder_product(  # the square Q: two columns more, without reflections
        sg.cat([factors.a, sg.zeros(5, 2, dtype=sg.float64)], 1),
        sg.cat([factors.tau, sg.zeros(2, dtype=sg.float64)]),
    )
    np.testing.assert_allclose(factors.a.ormqr(factors.tau, c).numpy(), (q @ c).numpy(), atol=1e-12)
    np.testing.assert_allclose(
        sg.ormqr(*factors, c, transpose=True).numpy(), (q.mT @ c).numpy(), atol=1e-12
    )


ORMQR_ERRORS = {
    "other_rows": lambda m, a, t, c: m.ormqr(a, t, c[:4]),
    "other_columns": lambda m, a, t, c: m.ormqr(a, t, c.mT[:, :4], left=False),
    "tau_count": lambda m, a, t, c: m.ormqr(a, t[:2], c),
    "tau_dims": lambda m, a, t, c: m.ormqr(a, t.expand(2, 3), c),
    "other_dims": lambda m, a, t, c: m.ormqr(a.expand(2, 5, 3), t.expand(2, 3), c),
    "other_batch": lambda m, a, t, c: m.ormqr(a.expand(2, 5, 3), t.expand(2, 3), c.expand(3, 5, 2)),
    "tau_dtype": lambda m, a, t, c: m.ormqr(a, t.float(), c),
    "other_dtype": lambda m, a, t, c: m.ormqr(a, t, c.float()),
    "vector": lambda m, a, t, c: m.ormqr(a, t, c[0]),
    "int": lambda m, a, t, c: m.ormqr(a.int(), t.int(), c.int()),
}


@pytest.mark.parametrize("name", ORMQR_ERRORS)
def test_ormqr_errors_are_pytorchs(name):
    arrays = [_matrix((5, 3), "float64"), _matrix((3,), "float64"), _matrix((5, 2), "float64")]
    with pytest.raises(RuntimeError) as theirs:
        ORMQR_ERRORS[name](torch, *(torch.tensor(x) for x in arrays))
    with pytest.raises(type(theirs.value)) as ours:
        ORMQR_ERRORS[name](sg, *(sg.tensor(x) for x in arrays))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("left, transpose", [(True, False), (False, True)])
def test_ormqr_gradcheck_and_gradgradcheck(left, transpose):
    def call(a, tau, c):
        return sg.ormqr(a, tau, c, left=left, transpose=transpose)

    xs = [_matrix(shape, "float64", seed=7) for shape in ((2, 4, 3), (2, 3), (2, 4, 4))]
    xs = [sg.tensor(x, requires_grad=True) for x in xs]
    assert sg.autograd.gradcheck(call, xs)
    assert sg.autograd.gradgradcheck(call, xs)
