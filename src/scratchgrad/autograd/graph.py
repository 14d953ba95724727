"""``scratchgrad.autograd.graph``, after ``torch.autograd.graph``: the bookkeeping that code
outside the ops calls when it changes a tensor's memory behind the graph's back, and the hooks
on the tensors nodes save for backward (``saved_tensors_hooks``, ``save_on_cpu``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scratchgrad.autograd.grad_mode import INPLACE_INFERENCE_TENSOR


def increment_version(tensor: Any) -> None:
    """Count an in-place change of ``tensor``'s memory (a tensor, or an iterable of tensors),
    as ``torch.autograd.graph.increment_version``: a graph that saved this memory, or a view of
    it, then refuses to use it in backward instead of computing with the new values.

    In-place ops count their own changes; code that writes into ``tensor.array`` directly (an
    optimizer's step, a collective, ``Module.to``) calls this, the one place the count moves.

    >>> import scratchgrad as sg
    >>> x = sg.ones(2)
    >>> x.array += 1
    >>> increment_version(x)
    >>> x._version
    1
    """
    for t in (tensor,) if hasattr(tensor, "_counter") else tensor:  # one call for a list
        counter = t._counter  # shared by views; made on first need
        if counter is None:
            t._counter = [1]
        else:
            try:  # (free in Python 3.11+ when nothing is raised: no test on the hot path)
                counter[0] += 1
            except RuntimeError:  # an inference tensor's, outside inference mode
                raise RuntimeError(INPLACE_INFERENCE_TENSOR) from None
            if len(counter) > 1:  # copies made by view() to bring up to date (Tensor.view)
                counter[1:] = [copy for copy in counter[1:] if copy()]


# the (pack_hook, unpack_hook) pairs of the saved_tensors_hooks blocks open, innermost last;
# Function.apply reads the last when a node saves tensors (one test of this list otherwise)
SAVED_TENSORS_HOOKS: list[tuple[Callable, Callable]] = []


class saved_tensors_hooks:
    """Inside this block, each tensor a new node saves for backward goes to
    ``pack_hook(tensor)``, whose result the node keeps instead, and ``unpack_hook(packed)``
    gives the tensor back each time backward reads it, as
    ``torch.autograd.graph.saved_tensors_hooks`` (to keep saved tensors elsewhere, compressed
    or on disk). The innermost block's hooks apply. Unlike PyTorch's, the blocks are shared by
    threads, and which tensors a node saves is scratchgrad's choice (its ops are not
    PyTorch's, so the calls may differ in number).

    >>> import scratchgrad as sg
    >>> x = sg.tensor([1.0, 2.0], requires_grad=True)
    >>> with sg.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):  # doubled
    ...     y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    tensor([4., 8.])
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        SAVED_TENSORS_HOOKS.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc_info: object) -> None:
        SAVED_TENSORS_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):
    """Keep the tensors saved for backward in CPU memory and bring them back to their device
    when backward reads them, as ``torch.autograd.graph.save_on_cpu``; a CPU tensor is kept as
    it is (``pin_memory`` changes nothing: there is no page-locked memory here)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(_to_cpu, _back_to_device)


def _to_cpu(tensor: Any) -> tuple[Any, Any]:
    return tensor.device, tensor.cpu()


def _back_to_device(packed: tuple[Any, Any]) -> Any:
    device, tensor = packed
    return tensor.to(device)
