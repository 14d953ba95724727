"""DistributedSampler gives PyTorch's index lists for the same options, seed and epoch."""

import doctest
import itertools

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler as TorchSampler

import scratchgrad.distributed as dist
from scratchgrad.utils.data import DistributedSampler
from scratchgrad.utils.data import distributed as sampler_module


@pytest.mark.parametrize(
    "n, replicas, shuffle, drop_last",
    list(itertools.product([1, 2, 7, 10, 64, 1797], [1, 2, 3, 4], [True, False], [True, False])),
)
def test_index_lists_match_torch(n, replicas, shuffle, drop_last):
    for rank, seed, epoch in itertools.product(range(replicas), [0, 7], [0, 3]):
        options = dict(num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed)
        ours = DistributedSampler(range(n), drop_last=drop_last, **options)
        theirs = TorchSampler(range(n), drop_last=drop_last, **options)
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


@pytest.mark.parametrize("n, seed", [(0, 0), (1, 3), (300, 2**33 + 5), (5000, 123)])
def test_the_shuffle_is_torch_randperm(n, seed):
    want = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    assert sampler_module.torch_randperm(n, seed) == want


def test_shares_cover_the_dataset_once_per_epoch():
    shares = [list(DistributedSampler(range(11), num_replicas=3, rank=r)) for r in range(3)]
    assert sorted(sum(shares, [])) == sorted([*range(11), shares[0][0]])  # 12 slots for 11
    assert [len(s) for s in shares] == [4, 4, 4]


def test_defaults_come_from_the_process_group_and_bad_ranks_fail():
    dist.init_process_group("mpi")
    try:
        sampler = DistributedSampler(range(5))
        assert (sampler.num_replicas, sampler.rank) == (1, 0)
    finally:
        dist.destroy_process_group()
    with pytest.raises(
        ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"
    ):
        DistributedSampler(range(5), num_replicas=3, rank=3)


def test_doc_examples_run():
    assert doctest.testmod(sampler_module).failed == 0
