"""Reductions, and the fused softmax and log_softmax. A reduction's gradient is expanded back to the
input's shape by its backward (the engine only ever sums gradients down, never expands them).
"""

import functools
import math

from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.function import Function, holomorphic_twin
from scratchgrad.autograd.grad_mode import state as _grad_mode
from scratchgrad.backend import (
    SIXTEEN_BIT,
    accumulation_dtype,
    cast,
    errstate,
    float32,
    float64,
    namespace,
    ndarray,
    rounded,
    scan_dtype,
    widened,
    xp,
)
from scratchgrad.ops.binary import Where
from scratchgrad.ops.movement import Cat, ExpandCopy, Pad


def _kept_shape(shape: tuple, dim: tuple | None) -> tuple:
    """The shape of a reduction over ``dim`` with ``keepdim=True``."""
    if dim is None:
        return (1,) * len(shape)
    return tuple(1 if i in dim else n for i, n in enumerate(shape))


class Sum(Function):
    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        ctx.in_shape, ctx.dim = x.shape, dim
        ctx.kept_shape = None if keepdim or dim is None else _kept_shape(x.shape, dim)
        if accumulation_dtype(x.dtype) is None:  # the common case, without _sum's frame
            add = (xp if type(x) is ndarray else namespace(x)).add
            return add.reduce(x, axis=dim, keepdims=keepdim)
        return _sum(x, dim, keepdim)

    @staticmethod
    def backward(ctx, grad):
        if ctx.kept_shape is not None:  # put the reduced dims back so the grad broadcasts
            grad = grad.reshape(ctx.kept_shape)
        return ExpandCopy.apply(grad, shape=ctx.in_shape)

    def name(self) -> str:
        """PyTorch's, which numbers the overloads: 0 for all entries, 1 over dims; or the name
        given to the node that ends a composed op (``named_backward``: a summed nll_loss)."""
        if "backward_name" in vars(self):
            return self.backward_name
        return f"{type(self).__name__}Backward{0 if self.dim is None else 1}"


class Mean(Sum):
    """The sum divided by the count, as one node (PyTorch's MeanBackward0); the gradient is
    spread evenly over the entries that were averaged."""

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        ctx.count = x.size if dim is None else math.prod(x.shape[d] for d in dim)
        wide = accumulation_dtype(x.dtype)
        with errstate(invalid="ignore"):  # the mean of nothing is NaN, as in PyTorch
            if wide is None:
                return Sum.forward(ctx, x, dim, keepdim) / ctx.count
            # 16-bit: the float32 sum over the count, rounded once, as PyTorch's (rounding the
            # sum first put a quarter of float16 means an ulp off)
            return cast(Sum.forward(ctx, cast(x, wide), dim, keepdim) / ctx.count, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return Sum.backward(ctx, grad / ctx.count)


class RunningMean(Mean):
    """``Mean`` as var_mean's: PyTorch's running (Welford) mean, of float32 in float64 rounded
    once, which stays finite where the sum of finite entries overflows (or turns NaN where a
    deviation does)."""

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        wide = cast(x, float64) if x.dtype == float32 else x
        out = Mean.forward(ctx, wide, dim, keepdim)
        if _overflowed(wide, out, dim, keepdim):
            out = _welford(wide, dim, keepdim)[0]
        return rounded(out, x.dtype)


class Variance(Sum):
    """The sum of the squared deviations from the mean over ``dim``, divided by ``count -
    correction`` (of complex numbers ``|x - mean|**2``: real; 16-bit floats in float32, float32
    in float64 as PyTorch's CPU kernels, rounded once: a variance over 3.4e38 is inf, its
    square root finite), as one node whose gradient is PyTorch's var_backward, ``2 / (count -
    correction) * grad * (x - mean)``. PyTorch's var of all entries of float32 or complex64
    (not var_mean's, ``running``) takes the mean in that dtype, which may overflow. NOTE:
    composed of a mean, a square and a sum, the gradient also had the mean's share, zero on
    paper but NaN where an entry is infinite (PyTorch's: -inf at the finite entries beside
    +inf)."""

    backward_name = "VarBackward0"  # PyTorch's, for all entries or over dims
    name = Function.name

    @staticmethod
    def spread(variance):
        return variance

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False, correction=1, running=False):
        count = x.size if dim is None else math.prod(x.shape[d] for d in dim)
        ctx.freedom = count - correction
        running = running or count != x.size  # (PyTorch's: but var and std of all entries)
        # (of nothing: NaN, as PyTorch's; no freedom left: inf or NaN)
        with errstate(divide="ignore", invalid="ignore", over="ignore"):
            if x.dtype.kind != "c":
                variance = _variance(ctx, x, dim, keepdim, count, running)
                out = rounded(type(ctx).spread(variance), x.dtype)
            else:  # as PyTorch's: the real and imaginary parts' variances, each rounded, added
                parts = (
                    _variance(ctx, part, dim, keepdim, count, running) for part in (x.real, x.imag)
                )
                out = type(ctx).spread(sum(rounded(part, x.real.dtype) for part in parts))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        # the result is read by std's gradient only: PyTorch's var saves none (v += eps runs)
        x = ctx._saved_tensors((True, False))[0]
        if ctx.kept_shape is not None:
            grad = grad.reshape(ctx.kept_shape)
        mean = x if ctx.dim == () else x.mean(ctx.dim, keepdim=True)  # (see sum_kept)
        if ctx.freedom <= 0 and ctx.dim is None:  # as PyTorch's: NaN where x is the mean,
            # a real product (of complex numbers NaN + 0j, not the NaN + NaNj of a complex one)
            infinite = Where.apply(x == mean, math.nan, math.inf).to(grad.dtype)
            return (grad * infinite).to(x.dtype)
        scale = 2 / ctx.freedom if ctx.freedom else math.inf  # (PyTorch's 2.0 / 0)
        return scale * grad * (x - mean)


def _variance(ctx, x, dim, keepdim, count, running):
    """The variance of the real ``x`` over ``dim`` in float64, as PyTorch's var and std: of
    float32 not ``running``, the mean in float32 (see ``Variance``); ``running``, where the
    sums of finite float64 entries overflow, PyTorch's running (Welford) sums."""
    wide = x if x.dtype == float64 else cast(x, float64)
    in_float32 = not running and x.dtype == float32
    mean = _sum(x if in_float32 else wide, dim, True) / count
    deviations = wide - mean if wide is x else namespace(wide).subtract(wide, mean, out=wide)
    deviations *= deviations  # (in place: float64 copies of a float32 input cost their memory)
    variance = Sum.forward(ctx, deviations, dim, keepdim) / max(ctx.freedom, 0)
    if running and _overflowed(x, variance, dim, keepdim):
        return _welford(x, dim, keepdim)[1] / max(ctx.freedom, 0)
    return variance


def _overflowed(x, out, dim, keepdim):
    """Whether ``out``, a float64 mean or variance of ``x`` over ``dim``, may differ from
    PyTorch's running one where ``x`` is finite: not finite there (its sums overflowed), or
    beside an entry of 2**1023 or more (a deviation may overflow, PyTorch's NaN)."""
    module = namespace(x)
    if x.dtype != float64 or x.size == 0:
        return False
    if module.isfinite(out).all() and x.min() > -(2.0**1023) and x.max() < 2.0**1023:
        return False  # (the common case's tests, which copy nothing of x's size)
    suspect = ~module.isfinite(out) | (module.abs(x) >= 2.0**1023).any(axis=dim, keepdims=keepdim)
    return bool((module.isfinite(x).all(axis=dim, keepdims=keepdim) & suspect).any())


def _welford(x, dim, keepdim):
    """The mean and the sum of squared deviations of ``x`` over ``dim`` as PyTorch's CPU
    kernel keeps them, in float64, one entry at a time (a loop over the reduced entries: for
    the rare inputs whose sums overflow): ``mean += (x - mean) / k``, ``m2 += (x - old mean)
    * (x - mean)``. Where the sums overflow the mean stays finite; where a deviation
    overflows (1e308 after -1e308) it turns NaN."""
    module = namespace(x)
    dims = tuple(range(x.ndim)) if dim is None else dim
    rows = module.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim)))
    rows = rows.reshape(*rows.shape[: x.ndim - len(dims)], -1)
    mean, m2 = module.zeros(rows.shape[:-1]), module.zeros(rows.shape[:-1])
    with errstate(over="ignore", invalid="ignore"):
        for k in range(rows.shape[-1]):
            deviation = rows[..., k] - mean
            mean = mean + deviation / (k + 1)
            m2 = m2 + deviation * (rows[..., k] - mean)
    if keepdim:
        mean, m2 = (module.expand_dims(a, dims) for a in (mean, m2))
    return mean, m2


class StandardDeviation(Variance):
    """The square root of ``Variance`` (computed before rounding a 16-bit result), as one
    node whose gradient is PyTorch's std_backward: var_backward of ``grad / (2 * out)``, 0
    where the deviation is 0 (entries all equal; not sqrt's infinity times 0, NaN)."""

    backward_name = "StdBackward0"

    @staticmethod
    def spread(variance):
        return namespace(variance).sqrt(variance)

    @staticmethod
    def backward(ctx, grad):
        out = ctx.saved_tensors[1]
        with errstate(divide="ignore", invalid="ignore"):
            grad = (grad / (2 * out)).masked_fill(out == 0, 0)
        return Variance.backward(ctx, grad)


class NanSum(Sum):
    """The sum with NaNs taken as 0, as ``torch.nansum``. NOTE: its gradient is ``grad`` times
    the mask of entries that are not NaN, as PyTorch's: an infinite or NaN ``grad`` gives NaN
    (inf * 0) at the NaNs, where masking it out with ``where`` would give 0."""

    complex_safe = False  # (PyTorch's nansum refuses complex input)
    backward_name = "NansumBackward0"  # PyTorch's, for all entries or over dims
    name = Function.name

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        xp = namespace(x)
        counted = ~xp.isnan(x)
        ctx.save_for_backward(counted)
        return Sum.forward(ctx, xp.where(counted, x, x.dtype.type(0)), dim, keepdim)

    @staticmethod
    def backward(ctx, grad):
        (counted,) = ctx.saved_tensors
        return Sum.backward(ctx, grad) * counted


class SumToSize(Function):
    """Sum a broadcast result back to ``shape``: the engine's one rule for broadcasting."""

    complex_safe = True  # its backward is right for complex numbers as written

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape, dtype = x.shape, x.dtype
        lead = x.ndim - len(shape)
        if len(shape) == 1 and lead and shape == x.shape[lead:] and dtype.kind == "f":
            # The common case, a bias. Summing the rows as a product with ones is one BLAS call,
            # faster than NumPy's reduction along the leading axes (docs/benchmarks.md) and no
            # less accurate (that reduction adds the rows one after another). The result owns
            # its memory, so a leaf can keep it as its .grad without a copy.
            wide, module = accumulation_dtype(dtype), xp if type(x) is ndarray else namespace(x)
            rows = x if lead == 1 else x.reshape(math.prod(x.shape[:lead]), shape[0])
            if wide is None:
                return _ones(len(rows), dtype, module).dot(rows)
            return cast(_ones(len(rows), wide, module).dot(cast(rows, wide)), dtype)
        kept = tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
        if kept:
            return _sum(x, tuple(range(lead)) + kept, True).reshape(shape)
        return _sum(x, tuple(range(lead)), False) if lead else x

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.in_shape)


def _sum(x, dim, keepdim):
    """``x.sum``, less ndarray.sum's wrapper; 16-bit floats are added up in float32."""
    wide, module = accumulation_dtype(x.dtype), xp if type(x) is ndarray else namespace(x)
    if wide is None:
        dim = (dim,) if type(dim) is int else dim
        rows = _row_count(x, dim) if x.size >= _FEW else 0  # the test first: a call less
        if rows:
            sums = x.reshape(rows, -1).dot(_ones(x.size // rows, x.dtype, module))
            lead = x.shape[: x.ndim - len(dim)]
            return sums.reshape(lead + (1,) * len(dim) if keepdim else lead)
        return module.add.reduce(x, axis=dim, keepdims=keepdim)
    return cast(module.add.reduce(cast(x, wide), axis=dim, keepdims=keepdim), x.dtype)


# Below about this many entries NumPy's sums are as fast as the product's calls (a (64, 10)
# float32 sum 2.3 against 2.8 us), and cost fewer Python instructions (eager W3's
# cross-entropy).
_FEW = 1024


def _row_count(x, dim) -> int:
    """How many rows ``x`` has if summing over ``dim`` is summing the rows of a matrix: ``dim``
    the last dims of a C-ordered float array, 2 to 512 entries in each row; else 0. ``_sum``
    asks only for arrays of at least ``_FEW`` entries (it tests that first, a call less on the
    small ones); ``_max`` asks for every array. Those sums are then one BLAS product with
    ones, several times faster than NumPy's reduction along a short inner axis, which pays
    per row (0.08 ms against 0.017 ms on an attention's (12, 4, 64, 64) scores). The two add
    in different orders (NumPy's pairwise summation: eight interleaved partial sums up to 128
    entries, halves above; BLAS: its kernel's blocks), with errors of the same size (2,000
    float32 rows of 300 normal entries: at most 8.4e-6 against 6.6e-6).

    NOTE: these sums are not batch-invariant: OpenBLAS picks its kernel by the number of rows
    (a dot for one row, a gemv for more, which blocks the rows), and ``_FEW`` picks the path by
    the array's size, so a row's sum, and with it a row of softmax, log_softmax (cross-entropy)
    or layer norm, can differ in the last bit with the count of other rows in the batch.
    NumPy's reduction alone was invariant, and so are PyTorch's CPU sum, softmax and layer
    norm; its matmul is not (docs/nn.md)."""
    ndim, count = x.ndim, len(dim or ())
    if not 0 < count < ndim or x.dtype.kind != "f" or not x.flags.c_contiguous:
        return 0
    kept = ndim - count
    if count == 1:  # the usual dim=-1, without the sort below (a third of this function's cost)
        if dim[0] % ndim != kept:
            return 0
    elif sorted(d % ndim for d in dim) != list(range(kept, ndim)):
        return 0
    rows = math.prod(x.shape[:kept])
    return rows if rows and 1 < x.size // rows <= 512 else 0


def _max(x, dim):
    """``x.max(axis=dim, keepdims=True)``; over the last dims of a C-ordered float array (as
    ``_sum``'s product), as the entries ``argmax`` finds: NumPy's max along a short inner axis
    pays per row, argmax far less (0.07 ms against 0.18 ms on (12, 4, 64, 64) scores; this
    function 2.5 against 3.9 us on W3's (64, 10) logits). NaN wins either way (argmax returns
    the first NaN)."""
    rows = _row_count(x, dim)
    if not rows and type(x) is ndarray:  # ndarray.max less its Python wrapper; with an
        # ``initial`` NumPy need not copy each row's first entry in; the max is the same
        return xp.maximum.reduce(x, axis=dim, keepdims=True, initial=-xp.inf)
    if not rows:
        return x.max(axis=dim, keepdims=True)  # CuPy's max has no ``initial``
    module = xp if type(x) is ndarray else namespace(x)
    flat = x.reshape(rows, -1)
    at = flat.argmax(axis=1)
    at += _row_starts(rows, flat.shape[1], module)
    return flat.reshape(-1)[at].reshape(x.shape[: x.ndim - len(dim)] + (1,) * len(dim))


@functools.lru_cache(maxsize=1024)
def _row_starts(rows: int, length: int, module=xp):
    """Where each of ``rows`` rows of ``length`` entries starts in their flat array, kept:
    made at each call, they took a third of ``_max``'s time on small arrays."""
    return _read_only(module.arange(0, rows * length, length))


@functools.lru_cache(maxsize=1024)
def _ones(n: int, dtype, module=xp):
    """A vector of ``n`` ones made by the array ``module`` (NumPy unless given), kept: a view
    of a vector of 512 entries or the next power of two, so that the many lengths summed (2 to
    512 for each row length, and each batch's row count) cost a view each, not a vector."""
    return _kept_ones(max(512, 1 << (n - 1).bit_length()), dtype, module)[:n]


@functools.lru_cache(maxsize=16)
def _kept_ones(n: int, dtype, module):
    """``n`` ones (see ``_read_only``)."""
    return _read_only(module.ones(n, dtype))


def _read_only(kept):
    """``kept``, an array the caches above hand out to every caller, made read-only where its
    module can say so (CuPy's arrays are always writable)."""
    if hasattr(kept.flags, "writeable"):
        kept.flags.writeable = False
    return kept


class Amax(Function):
    """The largest entry over ``dim``. NOTE: ties share the gradient equally, as in PyTorch
    (and where the largest is NaN no entry equals it: the gradient is NaN, as PyTorch's)."""

    @staticmethod
    def statistic(x, dim):
        return x.max(axis=dim, keepdims=True)

    @staticmethod
    def chosen(x, kept):
        """Where the entries equal to the statistic are: those that share its gradient."""
        return x == kept

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        kept = type(ctx).statistic(x, dim)
        chosen = type(ctx).chosen(x, kept)
        ctx.save_for_backward(chosen / chosen.sum(axis=dim, keepdims=True, dtype=x.dtype))
        ctx.kept_shape = kept.shape
        return kept if keepdim else kept.reshape(_drop(x.shape, dim))

    @staticmethod
    def backward(ctx, grad):
        (share,) = ctx.saved_tensors
        return grad.reshape(ctx.kept_shape) * share


class Amin(Amax):
    @staticmethod
    def statistic(x, dim):
        return x.min(axis=dim, keepdims=True)


class MaxOfAll(Amax):
    """The largest of all entries (over ``dim``: all dims but vmap's), as ``max()`` without a
    dim: its gradient is shared evenly among the entries equal to it, or among the NaNs where
    it is NaN (PyTorch's ``evenly_distribute_backward``; ``amax`` leaves that NaN)."""

    backward_name = "MaxBackward1"  # PyTorch's (max along a dim is MaxBackward0)

    @staticmethod
    def chosen(x, kept):
        xp = namespace(x)
        return xp.where(xp.isnan(kept), xp.isnan(x), x == kept)

    @staticmethod
    def backward(ctx, grad):
        # NOTE: PyTorch writes grad / count into zeros at the chosen entries, so an infinite or
        # NaN grad leaves the others 0 (amax's product with the share makes them NaN)
        (share,) = ctx.saved_tensors
        return Where.apply(share != 0, grad.reshape(ctx.kept_shape) * share, 0.0)


class MinOfAll(MaxOfAll):
    backward_name = "MinBackward1"
    statistic = Amin.statistic


class MedianOfAll(MaxOfAll):
    """The lower median of all entries (NaN if one is), as ``median()`` without a dim."""

    backward_name = "MedianBackward0"

    @staticmethod
    def statistic(x, dim):
        return _lower_median(x, dim, skip_nan=False)


class NanMedianOfAll(MaxOfAll):
    """The lower median of the entries that are not NaN, as ``nanmedian()`` without a dim."""

    backward_name = "NanmedianBackward0"

    @staticmethod
    def statistic(x, dim):
        return _lower_median(x, dim, skip_nan=True)


def _lower_median(x, dim: tuple, skip_nan: bool):
    """The lower median over the dims ``dim``, kept as dims of size 1 (NaN sorts last)."""
    xp = namespace(x)
    kept = tuple(d for d in range(x.ndim) if d not in dim)
    rows = x.transpose(*kept, *dim).reshape(*(x.shape[d] for d in kept), -1)
    ordered = xp.sort(rows, axis=-1)
    if skip_nan:
        count = (~xp.isnan(ordered)).sum(-1, keepdims=True)
        median = xp.take_along_axis(ordered, xp.maximum(count - 1, 0) // 2, -1)
    else:  # a NaN in the row makes its median NaN
        last = ordered[..., -1:]
        median = xp.where(xp.isnan(last), last, ordered[..., (rows.shape[-1] - 1) // 2, None])
    return median.reshape(tuple(1 if d in dim else n for d, n in enumerate(x.shape)))


def _drop(shape: tuple, dim: tuple | None) -> tuple:
    return () if dim is None else tuple(n for i, n in enumerate(shape) if i not in dim)


class Prod(Function):
    """Product over one dim. Its gradient is the product of the other entries: as PyTorch's,
    out / x unless an entry of x (anywhere) is 0, else computed without dividing so that zeros
    are handled exactly. NOTE: so a NaN or an infinity makes the gradient NaN where out / x is
    (inf / inf, NaN / x), as PyTorch's, not the product of the others."""

    backward_name = "ProdBackward1"  # PyTorch's, over a dim

    @staticmethod
    def forward(ctx, x, dim, keepdim=False):
        ctx.save_for_backward(x)
        ctx.dim, ctx.keepdim = dim, keepdim
        if x.dtype in SIXTEEN_BIT and x.shape[dim]:
            out = _sixteen_bit_product(namespace(x).moveaxis(x, dim, -1))
            return namespace(x).expand_dims(out, dim) if keepdim else out
        return x.prod(axis=dim, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        grad = grad if ctx.keepdim else grad.unsqueeze(ctx.dim)
        if x.shape[ctx.dim] == 0:
            return grad.expand(x.shape)
        others = _others_products(x, ctx.dim)
        zero = x == 0  # (tensor ops, no branch on the values: a jitted step replays them)
        quotient = x.prod(ctx.dim, keepdim=True) / Where.apply(zero, 1.0, x)  # (no 0 / 0 below)
        return grad * Where.apply(zero.any(), others, quotient)


# the entries of PyTorch's Vectorized<Half> and Vectorized<BFloat16> on CPU
_LANES = 16


def _sixteen_bit_product(x, carried=False):
    """The product of 16-bit floats along the last dim as PyTorch's CPU kernel, each product
    rounded. Along a dim of stride 1 its vectorized loop multiplies each block of 4 x 16
    entries into 64 running products, then those into 16 ((a * b) * (c * d)), then the 16
    lanes one by one, and that into the product so far, then the entries past the last whole
    block one by one; along any other, in order. ``carried``: one product of all the rows of
    x's last two dims, each row's run of entries multiplied into the product of those before
    it (as PyTorch's product of all entries reads a tensor of several runs at stride 1)."""
    whole = x.shape[-1] - x.shape[-1] % (4 * _LANES)
    if whole and x.strides[-1] == x.itemsize:
        blocks = x[..., :whole].reshape(*x.shape[:-1], -1, 4, _LANES)
        a, b, c, d = namespace(x).moveaxis(_rounded_product(blocks.swapaxes(-3, -1)), -1, 0)
        with errstate(over="ignore", invalid="ignore"):  # (inf * 0: NaN, as PyTorch's)
            lanes = _rounded_product((a * b) * (c * d))
        x = namespace(x).concatenate([lanes[..., None], x[..., whole:]], axis=-1)
    return _rounded_product(x.reshape(*x.shape[:-2], -1) if carried else x)


def _rounded_product(x):
    """The product along the last dim, each product rounded to x's dtype (NumPy's float16
    product runs in float32)."""
    with errstate(over="ignore", invalid="ignore"):
        return namespace(x).multiply.accumulate(x, axis=-1)[..., -1]


def _others_products(x, dim):
    """For each entry along ``dim`` the product of the others, exact at zeros: the running
    product of the entries before it times that of those after it, as PyTorch's
    prod_safe_zeros_backward (the same overflow: a product of all but the zero overflowed in
    another order where PyTorch's does not)."""
    n, widths = x.shape[dim], [(0, 0)] * x.ndim
    widths[dim] = (1, 0)  # a 1 in front: the product of none
    before = Pad.apply(x.narrow(dim, 0, n - 1), widths=tuple(widths), value=1.0).cumprod(dim)
    after = Pad.apply(x.narrow(dim, 1, n - 1).flip(dim), widths=tuple(widths), value=1.0)
    return before * after.cumprod(dim).flip(dim)


class ProdOfAll(Prod):
    """The product of all entries (flattened into one dim), as ``prod()``. NOTE: where two or
    more entries are 0 its gradient is 0, as PyTorch's, which skips the product of the others
    there unless the gradient is itself differentiated (create_graph): an infinite or NaN
    ``grad`` times that product (0) would be NaN."""

    backward_name = "ProdBackward0"  # PyTorch's; along a dim ProdBackward1

    @staticmethod
    def forward(ctx, x, dim, run=None):
        """``x``: flat, in memory order; ``run``: of 16-bit floats, how many of its entries
        lay one after another at stride 1 before a jump (None: none did), as PyTorch's kernel
        multiplies each such run in its vectorized loop."""
        if x.dtype not in SIXTEEN_BIT or not x.size:
            return Prod.forward(ctx, x, dim)
        ctx.save_for_backward(x)
        ctx.dim, ctx.keepdim = dim, False
        runs = namespace(x).moveaxis(x, dim, -1)  # (vmap puts a batch dim in front)
        return _sixteen_bit_product(runs.reshape(*runs.shape[:-1], -1, run or 1), carried=True)

    @staticmethod
    def backward(ctx, grad):
        others = Prod.backward(ctx, grad)
        if _grad_mode.enabled:
            return others
        (x,) = ctx.saved_tensors
        return Where.apply((x == 0).sum() > 1, 0.0, others)


holomorphic_twin(Prod)  # (of complex numbers: grad * conj(the others' product), as PyTorch's)
holomorphic_twin(ProdOfAll)


class Cumsum(Function):
    """Running sum along ``dim``; its gradient is the running sum of ``grad`` from the end."""

    complex_safe = True  # (linear: its backward is right for complex numbers as written)

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        wide = scan_dtype(x.dtype)
        if wide is None:
            return namespace(x).cumsum(x, axis=dim, dtype=x.dtype)
        return cast(namespace(x).cumsum(cast(x, wide), axis=dim), x.dtype)  # as PyTorch's

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim)


class Cumprod(Function):
    """Running product along ``dim``, with PyTorch's cumprod_backward: ``sum_{i >= k} grad_i *
    out_i / x_k`` (the reversed running sum of ``grad * out``, over ``x``) before a slice's
    first zero; at that zero the products of the entries around it up to the second zero;
    after it 0. Differentiated again (create_graph), the first formula if no entry is 0, else
    the products of the others (n**2 entries), as PyTorch's. NOTE: so a NaN after a slice's
    first zero leaves the gradient before it alone, as PyTorch's (the products of the others
    had NaN)."""

    @staticmethod
    def forward(ctx, x, dim):
        wide = scan_dtype(x.dtype)
        if wide is None:
            out = namespace(x).cumprod(_times_one(x, dim), axis=dim, dtype=x.dtype)
        else:  # as PyTorch's: a 16-bit or float32 scan runs wider, each result rounded
            out = cast(namespace(x).cumprod(_times_one(cast(x, wide), dim), axis=dim), x.dtype)
        ctx.save_for_backward(x, out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim = ctx.dim
        with errstate(divide="ignore", invalid="ignore"):  # (0 / 0 where masked out)
            if not _grad_mode.enabled:
                return _before_second_zero(x, out, grad, dim)
            # NOTE: a branch on the values, as PyTorch's: both formulas masked with where, the
            # one left out had a gradient of 0 times inf (NaN) where an entry is infinite
            if capture_hook.recorder is not None:  # (its bool(tensor) error named no op)
                capture_hook.recorder.refuse(
                    f"cumprod of shape {tuple(x.shape)} differentiated with create_graph=True "
                    "(its formula is chosen by whether an entry is 0)",
                    "Differentiate it once (no create_graph), compute it without cumprod "
                    "(x.log().cumsum(dim).exp() for positive entries)",
                )
            if not (x == 0).any():
                return (out * grad).flip(dim).cumsum(dim).flip(dim) / x
            return _omitted_products(x, grad, dim)


holomorphic_twin(Cumprod)  # (of complex numbers: the conjugates, as PyTorch's)


def _times_one(x, dim):
    """``x`` with its first slice along ``dim`` multiplied by 1, where that is no copy: of
    complex numbers, as PyTorch's running product starts at 1, and 1 * (inf + 0j) is inf +
    NaNj as complex numbers multiply (NumPy's cumprod starts at the first entry)."""
    if x.dtype.kind != "c" or not x.shape[dim]:
        return x
    x = x.copy()
    with errstate(invalid="ignore"):
        x[(slice(None),) * dim + (0,)] *= 1
    return x


def _before_second_zero(x, out, grad, dim):
    """cumprod's gradient as PyTorch's O(n) formula: entries before a slice's first zero get
    the reversed running sum of ``grad * out`` over x; the first zero gets the sum of ``grad``
    times the running products of the entries after it (up to the second zero), times the
    product of those before; the rest 0."""
    zeros_so_far = (x == 0).cumsum(dim)
    before = zeros_so_far == 0
    first_zero = (x == 0) & (zeros_so_far == 1)
    after_first = (zeros_so_far == 1) & ~first_zero
    reversed_sums = (out * grad).masked_fill(~before, 0).flip(dim).cumsum(dim).flip(dim)
    count_before = before.sum(dim, keepdim=True)
    product_before = out.gather(dim, (count_before - 1).clamp(min=0))
    product_before = product_before.masked_fill(count_before == 0, 1)
    at_zero = x.masked_fill(~after_first, 1).cumprod(dim) * grad.masked_fill(zeros_so_far != 1, 0)
    at_zero = at_zero.sum(dim, keepdim=True) * product_before
    return Where.apply(before, reversed_sums / x, Where.apply(first_zero, at_zero, 0.0))


def _omitted_products(x, grad, dim):
    """``sum_{i >= k} grad_i * prod_{j <= i, j != k} x_j`` for each k along ``dim``: the
    gradient without dividing, exact at zeros, differentiable again. Built as PyTorch's: the
    product of the entries before k times the running products of those after it, one k at a
    time, so that its gradient has PyTorch's infinities and NaNs where x holds inf."""
    n, widths = x.shape[dim], [(0, 0)] * x.ndim
    widths[dim] = (1, 0)  # a 1 in front: the product of none
    sums = []
    for k in range(n):
        omitted = Pad.apply(
            x.narrow(dim, k + 1, n - k - 1).cumprod(dim), widths=tuple(widths), value=1.0
        )
        if k:
            omitted = x.narrow(dim, 0, k).prod(dim, keepdim=True) * omitted
        sums.append((grad.narrow(dim, k, n - k) * omitted).sum(dim, keepdim=True))
    return Cat.apply(*sums, dim=dim)


def log_softmax(x, dim):
    """log(softmax(x)) on an array, stable: subtracting the max keeps exp from overflowing."""
    if x.size == 0:  # nothing to normalise (and CuPy's max has no ``initial`` for empty dims)
        return x.copy()
    module = xp if type(x) is ndarray else namespace(x)
    shifted = x - _max(x, (dim,) if type(dim) is int else dim)
    return shifted - module.log(_sum(module.exp(shifted), dim, True))


def softmax(x, dim):
    """softmax on an array, stable: exp of ``x`` minus its max (so exp cannot overflow), over
    the sum: three passes after the max."""
    if x.size == 0:
        return x.copy()
    module = xp if type(x) is ndarray else namespace(x)
    out = module.exp(x - _max(x, dim))
    out /= _sum(out, dim, True)
    return out


def row_major(out):
    """``out`` laid out row-major, as PyTorch's softmax, log_softmax and layer_norm leave
    their results whatever their input's layout (their kernels read it made contiguous): a
    16-bit linear after them rounds as addmm then, not as a strided input's matmul."""
    return out if out.flags.c_contiguous else out.copy(order="C")  # (0-d stays 0-d)


class Softmax(Function):
    """Fused for stability and speed (PyTorch's _softmax): one node instead of log_softmax then
    exp; the gradient ``out * (grad - sum(grad * out))`` needs only the result. A 16-bit input
    is computed in float32 and rounded once, as PyTorch's kernel (rounding each step moved a
    third of bfloat16 softmax's values by an ulp)."""

    @staticmethod
    def forward(ctx, x, dim):
        out = row_major(rounded(softmax(widened(x), dim), x.dtype))
        ctx.save_for_backward(out)
        ctx.dim = tuple(d - x.ndim for d in dim)  # from the end, as SoftmaxGrad takes it
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return SoftmaxGrad.apply(grad, out, dim=ctx.dim)


class SoftmaxGrad(Function):
    """``y * (grad_out - sum(grad_out * y))`` over ``dim`` (negative: counted from the end, so
    that a batch of gradients in front changes nothing), y the softmax: its backward as one
    node (PyTorch's _softmax_backward_data). Its own backward, for a gradient ``h``: the map
    from ``grad_out`` is symmetric, so ``h`` goes back through it; for ``y``,
    ``h * (grad_out - sum(grad_out * y)) - sum(h * y) * grad_out``."""

    backward_name = "SoftmaxBackwardDataBackward0"

    @staticmethod
    def forward(ctx, grad_out, y, dim):
        ctx.save_for_backward(grad_out, y)
        ctx.dim = dim
        wide_grad, wide_y = widened(grad_out), widened(y)  # 16-bit: rounded once, as Softmax
        return rounded(wide_y * (wide_grad - _sum(wide_grad * wide_y, dim, True)), y.dtype)

    @staticmethod
    def backward(ctx, grad):
        grad_out, y = ctx.saved_tensors
        d_grad_out, d_y = ctx.needs_input_grad
        grad_y = None
        if d_y:
            total = sum_kept(grad_out * y, ctx.dim)
            grad_y = grad * (grad_out - total) - sum_kept(grad * y, ctx.dim) * grad_out
        return SoftmaxGrad.apply(grad, y, dim=ctx.dim) if d_grad_out else None, grad_y


def _log_softmax_16_bit_last_dim(x):
    """PyTorch's kernel along a 16-bit input's last dim: in float32, but with the sum of the
    exps and its log rounded to the input's dtype (the kernel's scalars are of it), so that a
    sixth of its values are an ulp off log_softmax rounded once (its kernel for other dims)."""
    if x.size == 0:
        return x.copy()
    module, dtype, wide = namespace(x), x.dtype, widened(x)
    shifted = wide - _max(wide, (-1,))
    total = rounded(_sum(module.exp(shifted), -1, True), dtype)
    return rounded(shifted - widened(rounded(module.log(widened(total)), dtype)), dtype)


class LogSoftmax(Function):
    """Fused for stability: subtracting the max keeps exp from overflowing. A 16-bit input is
    computed in float32 and rounded once, forward and backward, as PyTorch's kernels (but for
    the last dim's forward, see ``_log_softmax_16_bit_last_dim``); rounded at each step, a
    sixth of the values and a fifth of the gradients were an ulp off."""

    @staticmethod
    def forward(ctx, x, dim):
        if x.dtype in SIXTEEN_BIT and dim == (x.ndim - 1,):
            out = _log_softmax_16_bit_last_dim(x)
        else:
            out = rounded(log_softmax(widened(x), dim), x.dtype)
        out = row_major(out)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        dtype = out.array.dtype
        if dtype in SIXTEEN_BIT:
            grad, out = grad.float(), out.float()
        return (grad - out.exp() * sum_kept(grad, ctx.dim)).to(dtype)


def sum_kept(t, dim: tuple | None):
    """``t`` summed over ``dim`` (None: all), kept; over no dims (a 0-d input's), ``t``
    itself, where ``Tensor.sum(())`` sums all dims, as PyTorch's: under vmap a batch of 0-d
    members was summed together (``vmap(grad(lambda t: log_softmax(t, 0)))`` gave -1 for
    each, not 0; so were var's and the inf-norm's)."""
    return t if dim == () else t.sum(dim, keepdim=True)
