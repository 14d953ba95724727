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


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", ["default", "number", "numbers", "tensor"])
def test_pointwise_forms_match_torch(name, value):
    ours, theirs = _lists()
    ones, their_ones = _lists()
    twos, their_twos = _lists()
    if name == "addcdiv":  # away from zero
        for o, t in zip(twos, their_twos):
            o.add_(4.0)
            t.add_(4.0)
    # a number goes by keyword, a list or tensor of them by position (PyTorch's "scalars")
    args, their_args = {
        "default": ((), ()),
        "number": ((-0.5,), (-0.5,)),
        "numbers": (([0.5, -1.0, 2.0],), ([0.5, -1.0, 2.0],)),
        "tensor": ((sg.tensor([0.5, -1.0, 2.0]),), (torch.tensor([0.5, -1.0, 2.0]),)),
    }[value]
    out = getattr(sg, f"_foreach_{name}")(ours, ones, twos, *args)
    expected = getattr(torch, f"_foreach_{name}")(theirs, their_ones, their_twos, *their_args)
    assert isinstance(out, tuple)
    for o, e in zip(out, expected):
        assert_close(o, e)
    assert getattr(sg, f"_foreach_{name}_")(ours, ones, twos, *args) is ours
    getattr(torch, f"_foreach_{name}_")(theirs, their_ones, their_twos, *their_args)
    for o, e in zip(ours, theirs):
        assert_close(o, e)


@pytest.mark.parametrize("name", ["sqrt", "neg", "sign", "abs", "exp", "reciprocal"])
def test_unary_forms_match_torch(name):
    ours, theirs = _lists()
    if name == "sqrt":
        ours, theirs = sg._foreach_abs(ours), torch._foreach_abs(theirs)
    for o, e in zip(
        getattr(sg, f"_foreach_{name}")(ours), getattr(torch, f"_foreach_{name}")(theirs)
    ):
        assert_close(o, e)
    assert getattr(sg, f"_foreach_{name}_")(list(ours)) == list(ours)
    getattr(torch, f"_foreach_{name}_")(list(theirs))
    for o, e in zip(ours, theirs):
        assert_close(o, e)


@pytest.mark.parametrize("operand", range(3))
def test_maximum_matches_torch(operand):
    other, their_other = _operands()[operand]
    ours, theirs = _lists()
    for o, e in zip(sg._foreach_maximum(ours, other), torch._foreach_maximum(theirs, their_other)):
        assert_close(o, e)
    assert sg._foreach_maximum_(ours, other) is ours
    torch._foreach_maximum_(theirs, their_other)
    for o, e in zip(ours, theirs):
        assert_close(o, e)


def test_adam_written_with_foreach_ops_matches_torchs():
    """An Adam step as optimizer code writes it with the foreach ops, in both libraries."""

    def adam_step(m, params, grads, exp_avgs, exp_avg_sqs, step, lr=0.1, b1=0.9, b2=0.99):
        m._foreach_lerp_(exp_avgs, grads, 1 - b1)
        m._foreach_mul_(exp_avg_sqs, b2)
        m._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - b2)
        denom = m._foreach_add(m._foreach_sqrt(exp_avg_sqs), 1e-8)
        m._foreach_addcdiv_(params, exp_avgs, list(denom), -lr / (1 - b1**step))

    ours, theirs = _lists()
    grads, their_grads = _lists()
    state = [sg.zeros_like(t) for t in ours], [sg.zeros_like(t) for t in ours]
    their_state = [torch.zeros_like(t) for t in theirs], [torch.zeros_like(t) for t in theirs]
    for step in (1, 2, 3):
        adam_step(sg, ours, grads, *state, step)
        adam_step(torch, theirs, their_grads, *their_state, step)
    for o, e in zip(ours, theirs):
        assert_close(o, e)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, xs: m._foreach_add_(xs, [1.0]),
        lambda m, xs: m._foreach_lerp_(xs, xs[:1], 0.1),
        lambda m, xs: m._foreach_mul_([], 2.0),
        lambda m, xs: m._foreach_add_(xs, [m.ones(2), m.ones(4)]),
        lambda m, xs: m._foreach_addcmul_(xs, xs[:1], xs, 0.5),
        lambda m, xs: m._foreach_addcdiv_(xs, xs, xs, [1.0]),
        lambda m, xs: m._foreach_sqrt([]),
    ],
    ids=["numbers", "tensors", "empty", "shapes", "addcmul", "addcdiv values", "unary empty"],
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
    "addcmul",
    "addcmul_",
    "addcdiv",
    "addcdiv_",
    "maximum",
    "maximum_",
    "sqrt",
    "sqrt_",
    "neg",
    "neg_",
    "sign",
    "sign_",
    "abs",
    "abs_",
    "exp",
    "exp_",
    "reciprocal",
    "reciprocal_",
]


@pytest.mark.parametrize("name", NAMES)
def test_exported_under_torchs_names(name):  # (their doc examples run in test_doctests.py)
    assert getattr(sg, f"_foreach_{name}") is getattr(foreach, name)
    assert callable(getattr(torch, f"_foreach_{name}"))
