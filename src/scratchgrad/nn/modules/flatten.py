"""``torch.nn.modules.flatten``'s import path: its classes live in ``scratchgrad.nn.linear``."""

from scratchgrad.nn.linear import Flatten, Unflatten

__all__ = ["Flatten", "Unflatten"]
