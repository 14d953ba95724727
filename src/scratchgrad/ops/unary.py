"""Elementwise unary primitives."""

import functools
import math
from typing import Any

from scratchgrad.autograd.function import Function, holomorphic_twin
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.backend import (
    accumulation_dtype,
    bfloat16,
    block_order,
    cast,
    errstate,
    float64,
    in_float32,
    is_floating,
    keep_where,
    namespace,
    ndarray,
    widened,
    xp,
)
from scratchgrad.ops.binary import MaskedGrad, Where
from scratchgrad.ops.fused import TanhGrad


class Neg(Function):
    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x):
        return namespace(x).negative(x)

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        out = namespace(x).exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def forward_in_place(x):  # forward's result written over x (Tensor.exp_)
        xp.exp(x, out=x)

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / x


class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class Cos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).cos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * x.sin()


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        out = (xp if type(x) is ndarray else namespace(x)).tanh(x)
        ctx._to_save = (out,)  # save_for_backward's, without its call (hot)
        return out

    @staticmethod
    def forward_in_place(x):  # forward's result written over x (Tensor.tanh_)
        xp.tanh(x, out=x)

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return TanhGrad.apply(grad, out)  # grad * (1 - out * out), as one node (ops/fused.py)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        xp = namespace(x)
        wide = widened(x)  # 16-bit: in float32, rounded once, as PyTorch's kernel
        # PyTorch's formula (its rounding): exp(-x) overflows to inf for x < -88, giving 0
        # (NumPy's overflow warning is filtered for scratchgrad's modules: see backend)
        out = 1 / (1 + xp.exp(-wide))
        out = out if wide is x else cast(out, x.dtype)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def forward_in_place(x):  # forward's result over a float32 or float64 x, its rounding
        xp.negative(x, out=x)
        try:  # (NumPy raises an overflow, by np.seterr or a warnings filter, once exp is written:
            xp.exp(x, out=x)  # x is still made the result, which Tensor.sigmoid_ records)
        finally:
            xp.add(1, x, out=x)
            xp.divide(1, x, out=x)

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        if out.array.dtype != bfloat16:  # PyTorch's order (its float16 kernel rounds each step)
            return grad * (1 - out) * out
        out = out.float()  # in float32, rounded once, as PyTorch's bfloat16 sigmoid_backward
        return (grad.float() * (1 - out) * out).to(grad.dtype)


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        # 16 bits: computed in float32, exact there and several times faster
        out = relu(x) if accumulation_dtype(x.dtype) is None else in_float32(relu, x)
        ctx._to_save = (out,)  # save_for_backward's, without its call (hot)
        return out

    @staticmethod
    def forward_in_place(x):  # forward's result over a float32 or float64 x (relu_)
        relu(x, out=x)

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        # PyTorch's threshold_backward: the gradient unless out <= 0, so at a NaN too; a ReLU's
        # result is never below 0, so that is where it is not 0
        if _state.enabled:  # create_graph: the gradient is a function of out too, as PyTorch's
            return MaskedGrad.apply(grad, out, out != 0)
        return Where.apply(out != 0, grad, 0.0)


# Below this many entries a ReLU is ``maximum(x, 0)`` as it is: the rows cost more than they save.
RELU_ROWS_FROM = 1 << 14
_RELU_ROW = 1 << 13


def relu_takes_rows(x: Any) -> bool:
    """Whether ``relu`` computes ``x`` as rows against a row of zeros: a large NumPy array (the
    rows work around NumPy's slow maximum with a number; on CuPy ``maximum(x, 0)`` is one
    kernel already). The jit's ReLU rule asks the same.

    >>> import numpy
    >>> relu_takes_rows(numpy.zeros(RELU_ROWS_FROM)), relu_takes_rows(numpy.zeros(10))
    (True, False)
    """
    return type(x) is ndarray and x.size >= RELU_ROWS_FROM


def relu(x: Any, out: Any = None) -> Any:
    """``maximum(x, 0)`` bit for bit (NaN kept; -0.0 made +0.0 in float32 and float64, while
    NumPy's float16 maximum keeps -0.0: ``Relu`` computes 16 bits in float32), into ``out`` if
    given (laid out as ``x``, or over ``x`` itself). NumPy's maximum with a number takes a path
    about 2.5 times slower than with two arrays (148 against 58 us for 401,408 float32,
    measured), so a large NumPy ``x`` meets a row of zeros instead: seen in memory order, it is
    rows of 8192 entries and a shorter last row.

    >>> import numpy
    >>> relu(numpy.array([-1.0, numpy.nan, 2.0]))
    array([ 0., nan,  2.])
    """
    if not relu_takes_rows(x):
        return (xp if type(x) is ndarray else namespace(x)).maximum(x, 0, out=out)
    flat = _in_memory_order(x)
    if out is None and flat is not None:
        out = xp.empty_like(x)  # x's layout, as maximum's own result
    flat_out = None if flat is None or out.strides != x.strides else _in_memory_order(out)
    if flat_out is None:
        return xp.maximum(x, 0, out=out)
    zeros = _zeros(_RELU_ROW, x.dtype)
    whole = flat.size - flat.size % _RELU_ROW
    xp.maximum(
        flat[:whole].reshape(-1, _RELU_ROW), zeros, out=flat_out[:whole].reshape(-1, _RELU_ROW)
    )
    if whole < flat.size:
        xp.maximum(flat[whole:], zeros[: flat.size - whole], out=flat_out[whole:])
    return out


def _in_memory_order(x: Any) -> Any:
    """``x``'s entries as a 1-d view in the order they lie in memory, if they fill one block;
    else None."""
    order = block_order(x)
    return None if order is None else x.transpose(order).reshape(-1)


@functools.lru_cache(maxsize=16)
def _zeros(n: int, dtype) -> Any:
    """A read-only NumPy row of ``n`` zeros, kept (see ``reduce._ones``)."""
    zeros = xp.zeros(n, dtype)
    zeros.flags.writeable = False
    return zeros


class Sqrt(Function):
    @staticmethod
    def forward(ctx, x):
        out = namespace(x).sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad / (2 * out)


class Reciprocal(Function):
    """1 / x, saving its result as PyTorch's: the input may change in place before backward."""

    @staticmethod
    def forward(ctx, x):
        out = namespace(x).reciprocal(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return -grad * (out * out)


class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sign()


class Step(Function):
    """A piecewise constant function (sign, floor, ceil, round): its gradient is zero
    everywhere, PyTorch's convention at the jumps too."""

    @staticmethod
    def forward(ctx, x, ufunc):
        ctx.ufunc = ufunc  # NumPy's, named: the operand's module computes
        out = getattr(namespace(x), ufunc.__name__)(x)
        if ufunc.__name__ == "sign" and is_floating(x.dtype):
            # PyTorch's sign of NaN and of -0.0 is +0.0 (NumPy's NaN, and bfloat16's -0.0)
            return keep_where(out * out == 1, out)
        return out

    def name(self) -> str:
        return self.ufunc.__name__.capitalize() + "Backward0"  # SignBackward0, FloorBackward0

    @staticmethod
    def backward(ctx, grad):
        # zeros, not grad * 0: an infinite or NaN incoming gradient gives 0 too, as PyTorch's
        return grad.new_zeros(()).expand(grad.shape)


class Round(Function):
    """Rounding half to even at ``decimals`` decimal places (left of the point when negative),
    as PyTorch computes it: ``rint(x * 10**decimals) / 10**decimals`` (``rint(x / 10**-decimals)
    * 10**-decimals`` for negative ``decimals``), the power of ten computed in float64 and
    rounded to x's dtype. 16-bit floats are computed in float32 and rounded once, as PyTorch's."""

    backward_name = "RoundBackward1"
    backward = staticmethod(Step.backward)  # zero, as every rounding's

    @staticmethod
    def forward(ctx, x, decimals):
        xp = namespace(x)
        wide = widened(x)
        with errstate(over="ignore"):  # past the dtype's range the power is inf, as PyTorch's
            scale = (xp.float64(10.0) ** abs(decimals)).astype(wide.dtype)
        out = xp.rint(wide / scale) * scale if decimals < 0 else xp.rint(wide * scale) / scale
        return out if out.dtype == x.dtype else cast(out, x.dtype)


# ---- more elementwise math: each forward is one ufunc, each derivative one line ----------------


class Log1p(Function):
    """log(1 + x), accurate for tiny x where 1 + x would round to 1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).log1p(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 + x)


def _in_float64(ufunc: str, x):
    """``ufunc(x)`` computed in float64 and rounded once to x's dtype: NumPy's float32 log10
    is up to 2 ulps off (on 56% of float32 inputs not the nearest float32, log10(100) is
    2.0000002), where PyTorch's is within 1 ulp; the float64 one rounded is the nearest."""
    out = getattr(namespace(x), ufunc)(x.astype(float64))
    return out if x.dtype == float64 else cast(out, x.dtype)


class Log2(Function):
    """log2(x): log(x) / log(2) rounds twice (log2(8) was 2.9999999999999996). ``Log10`` is
    the same with base 10."""

    ufunc, base = "log2", 2

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _in_float64(type(ctx).ufunc, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x * math.log(type(ctx).base))  # PyTorch's grad / (x * ln base)


class Log10(Log2):
    """log10(x): log(x) / log(10) rounds twice (log10(0.1) was -0.9999999999999998)."""

    ufunc, base = "log10", 10


class Expm1(Function):
    """exp(x) - 1, accurate for tiny x."""

    @staticmethod
    def forward(ctx, x):
        out = namespace(x).expm1(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (out + 1)


class Elu(Function):
    """``scale * x`` where x > 0, else ``alpha * scale * expm1(input_scale * x)``: PyTorch's elu,
    selu and celu (each its coefficients) as its one node, for its derivatives.

    NOTE: PyTorch's elu_backward takes the exponential's slope where x <= 0 (at 0, ``alpha *
    scale * input_scale``), but its double backward (elu_double_backward) only where x < 0:
    at 0 the second derivative is 0, which no composition of ``where`` and ``clamp`` gives
    (clamp's gradient passes at its bound). The in-place forms (``is_result``) take the slope
    from the result, as PyTorch's: ``input_scale * (out + alpha * scale)``."""

    backward_name = "EluBackward0"

    @staticmethod
    def forward(ctx, x, alpha, scale, input_scale, backward_input_scale=None, is_result=False):
        ctx.save_for_backward(x)
        # (celu's backward takes another input_scale, as PyTorch's: see nn.functional.celu)
        ctx.coefficients = alpha, scale, input_scale, backward_input_scale or input_scale
        ctx.is_result = is_result
        if is_result:  # (PyTorch's node of an in-place form)
            ctx.backward_name = "EluBackward1"
        module = namespace(x)
        number = x.dtype.type  # the coefficients in x's dtype, as PyTorch's kernel has them
        # expm1 of the negative part only (exp of a large x would overflow), -0.0 kept as it
        # is (minimum(-0.0, 0) may give +0.0): elu(-0.0) is -0.0, as PyTorch's
        negative = module.expm1(module.where(x > 0, 0, x) * number(input_scale))
        negative *= number(alpha) * number(scale)
        return module.where(x <= 0, negative, x * number(scale))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        alpha, scale, input_scale, backward_input_scale = ctx.coefficients
        # x where x < 0, else 0: the exponent's value where it is taken (x <= 0), with a
        # derivative only where x < 0 (see the NOTE above)
        exponent = Where.apply(x < 0, x, 0.0)
        if ctx.is_result:  # the result where x <= 0 (0 elsewhere), made by this op again:
            # its derivatives are this op's, as PyTorch's flow back through the result's node
            out = Elu.apply(
                exponent, alpha=alpha, scale=scale, input_scale=input_scale,
                backward_input_scale=backward_input_scale, is_result=True,
            )  # fmt: skip
            negative = (out + alpha * scale) * backward_input_scale
        else:
            negative = (exponent * backward_input_scale).exp()
            negative = negative * (alpha * scale * backward_input_scale)
        return grad * Where.apply(x <= 0, negative, scale)


class Tan(Function):
    @staticmethod
    def forward(ctx, x):
        out = namespace(x).tan(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1 + out * out)


class Asin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).arcsin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1 - x * x).rsqrt()


class Acos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).arccos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * (1 - x * x).rsqrt()


class Atan(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).arctan(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 + x * x)


class Sinh(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).sinh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cosh()


class Cosh(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).cosh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sinh()


class Asinh(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).arcsinh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * x + 1).rsqrt()


class Acosh(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).arccosh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * x - 1).rsqrt()


class Atanh(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return namespace(x).arctanh(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (1 - x * x)


for _op in (Exp, Expm1, Log, Sin, Cos, Sinh, Cosh, Sqrt, Reciprocal, Sigmoid, Tanh, TanhGrad):
    holomorphic_twin(_op)
