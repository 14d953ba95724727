"""vmap over ``scratchgrad.linalg``: every function batched against ``torch.func.vmap`` and a
Python loop over the members, with the batch dim first, last, or on one operand only, nested;
gradients through vmap and per-member gradients (``vmap(grad(f))``) against PyTorch's,
among them per-sample gradients of a Gaussian log-density (cholesky and solve_triangular)."""

import math

import numpy as np
import pytest
import torch
from oracle import assert_close, check_against_torch

import scratchgrad as sg
from scratchgrad.func import grad, vmap

BATCH = 3
RNG = np.random.default_rng(0)


def square(shape):
    """Well-conditioned square matrices: random ones plus 4 on the diagonal."""
    return RNG.standard_normal(shape) + 4 * np.eye(shape[-1])


def symmetric(shape):
    """Symmetric positive-definite matrices, their eigenvalues distinct."""
    a = RNG.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def wide(shape):
    return RNG.standard_normal(shape)


# name: (a member's call, the same for both libraries; a member's inputs: (make, shape) each).
# The eigenvectors and singular vectors are defined up to sign: their absolute values are
# compared, whose gradients do not depend on the sign either.
CASES = {
    "inv": (lambda m, a: m.linalg.inv(a), [(square, (4, 4))]),
    "det": (lambda m, a: m.linalg.det(a), [(square, (4, 4))]),
    "slogdet": (lambda m, a: tuple(m.linalg.slogdet(-a)), [(square, (3, 3))]),
    "solve": (lambda m, a, b: m.linalg.solve(a, b), [(square, (4, 4)), (wide, (4, 2))]),
    "solve, a vector": (lambda m, a, b: m.linalg.solve(a, b), [(square, (4, 4)), (wide, (4,))]),
    "solve, left=False": (
        lambda m, a, b: m.linalg.solve(a, b, left=False),
        [(square, (3, 3)), (wide, (2, 3))],
    ),
    "solve, batches of their own": (
        lambda m, a, b: m.linalg.solve(a, b),
        [(square, (2, 3, 3)), (wide, (3, 2))],
    ),
    "solve_triangular": (
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False),
        [(square, (4, 4)), (wide, (4, 2))],
    ),
    "solve_triangular, upper, right, unit": (
        lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True, left=False, unitriangular=True),
        [(square, (3, 3)), (wide, (2, 3))],
    ),
    "cholesky": (lambda m, a: m.linalg.cholesky(a), [(symmetric, (4, 4))]),
    "cholesky, upper": (lambda m, a: m.linalg.cholesky(a, upper=True), [(symmetric, (3, 3))]),
    "qr": (lambda m, a: tuple(m.linalg.qr(a)), [(wide, (5, 3))]),
    "qr, wide": (lambda m, a: tuple(m.linalg.qr(a)), [(wide, (3, 5))]),
    "eigh": (
        lambda m, a: (lambda w, v: (w, v.abs()))(*m.linalg.eigh(a)),
        [(symmetric, (4, 4))],
    ),
    "eigvalsh": (lambda m, a: m.linalg.eigvalsh(a, UPLO="U"), [(symmetric, (4, 4))]),
    "svd": (
        lambda m, a: (lambda u, s, vh: (u.abs(), s, vh.abs()))(
            *m.linalg.svd(a, full_matrices=False)
        ),
        [(wide, (5, 3))],
    ),
    "svdvals": (lambda m, a: m.linalg.svdvals(a), [(wide, (3, 5))]),
    "pinv": (lambda m, a: m.linalg.pinv(a), [(wide, (5, 3))]),
    "matrix_norm": (lambda m, a: m.linalg.matrix_norm(a), [(wide, (4, 3))]),
    "matrix_norm, nuc": (lambda m, a: m.linalg.matrix_norm(a, "nuc"), [(wide, (4, 3))]),
    "matrix_norm, 2": (lambda m, a: m.linalg.matrix_norm(a, 2), [(wide, (4, 3))]),
    "matrix_norm, inf, dims (0, 1) of 3": (
        lambda m, a: m.linalg.matrix_norm(a, math.inf, dim=(0, 1)),
        [(wide, (4, 3, 2))],
    ),
    "vector_norm": (lambda m, a: m.linalg.vector_norm(a), [(wide, (4, 3))]),
    "vector_norm, 3, dim -1, keepdim": (
        lambda m, a: m.linalg.vector_norm(a, 3, dim=-1, keepdim=True),
        [(wide, (4, 3))],
    ),
    "vector_norm, inf, dim 0": (
        lambda m, a: m.linalg.vector_norm(a, math.inf, dim=0),
        [(wide, (4, 3))],
    ),
    "vector_norm, 0-d": (lambda m, a: m.linalg.vector_norm(a * 2, 0.5), [(wide, ())]),
    "norm": (lambda m, a: m.linalg.norm(a, 1), [(wide, (5,))]),
    "matrix_power": (lambda m, a: m.linalg.matrix_power(a, -2), [(square, (3, 3))]),
    "cross": (lambda m, a, b: m.linalg.cross(a, b), [(wide, (2, 3)), (wide, (2, 3))]),
    "vecdot": (lambda m, a, b: m.linalg.vecdot(a, b), [(wide, (2, 3)), (wide, (3,))]),
}
# torch.func.vmap's solve raises here ("The size of tensor a (3) must match the size of tensor
# b (2)"), though torch.linalg.solve takes each member: PyTorch's loop is the reference instead
TORCH_LOOPS = {"solve, batches of their own"}


def _torch_vmap(name, f, in_dims=0):
    """torch.func.vmap(f), or for the cases it fails on a loop of f stacked (differentiable)."""
    if name not in TORCH_LOOPS:
        return torch.func.vmap(f, in_dims=in_dims)

    def loop(*xs):
        dims = (in_dims,) * len(xs) if isinstance(in_dims, int) else in_dims
        size = next(x.shape[d] for x, d in zip(xs, dims) if d is not None)
        outs = [
            f(*(x if d is None else x.select(d, i) for x, d in zip(xs, dims))) for i in range(size)
        ]
        columns = [torch.stack(list(column)) for column in zip(*map(_members, outs))]
        return tuple(columns) if isinstance(outs[0], tuple) else columns[0]

    return loop


def _in_dims_cases(name):
    """All batched, the batch dim first and last, and for two inputs each one alone."""
    n = len(CASES[name][1])
    return [(0,) * n, (-1,) * n] + ([(0, None), (None, 0)] if n == 2 else [])


def _arrays(name, in_dims, outer=()):
    """One array per input, with a batch of BATCH at its in_dim (and ``outer`` in front)."""
    arrays = []
    for (make, shape), d in zip(CASES[name][1], in_dims):
        x = make((*outer, *(() if d is None else (BATCH,)), *shape))
        arrays.append(x if d is None else np.moveaxis(x, len(outer), d))
    return arrays


def _members(out):
    return out if isinstance(out, tuple) else (out,)


def _loop(call, arrays, in_dims):
    """The call on each member, stacked: the reference vmap must equal."""
    outs = []
    for i in range(BATCH):
        xs = [sg.tensor(a if d is None else np.take(a, i, d)) for a, d in zip(arrays, in_dims)]
        outs.append(_members(call(sg, *xs)))
    return [sg.stack(list(column)) for column in zip(*outs)]


@pytest.mark.parametrize("name", CASES)
def test_vmap_matches_torch_and_a_loop(name):
    call = CASES[name][0]
    for in_dims in _in_dims_cases(name):
        arrays = _arrays(name, in_dims)
        ours = vmap(lambda *xs: call(sg, *xs), in_dims=in_dims)(*map(sg.tensor, arrays))
        theirs = _torch_vmap(name, lambda *xs: call(torch, *xs), in_dims)(
            *map(torch.tensor, arrays)
        )
        expected = _loop(call, arrays, in_dims)
        for k, (o, t, e) in enumerate(zip(_members(ours), _members(theirs), expected, strict=True)):
            what = f"{name} in_dims={in_dims}: output {k}"
            assert_close(o, t, "float64", f"{what} vs torch.func.vmap")
            assert_close(o, e, "float64", f"{what} vs a loop")


@pytest.mark.parametrize("name", CASES)
def test_nested_vmap_with_the_outer_batch_dim_last(name):
    """vmap(vmap(f, in_dims=0), in_dims=-1) over inputs (BATCH, *shape, 2)."""
    call = CASES[name][0]
    n = len(CASES[name][1])
    arrays = [np.moveaxis(a, 0, -1) for a in _arrays(name, (0,) * n, outer=(2,))]

    ours = vmap(vmap(lambda *xs: call(sg, *xs)), in_dims=-1)(*map(sg.tensor, arrays))
    inner = _torch_vmap(name, lambda *xs: call(torch, *xs))
    theirs = _torch_vmap(name, inner, -1)(*map(torch.tensor, arrays))
    for k, (o, t) in enumerate(zip(_members(ours), _members(theirs), strict=True)):
        assert_close(o, t, "float64", f"{name} nested: output {k}")


def _loss(m, call, weights):
    """The outputs weighted by fixed random weights, summed: a scalar of every output."""
    return lambda *xs: sum(
        (o * m.tensor(w)).sum() for o, w in zip(_members(call(m, *xs)), weights, strict=True)
    )


def _weights(name, arrays):
    """Random weights of each output's member shape (the shapes from PyTorch's call)."""
    call = CASES[name][0]
    outs = _members(call(torch, *(torch.tensor(a[0]) for a in arrays)))
    rng = np.random.default_rng(5)
    return [rng.standard_normal(tuple(o.shape)) for o in outs]


@pytest.mark.parametrize("name", CASES)
def test_gradients_through_vmap_and_per_member_gradients(name):
    call = CASES[name][0]
    in_dims = _in_dims_cases(name)[0]
    arrays = _arrays(name, in_dims)
    check_against_torch(
        vmap(lambda *xs: call(sg, *xs), in_dims=in_dims),
        _torch_vmap(name, lambda *xs: call(torch, *xs), in_dims),
        arrays,
        what=f"{name} through vmap",
    )
    weights = _weights(name, [a if d == 0 else a[None] for a, d in zip(arrays, in_dims)])
    argnums = tuple(range(len(arrays)))
    ours = vmap(grad(_loss(sg, call, weights), argnums=argnums), in_dims=in_dims)(
        *map(sg.tensor, arrays)
    )
    theirs = _torch_vmap(
        name, torch.func.grad(_loss(torch, call, weights), argnums=argnums), in_dims
    )(*map(torch.tensor, arrays))
    for k, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert_close(o, t, "float64", f"{name}: vmap(grad) of input {k}")


def gaussian_log_density(m, x, mean, scale):
    """log N(x; mean, S S^T + I), by the Cholesky factor of the covariance and one triangular
    solve: -(|L^-1 (x - mean)|^2 + log det(2 pi C)) / 2."""
    covariance = scale @ scale.mT + m.eye(scale.shape[-1], dtype=scale.dtype)
    lower = m.linalg.cholesky(covariance)
    z = m.linalg.solve_triangular(lower, (x - mean).unsqueeze(-1), upper=False).squeeze(-1)
    log_det = 2 * lower.diagonal(0, -2, -1).log().sum(-1)
    return -0.5 * ((z * z).sum(-1) + log_det + x.shape[-1] * math.log(2 * math.pi))


@pytest.mark.parametrize(
    "in_dims", [(0, None, None), (0, 0, 0), (None, 0, 0), (1, None, -1)], ids=str
)
def test_per_sample_gradients_of_a_gaussian_log_density(in_dims):
    """vmap(grad) over samples, or over a population of Gaussians, or both: each member's
    gradient of the mean and of the covariance's factor, against PyTorch's and a loop of
    scratchgrad's grad, and the values against torch.distributions."""
    rng = np.random.default_rng(7)
    shapes = [(4,), (4,), (4, 4)]
    arrays = []
    for shape, d in zip(shapes, in_dims):
        x = rng.standard_normal(shape if d is None else (BATCH, *shape))
        arrays.append(x if d is None else np.moveaxis(x, 0, d))
    gradient = (1, 2)
    ours = vmap(grad(lambda *xs: gaussian_log_density(sg, *xs), argnums=gradient), in_dims)(
        *map(sg.tensor, arrays)
    )
    theirs = torch.func.vmap(
        torch.func.grad(lambda *xs: gaussian_log_density(torch, *xs), argnums=gradient), in_dims
    )(*map(torch.tensor, arrays))
    loop = [
        grad(lambda *xs: gaussian_log_density(sg, *xs), argnums=gradient)(
            *(sg.tensor(a if d is None else np.take(a, i, d)) for a, d in zip(arrays, in_dims))
        )
        for i in range(BATCH)
    ]
    for k in range(2):
        assert_close(ours[k], theirs[k], "float64", f"gradient {k} vs torch.func")
        assert_close(ours[k], sg.stack([g[k] for g in loop]), "float64", f"gradient {k} vs a loop")
    values = vmap(lambda *xs: gaussian_log_density(sg, *xs), in_dims)(*map(sg.tensor, arrays))
    x, mean, scale = (
        torch.tensor(a if d is None else np.moveaxis(a, d, 0)) for a, d in zip(arrays, in_dims)
    )
    covariance = scale @ scale.mT + torch.eye(4, dtype=scale.dtype)
    expected = torch.distributions.MultivariateNormal(mean, covariance).log_prob(x)
    assert_close(values, expected, "float64", "log-density vs torch.distributions")


def test_lstsq_of_one_matrix_and_batched_right_hand_sides():
    a, b = wide((5, 3)), wide((BATCH, 5, 2))
    ours = vmap(lambda b: sg.linalg.lstsq(sg.tensor(a), b).solution)(sg.tensor(b))
    theirs = torch.func.vmap(lambda b: torch.linalg.lstsq(torch.tensor(a), b).solution)(
        torch.tensor(b)
    )
    assert_close(ours, theirs, "float64", "lstsq vs torch.func.vmap")
    loop = [sg.linalg.lstsq(sg.tensor(a), sg.tensor(member)).solution for member in b]
    assert_close(ours, sg.stack(loop), "float64", "lstsq vs a loop")
