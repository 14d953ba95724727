"""``torch.nn.modules.normalization``'s import path: its classes live in
``scratchgrad.nn.normalization``."""

from scratchgrad.nn.normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm

__all__ = ["LocalResponseNorm", "LayerNorm", "GroupNorm", "RMSNorm"]
