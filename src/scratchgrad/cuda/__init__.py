"""``scratchgrad.cuda``: PyTorch's ``torch.cuda`` functions that scripts call to pick a device.

The "cuda" device computes with CuPy (``pip install 'scratchgrad[cuda]'``), imported the first
time anything asks for it: ``is_available()`` is True when CuPy imports and sees a GPU. Without
one, a script's usual ``device = "cuda" if torch.cuda.is_available() else "cpu"`` takes its CPU
path, seeding is a quiet no-op, and anything that needs a GPU raises an error naming it (an
``AssertionError``, PyTorch's kind, which is also a ``RuntimeError``).

>>> import scratchgrad as sg
>>> device = "cuda" if sg.cuda.is_available() else "cpu"
>>> sg.zeros(2, device=device).device.type == device
True
"""

from __future__ import annotations

from scratchgrad import backend


def is_available() -> bool:
    """Whether tensors can be put on a CUDA device (CuPy imports and sees a GPU)."""
    return backend.is_available("cuda")


def _cupy():
    """CuPy, once its backend is loaded; raises naming CUDA when there is none."""
    return backend.array_module(backend.cuda_device())


def device_count() -> int:
    return _cupy().cuda.runtime.getDeviceCount() if is_available() else 0


def is_initialized() -> bool:
    return is_available()


def current_device() -> int:
    return _cupy().cuda.runtime.getDevice()


def set_device(device: int | str | backend.device) -> None:
    where = backend.cuda_device(device)
    _cupy().cuda.runtime.setDevice(where.index or 0)


def get_device_name(device: int | str | backend.device | None = None) -> str:
    where = backend.cuda_device(device)
    return _cupy().cuda.runtime.getDeviceProperties(where.index or 0)["name"].decode()


def synchronize(device: int | str | backend.device | None = None) -> None:
    """Wait for the GPU's queued work (``.item()``, printing and ``.cpu()`` wait by themselves)."""
    backend.cuda_device(device)
    _cupy().cuda.Device().synchronize()


def manual_seed(seed: int) -> None:
    """Seed the GPU's generator (a quiet no-op without a GPU, as in PyTorch's CPU builds;
    ``scratchgrad.manual_seed`` seeds every device's)."""
    if is_available():
        backend.default_generator_for("cuda").manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """As ``manual_seed``: one generator serves every GPU."""
    manual_seed(seed)


def empty_cache() -> None:
    """Hand the memory CuPy's pool keeps for reuse back to the GPU."""
    if is_available():
        _cupy().get_default_memory_pool().free_all_blocks()


def memory_allocated(device: int | str | backend.device | None = None) -> int:
    """Bytes of GPU memory held by tensors now (0 without a GPU)."""
    return _cupy().get_default_memory_pool().used_bytes() if is_available() else 0


def max_memory_allocated(device: int | str | backend.device | None = None) -> int:
    """Bytes of GPU memory CuPy's pool holds, a bound on the peak (0 without a GPU)."""
    return _cupy().get_default_memory_pool().total_bytes() if is_available() else 0


def __getattr__(name: str):
    # ``torch.cuda.amp``'s spellings live a layer up (they build on scratchgrad.amp): imported
    # when first asked for, since this package loads before it
    if name == "amp":
        import importlib

        return importlib.import_module("scratchgrad.cuda.amp")
    raise AttributeError(f"module 'scratchgrad.cuda' has no attribute '{name}'")
