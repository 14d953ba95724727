"""``torch.nn.modules.module``'s import path: ``Module`` lives in ``scratchgrad.nn.module``."""

from scratchgrad.nn.module import Module, _IncompatibleKeys

__all__ = ["Module", "_IncompatibleKeys"]
