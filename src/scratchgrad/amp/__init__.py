"""Automatic mixed precision: ``autocast`` and ``GradScaler``, with ``torch.amp``'s names.

The policy (which op runs in which dtype) is declared beside each op; see
``scratchgrad.autograd.autocast``.
"""

from scratchgrad.amp.autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from scratchgrad.amp.grad_scaler import GradScaler

__all__ = [
    "GradScaler",
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
]
