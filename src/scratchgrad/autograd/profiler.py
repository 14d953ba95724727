"""The profiler's core: time every op and every backward node while a ``profile`` records.

Nothing is paid outside a profile: while one records, ``Function.apply`` (every op's forward)
and the engine's ``_propagate`` (one call per backward node) are swapped for timed versions,
and put back when it stops, so the eager path reads no flag at all. Events nest by a stack per
thread: an event's self time is its time less its children's (a backward node's children are
the ops its backward ran). ``scratchgrad.profiler`` (PyTorch's ``torch.profiler``) adds the
schedule on top of this, as PyTorch's builds on ``torch.autograd.profiler``.

Names: an op is its primitive's name in lower case (``matmul``, ``linear``, ``mul``; PyTorch's
``aten::mm``), a user's Function its class name, a backward node PyTorch's ``MulBackward0``.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from scratchgrad import cuda
from scratchgrad.autograd import engine, function
from scratchgrad.autograd.function import Function
from scratchgrad.tensor import Tensor

_PLAIN_PROPAGATE = engine._propagate
_recording: _Recording | None = None  # the one recording profile, else None


class FunctionEvent:
    """One timed call: an op, a backward node or a ``record_function`` range (times in
    microseconds, as PyTorch's)."""

    count = 1
    device_time_total = self_device_time_total = 0.0  # (all on the CPU)

    def __init__(self, name: str, thread: int, start_us: float, input_shapes: list) -> None:
        self.thread, self.input_shapes, self.trace_name = thread, input_shapes, name
        # the profiler's numbered step ranges make one row of the table, as PyTorch's
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.time_range_start, self.time_range_end = start_us, start_us
        self.children_us, self.children_bytes, self.self_cpu_memory_usage = 0.0, 0, 0

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range_end - self.time_range_start

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - self.children_us

    @property
    def cpu_memory_usage(self) -> int:
        return self.self_cpu_memory_usage + self.children_bytes


class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them) added up, as PyTorch's;
    ``cpu_time`` is the average per call. Device times are 0: everything runs on the CPU."""

    device_time_total = self_device_time_total = 0.0

    def __init__(self, key: str, input_shapes: str) -> None:
        self.key, self.input_shapes, self.count = key, input_shapes, 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0

    def add(self, event: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={_time(self.self_cpu_time_total)} "
            f"cpu_time={_time(self.cpu_time)} count={self.count}>"
        )


class EventList(list):
    """A list of events, as PyTorch's: ``table`` prints them."""

    def __init__(self, events: Any = (), profile_memory: bool = False) -> None:
        super().__init__(events)
        self.profile_memory = profile_memory

    def table(self, sort_by: str | None = None, row_limit: int = 100, **_: Any) -> str:
        """PyTorch's text table: one row per entry, sorted by the attribute ``sort_by``
        (``"cpu_time_total"``, ``"self_cpu_time_total"``, ``"count"``,
        ``"self_cpu_memory_usage"``...) largest first, at most ``row_limit`` rows; percentages
        are of the total self CPU time, as PyTorch's."""
        return _table(self, sort_by, row_limit, self.profile_memory)


class _Recording:
    """The events of one recording, and the stack of open events of each thread."""

    def __init__(self, record_shapes: bool, profile_memory: bool) -> None:
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.events: list[FunctionEvent] = []
        self.local = threading.local()

    def _stack(self) -> list:
        """This thread's open events, innermost last."""
        return self.local.__dict__.setdefault("stack", [])

    def open(self, name: str, args: tuple = ()) -> FunctionEvent:
        shapes = _shapes(args) if self.record_shapes else []
        stack = self._stack()
        event = FunctionEvent(name, threading.get_ident(), time.perf_counter_ns() / 1e3, shapes)
        stack.append(event)
        self.events.append(event)  # in the order they began, as PyTorch lists them
        return event

    def close(self, event: FunctionEvent, out: Any = None) -> None:
        event.time_range_end = time.perf_counter_ns() / 1e3
        if self.profile_memory and out is not None:
            event.self_cpu_memory_usage = _nbytes(out)
        stack = self._stack()
        if event in stack:  # (not when a range closed out of order already took it off)
            while stack.pop() is not event:  # a range left open inside this one
                pass
        if stack:
            stack[-1].children_us += event.cpu_time_total
            stack[-1].children_bytes += event.cpu_memory_usage


def _shapes(args: tuple) -> list:
    """PyTorch's "Input Shapes": a shape per argument, ``[]`` for what is not a tensor."""
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


def _nbytes(out: Any) -> int:
    """The bytes of the tensors an op made."""
    outs = out if isinstance(out, tuple) else (out,)
    return sum(o.array.nbytes for o in outs if isinstance(o, Tensor))


def _timed_apply(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``Function.apply`` while a profile records."""
    recording, out = _recording, None
    event = recording.open(cls.__name__.lower() if cls.builtin else cls.__name__, args)
    try:
        out = function.untimed_apply(cls, *args, **kwargs)
        return out
    finally:
        recording.close(event, out)


def _timed_propagate(node: Function, *rest: Any) -> None:
    """The engine's ``_propagate`` (one backward node) while a profile records."""
    recording = _recording
    event = recording.open(node.name())
    try:
        _PLAIN_PROPAGATE(node, *rest)
    finally:
        recording.close(event)


def _start(recording: _Recording) -> None:
    global _recording
    if _recording is not None:
        raise RuntimeError("profiler: another profile is already recording; stop it first")
    _recording = recording
    function.time_apply(_timed_apply)
    engine._propagate = _timed_propagate


def _stop() -> None:
    global _recording
    _recording = None
    function.time_apply(None)
    engine._propagate = _PLAIN_PROPAGATE


class profile:
    """Record the time of every op, backward node and ``record_function`` range in the block,
    as ``torch.autograd.profiler.profile``. ``use_cuda`` is accepted and ignored on a machine
    without CUDA, with PyTorch's warning. ``profile_memory``: the bytes of the tensors each op
    made (PyTorch also counts the frees, as negative bytes; nothing is freed inside an op here).

    >>> import scratchgrad as sg
    >>> x = sg.ones(3, 4)
    >>> with profile() as prof:
    ...     y = (x @ x.T).relu()
    >>> sorted(e.key for e in prof.key_averages())
    ['matmul', 'permute', 'relu']
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        **_: Any,
    ) -> None:
        if use_cuda:
            _warn_no_cuda()
        self.enabled, self.record_shapes, self.profile_memory = (
            enabled,
            record_shapes,
            profile_memory,
        )
        self._recording: _Recording | None = None

    def __enter__(self) -> profile:
        if self.enabled:
            self._recording = _Recording(self.record_shapes, self.profile_memory)
            _start(self._recording)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._recording is not None and _recording is self._recording:
            _stop()

    def events(self) -> EventList:
        """Every event recorded, in the order they began."""
        events = self._recording.events if self._recording is not None else ()
        return EventList(events, self.profile_memory)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events added up per name (and per input shapes too, if asked: needs
        ``record_shapes=True``), in the order each name first began."""
        averages: dict[tuple, FunctionEventAvg] = {}
        for event in self.events():
            shapes = str(event.input_shapes) if group_by_input_shape else ""
            average = averages.get((event.name, shapes))
            if average is None:
                average = averages[event.name, shapes] = FunctionEventAvg(event.name, shapes)
            average.add(event)
        return EventList(averages.values(), self.profile_memory)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **_: Any) -> str:
        """The table of every event, unaggregated (see ``EventList.table``)."""
        return self.events().table(sort_by, row_limit)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON, for ``chrome://tracing`` or Perfetto)."""
        trace = [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": event.trace_name,
                "pid": os.getpid(),
                "tid": event.thread,
                "ts": event.time_range_start,
                "dur": event.cpu_time_total,
                "args": {"Input Dims": event.input_shapes} if self.record_shapes else {},
            }
            for event in self.events()
        ]
        with open(path, "w") as file:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, file)


def _warn_no_cuda() -> None:
    if not cuda.is_available():
        warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=3)


class record_function:
    """Name a range of code: while a profile records, the range is an event in its table (with
    the ops it ran as its children), as ``torch.autograd.profiler.record_function``. Used as a
    context manager or a decorator; outside a profile it costs almost nothing.

    >>> import scratchgrad as sg
    >>> with profile() as prof:
    ...     with record_function("double"):
    ...         y = sg.ones(2) * 2
    >>> [(e.key, e.count) for e in prof.key_averages()]
    [('double', 1), ('mul', 1)]
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._opened: tuple | None = None

    def __enter__(self) -> record_function:
        if _recording is not None:
            self._opened = _recording, _recording.open(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._opened is not None and self._opened[0] is _recording:  # still that recording
            _recording.close(self._opened[1])
        self._opened = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return fn(*args, **kwargs)

        return recorded


# ---- the table --------------------------------------------------------------------------------


def _time(us: float) -> str:
    """PyTorch's format of a time in microseconds."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _memory(nbytes: int) -> str:
    """PyTorch's format of a size in bytes."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _table(events: list, sort_by: str | None, row_limit: int, profile_memory: bool) -> str:
    """PyTorch's table: columns right-aligned, two spaces apart, a dashed line above and below
    the header and at the end, then the total self CPU time."""
    if not events:
        return ""
    if sort_by is not None:
        attribute = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attribute), reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    headers += ["CPU Mem", "Self CPU Mem"] * profile_memory + ["# of Calls"]
    shaped = any(getattr(e, "input_shapes", None) for e in events)
    rows = []
    for e in events[:row_limit]:
        name = e.key if len(e.key) < 52 else e.key[:52] + "..."
        count = e.count
        row = [name, _share(e.self_cpu_time_total, total), _time(e.self_cpu_time_total)]
        row += [_share(e.cpu_time_total, total), _time(e.cpu_time_total)]
        row += [_time(e.cpu_time_total / count)]
        if profile_memory:
            row += [_memory(e.cpu_memory_usage), _memory(e.self_cpu_memory_usage)]
        rows.append([*row, str(count)] + [str(e.input_shapes)] * shaped)
    widths = [min(max(len(e.key) for e in events) + 4, 55)] + [12] * (len(headers) - 1)
    if shaped:
        headers.append("Input Shapes")
        widths.append(min(max(len(str(e.input_shapes)) for e in events) + 4, 80))
    line = "".join("-" * w + "  " for w in widths)
    lines = [line, _row(headers, widths), line, *(_row(r, widths) for r in rows), line]
    return "\n".join([*lines, f"Self CPU time total: {_time(total)}", ""])


def _row(values: list, widths: list) -> str:
    return "".join(f"{v[:w]:>{w}}  " for v, w in zip(values, widths))


def _share(us: float, total: float) -> str:
    return f"{us * 100 / total:.2f}%" if total else "NaN"
