"""Process groups: which processes train together, over which MPI communicator.

The default group holds every process the launcher started (``torch.distributed``'s default
group); ``init_process_group`` makes it and ``destroy_process_group`` takes it down.
``new_group(ranks)`` makes a group of some of them (an MPI communicator split from the default
one), which the collectives take as ``group=``.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

# What each MPI launcher tells its processes: (rank, world size, rank on this machine).
_LAUNCHER_VARIABLES = (
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),  # MPICH's and Intel MPI's mpiexec (Hydra)
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),  # Open MPI
)


def _export_launcher_variables() -> None:
    """Under ``mpiexec``, set ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` as ``torchrun`` does,
    so scripts that read them before ``init_process_group`` (nanoGPT does) see the launch."""
    if "RANK" in os.environ:
        return
    for rank, size, local_rank in _LAUNCHER_VARIABLES:
        if rank in os.environ and size in os.environ:
            os.environ["RANK"], os.environ["WORLD_SIZE"] = os.environ[rank], os.environ[size]
            os.environ.setdefault("LOCAL_RANK", os.environ.get(local_rank, os.environ[rank]))
            return


_export_launcher_variables()


@dataclass
class ProcessGroup:
    """The processes of a group and the MPI communicator that links them."""

    comm: Any  # an mpi4py communicator, private to scratchgrad (a duplicate of COMM_WORLD)
    rank: int
    size: int
    # another duplicate, for the all-gathers that compare the processes' calls before the data
    # moves: MPI matches collectives by the order each process starts them, and a process may
    # start a transfer before or after the next call's comparison
    calls_comm: Any
    ranks: tuple[int, ...]  # the default group's rank of each process, in this group's order
    # the collectives called (async_op) whose transfer has not started, in the order called
    unstarted: list = field(default_factory=list)


class _World(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:  # noqa: N802 (PyTorch's name)
        """The default group (None before ``init_process_group``)."""
        return _default


class GroupMember(metaclass=_World):
    """As ``torch.distributed.GroupMember``: ``WORLD`` is the default group,
    ``NON_GROUP_MEMBER`` what ``new_group`` gives a process outside the new group (PyTorch's
    value, -100)."""

    NON_GROUP_MEMBER = -100


class group(metaclass=_World):  # noqa: N801 (PyTorch's name)
    """As ``torch.distributed.group``: ``group.WORLD`` is the default group."""


def _outside(group: Any) -> bool:
    """Whether ``group`` is what ``new_group`` gave a process outside it."""
    return type(group) is int and group == GroupMember.NON_GROUP_MEMBER


_default: ProcessGroup | None = None
_subgroups: list[ProcessGroup] = []  # the groups new_group made, until they are destroyed
_previous_excepthook = None


def is_mpi_available() -> bool:
    """Whether mpi4py (and so the "mpi" backend) can be imported."""
    return importlib.util.find_spec("mpi4py") is not None


def is_available() -> bool:
    """Whether ``scratchgrad.distributed`` can run: True when mpi4py is installed."""
    return is_mpi_available()


def is_initialized() -> bool:
    """Whether ``init_process_group`` has been called (and not undone)."""
    return _default is not None


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Join the processes the launcher started into the default group, as PyTorch's.

    ``backend`` is ``"mpi"`` (or None, which means it); ``init_method`` is None or
    ``"env://"``. The rank and the world size come from MPI: start the processes with
    ``mpiexec -n N``. ``rank``/``world_size`` (and the ``RANK``/``WORLD_SIZE`` variables that
    torchrun sets), when given, must agree with MPI's. From then on, an exception that no code
    catches in any process aborts every process, and so does a process that exits with a
    non-zero status before ``destroy_process_group``: none waits forever for a dead one.
    ``timeout``, ``store``, ``group_name``, ``pg_options`` and ``device_id`` are accepted for
    PyTorch's signature and not used.

    >>> import scratchgrad.distributed as dist
    >>> dist.init_process_group(backend="mpi")
    >>> dist.get_rank() < dist.get_world_size()
    True
    >>> dist.destroy_process_group()
    """
    global _default, _previous_excepthook
    if _default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    _check_backend(backend)
    if init_method not in (None, "env://"):
        raise ValueError(
            f"init_process_group: init_method {init_method!r} is not supported: the processes "
            "find each other through MPI; pass None or 'env://' and launch with mpiexec -n N"
        )
    world = _mpi().COMM_WORLD
    _check_agrees("rank", rank, os.environ.get("RANK"), world.Get_rank(), world.Get_size())
    _check_agrees("world_size", world_size, os.environ.get("WORLD_SIZE"), world.Get_size(), 0)
    comm = world.Dup()  # a private communicator: no clash with the user's own MPI calls
    ranks = tuple(range(comm.Get_size()))
    _default = ProcessGroup(comm, comm.Get_rank(), comm.Get_size(), world.Dup(), ranks)
    _previous_excepthook, sys.excepthook = sys.excepthook, _abort_every_process


def destroy_process_group(group: Any = None) -> None:
    """Leave the default group and every group made from it (every process calls it; a new
    one can be made afterwards), or only ``group``, one that ``new_group`` made."""
    global _default
    current = default_group(group)
    doomed = [current] if current is not _default else [*_subgroups, current]
    if current is _default:
        _default = None
        sys.excepthook = _previous_excepthook
    for pg in doomed:
        pg.comm.Free()
        pg.calls_comm.Free()
    _subgroups[:] = [pg for pg in _subgroups if all(pg is not d for d in doomed)]


def new_group(
    ranks: Any = None,
    timeout: timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id: Any = None,
    sort_ranks: bool = True,
) -> ProcessGroup | int:
    """A group of the processes of the default group whose ranks are ``ranks`` (all if None),
    as PyTorch's: every process of the default group calls it, with the same ``ranks``, in
    the same order of groups. A member gets the group (its rank in it: its place in
    ``sorted(ranks)``, or in ``ranks`` if not ``sort_ranks``); a process outside it gets
    ``GroupMember.NON_GROUP_MEMBER``, with which the collectives and ``isend``/``irecv`` skip
    it (a warning; ``recv`` gives -1, ``send`` raises) and ``get_rank``/``get_world_size``
    give -1. ``src``/``dst`` stay ranks of the default group.
    ``timeout``, ``pg_options``, ``group_desc`` and ``device_id`` are not used.

    >>> import scratchgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> group = dist.new_group([0])
    >>> dist.get_world_size(group) if dist.get_rank() == 0 else None
    1
    >>> dist.destroy_process_group()
    """
    default = default_group()
    _check_backend(backend, "new_group")
    if use_local_synchronization:
        raise ValueError("MPI backend doesn't support use_local_synchronization=True")
    try:
        ranks = _checked_ranks(ranks, sort_ranks, default.size)
    except ValueError:
        _every_place(default, None)  # the others must not wait for this process
        raise
    # MPI would split the processes by what each one passed: compare first
    every = _every_place(default, ranks)
    refused = np.flatnonzero(every[:, 0] == _REFUSED).tolist()
    if refused:
        raise RuntimeError(f"new_group: refused by rank(s) {refused} (see their error)")
    if (every != every[default.rank]).any():
        calls = "; ".join(f"rank {r}: {_members(row)}" for r, row in enumerate(every))
        raise RuntimeError(f"new_group: the processes passed different ranks ({calls})")
    member = default.rank in ranks
    color, key = (0, ranks.index(default.rank)) if member else (_mpi().UNDEFINED, 0)
    comm, calls_comm = default.comm.Split(color, key), default.calls_comm.Split(color, key)
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    group = ProcessGroup(comm, comm.Get_rank(), comm.Get_size(), calls_comm, ranks)
    _subgroups.append(group)
    return group


def _checked_ranks(ranks: Any, sort_ranks: bool, world_size: int) -> tuple[int, ...]:
    """``ranks`` in the group's order, with PyTorch's errors."""
    if ranks is None:
        return tuple(range(world_size))
    ranks = sorted(ranks) if sort_ranks else list(ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    if len(ranks) > world_size:
        raise ValueError(
            "the new group's world size should be less or equal to the world size set by "
            "init_process_group"
        )
    for rank in ranks:
        if rank < 0 or rank >= world_size:
            raise ValueError(
                f"Rank {rank} is out of range. Valid ranks are 0 to {world_size - 1} "
                f"(world_size={world_size})"
            )
    return tuple(int(rank) for rank in ranks)


_REFUSED = -2  # a process's places when its ranks were refused


def _every_place(default: ProcessGroup, ranks: tuple[int, ...] | None) -> np.ndarray:
    """Each process's place in the new group by default-group rank (-1: outside), a row per
    process (all ``_REFUSED`` for one that refused its ``ranks``)."""
    place = np.full(default.size, -1 if ranks is not None else _REFUSED, np.int64)
    if ranks is not None:
        place[list(ranks)] = np.arange(len(ranks))
    every = np.empty((default.size, default.size), np.int64)
    default.calls_comm.Iallgather(place, every).Wait()  # (non-blocking, as the collectives')
    return every


def _members(place: np.ndarray) -> list[int]:
    """The ranks of a group, in its order, from each process's place in it (-1: outside)."""
    inside = np.flatnonzero(place >= 0)
    return inside[np.argsort(place[inside])].tolist()


def get_rank(group: Any = None) -> int:
    """This process's number in the group, from 0 to ``get_world_size() - 1`` (-1 outside a
    group from ``new_group``)."""
    return -1 if _outside(group) else default_group(group).rank


def get_world_size(group: Any = None) -> int:
    """How many processes the group holds (-1 outside a group from ``new_group``)."""
    return -1 if _outside(group) else default_group(group).size


def get_process_group_ranks(group: Any) -> list[int]:
    """The default group's ranks of the group's processes, in the group's order."""
    return list(default_group(group).ranks)


def get_group_rank(group: Any, global_rank: int) -> int:
    """The rank in ``group`` of the process of rank ``global_rank`` in the default group."""
    ranks = default_group(group).ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {list(ranks)}")
    return ranks.index(global_rank)


def get_global_rank(group: Any, group_rank: int) -> int:
    """The default group's rank of the process of rank ``group_rank`` in ``group``."""
    ranks = default_group(group).ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {list(ranks)}")
    return ranks[group_rank]


def get_backend(group: Any = None) -> str:
    """The group's backend: always ``"mpi"``."""
    default_group(group)
    return "mpi"


def default_group(group: Any = None) -> ProcessGroup:
    """``group``: the default group if None, or one that ``new_group`` made; a clear error
    when there is none, or for anything else."""
    if _default is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    if group is None or group is _default:
        return _default
    if any(group is pg for pg in _subgroups):
        return group
    if _outside(group):
        raise ValueError(
            "Invalid process group specified: this process is not in the group (new_group "
            "gave it GroupMember.NON_GROUP_MEMBER)"
        )
    raise ValueError(
        f"{group!r} is not a process group of this job: pass None (the default group) or a "
        "group that new_group made (and that was not destroyed)"
    )


@functools.cache
def _mpi():
    """mpi4py's MPI module, imported (and MPI started) on first use."""
    try:
        import mpi4py
    except ImportError as error:
        raise ImportError(
            "scratchgrad.distributed needs mpi4py and an MPI library: "
            "pip install 'scratchgrad[distributed]'"
        ) from error
    if "mpi4py.MPI" not in sys.modules:  # else the user's import has settled it
        mpi4py.rc.finalize = False
        atexit.register(_finalize_unless_in_a_group)
    from mpi4py import MPI

    return MPI


def _finalize_unless_in_a_group() -> None:
    """At exit, finish MPI only if this process left its group (``destroy_process_group``).

    MPI_Finalize waits for the other processes, so a process that leaves early (``sys.exit``,
    or an error that some code caught and turned into an exit status) would hang the job there.
    Without it, the process simply ends, and the launcher ends the others when its exit status
    is not 0.
    """
    MPI = _mpi()
    if _default is None and not MPI.Is_finalized():
        MPI.Finalize()


def _check_backend(backend: str | None, name: str = "init_process_group") -> None:
    if backend is None or str(backend).lower() == "mpi":
        return
    raise ValueError(
        f"{name}: backend {backend!r} is not available in scratchgrad; the only "
        "backend is 'mpi' (pass backend='mpi' and launch with mpiexec -n N)"
    )


def _check_agrees(name: str, given: int, from_env: str | None, from_mpi: int, size: int) -> None:
    """A rank or world size given by the caller or the environment must be the one MPI sees."""
    for source, value in ((f"{name}=", given), (name.upper() + "=", from_env)):
        if value is None or int(value) == -1 or int(value) == from_mpi:
            continue
        hint = (
            "torchrun is not supported: start the processes with mpiexec -n N"
            if source.isupper()
            else "leave it out: MPI tells each process its place"
        )
        raise RuntimeError(
            f"init_process_group: {source}{value} but MPI started this process as "
            f"{name} {from_mpi}{f' of {size}' if size else ''}; {hint}"
        )


def _abort_every_process(kind, value, tb) -> None:
    """An uncaught exception: print it, then end every process of the job (MPI_Abort)."""
    traceback.print_exception(kind, value, tb)
    sys.stderr.flush()
    if _default is not None:
        _default.comm.Abort(1)
