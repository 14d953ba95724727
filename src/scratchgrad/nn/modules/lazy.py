"""``torch.nn.modules.lazy``'s import path: its classes live in ``scratchgrad.nn.lazy``."""

from scratchgrad.nn.lazy import LazyModuleMixin

__all__ = ["LazyModuleMixin"]
