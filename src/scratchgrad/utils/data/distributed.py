"""``DistributedSampler``: each process of a data-parallel job reads its own share of a dataset."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized

import numpy as np

from scratchgrad.utils.data.sampler import Sampler


class DistributedSampler(Sampler):
    """The indices of one process's share of ``dataset``, as ``torch.utils.data``'s sampler.

    Every ``num_replicas``-th index of one order of the whole dataset, starting at ``rank``: the
    order is shuffled with ``seed + epoch`` (call ``set_epoch`` at the start of each epoch) and
    padded with its own first indices to a multiple of ``num_replicas``, or, with
    ``drop_last=True``, cut to one. The shuffle draws the same permutation as
    ``torch.randperm`` with a generator seeded ``seed + epoch``, so the shares are PyTorch's,
    index for index. ``num_replicas`` and ``rank`` default to the process group's.

    >>> list(DistributedSampler(range(10), num_replicas=3, rank=0, shuffle=False))
    [0, 3, 6, 9]
    >>> list(DistributedSampler(range(10), num_replicas=3, rank=1, seed=4))
    [4, 7, 8, 0]
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        from scratchgrad import distributed as dist

        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas != 0:  # every process gets the same count: cut
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:  # repeat the order from its start until it fills total_size
            padding = self.total_size - n
            indices += (indices * math.ceil(padding / n))[:padding] if padding else []
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch``'s order from the next pass on (the same on every process)."""
        self.epoch = epoch


def torch_randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``.

    PyTorch's CPU generator is a 32-bit Mersenne Twister seeded with the low 32 bits of the seed
    (as NumPy's legacy ``RandomState``), and its ``randperm`` swaps element i with element
    ``i + draw % (n - i)``, one 32-bit draw per position (for n below 2**32 / 20).

    >>> torch_randperm(5, 0)
    [4, 0, 1, 3, 2]
    """
    if n >= 2**32 // 20:
        raise ValueError(f"DistributedSampler: a dataset of {n} samples is too large to shuffle")
    draws = np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2**32, max(n - 1, 0), np.uint64)
    order = list(range(n))
    for i, draw in enumerate(draws.tolist()):  # sequential swaps: a loop, not an array call
        j = i + draw % (n - i)
        order[i], order[j] = order[j], order[i]
    return order
