"""Run by test_distributed_ddp.py under ``mpiexec -n 3``: DistributedDataParallel over groups
from ``new_group``. Ranks 1 and 2 train over the group [1, 2] (its rank 0 is rank 1, whose
parameters and buffers they start from) as one process on their two batches, averaged over 2,
while rank 0 trains alone over the group [0]: if either took part in the other's collectives,
the averages would be wrong or the job would hang. Prints "ok" per rank."""

import sys

import numpy as np
from ddp_program import build, largest_difference

import scratchgrad as sg
import scratchgrad.distributed as dist
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.nn.parallel import DistributedDataParallel as DDP

STEPS, PER_RANK = 20, 6


def train_both(group, members: list[int], rank: int) -> float:
    """SGD steps with DDP over ``group`` on this rank's share and, beside it, one model on the
    batches of all ``members``; returns the largest relative difference of their parameters."""
    images, labels = sg.datasets.load_digits()
    images = images.double()
    order = np.random.default_rng(7)
    ddp = DDP(build("mlp", 100 + rank, sg.float64), process_group=group, bucket_cap_mb=0.001)
    single = build("mlp", 100 + members[0], sg.float64)  # the group's rank 0's weights
    optimizers = [sg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (ddp, single)]
    place = members.index(rank)
    for _ in range(STEPS):
        batch = order.choice(len(labels), PER_RANK * len(members), replace=False)
        mine = batch[place * PER_RANK : (place + 1) * PER_RANK]
        for opt in optimizers:
            opt.zero_grad()
        F.cross_entropy(ddp(images[mine]), labels[mine]).backward()
        F.cross_entropy(single(images[batch]), labels[batch]).backward()
        for opt in optimizers:
            opt.step()
    return largest_difference(ddp.module, single)


def check_buffers_and_unused_parameters(group, members: list[int], rank: int) -> None:
    """The buffers come from the group's rank 0; a parameter that only that process uses
    gets its gradient divided by the group's size."""
    norm = nn.BatchNorm1d(2)
    norm.running_mean.fill_(float(rank))
    DDP(norm, process_group=group)
    assert norm.running_mean.tolist() == [float(members[0])] * 2, norm.running_mean

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.first_only = nn.Linear(3, 2), nn.Linear(3, 1)

        def forward(self, x):
            out = self.body(x).sum()
            return out + self.first_only(x).sum() if rank == members[0] else out

    model = DDP(TwoHeads(), process_group=group, find_unused_parameters=True)
    model(sg.ones(2, 3)).backward()
    want = np.full((1, 3), 2.0 / len(members))
    np.testing.assert_allclose(model.module.first_only.weight.grad.numpy(), want)


def main() -> None:
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    assert dist.get_world_size() == 3
    pair, alone = dist.new_group([1, 2]), dist.new_group([0])
    group, members = (alone, [0]) if rank == 0 else (pair, [1, 2])
    if rank == 0:
        try:
            DDP(nn.Linear(2, 2), process_group=pair)
            raise AssertionError("DDP over a group this process is not in did not raise")
        except ValueError as error:
            assert "Invalid process group specified" in str(error), error
    check_buffers_and_unused_parameters(group, members, rank)
    worst = train_both(group, members, rank)
    print(f"rank {rank}: largest relative difference {worst:.2e}")
    assert worst <= 1e-12, worst
    dist.barrier()
    dist.destroy_process_group()
    print(f"ok {rank} of 3")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
