"""``scratchgrad.accelerator``: PyTorch's device-generic ``torch.accelerator`` queries.

An accelerator is any device other than the CPU that has a backend: "cuda" where CuPy sees a
GPU (``scratchgrad[cuda]``). Without one ``current_accelerator()`` is None and scripts written
as ``device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else
"cpu"`` run on the CPU.

>>> import scratchgrad as sg
>>> sg.accelerator.is_available() == sg.cuda.is_available()
True
"""

from __future__ import annotations

from scratchgrad import backend


def _available_types() -> list[str]:
    return backend.accelerator_types()


def is_available() -> bool:
    return bool(_available_types())


def device_count() -> int:
    return len(_available_types())


def current_accelerator(check_available: bool = False) -> backend.device | None:
    """The accelerator's device type (``device(type='cuda')``), or None when there is none."""
    kinds = _available_types()
    return backend.device(kinds[0]) if kinds else None


def current_device_index() -> int:
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return 0


def synchronize(device: int | str | backend.device | None = None) -> None:
    current_device_index()
