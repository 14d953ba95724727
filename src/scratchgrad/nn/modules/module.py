"""``torch.nn.modules.module``'s import path: ``Module`` and the global module hooks (on calls
and on registrations) live in ``scratchgrad.nn.module``."""

from scratchgrad.nn.module import (
    Module,
    _IncompatibleKeys,
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)

__all__ = [
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
    "Module",
    "_IncompatibleKeys",
]
