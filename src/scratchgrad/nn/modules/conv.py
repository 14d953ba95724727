"""``torch.nn.modules.conv``'s import path: its classes live in ``scratchgrad.nn.conv``,
``scratchgrad.nn.lazy``."""

from scratchgrad.nn.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    _ConvNd,
    _ConvTransposeNd,
)
from scratchgrad.nn.lazy import (
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
)

__all__ = [
    "_ConvNd",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "_ConvTransposeNd",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
]
