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

from scratchgrad import backend, cuda


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
    return cuda.current_device()  # (CUDA is the one accelerator type there is)


def _device_index(device: int | str | backend.device) -> int:
    """The index ``device`` names, checked as PyTorch's ``_get_device_index``: a device must be
    of the accelerator's type and name an index."""
    if isinstance(device, int):
        return device
    device = backend.device(device)
    accelerator = current_accelerator()
    if accelerator is None:
        raise RuntimeError("Accelerator expected")
    if accelerator.type != device.type:
        raise ValueError(f"{device.type} doesn't match the current accelerator {accelerator}.")
    if device.index is None:
        raise ValueError(
            f"Expected a torch.device with a specified index or an integer, but got:{device}"
        )
    return device.index


def set_device_index(device: int | str | backend.device, /) -> None:
    """Make ``device`` (an index, or a device of the accelerator's type) the current one, as
    ``torch.accelerator.set_device_index``; a negative index does nothing."""
    index = _device_index(device)
    if index >= 0:
        current_device_index()  # (without an accelerator: PyTorch's RuntimeError)
        cuda.set_device(index)


def synchronize(device: int | str | backend.device | None = None) -> None:
    current_device_index()
