"""How a tensor prints: ``repr(t)`` as PyTorch writes it, under the options that
``set_printoptions`` sets (PyTorch's ``torch._tensor_str`` rules: one width for every entry, fixed
or scientific notation chosen from the smallest and largest nonzero finite magnitudes, floats
with whole values shown as ``1.``, long tensors summarised with ``...``, lines broken at
``linewidth``).

>>> import scratchgrad as sg
>>> sg.tensor([1.5, 2.0], requires_grad=True)
tensor([1.5000, 2.0000], requires_grad=True)
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from scratchgrad import backend
from scratchgrad.backend import xp

if TYPE_CHECKING:
    from scratchgrad.tensor import Tensor


@dataclasses.dataclass
class _Options:
    precision: int = 4  # digits after the point
    threshold: float = 1000  # more entries than this are summarised
    edgeitems: int = 3  # entries shown at each end of a summarised dim
    linewidth: int = 80  # characters a line of entries may take
    sci_mode: bool | None = None  # None: chosen for each tensor


options = _Options()
_PROFILES = {
    "default": _Options(),
    "short": _Options(precision=2, edgeitems=2),
    "full": _Options(threshold=math.inf),
}
_PREFIX = "tensor("


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, as ``torch.set_printoptions``: ``precision`` digits after the point
    (4), ``threshold`` entries above which a tensor is summarised (1000), ``edgeitems`` entries
    kept at each end of a summarised dim (3), ``linewidth`` characters per line (80),
    ``sci_mode`` True or False to force scientific notation on or off (None: chosen for each
    tensor; as PyTorch, every call sets it). ``profile`` ("default", "short" or "full") first
    sets all four to its values; the others given then override them.

    >>> import scratchgrad as sg
    >>> sg.set_printoptions(precision=2)
    >>> sg.tensor([1.12345])
    tensor([1.12])
    >>> sg.set_printoptions(threshold=5)
    >>> sg.arange(10)
    tensor([0, 1, 2,  ..., 7, 8, 9])
    >>> sg.set_printoptions(profile="default")
    >>> sg.tensor([1.12345])
    tensor([1.1235])
    """
    if profile in _PROFILES:  # another name changes nothing, as in PyTorch
        for field in ("precision", "threshold", "edgeitems", "linewidth"):
            setattr(options, field, getattr(_PROFILES[profile], field))
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems}
    for field, value in {**given, "linewidth": linewidth}.items():
        if value is not None:
            setattr(options, field, value)
    options.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current options, as keywords for ``set_printoptions`` (``torch._tensor_str``'s).

    >>> get_printoptions()["precision"]
    4
    """
    return dataclasses.asdict(options)


def format_tensor(t: Tensor) -> str:
    """``tensor(<values>, <what differs from the defaults>)``: device, size (of an empty
    tensor), dtype, ``grad_fn`` or ``requires_grad``, as PyTorch lists them. A meta tensor
    has no values to show: ``tensor(..., device='meta', size=(2, 3))``."""
    meta = t.is_meta
    array = t.array if meta else backend.to_host(t.array)  # waits for the device, as PyTorch
    dtype = array.dtype
    suffixes = []
    if backend.device_of(t.array) is not backend.cpu:
        suffixes.append(f"device='{t.device}'")
    if meta:
        body = "..."
        suffixes.append(f"size={tuple(array.shape)}")
        if dtype != backend.default_float:
            suffixes.append(f"dtype=scratchgrad.{dtype}")
    elif array.size == 0:
        body = "[]"
        if array.ndim != 1:
            suffixes.append(f"size={tuple(array.shape)}")
        if dtype != backend.default_float:  # no entries to tell an integer tensor by
            suffixes.append(f"dtype=scratchgrad.{dtype}")
    else:
        summarize = array.size > options.threshold
        shown = _summarized(array) if summarize else array
        formatter = _ComplexFormatter(shown) if dtype.kind == "c" else _Formatter(shown)
        body = _nested(array, len(_PREFIX), summarize, formatter)
        if not options.edgeitems:
            suffixes.append(f"size={tuple(array.shape)}")
        if dtype not in (backend.default_float, backend.int64, backend.bool_, _default_complex()):
            suffixes.append(f"dtype=scratchgrad.{dtype}")
    if t._ctx is not None:
        try:
            name = t.grad_fn.name()
        except RuntimeError:  # a view that a change of its base made unusable: PyTorch's word
            name = "Invalid"
        suffixes.append(f"grad_fn=<{name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(_PREFIX + body, suffixes)


class _Formatter:
    """Writes every entry of one tensor at one width, in one notation, chosen from the entries
    shown (``shown``, a NumPy array)."""

    def __init__(self, shown: Any) -> None:
        self.floating = backend.is_floating(shown.dtype)
        self.int_mode, self.sci_mode, self.width = True, False, 1
        values = shown.reshape(-1)
        if not self.floating:
            self.width = max((len(str(v)) for v in values.tolist()), default=1)
            return
        values = values.astype(xp.float64)  # exact: 16-bit floats then compute as Python's
        finite = values[xp.isfinite(values) & (values != 0)]
        if finite.size == 0:  # only zeros, inf and NaN: as PyTorch, even sci_mode is not read
            return
        magnitudes = xp.abs(finite)
        low, high = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool((finite == xp.ceil(finite)).all())
        self.sci_mode = (
            high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
            if options.sci_mode is None
            else options.sci_mode
        )
        texts = map(self._text, finite.tolist())
        self.width = max(len(text) + (self.int_mode and not self.sci_mode) for text in texts)

    def _text(self, value: float) -> str:
        """``value`` in the notation chosen, without the point of whole floats."""
        if self.sci_mode:
            return f"{value:.{options.precision}e}"
        return f"{value:.0f}" if self.int_mode else f"{value:.{options.precision}f}"

    def format(self, value: Any) -> str:
        """``value`` (a Python number) written at the common width."""
        if not self.floating:
            text = str(value)
        else:
            text = self._text(value)
            if self.int_mode and not self.sci_mode and math.isfinite(value):
                text += "."  # a whole float still shows that it is one
        return text.rjust(self.width)


class _ComplexFormatter:
    """Writes complex entries as PyTorch does: the real parts at one width, in the notation
    their own ``_Formatter`` chooses, then the imaginary parts (chosen apart) with their sign
    and a ``j``: ``1.0000+2.j``."""

    def __init__(self, shown: Any) -> None:
        self.real, self.imag = _Formatter(shown.real), _Formatter(shown.imag)
        self.width = self.real.width + self.imag.width + 1  # (the j)

    def format(self, value: complex) -> str:
        imag = self.imag.format(value.imag).lstrip() + "j"
        return self.real.format(value.real) + ("" if imag[0] in "+-" else "+") + imag


def _default_complex() -> Any:
    """The complex dtype a repr does not name: complex64 while the default float is float32."""
    return backend.to_complex(backend.default_float)


def _summarized(array: Any) -> Any:
    """The entries a summarised print shows (``edgeitems`` at each end of every long dim),
    which alone choose the width and notation. As PyTorch: with ``edgeitems`` 0, a vector
    keeps all its entries and a tensor with more dims none."""
    edge = options.edgeitems
    if array.ndim == 0:
        return array
    if array.ndim == 1:
        return xp.concatenate((array[:edge], array[-edge:])) if len(array) > 2 * edge else array
    if not edge:
        return array[(slice(0, 0),) * array.ndim]
    return xp.stack([_summarized(array[i]) for i in _rows(len(array), True) if i is not None])


def _rows(size: int, summarize: bool) -> list:
    """The indices printed along a dim of ``size``; None where ``...`` stands for the rest."""
    edge = options.edgeitems
    if summarize and size > 2 * edge:
        return [*range(edge), None, *range(size - edge, size)]
    return list(range(size))


def _nested(array: Any, indent: int, summarize: bool, formatter: _Formatter) -> str:
    """``array`` as nested brackets, its inner dims indented below the outer ones' brackets."""
    if array.ndim == 0:
        return formatter.format(array.item())
    if array.ndim == 1:
        return _vector(array, indent, summarize, formatter)
    parts = [
        "..." if i is None else _nested(array[i], indent + 1, summarize, formatter)
        for i in _rows(len(array), summarize)
    ]
    return "[" + ("," + "\n" * (array.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _vector(array: Any, indent: int, summarize: bool, formatter: _Formatter) -> str:
    """One dim of entries, as many on a line as ``linewidth`` leaves room for."""
    edge = options.edgeitems
    if summarize and not edge:
        texts = ["..."]
    else:
        rows = _rows(len(array), summarize)
        texts = [" ..." if i is None else formatter.format(array[i].item()) for i in rows]
    per_line = max(1, math.floor((options.linewidth - indent) / (formatter.width + 2)))
    lines = [", ".join(texts[i : i + per_line]) for i in range(0, len(texts), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _with_suffixes(text: str, suffixes: list[str]) -> str:
    """``text``, then each suffix after a comma, on a new line where it would pass
    ``linewidth``, then the closing parenthesis."""
    indent = len(_PREFIX)
    parts, last_line = [text], len(text) - text.rfind("\n") + 1  # PyTorch's count, kept
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > options.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"
