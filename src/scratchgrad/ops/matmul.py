"""Matrix product of (batched, broadcast) matrices; 1-D operands are handled by Tensor.matmul."""

from scratchgrad.autograd.function import Function


class MatMul(Function):
    @staticmethod
    def forward(ctx, x, y):
        if x.shape[-1] != y.shape[-2]:
            raise ValueError(
                f"matmul: shapes {x.shape} and {y.shape} are not aligned: "
                f"{x.shape[-1]} != {y.shape[-2]}"
            )
        ctx.save_for_backward(x, y)
        out = x @ y
        return out if out.dtype == x.dtype else out.astype(x.dtype)  # bfloat16 comes back wider

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dx, dy = ctx.needs_input_grad
        return grad @ y.mT if dx else None, x.mT @ grad if dy else None
