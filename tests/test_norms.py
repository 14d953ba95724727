"""The norm family against PyTorch where its roots and powers have infinite slopes: zero
vectors, zero entries, ties and negative orders, for ``Tensor.norm``, ``dist``, ``cdist``,
``F.pdist``, ``F.normalize``, ``F.pairwise_distance`` and ``F.cosine_similarity`` (values,
``requires_grad`` and gradients). ``x.norm()`` of a zero vector had a NaN gradient."""

import math

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

ROWS = np.array(
    [[0.0, 0.0, 0.0], [0.0, 1.0, -2.0], [3.0, 0.0, 0.0], [1.0, -1.0, 1.0], [2.0, 2.0, -1.0]]
)
ORDERS = [0, 0.5, 1, 1.5, 2, 3, math.inf, -math.inf, -1, -2.5]


def _check(ours, theirs):
    """Both functions of the same float64 leaf made from ROWS: values, requires_grad, and the
    gradient of a random weighting of the result (none where PyTorch's result has none)."""
    x, t = sg.tensor(ROWS, requires_grad=True), torch.tensor(ROWS, requires_grad=True)
    out, expected = ours(x), theirs(t)
    assert_close(out, expected)
    assert out.requires_grad == expected.requires_grad
    if not expected.requires_grad:
        return
    weights = np.random.default_rng(0).standard_normal(tuple(expected.shape))
    (out * sg.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    if t.grad is None:  # (PyTorch's p = 0 norms: a graph whose backward gives none)
        assert x.grad is None or not x.grad.numpy().any()
    else:
        assert_close(x.grad, t.grad)


@pytest.mark.parametrize("p", [*ORDERS, "fro"])
@pytest.mark.parametrize("dim, keepdim", [(1, False), (None, False), ((0, 1), True), (0, True)])
def test_tensor_norm(p, dim, keepdim):
    if p == "fro" and dim == 0:
        pytest.skip("PyTorch's 'fro' takes one or two dims (None: all)")
    _check(lambda x: x.norm(p, dim, keepdim), lambda x: x.norm(p, dim, keepdim))


@pytest.mark.parametrize("p", [p for p in ORDERS if p != 0])  # (PyTorch's p = 0 dist has none)
def test_dist(p):
    _check(lambda x: x[:3].dist(x[[0, 0, 2]], p), lambda x: x[:3].dist(x[[0, 0, 2]], p))


@pytest.mark.parametrize("p", [p for p in ORDERS if p >= 0])
def test_cdist_and_pdist(p):
    """For p = inf each tied largest entry gets the whole gradient, as PyTorch's."""
    _check(lambda x: sg.cdist(x[:3], x[1:], p), lambda x: torch.cdist(x[:3], x[1:], p))
    _check(lambda x: sg.nn.functional.pdist(x, p), lambda x: torch.nn.functional.pdist(x, p))


@pytest.mark.parametrize("p", [p for p in ORDERS if p > 0])
def test_normalize_and_pairwise_distance(p):
    _check(
        lambda x: sg.nn.functional.normalize(x, p),
        lambda x: torch.nn.functional.normalize(x, p),
    )
    pick = [0, 0, 0, 0, 0]
    _check(
        lambda x: sg.nn.functional.pairwise_distance(x, x[pick], p),
        lambda x: torch.nn.functional.pairwise_distance(x, x[pick], p),
    )


def test_cosine_similarity_of_zero_rows():
    pick = [0, 1, 1, 0, 2]
    _check(
        lambda x: sg.nn.functional.cosine_similarity(x, x[pick]),
        lambda x: torch.nn.functional.cosine_similarity(x, x[pick]),
    )


@pytest.mark.parametrize(
    ("p", "dim"), [("fro", (1, 2, 3)), ("fro", [0, 1, 3]), ("nuc", None), ("bogus", None)]
)
def test_string_orders_that_are_matrix_norms_raise_as_torch(p, dim):
    """ "fro" over more than two dims is a matrix norm in PyTorch (an error), not the 2-norm."""
    with pytest.raises(RuntimeError):
        torch.ones(4, 3, 2, 2).norm(p, dim)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm"):
        sg.ones(4, 3, 2, 2).norm(p, dim)


@pytest.mark.parametrize("dim", [lambda m: np.int64(0), lambda m: m.tensor(1)], ids=["np", "0-d"])
@pytest.mark.parametrize(
    "call",
    [lambda m, t, d: t.norm(2, d), lambda m, t, d: m.linalg.vector_norm(t, 2, d)],
    ids=["Tensor.norm", "linalg.vector_norm"],
)
def test_a_norm_over_one_dim_given_as_a_numpy_int_or_a_0d_tensor_as_torch(call, dim):
    """Tensor.norm (now linalg.vector_norm) took only a Python int for one dim."""
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    ours = call(sg, sg.tensor(x), dim(sg))
    theirs = call(torch, torch.tensor(x), dim(torch))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
