"""Run by test_distributed_fuzz.py under ``mpiexec -n N`` with a seed: random small models
(shared, frozen, unused and rank-dependent parameters, buffers, batch norm) trained with
DistributedDataParallel on random per-rank batches, with no_sync() accumulation on some steps.
Each rank also trains one plain model on every rank's batches (the loss averaged over the ranks,
as DDP averages the gradients): the parameters must agree within 1e-10 (float64), and every
rank's must equal every other's bit for bit. Arguments: the first seed, the number of cases,
and a folder where each rank writes rank<r>.json (cases run, failures)."""

import contextlib
import json
import sys
from pathlib import Path

import numpy as np

import scratchgrad as sg
import scratchgrad.distributed as dist
from scratchgrad import nn
from scratchgrad.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH, IN, HIDDEN = 4, 3, 4, 5


class Config:
    """One random case; every rank draws the same one from the seed."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        flags = rng.integers(2, size=11).astype(bool).tolist()
        self.seed = seed
        self.shared, self.frozen, self.spare, self.branch, self.norm = flags[:5]
        self.accumulate, self.set_to_none, self.broadcast_buffers = flags[5:8]
        self.find_unused = self.spare or self.branch or flags[8]
        self.bucket_cap_mb = 0.0005 if flags[9] else None  # ~500 bytes: a bucket per layer
        self.norm_in_eval = flags[10]

    def __repr__(self) -> str:
        return f"seed {self.seed}: {vars(self)}"


class FuzzNet(nn.Module):
    def __init__(self, config: Config, init_seed: int) -> None:
        super().__init__()
        sg.manual_seed(init_seed)  # each rank starts elsewhere: DDP must broadcast rank 0's
        self.config = config
        self.first, self.hidden, self.head = (
            nn.Linear(IN, HIDDEN),
            nn.Linear(HIDDEN, HIDDEN),
            nn.Linear(HIDDEN, 1),
        )
        self.norm = nn.BatchNorm1d(HIDDEN) if config.norm else None
        self.branch = nn.Linear(HIDDEN, 1) if config.branch else None
        self.spare = nn.Linear(HIDDEN, 1) if config.spare else None
        self.register_buffer("offset", sg.full((HIDDEN,), float(init_seed % 7)))
        if config.frozen:
            self.first.bias.requires_grad_(False)
        self.to(sg.float64)

    def forward(self, x: sg.Tensor, use_branch: bool) -> sg.Tensor:
        h = (self.first(x) + 0.1 * self.offset).tanh()
        h = self.hidden(h).tanh()
        if self.config.shared:  # the same parameters twice in one graph
            h = self.hidden(h).tanh()
        if self.norm is not None:
            h = self.norm(h)
        out = self.head(h)
        return out + self.branch(h) if use_branch else out


def batch(seed: int, step: int, micro: int, rank: int) -> tuple[sg.Tensor, sg.Tensor]:
    rng = np.random.default_rng([seed, step, micro, rank])
    return sg.tensor(rng.normal(size=(BATCH, IN))), sg.tensor(rng.normal(size=(BATCH, 1)))


def uses_branch(config: Config, step: int, micro: int, rank: int) -> bool:
    """The branch is used on some ranks, in some micro-batches (a rank-dependent graph)."""
    return config.branch and (rank + step + 2 * micro + config.seed) % 3 == 0


def loss_of(model, config: Config, step: int, micro: int, rank: int) -> sg.Tensor:
    x, y = batch(config.seed, step, micro, rank)
    return ((model(x, uses_branch(config, step, micro, rank)) - y) ** 2).mean()


def train(config: Config, rank: int, size: int) -> list[str]:
    ddp = DDP(
        FuzzNet(config, init_seed=config.seed + rank),
        broadcast_buffers=config.broadcast_buffers,
        find_unused_parameters=config.find_unused,
        bucket_cap_mb=config.bucket_cap_mb,
    )
    single = FuzzNet(config, init_seed=config.seed)  # rank 0's start
    if config.norm and config.norm_in_eval:
        ddp.eval()
        single.eval()
    optimizers = [sg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (ddp, single)]
    for step in range(STEPS):
        micros = 2 if config.accumulate and step % 2 == 1 else 1
        for opt in optimizers:
            opt.zero_grad(set_to_none=config.set_to_none)
        for micro in range(micros):
            last = micro == micros - 1
            with contextlib.nullcontext() if last else ddp.no_sync():
                (loss_of(ddp, config, step, micro, rank) / micros).backward()
        every = [loss_of(single, config, step, m, r) for m in range(micros) for r in range(size)]
        (sum(every) / (micros * size)).backward()  # DDP averages the ranks' gradients
        for opt in optimizers:
            opt.step()
    return compare(config, ddp, single, rank, size)


def compare(config: Config, ddp: DDP, single: nn.Module, rank: int, size: int) -> list[str]:
    """The parameters and buffers against ``single``'s and between the ranks. In training mode,
    batch norm's running statistics are each process's own (as in PyTorch without
    SyncBatchNorm), so they are left out; its gradients still average to one process's."""
    failures = []
    statistics = ("norm.running_mean", "norm.running_var", "norm.num_batches_tracked")
    left_out = statistics if config.norm and not config.norm_in_eval else ()
    pairs = zip(ddp.module.state_dict().items(), single.state_dict().values())
    states = {name: (mine, want) for (name, mine), want in pairs if name not in left_out}
    for name, (mine, want) in states.items():
        difference = np.max(np.abs(mine.numpy() - want.numpy()), initial=0.0)
        if not difference <= 1e-10:
            failures.append(f"{config}: rank {rank}: {name} differs by {difference:.3g}")
    flat = sg.cat([mine.reshape(-1).to(sg.float64) for mine, _ in states.values()])
    everyone = [sg.zeros_like(flat) for _ in range(size)]
    dist.all_gather(everyone, flat)
    if any(not np.array_equal(t.numpy(), flat.numpy()) for t in everyone):
        failures.append(f"{config}: rank {rank}: the ranks' parameters are not bit-identical")
    return failures


def main() -> None:
    first_seed, count = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    failures = []
    for seed in range(first_seed, first_seed + count):
        config = Config(seed)
        try:
            failures += train(config, rank, size)
        except Exception as error:  # reported, not raised: the other cases still run
            failures.append(f"{config}: rank {rank}: {type(error).__name__}: {error}")
    dist.barrier()
    dist.destroy_process_group()
    report = {"rank": rank, "size": size, "ran": count, "failures": failures[:20]}
    Path(sys.argv[3], f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
