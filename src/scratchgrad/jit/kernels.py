"""Direct NumPy calls for the hottest primitives, so a replay skips their ``forward``'s frame,
its ctx object and its checks (which recording already passed).

Each entry maps a Function to a rule: given the code of the call's array arguments, the arrays
themselves as recorded, the static attributes and ``expr`` (the recorder's: the code of any
other object, a literal or a constant of the program), it returns the code of one expression that
computes exactly what ``forward`` computed (the same NumPy calls in the same order, so the same
bits), or None where the rule does not cover the case (then the forward itself is replayed).
A matrix product's rule returns a ``gemm.Product`` instead: that code with the two matrices,
so the recorder may choose to replay it another way: swapped or split (see gemm.py).
A rule may only be given for a forward whose backward reads nothing but its inputs and its
result from ``ctx``. The code ends with ``OUT`` before its closing parenthesis, where the
program may write ``, out=...``: a buffer kept across replays, or an input that nothing reads
afterwards (only the inputs that ``OVERWRITES`` names: those the call reads element by element
before writing the same element).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from scratchgrad.backend import accumulation_dtype, keep_where, xp
from scratchgrad.jit import gemm
from scratchgrad.ops import binary, conv, fused, matmul, reduce, unary


def linear(x: Any, w: Any, b: Any = None, out: Any = None, product: Callable = xp.dot) -> Any:
    """``Linear.forward`` of two matrices in float32 or float64: ``x @ w.T + b`` (``x @ w.T``
    without a bias), into ``out`` if given. ``product`` is ``matmul.dot``'s choice for these
    layouts, made when the step records: ``numpy.dot``, or the matmul ufunc."""
    out = product(x, w.T, out=out)
    if b is not None:
        out += b
    return out


def tanh_grad(grad: Any, y: Any, one: Any = 1, out: Any = None) -> Any:
    """``TanhGrad.forward``, ``grad * (1 - y * y)`` (``y`` the tanh's result), in one buffer
    (``out``, or a new one) instead of three. ``one``: 1, or as a replay passes it, ``ONES``'
    0-d array of ``y``'s dtype (exact in any float dtype, so the same bits)."""
    buffer = xp.multiply(y, y, out=out)
    xp.subtract(one, buffer, out=buffer)
    return xp.multiply(grad, buffer, out=buffer)


class _Ones(dict):
    """A read-only 0-d array holding 1 for each dtype, made on first use. NOTE: NumPy's call
    with a Python number converts it at each call (NEP 50's weak scalars): 0.87 us for
    ``subtract(1, a, out=a)`` on a 4x4 float32 array, 0.43 us with this array."""

    def __missing__(self, dtype: Any) -> Any:
        one = self[dtype] = xp.ones((), dtype)
        one.flags.writeable = False
        return one


ONES = _Ones()


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
    "np_dot": xp.dot,
    "np_matmul": xp.matmul,
    "k_linear": linear,
    "k_swapped": gemm.swapped,
    "k_split": gemm.split,
    "k_pieces": matmul.summed_in_pieces,
    "k_swapped_product": matmul.swapped_product,
    "k_tanh_grad": tanh_grad,
    "k_keep_where": keep_where,
    "k_relu": unary.relu,
    "k_unfold": conv.unfold,
    "k_fold": conv.fold,
    "k_spread": conv.spread,
    "k_mse": fused.mse,
    "k_mse_grad": fused.mse_grad,
    "k_cross_entropy_grad": fused.cross_entropy_grad,
}


# Where a rule's code may take an out= argument (see the module's doc string).
OUT = gemm.OUT


def _ufunc(name: str) -> Callable:
    return lambda args, arrays, kwargs, expr: f"{name}({', '.join(args)}{OUT})"


def _same_matrices(arrays: list) -> bool:
    """Whether all are matrices of one dtype that BLAS multiplies as it is (not a 16-bit
    float, which products widen to float32 and round back)."""
    dtype = arrays[0].dtype
    return all(
        isinstance(a, xp.ndarray) and a.ndim == 2 and a.dtype == dtype for a in arrays
    ) and not accumulation_dtype(dtype)


# NOTE: the matrix products below are ``matmul.dot``'s call, ``numpy.dot`` or the matmul
# ufunc, as the forwards': with out= it runs the same BLAS call writing into the buffer, so
# the same bits (a test checks it).
# They are given to the recorder as ``gemm.Product``s, which it may replay another way,
# swapped or split (see gemm.py).


def _linear(args, arrays, kwargs, expr) -> gemm.Product | None:
    (x, w), bias = arrays[:2], arrays[2] if len(arrays) == 3 else None
    if not _same_matrices([x, w]) or (bias is not None and bias.dtype != x.dtype):
        return None
    if matmul.piece_length(x, w.T) or matmul.swaps(x, w.T):
        return None  # (summed in pieces or swapped: the forward replays as it is)
    product = ", product=np_matmul" if matmul.through_ufunc(x, w.T) else ""
    code = f"k_linear({', '.join(args)}{product}{OUT})"
    bias = None if bias is None else (args[2], bias)
    return gemm.Product(code, _linear_of, (args[0], x), (f"{args[1]}.T", w.T), bias)


def _linear_of(a: Any, b: Any, bias: Any, out: Any) -> Any:
    return linear(a, b.T, bias, out, matmul.dot)  # (b is the weight's transpose)


def _dot(a: Any, b: Any, bias: None, out: Any) -> Any:
    return matmul.dot(a, b, out)


def _matmul_of_stacks(a: Any, b: Any, bias: None, out: Any) -> Any:
    return xp.matmul(a[None], b[None], out=out)


def _matmul(args, arrays, kwargs, expr) -> gemm.Product | None:
    (x, y), (x_code, y_code) = arrays, args
    if kwargs.get("transpose_x"):  # the forward's view
        x_code += ".T" if x.ndim == 2 else ".swapaxes(-1, -2)"
        x = x.swapaxes(-1, -2)
    length = matmul.piece_length(x, y)
    if length:  # as the forward sums it, and never swapped or split (other bits)
        return f"k_pieces({x_code}, {y_code}, {length})"
    if matmul.swaps(x, y):  # as the forward swaps it
        return f"k_swapped_product({x_code}, {y_code})"
    if _same_matrices([x, y]):
        call = "np_matmul" if matmul.through_ufunc(x, y) else "np_dot"
        code, a, b = f"{call}({x_code}, {y_code}{OUT})", (x_code, x), (y_code, y)
        return gemm.Product(code, _dot, a, b)
    if all(z.ndim == 3 and len(z) == 1 for z in (x, y)) and _same_matrices([x[0], y[0]]):
        # conv2d's products, each of a stack of one matrix: matmul's own call (numpy.dot of
        # the two matrices was 2-10% slower), swapped as those two matrices. Without out=:
        # into the arena, W5's step took 1.00x to 1.07x the time (docs/jit.md), and their
        # results (0.8 to 3.6 MB) would make the arena larger.
        a, b = (f"{x_code}[0]", x[0]), (f"{y_code}[0]", y[0])
        code = f"np_matmul({x_code}, {y_code})"
        return gemm.Product(code, _matmul_of_stacks, a, b)
    return None


def _sum_to_size(args, arrays, kwargs, expr) -> str | None:
    (x,) = arrays
    shape = kwargs["shape"]
    if x.ndim == 2 and shape == x.shape[1:] and x.dtype.kind == "f" and _same_matrices(arrays):
        ones = expr(reduce._ones(len(x), x.dtype))
        return f"np_dot({ones}, {args[0]}{OUT})"  # a bias's gradient
    return None


def _tanh_grad(args, arrays, kwargs, expr) -> str | None:
    grad, out = arrays
    if not isinstance(grad, xp.ndarray) or (grad.shape, grad.dtype) != (out.shape, out.dtype):
        return None  # the buffer could not hold the result
    if not out.ndim:
        return None  # (NumPy's product of 0-d arrays is a scalar, not a buffer)
    if accumulation_dtype(out.dtype):
        return None  # computed in float32 (TanhGrad.forward): bfloat16's own products differ
    return f"k_tanh_grad({args[0]}, {args[1]}, {expr(ONES[out.dtype])}{OUT})"


def _relu(args, arrays, kwargs, expr) -> str | None:
    (x,) = arrays
    if accumulation_dtype(x.dtype):
        return None  # computed in float32 (Relu.forward): float16's own maximum keeps -0.0
    if not unary.relu_takes_rows(x):
        return f"np_maximum({args[0]}, 0{OUT})"  # what unary.relu does then
    return f"k_relu({args[0]}{OUT})"


def _where(args, arrays, kwargs, expr) -> str | None:
    condition, x, y = arrays
    # the forward's masking branch (a ReLU's or a comparison's gradient)
    if condition.dtype == bool and binary._is_plus_zero(y) and binary._is_float_array(x):
        return f"k_keep_where({args[0]}, {args[1]}{OUT})"
    return None


def _cross_entropy_grad(args, arrays, kwargs, expr) -> str:
    # (the logits, its second input, are for its own backward only)
    values = ", ".join(expr(kwargs[k]) for k in ("log_probs", "entries", "mean"))
    return f"k_cross_entropy_grad({args[0]}, {values})"


def _call_with_static(name: str) -> Callable:
    """A rule calling ``name`` with the array arguments and the static keyword arguments."""
    return lambda args, arrays, kwargs, expr: (
        f"{name}({', '.join(args)}, {', '.join(f'{k}={expr(v)}' for k, v in kwargs.items())})"
    )


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
    binary.Where: _where,
    # NOTE: no out= for these: their results written into the arena made W5's jitted step
    # 1.06x slower (Unfold's alone 1.10x) than the new arrays NumPy hands out, measured
    # in one process, programs with and without interleaved.
    conv.Unfold: _call_with_static("k_unfold"),
    conv.Fold: _call_with_static("k_fold"),
    conv.Spread: _call_with_static("k_spread"),
    # (a NumPy scalar and a small array: no out=)
    fused.MSELoss: _call_with_static("k_mse"),
    fused.MSELossGrad: _call_with_static("k_mse_grad"),
    fused.CrossEntropyGrad: _cross_entropy_grad,
}

# The inputs (by position) a rule's result may overwrite; the others never (a product's
# result cannot be written over its factors, ``tanh_grad`` reads its gradient after writing).
_ELEMENTWISE = (0, 1)
OVERWRITES: dict[type, tuple[int, ...]] = {
    **{cls: _ELEMENTWISE for cls in (binary.Add, binary.Sub, binary.Mul, binary.Div)},
    **{cls: (0,) for cls in (unary.Neg, unary.Tanh, unary.Exp, unary.Log, unary.Relu)},
    fused.TanhGrad: (1,),
    binary.Where: (1,),
}


# ---- array calls made outside a Function (``capture_hook.call``) ----

# Calls that change nothing but their result (not their arguments, no random generator): a
# replay may drop them when their result is unused, and their arguments stay the program's.
# (Not ``_elementwise``: in-place arithmetic calls it with out=.) The module, not the package's
# attribute ``tensor``, which is the function ``scratchgrad.tensor``.
_compare = importlib.import_module("scratchgrad.tensor")._compare  # a Tensor comparison's
PURE_CALLS = {_compare}

_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _comparison(args, arrays, expr) -> str | None:
    name, x, y = arrays
    if name not in _COMPARISONS or (
        accumulation_dtype(x.dtype) or accumulation_dtype(getattr(y, "dtype", None))
    ):
        return None  # compared in float32 (see _compare)
    return f"{expr(getattr(xp, name))}({args[1]}, {args[2]}{OUT})"  # as _elementwise's


CALL_RULES: dict[Callable, Callable[..., str | None]] = {_compare: _comparison}
