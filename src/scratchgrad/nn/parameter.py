"""``Parameter``: a tensor that a ``Module`` registers as something to train."""

from __future__ import annotations

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.backend import xp
from scratchgrad.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that a ``Module`` lists in ``parameters()``, as ``torch.nn.Parameter``.

    It shares the memory of the tensor it is made from; results of operations on it are plain
    Tensors.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Parameter(sg.ones(2))
    Parameter containing:
    tensor([1., 1.], requires_grad=True)
    """

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("creating an nn.Parameter")
        if data is None:
            data = Tensor._make(xp.empty(0, backend.default_float))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor, got {type(data).__name__}")
        # a leaf with no history: a Parameter made from a graph result starts a new graph
        self.array, self.grad, self.requires_grad = data.array, None, False
        self._ctx, self._counter, self._hooks = None, data._shared_counter(), ()
        if requires_grad:
            self.requires_grad_()

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
