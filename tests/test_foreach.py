"""``torch._foreach_*`` against PyTorch's: values with a list, a number, a list of numbers, a
list of tensors or one tensor as the second operand; in place the same list back, changed;
gradients through the out-of-place forms; and PyTorch's errors for lists that do not match."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg
from scratchgrad import foreach

RNG = np.random.default_rng(0)
SHAPES = [(3,), (2, 4), ()]


def _lists(requires_grad=False):
    """The same three float64 tensors in both libraries (as leaves when ``requires_grad``)."""
    arrays = [RNG.standard_normal(s) for s in SHAPES]
    ours = [sg.tensor(a, requires_grad=requires_grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=requires_grad) for a in arrays]
    return ours, theirs


def _operands():
    """(ours, theirs) second operands: a number, numbers, tensors, one 0-dim tensor."""
    numbers = [0.5, -2.0, 3.0]
    ours, theirs = _lists()
    return [
        (1.5, 1.5),
        (numbers, numbers),
        (ours, theirs),
        (sg.tensor(0.25, dtype=sg.float64), torch.tensor(0.25, dtype=torch.float64)),
    ]


BINARY = [("add", {}), ("add", {"alpha": -3.0}), ("sub", {"alpha": 2.0}), ("mul", {}), ("div", {})]


@pytest.mark.parametrize("name, kwargs", BINARY)
@pytest.mark.parametrize("which", range(4))
def test_binary_forms_match_torch(name, kwargs, which):
    other, their_other = _operands()[which]
    if "alpha" in kwargs and which != 2:
        pytest.skip("PyTorch's alpha goes with a tensor list only")
    ours, theirs = _lists()
    out = getattr(sg, f"_foreach_{name}")(ours, other, **kwargs)
    expected = getattr(torch, f"_foreach_{name}")(theirs, their_other, **kwargs)
    assert isinstance(out, tuple) and len(out) == len(expected)
    for o, e in zip(out, expected):
        assert_close(o, e)
    back = getattr(sg, f"_foreach_{name}_")(ours, other, **kwargs)
    getattr(torch, f"_foreach_{name}_")(theirs, their_other, **kwargs)
    assert back is ours
    for o, e in zip(ours, theirs):
        assert_close(o, e)


@pytest.mark.parametrize("weight", ["number", "numbers", "tensors"])
def test_lerp_matches_torch(weight):
    ours, theirs = _lists()
    ends, their_ends = _lists()
    w, their_w = {
        "number": (0.1, 0.1),
        "numbers": ([0.1, 0.5, 0.9], [0.1, 0.5, 0.9]),
        "tensors": _lists(),
    }[weight]
    for o, e in zip(
        sg._foreach_lerp(ours, ends, w), torch._foreach_lerp(theirs, their_ends, their_w)
    ):
        assert_close(o, e)
    assert sg._foreach_lerp_(ours, ends, w) is ours
    torch._foreach_lerp_(theirs, their_ends, their_w)
    for o, e in zip(ours, theirs):
        assert_close(o, e)


def test_copy_zero_and_norm_match_torch():
    ours, theirs = _lists()
    for ord in [2, 1, float("inf")]:
        for o, e in zip(sg._foreach_norm(ours, ord), torch._foreach_norm(theirs, ord)):
            assert_close(o, e)
    src, their_src = _lists()
    sg._foreach_copy_(ours, src)
    torch._foreach_copy_(theirs, their_src)
    for o, e in zip(ours, theirs):
        assert_close(o, e)
    assert sg._foreach_zero_(ours) is ours
    assert all(not t.numpy().any() for t in ours)


def test_gradients_flow_through_the_out_of_place_forms():
    ours, theirs = _lists(requires_grad=True)
    ends, their_ends = _lists()
    (sum(t.sum() for t in sg._foreach_mul(sg._foreach_lerp(ours, ends, 0.3), 2.0))).backward()
    torch_loss = sum(
        t.sum() for t in torch._foreach_mul(torch._foreach_lerp(theirs, their_ends, 0.3), 2.0)
    )
    torch_loss.backward()
    for o, e in zip(ours, theirs):
        assert_close(o.grad, e.grad)


def test_ema_update_under_no_grad_leaves_no_graph():
    params = [sg.ones(2, requires_grad=True)]
    ema = [sg.zeros(2)]
    with sg.no_grad():
        sg._foreach_lerp_(ema, params, 0.1)
    assert not ema[0].requires_grad
    np.testing.assert_allclose(ema[0].numpy(), [0.1, 0.1])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, xs: m._foreach_add_(xs, [1.0]),
        lambda m, xs: m._foreach_lerp_(xs, xs[:1], 0.1),
        lambda m, xs: m._foreach_mul_([], 2.0),
        lambda m, xs: m._foreach_add_(xs, [m.ones(2), m.ones(4)]),
    ],
    ids=["numbers", "tensors", "empty", "shapes"],
)
def test_errors_are_torchs(call):
    ours, theirs = [sg.ones(2), sg.ones(3)], [torch.ones(2), torch.ones(3)]
    with pytest.raises(RuntimeError) as theirs_error:
        call(torch, theirs)
    with pytest.raises(RuntimeError) as ours_error:
        call(sg, ours)
    if "size of tensor" not in str(theirs_error.value):  # the shape message is add_'s own
        assert str(theirs_error.value) in str(ours_error.value)
        assert "_foreach_" in str(ours_error.value)


NAMES = [
    "add",
    "add_",
    "sub",
    "sub_",
    "mul",
    "mul_",
    "div",
    "div_",
    "lerp",
    "lerp_",
    "copy_",
    "zero_",
    "norm",
]


@pytest.mark.parametrize("name", NAMES)
def test_exported_under_torchs_names(name):  # (their doc examples run in test_doctests.py)
    assert getattr(sg, f"_foreach_{name}") is getattr(foreach, name)
    assert callable(getattr(torch, f"_foreach_{name}"))
