"""``scratchgrad.cuda``: PyTorch's ``torch.cuda`` functions that scripts call to pick a device.

scratchgrad has no CUDA backend yet, so ``is_available()`` is False and a script's usual
``device = "cuda" if torch.cuda.is_available() else "cpu"`` takes its CPU path. As in PyTorch's
CPU builds, seeding is a quiet no-op and anything that needs a GPU raises an error naming it
(an ``AssertionError``, PyTorch's kind, which is also a ``RuntimeError``). The answers come from
the backend's device table, so they change by themselves when a GPU backend is added there.

>>> import scratchgrad as sg
>>> sg.cuda.is_available(), sg.cuda.device_count()
(False, 0)
"""

from __future__ import annotations

from scratchgrad import backend


def is_available() -> bool:
    """Whether tensors can be put on a CUDA device."""
    return backend.is_available("cuda")


def device_count() -> int:
    return 1 if is_available() else 0


def is_initialized() -> bool:
    return False


def _require() -> None:
    """Raise, naming CUDA, unless a CUDA backend exists."""
    backend.array_module(backend.cuda_device())


def current_device() -> int:
    _require()
    return 0


def set_device(device: int | str | backend.device) -> None:
    backend.array_module(backend.cuda_device(device))


def get_device_name(device: int | str | backend.device | None = None) -> str:
    backend.array_module(backend.cuda_device(device))
    return "cuda"


def synchronize(device: int | str | backend.device | None = None) -> None:
    backend.array_module(backend.cuda_device(device))


def manual_seed(seed: int) -> None:
    """Seed the GPU generators: nothing to do without a GPU (PyTorch's CPU builds ignore it too;
    ``scratchgrad.manual_seed`` seeds everything scratchgrad draws)."""


def manual_seed_all(seed: int) -> None:
    """As ``manual_seed``, for every GPU."""


def empty_cache() -> None:
    """Hand cached GPU memory back: nothing is cached without a GPU."""


def memory_allocated(device: int | str | backend.device | None = None) -> int:
    return 0


def max_memory_allocated(device: int | str | backend.device | None = None) -> int:
    return 0
