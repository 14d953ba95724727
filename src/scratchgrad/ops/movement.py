"""Movement primitives: they only rearrange entries, so their gradients rearrange them back."""

import math

from scratchgrad import backend
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import state as _state
from scratchgrad.backend import cast, namespace, ndarray, xp
from scratchgrad.ops.binary import Div, Where
from scratchgrad.ops.complex import Complex, Imag, Real


class Reshape(Function):
    complex_safe = True  # its backward is right for complex numbers as written
    is_view = True
    backward_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


class Unsqueeze(Reshape):
    """A reshape that inserts a dim of size 1 at ``dim``; its own class so that the layout
    model gives that dim ``unsqueeze``'s stride, which ``view``'s can differ from."""

    backward_name = "UnsqueezeBackward0"

    @staticmethod
    def forward(ctx, x, shape, dim):
        return Reshape.forward(ctx, x, shape)


class Permute(Function):
    complex_safe = True  # its backward is right for complex numbers as written
    is_view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(inverse)


class Expand(Function):
    """Broadcast to a larger shape; the gradient is summed back to the input's shape by the
    engine."""

    complex_safe = True  # its backward is right for complex numbers as written
    is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        lead = len(shape) - x.ndim
        if lead >= 0 and tuple(shape[lead:]) == x.shape and all(n == 1 for n in shape[:lead]):
            # no entry repeated: a writable view, as PyTorch's (which refuses a write only
            # where entries share memory)
            return x[(None,) * lead] if lead else x.view()
        if type(x) is ndarray and x.flags.c_contiguous:
            view = _broadcast_view(x, shape)
            if view is not None:
                return view
        out = namespace(x).broadcast_to(x, shape)  # which also raises on a bad shape
        if out.size or type(x) is not ndarray or not x.flags.writeable:
            return out
        # an empty one writable, as PyTorch's (no entry to share; broadcast_to's is read-only)
        return xp.lib.stride_tricks.as_strided(x, shape, out.strides, writeable=True)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ExpandCopy(Expand):
    """Expand for a backward pass (the gradient of a sum, spread over the summed entries): a
    new array where the result has fewer than ``_SMALL`` entries. The ufuncs that read it then
    run on contiguous memory (an 8x8 product in half the time of one over a broadcast view),
    and it is no view, which saves a view's bookkeeping; together 3.7 of O1's 16.8 us. Larger
    results stay read-only broadcast views, not noted as views either: they are made from a
    gradient no one changes in place."""

    is_view = False
    backward_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        if math.prod(shape) >= _SMALL:
            return Expand.forward(ctx, x, shape)
        out = (xp if type(x) is ndarray else namespace(x)).empty(shape, x.dtype)
        out[...] = x
        return out


_SMALL = 1 << 16  # NOTE: copies up to 64K entries cost less than the strided ufuncs after them


def _broadcast_view(x, shape):
    """``broadcast_to(x, shape)`` for a C-contiguous NumPy ``x``, made directly over its
    memory (0.3 us against broadcast_to's 1.9 on small arrays; a copy would stop being a view,
    so that an in-place change of ``x`` went unseen), read-only as broadcast_to's unless empty
    (then as writable as ``x``); None where the shapes do not broadcast."""
    lead = len(shape) - x.ndim
    if lead < 0:
        return None
    strides = [0] * lead
    for size, new, stride in zip(x.shape, shape[lead:], x.strides):
        if size != new and size != 1:
            return None
        strides.append(stride if size == new else 0)
    view = ndarray(shape, x.dtype, x, 0, strides)
    if view.size:  # (an empty one stays as writable as x: PyTorch writes into it, none shared)
        view.flags.writeable = False
    return view


class Flip(Function):
    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        # a copy, as PyTorch's: NumPy's flip is a view, which a later in-place change of x
        # would reach (flip is no view op here, so no version counter would see it)
        return namespace(x).flip(x, dims).copy()

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(ctx.dims)


class Roll(Function):
    """Shift entries along ``dims`` by ``shifts``, wrapping around; rolling back undoes it."""

    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        out = namespace(x).roll(x, shifts, axis=dims)
        # row-major, as PyTorch's (NumPy's follows a transposed x, which the layout model
        # would count as row-major, so that as_strided refused it)
        return out.copy() if type(out) is ndarray and not out.flags.c_contiguous else out

    @staticmethod
    def backward(ctx, grad):
        return Roll.apply(grad, shifts=tuple(-s for s in ctx.shifts), dims=ctx.dims)


class Copy(Function):
    """A copy, possibly to another dtype; the gradient goes back in the input's dtype."""

    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype, order="K"):
        ctx.in_dtype = x.dtype
        if order != "K":
            return x.astype(dtype, order=order, copy=True)
        out = cast(x, dtype)
        if type(out) is ndarray and not out.flags.c_contiguous and _expanded_row_major(x):
            # NumPy's "K" puts a dim of stride 0 innermost, PyTorch's preserve_format leaves
            # it in place (x.expand(2, 2).clone() was column-major, which as_strided refused)
            return xp.ascontiguousarray(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return Copy.apply(grad, dtype=ctx.in_dtype)


def _expanded_row_major(x) -> bool:
    """Whether ``x`` repeats entries along a dim (stride 0) and lays its other dims out in
    row-major order: PyTorch's copy of it is then row-major."""
    steps = [step for step, size in zip(x.strides, x.shape) if size > 1]
    kept = [step for step in steps if step]
    return len(kept) < len(steps) and all(a >= b for a, b in zip(kept, kept[1:]))


class ComplexCopy(Copy):
    """Copy's node when it makes complex numbers: a real input gets the real part back."""

    complex_safe = True
    backward_name = "ToCopyBackward0"

    @staticmethod
    def backward(ctx, grad):
        return Copy.apply(grad if ctx.in_dtype.kind == "c" else grad.real, dtype=ctx.in_dtype)


Copy.complex_twin = ComplexCopy


class Clone(Copy):
    """``clone`` and ``contiguous``: a Copy to the same dtype, under PyTorch's name for it
    (``to(copy=True)`` stays a ToCopyBackward0, as PyTorch's)."""

    complex_safe = True  # the same dtype back: right for complex numbers as written
    backward_name = "CloneBackward0"


class WithoutDerivative(Function):
    """``y``, kept in ``x``'s graph as PyTorch keeps it though it has no derivative for the op
    that made it (bernoulli with a given p, unique, the out= of heaviside or of a factory:
    see ``tensor.OUT_WITHOUT_DERIVATIVE``): backward raises PyTorch's error, an ``error``
    saying ``message``; ``name`` is PyTorch's name for the node."""

    @staticmethod
    def forward(ctx, x, y, message, error=RuntimeError, name="NotImplemented"):
        ctx.message, ctx.error, ctx.backward_name = message, error, name
        return y.copy()

    @staticmethod
    def backward(ctx, grad):
        raise ctx.error(ctx.message)


class ToDevice(Function):
    """A copy on another device; the gradient goes back to the input's device."""

    complex_safe = True  # its backward is right for complex numbers as written
    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, device):
        ctx.in_device = backend.device_of(x)
        return backend.to_device(x, device)

    @staticmethod
    def backward(ctx, grad):
        return ToDevice.apply(grad, device=ctx.in_device)


class GetItem(Function):
    """Indexing with ints, slices, None, Ellipsis, integer arrays and boolean masks."""

    complex_safe = True  # its backward is right for complex numbers as written
    is_view = True

    @staticmethod
    def forward(ctx, x, index):
        ctx.in_shape, ctx.index = x.shape, index
        try:
            out = x[index]
        except IndexError as error:
            ctx.index = index = selecting_nothing(x.shape, index, error)
            out = x[index]
        if ndarray in map(type, index) and type(out) is ndarray and not out.flags.c_contiguous:
            # a copy (an index of NumPy arrays), row-major as PyTorch's (NumPy lays x[:, idx]
            # out with idx's dim first, which the layout model counts as row-major: its view()
            # was a read-only copy); the index tested first, in C: 1 us of x[:, 1:3] else
            return xp.ascontiguousarray(out)
        # NumPy answers an int for every dim with a number (a copy): a 0-d view, as PyTorch's,
        # so that x[5].add_(1) reaches x
        return out if backend.is_array(out) else x[(*index, ...)]

    def name(self) -> str:
        """PyTorch's: IndexBackward0 for integer arrays or masks, else the name of the last
        view its indexing takes item by item (an int: select, None: unsqueeze, a slice of
        less than the whole dim: slice), AliasBackward0 if none; an op made of it (split,
        unbind) names it itself."""
        if "backward_name" in vars(self):
            return self.backward_name
        if _advanced(self.index):
            return "IndexBackward0"
        taking = sum(1 for item in self.index if item is not None and item is not Ellipsis)
        last, dim = "Alias", 0
        for item in self.index:
            if item is None:
                last = "Unsqueeze"
            elif item is Ellipsis:
                dim += len(self.in_shape) - taking
            else:
                whole = range(self.in_shape[dim])
                if isinstance(item, int) or whole[item] != whole:
                    last = "Select" if isinstance(item, int) else "Slice"
                dim += 1
        return f"{last}Backward0"

    @staticmethod
    def backward(ctx, grad):
        return IndexAdd.apply(grad, index=ctx.index, shape=ctx.in_shape)


def _advanced(index: tuple) -> bool:
    """Whether ``index`` holds integer arrays or masks (NumPy then copies)."""
    return any(backend.is_array(item) for item in index)


class IndexAdd(Function):
    """Zeros of ``shape`` with ``x`` added at ``index``: the scatter behind indexing's gradient.
    NOTE: an index repeated in an integer array accumulates, so it needs ``add.at``."""

    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, index, shape):
        ctx.index = index
        out = namespace(x).zeros(shape, x.dtype)
        if len(index) == 1 and type(out) is ndarray and _is_integer_array(index[0]):
            _add_rows(out, index[0], x)  # an embedding's gradient
        elif any(_is_integer_array(i) for i in index):
            backend.scatter_add(out, index, x)
        else:
            out[index] = x
        return out

    @staticmethod
    def backward(ctx, grad):
        return GetItem.apply(grad, index=ctx.index)


def _add_rows(out: ndarray, rows: ndarray, x: ndarray) -> None:
    """``out[rows] += x`` where ``rows`` may repeat, as ``add.at`` but several times faster
    (0.14 ms against 0.88 ms for a (12, 64) batch of tokens into a (65, 128) embedding): the
    rows of ``x`` sorted by index (stably), each run of one index summed by ``add.reduceat``,
    and the sums written once.

    NOTE: ``add.reduceat`` adds a run in its own order, not one entry after another as
    ``add.at``: from three repeats of a row on, the bits differ from ``add.at``'s, usually
    closer to the exact sum (float32, 40 repeats of 2,000 entries: errors up to 3.3e-6 against
    5.0e-6). The other paths (vmapped, CuPy) scatter with ``add.at``'s order: the same gradient
    can differ in its last bits between them."""
    rows = rows.reshape(-1) % max(len(out), 1)  # -1 and n - 1 are one row
    if not rows.size:
        return
    order = xp.argsort(rows, kind="stable")
    rows = rows[order]
    starts = xp.flatnonzero(xp.concatenate(([True], rows[1:] != rows[:-1])))
    sums = xp.add.reduceat(x.reshape(len(order), -1)[order], starts, axis=0)
    out[rows[starts]] += sums.reshape(len(starts), *out.shape[1:])


def _is_integer_array(index) -> bool:
    return backend.is_array(index) and index.dtype != bool


def dims_taken(item) -> int:
    """How many dims of the indexed array an index item consumes."""
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    return item.ndim if backend.is_array(item) and item.dtype.kind == "b" else 1


def selecting_nothing(shape: tuple, index: tuple, error: IndexError) -> tuple:
    """``index`` (which NumPy refused with ``error``) with its integer arrays clipped into the
    dims they index, where it then selects nothing from an array of ``shape``: PyTorch checks
    no index tensor against its dim when the result is empty (``x[:0, [5]]``), NumPy does.
    Raises ``error`` where the index selects something."""
    taken = [dims_taken(item) for item in index]
    clipped, dim = [], 0
    for item, dims in zip(index, taken):
        size = shape[dim] if dim < len(shape) else 0
        if _is_integer_array(item) and item.ndim and size:
            item = namespace(item).clip(item, -size, size - 1)
        clipped.append(item)
        dim += len(shape) - sum(taken) if item is Ellipsis else dims
    clipped = tuple(clipped)
    if xp.empty(shape, xp.dtype([]))[clipped].size:  # (elements of no bytes: no memory)
        raise error
    return clipped


class Diagonal(Function):
    """The entries ``x[..., i, ..., i + offset, ...]`` of dims ``dim1`` and ``dim2``, as a new
    last dim: a view, writable as PyTorch's (NumPy's own diagonal view is read-only)."""

    complex_safe = True  # its backward is right for complex numbers as written
    is_view = True

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.in_shape, ctx.attributes = x.shape, {"offset": offset, "dim1": dim1, "dim2": dim2}
        out = namespace(x).diagonal(x, offset, dim1, dim2)
        if hasattr(out.flags, "writeable"):  # CuPy's arrays are always writable
            out.flags.writeable = x.flags.writeable
        return out

    @staticmethod
    def backward(ctx, grad):
        # an array: a constant, not a graph input
        zeros = namespace(grad.array).zeros(ctx.in_shape, grad.dtype)
        return CopySlices.apply(zeros, grad, steps=((Diagonal, ctx.attributes),))


class Unfold(Function):
    """Windows of ``size`` entries every ``step`` along ``dim``, as a new last dim: a view
    (``as_strided``, windows may overlap), as ``Tensor.unfold``. Its gradient sums each
    entry's share over the windows that hold it."""

    complex_safe = True  # its backward is right for complex numbers as written
    is_view = True
    backward_name = "UnfoldBackward0"

    @staticmethod
    def forward(ctx, x, dim, size, step):
        ctx.in_shape, ctx.attributes = x.shape, {"dim": dim, "size": size, "step": step}
        shape = (*x.shape[:dim], (x.shape[dim] - size) // step + 1, *x.shape[dim + 1 :], size)
        strides = (*x.strides[:dim], x.strides[dim] * step, *x.strides[dim + 1 :], x.strides[dim])
        out = namespace(x).lib.stride_tricks.as_strided(x, shape, strides)
        # Read-only where windows overlap, or over an expanded view: PyTorch writes overlapping
        # entries once per window holding them (add_ adds twice), NumPy once per place.
        overlapping = step < size and shape[dim] > 1
        read_only = overlapping or not getattr(x.flags, "writeable", True)
        if read_only and hasattr(out.flags, "writeable"):  # (CuPy's are always writable)
            out.flags.writeable = False
        return out

    @staticmethod
    def backward(ctx, grad):
        # which input entry each output entry is (an array: a constant, not a graph input)
        count = math.prod(ctx.in_shape)
        positions = namespace(grad.array).arange(count).reshape(ctx.in_shape)
        positions = Unfold.forward(Unfold(), positions, **ctx.attributes).reshape(-1)
        summed = IndexAdd.apply(grad.reshape(-1), index=(positions,), shape=(count,))
        return summed.reshape(ctx.in_shape)


class AsStrided(Function):
    """The entries at ``offset + sum(i_k * stride_k)`` of the memory, counted in entries from
    the input's first (``offset`` < 0 reaches the storage before a view), as ``as_strided``: a
    view, read-only where its entries overlap (``Tensor.as_strided`` says why). Its gradient is
    PyTorch's AsStridedBackward: scatter-added into a buffer standing for the memory, then read
    where the input lies, divided by how often the input itself holds each place."""

    is_view = True
    backward_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, size, stride, offset):
        ctx.in_shape = x.shape
        ctx.in_stride = tuple(s // x.itemsize for s in x.strides)
        ctx.attributes = {"size": size, "stride": stride, "offset": offset}
        out = _strided(x, size, stride, offset)
        read_only = overlaps_itself(size, stride) or not getattr(x.flags, "writeable", True)
        if read_only and hasattr(out.flags, "writeable"):  # (CuPy's are always writable)
            out.flags.writeable = False
        return out

    @staticmethod
    def backward(ctx, grad):
        size, stride, offset = ctx.attributes.values()
        xp = namespace(grad.array)
        start = min(0, offset)  # the first place either the input or the result reaches
        x_at = places(xp, ctx.in_shape, ctx.in_stride, -start).reshape(-1)
        out_at = places(xp, size, stride, offset - start).reshape(-1)
        length = max(span(ctx.in_shape, ctx.in_stride, -start), span(size, stride, offset - start))
        memory = IndexAdd.apply(grad.reshape(-1), index=(out_at,), shape=(length,))
        if overlaps_itself(ctx.in_shape, ctx.in_stride):  # its entries share each place's grad
            counts = xp.bincount(x_at, minlength=length)
            memory = Div.apply(memory, xp.maximum(counts, 1).astype(grad.dtype))
        return GetItem.apply(memory, index=(x_at,)).reshape(ctx.in_shape)


def _strided(x, size, stride, offset):
    """The array of ``size`` and ``stride`` (in entries) over ``x``'s memory, starting
    ``offset`` entries from ``x``'s first; only within the allocation ``x`` is part of."""
    byte_strides = tuple(s * x.itemsize for s in stride)
    if type(x) is not ndarray:  # CuPy's: strided from x's first entry on
        if offset < 0:
            raise NotImplementedError(
                "as_strided: a view of the storage before the tensor's first entry is made "
                "on the CPU only"
            )
        tricks = namespace(x).lib.stride_tricks
        start = tricks.as_strided(x, (offset + 1,), (x.itemsize,))[offset:]
        return tricks.as_strided(start, size, byte_strides)
    root = x
    while isinstance(root.base, ndarray):
        root = root.base
    if not root.flags.c_contiguous:  # an array of its own kept in another order (a clone's):
        memory = root.ravel("K")  # its memory from its lowest address, where that is a view
        root = root if memory.base is None else memory
    start = x.ctypes.data - root.ctypes.data + offset * x.itemsize
    if 0 in size:  # no entries to read: an offset past the storage is as good as its end
        start = min(start, root.nbytes)
    # ndarray checks that the entries lie inside root's memory, so no replay can read past it
    return ndarray(size, x.dtype, root, start, byte_strides)


def span(shape, stride, offset) -> int:
    """How many places of memory the geometry spans from place 0 (none if it is empty)."""
    return 0 if 0 in shape else offset + 1 + sum((n - 1) * step for n, step in zip(shape, stride))


def places(xp, shape, stride, offset):
    """Where each entry of the geometry lies in memory, in entries."""
    at = xp.full(shape, offset, dtype=xp.int64)
    for dim, (n, step) in enumerate(zip(shape, stride)):
        at += (xp.arange(n) * step).reshape(n, *(1,) * (len(shape) - dim - 1))
    return at


def overlaps_itself(shape, stride) -> bool:
    """Whether two entries of the geometry (strides in entries, >= 0) share a place in
    memory: no when each stride, smallest first, steps past all the smaller dims reach,
    else counted exactly."""
    if 0 in shape:
        return False
    reach = 0
    for step, n in sorted((step, n) for n, step in zip(shape, stride) if n > 1):
        if step <= reach:
            at = places(xp, shape, stride, 0).reshape(-1)
            return len(xp.unique(at)) < at.size
        reach += (n - 1) * step
    return False


class Pad(Function):
    """Constant padding; ``widths`` holds a (before, after) pair per dim, both >= 0."""

    complex_safe = True  # its backward is right for complex numbers as written
    backward_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, widths, value=0.0):
        ctx.inner = tuple(slice(before, before + n) for (before, _), n in zip(widths, x.shape))
        return namespace(x).pad(x, widths, constant_values=value)

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.inner]


class Cat(Function):
    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, *xs, dim=0):
        ctx.dim, ctx.sizes = dim, [x.shape[dim] for x in xs]
        return namespace(xs[0]).concatenate(xs, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        grads, start = [], 0
        for needed, size in zip(ctx.needs_input_grad, ctx.sizes):
            grads.append(grad.narrow(ctx.dim, start, size) if needed else None)
            start += size
        return tuple(grads)


class CopySlices(Function):
    """``x`` with the entries that the view ``steps`` selects replaced by ``value``: the node an
    in-place change through a view leaves on the view's base, as PyTorch's CopySlices. The
    base's own history is kept outside the view and rebased onto the change inside it.

    ``steps`` are the (Function, attributes) pairs that made the view from the base. Taking
    them on an array of positions finds the entries, whatever the memory layout. The positions
    are those of real components (``component_positions``), so that a view of complex parts
    (``.real``, ``.imag``, ``view_as_real``) replaces those parts only.
    """

    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, value, steps):
        xp = namespace(x)
        out = x.copy()  # C order, so reshape(-1) is a view, and so are its real components
        components = out.reshape(-1).view(backend.to_real(out.dtype))
        is_complex = out.dtype.kind == "c"
        positions = component_positions(xp, x.shape, is_complex, steps)
        ctx.steps, ctx.in_view = steps, xp.zeros(components.size, bool)
        ctx.in_view[positions] = True
        if value.dtype.kind == "c":  # a complex view's entries: pairs of components
            value = xp.stack((value.real, value.imag), -1)
        components[positions] = value
        ctx.in_view = ctx.in_view.reshape(out.shape + ((2,) if is_complex else ()))
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = _zero_components(ctx.in_view, grad)
        grad_value = None
        if ctx.needs_input_grad[1]:
            grad_value = grad
            for cls, attributes in ctx.steps:  # the same view of the gradient
                grad_value = cls.apply(grad_value, **attributes)
        return grad_x, grad_value


def _zero_components(mask, grad):
    """``grad`` with the components that ``mask`` marks made 0 (for complex numbers, a last dim
    holds the real part's mark and the imaginary part's)."""
    if mask.ndim == grad.ndim:
        return Where.apply(mask, 0.0, grad)
    real = Where.apply(mask[..., 0], 0.0, Real.apply(grad))
    return Complex.apply(real, Where.apply(mask[..., 1], 0.0, Imag.apply(grad)))


def component_positions(xp, shape: tuple, is_complex: bool, steps: tuple):
    """Where the entries of the view ``steps`` lie among the real components of a C-order
    array of ``shape`` (complex: entry k is two components, 2k and 2k + 1), with a last dim of
    two for a complex view. They are counted in floats, so that views pairing them as complex
    numbers (``view_as_complex``) can be taken of them."""
    at = xp.arange(math.prod(shape), dtype=xp.float64).reshape(shape)
    if is_complex:
        at = 2 * at + 1j * (2 * at + 1)  # (exact: below 2**53)
    at = replay_on_array(at, steps)
    if at.dtype.kind == "c":
        at = xp.stack((at.real, at.imag), -1)
    return at.astype(xp.int64)


NO_GRAD_VIEW_CHANGED = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked)."
)


class ViewChangedRefused(Function):
    """The history of a view whose base a graph then changed in place, where PyTorch refuses
    to take it again (``Tensor._take_view_again``): a view taken under ``no_grad`` (whether
    the change belongs to its history is ambiguous), or an output of a function that returns
    several views (``split``, ``chunk``, ``unbind``). A backward through it raises PyTorch's
    error (``message``) instead of leaving the change out. (PyTorch raises as soon as such a
    view is used with grad mode on, or its ``grad_fn`` read.)"""

    complex_safe = True

    @staticmethod
    def forward(ctx, x, message):
        ctx.message = message
        return x

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(ctx.message)


def replay_on_array(x, steps: tuple):
    """The view ``steps`` (Function, attributes) taken again from the array ``x``."""
    for cls, attributes in steps:
        x = cls.forward(cls(), x, **attributes)
    return x


class ScatterReduce(Function):
    """``x`` with each entry of ``src`` reduced into it at ``positions`` (one index array per
    dim, as ``x[positions]`` reads them) by ``reduce``: "sum", "prod", "mean", "amax", "amin"
    (or "max", "min", which PyTorch takes forward only), as ``torch.scatter_reduce``. Without
    ``include_self``, a position that ``src`` reaches starts from the reduction's identity
    instead of ``x``'s entry. The gradients are PyTorch's (its ``scatter_reduce_backward``).

    NOTE: amax and amin split the gradient evenly among the entries equal to the result, and
    count ``x``'s entry among them even without ``include_self`` (PyTorch's formula): ``x``'s
    share is then dropped, so ``src``'s shares sum to less than the gradient there.
    """

    @staticmethod
    def forward(ctx, x, src, positions, reduce, include_self):
        ctx.positions, ctx.reduce, ctx.include_self = positions, reduce, include_self
        xp = namespace(x)
        ctx.reached = xp.zeros(x.shape, bool)
        ctx.reached[positions] = True
        # 16-bit floats reduced in float32 and rounded once, as PyTorch's
        out = x.astype(backend.accumulation_dtype(x.dtype) or x.dtype)
        if not include_self:
            out[ctx.reached] = _identity(reduce, out.dtype)
        backend.scatter_reduce(out, positions, backend.widened(src), _UFUNCS[reduce])
        out = cast(out, x.dtype) if out.dtype != x.dtype else out
        if reduce == "mean":  # the sum rounded, then divided (PyTorch's order)
            ctx.count = xp.full(x.shape, int(include_self), x.dtype)
            backend.scatter_add(ctx.count, positions, xp.ones(src.shape, x.dtype))
            ctx.count[ctx.count == 0] = 1
            divide = xp.true_divide if backend.is_floating(out.dtype) else xp.floor_divide
            divide(out, ctx.count, out=out)  # PyTorch floors an integer mean
        ctx.save_for_backward(x, src, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        if ctx.reduce not in _GRADIENTS:
            raise RuntimeError(
                "Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got "
                f"{ctx.reduce}."
            )
        grad_x, grad_src = _GRADIENTS[ctx.reduce](ctx, grad, *ctx.saved_tensors)
        if not ctx.include_self:  # x's entries there took no part
            grad_x = Where.apply(ctx.reached, 0.0, grad_x)
        return grad_x, grad_src


class ScatterLegacyReduce(ScatterReduce):
    """``scatter(..., reduce="add" | "multiply")``, PyTorch's legacy form, which has no
    derivative: backward raises PyTorch's error."""

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::scatter is not implemented")


_UFUNCS = {
    "sum": "add",
    "mean": "add",
    "prod": "multiply",
    "amax": "maximum",
    "max": "maximum",
    "amin": "minimum",
    "min": "minimum",
}


def _identity(reduce: str, dtype):
    """What a reduction starts from: 0 for sums, 1 for products, the dtype's lowest value for
    maxima and its highest for minima (False and True for bool)."""
    if _UFUNCS[reduce] == "add":
        return 0
    if reduce == "prod":
        return 1
    lowest = _UFUNCS[reduce] == "maximum"
    if dtype.kind == "b":
        return not lowest
    if dtype.kind in "iu":
        info = xp.iinfo(dtype)
        return info.min if lowest else info.max
    return -math.inf if lowest else math.inf


def _gather(ctx, t):
    """``t`` read at the scattered positions (``t.gather(dim, index)``)."""
    return GetItem.apply(t, index=ctx.positions)


def _scatter_sum(ctx, t, shape):
    """Zeros of ``shape`` with ``t`` added at the scattered positions."""
    return IndexAdd.apply(t, index=ctx.positions, shape=shape)


def _sum_gradients(ctx, grad, x, src, out):
    return grad, _gather(ctx, grad)


def _mean_gradients(ctx, grad, x, src, out):
    grad_x = Div.apply(grad, ctx.count)
    return grad_x, _gather(ctx, grad_x)


def _extreme_gradients(ctx, grad, x, src, out):
    """The gradient split evenly among the entries (of ``x`` and ``src``) equal to the
    result."""
    x_is = (x == out).to(x.dtype)
    src_is = (src == _gather(ctx, out)).to(x.dtype)
    share = grad / (x_is + _scatter_sum(ctx, src_is, x.shape))
    return x_is * share, src_is * _gather(ctx, share)


def _prod_gradients(ctx, grad, x, src, out):
    """The product of the other entries, found without dividing by a zero: ``x``'s zeros are
    read as ones, and a zero of ``src`` alone at its position is replaced by one."""
    x_nonzero = Where.apply(x == 0, 1.0, x)
    grad_x = grad * _product(ctx, x_nonzero, src) / x_nonzero
    src_zero = src == 0
    zeros_there = _gather(ctx, _scatter_sum(ctx, src_zero.to(x.dtype), x.shape))
    single_zero = src_zero & (zeros_there == 1)
    without_it = _product(ctx, x, Where.apply(single_zero, 1.0, src))
    grad_src = Where.apply(
        single_zero,
        _gather(ctx, grad * without_it),
        _gather(ctx, grad * out) / Where.apply(src_zero, 1.0, src),
    )
    if _state.enabled:  # create_graph: the formula's own gradient is wrong at repeated zeros
        grad_src = _FirstOrderOnly.apply(grad_src, zeros_there > 1)
    return grad_x, grad_src


def _product(ctx, x, src):
    """``x`` with ``src`` multiplied in at the scattered positions, as the forward did."""
    return ScatterReduce.apply(
        x, src, positions=ctx.positions, reduce="prod", include_self=ctx.include_self
    )


class _FirstOrderOnly(Function):
    """A gradient of ``scatter_reduce(..., "prod")``, right as it is but not differentiable
    where ``repeated`` (two zeros of ``src`` or more at one position): its gradient raises
    there, as PyTorch's DelayedError."""

    @staticmethod
    def forward(ctx, g, repeated):
        ctx.repeated = repeated
        return g

    @staticmethod
    def backward(ctx, grad):
        if ctx.repeated.any():
            raise RuntimeError(
                "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src "
                "are scattered to the same position in self"
            )
        return grad, None


_GRADIENTS = {
    "sum": _sum_gradients,
    "mean": _mean_gradients,
    "amax": _extreme_gradients,
    "amin": _extreme_gradients,
    "prod": _prod_gradients,
}
