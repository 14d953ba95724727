"""Custom ``autograd.Function``s as users write them: a hand-written derivative (Legendre P3),
a spiking neuron with a surrogate gradient, and the ctx API (save_for_backward, saved_tensors,
needs_input_grad, non-tensor arguments, None gradients). Checked against PyTorch's own custom
Functions, the composed expressions, and finite differences.
"""

import functools

import numpy as np
import oracle
import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")


# the engine's results are NumPy's own float64 arithmetic: only round-off may differ
assert_close = functools.partial(oracle.assert_close, tolerance=oracle.ROUND_OFF)


# ---- Legendre polynomial P3 with a hand-written derivative ----------------------------------


class LegendreP3(sg.autograd.Function):
    """P3(x) = (5x^3 - 3x) / 2, with P3'(x) = 3(5x^2 - 1) / 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * (5 * x**3 - 3 * x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 1.5 * (5 * x**2 - 1)


class TorchLegendreP3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * (5 * x**3 - 3 * x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 1.5 * (5 * x**2 - 1)


POINTS = [-1.0, -0.6, 0.0, 0.25, 0.9, 1.7]


def test_legendre_p3_matches_the_composed_polynomial_and_torch():
    x = sg.tensor(POINTS, dtype=sg.float64, requires_grad=True)
    composed = sg.tensor(POINTS, dtype=sg.float64, requires_grad=True)
    xt = torch.tensor(POINTS, dtype=torch.float64, requires_grad=True)
    y = LegendreP3.apply(x)
    y_composed = 0.5 * (5 * composed**3 - 3 * composed)
    yt = TorchLegendreP3.apply(xt)
    assert_close(y, yt)
    assert_close(y_composed, yt)
    assert type(y.grad_fn) is LegendreP3
    seed = [1.0, -2.0, 0.5, 3.0, 1.0, -1.0]
    y.backward(sg.tensor(seed, dtype=sg.float64))
    y_composed.backward(sg.tensor(seed, dtype=sg.float64))
    yt.backward(torch.tensor(seed, dtype=torch.float64))
    assert_close(x.grad, xt.grad)
    assert_close(composed.grad, xt.grad)


def test_legendre_p3_second_derivative_through_the_custom_backward():
    x = sg.tensor(POINTS, dtype=sg.float64, requires_grad=True)
    xt = torch.tensor(POINTS, dtype=torch.float64, requires_grad=True)
    (g,) = sg.autograd.grad(LegendreP3.apply(x).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(TorchLegendreP3.apply(xt).sum(), xt, create_graph=True)
    (g2,) = sg.autograd.grad(g.sum(), x)
    (g2t,) = torch.autograd.grad(gt.sum(), xt)
    assert_close(g2, g2t)
    np.testing.assert_allclose(g2.array, 15 * np.array(POINTS))  # P3'' = 15x


def test_legendre_p3_passes_gradcheck_and_gradgradcheck():
    x = sg.tensor(POINTS, dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(LegendreP3.apply, x)
    assert sg.autograd.gradgradcheck(LegendreP3.apply, x)


def test_gradcheck_perturbs_a_strided_view_in_place():
    """An input that is a strided view (a column of a batch): the finite differences perturb
    its own entries, so the numerical Jacobian is the identity of ``v * 1``, not zeros (a
    flattened copy of a view would take the perturbations instead)."""
    x = sg.randn(1, 2, 3, 3, dtype=sg.float64, requires_grad=True)
    assert sg.autograd.gradcheck(lambda v: v * 1, (x[:, :, 0],))
    assert sg.autograd.gradcheck(lambda v: v.exp().sum(), (x[0, :, 1:, ::2],))


def test_gradcheck_catches_a_wrong_backward():
    class WrongP3(LegendreP3):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 1.5 * (5 * x**2 + 1)  # sign error

    x = sg.tensor(POINTS, dtype=sg.float64, requires_grad=True)
    assert not sg.autograd.gradcheck(WrongP3.apply, x, raise_exception=False)
    with pytest.raises(RuntimeError, match="mismatch"):
        sg.autograd.gradcheck(WrongP3.apply, x)


# ---- a spiking neuron with a surrogate gradient ---------------------------------------------


class Spike(sg.autograd.Function):
    """Heaviside step forward; the fast-sigmoid surrogate 1 / (1 + k|v|)^2 backward."""

    @staticmethod
    def forward(ctx, v, slope):
        ctx.save_for_backward(v)
        ctx.slope = slope
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        return grad / (1 + ctx.slope * v.abs()) ** 2, None


class TorchSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v, slope):
        ctx.save_for_backward(v)
        ctx.slope = slope
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        return grad / (1 + ctx.slope * v.abs()) ** 2, None


def _lif_loss(spike, x, w, target, beta=0.9, threshold=1.0, steps=5):
    """A leaky integrate-and-fire layer unrolled over time, with reset by subtraction."""
    v = x[0] @ w * 0
    count = 0
    for t in range(steps):
        v = beta * v + x[t] @ w
        s = spike(v - threshold, 25.0)
        v = v - s * threshold
        count = count + s
    return ((count - target) ** 2).sum()


def test_spiking_layer_with_surrogate_gradient_matches_torch():
    rng = np.random.default_rng(0)
    x_np = rng.uniform(0, 1, (5, 3, 4))  # (time, batch, inputs)
    w_np = rng.normal(0, 0.8, (4, 2))
    target_np = rng.integers(0, 4, (3, 2)).astype(np.float64)
    w = sg.tensor(w_np, requires_grad=True)
    wt = torch.tensor(w_np, requires_grad=True)
    loss = _lif_loss(Spike.apply, sg.tensor(x_np), w, sg.tensor(target_np))
    loss_t = _lif_loss(TorchSpike.apply, torch.tensor(x_np), wt, torch.tensor(target_np))
    loss.backward()
    loss_t.backward()
    assert loss.item() == loss_t.item()
    assert np.abs(w.grad.array).sum() > 0  # the surrogate lets a gradient through the step
    assert_close(w.grad, wt.grad)


def test_spike_forward_is_a_step_and_backward_is_the_surrogate():
    v = sg.tensor([-1.0, 0.0, 0.5], dtype=sg.float64, requires_grad=True)
    s = Spike.apply(v, 10.0)
    np.testing.assert_array_equal(s.array, [0.0, 0.0, 1.0])
    s.sum().backward()
    np.testing.assert_allclose(v.grad.array, 1 / (1 + 10 * np.abs([-1.0, 0.0, 0.5])) ** 2)


# ---- the ctx API ----------------------------------------------------------------------------


class ScaledProduct(sg.autograd.Function):
    """``a * b * scale`` (``scale`` a Python number), recording what backward was told."""

    seen: dict = {}

    @staticmethod
    def forward(ctx, a, b, scale, *, mode="plain"):
        ctx.save_for_backward(a, b)
        ctx.scale, ctx.mode = scale, mode
        return a * b * scale

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ScaledProduct.seen = {
            "needs": ctx.needs_input_grad,
            "saved": (a.array.copy(), b.array.copy()),
            "mode": ctx.mode,
        }
        needs_a, needs_b, _ = ctx.needs_input_grad
        return (
            grad * b * ctx.scale if needs_a else None,
            grad * a * ctx.scale if needs_b else None,
            None,
        )


@pytest.mark.parametrize("a_grad, b_grad", [(True, False), (False, True), (True, True)])
def test_needs_input_grad_and_saved_tensors(a_grad, b_grad):
    a = sg.tensor([1.0, 2.0], dtype=sg.float64, requires_grad=a_grad)
    b = sg.tensor([3.0, -1.0], dtype=sg.float64, requires_grad=b_grad)
    out = ScaledProduct.apply(a, b, 2.0, mode="keyword")
    np.testing.assert_array_equal(out.array, [6.0, -4.0])
    out.sum().backward()
    assert ScaledProduct.seen["needs"] == (a_grad, b_grad, False)
    np.testing.assert_array_equal(ScaledProduct.seen["saved"][0], [1.0, 2.0])
    np.testing.assert_array_equal(ScaledProduct.seen["saved"][1], [3.0, -1.0])
    assert ScaledProduct.seen["mode"] == "keyword"
    if a_grad:
        np.testing.assert_array_equal(a.grad.array, [6.0, -2.0])
    if b_grad:
        np.testing.assert_array_equal(b.grad.array, [2.0, 4.0])


def test_saved_tensors_are_gone_after_backward():
    a = sg.tensor([1.0], requires_grad=True)
    out = ScaledProduct.apply(a, sg.tensor([2.0]), 1.0)
    node = out.grad_fn
    out.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        _ = node.saved_tensors


def test_a_backward_returning_none_leaves_that_input_without_grad_as_in_torch():
    class FirstOnly(sg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    class TorchFirstOnly(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    a, b = sg.ones(2, requires_grad=True), sg.ones(2, requires_grad=True)
    at, bt = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    (FirstOnly.apply(a, b) * 2).sum().backward()
    (TorchFirstOnly.apply(at, bt) * 2).sum().backward()
    assert b.grad is None and bt.grad is None
    assert_close(a.grad, at.grad)


def test_a_custom_backward_may_return_a_broadcast_gradient_as_in_torch():
    class BroadcastAdd(sg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad, grad  # shape (3, 4) for both; the engine sums to each input's shape

    a = sg.ones(3, 1, requires_grad=True)
    b = sg.ones(4, requires_grad=True)
    BroadcastAdd.apply(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.array, np.full((3, 1), 4.0))
    np.testing.assert_array_equal(b.grad.array, np.full(4, 3.0))


def test_a_function_saving_an_intermediate_array():
    class Sin(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(np.cos(x))  # neither an input nor the output
            return np.sin(x)

        @staticmethod
        def backward(ctx, grad):
            (cos,) = ctx.saved_tensors
            return grad * cos

    x = sg.tensor([0.1, 0.2, 3.0], dtype=sg.float64, requires_grad=True)
    Sin.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.array, np.cos([0.1, 0.2, 3.0]))


def test_apply_records_nothing_under_no_grad_or_without_grad_inputs():
    x = sg.tensor([0.5], dtype=sg.float64, requires_grad=True)
    with sg.no_grad():
        out = LegendreP3.apply(x)
    assert not out.requires_grad and out.grad_fn is None
    plain = LegendreP3.apply(sg.tensor([0.5]))
    assert not plain.requires_grad and plain.is_leaf


def test_backward_with_the_wrong_number_of_gradients_names_the_function():
    class TooMany(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match="TooMany.backward returned 2 gradients for 1"):
        TooMany.apply(sg.ones(2, requires_grad=True)).sum().backward()


def test_backward_may_return_extra_gradients_that_are_none_as_in_torch():
    grads = []
    for lib in (sg, torch):

        class ExtraNones(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, None, None

        x = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        (ExtraNones.apply(x) ** 2).sum().backward()
        grads.append(x.grad)
    assert_close(*grads)


def test_backward_with_a_gradient_of_the_wrong_shape_names_the_function():
    class WrongShape(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return sg.ones(5)

    x = sg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"WrongShape.*\(5,\).*\(2,\)"):
        WrongShape.apply(x).sum().backward()
    assert x.grad is None


# ---- several outputs, mark_non_differentiable, once_differentiable ----------------------------


def _sincos(lib):
    """The same Function in both libraries: (sin x, cos x, argmax x), the index not
    differentiable."""

    class SinCos(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            index = x.argmax()
            ctx.mark_non_differentiable(index)
            return x.sin(), x.cos(), index

        @staticmethod
        def backward(ctx, grad_sin, grad_cos, grad_index):
            (x,) = ctx.saved_tensors
            assert grad_index.shape == () and not grad_index.any()  # zeros, as PyTorch passes
            return grad_sin * x.cos() - grad_cos * x.sin()

    return SinCos


def _split(lib, seen):
    """x * 2, x * 3 and argmax x (not differentiable), without materialized gradients: its
    backward notes which gradients were None."""

    class Split(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            index = x.argmax()
            ctx.mark_non_differentiable(index)
            return x * 2, x * 3, index

        @staticmethod
        def backward(ctx, grad_twice, grad_thrice, grad_index):
            seen.append((grad_twice is None, grad_thrice is None, grad_index is None))
            grad = 0
            if grad_twice is not None:
                grad = grad + grad_twice * 2
            if grad_thrice is not None:
                grad = grad + grad_thrice * 3
            return grad

    return Split


def test_set_materialize_grads_false_passes_none_for_an_output_no_gradient_reached():
    """``ctx.set_materialize_grads(False)``: None for an unused output (and a
    non-differentiable one), in each walk of a retained graph, as PyTorch passes."""
    results = []
    for lib in (sg, torch):
        seen = []
        x = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        twice, thrice, _ = _split(lib, seen).apply(x)
        loss = (twice * twice).sum()
        loss.backward(retain_graph=True)
        (thrice.sum() + loss).backward()
        results.append((seen, x.grad))
    (seen, grad), (seen_t, grad_t) = results
    assert seen == seen_t == [(False, True, True), (False, False, True)]
    assert_close(grad, grad_t)


@pytest.mark.parametrize(
    "loss",
    [
        lambda s, c: (s * c * 3).sum(),
        lambda s, c: s.sum(),  # cos unused: backward gets zeros for it
        lambda s, c: (c * c).sum() + s[0],
    ],
)
def test_a_function_with_several_outputs_returns_tensors_with_torchs_gradients(loss):
    values = [0.5, -1.0, 2.0]
    results = []
    for lib in (sg, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        s, c, index = _sincos(lib).apply(x)
        loss(s, c).backward()
        results.append((s, c, index, x.grad))
    (s, c, index, grad), (st, ct, index_t, grad_t) = results
    assert_close(s, st)
    assert_close(c, ct)
    assert index.item() == index_t.item() == 2 and index.dtype == sg.int64
    assert s.requires_grad and c.requires_grad and not index.requires_grad
    assert_close(grad, grad_t)


def test_plain_values_among_the_outputs_come_back_as_they_are_as_in_torch():
    """A count or None returned beside tensors stays a Python value (backward gets None)."""
    results = []
    for lib in (sg, torch):

        class WithCount(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp(), 7, None

            @staticmethod
            def backward(ctx, grad, grad_count, grad_none):
                assert grad_count is None and grad_none is None
                return grad * 3

        x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
        y, count, nothing = WithCount.apply(x)
        y.sum().backward()
        with lib.no_grad():
            plain = WithCount.apply(x)[1:]
        results.append((y, count, nothing, x.grad, plain))
    (y, count, nothing, grad, plain), (yt, count_t, nothing_t, grad_t, plain_t) = results
    assert (count, nothing, plain) == (count_t, nothing_t, plain_t) == (7, None, (7, None))
    assert_close(y, yt)
    assert_close(grad, grad_t)


def test_several_outputs_keep_the_layouts_the_forward_returned_them_in_as_in_torch():
    """A transposed output beside another comes back transposed, as PyTorch's (the outputs
    were packed into one array and came back C-ordered: what reads them then adds in another
    order), with PyTorch's gradient through both orders, twice differentiable."""
    results = []
    for lib in (sg, torch):

        class TransposedAndSum(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                return y.permute(2, 0, 1), y.sum(0)

            @staticmethod
            def backward(ctx, grad_permuted, grad_sum):
                return grad_permuted.permute(1, 2, 0) * 2 + grad_sum * 2

        x = lib.arange(24.0, dtype=lib.float64).reshape(2, 3, 4).requires_grad_()
        permuted, summed = TransposedAndSum.apply(x)
        weights = lib.arange(24.0, dtype=lib.float64).reshape(4, 2, 3)
        (permuted * weights).sum().backward()
        results.append((permuted, summed, x.grad))
    (permuted, summed, grad), (permuted_t, summed_t, grad_t) = results
    itemsize = permuted_t.element_size()
    assert permuted.detach().numpy().strides == tuple(s * itemsize for s in permuted_t.stride())
    assert_close(permuted, permuted_t)
    assert_close(summed, summed_t)
    assert_close(grad, grad_t)
    x = sg.randn(2, 3, 4, dtype=sg.float64, requires_grad=True)
    f = lambda x: TransposedAndSum.apply(x)  # noqa: E731
    assert sg.autograd.gradcheck(f, (x,)) and sg.autograd.gradgradcheck(f, (x,))


def test_several_outputs_pass_gradcheck_and_gradgradcheck():
    x = sg.tensor([0.5, -1.0, 2.0], dtype=sg.float64, requires_grad=True)
    f = lambda x: _sincos(sg).apply(x)[:2]  # noqa: E731
    assert sg.autograd.gradcheck(f, (x,))
    assert sg.autograd.gradgradcheck(f, (x,))


def test_several_outputs_without_grad_are_plain_tensors():
    x = sg.tensor([0.5, 2.0], requires_grad=True)
    with sg.no_grad():
        s, c, index = _sincos(sg).apply(x)
    assert not (s.requires_grad or c.requires_grad or index.requires_grad)
    np.testing.assert_allclose(c.numpy(), np.cos([0.5, 2.0]), rtol=1e-6)


def test_once_differentiable_runs_backward_once_and_refuses_a_second_order():
    from scratchgrad.autograd.function import once_differentiable

    class Cube(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            assert not sg.is_grad_enabled()
            return grad * 3 * x**2

    x = sg.tensor([1.0, 2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]
    (g,) = sg.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad  # as PyTorch: the gradient it was given did not require grad
    (g,) = sg.autograd.grad((Cube.apply(x) * (x * 1)).sum(), x, create_graph=True)
    with pytest.raises(
        RuntimeError, match="Cube: trying to differentiate twice.*once_differentiable"
    ):
        g.sum().backward()


@pytest.mark.parametrize("returned", ["the input as it came", "a view of the input"])
@pytest.mark.parametrize(
    "change", [lambda y: y.mul_(3), lambda y: y.zero_(), lambda y: y[0:1].add_(1)]
)
def test_an_output_sharing_an_inputs_memory_refuses_an_in_place_change_as_pytorchs(
    returned, change
):
    """Changed in place, the output changed the input too, and so the value its backward
    read: ``x.grad`` came back [9, 18] for ``mul_(3)``, where [3, 6] is the derivative.
    PyTorch refuses the change; so does ours now, before it writes anything."""
    for lib in (sg, torch):

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x if returned == "the input as it came" else x[:]

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * x

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Scale.apply(x * 1)
        with pytest.raises(RuntimeError, match=r"Output 0 of \w+ is a view"):
            change(y)
        assert y.tolist() == [1.0, 2.0]
        y.sum().backward()
        assert x.grad.tolist() == [1.0, 2.0]


def test_an_output_made_anew_may_change_in_place():
    class Double(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = sg.tensor([1.0, 2.0], requires_grad=True)
    Double.apply(x * 1).mul_(3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
