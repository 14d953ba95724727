"""Every row of the op table under ``scratchgrad.jit``: a jitted forward and backward
(``autograd.grad`` with a random output gradient) returns what the same function returns
eagerly, bit for bit, on every call: the eager first call, the two recording calls and two
replays on new input values of the same shapes. A replay runs the array calls the eager step ran, so
nothing may differ in the last bit. A row the recorder must refuse raises ``JitError``."""

import numpy as np
import pytest
import torch
from op_table import OPS
from test_ops import _arity, _arrays

import scratchgrad as sg

CALLS = 5  # eager, record, record again (checked against the first), replay, replay
# ops whose output's shape depends on the input's values: refused while recording, since what
# follows them would replay the recorded shape (a mean's divisor)
REFUSED = {
    "getitem_mask": "boolean mask",
    "masked_select": "boolean mask",
    "masked_select_broadcast": "boolean mask",
    "index_put_mask": "boolean mask",
    "masked_scatter": "depends on the mask",
    "repeat_interleave_counts": "tensor of counts",
    "sparse_mm": "sparse tensors' indices",
    "stft_istft": "bool\\(tensor\\)",  # istft checks that the window's overlap-add is not 0
}
# Known problems of the jit core, each a strict xfail: a fix makes the test pass, fail as XPASS,
# and its line here go.
CORE_BUGS: dict[str, str] = {}


def _rows():
    for op in OPS:
        reason = CORE_BUGS.get(op.name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(op, id=op.name, marks=marks)


def _forward_and_backward(op):
    """``op``'s output and, for a differentiable op, the gradients of its inputs."""

    def step(*xs, grad_out=None):
        step.python_calls += 1
        out = op.call(sg, *xs)
        if grad_out is None:
            return (out,)
        return (out, *sg.autograd.grad(out, xs, grad_out, allow_unused=True))

    step.python_calls = 0
    return step


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", list(_rows()))
def test_jitted_forward_and_backward_equal_eager(op, dtype):
    step, recorded = _forward_and_backward(op), _forward_and_backward(op)
    jitted = sg.jit(recorded)
    rng = np.random.default_rng(0)
    for call in range(CALLS):
        arrays = _arrays(op, op.check_shapes[: _arity(op)], rng)
        xs = [sg.tensor(a, dtype=getattr(sg, dtype), requires_grad=op.grad) for a in arrays]
        grad_out = None
        if op.grad:
            out = op.call(sg, *xs)
            grad_out = sg.tensor(rng.standard_normal(out.shape), dtype=out.dtype)
        if call == 1 and op.name in REFUSED:
            with pytest.raises(sg.JitError, match=REFUSED[op.name]):
                jitted(*xs, grad_out=grad_out)
            return
        expected, found = step(*xs, grad_out=grad_out), jitted(*xs, grad_out=grad_out)
        assert len(found) == len(expected)
        for i, (e, f) in enumerate(zip(expected, found)):
            what = f"{op.name} call {call}: " + ("output" if i == 0 else f"gradient {i - 1}")
            if e is None:
                assert f is None, what
                continue
            assert f.dtype == e.dtype and f.shape == e.shape, what
            np.testing.assert_array_equal(f.detach().numpy(), e.detach().numpy(), err_msg=what)
    assert recorded.python_calls == 3  # eager, record, record again; then replays


# ops on 0-d tensors (a loss is one), whose results NumPy gives as scalars, not arrays
SCALAR_OPS = {
    "clamp": lambda x, y: x.clamp(0.2, 0.8),  # (through _clamp's tuple: a constant)
    "fmax": lambda x, y: x.fmax(y),  # (the mask its forward saves: a constant)
    "gelu": lambda x, y: sg.nn.functional.gelu(x),  # (its saved CDF: a constant)
    "maximum": lambda x, y: x.maximum(y),  # (its gradient's comparison, out= a scalar)
    "tanh": lambda x, y: x.tanh(),  # (its gradient's kernel, out= a scalar)
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", SCALAR_OPS)
def test_ops_of_0d_tensors_replay_each_calls_values(name, dtype):
    """A 0-d result was recorded as a constant (frozen: replayed with the recording's value
    whenever the two recording calls gave the same), or handed to a kernel writing with out=
    into it (a TypeError on replay). The recording calls see the same values, the replays
    others, on both sides of the clamp's bounds."""
    weight = sg.tensor(1.0, dtype=getattr(sg, dtype), requires_grad=True)

    def step(x, y):
        out = SCALAR_OPS[name](x * weight, y)
        out.backward()
        return out

    jitted = sg.jit(step)
    for x, y in [(0.5, 0.4)] * 3 + [(0.1, 0.7), (0.9, 0.2), (0.3, 0.6)]:
        found = []
        for fn in (jitted, step):
            weight.grad = None
            out = fn(sg.tensor(x, dtype=weight.dtype), sg.tensor(y, dtype=weight.dtype))
            found.append((out.detach().numpy(), weight.grad.numpy()))
        assert found[0] == found[1], (name, x, y)
    assert jitted.calls - sum(len(r) for r in jitted.recordings.values()) >= 3


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_complex_products_of_one_entry_replay_eager_bits(shape, dtype):
    """The ``complex_mul_div`` row on tensors of one entry: a replay wrote the product over
    a factor (out=), which NumPy computes by another loop for one complex entry (an ulp off
    the eager product in about half the cases)."""
    (op,) = [op for op in OPS if op.name == "complex_mul_div"]
    jitted = sg.jit(lambda x, y: op.call(sg, x, y))
    rng = np.random.default_rng(0)
    for _ in range(40):
        x, y = (sg.tensor(rng.uniform(0.5, 3, shape), dtype=getattr(sg, dtype)) for _ in "xy")
        np.testing.assert_array_equal(jitted(x, y).numpy(), op.call(sg, x, y).numpy())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_tanh_and_its_gradient_replay_eager_bits(dtype):
    """Tanh's gradient of 16-bit floats computes in float32 and rounds once (as PyTorch's);
    its replayed kernel multiplied in the 16-bit dtype itself. In float32 and float64 the
    replayed kernel subtracts from a 0-d one of the dtype (half the cost of NumPy's conversion
    of the Python 1 at each call)."""
    step = sg.jit(lambda x, g: sg.autograd.grad(x.tanh(), x, g))
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, g = (sg.tensor(rng.standard_normal((4, 8)), dtype=getattr(sg, dtype)) for _ in "xg")
        x.requires_grad_()
        (expected,), (found,) = sg.autograd.grad(x.tanh(), x, g), step(x, g)
        np.testing.assert_array_equal(found.double().numpy(), expected.double().numpy())
    if dtype in ("float32", "float64"):
        (recording,) = [r for recordings in step.recordings.values() for r in recordings]
        constants = [c for n, c in recording.replay.__globals__.items() if n[0] == "c"]
        (one,) = [c for c in constants if type(c) is np.ndarray and not c.ndim]
        assert (one.dtype, one.item()) == (np.dtype(dtype), 1.0)
        assert "k_tanh_grad(" in recording.source


@pytest.mark.parametrize("out_int32", [False, True])
@pytest.mark.parametrize("values_dtype", ["float32", "int64"])
def test_bucketize_and_searchsorted_replay_each_calls_places(values_dtype, out_int32):
    """Their places were made by a cast outside the noted call (to the promoted dtype, to
    int64 or int32), so the step recorded them as constants and refused the second recording
    (a different constant); each replay now searches its own values, as PyTorch."""
    weight = sg.tensor([0.5, -1.0, 2.0, 0.25, 3.0], requires_grad=True)
    edges = np.array([-1.0, 0.0, 1.5, 2.0], dtype=np.float32)

    def step(lib, w, x):
        bucket = lib.bucketize(x, lib.tensor(edges), out_int32=out_int32)
        place = lib.searchsorted(lib.tensor(edges), x, right=True, out_int32=out_int32)
        loss = (w[bucket.long()] * w[place.long()]).sum()
        loss.backward()
        return bucket, place

    jitted = sg.jit(lambda x: step(sg, weight, x))
    rng = np.random.default_rng(0)
    for _ in range(6):
        x = rng.uniform(-2.0, 3.0, size=7).round(0 if values_dtype == "int64" else 3)
        x = x.astype(values_dtype)
        weight.grad = None
        found = [t.numpy() for t in jitted(sg.tensor(x))] + [weight.grad.numpy()]
        w = torch.tensor(weight.detach().numpy(), requires_grad=True)
        expected = [t.numpy() for t in step(torch, w, torch.tensor(x))] + [w.grad.numpy()]
        for a, b in zip(found, expected):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    assert jitted.calls - sum(len(r) for r in jitted.recordings.values()) >= 3


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_trunc_division_replays_each_calls_quotients(dtype):
    """Its dividend less the remainder was an array made outside the noted calls, so the step
    recorded it as a constant and refused the second recording; replays now divide their own
    operands, as PyTorch (tensor and number divisors)."""
    jitted = sg.jit(
        lambda x, y: (sg.div(x, y, rounding_mode="trunc"), x.div(3, rounding_mode="trunc"))
    )
    rng = np.random.default_rng(0)
    low = 0 if dtype == "uint8" else -50
    for _ in range(6):
        x, y = rng.integers(low, 50, size=(2, 8)).astype(dtype)
        y[y == 0] = 7
        found = jitted(sg.tensor(x), sg.tensor(y))
        expected = (
            torch.div(torch.tensor(x), torch.tensor(y), rounding_mode="trunc"),
            torch.tensor(x).div(3, rounding_mode="trunc"),
        )
        for a, b in zip(found, expected):
            assert a.dtype == getattr(sg, dtype)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert jitted.calls - sum(len(r) for r in jitted.recordings.values()) >= 3
