"""Utilities for batches of sequences, after ``torch.nn.utils.rnn``."""

from __future__ import annotations

from collections.abc import Sequence

from scratchgrad.tensor import Tensor, stack


def pad_sequence(
    sequences: Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of different lengths (each ``(L_i, *)``) into one tensor of the longest
    length, padded with ``padding_value`` on the right (or left): ``(L, B, *)``, or
    ``(B, L, *)`` with ``batch_first``. Gradients flow back to each sequence.

    >>> import scratchgrad as sg
    >>> pad_sequence([sg.tensor([1, 2, 3]), sg.tensor([4])], batch_first=True).tolist()
    [[1, 2, 3], [4, 0, 0]]
    """
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}"
        )
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    trailing = {tuple(s.shape[1:]) for s in sequences}
    if len(trailing) > 1 or any(s.ndim == 0 for s in sequences):
        raise RuntimeError(
            "pad_sequence: the sequences must have the same shape after their first dim, got "
            f"{[tuple(s.shape) for s in sequences]}"
        )
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        widths = [(0, extra) if padding_side == "right" else (extra, 0)] + [(0, 0)] * (s.ndim - 1)
        padded.append(s.pad(widths, padding_value) if extra else s)
    return stack(padded, 0 if batch_first else 1)
