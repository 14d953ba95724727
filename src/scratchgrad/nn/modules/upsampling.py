"""``torch.nn.modules.upsampling``'s import path: its classes live in
``scratchgrad.nn.upsampling``."""

from scratchgrad.nn.upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
