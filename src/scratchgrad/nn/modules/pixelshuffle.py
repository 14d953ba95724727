"""``torch.nn.modules.pixelshuffle``'s import path: its classes live in
``scratchgrad.nn.upsampling``."""

from scratchgrad.nn.upsampling import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
