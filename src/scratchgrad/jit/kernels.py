"""Direct NumPy calls for the hottest primitives, so a replay skips their ``forward``'s frame,
its ctx object and its checks (which recording already passed).

Each entry maps a Function to a rule: given the code of the call's array arguments, the arrays
themselves as recorded and the static attributes, it returns the code of one expression that
computes exactly what ``forward`` computed (the same NumPy calls in the same order, so the same
bits), or None where the rule does not cover the case (then the forward itself is replayed).
A rule may only be given for a forward whose backward reads nothing but its inputs and its
result from ``ctx``. A ufunc's code may take an ``out=`` (see ``OUT``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scratchgrad.backend import accumulation_dtype, xp
from scratchgrad.ops import binary, fused, matmul, reduce, unary


def linear(x: Any, w: Any, b: Any = None) -> Any:
    """``Linear.forward`` of two matrices in float32 or float64: ``x @ w.T + b`` (``x @ w.T``
    without a bias)."""
    out = x.dot(w.T)
    if b is not None:
        out += b
    return out


def tanh_grad(grad: Any, out: Any) -> Any:
    """``TanhGrad.forward``, ``grad * (1 - out * out)``, in one buffer instead of three."""
    buffer = xp.multiply(out, out)
    xp.subtract(1, buffer, out=buffer)
    return xp.multiply(grad, buffer, out=buffer)


# Names the generated code may use (prefixed so they cannot meet the program's own names).
NAMES = {
    "np_add": xp.add,
    "np_subtract": xp.subtract,
    "np_multiply": xp.multiply,
    "np_divide": xp.true_divide,
    "np_negative": xp.negative,
    "np_tanh": xp.tanh,
    "np_exp": xp.exp,
    "np_log": xp.log,
    "np_maximum": xp.maximum,
    "k_linear": linear,
    "k_tanh_grad": tanh_grad,
}


# A ufunc's code ends with OUT before its closing parenthesis: the program may replace it with
# ", out=vN" to write the result over an input that nothing reads afterwards.
OUT = "@OUT@"


def _ufunc(name: str) -> Callable:
    return lambda args, arrays, kwargs, constant: f"{name}({', '.join(args)}{OUT})"


def _same_matrices(arrays: list) -> bool:
    """Whether all are matrices of one dtype that BLAS multiplies as it is (not a 16-bit
    float, which products widen to float32 and round back)."""
    dtype = arrays[0].dtype
    return all(
        isinstance(a, xp.ndarray) and a.ndim == 2 and a.dtype == dtype for a in arrays
    ) and not accumulation_dtype(dtype)


def _linear(args, arrays, kwargs, constant) -> str | None:
    bias = arrays[2] if len(arrays) == 3 else None
    if not _same_matrices(arrays[:2]) or (bias is not None and bias.dtype != arrays[0].dtype):
        return None
    return f"k_linear({', '.join(args)})"


def _matmul(args, arrays, kwargs, constant) -> str | None:
    if not _same_matrices(arrays):
        return None
    if kwargs.get("transpose_x"):
        return f"{args[0]}.T.dot({args[1]})"
    return f"{args[0]}.dot({args[1]})"


def _sum_to_size(args, arrays, kwargs, constant) -> str | None:
    (x,) = arrays
    shape = kwargs["shape"]
    if x.ndim == 2 and shape == x.shape[1:] and x.dtype.kind == "f" and _same_matrices(arrays):
        return f"{constant(reduce._ones(len(x), x.dtype))}.dot({args[0]})"  # a bias's gradient
    return None


def _tanh_grad(args, arrays, kwargs, constant) -> str | None:
    grad, out = arrays
    if not isinstance(grad, xp.ndarray) or (grad.shape, grad.dtype) != (out.shape, out.dtype):
        return None  # the buffer could not hold the result
    return f"k_tanh_grad({args[0]}, {args[1]})"


def _relu(args, arrays, kwargs, constant) -> str:
    return f"np_maximum({args[0]}, 0{OUT})"


RULES: dict[type, Callable[..., str | None]] = {
    binary.Add: _ufunc("np_add"),
    binary.Sub: _ufunc("np_subtract"),
    binary.Mul: _ufunc("np_multiply"),
    binary.Div: _ufunc("np_divide"),
    unary.Neg: _ufunc("np_negative"),
    unary.Tanh: _ufunc("np_tanh"),
    unary.Exp: _ufunc("np_exp"),
    unary.Log: _ufunc("np_log"),
    unary.Relu: _relu,
    fused.TanhGrad: _tanh_grad,
    fused.Linear: _linear,
    matmul.MatMul: _matmul,
    reduce.SumToSize: _sum_to_size,
}
