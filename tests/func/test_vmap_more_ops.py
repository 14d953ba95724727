"""vmap over the ops that read values directly instead of through a Function: the elementwise
tests (isnan, isinf, isfinite, logical_not, ~) and nan_to_num built on them, diag of a vector
and scatter (which write into a new tensor), searchsorted and bucketize (which read several
operands, any of them batched). Values, dtypes and gradients (through vmap, vmap(grad) and
vmapped vjp) against ``torch.func.vmap``, with the batch dim in each position and nested."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch, check_against_torch, same_dtype

import scratchgrad as sg
from scratchgrad.func import grad, vjp, vmap

BATCH = 3
NAN, INF = float("nan"), float("inf")


def _special(shape, seed=0):
    """Normal values with NaN, +inf and -inf sprinkled in (a fifth of the entries each)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    kinds = rng.integers(0, 5, shape)
    x[kinds == 0], x[kinds == 1], x[kinds == 2] = NAN, INF, -INF
    return x


def _both(ours, theirs, arrays, in_dims=0):
    """vmap of ``ours`` and torch.func.vmap of ``theirs`` on the same arrays."""
    return (
        vmap(ours, in_dims=in_dims)(*(sg.tensor(a) for a in arrays)),
        torch.func.vmap(theirs, in_dims=in_dims)(*(torch.tensor(a) for a in arrays)),
    )


def _assert_same(ours, theirs, what):
    """Outputs (a tensor or a tuple) equal PyTorch's in dtype and value (NaN where NaN)."""
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs), what
    for i, (o, t) in enumerate(zip(ours, theirs)):
        assert same_dtype(o, t), f"{what}: output {i} is {o.dtype}, PyTorch's {t.dtype}"
        assert_close(o, t, "float64", f"{what}: output {i}")


def _batched_shape(member, in_dim):
    shape = list(member)
    shape.insert(in_dim % (len(member) + 1), BATCH)
    return tuple(shape)


# ---- elementwise tests and nan_to_num -----------------------------------------------------------

TESTS = {  # name -> call(m, x), through the function and the method
    "isnan": lambda m, x: (m.isnan(x), x.isnan()),
    "isinf": lambda m, x: (m.isinf(x), x.isinf()),
    "isfinite": lambda m, x: (m.isfinite(x), x.isfinite()),
    "logical_not": lambda m, x: (m.logical_not(x), x.logical_not(), m.logical_not(x > 0)),
    "invert": lambda m, x: (~(x > 0), ~m.isnan(x)),
    "composed": lambda m, x: (x.isnan().logical_not() & ~x.isinf() & x.isfinite(),),
}


@pytest.mark.parametrize("in_dim", [0, 1, -1])
@pytest.mark.parametrize("name", TESTS)
def test_elementwise_tests_match_torch(name, in_dim):
    call = TESTS[name]
    x = _special(_batched_shape((2, 4), in_dim))
    ours, theirs = _both(lambda x: call(sg, x), lambda x: call(torch, x), [x], in_dim)
    _assert_same(ours, theirs, f"{name} in_dims={in_dim}")


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "logical_not"])
def test_elementwise_tests_of_integers_and_0d_members_match_torch(name):
    call = TESTS[name]
    integers = np.arange(-3, 3).reshape(BATCH, 2)
    _assert_same(*_both(lambda x: call(sg, x), lambda x: call(torch, x), [integers]), name)
    scalars = np.array([NAN, INF, 0.0])
    _assert_same(*_both(lambda x: call(sg, x), lambda x: call(torch, x), [scalars]), name)


@pytest.mark.parametrize("name", TESTS)
def test_nested_elementwise_tests_match_torch(name):
    call = TESTS[name]
    x = _special((2, 4, BATCH), seed=1)
    ours = vmap(vmap(lambda x: call(sg, x), in_dims=1))(sg.tensor(x))
    theirs = torch.func.vmap(torch.func.vmap(lambda x: call(torch, x), in_dims=1))(torch.tensor(x))
    _assert_same(ours, theirs, f"{name} nested")


NAN_TO_NUM = {  # name -> call(m, x)
    "defaults": lambda m, x: m.nan_to_num(x),
    "given": lambda m, x: x.nan_to_num(nan=1.5, posinf=9.0, neginf=-7.0),
    "neginf": lambda m, x: m.nan_to_num(x * 2, neginf=-5.0),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("in_dim", [0, -1])
@pytest.mark.parametrize("name", NAN_TO_NUM)
def test_nan_to_num_values_and_gradient_through_vmap_match_torch(name, in_dim, dtype):
    """The dtype's largest numbers by default (float32's too), and the gradient passing where
    the input was finite."""
    call = NAN_TO_NUM[name]
    check_against_torch(
        vmap(lambda x: call(sg, x), in_dims=in_dim),
        torch.func.vmap(lambda x: call(torch, x), in_dims=in_dim),
        [_special(_batched_shape((2, 4), in_dim), seed=2)],
        dtype,
        what=f"nan_to_num {name} in_dims={in_dim}",
    )


def test_nan_to_num_of_integers_and_nested_match_torch():
    integers = np.arange(6).reshape(BATCH, 2)
    _assert_same(*_both(sg.nan_to_num, torch.nan_to_num, [integers]), "integers")
    x = _special((2, 4, BATCH), seed=3)
    ours = vmap(vmap(lambda x: x.nan_to_num(neginf=-2.0), in_dims=1))(sg.tensor(x))
    theirs = torch.func.vmap(torch.func.vmap(lambda x: x.nan_to_num(neginf=-2.0), in_dims=1))(
        torch.tensor(x)
    )
    _assert_same(ours, theirs, "nested")


# ---- diag and scatter: written into a new tensor ---------------------------------------------

# name -> (call(m, x), one member's shape)
WRITTEN = {
    "diag": (lambda m, x: m.diag(x), (4,)),
    "diag_above": (lambda m, x: x.diag(2), (3,)),
    "diag_below": (lambda m, x: m.diag(x * 2, -1), (4,)),
    "diag_of_a_matrix": (lambda m, x: m.diag(x, 1), (3, 4)),
    "scatter_rows": (lambda m, x: x.scatter(0, m.tensor([[2, 0, 1, 2]]), x[:1] * 2), (3, 4)),
    "scatter_columns": (
        lambda m, x: m.scatter(x, -1, m.tensor([[3, 1], [0, 2], [1, 1]]), 0.5),
        (3, 4),
    ),
    "scatter_into_zeros": (
        lambda m, x: m.zeros(2, 5, dtype=x.dtype).scatter(1, m.tensor([[4, 0, 2], [1, 3, 0]]), x),
        (2, 3),
    ),
}


@pytest.mark.parametrize("in_dim", [0, 1, -1])
@pytest.mark.parametrize("name", WRITTEN)
def test_written_values_and_gradients_through_vmap_match_torch(name, in_dim):
    call, member = WRITTEN[name]
    check_against_torch(
        vmap(lambda x: call(sg, x), in_dims=in_dim),
        torch.func.vmap(lambda x: call(torch, x), in_dims=in_dim),
        [np.random.default_rng(4).standard_normal(_batched_shape(member, in_dim))],
        what=f"{name} in_dims={in_dim}",
    )


@pytest.mark.parametrize("name", WRITTEN)
def test_written_per_member_gradients_vmapped_vjp_and_nesting_match_torch(name):
    """vmap(grad), vmap over vjp_fn's cotangents (the backward runs batched) and vmap(vmap)."""
    call, member = WRITTEN[name]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((BATCH, *member))
    out_shape = tuple(call(torch, torch.zeros(member)).shape)
    weights = rng.standard_normal(out_shape)

    def loss(m):
        return lambda x: (call(m, x) * m.tensor(weights)).sum()

    ours = vmap(grad(loss(sg)))(sg.tensor(x))
    theirs = torch.func.vmap(torch.func.grad(loss(torch)))(torch.tensor(x))
    assert_close(ours, theirs, "float64", f"{name}: vmap(grad)")

    _, vjp_fn = vjp(lambda x: call(sg, x), sg.tensor(x[0]))
    _, t_vjp_fn = torch.func.vjp(lambda x: call(torch, x), torch.tensor(x[0]))
    cotangents = rng.standard_normal((BATCH, *out_shape))
    (ours,) = vmap(vjp_fn)(sg.tensor(cotangents))
    (theirs,) = torch.func.vmap(t_vjp_fn)(torch.tensor(cotangents))
    assert_close(ours, theirs, "float64", f"{name}: vmap(vjp_fn)")

    nested = rng.standard_normal((2, *member, BATCH))
    ours = vmap(vmap(lambda x: call(sg, x), in_dims=len(member)))(sg.tensor(nested))
    theirs = torch.func.vmap(torch.func.vmap(lambda x: call(torch, x), in_dims=len(member)))(
        torch.tensor(nested)
    )
    _assert_same(ours, theirs, f"{name} nested")


def _scatter_index(batched, seed=6):
    """Indices into dim 1 of a (3, 4) tensor, distinct along each row (no position written
    twice), of shape (3, 2); a batch of them when ``batched``."""
    rng = np.random.default_rng(seed)
    count = BATCH if batched else 1
    index = np.stack([np.stack([rng.permutation(4)[:2] for _ in range(3)]) for _ in range(count)])
    return index if batched else index[0]


# which of (self, index, src) are batched (None: one for every member)
SCATTER_IN_DIMS = [
    (0, None, None),
    (None, 0, None),
    (None, None, 0),
    (0, 0, None),
    (0, None, 0),
    (None, 0, 0),
    (0, 0, 0),
]


@pytest.mark.parametrize("in_dims", SCATTER_IN_DIMS, ids=str)
def test_scatter_with_any_operand_batched_matches_torch(in_dims):
    """self (3, 4), index (3, 2) along dim 1: values and the gradients of self and src through
    vmap; and a src larger than the index (3, 3), as PyTorch allows, the values only (its
    backward refuses such a src, even unbatched)."""
    rng = np.random.default_rng(7)
    self_dim, index_dim, src_dim = in_dims
    x = rng.standard_normal((BATCH, 3, 4) if self_dim == 0 else (3, 4))
    index = _scatter_index(index_dim == 0)
    for width in [2, 3]:
        src = rng.standard_normal((BATCH, 3, width) if src_dim == 0 else (3, width))
        check_against_torch(
            vmap(lambda x, i, s: x.scatter(1, i, s), in_dims=in_dims),
            torch.func.vmap(lambda x, i, s: x.scatter(1, i, s), in_dims=in_dims),
            [x, index, src],
            what=f"scatter in_dims={in_dims}, src width {width}",
            grad=width == 2,
        )


@pytest.mark.parametrize("in_dims", [(0, None), (None, 0), (0, 0)], ids=str)
def test_scatter_of_a_number_and_per_member_gradients_match_torch(in_dims):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((BATCH, 3, 4) if in_dims[0] == 0 else (3, 4))
    index = _scatter_index(in_dims[1] == 0)
    check_against_torch(
        vmap(lambda x, i: sg.scatter(x, -1, i, 2.5), in_dims=in_dims),
        torch.func.vmap(lambda x, i: torch.scatter(x, -1, i, 2.5), in_dims=in_dims),
        [x, index],
        what=f"scatter of a number in_dims={in_dims}",
    )
    src = rng.standard_normal((3, 2))
    weights = rng.standard_normal((3, 4))

    def loss(m):
        return lambda x, i, s: (x.scatter(1, i, s) * m.tensor(weights)).sum()

    args = (x, index, src)
    ours = vmap(grad(loss(sg), argnums=(0, 2)), in_dims=(*in_dims, None))(*map(sg.tensor, args))
    theirs = torch.func.vmap(
        torch.func.grad(loss(torch), argnums=(0, 2)), in_dims=(*in_dims, None)
    )(*map(torch.tensor, args))
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert_close(o, t, "float64", f"vmap(grad) of scatter in_dims={in_dims}: argument {i}")


def test_one_hot_rows_by_scatter_into_zeros_match_torch():
    """The common use: an unbatched zeros, a batched label."""
    labels = np.array([[2], [0], [3]])
    _assert_same(
        *_both(
            lambda i: sg.zeros(4).scatter(0, i, 1.0),
            lambda i: torch.zeros(4).scatter(0, i, 1.0),
            [labels],
        ),
        "one-hot",
    )


@pytest.mark.parametrize("batched", ["self", "index"])
def test_scatter_errors_under_vmap_match_torch(batched):
    """An index out of range and an index of the wrong rank raise, as torch.func.vmap's."""

    def run(m, index):
        x = np.zeros((BATCH, 3)) if batched == "self" else np.zeros(3)
        in_dims = (0, None) if batched == "self" else (None, 0)
        i = np.array(index if batched == "self" else [index] * BATCH)
        vm = torch.func.vmap if m is torch else vmap
        return vm(lambda x, i: x.scatter(0, i, 1.0), in_dims=in_dims)(m.tensor(x), m.tensor(i))

    assert_raises_as_torch(lambda m: run(m, [5]), RuntimeError, "index 5 is out of bounds")
    assert_raises_as_torch(lambda m: run(m, [[0]]), RuntimeError, "same number of dimensions")


# ---- searchsorted and bucketize -------------------------------------------------------------


def _halves(shape, seed):
    """Multiples of 0.5 in [-2, 2], so that values meet boundaries exactly (left and right
    differ), and a NaN (which goes after every boundary)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, shape) / 2
    x.reshape(-1)[0] = NAN
    return x


def _sorted_halves(shape, seed):
    """Sorted boundaries, without NaN: where NaN is among the boundaries, PyTorch's binary
    search answers by the path it takes, which ours (NaN sorted last) does not follow,
    batched or not."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.integers(-4, 5, shape) / 2, axis=-1)


# name -> (call(m, boundaries, values), one member's boundaries' shape, values' shape)
SEARCHES = {
    "vector": (lambda m, b, v: m.searchsorted(b, v), (6,), (2, 3)),
    "vector_right": (lambda m, b, v: m.searchsorted(b, v, right=True), (6,), (2, 3)),
    "vector_side": (lambda m, b, v: m.searchsorted(b, v, side="right", out_int32=True), (6,), (4,)),
    "vector_0d_value": (lambda m, b, v: m.searchsorted(b, v), (6,), ()),
    "rows": (lambda m, b, v: m.searchsorted(b, v), (2, 5), (2, 3)),
    "rows_right_int32": (
        lambda m, b, v: m.searchsorted(b, v, right=True, out_int32=True),
        (2, 2, 5),
        (2, 2, 3),
    ),
    "bucketize": (lambda m, b, v: m.bucketize(v, b), (6,), (2, 3)),
    "bucketize_right_int32": (
        lambda m, b, v: m.bucketize(v, b, right=True, out_int32=True),
        (5,),
        (4,),
    ),
}


@pytest.mark.parametrize("in_dims", [(0, None), (None, 0), (0, 0), (-1, 0), (0, -1)], ids=str)
@pytest.mark.parametrize("name", SEARCHES)
def test_searches_with_either_or_both_batched_match_torch(name, in_dims):
    call, b_member, v_member = SEARCHES[name]
    b_dim, v_dim = in_dims
    b = _sorted_halves(b_member if b_dim is None else (BATCH, *b_member), seed=9)
    if b_dim == -1:  # the batch dim last: boundaries sorted along their own last dim first
        b = np.moveaxis(b, 0, -1)
    v = _halves(v_member if v_dim is None else _batched_shape(v_member, v_dim), seed=10)
    ours, theirs = _both(
        lambda b, v: call(sg, b, v), lambda b, v: call(torch, b, v), [b, v], in_dims
    )
    _assert_same(ours, theirs, f"{name} in_dims={in_dims}")


@pytest.mark.parametrize("name", SEARCHES)
def test_nested_searches_match_torch(name):
    """The outer vmap over the values and the inner over both; the outer over the boundaries
    and the inner over the values."""
    call, b_member, v_member = SEARCHES[name]
    cases = [  # (outer in_dims, inner in_dims, boundaries' shape, values' shape)
        ((None, 0), (0, 0), (BATCH, *b_member), (2, BATCH, *v_member)),
        ((0, None), (None, 0), (2, *b_member), (BATCH, *v_member)),
    ]
    for outer, inner, b_shape, v_shape in cases:
        b, v = _sorted_halves(b_shape, seed=11), _halves(v_shape, seed=12)
        ours = vmap(vmap(lambda b, v: call(sg, b, v), in_dims=inner), in_dims=outer)(
            sg.tensor(b), sg.tensor(v)
        )
        theirs = torch.func.vmap(
            torch.func.vmap(lambda b, v: call(torch, b, v), in_dims=inner), in_dims=outer
        )(torch.tensor(b), torch.tensor(v))
        _assert_same(ours, theirs, f"{name} nested, in_dims {outer} then {inner}")


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("value", [0.5, 1, -3.0])
def test_search_for_a_number_in_batched_boundaries_matches_torch(value, right):
    _assert_same(
        *_both(
            lambda b: sg.searchsorted(b, value, right=right),
            lambda b: torch.searchsorted(b, value, right=right),
            [_sorted_halves((BATCH, 6), seed=13)],
        ),
        f"searchsorted for {value} right={right}",
    )


@pytest.mark.parametrize(
    "in_dims", [(0, 0, 0), (0, 0, None), (None, 0, None), (0, None, 0)], ids=str
)
def test_search_through_a_sorter_matches_torch(in_dims):
    """Unsorted boundaries and the order that sorts them, any of the three batched. Members
    that share a sorter share their boundaries' order: one permutation of sorted rows."""
    rng = np.random.default_rng(14)
    b_dim, v_dim, s_dim = in_dims
    permutation = rng.permutation(6)
    sorted_rows = np.sort(rng.integers(-4, 5, (BATCH, 6)) / 2, axis=-1)
    b = sorted_rows[:, permutation] if b_dim == 0 else sorted_rows[0, permutation]
    order = np.argsort(b, axis=-1, kind="stable")
    if s_dim is None and order.ndim == 2:
        order = order[0]
    v = _halves((BATCH, 4) if v_dim == 0 else (4,), seed=15)
    _assert_same(
        *_both(
            lambda b, v, s: sg.searchsorted(b, v, sorter=s),
            lambda b, v, s: torch.searchsorted(b, v, sorter=s),
            [b, v, order],
            in_dims,
        ),
        f"sorter in_dims={in_dims}",
    )


def test_search_errors_under_vmap_name_one_member_shapes():
    """The checks run on one member's shapes, as unbatched: boundaries and values whose rows
    do not line up raise, as torch.func.vmap does (ours names the member's shapes)."""

    def run(m):
        vm = torch.func.vmap if m is torch else vmap
        return vm(lambda b: m.searchsorted(b, m.tensor([1.0])))(m.tensor(np.zeros((BATCH, 1, 2))))

    assert_raises_as_torch(
        run, RuntimeError, r"boundaries of shape \(1, 2\) and input of shape \(1,\)"
    )


def test_search_in_0d_member_boundaries_raises_as_unbatched():
    """A member's boundaries must have a dim, as unbatched (torch.func.vmap answers zeros)."""
    with pytest.raises(RuntimeError, match="boundaries tensor should have positive dimension"):
        vmap(lambda b: sg.searchsorted(b, sg.tensor(1.0)))(sg.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="boundaries tensor should have positive dimension"):
        sg.searchsorted(sg.tensor(1.0), sg.tensor(1.0))
