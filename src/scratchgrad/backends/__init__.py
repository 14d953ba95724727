"""``scratchgrad.backends``: the switches scripts set through ``torch.backends``.

They are accepted and kept so that scripts run unchanged (``torch.backends.cudnn.benchmark =
True``), but change nothing: scratchgrad computes with NumPy on the CPU and CuPy on a GPU,
without cuDNN or MPS. ``cuda.is_built()`` says whether the CuPy device is there.

>>> import scratchgrad as sg
>>> sg.backends.cudnn.benchmark = True
>>> sg.backends.mps.is_available()
False
"""

from scratchgrad.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
