"""Collectives on tensors, in place, as ``torch.distributed``'s: each is one MPI call.

A reduction runs in the tensor's own dtype where MPI has it (bfloat16 goes through float32);
other collectives move the bytes unchanged, so any dtype works. With ``async_op=True`` a call
starts MPI's non-blocking version and returns a ``Work`` whose ``wait()`` finishes it, and
whose ``get_future()`` is a ``Future`` of the tensors it writes. ``group=`` a group from
``new_group`` runs it among that group's processes; ``src``/``dst`` are default-group ranks,
as PyTorch's, and a process outside the group skips the call as PyTorch's does.

Before the data moves, one small all-gather compares what every process called (the
collective, op, root, dtype and size, and whether it refused the call): MPI itself would
truncate or pad mismatched messages silently, or leave a process waiting forever.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import numpy as np

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.graph import increment_version
from scratchgrad.distributed.process_group import _mpi, _outside, default_group
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


# A stage of a collective: an MPI request in flight and what runs once it is done, which may
# start the next stage (the data's transfer, once the processes agree on the call).
_Stage = tuple[Any, Callable[[], "_Stage | None"]]


class Work:
    """The handle of a collective started with ``async_op=True``: ``wait()`` blocks until the
    tensors hold the result; ``get_future()`` gives them as a ``Future``'s value."""

    def __init__(
        self, request: Any, finish: Callable[[], _Stage | None], result: list | None = None
    ) -> None:
        self._request, self._finish = request, finish
        self._result = result  # the tensors written, the future's value (None: no future)
        self._future: Future | None = None

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Block until the collective is done (a RuntimeError after ``timeout``, if given)."""
        deadline = None if timeout is None else time.monotonic() + timeout.total_seconds()
        while self._finish is not None:
            if deadline is None:
                self._request.Wait()
            while deadline is not None and not self._request.Test():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Work.wait: the collective did not finish in {timeout}")
                time.sleep(1e-4)
            self._next_stage()
        return True

    def is_completed(self) -> bool:
        while self._finish is not None and self._request.Test():
            self._next_stage()
        return self._finish is None

    def get_future(self) -> Future:
        """A ``Future`` that completes with the collective, its value the list of tensors it
        writes on this process (PyTorch's gloo backend's: ``[tensor]``, ``all_gather``'s
        ``tensor_list``, ``[]`` for ``barrier``); none for ``send``/``recv``, as gloo's."""
        if self._result is None:
            raise RuntimeError("Work::getFuture not implemented.")
        if self._future is None:
            self._future = Future(self.wait, self.is_completed)
            if self._finish is None:
                self._future.set_result(self._result)
        return self._future

    def _next_stage(self) -> None:
        finish, self._finish = self._finish, None
        following = finish()
        if following is not None:
            self._request, self._finish = following
        elif self._future is not None:
            self._future.set_result(self._result)


class Future:
    """As ``torch.futures.Future``, for a collective (``Work.get_future()``): ``wait()``
    finishes it and returns the value, ``done()`` says whether it has finished, ``value()``
    is the value of a finished one, ``then(callback)`` is a Future of ``callback(self)``,
    which runs once this one is done (at once if it is). With MPI nothing progresses on its
    own: a callback runs inside the ``wait()``/``done()`` (of this Future, its Work, or a
    Future made from it) that sees the collective finish."""

    def __init__(self, drive: Callable[[], Any], poll: Callable[[], bool]) -> None:
        self._drive, self._poll = drive, poll  # make progress: to the end, or one look
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []

    def done(self) -> bool:
        if not self._done:
            self._poll()
        return self._done

    def wait(self) -> Any:
        if not self._done:
            self._drive()
        return self.value()

    def value(self) -> Any:
        if not self.done():
            raise RuntimeError("Future.value: not done yet (wait() for it, or check done())")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback: Callable[[Future], Any]) -> Future:
        child = Future(self.wait, self.done)
        self.add_done_callback(lambda parent: child._run(callback, parent))
        return child

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def set_result(self, result: Any) -> None:
        self._value, self._done = result, True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self.set_result(None)

    def _run(self, callback: Callable[[Future], Any], parent: Future) -> None:
        try:
            result = callback(parent)
        except Exception as error:  # as PyTorch's: the child holds it, its wait() raises it
            wrapped = RuntimeError(
                "Got the following error when running the callback: "
                f"{type(error).__name__}: {error}"
            )
            wrapped.__cause__ = error
            self.set_exception(wrapped)
        else:
            self.set_result(result)


def _members_only(collective: Callable) -> Callable:
    """Run ``collective`` unless its ``group`` is what ``new_group`` gave a process outside the
    group: then, as PyTorch's, warn and return None. (The position of ``group`` is found once,
    here, so a call pays one look at its arguments.)"""
    position = list(inspect.signature(collective).parameters).index("group")

    @functools.wraps(collective)
    def run(*args: Any, **kwargs: Any) -> Any:
        group = args[position] if len(args) > position else kwargs.get("group")
        if group is not None and _outside(group):
            rank = default_group().rank
            warnings.warn(
                f"Running {collective.__name__} on global rank {rank} which does not belong "
                "to the given group.",
                stacklevel=2,
            )
            return None
        return collective(*args, **kwargs)

    return run


@_members_only
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
    call = _Call(pg, "all_reduce", tensor, op)
    with call.checks():
        _check_writable("all_reduce", tensor)
        wire, mpi_op, finish = _reduction("all_reduce", tensor, op, pg.size)
    return call.run(
        lambda: (pg.comm.Iallreduce(_mpi().IN_PLACE, wire, mpi_op), finish), async_op, [tensor]
    )


def all_reduce_unchecked(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None) -> Work:
    """``all_reduce(tensor, op, group, async_op=True)`` without comparing the processes' calls
    first: for a caller whose processes make the same calls by construction, as
    ``DistributedDataParallel``'s buckets (whose layout its constructor compares across the
    processes once). The comparison's round trip cost a DDP step of a small MLP 16% (650 ->
    755 us on two processes of a 2-core host)."""
    pg = default_group(group)
    _start_earlier_calls(pg.unstarted, None)  # MPI matches collectives by order
    wire, mpi_op, finish = _reduction("all_reduce", tensor, op, pg.size)
    return Work(pg.comm.Iallreduce(_mpi().IN_PLACE, wire, mpi_op), finish)


@_members_only
def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Combine ``tensor`` over every process; only process ``dst`` gets the result, in place."""
    pg = default_group(group)
    call = _Call(pg, "reduce", tensor, op)
    with call.checks():
        call.root = root = _root("reduce", "dst", dst, group_dst, pg)
        _check_writable("reduce", tensor)
        wire, mpi_op, finish = _reduction("reduce", tensor, op, pg.size)
    is_root = pg.rank == root
    send, receive = (_mpi().IN_PLACE, wire) if is_root else (wire, None)
    if not is_root:
        finish = _nothing  # the other processes' tensors stay as they were
    return call.run(
        lambda: (pg.comm.Ireduce(send, receive, mpi_op, root=root), finish), async_op, [tensor]
    )


@_members_only
def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Combine ``input`` (the world size's blocks of ``output``'s shape, stacked or
    concatenated along the first dimension, as ``all_gather_into_tensor``'s output) over every
    process; process i gets the combined block i in ``output``."""
    pg = default_group(group)
    call = _Call(pg, "reduce_scatter_tensor", output, op)
    with call.checks():
        _check_sizes("reduce_scatter_tensor", output, input, pg.size)
        start = _reduce_scatter("reduce_scatter_tensor", output, input, op, pg)
    return call.run(start, async_op, [output])


@_members_only
def reduce_scatter(
    output: Tensor,
    input_list: Sequence[Tensor],
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Process i gets, in ``output``, ``input_list[i]`` combined over every process."""
    pg = default_group(group)
    call = _Call(pg, "reduce_scatter", output, op)
    with call.checks():
        _check_list("reduce_scatter", "input_list", input_list, output, pg.size)
        joined = Tensor._make(np.concatenate([t.array.reshape(-1) for t in input_list]))
        start = _reduce_scatter("reduce_scatter", output, joined, op, pg)
    return call.run(start, async_op, [output])


def _reduce_scatter(name: str, output: Tensor, input: Tensor, op: ReduceOp, pg: Any):
    """Check and prepare the reduce-scatter of ``input`` into ``output``: what starts it."""
    _check_writable(name, output)
    wire, mpi_op, _ = _reduction(name, input, op, pg.size)
    received, _, finish = _reduction(name, output, op, pg.size, copy_in=False)
    return lambda: (pg.comm.Ireduce_scatter_block(wire, received, mpi_op), finish)


@_members_only
def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copy process ``src``'s ``tensor`` into every other process's ``tensor``."""
    pg = default_group(group)
    call = _Call(pg, "broadcast", tensor)
    with call.checks():
        call.root = root = _root("broadcast", "src", src, group_src, pg)
        _check_writable("broadcast", tensor)
        wire, finish = _bytes_of("broadcast", tensor)
    return call.run(lambda: (pg.comm.Ibcast(wire, root=root), finish), async_op, [tensor])


@_members_only
def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every process's ``input_tensor``, in rank order, into ``output_tensor``: stacked, of
    shape ``(world_size, *input_tensor.shape)``, or concatenated along the first dimension, as
    PyTorch documents it (its gloo backend on the CPU takes the concatenation only); any other
    shape raises, even of as many entries."""
    pg = default_group(group)
    call = _Call(pg, "all_gather_into_tensor", input_tensor)
    with call.checks():
        _check_sizes("all_gather_into_tensor", input_tensor, output_tensor, pg.size)
        _check_writable("all_gather_into_tensor", output_tensor)
        sent, _ = _bytes_of("all_gather_into_tensor", input_tensor)
        received, finish = _bytes_of("all_gather_into_tensor", output_tensor)
    return call.run(lambda: (pg.comm.Iallgather(sent, received), finish), async_op, [output_tensor])


@_members_only
def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every process's ``tensor`` into ``tensor_list``: entry i gets process i's."""
    pg = default_group(group)
    call = _Call(pg, "all_gather", tensor)
    with call.checks():
        _check_list("all_gather", "tensor_list", tensor_list, tensor, pg.size)
        _check_writable("all_gather", *tensor_list)
        sent, _ = _bytes_of("all_gather", tensor)
        gathered = np.empty((pg.size, *tensor.shape), tensor.array.dtype)
    received = gathered.reshape(-1).view(np.uint8)

    def finish() -> None:
        _unpack(gathered, tensor_list)

    # (the future's value: a list of its own, as PyTorch's)
    return call.run(lambda: (pg.comm.Iallgather(sent, received), finish), async_op, [*tensor_list])


@_members_only
def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Every process's ``tensor`` into ``gather_list`` on process ``dst`` (the others pass
    None): entry i gets process i's."""
    pg = default_group(group)
    call = _Call(pg, "gather", tensor)
    with call.checks():
        call.root = root = _root("gather", "dst", dst, group_dst, pg)
        _check_root_list("gather", "gather_list", gather_list, tensor, pg, root)
        sent, _ = _bytes_of("gather", tensor)
        gathered = received = None
        if pg.rank == root:
            _check_writable("gather", *gather_list)
            gathered = np.empty((pg.size, *tensor.shape), tensor.array.dtype)
            received = gathered.reshape(-1).view(np.uint8)

    def finish() -> None:
        if gathered is not None:
            _unpack(gathered, gather_list)

    return call.run(
        lambda: (pg.comm.Igather(sent, received, root=root), finish),
        async_op,
        list(gather_list or []),
    )


@_members_only
def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int | None = None,
    group: Any = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Process ``src``'s ``scatter_list[i]`` into process i's ``tensor`` (the others pass
    None)."""
    pg = default_group(group)
    call = _Call(pg, "scatter", tensor)
    with call.checks():
        call.root = root = _root("scatter", "src", src, group_src, pg)
        _check_root_list("scatter", "scatter_list", scatter_list, tensor, pg, root)
        _check_writable("scatter", tensor)
        sent = None
        if pg.rank == root:
            sent = np.stack([t.array for t in scatter_list]).reshape(-1).view(np.uint8)
        received, finish = _bytes_of("scatter", tensor)
    return call.run(
        lambda: (pg.comm.Iscatter(sent, received, root=root), finish), async_op, [tensor]
    )


@_members_only
def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Wait until every process of the group has reached its ``barrier()``."""
    pg = default_group(group)
    # the comparison of the calls is an all-gather: it returns once every process has called
    return _Call(pg, "barrier", None).run(lambda: None, async_op, [])


class _Call:
    """One process's call of a collective: its local checks, then the all-gather that compares
    every process's call before the data moves (see the module's doc string)."""

    def __init__(self, pg: Any, name: str, tensor: Any, op: Any = None, root: int = -1) -> None:
        refuse_in_a_recording(name)
        self.pg, self.name, self.tensor, self.op, self.root = pg, name, tensor, op, root

    @contextlib.contextmanager
    def checks(self) -> Iterator[None]:
        """Run the local checks; a process that refuses the call still tells the others."""
        try:
            yield
        except Exception:  # any error: the others must not wait for this process
            mine = self._signature(refused=True)
            every = np.empty((self.pg.size, len(mine)), np.int64)
            # non-blocking, as the others' (MPI matches no blocking call with a non-blocking one)
            self.pg.calls_comm.Iallgather(mine, every).Wait()
            raise

    def run(self, start: Callable[[], _Stage | None], async_op: bool, result: list) -> Work | None:
        """Compare the calls (non-blocking), then ``start`` the transfer if they agree;
        ``result``: the tensors it writes here (the value of its Work's future)."""
        mine = self._signature(refused=False)
        every = np.empty((self.pg.size, len(mine)), np.int64)

        def agreed() -> _Stage | None:
            _start_earlier_calls(self.pg.unstarted, work)
            _compare_calls(self.name, mine, every)
            return start()

        work = Work(self.pg.calls_comm.Iallgather(mine, every), agreed, result)
        self.pg.unstarted.append(work)
        if async_op:
            return work
        work.wait()
        return None

    def _signature(self, refused: bool) -> np.ndarray:
        """The call as 9 integers: the collective's name (24 bytes), op, root, the tensor's
        dtype (16 bytes) and size, and whether this process refused it."""
        array = self.tensor.array if isinstance(self.tensor, Tensor) else None
        head = _call_code(self.name, None if array is None else array.dtype, self.op, self.root)
        return np.array((*head, 0 if array is None else array.size, refused), np.int64)


def refuse_in_a_recording(name: str) -> None:
    """Raise scratchgrad.jit's JitError for a collective called while a step records: a replay
    would skip it, leaving each process its own values (silently, before). DistributedDataParallel's
    all-reduces run inside calls that replays make again, where nothing records."""
    recorder = capture_hook.recorder
    if recorder is not None and recorder.here():
        recorder.refuse(
            f"distributed.{name}()",
            "Call it after the jitted step, on what the step returns (DistributedDataParallel "
            "averages the gradients inside a jitted step)",
        )


@functools.lru_cache(maxsize=256)
def _call_code(name: str, dtype: np.dtype | None, op: Any, root: int) -> tuple[int, ...]:
    """The first 7 integers of a call's signature (worked out once: each call pays the
    collective's own latency besides its signature's, and the bytes cost 20 us to make)."""
    text = name.encode().ljust(24) + ("" if dtype is None else dtype.name).encode().ljust(16)
    words = np.frombuffer(text, np.int64).tolist()
    code = list(ReduceOp).index(op) if isinstance(op, ReduceOp) else -1
    return (*words[:3], code, root, *words[3:])


def _start_earlier_calls(unstarted: list[Work], work: Work | None) -> None:
    """Start the transfers of the calls made before ``work`` (all, for None), then take
    ``work`` off the list: MPI matches collectives by order, so every process starts them in
    the order they were called, whatever order it waits for them in."""
    while unstarted and unstarted[0] is not work:
        earlier = unstarted[0]
        earlier._request.Wait()
        earlier._next_stage()  # its agreed() takes it off the list
    if work is not None:
        unstarted.pop(0)


def _compare_calls(name: str, mine: np.ndarray, every: np.ndarray) -> None:
    if every[:, -1].any():
        refused = np.flatnonzero(every[:, -1]).tolist()
        raise RuntimeError(f"{name}: refused by rank(s) {refused} (see their error); not run")
    if (every != mine).any():
        calls = "; ".join(f"rank {r}: {_describe(row)}" for r, row in enumerate(every))
        raise RuntimeError(f"{name}: the processes' calls do not match ({calls})")


def _describe(row: np.ndarray) -> str:
    name = row[:3].tobytes().decode().strip()
    dtype = row[5:7].tobytes().decode().strip()
    op = f" ReduceOp.{list(ReduceOp)[row[3]].name}" if row[3] >= 0 else ""
    root = f" with root {row[4]}" if row[4] >= 0 else ""
    tensor = f" on {row[7]} elements of {dtype}" if dtype else ""
    return f"{name}{op}{root}{tensor}"


# ---- helpers ---------------------------------------------------------------------------------


def _nothing() -> None:
    pass


def _reduction(name: str, tensor: Tensor, op: Any, size: int, copy_in: bool = True):
    """The array MPI reduces (the tensor's own memory where it can), the MPI operation, and
    the step that writes the result back (dividing by ``size`` for AVG)."""
    _check_tensor(name, tensor)
    dtype = tensor.array.dtype
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and not (backend.is_floating(dtype) or dtype.kind == "c"):
        raise ValueError(f"{name}: ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    table = _BOOL_OPS if dtype == np.bool_ else _MPI_OPS
    if op.value not in table or (op.name.startswith("B") and dtype.kind not in "iub"):
        raise ValueError(f"{name}: ReduceOp.{op.name} is not defined for dtype {dtype}")
    if dtype.kind == "c" and op not in (ReduceOp.SUM, ReduceOp.AVG):  # as PyTorch's check
        raise ValueError(f"{name} does not support ReduceOp.{op.name} on complex tensors")
    mpi_op = getattr(_mpi(), table[op.value])
    wire_dtype = np.float32 if dtype == backend.bfloat16 else dtype  # MPI has no bfloat16
    wire = tensor.array
    if wire.dtype != wire_dtype or not wire.flags.c_contiguous:
        wire = wire.astype(wire_dtype, order="C") if copy_in else np.empty(wire.shape, wire_dtype)

    def finish() -> None:
        if op is ReduceOp.AVG:  # a complex tensor per component, as PyTorch's (real pairs)
            components = wire.reshape(-1).view(wire.real.dtype)
            np.divide(components, size, out=components)
        if wire is not tensor.array:
            tensor.array[...] = wire
        increment_version(tensor)

    return wire, mpi_op, finish


def _bytes_of(name: str, tensor: Tensor):
    """The tensor's bytes as a flat uint8 array for MPI to move (its own memory when it is
    contiguous), and the step that writes received bytes back."""
    _check_tensor(name, tensor)
    array = tensor.array
    wire = array if array.flags.c_contiguous else array.copy(order="C")

    def finish() -> None:
        if wire is not array:
            array[...] = wire
        increment_version(tensor)

    return wire.reshape(-1).view(np.uint8), finish


def _unpack(stacked: np.ndarray, tensors: Sequence[Tensor]) -> None:
    for t, part in zip(tensors, stacked):
        t.array[...] = part
        increment_version(t)


def _check_tensor(name: str, tensor: Any) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(tensor).__name__}")


def _check_writable(name: str, *tensors: Tensor) -> None:
    """The tensors a collective writes must own their elements: an expanded view's elements
    share memory, so the result could not be written back (checked before any communication)."""
    for t in tensors:
        _check_tensor(name, t)
        if not t.array.flags.writeable:
            raise RuntimeError(
                f"{name}: cannot write the result into a tensor of shape {tuple(t.shape)} "
                "whose elements share memory (an expanded view); pass x.contiguous() or a "
                "tensor of its own"
            )


def _root(name: str, what: str, rank: int | None, group_rank: int | None, pg: Any) -> int:
    """The rank in ``pg`` of the process named by ``rank`` (a default-group rank: PyTorch's
    ``src``/``dst``) or by ``group_rank`` (a rank in ``pg``: its ``group_src``/``group_dst``),
    exactly one of them, with PyTorch's errors."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{name}: Can't specify both group_rank and global_rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size:
            raise ValueError(
                f"{name}: group_{what}={group_rank} is not a rank of a group of {pg.size} processes"
            )
        return group_rank
    if rank is None:
        raise ValueError(f"{name}: Must specify global_rank or group_rank ({what}=)")
    return _check_rank(name, what, rank, pg)


def _check_rank(name: str, what: str, rank: int, pg: Any) -> int:
    """The rank in ``pg`` of the process whose default-group rank is ``rank`` (PyTorch's
    ``src``/``dst`` are default-group ranks, whatever the group)."""
    if rank in pg.ranks:
        return pg.ranks.index(rank)
    default = pg.ranks == tuple(range(pg.size))
    of = "" if default else f" (default-group ranks {list(pg.ranks)})"
    raise ValueError(f"{name}: {what}={rank} is not a rank of a group of {pg.size} processes{of}")


def _check_sizes(name: str, block: Tensor, whole: Tensor, size: int) -> None:
    """``whole`` holds ``size`` blocks of ``block``'s dtype in one of the two shapes PyTorch's
    documentation gives: stacked ``(size, *block.shape)`` or concatenated along the first
    dimension. (Its gloo backend takes the concatenation only, NCCL any shape of as many
    entries: a shape of the right size but neither form would mix the blocks up.)"""
    _check_tensor(name, block)
    _check_tensor(name, whole)
    stacked = (size, *block.shape)
    joined = (size * block.shape[0], *block.shape[1:]) if block.ndim else stacked
    if tuple(whole.shape) not in (stacked, joined) or whole.dtype != block.dtype:
        raise ValueError(
            f"{name}: a tensor of shape {tuple(whole.shape)} and dtype {whole.dtype.name} "
            f"cannot hold {size} blocks of shape {tuple(block.shape)} and dtype "
            f"{block.dtype.name}: its shape must be {stacked} (stacked) or {joined} "
            "(concatenated), its dtype the blocks'"
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
