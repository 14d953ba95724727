"""``Tensor``: an array that remembers how it was computed.

Methods are thin calls into the primitives of ``ops/``; composite operations (mean, var,
softmax, ...) are written here once in terms of those primitives and need no backward of their own.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import itertools
import math
import numbers
import operator
import os
import sys
import warnings
import weakref
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes

from scratchgrad import backend, cpu_order, printing
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd import function as _function
from scratchgrad.autograd.autocast import autocast_policy, call_with_policy, without_autocast
from scratchgrad.autograd.autocast import state as _autocast_state
from scratchgrad.autograd.capture_hook import call as _call
from scratchgrad.autograd.grad_mode import InferenceCounter, no_grad
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.autograd.graph import increment_version
from scratchgrad.backend import namespace, ndarray, type_name, xp
from scratchgrad.dtypes import (
    can_cast,
    channels_last,
    channels_last_3d,
    check_memory_format,
    checked_number,
    contiguous_format,
    filled_number,
    layout,
    preserve_format,
    promoted,
    python_number,
    requested_device_and_dtype,
    result_dtype,
    result_type_of,
    scalar_type,
    split_to_arguments,
    strided,
    to_array,
    torch_name,
    wrapped_float,
    wrapped_int,
    written_number,
)
from scratchgrad.meta import MetaArray
from scratchgrad.ops import binary, matmul, movement, reduce, special, unary
from scratchgrad.ops import complex as complex_ops

values_indices = namedtuple("values_indices", ["values", "indices"])
min_max = namedtuple("aminmax", ["min", "max"])
_new = object.__new__
_NUMBERS = (int, float)  # the Python numbers an in-place op may take as they are


_NOT_GIVEN = object()  # random_'s ``to`` when not given (None: the dtype's top)


def _tensor_leaves_as_scalars(data: list | tuple) -> list | tuple:
    """``data`` with each tensor in it read as PyTorch reads it, as one number keeping its
    dtype (``[t(1., float64), 2]`` is float64; a 1-element tensor of any shape is a number),
    and refused when it holds any other count. ``data`` itself when it holds no tensor."""
    if _holds_only_numbers(data):
        return data
    leaves = [
        _tensor_leaves_as_scalars(leaf) if type(leaf) in (list, tuple) else _scalar_of(leaf)
        for leaf in data
    ]
    return data if all(map(operator.is_, leaves, data)) else leaves


def _holds_only_numbers(data: list | tuple) -> bool:
    """Whether nested lists hold Python numbers only, looked at a level at a time at C speed."""
    level = data
    while level:
        kinds = set(map(type, level))
        if kinds <= {float, int, bool}:
            return True
        if not kinds <= {list, tuple}:
            return False
        level = list(itertools.chain.from_iterable(level))
    return True


def _scalar_of(leaf: Any) -> Any:
    if not isinstance(leaf, Tensor):
        return leaf
    if leaf.array.size != 1:
        raise ValueError(
            f"tensor: only one element tensors can be converted to Python scalars, got a tensor "
            f"of shape {tuple(leaf.shape)} in the list (stack tensors with sg.stack)"
        )
    return leaf.array.reshape(())


def _stable_by_keyword(method: Callable) -> Callable:
    """``sort`` or ``argsort`` with PyTorch's two overloads: ``(dim=-1, descending=False)``,
    and ``(*, stable, dim=-1, descending=False)``, where all are keywords: ``stable`` with a
    positional ``dim`` or ``descending`` matches neither, PyTorch's TypeError."""

    @functools.wraps(method)
    def checked(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if args and "stable" in kwargs:
            raise TypeError(
                f"{method.__name__}() received an invalid combination of arguments: with "
                "'stable', 'dim' and 'descending' are keyword-only"
            )
        return method(self, *args, **kwargs)

    return checked


class _AllEntries:
    """The default ``dim`` of the reductions PyTorch overloads with and without a dim (prod,
    max, min, median, nanmedian): their ``dim=None`` given is PyTorch's TypeError, which a
    default of None would not tell apart."""

    def __repr__(self) -> str:
        return "all entries"


ALL_ENTRIES = _AllEntries()


def median_of_nothing(x: Tensor) -> Tensor:
    """NaN, PyTorch's median of no entries; of floats on the graph, as PyTorch's (its gradient
    is empty: x.median().backward() works)."""
    if backend.can_require_grad(x.array.dtype):
        return x.sum() * math.nan
    return x.new_full((), math.nan)


def of_all_entries(name: str, dim: Any) -> bool:
    """Whether ``dim`` is ``ALL_ENTRIES``; None is refused, as PyTorch's overloads do."""
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not NoneType")
    return dim is ALL_ENTRIES


class Tensor:
    """An n-dimensional array with automatic differentiation, after ``torch.Tensor``.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])
    """

    # _counter: the version counter, a one-item list shared by views of the same memory; made
    # on first need (an in-place change, a save for backward, a view), None until then
    # (a grad_mode.InferenceCounter on an inference tensor, see is_inference)
    # _view: on a view only (unset otherwise, read with getattr), its base and the view steps
    # from it, (base, ((Function, attributes), ...)); _views: on a base only, a Views of its
    # views made in a graph, taken again when it changes in place; both set by Function.apply
    # _base_array: on a detached view only (detach, .data; unset otherwise), its base's array,
    # which storage_offset counts from; _layout_steps: there too, the view steps from that
    # array, which give its PyTorch layout (strides, is_contiguous, view)
    # _no_grad_view: True on a view taken under no_grad of a tensor that requires grad (unset
    # otherwise): writing it with grad mode on raises (note_view)
    # _multi_output: on an output of split, chunk or unbind (and its views) only, (which
    # output, the op's name): a recorded change of it or its base is refused (_not_to_change)
    __slots__ = (
        "array", "_grad", "_requires_grad", "_ctx", "_counter", "_hooks", "_view", "_views",
        "_base_array", "_layout_steps", "_no_grad_view", "_multi_output", "__weakref__",
    )  # fmt: skip
    __array_priority__ = 1000  # NumPy arrays defer to our reflected operators

    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:
        """``torch.Tensor(...)``, PyTorch's legacy constructor (``tensor`` and ``empty`` are
        the ones to use): ``Tensor(2, 3)`` (ints, or a ``Size``) is an uninitialised tensor of
        that shape in the default float dtype, ``Tensor()`` an empty one, ``Tensor(data)`` a
        list's or array's values in that dtype, ``Tensor(t)`` an alias of the tensor ``t``.

        >>> import scratchgrad as sg
        >>> sg.Tensor([1, 2]), sg.Tensor(2, 0).shape
        (tensor([1., 2.]), scratchgrad.Size([2, 0]))
        """
        if cls is not Tensor:  # a Parameter, a Buffer, ...: filled in by their own __init__
            return _new(cls)
        from scratchgrad import creation  # (creation builds on this module)

        device = kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}")
        out = creation.legacy_new("Tensor", backend.default_float, args)
        return out if device is None else out.to(device)

    @staticmethod
    def _from_data(data: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
        """A new leaf holding a copy of ``data`` (Python data, an array or a tensor), in
        ``dtype`` or the dtype ``to_array`` gives it: what ``tensor(data)`` makes."""
        if type(data) in (list, tuple):
            data = _tensor_leaves_as_scalars(data)
        if type(requires_grad) is not bool:  # (a truthy 1 would be stored as it is)
            raise TypeError(
                f"tensor(): argument 'requires_grad' must be bool, not {type_name(requires_grad)}"
            )
        array = to_array(data.array if isinstance(data, Tensor) else data, dtype)
        if requires_grad and not backend.can_require_grad(array.dtype):
            raise RuntimeError(
                f"only tensors of floating point dtype can require gradients, got {array.dtype}"
            )
        t = Tensor._make(array)
        t._requires_grad = requires_grad
        return t

    @staticmethod
    def _from_operand(data: Any, dtype: Any = None) -> Tensor:
        """What ``_from_data`` makes of ``data``, handed to an op beside a tensor (``x * mask``,
        ``x.new_tensor(weights)``); a NumPy array is copied by a call a jitted step's replays
        make again, as eager steps do: it may change in place between calls (a global mask)."""
        if isinstance(data, xp.ndarray):
            return Tensor._make(_call(to_array, data, dtype))
        return Tensor._from_data(data, dtype)

    @staticmethod
    def _make(array: Any, ctx: Any = None) -> Tensor:
        """Wrap an array without copying or checks: the fast path every op result takes."""
        t = _new(Tensor)
        t.array, t._grad, t._requires_grad = array, None, ctx is not None
        t._ctx, t._counter, t._hooks = ctx, None, ()
        return t

    @property
    def _version(self) -> int:
        """How many in-place changes the memory behind this tensor (and its views) has seen."""
        if type(self._counter) is InferenceCounter:
            raise RuntimeError("Inference tensors do not track version counter.")
        return 0 if self._counter is None else self._counter[0]

    def is_inference(self) -> bool:
        """Whether this is an inference tensor: one made inside ``inference_mode`` (or a view
        or ``detach`` of one), as ``torch.Tensor.is_inference``. Outside inference mode, saving
        one for backward, changing one in place and ``requires_grad_()`` raise PyTorch's errors
        (see ``inference_mode`` for what is not caught).

        >>> import scratchgrad as sg
        >>> with sg.inference_mode():
        ...     x = sg.ones(2)
        >>> x.is_inference(), x[1:].is_inference(), x.clone().is_inference()
        (True, True, False)
        """
        return type(self._counter) is InferenceCounter

    def _shared_counter(self) -> list[int]:
        if self._counter is None:
            self._counter = [0]
        return self._counter

    # ---- attributes -------------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        """The shape as a ``scratchgrad.Size`` (a tuple), as ``torch.Tensor.shape``."""
        return _size(self.array.shape)

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def dtype(self) -> backend.dtype:
        """The ``scratchgrad.dtype`` of the data (the engine reads ``self.array.dtype``)."""
        return backend.dtype_of(self.array.dtype)

    @property
    def device(self) -> backend.device:
        """Where the data lives (a ``scratchgrad.device``; read from the array, so no op pays
        for it)."""
        return backend.device_of(self.array)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        """Whether this is a meta tensor: a shape and a dtype, no data (see ``meta.py``)."""
        return self.device.type == "meta"

    # PyTorch's layout and backend predicates: scratchgrad's tensors are dense arrays, so all
    # of these are False, as on PyTorch's ordinary CPU tensors
    is_sparse = is_sparse_csr = is_quantized = is_nested = is_mkldnn = property(lambda self: False)
    is_mps = is_xpu = is_xla = is_ipu = is_mtia = is_maia = is_vulkan = is_sparse

    @property
    def layout(self) -> layout:
        """How the entries are stored: ``scratchgrad.strided``, as PyTorch's dense tensors."""
        return strided

    def to_sparse(self, sparse_dim: int | None = None) -> Tensor:
        """This tensor in the sparse COO layout (see ``scratchgrad.sparse``): its nonzero
        entries, coalesced (differentiable).

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 5.0]).to_sparse().values()
        tensor([5.])
        """
        from scratchgrad import sparse  # (sparse tensors build on this module)

        return sparse.to_sparse(self, sparse_dim)

    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        """A dense tensor is its own dense form (``dtype`` casts it), as in PyTorch."""
        return self if dtype is None else self.to(dtype)

    def is_pinned(self) -> bool:
        """False: there is no page-locked memory here (see ``pin_memory``)."""
        return False

    def is_shared(self) -> bool:
        """Whether the memory is shared with processes forked afterwards (``share_memory_``)."""
        return backend.is_shared(self.array)

    def share_memory_(self) -> Tensor:
        """Move the memory to shared memory, as PyTorch's: processes forked afterwards
        (``multiprocessing`` with the "fork" start method) see each other's in-place changes,
        as Hogwild training needs (optimizers step in place). Already shared: nothing done.
        A view moves its base's whole memory, as PyTorch's, keeping its place in it. Unlike
        PyTorch's, other views made before keep the old memory, and a tensor pickled to a
        spawned process arrives as a copy.

        >>> import scratchgrad as sg
        >>> sg.zeros(2).share_memory_().is_shared()
        True
        """
        if self.is_shared():
            return self
        view = getattr(self, "_view", None)  # (unset on tensors that are no view)
        if view is not None:
            base, steps = view
            self.array = movement.replay_on_array(base.share_memory_().array, steps)
            return self
        storage = getattr(self, "_base_array", None)  # (a detached view's, see _alias)
        if storage is None or not storage.flags.c_contiguous:
            self.array = backend.shared_copy(self.array)
            for name in ("_base_array", "_layout_steps"):  # now row-major memory of its own
                if hasattr(self, name):
                    delattr(self, name)
            return self
        # the whole storage moves, so the strides and storage offset stay PyTorch's
        array, size = self.array, self.array.itemsize
        offset = (_address(array) - _address(storage)) // size
        self._base_array = backend.shared_copy(storage)
        stride = [s // size for s in array.strides]
        self.array = movement._strided(self._base_array, array.shape, stride, offset)
        return self

    def get_device(self) -> int:
        """The device index, -1 on the CPU (as PyTorch)."""
        where = self.device
        return -1 if where.type == "cpu" else where.index or 0

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad_fn(self):
        """The node that made this tensor (None for leaves). As PyTorch's, reading it raises
        for a view whose history cannot be taken again after an in-place change of its base
        (an output of ``split`` or a view taken under ``no_grad``: ``ViewChangedRefused``)."""
        if type(self._ctx) is movement.ViewChangedRefused:
            raise RuntimeError(self._ctx.message)
        return self._ctx

    @property
    def data(self) -> Tensor:
        """A detached tensor sharing this one's memory (writes to it bypass autograd)."""
        t = self._alias()
        if type(self._counter) is InferenceCounter:  # (no other counter is shared)
            t._counter = self._counter
        return t

    def __getstate__(self) -> tuple:
        """What pickle and ``copy.deepcopy`` keep: the instance dict (of a subclass) and every
        slot that is set but ``_views``, weak references to this tensor's views (bookkeeping,
        not data: a copy has none, deepcopy copied their graphs, and pickle cannot write them).
        A graph's result refuses, as PyTorch's: see ``Function.__deepcopy__``."""
        slots = {}
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if name not in ("_views", "__weakref__") and hasattr(self, name):
                    slots[name] = getattr(self, name)
        return getattr(self, "__dict__", None), slots

    def _alias(self) -> Tensor:
        """A new tensor of this one's memory, out of any graph (``detach``, ``.data``): of a
        view, it keeps where the view starts in its base's memory (``storage_offset``), though
        it is no view (an in-place change of it is not recorded on the base), as PyTorch's."""
        t = Tensor._make(self.array)
        storage = _storage_array(self)
        if storage is not self.array:
            t._base_array = storage
        if self._has_steps():
            t._layout_steps = self._steps_from_storage()[1]
        return t

    def _has_steps(self) -> bool:
        """Whether this tensor is a view, or a detached one (see ``_layout``)."""
        return hasattr(self, "_view") or hasattr(self, "_layout_steps")

    def _steps_from_storage(self) -> tuple[Any, tuple]:
        """The array that owns this tensor's memory as PyTorch sees it (its base's, or a
        detached view's base's) and the view steps from it to this tensor."""
        base, steps = getattr(self, "_view", (self, ()))  # unset on tensors that are no view
        before = getattr(base, "_layout_steps", None)  # (unset on all but detached views)
        if before is None:
            return base.array, steps
        return base._base_array, (*before, *steps)

    @data.setter
    def data(self, value: Tensor) -> None:
        """``t.data = other``: ``t`` takes ``other``'s memory, shape, dtype and strides, as
        PyTorch's, which refuses anything but a tensor, one on another device, and one of a
        dtype that cannot require grad for a tensor that does."""
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type_name(value)}")
        if self._requires_grad and not backend.can_require_grad(value.array.dtype):
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or complex "
                f"dtype, got {value.dtype.name}"
            )
        if value.device.type != self.device.type:
            raise RuntimeError(
                "Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` have "
                f"incompatible tensor type: {self.device.type} and {value.device.type}"
            )
        self._take_memory(value._alias())  # its memory and its layout (strides, offset)

    def _take_memory(self, t: Tensor) -> None:
        """This tensor takes the memory and the layout of ``t``, a tensor that is no view."""
        self.array = t.array
        for name in ("_base_array", "_layout_steps"):  # a detached view's, or none (stale)
            if hasattr(t, name):
                setattr(self, name, getattr(t, name))
            elif hasattr(self, name):
                delattr(self, name)

    @property
    def T(self) -> Tensor:
        return self.permute(tuple(reversed(range(self.array.ndim))))

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a matrix (of a 0-d tensor, its conjugate), as PyTorch's.

        >>> import scratchgrad as sg
        >>> sg.tensor([[1 + 2j, 3j]]).H
        tensor([[1.-2.j],
                [0.-3.j]])
        """
        if self.array.ndim not in (0, 2):
            raise RuntimeError(
                "tensor.H is only supported on matrices (2-D tensors). Got "
                f"{self.array.ndim}-D tensor."
                + (" For batches of matrices, consider using tensor.mH" if self.ndim > 2 else "")
            )
        return self.mT.conj() if self.array.ndim == 2 else self.conj()

    @property
    def mH(self) -> Tensor:
        """The last two dims swapped and the entries conjugated (for real ones, ``mT``)."""
        if self.array.ndim < 2:
            raise RuntimeError(
                "tensor.mH is only supported on matrices or batches of matrices. Got "
                f"{self.array.ndim}-D tensor."
            )
        return self.mT.conj()

    def adjoint(self) -> Tensor:
        return self.mH

    # ---- complex numbers (more in complex_numbers.py) ----------------------------------------

    @property
    def real(self) -> Tensor:
        """The real parts of a complex tensor (a view), as PyTorch's; a real tensor itself.

        >>> import scratchgrad as sg
        >>> sg.tensor([1 + 2j]).real, sg.tensor([1 + 2j]).imag
        (tensor([1.]), tensor([2.]))
        """
        return complex_ops.Real.apply(self) if self.array.dtype.kind == "c" else self

    @property
    def imag(self) -> Tensor:
        """The imaginary parts of a complex tensor (a view), as PyTorch's."""
        if self.array.dtype.kind != "c":
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return complex_ops.Imag.apply(self)

    def conj(self) -> Tensor:
        """The complex conjugate (a copy here, where PyTorch's is a lazy view); a real tensor
        itself."""
        return complex_ops.Conj.apply(self) if self.array.dtype.kind == "c" else self

    conj_physical = conj

    def resolve_conj(self) -> Tensor:  # conj() copies at once: there is nothing to resolve
        return self

    resolve_neg = resolve_conj

    def is_complex(self) -> bool:
        """Whether the dtype is complex (complex64 or complex128), as ``torch.is_complex``."""
        return self.array.dtype.kind == "c"

    def is_conj(self) -> bool:  # conj() copies here: no tensor is a lazy conjugate
        return False

    is_neg = is_conj

    def angle(self) -> Tensor:
        """The argument of a complex number (``atan2(imag, real)``); of a real number, pi for
        negative entries, 0 otherwise (NaN stays), with a gradient of 0 everywhere, as
        ``torch.angle``.

        >>> import scratchgrad as sg
        >>> sg.tensor([-2.0, 3.0]).angle()
        tensor([3.1416, 0.0000])
        """
        if self.array.dtype.kind == "c":  # composed of complex-correct ops: so is its gradient
            return self.imag.atan2(self.real)
        x = self._floating().detach()
        zero = x.new_zeros(())
        return _zero_gradient_to(where(x.isnan(), x, where(x < 0, zero + math.pi, zero)), self)

    @property
    def mT(self) -> Tensor:
        """The last two dims swapped (batched matrix transpose); of a 0-d tensor, the tensor
        itself (a view), with PyTorch's deprecation warning."""
        n = self.array.ndim
        if n == 1:
            raise RuntimeError(
                "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."
            )
        if n == 0:
            warnings.warn(
                "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these "
                "cases.",
                UserWarning,
                stacklevel=2,
            )
        dims = (*range(n - 2), n - 1, n - 2) if n else ()
        return named_backward(movement.Permute.apply(self, dims=dims), "TransposeBackward0")

    def size(self, dim: int | None = None):
        """The shape as a ``scratchgrad.Size`` (as ``.shape``), or the size of ``dim``."""
        if dim is None:
            return _size(self.array.shape)
        if self.array.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self.array.shape[wrap_dim(dim, self.array.ndim)]

    def numel(self) -> int:
        return self.array.size

    nelement = numel

    def element_size(self) -> int:
        """Bytes per entry."""
        return self.array.itemsize

    itemsize = property(element_size)
    nbytes = property(lambda self: self.array.nbytes)

    def ndimension(self) -> int:
        return self.array.ndim

    def is_signed(self) -> bool:
        """Whether the dtype holds negative numbers (not uint8 or bool)."""
        return backend.is_floating(self.array.dtype) or self.array.dtype.kind == "i"

    def is_same_size(self, other: Tensor) -> bool:
        return self.shape == other.shape

    def is_nonzero(self) -> bool:
        """The truth of a one-entry tensor, as ``torch.is_nonzero`` (its errors for others)."""
        if self.array.size != 1:
            how = "no values" if self.array.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {how} is ambiguous")
        return bool(self.item())

    def stride(self, dim: int | None = None):
        """Steps in entries (not bytes) between neighbours along each dim, as PyTorch's: those
        of the layout that ``is_contiguous`` and ``view`` read (see ``_layout``), so a
        convolution's result, which scratchgrad keeps with the batch last in memory
        (``.array.strides``), has PyTorch's row-major strides. For a new tensor without
        entries, whose strides NumPy zeroes, the row-major ones PyTorch gives.

        >>> import scratchgrad as sg
        >>> sg.zeros(2, 3).stride(), sg.zeros(3, 0, 2).stride(), sg.zeros(2, 3).t().stride()
        ((3, 1), (2, 2, 1), (1, 3))
        >>> sg.zeros(2, 3)[:, None].stride(), sg.zeros(3, 3)[None, 1:].stride()
        ((3, 3, 1), (9, 3, 1))
        """
        array = self.array
        if array.size and self._has_steps():
            layout = self._layout()
            strides = tuple(s // layout.itemsize for s in layout.strides)
        elif array.size or not any(array.strides):  # a base: row-major to PyTorch
            strides = tuple(math.prod(max(n, 1) for n in array.shape[d + 1 :])
                            for d in range(array.ndim))  # fmt: skip
        else:  # empty, so contiguous whatever its strides: those it was made with
            strides = tuple(s // array.itemsize for s in array.strides)
        return strides if dim is None else strides[wrap_dim(dim, array.ndim)]

    def dim_order(self) -> tuple[int, ...]:
        """The dims from outermost to innermost in memory (largest stride first; a stride of
        0 or a tie leaves dims in order), as ``torch.Tensor.dim_order``.

        >>> import scratchgrad as sg
        >>> sg.zeros(2, 3, 4).transpose(0, 2).dim_order()
        (2, 1, 0)
        """
        stride, shape = self.stride(), self.shape
        if self.is_contiguous() and not (self.ndim == 4 and _channels_last_dense(stride, shape)):
            return tuple(range(self.ndim))  # (PyTorch's shortcut, which settles ties so)
        return _dims_in_memory(stride, shape)

    def storage_offset(self) -> int:
        """Where a view starts in the memory of the tensor it views, in entries (0 for a
        tensor that is no view), as ``torch.Tensor.storage_offset``.

        >>> import scratchgrad as sg
        >>> x = sg.arange(10.0)
        >>> x.storage_offset(), x[3:].storage_offset(), x.view(2, 5)[:, 2].storage_offset()
        (0, 3, 2)
        """
        storage = _storage_array(self)
        if storage is self.array:
            return 0
        return (_address(self.array) - _address(storage)) // self.array.itemsize

    def data_ptr(self) -> int:
        """The address of the first entry in memory (0 for an empty tensor), as
        ``torch.Tensor.data_ptr``.

        >>> import scratchgrad as sg
        >>> x = sg.arange(10.0)
        >>> x[3:].data_ptr() - x.data_ptr(), sg.zeros(0).data_ptr()
        (12, 0)
        """
        return _address(self.array) if self.array.size else 0

    def dim(self) -> int:
        return self.array.ndim

    def item(self) -> float | int | bool:
        if capture_hook.recorder is not None:
            capture_hook.recorder.read_values(self, ".item()")
        if self.array.size != 1:
            raise RuntimeError(
                f"item: a tensor with {self.array.size} elements cannot be converted to a number"
            )
        return self.array.item()

    def tolist(self) -> Any:
        if capture_hook.recorder is not None:
            capture_hook.recorder.read_values(self, ".tolist()")
        return self.array.tolist()

    def numpy(self, *, force: bool = False):
        """The array itself (shared memory), as ``torch.Tensor.numpy``; a tensor on a GPU
        raises, saying to call ``.cpu()`` first. ``force=True`` reads through those refusals,
        as ``t.detach().cpu().numpy()``."""
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse(".numpy()")
        if force:
            return self.detach().cpu().array
        _check_as_numpy(self)
        return self.array

    def _made_like(self, make: Callable[[tuple], Tensor]) -> Tensor:
        """``make(shape)``, a new tensor shaped as this one (``zeros_like``); a vmap's batched
        tensor makes one per member (func.batching)."""
        return make(self.shape)

    def _checked_values(self):
        """The array that checks of values (valid labels, indices in range) look at: inside
        vmap, every member's values at once."""
        return self.array

    def __array__(self, dtype=None, copy=None):
        _check_as_numpy(self)
        return self.array if dtype is None else self.array.astype(dtype)

    def __len__(self) -> int:
        if self.array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __iter__(self):
        len(self)  # (a 0-d tensor's TypeError)
        return iter(self.unbind(0))  # as PyTorch's: the rows may not change in place in a graph

    def __bool__(self) -> bool:
        if capture_hook.recorder is not None:
            capture_hook.recorder.read_values(
                self, "bool(tensor) (a Python branch on a tensor's value?)"
            )
        if self.array.size != 1:
            raise RuntimeError(
                f"bool: a tensor with {self.array.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.array)

    def __float__(self) -> float:
        return float(self._number("float"))

    def __int__(self) -> int:
        return int(self._number("int"))

    def __complex__(self) -> complex:
        return complex(self._number("complex"))

    def _number(self, name: str) -> float | int | bool | complex:
        """The one entry, for ``int()``, ``float()`` and ``complex()``: PyTorch's ValueError
        for any other count (``item``'s is a RuntimeError), and a complex entry read as a real
        number only without an imaginary part."""
        if self.array.size != 1:
            raise ValueError(
                f"{name}(): only one element tensors can be converted to Python scalars, got "
                f"{self.array.size} elements (shape {tuple(self.array.shape)})"
            )
        value = self._read_one(f"{name}()")
        if isinstance(value, complex) and name != "complex":
            if value.imag:
                raise RuntimeError(f"{name}(): {value} has an imaginary part, it is no real number")
            value = value.real
        return value

    def __index__(self) -> int:
        if self.array.size != 1 or self.array.dtype.kind not in "iub":  # (bfloat16 is "V")
            raise TypeError(
                f"only integer tensors of a single element can be converted to an index, got "
                f"{self.array.dtype} of shape {tuple(self.array.shape)}"
            )
        return int(self._read_one("operator.index() (a tensor used as a Python int)"))

    def _read_one(self, what: str) -> float | int | bool | complex:
        """The one entry of a tensor of one entry, read into Python by ``what`` (``int()``,
        ``format()``...): a jit recording names that, not the ``.item()`` it calls."""
        if capture_hook.recorder is not None:
            capture_hook.recorder.read_values(self, what)
        return self.array.item()

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("printing a tensor (repr or str)")
        return printing.format_tensor(self)

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"``: a 0-d tensor formats as its number; any other tensor only
        without a spec (its repr), as in PyTorch."""
        if self.array.ndim == 0:
            return format(self._read_one("format() (an f-string?)"), spec)
        return object.__format__(self, spec)

    # ---- autograd ---------------------------------------------------------------------------

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Tensor | Sequence[Tensor] | dict[str, Tensor] | None = None,
    ) -> None:
        """Accumulate this tensor's gradient into ``.grad`` of every leaf it depends on.

        Gradients add up across calls, as in PyTorch; zero them between steps. ``inputs`` (a
        tensor, a sequence or a dict of them) limits the accumulation to those tensors, leaves
        or not (a non-leaf input is made to ``retain_grad()``), as in PyTorch: the other leaves'
        ``.grad`` and hooks are left alone, and the graph is run only as far as they need.

        >>> import scratchgrad as sg
        >>> w, b = sg.tensor(2.0, requires_grad=True), sg.tensor(1.0, requires_grad=True)
        >>> (w * b + b).backward(inputs=[w])
        >>> w.grad, b.grad
        (tensor(1.), None)
        """
        _engine.backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self) -> Tensor:
        """The same data, cut from the graph (in-place changes to either are tracked)."""
        t = self._alias()
        t._counter = self._shared_counter()
        return t

    @property
    def _base(self) -> Tensor | None:
        """The tensor that owns the memory this view shares (None if it is no view), as
        PyTorch's ``Tensor._base``; ``detach`` and ``view(dtype)`` make no view.

        >>> import scratchgrad as sg
        >>> x = sg.zeros(4)
        >>> x[1:][::2]._base is x, x._base, x[1:]._is_view(), x.detach()._is_view()
        (True, None, True, False)
        """
        view = getattr(self, "_view", None)  # unset on tensors that are no view
        return None if view is None else view[0]

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another's memory (see ``_base``)."""
        return hasattr(self, "_view")

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that does not require
        grad, as ``torch.Tensor.detach_``. A view cannot be (its base's graph needs it).

        >>> import scratchgrad as sg
        >>> y = sg.ones(2, requires_grad=True) * 2
        >>> y.detach_() is y, y.requires_grad, y.grad_fn
        (True, False, None)
        """
        if hasattr(self, "_view"):
            raise RuntimeError("detach_: can't detach views in-place. Use detach() instead.")
        self._ctx, self._requires_grad = None, False
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if type(requires_grad) is not bool:  # (the setter's error is PyTorch's RuntimeError)
            raise TypeError(
                "requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                f"{type(requires_grad).__name__}"
            )
        if requires_grad and self._ctx is not None:  # a graph's result: it does (PyTorch's no-op)
            return self
        self.requires_grad = requires_grad
        return self

    def _set_requires_grad(self, requires_grad: bool) -> None:
        """``t.requires_grad = flag`` as PyTorch checks it: a bool, on a leaf only (a graph's
        result always requires grad), True only for a floating point dtype, and not for an
        inference tensor outside inference mode. (Reads take the slot through ``attrgetter``:
        a property's Python getter would cost every read a frame.)"""
        if type(requires_grad) is not bool:  # (a truthy 1 or "no" would be stored as it is)
            raise RuntimeError(f"requires_grad must be a bool, got {type_name(requires_grad)}")
        if self._ctx is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables."
                + (
                    ""
                    if requires_grad
                    else " If you want to use a computed variable in a subgraph that doesn't "
                    "require differentiation use var_no_grad = var.detach()."
                )
            )
        if requires_grad and not backend.can_require_grad(self.array.dtype):
            raise RuntimeError(
                f"requires_grad: dtype {self.array.dtype} cannot require gradients (only "
                f"tensors of floating point and complex dtype can)"
            )
        if requires_grad and type(self._counter) is InferenceCounter and not _state.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        self._requires_grad = requires_grad

    requires_grad = property(operator.attrgetter("_requires_grad"), _set_requires_grad)

    def _set_grad(self, grad: Tensor | None) -> None:
        """``t.grad = grad`` as PyTorch checks it: None, or a tensor of this one's dtype,
        device and shape (the engine and the optimizers use it as they find it)."""
        if grad is not None:
            _check_assigned_grad(self, grad)
        if capture_hook.recorder is not None:  # a jitted step records: a replay sets it
            capture_hook.recorder.assign_grad(self, grad)
            return
        self._grad = grad

    def _delete_grad(self) -> None:
        self._set_grad(None)  # ``del t.grad``, as PyTorch's

    grad = property(operator.attrgetter("_grad"), _set_grad, _delete_grad)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Callable:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned Tensor
        replaces the gradient."""
        if not self.requires_grad:
            raise RuntimeError("register_hook: the tensor does not require grad")
        owner, attr = (self._ctx, "hooks") if self._ctx is not None else (self, "_hooks")
        hooks = getattr(owner, attr)
        # retain_grad's hook runs after every other, whenever they came, as PyTorch's: .grad
        # holds the gradient the hooks leave
        kept = tuple(h for h in hooks if getattr(h, "retains_grad", False))
        others = tuple(h for h in hooks if not getattr(h, "retains_grad", False))
        setattr(owner, attr, (*others, hook, *kept))
        return RemovableHandle(owner, attr, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> Any:
        """Call ``hook(tensor)`` once backward has added this leaf's gradient into ``.grad``:
        as soon as the walk has run every use of the leaf, while the rest of the graph is still
        to run. Returns a handle whose ``remove()`` takes the hook off.

        >>> import scratchgrad as sg
        >>> w = sg.tensor([1.0, 2.0], requires_grad=True)
        >>> handle = w.register_post_accumulate_grad_hook(lambda t: print(t.grad))
        >>> (w * w).sum().backward()
        tensor([2., 4.])
        >>> handle.remove()
        """
        if not self.is_leaf:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if not self.requires_grad:
            raise RuntimeError(
                "register_post_accumulate_grad_hook: the tensor does not require grad"
            )
        return _engine.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after backward (once, however
        often it is called)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self.retains_grad:
            return
        ref = weakref.ref(self)

        def keep(grad: Tensor) -> None:
            t = ref()
            if t is not None:
                t._grad = grad if t._grad is None else t._grad + grad

        keep.retains_grad = True  # what ``retains_grad`` looks for
        self.register_hook(keep)

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad`` was called on this non-leaf tensor."""
        hooks = () if self._ctx is None else getattr(self._ctx, "hooks", ())
        return any(getattr(hook, "retains_grad", False) for hook in hooks)

    # ---- arithmetic -------------------------------------------------------------------------

    def _operands(self, other: Any) -> tuple[Tensor, Any]:
        """``self`` and ``other`` ready for a binary op, promoted as PyTorch promotes.

        A Python number stays a number: NumPy then keeps the tensor's dtype, as PyTorch does.
        """
        if type(other) is Tensor or isinstance(other, Tensor):
            if other.array.dtype is self.array.dtype or other.array.dtype == self.array.dtype:
                return self, other
            dtype = result_dtype(self, other)
            if other.array.dtype == backend.bool_ or self.array.dtype == backend.bool_:
                # NumPy gives the other operand's dtype too, with no cast pass (a mask multiply)
                return (
                    (self, other)
                    if dtype in (self.array.dtype, other.dtype)
                    else (self.to(dtype), other.to(dtype))
                )
            return self.to(dtype), other.to(dtype)
        if isinstance(other, xp.generic):  # NumPy would widen float32 * float64(2)
            other = python_number(other)
        if isinstance(other, (int, float, complex)):  # (a number on every device)
            dtype = scalar_type(self.array.dtype, other)
            if dtype in backend.SIXTEEN_BIT:  # computed as PyTorch's CPU kernels (see its doc)
                other = backend.SixteenBitNumber(other)
            elif type(other) is int and dtype.kind in "iu" and not 0 <= other < 128:
                other = wrapped_int(other, dtype)  # uint8 + 300 adds 44 (NumPy would raise)
            return (self if dtype == self.array.dtype else self.to(dtype)), other
        return self._operands(Tensor._from_operand(other))

    def __add__(self, other: Any) -> Tensor:
        return binary.Add.apply(*self._operands(other))

    def __radd__(self, other: Any) -> Tensor:
        x, y = self._operands(other)
        return binary.Add.apply(y, x)

    def __sub__(self, other: Any) -> Tensor:
        _refuse_bool_subtraction(self, other)
        return binary.Sub.apply(*self._operands(other))

    def __rsub__(self, other: Any) -> Tensor:
        _refuse_bool_subtraction(self, other)
        x, y = self._operands(other)
        return binary.Sub.apply(y, x)

    def __mul__(self, other: Any) -> Tensor:
        return binary.Mul.apply(*self._operands(other))

    def __rmul__(self, other: Any) -> Tensor:
        x, y = self._operands(other)
        return binary.Mul.apply(y, x)

    def __truediv__(self, other: Any) -> Tensor:
        return binary.Div.apply(*self._floating_operands(other))

    def __rtruediv__(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor):  # PyTorch's: it saves the reciprocal, not this tensor
            return self.reciprocal() * other
        x, y = self._floating_operands(other)
        return binary.Div.apply(y, x)

    def _floating_operands(self, other: Any) -> tuple[Tensor, Any]:
        """``_operands`` of an op whose result is floating (true division). A number meets
        this tensor made floating first (uint8 / 300 divides by 300, not by a wrapped 44); two
        tensors go straight to the dtype they promote to, the default float where that is an
        integer, as PyTorch's (int8 over a uint8 200 divides by 200, not by its int8 -56; an
        integer tensor over a float64 0-d one is float64)."""
        if not isinstance(other, Tensor):
            return self._floating()._operands(other)
        if other.array.dtype == self.array.dtype and backend.can_require_grad(self.array.dtype):
            return self, other
        dtype = result_dtype(self, other)
        if not backend.can_require_grad(dtype):  # (floating or complex)
            dtype = backend.default_float
        return self.to(dtype), other.to(dtype)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return self._reflected(other) // self

    def __rmod__(self, other: Any) -> Tensor:
        return self._reflected(other) % self

    def _reflected(self, number: Any) -> Tensor:
        """``number`` (the left operand of ``7 // x``) as a 0-d tensor of the dtype the two
        promote to."""
        x, y = self._operands(number)
        return Tensor._make(namespace(x.array).asarray(y, x.array.dtype))

    def _division_operands(self, other: Any) -> tuple[Tensor, Any]:
        """``_operands``, a bool ``self`` promoted too: //, %, fmod and trunc division take
        the integer path or the floating one by its dtype (``False % bfloat16 0.0`` is NaN)."""
        x, y = self._operands(other)
        if x.array.dtype == backend.bool_ and isinstance(y, Tensor):
            x = x.to(y.dtype)
        return x, y

    def __floordiv__(self, other: Any) -> Tensor:
        x, y = self._division_operands(other)
        if not backend.is_floating(x.array.dtype):  # exact for integers, and never differentiable
            _refuse_kernel_dtype("floor_divide", "div_floor_cpu", "c", x, y)
            _refuse_bool_division(x, y, "floor_divide", "div_floor")
            _call(_check_divisor, "floor_divide", getattr(y, "array", y), x.array)  # (replayed too)
            return Tensor._make(
                _call(_elementwise, "floor_divide", x.array, getattr(y, "array", y))
            )
        return binary.FloorDivide.apply(x, y)

    def __mod__(self, other: Any) -> Tensor:
        """The remainder with the sign of the divisor, as Python's and PyTorch's ``%``."""
        x, y = self._division_operands(other)
        if not backend.is_floating(x.array.dtype):
            _refuse_kernel_dtype("remainder", "remainder_cpu", "c", x, y)
            _refuse_bool_division(x, y, "remainder", "remainder")
            _call(_check_divisor, "remainder", getattr(y, "array", y), x.array)  # (replayed too)
            return Tensor._make(_call(_elementwise, "remainder", x.array, getattr(y, "array", y)))
        return binary.Remainder.apply(x, y)

    def _floating(self) -> Tensor:
        """This tensor, or a copy of an integer or bool one in the default floating dtype (true
        division, exp...)."""
        if backend.can_require_grad(self.array.dtype):  # complex stays complex
            return self
        return self.to(backend.default_float)

    def _real_floating(self, op: str) -> Tensor:
        """``_floating()`` for an op PyTorch has no complex kernel for (lgamma, erf, logit...):
        a complex tensor is refused, where NumPy would drop its imaginary part."""
        if self.array.dtype.kind == "c":
            raise NotImplementedError(
                f"{op}: not implemented for {self.array.dtype} tensors, as in PyTorch"
            )
        return self._floating()

    def __pow__(self, other: Any) -> Tensor:
        if type(other) is int and self.array.dtype.kind in "iu":
            if other < 0:  # (caught here: the number would wrap to a positive one first)
                raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
            other = written_number(other, self.array.dtype)  # uint8 ** 300 raises: no wrapping
        if type(other) is bool and self.array.dtype == backend.bool_:
            return self | (not other)  # PyTorch's bools to a bool number's power: x or not y
        x, y = self._operands(other)
        _refuse_bool_power(x, y)
        return binary.Pow.apply(x, y)

    def __rpow__(self, other: Any) -> Tensor:
        x, y = self._operands(other)
        _refuse_bool_power(x, y)
        return binary.Pow.apply(y, x)

    # ``@`` takes tensors and NumPy arrays (on the right promoted with the tensor, as
    # PyTorch's); a number or a list is Python's TypeError, as PyTorch's

    def __matmul__(self, other: Tensor) -> Tensor:
        if isinstance(other, xp.ndarray):
            return Tensor.matmul(*self._operands(Tensor._from_operand(other)))
        return self.matmul(other) if isinstance(other, Tensor) else NotImplemented

    def __rmatmul__(self, other: Any) -> Tensor:
        if isinstance(other, xp.ndarray):
            return Tensor._from_operand(other, self.array.dtype).matmul(self)
        return NotImplemented

    def __neg__(self) -> Tensor:
        if self.array.dtype.kind == "b":
            raise RuntimeError(
                "neg: negation, the `-` operator, on a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        return unary.Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    def _compare(self, name: str, other: Any) -> Tensor:
        """Comparisons are not differentiable: the result is a plain bool tensor (``name`` is
        the ufunc's, taken from the array's module). The operands are promoted as for
        arithmetic first: PyTorch compares uint8 with 300 as with 44, int64 with float32 in
        float32, a tensor with a 0-d one of the same kind in the tensor's dtype."""
        x, dtype = self, self.array.dtype
        if isinstance(other, Tensor):
            if other.array.dtype is not dtype and other.array.dtype != dtype:
                x, other = self._operands(other)
                if other.array.dtype.kind == "c":  # (a bool x too, which _operands keeps bool:
                    x = x.to(other.dtype)  # then _compare refuses an order, as PyTorch)
            other = other.array
        elif isinstance(other, xp.generic):  # compared as a Python number (see _operands)
            return self._compare(name, python_number(other))
        elif type(other) is int and dtype.kind in "iu" and not 0 <= other < 128:
            other = wrapped_int(other, dtype)
        elif type(other) is float and dtype.kind in "iub":  # in the default float dtype, as
            x = self._floating()  # PyTorch's: int16 7 == 7.0000001 in float32
        return Tensor._make(_call(_compare, name, x.array, other))

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:  # `x == None` is False, as PyTorch's (NumPy: a tensor of False)
            return NotImplemented
        return self._compare("equal", other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        if other is None:
            return NotImplemented
        return self._compare("not_equal", other)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare("less", other)

    def __le__(self, other: Any) -> Tensor:
        return self._compare("less_equal", other)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare("greater", other)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare("greater_equal", other)

    def __and__(self, other: Any) -> Tensor:
        return self.bitwise_and(other)  # (of floats PyTorch's NotImplementedError, not NumPy's)

    def __or__(self, other: Any) -> Tensor:
        return self.bitwise_or(other)

    def __xor__(self, other: Any) -> Tensor:
        return self.bitwise_xor(other)

    # `True & mask`: the bitwise ops commute, so the reflected forms are the same ops
    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __invert__(self) -> Tensor:
        if self.array.dtype.kind not in "iub":
            raise TypeError(
                "~ (operator.invert) is only implemented on integer and Boolean-type tensors "
                f"(got {self.array.dtype})"
            )
        return self._elementwise_values("invert")

    def __lshift__(self, other: Any) -> Tensor:
        return self.bitwise_left_shift(other)

    def __rshift__(self, other: Any) -> Tensor:
        return self.bitwise_right_shift(other)

    def __rlshift__(self, other: Any) -> Tensor:
        return self._reflected(other).bitwise_left_shift(self)

    def __rrshift__(self, other: Any) -> Tensor:
        return self._reflected(other).bitwise_right_shift(self)

    def _elementwise_values(self, name: str) -> Tensor:
        """The array function ``name`` on the values, entry by entry (``isnan``, ``invert``),
        which no gradient flows through. vmap's batched tensor runs it on its whole batch."""
        return Tensor._make(_call(_elementwise, name, self.array))

    def eq(self, other: Any) -> Tensor:
        return self._compare("equal", _comparable("eq", other))

    def ne(self, other: Any) -> Tensor:
        return self._compare("not_equal", _comparable("ne", other))

    def lt(self, other: Any) -> Tensor:
        return self < other

    def le(self, other: Any) -> Tensor:
        return self <= other

    def gt(self, other: Any) -> Tensor:
        return self > other

    def ge(self, other: Any) -> Tensor:
        return self >= other

    def isnan(self) -> Tensor:
        return self._elementwise_values("isnan")

    def isinf(self) -> Tensor:
        return self._elementwise_values("isinf")

    def isfinite(self) -> Tensor:
        return self._elementwise_values("isfinite")

    def logical_not(self) -> Tensor:
        return self._elementwise_values("logical_not")

    def logical_and(self, other: Tensor) -> Tensor:
        return self._compare("logical_and", _tensor_other("logical_and", other))

    def logical_or(self, other: Tensor) -> Tensor:
        return self._compare("logical_or", _tensor_other("logical_or", other))

    def logical_xor(self, other: Tensor) -> Tensor:
        return self._compare("logical_xor", _tensor_other("logical_xor", other))

    def add(self, other: Any, *legacy: Any, alpha: float = 1) -> Tensor:
        """``self + alpha * other``, as ``torch.add``: ``alpha`` must not be a float for an
        integer or bool result, nor a bool for a result of another dtype. A third positional
        argument is PyTorch's deprecated ``add(alpha, other)``, never ``alpha``.

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 2]).add(sg.tensor([1, 1]), alpha=3)
        tensor([4, 5])
        """
        other, alpha = _other_and_alpha("add", other, legacy, alpha)
        if alpha != 1 and self.array.dtype in backend.SIXTEEN_BIT:
            return _sixteen_bit_sum(self, other, alpha)
        return self + _scaled(self, other, alpha)

    def sub(self, other: Any, *legacy: Any, alpha: float = 1) -> Tensor:
        """``self - alpha * other``, as ``torch.sub`` (``alpha`` as ``add`` takes it)."""
        other, alpha = _other_and_alpha("sub", other, legacy, alpha)
        _refuse_bool_subtraction(self, other)  # before alpha makes a bool other a number
        if alpha != 1 and self.array.dtype in backend.SIXTEEN_BIT:
            return _sixteen_bit_sum(self, other, -alpha)
        return self - _scaled(self, other, alpha)

    def subtract(self, other: Any, *number_alpha: Any, alpha: float = 1) -> Tensor:
        """``sub`` without its deprecated ``sub(alpha, other)``, as ``torch.subtract``: a third
        positional argument is ``alpha``, beside a number ``other`` only."""
        other, alpha = _number_other_and_alpha("subtract", other, number_alpha, alpha)
        return self.sub(other, alpha=alpha)

    def mul(self, other: Any) -> Tensor:
        return self * other

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """``self / other``; ``rounding_mode="trunc"`` rounds the quotient toward zero and
        ``"floor"`` down (``self // other``), as ``torch.div`` (their gradient is 0).

        >>> import scratchgrad as sg
        >>> sg.tensor([-7, 7]).div(2, rounding_mode="trunc")
        tensor([-3,  3])
        """
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self // other
        if rounding_mode != "trunc":
            raise RuntimeError(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                f"{rounding_mode!r}"
            )
        x, y = self._division_operands(other)
        if backend.is_floating(x.array.dtype):
            if type(y) is backend.SixteenBitNumber:  # PyTorch truncates the float32 quotient
                return binary.TruncDivide.apply(x.to(backend.float32), float(y)).to(x.dtype)
            return binary.TruncDivide.apply(x, y)
        divisor = getattr(y, "array", y)
        _refuse_kernel_dtype("div", "div_trunc_cpu", "c", x, y)
        _refuse_bool_division(x, y, "div", "div_trunc")
        _call(_check_divisor, "div", divisor, x.array)  # a replay checks too
        remainder = _call(_elementwise, "fmod", x.array, divisor)  # C's: the dividend's sign
        # (each array call noted, the subtraction too: a jit replay divides its own operands)
        exact = _call(_elementwise, "subtract", x.array, remainder)
        return Tensor._make(_call(_elementwise, "floor_divide", exact, divisor))

    def true_divide(self, other: Any) -> Tensor:
        return self / other

    def pow(self, exponent: Any) -> Tensor:
        return self**exponent

    def maximum(self, other: Tensor) -> Tensor:
        x, y = self._operands(_tensor_other("maximum", other))
        refuse_complex(x, "maximum")
        refuse_complex(y, "maximum")  # (a bool x stays bool beside a complex y)
        return binary.Maximum.apply(x, y)

    def minimum(self, other: Tensor) -> Tensor:
        x, y = self._operands(_tensor_other("minimum", other))
        refuse_complex(x, "minimum")
        refuse_complex(y, "minimum")  # (a bool x stays bool beside a complex y)
        return binary.Minimum.apply(x, y)

    @autocast_policy("lower")
    def matmul(self, other: Tensor) -> Tensor:
        """Matrix product with PyTorch's rules for 1-D, 2-D, batched and broadcast operands."""
        _tensor_other("matmul", other, position=1)
        if type(self) is Tensor or not self.is_sparse:  # (a sparse matrix checks its own)
            check_same_dtype("matmul", self, other)
        return _product(self, other)

    def dot(self, other: Tensor) -> Tensor:
        """The inner product of two vectors."""
        _check_ndim("dot", 1, self, other)
        check_same_dtype("dot", self, other)
        return _product(self, other)  # not lowered by autocast, as PyTorch's

    def mv(self, vec: Tensor) -> Tensor:
        """A matrix times a vector."""
        check_same_dtype("mv", self, vec)
        return _mv(self, vec)  # not lowered by autocast, as PyTorch's

    def outer(self, vec2: Tensor) -> Tensor:
        """The outer product of two vectors."""
        _check_ndim("outer", 1, self, vec2)
        return self.unsqueeze(1) * vec2

    def cross(self, other: Tensor, dim: int | None = None) -> Tensor:
        """The cross product of 3-vectors along ``dim``, the other dims broadcast, as
        ``torch.cross``: without ``dim``, the first dim of size 3 and a warning (PyTorch's
        deprecation; ``torch.linalg.cross``, which scratchgrad lacks, takes -1).

        >>> import scratchgrad as sg
        >>> sg.cross(sg.tensor([1.0, 0.0, 0.0]), sg.tensor([0.0, 1.0, 0.0]), dim=0)
        tensor([0., 0., 1.])
        """
        if self.ndim != other.ndim:
            raise RuntimeError(
                f"cross: inputs must have the same number of dimensions, got shapes {self.shape} "
                f"and {other.shape}"
            )
        if self.dtype != other.dtype:
            raise RuntimeError(
                f"cross: expected inputs of one dtype, got {self.dtype.name} and {other.dtype.name}"
            )
        if dim is None:
            dim = next((d for d, n in enumerate(self.shape) if n == 3), None)
            if dim is None:
                raise RuntimeError(
                    f"cross: no dimension of size 3 in input of shape {tuple(self.shape)}"
                )
            warnings.warn(
                "cross: calling it without dim is deprecated in PyTorch; pass the dim (here "
                f"{dim}, the first of size 3)",
                UserWarning,
                stacklevel=2,
            )
        if self.ndim == 0:
            raise IndexError(f"cross: Dimension specified as {dim} but tensor has no dimensions")
        dim = wrap_dim(dim, self.ndim)
        if self.shape[dim] != 3 or other.shape[dim] != 3:
            raise RuntimeError(
                f"cross: inputs dimension {dim} must have length 3, got shapes {tuple(self.shape)} "
                f"and {tuple(other.shape)}"
            )
        if self.array.dtype == backend.bool_:  # (its products and differences would be bools)
            raise NotImplementedError("\"cross\" not implemented for 'Bool'")
        x0, x1, x2 = self.unbind(dim)
        y0, y1, y2 = other.unbind(dim)
        return stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], dim)

    def lerp(self, end: Tensor, weight: float | Tensor) -> Tensor:
        """``self + weight * (end - self)``, as ``torch.lerp``: computed so where ``|weight| <
        0.5`` and as ``end - (end - self) * (1 - weight)`` elsewhere, so weight 1 gives ``end``
        exactly. ``weight`` is a number or a tensor; ``end`` and a tensor ``weight`` (unless
        0-d) have this tensor's dtype, and all three broadcast. In float32 the values are
        PyTorch's bit for bit (``ops.binary.Lerp`` says how and where not).

        >>> import scratchgrad as sg
        >>> sg.lerp(sg.tensor([1.0, 2.0]), sg.tensor([3.0, 6.0]), 0.5)
        tensor([2., 4.])
        >>> sg.tensor([0.0, 10.0]).lerp(sg.tensor([1.0, 20.0]), sg.tensor([0.25, 1.0]))
        tensor([ 0.2500, 20.0000])
        """
        return binary.Lerp.apply(*_lerp_operands(self, end, weight))

    def lerp_(self, end: Tensor, weight: float | Tensor) -> Tensor:
        """``lerp`` in place.

        >>> import scratchgrad as sg
        >>> sg.ones(2).lerp_(sg.zeros(2), 0.25)
        tensor([0.7500, 0.7500])
        """
        _, end, weight = _lerp_operands(self, end, weight)
        end, weight = (t.to(self.dtype) if isinstance(t, Tensor) else t for t in (end, weight))
        for read in (end, weight):
            if isinstance(read, Tensor):
                _refuse_partial_overlap("lerp_", self.array, read.array)
        if self._records(end) or self._records(weight):
            return self._record_in_place(
                "lerp_", lambda old, _: binary.Lerp.apply(old, end, weight), None
            )
        out = binary.Lerp.apply(self, end, weight)  # nothing requires grad: no graph
        if out.shape != self.shape:
            raise RuntimeError(
                f"lerp_: the result's shape {tuple(out.shape)} does not match the tensor's "
                f"{tuple(self.shape)}"
            )
        return self.copy_(out)

    def addcmul(
        self, tensor1: Tensor, tensor2: Tensor, *legacy: Tensor, value: float = 1
    ) -> Tensor:
        """``self + value * tensor1 * tensor2``, as ``torch.addcmul``: in the dtype of the three
        promoted together, ``value`` read in it (1.5 is 1 for integers).

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 2]).addcmul(sg.tensor([3, 4]), sg.tensor([1, 1]), value=2)
        tensor([ 7, 10])
        """
        if legacy:  # the deprecated addcmul(value, tensor1, tensor2)
            tensor1, tensor2, value = _scale_first("addcmul", "value", tensor1, tensor2, *legacy)
        x, tensor1, tensor2, value = _pointwise_operands("addcmul", self, tensor1, tensor2, value)
        return x + value * tensor1 * tensor2

    def addcdiv(
        self, tensor1: Tensor, tensor2: Tensor, *legacy: Tensor, value: float = 1
    ) -> Tensor:
        """``self + value * tensor1 / tensor2``, as ``torch.addcdiv``: in the dtype of the three
        promoted together; two integer (or bool) ``tensor1`` and ``tensor2`` raise PyTorch's
        RuntimeError.

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 2]).addcdiv(sg.tensor([3, 4]), sg.tensor([2.0, 8.0]), value=2)
        tensor([4., 3.])
        """
        if legacy:
            tensor1, tensor2, value = _scale_first("addcdiv", "value", tensor1, tensor2, *legacy)
        x, tensor1, tensor2, value = _pointwise_operands("addcdiv", self, tensor1, tensor2, value)
        return x + value * tensor1 / tensor2

    def hypot(self, other: Any) -> Tensor:
        """sqrt(self**2 + other**2) without overflow or underflow of the squares, as
        ``torch.hypot``.

        >>> import scratchgrad as sg
        >>> sg.hypot(sg.tensor([3.0, 3e30]), sg.tensor([4.0, 4e30]))
        tensor([5.0000e+00, 5.0000e+30])
        """
        dtype = result_dtype(self, _tensor_other("hypot", other))
        if dtype.kind in "biuc":  # (PyTorch's kernel is for real floats only: no int promotion)
            raise NotImplementedError(
                f"hypot: \"hypot_cpu\" not implemented for '{torch_name(dtype)}'"
            )
        return binary.Hypot.apply(*self._floating_operands(other))

    def logaddexp(self, other: Tensor) -> Tensor:
        """``log(exp(self) + exp(other))`` without overflow, as ``torch.logaddexp``, with
        PyTorch's gradient: ``grad / (1 + exp(other - self))`` (a half each at a tie, NaN at
        equal infinities). Complex numbers too, as PyTorch's.

        >>> import scratchgrad as sg
        >>> sg.logaddexp(sg.tensor([0.0, 100.0]), sg.tensor([0.0, 100.0]))  # exp(100) overflows
        tensor([  0.6931, 100.6931])
        """
        if not isinstance(other, Tensor):
            raise TypeError(
                f"logaddexp(): argument 'other' (position 1) must be Tensor, not "
                f"{type(other).__name__}"
            )
        x, y = self._floating_pair("logaddexp", other, complex_too=True)  # (as PyTorch's)
        return special.Logaddexp.apply(x, y)

    @autocast_policy("lower")
    def mm(self, mat2: Tensor) -> Tensor:
        """The product of two matrices (2-D only; ``matmul`` broadcasts)."""
        check_same_dtype("mm", self, mat2)
        return _mm(self, mat2)

    @autocast_policy("lower")
    def bmm(self, mat2: Tensor) -> Tensor:
        """Batched matrix product of (B, N, K) and (B, K, M) tensors (no broadcasting)."""
        check_same_dtype("bmm", self, mat2)
        return _bmm(self, mat2)

    @autocast_policy("lower")
    def addmm(
        self, mat1: Tensor, mat2: Tensor, *legacy: Tensor, beta: float = 1, alpha: float = 1
    ) -> Tensor:
        """``beta * self + alpha * (mat1 @ mat2)`` for matrices; beta=0 ignores ``self``.

        >>> import scratchgrad as sg
        >>> sg.ones(1, 1).addmm(sg.ones(1, 2), sg.ones(2, 1), beta=2, alpha=3)
        tensor([[8.]])
        """
        if legacy or not isinstance(mat1, Tensor):  # addmm(beta, [alpha,] mat1, mat2)
            mat1, mat2, beta, alpha = _scales_first(
                "addmm", "mat", (mat1, mat2, *legacy), beta, alpha
            )
        check_same_dtype("addmm", self, mat1, mat2)
        return _scaled_sum(self, _mm(mat1, mat2), beta, alpha)

    @autocast_policy("lower")
    def baddbmm(
        self, batch1: Tensor, batch2: Tensor, *legacy: Tensor, beta: float = 1, alpha: float = 1
    ) -> Tensor:
        """``beta * self + alpha * bmm(batch1, batch2)``; beta=0 ignores ``self``."""
        if legacy or not isinstance(batch1, Tensor):
            batch1, batch2, beta, alpha = _scales_first(
                "baddbmm", "batch", (batch1, batch2, *legacy), beta, alpha
            )
        check_same_dtype("baddbmm", self, batch1, batch2)
        return _scaled_sum(self, _bmm(batch1, batch2), beta, alpha)

    def addmv(
        self, mat: Tensor, vec: Tensor, *legacy: Tensor, beta: float = 1, alpha: float = 1
    ) -> Tensor:
        """``beta * self + alpha * (mat @ vec)``; beta=0 ignores ``self``."""
        if legacy or not isinstance(mat, Tensor):
            mat, vec, beta, alpha = _scales_first("addmv", "mv", (mat, vec, *legacy), beta, alpha)
        check_same_dtype("addmv", self, mat, vec)
        return _scaled_sum(self, _mv(mat, vec), beta, alpha)

    def addr(
        self, vec1: Tensor, vec2: Tensor, *legacy: Tensor, beta: float = 1, alpha: float = 1
    ) -> Tensor:
        """``beta * self + alpha * outer(vec1, vec2)``; beta=0 ignores ``self``."""
        if legacy or not isinstance(vec1, Tensor):
            vec1, vec2, beta, alpha = _scales_first(
                "addr", "vec", (vec1, vec2, *legacy), beta, alpha
            )
        return _scaled_sum(self, vec1.outer(vec2), beta, alpha)

    @autocast_policy("lower")
    def addbmm(
        self, batch1: Tensor, batch2: Tensor, *legacy: Tensor, beta: float = 1, alpha: float = 1
    ) -> Tensor:
        """``beta * self + alpha * sum_b(batch1[b] @ batch2[b])``; beta=0 ignores ``self``."""
        if legacy or not isinstance(batch1, Tensor):
            batch1, batch2, beta, alpha = _scales_first(
                "addbmm", "batch", (batch1, batch2, *legacy), beta, alpha
            )
        check_same_dtype("addbmm", self, batch1, batch2)
        return _scaled_sum(self, _bmm(batch1, batch2).sum(0), beta, alpha)

    def renorm(self, p: float, dim: int, maxnorm: float) -> Tensor:
        """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to it (by
        ``maxnorm / (norm + 1e-7)``, as PyTorch), the others unchanged.

        >>> import scratchgrad as sg
        >>> sg.tensor([[3.0, 4.0], [0.3, 0.4]]).renorm(2, 0, 1.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
        """
        if p <= 0:
            raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
        if maxnorm < 0:
            raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        if self.array.ndim < 2:
            raise RuntimeError(
                f"renorm: input needs at least 2 dimensions, got {self.array.ndim} dimensions"
            )
        dim = wrap_dim(dim, self.array.ndim)
        others = tuple(d for d in range(self.array.ndim) if d != dim)
        exceeds = self.detach().norm(p, dim=others, keepdim=True) > maxnorm
        # the norm's gradient flows only from the slices scaled down: a slice left as it is
        # (a NaN norm compares False) must not spread its NaN, as PyTorch's does not
        norm = where(exceeds, self, 1.0).norm(p, dim=others, keepdim=True)
        return self * where(exceeds, maxnorm / (norm + 1e-7), 1.0).to(self.dtype)

    def fill_diagonal_(self, fill_value: float, wrap: bool = False) -> Tensor:
        """Write ``fill_value`` on the main diagonal, in place, as ``Tensor.fill_diagonal_``:
        all dims of one length (or a tall matrix, whose diagonal with ``wrap`` starts again
        every ``columns + 1`` rows).

        >>> import scratchgrad as sg
        >>> sg.zeros(2, 3).fill_diagonal_(7.0).tolist()
        [[7.0, 0.0, 0.0], [0.0, 7.0, 0.0]]
        """
        shape = self.array.shape
        if len(shape) < 2:
            raise RuntimeError("dimensions must larger than 1")
        if len(shape) > 2 and len(set(shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        if len(shape) > 2:
            index = (xp.arange(shape[0]),) * len(shape)
        else:  # every (columns + 1)-th entry of the flat matrix
            rows, columns = shape
            flat = xp.arange(0, (rows if wrap else min(rows, columns)) * columns, columns + 1)
            index = (flat // columns, flat % columns)
        # checked as PyTorch's: 1e6 into float16 raises, where setitem would write inf
        self[index] = checked_number(fill_value, self.array.dtype)
        return self

    # ---- linear algebra: PyTorch's methods, thin calls into scratchgrad.linalg ---------------
    # Each imports linalg when called: linalg's modules import this one.

    def inverse(self) -> Tensor:
        """The inverse of a square matrix (or of each in a batch), as ``linalg.inv``."""
        from scratchgrad import linalg  # (linalg imports this module)

        return linalg.inv(self)

    def det(self) -> Tensor:
        """The determinant, as ``linalg.det``."""
        from scratchgrad import linalg  # (linalg imports this module)

        return linalg.det(self)

    def logdet(self) -> Tensor:
        """The log of the determinant, nan where it is negative, as ``torch.logdet``.

        >>> import scratchgrad as sg
        >>> sg.tensor([[2.0, 0.0], [0.0, 1.5]]).logdet()
        tensor(1.0986)
        """
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.logdet(self)

    def slogdet(self) -> Any:
        """The sign and the log of the absolute value of the determinant, as ``torch.slogdet``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.slogdet(self)

    def pinverse(self, rcond: float = 1e-15) -> Tensor:
        """The pseudo-inverse, singular values at or below ``rcond`` times the largest taken as
        0, as ``torch.pinverse``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.pinverse(self, rcond)

    def matrix_power(self, n: int) -> Tensor:
        """The ``n``-th power of a square matrix, as ``linalg.matrix_power``."""
        from scratchgrad import linalg  # (linalg imports this module)

        return linalg.matrix_power(self, n)

    def matrix_exp(self) -> Tensor:
        """The matrix exponential, as ``linalg.matrix_exp``.

        >>> import scratchgrad as sg
        >>> sg.tensor([[0.0, 2.0], [0.0, 0.0]]).matrix_exp()
        tensor([[1., 2.],
                [0., 1.]])
        """
        from scratchgrad import linalg  # (linalg imports this module)

        return linalg.matrix_exp(self)

    def cholesky(self, upper: bool = False) -> Tensor:
        """The Cholesky factor, as the deprecated ``torch.cholesky``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.cholesky(self, upper)

    def cholesky_solve(self, input2: Tensor, upper: bool = False) -> Tensor:
        """The solution of ``A X = self`` given the Cholesky factor ``input2`` of ``A``, as
        ``torch.cholesky_solve``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper: bool = False) -> Tensor:
        """The inverse of ``A`` given its Cholesky factor (this tensor), as
        ``torch.cholesky_inverse``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.cholesky_inverse(self, upper)

    def lu(self, pivot: bool = True, get_infos: bool = False) -> Any:
        """``(LU, pivots)``, and ``info`` with ``get_infos``, as the deprecated ``torch.lu`` (a
        plain tuple, as PyTorch's method)."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return tuple(legacy.lu(self, pivot, get_infos))

    def lu_solve(self, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
        """The solution of ``A X = self`` from ``lu_factor``'s ``(LU, pivots)`` of ``A``, as the
        deprecated ``torch.lu_solve``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.lu_solve(self, LU_data, LU_pivots)

    def geqrf(self) -> Any:
        """``(a, tau)``, the QR factorization in LAPACK's compact form, as ``torch.geqrf``."""
        from scratchgrad.linalg import extras  # (linalg imports this module)

        return extras.geqrf(self)

    def orgqr(self, input2: Tensor) -> Tensor:
        """The product of the Householder reflections below the diagonal of this tensor, with
        the scales ``input2``: ``linalg.householder_product``, as ``torch.orgqr``."""
        from scratchgrad import linalg  # (linalg imports this module)

        return linalg.householder_product(self, input2)

    def ormqr(
        self, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False
    ) -> Tensor:
        """``input3`` multiplied by the product of this tensor's Householder reflections with
        the scales ``input2``, as ``torch.ormqr``."""
        from scratchgrad.linalg import extras  # (linalg imports this module)

        return extras.ormqr(self, input2, input3, left, transpose)

    def eig(self, eigenvectors: bool = False) -> Any:
        """Removed from PyTorch: raises its RuntimeError pointing to ``linalg.eig``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.eig(self, eigenvectors)

    def symeig(self, eigenvectors: bool = False) -> Any:
        """Removed from PyTorch: raises its RuntimeError pointing to ``linalg.eigh``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.symeig(self, eigenvectors)

    def solve(self, other: Tensor) -> Any:
        """Removed from PyTorch: raises its RuntimeError pointing to ``linalg.solve``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.solve(self, other)

    def lstsq(self, other: Tensor) -> Any:
        """Removed from PyTorch: raises its RuntimeError pointing to ``linalg.lstsq``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.lstsq(self, other)

    def qr(self, some: bool = True) -> Any:
        """The QR factorization (Q, R), as the deprecated ``torch.qr``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.qr(self, some)

    def svd(self, some: bool = True, compute_uv: bool = True) -> Any:
        """The singular value decomposition (U, S, V), as ``torch.svd`` (V, not Vh).

        >>> import scratchgrad as sg
        >>> U, S, V = sg.tensor([[0.0, 2.0], [1.0, 0.0]]).svd()
        >>> S, (U * S) @ V.mT
        (tensor([2., 1.]), tensor([[0., 2.],
                [1., 0.]]))
        """
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.svd(self, some, compute_uv)

    def triangular_solve(
        self, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False
    ) -> Any:
        """The solution of the triangular system ``A X = self`` and a copy of ``A``, as the
        deprecated ``torch.triangular_solve``."""
        from scratchgrad.linalg import legacy  # (linalg imports this module)

        return legacy.triangular_solve(self, A, upper, transpose, unitriangular)

    # ---- in place ---------------------------------------------------------------------------

    def _inplace(self, name: str, out_of_place: Callable, ufunc: str, other: Any) -> Tensor:
        """Update in place. Outside a graph this is one call of the array module's ``ufunc``;
        inside one, it is recorded (``_record_in_place``)."""
        is_tensor = isinstance(other, Tensor)
        # (an integer or bool tensor stays out of graphs: NumPy's casting refuses a float)
        other_grad = (
            is_tensor and other.requires_grad and backend.can_require_grad(self.array.dtype)
        )
        if not _state.enabled or not (self.requires_grad or other_grad):
            if _state.enabled:
                _refuse_view_from_no_grad(self, name)
            other = getattr(other, "array", other)
            if is_tensor and (other.base is not None or self.array.base is not None):
                _refuse_partial_overlap(name, self.array, other)  # (off the plain tensors' path)
            if type(other) in _NUMBERS and self.array.dtype in backend.SIXTEEN_BIT:
                other = backend.SixteenBitNumber(other)  # x.mul_(0.1) as x * 0.1
            elif type(other) is int and self.array.dtype.kind in "iu" and not 0 <= other < 128:
                other = wrapped_int(other, self.array.dtype)  # uint8 -= 1 as uint8 - 1
            # as PyTorch, integer arrays wrap into an unsigned tensor (NumPy's same_kind refuses)
            unsigned = self.array.dtype.kind == "u" and ufunc != "true_divide"
            casting = "same_kind"
            if unsigned and getattr(other, "dtype", backend.float64).kind in "iu":
                casting = "unsafe"
            try:
                if capture_hook.recorder is None:
                    _elementwise(ufunc, self.array, other, out=self.array, casting=casting)
                else:  # scratchgrad.jit: done again at every replay
                    capture_hook.recorder.reach(self)
                    capture_hook.recorder.call(
                        _elementwise, ufunc, self.array, other, out=self.array, casting=casting
                    )
            except (ValueError, TypeError) as error:
                raise _write_error(name, self.array, error) from None
            increment_version(self)
            return self
        if is_tensor:
            _refuse_partial_overlap(name, self.array, other.array)
        return self._record_in_place(name, out_of_place, other)

    def _record_in_place(
        self, name: str, out_of_place: Callable, other: Any, index: tuple | None = None
    ) -> Tensor:
        """Change this tensor (or ``self[index]``) to ``out_of_place(old, other)``, recorded.

        The op is recorded out of place on a copy of the old value, so a backward that needs
        the old value fails on the version check instead of using wrong numbers. When the
        memory belongs to a base (this tensor is a view, or ``index`` selects part of it), the
        base's history is rebased onto the change, as PyTorch's CopySlices does, and the view
        is taken again from the new base; otherwise this tensor takes over the new node. An
        op that records nothing (``logical_and_``, or any op on an integer tensor) changes the
        values and leaves the history as it was, as PyTorch's: a tensor outside any graph stays
        outside, and one in a graph keeps its node (PyTorch's gradient then flows through the
        old node as if nothing had changed; before, the tensor became a leaf).
        """
        base, steps = getattr(self, "_view", (self, ()))  # unset on tensors that are no view
        if index is not None:
            steps = (*steps, (movement.GetItem, {"index": index}))
        _refuse_view_from_no_grad(self, name, recorded=True)
        if hasattr(self, "_multi_output"):  # unset on all other tensors
            raise RuntimeError(f"{name}: " + _multi_output_error(self, "is being modified"))
        if _changes_a_leaf(self, base):
            what = "a leaf Variable" if base is self else "a view of a leaf Variable"
            raise RuntimeError(  # PyTorch's words, then how to do it
                f"{name}: {what} that requires grad is being used in an in-place operation. "
                "Wrap the update in scratchgrad.no_grad()"
            )
        refusal = getattr(base._ctx, "refuses_in_place", None)  # unset on all other nodes
        if refusal:  # an output that is a view its node's backward would bypass: why
            raise RuntimeError(f"{name}: {refusal}")
        old_base = Tensor._make(_call(_copied, base.array), base._ctx)
        old_base._requires_grad = base._requires_grad
        old = old_base
        for cls, attributes in steps:
            old = cls.apply(old, **attributes)
        result = out = out_of_place(old, other)
        if out.shape != old.shape:
            raise RuntimeError(
                f"{name}: the result's shape {tuple(out.shape)} does not match the tensor's "
                f"{tuple(old.shape)}"
            )
        out = out.to(self.array.dtype)
        new_base = movement.CopySlices.apply(old_base, out, steps=steps) if steps else out
        try:
            _call(_assign, self.array, ... if index is None else index, out.array)
        except ValueError as error:  # a broadcast (expanded) view is read-only
            raise _write_error(name, self.array, error) from None
        if not out.requires_grad:  # recorded nothing: the values change, the history stays
            increment_version(self)
            return self
        base._take_node(new_base._ctx)
        base._requires_grad = True
        for view in [*getattr(base, "_views", ()), self]:  # the base's views in graphs, this one
            if view is not base:
                view._take_view_again()
        increment_version(self)
        if _saved_new_result(result, other):
            self._counter.append(_SavedResultWatch(result))
        return self

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace("add_", Tensor.__add__, "add", other)

    def __isub__(self, other: Any) -> Tensor:
        _refuse_bool_subtraction(self, other)
        return self._inplace("sub_", Tensor.__sub__, "subtract", other)

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace("mul_", Tensor.__mul__, "multiply", other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace("div_", Tensor.__truediv__, "true_divide", other)

    def add_(self, other: Any, *legacy: Any, alpha: float = 1) -> Tensor:
        other, alpha = _other_and_alpha("add_", other, legacy, alpha)
        if alpha != 1 and isinstance(other, Tensor):  # (scaled, it is a copy: checked before)
            _refuse_partial_overlap("add_", self.array, other.array)
        return self.__iadd__(_scaled(self, other, alpha))

    def sub_(self, other: Any, *legacy: Any, alpha: float = 1) -> Tensor:
        other, alpha = _other_and_alpha("sub_", other, legacy, alpha)
        _refuse_bool_subtraction(self, other)  # before alpha makes a bool other a number
        if alpha != 1 and isinstance(other, Tensor):
            _refuse_partial_overlap("sub_", self.array, other.array)
        return self.__isub__(_scaled(self, other, alpha))

    def subtract_(self, other: Any, *number_alpha: Any, alpha: float = 1) -> Tensor:
        other, alpha = _number_other_and_alpha("subtract_", other, number_alpha, alpha)
        return self.sub_(other, alpha=alpha)

    def mul_(self, other: Any) -> Tensor:
        return self.__imul__(other)

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return self.__itruediv__(other)
        return self.divide_(other, rounding_mode=rounding_mode)

    def _apply_(
        self, name: str, op: Callable[[Tensor], Tensor], *arguments: Any, promotes: bool = False
    ) -> Tensor:
        """``self = op(self)`` in place: the in-place form (``name``) of an op. In a graph
        (this tensor, or a tensor among ``arguments``, requires grad) the op is recorded on a
        copy of the old value (``_record_in_place``: a backward that needed the old value
        fails on its version); otherwise its result is copied into this tensor's memory, by
        ``copy_`` (which a jitted step records). As PyTorch, the result must keep the shape
        and cast to this tensor's dtype by kind (not float into int); for an op that
        ``promotes`` its operands, the promoted type must, before the op refuses a dtype."""

        def checked(old: Tensor) -> Tensor:
            try:
                out = op(old)
            except NotImplementedError:  # (bool.igamma_(int): PyTorch's cast error)
                if promotes and arguments and isinstance(arguments[0], Tensor | numbers.Number):
                    refuse_cast(name, result_dtype(old, arguments[0]), self.array.dtype)
                raise
            refuse_cast(name, out.array.dtype, self.array.dtype)
            if out.shape != self.shape:
                raise RuntimeError(
                    f"{name}: the result's shape {tuple(out.shape)} does not match the tensor's "
                    f"{tuple(self.shape)}"
                )
            return out

        if name not in _READ_AS_NUMBERS_OR_UNCHECKED:
            for argument in arguments:
                if isinstance(argument, Tensor):
                    _refuse_partial_overlap(name, self.array, argument.array)
        graph = self.requires_grad or any(
            isinstance(a, Tensor) and a.requires_grad for a in arguments
        )
        if _state.enabled and graph:
            return self._record_in_place(name, lambda old, _: checked(old), None)
        if _state.enabled:
            _refuse_view_from_no_grad(self, name)
        return self._copy_from(name, checked(self))

    def _take_view_again(self) -> None:
        """This view's history, taken again from its base's (which an in-place change moved)."""
        base, steps = self._view
        view = Tensor._make(base.array, base._ctx)
        for cls, attributes in steps:
            view = cls.apply(view, **attributes)
        if hasattr(self, "_no_grad_view"):  # taken under no_grad: its history is ambiguous
            view = movement.ViewChangedRefused.apply(view, message=movement.NO_GRAD_VIEW_CHANGED)
        elif hasattr(self, "_multi_output"):
            changed = "its base or another view of its base has been modified"
            view = movement.ViewChangedRefused.apply(
                view, message=_multi_output_error(self, changed)
            )
        self._take_node(view._ctx)
        self._requires_grad = True

    def _take_node(self, ctx: Any) -> None:
        """This tensor's history moves to ``ctx`` (an in-place change): retain_grad's hook
        goes with it, as PyTorch's, so ``.grad`` is the gradient of the new values (the other
        hooks stay on the old node, and get the old values' gradient, as PyTorch's)."""
        old, self._ctx = self._ctx, ctx
        kept = tuple(h for h in getattr(old, "hooks", ()) if getattr(h, "retains_grad", False))
        if kept and ctx is not None:
            old.hooks = tuple(h for h in old.hooks if h not in kept)
            ctx.hooks = (*ctx.hooks, *kept)

    def _write_through_mask(self, given: Any, index: tuple, value: Any) -> None:
        """``self[given] = value`` in a graph, ``index`` holding a boolean mask. A lone mask
        over the leading dims given one value that needs no gradient (``logits[mask] = -1e4``)
        is a ``masked_fill``, which keeps the shape, so a jitted step replays it on each call's
        mask; the rest goes through ``self[index]``, whose count of True entries a recording
        would freeze (refused there)."""
        if (
            isinstance(given, Tensor)
            and given.shape == self.shape[: given.ndim]
            and not (isinstance(value, Tensor) and (value.ndim or value.requires_grad))
        ):
            mask = given.reshape((*given.shape, *[1] * (self.ndim - given.ndim)))
            if not isinstance(value, Tensor):  # (setitem takes 1e9 into float16 as inf, where
                value = self.new_full((), value)  # masked_fill's number raises, as PyTorch's)
            self._record_in_place("setitem", lambda old, v: old.masked_fill(mask, v), value)
            return
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse(
                "writing through a boolean mask into a tensor in a graph (x[mask] = v)",
                "Keep the shape: x = x.masked_fill(mask, v) or sg.where(mask, v, x)",
            )
        self._record_in_place("setitem", _overwrite, value, index)

    def _records(self, value: Any) -> bool:
        """Whether overwriting this tensor with ``value`` must be recorded in the graph (not
        for an integer or bool tensor, which cannot require grad)."""
        if not _state.enabled:
            return False
        if self.requires_grad or (
            isinstance(value, Tensor)
            and value.requires_grad
            and backend.can_require_grad(self.array.dtype)
        ):
            return True
        _refuse_view_from_no_grad(self, "an in-place operation")
        return False

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def fill_(self, value: float) -> Tensor:
        if isinstance(value, Tensor):  # copied as copy_ casts it (1e6 wraps into int8's 64)
            if value.ndim:  # (copy_ would broadcast it)
                raise RuntimeError(
                    "fill_ only supports 0-dimension value tensor but got tensor with "
                    f"{value.ndim} dimensions."
                )
            return self._copy_from("fill_", value)
        if self._records(value):
            return self._record_in_place("fill_", _overwrite, value)
        _reached(self)
        try:
            _call(_fill, self.array, filled_number(value, self.array.dtype, self.array.size))
        except ValueError as error:
            raise _write_error("fill_", self.array, error) from None
        increment_version(self)
        return self

    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:
        """Replace each entry ``v`` with ``callable(v)`` (a Python number in, a real number out,
        converted to the tensor's dtype as ``tensor`` converts), as ``torch.Tensor.apply_``:
        slow, on the CPU only, and not on a tensor that requires grad.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 2.0]).apply_(lambda v: v * 10)
        tensor([10., 20.])
        """
        return self._map_each("apply_", callable)

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
        """Replace each entry ``v`` with ``callable(v, w)``, ``w`` the entry of ``tensor``
        (broadcast to this tensor's shape) at the same place, as ``torch.Tensor.map_``: slow,
        on the CPU only, and not on tensors that require grad.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 2.0]).map_(sg.tensor(10.0), lambda v, w: v + w)
        tensor([11., 12.])
        """
        return self._map_each("map_", callable, tensor)

    def map2_(self, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:
        """``map_`` with two tensors: each entry ``v`` becomes ``callable(v, a, b)``, as
        ``torch.Tensor.map2_``. As PyTorch's loop, it reads ``a`` and ``b`` entry by entry as it
        writes (row-major): one that shares this tensor's memory (``x.map2_(x[0], ...)``)
        shows the entries already written.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 2.0]).map2_(sg.tensor(2.0), sg.tensor(3.0), lambda v, a, b: v * a + b)
        tensor([5., 7.])
        """
        return self._map_each("map2_", callable, x, y)

    def _map_each(self, name: str, callable: Callable, *others: Tensor) -> Tensor:
        """Each entry ``v`` set to ``callable(v, *the others' entries there)`` (see apply_)."""
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse(f".{name}()")
        if self.requires_grad or builtins.any(other.requires_grad for other in others):
            raise RuntimeError(
                f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
                "instead."
            )
        if not self.is_cpu:
            raise TypeError(f"{name} is only implemented on CPU tensors")
        for other in others:
            if other.dtype != self.dtype:
                raise TypeError(
                    f"{name}: expected a tensor of dtype {self.dtype.name} for 'other' (got "
                    f"{other.dtype.name})"
                )
        arrays = [other.expand(self.shape).array for other in others]
        if builtins.any(xp.may_share_memory(self.array, array) for array in arrays):
            # NOTE: PyTorch's loop reads each entry of the others as it writes this tensor's
            # (row-major), so one sharing its memory shows the entries already written (a
            # shifted view of it gives a running result): done entry by entry here too
            for index in xp.ndindex(self.shape):
                values = (array[index].item() for array in (self.array, *arrays))
                self.array[index] = _mapped(name, [callable(*values)], self.array.dtype)[0]
        else:  # one call per entry, then one write
            columns = [array.reshape(-1).tolist() for array in (self.array, *arrays)]
            results = [callable(*values) for values in zip(*columns)]
            self.array[...] = _mapped(name, results, self.array.dtype).reshape(self.shape)
        increment_version(self)
        return self

    def copy_(self, src: Any) -> Tensor:
        if isinstance(src, Tensor):
            _refuse_partial_overlap("copy_", self.array, src.array)
        return self._copy_from("copy_", src)

    def _refuse_a_newer_batch(self, name: str, value: Any) -> None:
        """vmap's error for writing batched values (``value``) into this unbatched tensor:
        each of its members would take a whole batch (a batched tensor has its own)."""
        refuse = vmapped("_refuse_writing_a_batch", value)
        if refuse is not None:
            refuse(name)

    def _copy_from(self, name: str, src: Any) -> Tensor:
        """``copy_``, named ``name`` in its errors: also the random fills' last step (in a
        graph, no gradient flows to the old values, as PyTorch's fills)."""
        self._refuse_a_newer_batch(name, src)
        if self._records(src):
            return self._record_in_place(name, _overwrite, src)
        xp = namespace(self.array)
        if isinstance(src, Tensor):  # from another device too, as PyTorch's copy_
            source = backend.to_device(src.array, backend.device_of(self.array))
        else:
            source = xp.asarray(src)
        _reached(self)
        try:
            _call(_copy_into, self.array, source)
        except ValueError as error:
            shapes = f"cannot copy shape {source.shape} into {self.array.shape}"
            writable = getattr(self.array.flags, "writeable", True)
            raise _write_error(name, self.array, shapes if writable else error) from None
        increment_version(self)
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        if index is False:  # PyTorch's setitem returns at once, checking nothing
            return
        if isinstance(index, Tensor) and index.array.dtype == backend.uint8:
            _refuse_byte_mask_fill(value)
        given_value = value
        if isinstance(value, Tensor) and value.shape[:1] == (1,):
            # PyTorch drops a value's leading 1s (x[0, 0] = [v])
            value = value.reshape(value.shape[_leading_ones(value.shape) :])
        given, index = index, _index(index, self.array, (self, value))
        if isinstance(value, Tensor):
            if value.dtype != self.dtype:  # (after too many indices, as PyTorch)
                _refuse_index_put_cast(self, given, value)
            _refuse_setitem_overlap(self.array, index, value.array, given_value.array)
        else:  # (300 into int8 and 1e39 into float32 raise, as PyTorch's)
            value = wrapped_float(written_number(value, self.array.dtype), self.array.dtype)
        if self._records(value):
            if any(_is_mask(item) for item in index):
                self._write_through_mask(given, index, value)
            else:
                self._record_in_place("setitem", _overwrite, value, index)
            return
        _reached(self)
        try:
            _call(_assign, self.array, index, getattr(value, "array", value))
        except ValueError as error:
            if not getattr(self.array.flags, "writeable", True):
                raise _write_error("setitem", self.array, error) from None
            raise RuntimeError(f"setitem: {error}") from None  # PyTorch's error type
        increment_version(self)

    # ---- dtype ------------------------------------------------------------------------------

    def to(
        self,
        *args: Any,
        dtype: Any = None,
        device: Any = None,
        tensor: Tensor | None = None,
        non_blocking: bool = False,
        copy: bool = False,
        memory_format: Any = None,
    ) -> Tensor:
        """Convert to a dtype (``x.to(sg.float64)``), a device (``x.to("cpu")``), both, or like
        another tensor (``x.to(y)``, ``x.to(tensor=y)``; a Python number is read as a tensor
        of it, as PyTorch's); the tensor itself when nothing changes, unless ``copy``. A
        ``memory_format`` lays the result out so (a copy where PyTorch's
        ``suggest_memory_format`` of this tensor differs, as PyTorch's): ``channels_last``
        (``_3d``) with channels-last strides, ``contiguous_format`` row-major.

        >>> import scratchgrad as sg
        >>> sg.ones(2).to("cpu", sg.float64).dtype
        scratchgrad.float64
        """
        args, flags = split_to_arguments(args, tensor, non_blocking)
        if type(copy) is not bool:  # (as PyTorch's)
            raise TypeError(f"to(): argument 'copy' must be bool, not {type(copy).__name__}")
        copy = copy or flags[1:2] == (True,)
        device, dtype = requested_device_and_dtype(args, device, dtype)
        if memory_format is not None:
            check_memory_format(memory_format, self.ndim)
        if memory_format is None or memory_format is preserve_format:  # (PyTorch's default)
            return self._moved_and_cast(device, dtype, copy)
        # a new layout is a copy, as PyTorch's; so is a copy laid out as asked
        out = self._moved_and_cast(
            device, dtype, copy or _suggested_format(self) is not memory_format
        )
        return out if out is self else laid_out_as(out, self, memory_format)

    def _moved_and_cast(self, device: Any, dtype: Any, copy: bool) -> Tensor:
        """``to``'s result on ``device`` (None: kept) of ``dtype`` (None: kept)."""
        moved = self
        if device is not None:
            backend.array_backend(device)  # raises for a device without a backend
            if not backend.is_on(self.array, device):
                moved = movement.ToDevice.apply(self, device=device)
        if dtype is None or dtype == self.array.dtype:
            if copy and moved is self:  # (PyTorch's ToCopyBackward0, not clone's node)
                return movement.Copy.apply(self, dtype=self.array.dtype)
            return moved
        if moved.requires_grad and not backend.can_require_grad(dtype):
            with no_grad():  # an integer or bool result leaves the graph, as in PyTorch
                return movement.Copy.apply(moved, dtype=dtype)
        return movement.Copy.apply(moved, dtype=dtype)

    def cpu(self) -> Tensor:
        """This tensor on the CPU (itself when it is there already)."""
        return self.to(backend.cpu)

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        """This tensor on a CUDA device (``scratchgrad[cuda]``: CuPy and a GPU); raises an
        error naming the device when there is none."""
        return self.to(backend.cuda_device(device))

    def pin_memory(self, device: Any = None) -> Tensor:
        """The tensor itself: its memory is the array module's own, with no page-locked copy
        to make (PyTorch's CUDA builds return a pinned copy, its CPU builds raise).

        >>> import scratchgrad as sg
        >>> x = sg.ones(2)
        >>> x.pin_memory() is x
        True
        """
        return self

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> str | Tensor:
        """Without ``dtype``, PyTorch's name of this tensor's type ("torch.FloatTensor",
        "torch.cuda.LongTensor"); else this tensor cast to ``dtype``: a dtype, a legacy type
        (``sg.DoubleTensor``) or its PyTorch name (itself when nothing changes).

        >>> import scratchgrad as sg
        >>> sg.ones(2).type(), sg.ones(2).type("torch.DoubleTensor").dtype
        ('torch.FloatTensor', scratchgrad.float64)
        """
        from scratchgrad import creation  # (its legacy types are Tensors of this module)

        names = creation.legacy_type_names()
        if dtype is None:
            name = next(name for name, known in names.items() if known == self.array.dtype)
            return f"torch.{'cuda.' if self.is_cuda else ''}{name}"
        if isinstance(dtype, str):
            device, _, name = dtype.rpartition(".")
            if device not in ("torch", "torch.cuda") or name not in names:
                raise ValueError(f"invalid type: {dtype!r}")
            return self.to("cuda" if device == "torch.cuda" else self.device, names[name])
        if not isinstance(dtype, (backend.dtype, xp.dtype, creation._LegacyTensorType)):
            raise TypeError("dtype must be a type, str, or dtype object")
        return self.to(dtype.dtype if isinstance(dtype, type) else dtype)

    def float(self) -> Tensor:
        return self.to(backend.float32)

    def double(self) -> Tensor:
        return self.to(backend.float64)

    def half(self) -> Tensor:
        return self.to(backend.float16)

    def bfloat16(self) -> Tensor:
        return self.to(backend.bfloat16)

    def cfloat(self) -> Tensor:
        return self.to(backend.complex64)

    def cdouble(self) -> Tensor:
        return self.to(backend.complex128)

    def long(self) -> Tensor:
        return self.to(backend.int64)

    def int(self) -> Tensor:
        return self.to(backend.int32)

    def bool(self) -> Tensor:
        return self.to(backend.bool_)

    def byte(self) -> Tensor:
        return self.to(backend.uint8)

    def char(self) -> Tensor:
        return self.to(backend.int8)

    def short(self) -> Tensor:
        return self.to(backend.int16)

    def clone(self, *, memory_format: Any = preserve_format) -> Tensor:
        """A differentiable copy laid out as PyTorch's: by default (``preserve_format``) with
        this tensor's strides where its entries are dense (a transposed or permuted view),
        else with dense ones in its order of dims (``empty_like``); row-major for
        ``contiguous_format``, channels-last strides for ``channels_last`` (and ``_3d``).

        >>> import scratchgrad as sg
        >>> x = sg.zeros(4, 3)
        >>> x.t().clone().stride(), x.t().clone(memory_format=sg.contiguous_format).stride()
        ((1, 3), (4, 1))
        """
        check_memory_format(memory_format, self.ndim, "clone")
        if memory_format is contiguous_format:
            return movement.Clone.apply(self, dtype=self.array.dtype, order="C")
        out = movement.Clone.apply(self, dtype=self.array.dtype)
        if memory_format.ndim is not None:
            if type(out) is not Tensor:  # a vmap's batched tensor: no layout of its own
                return out
            return laid_out(out, _channels_last_strides(self.shape))
        if getattr(self.array, "base", 0) is None:  # no view (see _kept_layout): row-major
            return out
        if not _copied_as_torch(self):
            return _laid_out_like(out, self)
        return out if out.array.flags.c_contiguous else _kept_layout(out)

    def is_floating_point(self) -> bool:
        return backend.is_floating(self.array.dtype)

    # ---- elementwise ------------------------------------------------------------------------

    def exp(self) -> Tensor:
        return unary.Exp.apply(self._floating())

    def log(self) -> Tensor:
        return unary.Log.apply(self._floating())

    def sin(self) -> Tensor:
        return unary.Sin.apply(self._floating())

    def cos(self) -> Tensor:
        return unary.Cos.apply(self._floating())

    def tanh(self) -> Tensor:
        return unary.Tanh.apply(self._floating())

    def sigmoid(self) -> Tensor:
        return unary.Sigmoid.apply(self._floating())

    def relu(self) -> Tensor:
        if self.array.dtype.kind in "bc":  # (one test on this hot path for both refusals)
            refuse_complex(self, "relu")
            raise RuntimeError("relu: Boolean inputs not supported for relu")
        return unary.Relu.apply(self)

    def sqrt(self) -> Tensor:
        return unary.Sqrt.apply(self._floating())

    def abs(self) -> Tensor:
        if self.array.dtype.kind == "c":  # |z|, with its own gradient
            return complex_ops.Abs.apply(self)
        _refuse_kernel_dtype("abs", "abs_cpu", "b", self)
        return unary.Abs.apply(self)

    def sign(self) -> Tensor:
        refuse_complex(self, "sign")
        if self.array.dtype == backend.bool_:  # as PyTorch's (NumPy has no bool sign)
            return self.clone()
        return unary.Step.apply(self, ufunc=xp.sign)

    def floor(self) -> Tensor:
        refuse_complex(self, "floor")
        _refuse_kernel_dtype("floor", "floor_vml_cpu", "b", self)
        return unary.Step.apply(self, ufunc=xp.floor)

    def ceil(self) -> Tensor:
        refuse_complex(self, "ceil")
        _refuse_kernel_dtype("ceil", "ceil_vml_cpu", "b", self)
        return unary.Step.apply(self, ufunc=xp.ceil)

    def round(self, *, decimals: int = 0) -> Tensor:
        """Round to the nearest integer, halves to even (``round(2.5)`` is 2), as
        ``torch.round``; with ``decimals``, to that many decimal places (to the left of the
        point when negative), computed as ``rint(x * 10**decimals) / 10**decimals``: fast but
        inexact, as NumPy's ``around``. Integer tensors come back as they are (``decimals`` 0
        only). The gradient is zero.

        >>> import scratchgrad as sg
        >>> sg.tensor([-0.5, 0.5, 1.5, 2.5]).round()
        tensor([-0., 0., 2., 2.])
        >>> sg.round(sg.tensor([0.125, 1234.5]), decimals=2)
        tensor([1.2000e-01, 1.2345e+03])
        >>> sg.round(sg.tensor([1234.5, 1250.0]), decimals=-2)
        tensor([1200., 1200.])
        """
        if type(decimals) is not int:  # not a bool either, as PyTorch
            raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
        if decimals == 0:
            _refuse_kernel_dtype("round", "round_vml_cpu", "bc", self)
            return unary.Step.apply(self, ufunc=xp.round)
        if not backend.is_floating(self.array.dtype):
            raise NotImplementedError(
                f"round: decimals={decimals} needs a floating point tensor, got {self.dtype.name}"
            )
        return unary.Round.apply(self, decimals=decimals)

    def neg(self) -> Tensor:
        return -self

    negative = neg

    def square(self) -> Tensor:
        if self.array.dtype == backend.bool_:  # as PyTorch's pow(x, 2): bools give int64
            return self.long()
        return self * self

    def rsqrt(self) -> Tensor:
        """1 / sqrt(x); a 16-bit tensor's computed in float32 and rounded once, as PyTorch's."""
        if self.array.dtype in backend.SIXTEEN_BIT:
            return (1 / self.float().sqrt()).to(self.array.dtype)
        return 1 / self.sqrt()

    def log1p(self) -> Tensor:
        return unary.Log1p.apply(self._floating())

    def expm1(self) -> Tensor:
        return unary.Expm1.apply(self._floating())

    def tan(self) -> Tensor:
        return unary.Tan.apply(self._floating())

    def asin(self) -> Tensor:
        return unary.Asin.apply(self._floating())

    def acos(self) -> Tensor:
        return unary.Acos.apply(self._floating())

    def atan(self) -> Tensor:
        return unary.Atan.apply(self._floating())

    def sinh(self) -> Tensor:
        return unary.Sinh.apply(self._floating())

    def cosh(self) -> Tensor:
        return unary.Cosh.apply(self._floating())

    def asinh(self) -> Tensor:
        return unary.Asinh.apply(self._floating())

    def acosh(self) -> Tensor:
        return unary.Acosh.apply(self._floating())

    def atanh(self) -> Tensor:
        return unary.Atanh.apply(self._floating())

    arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh

    def atan2(self, other: Any) -> Tensor:
        """The angle of the point (other, self), elementwise: atan(self / other) in the right
        quadrant. ``other`` must be a tensor, as PyTorch's."""
        other = _tensor_other("atan2", other)
        x, y = self._floating_operands(other)  # (int64 with a 0-d float64: float64)
        _refuse_kernel_dtype("atan2", "atan2_cpu", "c", x)
        return binary.Atan2.apply(x, y)

    def arctan2(self, other: Any) -> Tensor:
        """``atan2`` under NumPy's name, as ``torch.arctan2`` (its errors say ``arctan2``)."""
        return self.atan2(_tensor_other("arctan2", other))

    def log2(self) -> Tensor:
        return unary.Log2.apply(self._floating())

    def log10(self) -> Tensor:
        return unary.Log10.apply(self._floating())

    def exp2(self) -> Tensor:
        """2**x, exact at the integers, inf past the range (not exp(x log 2), which is
        neither), as ``torch.exp2``.

        >>> import scratchgrad as sg
        >>> sg.tensor([3.0, -1.0, 1024.0], dtype=sg.float64).exp2().tolist()
        [8.0, 0.5, inf]
        """
        return special.Exp2.apply(self._floating())

    def reciprocal(self) -> Tensor:
        return unary.Reciprocal.apply(self._floating())

    def trunc(self) -> Tensor:
        refuse_complex(self, "trunc")
        _refuse_kernel_dtype("trunc", "trunc_vml_cpu", "b", self)
        return unary.Step.apply(self, ufunc=xp.trunc)

    fix = trunc

    def frac(self) -> Tensor:
        """The fractional part, with the sign of the input: x - trunc(x) (of a float only, as
        PyTorch's)."""
        _refuse_kernel_dtype("frac", "frac_cpu", "biuc", self)
        return self - self.trunc()

    def erf(self) -> Tensor:
        return special.Erf.apply(self._real_floating("erf"))

    def erfinv(self) -> Tensor:
        """The inverse of ``erf``, elementwise, as ``torch.erfinv``: +-inf at +-1, NaN outside.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 0.5]).erfinv()
        tensor([0.0000, 0.4769])
        """
        return special.Erfinv.apply(self._real_floating("erfinv"))

    def fmod(self, other: Any) -> Tensor:
        """The remainder with the dividend's sign (C's fmod), as ``torch.fmod``.

        >>> import scratchgrad as sg
        >>> sg.tensor([-3.0, 3.0]).fmod(2)
        tensor([-1.,  1.])
        """
        batched = vmapped("_fmod", self, other)  # (integers are divided on the arrays)
        if batched is not None:
            return batched(self, other)
        x, y = self._division_operands(other)
        if not backend.is_floating(x.array.dtype):
            _refuse_kernel_dtype("fmod", "fmod_cpu", "c", x, y)
            _refuse_bool_division(x, y, "fmod", "fmod")
            _call(_check_divisor, "fmod", getattr(y, "array", y), x.array)
            return Tensor._make(_call(_elementwise, "fmod", x.array, getattr(y, "array", y)))
        return binary.Fmod.apply(x, y)

    def erfc(self) -> Tensor:
        """1 - erf(x) without the cancellation of that difference for large x, as
        ``torch.erfc``.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 8.0], dtype=sg.float64).erfc().tolist()
        [1.0, 1.1224297172982926e-29]
        """
        return special.Erfc.apply(self._real_floating("erfc"))

    # ---- PyTorch's other elementwise names --------------------------------------------------

    def lgamma(self) -> Tensor:
        """The log of the absolute value of the gamma function, as ``torch.lgamma``.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.5, 3.0]).lgamma()
        tensor([0.5724, 0.6931])
        """
        return special.Lgamma.apply(self._real_floating("lgamma"))

    def digamma(self) -> Tensor:
        """psi(x) = Gamma'(x) / Gamma(x), as ``torch.digamma``: -inf at 0, NaN at -1, -2, ...

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 0.5]).digamma()
        tensor([-0.5772, -1.9635])
        """
        return special.Polygamma.apply(self._real_floating("digamma"), n=0)

    def polygamma(self, n: int) -> Tensor:
        """The ``n``-th derivative of ``digamma``, as ``Tensor.polygamma`` (``torch.polygamma``
        takes ``n`` first).

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0]).polygamma(1)  # pi**2 / 6
        tensor([1.6449])
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
        if n < 0:
            raise RuntimeError(f"polygamma(n, x) does not support negative n, got n={n}")
        return special.Polygamma.apply(self._real_floating("polygamma"), n=int(n))

    def mvlgamma(self, p: int) -> Tensor:
        """The log of the multivariate gamma function of dimension ``p``: the sum of
        ``lgamma(x - i / 2)`` for i < p, plus p (p - 1) / 4 log(pi), as ``torch.mvlgamma``.

        >>> import scratchgrad as sg
        >>> sg.tensor([2.0, 3.0]).mvlgamma(3)
        tensor([1.5963, 2.6949])
        """
        if isinstance(p, bool) or not isinstance(p, numbers.Integral):
            raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
        if p < 1:
            raise RuntimeError(f"mvlgamma: p has to be greater than or equal to 1, got {p}")
        if self.array.dtype == backend.bool_:
            raise RuntimeError("mvlgamma: the input tensor may not be a boolean tensor")
        x = self._real_floating("mvlgamma")
        offsets = x.new_tensor([-i / 2 for i in range(p)])  # x + 0.0: +0 at -0, as PyTorch's
        terms = special.Lgamma.apply(x.unsqueeze(-1) + offsets)
        return terms.sum(-1) + p * (p - 1) / 4 * math.log(math.pi)

    def i0(self) -> Tensor:
        """The modified Bessel function of the first kind of order 0, as ``torch.i0``.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 1.0]).i0()
        tensor([1.0000, 1.2661])
        """
        return special.ModifiedBessel.apply(self._real_floating("i0"), order=0, scaled=False)

    def sinc(self) -> Tensor:
        """The normalized sinc function sin(pi x) / (pi x), 1 at 0, as ``torch.sinc``: computed
        as PyTorch computes it (pi x rounded first; 16-bit floats in float32), with its
        gradient 0 at 0.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 0.5, 1.5]).sinc()
        tensor([ 1.0000,  0.6366, -0.2122])
        """
        x = self._floating()
        wide = x.float() if x.dtype in (backend.float16, backend.bfloat16) else x
        # 1 where x is 0, or where x**2 is (where sin(pi x) / (pi x) is 1 anyway): no 0 / 0
        # and no inf - inf in the gradient, which is 0 there, as PyTorch's
        with backend.errstate(over="ignore", invalid="ignore"):  # sin(inf): NaN, as PyTorch's
            zero = wide * wide == 0
            product = where(zero, 1.0, wide) * math.pi
            return where(zero, 1.0, product.sin() / product).to(x.dtype)

    def logit(self, eps: float | None = None) -> Tensor:
        """log(x / (1 - x)), as ``torch.logit``: with ``eps``, x is first clamped to
        [eps, 1 - eps] (its gradient 0 outside); without, NaN outside [0, 1].

        >>> import scratchgrad as sg
        >>> sg.tensor([0.5, 0.0]).logit(eps=1e-6)
        tensor([  0.0000, -13.8155])
        """
        eps = None if eps is None else float_argument("logit", "eps", eps)
        return special.Logit.apply(self._real_floating("logit"), eps=eps)

    def xlogy(self, other: Any) -> Tensor:
        """self * log(other), and 0 where self is 0 (unless other is NaN), as ``torch.xlogy``.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 2.0]).xlogy(sg.tensor([0.0, 3.0]))
        tensor([0.0000, 2.1972])
        """
        x, y = _float_pair(self, other)
        return special.Xlogy.apply(x._real_floating("xlogy"), y, log1p=False)

    def copysign(self, other: Any) -> Tensor:
        """|self| with the sign (bit) of ``other``, as ``torch.copysign``: always floating; the
        gradient reaches ``self`` only (0 where self is 0).

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 2]).copysign(sg.tensor([-0.0, 1.0]))
        tensor([-1.,  2.])
        """
        x, y = _float_pair(self, other)
        return special.Copysign.apply(x._real_floating("copysign"), y)

    def fmax(self, other: Tensor) -> Tensor:
        """The larger of the two, elementwise, a NaN losing to a number, as ``torch.fmax``.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, float("nan")]).fmax(sg.tensor([2.0, 0.0]))
        tensor([2., 0.])
        """
        return self._fmax("fmax", other, largest=True)

    def fmin(self, other: Tensor) -> Tensor:
        """The smaller of the two, elementwise, a NaN losing to a number, as ``torch.fmin``."""
        return self._fmax("fmin", other, largest=False)

    def _fmax(self, name: str, other: Tensor, largest: bool) -> Tensor:
        x, y = self._operands(_tensor_other(name, other))
        if x.dtype.kind == "c":  # (promoted: either operand complex makes both so)
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return special.Fmax.apply(x, y, largest=largest)

    def heaviside(self, values: Tensor) -> Tensor:
        """0 where self < 0, 1 where self > 0, ``values`` where self is 0, as
        ``torch.heaviside`` (the same dtype for both; no derivative: backward raises).

        >>> import scratchgrad as sg
        >>> sg.tensor([-1.0, 0.0, 2.0]).heaviside(sg.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
        """
        values = _tensor_other("heaviside", values, "values")
        if self.dtype.kind == "c" or values.dtype.kind == "c":
            raise RuntimeError("heaviside is not yet implemented for complex tensors.")
        if values.dtype != self.dtype:
            raise RuntimeError(
                "heaviside is not yet implemented for tensors with different dtypes."
            )
        return special.Heaviside.apply(self, values)

    def float_power(self, exponent: Any) -> Tensor:
        """``self ** exponent`` computed in float64 (complex128 where either is complex), as
        ``torch.float_power``.

        >>> import scratchgrad as sg
        >>> sg.tensor([2, 3]).float_power(2)
        tensor([4., 9.], dtype=scratchgrad.float64)
        """
        tensors = [t for t in (self, exponent) if isinstance(t, Tensor)]
        dtype = backend.complex128 if any(t.is_complex() for t in tensors) else backend.float64
        if isinstance(exponent, Tensor):
            exponent = exponent.to(dtype)
        return self.to(dtype) ** exponent

    def ldexp(self, other: Tensor) -> Tensor:
        """self * 2**other, as ``torch.ldexp``: in the floating dtype of the two (2**other
        computed in it, exactly for integers).

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 3.0]).ldexp(sg.tensor([3, -1]))
        tensor([8.0000, 1.5000])
        """
        other = _tensor_other("ldexp", other)
        if backend.is_floating(self.array.dtype):  # (PyTorch's: other x dtypes take a bool)
            _refuse_kernel_dtype("ldexp", "ldexp_cpu_exp", "b", other)
        return special.Ldexp.apply(*_float_pair(self, other))

    def frexp(self) -> Any:
        """The mantissa (magnitude in [0.5, 1)) and the int32 exponent with self = mantissa *
        2**exponent, as ``torch.frexp``; the mantissa's gradient is 2**-exponent.

        >>> import scratchgrad as sg
        >>> sg.tensor([8.0, -5.0]).frexp()
        torch.return_types.frexp(
        mantissa=tensor([ 0.5000, -0.6250]),
        exponent=tensor([4, 3], dtype=scratchgrad.int32))
        """
        if not backend.is_floating(self.array.dtype):
            raise RuntimeError("torch.frexp() only supports floating-point dtypes")
        mantissa = special.Frexp.apply(self)
        with no_grad():  # x / (2 mantissa) is 2**(exponent - 1) exactly, and never overflows
            x, twice = self.double(), mantissa.double() * 2
            exponent = where(x.isfinite() & (x != 0), (x / twice).log2() + 1, 0.0).int()
        return mantissa_exponent(mantissa, exponent)

    def nextafter(self, other: Tensor) -> Tensor:
        """The next float after self toward ``other``, as ``torch.nextafter`` (floats only).

        >>> import scratchgrad as sg
        >>> (sg.tensor([1.0]).nextafter(sg.tensor([2.0])) - 1).item() == 2**-23
        True
        """
        other = _tensor_other("nextafter", other)
        return special.Nextafter.apply(*self._floating_pair("nextafter", other))

    def gcd(self, other: Tensor) -> Tensor:
        """The greatest common divisor, elementwise (integers only), as ``torch.gcd``.

        >>> import scratchgrad as sg
        >>> sg.tensor([4, -6, 0]).gcd(sg.tensor([6, 4, 5]))
        tensor([2, 2, 5])
        """
        return self._integer_op("gcd", _tensor_other("gcd", other), "gcd")

    def lcm(self, other: Tensor) -> Tensor:
        """The least common multiple, elementwise (integers only), as ``torch.lcm``.

        >>> import scratchgrad as sg
        >>> sg.tensor([4, -4]).lcm(sg.tensor([6, 6]))
        tensor([12, 12])
        """
        return self._integer_op("lcm", _tensor_other("lcm", other), "lcm")

    def _integer_op(self, name: str, other: Any, ufunc: str, bools: bool = False) -> Tensor:
        """The array module's ``ufunc`` on operands promoted to an integer dtype (or bool if
        ``bools``), as PyTorch promotes them (``4 << True`` shifts an int by a bool); PyTorch's
        NotImplementedError for another promoted dtype (a float number too)."""
        dtype = result_dtype(self, other)
        if dtype.kind not in ("iub" if bools else "iu"):
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_name(dtype)}'")
        return self._compare(ufunc, other)

    def signbit(self) -> Tensor:
        """Whether the sign bit is set (True at -0.0 and at a negative NaN), as
        ``torch.signbit``.

        >>> import scratchgrad as sg
        >>> sg.tensor([-0.0, 0.0, -1.0]).signbit()
        tensor([ True, False,  True])
        """
        if self.array.dtype.kind == "c":
            raise NotImplementedError("signbit is not implemented for complex tensors.")
        return self._elementwise_values("signbit")

    def isposinf(self) -> Tensor:
        """Where self is +inf, as ``torch.isposinf``."""
        return self._elementwise_values("isposinf")

    def isneginf(self) -> Tensor:
        """Where self is -inf, as ``torch.isneginf``."""
        return self._elementwise_values("isneginf")

    def isreal(self) -> Tensor:
        """Whether each entry is real: True everywhere (no complex dtypes here), as
        ``torch.isreal``."""
        return self._elementwise_values("isreal")

    def logaddexp2(self, other: Tensor) -> Tensor:
        """log2(2**self + 2**other) without overflow, as ``torch.logaddexp2``.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 2000.0]).logaddexp2(sg.tensor([1.0, 2000.0])).tolist()
        [2.0, 2001.0]
        """
        other = _tensor_other("logaddexp2", other)
        return special.Logaddexp2.apply(*self._floating_pair("logaddexp2", other))

    def logcumsumexp(self, dim: int) -> Tensor:
        """log(cumsum(exp(self))) along ``dim``, as a running logaddexp (no overflow, and small
        entries before large ones keep their values), as ``torch.logcumsumexp``.

        >>> import scratchgrad as sg
        >>> sg.tensor([-1000.0, 0.0, 1000.0]).logcumsumexp(0)
        tensor([-1000.,     0.,  1000.])
        """
        self._check_floating("logcumsumexp")
        dim = wrap_dim(dim, self.array.ndim)
        if self.array.ndim == 0:  # the entry: its gradient grad, as PyTorch's (not NaN at inf)
            return self.clone()
        return special.Logcumsumexp.apply(self, dim=dim)

    def deg2rad(self) -> Tensor:
        """Degrees to radians, self * pi / 180, as ``torch.deg2rad``.

        >>> import scratchgrad as sg
        >>> sg.tensor([180, -90]).deg2rad()
        tensor([ 3.1416, -1.5708])
        """
        return self._scaled_by("deg2rad", math.pi / 180)

    def rad2deg(self) -> Tensor:
        """Radians to degrees, self * 180 / pi, as ``torch.rad2deg``."""
        return self._scaled_by("rad2deg", 180 / math.pi)

    def _scaled_by(self, name: str, factor: float) -> Tensor:
        """self * factor, 16-bit floats in float32 and rounded once, as PyTorch's (a 16-bit
        product with the factor rounded to 16 bits first is 1 ulp off, deg2rad(180) 3.1426);
        complex numbers refused, as PyTorch's ``name`` refuses them."""
        if self.array.dtype.kind == "c":
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        x = self._floating()
        if x.dtype in (backend.float16, backend.bfloat16):
            return (x.float() * factor).to(x.dtype)
        return x * factor

    def sgn(self) -> Tensor:
        """``x / |x|`` for complex tensors (0 at 0), ``sign`` for real ones (bools: a copy), as
        ``torch.sgn``.

        >>> import scratchgrad as sg
        >>> sg.tensor([3 + 4j, 0j]).sgn()
        tensor([0.6000+0.8000j, 0.0000+0.0000j])
        """
        if not self.is_complex():
            return self.sign()
        zero = self.abs() == 0
        # 0 at 0, with a zero gradient there as PyTorch's (divided by 1: no inf to mask)
        return where(zero, 0.0, self / where(zero, 1.0, self.abs()))

    absolute = abs

    def positive(self) -> Tensor:
        """This tensor itself, as ``torch.positive`` (which refuses bool tensors)."""
        if self.array.dtype == backend.bool_:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def bitwise_and(self, other: Any) -> Tensor:
        """Bitwise AND of integers (logical of bools), as ``torch.bitwise_and``."""
        return self._integer_op("bitwise_and", other, "bitwise_and", bools=True)

    def bitwise_or(self, other: Any) -> Tensor:
        """Bitwise OR of integers (logical of bools), as ``torch.bitwise_or``."""
        return self._integer_op("bitwise_or", other, "bitwise_or", bools=True)

    def bitwise_xor(self, other: Any) -> Tensor:
        """Bitwise XOR of integers (logical of bools), as ``torch.bitwise_xor``."""
        return self._integer_op("bitwise_xor", other, "bitwise_xor", bools=True)

    def bitwise_not(self) -> Tensor:
        """Bitwise NOT of integers (logical of bools), as ``torch.bitwise_not``.

        >>> import scratchgrad as sg
        >>> sg.tensor([0, 5]).bitwise_not()
        tensor([-1, -6])
        """
        _refuse_kernel_dtype("bitwise_not", "bitwise_not_cpu", "fVc", self)  # (V: bfloat16)
        return ~self

    def bitwise_left_shift(self, other: Any) -> Tensor:
        """self * 2**other on integers, as ``torch.bitwise_left_shift``: 0 once the shift
        reaches the width (or is negative), as PyTorch's.

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 3]).bitwise_left_shift(sg.tensor([4, 64]))
        tensor([16,  0])
        """
        out = self._integer_op("lshift", other, "left_shift")
        return out.where(_shift_in_range(other, out.dtype), 0)  # (NumPy's wraps the count)

    def bitwise_right_shift(self, other: Any) -> Tensor:
        """self // 2**other on integers, as ``torch.bitwise_right_shift``: the sign fills it
        once the shift reaches the width (or is negative), as PyTorch's."""
        out = self._integer_op("rshift", other, "right_shift")
        return out.where(_shift_in_range(other, out.dtype), -(self < 0).to(out.dtype))

    greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
    multiply, divide = mul, div

    def igamma(self, other: Tensor) -> Tensor:
        """The regularized lower incomplete gamma function P(self, other), as
        ``torch.igamma`` (``torch.special.gammainc``); differentiable in ``other`` only.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 2.0]).igamma(sg.tensor([1.0, 2.0]))
        tensor([0.6321, 0.5940])
        """
        return self._incomplete_gamma("igamma", other, upper=False)

    def igammac(self, other: Tensor) -> Tensor:
        """The regularized upper incomplete gamma function Q(self, other) = 1 - P, as
        ``torch.igammac`` (``torch.special.gammaincc``), without the cancellation of 1 - P.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0]).igammac(sg.tensor([30.0]))  # exp(-30)
        tensor([9.3576e-14])
        """
        return self._incomplete_gamma("igammac", other, upper=True)

    def _incomplete_gamma(self, name: str, other: Any, upper: bool) -> Tensor:
        a, x = self._operands(_tensor_other(name, other))
        if a.dtype != x.dtype:  # (_operands leaves a bool operand as it is): promoted first
            dtype = result_dtype(a, x)
            a, x = a.to(dtype), x.to(dtype)
        a._check_floating(name)
        return special.Igamma.apply(a, x, upper=upper)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        """Clip to ``[min, max]`` (numbers, or tensors broadcast with this one); the gradient is
        1 inside (bounds included) and 0 outside, and a tensor bound gets it where it clips.

        >>> import scratchgrad as sg
        >>> sg.tensor([-2.0, 0.5, 3.0]).clamp(min=sg.tensor([-1.0, 1.0, 0.0]), max=2.0)
        tensor([-1.,  1.,  2.])
        """
        if min is None and max is None:
            raise RuntimeError("clamp: give at least one of min and max")
        refuse_complex(self, "clamp")
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            return _clamp_by_tensors(self, min, max)
        dtype = self.array.dtype
        for bound in (min, max):
            if isinstance(bound, (int, float)):
                dtype = scalar_type(dtype, bound)
        if dtype == backend.bool_:  # bools clamped by bools: PyTorch's kernel has no bool version
            raise NotImplementedError("clamp: \"clamp_scalar_cpu\" not implemented for 'Bool'")
        if dtype != self.array.dtype:  # an integer tensor and a float bound: as PyTorch, floats
            return self.to(dtype).clamp(min, max)
        min, max = (_clamp_bound(bound, dtype) for bound in (min, max))
        inside, clipped = _call(_clamp, self.array, min, max)
        return binary.Where.apply(inside, self, Tensor._make(clipped))

    clip = clamp

    def clamp_min(self, min: float) -> Tensor:
        """``clamp(min=min)``."""
        return self.clamp(min=min)

    def clamp_max(self, max: float) -> Tensor:
        """``clamp(max=max)``."""
        return self.clamp(max=max)

    def floor_divide(self, other: Any) -> Tensor:
        """``self // other``: the quotient rounded down, as PyTorch's (not differentiable
        there; here its gradient is 0)."""
        return self // other

    def remainder(self, other: Any) -> Tensor:
        """``self % other``: the remainder with the divisor's sign."""
        return self % other

    def nan_to_num(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ) -> Tensor:
        """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default the
        dtype's largest and lowest numbers), as PyTorch's; the gradient passes where the
        input was finite. Integers have none: a copy.

        >>> Tensor([float("nan"), float("-inf"), 1.0]).nan_to_num(neginf=-9.0).tolist()
        [0.0, -9.0, 1.0]
        """
        if not self.is_floating_point():
            return self.clone()
        info = ml_dtypes.finfo(self.array.dtype)
        high = info.max if posinf is None else posinf
        low = info.min if neginf is None else neginf
        infinite = self.isinf()
        out = where(self.isnan(), nan, self)
        return where(infinite & (self > 0), high, where(infinite & (self < 0), low, out))

    def isclose(
        self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
    ) -> Tensor:
        """``|self - other| <= atol + rtol * |other|`` elementwise (NaNs equal with
        ``equal_nan``), as PyTorch's; not differentiable. ``other`` must be a tensor."""
        other = _tensor_other("isclose", other).array
        close = namespace(self.array).isclose
        return Tensor._make(_call(close, self.array, other, rtol, atol, equal_nan))

    def allclose(
        self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
    ) -> bool:
        """Whether every entry ``isclose`` to ``other``'s."""
        _tensor_other("allclose", other)
        return bool(self.isclose(other, rtol, atol, equal_nan).all())

    def equal(self, other: Tensor) -> bool:
        """Whether ``other`` has this tensor's shape and values (PyTorch's ``torch.equal``)."""
        return self.shape == _tensor_other("equal", other).shape and bool((self == other).all())

    @autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
    def trace(self) -> Tensor:
        """The sum of a matrix's main diagonal."""
        if self.array.dtype == backend.bool_:  # PyTorch's kernel has none for bool, checked first
            raise NotImplementedError("trace: \"trace\" not implemented for 'Bool'")
        _check_ndim("trace", 2, self)
        return self.diagonal().sum()

    def masked_fill(self, mask: Tensor, value: float) -> Tensor:
        """Entries where ``mask`` is True become ``value``, in this tensor's dtype (an integer
        tensor filled with 2.7 holds 2), as PyTorch's."""
        if isinstance(mask, Tensor) and mask.array.dtype != backend.bool_:
            raise RuntimeError(
                f"masked_fill_ only supports boolean masks, but got mask with dtype "
                f"{mask.dtype.name}"
            )
        if isinstance(value, Tensor) and value.ndim:  # (where() would broadcast it)
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        if not isinstance(value, Tensor):  # (70000.0 into float16 raises, as PyTorch's)
            value = checked_number(value, self.array.dtype)
        elif value.array.dtype != self.array.dtype:
            check_tensor_number(value, self.array.dtype)
        out = where(mask, value, self)
        return out if out.array.dtype == self.array.dtype else out.to(self.array.dtype)

    def tril(self, diagonal: int = 0) -> Tensor:
        """The lower triangle of the last two dims (entries on and below ``diagonal``); the
        rest are 0. ``diagonal`` > 0 keeps that many diagonals above the main one.

        >>> import scratchgrad as sg
        >>> sg.ones(2, 3).tril().tolist()
        [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
        """
        return self._triangle("tril", diagonal, lower=True)

    def triu(self, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two dims (entries on and above ``diagonal``)."""
        return self._triangle("triu", diagonal, lower=False)

    def _triangle(self, name: str, diagonal: int, lower: bool) -> Tensor:
        if self.array.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dims, got {self.shape}")
        rows, cols = self.array.shape[-2:]
        below = namespace(self.array).tri(
            rows, cols, diagonal if lower else diagonal - 1, dtype=bool
        )
        # a zero of this dtype: a Python 0 would turn a bool mask into int64
        return where(Tensor._make(below if lower else ~below), self, self.new_zeros(()))

    # ---- reductions -------------------------------------------------------------------------

    def sum(
        self, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None
    ) -> Tensor:
        """The sum over ``dim`` (all entries by default); ``dtype`` converts first."""
        if type(keepdim) is not bool:  # (the test first: every step's sums pay the call)
            check_keepdim("sum", keepdim)
        if dtype is not None:  # an integer dtype adds up in int64, then wraps back into it
            return self._converted("sum", dtype).sum(dim, keepdim).to(dtype)
        # (a float sum of all entries, O1's, makes neither call: every step pays them)
        dims = None if dim is None else _reduced_dims(dim, self.array.ndim)  # None: all
        own = self.array.dtype
        if own.kind not in "fc" and not backend.can_require_grad(own) and own != backend.int64:
            return self.long().sum(dim, keepdim)  # as PyTorch: integer and bool sums give int64
        return reduce.Sum.apply(self, dim=dims, keepdim=keepdim)

    def _converted(self, name: str, dtype: Any) -> Tensor:
        """This tensor in a reduction's ``dtype=``, which must be able to carry a gradient
        where one would flow (PyTorch's autograd refuses an integer output there)."""
        if self.requires_grad and _state.enabled and not backend.can_require_grad(dtype):
            raise RuntimeError(
                f"{name}: dtype={dtype} cannot carry the gradient of an input that requires "
                "grad (PyTorch: 'Autograd not support dtype'); detach the input first"
            )
        return self.to(dtype)

    def sum_to_size(self, *shape: int) -> Tensor:
        """Sum broadcast dims away so the result has ``shape``."""
        return reduce.SumToSize.apply(self, shape=as_shape(shape))

    def mean(
        self, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None
    ) -> Tensor:
        """The mean over ``dim`` (all entries by default); ``dtype`` converts first."""
        if type(keepdim) is not bool:  # (the test first: every step's sums pay the call)
            check_keepdim("mean", keepdim)
        if dtype is not None:
            return self.to(dtype).mean(dim, keepdim)
        if not backend.can_require_grad(self.array.dtype):
            raise RuntimeError(f"mean: needs a floating point tensor, got {self.array.dtype}")
        dims = _reduced_dims(dim, self.array.ndim)
        return reduce.Mean.apply(self, dim=dims, keepdim=keepdim)

    def var(
        self,
        dim: int | Sequence[int] | None = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Tensor:
        """Variance, by default with Bessel's correction (divide by n - 1); ``unbiased`` (True
        when not given) or ``correction``, not both, as PyTorch's overloads. ``dim=()`` is all
        dims, with the gradient of all of them (PyTorch's is that of one entry)."""
        return self._variance("var", dim, unbiased, keepdim, correction)

    def std(
        self, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None
    ):
        return self._variance("std", dim, unbiased, keepdim, correction)

    def _variance(self, name: str, dim, unbiased: bool | None, keepdim: bool, correction) -> Tensor:
        """The variance (``name`` var or var_mean) or the standard deviation (std, std_mean),
        the name PyTorch's warning gives when no degree of freedom is left (one sample with the
        correction: the result is NaN)."""
        dim, correction = _variance_arguments(name, dim, unbiased, keepdim, correction)
        check_keepdim(name, keepdim)
        if not backend.can_require_grad(self.array.dtype):
            raise RuntimeError("std and var only support floating point and complex dtypes")
        dims = _reduced_dims(dim, self.array.ndim)
        count = self.numel() if dims is None else math.prod(self.array.shape[d] for d in dims)
        if count - correction <= 0:
            warnings.warn(
                f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than "
                "the reduction factor (input numel divided by output numel).",
                UserWarning,
                stacklevel=stacklevel_outside(),
            )
        spread = reduce.StandardDeviation if name.startswith("std") else reduce.Variance
        running = name.endswith("_mean")  # (PyTorch's var_mean: its running (Welford) kernel)
        return spread.apply(self, dim=dims, keepdim=keepdim, correction=correction, running=running)

    def amax(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        check_keepdim("amax", keepdim)
        refuse_complex(self, "amax")
        if self.array.size == 0:
            _refuse_empty_extreme("amax", self.array.shape, dim)
        dims = _reduced_dims(dim, self.array.ndim)
        return reduce.Amax.apply(self, dim=dims, keepdim=keepdim)

    def amin(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        check_keepdim("amin", keepdim)
        refuse_complex(self, "amin")
        if self.array.size == 0:
            _refuse_empty_extreme("amin", self.array.shape, dim)
        dims = _reduced_dims(dim, self.array.ndim)
        return reduce.Amin.apply(self, dim=dims, keepdim=keepdim)

    def aminmax(self, *, dim: int | None = None, keepdim: bool = False) -> Any:
        """``(min, max)`` over ``dim`` (or all entries), as ``torch.aminmax``."""
        dim = dim if dim is None else _one_dim("aminmax", dim)  # (one dim: not a tuple)
        check_keepdim("aminmax", keepdim)
        return min_max(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def nansum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """The sum with NaNs taken as 0 (their gradient 0), as ``torch.nansum``.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, float("nan"), 3.0]).nansum()
        tensor(4.)
        """
        check_keepdim("nansum", keepdim)
        if self.array.dtype.kind == "c":  # PyTorch's words
            raise RuntimeError("nansum on CPU does not support complex inputs")
        if not backend.is_floating(self.dtype):
            return self.sum(dim, keepdim, dtype=dtype)
        if dtype is not None and backend.is_floating(dtype):
            return self._converted("nansum", dtype).nansum(dim, keepdim)
        if dtype is not None:  # the NaNs are zeros before an integer dtype could see them
            return where(self.isnan(), 0, self).sum(dim, keepdim, dtype=dtype)
        dims = None if dim is None else _reduced_dims(dim, self.array.ndim)
        return reduce.NanSum.apply(self, dim=dims, keepdim=keepdim)

    def nanmean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """The mean of the entries that are not NaN, as ``torch.nanmean``."""
        if not backend.is_floating(self.dtype):  # PyTorch's words for each
            raise RuntimeError(
                "nanmean(): expected input to have floating point or complex dtype but got "
                f"{torch_name(self.dtype)}"
            )
        if dtype is not None and not backend.is_floating(dtype):
            raise RuntimeError(
                "nanmean(): could not infer output dtype. Optional dtype must be either a "
                f"floating point or complex dtype. Got: {torch_name(dtype)}"
            )
        # (the gradient over an all-NaN slice is NaN, as PyTorch's: nansum's is 1/0 * 0 there)
        return self.nansum(dim, keepdim, dtype=dtype) / self.isnan().logical_not().sum(dim, keepdim)

    def msort(self) -> Tensor:
        """The entries sorted along dim 0, as ``torch.msort``."""
        return self.sort(dim=0, stable=True).values  # (the values only: the faster sort)

    def max(self, dim: Any = ALL_ENTRIES, keepdim: bool = False):
        """``max()`` is the largest entry; ``max(dim)`` gives (values, indices); ``max(other)``
        is the elementwise maximum."""
        check_keepdim("max", keepdim)
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if of_all_entries("max", dim):
            return self._of_all("max", reduce.MaxOfAll)
        return self._pick(self._ranked().argmax(dim, keepdim=True), dim, keepdim)

    def min(self, dim: Any = ALL_ENTRIES, keepdim: bool = False):
        """As ``max``, for the smallest."""
        check_keepdim("min", keepdim)
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if of_all_entries("min", dim):
            return self._of_all("min", reduce.MinOfAll)
        return self._pick(self._ranked().argmin(dim, keepdim=True), dim, keepdim)

    def _of_all(self, name: str, statistic: type) -> Tensor:
        """``statistic`` (an ``ops.reduce.MaxOfAll``) of all entries: one of them, whose
        gradient the entries equal to it share evenly, as PyTorch's ``max()`` and ``median()``
        without a dim."""
        refuse_complex(self, name)
        if self.array.size == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        return statistic.apply(self, dim=tuple(range(self.array.ndim)))

    def _pick(self, index: Tensor, dim: int, keepdim: bool) -> values_indices:
        """The entries at ``index`` along ``dim``: the gradient goes to those entries only."""
        values = self.gather(dim, index)
        if not keepdim:
            values, index = values.squeeze(dim), index.squeeze(dim)
        return values_indices(values, index)

    def _ranked(self) -> Tensor:
        """This tensor, bools as uint8: ``max(dim=)`` takes bools, ``argmax`` refuses them."""
        return self.to(backend.uint8) if self.array.dtype == backend.bool_ else self

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        _refuse_bool(self, "argmax")
        return self._arg("argmax", dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        _refuse_bool(self, "argmin")
        return self._arg("argmin", dim, keepdim)

    def _arg(self, name: str, dim: int | None, keepdim: bool) -> Tensor:
        """The index of the largest (smallest) entry over ``dim``, or of all entries."""
        check_keepdim(name, keepdim)
        refuse_complex(self, name)
        if dim is None:
            if self.array.size == 0:
                raise IndexError(
                    f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
                )
            return Tensor._make(_call(_arg_reduce, self.array, name, None, keepdim))
        dims = _dims(_one_dim(name, dim), self.array.ndim)
        if dims and self.array.shape[dims[0]] == 0:
            raise IndexError(
                f"{name}(): Expected reduction dim {dims[0]} to have non-zero size, got shape "
                f"{self.array.shape}"
            )
        axis = dims[0] if dims else None  # a 0-d tensor: its one entry
        return Tensor._make(_call(_arg_reduce, self.array, name, axis, keepdim))

    @autocast_policy("float32")
    def prod(self, dim: Any = ALL_ENTRIES, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """The product over one dim (all entries by default); ``dtype`` converts first.

        Of float16 and bfloat16 each step is rounded, in the order PyTorch's CPU kernel takes
        (see ``_reading_order``), so the bits are its bits; NOTE: of more than 32768 entries
        they are its bits on one thread only (its threads each multiply a part).

        >>> import scratchgrad as sg
        >>> sg.tensor([[1.0, 2.0], [3.0, 4.0]]).prod(1)
        tensor([ 2., 12.])
        """
        check_keepdim("prod", keepdim)
        if dtype is not None:  # an integer dtype multiplies in int64, then wraps back into it
            return self._converted("prod", dtype).prod(dim, keepdim).to(dtype)
        if not backend.can_require_grad(self.array.dtype) and self.array.dtype != backend.int64:
            return self.long().prod(dim, keepdim)  # as PyTorch: NumPy's uint8 product is uint64
        if of_all_entries("prod", dim):
            if self.array.dtype not in backend.SIXTEEN_BIT:
                return reduce.ProdOfAll.apply(self.reshape(-1), dim=0)
            order, run = self._reading_order()
            return reduce.ProdOfAll.apply(self.permute(order).reshape(-1), dim=0, run=run)
        dims = _dims(_one_dim("prod", dim), self.array.ndim)  # (one dim: not a tuple)
        if not dims:  # a 0-d tensor: the product of its one entry
            return self.clone()
        return reduce.Prod.apply(self, dim=dims[0], keepdim=keepdim)

    def _reading_order(self) -> tuple[list[int], int | None]:
        """The order of dims (outermost first) in which PyTorch's CPU kernels read this tensor
        to reduce all its entries, and how many entries they read at stride 1 before a jump
        (None: no dim has stride 1). A product of 16-bit floats, rounded at each step, depends
        on both. TensorIterator sorts the dims by stride, innermost first, an insertion sort
        that passes a broadcast dim (stride 0) without deciding (so a size-1 dim's stride can
        move the others); then it joins each dim whose stride is the size of those inside it
        to them."""
        strides, shape = self.stride(), self.shape
        inner_first = list(reversed(range(self.ndim)))
        for i in range(1, len(inner_first)):
            moving = i
            for j in range(i - 1, -1, -1):
                stride, other = strides[inner_first[j]], strides[inner_first[moving]]
                if not (stride and other):
                    continue
                if stride < other:
                    break
                if stride > other or shape[inner_first[j]] > shape[inner_first[moving]]:
                    inner_first[j], inner_first[moving] = inner_first[moving], inner_first[j]
                    moving = j
        run = 1
        for d in (d for d in inner_first if shape[d] != 1):  # (a size-1 dim joins any)
            if strides[d] != run:
                break
            run *= shape[d]
        return inner_first[::-1], (run if run > 1 else None)

    def logsumexp(self, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        """log(sum(exp(x))), stable: the max is taken out before exponentiating. ``dim=()``
        is all dims, as sum's (PyTorch's raises for a tensor with dims)."""
        if dim is None:  # (PyTorch's dim has no default: None is no tuple of ints)
            raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
        check_keepdim("logsumexp", keepdim)
        x = self._floating()  # integers and bools: as PyTorch, in the default float dtype
        if x.array.size == 0:  # log(0) = -inf, as PyTorch's (amax has no identity)
            return x.exp().sum(dim, keepdim).log()
        # (of complex numbers the largest real part, as PyTorch's: |exp(z)| is exp(z.real))
        top = (x.real if x.is_complex() else x).detach().amax(dim, keepdim=True)
        top = top.masked_fill(top.abs() == math.inf, 0)  # all -inf: nothing to take out
        out = (x - top).exp().sum(dim, keepdim=True).log() + top
        return out if keepdim else out.squeeze(_reduced_dims(dim, x.array.ndim))

    def norm(
        self,
        p: float | str = 2,
        dim: int | Sequence[int] | None = None,
        keepdim: bool = False,
        dtype: Any = None,
    ):
        """The p-norm over ``dim`` (all entries by default; ``"fro"``: 2; ``"nuc"``: the
        nuclear norm of the matrices over two dims), with PyTorch's gradients where it has an
        infinite slope (0 at the zero vector; see ``p_norm``).

        >>> import scratchgrad as sg
        >>> x = sg.zeros(2, requires_grad=True)
        >>> x.norm().backward()
        >>> x.grad
        tensor([0., 0.])
        """
        if not backend.can_require_grad(self.array.dtype):  # (floating or complex)
            raise RuntimeError(
                f"norm: expected a floating point tensor, got {self.array.dtype} (as PyTorch's "
                "linalg.vector_norm; x.float() first)"
            )
        check_keepdim("norm", keepdim)
        if dtype is not None:  # computed in ``dtype``, as PyTorch's
            return self.to(dtype).norm(p, dim, keepdim)
        from scratchgrad.linalg import matrix_norm, vector_norm  # (linalg imports this module)

        vector_fro = p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2)
        if isinstance(p, str) and not vector_fro:
            # as PyTorch: "nuc" is a matrix norm, and so is "fro" over more than two dims (an
            # error there, as any other string)
            every = tuple(range(self.array.ndim))
            return matrix_norm(self, p, every if dim is None else dim, keepdim)
        # as PyTorch's torch.norm: linalg.vector_norm, with its gradients (an infinite norm's
        # ignores NaN entries, where amax's would be NaN)
        return vector_norm(self, 2 if p == "fro" else p, dim, keepdim)

    def softmax(self, dim: int, dtype: Any = None) -> Tensor:
        x = self if dtype is None else self.to(dtype)
        x._check_floating("softmax")
        return reduce.Softmax.apply(x, dim=_dims(_one_dim("softmax", dim), x.array.ndim))

    def log_softmax(self, dim: int, dtype: Any = None) -> Tensor:
        x = self if dtype is None else self.to(dtype)
        x._check_floating("log_softmax")
        return reduce.LogSoftmax.apply(x, dim=_dims(_one_dim("log_softmax", dim), x.array.ndim))

    def _floating_pair(
        self, op: str, other: Tensor, complex_too: bool = False
    ) -> tuple[Tensor, Tensor]:
        """``self`` and the tensor ``other`` in the dtype they promote to, which must be a
        floating one, real unless ``complex_too`` (a bool or integer tensor meets a float, as
        PyTorch's logaddexp)."""
        dtype = result_dtype(self, other)
        x, y = self.to(dtype), other.to(dtype)
        x._check_floating(op, complex_too)
        return x, y

    def _check_floating(self, op: str, complex_too: bool = False) -> None:
        """Raise as PyTorch does for an op with no integer or bool kernel (softmax, gelu...),
        nor a complex one unless ``complex_too``."""
        floating = backend.can_require_grad if complex_too else backend.is_floating
        if not floating(self.array.dtype):
            raise NotImplementedError(
                f"{op}: not implemented for {self.array.dtype} tensors; give a floating one "
                "(x.float()), as PyTorch requires"
            )

    @_stable_by_keyword
    def sort(
        self, dim: int = -1, descending: bool = False, *, stable: bool | None = False
    ) -> values_indices:
        """The entries sorted along ``dim`` and where each came from. ``stable``: ties keep
        their order (in both directions); else equal entries come in the order PyTorch's CPU
        sort (``std::sort``) leaves them, taken step by step in Python on the rows that hold
        ties (see ``cpu_order``), so ``stable=True`` is the faster one there. NaN sorts as
        the largest, as in PyTorch. The gradient flows back to where each entry came from.

        >>> import scratchgrad as sg
        >>> sg.tensor([2.0, 1.0, 2.0]).sort(descending=True, stable=True)
        values_indices(values=tensor([2., 2., 1.]), indices=tensor([0, 2, 1]))
        """
        stable = False if stable is None else stable  # (None: PyTorch's default)
        _check_bools("sort", descending=descending, stable=stable)
        index = self.argsort(dim=dim, descending=descending, stable=stable)
        values = self if self.array.ndim == 0 else self.gather(dim, index)
        return values_indices(_laid_out_like(values, self), index)

    @_stable_by_keyword
    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        """The indices that sort the entries along ``dim`` (ties ordered as ``sort``'s);
        ``stable`` by keyword only, and then ``dim`` and ``descending`` too, as PyTorch's."""
        _check_bools("argsort", descending=descending, stable=stable)
        dim = wrap_dim(dim, self.array.ndim)  # range-checked first, also for a 0-d tensor
        if self.array.ndim == 0:
            return Tensor._make(namespace(self.array).zeros((), backend.int64))
        return _laid_out_like(self._indices_along(_sort_order, dim, descending, stable), self)

    def _indices_along(self, compute: Callable, dim: int, *args: Any) -> Tensor:
        """The indices ``compute(array, dim, *args)`` finds from the values along ``dim`` (a
        sort's order, a running maximum's positions), which no gradient flows through. vmap's
        batched tensor runs the same on its whole batch, ``dim`` moved past the batch dim."""
        refuse_complex(self, _ORDERING_OPS.get(compute.__name__, "sort"))
        return Tensor._make(_call(compute, self.array, dim, *args))

    def cumsum(self, dim: int, *, dtype: Any = None) -> Tensor:
        """Running sums along ``dim``; integer and bool inputs give int64, as in PyTorch."""
        x, dim = self._scan_input("cumsum", dtype), wrap_dim(dim, self.array.ndim)
        if x.array.ndim == 0:
            return x.clone()
        return reduce.Cumsum.apply(x, dim=dim)

    def cumprod(self, dim: int, *, dtype: Any = None) -> Tensor:
        """Running products along ``dim``; integer and bool inputs give int64, as in PyTorch."""
        x, dim = self._scan_input("cumprod", dtype), wrap_dim(dim, self.array.ndim)
        if x.array.ndim == 0 or x.shape[dim] == 1 or x.array.size == 0:  # the entries: their
            return x.clone()  # gradient grad, as PyTorch's (not grad * x / x, NaN at a NaN)
        return reduce.Cumprod.apply(x, dim=dim)

    def diff(
        self,
        n: int = 1,
        dim: int = -1,
        prepend: Tensor | None = None,
        append: Tensor | None = None,
    ) -> Tensor:
        """The ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``, applied
        ``n`` times), after joining ``prepend`` and ``append`` on, as ``torch.diff``; bool
        tensors give ``x[i + 1] != x[i]``.

        >>> import scratchgrad as sg
        >>> sg.diff(sg.tensor([1, 4, 9, 16]), prepend=sg.tensor([0]))
        tensor([1, 3, 5, 7])
        """
        if self.array.ndim == 0:
            raise RuntimeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise RuntimeError(f"diff: order must be non-negative but got {n}")
        dim = wrap_dim(dim, self.array.ndim)
        for name, t in (("prepend", prepend), ("append", append)):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(t).__name__}")
            if t is not None and (
                t.ndim != self.ndim or _without(t.shape, dim) != _without(self.shape, dim)
            ):
                raise RuntimeError(
                    f"diff: {name} of shape {tuple(t.shape)} must match the input's shape "
                    f"{tuple(self.shape)} "
                    f"except along dim {dim}"
                )
        pieces = [t for t in (prepend, self, append) if t is not None]
        out = cat(pieces, dim) if len(pieces) > 1 else self
        for _ in range(builtins.min(n, out.shape[dim])):  # past that, the dim stays empty
            length = out.shape[dim] - 1
            later, earlier = out.narrow(dim, 1, length), out.narrow(dim, 0, length)
            out = later.ne(earlier) if out.dtype == bool else later - earlier
        return out

    def _scan_input(self, name: str, dtype: Any) -> Tensor:
        if dtype is not None:
            x = self._converted(name, dtype)
            if x.array.dtype == backend.bool_ and x.array.ndim and x.array.size:
                # PyTorch has no bool kernel (a 0-d or empty input never reaches one)
                raise NotImplementedError(f"{name}: \"{name}_out_cpu\" not implemented for 'Bool'")
            return x
        if backend.can_require_grad(self.array.dtype) or self.array.dtype == backend.int64:
            return self  # (floating or complex)
        return self.long()

    def topk(
        self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
    ) -> values_indices:
        """The ``k`` largest (or smallest) entries along ``dim`` and their indices, largest
        first (``sorted=False``: in the order PyTorch's CPU kernel leaves them); among equal
        entries, those PyTorch's CPU kernel picks (see ``cpu_order``). The gradient flows to
        the chosen entries only.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 5.0, 3.0]).topk(2)
        values_indices(values=tensor([5., 3.]), indices=tensor([1, 2]))
        """
        _check_k("topk", k)
        dim = wrap_dim(dim, self.array.ndim)
        size = self.array.shape[dim] if self.array.ndim else 1
        if not 0 <= k <= size:
            raise RuntimeError(f"topk: k ({k}) is out of range for dim {dim} of size {size}")
        if self.array.dtype == backend.bool_:
            raise RuntimeError("topk does not support bool dtypes on CPU")
        if self.array.ndim == 0:  # as PyTorch: a 0-d tensor is its own top 1
            zero = namespace(self.array).zeros((), backend.int64)
            return values_indices(self.clone(), Tensor._make(zero))
        index = self._indices_along(_top_indices, dim, k, largest, sorted)
        return values_indices(self.gather(dim, index), index)

    def median(self, dim: Any = ALL_ENTRIES, keepdim: bool = False):
        """The lower median of all entries, or (values, indices) along ``dim``, as
        ``torch.median``; NaN is the median of an entry that holds one. Along ``dim`` the
        gradient flows to the chosen entries only (among ties, the one at the median's place in
        a stable sort, which PyTorch's CPU kernel picks too: its comparison breaks ties by
        index); of all entries, the entries equal to the median share it evenly (the NaNs, if
        it is NaN), as PyTorch's.

        >>> import scratchgrad as sg
        >>> sg.tensor([3.0, 1.0, 4.0, 2.0]).median()
        tensor(2.)
        """
        if of_all_entries("median", dim):
            _refuse_bool_order("median", self)
            if self.array.size == 0:
                return median_of_nothing(self)
            return self._of_all("median", reduce.MedianOfAll)
        return self._order_statistic("median", None, dim, keepdim)

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> values_indices:
        """The ``k``-th smallest entry along ``dim`` (``k`` from 1, NaN the largest) and its
        index, as ``torch.kthvalue`` (among ties, the one PyTorch's CPU quickselect picks, see
        ``cpu_order``); the gradient flows to that entry.

        >>> import scratchgrad as sg
        >>> sg.tensor([3.0, 1.0, 4.0, 2.0]).kthvalue(3)
        values_indices(values=tensor(3.), indices=tensor(0))
        """
        return self._order_statistic("kthvalue", k, dim, keepdim)

    def _order_statistic(self, name: str, k: int | None, dim: int, keepdim: bool):
        """The ``k``-th smallest entry along ``dim`` (the lower median's for ``k`` None)."""
        _check_k(name, k)
        check_keepdim(name, keepdim)
        dim = wrap_dim(dim, self.array.ndim)
        size = self.array.shape[dim] if self.array.ndim else 1
        if size == 0:
            raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
        if k is not None and not 1 <= k <= size:
            raise RuntimeError(f"{name}(): selected number k out of range for dimension {dim}")
        _refuse_bool_order(name, self)
        x = self if self.array.ndim else self.reshape(1)
        index = x._indices_along(_order_statistic_index, dim, k)
        return x._pick(index, dim, keepdim and self.array.ndim > 0)

    def cummax(self, dim: int) -> values_indices:
        """The running largest entry along ``dim`` and where it is (the last of equal ones),
        as ``torch.cummax``; NaN, once met, stays. The gradient flows to those entries.

        >>> import scratchgrad as sg
        >>> sg.tensor([1.0, 3.0, 2.0, 5.0]).cummax(0)
        values_indices(values=tensor([1., 3., 3., 5.]), indices=tensor([0, 1, 1, 3]))
        """
        return self._running("maximum", dim)

    def cummin(self, dim: int) -> values_indices:
        """As ``cummax``, for the running smallest entry."""
        return self._running("minimum", dim)

    def _running(self, name: str, dim: int) -> values_indices:
        dim = wrap_dim(dim, self.array.ndim)
        x = self if self.array.ndim else self.reshape(1)
        index = x._indices_along(_running_index, dim, name)
        values = x.gather(dim, index)
        return values_indices(values.reshape(self.shape), index.reshape(self.shape))

    def bernoulli(self, p: float | None = None, *, generator: Any = None) -> Tensor:
        """Ones with the probabilities in this tensor (or ``p`` for every entry), zeros
        otherwise, in its shape and dtype, as ``torch.bernoulli``: drawn from the library's
        seeded generator (or ``generator``), and again at each replay of a jitted step. The
        probabilities' gradient is 0, as PyTorch's.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 1.0, 1.0]).bernoulli().tolist()
        [0.0, 1.0, 1.0]
        """
        if p is None and not backend.is_floating(self.array.dtype):
            raise RuntimeError(
                f"bernoulli: the probabilities must have a floating dtype, got {self.dtype.name}"
            )
        draws = self._bernoulli_draws(p, generator)
        if p is None:
            return _zero_gradient_to(draws, self)
        return _kept_without_derivative(self, draws, "bernoulli")  # (p: no derivative)

    def _bernoulli_draws(self, p: float | None, generator: Any) -> Tensor:
        """``bernoulli``'s draws, out of any graph, with this tensor's probabilities (or
        ``p``'s)."""
        dtype, device = self.array.dtype, self.device

        def sample(shape: tuple, probs: Any = p) -> Any:
            return _call(_bernoulli, probs, shape, dtype, device, generator)

        return random_draws(sample, self.array.shape, params=() if p is not None else (self,))

    # In-place random fills, as torch.Tensor's: drawn from the library's seeded generator (or
    # ``generator``) through capture_hook, so that each replay of a jitted step draws again.
    # The draws are float64 whatever the dtype: nn.init fills through these, and keeps the
    # numbers it drew before they existed; uniform_'s are kept below ``to`` once rounded.

    def uniform_(
        self,
        from_: float | None = None,
        /,
        to: float = 1.0,
        *,
        generator: Any = None,
        **from_keyword: float,
    ) -> Tensor:
        """Fill with samples from U(from, to). PyTorch names the first argument ``from``, a
        Python keyword: give it by position or as ``**{"from": a}``.

        >>> import scratchgrad as sg
        >>> w = sg.empty(1000).uniform_(-2, 2)
        >>> bool((w >= -2).all() and (w < 2).all())
        True
        """
        low = _from_argument(from_, from_keyword)
        self._check_floating("uniform_", complex_too=True)
        _check_uniform_bounds(low, to, backend.to_real(self.array.dtype))
        dtype = self.array.dtype
        return self._fill(
            "uniform_", lambda s: _call(_uniform, generator, self.device, low, to, s, dtype)
        )

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples from N(mean, std**2).

        >>> import scratchgrad as sg
        >>> round(sg.empty(100_000).normal_(3.0, 0.5).std().item(), 2)
        0.5
        """
        self._check_floating("normal_", complex_too=True)
        if not std >= 0:  # NaN fails too
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        complex_ = self.array.dtype.kind == "c"
        return self._fill(
            "normal_", lambda s: _call(_normal, generator, self.device, mean, std, s, complex_)
        )

    def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples from the exponential distribution of rate ``lambd``.

        >>> import scratchgrad as sg
        >>> round(sg.empty(100_000).exponential_(4.0).mean().item(), 2)
        0.25
        """
        if not backend.is_floating(self.array.dtype):  # a RuntimeError here in PyTorch
            raise RuntimeError(
                "exponential_: Exponential distribution is a continuous probability distribution."
                f" dtype must be a floating point but you specified {self.dtype.name}"
            )
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return self._filled("exponential_", generator, "standard_exponential", scale=1 / lambd)

    def random_(
        self,
        from_: int | None = None,
        /,
        to: Any = _NOT_GIVEN,
        *,
        generator: Any = None,
        **from_keyword: int,
    ) -> Tensor:
        """Fill with integers drawn uniformly from ``[from, to - 1]``, as PyTorch's:
        ``random_(n)`` is ``[0, n - 1]``, and without ``to`` the top is the largest integer
        the dtype holds exactly (2**24 for float32, 2**53 for float64, the integer types' max).

        >>> import scratchgrad as sg
        >>> bool((sg.empty(1000).random_(3) < 3).all())
        True
        """
        low = _from_argument(from_, from_keyword, "random_", None)
        if to is _NOT_GIVEN:  # random_(), random_(to) or random_(**{"from": low})
            low, to = (0, low) if low is not None and not from_keyword else (low, None)
        low = 0 if low is None else low
        for bound in (low, to):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
                raise TypeError(f"random_(): from and to must be ints, got {bound!r}")
        high = _random_top(self.array.dtype) + 1 if to is None else to
        if not low < high:
            raise RuntimeError(
                f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )
        if self.array.dtype.kind in "iu":
            info = xp.iinfo(self.array.dtype)
            if not info.min <= low <= info.max or not info.min <= high - 1 <= info.max:
                raise RuntimeError(
                    f"random_: [{low}, {high - 1}] is out of bounds for {self.dtype.name}"
                )
        return self._filled("random_", generator, "integers", low, high)

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Tensor:
        """Fill with samples whose log is normal of ``mean`` and ``std``, as PyTorch's."""
        if not backend.is_floating(self.array.dtype):
            kind = torch_name(self.array.dtype)
            raise NotImplementedError(f"\"log_normal_cpu\" not implemented for '{kind}'")
        if not std > 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        return self._filled("log_normal_", generator, "lognormal", mean, std)

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples of the Cauchy distribution at ``median`` of scale ``sigma``."""
        if not backend.is_floating(self.array.dtype):
            raise RuntimeError(
                "Cauchy distribution is a continuous probability distribution. dtype must be a "
                f"floating point but you specified {self.dtype.name}"
            )
        if not sigma > 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        return self._filled("cauchy_", generator, "standard_cauchy", scale=sigma, shift=median)

    def geometric_(self, p: float, *, generator: Any = None) -> Tensor:
        """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...);
        any dtype, as PyTorch's.

        >>> import scratchgrad as sg
        >>> bool((sg.empty(1000, dtype=sg.int64).geometric_(0.5) >= 1).all())
        True
        """
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return self._filled("geometric_", generator, "geometric", p)

    def _filled(
        self, name: str, generator: Any, draw: str, *parameters: float, scale=1.0, shift=0.0
    ) -> Tensor:
        """This tensor filled in place with the generator's ``draw`` of ``parameters``, times
        ``scale`` plus ``shift`` (in float64, rounded once)."""
        device = self.device
        return self._fill(
            name, lambda s: _call(_drawn, generator, device, draw, parameters, s, scale, shift)
        )

    def _fill(self, name: str, sample: Callable[[tuple], Any]) -> Tensor:
        """The random fills' last step: this tensor overwritten with ``sample(shape)`` (no
        gradient flows to the old values, as PyTorch's fills), drawn as ``random_draws`` says. A
        draw past a 16-bit dtype's range becomes inf silently, as PyTorch's (``normal_(0,
        1e30)`` of float16)."""
        draws = random_draws(sample, self.array.shape, into=self)
        with backend.errstate(over="ignore"):
            return self._copy_from(name, draws)

    def bernoulli_(self, p: float | Tensor = 0.5, *, generator: Any = None) -> Tensor:
        """Fill with ones with probability ``p`` (a number, or a tensor of probabilities that
        broadcasts to this one), zeros otherwise; any dtype.

        >>> import scratchgrad as sg
        >>> sg.empty(3, dtype=sg.int64).bernoulli_(sg.tensor([0.0, 1.0, 0.0])).tolist()
        [0, 1, 0]
        """
        if not isinstance(p, Tensor) and not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        if isinstance(p, Tensor):  # (p.bernoulli() is vmap's where p is batched)
            draws = p.expand(self.shape)._bernoulli_draws(None, generator)
            return self._copy_from("bernoulli_", _zero_gradient_to(draws, p))
        dtype = self.array.dtype
        return self._fill(
            "bernoulli_", lambda s: _call(_bernoulli, p, s, dtype, self.device, generator)
        )

    def multinomial(
        self, num_samples: int, replacement: bool = False, *, generator: Any = None
    ) -> Tensor:
        """Draw ``num_samples`` category indices per row of non-negative weights (1-D or 2-D),
        with or without replacement, from the library's seeded generator (or ``generator``).
        Inside ``scratchgrad.jit`` each replay draws again, from the generator of that moment.

        >>> import scratchgrad as sg
        >>> sg.tensor([0.0, 1.0, 0.0]).multinomial(2, replacement=True).tolist()
        [1, 1]
        """
        if self.array.ndim not in (1, 2):
            raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {self.shape}")
        if not backend.is_floating(self.array.dtype):
            raise RuntimeError(
                f"multinomial only supports floating-point dtypes for input, got {self.dtype.name}"
            )
        n = self.array.shape[-1]
        if num_samples <= 0:
            raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples ({num_samples})")
        if not replacement and num_samples > n:
            raise RuntimeError(
                f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without "
                f"replacement ({num_samples} > {n})"
            )

        def sample(shape: tuple, probs: Any) -> Any:
            return _call(_multinomial, probs, num_samples, replacement, generator)

        return random_draws(sample, self.array.shape, params=(self,))

    def any(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return self._truth_reduce("any", dim, keepdim)

    def all(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return self._truth_reduce("all", dim, keepdim)

    def _truth_reduce(self, name: str, dim: int | None, keepdim: bool) -> Tensor:
        """``any`` or ``all``: a bool tensor, but uint8 for uint8 (PyTorch keeps that legacy)."""
        check_keepdim(name, keepdim)
        axis = _dims(dim, self.array.ndim, unique=True)
        out = Tensor._make(_call(_arg_reduce, self.array, name, axis, keepdim))
        return out.to(backend.uint8) if self.array.dtype == backend.uint8 else out

    # ---- movement ---------------------------------------------------------------------------

    def reshape(self, *sizes: Any, shape: Sequence[int] | None = None) -> Tensor:
        shape = as_shape(_given_once("reshape", "shape", sizes, shape))
        return movement.Reshape.apply(self, shape=shape)  # a new tensor, as PyTorch's

    def view(self, *shape: Any, dtype: Any = None, size: Sequence[int] | None = None) -> Tensor:
        """The same memory in another shape, as ``torch.Tensor.view``: where the strides of a
        view (a transpose, a strided slice) make that impossible it raises, as PyTorch does;
        ``reshape`` copies instead. ``view(dtype)`` reads the same bytes as another dtype
        (the last dim scaled by the ratio of the sizes), out of any graph, as PyTorch's.

        >>> import scratchgrad as sg
        >>> sg.arange(6).view(2, 3).t().is_contiguous()
        False
        >>> sg.tensor([1.0, -2.0]).view(sg.int32)
        tensor([ 1065353216, -1073741824], dtype=scratchgrad.int32)
        """
        if dtype is None and len(shape) == 1 and isinstance(shape[0], (backend.dtype, xp.dtype)):
            dtype = shape[0]
        if dtype is not None:
            return self._view_as_dtype(backend.to_dtype(dtype))
        shape = as_shape(_given_once("view", "size", shape, size))
        if not self._strides_allow(shape):
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one "
                f"dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                f"(view: shape {self.array.shape} to {shape})"
            )
        out = self.reshape(shape)
        array = out.array
        # PyTorch's layout allows the view where scratchgrad's memory may not (a convolution's
        # result keeps the batch last): then it is a copy, which writes must not silently miss
        # (CuPy's arrays have no read-only flag)
        copied = array.size and not namespace(array).may_share_memory(array, self.array)
        if copied:
            _ViewCopy.keep_up(out, self, shape)
        return out

    def _view_as_dtype(self, dtype: Any) -> Tensor:
        array = self.array
        if array.itemsize != dtype.itemsize:  # PyTorch's conditions, in its words
            what = f"to view {array.dtype} as {dtype} (different element sizes)"
            if array.ndim == 0:
                raise RuntimeError(f"view: self.dim() cannot be 0 {what}")
            if self.stride(-1) != 1:
                raise RuntimeError(
                    f"view: self.stride(-1) must be 1 {what}, but got {self.stride(-1)}"
                )
            if array.shape[-1] * array.itemsize % dtype.itemsize:
                ratio = dtype.itemsize // array.itemsize
                raise RuntimeError(
                    f"view: self.size(-1) must be divisible by {ratio} {what}, but got "
                    f"{array.shape[-1]}"
                )
        try:
            viewed = array.view(dtype)
        except ValueError as error:  # a layout PyTorch allows but scratchgrad's memory has not
            raise RuntimeError(f"view: cannot view {array.dtype} as {dtype}: {error}") from None
        t = self._alias()
        t.array, t._counter = viewed, self._shared_counter()
        return t

    def _layout(self):
        """An empty array laid out as PyTorch lays out this tensor: the base contiguous, and
        this tensor's view steps taken from it (scratchgrad's own layouts can differ, e.g.
        convolutions keep the batch last in memory), each step giving PyTorch's strides (see
        ``_torch_strides``). ``stride``, ``is_contiguous`` and ``view`` all read this one
        layout, so they never contradict each other."""
        storage, steps = self._steps_from_storage()
        # bools (a byte an entry) stand for the entries, unless a step reads them as another
        # dtype (z.real, view_as_real, view_as_complex): then the base's own dtype, whose
        # steps count strides in the view's entries (of the real dtype for z.real), as PyTorch
        dtype = storage.dtype
        if dtype.kind != "c" and self.array.dtype == dtype:
            dtype = bool
        layout = xp.empty(storage.shape, dtype)
        at = [i for i, (cls, _) in enumerate(steps) if cls is movement.AsStrided]
        if at:  # its strides are its own, from a memory that may reach past its base's entries
            size, stride = steps[at[-1]][1]["size"], steps[at[-1]][1]["stride"]
            memory = xp.empty(movement.span(size, stride, 0), dtype)
            stride = [s * memory.itemsize for s in stride]
            layout = xp.lib.stride_tricks.as_strided(memory, size, stride, writeable=False)
            steps = steps[at[-1] + 1 :]
        for cls, attributes in steps:
            out = cls.forward(cls(), layout, **attributes)
            layout = _torch_strides(out, layout, cls, attributes)
        return layout

    def _strides_allow(self, shape: tuple) -> bool:
        if not self._has_steps():
            return True
        layout = self._layout()
        try:
            layout.reshape(shape)
        except ValueError:
            return True  # a bad shape: reshape raises its own error
        try:
            xp.reshape(layout, shape, copy=False)
        except ValueError:
            return False
        return True

    def _as_base(self) -> Tensor:
        """This tensor, no longer a view: for a composite op whose result PyTorch makes afresh
        (contiguous) while scratchgrad returns a view of an internal array that no user holds
        (a convolution's output, its batch kept last in memory)."""
        if hasattr(self, "_view"):
            del self._view
        return self

    def is_contiguous(self, memory_format: Any = contiguous_format) -> bool:
        """Whether the entries lie in memory in row-major order, as PyTorch would lay them out:
        False for transposes, strided slices and expanded views. For ``channels_last``
        (``_3d``), whether they lie channels innermost without gaps, read from ``stride()``
        by PyTorch's rule (False for a tensor of another rank, as PyTorch's).

        >>> import scratchgrad as sg
        >>> x = sg.zeros(2, 3, 4, 5).contiguous(memory_format=sg.channels_last)
        >>> x.is_contiguous(), x.is_contiguous(memory_format=sg.channels_last)
        (False, True)
        """
        check_memory_format(memory_format, None, "is_contiguous")
        if memory_format.ndim is not None:
            return self.ndim == memory_format.ndim and _channels_last_dense(
                self.stride(), self.shape
            )
        return not self._has_steps() or self._layout().flags.c_contiguous

    def contiguous(self, memory_format: Any = contiguous_format) -> Tensor:
        """This tensor if it is contiguous in ``memory_format`` (see ``is_contiguous``), else
        a copy laid out so (differentiable, as PyTorch's ``clone``)."""
        check_memory_format(memory_format, self.ndim, "contiguous")
        if self.is_contiguous(memory_format):
            return self
        if memory_format is preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        if memory_format.ndim is not None:
            return self.clone(memory_format=memory_format)
        return movement.Clone.apply(self, dtype=self.array.dtype, order="C")

    def view_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return self.reshape(other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.array.ndim == 0:
            _dims((start_dim, end_dim), 0)
            return self.reshape(1)
        start, end = _dims((start_dim, end_dim), self.array.ndim)
        if start > end:
            raise RuntimeError(
                "flatten() has invalid args: start_dim cannot come after end_dim "
                f"({start_dim} > {end_dim} for {self.array.ndim} dims)"
            )
        if start == end:  # nothing to merge: the tensor itself, as PyTorch's
            return self
        merged = math.prod(self.array.shape[start : end + 1])
        return self.reshape(*self.array.shape[:start], merged, *self.array.shape[end + 1 :])

    def unflatten(self, dim: int, sizes: Sequence[int]) -> Tensor:
        """Dim ``dim`` split into dims of ``sizes``, one of which may be -1 (inferred), as
        ``torch.unflatten``.

        >>> import scratchgrad as sg
        >>> sg.unflatten(sg.zeros(2, 6), 1, (3, -1)).shape
        scratchgrad.Size([2, 3, 2])
        """
        dim = wrap_dim(dim, self.array.ndim)
        if self.array.ndim == 0:
            raise RuntimeError("unflatten: cannot unflatten a 0-dim tensor")
        sizes, size = tuple(sizes), self.array.shape[dim]
        if not sizes:
            raise RuntimeError("unflatten: sizes must be non-empty")
        if sizes.count(-1) > 1:
            raise RuntimeError(f"unflatten: only one dimension can be inferred, got {list(sizes)}")
        known = math.prod(n for n in sizes if n != -1)
        if (known == 0 or size % known) if -1 in sizes else known != size:
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                f"{dim} ({size}) in the input tensor"
            )
        sizes = tuple(size // known if n == -1 else n for n in sizes)  # inferred from dim alone
        return self.reshape((*self.array.shape[:dim], *sizes, *self.array.shape[dim + 1 :]))

    def unsqueeze(self, dim: int) -> Tensor:
        (dim,) = _dims(dim, self.array.ndim + 1)
        shape = (*self.array.shape[:dim], 1, *self.array.shape[dim:])
        return movement.Unsqueeze.apply(self, shape=shape, dim=dim)

    def squeeze(self, *dims: Any, dim: int | Sequence[int] | None = None) -> Tensor:
        """Drop size-1 dims (only those in ``dim`` when given, as an int, a sequence or several
        ints; others are left, as PyTorch).

        >>> import scratchgrad as sg
        >>> sg.zeros(1, 1, 3).squeeze(0, 1).shape
        scratchgrad.Size([3])
        """
        if dims and dim is not None:
            raise TypeError(
                f"squeeze() received an invalid combination of arguments - got {dims} and dim={dim}"
            )
        if dims:
            dim = dims[0] if len(dims) == 1 else dims
        dims = range(self.array.ndim) if dim is None else _dims(dim, self.array.ndim, True)
        out = self.reshape(
            tuple(n for i, n in enumerate(self.array.shape) if not (i in dims and n == 1))
        )
        # PyTorch's three forms: squeeze(), squeeze(int), squeeze(tuple)
        return named_backward(
            out, f"SqueezeBackward{0 if dim is None else 1 if isinstance(dim, int) else 2}"
        )

    def permute(self, *order: Any, dims: Sequence[int] | None = None) -> Tensor:
        n = self.array.ndim
        dims = _dims(as_shape(_given_once("permute", "dims", order, dims)), n)
        if len(dims) != n or sorted(dims) != list(range(n)):
            raise RuntimeError(
                f"permute: {dims} is not a permutation of the dims of {self.array.shape}"
            )
        return movement.Permute.apply(self, dims=dims)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        dims = list(range(self.array.ndim))
        if dims:  # (of a 0-d tensor dims 0 and -1 only: a view of it)
            dim0, dim1 = _dims((dim0, dim1), self.array.ndim)
            dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        else:
            _dims((dim0, dim1), 0)
        return named_backward(self.permute(dims), "TransposeBackward0")

    def t(self) -> Tensor:
        if self.array.ndim > 2:
            raise RuntimeError(
                f"t() expects a tensor with <= 2 dimensions, but self is {self.array.ndim}D"
            )
        # (a new view even of fewer than 2 dims, as PyTorch's)
        return named_backward(self.permute(tuple(reversed(range(self.array.ndim)))), "TBackward0")

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """The dims ``source`` (an int or a sequence) moved to ``destination``, the others
        kept in order, as ``torch.movedim``.

        >>> import scratchgrad as sg
        >>> sg.zeros(2, 3, 4).movedim((0, 1), (2, 0)).shape
        scratchgrad.Size([3, 4, 2])
        """
        ndim = self.array.ndim
        sources = _dims(source, ndim, unique=True)
        destinations = _dims(destination, ndim, unique=True)
        # (counted as given: _dims leaves out the dim 0 of a 0-d tensor)
        if _count(source) != _count(destination):
            raise RuntimeError(
                f"movedim: Invalid source or destination dims: source ({source} dims) should "
                f"contain the same number of dims as destination ({destination} dims)"
            )
        if ndim == 0:
            return self
        order = [d for d in range(ndim) if d not in sources]
        for to, moved in sorted(zip(destinations, sources)):
            order.insert(to, moved)
        return self.permute(order)

    def expand(self, *sizes: Any, size: Sequence[int] | None = None) -> Tensor:
        """Broadcast to ``sizes`` (or ``size``) without copying; -1 keeps a dim's size."""
        shape = as_shape(_given_once("expand", "size", sizes, size))
        if -1 in shape:
            lead = len(shape) - self.array.ndim
            if -1 in shape[: max(lead, 0)]:  # (no size there to keep: NumPy's -1 would wrap)
                raise RuntimeError(
                    "The expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {shape.index(-1)} (expand: shape "
                    f"{self.array.shape} to {shape})"
                )
            shape = tuple(self.array.shape[i - lead] if n == -1 else n for i, n in enumerate(shape))
        return movement.Expand.apply(self, shape=shape)  # a new view even of the same shape

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def repeat(self, *counts: Any, repeats: Sequence[int] | None = None) -> Tensor:
        """Tile the tensor ``repeats[i]`` times along dim i, as ``torch.Tensor.repeat``."""
        repeats = as_shape(_given_once("repeat", "repeats", counts, repeats))
        if len(repeats) < self.array.ndim:
            raise RuntimeError(
                f"repeat: Number of dimensions of repeat dims ({len(repeats)}) can not be "
                f"smaller than number of dimensions of tensor ({self.array.ndim})"
            )
        if builtins.any(r < 0 for r in repeats):
            raise RuntimeError(f"repeat: repeats must be non-negative, got {repeats}")
        shape = (1,) * (len(repeats) - self.array.ndim) + self.array.shape
        spread = [n for pair in zip((1,) * len(shape), shape) for n in pair]
        tiled = [n for pair in zip(repeats, shape) for n in pair]
        out = (
            self.reshape(spread).expand(tiled).reshape(tuple(r * n for r, n in zip(repeats, shape)))
        )
        # a copy, as PyTorch's: the reshape stays a view where no dim of several entries was
        # tiled (each merged pair has a count or a size of 1), of an expanded tensor, or empty
        tiled = not builtins.all(1 in pair for pair in zip(repeats, shape))
        if not tiled or 0 in out.shape or _steps_0(self.array):
            out = out.clone()
        return named_backward(out, "RepeatBackward0")

    def fliplr(self) -> Tensor:
        if self.array.ndim < 2:  # (flip(1) would name a dim out of range)
            raise RuntimeError(f"Input must be >= 2-d. (fliplr: shape {self.array.shape})")
        return self.flip(1)

    def flipud(self) -> Tensor:
        if self.array.ndim < 1:
            raise RuntimeError(f"Input must be >= 1-d. (flipud: shape {self.array.shape})")
        return self.flip(0)

    def swapaxes(self, axis0: int, axis1: int) -> Tensor:
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    def broadcast_to(self, *sizes: Any, size: Sequence[int] | None = None) -> Tensor:
        """``expand`` to ``size`` (ints or one sequence), as ``torch.Tensor.broadcast_to``."""
        return self.expand(*_given_once("broadcast_to", "size", sizes, size))

    def tile(self, *counts: Any, dims: Sequence[int] | None = None) -> Tensor:
        """``repeat``, with missing leading counts taken as 1, as ``torch.tile`` (the counts
        as ints or one sequence).

        >>> import scratchgrad as sg
        >>> sg.tensor([[1, 2]]).tile(2).tolist()
        [[1, 2, 1, 2]]
        """
        dims = as_shape(_given_once("tile", "dims", counts, dims))
        return self.repeat((1,) * (self.array.ndim - len(dims)) + dims)

    def masked_select(self, mask: Tensor) -> Tensor:
        """The entries where ``mask`` is True, as a vector; the two broadcast together (either
        may grow), as ``torch.masked_select``.

        >>> import scratchgrad as sg
        >>> sg.tensor([[1.0], [2.0]]).masked_select(sg.tensor([True, False, True])).tolist()
        [1.0, 1.0, 2.0, 2.0]
        """
        shape = broadcast_shapes(self.shape, mask.shape)
        x = self if self.shape == shape else self.expand(shape)
        return x[mask if mask.shape == shape else mask.expand(shape)]

    def nonzero(self, *, as_tuple: bool = False):
        """The indices of the nonzero entries: a (count, ndim) int64 tensor, or one vector per
        dim with ``as_tuple``."""
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("nonzero() (its shape depends on the values)")
        if as_tuple:  # a 0-d tensor as one entry, as PyTorch's (NumPy refuses it)
            x = self.array.reshape(1) if self.array.ndim == 0 else self.array
            indices = namespace(x).nonzero(x)
            return tuple(Tensor._make(i.astype(backend.int64)) for i in indices)
        return Tensor._make(namespace(self.array).argwhere(self.array).astype(backend.int64))

    argwhere = nonzero

    def nonzero_static(self, *, size: int, fill_value: int = -1) -> Tensor:
        """``nonzero()`` with exactly ``size`` rows: the first ``size`` indices, then rows of
        ``fill_value``, as ``torch.nonzero_static`` (a shape known before the values).

        >>> import scratchgrad as sg
        >>> sg.tensor([0, 3, 5]).nonzero_static(size=3)
        tensor([[ 1],
                [ 2],
                [-1]])
        """
        if size < 0:
            raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
        found = namespace(self.array).argwhere(self.array)[:size].astype(backend.int64)
        out = namespace(found).full((size, self.array.ndim), fill_value, dtype=backend.int64)
        out[: len(found)] = found
        return Tensor._make(out)

    def unique(
        self,
        sorted: bool = True,
        return_inverse: bool = False,
        return_counts: bool = False,
        dim: int | None = None,
    ):
        """The distinct entries as a sorted vector, as ``torch.unique``, or with ``dim`` the
        distinct slices along ``dim``, sorted lexicographically; with ``return_inverse``, also
        where each entry went (in this tensor's shape; with ``dim``, one index per slice), and
        with ``return_counts``, how often each occurs. Always sorted (``sorted=False`` may leave
        PyTorch's order unsorted). NaN equals nothing, as in PyTorch: each NaN, and each slice
        holding one, is distinct (such slices sort as if NaN were the largest value, stably;
        PyTorch leaves their order to its sort).

        >>> import scratchgrad as sg
        >>> sg.unique(sg.tensor([3, 1, 3]), return_inverse=True, return_counts=True)
        (tensor([1, 3]), tensor([1, 0, 1]), tensor([1, 2]))
        >>> sg.tensor([[2, 1], [0, 5], [2, 1]]).unique(dim=0, return_inverse=True)
        (tensor([[0, 5],
                [2, 1]]), tensor([1, 0, 1]))
        """
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("unique() (its shape depends on the values)")
        refuse_complex(self, "unique")
        asked = (return_inverse, return_counts)
        if dim is not None:
            found = _unique_slices(self.array, dim, consecutive=False)
            return _unique_results(self, "unique_dim", *found, *asked)
        xp = namespace(self.array)
        values, inverse, counts = xp.unique(
            self.array.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False
        )
        inverse = inverse.reshape(self.array.shape)
        return _unique_results(self, "_unique2", values, inverse, counts, *asked)

    def unique_consecutive(
        self, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ):
        """Each run of equal neighbouring entries (slices along ``dim``) collapsed to one, in
        order, as ``torch.unique_consecutive``; ``return_inverse`` and ``return_counts`` as
        ``unique``'s. NaN equals nothing, so NaNs in a row stay apart, as in PyTorch.

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 1, 2, 2, 3, 1]).unique_consecutive(return_counts=True)
        (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 1]))
        """
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("unique_consecutive() (its shape depends on the values)")
        refuse_complex(self, "unique_consecutive")
        asked = (return_inverse, return_counts)
        if dim is not None:
            found = _unique_slices(self.array, dim, consecutive=True)
            return _unique_results(self, "unique_consecutive", *found, *asked)
        values, inverse, counts = _unique_slices(self.array.reshape(-1), 0, consecutive=True)
        inverse = inverse.reshape(self.array.shape)
        return _unique_results(self, "unique_consecutive", values, inverse, counts, *asked)

    def count_nonzero(self, dim: int | Sequence[int] | None = None) -> Tensor:
        dims = _reduced_dims(dim, self.array.ndim)
        return Tensor._make(_call(_count_nonzero, self.array, dims))

    def flip(self, *args: Any, dims: Any = None) -> Tensor:
        """The entries in reverse order along ``dims``, given as ``flip(0, 1)``,
        ``flip((0, 1))`` or ``flip(dims=(0, 1))``, as PyTorch's.

        >>> import scratchgrad as sg
        >>> sg.tensor([[1, 2], [3, 4]]).flip(0, 1).tolist()
        [[4, 3], [2, 1]]
        """
        if dims is None and not args:
            raise TypeError('flip() missing 1 required positional arguments: "dims"')
        if isinstance(dims, int):  # PyTorch's: only the positional form takes ints
            raise TypeError("flip(): argument 'dims' must be tuple of ints, not int")
        if dims is None:
            dims = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
        out = movement.Flip.apply(self, dims=_dims(dims, self.array.ndim, unique=True))
        return _laid_out_like(out, self)

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
        """Shift entries along ``dims``, wrapping around; without ``dims``, over the flattened
        tensor (its shape is kept).

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 2, 3, 4]).roll(1)
        tensor([4, 1, 2, 3])
        """
        if dims is None:
            return self.flatten().roll(shifts, 0).reshape(self.array.shape)
        if self.array.ndim == 0:
            raise IndexError(f"roll: dim {dims} is given but the tensor has no dims")
        shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
        dims = _dims(dims, self.array.ndim)
        if len(shifts) != len(dims):
            raise RuntimeError(
                f"roll: shifts {shifts} and dims {dims} must have the same number of entries"
            )
        return movement.Roll.apply(self, shifts=shifts, dims=dims)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """The entries at ``index`` (a vector of ints) along ``dim``."""
        if index.dtype not in (backend.int32, backend.int64):  # a uint8 one is no mask here
            raise RuntimeError(
                f"index_select(): Expected dtype int32 or int64 for index, got {index.dtype.name}"
            )
        if index.ndim > 1:
            raise IndexError(f"index_select: index must be a vector, got shape {index.shape}")
        batched = vmapped("_index_select", index)  # per-member indices: vmap's own version
        if batched is not None:
            return batched(self, dim, index)
        if self.array.ndim == 0:  # as PyTorch: one index, and a 0-d result
            wrap_dim(dim, 0)
            if index.numel() != 1:
                raise RuntimeError(
                    "index_select(): Index to scalar can have only 1 value, got "
                    f"{index.numel()} value(s)"
                )
            out = self.reshape(1)[index.reshape(-1)].reshape(())
        else:
            out = self[(slice(None),) * wrap_dim(dim, self.array.ndim) + (index.reshape(-1),)]
        return named_backward(out, "IndexSelectBackward0")

    def index_add(self, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1) -> Tensor:
        """This tensor with ``alpha * source`` added at the positions ``index`` (a vector of
        ints) along ``dim``, as ``torch.index_add``: a position repeated in ``index`` adds up.
        Differentiable in this tensor and in ``source`` (whose gradient is the incoming one
        at ``index``, times ``alpha``).

        >>> import scratchgrad as sg
        >>> sg.zeros(3).index_add(0, sg.tensor([0, 2, 0]), sg.tensor([1.0, 2.0, 3.0]))
        tensor([4., 0., 2.])
        """
        dim = self._check_index_add(dim, index, source)
        if self.array.dtype == backend.bool_:  # as PyTorch: adding bools ors them
            return self.long().index_add(dim, index, source.long(), alpha=alpha) != 0
        if self.array.dtype in backend.SIXTEEN_BIT:  # as PyTorch: summed in float32, rounded once
            wide = self.float().index_add(dim, index, source.float(), alpha=alpha)
            return wide.to(self.array.dtype)
        if self.array.ndim == 0:  # as PyTorch: a 0-d tensor acts as a vector of one
            return self.reshape(1).index_add(0, index, source.reshape(1), alpha=alpha)[0]
        source = source * alpha if alpha != 1 else source
        batched = vmapped("_index_add", index)  # each member's own positions: vmap's version
        if batched is not None:
            return batched(self, dim, index, source)
        position = _index((slice(None),) * dim + (index.reshape(-1),), self.array, (source,))
        return self + movement.IndexAdd.apply(source, index=position, shape=self.array.shape)

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1) -> Tensor:
        """``index_add`` in place."""
        if isinstance(source, Tensor):
            _refuse_partial_overlap("index_add_", self.array, source.array)
        if self._records(source):
            return self._record_in_place(
                "index_add_", lambda old, src: old.index_add(dim, index, src, alpha=alpha), source
            )
        return self._copy_from("index_add_", self.index_add(dim, index, source, alpha=alpha))

    def _check_index_add(self, dim: int, index: Tensor, source: Tensor) -> int:
        """``dim`` wrapped, after PyTorch's checks of the three (each error names
        index_add_(), as PyTorch's do; inside vmap, of every member's index)."""
        for name, given in (("index", index), ("source", source)):
            if not isinstance(given, Tensor):
                raise TypeError(
                    f"index_add_(): argument '{name}' must be Tensor, not {type(given).__name__}"
                )
        dim = wrap_dim(dim, self.array.ndim)
        if index.ndim > 1:
            raise IndexError(
                f"index_add_(): Index is supposed to be a vector, but got dim: {index.ndim} "
                f"with size: {list(index.shape)}"
            )
        if index.dtype not in (backend.int32, backend.int64):
            raise RuntimeError(
                f"index_add_(): Expected dtype int32/int64 for index but got: {index.dtype.name}"
            )
        if source.dtype != self.dtype:
            raise RuntimeError(
                f"index_add_(): self ({self.dtype.name}) and source ({source.dtype.name}) must "
                "have the "
                "same scalar type"
            )
        shape, count = self.array.shape, index.numel()
        if source.ndim == 0 or source.ndim > dim:  # as PyTorch, the count first
            size = source.shape[dim] if source.ndim else 1
            if count != size:
                raise RuntimeError(
                    f"index_add_(): Number of indices ({count}) should be equal to "
                    f"source.size(dim): ({size}), for dim: {dim}"
                )
        if source.ndim != len(shape) or (
            source.shape[:dim] + source.shape[dim + 1 :] != shape[:dim] + shape[dim + 1 :]
        ):
            raise RuntimeError(
                "index_add_(): source tensor shape must match self tensor shape, excluding the "
                f"specified dimension. Got self.shape = {list(shape)} source.shape = "
                f"{list(source.shape)}"
            )
        size = shape[dim] if shape else 1
        # (a replay checks too)
        _call(_check_index_add, index._checked_values(), size, dim, len(shape) <= 1)
        return dim

    def unfold(self, dimension: int, size: int, step: int) -> Tensor:
        """The windows of ``size`` entries every ``step`` along ``dimension``, as a new last
        dim (a view: windows may overlap), as ``Tensor.unfold``: patches, frames, im2col.

        >>> import scratchgrad as sg
        >>> sg.arange(5).unfold(0, 2, 2)
        tensor([[0, 1],
                [2, 3]])
        """
        dim = wrap_dim(dimension, max(self.array.ndim, 1))
        length = self.array.shape[dim] if self.array.ndim else 1
        if size > length:
            raise RuntimeError(
                f"maximum size for tensor at dimension {dim} is {length} but size is {size}"
            )
        if step <= 0:
            raise RuntimeError(f"step is {step} but must be > 0")
        if size < 0:
            raise RuntimeError(f"size is {size} but must be >= 0")
        if self.array.ndim == 0:  # one entry: its windows, without a dim to count them along
            return self.reshape(1).unfold(0, size, step)[0]
        return movement.Unfold.apply(self, dim=dim, size=size, step=step)

    def as_strided(
        self, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
    ) -> Tensor:
        """A view of this tensor's storage with entry ``i`` at ``storage_offset + sum(i_k *
        stride_k)``, strides and offset counted in entries of the storage (the offset
        defaults to this tensor's), as ``torch.as_strided``. Entries may overlap (sliding
        windows); such a view is read-only here: PyTorch refuses to write into a stride of 0
        and writes other overlaps in its own loop order, which scratchgrad does not copy.

        >>> import scratchgrad as sg
        >>> sg.arange(4.0).as_strided((3, 2), (1, 1))
        tensor([[0., 1.],
                [1., 2.],
                [2., 3.]])
        """
        size, stride, storage_offset = strided_arguments("as_strided", size, stride, storage_offset)
        batched = vmapped("_as_strided", self)  # each member's view: vmap's own version
        if batched is not None:
            return batched(self, size, stride, storage_offset)
        if len(size) != len(stride):
            raise RuntimeError("mismatch in length of strides and shape")
        if builtins.any(s < 0 for s in stride):
            raise RuntimeError(
                "as_strided: Negative strides are not supported at the moment, got strides: "
                f"{list(stride)}"
            )
        if builtins.any(n < 0 for n in size):
            raise RuntimeError(
                f"Storage size calculation overflowed with sizes={list(size)} and "
                f"strides={list(stride)}"
            )
        own = self._offset_in_storage()
        offset = own if storage_offset is None else storage_offset
        if offset < 0:
            raise RuntimeError(f"Tensor: invalid storage offset {offset}")
        storage = self._storage("as_strided")
        needed = movement.span(size, stride, offset)  # entries of storage it reads
        if needed > storage.size:
            item = self.array.itemsize
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                f"{offset}, and itemsize {item} requiring a storage size of {needed * item} are "
                f"out of bounds for storage of size {storage.size * item}"
            )
        return movement.AsStrided.apply(self, size=size, stride=stride, offset=offset - own)

    def _offset_in_storage(self) -> int:
        """``storage_offset()``, on a device too: there (no addresses to compare) the place of
        the first entry, found by taking the view steps on the storage's positions."""
        if type(self.array) is ndarray or not hasattr(self, "_view") or not self.array.size:
            return self.storage_offset()
        base, steps = self._view
        positions = namespace(base.array).arange(base.array.size).reshape(base.shape)
        return int(movement.replay_on_array(positions, steps).reshape(-1)[0])

    def _storage(self, name: str) -> Any:
        """The array PyTorch's storage of this tensor stands for (``_storage_array``: its
        base's, itself if no view), where that lies in row-major order as PyTorch's would;
        else ``name`` raises."""
        storage = _storage_array(self)
        if isinstance(storage, MetaArray) or not storage.flags.c_contiguous:
            raise RuntimeError(
                f"{name}: scratchgrad cannot tell this tensor's storage: it (or the tensor it "
                f"views, of shape {storage.shape}) is kept in another memory order than "
                "PyTorch's (a convolution's result) or on the meta device; a row-major copy "
                "such as x.reshape(-1).view(x.shape) has PyTorch's storage"
            )
        return storage

    def narrow(self, dim: int, start: int, length: int) -> Tensor:
        """Entries ``start`` to ``start + length`` of ``dim`` (a view); ``start`` may be
        negative, counted from the end."""
        if self.array.ndim == 0:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        dim = wrap_dim(dim, self.array.ndim)
        size = self.array.shape[dim]
        if not -size <= start <= size:
            raise IndexError(
                f"start out of range (expected to be in range of [{-size}, {size}], but got "
                f"{start})"
            )
        start = start + size if start < 0 else start
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if start + length > size:
            raise RuntimeError(
                f"start ({start}) + length ({length}) exceeds dimension size ({size})."
            )
        return self[(slice(None),) * dim + (slice(start, start + length),)]

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        name = "Split" if isinstance(split_size, int) else "SplitWithSizes"
        return _not_to_change(self.unsafe_split(split_size, dim), name)

    def unsafe_split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """``split``, whose pieces may be changed in place in a graph, as PyTorch's unsafe
        form: here they are still views, whose changes are recorded on the base."""
        if self.array.ndim == 0:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        dim = wrap_dim(dim, self.array.ndim)
        size = self.array.shape[dim]
        if isinstance(split_size, int):
            if split_size < 0 or (split_size == 0 and size != 0):
                raise RuntimeError(
                    f"split: split_size must be positive (0 only for a dimension of size 0), "
                    f"got {split_size} for dimension {dim} of size {size}"
                )
            step = builtins.max(split_size, 1)
            # as PyTorch, an empty dimension splits into one empty piece
            starts = range(0, size, step) if size else [0]
            split_size = [builtins.min(split_size, size - s) for s in starts]
        if sum(split_size) != size:
            raise RuntimeError(f"split: sizes {split_size} do not add up to {size} in dim {dim}")
        starts = [0, *itertools.accumulate(split_size)][:-1]
        return tuple(self.narrow(dim, s, n) for s, n in zip(starts, split_size))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        return _not_to_change(self.unsafe_chunk(chunks, dim), "Split")

    def unsafe_chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        if self.array.ndim == 0:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        size = self.array.shape[wrap_dim(dim, self.array.ndim)]
        if size == 0:  # as PyTorch, an empty dimension chunks into `chunks` empty pieces
            return self.unsafe_split([0] * chunks, dim)
        return self.unsafe_split(-(-size // chunks), dim)

    def tensor_split(
        self, indices_or_sections: int | Sequence[int] | Tensor, dim: int = 0
    ) -> tuple[Tensor, ...]:
        """Views of ``dim`` cut into ``indices_or_sections`` parts of near-equal size (the first
        ``size % sections`` one longer), or cut before each index of a list (indices clamped as
        Python slices are, so parts may be empty), as ``torch.tensor_split``; an int64 tensor
        counts as an int (0-d) or a list (1-D).

        >>> import scratchgrad as sg
        >>> [t.tolist() for t in sg.arange(7).tensor_split(3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        >>> [t.tolist() for t in sg.tensor_split(sg.arange(7), [1, 5])]
        [[0], [1, 2, 3, 4], [5, 6]]
        """
        if self.array.ndim == 0:
            raise RuntimeError(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 "
                "dims"
            )
        dim = wrap_dim(dim, self.array.ndim)
        cuts = _split_points(indices_or_sections, self.array.shape[dim])
        return tuple(
            self[(slice(None),) * dim + (slice(start, end),)]
            for start, end in zip([0, *cuts], [*cuts, None])
        )

    def hsplit(self, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        """``tensor_split`` along dim 1 (dim 0 of a 1-D tensor), into equal parts or at
        indices, as ``torch.hsplit``."""
        return self._directional_split("hsplit", sections, 1 if self.array.ndim > 1 else 0, 1)

    def vsplit(self, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return self._directional_split("vsplit", sections, 0, 2)

    def dsplit(self, sections: int | Sequence[int]) -> tuple[Tensor, ...]:
        return self._directional_split("dsplit", sections, 2, 3)

    def _directional_split(self, name, sections, dim: int, min_dims: int) -> tuple[Tensor, ...]:
        if self.array.ndim < min_dims:
            raise RuntimeError(
                f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a "
                f"tensor with {self.array.ndim} dimensions!"
            )
        if isinstance(sections, int) and self.array.shape[dim] % sections:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {self.array.shape[dim]} is not divisible by the split_size "
                f"{sections}!"
            )
        return self.tensor_split(sections, dim)

    def split_with_sizes(self, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        return self.split(list(split_sizes), dim)

    def unsafe_split_with_sizes(
        self, split_sizes: Sequence[int], dim: int = 0
    ) -> tuple[Tensor, ...]:
        return self.unsafe_split(list(split_sizes), dim)

    def moveaxis(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        return self.movedim(source, destination)

    def ravel(self) -> Tensor:
        return self.reshape(-1)

    def diagflat(self, offset: int = 0) -> Tensor:
        """The entries, flattened, on diagonal ``offset`` of a square matrix.

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 2]).diagflat(1).tolist()
        [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
        """
        return self.reshape(-1).diag(offset)

    def ger(self, vec2: Tensor) -> Tensor:
        return self.outer(vec2)

    def inner(self, other: Tensor) -> Tensor:
        """Sums of products over the last dims, as ``torch.inner`` (a product with a 0-d)."""
        if self.array.ndim == 0 or other.ndim == 0:
            return self * other
        return tensordot(self, other, dims=([-1], [-1]))

    def vdot(self, other: Tensor) -> Tensor:
        """The dot product of two 1-D tensors, this one conjugated (for real entries, ``dot``).

        >>> import scratchgrad as sg
        >>> sg.tensor([1j, 2.0]).vdot(sg.tensor([1j, 1.0]))
        tensor(3.+0.j)
        """
        if self.array.ndim != 1 or other.ndim != 1:
            raise RuntimeError(
                f"1D tensors expected, but got {self.array.ndim}D and {other.ndim}D tensors"
            )
        return self.conj().dot(other)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        dim = wrap_dim(dim, self.array.ndim)
        if self.array.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return _not_to_change(
            tuple(self.select(dim, i) for i in range(self.array.shape[dim])), "Unbind"
        )

    def select(self, dim: int, index: int) -> Tensor:
        """The entries at ``index`` of ``dim``, that dim removed (a view)."""
        if self.array.ndim == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        dim = wrap_dim(dim, self.array.ndim)
        size = self.array.shape[dim]
        if not -size <= index < size:
            raise IndexError(
                f"select(): index {index} out of range for tensor of size "
                f"{list(self.array.shape)} at dimension {dim}"
            )
        return self[(slice(None),) * dim + (index,)]

    def __getitem__(self, index: Any) -> Tensor:
        if _function._vmap_dispatch is not None:  # (one read when no vmap runs)
            batched = vmapped("_getitem", *(index if type(index) is tuple else (index,)))
            if batched is not None:  # a batched index tensor: each member's own indices
                return batched(self, index)
        items = _index(index, self.array, (self,))
        if capture_hook.recorder is not None and any(_is_mask(item) for item in items):
            # a replay would give the recorded count to what follows (a mean's divisor)
            capture_hook.recorder.refuse(
                "indexing by a boolean mask (its shape depends on the values)",
                "Keep the shape: multiply by the mask or use sg.where(mask, x, 0), and divide "
                "by mask.sum() for a mean",
            )
        try:
            return movement.GetItem.apply(self, index=items)
        except IndexError:
            if self.array.ndim:
                raise
            raise _zero_dim_index_error(index) from None

    def gather(self, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
        """``out[i][j] = self[index[i][j]][j]`` for dim 0, and so on; as ``torch.gather``.
        ``sparse_grad`` is accepted for PyTorch's signature; the gradient is dense either way."""
        if not isinstance(index, Tensor):
            raise TypeError(f"gather(): index must be a Tensor, got {type(index).__name__}")
        out = self._by_another_route("gather", dim, index)
        if out is not None:
            return out
        dim = wrap_dim(dim, self.array.ndim)
        if index.ndim != self.array.ndim:
            raise RuntimeError(
                f"gather: index has {index.ndim} dims, the tensor has {self.array.ndim}"
            )
        if index.dtype not in (backend.int32, backend.int64):
            raise RuntimeError(
                f"gather(): Expected dtype int32/int64 for index, got {index.dtype.name}"
            )
        _call(_check_indices, "gather", index.array, self.array.shape[dim], dim)
        grids = list(namespace(index.array).ogrid[tuple(slice(n) for n in index.shape)])
        grids[dim] = index  # a Tensor: copied if a graph keeps it (see graph_keeps)
        return self[tuple(grids)]

    def repeat_interleave(
        self,
        repeats: int | Tensor | None = None,
        dim: int | None = None,
        *,
        output_size: int | None = None,
    ) -> Tensor:
        """Each entry along ``dim`` (of the flattened tensor if None) repeated ``repeats``
        times, in place of the next, as ``torch.repeat_interleave`` (``k.repeat_interleave(
        n_rep, dim=1)`` in grouped-query attention). ``repeats`` may be a vector of counts, one
        per entry (or one for all), which a jitted step refuses: its shape would follow the
        values. ``output_size``, the length it gives, is checked. Without ``repeats``, this
        tensor is the counts, and each position ``i`` is repeated ``self[i]`` times.

        >>> Tensor([1.0, 2.0]).repeat_interleave(2).tolist()
        [1.0, 1.0, 2.0, 2.0]
        >>> Tensor([2, 0, 1]).long().repeat_interleave().tolist()
        [0, 0, 2]
        """
        if repeats is None:
            positions = Tensor._make(namespace(self.array).arange(self.numel()))
            return positions.repeat_interleave(self, output_size=output_size)
        x, dim = (self.reshape(-1), 0) if dim is None else (self, wrap_dim(dim, self.ndim))
        if isinstance(repeats, Tensor) and repeats.shape == (1,):
            repeats = repeats.reshape(())
        out = x._repeated(repeats, dim)
        if output_size is not None and out.shape[dim] != output_size:
            raise RuntimeError(
                f"repeat_interleave(): output_size is {output_size}, the output has "
                f"{out.shape[dim]} entries along dim {dim}"
            )
        return out

    def _repeated(self, repeats: int | Tensor, dim: int) -> Tensor:
        """``repeat_interleave`` along a wrapped ``dim``, ``repeats`` a number or a vector."""
        if isinstance(repeats, Tensor) and repeats.ndim > 0:
            if capture_hook.recorder is not None:
                capture_hook.recorder.refuse(
                    "repeat_interleave() by a tensor of counts (its shape depends on the values)",
                    "Repeat by a number, or pass the repeated index as an argument",
                )
            if repeats.shape != (self.shape[dim],):
                raise RuntimeError(
                    f"repeat_interleave(): repeats must have the same size as input along dim "
                    f"({self.shape[dim]}), got {list(repeats.shape)}"
                )
            index = namespace(repeats.array).repeat(
                namespace(repeats.array).arange(self.shape[dim]), repeats.array
            )
            return self.index_select(dim, Tensor._make(index))
        count = int(repeats)
        if count < 0:
            raise RuntimeError("repeat_interleave(): repeats can not be negative")
        shape = self.shape
        spread = self.unsqueeze(dim + 1).expand(*shape[: dim + 1], count, *shape[dim + 1 :])
        out = spread.reshape(*shape[:dim], shape[dim] * count, *shape[dim + 1 :])
        # a copy, as PyTorch's: the reshape stays a view where it merges a size or a count of
        # 1, of an expanded tensor, or empty
        if min(shape[dim], count) <= 1 or 0 in out.shape or _steps_0(self.array):
            return out.clone()
        return out

    def diag(self, diagonal: int = 0) -> Tensor:
        """A vector's square matrix with the vector on its ``diagonal``-th diagonal, or a
        matrix's ``diagonal``-th diagonal as a vector (a copy), as ``torch.diag``."""
        if self.ndim == 2:
            return self.diagonal(diagonal).clone()
        if self.ndim != 1:
            raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
        return self._on_diagonal(diagonal)

    def _on_diagonal(self, diagonal: int) -> Tensor:
        """A vector's square matrix with the vector on its ``diagonal``-th diagonal: written
        into zeros, the fastest way; vmap's batched tensor, which refuses writes, embeds its
        whole batch instead."""
        n = self.shape[0]
        size = n + abs(diagonal)
        steps = namespace(self.array).arange(n)
        rows, columns = steps + max(-diagonal, 0), steps + max(diagonal, 0)
        out = self.new_zeros(size, size)
        out[rows, columns] = self
        return out

    def scatter(
        self,
        dim: int,
        index: Tensor,
        src: Any = None,
        *,
        value: Any = None,
        reduce: str | None = None,
    ) -> Tensor:
        """This tensor with ``src`` written at ``index`` along ``dim`` (``out[index[i][j]][j]
        = src[i][j]`` for dim 0), as ``torch.scatter``; ``src`` may be a number, also given
        as ``value=``, as PyTorch's second form. Where
        ``index`` repeats a position, the last write stays (PyTorch leaves it unspecified).
        PyTorch's legacy ``reduce="add"`` or ``"multiply"`` adds or multiplies ``src`` in
        instead (a number cast to this tensor's dtype first), with no gradient, as PyTorch's;
        ``scatter_reduce`` is the differentiable form.

        >>> import scratchgrad as sg
        >>> sg.zeros(2, 3).scatter(1, sg.tensor([[2], [0]]), 1.0)  # one-hot rows
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
        >>> sg.ones(3).scatter(0, sg.tensor([0, 0]), value=2.0, reduce="multiply")
        tensor([4., 1., 1.])
        """
        if value is not None or src is None:  # (the keyword form only: the common call skips it)
            src = _scatter_value(src, value)
        if reduce is not None:
            if reduce not in ("add", "multiply"):
                raise RuntimeError("reduce argument must be either add or multiply.")
            reduce = "sum" if reduce == "add" else "prod"
            return self._scatter_reduced("scatter", dim, index, src, reduce, True)
        out = self._by_another_route("scatter", dim, index, src)
        if out is not None:
            return out
        if not isinstance(src, Tensor):  # (70000.0 into float16 raises, as PyTorch's)
            src = checked_number(src, self.array.dtype)
        positions, src = self._scatter_positions("scatter", dim, index, src)
        out = self.clone()
        out[positions] = src
        return out

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """This tensor with ``src`` added at ``index`` along ``dim``, as
        ``torch.scatter_add``: a repeated position adds up. Differentiable in both (``src``'s
        gradient is the incoming one gathered at ``index``)."""
        out = self._by_another_route("scatter_add", dim, index, src)
        if out is not None:
            return out
        dim = wrap_dim(dim, self.array.ndim)
        positions, src = self._scatter_positions("scatter_add", dim, index, src)
        # each position's flat number: the index's part computed by ops (a jitted step reads
        # each call's index), the other dims' parts a constant of the shapes
        strides = [math.prod(self.array.shape[d + 1 :]) for d in range(self.array.ndim)]
        others = sum((p * s for d, (p, s) in enumerate(zip(positions, strides)) if d != dim), 0)
        flat = (index * strides[dim] + index.new_tensor(others)).reshape(-1)
        return self.reshape(-1).index_add(0, flat, src.reshape(-1)).reshape(self.shape)

    def scatter_reduce(
        self, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
    ) -> Tensor:
        """This tensor with each entry of ``src`` reduced into the entry ``index`` points at
        along ``dim`` (as ``scatter_add`` adds), as ``torch.scatter_reduce``: ``reduce`` is
        "sum", "prod", "mean", "amax" or "amin"; without ``include_self`` this tensor's
        entries that ``src`` reaches take no part. An integer mean is floored, as PyTorch's.
        Differentiable in this tensor and ``src`` as PyTorch's: amax and amin split the
        gradient evenly among the entries equal to the result.

        >>> import scratchgrad as sg
        >>> index = sg.tensor([0, 1, 0, 1, 2])
        >>> sg.zeros(3).scatter_reduce(0, index, sg.tensor([1.0, 2, 3, 4, 5]), "amax")
        tensor([3., 4., 5.])
        >>> sg.ones(3).scatter_reduce(0, index, sg.tensor([1.0, 2, 3, 4, 5]), "mean",
        ...                           include_self=False)
        tensor([2., 3., 5.])
        """
        if not isinstance(src, Tensor):
            raise TypeError(
                "scatter_reduce(): argument 'src' (position 3) must be Tensor, not "
                f"{type(src).__name__}"
            )
        if reduce not in ("sum", "prod", "mean", "amax", "amin", "max", "min"):
            raise RuntimeError(
                f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
            )
        if reduce == "mean" and self.array.dtype.kind == "b":
            raise NotImplementedError(
                "scatter_reduce(): reduce='mean' is not implemented for bool tensors, as in PyTorch"
            )
        return self._scatter_reduced("scatter_reduce", dim, index, src, reduce, include_self)

    def _scatter_reduced(
        self, name: str, dim: int, index: Tensor, src: Any, reduce: str, include_self: bool
    ) -> Tensor:
        """``scatter_reduce`` (or the legacy ``scatter`` with ``reduce``: ``name``), after
        scatter's checks; a 0-d operand among 1-d ones read as 1-d, as PyTorch reads it, and a
        batched operand under vmap handed to vmap's version, both by ``_by_another_route``."""
        options = (
            {"reduce": reduce, "include_self": include_self}
            if name == "scatter_reduce"
            else {"reduce": "add" if reduce == "sum" else "multiply"}  # the legacy form's names
        )
        out = self._by_another_route(name, dim, index, src, **options)
        if out is not None:
            return out
        dim = wrap_dim(dim, self.array.ndim)
        positions, src = self._scatter_positions(name, dim, index, src)
        if not isinstance(src, Tensor):  # the legacy form's number
            src = self.new_full(index.shape, written_number(src, self.array.dtype))
        op = movement.ScatterReduce if name == "scatter_reduce" else movement.ScatterLegacyReduce
        return op.apply(self, src, positions=positions, reduce=reduce, include_self=include_self)

    def take_along_dim(self, indices: Tensor, dim: int | None = None) -> Tensor:
        """The entries at ``indices`` along ``dim``, the two broadcast against each other in
        every other dim, as ``torch.take_along_dim`` (``x.take_along_dim(x.argsort(1), 1)``
        sorts rows). Without ``dim``, both are read flattened. As PyTorch's, an index along
        ``dim`` counts around the dim's size (-1 is the last, ``size`` the first).

        >>> import scratchgrad as sg
        >>> x = sg.tensor([[10, 30, 20], [60, 40, 50]])
        >>> x.take_along_dim(x.argsort(1), 1)
        tensor([[10, 20, 30],
                [40, 50, 60]])
        >>> sg.take_along_dim(x, x.argmax())
        tensor([60])
        """
        if not isinstance(indices, Tensor):
            raise TypeError(
                "take_along_dim(): argument 'indices' (position 2) must be Tensor, not "
                f"{type(indices).__name__}"
            )
        if indices.dtype != backend.int64:
            raise RuntimeError(
                f"torch.take_along_dim(): dtype of indices should be Long but got "
                f"{indices.dtype.name}"
            )
        if dim is None:
            return self.reshape(-1).gather(0, indices.reshape(-1))
        if indices.ndim != self.array.ndim:
            raise RuntimeError(
                "torch.take_along_dim(): input and indices should have the same number of "
                f"dimensions, but got {self.array.ndim} dimensions for input, and "
                f"{indices.ndim} dimensions for indices"
            )
        if self.array.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        dim = wrap_dim(dim, self.array.ndim)
        size = self.array.shape[dim]
        if size == 0 and indices.numel():
            raise RuntimeError(
                f"take_along_dim(): indices {list(indices.shape)} into dim {dim} of size 0"
            )
        shape = list(self.array.shape)
        shape[dim] = indices.shape[dim]
        try:
            shape = list(xp.broadcast_shapes(tuple(shape), indices.shape))
        except ValueError:
            raise RuntimeError(
                f"take_along_dim(): shapes {list(self.shape)} and {list(indices.shape)} do not "
                f"broadcast apart from dimension {dim}"
            ) from None
        indices = indices.expand(shape)
        shape[dim] = size
        return self.expand(shape).gather(dim, indices % max(size, 1))

    def index_fill(self, dim: int, index: Tensor, value: Any) -> Tensor:
        """This tensor with ``value`` (a number, or a 0-d tensor) written at the positions
        ``index`` (int64, at most 1 dim, negative counted from the end) along ``dim``, as
        ``torch.index_fill``. Differentiable in this tensor and in a tensor ``value``.

        >>> import scratchgrad as sg
        >>> sg.zeros(2, 3).index_fill(1, sg.tensor([0, -1]), 5.0)
        tensor([[5., 0., 5.],
                [5., 0., 5.]])
        """
        batched = vmapped("_index_fill", index)  # (its values are read on the array)
        if batched is not None:
            return batched(self, dim, index, value)
        if isinstance(value, Tensor) and value.ndim:
            raise RuntimeError(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        if not isinstance(index, Tensor) or index.dtype != backend.int64:
            raise IndexError("index_fill_(): Expected dtype int64 for index.")
        complex_value = isinstance(value, Tensor) and value.array.dtype.kind == "c"
        if (complex_value or type(value) is complex) and self.array.dtype.kind != "c":
            raise RuntimeError(
                "index_fill_(): Converting complex Scalar to non-complex type is not supported"
            )
        if index.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
        if self.array.ndim == 0:  # as PyTorch: a 0-d tensor acts as a vector of one
            wrap_dim(dim, 0)
            return self.reshape(1).index_fill(0, index, value).reshape(())
        dim = wrap_dim(dim, self.array.ndim)
        # a mask, not a write at each index: a repeated index takes value's gradient once
        mask = _call(index_mask, index.array, self.array.shape, dim)  # a replay too
        if isinstance(value, Tensor):
            if value.array.dtype != self.array.dtype:
                check_tensor_number(value, self.array.dtype)
            value = value.to(self.array.dtype)
        else:  # (a 0-d tensor of this dtype: a number would promote a bool tensor)
            value = self.new_full((), checked_number(value, self.array.dtype))
        return binary.Where.apply(mask, value, self)

    @autocast_policy("promote")  # on PyTorch's CPU autocast promote list
    def index_copy(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        """This tensor with the slices of ``source`` along ``dim`` written at the positions
        ``index`` (int64, at most 1 dim), as ``torch.index_copy``. Where ``index`` repeats a
        position, the last slice stays (PyTorch leaves it unspecified), and each repeat's
        slice of ``source`` gets the gradient there, as PyTorch's. Differentiable in both.

        >>> import scratchgrad as sg
        >>> sg.zeros(3).index_copy(0, sg.tensor([2, 0]), sg.tensor([1.0, 2.0]))
        tensor([2., 0., 1.])
        """
        batched = vmapped("_index_copy", index, source)  # (written into a copy in place)
        if batched is not None:
            return batched(self, dim, index, source)
        if not isinstance(source, Tensor):
            raise TypeError(
                "index_copy(): argument 'source' (position 3) must be Tensor, not "
                f"{type(source).__name__}"
            )
        if not isinstance(index, Tensor) or index.dtype != backend.int64:
            raise RuntimeError(
                "index_copy_(): Expected a long tensor for index, but got "
                f"{getattr(index, 'dtype', type(index).__name__)}"
            )
        if index.ndim > 1:
            raise IndexError(
                f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})"
            )
        if source.dtype != self.dtype:
            raise RuntimeError(
                "index_copy_(): self and source expected to have the same dtype, but got "
                f"(self) {self.dtype.name} and (source) {source.dtype.name}"
            )
        dim = wrap_dim(dim, self.array.ndim)
        _check_index_copy(self.shape, dim, index.numel(), source.shape)
        size = self.shape[dim] if self.ndim else 1
        _call(check_index_copied, index.array, size, dim)  # a replay checks too
        if self.array.ndim == 0:  # as PyTorch: a 0-d tensor acts as a vector of one
            return self.reshape(1).index_copy(0, index, source.reshape(-1)).reshape(())
        out = self.clone()
        out[(slice(None),) * dim + (index.reshape(-1),)] = source
        return out

    def _by_another_route(
        self, name: str, dim: int, index: Any, *src: Any, **options: Any
    ) -> Tensor | None:
        """The method ``name`` (gather, scatter, scatter_add, scatter_reduce; ``options`` its
        keyword arguments) where it becomes another call, else None: with a 0-d operand among
        operands of at most 1 dim, it runs on them read as 1-d, as PyTorch's does; under vmap
        with a batched operand (whichever), it is vmap's version (``vmapped``)."""
        dim = wrap_dim(dim, self.array.ndim)
        if _reads_0d_as_1d(self, index, *src):
            out = getattr(_as_1d(self), name)(dim, _as_1d(index), *map(_as_1d, src), **options)
            return out.reshape(index.shape if name == "gather" else self.shape)
        batched = vmapped(f"_{name}", self, index, *src)
        return None if batched is None else batched(self, dim, index, *src, **options)

    def _scatter_positions(self, name: str, dim: int, index: Tensor, src: Any) -> tuple:
        """The positions ``index`` points at along ``dim`` (one index array per dim), and the
        part of ``src`` written there (its leading ``index.shape``), after PyTorch's checks."""
        dim = wrap_dim(dim, self.array.ndim)
        dtype = getattr(index, "dtype", None)
        if not isinstance(index, Tensor) or dtype not in (backend.int32, backend.int64):
            raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index, got {dtype}")
        if isinstance(src, Tensor):
            if not (index.ndim == self.array.ndim == src.ndim):
                raise RuntimeError(
                    f"{name}(): Index tensor must have the same number of dimensions as self "
                    f"tensor and src tensor (index {index.ndim}, self {self.array.ndim}, src "
                    f"{src.ndim})"
                )
            if src.dtype != self.dtype:
                raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
            if any(i > s for i, s in zip(index.shape, src.shape)):
                raise RuntimeError(
                    f"{name}(): Expected index {list(index.shape)} to be smaller than src "
                    f"{list(src.shape)} in every dimension"
                )
            src = src[tuple(slice(n) for n in index.shape)]
        elif index.ndim != self.array.ndim:
            raise RuntimeError(
                f"{name}(): Index tensor must have the same number of dimensions as self tensor"
            )
        if any(i > s for d, (i, s) in enumerate(zip(index.shape, self.shape)) if d != dim):
            raise RuntimeError(
                f"{name}(): Expected index {list(index.shape)} to be smaller than self "
                f"{list(self.shape)} apart from dimension {dim}"
            )
        _call(_check_indices, name, index.array, self.array.shape[dim], dim)  # a replay too
        xp, ndim = namespace(index.array), index.ndim
        grids = [  # each dim's positions, on the index's device (``ogrid`` makes host arrays)
            xp.arange(n).reshape([n if d == k else 1 for d in range(ndim)])
            for k, n in enumerate(index.shape)
        ]
        # a copy, made again by each replay of a jitted step: scatter's node indexes the
        # gradient with it in backward, by when the index may have changed in place
        grids[dim] = _call(xp.copy, index.array)
        return tuple(grids), src

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The diagonal of dims ``dim1`` and ``dim2`` as a new last dim, a view (writable).

        >>> import scratchgrad as sg
        >>> sg.arange(9).reshape(3, 3).diagonal(1)
        tensor([1, 5])
        """
        dims = _dims(dim1, self.array.ndim) + _dims(dim2, self.array.ndim)  # (each an int)
        if self.array.ndim < 2:
            raise RuntimeError(f"diagonal: needs at least 2 dims, got shape {self.array.shape}")
        dim1, dim2 = dims
        if dim1 == dim2:
            raise RuntimeError(f"diagonal: dim1 and dim2 cannot be equal, both are {dim1}")
        return movement.Diagonal.apply(self, offset=offset, dim1=dim1, dim2=dim2)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """Matrices with the last dim of this tensor on their ``offset``-th diagonal, in the
        new dims ``dim1`` and ``dim2``, as ``torch.diag_embed``.

        >>> import scratchgrad as sg
        >>> sg.tensor([1, 2]).diag_embed(1)
        tensor([[0, 1, 0],
                [0, 0, 2],
                [0, 0, 0]])
        """
        ndim = self.array.ndim + 1
        dim1, dim2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
        if dim1 == dim2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        x = self.reshape(1) if self.array.ndim == 0 else self
        size = x.shape[-1] + abs(offset)
        padded = x.pad([(0, 0)] * (x.ndim - 1) + [(0, abs(offset))])
        # the row (column) of entry k is k (k + offset) when offset >= 0, else k - offset (k)
        spread = padded.unsqueeze(-1 if offset >= 0 else -2)
        on = Tensor._make(namespace(x.array).eye(size, k=offset, dtype=bool))
        square = where(on, spread, spread.new_zeros(()))  # a tensor: bools stay bools
        rest = iter(range(ndim - 2))
        return square.permute(
            [ndim - 2 if d == dim1 else ndim - 1 if d == dim2 else next(rest) for d in range(ndim)]
        )

    def rot90(self, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
        """Rotated by 90 degrees ``k`` times in the plane of ``dims``, from the first dim's
        direction towards the second's, as ``torch.rot90``.

        >>> import scratchgrad as sg
        >>> sg.tensor([[1, 2], [3, 4]]).rot90()
        tensor([[2, 4],
                [1, 3]])
        """
        if len(dims) != 2:
            raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
        if self.array.ndim < 2:
            raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.array.ndim}")
        d0, d1 = wrap_dims(dims, self.array.ndim)
        if d0 == d1:
            raise RuntimeError(
                f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
            )
        k %= 4
        if k == 0:
            return self.clone()
        if k == 2:
            return self.flip((d0, d1))
        return self.flip(d1 if k == 1 else d0).transpose(d0, d1)

    def take(self, index: Tensor) -> Tensor:
        """The entries at ``index`` of this tensor read as a flat vector (negative indices
        count from the end), in the index's shape, as ``torch.take``.

        >>> import scratchgrad as sg
        >>> sg.tensor([[1, 2], [3, 4]]).take(sg.tensor([3, -4]))
        tensor([4, 1])
        """
        if not isinstance(index, Tensor) or index.dtype != backend.int64:
            found = getattr(index, "dtype", type(index).__name__)
            raise RuntimeError(f"take(): Expected a long tensor for index, but got {found}")
        _call(_check_take, index.array, self.array.size)
        return self.reshape(-1)[index]

    def kron(self, other: Tensor) -> Tensor:
        """The Kronecker product: every entry of this tensor times a block of ``other``, as
        ``torch.kron``.

        >>> import scratchgrad as sg
        >>> sg.kron(sg.tensor([1, 10]), sg.tensor([1, 2]))
        tensor([ 1,  2, 10, 20])
        """
        ndim = builtins.max(self.ndim, other.ndim)
        xs, ys = ((1,) * (ndim - t.ndim) + t.shape for t in (self, other))
        x = self.reshape([n for size in xs for n in (size, 1)])
        y = other.reshape([n for size in ys for n in (1, size)])
        return (x * y).reshape([a * b for a, b in zip(xs, ys)])

    def dist(self, other: Tensor, p: float = 2) -> Tensor:
        """The ``p``-norm of ``self - other`` over all entries, as ``torch.dist``.

        >>> import scratchgrad as sg
        >>> sg.dist(sg.tensor([3.0, 0.0]), sg.tensor([0.0, 4.0]))
        tensor(5.)
        """
        diff = self - _tensor_other("dist", other)
        if not backend.can_require_grad(diff.dtype):  # (floating or complex)
            raise RuntimeError(
                "norm(): input dtype should be either floating point or complex. Got "
                f"{torch_name(diff.dtype)} instead."
            )
        return p_norm(diff, p, None)

    def pad(self, widths: Sequence[tuple[int, int]], value: float = 0.0) -> Tensor:
        return movement.Pad.apply(self, widths=tuple(map(tuple, widths)), value=value)

    def where(self, condition: Tensor, other: Any) -> Tensor:
        return where(condition, self, other)

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    # ---- new tensors like this one ----------------------------------------------------------

    def new_zeros(
        self, *sizes: Any, size: Any = None, dtype=None, device=None, requires_grad=False
    ) -> Tensor:
        """Zeros of ``size`` with this tensor's dtype and device (unless others are given)."""
        sizes = _given_once("new_zeros", "size", sizes, size)
        return self._new("zeros", sizes, (), dtype, device, requires_grad)

    def new_ones(
        self, *sizes: Any, size: Any = None, dtype=None, device=None, requires_grad=False
    ) -> Tensor:
        sizes = _given_once("new_ones", "size", sizes, size)
        return self._new("ones", sizes, (), dtype, device, requires_grad)

    def new_empty(
        self, *sizes: Any, size: Any = None, dtype=None, device=None, requires_grad=False
    ) -> Tensor:
        sizes = _given_once("new_empty", "size", sizes, size)
        return self._new("empty", sizes, (), dtype, device, requires_grad)

    def new_empty_strided(
        self, size: Sequence[int], stride: Sequence[int], *, dtype=None, device=None,
        requires_grad=False,
    ) -> Tensor:  # fmt: skip
        """An uninitialised tensor of ``size`` whose entries lie ``stride`` apart in memory
        just large enough for them, as ``Tensor.new_empty_strided``.

        >>> import scratchgrad as sg
        >>> sg.zeros(1).new_empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
        """
        size = _int_tuple("new_empty_strided", "size", size, 1)
        stride = _int_tuple("new_empty_strided", "stride", stride, 2)
        memory = self.new_empty(movement.span(size, stride, 0), dtype=dtype, device=device)
        with no_grad():
            out = memory.as_strided(size, stride)
        return out.requires_grad_() if requires_grad else out

    def new_full(
        self, size: Any, fill_value: Any, *, dtype=None, device=None, requires_grad=False
    ) -> Tensor:
        return self._new("full", (size,), (fill_value,), dtype, device, requires_grad)

    def new_tensor(self, data: Any, *, dtype=None, device=None, requires_grad=False) -> Tensor:
        """A copy of ``data`` in this tensor's dtype (unless ``dtype`` is given)."""
        out = Tensor._from_operand(data, self.array.dtype if dtype is None else dtype)
        out.array = backend.to_device(out.array, device or self.device)
        return out.requires_grad_() if requires_grad else out

    def new(self, *args: Any) -> Tensor:
        """PyTorch's legacy ``x.new(...)`` (``new_empty``, ``new_tensor`` are the ones to use),
        in this tensor's dtype and on its device: ``x.new(2, 3)`` (ints, or a ``Size``) is
        uninitialised, ``x.new()`` empty, ``x.new(data)`` a list's or array's values, and
        ``x.new(t)`` an alias of a tensor ``t`` of this dtype.

        >>> import scratchgrad as sg
        >>> x = sg.ones(2, dtype=sg.int64)
        >>> x.new([1.5, 2]), x.new(2, 0).shape, x.new().shape
        (tensor([1, 2]), scratchgrad.Size([2, 0]), scratchgrad.Size([0]))
        """
        from scratchgrad import creation  # (creation builds on this module)

        return creation.legacy_new("new", self.array.dtype, args).to(self.device)

    def _new(self, name: str, size, fill: tuple, dtype, device, requires_grad: bool) -> Tensor:
        dtype = self.array.dtype if dtype is None else backend.to_dtype(dtype)
        make = getattr(backend.array_module(device or self.device), name)
        # through capture_hook: a jitted step's replays make a new array, as eager calls do
        shape = new_shape(f"new_{name}", size)
        if name == "full":  # (checked as full's: 300 into uint8, 1e30 into float16 raise)
            fill = (filled_number(fill[0], dtype, math.prod(shape)),)
        out = Tensor._make(capture_hook.call(make, shape, *fill, dtype=dtype))
        return out.requires_grad_() if requires_grad else out


_make = Tensor._make  # the plain one (see mark_inference_tensors)


# The names of the in-place forms ``_in_place_form`` made: each writes through ``_apply_``
# (which vmap's batched tensors batch)
IN_PLACE_FORMS: set[str] = set()


def _in_place_form(name: str) -> Callable:
    """``Tensor.<name>_``, the in-place form of the method ``name`` (see ``Tensor._apply_``):
    ``x.clamp_(0, 1)`` is ``x.clamp(0, 1)`` written into ``x``. In-place ops are not autocast,
    as PyTorch's: the method without its autocast policy. The method is the tensor's class's
    (a vmap's batched tensor has its own ``clamp``)."""

    def in_place(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        op = getattr(type(self), name)
        op = op.__wrapped__ if hasattr(op, "autocast_policy") else op
        return self._apply_(
            f"{name}_", lambda t: op(t, *args, **kwargs), *args, *kwargs.values(), promotes=True
        )

    in_place.__name__ = in_place.__qualname__ = f"{name}_"
    in_place.__doc__ = (
        f"``{name}`` in place: ``x.{name}_(...)`` writes ``x.{name}(...)`` into ``x``."
    )
    IN_PLACE_FORMS.add(f"{name}_")
    return in_place


# PyTorch's in-place forms of elementwise methods (``clamp_`` for weight clipping,
# ``masked_fill_`` for attention masks, ``addcmul_``/``addcdiv_`` in hand-written optimizers;
# exp_, relu_, sigmoid_ and tanh_ are below: one pass)
for _name in (
    "acos", "addcdiv", "addcmul", "asin", "atan", "atan2", "ceil", "clamp",
    "clamp_max", "clamp_min", "clip", "cos", "cosh", "erf", "exp2", "expm1", "floor",
    "floor_divide", "frac", "hypot", "index_copy", "index_fill", "log", "log10", "log1p",
    "log2", "logical_and", "logical_not", "logical_or", "logical_xor", "masked_fill",
    "nan_to_num", "neg", "negative", "pow", "reciprocal",
    "remainder", "round", "rsqrt", "scatter", "scatter_add", "scatter_reduce",
    "sign", "sin", "sinh", "sqrt", "square", "tan", "trunc",
):  # fmt: skip
    setattr(Tensor, f"{_name}_", _in_place_form(_name))

# ... of the products and triangles (``addmm_`` in hand-written layers)
for _name in (
    "addbmm", "addmm", "addmv", "addr", "baddbmm", "cumprod", "cumsum", "renorm", "tril", "triu",
):  # fmt: skip
    setattr(Tensor, f"{_name}_", _in_place_form(_name))


def _in_place_saving_result(name: str, cls: type) -> Callable:
    """``Tensor.<name>_`` for an op ``cls`` whose backward reads its result alone (PyTorch's
    derivatives.yaml: ``result``), changing the tensor's memory in one pass by
    ``cls.forward_in_place`` where the copying form (``_in_place_form``) computes a new array
    and copies it back. In a graph, ``cls``'s node saves the tensor itself at its new version,
    as PyTorch's ``relu_`` (``record_in_place``), where the copying form records the op on a
    copy of the old value (three passes). Outside a graph (no_grad, eval-mode inference with
    ``nn.ReLU(inplace=True)``) the change is counted (``increment_version``), as ``copy_``
    counts it. Elsewhere (a leaf, 16 bits, a transform watching; in a graph, a view: see
    ``_one_pass`` and ``_one_pass_outside_graphs``) it is the copying form.

    A NumPy float error (np.seterr(all="raise"), a warnings filter of "error") is raised once
    the result is written: the change is counted (and in a graph recorded), as it stays, where
    the copying form raises before writing."""
    copying = _in_place_form(name)

    def in_place(self: Tensor) -> Tensor:
        if self._ctx is not None and _one_pass(self):
            count = _function.record_in_place
        elif _one_pass_outside_graphs(self):
            if _state.enabled:  # (grad mode on: a view taken under no_grad is refused)
                _refuse_view_from_no_grad(self, name)
            count = _count_in_place
        else:
            return copying(self)
        try:
            cls.forward_in_place(self.array)
        except ValueError:  # read-only memory, refused before any write: the copying form's error
            return copying(self)
        except (ArithmeticError, Warning):  # NumPy's float error once the result is written:
            count(cls, self)  # the change is counted, as it stays; the error goes on
            raise
        return count(cls, self)

    in_place.__name__ = in_place.__qualname__ = f"{name}_"
    in_place.__doc__ = copying.__doc__
    return in_place


def _count_in_place(cls: type, tensor: Tensor) -> Tensor:
    """``record_in_place``'s twin outside a graph: the change of ``tensor`` only counted (which
    also brings its ``view()`` copies up to date, and raises for an inference tensor outside
    inference mode, after the write, as PyTorch's and the copying form)."""
    increment_version(tensor)
    return tensor


_ONE_PASS_DTYPES = (backend.float32, backend.float64)


def _one_pass(tensor: Tensor) -> bool:
    """Whether ``_in_place_saving_result``'s one pass is plainly right for ``tensor``, made by
    a node (so in a graph, and no leaf, which is refused): a float32 or float64 NumPy tensor
    owning its memory alone (no view, no base of views, which the change would take again),
    whose node allows in-place changes, with grad mode on and no transform watching."""
    return (
        _state.enabled
        and not hasattr(tensor, "_view")  # (these three are unset on plain tensors)
        and not hasattr(tensor, "_views")
        and not hasattr(tensor._ctx, "refuses_in_place")
        and _plain_float(tensor)
    )


def _one_pass_outside_graphs(tensor: Tensor) -> bool:
    """Whether ``_in_place_saving_result``'s one pass is plainly right for ``tensor`` outside
    a graph (grad mode off, or a tensor that needs no grad): a float32 or float64 NumPy tensor
    (a view too: its memory is its base's, whose count it shares) with no transform watching
    (a jit recording records the copying form's ``copy_``; vmap's batched tensors batch it)."""
    return not (_state.enabled and tensor._requires_grad) and _plain_float(tensor)


def _plain_float(tensor: Tensor) -> bool:
    """Whether ``tensor`` is a plain float32 or float64 NumPy tensor with no transform
    watching: what both of the one pass's cases ask."""
    return (
        type(tensor) is Tensor
        and type(tensor.array) is ndarray
        and tensor.array.dtype in _ONE_PASS_DTYPES
        and _function.records_plainly()
    )


# relu_ (nn.ReLU(inplace=True)) and the others whose backward reads the result: one pass
for _name, _op in (
    ("exp", unary.Exp), ("relu", unary.Relu), ("sigmoid", unary.Sigmoid), ("tanh", unary.Tanh),
):  # fmt: skip
    setattr(Tensor, f"{_name}_", _in_place_saving_result(_name, _op))


def _changes_a_leaf(tensor: Tensor, base: Tensor) -> bool:
    """Whether an in-place change of ``tensor`` (``base`` itself or a view of it) changes a
    leaf that requires grad, which PyTorch refuses: the test is the view's ``requires_grad``,
    not the base's, so a leaf made from a view (``zeros(6)[1:].requires_grad_()``, whose base
    needs no grad) and its views are refused too."""
    return base.is_leaf and tensor.requires_grad


def restride_(self: Tensor, name: str, view: Callable[[Tensor], Tensor]) -> Tensor:
    """Make this tensor ``view(self)`` over the same memory: the in-place view ops (``t_``,
    ``squeeze_``, ...), as PyTorch's. In a graph the view is recorded on the old node and this
    tensor takes over the new one. A tensor that owned its memory becomes a view of an alias
    of its old self (which takes over its views), so ``is_contiguous`` and later in-place
    writes through it see the new layout."""
    if capture_hook.recorder is not None:  # a replay would not rebind this tensor's array
        capture_hook.recorder.refuse(
            f".{name}() (it changes the tensor's shape in place)",
            f"Use the out-of-place view (y = x.{name[:-1]}(...))",
        )
    base = getattr(self, "_view", (self,))[0]
    if _state.enabled and _changes_a_leaf(self, base):
        what = "a leaf Variable" if base is self else "a view of a leaf Variable"
        raise RuntimeError(f"{what} that requires grad is being used in an in-place operation.")
    if not _state.enabled and self._ctx is not None:  # NOTE: PyTorch keeps the old node, whose
        raise RuntimeError(  # gradient then has the old shape (wrong for a square transpose)
            f"{name}: this tensor is part of a graph, which an unrecorded change of its shape "
            "would break; call it outside no_grad, or on a detached tensor"
        )
    old = Tensor._make(self.array, self._ctx)
    old._requires_grad, old._counter = self._requires_grad, self._shared_counter()
    for name in ("_view", "_base_array", "_layout_steps"):  # so the view starts from its layout
        if hasattr(self, name):
            setattr(old, name, getattr(self, name))
    out = view(old)
    if out is not old:
        if not hasattr(self, "_view") and hasattr(self, "_views"):
            old._views = self._views  # they were taken from the memory that old now owns
            for other in old._views:
                other._view = (old, other._view[1])
            del self._views
        self.array, self._ctx = out.array, out._ctx  # (a leaf under no_grad keeps requires_grad)
        if hasattr(out, "_view"):
            self._view = out._view
            views = getattr(out._view[0], "_views", None)  # (out, a temporary, leaves it)
            if views is not None and not builtins.any(v is self for v in views):
                views.add(self)  # (no `in`: it compares with ==, elementwise here)
    increment_version(self)
    return self


def _in_place_view_form(name: str) -> Callable:
    """``Tensor.<name>_`` of a view op (see ``restride_``): ``x.transpose_(0, 1)`` makes
    ``x`` itself ``x.transpose(0, 1)``, sharing its memory."""
    op = getattr(Tensor, name)

    def in_place(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return restride_(self, f"{name}_", lambda t: op(t, *args, **kwargs))

    in_place.__name__ = in_place.__qualname__ = f"{name}_"
    in_place.__doc__ = (
        f"``{name}`` in place: ``x.{name}_(...)`` makes ``x`` the view ``x.{name}(...)``."
    )
    return in_place


for _name in ("squeeze", "unsqueeze", "transpose", "swapaxes", "swapdims"):
    setattr(Tensor, f"{_name}_", _in_place_view_form(_name))


def _as_strided_(
    self: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
) -> Tensor:
    """``as_strided`` in place: ``x.as_strided_(size, stride)`` makes ``x`` the view
    ``x.as_strided(size, stride)``, sharing its memory."""
    strided_arguments("as_strided_", size, stride, storage_offset)  # (PyTorch's errors' name)
    return restride_(self, "as_strided_", lambda t: t.as_strided(size, stride, storage_offset))


Tensor.as_strided_ = _as_strided_


def _t_(self: Tensor) -> Tensor:
    """``t`` in place: a matrix becomes its transpose, sharing its memory, as ``Tensor.t_``.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([[1.0, 2.0]])
    >>> x.t_().shape
    scratchgrad.Size([2, 1])
    """

    def t(x: Tensor) -> Tensor:  # (checked after the leaf, as PyTorch)
        if x.array.ndim > 2:
            raise RuntimeError(
                f"t_() expects a tensor with <= 2 dimensions, but self is {x.array.ndim}D"
            )
        return x.t()

    return restride_(self, "t_", t)


Tensor.t_ = _t_


def _resize_(self: Tensor, *size: Any, memory_format: Any = None) -> Tensor:
    """PyTorch's ``resize_`` of older code (``buffer.resize_(n, m)``, then ``copy_``): the
    tensor takes the shape ``size`` and keeps its first numbers in order; where it grows it
    gets new memory, the new numbers zeros (PyTorch's are whatever the memory held).

    >>> import scratchgrad as sg
    >>> x = sg.arange(6.0)
    >>> x.resize_(2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    shape = new_shape("resize_", size)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if shape == self.shape:
        return self
    if not self.is_contiguous():  # PyTorch keeps the numbers in their order in memory
        raise RuntimeError(
            f"resize_: the tensor of shape {self.shape} is not contiguous, and PyTorch would "
            "keep its numbers in their order in memory; call .contiguous() first"
        )
    size = math.prod(shape)

    def resized(x: Tensor) -> Tensor:
        flat = x.reshape(-1)
        if size <= flat.shape[0]:
            return flat[:size].view(shape)
        return cat([flat, x.new_zeros(size - flat.shape[0])]).view(shape)

    return restride_(self, "resize_", resized)


def _resize_as_(self: Tensor, other: Tensor, memory_format: Any = None) -> Tensor:
    """``x.resize_(*other.shape)``, keeping ``x``'s dtype."""
    return self.resize_(other.shape)


Tensor.resize_, Tensor.resize_as_ = _resize_, _resize_as_

# ... and of the other elementwise names (the comparisons' in-place forms are below)
for _name in (
    "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "asinh", "atanh", "bitwise_and", "bitwise_left_shift", "bitwise_not",
    "bitwise_or", "bitwise_right_shift", "bitwise_xor", "copysign", "deg2rad", "digamma",
    "divide", "erfc", "erfinv", "fix", "fmod", "gcd", "heaviside", "i0", "igamma", "igammac",
    "lcm", "ldexp", "lgamma", "logit", "multiply", "mvlgamma", "nextafter", "polygamma",
    "rad2deg", "sgn", "sinc", "true_divide", "xlogy",
):  # fmt: skip
    setattr(Tensor, f"{_name}_", _in_place_form(_name))

_real_abs_ = _in_place_form("abs")


def _abs_(self: Tensor) -> Tensor:
    """``abs`` in place, of a real tensor only, as PyTorch's (|z| is real, a complex tensor
    would hold it as complex numbers)."""
    if self.array.dtype.kind == "c":
        raise RuntimeError("abs_: In-place abs is not supported for complex tensors.")
    return _real_abs_(self)


Tensor.abs_ = Tensor.absolute_ = _abs_

# the augmented assignments PyTorch computes in place (``done &= alive`` writes into ``done``,
# and so into the buffer it may be a view of), where Python would rebind to a new tensor
for _dunder, _name in (
    ("__iand__", "bitwise_and_"), ("__ior__", "bitwise_or_"), ("__ixor__", "bitwise_xor_"),
    ("__ilshift__", "bitwise_left_shift_"), ("__irshift__", "bitwise_right_shift_"),
    ("__imod__", "remainder_"), ("__ifloordiv__", "floor_divide_"), ("__ipow__", "pow_"),
):  # fmt: skip
    setattr(Tensor, _dunder, getattr(Tensor, _name))


def _compared_in_place(name: str) -> Callable:
    """``Tensor.<name>_`` of a comparison: 1 where it holds and 0 elsewhere, in this tensor's
    dtype. In a graph the result is tied to the old value and to ``other`` by nodes of zero
    gradient, as PyTorch's EqBackward1 (whose gradients are zeros, not None)."""
    op = getattr(Tensor, name)

    def compared(old: Tensor, other: Any) -> Tensor:
        out = op(old, other).to(old.dtype)
        if not backend.can_require_grad(out.array.dtype):  # an integer tensor stays out of graphs
            return out
        return _zero_gradient_to(out, old, other)

    def in_place(self: Tensor, other: Any) -> Tensor:
        return self._apply_(f"{name}_", lambda t: compared(t, other), other)

    in_place.__name__ = in_place.__qualname__ = f"{name}_"
    in_place.__doc__ = f"``{name}`` in place: 1 where it holds, 0 elsewhere, in this dtype."
    return in_place


for _name in (
    "eq", "ne", "lt", "le", "gt", "ge",
    "greater", "greater_equal", "less", "less_equal", "not_equal",
):  # fmt: skip
    setattr(Tensor, f"{_name}_", _compared_in_place(_name))


def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    """``float_power`` in place, on a float64 tensor only, as PyTorch's."""
    if self.array.dtype != backend.float64:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {torch_name(self.array.dtype)} but the "
            "operation's result requires dtype Double"
        )
    return self._apply_("float_power_", lambda t: t.float_power(exponent), exponent)


Tensor.float_power_ = _float_power_


def _no_fill_without_data(fill: Callable) -> Callable:
    """``fill`` (an in-place fill) doing nothing to a meta tensor, as PyTorch's: it has no
    data, and a module built on the meta device initialises its parameters with these."""

    @functools.wraps(fill)
    def filled(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if type(self.array) is MetaArray:
            return self
        return fill(self, *args, **kwargs)

    return filled


for _name in ("fill_", "uniform_", "normal_", "_filled", "bernoulli_"):
    setattr(Tensor, _name, _no_fill_without_data(getattr(Tensor, _name)))


class RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` takes the hook off again, and so
    does leaving a ``with`` block the handle opened, as PyTorch's.

    >>> import scratchgrad as sg
    >>> x = sg.ones(2, requires_grad=True)
    >>> with x.register_hook(lambda grad: grad * 10):
    ...     (2 * x).sum().backward()
    >>> (2 * x).sum().backward()
    >>> x.grad
    tensor([22., 22.])
    """

    _ids = itertools.count()  # each handle's ``id``, counted up as PyTorch's

    def __init__(self, owner: Any, attr: str, hook: Callable) -> None:
        self._owner, self._attr, self._hook = owner, attr, hook
        self._removed = False
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        """Take off this registration of the hook, once: a function registered twice stays
        on once after one of its handles is removed, as PyTorch's."""
        if self._removed:
            return
        self._removed = True
        hooks = getattr(self._owner, self._attr)
        for i in range(len(hooks) - 1, -1, -1):
            if hooks[i] is self._hook:
                setattr(self._owner, self._attr, hooks[:i] + hooks[i + 1 :])
                return

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def names_bad_arguments(function: Callable) -> Callable:
    """``function``, with PyTorch's TypeError ("linear(): argument 'input' (position 1) must be
    Tensor, not list") where an argument annotated ``Tensor`` (or a sequence of them) is
    something else. The arguments are looked at only once the call has failed with an
    AttributeError or TypeError, so a correct call costs the wrapper alone.

    A function declared with ``@autocast_policy`` keeps one wrapper, not two: this one also
    casts its arguments while autocast is on (a frame less on ``F.linear`` and the losses).

    The wrapper is written out with ``function``'s own parameters, not as ``(*args,
    **kwargs)``: packing the arguments into a tuple and a dict and unpacking them again cost a
    small network's step about 1.5% (callgrind, W1), for each layer and loss called.

    >>> import scratchgrad as sg
    >>> sg.cat([[1.0], [2.0]])
    Traceback (most recent call last):
    TypeError: cat(): argument 'tensors' (position 1) must be a sequence of Tensors, not list
    """
    policy = getattr(function, "autocast_policy", None)
    if policy is not None:
        function = function.__wrapped__
    signature = inspect.signature(function)
    parameters, arguments, defaults = _spelled_out(signature)
    scope = {
        "_function": function,
        "_policy": policy,
        "_autocast": _autocast_state,
        "_call_with_policy": call_with_policy,
        "_packed": _packed,
        "_name_bad_argument": functools.partial(_name_bad_argument, function, signature),
        **defaults,
    }
    # named as the function, so that a call with the wrong number of arguments says its name
    name = function.__name__ if function.__name__.isidentifier() else "checked"  # a lambda
    source = (
        f"def {name}({parameters}):\n"
        "    try:\n"
        "        if _policy is None or _autocast.dtype is None:\n"
        f"            return _function({arguments})\n"
        f"        return _call_with_policy(_function, _policy, *_packed({arguments}))\n"
        "    except (AttributeError, TypeError):\n"
        f"        _name_bad_argument(*_packed({arguments}))\n"
        "        raise\n"
    )
    # Its frames are filed under this file (not "<string>", which is also the file of a
    # user's `python -c` code): scratchgrad.jit's errors name the user's line, past them.
    filename = f"{__file__}:<{name} wrapper>"
    exec(compile(source, filename, "exec"), scope)  # noqa: S102  (made here, never from input)
    checked = functools.wraps(function)(scope[name])
    checked.autocast_policy = policy
    return checked


def _spelled_out(signature: inspect.Signature) -> tuple[str, str, dict[str, Any]]:
    """A signature as Python source: its parameter list (each default named
    ``_default_<parameter>``, no annotations), the arguments that pass each parameter on as it
    came, and those defaults by name.

    >>> _spelled_out(inspect.signature(lambda x, *ys, dim=0, **options: None))[:2]
    ('x, *ys, dim=_default_dim, **options', 'x, *ys, dim=dim, **options')
    """
    kinds, defaults, plain, arguments = inspect.Parameter, {}, [], []
    for parameter in signature.parameters.values():
        name, kind = parameter.name, parameter.kind
        if parameter.default is not parameter.empty:
            defaults[f"_default_{name}"] = parameter.default
            parameter = parameter.replace(default=_Source(f"_default_{name}"))
        plain.append(parameter.replace(annotation=parameter.empty))
        prefix = {kinds.VAR_POSITIONAL: "*", kinds.VAR_KEYWORD: "**"}.get(kind, "")
        arguments.append(f"{name}={name}" if kind is kinds.KEYWORD_ONLY else prefix + name)
    parameters = str(inspect.Signature(plain))[1:-1]  # inspect places any / and * itself
    return parameters, ", ".join(arguments), defaults


class _Source(str):
    """A name that inspect writes into a signature as it is (its repr is itself)."""

    def __repr__(self) -> str:
        return str(self)


def _packed(*args: Any, **kwargs: Any) -> tuple[tuple, dict]:
    return args, kwargs


def _name_bad_argument(function: Callable, signature: inspect.Signature, args, kwargs) -> None:
    """Raise PyTorch's TypeError naming the first argument of a failed call that is not the
    Tensor (or sequence of them) it is annotated as; return when every argument fits."""
    try:
        given = signature.bind(*args, **kwargs).arguments
    except TypeError:
        return  # a wrong call: Python's own message says it
    for position, (name, parameter) in enumerate(signature.parameters.items(), 1):
        if name in given and not _matches(parameter.annotation, given[name]):
            kind = type(given[name]).__name__
            raise TypeError(
                f"{function.__name__}(): argument '{name}' (position {position}) must be "
                f"{_described(parameter.annotation)}, not {kind}"
            ) from None


def _matches(annotation: Any, value: Any) -> bool:
    """Whether ``value`` fits a Tensor annotation (any other annotation always fits)."""
    if annotation == "Tensor":
        return isinstance(value, Tensor)
    if annotation == "Tensor | None":
        return value is None or isinstance(value, Tensor)
    if annotation == "Sequence[Tensor]":
        return isinstance(value, (list, tuple)) and builtins.all(
            isinstance(v, Tensor) for v in value
        )
    return True


def _described(annotation: str) -> str:
    return {"Tensor | None": "Tensor or None", "Sequence[Tensor]": "a sequence of Tensors"}.get(
        annotation, "Tensor"
    )


# ---- module-level functions -----------------------------------------------------------------


def _lerp_operands(start: Tensor, end: Any, weight: Any) -> tuple[Tensor, Tensor, Any]:
    """``start``, ``end`` and ``weight`` as ``torch.lerp`` takes them: ``start`` floating,
    ``end`` a tensor of its dtype, ``weight`` a number or a tensor of its dtype, but for a 0-d
    one, promoted with the others (a float64 one widens a 0-d ``start`` and ``end``, not one
    with dims); as PyTorch's, the dtypes are checked before the kind (RuntimeError, then its
    kernel's NotImplementedError)."""
    dtype = start.array.dtype
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp: end must be a Tensor, got {type(end).__name__}")
    if isinstance(weight, Tensor) and weight.ndim == 0:
        if end.dtype == dtype and weight.dtype != dtype:
            dtype = result_type_of(start, end, weight)
            start, end = start.to(dtype), end.to(dtype)
        weight = weight.to(dtype)
    elif not isinstance(weight, (Tensor, int, float)):
        raise TypeError(f"lerp: weight must be a number or a Tensor, got {type(weight).__name__}")
    for name, value in (("end", end), ("weight", weight)):
        if isinstance(value, Tensor) and value.dtype != dtype:
            raise RuntimeError(
                f"lerp: expected dtype {dtype} for {name} but got {value.dtype.name}"
            )
    if not backend.is_floating(start.array.dtype):
        raise NotImplementedError(f"lerp: needs floating point tensors, got {dtype}")
    return start, end, weight


@names_bad_arguments
def where(
    condition: Tensor, input: Any = None, other: Any = None, *, out: Any = None
) -> Tensor | tuple[Tensor, ...]:
    """``input`` where ``condition`` holds, else ``other`` (PyTorch's keywords); either may
    be a Python number. Without them: the indices where it holds, ``nonzero(condition,
    as_tuple=True)``. ``out`` as ``write_out`` says.

    >>> import scratchgrad as sg
    >>> sg.where(sg.tensor([True, False]), sg.tensor([1.0, 2.0]), 0.0)
    tensor([1., 0.])
    >>> sg.where(sg.tensor([[True, False], [False, True]]))
    (tensor([0, 1]), tensor([0, 1]))
    """
    x, y = input, other
    if x is None and y is None:
        if out is not None:  # (as PyTorch's where(condition))
            raise TypeError(
                "where(): where(condition) takes no out=, where(condition, input, other) does"
            )
        return condition.nonzero(as_tuple=True)
    if x is None or y is None:
        raise TypeError("where(): give both input and other, or neither (condition's indices)")
    if out is not None and not builtins.all(isinstance(t, Tensor) for t in (condition, x, y)):
        raise TypeError(  # (as PyTorch's where with out=)
            f"where(): with out=, condition, input and other must be Tensors, not "
            f"{type(condition).__name__}, {type(x).__name__} and {type(y).__name__}"
        )
    cond = condition
    if not isinstance(condition, Tensor):  # an array (of any device), or a list
        cond = Tensor._make(condition if backend.is_array(condition) else xp.asarray(condition))
    if cond.dtype == backend.uint8:  # a legacy mask: PyTorch still takes it, and warns
        warnings.warn(
            "where received a uint8 condition tensor. This behavior is deprecated and will be "
            "removed in a future version of PyTorch. Use a boolean condition instead.",
            UserWarning,
            stacklevel=stacklevel_outside(),
        )
        cond = cond != 0
    if cond.dtype != bool:  # PyTorch's RuntimeError for a tensor, its TypeError for a number
        error = RuntimeError if isinstance(condition, Tensor) else TypeError
        raise error(f"where: condition must be a bool tensor, got {cond.dtype.name}")
    result = where_node(binary.Where, cond, x, y)
    return result if out is None else write_out("where", result, out, (condition, input, other))


def where_node(node: type, cond: Tensor, x: Any, y: Any) -> Tensor:
    """``where(cond, x, y)`` for a bool ``cond``, its operands promoted as ``where``'s, by
    ``node``: ``Where``, or ``PiecewiseWhere`` for an activation's pieces."""
    x, y = python_number(x), python_number(y)  # NumPy scalars as Python numbers, as PyTorch's
    if isinstance(x, Tensor):
        x, y = x._operands(_beside(y, x.array.dtype) if type(y) in (int, float) else y)
        y = _rounded(y, x)
    elif isinstance(y, Tensor):
        y, x = y._operands(_beside(x, y.array.dtype) if type(x) in (int, float) else x)
        x = _rounded(x, y)
    else:  # two numbers: promoted as a 0-d tensor and a number (3 and 0.5 give float32)
        x, y = Tensor._from_data(x).to(cond.device)._operands(y)
    return node.apply(cond, x, y)


def einsum(*args: Any) -> Tensor:
    """Sums of products over the letters of ``equation``, as ``torch.einsum``: explicit
    (``"ij,jk->ik"``) or implicit (``"ij,jk"``: the letters used once, alphabetically)
    output, ``...`` for broadcast dims. A letter repeated within one operand takes the
    diagonal of its dims (``"ii->"``: the trace). PyTorch's sublist form gives each operand
    its subscripts as ints in ``[0, 52)`` (and ``...``), the output's last, if at all.

    >>> import scratchgrad as sg
    >>> sg.einsum("ij,j->i", sg.ones(2, 3), sg.tensor([1.0, 2.0, 3.0]))
    tensor([6., 6.])
    >>> sg.einsum("ii", sg.eye(3) * 2)
    tensor(6.)
    >>> sg.einsum(sg.ones(2, 3), [0, 1], sg.tensor([1.0, 2.0, 3.0]), [1], [0])
    tensor([6., 6.])
    """
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least "
            "one operand and its subscripts list"
        )
    equation, *operands = _einsum_equation(args) if isinstance(args[0], Tensor) else args
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    inputs, output = _einsum_letters(equation.replace(" ", ""), operands)
    operands, inputs = zip(*(_diagonals(t, s, i) for i, (t, s) in enumerate(zip(operands, inputs))))
    if _contracts(inputs, output):  # PyTorch computes those with bmm, which autocast lowers
        return _contraction(*operands, inputs=inputs, output=output)
    return _einsum(*operands, inputs=inputs, output=output)


def _einsum_equation(args: tuple) -> tuple:
    """``einsum``'s sublist form (``a, [0, 1], b, [1, 2], [0, 2]``) as its equation and the
    operands (``"AB,BC->AC", a, b``), as PyTorch reads it: 0 to 25 are A to Z, 26 to 51 a
    to z."""

    def letters(sublist: Any) -> str:
        return "".join(_einsum_letter(n) for n in sublist)

    equation = ",".join(letters(sublist) for sublist in args[1::2])
    if len(args) % 2:  # the output's subscripts come last
        return (f"{equation}->{letters(args[-1])}", *args[:-1:2])
    return (equation, *args[::2])


def _einsum_letter(n: Any) -> str:
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


def _einsum(*operands: Tensor, inputs: tuple, output: str) -> Tensor:
    dtype = _einsum_dtype(operands, inputs, output)
    return matmul.Einsum.apply(*(t.to(dtype) for t in operands), inputs=inputs, output=output)


@autocast_policy("lower")
def _contraction(*operands: Tensor, inputs: tuple, output: str) -> Tensor:
    """A contracting einsum: PyTorch's bmm, which autocast lowers (the dtype checks come after
    autocast's casts)."""
    return _einsum(*operands, inputs=inputs, output=output)


def _einsum_dtype(operands: tuple, inputs: tuple, output: str) -> Any:
    """The dtype of ``einsum``'s result, or its error, as PyTorch's einsum gives them: it
    takes the operands pairwise, left to right (its order without opt_einsum's path), each
    pair's letters summed over there by ``bmm``, which takes one dtype only, and the others
    multiplied by ``mul``, which promotes; a letter that only one operand of a pair still
    holds is summed out of it first (``sum``: integers give int64), as is a lone operand's.
    Dims of size 1 broadcast, so they are never contracted."""
    sizes = [dict(zip(letters, t.shape)) for letters, t in zip(inputs, operands)]
    letters = set("".join(inputs))
    summed = letters - set(output)
    if len(operands) == 1:
        return _sum_dtype(operands[0].dtype) if summed else operands[0].dtype
    held = {c: builtins.sum(s.get(c, 1) != 1 for s in sizes) for c in summed}
    (a, a_sizes), *rest = zip((t.dtype for t in operands), sizes)
    for b, b_sizes in rest:
        gone = set()  # the letters summed over at this pair
        for c in summed:
            in_a, in_b = a_sizes.get(c, 1) != 1, b_sizes.get(c, 1) != 1
            if in_a and in_b:
                held[c] -= 1
            if held[c] == 1 and (in_a or in_b):
                gone.add(c)
                held[c] = 0
                if not in_b:  # only a holds it: summed out of a alone, as from b below
                    a = _sum_dtype(a)
                elif not in_a:
                    b = _sum_dtype(b)
        if builtins.any(a_sizes.get(c, 1) != 1 and b_sizes.get(c, 1) != 1 for c in gone):
            swap = _bmm_swaps(a_sizes, b_sizes, letters, gone, output)
            _check_bmm_dtypes(*((b, a) if swap else (a, b)))
        else:
            a = promoted(a, b)
        a_sizes = {c: 1 if c in gone else builtins.max(a_sizes.get(c, 1), b_sizes.get(c, 1))
                   for c in {*a_sizes, *b_sizes}}  # fmt: skip
    return a


def _bmm_swaps(a_sizes: dict, b_sizes: dict, letters: set, gone: set, output: str) -> bool:
    """Whether PyTorch's einsum multiplies the pair as bmm(b, a): where the first of the
    equation's ``letters`` kept that a holds without b is after one that a lacks (in the
    order of the output, then the others alphabetically, capitals first)."""
    kept = sorted(letters - gone, key=lambda c: (c not in output, output.find(c), c))
    a_only = [a_sizes.get(c, 1) != 1 and b_sizes.get(c, 1) == 1 for c in kept]
    if not builtins.any(a_only) or builtins.all(a_only):
        return False
    return not a_only[0]


def _sum_dtype(dtype: Any) -> Any:
    return backend.int64 if dtype.kind in "biu" else dtype


def _check_bmm_dtypes(a: Any, b: Any) -> None:
    """PyTorch's bmm in einsum: not for bool (its kernel, chosen by the left operand's dtype,
    says so before any dtype check), and of one dtype."""
    if a.kind == "b":
        raise NotImplementedError(f"einsum: \"bmm\" not implemented for '{torch_name(a)}'")
    if a != b:
        raise RuntimeError(f"einsum: expected tensors of the same dtype, but got: {a} != {b}")


def _contracts(inputs: tuple, output: str) -> bool:
    """Whether a letter shared by two operands is summed over (a matrix product)."""
    letters = [set(s) for s in inputs]
    return any(
        c not in output and builtins.sum(c in s for s in letters) > 1 for c in set().union(*letters)
    )


def _diagonals(t: Tensor, letters: str, index: int) -> tuple[Tensor, str]:
    """Operand ``index`` of einsum and its ``letters`` with each letter repeated within them
    kept once, over the diagonal of its dims (a view, moved last as ``diagonal`` moves it)."""
    for letter in dict.fromkeys(letters):
        while letters.count(letter) > 1:
            first = letters.index(letter)
            second = letters.index(letter, first + 1)
            if t.shape[first] != t.shape[second]:
                raise RuntimeError(
                    f"einsum(): subscript {letter} is repeated for operand {index} but the sizes "
                    f"don't match, {t.shape[second]} != {t.shape[first]}"
                )
            t = t.diagonal(0, first, second)
            letters = letters[:first] + letters[first + 1 : second] + letters[second + 1 :] + letter
    return t, letters


def _einsum_letters(equation: str, operands: Sequence[Tensor]) -> tuple[tuple[str, ...], str]:
    """The equation's subscripts with ``...`` spelled out in unused letters (right-aligned, as
    broadcasting is) and the output made explicit, checked against the operands."""
    inputs, arrow, output = equation.partition("->")
    inputs = inputs.split(",")
    if len(inputs) != len(operands):
        raise RuntimeError(
            f"einsum: {equation!r} has {len(inputs)} operands' subscripts, got {len(operands)}"
        )
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in equation]
    widest = 0
    for i, (letters, t) in enumerate(zip(inputs, operands)):
        named = len(letters.replace("...", ""))
        if ("..." in letters and named > t.ndim) or ("..." not in letters and named != t.ndim):
            raise RuntimeError(
                f"einsum: subscripts {letters!r} do not fit operand {i} of shape {t.shape}"
            )
        if "..." in letters:
            widest = builtins.max(widest, t.ndim - named)
    ellipsis = "".join(spare[:widest])
    inputs = tuple(
        s.replace("...", ellipsis[widest - (t.ndim - len(s) + 3) :] if "..." in s else "")
        for s, t in zip(inputs, operands)
    )
    if not arrow:
        once = sorted(c for c in set("".join(inputs)) if "".join(inputs).count(c) == 1)
        output = ellipsis + "".join(c for c in once if c not in ellipsis)
    return inputs, output.replace("...", ellipsis)


def write_out(name: str, result: Any, out: Any, read: Sequence = ()) -> Any:
    """What PyTorch's ``out=`` arguments do: ``result`` (a tensor, or a tuple of them) written
    into ``out`` (a tensor, or as many), which is returned. ``out`` is resized to the result's
    shape (with PyTorch's warning when it held other elements) and the result cast into its
    dtype, never to a lower kind (no float into int); several outs (``values, indices``), and
    the out of an op of ``OUT_DTYPE_EXACT``, must have the results' dtypes, as PyTorch's. As
    PyTorch, no graph goes through ``out``: a result or an ``out`` that requires grad is
    refused while grad mode is on, but by the ops of ``OUT_WRITTEN_AS_BUFFER``, of
    ``OUT_COPIED`` (a recorded ``copy_``) and of ``OUT_WITHOUT_DERIVATIVE`` (an out that is
    not a leaf is written, and its backward raises).
    An ``out`` that shares only part of its memory with a tensor among ``read`` (the inputs,
    which the op's caller gives where PyTorch checks them: elementwise ops, joins, scans) is
    refused, as ``_refuse_partial_overlap`` says.

    >>> import scratchgrad as sg
    >>> buffer = sg.zeros(2)
    >>> sg.add(sg.ones(2), 1, out=buffer) is buffer, buffer
    (True, tensor([2., 2.]))
    """
    if _state.enabled and name in OUT_WRITTEN_AS_BUFFER:
        with no_grad():
            return write_out(name, result, out, read)
    several = isinstance(result, tuple)
    if several and (not isinstance(out, tuple | list) or len(out) != len(result)):
        raise TypeError(f"{name}(): argument 'out' must be a tuple of {len(result)} Tensors")
    pairs = list(zip(result, out)) if several else [(result, out)]
    for r, o in pairs:  # every out checked before any is written
        _check_out(name, r, o)
        whole = name in OUT_OVERLAP_REFUSED and o is pairs[0][1]  # (kthvalue's values only)
        for t in read:
            if isinstance(t, Tensor):
                _refuse_partial_overlap(name, o.array, t.array, whole)
        # PyTorch casts into one out, never into several (but for OUT_SEVERAL_CAST), nor for
        # the ops of OUT_DTYPE_EXACT
        exact = (several and name not in OUT_SEVERAL_CAST) or name in OUT_DTYPE_EXACT
        if exact and o.dtype != r.dtype:
            raise RuntimeError(
                f"{name}(): expected out tensor to have dtype {r.dtype.name}, but got "
                f"{o.dtype.name} instead"
            )
    for r, o in pairs:
        if o.shape != r.shape:
            if o.numel():
                warnings.warn(
                    f"{name}: an output with one or more elements was resized since it had "
                    f"shape {list(o.shape)}, which does not match the required output shape "
                    f"{list(r.shape)}",
                    UserWarning,
                    stacklevel=stacklevel_outside(),
                )
            o.resize_(r.shape)
        if name in OUT_WITHOUT_DERIVATIVE and o._records(r):
            o._record_in_place(name, functools.partial(_without_derivative, name), r)
        else:
            o.copy_(r)
    if not several:
        return out
    return type(result)(*out) if hasattr(result, "_fields") else tuple(out)


def _check_out(name: str, result: Tensor, out: Any) -> None:
    """Refuse an ``out`` that is no tensor, a graph through it, or a cast to a lower kind."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _state.enabled and (result.requires_grad or out.requires_grad) and _refused(name, out):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    if not can_cast(result.array.dtype, out.array.dtype):
        raise RuntimeError(
            f"{name}: result type {result.dtype.name} can't be cast to the desired output type "
            f"{out.dtype.name}"
        )


def _refused(name: str, out: Tensor) -> bool:
    """Whether PyTorch refuses the out= of ``name`` where a graph would go through it: but
    the ops that copy into it (a leaf that requires grad is refused by copy_ then), and those
    without a derivative, into an out that is not a leaf."""
    if name in OUT_WITHOUT_DERIVATIVE:
        return out.is_leaf and out.requires_grad
    return name not in OUT_COPIED


def _without_derivative(name: str, old: Tensor, value: Tensor) -> Tensor:
    """``value`` written over ``old`` by the out= of ``name``, whose backward raises."""
    message = f"derivative for aten::{name} is not implemented"
    return movement.WithoutDerivative.apply(old, value.to(old.dtype), message=message)


def _kept_without_derivative(x: Tensor, out: Tensor, op: str, error: type = RuntimeError):
    """``out``, made from ``x`` by PyTorch's ``op``, which has no derivative: in ``x``'s graph
    where it requires grad (so that a backward through it raises, as PyTorch's, instead of
    leaving its part of the gradient out), under PyTorch's name for the node."""
    if not (_state.enabled and x.requires_grad):
        return out
    if error is RuntimeError:  # (the autograd fallback's words and node)
        message, name = f"derivative for aten::{op} is not implemented", "NotImplemented"
    else:  # (a derivatives.yaml entry "not_implemented")
        message = f"the derivative for '{op}' is not implemented."
        name = "".join(part.capitalize() for part in op.strip("_").split("_")) + "Backward0"
    return movement.WithoutDerivative.apply(x, out, message=message, error=error, name=name)


def takes_out(function: Callable, elementwise: bool = False) -> Callable:
    """``function`` with PyTorch's ``out=`` keyword, as ``write_out`` says (the module
    functions of ``linalg``, ``fft`` and ``special``, and others); ``elementwise``: an ``out``
    partly overlapping a tensor argument is refused, as PyTorch's elementwise ops (and mode,
    median along a dim) refuse it.

    >>> import scratchgrad as sg
    >>> buffer = sg.zeros(2)
    >>> takes_out(sg.exp)(sg.zeros(2), out=buffer) is buffer
    True
    """

    @functools.wraps(function)
    def with_out(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return function(*args, **kwargs)
        result = without_autocast(function, *args, **kwargs)
        read = (*args, *kwargs.values()) if elementwise else ()
        return write_out(function.__name__, result, out, read)

    return with_out


def stacklevel_outside() -> int:
    """The ``stacklevel`` that points a warning at the first line outside scratchgrad, past
    however many of its functions and wrappers are between: ``warnings.warn(...,
    stacklevel=stacklevel_outside())`` in the function that warns."""
    level, frame = 2, sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return level


_PACKAGE = os.path.dirname(__file__)


@names_bad_arguments
@autocast_policy("promote")  # on PyTorch's CPU autocast promote list
def cat(
    tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None, out: Any = None
) -> Tensor:
    """Join tensors along an existing dim (``axis`` is NumPy's name for it). As PyTorch's, a
    1-d empty tensor joins tensors of any shape, adding nothing but its dtype; ``out`` as
    ``write_out`` says.

    >>> import scratchgrad as sg
    >>> sg.cat([sg.ones(1, 2), sg.tensor([])]).tolist()
    [[1.0, 1.0]]
    """
    if not tensors:  # (a ValueError in PyTorch's cat, a RuntimeError in its stack)
        raise ValueError("cat: expected a non-empty list of tensors")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = promoted(dtype, t.dtype)
    like = next((t for t in tensors if t.shape != (0,)), tensors[0])
    dim = dim if axis is None else axis
    if like.shape == (0,):  # only 1-d empty tensors: PyTorch reads no dim, and joins them
        dim = 0
    if like.ndim > 0:  # an empty [0] becomes an empty block of the others' shape
        d = wrap_dim(dim, like.ndim)
        empty = (*like.shape[:d], 0, *like.shape[d + 1 :])
        tensors = [t.reshape(empty) if t.shape == (0,) else t for t in tensors]
    tensors = [t.to(dtype) for t in tensors]
    ndim = tensors[0].ndim
    if builtins.any(t.ndim != ndim for t in tensors):
        raise RuntimeError(
            f"cat: tensors must have the same number of dims, got "
            f"{[tuple(t.shape) for t in tensors]}"
        )
    if ndim == 0:
        raise RuntimeError("cat: zero-dimensional tensor cannot be concatenated")
    result = movement.Cat.apply(*tensors, dim=wrap_dim(dim, ndim))
    return result if out is None else _joined_out("cat", result, out, tensors)


def _joined_out(name: str, result: Tensor, out: Any, tensors: Sequence[Tensor]) -> Tensor:
    """``write_out`` of cat and stack, whose out of a lower kind is PyTorch's TypeError."""
    if isinstance(out, Tensor) and not can_cast(result.array.dtype, out.array.dtype):
        raise TypeError(
            f"{name}(): input types can't be cast to the desired output type {out.dtype.name}"
        )
    return write_out(name, result, out, tensors)


@names_bad_arguments
@autocast_policy("promote")  # on PyTorch's CPU autocast promote list
def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Any = None) -> Tensor:
    """Join tensors along a new dim (``out`` as ``write_out`` says)."""
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    wrap_dim(dim, tensors[0].ndim + 1)  # (checked before the shapes, as PyTorch's)
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise RuntimeError(
            f"stack: expects tensors of equal shape, got {[tuple(t.shape) for t in tensors]}"
        )
    # (cat without its autocast policy: stack's has run, and its out= is not autocast)
    result = named_backward(
        cat.__wrapped__([t.unsqueeze(dim) for t in tensors], dim), "StackBackward0"
    )
    return result if out is None else _joined_out("stack", result, out, tensors)


@names_bad_arguments
def hstack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """Join tensors column-wise: along dim 0 if the first is 1-D (0-d ones count as 1-D), else
    along dim 1, as ``torch.hstack`` (``out`` as cat's).

    >>> import scratchgrad as sg
    >>> sg.hstack([sg.tensor([1, 2]), sg.tensor(3)])
    tensor([1, 2, 3])
    """
    tensors = [_at_least(t, 1) for t in _nonempty("hstack", tensors)]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1, out=out)


@names_bad_arguments
def vstack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """Join tensors row-wise (along dim 0, a 1-D one as a row), as ``torch.vstack`` (``out``
    as cat's).

    >>> import scratchgrad as sg
    >>> sg.vstack([sg.tensor([1, 2]), sg.tensor([[3, 4]])])
    tensor([[1, 2],
            [3, 4]])
    """
    return cat([_at_least(t, 2) for t in _nonempty("vstack", tensors)], 0, out=out)


def column_stack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """Join tensors as columns (a 0-d or 1-D one as one column), as ``torch.column_stack``
    (``out`` as cat's).

    >>> import scratchgrad as sg
    >>> sg.column_stack([sg.tensor([1, 2]), sg.tensor([[3], [4]])])
    tensor([[1, 3],
            [2, 4]])
    """
    tensors = _nonempty("column_stack", tensors)
    return cat([t.reshape(-1, 1) if t.ndim < 2 else t for t in tensors], 1, out=out)


row_stack = vstack


def atleast_1d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least one dim (a 0-d one as one entry), as ``torch.atleast_1d``:
    one tensor back for one given, else a tuple (also for a list of tensors)."""
    return _each_at_least(1, tensors)


def atleast_2d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least two dims (leading 1s added), as ``torch.atleast_2d``."""
    return _each_at_least(2, tensors)


def atleast_3d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least three dims, as ``torch.atleast_3d``: (n,) as (1, n, 1) and
    (m, n) as (m, n, 1).

    >>> import scratchgrad as sg
    >>> sg.atleast_3d(sg.ones(2, 3)).shape
    scratchgrad.Size([2, 3, 1])
    """
    return _each_at_least(3, tensors)


def _each_at_least(ndim: int, tensors: tuple) -> Tensor | tuple[Tensor, ...]:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_at_least(t, ndim) for t in tensors[0])
    out = tuple(_at_least(t, ndim) for t in tensors)
    return out[0] if len(out) == 1 else out


def rsub(input: Tensor, other: Any, *number_alpha: Any, alpha: float = 1) -> Tensor:
    """``other - alpha * input``, as ``torch.rsub``: ``other.sub(input, alpha=alpha)`` with
    ``sub``'s checks of ``alpha`` and bools, which a number ``other`` also takes as the third
    positional argument (PyTorch's overload for a number).

    >>> import scratchgrad as sg
    >>> sg.rsub(sg.tensor([1, 2]), 1, 2)
    tensor([-1, -3])
    """
    other, alpha = _number_other_and_alpha("rsub", other, number_alpha, alpha)
    if isinstance(other, Tensor):
        return other.sub(input, alpha=alpha)
    _refuse_bool_subtraction(input, other)
    return other - _scaled(other, input, alpha)  # (alpha checked against the result's dtype)


def unravel_index(indices: Tensor | int, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of each flat index (taken modulo its size, so
    -1 is the last entry, as PyTorch's), one int64 tensor per dim, as
    ``torch.unravel_index``.

    >>> import scratchgrad as sg
    >>> sg.unravel_index(sg.tensor([4, 7]), (2, 4))
    (tensor([1, 1]), tensor([0, 3]))
    """
    flat = indices if isinstance(indices, Tensor) else Tensor._from_data(indices)
    if backend.is_floating(flat.array.dtype) or flat.array.dtype == backend.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {flat.dtype.name}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if builtins.any(n < 0 for n in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coordinates, rest = [], flat % builtins.max(math.prod(shape), 1)
    for n in reversed(shape):
        coordinates.append(rest % n if n else rest * 0)
        rest = rest // n if n else rest
    return tuple(c.to(backend.int64) for c in reversed(coordinates))


@names_bad_arguments
def dstack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """Join tensors depth-wise (along dim 2, a 1-D one of size n as (1, n, 1), a 2-D one as
    (m, n, 1)), as ``torch.dstack`` (``out`` as cat's).

    >>> import scratchgrad as sg
    >>> sg.dstack([sg.tensor([1, 2]), sg.tensor([3, 4])]).shape
    scratchgrad.Size([1, 2, 2])
    """
    return cat([_at_least(t, 3) for t in _nonempty("dstack", tensors)], 2, out=out)


def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids of 0-d or 1-D tensors, as ``torch.meshgrid``: with ``indexing="ij"``
    output ``i`` varies along dim ``i``; ``"xy"`` swaps the first two dims (NumPy's and
    Matlab's Cartesian order). Without ``indexing``, "ij" and a warning, as PyTorch. The grids
    are expanded views: their gradients sum back to the inputs.

    >>> import scratchgrad as sg
    >>> xs, ys = sg.meshgrid(sg.tensor([1, 2, 3]), sg.tensor([4, 5]), indexing="xy")
    >>> xs
    tensor([[1, 2, 3],
            [1, 2, 3]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = _nonempty("meshgrid", tensors)
    if indexing is None:
        warnings.warn(
            "meshgrid: pass indexing='ij' or 'xy'; PyTorch will require it in an upcoming "
            "release (the default is 'ij')",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid: expected 0-D or 1-D tensors, got shape {tuple(t.shape)}")
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError(
            f"meshgrid expects all tensors to have the same dtype, got {[t.dtype for t in tensors]}"
        )
    n = len(tensors)
    order = [1, 0, *range(2, n)] if indexing == "xy" and n > 1 else list(range(n))  # own inverse
    vectors = [tensors[i].reshape(-1) for i in order]
    shape = tuple(v.shape[0] for v in vectors)
    grids = [
        v.reshape([-1 if j == i else 1 for j in range(n)]).expand(shape)
        for i, v in enumerate(vectors)
    ]
    return tuple(grids[i] for i in order)


def broadcast_shapes(*shapes: int | Sequence[int]) -> Size:
    """The shape tensors of ``shapes`` broadcast to, as ``torch.broadcast_shapes``.

    >>> import scratchgrad as sg
    >>> sg.broadcast_shapes((2, 1), (3,))
    scratchgrad.Size([2, 3])
    """
    shapes = [(shape,) if isinstance(shape, int) else tuple(shape) for shape in shapes]
    try:
        return Size(xp.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(
            f"broadcast_shapes: shapes {shapes} cannot be broadcast together"
        ) from None


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape (views), as
    ``torch.broadcast_tensors``.

    >>> import scratchgrad as sg
    >>> [t.shape for t in sg.broadcast_tensors(sg.zeros(2, 1), sg.zeros(3))]
    [scratchgrad.Size([2, 3]), scratchgrad.Size([2, 3])]
    """
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"broadcast_tensors(): expected Tensor as element {i}, but got {type(t).__name__}"
            )
    shapes = [tuple(t.shape) for t in tensors]
    try:
        shape = xp.broadcast_shapes(*shapes)
    except ValueError:
        raise RuntimeError(
            f"broadcast_tensors: shapes {shapes} cannot be broadcast together"
        ) from None
    return tuple(t.expand(shape) for t in tensors)


@names_bad_arguments
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one entry of each 1-D tensor, one row each, as
    ``torch.cartesian_prod``.

    >>> import scratchgrad as sg
    >>> sg.cartesian_prod(sg.tensor([1, 2]), sg.tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


@takes_out
def tensordot(a: Tensor, b: Tensor, dims: int | Sequence[Sequence[int]] = 2) -> Tensor:
    """Sums of products over the dims ``dims`` names (the last ``dims`` of ``a`` and first of
    ``b``, or a pair of lists), as ``torch.tensordot``: one matrix product.

    >>> import scratchgrad as sg
    >>> sg.tensordot(sg.ones(2, 3), sg.ones(3, 4), dims=1).shape
    scratchgrad.Size([2, 4])
    """
    check_same_dtype("tensordot", a, b)
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
    dims_a = [wrap_dim(d, a.ndim) for d in dims_a]
    dims_b = [wrap_dim(d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db}"
            )
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    kept_a, kept_b = [a.shape[d] for d in free_a], [b.shape[d] for d in free_b]
    inner = math.prod(a.shape[d] for d in dims_a)
    # sizes, not -1: a size of 0 leaves -1 undecided
    left = a.permute(free_a + dims_a).reshape(math.prod(kept_a), inner)
    right = b.permute(dims_b + free_b).reshape(inner, math.prod(kept_b))
    return (left @ right).reshape(kept_a + kept_b)


@autocast_policy("float32")  # in PyTorch's CPU autocast list: a bfloat16 x1 meets float32 x2
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and each of ``x2``
    (..., R, M), as ``torch.cdist``: (..., P, R). Computed from the differences in every case
    (PyTorch's matrix-product shortcut for p = 2 on more than 25 rows rounds differently).

    >>> import scratchgrad as sg
    >>> sg.cdist(sg.tensor([[0.0, 0.0]]), sg.tensor([[3.0, 4.0], [1.0, 0.0]]))
    tensor([[5., 1.]])
    """
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X{1 if x1.ndim < 2 else 2} got: "
            f"{builtins.min(x1.ndim, x2.ndim)}D"
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    check_same_dtype("cdist", x1, x2)
    if not backend.is_floating(x1.dtype):
        raise RuntimeError(
            f"cdist only supports floating-point dtypes, X1 got: {torch_name(x1.dtype)}"
        )
    return distance_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


@names_bad_arguments
def trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, as ``torch.trapezoid``:
    over sample points ``x`` (1-D along ``dim``, or broadcasting with ``y``) or spaced ``dx``
    apart (1 when neither is given). Integer inputs give floats.

    >>> import scratchgrad as sg
    >>> sg.trapezoid(sg.tensor([1.0, 2.0, 3.0]), dx=0.5)
    tensor(2.)
    >>> sg.trapezoid(sg.tensor([1.0, 2.0, 3.0]), sg.tensor([0.0, 1.0, 3.0]))
    tensor(6.5000)
    """
    spacing, dim = _trapezoid_spacing("trapezoid", y, x, dx, dim)
    if y.shape[dim] == 0:
        return y.new_zeros(_without(y.shape, dim))
    if isinstance(spacing, Tensor):
        return (spacing * _pair_sums(y, dim)).sum(dim) / 2.0
    # PyTorch's formula for even spacing, kept so that the results round as its do
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * spacing


trapz = trapezoid


@names_bad_arguments
def cumulative_trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor:
    """The running integrals of ``y`` along ``dim`` by the trapezoidal rule, one entry fewer
    than ``y`` along ``dim``, as ``torch.cumulative_trapezoid`` (``x`` and ``dx`` as in
    ``trapezoid``).

    >>> import scratchgrad as sg
    >>> sg.cumulative_trapezoid(sg.tensor([1.0, 2.0, 3.0]))
    tensor([1.5000, 4.0000])
    """
    spacing, dim = _trapezoid_spacing("cumulative_trapezoid", y, x, dx, dim)
    if isinstance(spacing, Tensor):
        return (spacing * _pair_sums(y, dim) / 2.0).cumsum(dim)
    return (spacing / 2.0 * _pair_sums(y, dim)).cumsum(dim)


def _pair_sums(y: Tensor, dim: int) -> Tensor:
    """``y[i] + y[i + 1]`` along ``dim``: the trapezoids' parallel sides."""
    length = builtins.max(y.shape[dim] - 1, 0)
    return y.narrow(dim, y.shape[dim] - length, length) + y.narrow(dim, 0, length)


def _trapezoid_spacing(
    name: str, y: Tensor, x: Tensor | None, dx: float | None, dim: int
) -> tuple[Tensor | float, int]:
    """The widths of the trapezoids (a tensor from ``x``, or the number ``dx``) and ``dim``
    wrapped, after PyTorch's checks of the arguments."""
    if x is not None and dx is not None:
        raise TypeError(f"{name}(): pass either the sample points x or the spacing dx, not both")
    if y.ndim == 0:
        raise IndexError(f"{name}: Dimension specified as {dim} but tensor has no dimensions")
    dim = wrap_dim(dim, y.ndim)
    if y.dtype == bool or (x is not None and x.dtype == bool):
        which = "`y`" if x is None else "`x` or `y`"
        raise RuntimeError(f"{name}: received a bool input for {which}, but bool is not supported")
    if x is None:
        if isinstance(dx, bool) or not isinstance(dx, (numbers.Real, type(None))):
            raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
        return (1 if dx is None else dx), dim
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(
                f"{name}: There must be one `x` value for each sample point: x has "
                f"{x.shape[0]}, y has {y.shape[dim]} along dim {dim}"
            )
        x = x.reshape([x.shape[0] if d == dim else 1 for d in range(y.ndim)])
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    return x.diff(dim=dim), dim


@names_bad_arguments
def gradient(
    input: Tensor,
    *,
    spacing: Any = 1,
    dim: int | Sequence[int] | None = None,
    edge_order: int = 1,
) -> tuple[Tensor, ...]:
    """The derivatives of ``input`` along each of ``dim`` (every dim when None) estimated from
    its samples, as ``torch.gradient``: central differences inside, one-sided differences of
    ``edge_order`` 1 or 2 at the ends. The samples lie ``spacing`` apart (a number, or a list
    of one number per dim), or at the coordinates in a list of 1-D tensors, one per dim
    (uneven spacing). Integer inputs give floats. Composed from slices, so differentiable
    twice, in the coordinates too. Unlike PyTorch, which then returns a tensor of the wrong
    size, coordinates of another length than ``input`` along their dim raise.

    >>> import scratchgrad as sg
    >>> sg.gradient(sg.tensor([1.0, 4.0, 9.0, 16.0]), spacing=2.0)
    (tensor([1.5000, 2.0000, 3.0000, 3.5000]),)
    >>> x = sg.tensor([0.0, 1.0, 3.0])
    >>> sg.gradient(x**2, spacing=[x], edge_order=2)  # exact for a parabola
    (tensor([0., 2., 6.]),)
    """
    dims, spacings = _gradient_arguments(input, spacing, dim, edge_order)
    return tuple(
        (_uneven_gradient if isinstance(h, Tensor) else _even_gradient)(input, d, h, edge_order)
        for d, h in zip(dims, spacings)
    )


def _gradient_arguments(
    input: Tensor, spacing: Any, dim: Any, edge_order: int
) -> tuple[tuple[int, ...], list]:
    """The dims of ``gradient`` wrapped and one spacing per dim (a number or a tensor of
    coordinates), after PyTorch's checks in its order: the types, then the sizes."""
    if isinstance(edge_order, bool) or not isinstance(edge_order, int):
        raise TypeError(f"gradient(): edge_order must be an int, not {type(edge_order).__name__}")
    given = None if dim is None else list(dim) if isinstance(dim, (list, tuple)) else [dim]
    count = input.ndim if given is None else len(given)
    spacings = _spacing_list(spacing, count)
    if input.dtype == backend.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if len(spacings) != count and given is None:
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {input.ndim}', since dim argument was not given, but got "
            f"a list of length {len(spacings)}"
        )
    if len(spacings) != count:
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
            f"arguments to have the same length, but got a spacing argument of length "
            f"{len(spacings)} and a dim argument of length {count}."
        )
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if input.ndim == 0 and given:
        raise IndexError(f"Dimension specified as {given[0]} but tensor has no dimensions")
    dims = tuple(range(input.ndim)) if given is None else _dims(given, input.ndim, unique=True)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1, "
                f"but dim {d} of a tensor of shape {tuple(input.shape)} has size "
                f"{input.shape[d]} (edge_order={edge_order})"
            )
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor):
            _check_coordinates(h, d, input.shape[d])
    return dims, spacings


def _spacing_list(spacing: Any, count: int) -> list:
    """``spacing`` as a list: a number (1 for None) repeated ``count`` times, or the list
    given, of numbers or of tensors (not both, as PyTorch's overloads)."""
    if isinstance(spacing, Tensor) and spacing.ndim == 0:  # PyTorch reads it as a number
        spacing = spacing.item()
    if spacing is None or isinstance(spacing, numbers.Number):
        return [1 if spacing is None else spacing] * count
    if not isinstance(spacing, (list, tuple)):
        raise TypeError(
            "gradient(): spacing must be a number or a list of numbers or of 1-D tensors, "
            f"not {type(spacing).__name__}"
        )
    kind = Tensor if any(isinstance(h, Tensor) for h in spacing) else numbers.Number
    for i, h in enumerate(spacing):
        if not isinstance(h, kind):
            raise TypeError(
                f"gradient(): expected {'Tensor' if kind is Tensor else 'a number'} as element "
                f"{i} in spacing, but got {type(h).__name__}"
            )
    return list(spacing)


def _check_coordinates(coordinates: Tensor, dim: int, size: int) -> None:
    """The coordinates of the samples along ``dim`` are 1-D, one per sample."""
    if coordinates.ndim != 1:
        raise RuntimeError(
            "torch.gradient expected each element of spacing to have one dimension, but got an "
            f"element with {coordinates.ndim} dimensions!"
        )
    if coordinates.shape[0] != size:
        raise RuntimeError(
            f"torch.gradient expected the coordinates along dim {dim} to have {size} entries, "
            f"as the input, but got {coordinates.shape[0]}"
        )


def _sample(x: Tensor, dim: int, i: int) -> Tensor:
    """The ``i``-th slice of ``x`` along ``dim`` (counted from the end when negative), the dim
    kept (of size 1)."""
    return x.narrow(dim, i % x.shape[dim], 1)


def _even_gradient(input: Tensor, dim: int, h: float, edge_order: int) -> Tensor:
    """``gradient`` along ``dim`` of samples ``h`` apart, by PyTorch's formulas (kept so that
    the results round as its do)."""
    s = functools.partial(_sample, input, dim)
    inside = input.narrow(dim, 2, input.shape[dim] - 2) - input.narrow(dim, 0, input.shape[dim] - 2)
    if edge_order == 1:
        first, last = (s(1) - s(0)) / h, (s(-1) - s(-2)) / h
    else:  # the slope at the end of the parabola through the three samples nearest it
        first = (s(0) * -1.5 + s(1) * 2 - s(2) * 0.5) / h
        last = (s(-3) * 0.5 + s(-2) * -2 + s(-1) * 1.5) / h
    return cat([first, inside / h / 2, last], dim)


def _uneven_gradient(input: Tensor, dim: int, coordinates: Tensor, edge_order: int) -> Tensor:
    """``gradient`` along ``dim`` of samples at ``coordinates``: the slope at each sample of
    the parabola through it and its two neighbours (at the ends, of the line through the two
    end samples or of the parabola through three), by PyTorch's formulas."""
    n, dx = input.shape[dim], coordinates.diff()
    shape = [-1 if d == dim else 1 for d in range(input.ndim)]
    dx1, dx2 = dx[:-1], dx[1:]
    before = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    middle = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    after = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    inside = (
        before * input.narrow(dim, 0, n - 2)
        + middle * input.narrow(dim, 1, n - 2)
        + after * input.narrow(dim, 2, n - 2)
    )
    s = functools.partial(_sample, input, dim)
    if edge_order == 1:
        first, last = (s(1) - s(0)) / dx[0], (s(-1) - s(-2)) / dx[-1]
    else:  # the weights of the end samples, nearest first; the first end's are negated
        near, mid, far = _end_weights(dx[0], dx[1])
        first = -near * s(0) + -mid * s(1) + -far * s(2)
        near, mid, far = _end_weights(dx[-1], dx[-2])
        last = far * s(-3) + mid * s(-2) + near * s(-1)
    return cat([first, inside, last], dim)


def _end_weights(h1: Tensor, h2: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The weights of the end sample and the next two in the slope, at the end, of the
    parabola through them: ``h1`` the distance from the end sample to the next, ``h2`` from
    that one to the third (the slope at the last sample; at the first, negated)."""
    return (
        (2 * h1 + h2) / (h1 * (h1 + h2)),
        -(h1 + h2) / (h1 * h2),
        h1 / (h2 * (h1 + h2)),
    )


@names_bad_arguments
def var_mean(
    input: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: int | None = None,
) -> tuple[Tensor, Tensor]:
    """``(input.var(...), input.mean(...))`` over the same dims, as ``torch.var_mean``.

    >>> import scratchgrad as sg
    >>> sg.var_mean(sg.tensor([1.0, 2.0, 3.0]))
    (tensor(1.), tensor(2.))
    """
    return _spread_and_mean("var_mean", input, dim, unbiased, keepdim, correction)


@names_bad_arguments
def std_mean(
    input: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: int | None = None,
) -> tuple[Tensor, Tensor]:
    """``(input.std(...), input.mean(...))`` over the same dims, as ``torch.std_mean``.

    >>> import scratchgrad as sg
    >>> sg.std_mean(sg.tensor([[1.0, 3.0], [5.0, 9.0]]), dim=1, correction=0)
    (tensor([1., 2.]), tensor([2., 7.]))
    """
    return _spread_and_mean("std_mean", input, dim, unbiased, keepdim, correction)


@takes_out
@names_bad_arguments
def searchsorted(
    sorted_sequence: Tensor,
    input: Tensor | float,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """Where each entry of ``input`` would go in the innermost dim of ``sorted_sequence`` to
    keep it sorted, as ``torch.searchsorted``: the first such place, or the last with
    ``right=True`` (``side="right"``). ``sorted_sequence`` is 1-D, or N-D with its first N-1
    dims those of ``input``; ``sorter`` gives the order that sorts it, if it is not sorted.

    >>> import scratchgrad as sg
    >>> sg.searchsorted(sg.tensor([1, 3, 3, 5]), sg.tensor([3, 6]))
    tensor([1, 4])
    >>> sg.searchsorted(sg.tensor([1, 3, 3, 5]), 3, right=True)
    tensor(3)
    """
    right = _searches_right(right, side)
    boundaries = sorted_sequence.array
    if boundaries.ndim == 0:
        raise RuntimeError(
            "searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"
        )
    # both are compared in their promoted dtype, as PyTorch's: a number searched in float32
    # boundaries is rounded to float32 first, and 2.5 in int64 boundaries stays 2.5
    common = result_dtype(sorted_sequence, input)
    if common.kind == "c":  # (PyTorch's kernel has no complex version)
        raise NotImplementedError(f"searchsorted(): does not support complex input ({common})")
    if common == backend.bool_:
        raise NotImplementedError(
            "searchsorted(): not implemented for bool boundaries and input, as PyTorch's"
        )
    values = (  # (-1 in uint8 boundaries wraps to 255, as there)
        input.array
        if isinstance(input, Tensor)
        else namespace(boundaries).asarray(input).astype(common)
    )
    if not isinstance(input, Tensor) and boundaries.ndim != 1:
        raise RuntimeError(
            "searchsorted(): input value can be a scalar only when boundaries tensor dimension "
            f"is 1, but got boundaries of shape {tuple(boundaries.shape)}"
        )
    if boundaries.ndim > 1 and (
        values.ndim != boundaries.ndim or values.shape[:-1] != boundaries.shape[:-1]
    ):
        raise RuntimeError(
            "searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
            f"of boundaries and input must match, but got boundaries of shape "
            f"{tuple(boundaries.shape)} and input of shape {tuple(values.shape)}"
        )
    batched = vmapped("_searchsorted", sorted_sequence, input, sorter)
    if batched is not None:  # the checks above saw one member's shapes
        return batched(sorted_sequence, input, sorter, out_int32=out_int32, right=right)
    order = None if sorter is None else _checked_sorter(sorter, boundaries.shape)
    # (the casts happen inside the noted call: a jit replay makes them again from its inputs)
    out_dtype = backend.int32 if out_int32 else backend.int64
    return Tensor._make(_call(_search, boundaries, values, common, right, order, out_dtype))


@takes_out
@names_bad_arguments
def bucketize(
    input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False, right: bool = False
) -> Tensor:
    """The bucket of each entry of ``input`` among the 1-D, increasing ``boundaries``, as
    ``torch.bucketize``: ``i`` with ``boundaries[i - 1] < x <= boundaries[i]``, or
    ``boundaries[i - 1] <= x < boundaries[i]`` with ``right=True``.

    >>> import scratchgrad as sg
    >>> sg.bucketize(sg.tensor([1, 3, 6]), sg.tensor([1, 3, 5]))
    tensor([0, 1, 3])
    >>> sg.bucketize(sg.tensor([1, 3, 6]), sg.tensor([1, 3, 5]), right=True)
    tensor([1, 2, 3])
    """
    if boundaries.ndim != 1:
        raise RuntimeError(
            f"bucketize: boundaries tensor must be 1 dimension, but got shape "
            f"{tuple(boundaries.shape)}"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@takes_out
@names_bad_arguments
def isin(
    elements: Tensor | float,
    test_elements: Tensor | float,
    *,
    assume_unique: bool = False,
    invert: bool = False,
) -> Tensor:
    """Whether each entry of ``elements`` is one of ``test_elements`` (not, with ``invert``),
    as ``torch.isin``; either may be a number. Each entry is compared with every test entry
    (``assume_unique`` changes nothing), so vmap and jit see plain comparisons.

    >>> import scratchgrad as sg
    >>> sg.isin(sg.tensor([1, 2, 3]), sg.tensor([2, 5]))
    tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected elements or test_elements to be a Tensor, got numbers")
    for name, given in (("elements", elements), ("test_elements", test_elements)):
        if not isinstance(given, (Tensor, numbers.Number)):
            raise TypeError(
                f"isin(): {name} must be a Tensor or a number, not {type(given).__name__}"
            )
        if isinstance(given, bool) or getattr(given, "dtype", None) == backend.bool_:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    # a number is compared as == compares it with the tensor, as PyTorch's: 0.1 stays float64
    # beside a float64 tensor, -1 is 255 beside a uint8 one
    if not isinstance(test_elements, Tensor):
        found = elements == test_elements
    elif not isinstance(elements, Tensor):
        found = (test_elements == elements).any()
    else:
        found = (elements.unsqueeze(-1) == test_elements.reshape(-1)).any(-1)
    return ~found if invert else found


@names_bad_arguments
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How many times each value ``0, 1, ...`` occurs in the 1-D, non-negative integer
    ``input`` (at least ``minlength`` counts), as ``torch.bincount``; with ``weights``, the sum
    of the weights of each value's entries (float32 weights give float32, others float64).

    >>> import scratchgrad as sg
    >>> sg.bincount(sg.tensor([0, 2, 2, 3]))
    tensor([1, 0, 2, 1])
    >>> sg.bincount(sg.tensor([0, 2, 2]), weights=sg.tensor([0.5, 1.0, 2.0]), minlength=4)
    tensor([0.5000, 0.0000, 3.0000, 0.0000])
    """
    x = input.array
    if x.dtype.kind not in "iu":
        raise NotImplementedError(
            f"bincount: not implemented for {x.dtype.name} tensors; give an integer one, as "
            "PyTorch "
            "requires"
        )
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, but got {minlength}")
    xp = namespace(x)
    if x.shape == (0,):  # int64 zeros, whatever the weights, as PyTorch's (it looks no further)
        return Tensor._make(xp.zeros(minlength, dtype=backend.int64))
    if x.ndim != 1 or (x.size and int(x.min()) < 0):
        raise RuntimeError(
            f"bincount only supports 1-d non-negative integral inputs, got shape "
            f"{tuple(input.shape)}" + ("" if x.ndim != 1 else f" with minimum {int(x.min())}")
        )
    if weights is not None and weights.shape != input.shape:
        raise RuntimeError(
            "bincount: weights should be 1-d and have the same length as input, but got shapes "
            f"{weights.shape} and {input.shape}"
        )
    if capture_hook.recorder is not None:
        capture_hook.recorder.refuse("bincount() (its shape depends on the values)")
    if weights is None:
        return Tensor._make(xp.bincount(x, minlength=minlength).astype(backend.int64))
    w = weights.array
    dtype = backend.float32 if w.dtype == backend.float32 else backend.float64
    out = xp.bincount(x, weights=w.astype(backend.float64), minlength=minlength)
    return Tensor._make(out.astype(dtype))


@names_bad_arguments
def histc(
    input: Tensor, bins: int = 100, min: float = 0, max: float = 0, *, out: Any = None
) -> Tensor:
    """A histogram of the entries of ``input`` in ``bins`` equal bins from ``min`` to ``max``,
    as ``torch.histc``; entries outside are left out, and ``min == max`` means the entries'
    own range. Floating inputs only; the counts have ``input``'s dtype.

    >>> import scratchgrad as sg
    >>> sg.histc(sg.tensor([1.0, 2.0, 1.0, 4.0]), bins=4)
    tensor([2., 1., 0., 1.])
    >>> sg.histc(sg.tensor([1.0, 2.0, 1.0, 4.0]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    if not backend.is_floating(input.array.dtype):
        raise NotImplementedError(
            f"histc: not implemented for {input.array.dtype} tensors; give a floating one "
            "(x.float()), as PyTorch requires"
        )
    if bins <= 0:
        raise RuntimeError(f"histc: bins must be > 0, but got {bins}")
    if isinstance(out, Tensor) and xp.may_share_memory(out.array, input.array):
        # PyTorch's kernel takes the range, then zeroes out, and only then counts the input:
        # where out lies over it, it counts zeros there
        min, max = _histogram_range(input.array, min, max)
        array = input.array  # (as it was: out=input itself is resized)
        write_out("histc", Tensor._make(xp.zeros(bins, input.array.dtype)), out)
        return write_out("histc", Tensor._make(_call(_histogram, array, bins, min, max)), out)
    result = Tensor._make(_call(_histogram, input.array, bins, min, max))
    return result if out is None else write_out("histc", result, out)


# ---- helpers --------------------------------------------------------------------------------


def _spread_and_mean(name: str, x: Tensor, dim, unbiased, keepdim, correction):
    """The variance (var_mean) or standard deviation (std_mean) and the mean of ``x`` over
    ``dim``."""
    if not backend.is_floating(x.array.dtype) and not x.is_complex():
        raise RuntimeError(f"{name}: only supports floating point dtypes, got {x.dtype.name}")
    dim, correction = _variance_arguments(name, dim, unbiased, keepdim, correction)
    out = x._variance(name, dim, None, keepdim, correction)
    return out, _running_mean(x, _reduced_dims(dim, x.array.ndim), keepdim)


def _running_mean(x: Tensor, dims: tuple | None, keepdim: bool) -> Tensor:
    """``x.mean(dims, keepdim)`` as var_mean's: PyTorch's running (Welford) mean, ``m += (x -
    m) / k``, turns NaN once an infinite entry is followed by another entry (inf - inf), so it
    stays infinite only where a slice's one infinity is its last entry. Added as NaN or 0,
    which leaves the mean's gradient. Of complex numbers the real and imaginary parts apart,
    as PyTorch's: a NaN or infinite real part leaves the imaginary part's mean alone."""
    if x.is_complex():
        parts = (_running_mean(part, dims, keepdim) for part in (x.real, x.imag))
        return complex_ops.Complex.apply(*parts)
    mean = reduce.RunningMean.apply(x, dim=dims, keepdim=keepdim)
    if x.numel() == 0:
        return mean
    return mean + _welford_nans(x, mean, dims)


def _welford_nans(x: Tensor, mean: Tensor, dims: tuple | None) -> Tensor:
    """NaN where ``mean`` is infinite but a running mean over ``x`` is NaN, else 0: tensor ops,
    not a branch on the values, so that a jitted step replays them."""
    reduced = tuple(range(x.ndim)) if dims is None else dims
    infinite = x.isinf().movedim(reduced, tuple(range(-len(reduced), 0)))
    rows = infinite.reshape(*infinite.shape[: x.ndim - len(reduced)], -1)
    count = rows.sum(-1)
    running = ((count == 1) & rows[..., -1]) | (count == 0)  # (0: a finite sum's overflow)
    nan = mean.isinf() & ~running.reshape(mean.shape)
    return where(nan, math.nan, 0.0).to(mean.dtype)


def _variance_arguments(name: str, dim, unbiased, keepdim, correction) -> tuple:
    """``(dim, correction)`` of a call of var (std, var_mean, std_mean) as PyTorch's three
    overloads take it: ``(unbiased)``, ``(dim, unbiased, keepdim)`` and ``(dim, *, correction,
    keepdim)``. A bool first is ``unbiased`` (var(x, False)), with no other argument;
    ``unbiased`` (None: not given) is a bool, never given with ``correction``. Any other
    call matches none of them: PyTorch's TypeError."""
    if isinstance(dim, bool):
        if unbiased is not None or keepdim is not False or correction is not None:
            raise TypeError(
                f"{name}(): received an invalid combination of arguments: a bool first is "
                "'unbiased', which takes no other argument"
            )
        dim, unbiased = None, dim
    if unbiased is not None and (type(unbiased) is not bool or correction is not None):
        raise TypeError(
            f"{name}(): received an invalid combination of arguments: 'unbiased' must be a "
            f"bool, and is not given with 'correction' (got unbiased={unbiased!r}, "
            f"correction={correction!r})"
        )
    return dim, (0 if unbiased is False else 1) if correction is None else correction


def _nonempty(name: str, tensors: Any) -> Sequence[Tensor]:
    """PyTorch's checks of a list-of-tensors argument: a list or tuple of them, not empty."""
    if not isinstance(tensors, (list, tuple)) or not builtins.all(
        isinstance(t, Tensor) for t in tensors
    ):
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be a sequence of Tensors, not "
            f"{type(tensors).__name__}"
        )
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def _at_least(t: Tensor, ndim: int) -> Tensor:
    """``torch.atleast_{1,2,3}d``: leading 1s up to 2 dims, then (for 3) a trailing 1; ``t``
    itself if it has ``ndim`` dims, as PyTorch's (which unsqueezes all but a 0-d tensor)."""
    shape = (1,) * (builtins.min(ndim, 2) - t.ndim) + t.shape
    shape += (1,) * (ndim - len(shape))
    if shape == t.shape:
        return t
    return (
        t.reshape(shape) if t.ndim == 0 else named_backward(t.reshape(shape), "UnsqueezeBackward0")
    )


def _without(shape: tuple, dim: int) -> tuple:
    return shape[:dim] + shape[dim + 1 :]


def _split_points(indices_or_sections: Any, size: int) -> list[int]:
    """Where ``tensor_split`` cuts a dim of ``size``: the given indices, or the ends of all but
    the last of ``sections`` near-equal parts."""
    given = indices_or_sections
    if isinstance(given, Tensor):
        if given.dtype != backend.int64:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{given.dtype.name}"
            )
        if given.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {given.ndim} dims"
            )
        given = given.tolist()
    if isinstance(given, (list, tuple)):
        return [operator.index(i) for i in given]
    if not isinstance(given, int):
        raise TypeError(
            "tensor_split(): indices_or_sections must be an int, a sequence of ints or an int64 "
            f"tensor, not {type(given).__name__}"
        )
    if given <= 0:
        raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {given}")
    small, extra = divmod(size, given)
    return list(itertools.accumulate(small + (i < extra) for i in range(given - 1)))


def _product(x: Tensor, y: Tensor) -> Tensor:
    """``matmul`` once its operands are checked (the ops built on it check under their own
    names, once, and call this)."""
    if type(x) is not Tensor and x.is_sparse:  # torch.mm(sparse, x): its own
        return type(x).matmul(x, y)
    x, y = x._operands(y)
    if x.array.dtype.kind == "b":
        _refuse_bool_product(x, y)
    if x.array.ndim > 1 and y.array.ndim > 1:
        return matmul.MatMul.apply(x, y)
    if x.ndim == 0 or y.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dim, got {x.shape}, {y.shape}")
    out = matmul.MatMul.apply(
        x.unsqueeze(0) if x.ndim == 1 else x, y.unsqueeze(-1) if y.ndim == 1 else y
    )
    if y.ndim == 1:
        out = out.squeeze(-1)
    return out.squeeze(-2 if y.ndim > 1 else -1) if x.ndim == 1 else out


def _refuse_bool_product(x: Tensor, y: Tensor) -> None:
    """PyTorch has no bool kernel for matrix products (NumPy's would be an AND-OR product):
    its error names the kernel its shapes reach, unless an operand is empty (no kernel runs)."""
    if x.array.size and y.array.size and x.ndim and y.ndim:
        kernel = {1: "addmv_impl_cpu", 2: "addmm_impl_cpu_"}.get(y.ndim, "bmm")
        kernel = "dot" if x.ndim == y.ndim == 1 else kernel
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _mm(x: Tensor, y: Tensor) -> Tensor:
    _check_ndim("mm", 2, x, y)
    return _product(x, y)


def _bmm(x: Tensor, y: Tensor) -> Tensor:
    _check_ndim("bmm", 3, x, y)
    if x.shape[0] != y.shape[0]:
        raise RuntimeError(f"bmm: batch sizes differ: shapes {x.shape} and {y.shape}")
    return _product(x, y)


def _mv(x: Tensor, y: Tensor) -> Tensor:
    _check_ndim("mv", 2, x)
    _check_ndim("mv", 1, y)
    return _product(x, y)


def _check_ndim(name: str, ndim: int, *tensors: Tensor) -> None:
    for t in tensors:
        if t.ndim != ndim:
            raise RuntimeError(f"{name}: expected {ndim}-D tensors, got shape {t.shape}")


def check_same_dtype(name: str, x: Tensor, *others: Any) -> None:
    """Matrix products (and the ops built on PyTorch's kernels for them: einsum, cdist,
    bilinear, addmm, a loss's class weights) take tensors of one dtype: a float64 operand is
    an error, not promoted (nor is an integer one cast to float). ``None`` (no bias) passes.

    >>> import scratchgrad as sg
    >>> check_same_dtype("mm", sg.ones(2), sg.ones(2, dtype=sg.float64))
    Traceback (most recent call last):
    RuntimeError: mm: expected tensors of the same dtype, but got: float32 != float64
    """
    dtype = x.array.dtype
    for y in others:
        # `is not` first: the common case (one dtype) costs one identity test per operand
        if isinstance(y, Tensor) and y.array.dtype is not dtype and y.array.dtype != dtype:
            raise RuntimeError(
                f"{name}: expected tensors of the same dtype, but got: {x.dtype.name} != "
                f"{y.dtype.name}"
            )


def _scaled_sum(x: Tensor, product: Tensor, beta: float, alpha: float) -> Tensor:
    """``beta * x + alpha * product`` (addmm, baddbmm); beta=0 ignores ``x``, NaNs too."""
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (x if beta == 1 else x * beta)


def float_argument(name: str, argument: str, value: Any) -> float:
    """``value`` read as PyTorch reads an argument declared ``float``: a real Python or NumPy
    number (a bool too), or a 0-d real tensor that does not require grad; else its TypeError.

    >>> import scratchgrad as sg
    >>> float_argument("logit", "eps", sg.tensor(0.5)), float_argument("logit", "eps", True)
    (0.5, 1.0)
    """
    if isinstance(value, Tensor):
        if value.ndim == 0 and not value.requires_grad and not value.is_complex():
            return float(value.item())
    elif isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"{name}(): argument '{argument}' must be float, not {type_name(value)}")


def number_argument(name: str, argument: str, value: Any) -> Any:
    """``value`` read as PyTorch reads an argument declared ``Number`` (``alpha``): a Python
    or NumPy number, or a 0-d tensor that does not require grad (its item); else its
    TypeError.

    >>> import scratchgrad as sg
    >>> number_argument("add", "alpha", sg.tensor(2)), number_argument("add", "alpha", 0.5)
    (2, 0.5)
    """
    if not _reads_as_number(value):
        kind = type(value).__name__
        raise TypeError(f"{name}(): argument '{argument}' must be Number, not {kind}")
    return value.item() if isinstance(value, Tensor) else value


def _reads_as_number(value: Any) -> bool:
    """Whether PyTorch reads ``value`` as a ``Number``: a Python or NumPy number, or a 0-d
    tensor that does not require grad."""
    if isinstance(value, Tensor):
        return value.ndim == 0 and not value.requires_grad
    return isinstance(value, numbers.Number)


def refuse_cast(name: str, result: Any, into: Any) -> None:
    """PyTorch's error for an in-place op whose result type does not cast to the tensor's by
    kind (float into int, int64 into uint8 too)."""
    if not can_cast(result, into):
        raise RuntimeError(
            f"{name}: result type {result} can't be cast to the desired output type {into}"
        )


def _check_bools(name: str, **flags: Any) -> None:
    """PyTorch's TypeError for a flag that is no bool (``stable=1``, ``descending="yes"``),
    which would otherwise be read as its truth value."""
    for flag, value in flags.items():
        if type(value) is not bool:
            raise TypeError(f"{name}(): argument '{flag}' must be bool, not {type_name(value)}")


def _sort_order(array, dim: int, descending: bool, stable: bool = True):
    """Indices that sort ``array`` along ``dim``. Stably, in both directions: for a descending
    order the reversed array is sorted ascending and the result reversed, which keeps ties in
    their original order (NaN, sorted last ascending, comes first descending, as in PyTorch).
    Not ``stable``: ties in PyTorch's CPU order (``cpu_order.sorted_indices``)."""
    xp = namespace(array)
    if not descending:
        order = xp.argsort(array, axis=dim, kind="stable")
    else:
        n = array.shape[dim]
        order = xp.flip(n - 1 - xp.argsort(xp.flip(array, dim), axis=dim, kind="stable"), dim)
    # PyTorch sorts a long 1-d integer tensor ascending by radix sort, which is stable
    radix = array.ndim == 1 and array.dtype.kind in "iu" and array.size >= 32768
    if stable or (radix and not descending):
        return order
    return _ties_as_torch(array, dim, order, lambda row: cpu_order.sorted_indices(row, descending))


def _ties_as_torch(array: Any, dim: int, indices: Any, pick: Callable, every_row=False) -> Any:
    """``indices`` (along ``dim`` of ``array``, from a stable sort) with the rows that hold
    ties (or all, ``every_row``) picked as PyTorch's CPU kernels pick: ``pick`` takes a row's
    (value, index) pairs to its indices (see ``cpu_order.redo_rows``). Only for a NumPy
    array of at most ``cpu_order.MOST_ENTRIES`` entries: the kernels' steps run as Python
    loops (a sort of 1M float32 normals, whose ties are many, took 3.3 s instead of 0.09 s),
    and PyTorch promises no order among ties (nor do its CUDA kernels share the CPU's)."""
    if type(array) is not ndarray or not 0 < array.size <= cpu_order.MOST_ENTRIES:
        return indices
    if not indices.size:  # (topk's k = 0)
        return indices
    values, moved = xp.moveaxis(array, dim, -1), xp.moveaxis(indices, dim, -1)
    rows = values.reshape(-1, values.shape[-1])
    redone = cpu_order.redo_rows(rows, moved.reshape(len(rows), -1), pick, every_row)
    return indices if redone is None else xp.moveaxis(redone.reshape(moved.shape), -1, dim)


def _searches_right(right: bool, side: str | None) -> bool:
    """searchsorted's ``right`` and ``side`` as one flag; opposite settings raise."""
    if side is None:
        return right
    if side not in ("left", "right"):
        raise RuntimeError(f"searchsorted(): side can only be 'left' or 'right' but got {side!r}")
    if right and side == "left":
        raise RuntimeError(
            "searchsorted(): side and right can't be set to opposites, got side of left while "
            "right was True"
        )
    return side == "right"


def _checked_sorter(sorter: Tensor, shape: tuple) -> Any:
    """``sorter``'s array, once it is an int64 permutation index of ``shape``'s innermost dim."""
    order = sorter.array
    if order.dtype != backend.int64:
        raise RuntimeError(
            f"searchsorted(): sorter must be an int64 tensor, but got {order.dtype.name}"
        )
    if order.shape != shape:
        raise RuntimeError(
            f"searchsorted(): boundary and sorter must have the same size, but got boundaries of "
            f"shape {tuple(shape)} and sorter of shape {tuple(order.shape)}"
        )
    if order.size and (int(order.min()) < 0 or int(order.max()) >= shape[-1]):
        raise RuntimeError(f"searchsorted(): sorter index out of range for size {shape[-1]}")
    return order


def _search(
    boundaries: Any, values: Any, common: Any, right: bool, order: Any, out_dtype: Any
) -> Any:
    """searchsorted on arrays: each row of ``boundaries`` (in the order ``order`` gives)
    searched for the matching row of ``values`` (every value, for 1-D boundaries), both
    compared in the dtype ``common``; the places in ``out_dtype``.

    PyTorch's binary search, run on all values at once, one halving per step: it moves right
    where ``not (boundary >= value)`` (``>`` for ``right``), so a NaN boundary or value sends
    it right, and boundaries with NaN anywhere, or out of order, give PyTorch's answers.
    (NumPy's searchsorted sorts NaN last, and narrows each search by the previous value's
    answer, so it answers otherwise there.)
    """
    xp, n = namespace(boundaries), boundaries.shape[-1]
    boundaries, values = boundaries.astype(common, copy=False), values.astype(common, copy=False)
    if order is not None:
        boundaries = xp.take_along_axis(boundaries, order, axis=-1)
    if {boundaries.dtype, values.dtype} & {backend.float16, backend.bfloat16}:
        boundaries, values = boundaries.astype(xp.float32), values.astype(xp.float32)
    rows = boundaries.reshape(math.prod(boundaries.shape[:-1]), n)
    # every value searches the one row of 1-D boundaries; else each row its own values
    queries = values.reshape(len(rows), -1 if boundaries.ndim == 1 else values.shape[-1])
    low = xp.zeros(queries.shape, dtype=backend.int64)
    high = xp.full(queries.shape, n, dtype=backend.int64)
    for _ in range(n.bit_length()):  # each step leaves at most half of every range
        middle = low + ((high - low) >> 1)
        at = xp.take_along_axis(rows, xp.minimum(middle, n - 1), axis=1)  # a done search: n
        goes_right = ~(at > queries) if right else ~(at >= queries)
        low, high = (
            xp.where(goes_right, xp.minimum(middle + 1, high), low),
            xp.where(goes_right, high, middle),
        )
    return low.reshape(values.shape).astype(out_dtype, copy=False)


def _histogram(array: Any, bins: int, low: float, high: float) -> Any:
    """histc on an array: in ``_histogram_range``, bins found as PyTorch does, ``(x - low) *
    bins / (high - low)`` rounded down, with ``high`` itself in the last bin."""
    xp = namespace(array)
    x = _counted(array)
    low, high = _histogram_range(array, low, high)
    x = x[(x >= low) & (x <= high)]
    position = ((x - low) * bins / (high - low)).astype(backend.int64)
    counts = xp.bincount(xp.minimum(position, bins - 1), minlength=bins)
    return counts.astype(array.dtype)


def _counted(array: Any) -> Any:
    """The entries histc counts: flat, float16 and bfloat16 in float32."""
    x = array.reshape(-1)
    return x.astype(namespace(array).float32) if x.dtype.itemsize < 4 else x


def _histogram_range(array: Any, low: float, high: float) -> tuple:
    """histc's range: ``array``'s own where ``low == high`` (widened by one each way where
    that is a point too), checked as PyTorch's."""
    x = _counted(array)
    low, high = x.dtype.type(low), x.dtype.type(high)
    if low == high and x.size:
        low, high = x.min(), x.max()
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"histc: range of [{low}, {high}] is not finite")
    if low > high:
        raise RuntimeError(f"histc: max must be larger than min, but got min {low}, max {high}")
    return low, high


class Size(tuple):
    """A shape, as ``torch.Size``: a tuple of ints that prints as ``scratchgrad.Size([2, 3])``
    and counts its entries with ``numel()``; its slices, sums and repeats are Sizes too.
    ``Tensor.size()`` returns one.

    >>> import scratchgrad as sg
    >>> sg.zeros(2, 3).size()
    scratchgrad.Size([2, 3])
    >>> sg.Size([2, 3]).numel(), sg.Size([2, 3])[1:], sg.Size([2]) + (4,)
    (6, scratchgrad.Size([3]), scratchgrad.Size([2, 4]))
    """

    __slots__ = ()

    def __new__(cls, sizes: Sequence[int] = ()) -> Size:
        sizes = tuple(sizes)
        for i, size in enumerate(sizes):
            if not hasattr(type(size), "__index__"):
                raise TypeError(
                    f"scratchgrad.Size() takes an iterable of 'int' (item {i} is "
                    f"'{type(size).__name__}')"
                )
        return super().__new__(cls, map(operator.index, sizes))

    def numel(self) -> int:
        """The number of entries a tensor of this shape holds."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"scratchgrad.Size({list(self)})"

    def __getitem__(self, index: Any) -> Any:
        item = tuple.__getitem__(self, index)
        return _size(item) if isinstance(index, slice) else item

    def __add__(self, other: tuple) -> Size:
        return _size(tuple.__add__(self, other))

    def __radd__(self, other: tuple) -> Size:
        return _size(other + tuple(self))

    def __mul__(self, times: int) -> Size:
        return _size(tuple.__mul__(self, times))

    __rmul__ = __mul__

    def __reduce__(self) -> tuple:
        return Size, (tuple(self),)


_size = functools.partial(tuple.__new__, Size)  # a Size of ints, unchecked: Tensor.size()


def _given_once(name: str, keyword: str, args: tuple, value: Any) -> tuple:
    """The sizes passed to ``name`` as ``args`` (ints or one sequence) or as ``keyword``'s
    ``value``; neither or both is PyTorch's TypeError (an empty sequence is a size: ``()``)."""
    if value is None:
        if not args:
            raise TypeError(f'{name}() missing 1 required positional arguments: "{keyword}"')
        return args
    if args:
        raise TypeError(f"{name}() got multiple values for argument '{keyword}'")
    return (value,)


def _steps_0(array: Any) -> bool:
    """Whether ``array`` repeats its entries along a dim (an expanded tensor): then a reshape
    that merges that dim with the repeats of ``repeat`` may need no copy. (False for vmap's
    batched arrays, whose strides are not read.)"""
    if not backend.is_array(array):
        return False
    return builtins.any(step == 0 and n > 1 for step, n in zip(array.strides, array.shape))


def _count(dims: int | Sequence[int]) -> int:
    """How many dims ``dims`` (an int or a sequence) names."""
    return 1 if isinstance(dims, int) else len(dims)


def as_shape(args: tuple) -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return args if type(args) is tuple else tuple(args)


def _stride_order(stride: tuple, shape: tuple, a: int, b: int) -> int:
    """1 where dim ``a`` lies outside dim ``b`` in memory, -1 inside, 0 if that is unknown (a
    stride of 0), as PyTorch's ``dim_order`` compares: equal strides put the larger dim out."""
    if stride[a] == 0 or stride[b] == 0:
        return 0
    if stride[a] == stride[b]:
        return 0 if _no_less(shape[b], shape[a]) else 1
    return -1 if _no_less(stride[b], stride[a]) else 1


def _dims_in_memory(stride: tuple, shape: tuple) -> tuple[int, ...]:
    """The dims from outermost to innermost by ``stride``, sorted as PyTorch's ``dim_order``
    and ``infer_dense_strides`` sort them (see ``_stride_order``)."""
    order = list(reversed(range(len(shape))))  # sorted innermost first, as PyTorch sorts
    for i in range(1, len(order)):  # an insertion sort, whose ties keep their places
        j = i
        for k in reversed(range(i)):
            comparison = _stride_order(stride, shape, order[k], order[j])
            if comparison > 0:
                order[k], order[j] = order[j], order[k]
                j = k
            elif comparison < 0:
                break
    return tuple(reversed(order))


def _channels_last_order(ndim: int) -> tuple:
    """The dims of a 4-D (5-D) tensor from innermost to outermost in a channels-last layout."""
    return (1, *range(ndim - 1, 1, -1), 0)


def _channels_last_dense(stride: tuple, shape: tuple) -> bool:
    """Whether a 4-D (5-D) tensor lies in memory as channels-last (N, H, W, C) without gaps,
    as PyTorch's ``is_contiguous(memory_format=channels_last)``: dims of size 1 are skipped,
    and an empty tensor is not special."""
    expected = 1
    for dim in _channels_last_order(len(shape)):
        if shape[dim] != 1:
            if stride[dim] != expected:
                return False
            expected *= shape[dim]
    return True


def _strides_like_channels_last(stride: tuple, shape: tuple) -> bool:
    """PyTorch's ``is_channels_last_strides_2d`` (``_3d``): whether the strides of a 4-D (5-D)
    tensor rise in channels-last order, which ``suggest_memory_format`` (and so ``to``'s
    decision to copy) reads; ambiguous cases (no channels' stride, a dim of size 0, N111)
    count as row-major, as PyTorch's."""
    least = 0
    if stride[1] == 0:
        return False
    for d in _channels_last_order(len(shape)):
        if shape[d] == 0 or stride[d] < least or (d == 0 and least == stride[1]):
            return False
        least = stride[d] * shape[d] if shape[d] > 1 else stride[d]
    return True


def _no_less(a: int, b: int) -> bool:
    """PyTorch's ``ge`` of dim_order: 0 is below everything, a multiple is not less."""
    return b == 0 or (a != 0 and (a >= b or a % b == 0))


def _int_tuple(name: str, argument: str, values: Any, position: int) -> tuple[int, ...]:
    """``values`` (a list or tuple of ints) as a tuple, or PyTorch's TypeError naming the op,
    the argument and its ``position`` (counted from 1, after ``self`` for a method). As
    PyTorch's parser, the first entry is checked before any is read (a bool is refused there
    only), then each is read in turn (``_int_entry``), each refusal in its own words."""
    expected = f"{name}(): argument '{argument}' (position {position}) must be tuple of ints"
    if not isinstance(values, (list, tuple)):  # (a range, an array, a tensor: PyTorch's too)
        raise TypeError(f"{expected}, not {type_name(values)}")
    ints = []
    for i, value in enumerate(values):
        entry = _int_entry(value)
        if i == 0 and (entry is None or isinstance(value, bool)):
            raise TypeError(f"{expected}, but found element of type {type_name(value)} at pos 0")
        if entry is None:
            raise TypeError(
                f"{name}(): argument '{argument}' failed to unpack the object at pos {i + 1} "
                f'with error "type must be tuple of ints,but got {type_name(value)}"'
            )
        ints.append(entry)
    return tuple(ints)


def _int_entry(value: Any) -> int | None:
    """``value`` read as an int as PyTorch's parser reads one (anything ``operator.index``
    takes, or an integer tensor of one entry), None where it refuses it; a bool tensor of one
    entry passes its check but fails its read, with its RuntimeError."""
    if isinstance(value, Tensor):
        if value.array.size != 1 or value.array.dtype.kind not in "iub":
            return None
        if value.array.dtype.kind == "b":
            raise RuntimeError(
                "Expected scalar.isIntegral( false) to be true, but got false.  (Could this "
                "error message be improved?  If so, please report an enhancement request to "
                "PyTorch.)"
            )
    try:
        return operator.index(value)
    except TypeError:  # (a float, a NumPy float or bool, an array of more than one entry...)
        return None


def strided_arguments(name: str, size: Any, stride: Any, offset: Any, first: int = 1) -> tuple:
    """``as_strided``'s ``size``, ``stride`` and ``storage_offset`` (None: the tensor's own)
    as ints, or PyTorch's TypeError naming the op ``name`` and the argument's position,
    ``size``'s being ``first``."""
    size = _int_tuple(name, "size", size, first)
    stride = _int_tuple(name, "stride", stride, first + 1)
    if offset is None:
        return size, stride, None
    entry = None if isinstance(offset, bool) else _int_entry(offset)
    if entry is None:
        raise TypeError(
            f"{name}(): argument 'storage_offset' (position {first + 2}) must be int, not "
            f"{type_name(offset)}"
        )
    return size, stride, entry


def _comparable(name: str, other: Any) -> Any:
    """``other`` for ``x.eq(other)``: unlike ``x == None`` (False, as Python compares objects),
    PyTorch's methods take only a tensor or a number."""
    if other is None or isinstance(other, str):
        raise TypeError(f"{name}(): expected a tensor or a number, got {type(other).__name__}")
    return other


def new_shape(name: str, size: tuple) -> tuple[int, ...]:
    """``as_shape(size)``, the shape of a new tensor made by the factory ``name``: a negative
    size raises PyTorch's RuntimeError (NumPy's is a ValueError).

    >>> new_shape("zeros", ((2, 3),))
    (2, 3)
    """
    shape = as_shape(size)
    negative = next((n for n in shape if n < 0), None)
    if negative is not None:
        raise RuntimeError(
            f"{name}: trying to create a tensor with negative dimension {negative}: {list(shape)}"
        )
    return shape


def _dims(dim: Any, ndim: int, unique: bool = False) -> tuple[int, ...] | None:
    """Normalise a dim or tuple of dims to non-negative ints, range-checked with PyTorch's
    IndexError; None means all. A 0-d tensor accepts 0 and -1, which name no dim: ().
    ``unique``: a dim listed twice raises (reductions).

    >>> _dims(-1, 3), _dims((0, -2), 3), _dims(-1, 0)
    ((2,), (0, 1), ())
    """
    if dim is None:
        return None
    if type(dim) is int and 0 <= dim < ndim:  # the common case, first
        return (dim,)
    dims = wrap_dims(dim if isinstance(dim, (tuple, list)) else (dim,), ndim)
    if unique and len(set(dims)) != len(dims):
        repeated = next(d for d in dims if dims.count(d) > 1)
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    return () if ndim == 0 else dims


def check_keepdim(op: str, keepdim: Any) -> None:
    """PyTorch's TypeError for a ``keepdim`` that is no bool (1, None), which would otherwise be
    read as its truth value."""
    if type(keepdim) is not bool:
        raise TypeError(f"{op}(): argument 'keepdim' must be bool, not {type_name(keepdim)}")


def _one_dim(op: str, dim: Any) -> Any:
    """``dim`` of an op along one dim (softmax): PyTorch's TypeError for a tuple, list, bool or
    None, which ``_dims`` would read as several dims, or all."""
    if type(dim) is not int and (dim is None or isinstance(dim, (bool, tuple, list))):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    return dim


def _refuse_empty_extreme(name: str, shape: tuple, dim: Any) -> None:
    """PyTorch's errors for the largest (smallest) of no values: over all entries of an empty
    tensor, or over a dim of size 0 (the first such in ``dim`` as given, checked before a
    repeated dim is, as PyTorch's)."""
    dims = () if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:
        raise RuntimeError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
            "the reduction dim with the 'dim' argument."
        )
    for d in dims:
        if shape[wrap_dim(d, len(shape))] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _reduced_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """``_dims`` for a reduction (repeats refused), where PyTorch reads an empty list of dims
    as all of them: ``x.sum(())`` is ``x.sum()``.

    >>> _reduced_dims((), 2), _reduced_dims([-1], 2)
    (None, (1,))
    """
    return _dims(dim, ndim, unique=True) or None


def wrap_dim(dim: Any, ndim: int) -> int:
    """One dim, normalised to ``[0, ndim)`` and range-checked as PyTorch does (a 0-d tensor
    takes 0 and -1, both normalised to 0)."""
    if type(dim) is not int:
        if type(dim) is bool:  # an int to Python, not to PyTorch
            raise TypeError("dim must be an int, got bool")
        try:
            dim = operator.index(dim)  # NumPy ints and 0-d integer tensors too, not floats
        except TypeError:
            raise TypeError(f"dim must be an int, got {type(dim).__name__}") from None
    size = builtins.max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-size}, {size - 1}], but got "
            f"{dim})"
        )
    return dim % size


def wrap_dims(dims: Sequence, ndim: int) -> tuple[int, ...]:
    """``wrap_dim`` of each of a list of dims. As PyTorch's argument parser, which checks the
    type of a list's first entry only, a bool after it is taken as the dim 0 or 1."""
    return tuple(wrap_dim(int(d) if i and type(d) is bool else d, ndim) for i, d in enumerate(dims))


def _refuse_bool_power(x: Tensor, y: Any) -> None:
    """PyTorch's pow kernel has no bool version: bools to a bool tensor's power, or a bool
    tensor to a bool tensor's, raise (``x`` and ``y`` as ``_operands`` gives them)."""
    if _bools(x, y):
        raise NotImplementedError("pow: \"pow\" not implemented for 'Bool'")


def _refuse_bool_division(x: Tensor, y: Any, name: str, kernel: str) -> None:
    """PyTorch's integer division kernels have no bool version (``True // True`` raises)."""
    if _bools(x, y):
        raise NotImplementedError(f"{name}: \"{kernel}_cpu\" not implemented for 'Bool'")


def _bools(x: Tensor, y: Any) -> bool:
    """Whether both operands of a binary op, as ``_operands`` gives them, are bools."""
    if x.array.dtype != backend.bool_:
        return False
    return type(y) is bool or (isinstance(y, Tensor) and y.array.dtype == backend.bool_)


def _check_divisor(name: str, divisor: Any, dividend: Any) -> None:
    """Integer division by zero raises as PyTorch's does (NumPy would give 0 and a warning);
    ``divisor`` is an integer array or a Python int. An empty ``dividend`` divides nothing
    (its result is empty whatever the divisor), and raises nothing, as PyTorch's."""
    if type(divisor) is MetaArray or dividend.size == 0:  # (no values to check)
        return
    if (divisor == 0).any() if backend.is_array(divisor) else divisor == 0:
        raise RuntimeError(f"{name}: ZeroDivisionError (an integer divided by zero)")


def _check_indices(name: str, index: Any, size: int, dim: int) -> None:
    """Every entry of the integer array ``index`` is in ``[0, size)``, as PyTorch's gather and
    scatter require (no negative indices); one pass over the index, before any work."""
    if type(index) is MetaArray:  # no values to check, as PyTorch's meta kernels
        return
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index[(index < 0) | (index >= size)].flat[0]
        raise RuntimeError(
            f"{name}: index {bad} is out of bounds for dimension {dim} with size {size}"
        )


def _check_index_add(index: Any, size: int, dim: int, vector: bool) -> None:
    """``_check_indices`` for ``index_add``, whose error for a vector (or 0-d tensor) is an
    IndexError in PyTorch (its 1-D kernel's), a RuntimeError otherwise."""
    try:
        _check_indices("index_add_()", index, size, dim)
    except RuntimeError as error:
        if vector:
            raise IndexError(str(error)) from None
        raise


def _check_index_copy(shape: tuple, dim: int, count: int, source: tuple) -> None:
    """PyTorch's checks of ``index_copy``'s shapes: ``source`` has ``shape``'s dims (or one
    of them has none), the same sizes apart from ``dim``, and ``count`` slices along it."""
    if not source and count != 1:
        raise IndexError(
            f"index_copy_(): When source is scalar, index should have one element (got {count})"
        )
    if shape and source and len(source) != len(shape):
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their dimensionality "
            f"must match. Source dimensionality ({len(source)}), destination dimensionality "
            f"({len(shape)})"
        )
    slices = [list(_without(s, dim)) if s else [] for s in (shape, source)]
    if slices[0] != slices[1]:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. Destination "
            f"slice shape: {slices[0]} at dimension {dim} and source slice shape: {slices[1]} "
            "at dimension 0."
        )
    if source and count != source[dim]:
        raise IndexError(
            f"index_copy_(): Number of indices ({count}) should be equal to source.size(dim) "
            f"({source[dim]})"
        )


def index_mask(index: Any, shape: tuple, dim: int) -> Any:
    """A bool array True at ``index`` (negative counted from the end) along ``dim`` of
    ``shape``, of size 1 in the other dims; PyTorch's IndexError for an index out of range."""
    size = shape[dim]
    if index.size and (index.min() < -size or index.max() >= size):
        bad = index[(index < -size) | (index >= size)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    mask = namespace(index).zeros(size, bool)
    mask[index] = True
    return mask.reshape([size if d == dim else 1 for d in range(len(shape))])


def check_index_copied(index: Any, size: int, dim: int) -> None:
    """``_check_indices`` for ``index_copy``, whose error is an IndexError in PyTorch."""
    try:
        _check_indices("index_copy_()", index, size, dim)
    except RuntimeError as error:
        raise IndexError(str(error)) from None


def _is_mask(item: Any) -> bool:
    """Whether an index item (as ``_index`` makes them) is a boolean array, not a scalar."""
    return backend.is_array(item) and item.dtype.kind == "b" and item.ndim > 0


def graph_keeps(*operands: Any) -> bool:
    """Whether a graph will keep the index of an op on ``operands`` for its backward: then
    the index tensors' arrays are copied, so that a later write into one cannot change the
    gradient (PyTorch raises at backward instead). Not while jit records: it reads each
    call's index through its array."""
    return (
        _state.enabled
        and capture_hook.recorder is None
        and any(isinstance(t, Tensor) and t.requires_grad for t in operands)
    )


def _zero_dim_index_error(index: Any) -> IndexError:
    """PyTorch's error for an index that a 0-d tensor refuses; for ``x[0]``, its hint at
    ``item()`` (old scripts read a loss as ``loss.data[0]``)."""
    if isinstance(index, int):
        if index == 0:
            return IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        return IndexError(f"index {index} is out of bounds for dimension 0 with size 0")
    if type(index) is slice:
        return IndexError("slice() cannot be applied to a 0-dim tensor.")
    return IndexError("too many indices for tensor of dimension 0")


def _index(index: Any, array: Any, operands: tuple = ()) -> tuple:
    """An index into ``array`` as a tuple its array module understands; tensors and lists
    become integer or bool arrays, on ``array``'s device (as PyTorch takes CPU indices for a
    GPU tensor); a tensor's array is copied where a graph keeps the index of an op on
    ``operands`` (see ``graph_keeps``)."""
    alone = type(index) is slice  # (PyTorch checks its step first)
    if not isinstance(index, tuple):
        index = tuple(index) if _sequence_as_tuple(index) else (index,)
    items = []
    arrays = False  # an integer or bool array, or a bool scalar: an index NumPy may place apart
    ellipses, stepping_back = 0, False
    for item in index:
        shared = isinstance(item, Tensor)  # then its array is the index tensor's memory
        if shared:
            item = item.array
        elif isinstance(item, list):
            item = _list_index(item)
        elif item is Ellipsis:
            ellipses += 1
        elif item is True or item is False:
            arrays = True
        elif type(item) is slice and item.step is not None and item.step <= 0:
            stepping_back = True
        if backend.is_array(item):
            if item.ndim == 0 and item.dtype in _INDEX_INTS and capture_hook.recorder is None:
                items.append(int(item))  # PyTorch's int: a view, not NumPy's copy
                continue
            if item.dtype == backend.uint8:  # PyTorch's legacy: a byte tensor is a mask
                warnings.warn(
                    "indexing with dtype scratchgrad.uint8 is now deprecated, please use a dtype "
                    "scratchgrad.bool instead.",
                    stacklevel=3,
                )
                item = item.astype(bool)
            elif item.dtype not in _INDEX_INTS and item.dtype != backend.bool_:
                raise IndexError(
                    "index: tensors used as indices must be long, int, byte or bool tensors, "
                    f"got {item.dtype.name}"
                )
            if type(item) is not type(array):
                item = _index_on_device(item, array)
            elif shared and graph_keeps(*operands):
                item = item.copy()
            arrays = True
        items.append(item)
    if stepping_back or ellipses > 1 or (arrays and not _checked_by_numpy(items, array.shape)):
        _check_items(items, array.shape, alone)
    if ellipses > 1:
        items = _ellipses_spelled_out(items, array.ndim)
    if type(array) is not xp.ndarray:  # NumPy checks bounds itself
        _check_bounds(items, array.shape)
    if arrays and _picks_apart(items):
        return _as_grids(items, array)
    return tuple(items)


def _check_items(items: list, shape: tuple, alone: bool = False) -> None:
    """PyTorch's checks of an index, in its order: a slice given ``alone`` steps forward (it
    applies that one at once); the index takes no more dims than ``shape`` has; then item by
    item (each Ellipsis standing for the dims no other item takes) a slice steps forward, an
    int is within its dim (NumPy lets one pass beside an advanced index that empties the
    result: ``x[5, False]``); then that each mask fits the dims it covers (NumPy lets one pass
    a dim of size 1 or an empty array) and that no positions index a dim of size 0."""
    if alone:
        _check_step(items[0])
    taken = [movement.dims_taken(item) for item in items]
    if sum(taken) > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim, into_empty, masks = 0, False, []
    for item, dims in zip(items, taken):
        size = shape[dim] if dim < len(shape) else None  # (past the end after two Ellipses)
        if item is Ellipsis:
            dims = len(shape) - sum(taken)
        elif type(item) is slice:
            _check_step(item)
        elif type(item) is int and size is not None and not -size <= item < size:
            raise IndexError(f"index {item} is out of bounds for dimension {dim} with size {size}")
        elif backend.is_array(item) and item.ndim and item.dtype.kind == "b":
            masks.append((item, dim))
        elif backend.is_array(item) and item.dtype.kind in "iu":
            into_empty = into_empty or size == 0
        dim += dims
    for mask, dim in masks:
        if mask.shape != shape[dim : dim + mask.ndim]:
            raise IndexError(
                f"The shape of the mask {list(mask.shape)} at index {dim} does not match "
                f"the shape of the indexed tensor {list(shape)} at index {dim}"
            )
    if into_empty and _advanced_size(items):
        raise IndexError("index is out of bounds for dimension with size 0")


def _checked_by_numpy(items: list, shape: tuple) -> bool:
    """Whether NumPy raises PyTorch's errors for this index itself (so ``_check_items`` may
    be skipped, 3 us of a 15 us ``x[i]``): forward slices, integer arrays and masks that fit
    the dims they cover, no int or bool scalar beside them, no more dims taken than there are
    (a setitem checks the value after the index), and none of the dims empty."""
    if 0 in shape:
        return False
    dim = 0
    for item in items:
        if type(item) is not slice:
            if not backend.is_array(item) or item.ndim == 0:
                return False
            if item.dtype.kind == "b":
                if item.shape != shape[dim : dim + item.ndim]:
                    return False
                dim += item.ndim - 1
            elif item.dtype.kind not in "iu":
                return False
        dim += 1
    return dim <= len(shape)


_INDEX_INTS = (backend.int64, backend.int32)  # the integer dtypes of index tensors


def _list_index(items: list) -> Any:
    """A list index item as an array: int64 where empty, and where it holds floats (PyTorch
    makes a list that is no mask a long tensor: ``x[[1.9, 0]]`` picks rows 1 and 0)."""
    if not items:
        return xp.zeros(0, backend.int64)
    array = xp.asarray(items)
    return array.astype(backend.int64) if array.dtype.kind == "f" else array


def _sequence_as_tuple(index: Any) -> bool:
    """PyTorch's (and old NumPy's) reading of a list index: one holding a tensor, a sequence,
    a slice, None or Ellipsis (and under 32 items) is a tuple, so ``x[[[0, 1], [2, 3]]]`` is
    ``x[[0, 1], [2, 3]]``.

    >>> _sequence_as_tuple([[0, 1], [2, 3]]), _sequence_as_tuple([0, 1])
    (True, False)
    """
    return (
        type(index) is list
        and len(index) < 32
        and any(
            isinstance(item, (Tensor, list, tuple, slice)) or item is None or item is Ellipsis
            for item in index
        )
    )


def _ellipses_spelled_out(items: list, ndim: int) -> list:
    """``items`` with each of several Ellipses read as PyTorch reads them: every one stands for
    the full slices of the dims no other item takes, and full slices past the last dim are
    dropped (``x[..., 0, ...]`` picks from the last dim, as ``x[..., 0]``).

    >>> _ellipses_spelled_out([Ellipsis, 0, Ellipsis], 3)
    [slice(None, None, None), slice(None, None, None), 0]
    """
    spelled = max(ndim - sum(movement.dims_taken(item) for item in items), 0)
    out, trailing = [], 0  # trailing: the full slices at the end of ``out``
    for item in items:
        if item is Ellipsis:
            out += [slice(None)] * spelled
            trailing += spelled
        else:
            out.append(item)
            trailing = trailing + 1 if _is_whole(item) else 0
    excess = sum(movement.dims_taken(item) for item in out) - ndim
    return out[: len(out) - min(max(excess, 0), trailing)]


def _advanced_size(items: list) -> int:
    """How many positions the advanced indices among ``items`` pick together (a mask its True
    entries, a bool scalar one or none); 0 where they do not broadcast (NumPy raises then)."""
    advanced = [i for i in items if _is_bool_scalar(i) or (backend.is_array(i) and i.ndim)]
    try:
        return math.prod(xp.broadcast_shapes(*map(_picked_shape, advanced)))
    except ValueError:
        return 0


def _picked_shape(item: Any) -> tuple:
    """The shape of the positions that an advanced index item picks."""
    if _is_bool_scalar(item):
        return (int(item),)
    return (int(item.sum()),) if item.dtype.kind == "b" else item.shape


def _check_step(item: slice) -> None:
    """PyTorch's error for a slice's step below 1 (NumPy would flip the tensor)."""
    if item.step is not None and item.step <= 0:
        raise ValueError(
            "slice step cannot be zero" if item.step == 0 else "step must be greater than zero"
        )


def _is_whole(item: Any) -> bool:
    """Whether an index item is a slice of every entry, in order (``:`` or ``::1``)."""
    whole = type(item) is slice and item.start is None and item.stop is None
    return whole and item.step in (None, 1)


def _refuse_index_put_cast(x: Tensor, index: Any, value: Tensor) -> None:
    """PyTorch's refusal to write a tensor of another dtype through an index its setitem hands
    to ``index_put_`` (an integer tensor or list, a bool scalar, a mask given more than one
    value); ints, slices, a bool alone (``x.unsqueeze(0)``) and a mask given one value
    (``masked_fill_``) cast it."""
    if isinstance(index, bool):
        return
    items = index if isinstance(index, tuple) else (index,)
    if isinstance(index, list) and _sequence_as_tuple(index):
        items = tuple(index)
    advanced = [item for item in items if _is_advanced(item)]
    if not advanced:
        return
    if len(advanced) == 1 and _is_mask_item(advanced[0]) and value.numel() == 1:
        check_tensor_number(value, x.array.dtype)  # (as masked_fill_ checks it)
        return
    raise RuntimeError(
        "setitem: Index put requires the source and destination dtypes match, got "
        f"{torch_name(x.dtype)} for the destination and {torch_name(value.dtype)} for the source."
    )


def _scatter_value(src: Any, value: Any) -> Any:
    """``scatter``'s number given as ``value=``: PyTorch's form with a number, refused with a
    tensor, or beside ``src``, or where neither is given, as PyTorch's."""
    if src is not None or value is None or isinstance(value, Tensor):
        raise TypeError(
            "scatter() received an invalid combination of arguments: expected (dim, index, "
            "src: Tensor) or (dim, index, value: Number), got src="
            f"{type(src).__name__} and value={type(value).__name__}"
        )
    return value


def check_tensor_number(value: Tensor, dtype: Any) -> None:
    """Raise as PyTorch does for the one number of ``value``, a tensor of another dtype than
    ``dtype``, that ``masked_fill``, ``index_fill``, ``index_put`` or a mask's setitem write:
    PyTorch reads it as a Python number and checks it so (1e6 into float16 or int8 raises,
    where a cast would give inf or wrap). Inside vmap, every member's number is checked; in a
    jitted step, each replay's. A meta tensor has none."""
    if not value.is_meta:
        _call(_check_numbers, value._checked_values(), dtype)


def _check_numbers(numbers: Any, dtype: Any) -> None:
    """``checked_number`` of each of ``numbers`` (of real ones, a NaN, the smallest and the
    largest stand for all)."""
    numbers = numbers.ravel()
    if numbers.size > 2 and numbers.dtype.kind != "c":
        nan = numbers != numbers
        real = numbers[~nan]
        numbers = [*numbers[nan][:1], *((real.min(), real.max()) if real.size else ())]
    for number in numbers:
        checked_number(number.item(), dtype)


def _is_advanced(item: Any) -> bool:
    """Whether an index item, as given to setitem, is an advanced index to PyTorch."""
    if isinstance(item, (bool, list, tuple)):  # a sequence is an index tensor
        return True
    if isinstance(item, Tensor) or backend.is_array(item):
        return item.ndim > 0 or item.dtype == backend.bool_
    return False


def _is_mask_item(item: Any) -> bool:
    """Whether an advanced index item, as given to setitem, is a mask (bool or uint8)."""
    if isinstance(item, (list, tuple)):
        item = xp.asarray(item)
    return getattr(item, "ndim", 0) > 0 and item.dtype in (backend.bool_, backend.uint8)


def _refuse_byte_mask_fill(value: Any) -> None:
    """PyTorch's error for one value written through a lone legacy byte mask (``x[mask] = 0``
    with a uint8 mask): its setitem hands that to ``masked_fill_``, which takes bool masks
    only (several values go to ``index_put_``, which takes the byte mask)."""
    if isinstance(value, (int, float)) or (isinstance(value, Tensor) and value.numel() == 1):
        raise RuntimeError(
            "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"
        )


def _leading_ones(shape: tuple) -> int:
    """How many of ``shape``'s dims, from the first, are 1."""
    return next((k for k, n in enumerate(shape) if n != 1), len(shape))


def _is_pick(item: Any) -> bool:
    """An int (or 0-d integer array) index item: PyTorch selects with it before it indexes."""
    if backend.is_array(item):
        return item.ndim == 0 and item.dtype.kind in "iu"
    return isinstance(item, int) and not isinstance(item, bool)


def _is_bool_scalar(item: Any) -> bool:
    """A bool (or 0-d bool array) index item: to PyTorch, a new dim indexed by ``[0]`` for
    True, ``[]`` for False, an advanced index."""
    if backend.is_array(item):
        return item.ndim == 0 and item.dtype.kind == "b"
    return isinstance(item, bool)


def _picks_apart(items: list) -> bool:
    """Whether NumPy and PyTorch place an advanced index's dims differently: NumPy counts ints
    among the advanced indices (so ``x[0, :, [1, 2]]`` moves the indexed dims to the front,
    shape ``(2, n)``), PyTorch selects with the ints first (``x[0][:, [1, 2]]``, ``(n, 2)``).
    They differ only where ints alone keep the advanced indices (arrays, bool scalars) apart."""
    advanced = [
        (backend.is_array(item) and item.ndim > 0) or _is_bool_scalar(item) for item in items
    ]
    picks = [_is_pick(item) for item in items]
    if not any(picks) or not any(advanced):
        return False
    kept = [a for a, p in zip(advanced, picks) if not p]
    return _adjacent(kept) and not _adjacent([a or p for a, p in zip(advanced, picks)])


def _adjacent(flags: list) -> bool:
    """Whether the True entries of ``flags`` (at least one) are next to each other."""
    first, last = flags.index(True), len(flags) - flags[::-1].index(True)
    return all(flags[first:last])


def _as_grids(items: list, array: Any) -> tuple:
    """``items`` (where ``_picks_apart``) as one NumPy index giving PyTorch's layout: every
    item an integer array (a slice its range) shaped to broadcast to the result, the advanced
    indices' dims where the first of them stands."""
    xp_array = namespace(array)
    flat = _flattened(items, array.shape)
    shapes = [
        ((1,) if item else (0,)) if isinstance(item, bool) else item.shape
        for item in flat
        if isinstance(item, bool) or (backend.is_array(item) and item.ndim)
    ]
    try:
        block = xp.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes "
            f"{', '.join(str(list(s)) for s in shapes)}"
        ) from None
    ndim = sum(type(item) is slice or item is None for item in flat) + len(block)
    grids, position, dim, start = [], 0, 0, None
    for item in flat:
        if item is None:  # a dim of size 1 in every grid
            position += 1
            continue
        if type(item) is slice:
            steps = xp_array.arange(*item.indices(array.shape[dim]))
            grids.append(steps.reshape(_placed(ndim, position, (-1,))))
            position += 1
        elif isinstance(item, bool) or (backend.is_array(item) and item.ndim):
            if start is None:
                start, position = position, position + len(block)
            if isinstance(item, bool):  # a new dim, in the block: it indexes none of array's
                continue
            grids.append(item.reshape(_placed(ndim, start + len(block) - item.ndim, item.shape)))
        else:
            grids.append(item)
        dim += 1
    if any(isinstance(item, bool) for item in flat):  # the block's dims even where no array has
        grids[0] = grids[0] + xp_array.zeros(_placed(ndim, start, block), backend.int64)
    return tuple(grids)


def _flattened(items: list, shape: tuple) -> list:
    """``items`` with the Ellipsis spelled out, each mask as its ``nonzero()`` arrays and each
    bool scalar as a Python bool."""
    consumed = sum(movement.dims_taken(item) for item in items)
    flat = []
    for item in items:
        if item is Ellipsis:
            flat += [slice(None)] * (len(shape) - consumed)
        elif _is_bool_scalar(item):
            flat.append(bool(item))
        elif backend.is_array(item) and item.dtype.kind == "b":
            flat += list(item.nonzero())
        else:
            flat.append(item)
    return flat


def _placed(ndim: int, at: int, sizes: tuple) -> tuple:
    """A shape of ``ndim`` ones with ``sizes`` from dim ``at``."""
    return (1,) * at + tuple(sizes) + (1,) * (ndim - at - len(sizes))


_UNORDERED_COMPARISONS = ("equal", "not_equal", "logical_and", "logical_or", "logical_xor")


def _compare(name: str, x: Any, y: Any) -> Any:
    """The comparison ufunc ``name`` of ``x``'s array module. 16-bit floats are compared in
    float32: the same answer, without NumPy's slow 16-bit loops. Complex numbers have no order
    (NumPy's would be lexicographic): PyTorch refuses them but for ==, != and the logical ops
    (which test for nonzero), a complex number against a real tensor too (``x < 1j``)."""
    if (x.dtype.kind == "c" or type(y) is complex) and name not in _UNORDERED_COMPARISONS:
        what = x.dtype if x.dtype.kind == "c" else f"{x.dtype.name} with the number {y}"
        raise NotImplementedError(f"{name}: not implemented for complex tensors ({what})")
    wide = backend.accumulation_dtype
    if wide(x.dtype) or wide(getattr(y, "dtype", None)):
        if isinstance(y, (int, float)):  # as PyTorch, a number is first rounded to x's dtype
            y = namespace(x).asarray(y, x.dtype)
        x, y = backend.widened(x), backend.widened(y)
    return _elementwise(name, x, y)


# the ops named in the errors for complex input to ``_indices_along``, by what it computes
_ORDERING_OPS = {
    "_top_indices": "topk",
    "_order_statistic_index": "kthvalue",
    "_running_index": "cummax",
}


# the ordering ops whose refusal of complex numbers is PyTorch's RuntimeError (the others'
# is its NotImplementedError, from a kernel without a complex version)
_REFUSED_AT_RUNTIME = frozenset({"sort", "topk", "argmax", "argmin", "maximum", "minimum"})


def refuse_complex(x: Tensor, op: str) -> None:
    """PyTorch's refusal of complex numbers by an op that orders values (max, sort, clamp...):
    they have no order, where NumPy's would be lexicographic."""
    if x.array.dtype.kind == "c":
        error = RuntimeError if op in _REFUSED_AT_RUNTIME else NotImplementedError
        raise error(f"{op}: does not support complex input ({x.array.dtype})")


def _refuse_bool_order(name: str, x: Tensor) -> None:
    """PyTorch's median and kthvalue kernels have no bool version (sort and max do)."""
    if x.array.dtype == backend.bool_:
        raise NotImplementedError(f"{name}(): \"{name}_cpu\" not implemented for 'Bool'")


def _check_k(name: str, k: Any) -> None:
    """topk's and kthvalue's ``k`` is an int (not a bool or float), as PyTorch's parser says;
    None stands for median's middle place."""
    if k is not None and (isinstance(k, bool) or not hasattr(k, "__index__")):
        raise TypeError(f"{name}(): argument 'k' must be int, not {type(k).__name__}")


def _refuse_kernel_dtype(op: str, kernel: str, kinds: str, *operands: Any) -> None:
    """PyTorch's error where its kernel ``kernel`` has no version for the dtype of a tensor
    among ``operands`` (of one of NumPy's ``kinds``: "b" bool, "iu" integers, "c" complex),
    where NumPy's would compute (or raise a TypeError)."""
    for t in operands:
        if isinstance(t, Tensor) and t.array.dtype.kind in kinds:
            name = torch_name(t.array.dtype)
            raise NotImplementedError(f"{op}: \"{kernel}\" not implemented for '{name}'")


def _refuse_bool(x: Tensor, op: str) -> None:
    """PyTorch's refusal of bools by ``argmax`` and ``argmin`` (``max(dim=)`` takes them)."""
    if x.array.dtype == backend.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")


def _clamp_by_tensors(x: Tensor, low: Any, high: Any) -> Tensor:
    """``clamp`` with a tensor bound, as PyTorch's: ``min(max(x, low), high)`` (so ``high``
    where ``low > high``, NaN where any is NaN) in the three's broadcast shape and promoted
    dtype. The gradient goes to ``x`` inside ``[low, high]``, to ``low`` where ``x < low <
    high``, to ``high`` where ``x > high`` or ``high < low``; where none holds (``x`` below
    ``low == high``, a NaN) no input gets one, as in PyTorch. Where a bound is NaN no input
    gets one either (PyTorch's may still pass one to ``high`` there, under a NaN result)."""
    given = [b for b in (low, high) if b is not None]
    shapes = [tuple(x.shape)] + [tuple(b.shape) for b in given if isinstance(b, Tensor)]
    try:
        xp.broadcast_shapes(*shapes)
    except ValueError:
        raise RuntimeError(f"clamp: shapes {shapes} cannot be broadcast together") from None
    dtype = functools.reduce(promoted, (result_dtype(x, b) for b in given))
    x, low, high = (
        b if b is None else b.to(dtype) if isinstance(b, Tensor) else Tensor._from_data(b, dtype)
        for b in (x, low, high)
    )
    with no_grad():  # the value; where no input gets the gradient, none flows from it
        clipped = x if low is None else x.maximum(low)
        clipped = clipped if high is None else clipped.minimum(high)
    # nested where, not & and |: each mask a comparison, which vmap batches
    out = x if high is None else where(x <= high, x, clipped)
    if low is not None:
        out = where(x >= low, out, clipped)
        below = where(x < low, low, out)
        out = below if high is None else where(low < high, below, out)
    if high is not None:
        above = where(x > high, high, out)
        out = above if low is None else where(high < low, high, above)
    return where(clipped != clipped, clipped, out)  # a NaN bound: NaN, whatever was chosen


def _clamp(array: Any, min: Any, max: Any) -> tuple:
    """Where ``array`` is inside ``[min, max]``, and ``array`` clipped to it."""
    xp = namespace(array)
    inside = xp.ones(array.shape, bool)
    if min is not None:
        inside &= array >= min
    if max is not None:
        inside &= array <= max
    return inside, xp.clip(array, min, max).astype(array.dtype, copy=False)


def _arg_reduce(array: Any, name: str, axis: Any, keepdim: bool) -> Any:
    """``array.argmax`` (argmin, any, all) over ``axis``, as an array (not a NumPy scalar)."""
    return backend.as_array(getattr(array, name)(axis=axis, keepdims=keepdim))


def _bernoulli(probs: Any, shape: tuple, dtype: Any, device: Any, generator: Any) -> Any:
    """``Tensor.bernoulli``'s draws of ``shape``, in ``dtype``: ones where a uniform draw falls
    below the probability (``probs``, an array that broadcasts to ``shape``, or a number),
    after checking the probabilities (in one call, so that a replay under ``scratchgrad.jit``
    checks and draws again)."""
    probs = backend.array_module(device).asarray(probs)
    if not ((probs >= 0) & (probs <= 1)).all():  # NaN fails too
        raise RuntimeError("bernoulli: the probabilities must be in [0, 1]")
    rng = backend.rng_for(generator, device)
    return backend.as_array((rng.random(shape) < probs).astype(dtype))  # 0-d: no scalar


def poisson(input: Tensor, generator: Any = None) -> Tensor:
    """Draws of Poisson distributions of the rates in ``input``, in its shape and floating
    dtype, as ``torch.poisson``: from the library's seeded generator (or ``generator``), again
    at each replay of a jitted step; the rates' gradient is 0, as PyTorch's. A negative or NaN
    rate is PyTorch's RuntimeError.

    >>> import scratchgrad as sg
    >>> _ = sg.manual_seed(0)
    >>> sg.poisson(sg.tensor([0.0, 4.0])).tolist()
    [0.0, 2.0]
    """
    _refuse_non_float("poisson", _tensor_other("poisson", input, "input", position=1))
    draws = random_draws(
        lambda shape, rates: _call(_poisson, rates, generator), input.shape, params=(input,)
    )
    return _zero_gradient_to(draws, input)


def _poisson(rates: Any, generator: Any) -> Any:
    """``poisson``'s draw, after checking the rates (in one call, so that a replay under
    ``scratchgrad.jit`` checks and draws again)."""
    if not (rates >= 0).all():  # NaN fails too
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
    rng = backend.rng_for(generator, backend.device_of(rates))
    return backend.as_array(rng.poisson(rates.astype(backend.float64))).astype(rates.dtype)


def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    """Draws of binomial distributions of ``count`` trials of probability ``prob``
    (broadcast together, of one floating dtype), as ``torch.binomial``: from the library's
    seeded generator (or ``generator``), again at each replay of a jitted step. As PyTorch's,
    a negative count draws 0, a probability outside [0, 1] the nearer bound's draws, a NaN
    one NaN; a backward through the draws raises (PyTorch has no derivative for them).

    >>> import scratchgrad as sg
    >>> sg.binomial(sg.tensor([5.0, 5.0, 0.0]), sg.tensor([0.0, 1.0, 0.5])).tolist()
    [0.0, 5.0, 0.0]
    """
    count = _tensor_other("binomial", count, "count", position=1)
    prob = _tensor_other("binomial", prob, "prob")
    if not backend.is_floating(count.array.dtype) or count.array.dtype.kind == "c":
        raise ValueError(
            f"binomial only supports floating-point dtypes for count, got: "
            f"{torch_name(count.array.dtype)}"
        )
    if prob.array.dtype != count.array.dtype:
        raise RuntimeError(
            f"binomial: found dtype {torch_name(prob.array.dtype)} but expected "
            f"{torch_name(count.array.dtype)}"
        )
    _refuse_non_float("binomial", count)
    shape = broadcast_shapes(count.shape, prob.shape)
    draws = random_draws(
        lambda _, *arrays: _call(_binomial, *arrays, generator),
        shape,
        params=(count.expand(shape), prob.expand(shape)),
    )
    graph = prob if prob.requires_grad else count
    return _kept_without_derivative(graph, draws, "binomial")


def _binomial(count: Any, prob: Any, generator: Any) -> Any:
    """``binomial``'s draw: NumPy's, whose counts are integers and probabilities in [0, 1]."""
    xp = namespace(count)
    nan = xp.isnan(count) | xp.isnan(prob)
    trials = xp.where(nan, 0, xp.maximum(count, 0)).astype(backend.int64)
    p = xp.where(nan, 0, xp.clip(prob, 0, 1)).astype(backend.float64)
    draws = backend.rng_for(generator, backend.device_of(count)).binomial(trials, p)
    return backend.as_array(xp.where(nan, xp.nan, draws)).astype(count.dtype)


def _refuse_non_float(name: str, x: Tensor) -> None:
    """PyTorch's error for a draw whose kernel takes float16 to float64 (poisson) or float32
    and float64 (binomial) only."""
    dtype = x.array.dtype
    half = dtype in backend.SIXTEEN_BIT and name == "binomial"
    if dtype.kind in "biuc" or half:
        raise NotImplementedError(
            f"{name}: \"{name}_cpu\" not implemented for '{torch_name(dtype)}'"
        )


def random_draws(
    sample: Callable[..., Any], shape: tuple, into: Tensor | None = None, params: tuple = ()
) -> Tensor:
    """``sample(shape, *arrays)``, an array of random draws of ``shape`` from the arrays of
    ``params`` (tensors of that shape: bernoulli's probabilities, poisson's rates), as a
    tensor. Inside vmap, drawn as its ``randomness`` says, as PyTorch's: refused, one draw for
    every member, or one per member (``sample`` then gets the batch sizes before ``shape``,
    and the parameters spread over them: each member's own where they are batched); ``into``,
    a tensor that an in-place fill writes the draws into, is refused one draw per member
    unless batched (see func/batching.py's ``draw``)."""
    if _function._vmap_dispatch is None:
        return Tensor._make(sample(shape, *(p.array for p in params)))
    from scratchgrad import creation  # (creation builds on this module)

    return creation._vmap_draw(sample, shape, into, params)


def _uniform(generator: Any, device: Any, low: float, high: float, shape: tuple, dtype) -> Any:
    """``Tensor.uniform_``'s draw: U(low, high) samples of ``shape``, drawn in float64 and
    rounded to ``dtype``, still below ``high`` (see ``backend.below``); for a complex dtype,
    its real and imaginary parts are each such a sample (see ``_complex_from_pairs``)."""
    if dtype.kind == "c":
        parts = _uniform(generator, device, low, high, (*shape, 2), backend.to_real(dtype))
        return _complex_from_pairs(parts)
    draws = backend.rng_for(generator, device).uniform(low, high, shape)
    return backend.below(backend.as_array(draws).astype(dtype), low, high)


def _normal(
    generator: Any, device: Any, mean: float, std: float, shape: tuple, complex_: bool = False
) -> Any:
    """``Tensor.normal_``'s draw, in float64; ``complex_``: complex128, whose real and
    imaginary parts are each N(mean, std**2 / 2), as PyTorch's complex normal."""
    if complex_:
        parts = _normal(generator, device, mean, std / math.sqrt(2), (*shape, 2))
        return _complex_from_pairs(parts)
    # NumPy's normal(mean, std) is mean + std * standard_normal: the same draws (CuPy has no
    # normal); an infinite mean and std give NaN (inf - inf) silently, as PyTorch's
    draws = backend.rng_for(generator, device).standard_normal(shape)
    with backend.errstate(invalid="ignore"):
        return draws * std + mean


def _complex_from_pairs(draws: Any) -> Any:
    """Draws paired along their last dim as the real and imaginary parts of complex entries,
    as PyTorch fills a complex tensor (its ``view_as_real``)."""
    return draws[..., 0] + 1j * draws[..., 1]


def _random_top(dtype: Any) -> int:
    """The largest integer ``random_`` draws by default into ``dtype``: every integer up to
    it is exact there."""
    if dtype == backend.bool_:
        return 1
    if dtype.kind in "iu":
        return int(xp.iinfo(dtype).max)
    return 2 ** int(xp.finfo(dtype).nmant + 1)


def _drawn(
    generator: Any, device: Any, draw: str, parameters: tuple, shape: tuple, scale, shift
) -> Any:
    """The random fills' draw (``lognormal``, ``geometric``...) of the generator's stream,
    times ``scale`` plus ``shift``."""
    values = getattr(backend.rng_for(generator, device), draw)(*parameters, shape)
    return values if scale == 1 and shift == 0 else values * scale + shift


def _unique_slices(array: Any, dim: int, consecutive: bool) -> tuple[Any, Any, Any]:
    """The distinct slices of ``array`` along ``dim``, sorted lexicographically (or, when
    ``consecutive``, each run of equal neighbours collapsed, in order); which of them each slice
    is; and how many slices each stands for. As PyTorch, an empty dim other than ``dim`` (or a
    second empty dim) is refused."""
    if array.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = wrap_dim(dim, array.ndim)
    xp = namespace(array)
    if array.size == 0:
        if array.shape[dim] != 0:
            raise RuntimeError(
                "There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                "applied"
            )
        if array.shape.count(0) > 1:
            raise RuntimeError(
                "Number of zero sized dimensions is more than one, so unique cannot be applied"
            )
        nothing = xp.zeros(0, dtype=backend.int64)
        return array.copy(), nothing, nothing
    slices = xp.moveaxis(array, dim, 0)
    rows = slices.reshape(len(slices), -1)
    # lexsort's last key sorts first: the columns reversed compare rows from their first entry
    order = xp.arange(len(rows)) if consecutive else xp.lexsort(rows.T[::-1])
    ordered = rows[order]
    starts = xp.ones(len(rows), dtype=bool)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(1)  # NaN != NaN: a NaN starts a new group
    inverse = xp.empty(len(rows), dtype=backend.int64)
    inverse[order] = xp.cumsum(starts) - 1
    first = xp.flatnonzero(starts)
    counts = xp.diff(xp.append(first, len(rows))).astype(backend.int64)
    return xp.moveaxis(slices[order[first]], 0, dim), inverse, counts


def _unique_results(
    x: Tensor, op: str, values, inverse, counts, return_inverse: bool, return_counts: bool
):
    """``unique``'s result: the values (in ``x``'s graph, without a derivative, as PyTorch's
    ``op``), then the inverse and the counts if asked for."""
    extras = (inverse,) * return_inverse + (counts,) * return_counts
    out = tuple(Tensor._make(a.astype(backend.int64)) for a in extras)
    values = _kept_without_derivative(x, Tensor._make(values), op, NotImplementedError)
    return (values, *out) if extras else values


def _from_argument(given: Any, keyword: dict, name: str = "uniform_", default: Any = 0.0) -> Any:
    """``uniform_``'s (or ``random_``'s) lower bound, given by position or as PyTorch's
    keyword ``from``."""
    unknown = set(keyword) - {"from"}
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument '{unknown.pop()}'")
    if keyword and given is not None:
        raise TypeError(f"{name}() got multiple values for argument 'from'")
    return keyword.get("from", default if given is None else given)


def _check_uniform_bounds(low: float, high: float, dtype: Any) -> None:
    """PyTorch's checks of ``uniform_``'s bounds: numbers of ``dtype`` (not NaN nor inf), in
    order, and at most ``dtype``'s largest number apart (else the draws overflow)."""
    largest = float(xp.finfo(dtype).max)
    for name, bound in (("from", low), ("to", high)):
        if not -largest <= bound <= largest:  # NaN fails too
            raise RuntimeError(f"uniform_: {name}={bound} is out of bounds for {dtype}")
    if low > high:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={low} > to={high}"
        )
    if high - low > largest:
        raise RuntimeError(
            f"uniform_ expects to-from <= {largest} (the largest {dtype}), but found to={high} "
            f"and from={low}"
        )


def _multinomial(probs: Any, num_samples: int, replacement: bool, generator: Any) -> Any:
    """``Tensor.multinomial``'s draw on ``probs``'s array, after the checks of its values (in
    one call, so that a replay under ``scratchgrad.jit`` checks and draws again)."""
    xp = namespace(probs)
    weights = probs.astype(backend.float64).reshape(-1, probs.shape[-1])
    if not xp.isfinite(weights).all() or (weights < 0).any():
        raise RuntimeError("multinomial: probability tensor contains either inf, nan or < 0")
    if (weights.sum(axis=1) == 0).any():
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probs <= 0)")
    rng = backend.rng_for(generator, backend.device_of(probs))
    rows, n = weights.shape
    if replacement:
        # inverse CDF, every row at once: row r's CDF (from 0 to 1) is shifted to [r, r + 1]
        cdf = xp.cumsum(weights, axis=1)
        shift = xp.arange(rows)[:, None]
        flat = (cdf / cdf[:, -1:] + shift).ravel()
        draws = rng.random((rows, num_samples)) + shift
        picked = xp.searchsorted(flat, draws.ravel(), side="right").reshape(draws.shape)
        picked -= shift * n
        # rounding may step past the last category with weight; step back onto it
        last = n - 1 - xp.argmax(weights[:, ::-1] > 0, axis=1)
        picked = xp.minimum(picked, last[:, None])
    else:
        # NOTE: the exponential race: the k smallest E_i / w_i (E_i ~ Exp(1)) are k draws
        # without replacement, each in proportion to the weights left (Efraimidis-Spirakis);
        # once the positive weights run out, the zero ones follow in index order, as PyTorch
        with backend.errstate(divide="ignore"):
            keys = rng.standard_exponential((rows, n)) / weights
        picked = xp.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    return picked.astype(backend.int64).reshape(*probs.shape[:-1], num_samples)


def _top_indices(array: Any, dim: int, k: int, largest: bool, sorted: bool = True) -> Any:
    """The indices of the ``k`` largest (smallest) entries along ``dim``, in order: a stable
    sort's, then PyTorch's CPU picks in the rows where ties decide them, and in every row
    where ``sorted=False`` leaves the first ``k - 1`` in its selection's order (k > 2, and
    too large for its partial sort: ``cpu_order.top_indices``)."""
    xp = namespace(array)
    order = _sort_order(array, dim, largest)
    top = xp.take(order, xp.arange(k), axis=dim).astype(backend.int64)
    unsorted = not sorted and k > 2 and k * 64 > array.shape[dim]
    pick = functools.partial(cpu_order.top_indices, k=k, largest=largest, sorted=sorted)
    return _ties_as_torch(array, dim, top, pick, every_row=unsorted)


def _order_statistic_index(array: Any, dim: int, k: int | None) -> Any:
    """The index along ``dim`` of the ``k``-th smallest entry (from 1), among ties the one
    PyTorch's CPU quickselect picks; for ``k`` None the lower median's in a stable sort, or
    the first NaN's where there is one (as PyTorch's)."""
    xp = namespace(array)
    order = xp.argsort(array, axis=dim, kind="stable")
    position = (array.shape[dim] - 1) // 2 if k is None else k - 1
    index = xp.take(order, [position], axis=dim)
    if k is not None:
        index = _ties_as_torch(array, dim, index, functools.partial(cpu_order.kth_index, k=k))
    if k is None and backend.is_floating(array.dtype):  # (bfloat16's kind is V, not f)
        nan = xp.isnan(array)
        first_nan = xp.argmax(nan, axis=dim, keepdims=True)
        index = xp.where(nan.any(axis=dim, keepdims=True), first_nan, index)
    return index.astype(backend.int64)


def _running_index(array: Any, dim: int, name: str) -> Any:
    """Where the running maximum (minimum) along ``dim`` of ``array`` was found: the last of
    equal entries, and a NaN from where one is met, as PyTorch's cummax and cummin."""
    xp = namespace(array)
    new = (array == getattr(xp, name).accumulate(array, axis=dim)) | xp.isnan(array)
    steps = xp.arange(array.shape[dim]).reshape((-1,) + (1,) * (array.ndim - dim - 1))
    return xp.maximum.accumulate(xp.where(new, steps, 0), axis=dim).astype(backend.int64)


def _check_take(index: Any, size: int) -> None:
    """Every entry of ``index`` is in ``[-size, size)``, as ``torch.take`` requires."""
    bad = index[(index < -size) | (index >= size)]
    if bad.size:
        raise IndexError(
            f"out of range: tried to access index {bad.flat[0]} on a tensor of {size} elements."
        )


def p_norm(x: Tensor, p: float, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x`` over ``dim`` (all entries for None), as
    ``torch.linalg.vector_norm``, ``Tensor.norm``, ``dist`` and ``cdist`` take it: a count of
    nonzeros for p = 0 (with a zero gradient), the largest or smallest ``|x|`` for p = inf or
    -inf, and PyTorch's gradients where a root or power has an infinite slope: 0 where the
    norm is 0, 0 at the zero entries for 0 < p < 1, and 0 for a slice holding a zero for
    p < 0 (whose norm is 0).

    >>> p_norm(Tensor([[3.0, 4.0], [0.0, 0.0]]), 2, -1)
    tensor([5., 0.])
    """
    if x.array.dtype.kind == "c":  # the norm of the moduli: real, as PyTorch's
        return p_norm(x.abs(), p, dim, keepdim)
    if p == 0:
        # NaN counts as nonzero, as in PyTorch, though sign(NaN) is 0 (sign's gradient is 0)
        return x.sign().abs().masked_fill(x.isnan(), 1).sum(dim, keepdim)
    if p == math.inf:
        return x.abs().amax(dim, keepdim)
    if p == -math.inf:
        return x.abs().amin(dim, keepdim)
    wide = backend.accumulation_dtype(x.array.dtype)
    if wide is not None:  # as PyTorch: 16-bit floats in float32 (300**2 overflows float16)
        return p_norm(x.to(wide), p, dim, keepdim).to(x.dtype)
    if p == 1:
        return x.abs().sum(dim, keepdim)
    if p == 2:
        powered = (x * x).sum(dim, keepdim)
    else:
        size = x.abs()
        zero_entry = size == 0
        safe_size = where(zero_entry, 1.0, size)  # (no infinite slope or value reaches below)
        if p < 0:  # a zero entry makes the sum infinite and the norm 0
            has_zero = zero_entry.any(dim, keepdim)
            return where(has_zero, 0.0, (safe_size**p).sum(dim, keepdim) ** (1 / p))
        powered = where(zero_entry, 0.0, safe_size**p).sum(dim, keepdim)
    zero = powered == 0
    safe = where(zero, 1.0, powered)
    return where(zero, 0.0, safe.sqrt() if p == 2 else safe ** (1 / p))


def distance_norm(diff: Tensor, p: float) -> Tensor:
    """``p_norm`` over the last dim as ``cdist`` and ``nn.functional.pdist`` take it: for
    p = inf each tied largest entry gets the whole gradient (``amax`` shares it among them).

    >>> distance_norm(Tensor([[3.0, -3.0, 1.0]]), math.inf)
    tensor([3.])
    """
    if p != math.inf:
        return p_norm(diff, p, -1)
    size = diff.abs()
    top = size.detach().amax(-1, keepdim=True)
    ties = size.detach() == top
    # the sum over the ties is top * count in value: take the extra copies off
    return (size * ties).sum(-1) - (ties.sum(-1) - 1) * top.squeeze(-1)


def _count_nonzero(array: Any, dims: Any) -> Any:
    count = namespace(array).count_nonzero(array, axis=dims)
    return backend.as_array(count).astype(backend.int64, copy=False)


def _storage_array(t: Tensor) -> Any:
    """The array whose memory ``t`` lies in, where its ``storage_offset`` counts from: its
    base's for a view or a detached view, its own otherwise."""
    view = getattr(t, "_view", None)  # (a base is never a view, but may be a detached one)
    owner = t if view is None else view[0]
    return getattr(owner, "_base_array", owner.array)


def _make_in_inference_mode(array: Any, ctx: Any = None) -> Tensor:
    """``Tensor._make`` while an ``inference_mode`` block is open in some thread: a tensor
    made in a thread that is in inference mode is an inference tensor (``is_inference``)."""
    t = _make(array, ctx)
    if _state.inference:
        t._counter = InferenceCounter()
    return t


def mark_inference_tensors(on: bool) -> None:
    """Make ``Tensor._make`` mark inference tensors (``on``), or not: swapped in while any
    ``inference_mode`` block is open, so the eager engine's hottest function pays nothing
    for the mark outside one (see ``grad_mode._count_open_block``)."""
    Tensor._make = staticmethod(_make_in_inference_mode if on else _make)
    _function.mark_inference_results(on)  # Function.apply makes its results without _make


def _address(array: Any) -> int:
    """Where ``array``'s first entry lies in memory (NumPy's ``ctypes.data``, CuPy's
    ``data.ptr``)."""
    return array.ctypes.data if type(array) is ndarray else array.data.ptr


def _mapped(name: str, results: list, dtype: Any) -> Any:
    """The results of ``apply_``/``map_``/``map2_``'s callable as an array of ``dtype``: each
    must be a real number (PyTorch's TypeError otherwise)."""
    for result in results:
        if not isinstance(result, numbers.Real):
            raise TypeError(f"{name}: must be real number, not {type(result).__name__}")
    return to_array(results, dtype)


def _refuse_view_from_no_grad(tensor: Tensor, name: str, recorded: bool = False) -> None:
    """PyTorch's error for an in-place change, with grad mode on, of a view taken under
    ``no_grad`` (``note_view`` marks it): of a tensor that requires grad, always (the view is
    out of the graph, so the change would be missing from its base's gradient); of any other,
    when the change is ``recorded`` in a graph (whether it belongs to the base's history is
    ambiguous)."""
    marked = getattr(tensor, "_no_grad_view", None)  # unset on all other tensors
    if marked or (recorded and marked is not None):
        raise RuntimeError(
            f"{name}: a view was created in no_grad mode and is being modified inplace with "
            "grad mode enabled. Take the view and change it both inside the no_grad block (the "
            "change is not tracked) or both outside (it is)"
        )


def _not_to_change(views: tuple, name: str) -> tuple:
    """The ``views`` made by one call of the op ``name`` (split, chunk, unbind), marked as
    PyTorch marks the outputs of a function that returns several views: with grad mode on,
    a change of one in place that a graph would record (``_record_in_place``) is refused, and
    so is a backward through one whose base such a change moved (``_take_view_again``)."""
    for output, view in enumerate(views):
        named_backward(view, f"{name}Backward0")
        # (under no_grad they are views taken under no_grad: see note_view)
        if _state.enabled and hasattr(view, "_view") and not hasattr(view, "_no_grad_view"):
            view._multi_output = (output, name)
    return views


def named_backward(out: Tensor, name: str) -> Tensor:
    """``out``, just made by a primitive that serves several ops (Permute: permute, transpose,
    t), its node named as PyTorch's node of the op ``name`` (``TransposeBackward0``)."""
    if out._ctx is not None:
        out._ctx.backward_name = name
    return out


def _multi_output_error(view: Tensor, changed: str) -> str:
    """PyTorch's words for the refused change of a view marked by ``_not_to_change``:
    ``changed`` says what was modified in place."""
    output, name = view._multi_output
    if view.requires_grad:
        said = f"Output {output} of {name} is a view and {changed} inplace."
    else:  # (PyTorch's words for a view without a graph node, though taken with grad mode on)
        said = f"A view was created in no_grad mode and {changed} inplace with grad mode enabled."
    return (
        f"{said} This view is the output of a function that returns multiple views. Such "
        "functions do not allow the output views to be modified inplace. You should replace "
        "the inplace operation by an out-of-place one."
    )


def _reached(tensor: Tensor) -> None:
    """While ``scratchgrad.jit`` records, note ``tensor``, about to change in place: a leaf the
    step reached by name is held by the program, which is valid only while it keeps its array
    (``.data = ...`` between calls records anew)."""
    if capture_hook.recorder is not None:
        capture_hook.recorder.reach(tensor)


# the in-place forms whose tensor arguments PyTorch does not check against the tensor written
# (``_refuse_partial_overlap``): a 0-d value it reads as a number, a mask, the matrices of a
# product, the source of masked_scatter_, ldexp_'s exponent (it multiplies by 2 ** exponent)
_READ_AS_NUMBERS_OR_UNCHECKED = {
    "masked_fill_", "index_fill_", "masked_scatter_", "addbmm_", "addmm_", "addmv_", "addr_",
    "baddbmm_", "ldexp_",
}  # fmt: skip


# the ops whose out= PyTorch does not check against their inputs (``write_out``'s ``read``):
# reductions (but max, min, median... along a dim), products without an added input, softmax,
# triangles, scans of extremes (tried one by one against torch 2.13; its elementwise ops,
# joins, sums' scans, sorts and index reads all refuse a partly overlapping out)
OUT_READS_UNCHECKED = frozenset({
    "all", "amax", "amin", "any", "argmax", "argmin", "bmm", "bucketize", "count_nonzero",
    "cummax", "cummin", "diag", "dot", "histc", "inner", "log_softmax", "logsumexp", "matmul",
    "mean", "mm", "multigammaln", "mv", "mvlgamma", "nanmean", "nanquantile", "nansum",
    "narrow_copy", "norm", "prod", "quantile", "searchsorted", "softmax", "std", "sum", "tril",
    "triu", "var", "vdot", "complex", "polar", "tensordot",
})  # fmt: skip
# the ops whose out= PyTorch leaves unchecked only over all entries, with the input alone
# (max(x)): along a dim (values, indices) or against another tensor (max(x, y)) it checks
OUT_READS_UNCHECKED_OF_ALL = frozenset({"max", "min"})
# the ops whose out= PyTorch writes as a plain buffer, autograd unaware of it: an out that
# requires grad (a leaf too) is written while grad mode is on, and keeps its grad_fn
OUT_WRITTEN_AS_BUFFER = frozenset({"histc"})
# the ops whose out= PyTorch writes by copy_ (its composite ops): the copy is recorded, so
# inputs or an out (not a leaf) that require grad are taken, and the gradient flows through
OUT_COPIED = frozenset({"quantile", "nanquantile", "tensordot", "inner"})
# the ops without a derivative in PyTorch, whose out= its NotImplemented fallback writes: an
# out that requires grad is taken unless it is a leaf, as are inputs that do, and the out's
# backward raises (tried one by one against torch 2.13; conj_physical is conj here)
OUT_WITHOUT_DERIVATIVE = frozenset({
    "heaviside", "floor_divide", "softmax", "log_softmax", "conj", "diag", "eye",
    "zeros", "ones", "full", "arange", "linspace", "logspace", "rand", "randint",
})  # fmt: skip
# the ops whose out= (the first, of several) PyTorch refuses even as the very input it reads
# (their assert_no_overlap)
OUT_OVERLAP_REFUSED = frozenset({"cross", "kthvalue"})
# the ops with several outs that PyTorch casts each result into, as into one out
OUT_SEVERAL_CAST = frozenset({"eig", "geqrf"})


# the ops whose out= must have the result's dtype in PyTorch ("Found dtype Double but expected
# Float"): rounding, signs, tests, extremes, products and a few more (tried one by one against
# torch 2.13 with outs of every dtype; the others cast into the out, never to a lower kind;
# conj_physical is conj here)
OUT_DTYPE_EXACT = frozenset({
    "abs", "absolute", "all", "amax", "amin", "any", "argmax", "argmin", "bitwise_not", "ceil",
    "conj", "cross", "diag", "dot", "fix", "floor", "frac", "heaviside", "inner",
    "isneginf", "isposinf", "log_softmax", "logcumsumexp", "masked_select", "matmul", "msort",
    "nan_to_num", "neg", "negative", "nonzero", "norm", "round", "sgn", "sign", "signbit",
    "softmax", "trunc", "vdot", "bucketize", "searchsorted", "histc", "quantile",
    "nanquantile", "complex", "polar", "tensordot", "isin", "lu_solve", "multi_dot",
    "chain_matmul", "slice_scatter", "hardshrink",
})  # fmt: skip


def _refuse_partial_overlap(name: str, written: Any, read: Any, whole: bool = False) -> None:
    """PyTorch's error for an op that writes the array ``written`` while reading ``read``,
    which holds some of the same memory (``x[1:].add_(x[:-1])``: NumPy would read a copy,
    PyTorch refuses rather than read entries it has already written). As PyTorch's check, the
    same entries in the same order (``x.add_(x)``) pass, unless ``whole`` (the ops of
    ``OUT_OVERLAP_REFUSED``), and so does any array that does not cover its memory once and
    densely (``x[::2]``, an expanded one), which it leaves unchecked. Two arrays that each own
    their memory share none: that test is the fast one."""
    if type(read) not in backend.ARRAY_CLASSES or (read is written and not whole):
        return
    if read.base is None and written.base is None and read is not written:
        return
    if not namespace(written).may_share_memory(written, read):  # (their bounds only)
        return
    if not _dense(read) or not _dense(written):
        return
    start, read_start = _address(written), _address(read)
    same_span = start == read_start and written.nbytes == read.nbytes
    if same_span and written.strides == read.strides and not whole:
        return
    if same_span or (start < read_start + read.nbytes and read_start < start + written.nbytes):
        raise RuntimeError(
            f"{name}: unsupported operation: some elements of the input tensor and the "
            "written-to tensor refer to a single memory location. Please clone() the tensor "
            "before performing the operation."
        )


def _refuse_setitem_overlap(array: Any, index: tuple, value: Any, given: Any) -> None:
    """``_refuse_partial_overlap`` for ``array[index] = value`` as PyTorch's setitem checks it:
    a basic index copies into the view it selects (a 0-d value fills it, read as a number) the
    value as ``given`` where the shapes match (so ``x[0:] = x`` of a 1x3 ``x`` passes), else
    without its leading 1s; any other index is an ``index_put_``, which checks the whole
    tensor."""
    if value.base is None and array.base is None and value is not array:  # (the fast test)
        return
    if not _is_basic_index(index):
        _refuse_partial_overlap("index_put_", array, value)
    elif value.ndim:
        written = array[index]
        read = given if given.shape == written.shape else _expanded_as_torch(value, written.shape)
        _refuse_partial_overlap("copy_", written, read)


def _expanded_as_torch(value: Any, shape: tuple) -> Any:
    """``value`` broadcast to ``shape`` as PyTorch's ``expand`` lays it out for setitem's
    overlap check: a new leading dim of size 1 steps over all of the dims after it, where
    NumPy's broadcast_to gives it 0, so ``q[:] = q[0]`` of a 1x3 ``q`` copies the same bytes in
    the same order and passes, as in PyTorch. A dim that repeats steps 0 (then the read is not
    dense, and not checked)."""
    new = len(shape) - value.ndim
    if new < 0 or any(n not in (1, m) for n, m in zip(value.shape, shape[new:])):
        return value  # (not broadcastable: the assignment itself raises)
    strides = [s if n == m else 0 for n, m, s in zip(value.shape, shape[new:], value.strides)]
    for i in reversed(range(new)):
        strides.insert(0, shape[i + 1] * strides[0] if shape[i] == 1 else 0)
    return namespace(value).lib.stride_tricks.as_strided(value, shape, strides)


def _laid_out_like(out: Tensor, x: Tensor) -> Tensor:
    """``out``, a new result of ``x``'s shape, laid out as PyTorch lays out those of ``flip``,
    ``sort`` and ``clone`` (``empty_like(x)``): with ``x``'s strides where its entries are
    dense, else with dense ones in ``x``'s order of dims (``infer_dense_strides``).
    scratchgrad counts a tensor of its own as row-major, so only a view of another order
    costs more than a check (see ``laid_out``)."""
    if getattr(x.array, "base", 0) is None or not x._has_steps() or not x.array.size:
        return out  # (an array of its own is no view: the first test is the fast one)
    layout = x._layout()
    stride = tuple(s // layout.itemsize for s in layout.strides)
    if not _dense(layout):  # dense strides in that order, innermost dim first
        dense, step = [0] * x.ndim, 1
        for d in reversed(_dims_in_memory(stride, x.shape)):
            dense[d], step = step, step * x.shape[d]
        stride = tuple(dense)
    return laid_out(out, stride)


def laid_out_as(out: Tensor, x: Tensor, memory_format: Any) -> Tensor:
    """``out``, a new tensor made like ``x`` (``zeros_like``), laid out as PyTorch's
    ``empty_like(x, memory_format=...)``: as ``x`` for ``preserve_format`` (see
    ``_laid_out_like``; a tensor of its own, the common case, at the cost of a check)."""
    if memory_format is preserve_format:
        return out if type(out) is not Tensor else _laid_out_like(out, x)
    if memory_format.ndim is None or type(out) is not Tensor:  # (vmap's: no layout)
        return out  # (row-major, as a tensor of its own counts)
    return laid_out(out, _channels_last_strides(x.shape))


def laid_out(out: Tensor, stride: tuple) -> Tensor:
    """``out``, a new tensor (no view), laid out with ``stride`` (dense, in entries): its
    memory stays where its array already has those strides (NumPy's order "K" copy kept
    them), else moves to a copy that has them."""
    if stride == out.stride():  # row-major, as a tensor of its own counts
        return out
    array = out.array
    if tuple(s // array.itemsize for s in array.strides) != stride:
        memory = _call(_copy_to_strides, array, stride)
        out.array = _call(movement._strided, memory, out.shape, stride, 0)
    return _kept_layout(out)


def _kept_layout(out: Tensor) -> Tensor:
    """``out``, a new tensor whose array's strides are dense and not row-major, keeping them
    as its layout: an ``as_strided`` of its memory (like a detached view, see ``_alias``),
    which ``stride``, ``is_contiguous``, ``view`` and ``as_strided`` read."""
    array = out.array
    stride = tuple(s // array.itemsize for s in array.strides)
    out._base_array = _call(_memory_of, array)
    out.array = _call(_viewed, array)  # (so that an array of its own is no kept layout)
    out._layout_steps = ((movement.AsStrided, {"size": out.shape, "stride": stride, "offset": 0}),)
    return out


def own_layout(t: Tensor) -> tuple | None:
    """The strides of ``t``'s layout where it keeps a dense one of its own (a tensor of
    ``_kept_layout``, or a detached view), which a jit replay lays out the tensor it returns
    for ``t`` with (see ``laid_out``); else None."""
    if hasattr(t, "_view") or not hasattr(t, "_layout_steps") or not t.array.size:
        return None
    layout = t._layout()
    return tuple(s // layout.itemsize for s in layout.strides) if _dense(layout) else None


def _copied_as_torch(x: Tensor) -> bool:
    """Whether NumPy's order "K" copy of the view ``x`` lays its entries out as PyTorch's
    ``preserve_format``: where ``x`` views a row-major array of its own (so NumPy's strides
    are PyTorch's but for dims of size 1, left to ``_laid_out_like``) with strides all
    positive and distinct, both keep them if dense, else sort the dims by them alike."""
    base = getattr(x, "_view", (None,))[0]
    if base is None or not base.array.flags.c_contiguous:
        return False
    if base.array.base is not None and hasattr(base, "_layout_steps"):  # (the first is fast)
        return False
    shape, steps = x.array.shape, x.array.strides
    return 1 not in shape and len(set(steps)) == len(steps) and min(steps, default=1) > 0


def _suggested_format(t: Tensor) -> Any:
    """PyTorch's ``suggest_memory_format``: the layout that ``t``'s strides look like."""
    if t.ndim in (4, 5) and _strides_like_channels_last(t.stride(), t.shape):
        return channels_last if t.ndim == 4 else channels_last_3d
    return contiguous_format


def _channels_last_strides(shape: tuple) -> tuple:
    """The dense strides of a 4-D (5-D) ``shape`` with the channels (dim 1) innermost and the
    batch outermost, as PyTorch's ``channels_last`` (``channels_last_3d``)."""
    stride, step = [0] * len(shape), 1
    for d in (1, *range(len(shape) - 1, 1, -1), 0):
        stride[d], step = step, step * shape[d]  # (a dim of size 0 zeroes those outside it)
    return tuple(stride)


def _memory_of(array: Any) -> Any:
    """The memory (1-D, a view) of ``array``, whose entries are dense with positive strides."""
    return array.ravel("K")


def _viewed(array: Any) -> Any:
    """``array`` viewed again: a new array of the same memory, shape and strides."""
    return array.view()


def _copy_to_strides(array: Any, stride: tuple) -> Any:
    """The memory (1-D) of a copy of ``array`` whose entries lie ``stride`` (dense, in
    entries) apart."""
    memory = namespace(array).empty(array.size, array.dtype)
    movement._strided(memory, array.shape, stride, 0)[...] = array
    return memory


def _dense(array: Any) -> bool:
    """Whether the entries fill the memory from the first one on, each place once, in some
    order of the dims (PyTorch's ``is_non_overlapping_and_dense``)."""
    step = array.itemsize
    for stride, size in sorted((s, n) for s, n in zip(array.strides, array.shape) if n != 1):
        if stride != step:
            return False
        step *= size
    return True


def _writes_overlap(array: Any) -> bool:
    """Whether entries of the read-only ``array`` share memory (an expanded view: a stride of
    0 over a dim of two or more; an ``as_strided`` view whose windows overlap, where PyTorch
    writes in its own loop order, which scratchgrad does not copy), so that writes are refused."""
    if getattr(array.flags, "writeable", True):
        return False
    strides = [stride // array.itemsize for stride in array.strides]
    return builtins.all(stride >= 0 for stride in strides) and movement.overlaps_itself(
        array.shape, strides
    )


def _torch_strides(out: Any, x: Any, cls: type, attributes: dict) -> Any:
    """The layout ``out``, the view step ``cls`` taken from the layout ``x`` by NumPy, with
    PyTorch's strides where a dim of size 1 lets the two differ (NumPy gives a new dim the
    stride 0, and leaves dims of size 1 out when it reshapes). Each step is PyTorch's own
    rule, taken from its input, so a later step keeps it: ``x[None, 1:]`` of a 3x3 ``x`` has
    strides (9, 3, 1), as its None is an ``unsqueeze`` of ``x`` before the slice."""
    if not out.size:  # (strides of tensors without entries are read elsewhere)
        return out
    strides = [s // out.itemsize for s in out.strides]
    if cls is movement.GetItem:
        for d, stride in _unsqueezed_strides(x, attributes["index"]).items():
            strides[d] = stride
    elif cls is movement.Expand:  # PyTorch's inferExpandGeometry
        lead = out.ndim - x.ndim
        for d in reversed(range(out.ndim)):
            if d >= lead and x.shape[d - lead] == out.shape[d]:  # (NumPy zeroes it if 1)
                strides[d] = x.strides[d - lead] // x.itemsize
            elif d < lead and out.shape[d] == 1:  # a new dim: the one after it, times its size
                strides[d] = strides[d + 1] * out.shape[d + 1] if d + 1 < out.ndim else 0
    elif cls is movement.Unsqueeze:  # the size times the stride of the dim it goes before
        dim, kept = attributes["dim"], [s // x.itemsize for s in x.strides]
        new = x.shape[dim] * kept[dim] if dim < x.ndim else 1
        strides = [*kept[:dim], new, *kept[dim:]]
    elif cls is movement.Reshape:
        strides = _view_strides(x, out.shape) or strides
    if tuple(strides) == tuple(s // out.itemsize for s in out.strides):
        return out
    stride_tricks = namespace(out).lib.stride_tricks  # (dims of size 1 reach no new memory)
    return stride_tricks.as_strided(out, out.shape, [s * out.itemsize for s in strides])


def _unsqueezed_strides(x: Any, index: tuple) -> dict:
    """{dim of ``x[index]``: its stride} for each None of a basic ``index``: PyTorch takes the
    items in order, each None an ``unsqueeze`` at the dim it stands at, whose stride is the
    size times the stride of ``x``'s dim not yet indexed there (1 past the last)."""
    if not _is_basic_index(index):
        return {}  # integer arrays or masks: a copy, whose strides NumPy gives
    taking = sum(1 for item in index if item is not None and item is not Ellipsis)
    new, dim, out_dim = {}, 0, 0
    for item in index:
        if item is None:
            new[out_dim] = x.shape[dim] * x.strides[dim] // x.itemsize if dim < x.ndim else 1
            out_dim += 1
        elif item is Ellipsis:
            dim, out_dim = dim + x.ndim - taking, out_dim + x.ndim - taking
        else:
            dim, out_dim = dim + 1, out_dim + (type(item) is slice)
    return new


def _is_int_item(item: Any) -> bool:
    return isinstance(item, numbers.Integral) and not isinstance(item, bool)


def _is_basic_index(index: tuple) -> bool:
    """Whether ``index`` (a tuple of items) selects a view: ints, slices, None and Ellipsis,
    no integer arrays or masks."""
    return builtins.all(
        item is None or item is Ellipsis or type(item) is slice or _is_int_item(item)
        for item in index
    )


def _view_strides(x: Any, shape: tuple) -> list | None:
    """The strides, in entries, of ``x.view(shape)`` as PyTorch computes them (its
    ``computeStride``, which gives each dim of size 1 the stride of the chunk it joins), or
    None where the view needs a copy."""
    if not x.ndim:
        return [1] * len(shape)
    old = [s // x.itemsize for s in x.strides]
    strides = [0] * len(shape)
    view_dim, base, x_count, view_count = len(shape) - 1, old[-1], 1, 1
    for dim in reversed(range(x.ndim)):
        x_count *= x.shape[dim]
        if dim and (x.shape[dim - 1] == 1 or old[dim - 1] == x_count * base):
            continue  # the chunk of dims that run on in memory goes on
        while view_dim >= 0 and (view_count < x_count or shape[view_dim] == 1):
            strides[view_dim] = view_count * base
            view_count *= shape[view_dim]
            view_dim -= 1
        if view_count != x_count:
            return None
        if dim:
            base, x_count, view_count = old[dim - 1], 1, 1
    return strides if view_dim == -1 else None


class _ViewCopy:
    """A ``view()`` that scratchgrad had to copy (PyTorch's layout allows the view where
    scratchgrad's memory does not: a convolution's result keeps the batch last), kept equal
    to the memory it copies, as a view would be. It is read-only (a write into it could not
    reach that memory), and it shares its source's version counter, which calls this after
    every in-place change of that memory (``autograd.graph.increment_version``); in a graph,
    it is taken again from its base's new history after a recorded change, as a view is.

    >>> import scratchgrad as sg
    >>> y = sg.nn.functional.conv2d(sg.ones(2, 1, 3, 3), sg.ones(1, 1, 1, 1))
    >>> flat = y.view(2, 9)
    >>> _ = y.mul_(2)
    >>> flat[0, 0]
    tensor(2.)
    """

    __slots__ = ("copy", "source")

    def __init__(self, copy: Tensor, source: Any) -> None:
        self.copy, self.source = weakref.ref(copy), source

    @staticmethod
    def keep_up(copy: Tensor, source: Tensor, shape: tuple) -> None:
        """Make ``copy``, ``source.reshape(shape)``, follow ``source``'s memory."""
        if hasattr(copy.array.flags, "writeable"):  # (CuPy's arrays have no read-only flag)
            copy.array.flags.writeable = False
        _function.note_view(copy, source, movement.Reshape, {"shape": shape})
        copy._counter.append(_ViewCopy(copy, source.array))

    def __deepcopy__(self, memo: dict) -> _ViewCopy:
        """In a deep copy of the memory's counter: a watcher that is gone (dropped at the first
        in-place change), since the copied memory is new and the copy it kept up to date was
        this memory's (an in-place change of a deep copy refreshed the original's copy)."""
        gone = object.__new__(_ViewCopy)
        gone.copy, gone.source = _gone, None
        return gone

    def __call__(self) -> bool:
        """Copy the source's memory into the copy again; whether the copy still lives."""
        copy = self.copy()
        if copy is None:
            return False
        recorder = capture_hook.recorder
        if recorder is not None:
            recorder.refuse("an in-place change of a tensor that a view() copied (Tensor.view)")
        array = copy.array
        writeable = getattr(array.flags, "writeable", None)
        if writeable is not None:
            array.flags.writeable = True
        namespace(array).copyto(array, self.source.reshape(array.shape))
        if writeable is not None:
            array.flags.writeable = writeable
        return True


def _saved_new_result(result: Tensor, other: Any) -> bool:
    """Whether ``result`` is new memory made by an op recorded in place, which its node saved
    (the counter made on saving), not ``other`` nor a view of another tensor (copy_ gives an
    expand of its source)."""
    fresh = result is not other and not hasattr(result, "_view")  # (unset on all but views)
    return fresh and result._counter is not None and result._ctx is not None


class _SavedResultWatch:
    """A watcher in a memory's version counter (as ``_ViewCopy``): the result of an op
    recorded in place (``Tensor._record_in_place``), which its node saved for backward. The
    result is a copy here but is that memory in PyTorch, so every later in-place change of the
    memory counts as a change of the result, and the node's backward refuses it as PyTorch's
    (``y.exp_(); y[0] = 1`` then backward: exp's gradient needs the old exp)."""

    __slots__ = ("counter", "node")

    def __init__(self, result: Tensor) -> None:
        self.counter, self.node = result._counter, weakref.ref(result._ctx)

    def __deepcopy__(self, memo: dict) -> Callable:
        return _gone  # (a deep copy's memory is new: its changes are not the result's)

    def __call__(self) -> bool:
        """Count a change of the result; whether its node still lives."""
        if self.node() is None:
            return False
        self.counter[0] += 1
        return True


def _gone() -> None:
    """A dead weak reference's answer (see ``_ViewCopy.__deepcopy__``)."""


def _write_error(name: str, array: Any, error: Exception | str) -> RuntimeError:
    """The error of a write into ``array`` that the array module refused: PyTorch's where
    entries share memory, and why a read-only one is (NumPy's own message says only
    "read-only"); ``error`` as it is otherwise (shapes that do not match)."""
    if _writes_overlap(array):
        error = (
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )
    elif not getattr(array.flags, "writeable", True):
        error = (
            f"{error}: the tensor is read-only here (a view of an expand()ed tensor, whose "
            "entries share memory, where PyTorch writes through to the tensor expanded; a "
            "view() that scratchgrad had to copy, since a convolution's result keeps the batch "
            "last in memory, so a write would not reach the tensor it views; or a view of "
            "read-only memory). Write into the original tensor, or clone() this one"
        )
    return RuntimeError(f"{name}: {error}")


def _assign(array: Any, index: Any, value: Any) -> None:
    try:
        array[index] = value
    except IndexError as error:
        array[movement.selecting_nothing(array.shape, index, error)] = value


def _copied(array: Any) -> Any:
    return array.copy()


def _fill(array: Any, value: Any) -> None:
    array.fill(value)


def _copy_into(array: Any, source: Any) -> None:
    xp = namespace(array)
    xp.copyto(array, xp.broadcast_to(source, array.shape), casting="unsafe")


def _index_on_device(item: Any, array: Any) -> Any:
    """An index array moved to the device of the ``array`` it indexes (a CPU index into a GPU
    tensor), or PyTorch's error for a device index into a CPU tensor."""
    where = backend.device_of(array)
    if backend.is_on(item, where):  # (``array`` may be a NumPy scalar, or vmap's batch)
        return item
    if where is backend.cpu:
        raise RuntimeError(
            f"indices should be either on cpu or on the same device as the indexed tensor "
            f"(cpu), got indices on {backend.device_of(item)}"
        )
    return backend.to_device(item, where)


def _check_bounds(items: list, shape: tuple) -> None:
    """Raise PyTorch's IndexError for an integer-array index out of bounds: CuPy would wrap it
    around instead (a GPU cannot raise cheaply)."""
    consumed = [
        0
        if i is None or i is Ellipsis
        else i.ndim
        if backend.is_array(i) and i.dtype == bool
        else 1
        for i in items
    ]
    dim = 0
    for item, n in zip(items, consumed):
        if item is Ellipsis:
            dim = len(shape) - sum(consumed[items.index(Ellipsis) + 1 :])
        elif backend.is_array(item) and item.dtype != bool and item.size and dim < len(shape):
            if type(item) is MetaArray:  # no values to check, as PyTorch's meta kernels
                return
            size = shape[dim]
            if item.min() < -size or item.max() >= size:
                bad = item[(item < -size) | (item >= size)].flat[0]
                raise IndexError(
                    f"index {bad} is out of bounds for dimension {dim} with size {size}"
                )
        dim += n


def _overwrite(old: Tensor, value: Any) -> Tensor:
    """``value`` in ``old``'s dtype and shape: what copy_, fill_, setitem and the random fills
    write. ``old`` gets a zero gradient (its entries are gone), through a ``where`` that keeps
    the result in its graph, as PyTorch's FillBackward: a constant written into a result that
    requires grad leaves a result, not a new leaf."""
    if not isinstance(value, Tensor):
        value = Tensor._from_data(value, old.dtype)
    return _zero_gradient_to(value.to(old.dtype).expand(old.shape), old)


def _zero_gradient_to(out: Tensor, *operands: Any) -> Tensor:
    """``out``, in its dtype, in the graphs of those of ``operands`` that require grad, with a
    zero gradient to each (PyTorch's for a step function, a draw, an overwritten value):
    through a ``where`` that keeps ``out`` everywhere."""
    dtype = out.dtype
    for operand in operands:
        if isinstance(operand, Tensor) and operand.requires_grad:
            out = binary.Where.apply(namespace(out.array).asarray(True), out, operand)
    return out if out.dtype == dtype else out.to(dtype)


def vmapped(name: str, *operands: Any) -> Callable | None:
    """vmap's version of the op ``name`` where one of ``operands`` is batched, else None.

    An op that reads several operands' arrays directly, not through Functions, is not batched
    by vmap's rules; vmap's batched tensor (func/batching.py) has a static method ``name``
    that runs it on the whole batch, whichever operand is batched. Plain tensors have none.
    """
    if _function._vmap_dispatch is None:  # no vmap is running: one look-up
        return None
    for t in operands:
        batched = getattr(type(t), name, None)
        if batched is not None:
            return batched
    return None


def _reads_0d_as_1d(*operands: Any) -> bool:
    """The tensors among gather's or scatter's ``operands`` have at most 1 dim, and one has
    none: PyTorch reads a 0-d one as 1-d then (and refuses it beside more dims)."""
    ndims = [t.ndim for t in operands if isinstance(t, Tensor)]
    return 0 in ndims and max(ndims) <= 1


def _as_1d(t: Any) -> Any:
    """A 0-d tensor as one of shape (1,) (gather and scatter read it so); anything else as it
    is."""
    return t.reshape(1) if isinstance(t, Tensor) and t.ndim == 0 else t


def _scale_first(name: str, keyword: str, scale: Any, *operands: Any) -> tuple:
    """The operands, then the scale, of PyTorch's deprecated overloads that take the scale
    first, as old optimizers call them (``p.data.add_(-lr, grad)``, ``v.addcmul_(1 - beta2,
    g, g)``), with PyTorch's warning; the scale must be a number.

    >>> _scale_first("add", "alpha", 2, "other")
    ('other', 2)
    """
    if not isinstance(scale, numbers.Number) or len(operands) != (2 if keyword == "value" else 1):
        raise invalid_combination(name, scale, *operands)
    warnings.warn(
        f"This overload of {name} is deprecated: {name}(Number {keyword}, Tensor ...); pass "
        f"{keyword} as a keyword, {name}(..., {keyword}={keyword})",
        UserWarning,
        stacklevel=3,
    )
    return (*operands, scale)


# the names of the two operands of the products that add a tensor, after the first letters
_OPERANDS = {"mat": ("mat1", "mat2"), "batch": ("batch1", "batch2"), "mv": ("mat", "vec")}
_OPERANDS["vec"] = ("vec1", "vec2")


def _scales_first(name: str, operands: str, args: tuple, beta: Any, alpha: Any) -> tuple:
    """The two operands, beta and alpha, of PyTorch's deprecated overloads of addmm, addmv,
    addr, addbmm and baddbmm that take the scales first (``M.addmm(beta, alpha, mat1, mat2)``,
    ``M.addmm(beta, mat1, mat2)``; the module functions ``torch.addmm(beta, M, alpha, mat1,
    mat2)``), with PyTorch's warning; the scales must be numbers, and not given again."""
    scales = args[:-2]
    if (
        len(scales) not in (1, 2)
        or not builtins.all(isinstance(s, numbers.Number) for s in scales)
        or not builtins.all(isinstance(t, Tensor) for t in args[-2:])
        or (beta, alpha) != (1, 1)
    ):
        raise invalid_combination(name, *args)
    first, second = _OPERANDS[operands]
    numbers_given = ", ".join(f"Number {s}" for s in ("beta", "alpha")[: len(scales)])
    warnings.warn(
        f"This overload of {name} is deprecated:\n\t{name}({numbers_given}, Tensor {first}, "
        f"Tensor {second})\nConsider using one of the following signatures instead:\n\t"
        f"{name}(Tensor {first}, Tensor {second}, *, Number beta = 1, Number alpha = 1)",
        UserWarning,
        stacklevel=3,
    )
    return (*args[-2:], *scales, 1)[:4]


def _number_other_and_alpha(name: str, other: Any, number_alpha: tuple, alpha: Any) -> tuple:
    """``other`` and ``alpha`` of rsub and subtract, as PyTorch's overloads ``(Tensor other, *,
    Number alpha=1)`` and ``(Number other, Number alpha=1)``: alpha is positional beside a
    number only, and then no keyword."""
    alpha = number_argument(name, "alpha", alpha)
    if not number_alpha:
        return other, alpha
    if alpha != 1 or len(number_alpha) > 1 or not _reads_as_number(other):
        raise invalid_combination(name, other, *number_alpha)
    return number_argument(name, "other", other), number_argument(name, "alpha", *number_alpha)


def _other_and_alpha(name: str, other: Any, legacy: tuple, alpha: Any) -> tuple:
    """``other`` and ``alpha`` of add, sub and their in-place forms, which take ``alpha`` as a
    keyword only, a number: a third positional argument is PyTorch's deprecated ``add(alpha,
    other)`` of old code (``p.data.add_(-lr, grad)``), without the keyword then."""
    alpha = number_argument(name, "alpha", alpha)
    if not legacy:
        return other, alpha
    deprecated = _reads_as_number(other) and isinstance(legacy[0], Tensor | numbers.Number)
    if alpha != 1 or not deprecated:
        raise invalid_combination(name, other, *legacy)
    return _scale_first(name, "alpha", number_argument(name, "alpha", other), *legacy)


def invalid_combination(name: str, *arguments: Any) -> TypeError:
    """PyTorch's TypeError for arguments that fit none of the overloads of ``name``."""
    given = ", ".join(type(a).__name__ for a in arguments)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({given})")


def _scaled(x: Tensor, other: Any, alpha: Any) -> Any:
    """``alpha * other`` for ``x + alpha * other`` (add, sub and their in-place forms), after
    PyTorch's checks of ``alpha`` against the dtype of the result; for a bool result ``alpha``
    is read as a bool, as PyTorch reads it (``other * 2`` would widen a bool ``other``)."""
    dtype = result_dtype(x, other)
    if isinstance(alpha, bool) and dtype != backend.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, (float, complex)) and not backend.is_floating(dtype):
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )
    if isinstance(alpha, complex):
        raise RuntimeError(
            "For non-complex input tensors, argument alpha must not be a complex number."
        )
    if dtype == backend.bool_:
        alpha = bool(alpha)
    if alpha == 1:
        return other
    if isinstance(other, Tensor) and other.dtype != dtype:  # (a 0-d bool times 2 is int64,
        other = other.to(dtype)  # which would then widen a uint8 x)
    return other * alpha


def _clamp_bound(bound: Any, dtype: Any) -> Any:
    """A number bound of ``clamp`` as PyTorch converts it to the tensor's ``dtype``: an int as
    ``written_number`` reads it, and a finite number past a floating dtype's largest raises
    (float16's 70000; inf passes), where NumPy would round it to inf."""
    if type(bound) is int and dtype.kind in "iu":
        return written_number(bound, dtype)
    number = isinstance(bound, (int, float)) and backend.is_floating(dtype)
    if number and math.isfinite(bound) and abs(bound) > float(ml_dtypes.finfo(dtype).max):
        raise RuntimeError(f"clamp: value cannot be converted to type {dtype} without overflow")
    return bound


def _pointwise_operands(name: str, x: Tensor, tensor1: Any, tensor2: Any, value: Any) -> tuple:
    """``x``, ``tensor1``, ``tensor2`` of ``addcmul`` or ``addcdiv`` in their common dtype, which
    PyTorch finds for the three together (``int8 () + value * bool () * int16 ()`` is int16,
    where a float ``value`` times the bool would make it float32), and ``value`` read in it
    as ``written_number`` reads it. PyTorch's TypeError for a number operand, its errors for
    bools and for an integer division."""
    _tensor_other(name, tensor1, "tensor1", 2)
    _tensor_other(name, tensor2, "tensor2", 3)
    if name == "addcdiv" and not any(
        t.is_floating_point() or t.is_complex() for t in (tensor1, tensor2)
    ):
        raise RuntimeError(
            "addcdiv: integer division with addcdiv is no longer supported; compute "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integers"
        )
    dtype = x.array.dtype
    if not dtype == tensor1.array.dtype == tensor2.array.dtype:  # (Adam's calls: one dtype)
        dtype = result_type_of(x, tensor1, tensor2)
    if dtype == backend.bool_:
        raise NotImplementedError(f"{name}: \"{name}_cpu_out\" not implemented for 'Bool'")
    value = written_number(value, dtype)  # (-0.5 into uint8 raises, 2.7 into int8 is 2)
    return x.to(dtype), tensor1.to(dtype), tensor2.to(dtype), value


def _beside(value: int | float, dtype: Any) -> Any:
    """A Python number beside a tensor of ``dtype`` in ``where``, checked as PyTorch checks it:
    an int against an integer dtype (``written_number``), a float against float32 and
    complex64 (``wrapped_float``; 2.7 beside an int tensor promotes it)."""
    if type(value) is int:
        return written_number(value, dtype)
    if -_FLOAT32_LARGEST <= value <= _FLOAT32_LARGEST:  # (the common case, without a call)
        return value
    return wrapped_float(value, dtype)


_FLOAT32_LARGEST = float(ml_dtypes.finfo(backend.float32).max)


def _rounded(value: Any, like: Tensor) -> Any:
    """A number beside a 16-bit tensor (a ``SixteenBitNumber``) rounded to its dtype, as
    PyTorch writes it (``where``: NumPy would widen to float64); anything else as it is."""
    if type(value) is backend.SixteenBitNumber:
        return namespace(like.array).asarray(float(value), like.array.dtype)
    return value


def _sixteen_bit_sum(x: Tensor, other: Any, alpha: Any) -> Tensor:
    """``x + alpha * other`` for a 16-bit float ``x``, as PyTorch's vectorized CPU kernel: one
    fused multiply-add in float32 of ``alpha`` rounded to the dtype, rounded once (the product
    of two 16-bit numbers is exact in float32, so widening and adding gives the FMA's bits).
    NOTE: PyTorch's scalar loop, which takes the last elements of a size not a multiple of its
    vector length, rounds the product to 16 bits first: those few entries can differ by a bit."""
    dtype = result_dtype(x, other)
    if dtype not in backend.SIXTEEN_BIT or not isinstance(other, Tensor):
        return x + _scaled(x, other, alpha)
    _scaled(x, other, alpha)  # PyTorch's checks of alpha
    alpha = float(xp.asarray(alpha, dtype))  # as PyTorch's alpha_scalar.to<scalar_t>()
    wide = backend.float32
    return (x.to(wide) + other.to(dtype).to(wide) * alpha).to(dtype)


def _refuse_bool_subtraction(x: Tensor, other: Any) -> None:
    """PyTorch refuses ``-`` where an operand is bool (a tensor, or a Python bool): raise its
    error, which says what to use instead."""
    count = (x.array.dtype.kind == "b") + (
        isinstance(other, bool) or isinstance(other, Tensor) and other.array.dtype.kind == "b"
    )
    if count == 2:
        raise RuntimeError(
            "sub: subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead."
        )
    if count:
        raise RuntimeError(
            "sub: subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _elementwise(name: str, x: Any, *args: Any, **kwargs: Any) -> Any:
    """``x``'s array module's function ``name`` on ``x`` and ``args``, for the ops that are no
    Function (comparisons, integer division); operands on two devices raise PyTorch's error."""
    try:
        module = xp if type(x) is ndarray else namespace(x)
        out = getattr(module, name)(x, *args, **kwargs)
    except TypeError:
        mixed = backend.same_device_error(name, (x, *args))
        if mixed is None:
            raise
        raise mixed from None
    except ValueError as error:  # shapes that do not broadcast: PyTorch's RuntimeError
        if "broadcast" not in str(error):
            raise
        shapes = ", ".join(str(tuple(a.shape)) for a in (x, *args) if hasattr(a, "shape"))
        raise RuntimeError(f"{name}: shapes {shapes}: {error}") from None
    # NOTE: NumPy's ufuncs make a scalar of 0-d operands, which is no array (np.asarray of the
    # tensor refused it) and is read-only (fill_ and zero_ wrote into a copy, silently)
    return module.asarray(out) if isinstance(out, xp.generic) else out


def _check_assigned_grad(t: Tensor, grad: Any) -> None:
    """PyTorch's errors for ``t.grad = grad``: no tensor, ``t`` itself, or another dtype,
    device or shape than ``t``'s (checked in that order, as there)."""
    if not isinstance(grad, Tensor):
        raise TypeError(
            f"assigned grad expected to be a Tensor or None but got grad of type {type_name(grad)}"
        )
    if grad is t:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad.dtype != t.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{grad.dtype.name}' to a tensor with "
            "dtype "
            f"'{t.dtype.name}'. Please ensure that the gradient and the tensor have the same dtype"
        )
    if grad.device.type != t.device.type:
        raise RuntimeError(
            f"attempting to assign a gradient with device type '{grad.device.type}' to a tensor "
            f"with device type '{t.device.type}'. Please ensure that the gradient and the tensor "
            "are on the same device"
        )
    if grad.shape != t.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of size "
            f"'{list(t.shape)}'. Please ensure that the gradient and the tensor are the same size"
        )


def _check_as_numpy(t: Tensor) -> None:
    """PyTorch's errors for ``t.numpy()`` and ``np.asarray(t)``: a tensor that requires grad
    while grad mode is on (the array would leave the graph unseen), or one on another device."""
    if t.requires_grad and _state.enabled:
        raise RuntimeError(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        )
    where = backend.device_of(t.array)
    if where is not backend.cpu:
        raise TypeError(
            f"can't convert {where} device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first."
        )


mantissa_exponent = namedtuple("frexp", ["mantissa", "exponent"])
mantissa_exponent.__repr__ = lambda self: (  # PyTorch's
    f"torch.return_types.frexp(\nmantissa={self.mantissa!r},\nexponent={self.exponent!r})"
)


def _tensor_other(name: str, other: Any, what: str = "other", position: int = 2) -> Tensor:
    """``other``, which must be a Tensor: PyTorch's TypeError for the ops that take no number."""
    if not isinstance(other, Tensor):
        raise TypeError(
            f"{name}(): argument '{what}' (position {position}) must be Tensor, not "
            f"{type(other).__name__}"
        )
    return other


def _float_pair(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """``x`` and ``y`` (one may be a Python number) as tensors of their promoted dtype, the
    default floating one for integers and bools, as PyTorch's xlogy, copysign and ldexp; complex
    stays complex."""
    first = x if isinstance(x, Tensor) else y
    dtype = result_dtype(x, y)
    dtype = dtype if backend.can_require_grad(dtype) else backend.default_float
    return tuple(
        t.to(dtype) if isinstance(t, Tensor) else first.new_tensor(t, dtype=dtype) for t in (x, y)
    )


def _shift_in_range(shift: Any, dtype: Any) -> Any:
    """Where a shift count is in [0, the width of ``dtype``): elsewhere PyTorch's shifts give
    0 (or the sign), where NumPy's take the count modulo the width."""
    bits = 8 * backend.to_dtype(dtype).itemsize
    if isinstance(shift, Tensor):
        return (shift >= 0) & (shift < bits)
    return Tensor._make(xp.asarray(0 <= shift < bits))


from scratchgrad.autograd import engine as _engine  # noqa: E402  (the engine walks Tensors)
