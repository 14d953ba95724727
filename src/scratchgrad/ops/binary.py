"""Elementwise binary primitives. Their gradients have the broadcast shape; the engine sums
each back to its input's shape. An operand may be a plain Python number (no gradient).
"""

import cmath
import math
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.function import ConjugateSaved, Function
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.backend import cast, is_floating, keep_where, namespace, widened


class Add(Function):
    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, y):
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(Function):
    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, y):
        return x - y

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad if ctx.needs_input_grad[1] else None


class Mul(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx._to_save = x, y  # save_for_backward's, without its call (hot)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        dx, dy = ctx.needs_input_grad
        x, y = ctx._saved_tensors((dy, dx))  # each factor only for the other's gradient
        # Mul.apply, not ``*``: the operands were promoted on the way in (the hottest backward)
        return Mul.apply(grad, y) if dx else None, Mul.apply(grad, x) if dy else None


class ComplexMul(ConjugateSaved, Mul):
    """Mul's node when complex numbers meet: each factor's gradient is grad * conj(other)."""

    backward_name = "MulBackward0"


Mul.complex_twin = ComplexMul


class Div(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x / y

    @staticmethod
    def backward(ctx, grad):
        dy = ctx.needs_input_grad[1]
        x, y = ctx._saved_tensors((dy, True))  # the dividend only for the divisor's gradient
        grad_x = grad / y
        return grad_x, -grad_x * x / y if dy else None


class ComplexDiv(ConjugateSaved, Div):
    """Div's node when complex numbers meet: grad / conj(y) and -grad * conj(x / y**2)."""

    backward_name = "DivBackward0"


Div.complex_twin = ComplexDiv


class Pow(Function):
    @staticmethod
    def forward(ctx, x, y):
        try:
            # NOTE: x ** -0.5 is PyTorch's rsqrt, 1 / sqrt(x): -inf at -0 (C's pow gives inf)
            out = 1 / namespace(x).sqrt(x) if _is_rsqrt(x, y) else x**y
        except ValueError:  # NumPy refuses integers to negative integer powers
            if _is_number(y):
                raise  # (PyTorch too, for a number)
            out = _integer_power(x, y)
        if out.dtype.kind == "c" and backend.is_array(y):
            out = _complex_power(x, y, out.dtype)
        if out.dtype.kind == "c" and _is_number(x):
            x = complex(x)  # a negative base's log is then complex, and its twin conjugates it
        # PyTorch's x ** number saves no result (for y's gradient only), so that x**2 may
        # change in place before backward; x ** tensor saves it
        ctx.save_for_backward(x, y, None if _is_number(y) else out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y, out = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        grad_x = grad_y = None
        if dx and _is_number(y):
            # NOTE: d/dx x**0 is 0 everywhere, also at x = 0 where x**-1 is infinite
            grad_x = grad * 0 if y == 0 else grad * (y * x ** (y - 1))
        elif dx:
            with backend.errstate(divide="ignore", invalid="ignore"):
                # PyTorch's order: grad * y alone may overflow where x**(y - 1) is 0
                grad_x = grad * (y * x ** (y - 1)).masked_fill(y == 0, 0)  # (as PyTorch's)
        if dy and (_is_number(x) or isinstance(x, complex)):
            with backend.errstate(invalid="ignore"):
                grad_y = grad * out * _log_of_number(x)
            if x == 0:  # as below: 0**y has gradient 0 in y for y >= 0
                grad_y = grad_y.masked_fill(_at_least_zero(y), 0)
        elif dy:
            with backend.errstate(divide="ignore", invalid="ignore"):
                # as PyTorch: 0**y has gradient 0 in y for y >= 0 (log(0) would give NaN)
                grad_y = grad * (out * x.log()).masked_fill((x == 0) & _at_least_zero(y), 0)
        return grad_x, grad_y


def _is_rsqrt(x, y) -> bool:
    """Whether ``x ** y`` is PyTorch's rsqrt of a float32 or float64 array."""
    return type(y) is float and y == -0.5 and x.dtype.kind == "f" and x.dtype.itemsize >= 4


def _log_of_number(x: Any) -> Any:
    """log of a number base, as PyTorch's: -inf at 0, NaN for a negative float, and the
    principal value for a complex number (-inf + 0j at 0, where cmath.log refuses)."""
    if isinstance(x, complex):
        return cmath.log(x) if x else complex(-math.inf, 0.0)
    return math.log(x) if x > 0 else -math.inf if x == 0 else math.nan


def _at_least_zero(y: Any) -> Any:
    """Where an exponent is a real number >= 0, PyTorch's rule for 0**y's gradient in y (a
    complex exponent is one only if its imaginary part is 0)."""
    if y.is_complex():
        return (y.imag == 0) & (y.real >= 0)
    return y >= 0


class ComplexPow(ConjugateSaved, Pow):
    """Pow's node when complex numbers meet: grad * conj(y * x**(y - 1)) and
    grad * conj(x**y * log x)."""

    backward_name = Pow.backward_name


Pow.complex_twin = ComplexPow


class Fmod(Function):
    """The remainder with the dividend's sign (C's fmod): x - trunc(x / y) * y, computed exactly
    by the array module; the gradient is 1 in x and -trunc(x / y) in y, as PyTorch's."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return namespace(x).fmod(x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        # (TruncDivide's gradient is 0, even at y = 0: (x / y).trunc()'s would be 0 * inf, NaN)
        return grad, -grad * TruncDivide.apply(x, y) if ctx.needs_input_grad[1] else None


class Remainder(Function):
    """The remainder with the divisor's sign (Python's and PyTorch's ``%``) of floats,
    computed exactly from fmod (``1.0 % 0.1`` is 0.0999..., where
    ``x - floor(x / y) * y`` gives 0: ``x / y`` rounds up to 10); the gradient is 1 in x and
    ``-(x // y)`` in y, as PyTorch's."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        xp = namespace(x)
        mod = xp.fmod(x, y)  # PyTorch's steps: a zero keeps the dividend's sign (NumPy's not)
        return xp.where((mod != 0) & ((y < 0) != (mod < 0)), mod + y, mod)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[1]:
            return grad, None  # (nothing saved is read: x and y may have changed in place)
        x, y = ctx.saved_tensors
        return grad, -grad * FloorDivide.apply(x, y)


class FloorDivide(Function):
    """The quotient of floats rounded down, exactly (``1.0 // 0.1`` is 9.0, where
    ``floor(x / y)`` gives 10). PyTorch has no derivative for it; here the gradient is 0, the
    derivative of a step almost everywhere."""

    @staticmethod
    def forward(ctx, x, y):
        return namespace(x).floor_divide(x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0, grad * 0


class TruncDivide(FloorDivide):
    """The quotient of floats rounded toward zero, trunc(x / y), as PyTorch's
    ``div(rounding_mode="trunc")``; its gradient 0, as FloorDivide's (and PyTorch's), also at
    y = 0."""

    @staticmethod
    def forward(ctx, x, y):
        return namespace(x).trunc(x / y)


def _integer_power(x, y):
    """``x**y`` for integers where some exponents in the array ``y`` are negative, as PyTorch
    computes it: ``1 / x**-y`` truncated, so 1 for base 1, 1 or -1 for base -1, else 0."""
    module = namespace(y)
    negative = y < 0
    out = x ** module.where(negative, 0, y).astype(y.dtype)
    one_over = module.where(x == 1, 1, module.where(x == -1, 1 - 2 * (y % 2), 0))
    return module.where(negative, one_over, out).astype(out.dtype)


def _complex_power(x, y, dtype):
    """``x**y`` in a complex ``dtype`` for a tensor exponent ``y``, as PyTorch computes it:
    ``exp(y * log(x))``. NOTE: so a zero base gives NaN where y is 0 (0 * log(0)), and
    inf or NaN for exponents with a negative real part, where NumPy's power gives 1 and
    0; PyTorch's Python-number exponents (``x ** 0``) keep NumPy's values."""
    module = namespace(y)
    with backend.errstate(divide="ignore", invalid="ignore"):
        return module.exp(y * module.log(module.asarray(x, dtype=dtype))).astype(dtype)


def _is_number(value) -> bool:
    return isinstance(value, (int, float))


# (the two below test without calling _is_number and backend.is_array: a ReLU's backward and
# every masked gradient ask them)
def _is_plus_zero(value) -> bool:
    return isinstance(value, (int, float)) and value == 0 and math.copysign(1.0, value) > 0


def _is_float_array(value) -> bool:
    return type(value) in backend.ARRAY_CLASSES and is_floating(value.dtype)


class Maximum(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return namespace(x).maximum(x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return _split_by(x > y, x < y, x == y, grad)


class Minimum(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return namespace(x).minimum(x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return _split_by(x < y, x > y, x == y, grad)


def _split_by(x_wins, y_wins, tie, grad):
    """Route ``grad`` to the winning operand, as PyTorch: the loser gets 0 (not ``grad * 0``,
    which would pass on a NaN or an infinity of ``grad``), ties split it half and half, and
    where either is NaN (no winner, no tie) each gets all of it."""
    shared = Where.apply(tie, grad * 0.5, grad)
    return shared.masked_fill(y_wins, 0), shared.masked_fill(x_wins, 0)


class Atan2(Function):
    """atan2(y, x): the angle of the point (x, y); both partials share 1 / (x**2 + y**2),
    taken as 0 where x**2 + y**2 is 0 (the origin, or squares too small for the dtype), as
    PyTorch's: the gradient there is 0, not NaN."""

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return namespace(y).arctan2(y, x)

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        squares = x * x + y * y
        with backend.errstate(divide="ignore"):
            recip = squares.reciprocal().masked_fill(squares == 0, 0)
        return grad * x * recip, grad * -y * recip if ctx.needs_input_grad[1] else None


class Hypot(Function):
    """sqrt(x**2 + y**2) without overflow or underflow of the squares (one ufunc); PyTorch's
    partials x / out and y / out (NaN at the origin, 0 / 0)."""

    @staticmethod
    def forward(ctx, x, y):
        out = namespace(x).hypot(x, y)
        ctx.save_for_backward(x, y, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y, out = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        return grad * x / out if dx else None, grad * y / out if dy else None


class Where(Function):
    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, condition, x, y):
        ctx.save_for_backward(condition)
        if condition.dtype == bool:  # masking with +0, as every gradient here does: no branches
            if _is_plus_zero(y) and _is_float_array(x):
                return keep_where(condition, x)
            if _is_plus_zero(x) and _is_float_array(y):
                return keep_where(~condition, y)
        return namespace(condition).where(condition, x, y)

    @staticmethod
    def backward(ctx, grad):
        condition = ctx.saved_tensors[0]  # (PiecewiseWhere saves its branches after it)
        _, dx, dy = ctx.needs_input_grad
        return (
            None,
            Where.apply(condition, grad, 0.0) if dx else None,
            Where.apply(condition, 0.0, grad) if dy else None,
        )


class PiecewiseWhere(Where):
    """``Where`` whose condition was computed from its branches: an activation's pieces
    (hardtanh, leaky_relu, threshold, hardshrink, softshrink). Under create_graph each
    branch's gradient is a ``MaskedGrad`` of it, as PyTorch's hardtanh_backward and the
    others are functions of the input, so a second backward reaches the input (with zeros).
    It saves its branches, as PyTorch's saves the input (for ``where(c, x, y)``, ``x``)."""

    backward_name = Where.backward_name  # the node PyTorch's user sees: the same as before

    @staticmethod
    def forward(ctx, condition, x, y):
        out = Where.forward(ctx, condition, x, y)
        ctx._to_save = condition, x, y
        return out

    @staticmethod
    def backward(ctx, grad):
        if not _state.enabled:  # a plain backward: Where's
            return Where.backward(ctx, grad)
        condition, x, y = ctx.saved_tensors
        _, dx, dy = ctx.needs_input_grad
        return (
            None,
            MaskedGrad.apply(grad, x, condition) if dx else None,
            MaskedGrad.apply(grad, y, ~condition) if dy else None,
        )


class MaskedGrad(Function):
    """``grad`` where ``mask``, else +0 (``Where``'s bits), ``mask`` read from ``saved``: an
    activation's backward under create_graph, as PyTorch's threshold_backward, a function of
    ``saved`` too. Its gradient so requires grad when ``saved`` does, and its own gradient into
    ``saved`` is zeros (not None: ``x.grad`` is a zero tensor after a second backward)."""

    backward_name = "ThresholdBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, saved, mask):
        out = Where.forward(ctx, mask, grad, 0.0)
        ctx._to_save = saved, mask
        return out

    @staticmethod
    def backward(ctx, grad):
        saved, mask = ctx.saved_tensors
        d_grad, d_saved, _ = ctx.needs_input_grad
        return (
            MaskedGrad.apply(grad, saved, mask) if d_grad else None,  # (a third order too)
            grad.new_zeros(grad.shape) if d_saved else None,
            None,
        )


class Lerp(Function):
    """``start + weight * (end - start)`` where ``|weight| < 0.5``, else ``end - (end - start) *
    (1 - weight)``: PyTorch's two formulas (each exact at its own end: weight 1 gives ``end``).
    ``weight`` is an array of the inputs' dtype or a Python number.

    NOTE: PyTorch's CPU kernel fuses each multiply and add (an FMA), which NumPy cannot. In
    float32 the product of two numbers is exact in float64, so the sum is computed there and
    rounded to float32: the FMA's bits, unless the float64 sum falls exactly halfway between two
    float32 numbers (29 given bits in a row; none in 10 million measured entries). 16-bit
    floats go through float32 and are rounded once more, as PyTorch's (the same bits in 2
    million measured entries). float64 is computed unfused: about one entry in ten differs from
    PyTorch's by the product's rounding.
    """

    @staticmethod
    def forward(ctx, start, end, weight):
        ctx.save_for_backward(start, end, weight)
        dtype = start.dtype
        start, end, weight = widened(start), widened(end), widened(weight)
        xp, wide = namespace(start), start.dtype
        if _is_number(weight):  # rounded to the inputs' dtype, as PyTorch's scalar weight
            weight = xp.asarray(weight, wide)
        # Both formulas as one, base + factor * (end - start): (start, weight) or (end, weight - 1),
        # since end - d * (1 - weight) is end + d * (weight - 1) exactly (negation is exact).
        small = abs(weight) < 0.5
        base = _pick(xp, small, start, end)
        factor = _pick(xp, small, weight, weight - 1)
        exact = backend.float64 if wide == backend.float32 else wide
        out = (xp.multiply(end - start, factor, dtype=exact) + base).astype(wide, copy=False)
        return out if wide == dtype else cast(out, dtype)

    @staticmethod
    def backward(ctx, grad):
        d_start, d_end, d_weight = ctx.needs_input_grad
        # start and end only for the weight's gradient (PyTorch saves them only then)
        start, end, weight = ctx._saved_tensors((d_weight, d_weight, True))
        return (
            grad * (1 - weight) if d_start else None,
            grad * weight if d_end else None,
            grad * (end - start) if d_weight else None,
        )


def _pick(xp, condition, x, y):
    """``where(condition, x, y)``, without a pass when ``condition`` is one bool."""
    if condition.ndim == 0:
        return x if condition else y
    return xp.where(condition, x, y)
