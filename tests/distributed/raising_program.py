"""Rank 1 fails while the others wait for it in an all_reduce: every rank must end.

``raise``: an uncaught exception; ``exit``: ``sys.exit(3)``, as a command line that catches the
error and returns a status does."""

import sys

import scratchgrad as sg
import scratchgrad.distributed as dist

dist.init_process_group("mpi")
if dist.get_rank() == 1:
    if sys.argv[1] == "raise":
        raise ValueError("rank 1 fails on purpose")
    sys.exit(3)
dist.all_reduce(sg.ones(3))
print("never reached")
