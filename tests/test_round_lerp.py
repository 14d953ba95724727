"""round(decimals=) and lerp against PyTorch bit for bit: halves, negative decimals, both of
lerp's formulas, tensor and number weights, in place; gradients and errors as PyTorch's."""

import numpy as np
import pytest
import torch
from oracle import assert_doc_examples_run

import scratchgrad as sg

RNG = np.random.default_rng(0)
BITS = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}


def assert_same_bits(ours, theirs):
    """The same values bit for bit (-0.0 is not 0.0), NaN where NaN."""
    ours, theirs = ours.detach().numpy(), theirs.detach().numpy()
    assert ours.dtype == theirs.dtype
    nan = np.isnan(theirs)
    np.testing.assert_array_equal(np.isnan(ours), nan)
    bits = BITS[str(theirs.dtype).split(".")[-1]]
    np.testing.assert_array_equal(ours[~nan].view(bits), theirs[~nan].view(bits))


def _values_to_round():
    halves = np.arange(-40, 41) / 2  # ties: half to even
    return np.concatenate(
        [
            halves,
            halves / 100,  # ties at two decimals (as far as binary can hold them)
            halves * 100,  # ties at -2 decimals
            RNG.standard_normal(500) * 10.0 ** RNG.integers(-4, 6, 500),
            [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e30, -3.4e38],
        ]
    )


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("decimals", [-3, -2, -1, 0, 1, 2, 3, 6, 40])
@pytest.mark.filterwarnings("ignore:overflow", "ignore:invalid")  # x * 10**40: PyTorch's is silent
def test_round_decimals_matches_torch_bit_for_bit(dtype, decimals):
    x = _values_to_round()
    with np.errstate(over="ignore"):
        x = x.astype(dtype)
    theirs = torch.round(torch.tensor(x), decimals=decimals)
    assert_same_bits(sg.round(sg.tensor(x), decimals=decimals), theirs)
    assert_same_bits(sg.tensor(x).round(decimals=decimals), theirs)


def test_round_gradient_is_zero_and_named_as_torch():
    x = RNG.standard_normal(5)
    for kwargs in ({}, {"decimals": 2}):
        ours, theirs = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, t = ours.round(**kwargs), theirs.round(**kwargs)
        assert y.grad_fn.name() == t.grad_fn.name()  # RoundBackward1 when decimals is given
        (y * 3).sum().backward()
        (t * 3).sum().backward()
        np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
        np.testing.assert_array_equal(ours.grad.numpy(), np.zeros(5))


def test_round_integers_and_bad_decimals_as_torch():
    ints = [15, 25, -35]
    assert sg.round(sg.tensor(ints)).tolist() == torch.round(torch.tensor(ints)).tolist()
    with pytest.raises(NotImplementedError):
        torch.round(torch.tensor(ints), decimals=-1)
    with pytest.raises(NotImplementedError, match=r"round: decimals=-1 .* int64"):
        sg.round(sg.tensor(ints), decimals=-1)
    with pytest.raises(TypeError):
        torch.tensor([1.5]).round(1)  # decimals is keyword-only
    with pytest.raises(TypeError):
        sg.tensor([1.5]).round(1)
    with pytest.raises(TypeError, match="round: decimals must be an int"):
        sg.tensor([1.5]).round(decimals=1.0)
    with pytest.raises(TypeError):
        torch.tensor([1.5]).round(decimals=True)
    with pytest.raises(TypeError, match="round: decimals must be an int, got bool"):
        sg.tensor([1.5]).round(decimals=True)


# ---- lerp -------------------------------------------------------------------------------------


def _lerp_inputs(dtype, n=1003):  # not a multiple of a vector width: PyTorch's loop tail too
    start = RNG.standard_normal(n)
    end = start + RNG.standard_normal(n) * 10.0 ** RNG.integers(-6, 3, n)  # near and far
    weight = RNG.uniform(-1.5, 1.5, n)  # both formulas, inside and outside [0, 1]
    return [a.astype(dtype) for a in (start, end, weight)]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("weight", [0.3, 0.5, 0.8, -0.7, 1.0, 2.0, "tensor", "0-d tensor"])
def test_lerp_matches_torch_bit_for_bit(dtype, weight):
    """PyTorch fuses each multiply-add; float32 (and 16-bit floats, computed in float32) have
    its bits here too."""
    start, end, weights = _lerp_inputs(dtype)
    ours_w = theirs_w = weight
    if weight == "tensor":
        ours_w, theirs_w = sg.tensor(weights), torch.tensor(weights)
    elif weight == "0-d tensor":  # a 0-d weight of another dtype is cast, as in PyTorch
        ours_w, theirs_w = sg.tensor(0.7, dtype=sg.float64), torch.tensor(0.7, dtype=torch.float64)
    theirs = torch.lerp(torch.tensor(start), torch.tensor(end), theirs_w)
    assert_same_bits(sg.lerp(sg.tensor(start), sg.tensor(end), ours_w), theirs)
    assert_same_bits(sg.tensor(start).lerp(sg.tensor(end), ours_w), theirs)
    assert_same_bits(sg.tensor(start).lerp_(sg.tensor(end), ours_w), theirs)


@pytest.mark.parametrize(
    "dtypes, shapes",
    [
        (("float32", "float32", "float64"), ((), (), ())),
        (("float16", "float16", "float32"), ((), (), ())),
        (("float16", "float16", "float64"), ((), (3,), ())),
        (("float32", "float32", "float16"), ((3,), (3,), ())),
    ],
)
def test_lerp_promotes_a_0d_weight_with_0d_ends_as_pytorch(dtypes, shapes):
    """A 0-d weight joins the promotion: with 0-d ends, a float64 one makes the result float64
    (it was cast to the ends' float32); beside an end with dims it widens nothing."""
    arrays = [np.full(shape, value) for shape, value in zip(shapes, (1.0, 3.0, 0.25))]
    ours = sg.lerp(*(sg.tensor(a, dtype=getattr(sg, d)) for a, d in zip(arrays, dtypes)))
    theirs = torch.lerp(*(torch.tensor(a, dtype=getattr(torch, d)) for a, d in zip(arrays, dtypes)))
    assert np.dtype(ours.dtype).name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_lerp_float64_is_within_rounding_of_torch_and_exact_at_the_ends():
    """float64 is computed unfused (NumPy has no FMA): the same formulas, rounded twice."""
    start, end, weight = _lerp_inputs("float64")
    ours = sg.lerp(sg.tensor(start), sg.tensor(end), sg.tensor(weight)).numpy()
    theirs = torch.lerp(torch.tensor(start), torch.tensor(end), torch.tensor(weight)).numpy()
    scale = np.maximum(np.abs(start), np.abs(end))
    assert np.all(np.abs(ours - theirs) <= 4 * np.finfo(np.float64).eps * scale)
    # each formula is exact at its own end, as PyTorch's
    np.testing.assert_array_equal(sg.lerp(sg.tensor(start), sg.tensor(end), 1.0).numpy(), end)
    np.testing.assert_array_equal(sg.lerp(sg.tensor(start), sg.tensor(end), 0.0).numpy(), start)


def test_lerp_gradients_match_torch_bit_for_bit_in_float32():
    start, end, weight = _lerp_inputs("float32", n=37)
    for weight_kind in ("number", "tensor"):
        ours = [sg.tensor(a, requires_grad=True) for a in (start, end, weight)]
        theirs = [torch.tensor(a, requires_grad=True) for a in (start, end, weight)]
        if weight_kind == "number":
            ours[2], theirs[2] = 0.7, 0.7
        grad = RNG.standard_normal(37).astype(np.float32)
        sg.lerp(*ours).backward(sg.tensor(grad))
        torch.lerp(*theirs).backward(torch.tensor(grad))
        for o, t in zip(ours, theirs):
            if isinstance(t, torch.Tensor):
                assert_same_bits(o.grad, t.grad)


def test_lerp_in_place_is_recorded_as_torch():
    start, end, weight = _lerp_inputs("float64", n=4)
    ours = [sg.tensor(a, requires_grad=True) for a in (start, end, weight)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (start, end, weight)]
    for s, e, w in (ours, theirs):
        out = (s * 2).lerp_(e, w)  # the old value, needed for the weight's gradient, is kept
        (out * out).sum().backward()
    assert ours[0].grad is not None
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("m", [sg, torch], ids=["scratchgrad", "torch"])
def test_lerp_errors_as_torch(m):
    x = m.ones(3)
    with pytest.raises(RuntimeError):
        m.lerp(x, m.ones(3, dtype=m.float64), 0.5)  # end of another dtype
    with pytest.raises(RuntimeError):
        m.lerp(x, m.ones(3), m.full((3,), 0.5, dtype=m.float64))  # a weight of another dtype
    with pytest.raises(TypeError):
        m.lerp(x, 2.0, 0.5)  # end must be a tensor
    with pytest.raises(NotImplementedError):
        m.lerp(m.ones(3, dtype=m.int64), m.ones(3, dtype=m.int64), 0.5)
    with pytest.raises(RuntimeError) as error:  # the dtypes are checked before the kind
        m.ones(3, dtype=m.int64).lerp_(m.ones(3), 0.5)
    assert type(error.value) is RuntimeError  # (not its subclass NotImplementedError)
    with pytest.raises(RuntimeError) as error:
        m.ones(3, dtype=m.bool).lerp(m.ones(3, dtype=m.bool), m.ones(3))
    assert type(error.value) is RuntimeError
    with pytest.raises(RuntimeError):  # the result would not fit: x is left as it was
        x.lerp_(m.zeros(2, 3), 0.5)
    assert x.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError):
        m.ones(3, requires_grad=True).lerp_(m.zeros(3), 0.5)  # a leaf that requires grad


def test_doc_examples_run():
    for method in (sg.Tensor.round, sg.Tensor.lerp, sg.Tensor.lerp_):
        assert_doc_examples_run(method)
