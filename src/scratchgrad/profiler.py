"""``torch.profiler``: time the ops of a block or of chosen training steps, as PyTorch's.

``profile`` records what ``scratchgrad.autograd.profiler`` times (every op, backward node and
``record_function`` range); with a ``schedule`` it records only the steps the schedule marks,
a cycle at a time, and calls ``on_trace_ready`` at the end of each cycle, as PyTorch's.
Everything runs on the CPU, so ``ProfilerActivity.CUDA`` is accepted and, where there is no
CUDA, ignored with PyTorch's warning.
"""

from __future__ import annotations

import enum
import os
import socket
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any
from warnings import warn

from scratchgrad.autograd import profiler as _core
from scratchgrad.autograd.profiler import EventList, record_function

__all__ = [
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What to profile: the CPU's ops, or a GPU's kernels (none here)."""

    CPU = 0
    CUDA = 2


class ProfilerAction(enum.Enum):
    """What the profiler does during a step, as a ``schedule`` says."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """The activities this machine can profile: the CPU's."""
    return {ProfilerActivity.CPU}


def schedule(
    *,
    wait: int,
    warmup: int,
    active: int,
    repeat: int = 0,
    skip_first: int = 0,
    skip_first_wait: int = 0,
) -> Callable[[int], ProfilerAction]:
    """The action for each step, as ``torch.profiler.schedule``: skip ``skip_first`` steps,
    then cycles of ``wait`` steps doing nothing, ``warmup`` steps warming up and ``active``
    steps recording (the last of them ``RECORD_AND_SAVE``, the end of a cycle), ``repeat``
    cycles (0: for ever). ``skip_first_wait``: the first cycle has no wait.

    >>> act = schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [act(step).name for step in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0)."
        )
    if warmup == 0:
        warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step = step - skip_first + (wait if skip_first_wait else 0)
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(
    dir_name: str, worker_name: str | None = None, use_gzip: bool = False
) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each cycle's Chrome trace into ``dir_name`` (made if
    missing) as ``<worker>.<time in ns>.pt.trace.json``, PyTorch's name, the worker
    ``<host>_<pid>`` unless given. ``use_gzip`` is refused: nothing here reads it back."""
    if use_gzip:
        raise NotImplementedError("tensorboard_trace_handler: use_gzip=True is not supported")

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(dir_name, f"{worker}.{time.time_ns()}.pt.trace.json"))

    return handler


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class profile:
    """Profile a block, as ``torch.profiler.profile``: without a ``schedule`` every op in it is
    recorded; with one, ``step()`` marks the end of each step, only the steps the schedule
    marks are recorded (each as a ``ProfilerStep#<n>`` range), ``on_trace_ready(prof)`` is
    called at the end of each cycle, and a new cycle starts from no events (as PyTorch's).

    ``record_shapes`` keeps each op's input shapes (``key_averages(group_by_input_shape=True)``),
    ``profile_memory`` the bytes of the tensors each op made; ``with_stack`` and the rest of
    PyTorch's options are accepted and ignored.

    >>> import scratchgrad as sg
    >>> x = sg.ones(3, 3)
    >>> with profile(activities=[ProfilerActivity.CPU]) as prof:
    ...     for _ in range(3):
    ...         y = x @ x
    >>> [(e.key, e.count) for e in prof.key_averages()]
    [('matmul', 3)]
    """

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        **_: Any,
    ) -> None:
        if activities is not None and ProfilerActivity.CUDA in set(activities):
            _core._warn_no_cuda()
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.schedule = schedule or _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self.profiler: _core.profile | None = None
        self._step_range: record_function | None = None
        A = ProfilerAction
        prepare, start, stop, ready = self._prepare, self._start, self._stop, self._ready
        # what to do on going from one action to the next (None: the end), as PyTorch's
        self._transitions: dict[tuple, list[Callable[[], Any]]] = {
            (A.NONE, A.WARMUP): [prepare],
            (A.NONE, A.RECORD): [prepare, start],
            (A.NONE, A.RECORD_AND_SAVE): [prepare, start],
            (A.WARMUP, A.NONE): [
                partial(warn, "Incorrect schedule: WARMUP followed by NONE"),
                start,
                stop,
            ],
            (A.WARMUP, A.RECORD): [start],
            (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [
                partial(warn, "Incorrect schedule: RECORD followed by NONE"),
                stop,
            ],
            (A.RECORD, A.WARMUP): [
                partial(warn, "Incorrect schedule: RECORD followed by WARMUP"),
                stop,
            ],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [stop, ready, prepare],
            (A.RECORD_AND_SAVE, A.RECORD): [stop, ready, prepare, start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [stop, ready, prepare, start],
            (A.WARMUP, None): [start, stop],
            (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready],
        }

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Begin, as entering the ``with`` block does."""
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    def stop(self) -> None:
        """End, as leaving the ``with`` block does."""
        self._exit_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the end of a step: the schedule's action for the next one takes effect."""
        self._exit_step()
        previous, self.step_num = self.current_action, self.step_num + 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._enter_step()

    def events(self) -> EventList:
        """The events of the last cycle recorded, in the order they began."""
        return self._last().events()

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The last cycle's events added up per name (and per input shapes, if asked), with
        ``.table(sort_by=..., row_limit=...)`` to print them.

        >>> with profile() as prof:
        ...     with record_function("nothing"):
        ...         pass
        >>> [(e.key, e.count) for e in prof.key_averages()]
        [('nothing', 1)]
        >>> "# of Calls" in prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
        True
        """
        return self._last().key_averages(group_by_input_shape)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last cycle's events as a Chrome trace (JSON) to ``path``."""
        self._last().export_chrome_trace(path)

    def _last(self) -> _core.profile:
        if self.profiler is None:
            raise RuntimeError("profiler: no step was recorded yet (see the schedule)")
        return self.profiler

    def _transit(self, previous: ProfilerAction, current: ProfilerAction | None) -> None:
        for action in self._transitions.get((previous, current), ()):
            action()

    def _prepare(self) -> None:
        self.profiler = _core.profile(
            record_shapes=self.record_shapes, profile_memory=self.profile_memory
        )

    def _start(self) -> None:
        self.profiler.__enter__()

    def _stop(self) -> None:
        self.profiler.__exit__(None, None, None)

    def _ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _enter_step(self) -> None:
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _exit_step(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
