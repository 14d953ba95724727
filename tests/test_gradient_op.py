"""``gradient`` against PyTorch where the op table's rows (``gradient_*``, which check values,
gradients and second gradients) do not reach: integer and 16-bit inputs, the forms of
``spacing`` and ``dim``, a coordinate tensor per dim, and the errors; and a property no
reference is needed for: second-order differences are exact on parabolas."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_doc_examples_run, check_against_torch

import scratchgrad as sg


def _both(call):
    ours, theirs = call(sg), call(torch)
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert o.shape == tuple(t.shape)
        np.testing.assert_allclose(o.float().numpy(), t.float().numpy(), rtol=1e-6)


def _ramp(m, *shape, dtype="float64"):
    """Samples of a smooth function that is not a parabola, so that every formula shows."""
    ramp = m.arange(int(np.prod(shape)), dtype=m.float64).reshape(shape) ** 3 / 7
    return ramp.to(getattr(m, dtype))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.gradient(m.arange(12).reshape(3, 4) ** 2),  # integers give float32
        lambda m: m.gradient(m.arange(5, dtype=m.int8) ** 2, spacing=3, edge_order=2),
        lambda m: m.gradient(m.arange(5) ** 2, spacing=[m.tensor([0, 1, 3, 4, 7])]),  # int x, t
        lambda m: m.gradient(m.arange(5) ** 2, spacing=[m.tensor([0, 1, 3, 4, 7.0])], edge_order=2),
        lambda m: m.gradient(_ramp(m, 5, dtype="float16"), spacing=0.5),
        lambda m: m.gradient(_ramp(m, 5, dtype="float16"), spacing=0.5, edge_order=2),
        lambda m: m.gradient(_ramp(m, 4), spacing=m.tensor(2.0)),  # a 0-d tensor is a number
        lambda m: m.gradient(_ramp(m, 4), spacing=None),
        lambda m: m.gradient(_ramp(m, 3, 4), spacing=(2, 0.5), dim=(1, 0)),
        lambda m: m.gradient(_ramp(m, 3, 4), spacing=[2.0], dim=-1, edge_order=2),
        lambda m: m.gradient(_ramp(m, 3, 4), spacing=2.0, dim=[0, -1]),
        lambda m: m.gradient(_ramp(m, 2, 3, 4), dim=[]),
        lambda m: m.gradient(m.tensor(1.0)),  # no dims: no derivatives
        lambda m: m.gradient(m.ones(2, 0), dim=0),  # empty along another dim
        lambda m: m.gradient(  # float32 samples at float64 coordinates: float64
            _ramp(m, 3, 4, dtype="float32"),
            spacing=[m.tensor([0.0, 0.5, 2.0], dtype=m.float64), m.tensor([1.0, 2.0, 4.0, 5.0])],
        ),
    ],
)
def test_matches_torch(call):
    _both(call)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_a_coordinate_tensor_per_dim_gets_torchs_gradients(dtype, edge_order):
    rng = np.random.default_rng(edge_order)
    arrays = [rng.standard_normal((3, 4)), rng.uniform(0.5, 2, 3), rng.uniform(0.5, 2, 4)]

    def call(m):
        return lambda x, s, t: m.gradient(
            x.sin(), spacing=[s.cumsum(0), t.cumsum(0)], edge_order=edge_order
        )

    check_against_torch(call(sg), call(torch), arrays, dtype, what=f"edge_order {edge_order}")


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m: m.gradient(m.ones(3, dtype=m.uint8)), RuntimeError, "does not support uint8"),
        (lambda m: m.gradient(m.ones(3, dtype=m.bool)), RuntimeError, "bool"),
        (lambda m: m.gradient(m.ones(3), edge_order=3), RuntimeError, "only supports edge_order"),
        (lambda m: m.gradient(m.ones(3), edge_order=0), RuntimeError, "only supports edge_order"),
        (lambda m: m.gradient(m.ones(3), edge_order=1.0), TypeError, None),
        (lambda m: m.gradient(m.ones(1, 4)), RuntimeError, "at least edge_order\\+1"),
        (lambda m: m.gradient(m.ones(4, 2), edge_order=2), RuntimeError, "at least edge_order"),
        (lambda m: m.gradient(m.ones(0)), RuntimeError, "at least edge_order"),
        (lambda m: m.gradient(m.ones(3, 4), spacing=[1.0]), RuntimeError, "'self.dim\\(\\) = 2'"),
        (
            lambda m: m.gradient(m.ones(3, 4), spacing=[1.0, 2.0], dim=1),
            RuntimeError,
            "spacing argument of length 2 and a dim argument of length 1",
        ),
        (
            lambda m: m.gradient(m.ones(3, 4), spacing=[m.ones(3, 1)], dim=0),
            RuntimeError,
            "got an element with 2 dimensions",
        ),
        (
            lambda m: m.gradient(m.ones(3), spacing=[m.tensor(1.0)]),
            RuntimeError,
            "got an element with 0 dimensions",
        ),
        (lambda m: m.gradient(m.ones(3), spacing=[m.ones(3), 1.0]), TypeError, None),
        (lambda m: m.gradient(m.ones(3), spacing=[[1.0, 2.0, 3.0]]), TypeError, None),
        (lambda m: m.gradient(m.ones(3), spacing=m.ones(3)), TypeError, None),
        (lambda m: m.gradient(m.ones(3), spacing="1"), TypeError, None),
        (lambda m: m.gradient(m.ones(3, 4), dim=2), IndexError, "out of range"),
        (lambda m: m.gradient(m.ones(3, 4), dim=(0, -2)), RuntimeError, "appears multiple times"),
        (lambda m: m.gradient(m.tensor(1.0), dim=0), IndexError, "no dimensions"),
        (lambda m: m.gradient([1.0, 2.0]), TypeError, "must be Tensor, not list"),
        (lambda m: m.gradient(m.ones(3), 1.0), TypeError, None),  # spacing is keyword-only
    ],
)
def test_errors_as_torchs(call, error, message):
    with pytest.raises(error, match=message):
        call(torch)
    with pytest.raises(error, match=message):
        call(sg)


def test_coordinates_of_another_length_raise():
    # PyTorch broadcasts them and returns a result of another shape than the input
    with pytest.raises(RuntimeError, match="along dim 0 to have 3 entries, .* but got 5"):
        sg.gradient(sg.ones(3, 4), spacing=[sg.arange(5.0)], dim=0)


def test_doc_examples_run():
    assert_doc_examples_run(sg.gradient)


def test_is_not_a_tensor_method():
    assert not hasattr(torch.Tensor, "gradient")
    assert not hasattr(sg.Tensor, "gradient")


_steps = st.lists(st.floats(0.25, 4.0), min_size=2, max_size=6)
_coefficients = st.tuples(*(st.floats(-3.0, 3.0),) * 3)


@settings(max_examples=40, deadline=None)
@given(steps=_steps, coefficients=_coefficients)
def test_second_order_differences_are_exact_on_parabolas(steps, coefficients):
    """a t^2 + b t + c sampled at any increasing t: edge_order=2 gives 2 a t + b at every
    sample (inside as well: the central formula is exact for parabolas); so does an even
    spacing."""
    a, b, c = coefficients
    t = sg.tensor(np.cumsum([0.0, *steps]))
    (uneven,) = sg.gradient(a * t**2 + b * t + c, spacing=[t], edge_order=2)
    np.testing.assert_allclose(uneven.numpy(), (2 * a * t + b).numpy(), rtol=1e-9, atol=1e-9)
    t = sg.arange(len(steps) + 1, dtype=sg.float64) * steps[0]
    (even,) = sg.gradient(a * t**2 + b * t + c, spacing=steps[0], edge_order=2)
    np.testing.assert_allclose(even.numpy(), (2 * a * t + b).numpy(), rtol=1e-9, atol=1e-9)
