"""``scratchgrad.signal``: PyTorch's ``torch.signal``, whose one part is ``windows``."""

from scratchgrad.signal import windows

__all__ = ["windows"]
