"""``torch.nn.modules.instancenorm``'s import path: its classes live in
``scratchgrad.nn.batchnorm``, ``scratchgrad.nn.lazy``."""

from scratchgrad.nn.batchnorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm
from scratchgrad.nn.lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d

__all__ = [
    "_InstanceNorm",
    "InstanceNorm1d",
    "LazyInstanceNorm1d",
    "InstanceNorm2d",
    "LazyInstanceNorm2d",
    "InstanceNorm3d",
    "LazyInstanceNorm3d",
]
