"""vmap over the ops that read a member's layout in memory: ``is_contiguous`` and
``contiguous`` (whose copy puts the batch dims first and each member in row-major order), the
views that need that layout, against ``torch.func.vmap`` with the batch dim in each position
and nested."""

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_raises_as_torch, outcome, raised_alike

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


@pytest.mark.parametrize("form", ["channels_last", "preserve_format"])
def test_is_contiguous_of_a_member_refuses_other_formats_as_torch(form):
    errors = []
    for lib in (sg, torch):
        memory_format = getattr(lib, form)
        with pytest.raises(RuntimeError) as error:
            lib.func.vmap(lambda r, f=memory_format: r.is_contiguous(memory_format=f))(
                lib.ones(2, 1, 2, 3, 4)
            )
        errors.append(str(error.value))
    assert errors[0] == errors[1]


def test_a_members_strides_and_storage_offset_are_the_batchs_as_torch():
    """``stride()`` leaves the batch dims out (it gave a row-major member's strides), and
    ``storage_offset()`` is the first member's, at every level of nested vmaps."""
    seen = {}
    for lib in (sg, torch):
        seen[lib] = []

        def record(r, lib=lib):
            seen[lib].append((tuple(r.stride()), r.stride(-1), r.storage_offset()))
            return r

        x = lib.tensor(X)[:, 1:]
        lib.func.vmap(record, in_dims=2)(x)
        lib.func.vmap(lib.func.vmap(record, in_dims=1), in_dims=2)(x)
    assert seen[sg] == seen[torch]


# ---- as_strided ------------------------------------------------------------------------------

ROWS = np.arange(24, dtype=np.float64).reshape(4, 6)

AS_STRIDED = {  # f(lib, member): each member's view, counted from the batch's storage offset
    "windows": lambda lib, r: r.as_strided((3, 2), (1, 2)),
    "offset": lambda lib, r: r.as_strided((2,), (1,), 1),
    "offset_to_the_end": lambda lib, r: r.as_strided((3,), (1,), 3),
    "0d": lambda lib, r: r.as_strided((), (), 2),
    "empty": lambda lib, r: r.as_strided((0, 3), (1, 100)),
    "overlapping": lambda lib, r: r.as_strided((3, 2), (0, 1)),
    "of_a_slice": lambda lib, r: r[1:].as_strided((2,), (2,)),
    "of_a_result": lambda lib, r: (r * 2).as_strided((2, 2), (2, 1)),
    "of_a_contiguous_copy": lambda lib, r: r.flip(0).contiguous().as_strided((2,), (1,)),
    "function": lambda lib, r: lib.as_strided(r, (2,), (1,), 1),
    "keywords": lambda lib, r: r.as_strided(size=(2,), stride=(1,), storage_offset=1),
}

INPUTS = {  # (make(lib): the tensor vmap is given, in_dims)
    "rows": (lambda lib: lib.tensor(ROWS), 0),
    "columns": (lambda lib: lib.tensor(ROWS), 1),
    "rows_of_a_view": (lambda lib: lib.arange(30.0, dtype=lib.float64)[3:27].reshape(4, 6), 0),
    "expanded": (lambda lib: lib.arange(6.0, dtype=lib.float64).expand(4, 6), 0),
}


# (a result of a batch whose batch dim is not in front is laid out otherwise than PyTorch's:
# test_as_strided_of_a_layout_unlike_torchs_raises)
UNLIKE_TORCH = {("of_a_result", "columns")}


@pytest.mark.parametrize(
    ("case", "given"),
    [(c, g) for c in AS_STRIDED for g in INPUTS if (c, g) not in UNLIKE_TORCH],
)
def test_as_strided_of_each_member_matches_torch(case, given):
    """Values and the result's strides (the batch's view, its batch stride in front), or
    PyTorch's error where a member's view would reach outside the first member's memory (an
    offset before a view's own, as the view of ROWS' rows starts at 3)."""
    make, in_dims = INPUTS[given]
    _assert_as_torch(lambda lib: _vmapped(lib, AS_STRIDED[case], in_dims)(make(lib)))


def _assert_as_torch(run):
    """``run(lib)`` gives the same values and strides in both libraries, or the same error."""
    ours, theirs = outcome(run, sg), outcome(run, torch)
    if raised_alike(ours, theirs, "as_strided"):
        assert str(ours) == str(theirs)
        return
    assert_close(ours, theirs)
    assert ours.stride() == theirs.stride()


def test_as_strided_of_an_unbatched_tensor_inside_vmap_is_unbatched():
    ours, theirs = (
        _vmapped(lib, lambda lib, r: r[:2] + lib.arange(9.0).as_strided((2,), (3,), 1), 0)(
            lib.tensor(ROWS, dtype=lib.float32)
        )
        for lib in (sg, torch)
    )
    assert_close(ours, theirs)


@pytest.mark.parametrize("case", ["windows", "offset", "0d", "overlapping", "of_a_slice"])
def test_as_strided_gradients_through_vmap_per_member_and_of_vjp_match_torch(case):
    f = AS_STRIDED[case]
    weights = np.random.default_rng(0).standard_normal(
        tuple(torch.func.vmap(lambda r: f(torch, r))(torch.tensor(ROWS)).shape)
    )
    results = []
    for lib in (sg, torch):
        x = lib.tensor(ROWS, requires_grad=True)
        (_vmapped(lib, f, 0)(x) * lib.tensor(weights)).sum().backward()
        per_member = lib.func.vmap(lib.func.grad(lambda r: (f(lib, r) ** 2).sum()))  # noqa: B023
        _, vjp_fn = lib.func.vjp(lambda r: f(lib, r), lib.tensor(ROWS[0]))  # noqa: B023
        (of_vjp,) = lib.func.vmap(vjp_fn)(lib.tensor(weights))
        results.append([x.grad, per_member(lib.tensor(ROWS)), of_vjp])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs)


@pytest.mark.parametrize("in_dims", [(0, 0), (1, 0), (2, 1)], ids=str)
@pytest.mark.parametrize("case", ["windows", "offset", "0d", "of_a_slice"])
def test_as_strided_under_nested_vmaps_matches_torch(case, in_dims):
    """Each level adds its batch dim's stride in front, and checks its own member's reach."""
    x = np.arange(2 * 4 * 6, dtype=np.float64).reshape(2, 4, 6)
    outer, inner = in_dims
    _assert_as_torch(
        lambda lib: lib.func.vmap(_vmapped(lib, AS_STRIDED[case], inner), outer)(lib.tensor(x))
    )


def test_writes_through_each_members_view_reach_the_given_tensor_as_torch():
    given = []
    for lib in (sg, torch):
        x = lib.tensor(ROWS)
        lib.func.vmap(lambda r: r.as_strided((2,), (1,), 1).mul_(10))(x)  # noqa: B023
        given.append(x)
    assert_close(*given)


OUTSIDE = "result = tensor.as_strided\\({}\\) can access memory outside of `tensor`"
AS_STRIDED_ERRORS = [  # (f(member), the tensor vmap is given, its error)
    (
        lambda r: r.as_strided((3,), (1,), 4),
        ROWS,
        OUTSIDE.format(r"\[3\], \[1\], 4") + ".*\\[4, 7\\].*\\[0, 6\\]",
    ),
    (lambda r: r.as_strided((1,), (1,), -1), ROWS, OUTSIDE.format(r"\[1\], \[1\], -1")),
    (lambda r: r[1:].as_strided((2,), (2,), 0), ROWS, r"range \[0, 3\].*range \[1, 6\]"),
    (lambda r: r.as_strided((7,), (1,)), ROWS, OUTSIDE.format(r"\[7\], \[1\], 0")),
    (lambda r: r.as_strided((1,), (1,)), np.zeros((4, 0)), "`tensor` has no storage"),
    (
        lambda r: r.as_strided((2,), (1, 1)),
        ROWS,
        r"size and stride must have the same length! Got size \[2\] and stride \[1, 1\]",
    ),
    (lambda r: r.as_strided((3,), (-1,)), ROWS, r"Negative strides .* got strides: \[6, -1\]"),
    (lambda r: r.as_strided((-1,), (1,)), ROWS, r"sizes=\[4, -1\] and strides=\[6, 1\]"),
]


@pytest.mark.parametrize(("f", "x", "message"), AS_STRIDED_ERRORS)
def test_as_strided_errors_under_vmap_match_torch(f, x, message):
    """PyTorch's check that a member's view reaches no memory outside the first member's,
    and the errors of the batch's own view (with its batch dim's size and stride)."""
    assert_raises_as_torch(lambda lib: lib.func.vmap(f)(lib.tensor(x)), RuntimeError, message)


def test_as_strided_of_a_layout_unlike_torchs_raises():
    """A member laid out otherwise than PyTorch's (an elementwise result of a batch whose
    batch dim is not in front) raises, as unbatched, rather than read other entries."""
    with pytest.raises(
        RuntimeError, match="as_strided: scratchgrad cannot tell this tensor's storage"
    ):
        sg.func.vmap(lambda r: r.sin().as_strided((2,), (1,)), in_dims=1)(sg.tensor(ROWS))
