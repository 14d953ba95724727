"""``scratchgrad.cpu.amp``: the CPU spelling of ``scratchgrad.amp`` that older PyTorch scripts
use (``torch.cpu.amp.autocast``)."""

from scratchgrad import amp

__all__ = ["amp"]
