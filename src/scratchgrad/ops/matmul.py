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


class Linear(Function):
    """``x @ w.T + b``, fused as PyTorch's addmm: the most common layer as one node instead of
    three (transpose, matmul, add), which is most of the cost of a small network's step."""

    @staticmethod
    def forward(ctx, x, w, b=None):
        if x.shape[-1] != w.shape[-1]:
            raise ValueError(
                f"linear: input shape {x.shape} and weight shape {w.shape} do not match: "
                f"{x.shape[-1]} != {w.shape[-1]}"
            )
        ctx.save_for_backward(x, w)
        out = x @ w.T
        if b is not None:
            out += b
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        dx, dw, db = ctx.needs_input_grad
        grad_w = None
        if dw and x.ndim == 2:
            grad_w = grad.mT @ x
        elif dw:  # batch dims of any number are summed by one matrix product
            grad_w = grad.reshape(-1, grad.shape[-1]).mT @ x.reshape(-1, x.shape[-1])
        return grad @ w if dx else None, grad_w, grad if db else None
