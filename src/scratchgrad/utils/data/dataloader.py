"""The ``DataLoader``: batches of a dataset, in order or shuffled, as ``torch.utils.data``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import scratchgrad as sg
from scratchgrad import backend
from scratchgrad.utils.data.dataset import Subset, TensorDataset

if TYPE_CHECKING:
    from scratchgrad import Tensor
    from scratchgrad.backend import Generator


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of samples into one batch, as ``torch.utils.data.default_collate``.

    Tensors are stacked along a new first dimension; NumPy arrays and scalars become stacked
    tensors; Python floats a float64 tensor, ints an int64 tensor, bools a bool tensor; strings
    are left as they come (the list or tuple of them). Dicts, tuples and lists are collated field
    by field, so a batch of ``(image, label)`` tuples becomes ``[images, labels]``: a list, as
    PyTorch returns (a named tuple keeps its type).

    >>> import scratchgrad as sg
    >>> images, labels = default_collate([(sg.zeros(2), 0), (sg.ones(2), 1)])
    >>> images.shape, labels.tolist()
    ((2, 2), [0, 1])
    """
    elem = batch[0]
    if isinstance(elem, sg.Tensor):
        return sg.stack(list(batch))
    if isinstance(elem, str | bytes):  # before NumPy: numpy.str_ is a str
        return batch
    if isinstance(elem, np.ndarray | np.generic):
        if elem.dtype.kind in "OSUV":
            raise TypeError(
                f"default_collate: NumPy arrays of dtype {elem.dtype} cannot be tensors"
            )
        return sg.from_numpy(np.stack(batch))
    if isinstance(elem, float):
        return sg.tensor(batch, dtype=sg.float64)
    if isinstance(elem, int):  # bool included: PyTorch infers the dtype, bool or int64
        return sg.tensor(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([sample[key] for sample in batch]) for key in elem}
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError(
                "default_collate: each element in list of batch should be of equal size"
            )
        fields = [default_collate(samples) for samples in zip(*batch, strict=True)]
        if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a named tuple
            return type(elem)(*fields)
        return fields
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem)}"
    )


class DataLoader:
    """Iterate over a dataset in batches, as ``torch.utils.data.DataLoader`` (single process).

    Each pass (each ``iter(loader)``) visits every sample once, in order or, with
    ``shuffle=True``, in a fresh random order drawn from ``generator`` (or else the library's
    generator, so ``sg.manual_seed`` makes it reproducible). ``len(loader)`` is the number of
    batches; ``drop_last=True`` leaves out a last batch smaller than ``batch_size``.

    A batch is ``collate_fn(list_of_samples)`` (``default_collate`` when not given). A
    ``TensorDataset``, or a ``Subset`` of one (what ``random_split`` returns), with no
    ``collate_fn`` skips the per-sample work: each tensor is indexed once with the whole batch's
    indices, which gives the same batch as collating the samples, much faster.

    >>> import scratchgrad as sg
    >>> ds = TensorDataset(sg.arange(10).float(), sg.arange(10))
    >>> loader = DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator(0))
    >>> len(loader), [y.shape for x, y in loader]
    (3, [(4,), (4,), (2,)])
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int = 1,
        shuffle: bool = False,
        *,
        drop_last: bool = False,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        generator: Generator | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"DataLoader: batch_size should be a positive integer value, but got {batch_size!r}"
            )
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.collate_fn = collate_fn
        self.generator = generator

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        # The order is drawn here, not at the first next(), so each iter() is one epoch's draw.
        n = len(self.dataset)
        if self.shuffle:
            order = (self.generator or backend.default_generator).rng.permutation(n)
        else:
            order = np.arange(n)
        batches = [order[i : i + self.batch_size] for i in range(0, n, self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        return self._fetch(batches)

    def _fetch(self, batches: list[np.ndarray]) -> Iterator[Any]:
        source = _tensor_rows(self.dataset) if self.collate_fn is None else None
        if source is not None:
            tensors, rows = source
            for indices in batches:
                index = indices if rows is None else rows[indices]
                yield [t[index] for t in tensors]
        else:
            collate = self.collate_fn or default_collate
            for indices in batches:
                yield collate([self.dataset[i] for i in indices.tolist()])


def _tensor_rows(dataset: Any) -> tuple[tuple[Tensor, ...], np.ndarray | None] | None:
    """The tensors behind a ``TensorDataset`` (maybe inside ``Subset``s) and the rows it uses.

    ``rows[i]`` is the row of the tensors that is sample ``i`` (``None``: row ``i`` itself).
    Returns ``None`` for any other dataset. Exact types are checked, not ``isinstance``: a
    subclass may override ``__getitem__``, and then only the item-by-item path is right.
    """
    rows = None
    while type(dataset) is Subset:
        indices = np.asarray(dataset.indices, dtype=np.int64)
        rows = indices if rows is None else indices[rows]
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset:
        return None
    return dataset.tensors, rows
