"""Run by test_distributed_ddp.py under ``mpiexec -n N``: DistributedDataParallel training equals
one process training on the concatenated batches; unused parameters; prints "ok" per rank."""

import sys

import numpy as np

import scratchgrad as sg
import scratchgrad.distributed as dist
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.nn.parallel import DistributedDataParallel as DDP

STEPS, PER_RANK = 50, 6


def build(kind: str, seed: int, dtype) -> nn.Module:
    sg.manual_seed(seed)
    if kind == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    else:  # the digits CNN without batch norm (its statistics are per process, as in PyTorch)
        model = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(8 * 4 * 4, 10),
        )  # fmt: skip
    return model.to(dtype)


def train_both(kind: str, dtype, rank: int, size: int) -> float:
    """50 SGD steps with DDP on this rank's share and, beside it, one model on the whole batch;
    every 5th step accumulates two micro-batches (the first under no_sync). Returns the largest
    relative difference between their parameters."""
    images, labels = sg.datasets.load_digits()
    images = images.to(dtype)
    order = np.random.default_rng(7)
    ddp = DDP(build(kind, seed=100 + rank, dtype=dtype), bucket_cap_mb=0.001)  # 1 KB buckets
    assert len(ddp._reducer.buckets) > 1
    single = build(kind, seed=100, dtype=dtype)  # rank 0's weights: DDP must broadcast them
    optimizers = [sg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (ddp, single)]
    for step in range(STEPS):
        batch = order.choice(len(labels), PER_RANK * size, replace=False)
        mine = batch[rank * PER_RANK : (rank + 1) * PER_RANK]
        for opt in optimizers:
            opt.zero_grad()
        if step % 5 == 4:
            halves = np.split(mine, 2)
            with ddp.no_sync():
                (F.cross_entropy(ddp(images[halves[0]]), labels[halves[0]]) / 2).backward()
            (F.cross_entropy(ddp(images[halves[1]]), labels[halves[1]]) / 2).backward()
        else:
            F.cross_entropy(ddp(images[mine]), labels[mine]).backward()
        F.cross_entropy(single(images[batch]), labels[batch]).backward()
        for opt in optimizers:
            opt.step()
    return largest_difference(ddp.module, single)


def largest_difference(model: nn.Module, reference: nn.Module) -> float:
    """The largest difference of two models' parameters, relative to each reference's largest
    entry (in float64)."""
    worst = 0.0
    for p, q in zip(model.parameters(), reference.parameters()):
        a, b = (t.detach().numpy().astype(np.float64) for t in (p, q))
        worst = max(worst, float(np.max(np.abs(a - b)) / np.max(np.abs(b))))
    return worst


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(3, 2)
        self.rank0_only = nn.Linear(3, 1)
        self.never = nn.Linear(3, 1)

    def forward(self, x, rank):
        out = self.body(x).sum()
        return out + self.rank0_only(x).sum() if rank == 0 else out


def check_unused_parameters(rank: int, size: int) -> None:
    model = DDP(TwoHeads(), find_unused_parameters=True)
    for _ in range(2):  # twice: the second reduction must work as the first
        model.zero_grad()
        model(sg.ones(2, 3), rank).backward()
        # d/dW of sum(W x + b) over 2 rows of ones is 2 everywhere; averaged over the processes
        np.testing.assert_allclose(model.module.body.weight.grad.numpy(), np.full((2, 3), 2.0))
        want = np.full((1, 3), 2.0 / size)
        np.testing.assert_allclose(model.module.rank0_only.weight.grad.numpy(), want, rtol=1e-6)
        assert model.module.never.weight.grad is None


def check_large_float16_gradients(size: int) -> None:
    """Each process's gradient is divided by the world size before the sum, as in PyTorch's
    reducer: 40000 on every process averages to 40000 (summing first overflowed to inf)."""
    model = DDP(nn.Linear(1, 1, bias=False).to(sg.float16))
    model(sg.full((1, 1), 40000.0, dtype=sg.float16)).sum().backward()
    got = model.module.weight.grad.item()
    assert abs(got - 40000.0) <= 40.0, (size, got)


def main() -> None:
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    check_unused_parameters(rank, size)
    check_large_float16_gradients(size)
    for kind, dtype, tolerance in [
        ("mlp", sg.float32, 1e-6),
        ("cnn", sg.float32, 1e-6),
        ("mlp", sg.float64, 1e-13),
    ]:
        worst = train_both(kind, dtype, rank, size)
        print(f"rank {rank}: {kind} {dtype}: largest relative difference {worst:.2e}")
        assert worst <= tolerance, (kind, dtype, worst)
    dist.destroy_process_group()
    print(f"ok {rank} of {size}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
