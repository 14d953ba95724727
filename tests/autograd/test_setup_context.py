"""Custom Functions in PyTorch's newer style: ``forward`` without ``ctx`` and a separate
``setup_context(ctx, inputs, output)``, against the same Functions under PyTorch."""

import numpy as np
import oracle
import pytest
from oracle import leaves

import scratchgrad as sg

torch = pytest.importorskip("torch")


def scaled_square(lib):
    """x * x * k with k a plain number, x saved and k kept on ctx in setup_context."""

    class ScaledSquare(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * ctx.k * x, None

    return ScaledSquare


def split_sign(lib):
    """Two outputs, the second (a mask) marked non-differentiable in setup_context."""

    class SplitSign(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x, x > 0

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_non_differentiable(output[1])
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad, grad_mask):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    return SplitSign


def test_forward_then_setup_context_give_torchs_gradients_and_second_derivatives():
    x, xt = leaves([0.5, -1.5, 2.0])
    y, yt = scaled_square(sg).apply(x, 3.0), scaled_square(torch).apply(xt, 3.0)
    oracle.assert_close(y, yt)
    (g,) = sg.autograd.grad(y.sin().sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(yt.sin().sum(), xt, create_graph=True)
    oracle.assert_close(g, gt)
    oracle.assert_close(sg.autograd.grad(g.sum(), x)[0], torch.autograd.grad(gt.sum(), xt)[0])


def test_setup_context_may_mark_an_output_non_differentiable():
    x, xt = leaves([0.5, -1.5, 2.0])
    (sq, mask), (sqt, maskt) = split_sign(sg).apply(x), split_sign(torch).apply(xt)
    assert not mask.requires_grad and not maskt.requires_grad
    np.testing.assert_array_equal(mask.numpy(), maskt.numpy())
    (sq * 3).sum().backward()
    (sqt * 3).sum().backward()
    oracle.assert_close(x.grad, xt.grad)


def test_setup_context_style_passes_gradcheck():
    x = sg.tensor([0.3, -0.7], dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(lambda t: scaled_square(sg).apply(t, 2.5), (x,))


def test_a_subclass_may_replace_setup_context():
    base = scaled_square(sg)

    class Halved(base):
        @staticmethod
        def setup_context(ctx, inputs, output):
            base.setup_context(ctx, inputs, output)
            ctx.k = inputs[1] / 2  # what backward reads, changed by the subclass only

    x = sg.tensor([1.0, 2.0], requires_grad=True)
    Halved.apply(x, 4.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])


def test_a_setup_context_function_replays_under_jit():
    w_eager, w_jit = (sg.tensor([0.5, -1.0], requires_grad=True) for _ in range(2))
    square = scaled_square(sg)

    def step_of(w):
        def step(x):
            square.apply(w * x, 3.0).sum().backward()
            return w.grad

        return step

    eager, jitted = step_of(w_eager), sg.jit(step_of(w_jit))
    for value in [1.0, 2.0, -3.0]:
        w_eager.grad = w_jit.grad = None
        x = sg.full((2,), value)
        np.testing.assert_array_equal(eager(x).numpy(), jitted(x).numpy())


def test_setup_context_gets_defaults_and_keywords_bound_as_in_torch():
    """PyTorch binds ``apply``'s arguments to ``forward``'s signature: ``inputs`` holds the
    defaults and the keywords in their places, and backward returns a gradient for each."""
    results = []
    for lib in (sg, torch):

        class Scaled(lib.autograd.Function):
            @staticmethod
            def forward(x, k=2.0, shift=0.0):
                return x.sin() * k + shift

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, ctx.k, _ = inputs
                ctx.save_for_backward(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x.cos() * ctx.k, None, None

        x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
        outs = [Scaled.apply(x), Scaled.apply(x, shift=1.0), Scaled.apply(x, 3.0)]
        sum(out.sum() for out in outs).backward()
        results.append((*outs, x.grad))
    for ours, theirs in zip(*results):
        oracle.assert_close(ours, theirs, tolerance=oracle.ROUND_OFF)
