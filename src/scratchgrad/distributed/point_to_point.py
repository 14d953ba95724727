"""Messages between two processes, as ``torch.distributed``'s ``send``/``recv`` and
``isend``/``irecv``.

A tensor travels as two MPI messages with the same tag: a header (its dtype, its number of
elements and the sender's rank), then its bytes. The receiver checks the header against its own
tensor, so a tensor of another size or dtype is an error naming both, never bytes cut short or
padded; the bytes are still taken off the channel, so the next message arrives intact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scratchgrad.distributed.collectives import (
    Work,
    _bytes_of,
    _check_writable,
    _members_only,
    _nothing,
    _root,
    refuse_in_a_recording,
)
from scratchgrad.distributed.process_group import _mpi, _outside, default_group
from scratchgrad.tensor import Tensor


def send(
    tensor: Tensor, dst: int | None = None, group: Any = None, tag: int = 0, group_dst=None
) -> None:
    """Send ``tensor`` to process ``dst``, which takes it with ``recv``; returns once it is sent.

    >>> import scratchgrad as sg
    >>> import scratchgrad.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> x = sg.arange(3.0) if dist.get_rank() == 0 else sg.zeros(3)
    >>> if dist.get_world_size() > 1:
    ...     if dist.get_rank() == 0:
    ...         dist.send(x, dst=1)
    ...     elif dist.get_rank() == 1:
    ...         _ = dist.recv(x, src=0)  # x is now [0., 1., 2.]
    >>> dist.destroy_process_group()
    """
    _start_send("send", tensor, dst, group, tag, group_dst).wait()


@_members_only
def isend(
    tensor: Tensor, dst: int | None = None, group: Any = None, tag: int = 0, group_dst=None
) -> Work:
    """Start sending ``tensor`` to process ``dst``; ``wait()`` on the result before changing it."""
    return _start_send("isend", tensor, dst, group, tag, group_dst)


def recv(
    tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0, group_src=None
) -> int:
    """Receive into ``tensor`` what process ``src`` (None: any process) sent with this ``tag``;
    returns the sender's rank (in the default group; -1 outside ``group``, as PyTorch's)."""
    if _outside(group):
        irecv(tensor, src, group, tag, group_src)  # (it warns, as PyTorch's recv through it)
        return -1
    work = _start_recv("recv", tensor, src, group, tag, group_src)
    work.wait()
    return default_group(group).ranks[work.source_rank()]


@_members_only
def irecv(
    tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0, group_src=None
) -> Work:
    """Start receiving into ``tensor``; it holds the message after ``wait()``, and
    ``source_rank()`` then says who sent it (its rank in ``group``)."""
    return _start_recv("irecv", tensor, src, group, tag, group_src)


class _Received(Work):
    """The handle of a receive: a Work that also knows the sender, once the header is in."""

    source: int = -1

    def source_rank(self) -> int:
        return self.source


class _AllOf:
    """Several MPI requests waited for as one (named as mpi4py's Request methods, for Work)."""

    def __init__(self, requests: list) -> None:
        self.requests = requests

    def Wait(self) -> None:  # noqa: N802
        _mpi().Request.Waitall(self.requests)

    def Test(self) -> bool:  # noqa: N802
        return _mpi().Request.Testall(self.requests)


def _start_send(name: str, tensor: Tensor, dst, group, tag: int, group_dst) -> Work:
    refuse_in_a_recording(name)
    pg = default_group(group)
    dst = _peer(name, "dst", dst, group_dst, pg)
    _check_tag(name, tag)
    wire, _ = _bytes_of(name, tensor)
    header = _header(tensor, pg.rank)
    requests = [pg.comm.Isend(header, dst, tag), pg.comm.Isend(wire, dst, tag)]
    return Work(_AllOf(requests), _nothing)


def _start_recv(name: str, tensor: Tensor, src, group, tag: int, group_src) -> _Received:
    refuse_in_a_recording(name)
    pg = default_group(group)
    any_source = src is None and group_src is None
    src = _mpi().ANY_SOURCE if any_source else _peer(name, "src", src, group_src, pg)
    _check_tag(name, tag)
    _check_writable(name, tensor)
    wire, finish = _bytes_of(name, tensor)
    header = np.empty(_HEADER_FIELDS, np.int64)

    def header_received():
        work.source = sender = int(header[-1])
        if (header != _header(tensor, sender)).any():
            pg.comm.Recv(np.empty(header[2] * header[3], np.uint8), sender, tag)  # the bytes
            raise ValueError(
                f"{name}: rank {sender} sent {_describe(header)}, but the tensor here is "
                f"{_describe(_header(tensor, sender))}; nothing was written"
            )
        return pg.comm.Irecv(wire, sender, tag), finish

    work = _Received(pg.comm.Irecv(header, src, tag), header_received)
    return work


_HEADER_FIELDS = 5  # the dtype's name (16 bytes), the number of elements, their size, the sender


def _header(tensor: Tensor, sender: int) -> np.ndarray:
    array = tensor.array
    dtype = np.frombuffer(array.dtype.name.encode().ljust(16), np.int64)
    return np.array([*dtype, array.size, array.itemsize, sender], np.int64)


def _describe(header: np.ndarray) -> str:
    return f"{header[2]} elements of {header[:2].tobytes().decode().strip()}"


def _peer(name: str, what: str, rank: int | None, group_rank: int | None, pg: Any) -> int:
    """The other process's rank in ``pg``, from ``dst``/``src`` (a default-group rank) or
    ``group_dst``/``group_src`` (a rank in ``pg``)."""
    group_rank = _root(name, what, rank, group_rank, pg)
    if group_rank == pg.rank:
        role = "destination" if what == "dst" else "source"
        raise ValueError(
            f"Invalid {role} rank: {role} rank should not be the same as the rank of the "
            "current process."
        )
    return group_rank


def _check_tag(name: str, tag: int) -> None:
    if not isinstance(tag, int) or tag < 0 or tag > _mpi().COMM_WORLD.Get_attr(_mpi().TAG_UB):
        raise ValueError(f"{name}: tag must be an int from 0 to MPI's TAG_UB, got {tag!r}")
