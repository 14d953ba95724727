"""``clamp`` with tensor bounds against PyTorch where the op table's random values never land:
ties between the input and a bound and between the bounds, crossed bounds, NaNs, the result's
dtype, the in-place form and mismatched shapes. (Random shapes, gradcheck, vmap and jit: the
op table's ``clamp_tensor_*`` rows.)"""

import numpy as np
import pytest
import torch
from oracle import leaves, same_dtype

import scratchgrad as sg

NAN = float("nan")
X = [-2.0, 0.0, 0.5, 1.0, 3.0, NAN, 1.0, 2.0]


def _values_and_gradients(x, low, high):
    """Both libraries' clamp of the same leaves, and the gradients of a weighted sum."""
    ours, theirs = zip(*(leaves(np.array(v)) for v in (x, low, high) if v is not None))
    results = []
    for lib, tensors in ((sg, ours), (torch, theirs)):
        it = iter(tensors[1:])
        bounds = [None if v is None else next(it) for v in (low, high)]
        out = lib.clamp(tensors[0], *bounds)
        weights = lib.tensor(np.arange(1.0, 1.0 + out.numel()).reshape(out.shape))
        (out * weights).sum().backward()
        results.append((out.detach().numpy(), [t.grad.numpy() for t in tensors]))
    return results


@pytest.mark.parametrize(
    "low, high",
    [
        ([-1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 2.0, 2.0], [2.0, 0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 2.0]),
        ([0.0], None),
        (None, 1.0),
        ([1.0], [0.0, 5.0, 0.0, 5.0, 1.0, 5.0, 0.0, 0.5]),  # crossed where max < 1: max there
    ],
    ids=["ties", "min_only", "max_only_0d", "crossed"],
)
def test_values_and_gradients_equal_pytorchs_at_ties(low, high):
    (ours, our_grads), (theirs, their_grads) = _values_and_gradients(X, low, high)
    np.testing.assert_array_equal(ours, theirs)
    for mine, their in zip(our_grads, their_grads):
        np.testing.assert_array_equal(mine, their)


def test_a_nan_bound_gives_nan():
    """PyTorch's result is NaN where a bound is; its gradient there may still reach ``max``
    (under a NaN), ours reaches no input (see ``_clamp_by_tensors``)."""
    out = sg.tensor(X).clamp(sg.tensor(NAN), sg.tensor(2.0))
    assert np.isnan(out.numpy()).all()


@pytest.mark.parametrize(
    "x_dtype, bound_dtype, bound_shape",
    [("int64", "float32", ()), ("float32", "float64", ()), ("float32", "float64", (1,)),
     ("float16", "int64", ())],
)  # fmt: skip
def test_the_result_dtype_is_pytorchs(x_dtype, bound_dtype, bound_shape):
    x = np.array([1, 5, -3])
    bound = np.zeros(bound_shape)
    ours = sg.tensor(x, dtype=getattr(sg, x_dtype)).clamp(
        min=sg.tensor(bound, dtype=getattr(sg, bound_dtype))
    )
    theirs = torch.tensor(x, dtype=getattr(torch, x_dtype)).clamp(
        min=torch.tensor(bound, dtype=getattr(torch, bound_dtype))
    )
    assert same_dtype(ours, theirs)
    assert ours.tolist() == theirs.tolist()


def test_in_place_and_bad_shapes():
    x = sg.tensor([-2.0, 0.5, 3.0])
    assert x.clamp_(min=sg.tensor([0.0, 1.0, 0.0]), max=sg.tensor(2.0)) is x
    assert x.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match=r"clamp: shapes .* cannot be broadcast"):
        sg.tensor([1.0, 2.0, 3.0]).clamp(min=sg.tensor([0.0, 1.0]))


PAST_THE_RANGE = [("float16", 65504.5), ("float16", 2**31), ("bfloat16", 1e39), ("float32", 1e39)]


@pytest.mark.parametrize("dtype, bound", PAST_THE_RANGE)
def test_a_number_bound_past_the_dtypes_range_raises_as_pytorchs(dtype, bound):
    """float16 clamped at 2**31 raised nothing (NumPy rounds the bound to inf); PyTorch refuses
    the bound. Its largest finite number and inf pass."""
    for m in (torch, sg):
        x = m.ones(2, dtype=getattr(m, dtype))
        with pytest.raises(RuntimeError, match="without overflow"):
            x.clamp(max=bound)
        with pytest.raises(RuntimeError, match="without overflow"):
            x.clamp_(min=-bound)
    for passes in (float(np.finfo(np.float16).max), float("inf")):
        ours = sg.ones(2, dtype=sg.float16).clamp(max=passes)
        theirs = torch.ones(2, dtype=torch.float16).clamp(max=passes)
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
