"""In-place changes under ``func.vmap``, as ``torch.func.vmap``'s: ``+=`` and the other
operators, ``add_``/``mul_``/..., the in-place forms (``clamp_``, ``masked_fill_``), ``fill_``,
``zero_``, ``copy_`` and ``x[index] = v`` write each member's new values into the batch, through
views too, into the tensor vmap was given, and into a new one made from a batched one
(``zeros_like``, ``new_zeros``: batched, as PyTorch's); writing a batch into an unbatched tensor, a
result that does not keep the shape or cast to the dtype, and a leaf that ``grad`` made, raise
as PyTorch's."""

import pytest
import torch
from oracle import assert_close, outcome, raised_alike

import scratchgrad as sg


def _iadd(t, v):
    t += v
    return t


def _setitem(t, index, v):
    t[index] = v
    return t


CASES = {
    "iadd": lambda m, t, v: _iadd(t.clone(), v),
    "ipow": lambda m, t, v: t.clone().__ipow__(2),
    "add_alpha": lambda m, t, v: t.clone().add_(v, alpha=2),
    "mul_view": lambda m, t, v: _view_mul(t),
    "clamp_view": lambda m, t, v: t.clone().unsqueeze(0).clamp_(max=2.0).squeeze(0),
    "masked_fill_": lambda m, t, v: t.clone().masked_fill_(v > 1, -1.0),
    "fill_number": lambda m, t, v: t.clone().fill_(2.5),
    "fill_batched": lambda m, t, v: t.clone().fill_(v.sum()),
    "zero_slice": lambda m, t, v: _zero_tail(t),
    "copy_": lambda m, t, v: t.clone().copy_(v),
    "copy_broadcast": lambda m, t, v: t.clone().copy_(m.tensor([1, 2, 3])),
    "setitem_int": lambda m, t, v: _setitem(t.clone(), 1, 7.0),
    "setitem_ellipsis": lambda m, t, v: _setitem(t.clone(), (..., 0), v[2]),
    "setitem_tensor": lambda m, t, v: _setitem(t.clone(), m.tensor([0, 2]), v[:2]),
    "setitem_slice_batched": lambda m, t, v: _setitem(t.clone(), slice(1, None), v[1:]),
    "input": lambda m, t, v: t.mul_(2),
    "int_add_float": lambda m, t, v: t.long().add_(1.5),
    "shape_grows": lambda m, t, v: t.clone()[0].add_(t),
    # a new tensor like a batched one is batched, so batched values may be written into it
    "zeros_like": lambda m, t, v: _setitem(m.zeros_like(t), 0, t[1]),
    "empty_like": lambda m, t, v: _setitem(m.empty_like(t).fill_(0), slice(1, None), t[:-1]),
    "full_like": lambda m, t, v: m.full_like(t, 2.0).mul_(v),
    "ones_like_int": lambda m, t, v: m.ones_like(t, dtype=m.int64).add_(3),
    "new_zeros": lambda m, t, v: t.new_zeros(3).add_(t),
    "new_full": lambda m, t, v: _setitem(t.new_full((2, 3), 2.0), 0, v),
    "new_empty": lambda m, t, v: t.new_empty(size=(3,)).copy_(v),
    "new_ones_nested": lambda m, t, v: m.func.vmap(lambda u: u.new_ones(3).mul_(u))(t.expand(2, 3)),
    # index writes and in-place view changes, which raised (index_add_, index_put_, unsqueeze_:
    # tests/func/test_vmap_index_add_put.py has more)
    "index_add_": lambda m, t, v: t.clone().index_add_(0, m.tensor([0, 0]), v[:2]),
    "index_put_": lambda m, t, v: t.clone().index_put_((m.tensor([1]),), v[2:]),
    "put_": lambda m, t, v: t.clone().put_(m.tensor([2, 0]), v[:2], accumulate=True),
    "masked_scatter_": lambda m, t, v: t.clone().masked_scatter_(m.tensor([True, False, True]), v),
    "index_reduce_": lambda m, t, v: t.clone().index_reduce_(0, m.tensor([1, 1]), v[1:], "amax"),
    "lerp_": lambda m, t, v: t.clone().lerp_(v, 0.25),
    "absolute_": lambda m, t, v: (t - v).absolute_(),
    "gt_": lambda m, t, v: t.clone().gt_(v),
    "float_power_": lambda m, t, v: t.double().float_power_(v),
    "unsqueeze_": lambda m, t, v: t.clone().unsqueeze_(0),
    "unsqueeze_input": lambda m, t, v: t.unsqueeze_(-1).mul_(v.unsqueeze(-1)),
    "unsqueeze_view": lambda m, t, v: _unsqueeze_a_view(t),
    "squeeze_": lambda m, t, v: t.clone().reshape(1, 3, 1).squeeze_(),
    "squeeze_dim": lambda m, t, v: t.clone().reshape(3, 1).squeeze_(-1),
    "transpose_": lambda m, t, v: t.clone().reshape(3, 1).transpose_(0, 1),
    "swapdims_": lambda m, t, v: t.clone().reshape(1, 3).swapdims_(-1, 0),
    "swapaxes_": lambda m, t, v: t.clone().reshape(1, 3).swapaxes_(1, 0),
    "t_": lambda m, t, v: t.clone().reshape(3, 1).t_(),
    "fill_diagonal_": lambda m, t, v: t.clone().fill_diagonal_(-1.0),
    "fill_diagonal_wrap": lambda m, t, v: t.clone().reshape(3, 1).fill_diagonal_(7, wrap=True),
    "fill_diagonal_view": lambda m, t, v: _fill_a_diagonal_through_a_view(t),
    "unsqueeze_nested": lambda m, t, v: m.func.vmap(
        lambda u: u.clone().unsqueeze_(1).t_().mul_(u), in_dims=1
    )(t.expand(2, 3)),
}


def _fill_a_diagonal_through_a_view(t):
    out = t.clone().reshape(1, 3, 2, 1)
    out[0, 1:, :, 0].fill_diagonal_(5.5)
    return out


def _unsqueeze_a_view(t):
    """Writes through a view made a member's unsqueeze in place reach the tensor viewed."""
    out = t.clone()
    tail = out[1:]
    tail.unsqueeze_(0)
    tail.mul_(10)
    return out


def _view_mul(t):
    out = t.clone()
    out[0].mul_(3)  # through a view of the member
    return out


def _zero_tail(t):
    out = t.clone()
    out.view(-1)[1:].zero_()
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_in_place_changes_batch_as_pytorch(name):
    def call(m):
        x, v = m.arange(6.0).reshape(2, 3), m.tensor([[1.0, 2.0, 3.0], [0.5, 1.5, 2.5]])
        out = m.func.vmap(lambda t, u: CASES[name](m, t, u))(x, v)
        return out, x  # the input too: vmap writes into it where the function does

    ours, theirs = outcome(call, sg), outcome(call, torch)
    if not raised_alike(ours, theirs, name):
        for a, b in zip(ours, theirs):
            assert_close(a, b)


@pytest.mark.parametrize(
    "function",
    [
        lambda m, c, t: c.add_(t),  # an unbatched tensor takes a batch
        lambda m, c, t: _setitem(c, 0, t),
    ],
)
def test_writing_a_batch_into_an_unbatched_tensor_raises(function):
    def call(m):
        c = m.zeros(2, 3)
        return m.func.vmap(lambda t: function(m, c, t))(m.ones(4, 3))

    assert raised_alike(outcome(call, sg), outcome(call, torch), "unbatched")


@pytest.mark.parametrize(
    "name, function",
    [
        ("put_", lambda m, t, i: t.clone().put_(i, m.ones(()))),
        ("index_reduce_", lambda m, t, i: t.clone().index_reduce_(0, i.reshape(1), t[:1], "prod")),
        ("masked_scatter_", lambda m, t, i: t.clone().masked_scatter_(t > i, -t)),
    ],
)
def test_index_writes_at_a_batched_index_or_mask_as_pytorch(name, function):
    """They raised (put_, index_reduce_ and masked_scatter_ read a batched index or mask
    directly); each member as a loop's, as PyTorch's."""
    x, index = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [0, 2]

    def call(m):
        return m.func.vmap(lambda t, i: function(m, t, i))(m.tensor(x), m.tensor(index))

    loop = [function(torch, torch.tensor(r), torch.tensor(i)) for r, i in zip(x, index)]
    assert call(sg).tolist() == call(torch).tolist() == torch.stack(loop).tolist()


# x[index] = v with batched index tensors (each member's own positions), or index tensors
# apart from each other: they raised. A member: t (2, 3), j (2,) ints, w (2,) values.
SETITEMS = {
    "row": lambda m, t, j, w: _setitem(t, (0, j), -1.0),
    "columns": lambda m, t, j, w: _setitem(t, (slice(None), j), -1.0),
    "values": lambda m, t, j, w: _setitem(t, (0, j), w),
    "values_after_a_slice": lambda m, t, j, w: _setitem(t, (slice(None), j), w),
    "rows": lambda m, t, j, w: _setitem(t, j[:1], w[:1, None]),
    "two": lambda m, t, j, w: _setitem(t, (j[:1], j), 7.0),
    "ellipsis": lambda m, t, j, w: _setitem(t, (..., j), w),
    "broadcast_indices": lambda m, t, j, w: _setitem(t, (m.tensor([[0], [1]]), j), 9.0),
    "zero_d": lambda m, t, j, w: _setitem(t, (1, j[0]), -5.0),
    "int_tensor": lambda m, t, j, w: _setitem(t.long(), (0, j), 2.7),
    "leading_ones": lambda m, t, j, w: _setitem(t, (0, j), w.reshape(1, 1, 2)),
    "apart": lambda m, t, j, w: _setitem(
        t.reshape(2, 3, 1), (j.clamp(max=1), slice(None), j * 0), w[0]
    ),
    "apart_unbatched": lambda m, t, j, w: _setitem(
        t.reshape(2, 1, 3), (m.tensor([1, 0]), slice(None), m.tensor([2, 2])), w[:, None]
    ),
}
# where PyTorch 2.13's vmap writes a batched value's entries at the wrong places (lined up
# with the dim before the index's, or another member's): compared with the loop only
TORCH_VMAP_WRONG = {"values_after_a_slice", "ellipsis", "apart_unbatched"}
SETITEM_INPUTS = (
    ([[0.0, 1, 2], [3, 4, 5]], [[6.0, 7, 8], [9, 10, 11]]),
    ([0, 2], [1, 1]),
    ([10.0, 20], [30.0, 40]),
)


@pytest.mark.parametrize("last", [False, True], ids=["in_dim_0", "t_in_dim_last"])
@pytest.mark.parametrize("name", SETITEMS)
def test_writes_at_batched_indices_as_pytorch(name, last):
    """Against a loop of PyTorch's writes, and torch.func.vmap where it agrees with that."""
    write = SETITEMS[name]

    def call(m):
        t, j, w = (m.tensor(a) for a in SETITEM_INPUTS)
        t = t.movedim(0, -1).contiguous() if last else t
        return m.func.vmap(
            lambda *a: write(m, a[0].clone(), *a[1:]), in_dims=(-1 if last else 0, 0, 0)
        )(t, j, w)

    loop = torch.stack([write(torch, *map(torch.tensor, a)) for a in zip(*SETITEM_INPUTS)])
    assert_close(call(sg), loop)
    if name not in TORCH_VMAP_WRONG:
        assert_close(call(sg), call(torch))


def test_nested_writes_at_batched_indices_as_pytorch():
    """The inner vmap batches the index and values, the outer one the tensor and index."""

    def call(m):
        t, j, w = (m.tensor(a) for a in SETITEM_INPUTS)

        def outer(tt, jj):
            return m.func.vmap(lambda k, v: _setitem(tt + 0 * v[0], (1, jj + k), v))(j, w)

        return m.func.vmap(outer)(t, m.tensor([0, -1]))

    assert_close(call(sg), call(torch))


@pytest.mark.parametrize(
    "name, write",
    [
        ("value_dtype", lambda m, t, j, w: _setitem(t.long(), (0, j), w)),
        ("value_shape", lambda m, t, j, w: _setitem(t, (0, j), m.ones(3))),
        ("out_of_range", lambda m, t, j, w: _setitem(t, (0, j + 2), 1.0)),
        ("batched_mask", lambda m, t, j, w: _setitem(t, t > 4, 0.0)),
        ("into_unbatched", lambda m, t, j, w: _setitem(m.zeros(2, 3), (0, j), 1.0)),
        (
            "inner_into_outer",
            lambda m, t, j, w: m.func.vmap(lambda k: _setitem(t.clone(), k.clamp(max=1), 0.0))(j),
        ),
    ],
)
def test_writes_at_batched_indices_raise_as_pytorch(name, write):
    def call(m):
        t, j, w = (m.tensor(a) for a in SETITEM_INPUTS)
        return m.func.vmap(lambda *a: write(m, a[0].clone(), *a[1:]))(t, j, w)

    assert raised_alike(outcome(call, sg), outcome(call, torch), name)


def test_gradients_through_writes_at_batched_indices_as_pytorch():
    def f(t, w, j):
        o = t.clone()
        o[(0, j)] = w * 2
        o[(slice(None), j[:1])] = t[1:, :1] * w[1]
        return (o**2).sum()

    def call(m):
        t, j, w = (m.tensor(a) for a in SETITEM_INPUTS)
        return m.func.vmap(m.func.grad(f, argnums=(0, 1)))(t, w, j)

    for ours, theirs in zip(call(sg), call(torch)):
        assert_close(ours, theirs)


def test_a_mask_write_of_a_batch_raises_as_pytorchs():
    def call(m):
        return m.func.vmap(lambda t: _setitem(t.clone(), t > 2, 0.0))(m.ones(2, 3) * 3)

    assert raised_alike(outcome(call, sg), outcome(call, torch), "mask")


def test_an_inner_batch_written_into_an_outer_member_raises():
    def call(m):
        def outer(a):
            return m.func.vmap(lambda b: a.clone().add_(b))(m.ones(2, 3))

        return m.func.vmap(outer)(m.ones(4, 3))

    assert raised_alike(outcome(call, sg), outcome(call, torch), "nested")


def test_gradients_through_in_place_changes_as_pytorch():
    def f(t):
        o = t.clone()
        o[1] = o[0] * 3
        o.mul_(t)
        return (o**2).sum()

    def call(m):
        return m.func.vmap(m.func.grad(f))(m.arange(6.0).reshape(2, 3))

    assert_close(call(sg), call(torch))
    # grad's input is a leaf: changing it in place raises, as PyTorch's
    leaf = lambda m: m.func.vmap(m.func.grad(lambda t: t.mul_(2).sum()))(m.ones(2, 3))  # noqa: E731
    assert raised_alike(outcome(leaf, sg), outcome(leaf, torch), "leaf")


def test_gradients_through_index_writes_and_view_changes_as_pytorch():
    def f(t, v):
        o = t.clone()
        o.unsqueeze_(0).transpose_(0, 1)  # (3, 1)
        o.index_add_(0, t.new_tensor([2, 0]).long(), v[:2, None])
        o.squeeze_(1).lerp_(v, 0.25)
        return (o**2 * t).sum()

    def call(m):
        t, v = m.arange(6.0).reshape(2, 3), m.tensor([[1.0, 2.0, 3.0], [0.5, 1.5, 2.5]])
        return m.func.vmap(m.func.grad(f, argnums=(0, 1)))(t, v)

    for ours, theirs in zip(call(sg), call(torch)):
        assert_close(ours, theirs)


def test_in_place_view_changes_under_grad_as_pytorch():
    """grad's input (a leaf) refuses them, as PyTorch's; grad of a vmapped function and a
    closed-over tensor that requires grad take their gradients through them."""

    def calls(m):
        x, w = m.arange(6.0).reshape(2, 3), m.ones(3, requires_grad=True)
        outer = m.func.grad(lambda t: m.func.vmap(lambda u: (u * 1).t_().pow(2).sum())(t).sum())
        return [
            lambda: m.func.vmap(m.func.grad(lambda t: t.unsqueeze_(0).sum()))(x),
            lambda: outer(x.reshape(2, 3, 1)),
            lambda: m.func.vmap(lambda u: (u * w).unsqueeze_(0).transpose_(0, 1))(x).sum(0),
        ]

    for k, (ours, theirs) in enumerate(zip(calls(sg), calls(torch))):
        ours, theirs = outcome(ours), outcome(theirs)
        if not raised_alike(ours, theirs, str(k)):
            assert_close(ours, theirs)


VIEW_CHANGES = {
    "unsqueeze_last": lambda t: t.unsqueeze_(-1),
    "unsqueeze_first": lambda t: t.unsqueeze_(0),
    "transpose_": lambda t: t.transpose_(0, 1),
    "swapdims_": lambda t: t.swapdims_(-1, 0),
    "t_": lambda t: t.squeeze_().t_(),
    "squeeze_": lambda t: t.squeeze_(),
    "squeeze_dim": lambda t: t.squeeze_(-2),
    "squeeze_dims": lambda t: t.squeeze_((0, 1)),
    "then_written": lambda t: t.unsqueeze_(1).mul_(2),
    "two_changes": lambda t: t.unsqueeze_(0).transpose_(0, 2),
}


@pytest.mark.parametrize("in_dims", [0, 2, -1])
@pytest.mark.parametrize("name", VIEW_CHANGES)
def test_in_place_view_changes_change_the_given_tensor_at_any_in_dims_as_pytorch(name, in_dims):
    """The given tensor, its batch dim not in front, changes shape with its members, as
    PyTorch's (whose batch is that tensor): its batch dim stays between the same member dims
    (a dim unsqueezed at its place goes after it). It kept its shape here. (Batches of more
    than one member: PyTorch 2.13's squeeze_ drops a batch dim of size 1.)"""

    def call(m):
        x = m.arange(48.0).reshape(2, 1, 3, 8)[..., ::2].clone()  # (2, 1, 3, 4)
        out = m.func.vmap(VIEW_CHANGES[name], in_dims=in_dims)(x)
        return out, x, [s for s, n in zip(x.stride(), x.shape) if n > 1]  # (size 1: any)

    (ours, x, strides), (theirs, y, their_strides) = call(sg), call(torch)
    assert_close(ours, theirs)
    assert_close(x, y)
    assert strides == their_strides


def test_an_in_place_view_change_of_a_given_leaf_raises_pytorchs_error_at_any_in_dims():
    """Ours said 'a view of a leaf Variable' where the batch dim was not in front (the batch
    was a view of it), and PyTorch says 'a leaf Variable'; the leaf keeps its shape."""

    def call(m):
        x = m.ones(2, 3, requires_grad=True)
        return outcome(m.func.vmap(lambda t: t.unsqueeze_(0), in_dims=1), x), x.shape

    (ours, shape), (theirs, their_shape) = call(sg), call(torch)
    assert (type(ours), str(ours), tuple(shape)) == (type(theirs), str(theirs), their_shape)
