"""Random chains of ops on complex tensors against PyTorch, with their gradients: a complex128
leaf that requires grad (and a second operand, complex, real or a Python number), one to three
ops drawn from the elementwise functions, arithmetic, reductions, products, views and FFTs,
then a real loss (``view_as_real(y) * w``, or ``y * w`` for a real result) backward. Both
libraries must raise or not (the same error class) and agree on the result's shape, dtype and
values and on the leaves' gradients: PyTorch's convention for complex gradients (the conjugate
Wirtinger derivative) is the one a user's optimizer steps along. Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(200)
TOLERANCE = (1e-9, 1e-11)
SINGLE_TOLERANCE = (2e-5, 1e-6)  # where the chain went through complex64
REFUSED = "complex tensors are not supported by scratchgrad yet"

UNARY = {  # away from their branch cuts and poles: see _away_from_cuts
    "exp": lambda m, x: x.exp(),
    "log": lambda m, x: x.log(),
    "sqrt": lambda m, x: x.sqrt(),
    "rsqrt": lambda m, x: x.rsqrt(),
    "sin": lambda m, x: x.sin(),
    "cos": lambda m, x: x.cos(),
    "tan": lambda m, x: x.tan(),
    "tanh": lambda m, x: x.tanh(),
    "sinh": lambda m, x: x.sinh(),
    "sigmoid": lambda m, x: x.sigmoid(),
    "reciprocal": lambda m, x: x.reciprocal(),
    "square": lambda m, x: x.square(),
    "pow2": lambda m, x: x**2,
    "pow_half": lambda m, x: x**0.5,
    "pow_complex": lambda m, x: x ** complex(0.5, 0.25),
    "abs": lambda m, x: x.abs(),
    "angle": lambda m, x: x.angle(),
    "conj": lambda m, x: x.conj(),
    "conj_physical": lambda m, x: x.conj_physical(),
    "real": lambda m, x: x.real,
    "imag": lambda m, x: x.imag,
    "neg": lambda m, x: -x,
    "sgn": lambda m, x: x.sgn(),
    "log1p": lambda m, x: x.log1p(),
    "expm1": lambda m, x: x.expm1(),
    "asin": lambda m, x: x.asin(),
    "atan": lambda m, x: x.atan(),
    "asinh": lambda m, x: x.asinh(),
    "sum": lambda m, x: x.sum(),
    "sum_dim": lambda m, x: x.sum(-1, keepdim=True),
    "mean": lambda m, x: x.mean(0),
    "prod": lambda m, x: x.prod(-1),
    "cumsum": lambda m, x: x.cumsum(0),
    "cumprod": lambda m, x: x.cumprod(-1),
    "norm": lambda m, x: x.norm(),
    "vector_norm_1": lambda m, x: m.linalg.vector_norm(x, 1, dim=-1),
    "var": lambda m, x: x.var(-1),
    "t": lambda m, x: x.t(),
    "mT_matmul": lambda m, x: x.mT @ x,
    "mH_matmul": lambda m, x: x.mH @ x,
    "flip": lambda m, x: x.flip(0),
    "roll": lambda m, x: x.roll(1, -1),
    "triu": lambda m, x: x.triu(),
    "diagonal": lambda m, x: x.diagonal(),
    "index": lambda m, x: x[m.tensor([1, 0, 1])],
    "fft": lambda m, x: m.fft.fft(x),
    "ifft": lambda m, x: m.fft.ifft(x, dim=0),
    "fft2": lambda m, x: m.fft.fft2(x, norm="ortho"),
    "view_as_real": lambda m, x: m.view_as_real(x.resolve_conj()),
    "mul_i": lambda m, x: x * 1j,
    "div_number": lambda m, x: 2.0 / (x + 3),
    "trace": lambda m, x: x.trace(),
    "det": lambda m, x: m.linalg.det(x),
    "inv": lambda m, x: m.linalg.inv(x),
    "softmax_of_real": lambda m, x: x.real.softmax(-1) * x,
    "cosh": lambda m, x: x.cosh(),
    "std": lambda m, x: x.std(0),
    "polar": lambda m, x: m.polar(x.abs(), x.angle()),
    "complex_of_parts": lambda m, x: m.complex(x.real * 2, x.imag.exp()),
    "view_as_complex": lambda m, x: m.view_as_complex(m.view_as_real(x.resolve_conj()) * 2),
    "einsum": lambda m, x: m.einsum("...i,...i->...", x, x.conj()),
    "linear": lambda m, x: m.nn.functional.linear(x, x.reshape(-1, x.shape[-1])[:2]),
    "setitem": lambda m, x: _setitem(x.clone(), x[..., 0] * 2),
    "expand_reshape": lambda m, x: x.unsqueeze(0).expand(2, *x.shape).reshape(-1),
    "strided": lambda m, x: x[..., ::2],
    "rfft_of_real": lambda m, x: m.fft.rfft(x.real),
    "irfft": lambda m, x: m.fft.irfft(x, n=4),
    "ifftshift": lambda m, x: m.fft.ifftshift(m.fft.fftn(x)),
    "to_complex64": lambda m, x: x.to(m.complex64) * 2,
}

BINARY = {
    "add": lambda m, x, y: x + y,
    "sub": lambda m, x, y: x - y,
    "mul": lambda m, x, y: x * y,
    "div": lambda m, x, y: x / y,
    "pow": lambda m, x, y: x**y,
    "rpow": lambda m, x, y: y**x,
    "matmul": lambda m, x, y: x @ y,
    "dot_vdot": lambda m, x, y: m.vdot(x.flatten(), y.flatten()) if _tensors(x, y) else x * y,
    "where": lambda m, x, y: m.where(x.real > 0, x, y),
    "addcmul": lambda m, x, y: x.addcmul(x, y, value=0.5) if _tensors(x, y) else x * y,
    "cat": lambda m, x, y: m.cat([x, y]) if _tensors(x, y) else x,
    "stack": lambda m, x, y: m.stack([x, y], -1) if _tensors(x, y) else x,
    "solve": lambda m, x, y: m.linalg.solve(x, y) if _tensors(x, y) else x,
}


def _setitem(x, value):
    x[..., 1] = value
    return x


def _tensors(*args) -> bool:
    return all(isinstance(a, sg.Tensor | torch.Tensor) for a in args)


def _away_from_cuts(values: np.ndarray) -> np.ndarray:
    """Complex entries off the axes (where log, sqrt, asin... have branch cuts and abs, angle
    and sgn kinks), of moduli between 0.3 and 1.2, so both libraries differentiate the same
    branch, and square matrices stay invertible (a diagonal of 2)."""
    angle = np.angle(values)
    nudged = np.where(np.abs(np.sin(2 * angle)) < 0.2, angle + 0.3, angle)
    return np.clip(np.abs(values), 0.3, 1.2) * np.exp(1j * nudged)


@st.composite
def operands(draw):
    """The leaf (a 3x3 complex128 matrix, or a 3-vector), and the second operand: complex,
    real, a complex or real Python number."""
    shape = draw(st.sampled_from([(3, 3), (3,)]))
    count = int(np.prod(shape))
    parts = st.lists(st.floats(-1, 1), min_size=2 * count, max_size=2 * count)
    values = np.array(draw(parts)).reshape(2, *shape)
    x = _away_from_cuts(values[0] + 1j * values[1])
    if len(shape) == 2:
        x = x + 2 * np.eye(3)
    kind = draw(st.sampled_from(["complex", "real", "complex number", "real number"]))
    second = np.array(draw(st.lists(st.floats(-1, 1), min_size=count, max_size=count)))
    second = 1.5 + second.reshape(shape)  # away from 0 (a divisor, a base)
    if kind == "complex":
        other = _away_from_cuts(second + 1j * x.imag)
    elif kind == "real":
        other = second
    else:
        other = complex(1.5, -0.5) if kind == "complex number" else 0.75
    return x, other


def _leaf(m, value):
    if isinstance(value, np.ndarray):
        return m.tensor(value, requires_grad=True)
    return value


@given(
    operands(),
    st.lists(st.sampled_from(sorted(UNARY) + sorted(BINARY)), min_size=1, max_size=3),
)
@FUZZ
def test_a_chain_of_complex_ops_matches_torch(values, names):
    x_value, other_value = values

    def run(m):
        x, other = _leaf(m, x_value), _leaf(m, other_value)
        y = x
        for name in names:
            y = UNARY[name](m, y) if name in UNARY else BINARY[name](m, y, other)
        real = m.view_as_real(y.resolve_conj()) if y.is_complex() else y
        weights = m.tensor(np.linspace(-1, 1, real.numel()).reshape(tuple(real.shape)))
        (real * weights).sum().backward()
        grads = [t.grad for t in (x, other) if isinstance(t, m.Tensor)]
        return y, grads

    ours, theirs = outcome(run, sg), outcome(run, torch)
    if REFUSED in str(ours):  # an op whose complex gradient is not written yet (README)
        return
    if "isFloatingType(grad" in str(theirs) or "ZeroTensor" in str(theirs):
        return  # PyTorch's internal errors: it has no answer
    if raised_alike(ours, theirs, str(names)):
        return
    (y, grads), (expected, expected_grads) = ours, theirs
    tolerance = SINGLE_TOLERANCE if "to_complex64" in names else TOLERANCE
    assert str(y.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], names
    assert_close(
        y, expected.resolve_conj().resolve_neg(), what=f"{names}: values", tolerance=tolerance
    )
    for grad, expected_grad in zip(grads, expected_grads):
        if expected_grad is None:
            assert grad is None or not grad.abs().sum().item(), names
            continue
        if expected_grad._is_zerotensor():  # (PyTorch's lazy zeros: sgn of a real tensor)
            expected_grad = torch.zeros_like(expected_grad)
        expected_grad = expected_grad.resolve_conj().resolve_neg()
        assert_close(grad, expected_grad, what=f"{names}: gradient", tolerance=tolerance)
