"""``torch.nn.modules.fold``'s import path: its classes live in ``scratchgrad.nn.conv``."""

from scratchgrad.nn.conv import Fold, Unfold

__all__ = ["Fold", "Unfold"]
