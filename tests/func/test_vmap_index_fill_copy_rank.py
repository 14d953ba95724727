"""vmap over ``index_fill`` and ``index_copy`` with a batched index (and a batched tensor), and
over ``linalg.matrix_rank`` and ``linalg.lstsq`` with a batched matrix: against
``torch.func.vmap`` and a loop over the members, with per-member gradients."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg
from scratchgrad.func import grad, vmap

BATCH = 3
RNG = np.random.default_rng(0)
# member: x (3, 4); index (2,) along dim 1 (negative, repeated); source (3, 2)
X = RNG.standard_normal((BATCH, 3, 4))
INDEX = np.array([[0, -1], [2, 2], [-4, 1]])
SOURCE = RNG.standard_normal((BATCH, 3, 2))

CASES = {
    "index_fill": (lambda m, x, i, s: x.index_fill(1, i, -2.5), INDEX % 4),
    "index_fill, negative": (lambda m, x, i, s: x.index_fill(-1, i, -2.5), INDEX),
    "index_fill, a 0-d tensor value": (
        lambda m, x, i, s: x.index_fill(1, i, s.sum() * 0 + s[0, 0]),
        INDEX % 4,
    ),
    "index_copy": (lambda m, x, i, s: x.index_copy(1, i, s), INDEX % 4),
    "index_copy, dim 0": (
        lambda m, x, i, s: x.mT.index_copy(0, i, s.mT),
        np.array([[3, 0], [1, 1], [2, 0]]),
    ),
}
# where torch.func is not the reference, PyTorch's function on each member is: its vmap of
# index_fill with a batched index fills a negative entry in the member before (PyTorch 2.13,
# members of size 4: member 1's -1 fills member 0's position 3, member 0's the last member's),
# and its vmap(grad) through a batched 0-d value raises ("stack expects each tensor to be
# equal size")
TORCH_LOOPS = {"index_fill, negative", "index_fill, a 0-d tensor value"}


def _members(arrays, in_dims, k):
    return [a if d is None else a[k] for a, d in zip(arrays, in_dims)]


def _torch_reference(name, f, arrays, in_dims):
    """torch.func.vmap(f) on the arrays, or PyTorch's f on each member, stacked."""
    if name not in TORCH_LOOPS:
        return torch.func.vmap(f, in_dims=in_dims)(*map(torch.tensor, arrays))
    outs = [f(*map(torch.tensor, _members(arrays, in_dims, k))) for k in range(BATCH)]
    if isinstance(outs[0], tuple):
        return tuple(torch.stack(column) for column in zip(*outs))
    return torch.stack(outs)


@pytest.mark.parametrize("in_dims", [(0, 0, 0), (0, 0, None), (0, None, 0), (0, None, None)])
@pytest.mark.parametrize("name", CASES)
def test_batched_index_fill_and_index_copy_match_torch_and_a_loop(name, in_dims):
    call, index = CASES[name]
    arrays = [a if d == 0 else a[0] for a, d in zip((X, index, SOURCE), in_dims)]
    ours = vmap(lambda *xs: call(sg, *xs), in_dims=in_dims)(*map(sg.tensor, arrays))
    theirs = _torch_reference(name, lambda *xs: call(torch, *xs), arrays, in_dims)
    assert_close(ours, theirs, what=f"{name} in_dims={in_dims} vs PyTorch")
    loop = [call(sg, *map(sg.tensor, _members(arrays, in_dims, k))) for k in range(BATCH)]
    assert_close(ours, sg.stack(loop).numpy(), what=f"{name} in_dims={in_dims} vs a loop")


@pytest.mark.parametrize("name", CASES)
def test_per_member_gradients_through_a_batched_index(name):
    """vmap(grad) of the tensor and the source: a repeated position's value (fill) or last
    slice (copy) stays, and every repeat's slice of the source gets the gradient there."""
    call, index = CASES[name]
    out = call(torch, *(torch.tensor(a[0]) for a in (X, index, SOURCE)))
    weights = RNG.standard_normal(tuple(out.shape))

    def loss(m):
        return lambda x, i, s: (call(m, x, i, s) * m.tensor(weights)).sum()

    arrays, in_dims = (X, index, SOURCE), (0, 0, 0)
    ours = vmap(grad(loss(sg), argnums=(0, 2)))(*map(sg.tensor, arrays))
    theirs = _torch_reference(name, torch.func.grad(loss(torch), argnums=(0, 2)), arrays, in_dims)
    for k in range(2):
        assert_close(ours[k], theirs[k], what=f"{name}: gradient {k}")


def test_a_negative_index_fills_its_own_member_where_torchs_vmap_fills_the_one_before():
    """docs/func.md's account of PyTorch 2.13's vmap of index_fill (the reason this file
    compares with a loop there): each member's -1 is its own last position here."""
    index = [[-1], [1], [-2]]
    loop = [torch.zeros(4).index_fill(0, torch.tensor(i), 1.0) for i in index]
    ours = vmap(lambda x, i: x.index_fill(0, i, 1.0))(sg.zeros(3, 4), sg.tensor(index))
    assert ours.tolist() == torch.stack(loop).tolist()
    theirs = torch.func.vmap(lambda x, i: x.index_fill(0, i, 1.0))(
        torch.zeros(3, 4), torch.tensor(index)
    )
    assert theirs.tolist() == [[0, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]]


def test_a_members_index_out_of_range_raises_pytorchs_index_error():
    index = sg.tensor([[0, 1], [1, 4], [0, 0]])
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        vmap(lambda x, i: x.index_fill(1, i, 0.0))(sg.tensor(X), index)
    with pytest.raises(IndexError, match=r"index_copy_\(\): index 4 is out of bounds"):
        vmap(lambda x, i, s: x.index_copy(1, i, s))(sg.tensor(X), index, sg.tensor(SOURCE))


def test_checks_of_shapes_and_dtypes_are_tensors_own():
    x, index = sg.tensor(X), sg.tensor(INDEX)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        vmap(lambda x, i: x.index_fill(1, i, x[0]))(x, index)
    with pytest.raises(RuntimeError, match="must have same slice shapes"):
        vmap(lambda x, i, s: x.index_copy(1, i, s[:2]))(x, index, sg.tensor(SOURCE))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, i: x.index_fill(0, i, 4.0),
        lambda m, x, i: x.index_copy(0, i % 1, x.reshape(1) * 3),
    ],
    ids=["index_fill", "index_copy"],
)
def test_a_0d_member_acts_as_a_vector_of_one(call):
    x, index = RNG.standard_normal(BATCH), np.array([[0], [-1], [0]])
    ours = vmap(lambda *xs: call(sg, *xs))(sg.tensor(x), sg.tensor(index))
    theirs = torch.func.vmap(lambda *xs: call(torch, *xs))(torch.tensor(x), torch.tensor(index))
    assert_close(ours, theirs, what="0-d members")


@pytest.mark.parametrize(
    "call",
    [
        lambda m, i, s: m.tensor(X[0]).index_fill(1, i, 0.0),
        lambda m, i, s: m.tensor(X[0]).index_copy(1, i, m.tensor(X[0])[:, :2]),
        lambda m, i, s: m.tensor(X[0]).index_copy(1, m.tensor([3, 0]), s),
    ],
    ids=["index_fill_batched_index", "index_copy_batched_index", "index_copy_batched_source"],
)
def test_an_unbatched_tensor_with_a_batched_index_or_source(call):
    index, source = INDEX[:, :2] % X.shape[2], X[:, :, :2]
    ours = vmap(lambda *xs: call(sg, *xs))(sg.tensor(index), sg.tensor(source))
    theirs = torch.func.vmap(lambda *xs: call(torch, *xs))(
        torch.tensor(index), torch.tensor(source)
    )
    assert_close(ours, theirs, what="an unbatched tensor")


def _rank_deficient():
    """Members of rank 1, 2 and 3: (4, 3) products of (4, r) and (r, 3) factors."""
    return np.stack([RNG.standard_normal((4, r)) @ RNG.standard_normal((r, 3)) for r in (1, 2, 3)])


@pytest.mark.parametrize(
    "options", [{}, {"hermitian": True}, {"atol": 0.5}, {"rtol": 0.3}], ids=str
)
def test_matrix_rank_of_a_batched_matrix(options):
    a = _rank_deficient()
    if options.get("hermitian"):
        a = a @ np.swapaxes(a, -1, -2)
    ours = vmap(lambda a: sg.linalg.matrix_rank(a, **options))(sg.tensor(a))
    theirs = torch.func.vmap(lambda a: torch.linalg.matrix_rank(a, **options))(torch.tensor(a))
    assert ours.dtype == sg.int64
    assert ours.tolist() == theirs.tolist()
    assert ours.tolist() == [sg.linalg.matrix_rank(sg.tensor(m), **options).item() for m in a]


def test_lstsq_of_a_batched_matrix_and_its_per_member_gradients():
    a, b = RNG.standard_normal((BATCH, 5, 3)), RNG.standard_normal((BATCH, 5, 2))

    def solution(m):
        return lambda a, b: m.linalg.lstsq(a, b).solution

    for in_dims in [(0, 0), (0, None)]:
        args = [x if d == 0 else x[0] for x, d in zip((a, b), in_dims)]
        ours = vmap(solution(sg), in_dims=in_dims)(*map(sg.tensor, args))
        theirs = torch.func.vmap(solution(torch), in_dims=in_dims)(*map(torch.tensor, args))
        assert_close(ours, theirs, what=f"lstsq in_dims={in_dims}")
    ours = vmap(grad(lambda a, b: solution(sg)(a, b).square().sum(), argnums=(0, 1)))(
        sg.tensor(a), sg.tensor(b)
    )
    theirs = torch.func.vmap(
        torch.func.grad(lambda a, b: solution(torch)(a, b).square().sum(), argnums=(0, 1))
    )(torch.tensor(a), torch.tensor(b))
    for k in range(2):
        assert_close(ours[k], theirs[k], what=f"lstsq: vmap(grad) of input {k}")
