"""In-place changes that PyTorch refuses on views: an output of a function that returns several
views (split, chunk, split_with_sizes, unbind) changed in place in a graph, or used after its
base changed in place in a graph. Each case runs in both libraries."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

W = np.linspace(-2, 2, 8).reshape(4, 2)
MULTI_OUTPUT = "This view is the output of a function that returns multiple views"

# each returns the pieces of y (4x2) that one call makes, and the op PyTorch names
SPLITS = {
    "split": (lambda lib, y: y.split(2), "Split"),
    "split_list": (lambda lib, y: y.split([1, 3]), "SplitWithSizes"),
    "split_with_sizes": (lambda lib, y: y.split_with_sizes([3, 1]), "SplitWithSizes"),
    "torch_split": (lambda lib, y: lib.split(y, 1, dim=1), "Split"),
    "chunk": (lambda lib, y: y.chunk(2), "Split"),
    "chunk_one": (lambda lib, y: lib.chunk(y, 1, -1), "Split"),
    "unbind": (lambda lib, y: y.unbind(), "Unbind"),
    "unbind_dim": (lambda lib, y: lib.unbind(y, 1), "Unbind"),
}
# each changes the last piece in place
CHANGES = {
    "add_": lambda piece: piece.add_(1),
    "mul_": lambda piece: piece.mul_(piece),
    "copy_": lambda piece: piece.copy_(piece * 2),
    "fill_": lambda piece: piece.fill_(3),
    "zero_": lambda piece: piece.zero_(),
    "exp_": lambda piece: piece.exp_(),
    "iadd": lambda piece: piece.__iadd__(1),
    "setitem": lambda piece: piece.__setitem__(..., 5.0),
}


@pytest.mark.parametrize("lib", [sg, torch])
@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES)
@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS)
def test_changing_an_output_of_a_multi_view_op_in_a_graph_raises_and_changes_nothing(
    lib, split, change
):
    make, name = split
    w = lib.tensor(W, requires_grad=True)
    y = w * 2
    pieces = make(lib, y)
    n = len(pieces) - 1
    with pytest.raises(RuntimeError, match=f"Output {n} of {name} is a view and is being "):
        change(pieces[-1])
    assert_close(y.detach(), 2 * W)
    y.sum().backward()  # the graph is the one before
    assert_close(w.grad, np.full_like(W, 2.0))


@pytest.mark.parametrize("lib", [sg, torch])
@pytest.mark.parametrize(
    "view", [lambda p: p[:1], lambda p: p.view(-1), lambda p: p.t(), lambda p: p.split(1)[0]]
)
def test_a_view_of_such_an_output_refuses_too(lib, view):
    w = lib.tensor(W, requires_grad=True)
    with pytest.raises(RuntimeError, match=MULTI_OUTPUT):
        view((w * 2).split(2)[0]).mul_(3)


@pytest.mark.parametrize("lib", [sg, torch])
def test_of_a_leaf_the_multi_output_refusal_comes_first(lib):
    w = lib.tensor(W, requires_grad=True)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view"):
        w.unbind()[0].add_(1)


@pytest.mark.parametrize("lib", [sg, torch])
def test_of_a_tensor_outside_any_graph_a_change_with_a_tensor_that_requires_grad_raises(lib):
    x = lib.tensor(W)
    v = lib.ones(2, requires_grad=True)
    piece = x.chunk(2)[1]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being"):
        piece.mul_(v)
    assert_close(x, W)


@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS)
def test_outside_a_graph_or_under_no_grad_the_changes_match_torch(split):
    make, _ = split
    results = []
    for lib in (sg, torch):
        x = lib.tensor(W)
        make(lib, x)[-1].add_(1)
        w = lib.tensor(W, requires_grad=True)
        y = w * 2
        with lib.no_grad():
            make(lib, y)[-1].mul_(0)
        results.append((x, y.detach()))
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


@pytest.mark.parametrize(
    "split",
    [lambda y: y.tensor_split(2), lambda y: y.hsplit(2), lambda y: y.vsplit([1, 3])],
)
def test_the_splits_pytorch_does_not_mark_may_change_in_a_graph(split):
    results = []
    for lib in (sg, torch):
        w = lib.tensor(W, requires_grad=True)
        y = w * 2
        piece = split(y)[-1]
        piece.mul_(piece.detach() + 1)
        (y * y).sum().backward()
        results.append(w.grad)
    assert_close(*results)


@pytest.mark.parametrize("lib", [sg, torch])
@pytest.mark.parametrize(
    "split",
    [
        lambda y: y.unsafe_split(2),
        lambda y: y.unsafe_chunk(2),
        lambda y: y.unsafe_split_with_sizes([3, 1]),
    ],
)
def test_the_unsafe_splits_may_change_in_a_graph(lib, split):
    # (PyTorch's pieces are no views, so its base's history leaves the change out; here it is
    # recorded on the base, as for any view)
    y = lib.tensor(W, requires_grad=True) * 2
    split(y)[-1].mul_(3)
    assert_close(y.detach()[-1], 6 * W[-1])


@pytest.mark.parametrize("lib", [sg, torch])
@pytest.mark.parametrize(
    "change",
    [lambda y, w: y.mul_(w), lambda y, w: y[3:].add_(w[3:]), lambda y, w: y.t()[0].exp_()],
)
def test_after_a_recorded_change_of_the_base_a_backward_through_an_output_raises(lib, change):
    w = lib.tensor(W, requires_grad=True)
    y = w * 2
    first, _ = y.split(2)
    change(y, w)
    # (PyTorch raises as soon as the output is used, scratchgrad at the backward through it)
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and its base or another"):
        (first * 2).sum().backward()


@pytest.mark.parametrize("lib", [sg, torch])
def test_after_a_recorded_change_of_a_base_outside_any_graph_its_outputs_raise(lib):
    x = lib.tensor(W)
    v = lib.tensor(W, requires_grad=True)
    first, _ = x.unbind(1)
    x.mul_(v)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        (first * 2).sum().backward()


def test_a_changed_base_whose_outputs_are_not_used_gives_torch_gradient():
    results = []
    for lib in (sg, torch):
        w = lib.tensor(W, requires_grad=True)
        y = w * 2
        pieces = y.chunk(2)
        y[1:].mul_(w[1:])
        (y * y).sum().backward()
        assert pieces[0].requires_grad
        results.append(w.grad)
    assert_close(*results)


@pytest.mark.parametrize("lib", [sg, torch])
def test_the_rows_of_an_iteration_are_the_outputs_of_one_unbind(lib):
    w = lib.tensor(W, requires_grad=True)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and is being"):
        for row in w * 2:
            row.add_(1)
    x = lib.tensor(W)
    for row in x:  # outside any graph: allowed
        row.mul_(2)
    assert_close(x, 2 * W)


@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS)
def test_pieces_taken_under_no_grad_of_a_view_that_requires_grad_are_judged_by_the_base(split):
    """PyTorch asks whether the base (the tensor owning the memory) requires grad: a piece of
    ``arange(8.).view(4, 2).requires_grad_()``, whose base does not, may change in place with
    grad mode on by a value that does not require grad; a piece of a leaf that owns its memory
    may not; nor may either by a value that requires grad."""
    make, _ = split
    changed = []
    for lib in (sg, torch):
        x = lib.arange(8.0, dtype=lib.float64).view(4, 2).requires_grad_()
        changed.append(x)
        with lib.no_grad():
            piece = make(lib, x)[-1]
        piece.add_(1)
        w = lib.ones((), dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="(?i)a view was created in no_grad mode"):
            piece.mul_(w)
        owner = lib.tensor(W, requires_grad=True)
        with lib.no_grad():
            piece = make(lib, owner)[-1]
        with pytest.raises(RuntimeError, match="(?i)a view was created in no_grad mode"):
            piece.add_(1)
    assert_close(changed[0].detach(), changed[1])


@pytest.mark.parametrize("lib", [sg, torch])
def test_reading_the_node_of_a_view_whose_base_changed_raises_as_torchs(lib):
    # (scratchgrad answered with its refusing node; PyTorch raises as soon as it is read)
    y = lib.tensor(W, requires_grad=True) * 2
    piece = y.split(2)[0]
    with lib.no_grad():
        row = y[1]
    y.mul_(3)
    for view, message in [(piece, MULTI_OUTPUT), (row, "A view was created in no_grad mode")]:
        for name in ["grad_fn", "is_leaf"]:
            with pytest.raises(RuntimeError, match=message):
                getattr(view, name)
        assert view.requires_grad and repr(view).endswith("grad_fn=<Invalid>)")
        assert_close(view.detach(), W[:2] * 6 if view is piece else W[1] * 6)


LEAVES_MADE_FROM_VIEWS = {
    "slice": lambda lib: lib.zeros(6, dtype=lib.float64)[1:],
    "reshape": lambda lib: lib.arange(6, dtype=lib.float64).reshape(2, 3),
}
LEAF_CHANGES = {
    "mul_": lambda w: w.mul_(2),
    "setitem": lambda w: w.__setitem__(0, 3.0),
    "view mul_": lambda w: w[1:].mul_(2),
    "view setitem": lambda w: w[0].__setitem__(..., 3.0),
    "t_": lambda w: w.t_(),
}


@pytest.mark.parametrize("lib", [sg, torch])
@pytest.mark.parametrize("change", LEAF_CHANGES.values(), ids=LEAF_CHANGES)
@pytest.mark.parametrize("make", LEAVES_MADE_FROM_VIEWS.values(), ids=LEAVES_MADE_FROM_VIEWS)
def test_a_leaf_that_is_a_view_of_a_tensor_without_grad_refuses_in_place_changes(lib, make, change):
    # the base needs no grad, the leaf does: PyTorch judges by the leaf (before, scratchgrad
    # judged by the base and changed the leaf in place)
    w = make(lib).requires_grad_()
    before = w.detach().clone()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        change(w)
    assert w.shape == before.shape and bool((w == before).all())
