"""Resizing layers: ``Upsample``, ``PixelShuffle`` and ``PixelUnshuffle``, as in PyTorch.

They hold no parameters; the arithmetic lives in ``nn.functional`` (``interpolate``,
``pixel_shuffle``, ``pixel_unshuffle``).
"""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.nn import functional as F
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


class Upsample(Module):
    """Resize the spatial dims to ``size`` or by ``scale_factor`` (``F.interpolate``), with
    ``mode`` "nearest", "linear" (3-D input) or "bilinear" (4-D input).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
    >>> up(sg.ones(1, 3, 4, 5)).shape
    (1, 3, 8, 10)
    >>> up
    Upsample(scale_factor=2.0, mode='bilinear')
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.size = size
        if isinstance(scale_factor, Sequence):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            return f"scale_factor={self.scale_factor!r}, mode={self.mode!r}"
        return f"size={self.size!r}, mode={self.mode!r}"


class PixelShuffle(Module):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r), r = ``upscale_factor`` (``F.pixel_shuffle``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.PixelShuffle(3)(sg.ones(1, 9, 4, 4)).shape
    (1, 1, 12, 12)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), r = ``downscale_factor``: the inverse of
    ``PixelShuffle`` (``F.pixel_unshuffle``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.PixelUnshuffle(3)(sg.ones(1, 1, 12, 12)).shape
    (1, 9, 4, 4)
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
