"""Each rank wraps another model (the parameters' broadcast skipped with ``init_sync=False``):
every rank must refuse it at construction, before any gradient is mixed."""

import scratchgrad.distributed as dist
from scratchgrad import nn

dist.init_process_group("mpi")
rank = dist.get_rank()
model = nn.Linear(4, 3) if rank == 0 else nn.Linear(3, 4)  # 15 and 16 numbers
try:
    nn.parallel.DistributedDataParallel(model, init_sync=False)
    print(f"rank {rank}: wrapped")
except RuntimeError as error:
    print(f"rank {rank}: refused: {error}")
dist.destroy_process_group()
