"""vmap over the ops that read a member's layout in memory: ``is_contiguous`` and
``contiguous`` (whose copy puts the batch dims first and each member in row-major order), the
views that need that layout, against ``torch.func.vmap`` with the batch dim in each position
and nested."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

X = np.arange(3 * 4 * 5, dtype=np.float64).reshape(3, 4, 5)

LAYOUTS = {  # a member of 2 dims, laid out in memory in several ways
    "as_given": lambda r: r,
    "transposed": lambda r: r.t(),
    "every_other_column": lambda r: r[:, ::2],
    "a_row": lambda r: r[1:2],
    "empty": lambda r: r[:, :0],
}


def _vmapped(lib, f, in_dims):
    """vmap of ``f(lib, member)`` in ``lib``."""
    return lib.func.vmap(lambda r: f(lib, r), in_dims=in_dims)


def _both(f, in_dims, x=X):
    """vmap of ``f(lib, member)`` in both libraries over ``x``."""
    return [_vmapped(lib, f, in_dims)(lib.tensor(x)) for lib in (sg, torch)]


def _contiguity(lib, member):
    """``member.is_contiguous()`` as a batched tensor (a Python bool cannot be returned)."""
    return lib.tensor(member.is_contiguous()) + 0 * member.sum()


@pytest.mark.parametrize("in_dims", [0, 1, 2])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_is_contiguous_answers_for_each_member_as_torch(layout, in_dims):
    ours, theirs = _both(lambda lib, r: _contiguity(lib, LAYOUTS[layout](r)), in_dims)
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("in_dims", [0, 1, 2])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_contiguous_member_can_be_viewed_flat_as_torch(layout, in_dims):
    """``contiguous().view(-1)``: the copy is laid out as PyTorch's (the view of the old
    layout raised where a member was not row-major), and the gradient flows through it."""
    ours, theirs = _both(lambda lib, r: LAYOUTS[layout](r).contiguous().view(-1), in_dims)
    assert_close(ours, theirs)
    grads = []
    for lib in (sg, torch):
        x = lib.tensor(X, requires_grad=True)
        flat = _vmapped(lib, lambda lib, r: LAYOUTS[layout](r).contiguous().view(-1), in_dims)
        (flat(x) * lib.arange(flat(x).shape[-1])).sum().backward()
        grads.append(x.grad)
    assert_close(*grads)


@pytest.mark.parametrize("layout", ["as_given", "transposed"])
def test_nested_members_are_contiguous_as_torch(layout):
    x = X.reshape(3, 4, 5, 1) * np.ones(2)
    answers = []
    for f in (
        lambda lib, r: _contiguity(lib, LAYOUTS[layout](r)),
        lambda lib, r: LAYOUTS[layout](r).contiguous().view(-1),
    ):
        for lib in (sg, torch):
            answers.append(lib.func.vmap(_vmapped(lib, f, 1), in_dims=2)(lib.tensor(x)).tolist())
    assert answers[0] == answers[1] and answers[2] == answers[3]


def test_is_contiguous_of_a_member_refuses_other_formats_as_unbatched():
    with pytest.raises(NotImplementedError, match="channels-last"):
        sg.func.vmap(lambda r: r.is_contiguous(memory_format=sg.channels_last))(
            sg.ones(2, 1, 2, 3, 4)
        )
