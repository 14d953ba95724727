"""The deprecated per-device spellings of mixed precision, ``torch.cuda.amp`` and
``torch.cpu.amp``: ``autocast`` and ``GradScaler`` with the device fixed by the subclass, their
old signatures (``autocast(enabled, dtype, cache_enabled)``, ``GradScaler(init_scale, ...)``,
so that positional arguments mean what they meant) and PyTorch's FutureWarning naming the
spelling to use instead."""

from __future__ import annotations

import warnings
from typing import Any

from scratchgrad.amp.autocast_mode import autocast
from scratchgrad.amp.grad_scaler import GradScaler


def _deprecated(device_type: str, name: str) -> None:
    warnings.warn(
        f"`torch.{device_type}.amp.{name}(args...)` is deprecated. Please use "
        f"`torch.amp.{name}('{device_type}', args...)` instead.",
        FutureWarning,
        stacklevel=3,
    )


class DeviceAutocast(autocast):
    """``autocast(device_type, ...)`` under a device's old name; a subclass sets the device and
    the dtype it defaults to."""

    device_type: str
    default_dtype: Any

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> None:
        _deprecated(self.device_type, "autocast")
        dtype = self.default_dtype if dtype is None else dtype
        super().__init__(self.device_type, dtype, enabled, cache_enabled)


class DeviceGradScaler(GradScaler):
    """``GradScaler(device, ...)`` under a device's old name; a subclass sets the device."""

    device_type: str

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        _deprecated(self.device_type, "GradScaler")
        super().__init__(
            self.device_type, init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )
