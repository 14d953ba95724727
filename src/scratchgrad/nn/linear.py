"""``Identity``, ``Linear``, ``Bilinear``, ``Flatten`` and ``Unflatten``."""

from __future__ import annotations

import math
from collections.abc import Sequence

from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor


class Identity(Module):
    """Returns its input; a placeholder that accepts (and ignores) any arguments."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``, with PyTorch's default initialisation: weight and bias
    uniform in +-1/sqrt(in_features).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> fc = nn.Linear(3, 2)
    >>> fc.weight.shape, fc.bias.shape, fc(sg.ones(4, 3)).shape
    (scratchgrad.Size([2, 3]), scratchgrad.Size([2]), scratchgrad.Size([4, 2]))
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = _empty_parameter((out_features, in_features), device, dtype)
        if bias:
            self.bias = _empty_parameter((out_features,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a = sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under another name, as PyTorch's: ``MultiheadAttention``'s ``out_proj``
    (PyTorch's quantization tools leave it alone), so its repr and ``modules()`` show it."""


class Bilinear(Module):
    """``y = x1 @ weight[o] @ x2 + bias[o]`` for each output ``o``, with PyTorch's default
    initialisation: weight and bias uniform in +-1/sqrt(in1_features).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> layer = nn.Bilinear(2, 3, 4)
    >>> layer.weight.shape, layer(sg.ones(5, 2), sg.ones(5, 3)).shape
    (scratchgrad.Size([4, 2, 3]), scratchgrad.Size([5, 4]))
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        shape = (out_features, in1_features, in2_features)
        self.weight = _empty_parameter(shape, device, dtype)
        if bias:
            self.bias = _empty_parameter((out_features,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Flatten(Module):
    """Flatten dims ``start_dim`` to ``end_dim`` into one (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into dims of ``unflattened_size`` (one of them may be -1): the
    inverse of ``Flatten``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Unflatten(1, (2, 3))(sg.zeros(4, 6)).shape
    scratchgrad.Size([4, 2, 3])
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                "unflattened_size must be a tuple of ints, but found type "
                f"{type(unflattened_size).__name__}"
            )
        for position, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(
                    "unflattened_size must be tuple of ints, but found element of type "
                    f"{type(size).__name__} at pos {position}"
                )
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
