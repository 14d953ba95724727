"""``torch.cpu.amp``: ``autocast(enabled=True, dtype=bfloat16, cache_enabled=True)`` and
``GradScaler(init_scale, ...)``, as in PyTorch deprecated aliases of ``scratchgrad.amp``'s for
the "cpu" device (a FutureWarning says so).

>>> import warnings
>>> import scratchgrad as sg
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     with sg.cpu.amp.autocast(True):  # enabled comes first, as in PyTorch
...         out = sg.nn.Linear(2, 2)(sg.ones(1, 2))
>>> out.dtype == sg.bfloat16
True
"""

from __future__ import annotations

from scratchgrad.amp.device_spellings import DeviceAutocast, DeviceGradScaler
from scratchgrad.backend import bfloat16

__all__ = ["GradScaler", "autocast"]


class autocast(DeviceAutocast):  # noqa: N801  (PyTorch's name)
    """``scratchgrad.amp.autocast("cpu", ...)`` under its old name (bfloat16 by default)."""

    device_type, default_dtype = "cpu", bfloat16


class GradScaler(DeviceGradScaler):
    """``scratchgrad.amp.GradScaler("cpu", ...)`` under its old name."""

    device_type = "cpu"
