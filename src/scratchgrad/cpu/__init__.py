"""``scratchgrad.cpu.amp``: the CPU spellings of ``scratchgrad.amp`` that older PyTorch scripts
use (``torch.cpu.amp.autocast``)."""

from scratchgrad.cpu import amp

__all__ = ["amp"]
