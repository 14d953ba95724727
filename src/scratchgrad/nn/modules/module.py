"""``torch.nn.modules.module``'s import path: ``Module`` and the global module hooks live in
``scratchgrad.nn.module``."""

from scratchgrad.nn.module import (
    Module,
    _IncompatibleKeys,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)

__all__ = [
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "Module",
    "_IncompatibleKeys",
]
