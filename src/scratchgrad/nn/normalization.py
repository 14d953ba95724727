"""``LayerNorm``."""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor


class LayerNorm(Module):
    """Normalise over the last dims (``normalized_shape``) of each sample, then scale and shift
    elementwise (weight starts at 1, bias at 0).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> ln = nn.LayerNorm(4)
    >>> out = ln(sg.randn(2, 4))
    >>> [round(abs(v), 4) for v in out.mean(-1).tolist()]
    [0.0, 0.0]
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = _empty_parameter(self.normalized_shape, device, dtype)
            if bias:
                self.bias = _empty_parameter(self.normalized_shape, device, dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )
