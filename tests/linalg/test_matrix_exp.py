"""``linalg.matrix_exp`` (``sg.matrix_exp``, ``Tensor.matrix_exp``) against PyTorch: values and
gradients over batch shapes and norms (small, needing many squarings, and both in one batch),
float64 tightly and float32 loosely; finite differences of the first and second derivatives;
PyTorch's errors, and the identities the exponential satisfies."""

from __future__ import annotations

import doctest
import sys

import numpy as np
import pytest
import torch

import scratchgrad as sg

TOLERANCES = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-5)}


def _random(shape, scale, seed=0):
    """Matrices of ``shape`` whose 1-norms are about ``scale`` (per batch element when
    ``scale`` is an array)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    return a / np.abs(a).sum(-2).max(-1)[..., None, None] * np.asarray(scale)[..., None, None]


def _value_and_grad(lib, array, weight):
    A = lib.tensor(array, requires_grad=True)
    out = lib.linalg.matrix_exp(A)
    (grad,) = lib.autograd.grad((out * lib.tensor(weight)).sum(), [A])
    return out.detach().numpy(), grad.numpy()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "shape, scale",
    [
        ((3, 3), 0.01),
        ((3, 3), 1.0),
        ((2, 4, 4), 4.0),
        ((2, 1, 3, 3), 30.0),  # squared several times
        ((4, 3, 3), [0.001, 1.0, 10.0, 60.0]),  # a different number of squarings each
        ((1, 1), 2.0),
        ((5, 5), 6.0),
    ],
)
def test_values_and_gradients_are_pytorchs(shape, scale, dtype):
    array = _random(shape, scale).astype(dtype)
    weight = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    ours, theirs = _value_and_grad(sg, array, weight), _value_and_grad(torch, array, weight)
    for o, t in zip(ours, theirs):
        assert o.dtype == dtype and o.shape == t.shape
        scale_of_t = np.abs(t).max()  # relative to the largest entry: exp grows fast
        np.testing.assert_allclose(o / scale_of_t, t / scale_of_t, **TOLERANCES[dtype])


@pytest.mark.parametrize("shape, scale", [((3, 3), 0.5), ((2, 3, 3), [0.1, 8.0])])
def test_first_and_second_derivatives_match_finite_differences(shape, scale):
    A = sg.tensor(_random(shape, scale, seed=2), requires_grad=True)
    assert sg.autograd.gradcheck(sg.linalg.matrix_exp, A)
    assert sg.autograd.gradgradcheck(sg.linalg.matrix_exp, A)


def test_the_module_function_and_the_method_are_linalgs():
    array = _random((2, 3, 3), 3.0)
    expected = torch.linalg.matrix_exp(torch.tensor(array)).numpy()
    for out in (sg.matrix_exp(sg.tensor(array)), sg.tensor(array).matrix_exp()):
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    A = sg.tensor(array, requires_grad=True)
    assert A.matrix_exp().grad_fn.name() == "LinalgMatrixExpBackward0"


def test_identities():
    """exp of a nilpotent matrix is a finite sum, exp(A) exp(-A) = I, and of a 1x1 matrix
    the exponential of its entry."""
    nilpotent = sg.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=sg.float64)
    expected = np.eye(3) + nilpotent.numpy() + nilpotent.numpy() @ nilpotent.numpy() / 2
    np.testing.assert_allclose(sg.linalg.matrix_exp(nilpotent).numpy(), expected, rtol=1e-15)
    A = sg.tensor(_random((3, 4, 4), [0.5, 2.0, 6.0]))  # 6: scaled and squared
    product = sg.linalg.matrix_exp(A) @ sg.linalg.matrix_exp(-A)
    np.testing.assert_allclose(product.numpy(), np.broadcast_to(np.eye(4), (3, 4, 4)), atol=1e-9)
    x = np.array([[[-3.0]], [[0.5]], [[40.0]]])
    np.testing.assert_allclose(sg.linalg.matrix_exp(sg.tensor(x)).numpy(), np.exp(x), rtol=1e-13)


def test_empty_and_non_finite_matrices_as_pytorch():
    for array in (
        np.ones((2, 0, 0)),
        np.ones((0, 3, 3)),
        np.array([[np.inf, 0.0], [0.0, 1.0]]),
        np.array([[[np.nan, 0.0], [0.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]]),
    ):
        ours, theirs = sg.linalg.matrix_exp(sg.tensor(array)), torch.matrix_exp(torch.tensor(array))
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)


ERRORS = [
    lambda m: m.linalg.matrix_exp(m.ones(2, 3)),
    lambda m: m.matrix_exp(m.ones(3)),
    lambda m: m.matrix_exp(m.tensor(1.0)),
    lambda m: m.linalg.matrix_exp(m.ones(2, 2, dtype=m.int64)),
]


@pytest.mark.parametrize("call", ERRORS)
def test_bad_input_raises_pytorchs_error(call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(sg)
    assert str(ours.value) == str(theirs.value)


def test_16_bit_raises_where_pytorchs_cpu_result_overflows():
    assert torch.matrix_exp(torch.ones(2, 2, dtype=torch.float16)).isinf().all()
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: Low precision dtypes"):
        sg.matrix_exp(sg.ones(2, 2, dtype=sg.float16))


def test_doc_examples_run():
    assert doctest.testmod(sys.modules["scratchgrad.linalg.matrix_exp"]).failed == 0
