"""``torch.nn.modules.batchnorm``'s import path: its classes live in ``scratchgrad.nn.batchnorm``,
``scratchgrad.nn.lazy``."""

from scratchgrad.nn.batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _NormBase,
)
from scratchgrad.nn.lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, _LazyNormBase

__all__ = [
    "_NormBase",
    "_BatchNorm",
    "_LazyNormBase",
    "BatchNorm1d",
    "LazyBatchNorm1d",
    "BatchNorm2d",
    "LazyBatchNorm2d",
    "BatchNorm3d",
    "LazyBatchNorm3d",
    "SyncBatchNorm",
]
