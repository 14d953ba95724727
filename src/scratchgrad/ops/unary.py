"""Elementwise unary primitives."""

from scratchgrad.autograd.function import Function
from scratchgrad.backend import xp


class Neg(Function):
    @staticmethod
    def forward(ctx, x):
        return xp.negative(x)

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        out = xp.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return xp.log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / x


class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return xp.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class Cos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return xp.cos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return -grad * x.sin()


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        out = xp.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return TanhGrad.apply(grad, out)


class TanhGrad(Function):
    """``grad * (1 - out**2)``, tanh's backward as one node instead of three (for speed, as
    PyTorch's tanh_backward); its own backward gives tanh's second derivative."""

    backward_name = "TanhBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, out):
        ctx.save_for_backward(grad, out)
        return grad * (1 - out * out)

    @staticmethod
    def backward(ctx, g):
        grad, out = ctx.saved_tensors
        d_grad, d_out = ctx.needs_input_grad
        return (
            g * (1 - out * out) if d_grad else None,
            g * grad * out * -2 if d_out else None,
        )


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        # exp of a non-positive number only, so neither tail overflows
        e = xp.exp(-xp.abs(x))
        out = xp.where(x >= 0, 1, e) / (1 + e)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out * (1 - out)


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        out = xp.maximum(x, 0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (out > 0)


class Sqrt(Function):
    @staticmethod
    def forward(ctx, x):
        out = xp.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad / (2 * out)


class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return xp.abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sign()


class Step(Function):
    """A piecewise constant function (sign, floor, ceil, round): its gradient is zero
    everywhere, PyTorch's convention at the jumps too."""

    @staticmethod
    def forward(ctx, x, ufunc):
        ctx.ufunc = ufunc
        return ufunc(x)

    def name(self) -> str:
        return self.ufunc.__name__.capitalize() + "Backward0"  # SignBackward0, FloorBackward0

    @staticmethod
    def backward(ctx, grad):
        return grad * 0
