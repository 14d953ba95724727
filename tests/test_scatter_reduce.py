"""``scatter_reduce`` (and its in-place and function forms) and the legacy ``scatter(...,
reduce=)`` against PyTorch: values and gradients for every reduction with and without the
tensor's own entries, ties, zeros in a product, integer and bool tensors, and the errors. The op
table's rows (``tests/op_table.py``) add gradcheck, gradgradcheck and jit."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from oracle import check_against_torch

import scratchgrad as sg

REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


@st.composite
def _cases(draw):
    """A shape, a dim of it, an index (repeats likely) of a shape no larger, and whether the
    values are small integers (ties and zeros likely)."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = tuple(draw(st.integers(1, n)) for n in shape)
    index_shape = tuple(
        draw(st.integers(1, 5)) if d == dim % len(shape) else n for d, n in enumerate(index_shape)
    )
    seed = draw(st.integers(0, 2**32 - 1))
    return shape, dim, index_shape, seed, draw(st.booleans())


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@settings(max_examples=20, deadline=None)
@given(case=_cases())
def test_values_and_gradients_are_pytorchs(case, dtype, reduce, include_self):
    shape, dim, index_shape, seed, integral = case
    rng = np.random.default_rng(seed)
    index = rng.integers(0, shape[dim], index_shape)
    draw = (lambda s: rng.integers(-2, 3, s).astype(float)) if integral else rng.standard_normal
    arrays = [draw(shape), draw(index_shape)]

    def call(m):
        return lambda x, src: m.scatter_reduce(
            x, dim, m.tensor(index), src, reduce, include_self=include_self
        )

    if integral and reduce == "prod" and dtype == "float32":
        return  # products of exact zeros: compared in float64
    check_against_torch(call(sg), call(torch), arrays, dtype, what=reduce, seed=seed)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "bool"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_integer_and_bool_values_are_pytorchs(reduce, dtype):
    """An integer mean is floored; bool sums and products are or and and."""
    rng = np.random.default_rng(3)
    low = 0 if dtype in ("uint8", "bool") else -9
    x, src = (rng.integers(low, 10, s).astype(dtype) for s in ((3, 4), (5, 4)))
    index = rng.integers(0, 3, (5, 4))
    for include_self in (True, False):
        outcomes = []
        for m in (sg, torch):
            try:
                out = m.tensor(x).scatter_reduce(
                    0, m.tensor(index), m.tensor(src), reduce, include_self=include_self
                )
                outcomes.append(out.numpy())
            except (RuntimeError, NotImplementedError) as error:
                outcomes.append(type(error))
        if isinstance(outcomes[1], type):
            assert outcomes[0] is outcomes[1]
        else:
            np.testing.assert_array_equal(*outcomes)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_sixteen_bit_values_are_pytorchs_bit_for_bit(reduce, dtype):
    """Reduced in float32 and rounded once (a mean: its sum rounded, then divided), as
    PyTorch's; a bfloat16 mean was once floored as an integer's."""
    rng = np.random.default_rng(5)
    x, src = rng.standard_normal((3, 4)) * 3, rng.standard_normal((64, 4))
    index = rng.integers(0, 3, (64, 4))
    for include_self in (True, False):
        results = []
        for m in (sg, torch):
            x_, src_ = (m.tensor(a).to(getattr(m, dtype)) for a in (x, src))
            out = x_.scatter_reduce(0, m.tensor(index), src_, reduce, include_self=include_self)
            results.append(out.float().numpy())
        np.testing.assert_array_equal(*results)


def test_a_product_with_zeros_has_pytorchs_gradients_and_refuses_a_second_order_as_torch():
    """One zero at a position: the product of the others; two: zero, and no second order."""
    x = np.array([2.0, 0.0, 3.0, 5.0])
    src = np.array([0.0, 4.0, 0.0, 0.0, 7.0, 0.5])
    index = [0, 1, 2, 2, 3, 0]
    grads = []
    for m in (sg, torch):
        xs = m.tensor(x, requires_grad=True)
        ss = m.tensor(src, requires_grad=True)
        out = xs.scatter_reduce(0, m.tensor(index), ss, "prod")
        gx, gs = m.autograd.grad(
            out, (xs, ss), m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64), create_graph=True
        )
        grads.append((out.detach().numpy(), gx.detach().numpy(), gs.detach().numpy()))
        with pytest.raises(RuntimeError, match="Double backward is unsupported for src"):
            m.autograd.grad(gs.sum(), ss)
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_a_product_without_repeated_zeros_has_a_second_order():
    x = sg.tensor([[1.5, -0.5], [2.0, 0.7]], dtype=sg.float64, requires_grad=True)
    src = sg.tensor([[0.3, 2.0], [-1.1, 0.0]], dtype=sg.float64, requires_grad=True)
    index = sg.tensor([[1, 0], [1, 0]])
    for include_self in (True, False):
        assert sg.autograd.gradgradcheck(
            lambda a, b, keep=include_self: a.scatter_reduce(
                0, index, b, "prod", include_self=keep
            ),
            (x, src),
        )


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_the_legacy_reduce_of_scatter_is_pytorchs_and_has_no_derivative(reduce):
    rng = np.random.default_rng(1)
    x, src, index = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), [[0, 2, 0, 1]] * 2
    for value in (sg.tensor(src), 2.5):
        theirs = torch.tensor(x).scatter(
            0,
            torch.tensor(index),
            torch.tensor(src) if isinstance(value, sg.Tensor) else value,
            reduce=reduce,
        )
        ours = sg.tensor(x).scatter(0, sg.tensor(index), value, reduce=reduce)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    ints = sg.tensor([[1, 2], [3, 4]]).scatter(0, sg.tensor([[0, 0]]), 2.5, reduce=reduce)
    expected = torch.tensor([[1, 2], [3, 4]]).scatter(0, torch.tensor([[0, 0]]), 2.5, reduce=reduce)
    assert ints.tolist() == expected.tolist()  # the number cast to the tensor's dtype first
    leaf = sg.tensor(x, requires_grad=True)
    out = leaf.scatter(0, sg.tensor(index), 2.0, reduce=reduce)
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        out.sum().backward()
    assert ours.scatter_(0, sg.tensor(index), 1.0, reduce=reduce) is ours


def test_the_in_place_and_function_forms_and_a_0d_tensor():
    ours, theirs = sg.zeros(2, 3), torch.zeros(2, 3)
    src, index = [[1.0, -2.0, 3.0]], [[1, 0, 1]]
    assert ours.scatter_reduce_(0, sg.tensor(index), sg.tensor(src), "amin") is ours
    theirs.scatter_reduce_(0, torch.tensor(index), torch.tensor(src), "amin")
    assert ours.tolist() == theirs.tolist()
    out = sg.scatter_reduce(sg.tensor(2.0), 0, sg.tensor(0), sg.tensor(5.0), "prod")
    assert out.shape == () and out.item() == 10.0
    # "max" and "min" run forward, as PyTorch's, whose backward refuses them
    leaf = sg.zeros(3, requires_grad=True)
    out = leaf.scatter_reduce(0, sg.tensor([0, 0]), sg.tensor([-1.0, 4.0]), "max")
    assert out.tolist() == [4.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="Expected 'reduce' to be one of 'sum'"):
        out.sum().backward()


def test_the_errors_are_pytorchs_raised_before_anything_changes():
    x = sg.zeros(3)
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax"):
        x.scatter_reduce(0, sg.tensor([0]), sg.ones(1), "add")
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        x.scatter(0, sg.tensor([0]), sg.ones(1), reduce="sum")
    with pytest.raises(TypeError, match="argument 'src' \\(position 3\\) must be Tensor"):
        x.scatter_reduce(0, sg.tensor([0]), 1.0, "sum")
    with pytest.raises(NotImplementedError, match="mean"):
        sg.tensor([True]).scatter_reduce(0, sg.tensor([0]), sg.tensor([True]), "mean")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter_reduce_(0, sg.tensor([0]), sg.ones(1, dtype=sg.float64), "sum")
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0"):
        x.scatter_reduce_(0, sg.tensor([5]), sg.ones(1), "sum")
    assert x.tolist() == [0.0] * 3


def test_a_jitted_scatter_reduce_reduces_at_each_calls_index():
    def reduced(x, index, src):
        return x.scatter_reduce(1, index, src, "amax", include_self=False)

    jitted, rng = sg.jit(reduced), np.random.default_rng(2)
    for _ in range(5):
        args = (
            sg.tensor(rng.standard_normal((3, 4))),
            sg.tensor(rng.integers(0, 4, (2, 5))),
            sg.tensor(rng.standard_normal((2, 5))),
        )
        assert jitted(*args).tolist() == reduced(*args).tolist()
