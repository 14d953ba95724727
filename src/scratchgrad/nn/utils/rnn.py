"""Utilities for batches of sequences, after ``torch.nn.utils.rnn``: padding sequences of
different lengths into one tensor, and packing such a batch (``PackedSequence``) so that the
recurrent layers run each sequence for its own length only.

A packed batch holds the sequences sorted longest first, time step by time step: the entries
of step 0 of every sequence, then of step 1 of those at least 2 long, and so on;
``batch_sizes[t]`` says how many sequences step ``t`` has. Packing and unpacking are
``index_select``s of the padded batch's rows, so gradients flow through both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.creation import full
from scratchgrad.tensor import Tensor, cat, stack


def pad_sequence(
    sequences: Tensor | Iterable[Tensor],
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
        raise RuntimeError(
            f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}"
        )
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}"
        )
    sequences = list(sequences)  # (a generator, or a tensor: its rows, as PyTorch takes them)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    trailing = {tuple(s.shape[1:]) for s in sequences}
    if len(trailing) > 1 or any(s.ndim == 0 for s in sequences):
        raise RuntimeError(
            "pad_sequence: the sequences must have the same shape after their first dim, got "
            f"{[tuple(s.shape) for s in sequences]}"
        )
    longest = max(s.shape[0] for s in sequences)
    dtype = sequences[0].dtype  # as PyTorch: the first sequence's, not the promoted one
    padded = []
    for s in sequences:
        s = s.to(dtype)
        extra = longest - s.shape[0]
        widths = [(0, extra) if padding_side == "right" else (extra, 0)] + [(0, 0)] * (s.ndim - 1)
        padded.append(s.pad(widths, padding_value) if extra else s)
    return stack(padded, 0 if batch_first else 1)


class PackedSequence(NamedTuple):
    """A packed batch of sequences (see the module's doc string), as PyTorch's: ``data``
    ``(sum of the lengths, *)``, ``batch_sizes`` (int64, one per time step), and the order
    the sequences were sorted in (``sorted_indices``) and its inverse (``unsorted_indices``),
    None where the batch came sorted."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The data moved or cast by ``Tensor.to`` (see ``_with_data``)."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        return self._with_data(self.data.cpu())

    def pin_memory(self) -> PackedSequence:
        return self._with_data(self.data.pin_memory())

    def is_pinned(self) -> bool:
        return self.data.is_pinned()

    # the data cast, as the Tensor methods of the same names
    def double(self) -> PackedSequence:
        return self._with_data(self.data.double())

    def float(self) -> PackedSequence:
        return self._with_data(self.data.float())

    def half(self) -> PackedSequence:
        return self._with_data(self.data.half())

    def long(self) -> PackedSequence:
        return self._with_data(self.data.long())

    def int(self) -> PackedSequence:
        return self._with_data(self.data.int())

    def short(self) -> PackedSequence:
        return self._with_data(self.data.short())

    def char(self) -> PackedSequence:
        return self._with_data(self.data.char())

    def byte(self) -> PackedSequence:
        return self._with_data(self.data.byte())

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def _with_data(self, data: Tensor) -> PackedSequence:
        """This batch with ``data`` (itself where ``data`` is its own), and the sorted orders
        moved to its device; the batch sizes stay on the CPU, as PyTorch's."""
        if data is self.data:
            return self
        orders = [None if i is None else i.to(data.device) for i in self[2:]]
        return PackedSequence(data, self.batch_sizes, *orders)


def pack_padded_sequence(
    input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose sequence
    ``b`` is ``lengths[b]`` steps long. ``enforce_sorted``: the lengths must come longest
    first (else the batch is sorted, and the recurrent layers' results come back in its
    order).

    >>> import scratchgrad as sg
    >>> padded = sg.tensor([[1, 2, 3], [4, 5, 0]])
    >>> pack_padded_sequence(padded, [3, 2], batch_first=True).data.tolist()
    [1, 4, 2, 5, 3]
    """
    lengths = _lengths(lengths)
    if input.ndim < 2:
        raise IndexError(
            "pack_padded_sequence: the padded input needs a time and a batch dim, got shape "
            f"{tuple(input.shape)}"
        )
    if input.numel() == 0:
        raise RuntimeError(
            f"Cannot pack empty tensors (pack_padded_sequence: shape {tuple(input.shape)})"
        )
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    if len(lengths) != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
            f"(batch_size={batch})"
        )
    sorted_indices = unsorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
    else:
        order = sorted(range(batch), key=lambda b: -lengths[b])  # (stable: ties keep order)
        lengths = [lengths[b] for b in order]
        sorted_indices = _indices(order, input)
        unsorted_indices = invert_permutation(sorted_indices)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if lengths and lengths[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if lengths and lengths[0] > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a sequence is {lengths[0]} steps long, but the padded input "
            f"has {steps} (shape {tuple(input.shape)}, batch_first={batch_first})"
        )
    if batch_first:
        input = input.transpose(0, 1)
    batch_sizes = _conjugate(lengths)
    data = _time_major_rows(input, batch_sizes)
    return PackedSequence(data, _indices(batch_sizes, input), sorted_indices, unsorted_indices)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of a packed one, in
    the order it was packed from, and the sequences' lengths (int64). ``total_length``: pad
    to that many steps (at least the longest sequence's).

    >>> import scratchgrad as sg
    >>> packed = pack_sequence([sg.tensor([1, 2, 3]), sg.tensor([4, 5])])
    >>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
    >>> padded.tolist(), lengths.tolist()
    ([[1, 2, 3], [4, 5, 0]], [3, 2])
    """
    batch_sizes = sequence.batch_sizes.tolist()
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = total_length
    padded = _padded(sequence.data, batch_sizes, steps, padding_value)
    lengths = _indices(_conjugate(batch_sizes), sequence.batch_sizes)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices]
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None for None), as PyTorch's: a packed
    batch's ``unsorted_indices`` from its ``sorted_indices``.

    >>> import scratchgrad as sg
    >>> invert_permutation(sg.tensor([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    return None if permutation is None else permutation.argsort()


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack sequences of different lengths (each ``(L_i, *)``), as ``pack_padded_sequence``
    of their ``pad_sequence``.

    >>> import scratchgrad as sg
    >>> pack_sequence([sg.tensor([1, 2]), sg.tensor([3])]).batch_sizes.tolist()
    [2, 1]
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length (``pad_sequence``'s inverse).

    >>> import scratchgrad as sg
    >>> [s.tolist() for s in unpad_sequence(sg.tensor([[1, 2], [3, 0]]), [2, 1], True)]
    [[1, 2], [3]]
    """
    if not batch_first:
        padded = padded.transpose(0, 1)
    return [padded[b, :length] for b, length in enumerate(_lengths(lengths))]


def unpack_sequence(packed: PackedSequence) -> list[Tensor]:
    """The sequences of a packed batch, in the order they were packed from.

    >>> import scratchgrad as sg
    >>> [s.tolist() for s in unpack_sequence(pack_sequence([sg.tensor([1, 2]), sg.tensor([3])]))]
    [[1, 2], [3]]
    """
    padded, lengths = pad_packed_sequence(packed, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def sorted_padded(sequence: PackedSequence) -> tuple[Tensor, list[int]]:
    """The packed batch padded with zeros to ``(T, B, *)`` in its sorted order (the order the
    recurrent layers run it in) and the sorted lengths, longest first."""
    batch_sizes = sequence.batch_sizes.tolist()
    return _padded(sequence.data, batch_sizes, len(batch_sizes), 0.0), _conjugate(batch_sizes)


def repacked(padded: Tensor, like: PackedSequence) -> PackedSequence:
    """``(T, B, *)`` results of a sorted batch packed as the batch ``like``."""
    return like._replace(data=_time_major_rows(padded, like.batch_sizes.tolist()))


def _time_major_rows(padded: Tensor, batch_sizes: list[int]) -> Tensor:
    """The rows ``padded[t, :batch_sizes[t]]`` of a ``(T, B, *)`` batch, one after another."""
    batch = padded.shape[1]
    rows = [t * batch + b for t, size in enumerate(batch_sizes) for b in range(size)]
    flat = padded.reshape(-1, *padded.shape[2:])
    return flat.index_select(0, _indices(rows, padded))


def _padded(data: Tensor, batch_sizes: list[int], steps: int, padding_value: float) -> Tensor:
    """``(steps, B, *)`` with packed ``data``'s rows where ``batch_sizes`` puts them, and
    ``padding_value`` elsewhere (read from one extra row, so the gradient reaches ``data``)."""
    batch = batch_sizes[0] if batch_sizes else 0
    fill = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    source = cat([data, fill])
    pad_row, rows, start = data.shape[0], [], 0
    for t in range(steps):
        size = batch_sizes[t] if t < len(batch_sizes) else 0
        rows += [start + b if b < size else pad_row for b in range(batch)]
        start += size
    picked = source.index_select(0, _indices(rows, data))
    return picked.reshape(steps, batch, *data.shape[1:])


def _conjugate(counts: list[int]) -> list[int]:
    """For each ``i`` below the largest count, how many counts exceed it: the batch sizes of
    sorted lengths (how many sequences have a step ``t``), and the lengths of batch sizes."""
    return [sum(count > i for count in counts) for i in range(max(counts, default=0))]


def _lengths(lengths: Any) -> list[int]:
    """The sequence lengths as Python ints, from a 1-D tensor or a sequence."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{lengths.ndim}D {lengths.dtype.name} tensor"
            )
        lengths = lengths.tolist()
    return [int(length) for length in lengths]


def _indices(values: list[int], like: Tensor) -> Tensor:
    """``values`` as an int64 tensor on ``like``'s device."""
    out = Tensor._make(backend.namespace(like.array).asarray(values, dtype=backend.int64))
    if capture_hook.recorder is not None:  # a jitted step may read a packed batch's sizes back
        capture_hook.recorder.made_from_values(out)
    return out
