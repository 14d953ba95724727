"""In-place changes through views give PyTorch's gradients (its CopySlices), views of leaves that
require grad refuse them, and view/is_contiguous/contiguous follow PyTorch's strides."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg
from scratchgrad.autograd import gradcheck, gradgradcheck

X = np.arange(12, dtype=np.float64).reshape(3, 4) / 5 - 1
W = np.linspace(-2, 2, 12).reshape(3, 4)
C = np.cos(np.arange(12.0)).reshape(3, 4)  # weights the base's entries in the loss

# Each changes a view of ``a`` (a non-leaf 3x4) in place, possibly using ``w``; returns the view.
CHANGES = {
    "slice": lambda a, w: a[:2].mul_(3),
    "strided_slice": lambda a, w: a[:, ::2].add_(w[:, 1:3]),
    "int_index": lambda a, w: a[1].mul_(w[0]),
    "element": lambda a, w: a[1, 2].mul_(w[0, 1]),  # a 0-d view (NumPy would give a number)
    "reshape": lambda a, w: a.reshape(4, 3)[1:].mul_(w.reshape(4, 3)[1:]),
    "view": lambda a, w: a.view(12).mul_(w.view(12)),
    "transpose": lambda a, w: a.t()[1].div_(w[:, 0] + 5),
    "transpose_mT": lambda a, w: a.transpose(0, 1).sub_(w.t()),
    "narrow": lambda a, w: a.narrow(1, 1, 2).mul_(w[:, :2]),
    "narrow_negative_start": lambda a, w: a.narrow(-1, -2, 2).mul_(2),
    "select": lambda a, w: a.select(1, 2).mul_(w[0, :3]),
    "unsqueeze": lambda a, w: a.unsqueeze(0)[:, 1].mul_(w[1]),
    "diagonal": lambda a, w: a.diagonal().mul_(w[0, :3]),
    "diagonal_offset": lambda a, w: a.diagonal(1).add_(w[1, :3] * w[1, :3]),
    "view_of_view": lambda a, w: a[1:][:, 2:].mul_(w[1:, :2]),
    "fill": lambda a, w: a[2].fill_(0.5),
    "zero": lambda a, w: a[:, 1].zero_(),
    "copy": lambda a, w: a[0].copy_(w[2] * 2),
    "twice": lambda a, w: a[1].mul_(w[0]).add_(w[2]),
}


def _run(lib, change):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(W, requires_grad=True)
    a = x * 1
    view = change(a, w)
    loss = (a * lib.tensor(C)).sum() + (view * view).sum()
    loss.backward()
    return a, view, x.grad, w.grad


@pytest.mark.parametrize("name", CHANGES)
def test_in_place_through_a_view_gives_torchs_values_and_gradients(name):
    a, view, x_grad, w_grad = _run(sg, CHANGES[name])
    at, view_t, x_grad_t, w_grad_t = _run(torch, CHANGES[name])
    assert_close(a, at, what="base")
    assert_close(view, view_t, what="view")
    assert_close(x_grad, x_grad_t, what="x.grad")
    if w_grad_t is None:
        assert w_grad is None
    else:
        assert_close(w_grad, w_grad_t, what="w.grad")


def test_the_issues_example():
    x = sg.ones(3, requires_grad=True)
    a = x * 1
    a[:2].mul_(3)
    a.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 1.0]  # was [1, 1, 1]: the change was lost


SETS = {
    "int": lambda a, w: a.__setitem__(0, w[1] * 3),
    "slice_number": lambda a, w: a.__setitem__((slice(None), 1), 0.0),
    "integer_array": lambda a, w: a.__setitem__(([0, 2], [1, 3]), w[0, :2]),
    "mask": lambda a, w: a.__setitem__(a > 0, 7.0),
    "into_a_view": lambda a, w: a.t().__setitem__(1, w[2, :3]),
}


@pytest.mark.parametrize("name", SETS)
def test_setitem_on_a_non_leaf_gives_torchs_gradients(name):
    results = []
    for lib in (sg, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        a = x * 1
        SETS[name](a, w)
        (a * a * lib.tensor(C)).sum().backward()
        results.append((a, x.grad, w.grad))
    (a, x_grad, w_grad), (at, x_grad_t, w_grad_t) = results
    assert_close(a, at)
    assert_close(x_grad, x_grad_t)
    assert (w_grad is None) == (w_grad_t is None)
    if w_grad_t is not None:
        assert_close(w_grad, w_grad_t)


def test_in_place_through_a_view_passes_gradcheck_and_gradgradcheck():
    def f(x, w):
        a = x * x
        a[1:, ::2].mul_(w[:2, :2])
        a.diagonal().add_(w[2, :3].tanh())
        return a

    x = sg.tensor(X, requires_grad=True)
    w = sg.tensor(W, requires_grad=True)
    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


# A complex 3x3 (and its 3x3x2 real pairs) and weights of the pairs' entries in the loss
Z = (np.arange(9.0) / 4 - 1 + 1j * np.cos(np.arange(9.0))).reshape(3, 3)
C_PAIRS = np.cos(np.arange(18.0)).reshape(3, 3, 2)

# name -> (whether ``a`` is complex, a change of a view of ``a``'s parts, possibly using ``w``)
PART_CHANGES = {
    "view_as_real_copy": (True, lambda m, a, w: m.view_as_real(a).copy_(m.stack((w, w * w), -1))),
    "real_add": (True, lambda m, a, w: a.real.add_(1)),
    "imag_mul": (True, lambda m, a, w: a.imag.mul_(w)),
    "real_copy": (True, lambda m, a, w: a.real.copy_(w)),
    "imag_of_a_transpose": (True, lambda m, a, w: a.t().imag.mul_(w)),
    "real_of_a_diagonal": (True, lambda m, a, w: a.diagonal().real.copy_(w[0])),
    "column_of_view_as_real": (True, lambda m, a, w: m.view_as_real(a)[1, :, 0].zero_()),
    "view_as_complex_mul": (False, lambda m, a, w: m.view_as_complex(a).mul_(2 + 1j)),
    "imag_of_view_as_complex": (False, lambda m, a, w: m.view_as_complex(a).imag.sub_(w)),
}


@pytest.mark.parametrize("name", PART_CHANGES)
def test_in_place_through_a_view_of_complex_parts_gives_torchs_values_and_gradients(name):
    """A view of complex parts (real, imag, view_as_real) changed in place in a graph changes
    only those parts of its base's history, as PyTorch's CopySlices (the whole entries were
    replaced, losing the other part's gradient, or CopySlices failed on view_as_real's and
    view_as_complex's new dims)."""
    is_complex, change = PART_CHANGES[name]
    start = Z if is_complex else np.stack((Z.real, Z.imag), -1)
    results = []
    for m in (sg, torch):
        x, w = m.tensor(start, requires_grad=True), m.tensor(W[:, :3], requires_grad=True)
        a = x * 1
        change(m, a, w)
        pairs = m.view_as_real(a) if is_complex else a
        (pairs * m.tensor(C_PAIRS) + pairs * pairs).sum().backward()
        results.append((pairs, x.grad, w.grad))
    (pairs, x_grad, w_grad), (pairs_t, x_grad_t, w_grad_t) = results
    assert_close(pairs, pairs_t, what="base")
    assert_close(x_grad, x_grad_t, what="x.grad")
    assert (w_grad is None) == (w_grad_t is None)
    if w_grad_t is not None:
        assert_close(w_grad, w_grad_t, what="w.grad")


def test_a_plain_base_gets_the_history_of_what_was_written_into_it():
    w, wt = sg.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    a, at = sg.zeros(2, 3), torch.zeros(2, 3)
    a[:, 1].copy_(w * w)
    at[:, 1].copy_(wt * wt)
    assert not a.is_leaf and a.requires_grad
    (a * 3).sum().backward()
    (at * 3).sum().backward()
    assert_close(w.grad, wt.grad)


VIEWS_OF_LEAVES = {
    "slice": lambda x: x[:1].mul_(2),
    "reshape": lambda x: x.reshape(4).add_(1),
    "transpose": lambda x: x.t().sub_(1),
    "select": lambda x: x.select(0, 1).zero_(),
    "diagonal": lambda x: x.diagonal().fill_(3.0),
    "setitem": lambda x: x.__setitem__(0, 1.0),
}


@pytest.mark.parametrize("name", VIEWS_OF_LEAVES)
def test_in_place_on_a_view_of_a_leaf_that_requires_grad_raises_and_changes_nothing(name):
    x = sg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    xt = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        VIEWS_OF_LEAVES[name](xt)
    with pytest.raises(RuntimeError, match="leaf"):
        VIEWS_OF_LEAVES[name](x)
    np.testing.assert_array_equal(x.array, [[1.0, 2.0], [3.0, 4.0]])
    assert x.is_leaf and x._version == 0
    with sg.no_grad():  # an update, as an optimizer makes it, is allowed
        VIEWS_OF_LEAVES[name](x)
    assert x._version == 1


def test_a_saved_base_changed_through_a_view_is_caught():
    x = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()  # Exp saves its output
    z = y * 1
    y[1:].mul_(2)  # y is a non-leaf: recorded, and Exp's saved output has changed
    with pytest.raises(RuntimeError, match="in-place"):
        (y.sum() + z.sum()).backward()


# ---- view, is_contiguous, contiguous -----------------------------------------------------------

LAYOUTS = {
    "fresh": lambda t: t,
    "transpose": lambda t: t.t(),
    "strided_slice": lambda t: t[:, ::2],
    "row_slice": lambda t: t[1:],
    "column_slice": lambda t: t[:, 1:3],
    "select_column": lambda t: t.select(1, 1),
    "expand_large": lambda t: t.reshape(-1, 1).expand(12, 6000),  # small ones are copied
    "unsqueeze_transpose": lambda t: t.unsqueeze(1).transpose(0, 2),
    "diagonal": lambda t: t.diagonal(),
}
SHAPES = [(-1,), (2, -1), (4, 3), (1, 12), (3, 2, 2), (-1, 1)]


@pytest.mark.parametrize("name", LAYOUTS)
def test_is_contiguous_view_and_contiguous_match_torch(name):
    t, tt = sg.tensor(X), torch.tensor(X)
    v, vt = LAYOUTS[name](t), LAYOUTS[name](tt)
    assert v.is_contiguous() == vt.is_contiguous()
    for shape in SHAPES:
        try:
            expected = vt.view(shape)
        except RuntimeError as error:
            with pytest.raises(RuntimeError) as caught:
                v.view(shape)
            strides = "view size is not compatible with input tensor's size and stride"
            assert (strides in str(error)) == (strides in str(caught.value))
        else:
            assert_close(v.view(shape), expected)
            assert np.shares_memory(v.view(shape).array, t.array)
    c = v.contiguous()
    assert c.is_contiguous() and (c is v) == vt.is_contiguous()
    assert_close(c.view(-1), vt.contiguous().view(-1))


def test_view_of_a_convolution_output_works_as_in_torch():
    # scratchgrad keeps a convolution's batch last in memory; PyTorch's output is contiguous
    h = sg.nn.Conv2d(1, 2, 3)(sg.randn(2, 1, 5, 5))
    assert h.is_contiguous()
    assert h.view(2, -1).shape == (2, 18)


def test_contiguous_is_differentiable():
    x, xt = sg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    (x.t().contiguous().view(-1) * sg.arange(12.0)).sum().backward()
    (xt.t().contiguous().view(-1) * torch.arange(12.0)).sum().backward()
    assert_close(x.grad, xt.grad)


def test_views_taken_before_an_in_place_change_of_their_base_follow_it():
    results = []
    for lib in (sg, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        a = x * 1
        row, columns = a[1], a.t()[1:]  # views made before the changes below
        a.mul_(w)  # the base changes
        a[0].add_(w[2])  # and a sibling view
        loss = (row * row).sum() + (columns * lib.tensor(C.T[1:])).sum()
        loss.backward()
        results.append((row, columns, x.grad, w.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


def test_views_of_a_tensor_outside_any_graph_follow_a_recorded_change_of_it():
    # the views were taken of a tensor no graph holds; the change brings it into one
    results = []
    for lib in (sg, torch):
        w = lib.tensor(W, requires_grad=True)
        b = lib.tensor(X)
        row, columns = b[1], b.t()[1:]
        b.mul_(w)
        assert row.requires_grad and columns.requires_grad and row.grad_fn is not None
        ((row * row).sum() + (columns * lib.tensor(C.T[1:])).sum()).backward()
        results.append((row, columns, w.grad))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


@pytest.mark.parametrize("lib", [sg, torch])
def test_a_view_taken_under_no_grad_refuses_a_recorded_change_of_it_or_of_its_base(lib):
    w = lib.tensor(W, requires_grad=True)
    b = lib.tensor(X)
    with lib.no_grad():
        view = b[1:]
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        view.mul_(w[1:])
    assert_close(b, X)  # changed nothing
    view.mul_(2)  # no graph: allowed, as PyTorch's
    b.mul_(w)  # the base in a graph: the view's history is ambiguous, so using it raises
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        (view * 2).sum().backward()


def test_a_view_under_no_grad_of_a_base_changed_under_no_grad_stays_usable():
    w = sg.tensor(W, requires_grad=True)
    b = sg.tensor(X)
    with sg.no_grad():
        view = b[1:]
        b.mul_(w)
    assert not view.requires_grad
    assert_close(view, X[1:] * W[1:])


def test_base_and_is_view_are_torchs():
    for lib in (sg, torch):
        x = lib.tensor(X, requires_grad=True)
        y = x * 2
        assert y[1:]._base is y and y[1:][:, 2]._base is y and y.t()._base is y
        assert y._base is None and not y._is_view() and y[1]._is_view()
        assert x.detach()._base is None and not x.detach()._is_view()
        assert (y + 1)._base is None


def test_an_empty_view_shares_its_base_and_version_counter_as_torchs():
    # (an empty array shares no memory to compare: scratchgrad once made such views no views)
    for lib in (sg, torch):
        y = lib.tensor(X, requires_grad=True) * 2
        views = [y.narrow(0, 1, 0), y[:, 2:2], y.t()[:, 1:1].reshape(-1), y[:0].unsqueeze(0)]
        copy = y[[]]
        y.add_(1)
        assert [view._base is y and view._version for view in views] == [1, 1, 1, 1]
        assert copy._base is None and copy._version == 0


@pytest.mark.parametrize(
    "source, dtype",
    [
        (np.float32, np.int32),
        (np.float32, np.float16),
        (np.float32, np.uint8),
        (np.float64, np.float32),
        (np.int16, np.float32),
        (np.float32, np.float64),
    ],
)
def test_view_as_dtype_reads_the_same_bytes_as_torch(source, dtype):
    a = np.linspace(-3, 3, 24).astype(source).reshape(2, 12)
    ours = sg.tensor(a, requires_grad=source in (np.float32, np.float64)).view(
        getattr(sg, np.dtype(dtype).name)
    )
    theirs = torch.tensor(a).view(getattr(torch, np.dtype(dtype).name))
    assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not ours.requires_grad and ours.grad_fn is None and not ours._is_view()


def test_view_as_dtype_shares_memory_and_version_with_its_source():
    x = sg.ones(4)
    bits = x.view(dtype=sg.int32)
    bits[0] = 0
    assert x.tolist() == [0.0, 1.0, 1.0, 1.0] and x._version == bits._version == 1
    assert sg.arange(8.0)[2:].view(sg.float16).storage_offset() == 4


@pytest.mark.parametrize(
    "make, dtype, message",
    [
        (lambda lib: lib.ones(2, 3)[:, ::2], "float16", "stride"),
        (lambda lib: lib.ones(3), "float64", "divisible by 2"),
        (lambda lib: lib.tensor(1.0), "float64", "dim"),
    ],
)
def test_view_as_dtype_of_another_size_refuses_what_torch_refuses(make, dtype, message):
    with pytest.raises(RuntimeError):
        make(torch).view(getattr(torch, dtype))
    x = make(sg)
    with pytest.raises(RuntimeError, match=message):
        x.view(getattr(sg, dtype))


def test_a_tensor_with_views_pickles_and_deep_copies_without_them():
    import copy
    import pickle

    x = sg.tensor(X, requires_grad=True)
    view = x[1:]
    with sg.no_grad():
        view_under_no_grad = x[0]
    for copied in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):  # noqa: S301 (our own)
        assert not hasattr(copied, "_views") and copied.requires_grad
        assert_close(copied, X)
    assert view._base is x and view_under_no_grad._base is x


def test_a_base_takes_its_views_again_in_the_order_they_were_made():
    """An in-place change of a base takes its views again: in the order they were made, so
    that a jitted step records the same calls each time (not in the order of addresses)."""
    base = sg.randn(4, 6, requires_grad=True) * 1.0
    views = [base[:, i] for i in range(6)]
    assert [v is w for v, w in zip(base._views, views)] == [True] * 6


@pytest.mark.parametrize(
    "expand",
    [
        lambda y: y.unsqueeze(0).expand(1, 3, 4),
        lambda y: y.t().expand(4, 3),
        lambda y: y[:, :1].expand(3, 1),
        lambda y: y.expand_as(y),
        lambda y: y[:0].expand(2, 0, 4),  # (no entries to share)
    ],
)
def test_an_expand_that_repeats_no_entry_may_be_written_as_torchs(expand):
    # (it was made read-only as every expand, so the write raised where PyTorch's runs)
    results = []
    for lib in (sg, torch):
        x = lib.tensor(X, requires_grad=True)
        y = x * 2
        expand(y).mul_(lib.tensor(W).sum())
        (y * lib.tensor(C)).sum().backward()
        results.append((y, x.grad))
    (y, grad), (y_torch, grad_torch) = results
    assert_close(y, y_torch)
    assert_close(grad, grad_torch)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        y[:, :1].expand(3, 2).add_(1)


def test_a_detached_view_keeps_torchs_strides_and_refuses_the_same_views():
    # (detach and .data of a view lost its layout: a transpose read as contiguous, and a view
    # PyTorch refuses became a copy)
    for lib in (sg, torch):
        y = lib.arange(24.0).reshape(2, 3, 4)
        swapped = y.transpose(0, 2).detach()
        assert not swapped.is_contiguous() and swapped.stride() == (1, 4, 12)
        assert swapped.detach()[1:].stride() == (1, 4, 12) and swapped[:, 1].data.stride() == (
            1,
            12,
        )
        assert y.detach().is_contiguous() and y.detach().stride() == (12, 4, 1)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            y[:, :2].detach().view(8, 2)
