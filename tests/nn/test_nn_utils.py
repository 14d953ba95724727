"""nn.utils.clip_grad_norm_ and clip_grad_value_ against torch.nn.utils on the same gradients."""

import math
import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import nn


def _params(seed=0, scale=1.0, dtype="float32"):
    """The same three parameters with gradients (and one without) in both frameworks."""
    rng = np.random.default_rng(seed)
    ours, theirs = [], []
    for shape in [(3, 4), (5,), (2, 2, 2)]:
        grad = (rng.standard_normal(shape) * scale).astype(dtype)
        p, q = (
            nn.Parameter(sg.zeros(*shape, dtype=dtype)),
            torch.nn.Parameter(torch.zeros(shape, dtype=getattr(torch, dtype))),
        )
        p.grad, q.grad = sg.tensor(grad), torch.tensor(grad)
        ours.append(p), theirs.append(q)
    ours.append(nn.Parameter(sg.zeros(2))), theirs.append(torch.nn.Parameter(torch.zeros(2)))
    return ours, theirs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(max_norm, norm_type, dtype):
    ours, theirs = _params(dtype=dtype)
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert (
        isinstance(total, sg.Tensor)
        and total.ndim == 0
        and total.dtype == sg.tensor(0.0, dtype=dtype).dtype
    )
    rtol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(total.item(), expected.item(), rtol=rtol)
    for p, q in zip(ours[:3], theirs[:3]):
        np.testing.assert_allclose(p.grad.array, q.grad.numpy(), rtol=rtol, atol=1e-7)
    assert ours[3].grad is None


def test_clip_grad_norm_accepts_one_tensor_and_a_generator():
    p = nn.Parameter(sg.zeros(2))
    p.grad = sg.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(p.grad.array, [0.6, 0.8], rtol=1e-5)
    fc = nn.Linear(2, 2)
    fc(sg.ones(1, 2)).sum().backward()
    assert nn.utils.clip_grad_norm_(fc.parameters(), 1.0).item() > 0


def test_clip_grad_norm_without_gradients_is_zero():
    assert nn.utils.clip_grad_norm_([nn.Parameter(sg.zeros(2))], 1.0).item() == 0.0


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf * 0, as in torch
def test_clip_grad_norm_nonfinite():
    p = nn.Parameter(sg.zeros(2))
    p.grad = sg.tensor([math.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    assert math.isinf(nn.utils.clip_grad_norm_(p, 1.0).item())


def test_clip_grad_value_matches_torch():
    ours, theirs = _params(scale=3.0)
    nn.utils.clip_grad_value_(ours, 1.5)
    torch.nn.utils.clip_grad_value_(theirs, 1.5)
    for p, q in zip(ours[:3], theirs[:3]):
        np.testing.assert_array_equal(p.grad.array, q.grad.numpy())


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, math.inf])
def test_clip_grad_norm_returns_a_0d_tensor_numpy_reads(norm_type):
    """The total norm was a tensor around a NumPy scalar, which ``np.asarray`` refuses."""
    results = []
    for lib in (sg, torch):
        w = lib.zeros(2, requires_grad=True)
        w.grad = lib.tensor([3.0, -4.0])
        results.append(np.asarray(lib.nn.utils.clip_grad_norm_([w], 10.0, norm_type)))
    assert results[0].shape == () and results[0] == results[1]


@pytest.mark.parametrize(
    "dtypes",
    [("float32", "float64"), ("float64", "float32"), ("float16", "bfloat16"),
     ("complex64",), ("complex64", "float64"), ("float32", "complex128")],
)  # fmt: skip
def test_get_total_norm_dtype_is_the_norms_promoted_as_torch(dtypes):
    """The total norm is the norm of the stacked norms: promoted over all the tensors (not the
    first one's dtype), and real for complex tensors."""
    values = [3.0, -4.0]
    ours = nn.utils.get_total_norm([sg.tensor(values, dtype=getattr(sg, d)) for d in dtypes])
    theirs = torch.nn.utils.get_total_norm(
        [torch.tensor(values, dtype=getattr(torch, d)) for d in dtypes]
    )
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-3)


@pytest.mark.parametrize(
    ("make", "norm_type"),
    [(lambda lib: lib.tensor([3, 4]), 2.0), (lambda lib: lib.zeros(0, 3), math.inf),
     (lambda lib: lib.zeros(0), -1.0), (lambda lib: lib.zeros(2, 0), -math.inf)],
)  # fmt: skip
def test_get_total_norm_refuses_what_torch_refuses(make, norm_type):
    """Integers, and an empty tensor under an order with no identity (inf, negative)."""
    with pytest.raises(RuntimeError):
        torch.nn.utils.get_total_norm([torch.ones(2), make(torch)], norm_type)
    with pytest.raises(RuntimeError, match="get_total_norm"):
        nn.utils.get_total_norm([sg.ones(2), make(sg)], norm_type)


@pytest.mark.parametrize("norm_type", [-1.0, -2.0, 0.5])
def test_get_total_norm_of_zeros_under_a_negative_order_is_silent(norm_type):
    expected = torch.nn.utils.get_total_norm([torch.zeros(3), torch.ones(2)], norm_type)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total = nn.utils.get_total_norm([sg.zeros(3), sg.ones(2)], norm_type)
    assert total.item() == pytest.approx(expected.item())


def test_clip_grads_with_norm_needs_the_norm_as_a_tensor():
    for lib in (torch, sg):
        w = lib.zeros(2, requires_grad=True)
        w.grad = lib.ones(2)
        with pytest.raises(TypeError):
            lib.nn.utils.clip_grads_with_norm_([w], 1.0, 5.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("norm_type", [2.0, 3.0, 1.0])
def test_clip_grad_norm_of_16_bit_gradients_accumulates_in_float32_as_torch(dtype, norm_type):
    """In float16 the 2-norm of 100 entries of 300 overflowed to inf, and clipping zeroed the
    gradients."""
    results = []
    for lib in (sg, torch):
        w = lib.zeros(100, dtype=getattr(lib, dtype), requires_grad=True)
        w.grad = lib.full((100,), 300.0, dtype=getattr(lib, dtype))
        total = lib.nn.utils.clip_grad_norm_([w], 1000.0, norm_type)
        results.append([total.float().item(), w.grad.float().numpy()])
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-2)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-2)


def test_clipping_float16_gradients_of_infinite_norm_by_a_max_norm_past_float16_as_torch():
    """max_norm 1e10 was rounded to float16 (inf), and inf / inf made every gradient NaN;
    PyTorch's coefficient is 1e10 / inf = 0 (NaN only where a gradient is inf)."""
    grads = {}
    for lib in (sg, torch):
        params = [lib.ones(2, dtype=lib.float16, requires_grad=True) for _ in range(2)]
        params[0].grad = lib.tensor([math.inf, 1.0], dtype=lib.float16)
        params[1].grad = lib.tensor([2.0, -3.0], dtype=lib.float16)
        lib.nn.utils.clip_grad_norm_(params, 1e10, norm_type=1)
        grads[lib] = [p.grad.float().numpy() for p in params]
    for ours, theirs in zip(grads[sg], grads[torch]):
        np.testing.assert_array_equal(ours, theirs)
