"""Rank 1 raises while the others wait for it in an all_reduce: every rank must end."""

import scratchgrad as sg
import scratchgrad.distributed as dist

dist.init_process_group("mpi")
if dist.get_rank() == 1:
    raise ValueError("rank 1 fails on purpose")
dist.all_reduce(sg.ones(3))
print("never reached")
