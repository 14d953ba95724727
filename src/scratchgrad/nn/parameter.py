"""``Parameter``: a tensor that a ``Module`` registers as something to train; ``Buffer``: one
that it registers as state (``register_buffer``) when assigned as an attribute."""

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
        self.array, self._grad, self._requires_grad = data.array, None, False
        self._ctx, self._counter, self._hooks = None, data._shared_counter(), ()
        if requires_grad:
            self.requires_grad_()

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A new Parameter with a copy of the data and ``requires_grad``, as PyTorch's: without
        the ``.grad`` (a deep-copied model starts with none, so a stale one is never stepped)."""
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.detach().clone(), self.requires_grad)
        return memo[id(self)]


class Buffer(Tensor):
    """A tensor that a ``Module`` registers as a buffer when assigned as its attribute (as
    ``register_buffer(name, tensor, persistent)`` does), as ``torch.nn.Buffer``. It shares the
    memory and ``requires_grad`` of the tensor it is made from, without its history.

    NOTE: PyTorch's returns the tensor itself, marked; this is a ``Tensor`` subclass (as
    ``Parameter``), so ``type(buffer)`` is ``Buffer`` here.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> class Scaled(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = nn.Buffer(sg.tensor(2.0))
    ...         self.cache = nn.Buffer(sg.zeros(1), persistent=False)
    >>> m = Scaled()
    >>> [name for name, _ in m.named_buffers()], list(m.state_dict())
    (['scale', 'cache'], ['scale'])
    """

    __slots__ = ("persistent",)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        if data is None:
            data = Tensor._make(xp.empty(0, backend.default_float))
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a Tensor, got {type(data).__name__}")
        self.array, self._grad, self._requires_grad = data.array, None, False
        self._ctx, self._counter, self._hooks = None, data._shared_counter(), ()
        self.persistent = persistent
        if data.requires_grad:
            self.requires_grad_()
