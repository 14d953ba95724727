"""``index_add``, ``index_put``, ``put``, ``index_reduce``, ``masked_scatter`` and their
in-place forms under ``func.vmap`` batch as ``torch.func.vmap``'s, with any of the tensor, the
index (or mask) and the source (values) batched, at any in_dim and in nested vmaps, gradients
included. Before, index_add_ and index_put_ of a batch raised, and a batched index or mask
(or index_put's batched values into an unbatched tensor) raised that its values were read
directly."""

import itertools

import numpy as np
import pytest
import torch
from oracle import assert_close, outcome, raised_alike

import scratchgrad as sg

MEMBERS = 2
_rng = np.random.default_rng(0)
SELF = _rng.standard_normal((MEMBERS, 3, 4))
INDEX = np.array([[0, 2], [2, 1]])  # each member's rows, none repeated
REPEATED = np.array([[1, 1], [0, 2]])  # member 0 adds twice into row 1
SOURCE = _rng.standard_normal((MEMBERS, 2, 4))
COLUMNS = np.array([[3, 0, 3], [1, 2, 0]])  # along dim 1, member 0's column 3 twice
COLUMN_SOURCE = _rng.standard_normal((MEMBERS, 3, 3))

# name -> (function of one member's tensor, index and source; the index and source batches)
CASES = {
    "index_add": (lambda t, i, s: t.index_add(0, i, s, alpha=2), INDEX, SOURCE),
    "index_add_repeated": (lambda t, i, s: t.index_add(0, i, s), REPEATED, SOURCE),
    "index_add_dim1": (lambda t, i, s: t.index_add(-1, i, s), COLUMNS, COLUMN_SOURCE),
    "index_add_": (lambda t, i, s: t.clone().index_add_(0, i, s, alpha=-1), REPEATED, SOURCE),
    "index_add__dim1": (lambda t, i, s: t.clone().index_add_(1, i, s), COLUMNS, COLUMN_SOURCE),
    "index_put": (lambda t, i, s: t.index_put((i,), s), INDEX, SOURCE),
    "index_put_accumulate": (
        lambda t, i, s: t.index_put((i,), s, accumulate=True),
        REPEATED,
        SOURCE,
    ),
    "index_put_": (lambda t, i, s: t.clone().index_put_((i,), s), INDEX, SOURCE),
    "index_put__accumulate": (
        lambda t, i, s: t.clone().index_put_((i,), s[0], accumulate=True),
        REPEATED,
        SOURCE,
    ),
    "index_put__two_indices": (  # entries (i[k], i[k] + 1); values broadcast from a row
        lambda t, i, s: t.clone().index_put_((i, i + 1), s[0, :1]),
        INDEX,
        SOURCE,
    ),
    # put, index_reduce and masked_scatter, whose batched index or mask raised
    "put": (lambda t, i, s: t.put(i * 5, s[:, 0]), INDEX, SOURCE),
    "put_accumulate": (lambda t, i, s: t.put(i * 5, s[:, 1], accumulate=True), REPEATED, SOURCE),
    "put_": (lambda t, i, s: t.clone().put_(i * 5 - 12, s[:, 2]), INDEX, SOURCE),
    "index_reduce_prod": (lambda t, i, s: t.index_reduce(0, i, s, "prod"), REPEATED, SOURCE),
    "index_reduce_mean": (
        lambda t, i, s: t.index_reduce(-1, i, s, "mean", include_self=False),
        COLUMNS,
        COLUMN_SOURCE,
    ),
    "index_reduce_": (lambda t, i, s: t.clone().index_reduce_(0, i, s, "amax"), REPEATED, SOURCE),
    "masked_scatter": (lambda t, i, s: t.masked_scatter(_rows(t, i), s), REPEATED, SOURCE),
    "masked_scatter_": (lambda t, i, s: t.clone().masked_scatter_(_rows(t, i), s), INDEX, SOURCE),
}


def _rows(t, i):
    """A mask of ``t``'s rows ``i``: batched where either is."""
    return t.new_zeros(3, 4).index_fill(0, i, 1.0) > 0


# which of (tensor, index, source) are batched: every nonempty choice
BATCHINGS = [b for b in itertools.product([True, False], repeat=3) if any(b)]


def _inputs(m, case, batching, last):
    """The three inputs, each batched one with its batch dim first (or ``last``), the others
    member 0's."""
    _, index, source = CASES[case]
    inputs = []
    for array, dtype, batched in zip(
        (SELF, index, source), ("float64", "int64", "float64"), batching
    ):
        t = m.tensor(array if batched else array[0], dtype=getattr(m, dtype))
        inputs.append(t.movedim(0, -1) if batched and last else t)
    dims = tuple((-1 if last else 0) if b else None for b in batching)
    return inputs, dims


@pytest.mark.parametrize("last", [False, True], ids=["in_dim_0", "in_dim_last"])
@pytest.mark.parametrize(
    "batching", BATCHINGS, ids=lambda b: "".join("tis"[k] for k in range(3) if b[k])
)
@pytest.mark.parametrize("case", CASES)
def test_index_add_and_index_put_batch_as_torch(case, batching, last):
    def call(m):
        inputs, dims = _inputs(m, case, batching, last)
        return m.func.vmap(CASES[case][0], in_dims=dims)(*inputs)

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if not raised_alike(ours, theirs, case):
        assert_close(ours, theirs, tolerance=(1e-12, 1e-12))


def _nested(m, case, how):
    """Two vmaps: "all" batches every input by both (the inner batch dim last); "split"
    batches the tensor by the outer vmap and the index and source by the inner one."""
    function, index, source = CASES[case]
    self_, index_, source_ = (m.tensor(a) for a in (SELF, index, source))
    if how == "all":
        inputs = [x.unsqueeze(-1).expand(*x.shape, 3) + 0 for x in (self_, index_, source_)]
        inner = m.func.vmap(function, in_dims=-1)
        return m.func.vmap(inner)(*inputs)

    def outer(t):
        return m.func.vmap(lambda i, s: function(t, i, s))(index_, source_)

    return m.func.vmap(outer)(self_)


@pytest.mark.parametrize("how", ["all", "split"])
@pytest.mark.parametrize("case", CASES)
def test_nested_index_add_and_index_put_batch_as_torch(case, how):
    ours, theirs = outcome(_nested, sg, case, how), outcome(_nested, torch, case, how)
    if not raised_alike(ours, theirs, case):
        assert_close(ours, theirs, tolerance=(1e-12, 1e-12))


@pytest.mark.parametrize("case", CASES)
def test_per_member_gradients_through_index_writes_as_torch(case):
    """vmap(grad(f)) in the tensor and the source, with each member's index; against a loop
    of PyTorch's gradients where its vmap refuses (index_reduce's prod reads values)."""

    def gradients(m):
        def loss(t, s, i):
            return (CASES[case][0](t, i, s) ** 2 * m.arange(4.0, dtype=m.float64)).sum()

        return m.func.grad(loss, argnums=(0, 1))

    def call(m):
        inputs, _ = _inputs(m, case, (True, True, True), False)
        return m.func.vmap(gradients(m))(inputs[0], inputs[2], inputs[1])

    theirs = outcome(call, torch)
    if isinstance(theirs, Exception):
        inputs, _ = _inputs(torch, case, (True, True, True), False)
        members = [gradients(torch)(t, s, i) for t, i, s in zip(*inputs)]
        theirs = [torch.stack(column) for column in zip(*members)]
    for ours, expected in zip(call(sg), theirs, strict=True):
        assert_close(ours, expected, tolerance=(1e-12, 1e-12))


ERRORS = {
    # a member's index past the rows (index_add's, index_put's check of every member)
    "index_add_out_of_range": lambda m, t, i, s: t.index_add(0, i + 1, s),
    "index_put_out_of_range": lambda m, t, i, s: t.index_put((i + 1,), s),
    "index_add_source_dtype": lambda m, t, i, s: t.index_add(0, i, s.float()),
    "index_add_index_dtype": lambda m, t, i, s: t.index_add(0, i.double(), s),
    "index_add_source_shape": lambda m, t, i, s: t.index_add(0, i, s[:, :3]),
    "index_put_values_shape": lambda m, t, i, s: t.index_put((i,), s[:, :3]),
    # a batch written into an unbatched tensor
    "index_add__into_unbatched": lambda m, t, i, s: m.zeros(3, 4, dtype=t.dtype).index_add_(
        0, i, s
    ),
    "index_put__into_unbatched": lambda m, t, i, s: m.zeros(3, 4, dtype=t.dtype).index_put_(
        (i,), s
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_index_write_errors_under_vmap_as_torch(name):
    def call(m):
        inputs, _ = _inputs(m, "index_add", (True, True, True), False)
        return m.func.vmap(lambda t, i, s: ERRORS[name](m, t, i, s))(*inputs)

    assert raised_alike(outcome(call, sg), outcome(call, torch), name)


@pytest.mark.parametrize("op", ["index_add_", "index_put_"])
def test_an_inner_batch_written_into_an_outer_member_raises_as_torch(op):
    def write(m, t, i, s):
        if op == "index_add_":
            return t.clone().index_add_(0, i, s)
        return t.clone().index_put_((i,), s)

    def call(m):
        inputs, _ = _inputs(m, "index_add", (True, True, True), False)
        t, i, s = inputs

        def outer(member):
            return m.func.vmap(lambda si: write(m, member, i[0], si))(s)

        return m.func.vmap(outer)(t)

    assert raised_alike(outcome(call, sg), outcome(call, torch), op)


def test_index_add_of_a_batch_writes_into_the_tensor_vmap_was_given_as_torch():
    def call(m):
        x = m.tensor(SELF)
        m.func.vmap(lambda t, i, s: t.index_add_(0, i, s))(x, m.tensor(REPEATED), m.tensor(SOURCE))
        return x

    assert_close(call(sg), call(torch), tolerance=(1e-12, 1e-12))


@pytest.mark.parametrize("dtype", ["bool", "float16", "int64"])
def test_index_add_with_a_batched_index_in_other_dtypes_as_torch(dtype):
    """Bools are or-ed, 16-bit floats summed in float32 and rounded once, as PyTorch's."""

    def call(m):
        t = m.tensor(SELF[0] > 0).to(getattr(m, dtype))
        s = m.tensor(SOURCE > 0.5).to(getattr(m, dtype))
        return m.func.vmap(lambda i, si: t.index_add(0, i, si), in_dims=(0, 0))(
            m.tensor(REPEATED), s
        )

    assert call(sg).tolist() == call(torch).tolist()
