"""``scratchgrad.backends``: the switches scripts set through ``torch.backends``.

They are accepted and kept so that scripts run unchanged (``torch.backends.cudnn.benchmark =
True``), but change nothing: scratchgrad computes with NumPy on the CPU, whose results do not
depend on them. The ``is_available()`` answers say which libraries are present: none of cuDNN,
MPS or CUDA.

>>> import scratchgrad as sg
>>> sg.backends.cudnn.benchmark = True
>>> sg.backends.mps.is_available()
False
"""

from scratchgrad.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
