"""A user's ``autograd.Function`` gets Tensors in ``forward``, as PyTorch's: the same class body
runs in both libraries (torch functions and Tensor methods inside forward, inputs and an
intermediate saved, an output marked non-differentiable), against PyTorch, finite differences,
graph capture (``scratchgrad.jit``) and vmap."""

import numpy as np
import oracle
import pytest
from oracle import leaves

import scratchgrad as sg
from scratchgrad.autograd.function import once_differentiable

torch = pytest.importorskip("torch")

VALUES = [[0.5, -1.5, 2.0], [-0.3, 0.8, -2.2]]  # no zeros: clamp's kink is not sampled


def clamped_tanh(lib):
    """max(tanh x, 0), its backward written with Tensor ops on the saved input (so it is
    differentiable again), and a mask of the first column as a second output."""

    class ClampedTanh(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append((type(x), lib.is_grad_enabled()))
            out = x.new_zeros(x.shape) + lib.tanh(x).clamp(min=0).view_as(x)
            mask = x[:, 0] > 0
            ctx.save_for_backward(x)
            ctx.mark_non_differentiable(mask)
            return out, mask

        @staticmethod
        def backward(ctx, grad, grad_mask):
            (x,) = ctx.saved_tensors
            return grad * (1 - x.tanh() ** 2) * (x > 0)

    seen = []
    ClampedTanh.seen = seen
    return ClampedTanh


def tanh_saving_an_intermediate(lib):
    """tanh x with the tanh (made in forward) saved, and a once_differentiable backward."""

    class Tanh(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            t = lib.tanh(x)
            ctx.save_for_backward(t)
            return t * 1

        @staticmethod
        @once_differentiable if lib is sg else torch.autograd.function.once_differentiable
        def backward(ctx, grad):
            (t,) = ctx.saved_tensors
            return grad * (1 - t * t)

    return Tanh


def scaled_sin(lib):
    """k sin x in the newer style: forward without ctx, setup_context saving the input."""

    class ScaledSin(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return lib.sin(x) * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.k * x.cos(), None

    return ScaledSin


def test_forward_gets_tensors_without_a_graph_and_gives_torchs_results_and_gradients():
    x, xt = leaves(VALUES)
    ours, theirs = clamped_tanh(sg), clamped_tanh(torch)
    (out, mask), (out_t, mask_t) = ours.apply(x), theirs.apply(xt)
    assert ours.seen == [(sg.Tensor, False)] and theirs.seen == [(torch.Tensor, False)]
    oracle.assert_close(out, out_t)
    assert mask.tolist() == mask_t.tolist() and not mask.requires_grad and out.requires_grad
    (g,) = sg.autograd.grad((out * out).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad((out_t * out_t).sum(), xt, create_graph=True)
    oracle.assert_close(g, gt)
    oracle.assert_close(sg.autograd.grad(g.sum(), x)[0], torch.autograd.grad(gt.sum(), xt)[0])


def test_a_forward_on_tensors_passes_gradcheck_and_gradgradcheck():
    x = sg.tensor(VALUES, dtype=sg.float64, requires_grad=True)
    first = lambda x: clamped_tanh(sg).apply(x)[0]  # noqa: E731
    assert sg.autograd.gradcheck(first, (x,))
    assert sg.autograd.gradgradcheck(first, (x,))


def test_a_saved_intermediate_with_a_once_differentiable_backward_gives_torchs_gradient():
    x, xt = leaves(VALUES)
    tanh_saving_an_intermediate(sg).apply(x).sum().backward()
    tanh_saving_an_intermediate(torch).apply(xt).sum().backward()
    oracle.assert_close(x.grad, xt.grad)


def test_the_newer_style_gets_tensors_in_forward_and_setup_context():
    x, xt = leaves(VALUES)
    y, yt = scaled_sin(sg).apply(x, 3.0), scaled_sin(torch).apply(xt, 3.0)
    oracle.assert_close(y, yt)
    (g,) = sg.autograd.grad(y.sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(yt.sum(), xt, create_graph=True)
    oracle.assert_close(g, gt)
    oracle.assert_close(sg.autograd.grad(g.sum(), x)[0], torch.autograd.grad(gt.sum(), xt)[0])


def test_a_saved_input_changed_in_place_raises_as_torch():
    def call(lib):
        x = lib.tensor(VALUES, requires_grad=True)
        h = x * 1
        out, _ = clamped_tanh(lib).apply(h)
        h.mul_(2)
        out.sum().backward()

    oracle.assert_raises_as_torch(call, RuntimeError, "modified by an in-place operation")


def test_a_forward_returning_arrays_still_works():
    class Doubled(sg.autograd.Function):  # the old style: NumPy functions on the inputs
        @staticmethod
        def forward(ctx, x):
            return np.multiply(x, 2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = sg.tensor([1.0, -2.0], requires_grad=True)
    y = Doubled.apply(x)
    y.sum().backward()
    assert y.tolist() == [2.0, -4.0] and x.grad.tolist() == [2.0, 2.0]


class CubeKeepingTensors(sg.autograd.Function):
    """x**3 with x * x kept as a Tensor attribute of ctx, and the input saved."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.square = x * x
        return ctx.square * x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3 * ctx.square


ClampedTanh = clamped_tanh(sg)  # one class: each call of clamped_tanh makes another


@pytest.mark.parametrize(
    "apply",
    [CubeKeepingTensors.apply, lambda x: ClampedTanh.apply(x.reshape(1, 3))[0]],
    ids=["tensor on ctx", "clamped tanh"],
)
def test_a_jitted_step_replays_a_forward_on_tensors_as_eager(apply):
    def step_of(w):
        def step(x):
            apply(w * x).sum().backward()
            return w.grad

        return step

    w_e = sg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w_j = sg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    eager, jitted = step_of(w_e), sg.jit(step_of(w_j))
    for value in [1.0, 2.0, -3.0, 0.5, 1.5]:
        x = sg.full((3,), value)
        w_e.grad = w_j.grad = None  # outside the step: a Python assignment is not recorded
        expected = eager(x).numpy()
        np.testing.assert_array_equal(jitted(x).numpy(), expected)
        assert np.any(expected != 0)


def test_vmap_is_unchanged_a_batched_argument_has_no_rule_an_unbatched_one_runs():
    ours = clamped_tanh(sg)
    with pytest.raises(RuntimeError, match=r"vmap over ClampedTanh.*generate_vmap_rule"):
        sg.func.vmap(lambda r: ours.apply(r.reshape(1, 3))[0])(sg.ones(2, 3))
    c = sg.tensor(VALUES)
    out = sg.func.vmap(lambda r: r * ours.apply(c)[0].sum())(sg.tensor([1.0, 2.0]))
    expected = np.maximum(np.tanh(np.array(VALUES, np.float32)), 0).sum() * np.array([1.0, 2.0])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
