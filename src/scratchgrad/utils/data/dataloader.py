"""The ``DataLoader``: batches of a dataset, in one process or several, as ``torch.utils.data``.

With ``num_workers=0`` the main process fetches each batch when it is asked for. With
``num_workers > 0`` worker processes (``multiprocessing``, the "fork" start method on Linux)
fetch batches ahead: the main process draws the order (the sampler runs here,
as in PyTorch), sends each batch's indices to the workers in turn, and hands the batches out in
that order, so they are exactly those of ``num_workers=0``. See ``worker.py`` for the workers.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import multiprocessing
import pickle
import queue
import sys
import time
import weakref
from collections.abc import (
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    MutableSequence,
    Sequence,
)
from typing import TYPE_CHECKING, Any

import numpy as np

from scratchgrad.backend import float64
from scratchgrad.creation import from_numpy, tensor
from scratchgrad.tensor import Tensor, stack
from scratchgrad.utils.data.dataset import IterableDataset, Subset, TensorDataset
from scratchgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    check_generator,
    random_source,
)
from scratchgrad.utils.data.worker import (
    POLL_INTERVAL,
    Exhausted,
    WorkerDone,
    WorkerError,
    worker_loop,
)

if TYPE_CHECKING:
    from scratchgrad.backend import Generator


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of samples into one batch, as ``torch.utils.data.default_collate``.

    Tensors are stacked along a new first dimension; NumPy arrays and scalars become stacked
    tensors; Python floats a float64 tensor, ints an int64 tensor, bools a bool tensor; strings
    are left as they come (the list or tuple of them). Dicts, tuples and lists are collated field
    by field, so a batch of ``(image, label)`` tuples becomes ``[images, labels]``: a list, as
    PyTorch returns (a named tuple, a dict's and a list's own types, ``OrderedDict`` say, are
    kept, as ``_rebuild`` says).

    >>> import scratchgrad as sg
    >>> images, labels = default_collate([(sg.zeros(2), 0), (sg.ones(2), 1)])
    >>> images.shape, labels.tolist()
    (scratchgrad.Size([2, 2]), [0, 1])
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch))
    if isinstance(elem, str | bytes):  # before NumPy: numpy.str_ is a str
        return batch
    if isinstance(elem, np.ndarray | np.generic):
        _check_numeric(elem, "default_collate")
        if len({np.shape(sample) for sample in batch}) > 1:  # NumPy's error is a ValueError
            raise RuntimeError(
                "default_collate: stack expects arrays of equal shape, got "
                f"{[np.shape(sample) for sample in batch]}"
            )
        if len({np.asarray(sample).dtype for sample in batch}) > 1:  # PyTorch's promotion
            return stack([from_numpy(np.asarray(sample)) for sample in batch])
        return from_numpy(np.stack(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):  # bool included: PyTorch infers the dtype, bool or int64
        return tensor(batch)
    if isinstance(elem, Mapping):
        return _rebuild(
            elem, {key: default_collate([sample[key] for sample in batch]) for key in elem}
        )
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError(
                "default_collate: each element in list of batch should be of equal size"
            )
        return _rebuild(elem, [default_collate(samples) for samples in zip(*batch, strict=True)])
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem)}"
    )


def default_convert(data: Any) -> Any:
    """What a batch becomes without automatic batching (``batch_size=None``), as PyTorch's
    ``default_convert``: NumPy arrays and scalars become tensors, inside dicts, tuples and lists
    too; the rest is left as it is.

    >>> import numpy as np
    >>> default_convert({"x": np.zeros(2), "name": "a"})
    {'x': tensor([0., 0.], dtype=scratchgrad.float64), 'name': 'a'}
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray | np.generic) and data.dtype.kind not in "OSU":
        _check_numeric(data, "default_convert")  # (PyTorch passes strings and objects by)
        return from_numpy(np.asarray(data))
    if isinstance(data, Mapping):
        return _rebuild(data, {key: default_convert(value) for key, value in data.items()})
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return _rebuild(data, [default_convert(field) for field in data])
    return data


def _check_numeric(array: np.ndarray | np.generic, owner: str) -> None:
    """Raise PyTorch's TypeError for NumPy data no tensor can hold: strings, objects, dates."""
    if array.dtype.kind not in "biufc":
        raise TypeError(f"{owner}: NumPy arrays of dtype {array.dtype} cannot be tensors")


def _rebuild(like: Any, fields: dict[Any, Any] | list[Any]) -> Any:
    """``fields`` (a collated or converted mapping's or sequence's) in the container type of
    ``like``, as PyTorch rebuilds it: a named tuple keeps its type and any other tuple becomes
    a list; a mutable mapping or sequence is copied and its items replaced, so a subclass keeps
    its extra state (a ``defaultdict``'s factory); other types are called with the dict or
    list; a type that refuses either gives a plain dict or list."""
    if isinstance(like, tuple):
        return type(like)(*fields) if hasattr(like, "_fields") else fields
    try:
        if isinstance(like, MutableMapping):
            clone = copy.copy(like)
            clone.update(fields)
            return clone
        if isinstance(like, MutableSequence):
            clone = copy.copy(like)
            for i, field in enumerate(fields):
                clone[i] = field
            return clone
        return type(like)(fields)
    except TypeError:
        return fields


class MapFetcher:
    """Fetches one batch of a map-style dataset from its indices (or one sample from its index
    when automatic batching is off)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        fast = auto_collation and collate_fn is default_collate
        self.tensor_rows = _tensor_rows(dataset) if fast else None

    def fetch(self, indices: Any) -> Any:
        index = None if self.tensor_rows is None else np.asarray(indices)
        # Integer indices only: others (floats, bools, an empty batch) go sample by sample, and
        # fail or not as each sample's indexing does, as in PyTorch.
        if index is not None and index.dtype.kind in "iu":
            tensors, rows = self.tensor_rows  # one indexing call per tensor for the whole batch
            index = index if rows is None else rows[index]
            return [t[index] for t in tensors]
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)  # a batch in one call
            samples = getitems(indices) if getitems else [self.dataset[i] for i in indices]
            return self.collate_fn(samples)
        return self.collate_fn(self.dataset[indices])


class IterableFetcher:
    """Fetches the next batch of an ``IterableDataset``'s stream (``batch_size`` samples, or one
    sample when automatic batching is off); raises ``Exhausted`` at its end."""

    def __init__(
        self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool
    ) -> None:
        self.samples = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last

    def fetch(self, batch_size: int | None) -> Any:
        if not self.auto_collation:
            sample = next(self.samples, Exhausted)
            if sample is Exhausted:
                raise Exhausted
            return self.collate_fn(sample)
        batch = list(itertools.islice(self.samples, batch_size))
        if not batch or (self.drop_last and len(batch) < batch_size):
            raise Exhausted
        return self.collate_fn(batch)


def make_fetcher(
    iterable: bool, auto_collation: bool, collate_fn: Callable, drop_last: bool, dataset: Any
) -> MapFetcher | IterableFetcher:
    """The fetcher for ``dataset`` (made in each worker, after ``worker_init_fn``, so that an
    ``IterableDataset``'s ``__iter__`` sees ``get_worker_info()``)."""
    if iterable:
        return IterableFetcher(dataset, auto_collation, collate_fn, drop_last)
    return MapFetcher(dataset, auto_collation, collate_fn)


class DataLoader:
    """Iterate over a dataset in batches, as ``torch.utils.data.DataLoader``.

    Each pass (each ``iter(loader)``) visits every sample once, in order or, with
    ``shuffle=True``, in a fresh random order drawn from ``generator`` (or else the library's
    generator, so ``sg.manual_seed`` makes it reproducible); ``sampler`` (indices) or
    ``batch_sampler`` (lists of indices) choose the order instead. ``len(loader)`` is the number
    of batches; ``drop_last=True`` leaves out a last batch smaller than ``batch_size``;
    ``batch_size=None`` turns batching off (each sample passes through ``default_convert``).

    A batch is ``collate_fn(list_of_samples)`` (``default_collate`` when not given). A
    ``TensorDataset``, or a ``Subset`` of one (what ``random_split`` returns), with the default
    ``collate_fn`` skips the per-sample work: each tensor is indexed once with the whole batch's
    indices, which gives the same batch as collating the samples, much faster.

    ``num_workers > 0`` fetches batches in that many worker processes, up to ``prefetch_factor``
    batches ahead each; the batches and their order are those of ``num_workers=0`` with the same
    seed. Each worker's generators (the library's, ``random``'s, NumPy's global one) are seeded
    with ``base_seed + worker_id``, a base seed drawn at each ``iter()``; ``worker_init_fn(id)``
    runs first in each worker. ``persistent_workers=True`` keeps the workers between epochs.
    An exception in a worker is raised again in the main process with the worker's traceback;
    a worker that dies raises a ``RuntimeError`` naming it, and ``timeout > 0`` bounds the wait
    for a batch. ``pin_memory`` is accepted and does nothing (there is no GPU memory to pin).

    >>> import scratchgrad as sg
    >>> ds = TensorDataset(sg.arange(10).float(), sg.arange(10))
    >>> loader = DataLoader(ds, batch_size=4, shuffle=True, generator=sg.Generator(0))
    >>> len(loader), [y.shape for x, y in loader]
    (3, [scratchgrad.Size([4]), scratchgrad.Size([4]), scratchgrad.Size([2])])
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable[Any] | None = None,
        batch_sampler: Sampler | Iterable[list[Any]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        _check_worker_options(
            num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context
        )
        check_generator(generator, "DataLoader")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler)):
                if value not in (None, False):
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, "
                        f"but got {name}={value}"
                    )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}"
                )
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if sampler is None and not iterable:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else (SequentialSampler(dataset))
            )
        if batch_size is not None:
            # Made for an IterableDataset too, where it only checks batch_size and drop_last.
            batch_sampler = BatchSampler([] if iterable else sampler, batch_size, drop_last)
        auto_collation = batch_sampler is not None

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = None if iterable else batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn or (default_collate if auto_collation else default_convert)
        self.num_workers = num_workers
        self.prefetch_factor = 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor
        self.persistent_workers = persistent_workers
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.in_order = in_order
        self._iterator: _MultiProcessIter | None = None  # kept with persistent workers
        self._auto_collation = auto_collation
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        # What the order and the batches were built from is fixed, as in PyTorch, whose message
        # this is; the rest (collate_fn, num_workers, ...) may change between epochs.
        if name in _FIXED_OPTIONS and getattr(self, "_initialized", False):
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is initialized"
            )
        super().__setattr__(name, value)

    def _fetcher_maker(self) -> Callable[[Any], MapFetcher | IterableFetcher]:
        """``make_fetcher`` with this loader's options as they are now (``collate_fn`` may have
        been set since ``__init__``); a partial of a module function, so that spawned workers
        can unpickle it without the loader."""
        iterable = isinstance(self.dataset, IterableDataset)
        return functools.partial(
            make_fetcher, iterable, self._auto_collation, self.collate_fn, self.drop_last
        )

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # a TypeError if the dataset has no length, as in PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def _start_epoch(self) -> tuple[int, Iterator[Any]]:
        """Draw this epoch's base seed for the workers, then its order (in PyTorch's sequence,
        whatever the number of workers, so the library's generator moves on identically).
        Returns the seed and the tasks: index lists (or indices), or for an
        ``IterableDataset`` endless batch sizes."""
        base_seed = int(random_source(self.generator).integers(2**62))
        if isinstance(self.dataset, IterableDataset):
            return base_seed, itertools.repeat(self.batch_size)
        order = self.batch_sampler if self.batch_sampler is not None else self.sampler
        return base_seed, iter(order)

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            if self.timeout != 0:  # PyTorch's error: nothing would bound the wait
                raise AssertionError("DataLoader without workers requires timeout == 0")
            _, tasks = self._start_epoch()
            return _SingleProcessIter(self, self._single_process(tasks))
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        if self._iterator is None or not self._iterator.alive:
            self._iterator = _MultiProcessIter(self)
        else:
            self._iterator.start_epoch()
        return self._iterator

    def _single_process(self, tasks: Iterator[Any]) -> Iterator[Any]:
        fetcher = self._fetcher_maker()(self.dataset)
        for task in tasks:
            try:
                yield fetcher.fetch(task)
            except Exhausted:
                return


class _SingleProcessIter:
    """An epoch of a ``DataLoader`` without workers: its batches, and ``len`` as the loader's
    (PyTorch's iterators have one)."""

    def __init__(self, loader: DataLoader, batches: Iterator[Any]) -> None:
        self.loader, self.batches = loader, batches

    def __iter__(self) -> _SingleProcessIter:
        return self

    def __next__(self) -> Any:
        return next(self.batches)

    def __len__(self) -> int:
        return len(self.loader)


_END = object()  # marks the end of an epoch's tasks


_FIXED_OPTIONS = (
    "batch_size",
    "batch_sampler",
    "sampler",
    "drop_last",
    "dataset",
    "persistent_workers",
)


def _check_worker_options(
    num_workers: int,
    timeout: float,
    prefetch_factor: int | None,
    persistent_workers: bool,
    context: Any,
) -> None:
    """PyTorch's checks of the multiprocessing options, with its messages."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable "
            f"multiprocessing (got {num_workers!r})"
        )
    if not timeout >= 0:
        raise ValueError(f"timeout option should be non-negative (got {timeout!r})")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing. Let "
            "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if prefetch_factor is not None and not (
        isinstance(prefetch_factor, int) and prefetch_factor > 0
    ):
        raise ValueError(
            f"prefetch_factor option should be a positive int (got {prefetch_factor!r})"
        )
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if context is None:
        return
    if num_workers == 0:
        raise ValueError(
            "multiprocessing_context can only be used with multi-process loading "
            f"(num_workers > 0), but got num_workers={num_workers}"
        )
    methods = multiprocessing.get_all_start_methods()
    if isinstance(context, str) and context not in methods:
        raise ValueError(
            f"multiprocessing_context option should specify a valid start method in {methods!r}, "
            f"but got multiprocessing_context={context!r}"
        )
    if not isinstance(context, str | multiprocessing.context.BaseContext):
        raise TypeError(
            "multiprocessing_context option should be a valid context object or a string "
            f"specifying the start method, but got multiprocessing_context={context}"
        )


def _context(choice: Any) -> Any:
    """The multiprocessing context: the one given (a name or a context), else "fork" on Linux
    (workers then inherit the dataset without pickling it), else the platform's default
    (macOS's system libraries are not safe to fork, which is why Python spawns there)."""
    if choice is None and sys.platform.startswith("linux"):
        choice = "fork"
    if choice is None or isinstance(choice, str):
        return multiprocessing.get_context(choice)
    return choice


class _MultiProcessIter:
    """An epoch (or, with persistent workers, every epoch) of a ``DataLoader`` with workers.

    Task ``k`` goes to worker ``k % num_workers`` (skipping workers whose ``IterableDataset``
    is exhausted); at most ``prefetch_factor * num_workers`` tasks are out at once; results are
    handed out in task order (or as they come with ``in_order=False``). Results carry their
    epoch number, so those of an abandoned epoch are dropped when they arrive.
    """

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        base_seed, tasks = loader._start_epoch()
        context = _context(loader.multiprocessing_context)
        n = loader.num_workers
        self.result_queue = context.Queue()
        self.index_queues, self.workers = [], []
        for worker_id in range(n):
            index_queue = context.Queue()
            worker = context.Process(
                target=worker_loop,
                args=(
                    loader._fetcher_maker(),
                    loader.dataset,
                    index_queue,
                    self.result_queue,
                    worker_id,
                    n,
                    base_seed + worker_id,
                    loader.worker_init_fn,
                ),
                daemon=True,
            )
            worker.start()
            self.index_queues.append(index_queue)
            self.workers.append(worker)
        # Stops the workers when this iterator is exhausted, fails, is dropped, or at exit.
        self._shutdown = weakref.finalize(
            self, _stop_workers, self.workers, self.index_queues, self.result_queue
        )
        self.epoch = -1
        self._begin(tasks)

    @property
    def alive(self) -> bool:
        return self._shutdown.alive

    def start_epoch(self) -> None:
        """Start the next epoch with the same workers (``persistent_workers=True``)."""
        _, tasks = self.loader._start_epoch()  # the workers keep the seeds they started with
        for index_queue in self.index_queues:  # each worker restarts its iteration
            index_queue.put((self.epoch + 1, None, None))
        self._begin(tasks)

    def _begin(self, tasks: Iterator[Any]) -> None:
        self.epoch += 1
        self.tasks = tasks
        self.sent = self.next_out = 0  # tasks sent; the next task to hand out
        self.worker_of: dict[int, int] = {}  # task -> worker, for tasks not handed out yet
        self.results: dict[int, Any] = {}  # results that arrived before their turn
        self.active = [True] * len(self.workers)
        self.turns = itertools.cycle(range(len(self.workers)))
        for _ in range(self.loader.prefetch_factor * len(self.workers)):
            self._send_task()

    def _send_task(self) -> None:
        if not any(self.active):
            return
        task = next(self.tasks, _END)
        if task is _END:
            return
        worker = next(w for w in self.turns if self.active[w])
        self.index_queues[worker].put((self.epoch, self.sent, task))
        self.worker_of[self.sent] = worker
        self.sent += 1

    def __iter__(self) -> _MultiProcessIter:
        return self

    def __len__(self) -> int:
        return len(self.loader)

    def __next__(self) -> Any:
        while True:
            # Skip the tasks that will bring nothing: handed out already, or sent to a worker
            # whose stream ended.
            while self.next_out < self.sent and self.next_out not in self.results:
                worker = self.worker_of.get(self.next_out)
                if worker is not None and self.active[worker]:
                    break
                self.worker_of.pop(self.next_out, None)
                self.next_out += 1
            if self.next_out >= self.sent:
                if not self.loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            if self.next_out in self.results:
                return self._hand_out(self.next_out, self.results.pop(self.next_out))
            task_id, result = self._receive()
            if isinstance(result, WorkerDone):
                self.active[result.worker_id] = False
                self.worker_of.pop(task_id, None)
                self._send_task()
            elif task_id == self.next_out or not self.loader.in_order:
                return self._hand_out(task_id, result)
            else:
                self.results[task_id] = result

    def _hand_out(self, task_id: int, result: Any) -> Any:
        self.worker_of.pop(task_id, None)
        if task_id == self.next_out:
            self.next_out += 1
        if isinstance(result, WorkerError):
            self._fail()
            result.reraise()
        self._send_task()
        return result

    def _receive(self) -> tuple[int, Any]:
        """The next result of this epoch; a clear error, never a hang, if a worker died or
        ``timeout`` passed."""
        timeout = self.loader.timeout
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = (
                POLL_INTERVAL
                if deadline is None
                else min(POLL_INTERVAL, deadline - time.monotonic())
            )
            try:
                epoch, task_id, payload = self.result_queue.get(timeout=max(wait, 0.0))
            except queue.Empty:
                dead = [w for w in self.workers if not w.is_alive()]
                if dead:
                    self._fail()
                    pids = ", ".join(str(w.pid) for w in dead)
                    codes = ", ".join(str(w.exitcode) for w in dead)
                    raise RuntimeError(
                        f"DataLoader worker (pid(s) {pids}) exited unexpectedly with exit "
                        f"code(s) {codes}"
                    ) from None
                if deadline is not None and time.monotonic() >= deadline:
                    self._fail()
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
                continue
            if epoch == self.epoch:
                # The worker pickled the batch itself (see worker.py); only the loader's own
                # workers write to this queue.
                return task_id, pickle.loads(payload)

    def _fail(self) -> None:
        self._shutdown()
        if self.loader._iterator is self:
            self.loader._iterator = None


def _stop_workers(workers: list[Any], index_queues: list[Any], result_queue: Any) -> None:
    """Ask every worker to stop, give them a second, then terminate those still running."""
    for index_queue in index_queues:
        with contextlib.suppress(OSError, ValueError):  # a queue already closed
            index_queue.put(None)
    deadline = time.monotonic() + 1.0
    for worker in workers:
        worker.join(timeout=max(deadline - time.monotonic(), 0.0))
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
            worker.join()
    for q in [*index_queues, result_queue]:
        q.cancel_join_thread()
        q.close()


def _tensor_rows(dataset: Any) -> tuple[tuple[Tensor, ...], np.ndarray | None] | None:
    """The tensors behind a ``TensorDataset`` (maybe inside ``Subset``s) and the rows it uses.

    ``rows[i]`` is the row of the tensors that is sample ``i`` (``None``: row ``i`` itself).
    Returns ``None`` for any other dataset. Exact types are checked, not ``isinstance``: a
    subclass may override ``__getitem__``, and then only the item-by-item path is right.
    """
    rows = None
    while type(dataset) is Subset:
        indices = np.asarray(dataset.indices)
        if indices.dtype.kind not in "iu":  # floats, say: sample by sample, as in fetch
            return None
        rows = indices if rows is None else indices[rows]
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset:
        return None
    return dataset.tensors, rows
