"""How a tensor prints: ``repr(t)`` as PyTorch writes it.

>>> import scratchgrad as sg
>>> sg.tensor([1.5, 2.0], requires_grad=True)
tensor([1.5000, 2.0000], requires_grad=True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scratchgrad import backend
from scratchgrad.backend import xp

if TYPE_CHECKING:
    from scratchgrad.tensor import Tensor


def format_tensor(t: Tensor) -> str:
    """``tensor(<values>, <what differs from the defaults>)``: whole floats without decimals,
    others with four; device, dtype, ``grad_fn`` or ``requires_grad`` when not the default."""
    array = backend.to_host(t.array)  # waits for the device, as printing does in PyTorch
    if backend.is_floating(array.dtype):
        shown = array.astype(xp.float64)
        whole = xp.isfinite(shown).all() and (shown == xp.round(shown)).all()
        body = xp.array2string(
            shown, separator=", ", precision=0 if whole else 4, floatmode="fixed", prefix="tensor("
        )
    else:
        body = xp.array2string(array, separator=", ", prefix="tensor(")
    extras = []
    if backend.device_of(t.array) is not backend.cpu:
        extras.append(f"device='{t.device}'")
    if array.dtype not in (backend.default_float, backend.int64, backend.bool_):
        extras.append(f"dtype=scratchgrad.{array.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + ", ".join([body, *extras]) + ")"
