"""vmap over gather and scatter_add with any of their operands batched (the tensor, the index,
the source), against ``torch.func.vmap``: values, gradients through vmap, per-member gradients
(vmap of grad), nested vmaps, in_dims other than 0, and members that are 0-d (which PyTorch
reads as 1-d). Both read their index's values, so vmap runs them on every operand batched."""

import numpy as np
import pytest
import torch
from oracle import assert_close, check_against_torch

import scratchgrad as sg
from scratchgrad.func import grad, vmap

BATCH = 3
RNG = np.random.default_rng(0)
SELF = RNG.standard_normal((BATCH, 4, 5))
INDEX = RNG.integers(0, 4, (BATCH, 2, 5))  # along either dim of a (4, 5) member, with repeats
SOURCE = RNG.standard_normal((BATCH, 2, 5))  # the index's shape (PyTorch's backward needs it)

# which of (self, index, src) are batched (None: one for every member)
IN_DIMS = [
    (0, None, None),
    (None, 0, None),
    (None, None, 0),
    (0, 0, None),
    (0, None, 0),
    (None, 0, 0),
    (0, 0, 0),
]
OPS = {  # a member's call, the same for both libraries
    "gather": lambda x, i, s: x.gather(0, i) * s,
    "gather, dim -1": lambda x, i, s: x.gather(-1, i) - s,
    "scatter_add": lambda x, i, s: x.scatter_add(0, i, s),
    "scatter_add, dim -1": lambda x, i, s: x.scatter_add(-1, i, s),
}


def _arguments(in_dims):
    """Each argument batched, or its first member, as ``in_dims`` says."""
    return [a if d == 0 else a[0] for a, d in zip((SELF, INDEX, SOURCE), in_dims)]


@pytest.mark.parametrize("in_dims", IN_DIMS, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_any_operand_batched_matches_torch_with_gradients(name, in_dims):
    """Values, and the gradients of self and src backpropagated through vmap."""
    op = OPS[name]
    check_against_torch(
        vmap(op, in_dims=in_dims),
        torch.func.vmap(op, in_dims=in_dims),
        _arguments(in_dims),
        what=f"{name} in_dims={in_dims}",
    )


@pytest.mark.parametrize("in_dims", [(None, 0, None), (None, 0, 0), (0, 0, None)], ids=str)
@pytest.mark.parametrize("name", OPS)
def test_per_member_gradients_match_torch(name, in_dims):
    """vmap(grad): each member's gradient of an unbatched or batched self and src."""
    weights = RNG.standard_normal((2, 5) if name.startswith("gather") else (4, 5))

    def loss(m):
        return lambda x, i, s: (OPS[name](x, i, s) * m.tensor(weights)).sum()

    args = _arguments(in_dims)
    ours = vmap(grad(loss(sg), argnums=(0, 2)), in_dims=in_dims)(*map(sg.tensor, args))
    theirs = torch.func.vmap(torch.func.grad(loss(torch), argnums=(0, 2)), in_dims=in_dims)(
        *map(torch.tensor, args)
    )
    for k, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert_close(o, t, "float64", f"vmap(grad) of {name} in_dims={in_dims}: argument {k}")


@pytest.mark.parametrize("name", OPS)
def test_nested_vmaps_and_an_index_batched_along_its_last_dim_match_torch(name):
    """The outer vmap batches the index alone (its last dim), the inner one self."""
    op = OPS[name]
    index = RNG.integers(0, 4, (2, 5, 2))
    selves = RNG.standard_normal((BATCH, 4, 5))
    source = SOURCE[0]

    def run(m, vm):
        inner = vm(op, in_dims=(0, None, None))
        return vm(inner, in_dims=(None, 2, None))(
            m.tensor(selves), m.tensor(index), m.tensor(source)
        )

    assert_close(run(sg, vmap), run(torch, torch.func.vmap), "float64", f"{name} nested")


ZERO_D = {  # members that are 0-d, which PyTorch reads as 1-d
    "gather": lambda x, i: x.gather(0, i),
    "scatter_add": lambda x, i: x.scatter_add(0, i, x * 2),
    "gather into an unbatched 0-d": lambda x, i: (x * 0 + 3.0).gather(0, i),
}


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)], ids=str)
@pytest.mark.parametrize("name", ZERO_D)
def test_0d_members_match_torch(name, in_dims):
    x = RNG.standard_normal(BATCH) if in_dims[0] == 0 else np.array(1.5)
    index = np.zeros(BATCH if in_dims[1] == 0 else (), np.int64)
    check_against_torch(
        vmap(ZERO_D[name], in_dims=in_dims),
        torch.func.vmap(ZERO_D[name], in_dims=in_dims),
        [x, index],
        what=f"{name} in_dims={in_dims}",
    )
