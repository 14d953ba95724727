"""``torch.cuda.amp``: the spellings of mixed precision that countless scripts still use,
``GradScaler(enabled=use_amp)`` and ``autocast(enabled=use_amp)``. As in PyTorch they are
deprecated aliases of ``scratchgrad.amp``'s for the "cuda" device (a FutureWarning says so), and
without a GPU both warn and disable themselves, so a script's CPU path runs unchanged.

>>> import warnings
>>> import scratchgrad as sg
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     scaler = sg.cuda.amp.GradScaler(enabled=sg.cuda.is_available())
>>> scaler.is_enabled()
False
"""

from __future__ import annotations

from scratchgrad.amp.device_spellings import DeviceAutocast, DeviceGradScaler
from scratchgrad.backend import float16

__all__ = ["GradScaler", "autocast"]


class autocast(DeviceAutocast):  # noqa: N801  (PyTorch's name)
    """``scratchgrad.amp.autocast("cuda", ...)`` under its old name (float16 by default)."""

    device_type, default_dtype = "cuda", float16


class GradScaler(DeviceGradScaler):
    """``scratchgrad.amp.GradScaler("cuda", ...)`` under its old name."""

    device_type = "cuda"
