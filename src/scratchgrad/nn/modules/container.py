"""``torch.nn.modules.container``'s import path: its classes live in
``scratchgrad.nn.containers``."""

from scratchgrad.nn.containers import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
