"""The in-place view ops (``t_``, ``transpose_``, ``swapaxes_``, ``swapdims_``, ``squeeze_``,
``unsqueeze_``) against PyTorch's: the shape and memory they leave, the version counter, the
gradient through one in a graph (of a tensor, of a view, of a base whose view is written
later), and the errors (bad dims, a leaf that requires grad, a saved tensor changed, jit);
and the root ``addmv_``."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

CASES = [
    ((2, 3), "t_", ()),
    ((3,), "t_", ()),
    ((), "t_", ()),
    ((2, 3, 4), "transpose_", (0, -1)),
    ((), "transpose_", (0, -1)),
    ((2, 3, 4), "swapaxes_", (1, 2)),
    ((2, 3, 4), "swapdims_", (-3, 1)),
    ((2, 1, 3, 1), "squeeze_", ()),
    ((2, 1, 3, 1), "squeeze_", (-1,)),
    ((2, 1, 3, 1), "squeeze_", ((1, 3),)),
    ((2, 3), "squeeze_", (0,)),
    ((), "squeeze_", ()),
    ((2, 3), "unsqueeze_", (2,)),
    ((2, 3), "unsqueeze_", (-1,)),
    ((), "unsqueeze_", (0,)),
    ((0, 1, 3), "squeeze_", (1,)),
    ((0, 3), "t_", ()),
]


@pytest.mark.parametrize("shape, name, args", CASES)
def test_shape_memory_and_version_are_torchs(shape, name, args):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ours, theirs = sg.tensor(a), torch.tensor(a)
    assert getattr(ours, name)(*args) is ours
    getattr(theirs, name)(*args)
    assert ours.shape == tuple(theirs.shape)
    assert ours._version == theirs._version == 1
    assert ours.is_contiguous() == theirs.is_contiguous()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours.fill_(7.0)  # the same memory: a write through the new shape reaches every entry
    assert ours.sum().item() == 7.0 * a.size


@pytest.mark.parametrize(
    "shape, name, args",
    [
        ((2, 1, 3), "t_", ()),
        ((2, 3), "unsqueeze_", (3,)),
        ((2, 3), "squeeze_", (-3,)),
        ((2, 1, 3), "squeeze_", ((1, 1),)),
        ((2, 3), "transpose_", (0, 2)),
        ((2, 3), "swapaxes_", (-3, 0)),
        ((2, 3), "swapdims_", (0, 5)),
        ((), "unsqueeze_", (2,)),
    ],
)
def test_errors_are_torchs_and_change_nothing(shape, name, args):
    with pytest.raises((RuntimeError, IndexError)) as theirs:
        getattr(torch.zeros(shape), name)(*args)
    x = sg.zeros(shape)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(x, name)(*args)
    assert str(ours.value) == str(theirs.value)
    assert x.shape == shape and x._version == 0


@pytest.mark.parametrize("name, args", [("t_", ()), ("unsqueeze_", (0,)), ("swapdims_", (0, 1))])
def test_a_leaf_or_its_view_that_requires_grad_is_refused_but_not_under_no_grad(name, args):
    for lib in (torch, sg):
        leaf = lib.zeros(2, 3, requires_grad=True)
        for target, what in ((leaf, "a leaf"), (leaf[0:1], "a view of a leaf")):
            with pytest.raises(RuntimeError, match=f"^{what} Variable that requires grad"):
                getattr(target, name)(*args)
        assert leaf.shape == (2, 3)
        with lib.no_grad():
            getattr(leaf, name)(*args)
        assert leaf.is_leaf and leaf.requires_grad and leaf.shape != (2, 3)


def grads(lib, program):
    """The gradient of ``program(x)`` at x of shape (2, 3), by ``lib``."""
    x = lib.tensor(np.arange(6.0).reshape(2, 3) - 2.5, requires_grad=True)
    program(lib, x).backward()
    return x.grad.numpy()


def transposed(lib, x):
    y = x.sin()
    y.t_()
    return (y * lib.tensor(np.arange(6.0).reshape(3, 2))).sum()


def view_unsqueezed_then_written(lib, x):
    y = x * 1
    row = y[1]
    row.unsqueeze_(0)
    row.mul_(row.detach() + 2)
    return (y * y).sum()


def base_transposed_then_view_written(lib, x):
    y = x * 1
    row = y[0]
    y.transpose_(0, 1)
    row.mul_(3)
    return (y * lib.tensor(np.arange(6.0).reshape(3, 2))).sum()


def squeezed_twice(lib, x):
    y = x.unsqueeze(1) * 2  # (exp would save its result, which the squeezes change)
    y.squeeze_(1)
    y.unsqueeze_(0)
    y.squeeze_()
    return (y * y.cos()).sum()


@pytest.mark.parametrize(
    "program",
    [transposed, view_unsqueezed_then_written, base_transposed_then_view_written, squeezed_twice],
)
def test_gradient_through_it_is_torchs(program):
    np.testing.assert_allclose(grads(sg, program), grads(torch, program), rtol=1e-12)


def test_the_gradients_gradient_goes_through_it():
    def f(x):
        y = x * x
        y.t_()
        return y.sum(0)

    x = sg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert sg.autograd.gradgradcheck(f, (x,))


def test_a_tensor_saved_for_the_gradient_then_changed_is_refused():
    x = sg.ones(2, 3, requires_grad=True)
    y = x * 1
    z = y * y  # saves y
    y.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="modified"):
        z.sum().backward()


def test_the_new_layout_is_a_view_of_the_same_memory_for_is_contiguous_and_view():
    ours, theirs = sg.zeros(2, 3), torch.zeros(2, 3)
    ours.t_()
    theirs.t_()
    for x in (ours, theirs):
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            x.view(6)
    assert ours.contiguous().view(6).shape == (6,)


def test_refused_while_jit_records():
    @sg.jit
    def step(x):
        y = x * 2
        y.t_()
        return y + 1

    step(sg.ones(2, 3))  # the first call runs eagerly
    with pytest.raises(sg.jit.JitError, match=r"\.t_\(\)"):
        step(sg.ones(2, 3))


def test_batched_under_vmap_as_torch():
    """(It raised; tests/func/test_vmap_in_place.py has more.) The tensor vmap was given
    changes shape with its members, as PyTorch's."""

    def call(m):
        x = m.arange(6.0).reshape(3, 2)
        return m.func.vmap(lambda t: t.unsqueeze_(0) * 1)(x).tolist(), tuple(x.shape)

    assert call(sg) == call(torch)


def test_a_tensor_in_a_graph_under_no_grad_is_refused_rather_than_left_with_a_stale_node():
    # NOTE: PyTorch keeps the old node: a square transpose's gradient would come back untransposed
    y = sg.ones(2, 2, requires_grad=True) * 2
    with sg.no_grad(), pytest.raises(RuntimeError, match="t_: this tensor is part of a graph"):
        y.t_()
    assert y._version == 0


def test_root_addmv_is_torchs():
    a, mat, vec = np.ones(2), np.arange(6.0).reshape(2, 3), np.arange(3.0) - 1
    for lib in (sg, torch):
        x = lib.tensor(a)
        assert lib.addmv_(x, lib.tensor(mat), lib.tensor(vec), beta=0.5, alpha=2) is x
    np.testing.assert_array_equal(
        sg.addmv_(sg.tensor(a), sg.tensor(mat), sg.tensor(vec), beta=0.5, alpha=2).numpy(),
        torch.addmv_(torch.tensor(a), torch.tensor(mat), torch.tensor(vec), beta=0.5, alpha=2),
    )


# ---- resize_ and resize_as_, of older code -------------------------------------------------


@pytest.mark.parametrize(
    "shape, size",
    [((6,), (2, 2)), ((2, 3), (6,)), ((2, 3), (3, 2)), ((4,), ((2, 2),)), ((2, 2), (2, 2))],
)
def test_resize_keeps_the_first_numbers_in_torchs_order(shape, size):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ours, theirs = sg.tensor(a), torch.tensor(a)
    assert ours.resize_(*size) is ours
    theirs.resize_(*size)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_resize_of_a_view_shrinking_shares_memory_and_growing_fills_zeros():
    """A view of a base (``x[1:]``) made smaller still writes into the base, as PyTorch's;
    grown, the numbers kept come first (PyTorch's new ones are uninitialized memory)."""
    for lib in (sg, torch):
        base = lib.arange(6.0)
        view = base[1:]
        view.resize_(2, 2)
        view[0, 0] = 9.0
        assert base.tolist() == [0.0, 9.0, 2.0, 3.0, 4.0, 5.0]
    grown = sg.arange(3.0).resize_(2, 3)
    assert grown.tolist() == [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]]


def test_the_old_dcgan_buffer_idiom_resize_as_then_copy():
    """``input.resize_as_(real).copy_(real)``: a preallocated buffer takes each batch's shape."""
    buffer = sg.FloatTensor(4, 3)
    for rows in (4, 2, 5):
        batch = sg.randn(rows, 3)
        buffer.resize_as_(batch).copy_(batch)
        assert buffer.shape == (rows, 3) and buffer.dtype == sg.float32
        assert sg.equal(buffer, batch)


@pytest.mark.parametrize(
    "make, size, error",
    [
        (lambda m: m.ones(3, requires_grad=True), (2,), "cannot resize variables that require"),
        (lambda m: m.ones(2), (-1,), "negative dimension|overflow"),
        # PyTorch keeps a transpose's numbers in memory order; refused rather than differ
        (lambda m: m.arange(4.0).reshape(2, 2).t(), (4,), None),
    ],
)
def test_resize_errors_change_nothing(make, size, error):
    if error is not None:
        with pytest.raises(RuntimeError):
            make(torch).resize_(*size)
    x = make(sg)
    before = x.detach().numpy().copy()
    with pytest.raises(RuntimeError, match=error or "not contiguous"):
        x.resize_(*size)
    np.testing.assert_array_equal(x.detach().numpy(), before)


def test_a_view_of_the_same_shape_is_a_new_tensor_as_pytorchs():
    """``x.view(x.shape)``, ``reshape``, ``squeeze`` of nothing: new tensors, as PyTorch's (they
    were ``x`` itself): a hook on the view sees only the gradient through it, and a change of
    the view's shape leaves ``x`` alone. ``flatten`` of nothing stays ``x``, as PyTorch's."""
    grads = []
    for lib in (sg, torch):
        x = lib.ones(3, requires_grad=True)
        view = x.view(3)
        assert view is not x and x.reshape(3) is not x and x.squeeze() is not x
        assert x.flatten() is x
        view.register_hook(lambda g: g * 0)
        ((view * 2).sum() + (x * 3).sum()).backward()
        grads.append(x.grad.tolist())
        y = lib.ones(3).view(3)
        y.resize_(2)
        assert y.shape == (2,)
    assert grads[0] == grads[1] == [3.0, 3.0, 3.0]


def test_an_expanded_tensor_is_a_view_that_sees_later_changes_of_its_base():
    """``x.expand`` shares ``x``'s memory at every size (small ones were copies, which an
    in-place change of ``x`` left stale), and is a new tensor at ``x``'s own shape."""
    for lib in (sg, torch):
        x, big = lib.zeros(3), lib.zeros(1, 1 << 17)
        small, large = x.expand(2, 3), big.expand(2, -1)
        x.add_(1)
        big.add_(1)
        assert small.tolist() == [[1.0, 1.0, 1.0]] * 2 and large.sum().item() == 1 << 18
        assert x.expand(3) is not x and x.expand_as(x) is not x and x.broadcast_to(3) is not x


@pytest.mark.parametrize(
    "write",
    [
        lambda e, m: e.mul_(2),
        lambda e, m: e.add_(m.ones(3, requires_grad=True)),
        lambda e, m: e.copy_(m.ones(2, 3)),
        lambda e, m: e.relu_(),
        lambda e, m: e.clamp_(0, 1),
    ],
)
def test_writing_into_an_expanded_tensor_raises_pytorchs_error_and_changes_nothing(write):
    message = "more than one element of the written-to tensor refers to a single memory location"
    for lib in (torch, sg):
        x = lib.full((3,), -1.0)
        with pytest.raises(RuntimeError, match=message):
            write(x.expand(2, 3), lib)
        assert x.tolist() == [-1.0, -1.0, -1.0]


def test_filling_an_expanded_tensor_raises_where_pytorch_writes_the_value():
    """PyTorch fills the shared memory; refused here (NumPy's broadcast views are read-only)
    rather than silently leaving ``x`` alone as the copies did."""
    x = sg.zeros(3)
    for fill in (lambda e: e.fill_(1.0), lambda e: e.zero_(), lambda e: e.__setitem__(0, 1.0)):
        with pytest.raises(RuntimeError, match="refers to a single memory location"):
            fill(x.expand(2, 3))
    assert x.tolist() == [0.0, 0.0, 0.0]


def test_writing_a_row_of_an_expanded_tensor_raises_naming_the_expand():
    """PyTorch writes ``x.expand(2, 3)[0]`` through to ``x`` (the row's entries do not share
    memory); refused here, as NumPy's broadcast views are read-only, with a message that
    names the expand (it named only a copied view() of a convolution's result), and ``x``
    left alone."""
    x = sg.zeros(3)
    with pytest.raises(RuntimeError, match=r"add_: .*read-only here \(a view of an expand\(\)ed"):
        x.expand(2, 3)[0].add_(1)
    assert x.tolist() == [0.0, 0.0, 0.0]


def test_repeat_and_tile_copy_even_where_nothing_is_tiled():
    """``x.repeat(1)`` and ``x.tile((1,))`` are copies, as PyTorch's: writing into them leaves
    ``x`` alone (``repeat(1)`` was a view of ``x``)."""
    for lib in (sg, torch):
        for make in (lambda x: x.repeat(1), lambda x: x.tile((1,)), lambda x: x[:1].repeat(3)):
            x = lib.ones(3)
            make(x).add_(1)
            assert x.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "shape, make",
    [
        ((2,), lambda x: x.repeat_interleave(1)),
        ((1, 2), lambda x: x.repeat_interleave(3, dim=0)),
        ((), lambda x: x.repeat_interleave(2)),
        ((), lambda x: x.expand(2).repeat_interleave(2)),
        ((), lambda x: x.expand(2).repeat(2)),
        ((), lambda x: x.expand(2).tile((3,))),
    ],
    ids=["once", "a_dim_of_one", "0_d", "expanded", "repeat_expanded", "tile_expanded"],
)
def test_repeat_interleave_and_repeat_copy_even_where_the_reshape_needs_no_copy(shape, make):
    """``repeat_interleave`` (and ``repeat`` of an expanded tensor) make a new tensor, as
    PyTorch's: a count or a size of 1, or an input that repeats its entries, left the reshape
    a view, so ``mul_`` of ``x.repeat_interleave(1)`` changed ``x``, and of a 0-d
    ``x.repeat_interleave(2)`` or of ``x.expand(2).repeat(2)`` raised (entries sharing
    memory)."""
    outs = []
    for lib in (sg, torch):
        x = lib.ones(shape)
        y = make(x)
        y.mul_(2.0)
        assert (x == 1).all()
        outs.append((y.tolist(), y.is_contiguous()))
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    "make",
    [lambda x: x.t().repeat(0, 0), lambda x: x.t().unsqueeze(0).expand(0, 3, 2)],
    ids=["repeat_nothing", "expand_to_empty"],
)
def test_an_empty_expand_of_a_transpose_may_be_written_as_torchs(make):
    """Writing into an empty expand (or a repeat by 0, made of one) changes nothing and
    passes, as PyTorch's; of a non-contiguous tensor it was NumPy's read-only broadcast_to,
    and mul_ raised."""
    for lib in (sg, torch):
        x = lib.ones(2, 3)
        out = make(x)
        out.mul_(2.0)
        assert out.shape == (0, 0) or out.shape == (0, 3, 2)
        assert (x == 1).all()


def test_an_empty_expand_of_an_output_of_unbind_is_its_view_as_torchs():
    """So that a write into it raises PyTorch's error for a view of an output of a function
    that returns several views (a copy of no entries, as the empty expand was, let it pass)."""
    for lib in (sg, torch):
        piece = lib.zeros(1, 2, 2, requires_grad=True).clone().unbind(-1)[0]
        out = piece.expand(0, 1, 2)
        assert out._base is not None
        with pytest.raises(RuntimeError, match="returns multiple views"):
            out.mul_(2.0)


@pytest.mark.parametrize(
    "make",
    [
        lambda m, x: x[:, m.tensor([2, 0])],
        lambda m, x: x.index_select(1, m.tensor([1, 1])),
        lambda m, x: x.repeat_interleave(m.tensor([0, 2, 1]), 1),
    ],
    ids=["index_a_later_dim", "index_select", "repeat_interleave_counts"],
)
def test_a_copy_by_an_index_array_is_row_major_so_its_view_may_be_written(make):
    """NumPy lays ``x[:, idx]`` out with ``idx``'s dim first in memory, which the layout model
    counts as row-major: its ``view(-1)`` was a read-only copy (mul_ raised) and as_strided
    refused it; now it lies row-major, as PyTorch's."""
    outs = []
    for m in (sg, torch):
        y = make(m, m.arange(6.0).reshape(2, 3))
        y.view(-1).mul_(2.0)
        outs.append((y.tolist(), y.as_strided((2,), (1,), 1).tolist()))
    assert outs[0] == outs[1]


def test_an_empty_repeat_is_a_new_tensor_as_torchs():
    """An empty ``repeat`` or ``repeat_interleave`` of an output of ``unbind`` may be written
    in a graph, as PyTorch's: it was a view of that output (a reshape of no entries needs no
    copy), so mul_ raised the error of an output of a function that returns several views."""
    for lib in (sg, torch):
        x = lib.zeros(1, 0, requires_grad=True).clone()
        for make in (lambda p: p.repeat(2), lambda p: p.repeat_interleave(2), lambda p: p.tile(3)):
            y = make(x.unbind(0)[0])
            y.mul_(2.0)
            assert y.shape == (0,)
