"""median, kthvalue, cummax, cummin, diagonal, diag_embed, rot90, take, kron, cartesian_prod,
tensordot, dist, cdist, fmod and erfinv against PyTorch: values and gradients on a few shapes
each, float64 tight and float32 loose; gradcheck and gradgradcheck in float64; and each one's
errors where PyTorch raises."""

import numpy as np
import pytest
import torch
from oracle import (
    assert_close,
    assert_doc_examples_run,
    assert_raises_as_torch,
    check_against_torch,
)

import scratchgrad as sg

# name -> (call(m, *xs) for both libraries, the input shapes of each case)
CASES = {
    "median": (
        lambda m, x: (m.median(x), *x.median(-1), *m.median(x, 0, True)),
        [((3, 4),), ((5,),)],
    ),
    "kthvalue": (
        lambda m, x: (*m.kthvalue(x, 2), *x.kthvalue(1, 0, keepdim=True)),
        [((3, 4),), ((2, 5, 3),)],
    ),
    "cummax": (lambda m, x: (*m.cummax(x, 0), *x.cummax(-1)), [((3, 4),), ((5,),)]),
    "cummin": (lambda m, x: (*m.cummin(x, -1), *x.cummin(0)), [((3, 4),), ((2, 3, 2),)]),
    "diagonal": (lambda m, x: m.diagonal(x, 1, 0, -1) + 0, [((3, 4),), ((2, 3, 3),)]),
    "diag_embed": (
        lambda m, x: (m.diag_embed(x), x.diag_embed(1, 1, 0), m.diag_embed(x, -2, 0, -1)),
        [((3,),), ((2, 3),)],
    ),
    "rot90": (
        lambda m, x: (m.rot90(x), x.rot90(2, (1, 0)), m.rot90(x, -1, (-1, 0)), x.rot90(4)),
        [((3, 4),), ((2, 3, 2),)],
    ),
    "take": (lambda m, x: m.take(x, m.tensor([[0, -1], [2, 2]])), [((3, 4),), ((5,),)]),
    "kron": (lambda m, x, y: m.kron(x, y), [((2, 3), (3, 2)), ((2,), (2, 3)), ((2, 1, 2), (3,))]),
    "cartesian_prod": (
        lambda m, x, y: (m.cartesian_prod(x, y, x), m.cartesian_prod(y)),
        [((3,), (2,))],
    ),
    "tensordot": (
        lambda m, x, y: m.tensordot(x, y, dims=([0, 2], [2, 0])),
        [((2, 3, 4), (4, 5, 2))],
    ),
    "tensordot_two": (lambda m, x, y: m.tensordot(x, y), [((2, 3, 4), (3, 4, 5))]),
    "tensordot_int": (lambda m, x, y: m.tensordot(x, y, 1), [((2, 3), (3, 4)), ((3,), (3,))]),
    "dist": (
        lambda m, x, y: (m.dist(x, y), x.dist(y, 1), m.dist(x, y, 3.5), m.dist(x, y, float("inf"))),
        [((3, 4), (4,)), ((2,), (2,))],
    ),
    "cdist": (
        lambda m, x, y: (m.cdist(x, y), m.cdist(x, y, p=1), m.cdist(x, y, 3.0)),
        [((3, 4), (5, 4)), ((2, 3, 2), (2, 4, 2))],
    ),
    "fmod": (lambda m, x, y: (m.fmod(x * 5, y), x.fmod(-1.5)), [((3, 4), (4,)), ((5,), (5,))]),
    "erfinv": (lambda m, x: m.erfinv(x.tanh() * 0.99), [((3, 4),), ((5,),)]),
}
ROWS = [
    pytest.param(name, shapes, id=f"{name}-{i}")
    for name, (_, cases) in CASES.items()
    for i, shapes in enumerate(cases)
]


def _arrays(shapes):
    """Distinct values (no ties for the order statistics), away from 0 (fmod's divisor)."""
    rng = np.random.default_rng(0)
    return [
        rng.permutation(np.prod(s, dtype=int)).reshape(s) * 0.37 + 0.3 + rng.uniform(0, 0.01, s)
        for s in shapes
    ]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "shapes"), ROWS)
def test_forward_and_gradients_match_torch(name, shapes, dtype):
    call = CASES[name][0]
    arrays = [a / a.size - 0.45 for a in _arrays(shapes)] if name == "erfinv" else _arrays(shapes)
    check_against_torch(
        lambda *xs: call(sg, *xs), lambda *xs: call(torch, *xs), arrays, dtype, what=name
    )


@pytest.mark.parametrize("check", ["gradcheck", "gradgradcheck"])
@pytest.mark.parametrize(("name", "shapes"), ROWS)
def test_gradcheck_and_gradgradcheck(name, shapes, check):
    call = CASES[name][0]
    xs = [sg.tensor(a / a.size, requires_grad=True) for a in _arrays(shapes)]

    def joined(*xs):  # every floating output, so that each one's derivative is checked
        outs = call(sg, *xs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sg.cat([o.reshape(-1) for o in outs if o.is_floating_point()])

    assert getattr(sg.autograd, check)(joined, xs)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_median_along_a_dim_picks_torchs_index_among_ties_and_nans(dtype):
    """PyTorch's CPU median breaks ties by index in its nth_element (a stable sort's pick,
    whatever the row's length) and returns a slice's first NaN; nanmedian of a slice of NaNs
    gives where its nth_element leaves one."""
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 16, 17, 40, 300):
        array = rng.choice([-0.0, 0.0, 1.0, 2.0], (4, n))
        if dtype != "int64":
            array[1, rng.integers(0, n, 2)] = np.nan
            array[2] = np.nan
        x = sg.tensor(array, dtype=getattr(sg, dtype))
        tx = torch.tensor(array, dtype=getattr(torch, dtype))
        for name in ("median", "nanmedian"):
            for dim in (0, 1):
                ours, theirs = getattr(x, name)(dim), getattr(tx, name)(dim)
                assert ours.indices.tolist() == theirs.indices.tolist(), (name, n, dim)


def test_values_at_ties_nan_and_edges_as_torch():
    data = [1.0, 3.0, 3.0, 2.0, 5.0, float("nan"), 1.0, 7.0, float("nan")]
    for name in ("cummax", "cummin"):
        ours, theirs = getattr(sg.tensor(data), name)(0), getattr(torch.tensor(data), name)(0)
        assert ours.indices.tolist() == theirs.indices.tolist()
    assert sg.tensor([1.0, float("nan"), 2.0]).median(0).indices.item() == 1
    assert np.isnan(sg.median(sg.ones(0)).item())
    edges = [-1.0, 1.0, 0.0, 2.0, 1 - 1e-15, -0.999999]
    assert_close(
        sg.erfinv(sg.tensor(edges, dtype=sg.float64)),
        torch.erfinv(torch.tensor(edges, dtype=torch.float64)),
    )
    assert sg.fmod(sg.tensor([-7, 7]), 3).tolist() == torch.fmod(torch.tensor([-7, 7]), 3).tolist()
    assert sg.erfinv(sg.tensor([0, 1])).dtype == sg.float32


ERRORS = {
    "median_empty_dim": (lambda m: m.median(m.ones(0, 3), 0), IndexError, "non-zero size"),
    "amax_empty_dim": (lambda m: m.ones(2, 0).amax((0, 1)), IndexError, "dim 1 to have non-zero"),
    "amin_empty_dim": (lambda m: m.amin(m.ones(0, 3), 0), IndexError, "dim 0 to have non-zero"),
    "amax_empty_all": (lambda m: m.ones(0, 3).amax(), RuntimeError, "dim to be specified"),
    # the dims as given, each checked for size 0 before a repeated one is refused
    "amax_empty_negative_dim": (
        lambda m: m.ones(2, 0).amax(-1),
        IndexError,
        "dim -1 to have non-zero",
    ),
    "amin_empty_repeated_dim": (
        lambda m: m.ones(0, 0).amin((-2, 0)),
        IndexError,
        "dim -2 to have non-zero",
    ),
    "any_repeated_dim": (lambda m: m.ones(2, 3).any((1, -1)), RuntimeError, "dim 1 appears"),
    "all_repeated_dim": (lambda m: m.ones(2, 3).all((0, 0)), RuntimeError, "dim 0 appears"),
    "matrix_norm_smallest_of_none": (
        lambda m: m.linalg.matrix_norm(m.ones(3, 0, 0), -2),
        IndexError,
        "non-zero size",
    ),
    "kthvalue_k": (lambda m: m.kthvalue(m.ones(3), 4), RuntimeError, "k out of range"),
    "cummax_dim": (lambda m: m.cummax(m.ones(3), 1), IndexError, "Dimension out of range"),
    "diagonal_dims": (lambda m: m.diagonal(m.ones(3, 3), 0, 1, 1), RuntimeError, "cannot be"),
    "diag_embed_dims": (lambda m: m.diag_embed(m.ones(2, 3), 0, 1, 1), RuntimeError, "identical"),
    "rot90_1d": (lambda m: m.rot90(m.ones(3)), RuntimeError, "total dims >= 2"),
    "rot90_same": (lambda m: m.rot90(m.ones(3, 3), 1, (0, 0)), RuntimeError, "different"),
    "take_range": (
        lambda m: m.take(m.ones(2, 3), m.tensor([6])),
        IndexError,
        "index 6 on a tensor of 6",
    ),
    "cartesian_prod_2d": (lambda m: m.cartesian_prod(m.ones(2, 3)), RuntimeError, r"\[2, 3\]"),
    "tensordot_sizes": (
        lambda m: m.tensordot(m.ones(2, 3), m.ones(4, 2), dims=([1], [0])),
        RuntimeError,
        "first has size 3 in dim 1 and second has size 4 in dim 0",
    ),
    "tensordot_negative": (
        lambda m: m.tensordot(m.ones(2), m.ones(2), -1),
        RuntimeError,
        "dims >= 0",
    ),
    "cdist_columns": (lambda m: m.cdist(m.ones(2, 3), m.ones(4, 2)), RuntimeError, "X1: 3 X2: 2"),
    "cdist_p": (lambda m: m.cdist(m.ones(2, 3), m.ones(4, 3), p=-1), RuntimeError, "non-negative"),
    "fmod_zero": (lambda m: m.fmod(m.tensor([5]), 0), RuntimeError, "ZeroDivisionError"),
}


@pytest.mark.parametrize("high, n", [(2, 9), (3, 40), (5, 300)])
def test_kthvalue_picks_torchs_index_among_ties(high, n):
    """PyTorch's quickselect decides which of equal entries is the k-th."""
    data = np.random.default_rng(n).integers(0, high, (3, n)).astype(np.float64)
    data[0, :2] = np.nan
    for k in range(1, n + 1, max(1, n // 12)):
        for dim, x in ((1, data), (0, data.T.copy())):
            ours, theirs = sg.tensor(x).kthvalue(k, dim), torch.tensor(x).kthvalue(k, dim)
            assert ours.indices.tolist() == theirs.indices.tolist(), (k, dim)
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_torch(name):
    assert_raises_as_torch(*ERRORS[name])


@pytest.mark.parametrize(
    "function",
    [
        sg.Tensor.median,
        sg.Tensor.kthvalue,
        sg.Tensor.cummax,
        sg.Tensor.diag_embed,
        sg.Tensor.rot90,
        sg.Tensor.take,
        sg.Tensor.kron,
        sg.Tensor.dist,
        sg.Tensor.fmod,
        sg.Tensor.erfinv,
        sg.cartesian_prod,
        sg.tensordot,
        sg.cdist,
    ],
    ids=lambda f: f.__name__,
)
def test_doc_examples_run(function):
    assert_doc_examples_run(function)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32"])
def test_diag_embed_keeps_integer_and_bool_dtypes_as_pytorch(dtype):
    x = np.array([[1, 0, 2], [0, 3, 1]]).astype(dtype)
    ours, theirs = sg.tensor(x).diag_embed(1, 0, 2), torch.tensor(x).diag_embed(1, 0, 2)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
