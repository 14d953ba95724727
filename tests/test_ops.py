"""Checks generated from the op table: forward and gradient against PyTorch on random
(broadcastable) shapes, float64 tight and float32 loose, and finite-difference gradcheck and
gradgradcheck in float64 for every differentiable op."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes
from op_table import OPS
from oracle import assert_close, check_against_torch, normwise

import scratchgrad as sg


def _shapes(min_dims=0, max_dims=4, min_side=0, max_side=3):
    return array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def _one(strategy):
    return strategy.map(lambda shape: (shape,))


def _batched_matmul(draw_n_k_m):
    n, k, m, batch = draw_n_k_m
    return (*batch[0], n, k), (*batch[1], k, m)


_sides = st.integers(0, 4)
_small = st.integers(1, 2)
_side3 = st.integers(3, 5)
SHAPES = {
    "unary": _one(_shapes()),
    "binary": mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3).map(
        lambda s: s.input_shapes
    ),
    "rank1+": _one(_shapes(min_dims=1)),
    "rank2+": _one(_shapes(min_dims=2)),
    "nonempty": _one(_shapes(min_side=1)),
    "nonempty1+": _one(_shapes(min_dims=1, min_side=1)),
    "nonempty2+": _one(_shapes(min_dims=2, min_side=1)),
    "two+": _one(_shapes(min_side=1).filter(lambda s: np.prod(s) >= 2)),
    "two_rows": _one(_shapes(min_dims=1, min_side=1).map(lambda s: (s[0] + 1, *s[1:]))),
    "small": _one(_shapes(max_dims=3, min_side=1)),
    "matrix": _one(_shapes(min_dims=2, max_dims=2)),
    "nonempty_matrix": _one(_shapes(min_dims=2, max_dims=2, min_side=1)),
    "same_pair": _shapes().map(lambda s: (s, s)),
    "same_pair_rank1+": _shapes(min_dims=1).map(lambda s: (s, s)),
    "matmul": st.tuples(_sides, _sides, _sides).map(lambda t: ((t[0], t[1]), (t[1], t[2]))),
    "matmul_batched": st.tuples(
        _sides, _sides, _sides, mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)
    ).map(lambda t: _batched_matmul((t[0], t[1], t[2], t[3].input_shapes))),
    "matvec": st.tuples(_sides, _sides).map(lambda t: ((t[0], t[1]), (t[1],))),
    "vecmat": st.tuples(_sides, _sides).map(lambda t: ((t[0], t[1]), (t[0],))),
    "linear": st.tuples(_sides, _sides, _sides).map(lambda t: ((t[0], t[1]), (t[2], t[1]))),
    "linear_batched": st.tuples(_sides, st.integers(1, 4), st.integers(1, 4), _sides).map(
        lambda t: ((t[3], t[0], t[1]), (t[2], t[1]))
    ),
    "linear_vector": st.tuples(st.integers(1, 4), _sides).map(lambda t: ((t[0],), (t[1], t[0]))),
    "dot": _sides.map(lambda k: ((k,), (k,))),
    "cross": _shapes(max_dims=3).map(lambda s: (*s, 3)).map(lambda s: (s,)),  # 3-vectors
    # index_add's input and a source of three slices along dim 0 (the last dim)
    "index_add": _shapes(min_dims=1, min_side=1).map(lambda s: (s, (3, *s[1:]))),
    "index_add_last": _shapes(min_dims=1, min_side=1).map(lambda s: (s, (*s[:-1], 3))),
    # x and [weight; bias], at least three entries normalised: over one the gradient is 0 and
    # over two nearly (the result is +-1 whatever x), so that rounding is all there is to compare
    "layer_norm": _shapes(min_dims=1, min_side=1).map(
        lambda s: ((*s[:-1], s[-1] + 2), (2, s[-1] + 2))
    ),
    "layer_norm_pair": _shapes(min_dims=1, min_side=1).map(lambda s: ((*s[:-1], s[-1] + 2),) * 2),
    "signal": _one(_shapes(min_dims=2, max_dims=3, min_side=3, max_side=4)),  # (N, C, L), (C, L)
    # a signal (L,) or a batch of them (B, L) of 5 to 7 samples, for stft's frames of 4
    "signal_batch": _one(
        _shapes(min_dims=1, max_dims=2, min_side=1).map(lambda s: (*s[:-1], s[-1] + 4))
    ),
    # convolution: (N, C, L) and (out channels, C, kernel), kernels of 1-3 (1-2 in 2-D) smaller
    # than the inputs; with groups=2, the input has twice the weight's channels
    "conv1d": st.tuples(_small, _small, st.integers(3, 5), _small, st.integers(1, 3)).map(
        lambda t: ((t[0], t[1], t[2]), (t[3], t[1], t[4]))
    ),
    "conv2d": st.tuples(_small, _small, _side3, _side3, _small, _small, _small).map(
        lambda t: ((t[0], t[1], t[2], t[3]), (t[4], t[1], t[5], t[6]))
    ),
    "conv2d_groups": st.tuples(_small, _small, _side3, _side3, _small, _small, _small).map(
        lambda t: ((t[0], 2 * t[1], t[2], t[3]), (2 * t[4], t[1], t[5], t[6] + 1))
    ),
    # broadcastable vectors of 3: along a dim of 1, a cosine is +-1 and its gradient round-off
    "binary_vectors": mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3).map(
        lambda s: tuple((*shape, 3) for shape in s.input_shapes)
    ),
    "even_last": _one(_shapes(min_dims=1).map(lambda s: (*s[:-1], 2 * s[-1]))),  # glu's halves
    "prelu": st.tuples(_sides, _small, _sides).map(lambda t: ((t[0], t[1], t[2]), (t[1],))),
    # (N, D) pairs with D >= 3: along fewer entries a cosine is nearly +-1, its gradient round-off
    "same_matrices": _shapes(min_dims=2, max_dims=2).map(lambda s: ((s[0], s[1] + 2),) * 2),
    "same_triple": _shapes(min_dims=1).map(lambda s: (s, s, s)),
    # (N, 2 * C, L) and [weight; bias] for two groups of C * L >= 3 entries (see layer_norm)
    "group_norm": st.tuples(_sides, _small, st.integers(3, 4)).map(
        lambda t: ((t[0], 2 * t[1], t[2]), (2, 2 * t[1]))
    ),
    # x and weight, at least three entries normalised (see layer_norm)
    "rms_norm": _shapes(min_dims=1, min_side=1).map(lambda s: ((*s[:-1], s[-1] + 2), (s[-1] + 2,))),
    "wide_last2+": _one(_shapes(min_dims=2, min_side=1).map(lambda s: (*s[:-1], s[-1] + 2))),
    # a last dim of 2 or more: normalizing one entry, PyTorch's float32 gradient is round-off
    "wide_last1+": _one(_shapes(min_dims=1).map(lambda s: (*s[:-1], s[-1] + 2))),
    "image": _one(st.tuples(_small, _small, _side3, _side3)),  # (N, C, H, W) for pooling
    # fold's (N, C * 2 * 2, L) for a 2x2 kernel, stride (1, 2), padding 1 over a (3, 2k) output
    "fold": st.tuples(_small, _small, _small).map(lambda t: ((t[0], 4 * t[1], 4 * (t[2] + 1)),)),
    # (N, C, D, H, W) and (out channels, C, kernel): sides of 2-4, kernels of 1-2; with
    # groups=2, the input has twice the weight's channels
    "conv3d": st.tuples(_small, _small, *(st.integers(2, 4),) * 3, _small, *(_small,) * 3).map(
        lambda t: ((t[0], t[1], *t[2:5]), (t[5], t[1], *t[6:9]))
    ),
    "conv3d_groups": st.tuples(_small, _small, *(st.integers(2, 4),) * 3, _small, _small).map(
        lambda t: ((t[0], 2 * t[1], *t[2:5]), (2 * t[5], t[1], t[6], 2, 1))
    ),
    "volume": _one(st.tuples(_small, _small, *(st.integers(2, 4),) * 3)),  # for pooling
}


def _domains(op, count):
    return op.domain if isinstance(op.domain, tuple) else (op.domain,) * count


def _arrays(op, shapes, rng):
    return [domain(rng, shape) for domain, shape in zip(_domains(op, len(shapes)), shapes)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_forward_and_gradient_match_torch(op, dtype, data):
    shapes = data.draw(SHAPES[op.shapes], label="shapes")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    arrays = _arrays(op, shapes, rng)
    if op.spectral:  # each entry within rtol of the whole result's largest magnitude
        tolerance = normwise(dtype, dims=None)
    elif op.products:  # of its matrix's
        tolerance = normwise(dtype)
    else:
        tolerance = None  # of its own
    check_against_torch(
        lambda *xs: op.call(sg, *xs),
        lambda *xs: op.call(torch, *xs),
        arrays,
        dtype,
        what=op.name,
        seed=int(rng.integers(2**32)),
        grad=op.grad,
        tolerance=tolerance,
        grad_tolerance=normwise(dtype) if op.normwise else tolerance,
    )


def test_normwise_holds_each_matrix_to_its_largest_entry():
    """A determinant's float32 gradient (1.3785 among entries of 3e4 in PyTorch's float64)
    misses by 2e-4, which no per-entry tolerance allows, but by 7e-9 of its matrix's largest
    entry; an error of 1e-3 of that, or one judged by another matrix's scale, still fails."""
    expected = np.array([[[6388.5, 1.3785], [-32035.0, 28557.0]], [[1.0, 2.0], [3.0, 4.0]]])
    near = expected.copy()
    near[0, 0, 1] += 2.4e-4
    assert_close(near, expected, "float32", tolerance=normwise("float32"))
    with pytest.raises(AssertionError):
        assert_close(near, expected, "float32")
    for at, error in (((0, 0, 1), 32.0), ((1, 0, 1), 1e-2)):
        far = expected.copy()
        far[at] += error
        with pytest.raises(AssertionError, match="atol per entry"):
            assert_close(far, expected, "float32", tolerance=normwise("float32"))


def test_normwise_bounds_float32_determinant_gradients_against_float64():
    """PyTorch's float32 gradient of det, and ours, against PyTorch's float64 (the truth) on
    the stored example that failed entry by entry: both within the normwise bound."""
    op = ROWS["linalg_det"]
    (x,) = _arrays(op, ((3, 3, 2),), np.random.default_rng(150971))
    grads = {}
    for name, m, dtype in (("ours", sg, sg.float32), ("torch", torch, torch.float32),
                           ("truth", torch, torch.float64)):  # fmt: skip
        leaf = m.tensor(x, dtype=dtype, requires_grad=True)
        (op.call(m, leaf) * m.tensor([1.0, -2.0, 0.5], dtype=dtype)).sum().backward()
        grads[name] = leaf.grad.numpy().astype(np.float64)
    for name in ("ours", "torch"):
        assert_close(grads[name], grads["truth"], "float32", name, normwise("float32"))


@pytest.mark.parametrize("seed, where", [(8, "output 0"), (29, "gradient of input 0")])
def test_spectral_rows_hold_float32_fourier_round_off_to_the_largest_magnitude(seed, where):
    """fft_rfftn_irfftn over 81 entries in float32: on these stored examples one small entry
    of the output (0.0292, 2e-5 off) or of the gradient (0.1256, 3e-5 off) misses the
    per-entry tolerance, but is within rtol of the whole result's largest magnitude."""
    op = ROWS["fft_rfftn_irfftn"]
    assert op.spectral
    rng = np.random.default_rng(seed)
    arrays = _arrays(op, ((3, 3, 3, 3),), rng)
    grad_seed = int(rng.integers(2**32))
    calls = (lambda *xs: op.call(sg, *xs), lambda *xs: op.call(torch, *xs))
    with pytest.raises(AssertionError, match=where):
        check_against_torch(*calls, arrays, "float32", seed=grad_seed)
    check_against_torch(
        *calls, arrays, "float32", seed=grad_seed, tolerance=normwise("float32", dims=None)
    )


def _float64_inputs(op):
    rng = np.random.default_rng(0)
    arrays = _arrays(op, op.check_shapes[: _arity(op)], rng)
    return [sg.tensor(a, dtype=sg.float64, requires_grad=True) for a in arrays]


def _arity(op):
    return op.call.__code__.co_argcount - 1


@pytest.mark.parametrize("op", [op for op in OPS if op.grad], ids=lambda op: op.name)
def test_gradcheck(op):
    inputs = _float64_inputs(op)
    assert sg.autograd.gradcheck(lambda *xs: op.call(sg, *xs), inputs)


@pytest.mark.parametrize(
    "op", [op for op in OPS if op.grad and op.gradgrad], ids=lambda op: op.name
)
def test_gradgradcheck(op):
    inputs = _float64_inputs(op)
    assert sg.autograd.gradgradcheck(lambda *xs: op.call(sg, *xs), inputs)


def test_gradcheck_catches_a_wrong_derivative():
    """The checker itself can fail: a Function with a deliberately wrong backward."""

    class WrongSquare(sg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x  # should be 2 * x

    x = sg.randn(3, dtype=sg.float64, requires_grad=True)
    assert not sg.autograd.gradcheck(WrongSquare.apply, x, raise_exception=False)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        sg.autograd.gradcheck(WrongSquare.apply, x)


ROWS = {op.name: op for op in OPS}


def _value_and_two_gradients(op, arrays, seed):
    """``op``'s value, its gradients for a random output gradient, and the gradients of those
    (for a random vector), in float64: everything a fused node and its backward compute."""
    rng = np.random.default_rng(seed)
    xs = [sg.tensor(a, dtype=sg.float64, requires_grad=True) for a in arrays]
    out = op.call(sg, *xs)
    g = sg.tensor(rng.standard_normal(out.shape), dtype=sg.float64)
    grads = sg.autograd.grad(out, xs, g, create_graph=True, allow_unused=True)
    dots = [(d * sg.tensor(rng.standard_normal(d.shape))).sum() for d in grads if d is not None]
    total = sum(dots[1:], dots[0])
    second = [None] * len(xs)
    if total.requires_grad:
        second = sg.autograd.grad(total, xs, allow_unused=True)
    values = [out, *grads, *second]
    shapes = [out.shape] + [x.shape for x in xs] * 2
    return [np.zeros(s) if v is None else v.detach().numpy() for v, s in zip(values, shapes)]


@pytest.mark.parametrize("op", [op for op in OPS if op.twin], ids=lambda op: op.name)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_fused_node_matches_its_composed_twin(op, data):
    """A row that takes a fused node of ops/fused.py and its twin, which composes the same
    function from the primitives: the same value, gradients and second gradients, to float64
    rounding (the algebra is the same, only the order of a few operations differs)."""
    shapes = data.draw(SHAPES[op.shapes], label="shapes")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    arrays = _arrays(op, shapes, np.random.default_rng(seed))
    fused = _value_and_two_gradients(op, arrays, seed)
    composed = _value_and_two_gradients(ROWS[op.twin], arrays, seed)
    inputs = range(len(arrays))
    names = ["value", *(f"gradient {i}" for i in inputs), *(f"2nd gradient {i}" for i in inputs)]
    for what, f, c in zip(names, fused, composed, strict=True):
        # rounding is relative to the array's scale: an entry that cancels to ~1e-9 of the
        # others' size differs by more than 1e-12 of itself (cross_entropy_sum, seed 5684)
        atol = 1e-12 * np.abs(c).max(initial=0)
        np.testing.assert_allclose(f, c, rtol=1e-12, atol=atol, err_msg=f"{op.name} {what}")
