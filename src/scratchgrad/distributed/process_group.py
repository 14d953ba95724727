"""The default process group: which processes train together, over which MPI communicator.

There is one group, every process the launcher started (``torch.distributed``'s default group);
``init_process_group`` makes it and ``destroy_process_group`` takes it down.
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
    # the collectives called (async_op) whose transfer has not started, in the order called
    unstarted: list = field(default_factory=list)


_default: ProcessGroup | None = None
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
    _default = ProcessGroup(comm, comm.Get_rank(), comm.Get_size(), world.Dup())
    _previous_excepthook, sys.excepthook = sys.excepthook, _abort_every_process


def destroy_process_group(group: Any = None) -> None:
    """Leave the default group (every process calls it); a new one can be made afterwards."""
    global _default
    current = default_group(group)
    _default = None
    sys.excepthook = _previous_excepthook
    current.comm.Free()
    current.calls_comm.Free()


def get_rank(group: Any = None) -> int:
    """This process's number in the group, from 0 to ``get_world_size() - 1``."""
    return default_group(group).rank


def get_world_size(group: Any = None) -> int:
    """How many processes the group holds."""
    return default_group(group).size


def get_backend(group: Any = None) -> str:
    """The group's backend: always ``"mpi"``."""
    default_group(group)
    return "mpi"


def default_group(group: Any = None) -> ProcessGroup:
    """The default group, or a clear error when there is none (or another group is asked for)."""
    if _default is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    if group is not None and group is not _default:
        raise ValueError("scratchgrad.distributed has only the default group; pass group=None")
    return _default


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


def _check_backend(backend: str | None) -> None:
    if backend is None or str(backend).lower() == "mpi":
        return
    raise ValueError(
        f"init_process_group: backend {backend!r} is not available in scratchgrad; the only "
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
