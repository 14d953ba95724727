"""Samplers: the order in which a ``DataLoader`` visits a map-style dataset, as
``torch.utils.data``'s. A sampler yields indices; a ``BatchSampler`` groups them into batches.

>>> import scratchgrad as sg
>>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
[[0, 1], [2, 3], [4]]
>>> sorted(RandomSampler(range(5), generator=sg.Generator(0)))
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any

import numpy as np

from scratchgrad import backend
from scratchgrad.backend import Generator
from scratchgrad.creation import from_numpy


def check_generator(generator: Any, owner: str) -> None:
    """Raise a TypeError unless ``generator`` is None or a ``scratchgrad.Generator`` (an int
    seed, or a NumPy or torch generator, would otherwise fail much later, or not at all)."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(
            f"{owner}: generator must be a scratchgrad.Generator or None, "
            f"but got {type(generator).__name__}"
        )


def random_source(generator: Generator | None) -> np.random.Generator:
    """The NumPy generator to draw from: ``generator``'s, or the library's (``manual_seed``)."""
    return (generator or backend.default_generator).rng


class Sampler:
    """The base of samplers: an iterable over dataset indices (usually also sized).

    >>> class Evens(Sampler):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter(range(0, self.n, 2))
    ...     def __len__(self):
    ...         return (self.n + 1) // 2
    >>> list(Evens(5))
    [0, 2, 4]
    """

    def __init__(self, data_source: Sized | None = None) -> None:
        """``data_source`` is accepted and unused, as in PyTorch (samplers written for older
        versions pass it to ``super().__init__``)."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``, in order.

    >>> list(SequentialSampler("abc"))
    [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices: a fresh permutation at every ``iter()``, or with
    ``replacement=True`` ``num_samples`` independent draws. Without replacement and with
    ``num_samples`` above the dataset's length, whole permutations follow one another (the
    last one cut short), as PyTorch does.

    >>> import scratchgrad as sg
    >>> sampler = RandomSampler(range(4), num_samples=6, generator=sg.Generator(0))
    >>> order = list(sampler)
    >>> len(order), sorted(order[:4])
    (6, [0, 1, 2, 3])
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        check_generator(generator, "RandomSampler")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        # Read at every use, as PyTorch does: the dataset may change size between epochs.
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # Drawn now, not at the first next(): each iter() is one epoch's draw.
        n, rng = len(self.data_source), random_source(self.generator)
        if n == 0:
            raise RuntimeError(
                f"RandomSampler: cannot draw {self.num_samples} samples from an empty data source"
            )
        if self.replacement:
            order = rng.integers(0, n, size=self.num_samples)
        else:
            full, rest = divmod(self.num_samples, n)
            order = np.concatenate(
                [rng.permutation(n) for _ in range(full)] + [rng.permutation(n)[:rest]]
            )
        return iter(order.tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a fresh random order at every ``iter()``.

    >>> import scratchgrad as sg
    >>> sorted(SubsetRandomSampler([7, 3, 5], generator=sg.Generator(0)))
    [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        check_generator(generator, "SubsetRandomSampler")
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        order = random_source(self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (which need
    not sum to 1), with replacement by default.

    >>> import scratchgrad as sg
    >>> draws = list(WeightedRandomSampler([0.0, 1.0, 3.0], 8, generator=sg.Generator(0)))
    >>> len(draws), 0 in draws
    (8, False)
    """

    def __init__(
        self,
        weights: Sequence[float] | Any,
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        check_generator(generator, "WeightedRandomSampler")
        weights = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, float)
        if weights.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {weights.shape}"
            )
        if not (np.isfinite(weights).all() and (weights >= 0).all() and weights.sum() > 0):
            raise ValueError(
                "WeightedRandomSampler: weights must be finite, non-negative, with a positive sum"
            )
        if not replacement and num_samples > np.count_nonzero(weights):
            raise ValueError(
                f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                f"from {np.count_nonzero(weights)} with a non-zero weight"
            )
        self.weights = from_numpy(weights)  # a float64 tensor, as PyTorch's
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rng = random_source(self.generator)
        weights = self.weights.numpy()
        probabilities = weights / weights.sum()
        draws = rng.choice(len(probabilities), self.num_samples, self.replacement, probabilities)
        return iter(draws.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter,
    unless ``drop_last``).

    >>> list(BatchSampler(range(7), batch_size=3, drop_last=True))
    [[0, 1, 2], [3, 4, 5]]
    """

    def __init__(self, sampler: Iterable[Any], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[Any]]:
        # iter(sampler) now, so that a random sampler draws its order at iter(), not later.
        return self._batches(iter(self.sampler))

    def _batches(self, indices: Iterator[Any]) -> Iterator[list[Any]]:
        while batch := list(itertools.islice(indices, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
