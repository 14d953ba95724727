"""``LayerNorm``, ``GroupNorm``, ``RMSNorm`` and ``LocalResponseNorm``."""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor


class _ScaleAndShift(Module):
    """A normalisation whose learnable ``weight`` starts at 1 and ``bias`` at 0 (either may
    be None; RMSNorm has no bias)."""

    def _learn(self, shape: tuple[int, ...], wanted: dict[str, bool], device, dtype) -> None:
        """Register each parameter named in ``wanted`` with ``shape``, or None where it is not
        wanted (as PyTorch, so that the attribute exists), and set them to their start."""
        for name, learned in wanted.items():
            parameter = _empty_parameter(shape, device, dtype) if learned else None
            self.register_parameter(name, parameter)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if getattr(self, "bias", None) is not None:
            init.zeros_(self.bias)


class LayerNorm(_ScaleAndShift):
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
        affine = elementwise_affine
        self._learn(
            self.normalized_shape, {"weight": affine, "bias": affine and bias}, device, dtype
        )

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class GroupNorm(_ScaleAndShift):
    """Normalise the channels (dim 1) of each sample in ``num_groups`` groups, each over its
    channels and the spatial dims, then scale and shift each channel (weight starts at 1, bias
    at 0); see ``F.group_norm``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> gn = nn.GroupNorm(2, 4)
    >>> gn.weight.shape, gn(sg.randn(3, 4, 5, 5)).shape
    (scratchgrad.Size([4]), scratchgrad.Size([3, 4, 5, 5]))
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        self._learn((num_channels,), {"weight": affine, "bias": affine and bias}, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(_ScaleAndShift):
    """Divide by the root mean square over the last dims (``normalized_shape``), then scale
    elementwise (weight starts at 1; no bias). ``eps=None``: the dtype's machine epsilon.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out = nn.RMSNorm(4)(sg.randn(2, 4))
    >>> [round(v, 3) for v in (out * out).mean(-1).tolist()]
    [1.0, 1.0]
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._learn(self.normalized_shape, {"weight": elementwise_affine}, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    """Divide each entry by ``(k + alpha * mean of the squares of its size neighbouring
    channels) ** beta``, AlexNet's normalisation; see ``F.local_response_norm``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.LocalResponseNorm(2)(sg.randn(2, 5, 3, 3)).shape
    scratchgrad.Size([2, 5, 3, 3])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
