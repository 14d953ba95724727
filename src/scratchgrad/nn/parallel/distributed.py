"""``DistributedDataParallel``: one model, one copy per process, gradients averaged over them.

Each process runs the module on its own share of the batch. During ``backward()``, a hook on
each parameter (``Tensor.register_post_accumulate_grad_hook``) copies its finished gradient into
a flat bucket; once a bucket is full, its all-reduce starts (``async_op``) while the backward
walk goes on; once the last bucket has started, the averaged buckets are waited for and copied
back into ``.grad``. Buckets start in a fixed order, so every process issues the same sequence of
collectives (MPI matches them by order), as PyTorch's reducer does.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from scratchgrad import distributed as dist
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.distributed.collectives import all_reduce_unchecked
from scratchgrad.distributed.process_group import default_group
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor

_FIRST_BUCKET_BYTES = 1 << 20  # PyTorch's: a small first bucket starts communicating early
_MIB = 1 << 20


class _Bucket:
    """Parameters whose gradients travel together in one flat buffer of one dtype."""

    def __init__(self, params: list[Tensor]) -> None:
        self.params = params
        sizes = [p.array.size for p in params]
        self.offsets = np.cumsum([0, *sizes]).tolist()
        self.flat = Tensor._make(np.zeros(self.offsets[-1], params[0].array.dtype))
        self.ready = [False] * len(params)
        self.work = None

    def slot(self, i: int) -> np.ndarray:
        return self.flat.array[self.offsets[i] : self.offsets[i + 1]]

    def reset(self) -> None:
        self.ready = [False] * len(self.params)
        self.work = None


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` over the processes of ``process_group`` (the
    default group if None, or one from ``new_group``: the processes outside it take no part,
    and must not wrap the module with it), as PyTorch's.

    At construction, every process gets the parameters and buffers of the group's rank 0.
    Each forward runs ``module`` (after copying its buffers, such as batch norm's running
    statistics, to the others when ``broadcast_buffers``); the following ``backward()``
    leaves in every parameter's ``.grad`` the gradient averaged over the group's processes.
    Inside ``no_sync()`` the gradients only accumulate locally, to be averaged by the first
    backward after it.

    With ``find_unused_parameters=True``, parameters that a forward did not use are found by
    walking its graph and count as a zero gradient here (left as they are where no process used
    them); without it, every parameter must get a gradient in every backward, as in PyTorch.
    ``bucket_cap_mb`` bounds the size of a bucket (25 MB as PyTorch; the first is at most 1 MB).
    ``device_ids`` and ``output_device`` must be None (the module is on the CPU).

    >>> import scratchgrad as sg
    >>> import scratchgrad.distributed as dist
    >>> from scratchgrad import nn
    >>> dist.init_process_group("mpi")
    >>> model = nn.parallel.DistributedDataParallel(nn.Linear(3, 1))
    >>> model(sg.ones(4, 3)).sum().backward()
    >>> model.module.weight.grad.shape
    scratchgrad.Size([1, 3])
    >>> dist.destroy_process_group()
    """

    def __init__(
        self,
        module: Module,
        device_ids: list[int] | None = None,
        output_device: int | None = None,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        init_sync: bool = True,
    ) -> None:
        super().__init__()
        if device_ids is not None or output_device is not None:
            raise ValueError(
                "DistributedDataParallel: device_ids and output_device must be None for a "
                f"module on the CPU, got {device_ids} and {output_device}"
            )
        # an error when there is none, or in a process outside a group from new_group
        world_size = default_group(process_group).size
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        params = [p for p in module.parameters() if p.requires_grad]
        if init_sync:
            _broadcast_coalesced([*module.parameters(), *module.buffers()], process_group)
        cap = _MIB * (25 if bucket_cap_mb is None else bucket_cap_mb)
        buckets = _assign_buckets(params, cap)
        _check_alike_everywhere(buckets, process_group)
        self._reducer = _Reducer(params, buckets, process_group, world_size, find_unused_parameters)
        hook = _hook_for(weakref.ref(self._reducer))  # (the hooks go with the wrapper)
        handles = [p.register_post_accumulate_grad_hook(hook) for p in params]
        weakref.finalize(self, _remove_hooks, handles)

    @property
    def require_forward_param_sync(self) -> bool:
        """Whether the next forward broadcasts the buffers: the last forward expected its
        backward to average (not under no_sync() or no_grad())."""
        return self._reducer.forward_param_sync

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        recorder = capture_hook.recorder
        if recorder is None or not recorder.here():
            self._before_forward()
            out = self.module(*inputs, **kwargs)
            self._after_forward(is_grad_enabled(), out)
            return out
        # scratchgrad.jit: the reducer's Python is noted as calls a replay makes again (and
        # the gradient hooks note theirs), so a replay averages each step's gradients
        if self._reducer.find_unused:
            recorder.refuse(
                "DistributedDataParallel(find_unused_parameters=True) (the parameters a "
                "forward used are found by walking its graph, which a replay does not make)",
                "Use every parameter in each forward and pass find_unused_parameters=False",
            )
        recorder.replayed(DistributedDataParallel._before_forward, self)
        out = self.module(*inputs, **kwargs)
        recorder.replayed(DistributedDataParallel._after_forward, self, is_grad_enabled())
        return out

    def _before_forward(self) -> None:
        reducer = self._reducer
        if reducer.reducing:
            names = {id(p): name for name, p in self.module.named_parameters()}
            raise RuntimeError(
                "DistributedDataParallel: Expected to have finished reduction in the prior "
                "iteration before starting a new one: some parameters got no gradient in the "
                "last backward (or it was not run). If the module has parameters that were not "
                "used in producing the loss, pass find_unused_parameters=True; unused: "
                f"{[names[id(p)] for p in reducer.unready()]}"
            )
        if self.broadcast_buffers and reducer.forward_param_sync:
            _broadcast_coalesced(list(self.module.buffers()), reducer.group)

    def _after_forward(self, grad_enabled: bool, out: Any = None) -> None:
        """Expect a backward that averages, unless under no_sync() or no_grad(). (``out``: the
        forward's result, whose graph find_unused_parameters walks.)"""
        # NOTE: as PyTorch's, a forward under no_sync() or no_grad() leaves the next forward's
        # buffers unsynchronised
        reducer = self._reducer
        reducer.forward_param_sync = grad_enabled and self.require_backward_grad_sync
        if reducer.forward_param_sync:
            reducer.prepare_for_backward(out)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes of forwards run inside only accumulate the gradients locally.
        (Under ``scratchgrad.jit``, call the jitted step inside it: a replay reads the setting
        at each call.)"""
        recorder = capture_hook.recorder
        if recorder is not None and recorder.here():
            recorder.refuse(
                "DistributedDataParallel.no_sync()",
                "Call the jitted step inside `with model.no_sync():` instead (each replay "
                "reads the setting then)",
            )
        previous, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


class _Reducer:
    """The wrapper's gradient averaging: its buckets, and where the reduction of the backward
    under way stands. A plain object, not attributes of the module: a jitted step replays
    these calls, and a module's attribute set by a replay would mark it changed (see
    ``nn.module.mark_changed``), so that every call would record again."""

    def __init__(
        self,
        params: list[Tensor],
        buckets: list[_Bucket],
        group: Any,
        world_size: int,
        find_unused: bool,
    ) -> None:
        self.params, self.buckets = params, buckets
        self.group, self.world_size = group, world_size  # (None: the default group)
        self.find_unused = find_unused
        self.place = {}  # id(param) -> (its bucket, its index there)
        for bucket in buckets:
            for i, p in enumerate(bucket.params):
                self.place[id(p)] = (bucket, i)
        self.forward_param_sync = True  # whether the next forward broadcasts buffers
        self.reducing = False  # a forward expects its backward to average the gradients
        self.next_bucket = 0
        self.unused = []  # the parameters that the forward did not use, until its backward
        self.locally_used = set()  # ids of the parameters that got a gradient since the last
        # reduction (no_sync() backwards included), with find_unused_parameters

    def prepare_for_backward(self, out: Any) -> None:
        for bucket in self.buckets:
            bucket.reset()
        self.next_bucket, self.reducing = 0, bool(self.buckets)
        if self.find_unused:
            used = _leaves_reached(out)
            self.unused = [p for p in self.params if id(p) not in used]

    def mark_unused_ready(self) -> None:
        """At the backward's first gradient, the parameters its forward did not use go into
        their buckets with the gradient they have then (no_sync()'s, or zero), as PyTorch's."""
        unused, self.unused = self.unused, []
        for p in unused:
            self.mark_ready(p, p.grad)

    def mark_ready(self, param: Tensor, grad: Tensor | None) -> None:
        bucket, i = self.place[id(param)]
        if bucket.ready[i]:
            raise RuntimeError(
                "DistributedDataParallel: a parameter got its gradient twice before the "
                "gradients were averaged; run one backward per forward (or use no_sync())"
            )
        if grad is None:
            bucket.slot(i)[...] = 0
        else:
            _divide_into(bucket.slot(i), grad.array, self.world_size)
        bucket.ready[i] = True
        self.start_ready_buckets()

    def start_ready_buckets(self) -> None:
        """Start the all-reduce of every full bucket whose predecessors have all started."""
        while self.next_bucket < len(self.buckets) and all(self.buckets[self.next_bucket].ready):
            bucket = self.buckets[self.next_bucket]
            # (alike on every process: _check_alike_everywhere)
            bucket.work = all_reduce_unchecked(bucket.flat, dist.ReduceOp.SUM, self.group)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self.finish_reduction()

    def finish_reduction(self) -> None:
        """Wait for the buckets and copy the averages into ``.grad``."""
        self.reducing = False
        for bucket in self.buckets:
            bucket.work.wait()
        used = self.used_anywhere() if self.find_unused else None
        for bucket in self.buckets:
            for i, p in enumerate(bucket.params):
                if used is not None and not used[id(p)]:
                    continue  # no process used it: its .grad stays as it is, as PyTorch's
                average = bucket.slot(i).reshape(p.array.shape)
                if p.grad is not None:
                    p.grad.array[...] = average
                else:
                    p.grad = Tensor._make(average.copy())

    def used_anywhere(self) -> dict[int, bool]:
        """Whether each parameter got a gradient on at least one process since the last
        reduction (one all-reduce)."""
        local = Tensor._make(np.array([id(p) in self.locally_used for p in self.params]))
        self.locally_used = set()
        dist.all_reduce(local, op=dist.ReduceOp.MAX, group=self.group)
        return {id(p): bool(flag) for p, flag in zip(self.params, local.array)}

    def unready(self) -> list[Tensor]:
        """The parameters whose gradient the reduction under way still waits for."""
        return [p for b in self.buckets for p, ready in zip(b.params, b.ready) if not ready]


def _check_alike_everywhere(buckets: list[_Bucket], group: Any) -> None:
    """Raise on every process of ``group`` unless all of them laid out the same buckets (sizes
    and dtypes): the buckets' all-reduces are not compared call by call
    (``all_reduce_unchecked``), and buckets of other sizes would mix the processes' gradients
    silently."""
    sizes_and_dtypes = [n for b in buckets for n in (b.flat.array.size, b.flat.array.dtype.num)]
    layout = np.array(sizes_and_dtypes, np.int64)
    largest, smallest = Tensor._make(layout.copy()), Tensor._make(-layout)
    # (another count of buckets raises here)
    dist.all_reduce(largest, op=dist.ReduceOp.MAX, group=group)
    dist.all_reduce(smallest, op=dist.ReduceOp.MAX, group=group)
    if (largest.array != -smallest.array).any():
        raise RuntimeError(
            "DistributedDataParallel: the processes' models differ (their gradient buckets "
            "differ in size or dtype); wrap the same model on every process"
        )


def _divide_into(slot: np.ndarray, grad: np.ndarray, size: int) -> None:
    """``slot = grad / size``, flat, as PyTorch's reducer computes it before its all-reduce
    SUM: times ``1 / size`` in the op's math dtype (float32 for 16-bit floats). Dividing
    first, a sum of large float16 gradients cannot overflow where PyTorch's does not."""
    math = np.dtype(np.float32) if grad.dtype.itemsize == 2 else grad.dtype
    np.multiply(
        grad.reshape(-1), np.asarray(1 / size, math), out=slot, dtype=math, casting="unsafe"
    )


def _hook_for(reducer: weakref.ref):
    """The post-accumulate hook of a wrapper's parameters: hand the finished gradient to its
    reducer."""

    def on_grad_ready(param: Tensor) -> None:
        recorder = capture_hook.recorder
        if recorder is not None and recorder.here():  # a replay calls it again after the
            recorder.replayed(on_grad_ready, param)  # gradient's accumulation
            return
        live = reducer()
        if live is None:
            return
        if live.find_unused:
            live.locally_used.add(id(param))
        if live.reducing:
            live.mark_unused_ready()
            live.mark_ready(param, param.grad)

    on_grad_ready.replays_itself = True  # (scratchgrad.jit's recorder lets it be, see above)
    return on_grad_ready


def _remove_hooks(handles: list) -> None:
    for handle in handles:
        handle.remove()


def _assign_buckets(params: list[Tensor], cap: float) -> list[_Bucket]:
    """Buckets in reverse order of ``params`` (gradients arrive roughly last layer first), one
    dtype each; a bucket closes when it reaches ``cap`` bytes (the first at 1 MB)."""
    buckets, open_by_dtype = [], {}
    for p in reversed(params):
        group = open_by_dtype.setdefault(p.array.dtype, [])
        group.append(p)
        limit = min(cap, _FIRST_BUCKET_BYTES) if not buckets else cap
        if sum(q.array.nbytes for q in group) >= limit:
            buckets.append(_Bucket(group))
            open_by_dtype[p.array.dtype] = []
    buckets += [_Bucket(group) for group in open_by_dtype.values() if group]
    return buckets


def _broadcast_coalesced(tensors: list[Tensor], group: Any) -> None:
    """Copy the tensors of the process of rank 0 in ``group`` to its others, as PyTorch's: one
    broadcast per dtype of all of them."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.array.dtype, []).append(t)
    for alike in by_dtype.values():
        flat = Tensor._make(np.concatenate([t.array.reshape(-1) for t in alike]))
        dist.broadcast(flat, group=group, group_src=0)
        offset = 0
        for t in alike:
            t.array[...] = flat.array[offset : offset + t.array.size].reshape(t.array.shape)
            offset += t.array.size


def _leaves_reached(out: Any) -> set[int]:
    """The ids of the leaf tensors that the graph of ``out`` (tensors, in any nesting of
    tuples, lists and dicts) reaches."""
    stack, seen, leaves = list(_tensors_in(out)), set(), set()
    while stack:
        node = stack.pop()
        if isinstance(node, Function):
            if node not in seen:
                seen.add(node)
                stack.extend(p for p in node.parents if p is not None)
        elif isinstance(node, Tensor):
            if node._ctx is not None:
                stack.append(node._ctx)
            else:
                leaves.add(id(node))
    return leaves


def _tensors_in(out: Any) -> Iterator[Tensor]:
    if isinstance(out, Tensor):
        yield out
    elif isinstance(out, dict):
        for value in out.values():
            yield from _tensors_in(value)
    elif isinstance(out, list | tuple):
        for value in out:
            yield from _tensors_in(value)
