"""A user's ``autograd.Function`` with ``generate_vmap_rule = True`` under ``vmap``: its values,
and its own backward (a straight-through estimator, whose gradient is not its forward's) under
``vmap(grad(f))`` and ``grad`` of a vmapped function, against PyTorch's."""

import numpy as np
import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")

X = np.array([[0.4, 1.6, -2.2], [3.3, -0.7, 0.1]])
W = np.array([0.5, -1.0, 2.0])


def rounding(lib):
    """``round(x * scale)`` whose backward passes ``2 * scale * grad`` (straight through, so
    autograd of the forward would give zero), and a Function of two outputs."""

    class ScaledRound(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, scale):
            return (x * scale).round()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.scale = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            return grad * 2 * ctx.scale, None

    class SplitSigns(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.clamp(min=0), x.clamp(max=0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, positive, negative):
            return positive + 3 * negative

    return ScaledRound, SplitSigns


def results(lib):
    scaled_round, split_signs = rounding(lib)
    x, w = lib.tensor(X), lib.tensor(W)

    def loss(w, row):
        positive, negative = split_signs.apply(scaled_round.apply(row * w, 3.0))
        return (positive**2).sum() + negative.sum()

    values = lib.func.vmap(lambda row: scaled_round.apply(row, 3.0))(x)
    per_sample = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0))(w, x)
    leaf = lib.tensor(W, requires_grad=True)
    lib.func.vmap(lambda row: loss(leaf, row))(x).sum().backward()
    return values, per_sample, leaf.grad


def test_values_and_the_functions_own_gradients_are_torchs():
    for ours, theirs in zip(results(sg), results(torch)):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    assert np.any(results(sg)[1].numpy() != 0)  # the straight-through gradient, not zero


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_without_the_switch_vmap_raises_naming_it(lib):
    scaled_round, _ = rounding(lib)

    class Plain(scaled_round):
        generate_vmap_rule = False

    with pytest.raises(RuntimeError, match="generate_vmap_rule"):
        lib.func.vmap(lambda row: Plain.apply(row, 3.0))(lib.tensor(X))
