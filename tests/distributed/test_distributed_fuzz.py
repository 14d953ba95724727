"""Fuzzing data-parallel training for silent wrong results: random collectives (every ReduceOp,
dtype, 0-d/empty/non-contiguous tensors, roots, async handles waited in different orders, calls
that differ between the ranks) and random DDP models (fuzz_collectives_program.py and
fuzz_ddp_program.py, each one launch of many seeded cases under mpiexec, checked inside against
NumPy or one plain process), and DistributedSampler against PyTorch's, index for index."""

import json

import pytest
import torch.utils.data
from hypothesis import given, settings
from hypothesis import strategies as st
from mpirun import run_mpi

from scratchgrad.utils.data import DistributedSampler


def run_cases(program: str, nproc: int, first_seed: int, count: int, folder) -> list[dict]:
    """Launch ``program`` on ``nproc`` processes; each rank's report (cases run, failures)."""
    done = run_mpi(nproc, program, str(first_seed), str(count), str(folder), timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return [json.loads((folder / f"rank{r}.json").read_text()) for r in range(nproc)]


@pytest.mark.parametrize(("nproc", "first_seed"), [(2, 0), (3, 1000)])
def test_random_collectives_equal_numpy_on_every_rank(nproc, first_seed, tmp_path):
    reports = run_cases("fuzz_collectives_program.py", nproc, first_seed, 300, tmp_path)
    for report in reports:
        assert report["failures"] == []
        assert sum(report["ran"].values()) == 300
        assert min(report["ran"].values()) >= 10, report["ran"]  # every collective was drawn


@pytest.mark.parametrize(("nproc", "first_seed", "count"), [(2, 0, 40), (3, 100, 25)])
def test_random_ddp_models_train_as_one_process(nproc, first_seed, count, tmp_path):
    reports = run_cases("fuzz_ddp_program.py", nproc, first_seed, count, tmp_path)
    for report in reports:
        assert report["failures"] == []
        assert report["ran"] == count


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 60),
    num_replicas=st.integers(1, 5),
    data=st.data(),
    shuffle=st.booleans(),
    seed=st.integers(-(2**40), 2**40),
    drop_last=st.booleans(),
    epoch=st.integers(0, 5),
)
def test_distributed_sampler_equals_pytorchs(
    size, num_replicas, data, shuffle, seed, drop_last, epoch
):
    dataset = list(range(size))
    shares = []
    for rank in range(num_replicas):
        arguments = dict(num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed)
        ours = DistributedSampler(dataset, drop_last=drop_last, **arguments)
        theirs = torch.utils.data.DistributedSampler(dataset, drop_last=drop_last, **arguments)
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        shares.append(list(ours))
    # together the ranks read every sample (but what drop_last cuts), each share once per pass
    if not drop_last and size:
        assert set(sum(shares, [])) == set(dataset)
    bad_rank = data.draw(st.sampled_from([-1, num_replicas]))
    with pytest.raises(ValueError, match=f"Invalid rank {bad_rank}"):
        DistributedSampler(dataset, num_replicas=num_replicas, rank=bad_rank)
