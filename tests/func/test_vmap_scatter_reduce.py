"""vmap over scatter_reduce (every reduce, with and without self) and the legacy
``scatter(..., reduce=)`` with any of their operands batched, against ``torch.func.vmap`` and a
loop: values, gradients through vmap, per-member gradients, nested vmaps, in_dims other than 0
and 0-d members. Both read their index's values, so vmap runs them on every operand batched
(``BatchedTensor._scatter_reduce``). Plus index_fill, whose torch.func.vmap is wrong for a
batched value, against a loop."""

import numpy as np
import pytest
import torch
from oracle import assert_close, check_against_torch

import scratchgrad as sg
from scratchgrad.func import grad, vjp, vmap

BATCH = 3
RNG = np.random.default_rng(0)
SELF = RNG.standard_normal((BATCH, 4, 5))
INDEX = RNG.integers(0, 4, (BATCH, 3, 5))  # along either dim of a (4, 5) member, with repeats
SOURCE = RNG.standard_normal((BATCH, 3, 5))
REDUCES = ["sum", "prod", "mean", "amax", "amin"]

IN_DIMS = [  # which of (self, index, src) are batched (None: one for every member)
    (0, None, None),
    (None, 0, None),
    (None, None, 0),
    (0, 0, None),
    (0, None, 0),
    (None, 0, 0),
    (0, 0, 0),
]


def _reduced(reduce, include_self, dim=0):
    return lambda x, i, s: x.scatter_reduce(dim, i, s, reduce, include_self=include_self)


def _arguments(in_dims):
    return [a if d == 0 else a[0] for a, d in zip((SELF, INDEX, SOURCE), in_dims)]


def _loop(f, arrays, in_dims):
    """f on each member in scratchgrad, stacked."""
    return sg.stack(
        [
            f(*(sg.tensor(a if d is None else np.take(a, k, d)) for a, d in zip(arrays, in_dims)))
            for k in range(BATCH)
        ]
    )


@pytest.mark.parametrize("in_dims", IN_DIMS, ids=str)
@pytest.mark.parametrize("include_self", [True, False], ids=["with self", "without self"])
@pytest.mark.parametrize("reduce", REDUCES)
def test_any_operand_batched_matches_torch_and_a_loop(reduce, include_self, in_dims):
    """Values and the gradients of self and src through vmap (prod's against PyTorch's loop:
    torch.func.vmap cannot differentiate its backward), along dim 0 and dim -1."""
    for dim in (0, -1):
        op = _reduced(reduce, include_self, dim)
        args = _arguments(in_dims)
        theirs = torch.func.vmap(op, in_dims=in_dims)
        if reduce == "prod":
            theirs = lambda *xs, op=op: torch.stack(  # noqa: E731
                [op(*(x if d is None else x[k] for x, d in zip(xs, in_dims))) for k in range(BATCH)]
            )
        what = f"{reduce} include_self={include_self} dim={dim} in_dims={in_dims}"
        out, _ = check_against_torch(vmap(op, in_dims=in_dims), theirs, args, what=what)
        assert_close(out.detach(), _loop(op, args, in_dims), "float64", f"{what} vs a loop")


@pytest.mark.parametrize("in_dims", [(None, 0, None), (0, 0, 0), (None, None, 0)], ids=str)
@pytest.mark.parametrize("reduce", REDUCES)
def test_per_member_gradients_match_torch(reduce, in_dims):
    """vmap(grad): each member's gradient of self and src (prod's against a loop of
    torch.func.grad, as torch.func.vmap cannot batch it)."""
    weights = RNG.standard_normal((4, 5))

    def loss(m):
        return lambda x, i, s: (_reduced(reduce, False)(x, i, s) * m.tensor(weights)).sum()

    args = _arguments(in_dims)
    ours = vmap(grad(loss(sg), argnums=(0, 2)), in_dims=in_dims)(*map(sg.tensor, args))
    per_member = torch.func.grad(loss(torch), argnums=(0, 2))
    if reduce == "prod":
        each = [
            per_member(*(torch.tensor(a if d is None else a[k]) for a, d in zip(args, in_dims)))
            for k in range(BATCH)
        ]
        theirs = [torch.stack(g) for g in zip(*each)]
    else:
        theirs = torch.func.vmap(per_member, in_dims=in_dims)(*map(torch.tensor, args))
    for k, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert_close(o, t, "float64", f"vmap(grad) of {reduce} in_dims={in_dims}: argument {k}")


@pytest.mark.parametrize("reduce", REDUCES)
def test_nested_vmaps_and_an_index_batched_along_its_last_dim(reduce):
    """The outer vmap batches the index alone (its last dim), the inner one self."""
    op = _reduced(reduce, True)
    index = RNG.integers(0, 4, (3, 5, 2))
    source = SOURCE[0]

    def run(m, vm):
        inner = vm(op, in_dims=(0, None, None))
        return vm(inner, in_dims=(None, 2, None))(m.tensor(SELF), m.tensor(index), m.tensor(source))

    assert_close(run(sg, vmap), run(torch, torch.func.vmap), "float64", f"{reduce} nested")


@pytest.mark.parametrize("in_dims", [(0, 0), (0, None), (None, 0)], ids=str)
@pytest.mark.parametrize("reduce", REDUCES)
def test_0d_members_match_torch(reduce, in_dims):
    """Members that are 0-d, which PyTorch reads as 1-d."""
    x = RNG.standard_normal(BATCH) if in_dims[0] == 0 else np.array(1.5)
    index = np.zeros(BATCH if in_dims[1] == 0 else (), np.int64)

    def op(x, i):
        return x.scatter_reduce(0, i, x * 2 - 1, reduce, include_self=False)

    check_against_torch(
        vmap(op, in_dims=in_dims),
        torch.func.vmap(op, in_dims=in_dims),
        [x, index],
        what=f"{reduce} in_dims={in_dims}",
        grad=reduce != "prod",
    )


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")  # deprecated there
@pytest.mark.parametrize("in_dims", IN_DIMS, ids=str)
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_the_legacy_scatter_with_reduce(reduce, in_dims):
    """scatter(..., reduce=) of a tensor source and of a number, any operand batched."""
    args = _arguments(in_dims)
    for what, op in [
        ("a tensor", lambda x, i, s: x.scatter(-1, i, s, reduce=reduce)),
        ("a number", lambda x, i, s: x.scatter(0, i, 2.5, reduce=reduce) + s.sum()),
    ]:
        ours = vmap(op, in_dims=in_dims)(*map(sg.tensor, args))
        theirs = torch.func.vmap(op, in_dims=in_dims)(*map(torch.tensor, args))
        assert_close(ours, theirs, "float64", f"{reduce} of {what} in_dims={in_dims}")
        assert_close(ours, _loop(op, args, in_dims), "float64", f"{reduce} of {what} vs a loop")


def test_the_legacy_scatter_has_no_gradient_under_vmap_either():
    x = sg.tensor(SELF, requires_grad=True)
    out = vmap(lambda x, i, s: x.scatter(0, i, s, reduce="add"))(
        x, sg.tensor(INDEX), sg.tensor(SOURCE)
    )
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        out.sum().backward()


def test_vmapped_vjp_of_a_product_inside_grad_runs_its_guard_batched():
    """vmap over the cotangents of a vjp taken inside grad: the product's gradient is recorded
    (create_graph), so its guard against a second derivative at repeated zeros
    (_FirstOrderOnly) runs on the batch of gradients; the result against PyTorch's."""
    index = RNG.integers(0, 4, (3, 5))
    cotangents = RNG.standard_normal((BATCH, 4, 5))

    def outer(m, vmap_of, vjp_of, grad_of):
        def of_x(x):
            _, vjp_fn = vjp_of(
                lambda x: x.scatter_reduce(0, m.tensor(index), x[:3] ** 2, "prod"), x
            )
            return vmap_of(vjp_fn)(m.tensor(cotangents))[0].square().sum()

        return grad_of(of_x)(m.tensor(SELF[0]))

    ours = outer(sg, vmap, vjp, grad)
    theirs = outer(torch, torch.func.vmap, torch.func.vjp, torch.func.grad)
    assert_close(ours, theirs, "float64", "grad of vmap(vjp_fn) through scatter_reduce prod")


@pytest.mark.parametrize("in_dims", [(0, None), (None, 0), (0, 0)], ids=str)
def test_index_fill_with_a_batched_value_matches_a_loop(in_dims):
    """index_fill batches through its building blocks; torch.func.vmap fills every member with
    the last member's value where the value is batched (so the op table's row says
    vmap=False), and is the reference only where it is not."""
    x, v = RNG.standard_normal((BATCH, 2, 3)), RNG.standard_normal((BATCH,))

    def op(x, v):
        return x.index_fill(-1, x.new_tensor([0, 2, 0]).long(), v)

    arrays = [a if d == 0 else a[0] for a, d in zip((x, v), in_dims)]
    ours = vmap(op, in_dims=in_dims)(*map(sg.tensor, arrays))
    assert_close(ours, _loop(op, arrays, in_dims), "float64", f"index_fill {in_dims} vs a loop")
    if in_dims[1] is None:
        theirs = torch.func.vmap(op, in_dims=in_dims)(*map(torch.tensor, arrays))
        assert_close(ours, theirs, "float64", f"index_fill {in_dims} vs torch.func.vmap")
    per_member = vmap(grad(lambda x, v: op(x, v).square().sum(), argnums=1), in_dims=in_dims)(
        *map(sg.tensor, arrays)
    )
    loop = _loop(grad(lambda x, v: op(x, v).square().sum(), argnums=1), arrays, in_dims)
    assert_close(per_member, loop, "float64", f"index_fill {in_dims}: vmap(grad) vs a loop")
