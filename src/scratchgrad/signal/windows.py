"""``scratchgrad.signal.windows``: PyTorch's ``torch.signal.windows``, SciPy-style window
functions of length ``M``, symmetric by default (``sym=False``: periodic, for spectral analysis),
float32 or float64, with PyTorch's ``ValueError`` messages (those of ``general_cosine`` for the
Hann, Hamming and Nuttall windows, built on it). The cosine sums (Hann, Hamming,
Blackman, Nuttall, ``general_cosine``), Bartlett and Kaiser are those of ``torch.hann_window``
and its siblings (``creation.py``) with ``periodic = not sym``; ``cosine``, ``exponential`` and
``gaussian`` are written here. Every function also takes ``dtype``, ``device`` and
``requires_grad``.

>>> import scratchgrad as sg
>>> sg.signal.windows.hann(5)
tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

from scratchgrad import backend
from scratchgrad.backend import xp
from scratchgrad.creation import bartlett_window, cosine_window, kaiser_window, window_tensor
from scratchgrad.tensor import Tensor

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
    "general_hamming", "hamming", "hann", "kaiser", "nuttall",
]  # fmt: skip


def _checked(name: str, M: int, options: dict) -> None:
    """PyTorch's checks common to every window: the length and the dtype."""
    if not isinstance(M, numbers.Integral):
        raise TypeError(f"{name}: the window length M must be int, not {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    dtype = options.get("dtype")
    dtype = backend.default_float if dtype is None else backend.to_dtype(dtype)
    if dtype not in (backend.float32, backend.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: torch.{dtype}")


def _offsets(M: int, sym: bool) -> tuple[Any, float]:
    """The samples n and the window's span (M - 1, or M for a periodic window longer than 1)."""
    return xp.arange(M, dtype=xp.float64), M if not sym and M > 1 else M - 1


def general_cosine(M: int, *, a: Sequence[float], sym: bool = True, **options: Any) -> Tensor:
    """``sum_k (-1)^k a[k] cos(2 pi k n / N)``, N = M - 1 (M if not ``sym``), as
    ``torch.signal.windows.general_cosine``.

    >>> import scratchgrad as sg
    >>> sg.signal.windows.general_cosine(3, a=[0.5, 0.5])
    tensor([0., 1., 0.])
    """
    _checked("general_cosine", M, options)
    if M <= 1:  # PyTorch returns these (empty, or 1) before it looks at the coefficients
        return cosine_window("general_cosine", (1.0,), M, not sym, **options)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = tuple(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return cosine_window("general_cosine", a, M, not sym, **options)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, **options: Any) -> Tensor:
    """``alpha - (1 - alpha) cos(2 pi n / N)``, as ``torch.signal.windows.general_hamming``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, **options)


def hann(M: int, *, sym: bool = True, **options: Any) -> Tensor:
    """The Hann window, as ``torch.signal.windows.hann``."""
    return general_hamming(M, alpha=0.5, sym=sym, **options)


def hamming(M: int, *, sym: bool = True, **options: Any) -> Tensor:
    """The Hamming window (alpha 0.54), as ``torch.signal.windows.hamming``."""
    return general_hamming(M, sym=sym, **options)


def blackman(M: int, *, sym: bool = True, **options: Any) -> Tensor:
    """The Blackman window, as ``torch.signal.windows.blackman``."""
    _checked("blackman", M, options)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, **options)


def nuttall(M: int, *, sym: bool = True, **options: Any) -> Tensor:
    """Nuttall's minimum 4-term Blackman-Harris window, as ``torch.signal.windows.nuttall``."""
    a = [0.3635819, 0.4891775, 0.1365995, 0.0106411]
    return general_cosine(M, a=a, sym=sym, **options)


def bartlett(M: int, *, sym: bool = True, **options: Any) -> Tensor:
    """The triangular window ``1 - |2 n / N - 1|``, as ``torch.signal.windows.bartlett``."""
    _checked("bartlett", M, options)
    return bartlett_window(M, not sym, **options)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, **options: Any) -> Tensor:
    """The Kaiser window, as ``torch.signal.windows.kaiser`` (``torch.kaiser_window``)."""
    _checked("kaiser", M, options)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return kaiser_window(M, not sym, beta, **options)


def cosine(M: int, *, sym: bool = True, **options: Any) -> Tensor:
    """The sine window ``sin(pi (n + 1/2) / (N + 1))``, as ``torch.signal.windows.cosine``.

    >>> import scratchgrad as sg
    >>> sg.signal.windows.cosine(3)
    tensor([0.5000, 1.0000, 0.5000])
    """
    _checked("cosine", M, options)
    n, span = _offsets(M, sym)
    return window_tensor(xp.sin(math.pi * (n + 0.5) / (span + 1)), **options)


def exponential(
    M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, **options: Any
) -> Tensor:
    """The Poisson window ``exp(-|n - center| / tau)``, centred by default, as
    ``torch.signal.windows.exponential``."""
    _checked("exponential", M, options)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    n, span = _offsets(M, sym)
    centre = span / 2 if center is None else center
    return window_tensor(xp.exp(-xp.abs(n - centre) / tau), **options)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, **options: Any) -> Tensor:
    """``exp(-(n - N/2)^2 / (2 std^2))``, as ``torch.signal.windows.gaussian``.

    >>> import scratchgrad as sg
    >>> sg.signal.windows.gaussian(5, std=1.0)
    tensor([0.1353, 0.6065, 1.0000, 0.6065, 0.1353])
    """
    _checked("gaussian", M, options)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    n, span = _offsets(M, sym)
    return window_tensor(xp.exp(-((n - span / 2) ** 2) / (2 * std**2)), **options)
