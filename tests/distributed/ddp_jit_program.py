"""Run by test_distributed_ddp.py under ``mpiexec -n N``: a DistributedDataParallel step under
``scratchgrad.jit`` (and a model under ``scratchgrad.compile``) trains as the same step run
eagerly, bit for bit on every rank, with batch norm's buffers broadcast, gradients clipped after
their averaging and accumulated under ``no_sync()`` outside the step; prints "ok" per rank."""

import numpy as np

import scratchgrad as sg
import scratchgrad.distributed as dist
from scratchgrad import nn
from scratchgrad.nn import functional as F
from scratchgrad.nn.parallel import DistributedDataParallel as DDP

STEPS, PER_RANK = 12, 8


def train(rank: int, make) -> list:
    """Losses and final parameters, buffers and momenta of 12 steps on this rank's batches;
    every 4th step accumulates two micro-batches, the first under ``no_sync()``."""
    sg.manual_seed(100 + rank)  # other weights per rank: DDP broadcasts rank 0's
    model = DDP(
        nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3)),
        bucket_cap_mb=0.0005,  # several buckets
    )
    opt = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    forward = make(model) if make is sg.compile else model

    def backward(x, y):
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        return loss

    def step(x, y):
        opt.zero_grad()
        loss = backward(x, y)
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)  # reads the averaged gradients
        opt.step()
        return loss

    accumulate = backward
    if make is sg.jit:
        step, accumulate = sg.jit(step), sg.jit(backward)
    data = np.random.default_rng(rank)
    found = []
    for i in range(STEPS):
        x = sg.tensor(data.standard_normal((PER_RANK, 6)), dtype=sg.float32)
        y = sg.tensor(data.integers(0, 3, PER_RANK))
        if i % 4 == 3:
            opt.zero_grad()
            with model.no_sync():
                accumulate(x[:4], y[:4])
            found.append(accumulate(x[4:], y[4:]).detach().numpy())
            opt.step()
        else:
            found.append(step(x, y).detach().numpy())
    state = [t.detach().numpy() for t in model.state_dict().values()]
    momenta = [s["momentum_buffer"].numpy() for s in opt.state.values()]
    return found + state + momenta


def main() -> None:
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    eager = train(rank, lambda fn: fn)
    for make in (sg.jit, sg.compile):
        ours = train(rank, make)
        for a, b in zip(ours, eager, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=make.__name__)
    # the weights agree across the processes (the gradients were averaged)
    weight = sg.tensor(eager[-4])
    gathered = [sg.zeros_like(weight) for _ in range(size)]
    dist.all_gather(gathered, weight)
    assert all(np.array_equal(g.numpy(), weight.numpy()) for g in gathered)
    print(f"ok {rank} of {size}", flush=True)
    dist.destroy_process_group()


main()
