"""``scratchgrad.distributed``: processes that train one model together, as ``torch.distributed``.

The transport is MPI, through ``mpi4py`` (``pip install 'scratchgrad[distributed]'`` brings
both mpi4py and an MPI library, MPICH, from the package registry). Start N processes with the
MPI launcher and call ``init_process_group("mpi")`` in each::

    mpiexec -n 2 python train.py

A process started without a launcher is a group of one, so the same script also runs alone.
Collectives change tensors in place, as PyTorch's do:

>>> import scratchgrad as sg
>>> import scratchgrad.distributed as dist
>>> dist.init_process_group("mpi")
>>> x = sg.tensor([1.0, 2.0]) * (dist.get_rank() + 1)
>>> dist.all_reduce(x, op=dist.ReduceOp.SUM)  # x is now the sum over every process
>>> x.tolist() if dist.get_world_size() == 1 else None
[1.0, 2.0]
>>> dist.destroy_process_group()
"""

from scratchgrad.distributed.collectives import (
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from scratchgrad.distributed.point_to_point import irecv, isend, recv, send
from scratchgrad.distributed.process_group import (
    GroupMember,
    ProcessGroup,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    is_mpi_available,
    new_group,
)

__all__ = [
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "gather",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "irecv",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]
