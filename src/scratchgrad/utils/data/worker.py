"""What runs inside a ``DataLoader`` worker process, and ``get_worker_info()``.

A worker takes tasks ``(epoch, task_id, indices)`` from its own index queue, fetches and collates
that batch, and puts ``(epoch, task_id, payload)`` on the result queue shared by all workers.
The payload is the batch pickled by the worker itself: a batch that cannot be pickled then
becomes an error sent to the main process instead of a message lost in the queue's feeder
thread (which would leave the main process waiting). Errors travel as ``WorkerError`` and are
raised again in the main process; an exhausted ``IterableDataset`` answers ``WorkerDone``.
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from scratchgrad import backend

# How often a waiting worker checks that its parent is still alive (seconds).
POLL_INTERVAL = 0.1


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows about itself, as ``torch.utils.data.get_worker_info()``:
    ``id`` (0 .. ``num_workers`` - 1), ``num_workers``, ``seed`` (the seed of this worker's
    random generators) and ``dataset`` (this worker's copy of the dataset)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo`` inside a ``DataLoader`` worker process, ``None`` elsewhere.

    Use it in an ``IterableDataset``'s ``__iter__`` to give each worker its share of the
    stream, or in a ``worker_init_fn`` to configure each worker's copy of the dataset.

    >>> get_worker_info() is None  # the main process
    True
    """
    return _worker_info


class Exhausted(Exception):
    """Raised by a fetcher whose ``IterableDataset`` has no more batches (not StopIteration,
    which a generator would turn into a RuntimeError, and which a dataset's own code may raise)."""


@dataclass
class WorkerDone:
    """A worker's ``IterableDataset`` is exhausted."""

    worker_id: int


class WorkerError:
    """An exception raised in a worker (call in an ``except`` block), carried to the main
    process with its traceback."""

    def __init__(self, worker_id: int, where: str) -> None:
        error = sys.exc_info()[1]
        self.exc_type = type(error)
        where = f" {where}" if where else ""
        self.message = (
            f"Caught {type(error).__name__}{where} in DataLoader worker process {worker_id}.\n"
            f"Original {traceback.format_exc()}"
        )

    def reraise(self) -> None:
        """Raise the worker's exception type with its traceback as the message (a
        ``RuntimeError`` where that type cannot be built from one string), as PyTorch does."""
        message = _KeyErrorMessage(self.message) if self.exc_type is KeyError else self.message
        try:
            error = self.exc_type(message)
        except Exception:
            raise RuntimeError(self.message) from None
        raise error


class _KeyErrorMessage(str):
    """A message that KeyError prints as it is: ``str(KeyError(m))`` is ``repr(m)``, which
    would show the traceback on one line with its newlines escaped."""

    def __repr__(self) -> str:
        return self


def seed_worker(seed: int) -> None:
    """Seed every random generator a dataset is likely to use: the library's, Python's and
    NumPy's global one (so augmentations differ between workers but repeat between runs)."""
    backend.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def worker_loop(
    make_fetcher: Any,
    dataset: Any,
    index_queue: Any,
    result_queue: Any,
    worker_id: int,
    num_workers: int,
    seed: int,
    worker_init_fn: Any,
) -> None:
    """The body of a worker process: serve tasks until told to stop (``None``) or orphaned."""
    global _worker_info
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    parent = os.getppid()
    init_error = fetcher = None
    try:
        seed_worker(seed)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = make_fetcher(dataset)
    except Exception:
        init_error = WorkerError(
            worker_id, "in worker_init_fn, when seeding or when starting the iteration"
        )
    exhausted = False
    while True:
        try:
            task = index_queue.get(timeout=POLL_INTERVAL)
        except queue.Empty:
            if os.getppid() != parent:  # the main process died: nobody will read our results
                return
            continue
        if task is None:
            # Exit at once, even if the main process stopped reading our last results.
            result_queue.cancel_join_thread()
            return
        epoch, task_id, indices = task
        if task_id is None:  # a new epoch with persistent workers: restart the iteration
            exhausted = False
            try:
                fetcher = make_fetcher(dataset)
            except Exception:
                init_error = WorkerError(worker_id, "when starting the iteration")
            continue
        result: Any
        if init_error is not None:
            result = init_error
        elif exhausted:
            result = WorkerDone(worker_id)
        else:
            try:
                result = fetcher.fetch(indices)
            except Exhausted:
                exhausted = True
                result = WorkerDone(worker_id)
            except Exception:
                result = WorkerError(worker_id, "")
        try:
            payload = ForkingPickler.dumps(result)
        except Exception:
            payload = ForkingPickler.dumps(WorkerError(worker_id, "when sending a batch"))
        result_queue.put((epoch, task_id, bytes(payload)))
