"""Datasets, as in ``torch.utils.data``: map-style ones (anything with ``__getitem__`` and
``__len__``) and iterable ones (streams, ``__iter__``)."""

from __future__ import annotations

import bisect
import math
import numbers
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from scratchgrad.utils.data.sampler import check_generator, random_source

if TYPE_CHECKING:
    from scratchgrad.backend import Generator
    from scratchgrad.tensor import Tensor


class Dataset(ABC):
    """A collection of samples that can be indexed by ``0 .. len(self) - 1``.

    Subclasses say how to fetch one sample and how many there are. The ``DataLoader`` accepts any
    object with these two methods (a plain list works too); subclassing only documents the intent.

    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, index):
    ...         return index * index
    >>> [Squares()[i] for i in range(len(Squares()))]
    [0, 1, 4, 9]
    """

    @abstractmethod
    def __getitem__(self, index: int) -> Any:
        """The sample at ``index``."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of samples."""

    def __add__(self, other: Dataset) -> ConcatDataset:
        """``a + b`` is ``ConcatDataset([a, b])``, as in PyTorch."""
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__`` (and ``__len__`` only if they know
    it), as ``torch.utils.data.IterableDataset``.

    With ``num_workers > 0`` every worker process iterates its own copy of the dataset, so
    without care each sample comes once per worker. Split the work in ``__iter__`` with
    ``get_worker_info()`` (``None`` in the main process), as PyTorch documents:

    >>> from scratchgrad.utils.data import DataLoader, get_worker_info
    >>> class Range(IterableDataset):
    ...     def __init__(self, start, end):
    ...         self.start, self.end = start, end
    ...     def __iter__(self):
    ...         info = get_worker_info()
    ...         if info is None:  # single process: everything
    ...             return iter(range(self.start, self.end))
    ...         per_worker = -(-(self.end - self.start) // info.num_workers)
    ...         first = self.start + info.id * per_worker
    ...         return iter(range(first, min(first + per_worker, self.end)))
    >>> [b.tolist() for b in DataLoader(Range(0, 7), batch_size=3)]
    [[0, 1, 2], [3, 4, 5], [6]]
    >>> sorted(i for b in DataLoader(Range(0, 7), batch_size=2, num_workers=2) for i in b.tolist())
    [0, 1, 2, 3, 4, 5, 6]
    """

    @abstractmethod
    def __iter__(self) -> Iterator[Any]:
        """The samples, one at a time."""

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: it cannot be indexed")

    def __len__(self) -> int:
        # Python's own message for an object without a length, which is what PyTorch gives.
        raise TypeError(f"object of type '{type(self).__name__}' has no len()")

    def __add__(self, other: Dataset) -> ChainDataset:
        """``a + b`` is ``ChainDataset([a, b])``, as in PyTorch."""
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """The samples of several iterable datasets one after the other, as ``torch``'s: chained
    while iterating, so each stream is read only when the ones before it are used up. As
    PyTorch's, a dataset that is not an ``IterableDataset`` raises an AssertionError when
    iteration (or ``len``) reaches it; ``len`` is the sum of the datasets' lengths.

    >>> class Letters(IterableDataset):
    ...     def __init__(self, text):
    ...         self.text = text
    ...     def __iter__(self):
    ...         return iter(self.text)
    ...     def __len__(self):
    ...         return len(self.text)
    >>> chain = ChainDataset([Letters("ab"), Letters("cde")])
    >>> list(chain), len(chain), list(Letters("x") + Letters("yz"))
    (['a', 'b', 'c', 'd', 'e'], 5, ['x', 'y', 'z'])
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for dataset in self.datasets:
            _check_iterable(dataset)
            yield from dataset

    def __len__(self) -> int:
        total = 0
        for dataset in self.datasets:
            _check_iterable(dataset)
            total += len(dataset)
        return total


def _check_iterable(dataset: Any) -> None:
    """PyTorch's error for a map-style dataset in a ChainDataset."""
    if not isinstance(dataset, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after the other, as ``torch``'s.

    >>> ds = ConcatDataset([["a", "b"], ["c"], ["d", "e"]])
    >>> len(ds), ds[2], ds[-1], ds.cumulative_sizes
    (5, 'c', 'e', [2, 3, 5])
    """

    def __init__(self, datasets: Iterable[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise ValueError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {index} out of range for length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][index - start]


class StackDataset(Dataset):
    """Several map-style datasets of one length side by side, as ``torch``'s: item ``i`` is the
    tuple of their items (datasets given positionally) or the dict of them (by keyword).

    >>> ds = StackDataset(image=["a", "b"], label=[0, 1])
    >>> len(ds), ds[1]
    (2, {'image': 'b', 'label': 1})
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                "input/output, but both types are given."
            )
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets = args or kwargs
        lengths = {len(d) for d in (args or kwargs.values())}
        if len(lengths) > 1:
            raise ValueError("Size mismatch between datasets")
        (self._length,) = lengths

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension, as ``torch``'s.

    ``dataset[i]`` is the tuple ``(tensors[0][i], tensors[1][i], ...)``. The ``DataLoader`` fetches
    whole batches of a ``TensorDataset`` with one indexing call per tensor, so this is the fast way
    to feed in-memory data.

    >>> import scratchgrad as sg
    >>> ds = TensorDataset(sg.zeros(5, 3), sg.arange(5))
    >>> len(ds), ds[2][0].shape, ds[2][1].item()
    (5, scratchgrad.Size([3]), 2)
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        shapes = [tuple(t.shape) for t in tensors]
        if any(len(shape) == 0 for shape in shapes):  # (PyTorch's error type for size(0))
            raise IndexError(
                f"TensorDataset: every tensor needs a first dimension; shapes {shapes}"
            )
        if len({shape[0] for shape in shapes}) > 1:  # PyTorch asserts: its error type
            raise AssertionError(
                f"TensorDataset: size mismatch between tensors: shapes {shapes} differ in their "
                "first dimension"
            )
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order, as ``torch``'s. A list of
    indices is passed on to ``dataset`` in one call, and ``__getitems__`` (what a
    ``DataLoader`` fetches a batch with) uses the dataset's own ``__getitems__`` if it has one;
    a subclass overriding ``__getitem__`` must override ``__getitems__`` too, as in PyTorch.

    >>> sub = Subset(["a", "b", "c", "d"], [3, 0])
    >>> len(sub), sub[0], sub[1], sub.__getitems__([1, 0])
    (2, 'd', 'a', ['a', 'd'])
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        # NOTE: the DataLoader would call __getitems__ and pass the override by, unseen
        if type(self).__getitem__ is not Subset.__getitem__ and (
            type(self).__getitems__ is Subset.__getitems__
        ):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When "
                "subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic."
            )
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: int | list[int]) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Any, lengths: Sequence[int | float], generator: Generator | None = None
) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random ``Subset``s of the given lengths, as ``torch``.

    ``lengths`` are either sample counts summing to ``len(dataset)``, or fractions summing to 1.
    Fractions are rounded as PyTorch rounds them: each split gets ``floor(len * fraction)``, then
    the samples left over go one each to the splits in turn, starting with the first. The
    permutation comes from ``generator``, or else the library's generator (``sg.manual_seed``).

    >>> import scratchgrad as sg
    >>> train, val = random_split(range(10), [0.75, 0.25], generator=sg.Generator(0))
    >>> len(train), len(val)  # floor(7.5) = 7 and floor(2.5) = 2; the leftover goes to train
    (8, 2)
    >>> sorted(list(train) + list(val)) == list(range(10))
    True
    """
    check_generator(generator, "random_split")
    n = len(dataset)
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1")
        sizes = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(
                    f"random_split: length of split at index {i} is 0; that Subset is empty",
                    stacklevel=2,
                )
    else:
        if any(not isinstance(size, numbers.Integral) or size < 0 for size in lengths):
            raise ValueError(
                f"random_split: lengths must be non-negative ints or fractions summing to 1, "
                f"got {list(lengths)}"
            )
        sizes = [int(size) for size in lengths]
    if sum(sizes) != n:
        raise ValueError(
            f"random_split: lengths {list(lengths)} sum to {sum(sizes)}, "
            f"but the dataset has {n} samples"
        )
    order = random_source(generator).permutation(n).tolist()
    return [
        Subset(dataset, order[end - size : end])
        for end, size in zip(accumulate(sizes), sizes, strict=True)
    ]
