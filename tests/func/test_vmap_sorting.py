"""vmap over the ops that find indices from the values (median, kthvalue, cummax, cummin, sort,
argsort, topk): values, indices and gradients against ``torch.func.vmap`` with the batch dim in
each position, nested, over 0-d members, composed with grad, jacrev and vjp; at ties and NaN,
cummax's and cummin's indices as PyTorch's, and median's and kthvalue's as our documented
choice (the one at their place in a stable sort, which PyTorch's may differ from)."""

import numpy as np
import pytest
import torch
from oracle import assert_close, check_against_torch, same_dtype

import scratchgrad as sg
from scratchgrad.func import grad, jacrev, vjp, vmap

BATCH = 3
MEMBER = (3, 4)

# name -> call(m, x) for both libraries, on a member of shape MEMBER: (values, indices, ...)
CASES = {
    "median_all": lambda m, x: (m.median(x),),
    "median_dim": lambda m, x: (*m.median(x, 0), *x.median(-1, keepdim=True)),
    "kthvalue": lambda m, x: (*m.kthvalue(x, 2, 1), *x.kthvalue(1, 0, keepdim=True)),
    "cummax": lambda m, x: (*m.cummax(x, 0), *x.cummax(-1)),
    "cummin": lambda m, x: (*m.cummin(x, 1), *x.cummin(-2)),
    "sort": lambda m, x: (*x.sort(0, descending=True), *m.sort(x, -1)),
    "argsort": lambda m, x: (m.argsort(x, 1, descending=True), x.argsort(0)),
    "topk": lambda m, x: (*x.topk(2, 0), *m.topk(x, 1, -1, largest=False)),
}
DIFFERENTIABLE = [name for name in CASES if name != "argsort"]  # argsort gives indices only


def _distinct(shape, seed=0):
    """Values at least 0.1 apart: no ties, so every index is determined."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n) - n * 0.05).reshape(shape)


def _floating(outs):
    """The values among a case's outputs (the indices carry no gradient)."""
    return [o for o in outs if o.is_floating_point()]


def _joined(m, call):
    """A case's values as one vector, for grad and jacrev."""
    return lambda x: m.cat([o.reshape(-1) for o in _floating(call(m, x))])


@pytest.mark.parametrize("in_dim", [0, 1, -1])
@pytest.mark.parametrize("name", CASES)
def test_values_indices_and_gradients_match_torch_func_vmap(name, in_dim):
    """The batch dim first, in the middle and last; the gradient through vmap too."""
    call = CASES[name]
    shape = list(MEMBER)
    shape.insert(in_dim % (len(MEMBER) + 1), BATCH)
    check_against_torch(
        vmap(lambda x: call(sg, x), in_dims=in_dim),
        torch.func.vmap(lambda x: call(torch, x), in_dims=in_dim),
        [_distinct(shape)],
        what=f"{name} in_dims={in_dim}",
    )


@pytest.mark.parametrize("name", CASES)
def test_nested_vmap_matches_torch(name):
    """vmap(vmap(f)) over (2, *MEMBER, BATCH): the inner batch dim is the last one."""
    call = CASES[name]
    x = _distinct((2, *MEMBER, BATCH), seed=1)
    inner = len(MEMBER)
    ours = vmap(vmap(lambda x: call(sg, x), in_dims=inner))(sg.tensor(x))
    theirs = torch.func.vmap(torch.func.vmap(lambda x: call(torch, x), in_dims=inner))(
        torch.tensor(x)
    )
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert same_dtype(o, t), f"{name} nested: output {i} is {o.dtype}"
        assert_close(o, t, "float64", f"{name} nested: output {i}")


# PyTorch's warning that it loops over cummax's backward, which has no batching rule there
@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")
@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_per_member_gradients_and_jacobians_match_torch(name):
    """vmap(grad), vmap(jacrev) and jacrev(vmap) of the values, against torch.func's."""
    call = CASES[name]
    x = _distinct((BATCH, *MEMBER), seed=2)
    ours, theirs = _joined(sg, call), _joined(torch, call)
    weights = np.random.default_rng(3).standard_normal(ours(sg.tensor(x[0])).shape)

    def loss(m, f):
        return lambda x: (f(x) * m.tensor(weights)).sum()

    pairs = [
        (vmap(grad(loss(sg, ours))), torch.func.vmap(torch.func.grad(loss(torch, theirs)))),
        (vmap(jacrev(ours)), torch.func.vmap(torch.func.jacrev(theirs))),
        (jacrev(vmap(ours)), torch.func.jacrev(torch.func.vmap(theirs))),
    ]
    for i, (o, t) in enumerate(pairs):
        assert_close(o(sg.tensor(x)), t(torch.tensor(x)), "float64", f"{name}: transform {i}")


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_vmapped_vjp_matches_torch_vjp_on_each_cotangent(name):
    """vmap over vjp_fn's cotangents of the values: the backward formulas run batched."""
    call = CASES[name]
    x = _distinct(MEMBER, seed=4)
    out, vjp_fn = vjp(_joined(sg, call), sg.tensor(x))
    _, t_vjp_fn = torch.func.vjp(_joined(torch, call), torch.tensor(x))
    cotangents = np.random.default_rng(5).standard_normal((BATCH, *out.shape))
    (ours,) = vmap(vjp_fn)(sg.tensor(cotangents))
    theirs = torch.stack([t_vjp_fn(torch.tensor(c))[0] for c in cotangents])
    assert_close(ours, theirs, "float64", f"{name}: vmap(vjp_fn)")


SCALAR_CASES = {  # on 0-d members: each is its own median, top 1, running maximum
    "median_all": lambda m, x: (m.median(x),),
    "median_dim": lambda m, x: tuple(x.median(0, keepdim=True)),
    "kthvalue": lambda m, x: tuple(m.kthvalue(x, 1, -1)),
    "cummax": lambda m, x: tuple(m.cummax(x, 0)),
    "cummin": lambda m, x: tuple(x.cummin(-1)),
    "sort": lambda m, x: tuple(x.sort(descending=True)),
    "argsort": lambda m, x: (m.argsort(x, 0),),
    "topk": lambda m, x: tuple(x.topk(1)),
}


@pytest.mark.parametrize("name", SCALAR_CASES)
def test_0d_members_match_torch(name):
    call = SCALAR_CASES[name]
    check_against_torch(
        vmap(lambda x: call(sg, x)),
        torch.func.vmap(lambda x: call(torch, x)),
        [np.array([0.5, -1.0, 2.0])],
        what=f"{name} on 0-d members",
    )


NAN = float("nan")
# rows with ties and NaN: a repeated running maximum (minimum), a tied median, NaN first and late
TIED = np.array(
    [
        [1.0, 3.0, 3.0, 2.0, 1.0, 0.0],
        [2.0, 1.0, 2.0, 1.0, 5.0, 5.0],
        [1.0, NAN, 2.0, NAN, 0.5, 0.5],
        [NAN, NAN, 1.0, 1.0, 1.0, 4.0],
    ]
)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_running_extremes_at_ties_and_nan_match_torch(name):
    """The last of equal entries, and a NaN from where one is met, as PyTorch's."""
    ours = vmap(lambda x: getattr(x, name)(0))(sg.tensor(TIED))
    theirs = torch.func.vmap(lambda x: getattr(x, name)(0))(torch.tensor(TIED))
    assert_close(ours.values, theirs.values, "float64", f"{name} values")
    assert ours.indices.tolist() == theirs.indices.tolist()


def _stable_pick(k):
    """Each row's index at place ``k`` (from 0) of a stable sort, NaN last: the pick at ties
    that median's and kthvalue's doc strings give."""
    return np.argsort(TIED, axis=1, kind="stable")[:, k].tolist()


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda m, x: m.median(x, 0), [*_stable_pick(2)[:2], 1, 0]),  # NaN rows: the first NaN
        (lambda m, x: x.kthvalue(2, 0), None),  # None: PyTorch's pick (its quickselect's)
        (lambda m, x: m.kthvalue(x, 5, -1), None),
    ],
    ids=["median", "kthvalue_2", "kthvalue_5"],
)
def test_order_statistics_at_ties_and_nan(call, expected):
    """The values as PyTorch's; among ties the index is median's documented pick, which
    PyTorch's may differ from, and kthvalue's PyTorch's, the one each member gets unbatched
    too; over NaN, median's is the first NaN's (as PyTorch's: tests/test_torch_more.py)."""
    ours = vmap(lambda x: call(sg, x))(sg.tensor(TIED))
    theirs = torch.func.vmap(lambda x: call(torch, x))(torch.tensor(TIED))
    assert_close(ours.values, theirs.values, "float64", "values")
    if expected is None:
        expected = theirs.indices.tolist()
    assert ours.indices.tolist() == expected
    assert [int(call(sg, sg.tensor(row)).indices) for row in TIED] == expected
