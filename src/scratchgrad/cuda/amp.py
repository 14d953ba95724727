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

import warnings
from typing import Any

from scratchgrad import amp
from scratchgrad.backend import float16

__all__ = ["GradScaler", "autocast"]


def _deprecated(name: str) -> None:
    warnings.warn(
        f"`torch.cuda.amp.{name}(args...)` is deprecated. Please use "
        f"`torch.amp.{name}('cuda', args...)` instead.",
        FutureWarning,
        stacklevel=3,
    )


class autocast(amp.autocast):  # noqa: N801  (PyTorch's name)
    """``scratchgrad.amp.autocast("cuda", ...)`` under its old name (float16 by default)."""

    def __init__(
        self, enabled: bool = True, dtype: Any = float16, cache_enabled: bool = True
    ) -> None:
        _deprecated("autocast")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``scratchgrad.amp.GradScaler("cuda", ...)`` under its old name."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        _deprecated("GradScaler")
        super().__init__(
            "cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )
