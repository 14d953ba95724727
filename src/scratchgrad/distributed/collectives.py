"""Collectives on tensors, in place, as ``torch.distributed``'s: each is one MPI call.

A reduction runs in the tensor's own dtype where MPI has it (bfloat16 goes through float32);
other collectives move the bytes unchanged, so any dtype works. With ``async_op=True`` a call
starts MPI's non-blocking version and returns a ``Work`` whose ``wait()`` finishes it.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from scratchgrad import backend
from scratchgrad.autograd.graph import increment_version
from scratchgrad.distributed.process_group import _mpi, default_group
from scratchgrad.tensor import Tensor


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and the other reductions combine the processes' tensors."""

    SUM = "SUM"
    AVG = "AVG"  # floating-point tensors only: the sum divided by the world size
    PRODUCT = "PRODUCT"
    MIN = "MIN"
    MAX = "MAX"
    BAND = "BAND"
    BOR = "BOR"
    BXOR = "BXOR"


# NOTE: a bool tensor reduces logically, as PyTorch's NCCL backend does (SUM is OR, PRODUCT AND).
_BOOL_OPS = {"SUM": "LOR", "MAX": "LOR", "BOR": "LOR", "PRODUCT": "LAND", "MIN": "LAND"}
_BOOL_OPS |= {"BAND": "LAND", "BXOR": "LXOR"}
_MPI_OPS = {"SUM": "SUM", "AVG": "SUM", "PRODUCT": "PROD", "MIN": "MIN", "MAX": "MAX"}
_MPI_OPS |= {"BAND": "BAND", "BOR": "BOR", "BXOR": "BXOR"}


class Work:
    """The handle of a collective started with ``async_op=True``: ``wait()`` blocks until the
    tensors hold the result."""

    def __init__(self, request: Any, finish: Callable[[], None]) -> None:
        self._request, self._finish = request, finish

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until the collective is done (a RuntimeError after ``timeout``, if given)."""
        if self._finish is None:
            return True
        if timeout is None:
            self._request.Wait()
        else:
            deadline = time.monotonic() + timeout.total_seconds()
            while not self._request.Test():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Work.wait: the collective did not finish in {timeout}")
                time.sleep(1e-4)
        finish, self._finish = self._finish, None
        finish()
        return True

    def is_completed(self) -> bool:
        return self._finish is None or bool(self._request.Test())


def all_reduce(
    tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Combine ``tensor`` over every process with ``op``; each process gets the result in place.

    >>> import scratchgrad as sg
    >>> import scratchgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> x = sg.tensor([1, 2, 3])
    >>> dist.all_reduce(x, op=dist.ReduceOp.MAX)
    >>> x.tolist() if dist.get_world_size() == 1 else None
    [1, 2, 3]
    >>> dist.destroy_process_group()
    """
    pg = default_group(group)
    wire, mpi_op, finish = _reduction("all_reduce", tensor, op, pg.size)
    MPI = _mpi()
    if async_op:
        return Work(pg.comm.Iallreduce(MPI.IN_PLACE, wire, mpi_op), finish)
    pg.comm.Allreduce(MPI.IN_PLACE, wire, mpi_op)
    finish()
    return None


def reduce(
    tensor: Tensor,
    dst: int = 0,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Combine ``tensor`` over every process; only process ``dst`` gets the result, in place."""
    pg = default_group(group)
    _check_rank("reduce", "dst", dst, pg.size)
    wire, mpi_op, finish = _reduction("reduce", tensor, op, pg.size)
    MPI = _mpi()
    is_root = pg.rank == dst
    send, receive = (MPI.IN_PLACE, wire) if is_root else (wire, None)
    if not is_root:
        finish = _nothing  # the other processes' tensors stay as they were
    if async_op:
        return Work(pg.comm.Ireduce(send, receive, mpi_op, root=dst), finish)
    pg.comm.Reduce(send, receive, mpi_op, root=dst)
    finish()
    return None


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Combine ``input`` (the world size's blocks of ``output``'s size, one after the other)
    over every process; process i gets the combined block i in ``output``."""
    pg = default_group(group)
    _check_sizes("reduce_scatter_tensor", output, input, pg.size)
    wire, mpi_op, _ = _reduction("reduce_scatter_tensor", input, op, pg.size)
    received, _, finish = _reduction("reduce_scatter_tensor", output, op, pg.size, copy_in=False)
    if async_op:
        return Work(pg.comm.Ireduce_scatter_block(wire, received, mpi_op), finish)
    pg.comm.Reduce_scatter_block(wire, received, mpi_op)
    finish()
    return None


def reduce_scatter(
    output: Tensor,
    input_list: Sequence[Tensor],
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Process i gets, in ``output``, ``input_list[i]`` combined over every process."""
    pg = default_group(group)
    _check_list("reduce_scatter", "input_list", input_list, output, pg.size)
    joined = Tensor._make(np.concatenate([t.array.reshape(-1) for t in input_list]))
    return reduce_scatter_tensor(output, joined, op, group, async_op)


def broadcast(
    tensor: Tensor, src: int = 0, group: Any = None, async_op: bool = False
) -> Work | None:
    """Copy process ``src``'s ``tensor`` into every other process's ``tensor``."""
    pg = default_group(group)
    _check_rank("broadcast", "src", src, pg.size)
    wire, finish = _bytes_of(tensor)
    if async_op:
        return Work(pg.comm.Ibcast(wire, root=src), finish)
    pg.comm.Bcast(wire, root=src)
    finish()
    return None


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every process's ``input_tensor``, in rank order, into ``output_tensor`` (of the world
    size times as many elements: stacked or concatenated along the first dimension)."""
    pg = default_group(group)
    _check_sizes("all_gather_into_tensor", input_tensor, output_tensor, pg.size)
    sent, _ = _bytes_of(input_tensor)
    received, finish = _bytes_of(output_tensor)
    if async_op:
        return Work(pg.comm.Iallgather(sent, received), finish)
    pg.comm.Allgather(sent, received)
    finish()
    return None


def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every process's ``tensor`` into ``tensor_list``: entry i gets process i's."""
    pg = default_group(group)
    _check_list("all_gather", "tensor_list", tensor_list, tensor, pg.size)
    gathered = Tensor._make(np.empty((pg.size, *tensor.shape), tensor.array.dtype))
    work = all_gather_into_tensor(gathered, tensor, group, async_op=True)
    return _then(work, lambda: _unpack(gathered, tensor_list), async_op)


def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int = 0,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Every process's ``tensor`` into ``gather_list`` on process ``dst`` (the others pass
    None): entry i gets process i's."""
    pg = default_group(group)
    _check_rank("gather", "dst", dst, pg.size)
    _check_root_list("gather", "gather_list", gather_list, tensor, pg, dst)
    sent, _ = _bytes_of(tensor)
    gathered = received = None
    if pg.rank == dst:
        gathered = Tensor._make(np.empty((pg.size, *tensor.shape), tensor.array.dtype))
        received, _ = _bytes_of(gathered)

    def finish() -> None:
        if gathered is not None:
            _unpack(gathered, gather_list)

    return _then(Work(pg.comm.Igather(sent, received, root=dst), finish), None, async_op)


def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int = 0,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Process ``src``'s ``scatter_list[i]`` into process i's ``tensor`` (the others pass
    None)."""
    pg = default_group(group)
    _check_rank("scatter", "src", src, pg.size)
    _check_root_list("scatter", "scatter_list", scatter_list, tensor, pg, src)
    sent = None
    if pg.rank == src:
        sent = np.stack([t.array for t in scatter_list]).reshape(-1).view(np.uint8)
    received, finish = _bytes_of(tensor)
    return _then(Work(pg.comm.Iscatter(sent, received, root=src), finish), None, async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every process of the group has reached its ``barrier()``."""
    pg = default_group(group)
    return _then(Work(pg.comm.Ibarrier(), _nothing), None, async_op)


# ---- helpers ---------------------------------------------------------------------------------


def _nothing() -> None:
    pass


def _then(work: Work, after: Callable[[], None] | None, async_op: bool) -> Work | None:
    """Finish ``work`` then run ``after``: now (blocking call) or in ``wait()`` (async_op)."""
    if after is not None:
        finish = work._finish
        work._finish = lambda: (finish(), after())
    if async_op:
        return work
    work.wait()
    return None


def _reduction(name: str, tensor: Tensor, op: Any, size: int, copy_in: bool = True):
    """The array MPI reduces (the tensor's own memory where it can), the MPI operation, and
    the step that writes the result back (dividing by ``size`` for AVG)."""
    _check_tensor(name, tensor)
    dtype = tensor.array.dtype
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not backend.is_floating(dtype):
        raise ValueError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    table = _BOOL_OPS if dtype == np.bool_ else _MPI_OPS
    if op.value not in table or (op.name.startswith("B") and dtype.kind not in "iub"):
        raise ValueError(f"{name}: ReduceOp.{op.name} is not defined for dtype {dtype}")
    mpi_op = getattr(_mpi(), table[op.value])
    wire_dtype = np.float32 if dtype == backend.bfloat16 else dtype  # MPI has no bfloat16
    wire = tensor.array
    if wire.dtype != wire_dtype or not wire.flags.c_contiguous:
        wire = wire.astype(wire_dtype, order="C") if copy_in else np.empty(wire.shape, wire_dtype)

    def finish() -> None:
        if op is ReduceOp.AVG:
            np.divide(wire, size, out=wire)
        if wire is not tensor.array:
            tensor.array[...] = wire
        increment_version(tensor)

    return wire, mpi_op, finish


def _bytes_of(tensor: Tensor):
    """The tensor's bytes as a flat uint8 array for MPI to move (its own memory when it is
    contiguous), and the step that writes received bytes back."""
    _check_tensor("collective", tensor)
    array = tensor.array
    wire = array if array.flags.c_contiguous else array.copy(order="C")

    def finish() -> None:
        if wire is not array:
            array[...] = wire
        increment_version(tensor)

    return wire.reshape(-1).view(np.uint8), finish


def _unpack(stacked: Tensor, tensors: Sequence[Tensor]) -> None:
    for t, part in zip(tensors, stacked.array):
        t.array[...] = part
        increment_version(t)


def _check_tensor(name: str, tensor: Any) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(tensor).__name__}")


def _check_rank(name: str, what: str, rank: int, size: int) -> None:
    if not 0 <= rank < size:
        raise ValueError(f"{name}: {what}={rank} is not a rank of a group of {size} processes")


def _check_sizes(name: str, block: Tensor, whole: Tensor, size: int) -> None:
    """``whole`` holds ``size`` blocks of ``block``'s size and dtype."""
    _check_tensor(name, block)
    _check_tensor(name, whole)
    if whole.array.size != size * block.array.size or whole.dtype != block.dtype:
        raise ValueError(
            f"{name}: a tensor of shape {tuple(whole.shape)} and dtype {whole.dtype.name} "
            f"cannot hold {size} blocks of shape {tuple(block.shape)} and dtype {block.dtype.name}"
        )


def _check_list(name: str, what: str, tensors: Any, like: Tensor, size: int) -> None:
    """``tensors`` is a list of ``size`` tensors of ``like``'s shape and dtype."""
    if not isinstance(tensors, list | tuple) or len(tensors) != size:
        raise ValueError(f"{name}: {what} must be a list of {size} tensors (the world size)")
    _check_tensor(name, like)
    for i, t in enumerate(tensors):
        _check_tensor(name, t)
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(
                f"{name}: {what}[{i}] has shape {t.shape} and dtype {t.dtype.name}; expected "
                f"{like.shape} and {like.dtype.name}"
            )


def _check_root_list(name: str, what: str, tensors: Any, like: Tensor, pg: Any, root: int):
    if pg.rank == root:
        _check_list(name, what, tensors, like, pg.size)
    elif tensors:
        raise ValueError(f"{name}: {what} is only given on the root process (rank {root})")
