"""``scratchgrad.backends``: the switches scripts set through ``torch.backends``.

They are accepted and kept so that scripts run unchanged (``torch.backends.cudnn.benchmark =
True``), but change nothing: scratchgrad computes with NumPy on the CPU and CuPy on a GPU,
without cuDNN or MPS. ``cuda.is_built()`` says whether the CuPy device is there.

>>> import scratchgrad as sg
>>> sg.backends.cudnn.benchmark = True
>>> sg.backends.mps.is_available()
False
"""

import warnings

from scratchgrad.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "get_float32_matmul_precision", "mps", "set_float32_matmul_precision"]

_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Keep ``precision`` ("highest", "high" or "medium"), as ``torch.set_float32_matmul_precision``
    does, so the first line of many training scripts runs; float32 products stay float32 whatever
    it says (NumPy has no TF32 or bfloat16 shortcut for them). "high" and "medium" set
    ``backends.cuda.matmul.allow_tf32``, as in PyTorch; any other value warns and changes nothing.

    >>> import scratchgrad as sg
    >>> sg.set_float32_matmul_precision("high")
    >>> sg.get_float32_matmul_precision()
    'high'
    >>> sg.set_float32_matmul_precision("highest")
    """
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "set_float32_matmul_precision call has no effect.",
            stacklevel=2,
        )
        return
    _matmul_precision = precision
    cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    """The precision last set by ``set_float32_matmul_precision`` ("highest" at first)."""
    return _matmul_precision
