"""``ctx.mark_dirty``: a user's Function that changes an input in place returns the input's own
Tensor, whose history continues from the Function's node, as PyTorch's (one class body runs in
both libraries)."""

import numpy as np
import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")


def functions(lib):
    """``ScaleShift``: x * 2 + 1 in place, one output; ``Twice``: x doubled in place and x + 1
    as a second output; ``Unreturned``: marks its input dirty and returns another tensor."""

    class ScaleShift(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2).add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x + 1

        @staticmethod
        def backward(ctx, grad, grad_plus_one):
            return 2 * grad + 2 * grad_plus_one

    class Unreturned(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return ScaleShift, Twice, Unreturned


def run(lib, case):
    """``case`` run in ``lib``: what it returns, whether the dirty output is the input's own
    Tensor, and the leaf's gradient."""
    scale_shift, twice, _ = functions(lib)
    w = lib.tensor([0.5, -1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    if case == "non-leaf":
        y = w * 3
        out = scale_shift.apply(y)
        same = out is y
        (out * out).sum().backward()
    elif case == "view":
        base = w * 1
        view = base[1:3]
        out = scale_shift.apply(view)
        same = out is view
        (base * base).sum().backward()  # through the base: its middle went through the Function
        out = base
    else:  # two outputs
        y = w * 1
        first, second = twice.apply(y)
        same = first is y
        (first * second).sum().backward()
        out = second
    return out.detach().numpy(), same, w.grad.numpy()


@pytest.mark.parametrize("case", ["non-leaf", "view", "two outputs"])
def test_a_dirty_input_comes_back_itself_with_torchs_values_and_gradients(case):
    ours, theirs = run(sg, case), run(torch, case)
    assert ours[1] and theirs[1]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)


def test_the_grad_fn_is_the_functions_and_the_version_counts_the_change():
    scale_shift, _, _ = functions(sg)
    y = sg.ones(3, requires_grad=True) * 1
    version = y._version
    assert scale_shift.apply(y).grad_fn.name() == "ScaleShiftBackward"
    assert y._version > version


def test_a_tensor_saved_before_the_change_raises_at_backward_as_torch():
    for lib in (sg, torch):
        scale_shift, _, _ = functions(lib)
        y = lib.ones(3, requires_grad=True) * 2
        z = y.sin()  # saves y
        scale_shift.apply(y)
        with pytest.raises(RuntimeError, match="modified by an inplace|in-place operation"):
            z.sum().backward()


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_leaf_that_requires_grad_is_refused(lib):
    scale_shift, _, _ = functions(lib)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        scale_shift.apply(lib.ones(3, requires_grad=True))


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_an_input_marked_dirty_must_be_returned(lib):
    _, _, unreturned = functions(lib)
    with pytest.raises(RuntimeError, match="marked (as )?dirty"):
        unreturned.apply(lib.ones(2, requires_grad=True) * 1)


def test_without_a_graph_the_input_itself_comes_back_changed():
    scale_shift, _, _ = functions(sg)
    x = sg.ones(2)
    version = x._version
    assert scale_shift.apply(x) is x
    assert x.tolist() == [3.0, 3.0] and x._version > version


def test_a_jitted_step_replays_the_change_as_eager():
    def step_of(w):
        scale_shift, _, _ = functions(sg)

        def step(x):
            y = scale_shift.apply(w * x)
            (y * y).sum().backward()
            return y

        return step

    w_e = sg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w_j = sg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    eager, jitted = step_of(w_e), sg.jit(step_of(w_j))
    for value in [1.0, 2.0, -3.0, 0.5, 1.5]:
        x = sg.full((3,), value)
        w_e.grad = w_j.grad = None
        np.testing.assert_array_equal(jitted(x).detach().numpy(), eager(x).detach().numpy())
        np.testing.assert_array_equal(w_j.grad.numpy(), w_e.grad.numpy())
