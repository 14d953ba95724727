"""``torch.nn.modules.linear``'s import path: its classes live in ``scratchgrad.nn.linear``,
``scratchgrad.nn.lazy``."""

from scratchgrad.nn.lazy import LazyLinear
from scratchgrad.nn.linear import Bilinear, Identity, Linear, NonDynamicallyQuantizableLinear

__all__ = ["Identity", "Linear", "NonDynamicallyQuantizableLinear", "Bilinear", "LazyLinear"]
