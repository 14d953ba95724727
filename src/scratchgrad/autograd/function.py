"""``Function``: one differentiable operation, and the node it leaves in the graph.

A subclass gives ``forward`` and ``backward``, both on Tensors, as PyTorch's (the library's own
ops, classes defined in the package, keep their ``forward`` on arrays, for speed: a user's is
wrapped by ``_on_tensors``). ``apply`` runs forward and, when a gradient is needed, keeps the
instance as the graph node: it remembers its parents (the nodes of its inputs) and what
``forward`` saved, never the tensor it made, so no reference cycle keeps a graph alive.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.grad_mode import InferenceCounter, no_grad
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.autograd.graph import SAVED_TENSORS_HOOKS, increment_version
from scratchgrad.backend import COMPLEX_DTYPES, ndarray, xp

_ARRAY_CLASSES = backend.ARRAY_CLASSES  # every backend's array class (a live view)
_new = object.__new__
_sequence = itertools.count(1)  # numbers the recorded nodes in order (atomic under the GIL)

# While a vmap runs, scratchgrad.func sets this to its dispatcher, which runs an op that has
# batched arguments through the op's batching rule (and returns None when none is batched).
# None otherwise, so outside vmap the check in ``apply`` costs one global read.
_vmap_dispatch = None


class Function:
    """Base class for differentiable operations, built-in and user-defined alike.

    Example, a hand-written derivative (Legendre polynomial P3):

    >>> import scratchgrad as sg
    >>> class P3(sg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return 0.5 * (5 * x**3 - 3 * x)
    ...
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return grad * 1.5 * (5 * x**2 - 1)
    >>> x = sg.tensor(2.0, requires_grad=True)
    >>> P3.apply(x).backward()
    >>> x.grad
    tensor(28.5000)
    """

    parents: tuple = ()  # one entry per forward argument: a Function, a leaf Tensor, or None
    sequence_nr = 0  # when it was recorded: a node is always newer than the nodes it uses
    out_shape: tuple = ()
    out_dtype = None
    hooks: tuple = ()  # hooks registered on the tensor this node made
    # A user's Function: which forward arguments were Tensors (PyTorch's node has an input for
    # each of those only: its next_functions, its hooks' grad_inputs); None for the library's
    tensor_args: tuple | None = None
    saved: tuple | None = ()  # None once released after backward
    is_view = False  # may the result share memory with the first input (reshape, index...)?
    _to_save: tuple = ()
    _non_differentiable: tuple = ()  # outputs marked by mark_non_differentiable
    _dirty: tuple = ()  # inputs marked by mark_dirty
    materialize_grads = True  # see set_materialize_grads
    # A user's Function under vmap: True runs it on each batch member, its backward too
    # (PyTorch's name; without it, vmap raises, as PyTorch's does)
    generate_vmap_rule = False
    # One of scratchgrad's own ops (set for every class defined in the package): its backward
    # keeps no reference to the gradients it returns, so the engine may hand them to .grad
    # without a copy. User-defined Functions are not trusted with that.
    builtin = False
    # PyTorch's name for this node ("MulBackward0"); a subclass sets it where its class name
    # differs from PyTorch's op name, else __init_subclass__ derives it
    backward_name: str = ""
    # The safety gate for complex numbers: a backward written for real numbers gives a wrong
    # gradient for complex ones. A recorded op with a complex result is refused, or its node
    # becomes the op's ``complex_twin`` (a subclass whose backward is correct for complex),
    # unless the op is ``complex_safe``: correct for complex as written (movement, sums, +, -).
    # (A real result of complex input comes only from ops/complex.py's ops and ops/fft.py's
    # IRFFT, which are correct, and from Copy, whose backward casts back: correct too.)
    complex_safe = False
    complex_twin: type | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Mark scratchgrad's own ops, and name each node as PyTorch does: ``<Op>Backward0``
        for a built-in op, ``<Class>Backward`` for a user's Function."""
        super().__init_subclass__(**kwargs)
        cls.builtin = cls.__module__.startswith("scratchgrad.")
        if "forward" in cls.__dict__ and cls.setup_context is not Function.setup_context:
            cls.forward = staticmethod(_with_setup_context(cls.forward))
        if "forward" in cls.__dict__ and not cls.builtin:  # a user's: on Tensors, as PyTorch's
            cls.forward = staticmethod(_on_tensors(cls.forward))
        if "backward_name" not in cls.__dict__:
            cls.backward_name = cls.__name__ + ("Backward0" if cls.builtin else "Backward")
        if not cls.builtin and "complex_safe" not in cls.__dict__:
            cls.complex_safe = True  # a user's backward is the user's to get right, as PyTorch's

    def name(self) -> str:
        """The node's name, as PyTorch's ``grad_fn.name()``.

        >>> import scratchgrad as sg
        >>> (sg.ones(2, requires_grad=True) * 2).grad_fn.name()
        'MulBackward0'
        """
        return self.backward_name

    @property
    def next_functions(self) -> tuple:
        """One ``(node, 0)`` pair per input, as PyTorch's: the Function that made it, an
        ``AccumulateGrad`` for a leaf that requires grad, or None where no gradient flows."""
        parents = self.parents
        if self.tensor_args is not None:
            parents = [p for p, is_tensor in zip(parents, self.tensor_args) if is_tensor]
        return tuple((AccumulateGrad.of(p) if isinstance(p, Tensor) else p, 0) for p in parents)

    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad_outputs)`` before this node's backward runs, as PyTorch's: it gets
        the tuple of the gradients of the node's result and may return a tuple of as many to
        use instead (None keeps them). Returns a handle whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> x = sg.ones(2, requires_grad=True)
        >>> y = x * 3
        >>> handle = y.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))
        >>> y.sum().backward()
        >>> x.grad
        tensor([30., 30.])
        """
        return _register_node_hook(self, "_prehooks", hook)

    def register_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's backward has run, as
        PyTorch's: ``grad_inputs`` holds the gradient for each of its inputs (None where none
        flows), ``grad_outputs`` those it was given; it may return a tuple to use instead of
        ``grad_inputs`` (None keeps them). Returns a handle whose ``remove()`` takes it off.

        >>> import scratchgrad as sg
        >>> x = sg.ones(2, requires_grad=True)
        >>> y = x * sg.tensor([3.0, 4.0])
        >>> seen = []
        >>> handle = y.grad_fn.register_hook(lambda grad_inputs, _: seen.append(grad_inputs))
        >>> y.sum().backward()
        >>> seen
        [(tensor([3., 4.]), None)]
        """
        return _register_node_hook(self, "_posthooks", hook)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def __deepcopy__(self, memo: dict) -> NoReturn:
        """Reached from a deep copy of a graph's result: refused, as PyTorch's, rather than copy
        the graph behind it (whose copied leaves would then take the gradients silently)."""
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment."
        )

    @staticmethod
    def forward(ctx: Function, *args: Any, **kwargs: Any) -> Any:
        """Compute the result from Tensors (and plain Python values); a primitive's, from arrays."""
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx: Function, inputs: tuple, output: Any) -> None:
        """PyTorch's newer style: a ``forward`` without ``ctx`` and this to fill ``ctx`` from the
        inputs (Tensors and plain values, as ``forward`` got them) and the output.

        >>> import scratchgrad as sg
        >>> class Cube(sg.autograd.Function):
        ...     @staticmethod
        ...     def forward(x):
        ...         return x**3
        ...
        ...     @staticmethod
        ...     def setup_context(ctx, inputs, output):
        ...         ctx.save_for_backward(inputs[0])
        ...
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return grad * 3 * x**2
        >>> x = sg.tensor(2.0, requires_grad=True)
        >>> Cube.apply(x).backward()
        >>> x.grad
        tensor(12.)
        """
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Function, grad: Any) -> Any:
        """Given the gradient of the result, return one gradient (or None) per argument.

        Written with Tensor operations, so gradients of gradients work.
        """
        raise NotImplementedError

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for ``backward``: inputs and the result keep their place in the graph.

        (The library's ops on a small network's hot path set ``ctx._to_save`` directly: the
        three calls of O1's step, its backward's two products included, were 1.3% of its
        instructions.)"""
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Accepted as PyTorch's: the tensors a ``jvp`` staticmethod would read. scratchgrad
        calls no ``jvp`` (``autograd.forward_ad`` finds tangents through ``backward``), so they
        are only kept (``saved_for_forward``), and a Function written for both modes runs."""
        self.saved_for_forward = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """Of a forward that returns several tensors, these get no gradient (indices, masks):
        their Tensors do not require grad, and ``backward`` receives zeros for them."""
        self._non_differentiable = outputs

    def mark_dirty(self, *tensors: Any) -> None:
        """These inputs were changed in place by ``forward``, which must return them: each
        comes back as the input's own Tensor, whose history continues from this node, as
        PyTorch's (its version counts the change; a leaf that requires grad is refused).

        >>> import scratchgrad as sg
        >>> class AddOne(sg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.mark_dirty(x.add_(1))
        ...         return x
        ...
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return grad
        >>> w = sg.ones(2, requires_grad=True)
        >>> y = w * 2
        >>> AddOne.apply(y) is y, y
        (True, tensor([3., 3.], grad_fn=<AddOneBackward>))
        """
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives ``None`` (not zeros) for an output of several that
        no gradient reached, or that is not differentiable, as PyTorch's."""
        self.materialize_grads = bool(value)

    def _saved_tensors(self, needed: tuple[bool, ...] | None = None) -> tuple:
        """``saved_tensors``, with None in place of each entry not ``needed`` (and its version
        unchecked): PyTorch saves a factor of a product only for the other factor's gradient,
        so ``0.9 * x[t + 1]`` followed by a write to ``x[t]`` is no error there either."""
        if self.saved is None:
            raise RuntimeError(
                f"{type(self).__name__}: trying to backward through the graph a second time, or to "
                "read saved tensors after they were freed; pass retain_graph=True to the first "
                "backward() or autograd.grad() if you need to"
            )
        tensors = []
        for i, (value, counter, version, array) in enumerate(self.saved):
            if needed is not None and not needed[i]:
                tensors.append(None)
                continue
            if counter is None:  # a number, or a Tensor made of another array (see _entries)
                tensors.append(value.unpack() if type(value) is _Packed else value)
                continue
            if counter[0] != version:
                raise RuntimeError(
                    f"{type(self).__name__}: a tensor of shape {value.shape} saved for the "
                    f"gradient was modified by an in-place operation (version {version} -> "
                    f"{counter[0]}); compute the in-place step out of place instead"
                )
            if array is None:  # the result's bare array (the node holds no Tensor of it)
                value = Tensor._make(value, self)
            elif value.array is not array:  # an input's Tensor, given another by `.data =`
                value = self.swapped_input(i, value, array)
            tensors.append(value)
        return tuple(tensors)

    # What ``forward`` saved, as Tensors (plain Python numbers stay numbers). (The property
    # calls the method itself: a property calling it would cost every backward one more call.)
    saved_tensors = property(_saved_tensors)

    def swapped_input(self, i: int, tensor: Tensor, array: Any) -> Tensor:
        """Saved tensor ``i``, an input whose array ``tensor.data = other`` replaced after
        forward, where it was ``array``. PyTorch saves the input itself, whose new memory its
        backward then reads, as here; an op whose PyTorch twin saves a view made in forward
        (which keeps the old memory) gives ``as_saved(tensor, array)`` instead."""
        return tensor

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """For each forward argument, whether a gradient flows to it (skip the others)."""
        needs = []  # a loop: a comprehension's function object costs more on 2 or 3 inputs
        for parent in self.parents:
            needs.append(parent is not None)
        return tuple(needs)

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Tensor:
        """Run the operation on Tensors (and plain values), recording it when a grad is needed.

        Keyword arguments are static attributes (a dim, a shape), never differentiated.
        """
        if _vmap_dispatch is not None:
            batched = _vmap_dispatch(cls, args, kwargs)
            if batched is not None:
                return batched
        ctx, record = cls(), False
        if _state.enabled:
            arrays, parents = [], []
            for a in args:
                if type(a) is Tensor or isinstance(a, Tensor):  # the first test is the fast one
                    arrays.append(a.array)
                    # _node_of(a), inlined, reading the slot behind the requires_grad property:
                    # this loop is the hottest code in the library
                    node = a._ctx if a._ctx is not None else a if a._requires_grad else None
                    parents.append(node)
                    record = record or node is not None
                else:
                    arrays.append(a)
                    parents.append(None)
        else:  # backward passes run here: nothing is recorded, so only the arrays are needed
            arrays = []
            for a in args:
                arrays.append(a.array if isinstance(a, Tensor) else a)
        try:
            if capture_hook.recorder is None:
                out = cls.forward(ctx, *arrays, **kwargs)
            else:  # scratchgrad.jit is recording: it runs forward and notes the call
                out = capture_hook.recorder.forward(cls, ctx, args, arrays, kwargs)
        except (ValueError, IndexError) as error:
            raise _with_shapes(error, cls, args) from None
        except TypeError:  # what NumPy and CuPy raise for arrays on two devices
            mixed = backend.same_device_error(cls.__name__.lower(), arrays)
            if mixed is None:
                raise
            raise mixed from None
        if type(out) is ndarray or type(out) in _ARRAY_CLASSES:  # NumPy's first: the fast test
            array = out
        elif isinstance(out, tuple):
            return _several_outputs(ctx, out, args, tuple(parents) if record else None)
        elif type(out) is Dirty:  # (a test here, off the fast path: see _on_tensors)
            array = out.array
        else:  # what NumPy's reductions give: a scalar (made 0-d)
            array = xp.asarray(out)
        # Tensor._make(array, ctx if record else None), inlined: one call less per op
        result = _new(Tensor)
        result.array, result._grad, result._requires_grad = array, None, record
        result._ctx, result._counter, result._hooks = ctx if record else None, None, ()
        if cls.is_view:
            _share_counter(result, args[0], cls, kwargs)
        if record:
            dtype = array.dtype
            # (the dtype's class, a set lookup: the cheapest test, on the hottest path)
            if type(dtype) in COMPLEX_DTYPES and not cls.complex_safe:
                _complex_twin_or_refuse(ctx)
            ctx.parents, ctx.sequence_nr = tuple(parents), next(_sequence)
            ctx.out_shape, ctx.out_dtype = array.shape, dtype
            if ctx._to_save:
                ctx.saved = _entries(ctx._to_save, args, out, result)
                ctx._to_save = ()
        if type(out) is Dirty:
            return _take_over_dirty(ctx, args, (array,), (result,))[0]
        return result


# Function.apply is swapped while an inference_mode block is open (its results are marked)
# and while a profile records (each call is timed), so the hottest function pays for
# neither otherwise; the two compose: a timed call runs ``untimed_apply``.
_apply = Function.apply.__func__  # the plain one
_marking = False  # an inference_mode block is open in some thread
_timing: Callable | None = None  # the profiler's wrapper, while a profile records


def _apply_in_inference_mode(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``Function.apply`` while an ``inference_mode`` block is open in some thread: its new
    result (``apply`` makes it without ``Tensor._make``) made an inference tensor, as
    ``tensor._make_in_inference_mode`` makes one (a view keeps its source's counter)."""
    result = _apply(cls, *args, **kwargs)
    if _state.inference and type(result) is Tensor and result._counter is None:
        result._counter = InferenceCounter()
    return result


def untimed_apply(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``Function.apply`` as it runs outside a profile (the profiler's wrapper calls it)."""
    return (_apply_in_inference_mode if _marking else _apply)(cls, *args, **kwargs)


def mark_inference_results(on: bool) -> None:
    """Make ``Function.apply`` mark inference tensors (``on``), or not: swapped with
    ``Tensor._make``'s marking (``tensor.mark_inference_tensors``)."""
    global _marking
    _marking = on
    _install_apply()


def time_apply(wrapper: Callable | None) -> None:
    """Make ``Function.apply`` the profiler's ``wrapper`` (None: stop timing)."""
    global _timing
    _timing = wrapper
    _install_apply()


def _install_apply() -> None:
    chosen = _timing or (_apply_in_inference_mode if _marking else _apply)
    Function.apply = classmethod(chosen)


def _complex_twin_or_refuse(ctx: Function) -> None:
    """A recorded op that is not ``complex_safe`` gave a complex result: its node becomes its
    op's ``complex_twin``, or, without one, the op is refused (its backward, written for real
    numbers, would give a wrong gradient)."""
    cls = type(ctx)
    if cls.complex_twin is None:
        raise RuntimeError(
            f"{cls.__name__.lower()}: complex tensors are not supported by scratchgrad yet "
            "(when a gradient is recorded)"
        )
    ctx.__class__ = cls.complex_twin


class ConjugateSaved:
    """Mixed into an op's ``complex_twin``: its backward reads the conjugates of the saved
    tensors. For a holomorphic op whose backward is grad * f'(saved), with real coefficients,
    that makes it grad * conj(f'(saved)), PyTorch's complex gradient (a * b gives a's
    gradient grad * conj(b))."""

    complex_safe = True

    def _saved_tensors(self, needed: tuple[bool, ...] | None = None) -> tuple:
        saved = Function._saved_tensors(self, needed)
        return tuple(
            t.conj()
            if isinstance(t, Tensor)
            else t.conjugate()
            if isinstance(t, complex | xp.complexfloating)  # a number operand (z * 1j)
            else t
            for t in saved
        )

    saved_tensors = property(_saved_tensors)


def holomorphic_twin(op: type) -> None:
    """Give ``op`` its complex twin (see ``Function.complex_twin``): an op whose backward is
    grad * f'(saved) with real coefficients, so that reading the saved values' conjugates
    gives PyTorch's complex gradient, grad * conj(f'(z))."""
    op.complex_twin = type(
        f"Complex{op.__name__}",
        (ConjugateSaved, op),
        {"backward_name": op.backward_name, "__doc__": f"{op.__name__}'s node for complex z."},
    )


def _several_outputs(ctx: Function, outs: tuple, args: tuple, parents: tuple | None) -> tuple:
    """A forward that returned several arrays: one Tensor each, as PyTorch.

    The graph node's result is the differentiable outputs packed into one flat array, and each
    output is a slice of it (``_Unpack``), so the engine sums each output's gradient into the
    node's as for any other node; the node then hands ``backward`` one gradient per output.
    """
    # a user's forward may return plain values too (a count, None): they come back as they
    # are, and backward gets None for them, as PyTorch's
    plain = [not ctx.builtin and type(out) not in _ARRAY_CLASSES for out in outs]
    arrays = [backend.as_array(out) for out in outs]
    if (  # the gate of a single result's, above
        parents is not None
        and not ctx.complex_safe
        and any(type(array.dtype) in COMPLEX_DTYPES for array in arrays)
    ):
        _complex_twin_or_refuse(ctx)
    marked = {id(out) for out in ctx._non_differentiable}
    packed_at, size = [], 0  # per output: its (start, stop) in the packed array, or None
    for out, array, is_plain in zip(outs, arrays, plain):
        if (
            parents is not None
            and not is_plain
            and backend.can_require_grad(array.dtype)
            and id(out) not in marked
        ):
            packed_at.append((size, size + array.size))
            size += array.size
        else:
            packed_at.append(None)
    if all(at is None for at in packed_at):
        return tuple(o if p else Tensor._make(a) for o, a, p in zip(outs, arrays, plain))
    differentiable = [a for a, at in zip(arrays, packed_at) if at is not None]
    packed_dtype = xp.result_type(*(a.dtype for a in differentiable))
    # each output packed in its memory order and unpacked with its layout: a transposed one
    # (attention's batch-first output) comes back transposed, so that what reads it adds in
    # the forward's order (a compiled module's outputs, replayed, have eager's bits)
    orders = [_memory_order(a) for a in arrays]
    packed_orders = [o for o, at in zip(orders, packed_at) if at is not None]
    if capture_hook.recorder is None:
        packed = _pack(differentiable, packed_dtype, packed_orders)
    else:
        packed = capture_hook.recorder.call(_pack, differentiable, packed_dtype, packed_orders)
    node = _SeveralOutputs()
    node.ctx, node.reached = ctx, set()
    node.outputs = [
        (a.shape, a.dtype, at, p, o) for a, at, p, o in zip(arrays, packed_at, plain, orders)
    ]
    node.parents = ctx.parents = parents
    node.sequence_nr, node.out_shape, node.out_dtype = next(_sequence), packed.shape, packed_dtype
    if ctx._to_save:
        ctx.saved, ctx._to_save = _entries(ctx._to_save, args, object(), None), ()  # copies
    whole = Tensor._make(packed, node)
    results = tuple(
        out
        if is_plain
        else Tensor._make(array)
        if at is None
        else _Unpack.apply(whole, at=at, shape=array.shape, order=order)
        for out, array, at, is_plain, order in zip(outs, arrays, packed_at, plain, orders)
    )
    return _take_over_dirty(ctx, args, arrays, results) if ctx._dirty else results


def _take_over_dirty(ctx: Function, args: tuple, arrays: tuple, results: tuple) -> tuple:
    """The results, each output that is an input marked dirty (its array) replaced by the
    input's own Tensor, changed in place: in a graph it takes over the output's node (through
    the base it views, as any in-place change), else only its version counts the change."""
    returned = {id(a) for a in arrays}
    if not all(id(a) in returned for a in ctx._dirty):
        raise RuntimeError(
            f"{type(ctx).__name__}: some tensors marked dirty (mark_dirty) were not returned; "
            "the inputs that forward changed in place must all be outputs of the Function"
        )
    dirty = {id(a) for a in ctx._dirty}
    inputs = {id(a.array): a for a in args if isinstance(a, Tensor) and id(a.array) in dirty}
    taken = []
    for array, result in zip(arrays, results):
        tensor = inputs.get(id(array))
        if tensor is None:
            taken.append(result)
        elif result.requires_grad:
            changed = lambda old, _, result=result: result  # noqa: E731  (forward computed it)
            taken.append(tensor._record_in_place(type(ctx).__name__, changed, None))
        else:
            increment_version(tensor)
            taken.append(tensor)
    return tuple(taken)


def _pack(arrays: list, dtype, orders: list) -> Any:
    """The arrays flattened (each with its axes in its ``orders`` entry, where not None) and
    joined into one of ``dtype``."""
    arrays = [a if order is None else a.transpose(order) for a, order in zip(arrays, orders)]
    return backend.namespace(arrays[0]).concatenate([a.reshape(-1).astype(dtype) for a in arrays])


def _memory_order(array: Any) -> tuple | None:
    """The axes of ``array`` from its largest stride to its smallest, where that is not their
    own order (a transposed array's permutation); None for a C-ordered array."""
    if array.ndim < 2 or array.flags.c_contiguous:
        return None
    order = tuple(sorted(range(array.ndim), key=lambda axis: -abs(array.strides[axis])))
    return None if order == tuple(range(array.ndim)) else order


def _unpacked(flat: Any, shape: tuple, order: tuple | None) -> Any:
    """``flat``, packed by ``_pack`` with its axes in ``order``, as an array (or a Tensor: a
    gradient) of ``shape`` laid out in that order."""
    if order is None:
        return flat.reshape(shape)
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    permuted = flat.reshape(tuple(shape[axis] for axis in order))
    if isinstance(permuted, Tensor):
        return permuted.permute(inverse)
    return permuted.transpose(inverse)


class _SeveralOutputs(Function):
    """The graph node of a user's Function with several outputs (see ``_several_outputs``)."""

    @staticmethod
    def backward(node, grad):
        # the outputs whose gradient reached the node in this walk (each _Unpack notes its
        # own): the others get None where the Function does not materialize gradients
        reached, node.reached = node.reached, set()
        materialize = node.ctx.materialize_grads
        grads = []
        for shape, dtype, at, is_plain, order in node.outputs:
            if is_plain or not (materialize or at in reached):
                grads.append(None)
            elif at is None:  # not differentiable: zeros, as PyTorch passes
                grads.append(grad.new_zeros(shape, dtype=dtype))
            else:
                grads.append(_unpacked(grad[at[0] : at[1]], shape, order).to(dtype))
        return type(node.ctx).backward(node.ctx, *grads)


class _Unpack(Function):
    """One output of a Function with several: entries ``at`` of the packed array."""

    complex_safe = True  # its backward places the gradient, right for complex numbers too

    @staticmethod
    def forward(ctx, packed, at, shape, order):
        ctx.at, ctx.size, ctx.order = at, packed.size, order
        return _unpacked(packed[at[0] : at[1]], shape, order)

    @staticmethod
    def backward(ctx, grad):
        ctx.parents[0].reached.add(ctx.at)
        packed = grad if ctx.order is None else grad.permute(ctx.order)
        return packed.reshape(-1).pad([(ctx.at[0], ctx.size - ctx.at[1])])


def _with_setup_context(forward: Callable) -> Callable:
    """A ``forward`` of the newer style, without ``ctx``, made one the engine (and graph capture)
    calls as every other, ``forward(ctx, *args)``: it runs, then the Function's own
    ``setup_context`` (looked up on ``ctx``'s class, so a subclass may replace it) fills ctx."""

    signature = inspect.signature(forward)
    defaults = any(p.default is not p.empty for p in signature.parameters.values())

    @functools.wraps(forward)
    def forward_then_setup(ctx: Function, *args: Any, **kwargs: Any) -> Any:
        if kwargs or defaults:  # setup_context's inputs hold them too, as PyTorch binds them
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        out = forward(*args, **kwargs)
        type(ctx).setup_context(ctx, args, out)
        return out

    return forward_then_setup


def _on_tensors(forward: Callable) -> Callable:
    """A user's ``forward``, which PyTorch hands Tensors, made one the engine calls as its own
    ops' (on arrays): each array argument comes in as a Tensor sharing it, and the Tensors that
    come out (the results, and what ``ctx`` was given to save or mark) go back as their arrays,
    so ``apply`` matches them with its inputs and outputs by identity as before.

    It runs without recording a graph, and graph capture notes it as one call (its ops are not
    noted one by one): a replay calls it again, on the new arrays.
    """

    @functools.wraps(forward)
    def forward_on_tensors(ctx: Function, *args: Any, **kwargs: Any) -> Any:
        args = tuple(Tensor._make(a) if type(a) in _ARRAY_CLASSES else a for a in args)
        ctx.tensor_args = tuple(isinstance(a, Tensor) for a in args)
        recorder, capture_hook.recorder = capture_hook.recorder, None
        recording, _state.enabled = _state.enabled, False
        try:
            out = forward(ctx, *args, **kwargs)
        finally:
            capture_hook.recorder, _state.enabled = recorder, recording
        if ctx._to_save:
            ctx._to_save = tuple(map(_array_of, ctx._to_save))
        if ctx._non_differentiable:
            ctx._non_differentiable = tuple(map(_array_of, ctx._non_differentiable))
        if ctx._dirty:
            ctx._dirty = tuple(map(_array_of, ctx._dirty))
        if isinstance(out, tuple):  # (each comes back a copy: see _several_outputs)
            return tuple(map(_array_of, out))
        if ctx._dirty:  # a single output: marked for apply, whose fast path tests no ctx
            return Dirty(_array_of(out))
        out = _array_of(out)
        if _a_view_of_an_input(out, args):
            ctx.refuses_in_place = (  # PyTorch's words
                f"Output 0 of {type(ctx).__name__} is a view and is being modified inplace. "
                "This view was created inside a custom Function (or because an input was "
                "returned as-is) and the autograd logic to handle view+inplace would override "
                "the custom backward associated with the custom Function, leading to incorrect "
                "gradients. This behavior is forbidden. You can fix this by cloning the output "
                "of the custom Function."
            )
        return out

    return forward_on_tensors


def _a_view_of_an_input(out: Any, args: tuple) -> bool:
    """Whether a user's forward returned an input as it came, or a view of one: changed in
    place, it would change the input too, and the values ``backward`` reads."""
    if type(out) not in _ARRAY_CLASSES:
        return False
    shares = backend.namespace(out).may_share_memory
    return any(isinstance(a, Tensor) and shares(out, a.array) for a in args)


class Dirty:
    """The single output of a user's forward that marked inputs dirty (see ``mark_dirty``)."""

    def __init__(self, array: Any) -> None:
        self.array = array


def _array_of(value: Any) -> Any:
    """A Tensor's array; anything else as it is."""
    return value.array if isinstance(value, Tensor) else value


def once_differentiable(backward: Callable) -> Callable:
    """Decorate a Function's ``backward`` that is not itself differentiable: it runs without
    recording, and differentiating its result (``create_graph=True``) raises, as PyTorch's.

    >>> import scratchgrad as sg
    >>> class Cube(sg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x**3
    ...
    ...     @staticmethod
    ...     @once_differentiable
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return grad * 3 * x**2
    >>> x = sg.tensor(2.0, requires_grad=True)
    >>> Cube.apply(x).backward()
    >>> x.grad
    tensor(12.)
    """

    @functools.wraps(backward)
    def wrapper(ctx: Function, *grads: Any) -> Any:
        recording = _state.enabled
        _state.enabled = False
        try:
            result = backward(ctx, *grads)
        finally:
            _state.enabled = recording
        graph = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not recording or not graph:
            return result

        def guard(g: Any) -> Any:
            return _Once.apply(g, *graph, name=type(ctx).__name__) if isinstance(g, Tensor) else g

        return tuple(map(guard, result)) if isinstance(result, tuple) else guard(result)

    return wrapper


class _Once(Function):
    """The gradient a once_differentiable backward gave, tied to the gradients it was given:
    differentiating it again raises."""

    @staticmethod
    def forward(ctx, g, *grads, name):
        ctx.name = name
        return g

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            f"{ctx.name}: trying to differentiate twice a function that was marked with "
            "@once_differentiable"
        )


def as_saved(tensor: Tensor, array: Any) -> Tensor:
    """``array``, which ``tensor`` held when it was saved for backward, in the graph where
    ``tensor`` is (see ``Function.swapped_input``)."""
    return _AsSaved.apply(tensor, array=array)


class _AsSaved(Function):
    """An input's array as it was saved, standing for the input: its gradient is the input's."""

    complex_safe = True

    @staticmethod
    def forward(ctx, now, array):
        return array

    @staticmethod
    def backward(ctx, grad):
        return grad


def saving(out: Tensor, *tensors: Any, name: str) -> Tensor:
    """``out``, which a composition of primitives made from ``tensors``, through one node named
    ``name`` that saves them, as the op PyTorch runs in one node: its backward raises where one
    was changed in place since forward, as PyTorch's, where the composition may have saved
    only copies (a backward would then go on with the old values). ``out`` where no gradient
    is recorded, and in a jitted step (its replays check no versions)."""
    if not out.requires_grad or capture_hook.recorder is not None:
        return out
    result = _Saving.apply(out, *tensors, name=name)
    result._counter = out._shared_counter()  # one memory: a change of either is seen by both
    return result


class _Saving(Function):
    """``out`` as it is, saving ``tensors`` for their versions only (see ``saving``)."""

    complex_safe = True

    @staticmethod
    def forward(ctx, out, *tensors, name):
        ctx._to_save, ctx.backward_name = tensors, name
        return out

    @staticmethod
    def backward(ctx, grad):
        ctx._saved_tensors()  # raises if one was changed in place since forward
        return (grad, *(None,) * len(ctx.saved))


class AccumulateGrad:
    """The node a leaf's gradient flows into, as PyTorch's: ``variable`` is the leaf.

    The same object is handed out for a leaf while any is alive, as in PyTorch.
    """

    _alive: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(leaf) -> node
    next_functions: tuple = ()

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    @classmethod
    def of(cls, leaf: Tensor) -> AccumulateGrad:
        # keyed by id: the node holds its leaf, so the id cannot be reused while it lives
        node = cls._alive.get(id(leaf))
        if node is None:
            node = cls._alive[id(leaf)] = cls(leaf)
        return node

    def name(self) -> str:
        return "AccumulateGrad"

    def register_hook(self, hook: Callable) -> NoReturn:
        """Refused: the engine accumulates into a leaf without running this node."""
        raise RuntimeError(
            "AccumulateGrad.register_hook: hooks on a leaf's AccumulateGrad node are not "
            "supported by scratchgrad; use the leaf's register_post_accumulate_grad_hook"
        )

    def register_prehook(self, hook: Callable) -> NoReturn:
        """Refused: the engine accumulates into a leaf without running this node."""
        raise RuntimeError(
            "AccumulateGrad.register_prehook: hooks on a leaf's AccumulateGrad node are not "
            "supported by scratchgrad; use the leaf's register_hook (it runs just before)"
        )

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def _register_node_hook(node: Function, attr: str, hook: Callable) -> RemovableHandle:
    from scratchgrad.autograd import node_hooks  # (it needs the engine, which needs this module)

    return node_hooks.register(node, attr, hook)


def _with_shapes(error: Exception, cls: type, args: tuple) -> Exception:
    """The error as PyTorch raises it (RuntimeError, or IndexError for a bad index), its
    message naming the op and the shapes it was given."""
    kind = IndexError if isinstance(error, IndexError) else RuntimeError
    name = cls.__name__.lower()
    if str(error).startswith(name + ":"):
        return kind(str(error))
    shapes = ", ".join(str(tuple(a.shape)) for a in args if isinstance(a, Tensor))
    return kind(f"{name}: shapes {shapes}: {error}")


def _share_counter(result: Tensor, source: Tensor, cls: type, kwargs: dict) -> None:
    """``note_view`` for the result of a view op that shares its source's memory."""
    array = result.array
    if array.base is None:
        return
    if array.size == 0:  # (no memory to compare: a view of the same owner, as NumPy keeps it)
        shares = backend.memory_owner(array) is backend.memory_owner(source.array)
    else:
        shares = backend.namespace(array).may_share_memory(array, source.array)
    if shares:
        note_view(result, source, cls, kwargs)


class Views:
    """A base's views, held weakly and iterated in the order they were made. A ``WeakSet``
    iterates in the order of the views' addresses, so two recordings of one jitted step took
    a base's views again in different orders, and the step was refused as one whose calls
    changed between recordings."""

    def __init__(self) -> None:
        self._by_number = weakref.WeakValueDictionary()  # (a dict keeps insertion order)

    def add(self, view: Tensor) -> None:
        self._by_number[next(_view_numbers)] = view

    def __iter__(self):
        return iter(list(self._by_number.values()))  # (a copy: taking a view again may add)


_view_numbers = itertools.count()


def note_view(result: Tensor, source: Tensor, cls: type, kwargs: dict) -> None:
    """Make ``result``, made by the view op ``cls`` of ``source`` (with ``kwargs``), a view
    of it: it shares its source's version counter, so an in-place change through either is
    seen by every graph that saved the other. It also remembers its base (the tensor that owns
    the memory) and the view steps that lead from it, so that an in-place change through the
    view can be recorded on the base (``Tensor._record_in_place``), and the base keeps it among
    its ``_views``, which a change of the base recorded in a graph takes again from the base's
    new history (``Tensor._take_view_again``), whether or not the view was in a graph.

    A view taken with grad mode off is marked ``_no_grad_view`` (as are its views): True if
    its base requires grad, so that PyTorch's refusal to change it in place with grad mode
    on can be raised; False otherwise, as PyTorch still refuses to record a change of it, or
    of its base, in a graph."""
    result._counter = source._shared_counter()
    base, steps = getattr(source, "_view", (source, ()))  # unset on tensors that are no view
    result._view = (base, (*steps, (cls, kwargs)))
    views = getattr(base, "_views", None)  # unset until the base has a view
    if views is None:
        base._views = views = Views()
    views.add(result)
    if not _state.enabled:  # (PyTorch asks the base: a view of a leaf made a view of no
        # tensor that requires grad, as arange(6.).view(2, 3).requires_grad_(), may change)
        result._no_grad_view = base.requires_grad or getattr(source, "_no_grad_view", False)
    elif hasattr(source, "_no_grad_view"):
        result._no_grad_view = source._no_grad_view
    elif hasattr(source, "_multi_output"):  # a view of an output of split, chunk or unbind
        result._multi_output = source._multi_output


class Alias(Function):
    """The same array, recorded: a node whose gradient is handed on unchanged (forward AD's
    dual that is no leaf; a compiled call's argument as its forward sees it)."""

    complex_safe = True

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


def records_plainly() -> bool:
    """Whether ``apply`` records as it is: no transform watches it (a jit recording, vmap,
    saved-tensor hooks, a profile). A node recorded without ``apply`` (``record_in_place``)
    is only right then."""
    return (
        capture_hook.recorder is None
        and _vmap_dispatch is None
        and not SAVED_TENSORS_HOOKS
        and _timing is None
    )


def record_in_place(cls: type, tensor: Tensor) -> Tensor:
    """Count and record the change of ``tensor``, a tensor in a graph that ``cls``'s forward
    has just changed in place: ``cls``'s node, whose parent is the tensor's old node, saves
    the tensor's memory as its result, at the new version, as ``apply`` saves a result, so a
    later in-place change makes its backward raise. Only for an op whose backward
    reads its result alone (``Tensor.relu_``), and only when ``records_plainly``.

    Memory not in C order (a convolution's result keeps the batch last) is saved as a C-ordered
    copy watched by the tensor's counter: the op recorded on a copy of the old value (jit
    recordings, a view) saves that layout, which orders the sums of the backwards after it, so
    their gradients stay the same bits."""
    increment_version(tensor)
    ctx, array, counter = cls(), tensor.array, tensor._counter
    ctx.parents, ctx.sequence_nr = (tensor._ctx,), next(_sequence)
    ctx.out_shape, ctx.out_dtype = array.shape, array.dtype
    saved = array if array.flags.c_contiguous else array.copy()
    ctx.saved = ((saved, counter, counter[0], None),)
    tensor._take_node(ctx)
    return tensor


def _node_of(arg: Any) -> Function | Tensor | None:
    """The graph node a gradient for ``arg`` flows into: its Function, itself if a leaf, or None."""
    if not isinstance(arg, Tensor):
        return None
    if arg._ctx is not None:
        return arg._ctx
    return arg if arg.requires_grad else None


def _entries(values: tuple, args: tuple, out: Any, result: Tensor) -> tuple:
    """What forward saved, as entries (value, the version counter to watch, its count now, an
    input's array).

    Inputs are kept as their Tensors and the result as its bare array (rebuilt on use), so the
    node holds no reference to its own output; only these two have a counter to watch. An
    input's array is kept too: ``.data =`` may give its Tensor another (``swapped_input``).
    """
    entries = []
    for value in values:
        for arg in args:
            if (type(arg) is Tensor or isinstance(arg, Tensor)) and arg.array is value:
                counter = arg._counter  # arg._shared_counter(), inlined (saved on every record)
                if counter is None:
                    counter = arg._counter = [0]
                entries.append((arg, counter, counter[0], value))
                break
        else:
            if value is out:  # a view's counter is its source's, which may have counted already
                counter = result._shared_counter()
                entries.append((result.array, counter, counter[0], None))
            elif isinstance(value, xp.generic) or type(value) in backend.ARRAY_CLASSES:
                entries.append((Tensor._make(backend.as_array(value)), None, 0, None))
            else:
                entries.append((value, None, 0, None))
    # (inside saved_tensors_hooks, each tensor is handed to the pack hook)
    return _packed(tuple(entries), result) if SAVED_TENSORS_HOOKS else tuple(entries)


class _Packed:
    """A saved tensor as the pack hook of ``saved_tensors_hooks`` left it, with its unpack hook."""

    __slots__ = ("packed", "unpack_hook")

    def __init__(self, packed: Any, unpack_hook: Callable[[Any], Any]) -> None:
        self.packed, self.unpack_hook = packed, unpack_hook

    def unpack(self) -> Any:
        return self.unpack_hook(self.packed)


def _packed(entries: tuple, result: Tensor | None) -> tuple:
    """``entries`` with each tensor (an input's Tensor, the result's array) handed to the
    innermost pack hook; the node then keeps the hook's result (the version checks go: the
    hooks own what is saved)."""
    pack, unpack = SAVED_TENSORS_HOOKS[-1]
    packed = []
    for value, counter, version, array in entries:
        if counter is not None and not isinstance(value, Tensor):  # the result's bare array
            value = result
        if isinstance(value, Tensor):
            with no_grad():  # (as PyTorch's: what the hook computes is not recorded)
                packed.append((_Packed(pack(value), unpack), None, 0, None))
        else:
            packed.append((value, counter, version, array))
    return tuple(packed)


from scratchgrad.tensor import RemovableHandle, Tensor  # noqa: E402  (Tensor's methods are built from Functions)
