"""Random convolutions, poolings, pads, interpolations, pixel shuffles and fold/unfold against
PyTorch, with their gradients: a float64 image that requires grad (batched, with a batch of 0
too, or unbatched; spatial sizes from 1, smaller than the kernel too; contiguous, transposed
and permuted back, sliced with a step, or channels-last; ties, ReLU zeros, NaN and -inf now
and then), an op drawn with its options (weights and biases require grad too), then
``(y * w).sum()`` backward through every floating output. Both libraries must raise or not
(the same error class) and agree on each output's shape, dtype and values, on the indices a
max pool returns, and on every leaf's gradient (which entry among ties gets a max pool's).
Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import TOLERANCE, fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(250)
RTOL, ATOL = TOLERANCE["float64"]

# ---- the input --------------------------------------------------------------------------------


def values(kind: str, shape: tuple, seed: int) -> np.ndarray:
    """float64 entries of ``shape``: halves (ties likely), a ReLU's output (zeros tie),
    continuous ones, or continuous with NaN, inf and -inf here and there."""
    rng = np.random.default_rng(seed)
    if kind == "ties":
        return rng.integers(-2, 3, shape) / 2
    if kind == "relu":
        return np.maximum(rng.integers(-3, 3, shape) / 2, 0)
    x = rng.standard_normal(shape)
    if kind == "special":
        x[rng.random(shape) < 0.15] = -math.inf
        x[rng.random(shape) < 0.05] = math.nan
        x[rng.random(shape) < 0.05] = math.inf
    return x


@st.composite
def images(draw, channels: int, spatial: int, sizes=None):
    """(base, view, shape): an image of ``channels`` and ``spatial`` dims (``sizes`` or 1 to 5
    each), batched (a batch of 0 to 2) or not, and how it is viewed from its contiguous base."""
    if sizes is None:
        sizes = draw(st.lists(st.integers(1, 5), min_size=spatial, max_size=spatial))
    batch = draw(st.sampled_from([(), (1,), (2,), (2,), (0,)]))
    shape = (*batch, channels, *sizes)
    layout = draw(st.sampled_from(["contiguous", "transposed", "stepped", "channels_last"]))
    order = list(range(len(shape)))
    if layout == "transposed":
        base_shape, order = shape[::-1], order[::-1]
    elif layout == "channels_last":
        order = [*order[: -spatial - 1], *order[-spatial:], order[-spatial - 1]]
        base_shape = tuple(shape[i] for i in order)
        order = list(np.argsort(order))
    else:
        base_shape = shape
    step_dim = draw(st.integers(0, len(shape) - 1)) if layout == "stepped" else None
    if step_dim is not None:
        base_shape = tuple(2 * n if i == step_dim else n for i, n in enumerate(shape))
    kind = draw(st.sampled_from(["ties", "relu", "continuous", "continuous", "special"]))
    base = values(kind, base_shape, draw(st.integers(0, 2**16)))

    def view(t):
        if step_dim is not None:
            return t[(slice(None),) * step_dim + (slice(None, None, 2),)]
        return t.permute(*(int(i) for i in order))

    return base, view, shape


def ints(low: int, high: int, n: int):
    """An int or a tuple of ``n`` of them."""
    one = st.integers(low, high)
    return st.one_of(one, st.lists(one, min_size=n, max_size=n).map(tuple))


# ---- the ops ----------------------------------------------------------------------------------
# Each strategy gives (what, call, image, params): ``call(m, x, *params)`` runs the op in
# library ``m`` on the image's view and the leaves made of ``params`` (float64 arrays or None).


def functional(m):
    return m.nn.functional


@st.composite
def convolutions(draw):
    d = draw(st.integers(1, 3))
    transposed = draw(st.booleans())
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    c_in, c_out = (groups * draw(st.integers(1, 2)) for _ in range(2))
    if draw(st.integers(0, 15)) == 0:  # channels that do not fit
        c_in += 1
    kernel = tuple(draw(st.lists(st.integers(1, 3), min_size=d, max_size=d)))
    stride, dilation = draw(ints(1, 2, d)), draw(ints(1, 2, d))
    seed = draw(st.integers(0, 2**16))
    bias = values("continuous", (c_out,), seed + 1) if draw(st.booleans()) else None
    if transposed:
        padding, output_padding = draw(ints(0, 2, d)), draw(ints(0, 1, d))
        weight = values("continuous", (c_in, c_out // groups, *kernel), seed)
        what = (
            f"conv_transpose{d}d(weight {weight.shape}, bias={bias is not None}, stride={stride}, "
            f"padding={padding}, output_padding={output_padding}, groups={groups}, "
            f"dilation={dilation})"
        )

        def call(m, x, w, b):
            op = getattr(functional(m), f"conv_transpose{d}d")
            return op(x, w, b, stride, padding, output_padding, groups, dilation)

    else:
        padding = draw(st.one_of(ints(0, 2, d), st.sampled_from(["same", "valid"])))
        weight = values("continuous", (c_out, c_in // groups, *kernel), seed)
        mode = draw(st.sampled_from(["functional", "zeros", "reflect", "replicate", "circular"]))
        what = (
            f"conv{d}d(weight {weight.shape}, bias={bias is not None}, stride={stride}, "
            f"padding={padding!r}, dilation={dilation}, groups={groups}, {mode})"
        )

        def call(m, x, w, b):
            if mode == "functional":
                op = getattr(functional(m), f"conv{d}d")
                return op(x, w, b, stride, padding, dilation, groups)
            layer = getattr(m.nn, f"Conv{d}d")(
                c_in, c_out, kernel, stride, padding, dilation, groups, b is not None, mode
            )
            params = {"weight": w} if b is None else {"weight": w, "bias": b}
            return m.func.functional_call(layer, params, (x,))

    image = draw(images(c_in if not transposed else c_in, d))
    return what, call, image, (weight, bias)


@st.composite
def poolings(draw):
    d = draw(st.integers(1, 3))
    kernel, dilation = draw(ints(1, 3, d)), draw(ints(1, 2, d))
    stride = draw(st.one_of(st.none(), ints(1, 3, d)))
    padding = draw(ints(0, 1, d))
    ceil_mode = draw(st.booleans())
    kind = draw(st.sampled_from(["max", "avg", "lp"]))
    if kind == "max":
        indices = draw(st.booleans())
        what = (
            f"max_pool{d}d(kernel={kernel}, stride={stride}, padding={padding}, "
            f"dilation={dilation}, ceil_mode={ceil_mode}, return_indices={indices})"
        )

        def call(m, x):
            op = getattr(functional(m), f"max_pool{d}d")
            return op(x, kernel, stride, padding, dilation, ceil_mode, indices)

    elif kind == "avg":
        include_pad = draw(st.booleans())
        divisor = draw(st.sampled_from([None, None, 1, 3])) if d > 1 else None
        what = (
            f"avg_pool{d}d(kernel={kernel}, stride={stride}, padding={padding}, "
            f"ceil_mode={ceil_mode}, count_include_pad={include_pad}, divisor_override={divisor})"
        )

        def call(m, x):
            op = getattr(functional(m), f"avg_pool{d}d")
            extra = () if d == 1 else (divisor,)
            return op(x, kernel, stride, padding, ceil_mode, include_pad, *extra)

    else:
        norm = draw(st.sampled_from([1, 2, 3, 1.5, math.inf]))
        if d == 1:  # PyTorch's lp_pool1d takes an int kernel_size only (a tuple: TypeError)
            kernel = pair(kernel, 1)[0]
        what = f"lp_pool{d}d(norm_type={norm}, kernel={kernel}, stride={stride}, {ceil_mode})"

        def call(m, x):
            return getattr(functional(m), f"lp_pool{d}d")(x, norm, kernel, stride, ceil_mode)

    image = draw(images(draw(st.integers(1, 3)), d))
    if kind == "max" and padding_only(image[2][-d:], kernel, stride, padding, dilation, ceil_mode):
        what += " " + NO_BACKWARD
    return what, call, image, ()


# PyTorch 2.13's max pooling gives a window that reads the padding only (dilation past it)
# the index of an entry past the input, and its backward then writes there: it aborts the
# process or corrupts memory. Such a window is -inf in both libraries; its index (past the
# input in both, not always the same) and the gradients are not compared.
NO_BACKWARD = "(a window in the padding only: no backward)"


def padding_only(sizes, kernel, stride, padding, dilation, ceil_mode) -> bool:
    """Whether a max pooling has a window that reads no entry of the input."""
    for n, k, s, p, dl in zip(
        sizes, *(pair(v, len(sizes)) for v in (kernel, stride or kernel, padding, dilation))
    ):
        span = dl * (k - 1) + 1
        count = (n + 2 * p - span + (s - 1 if ceil_mode else 0)) // s + 1
        if (
            ceil_mode and (count - 1) * s >= n + p
        ):  # PyTorch drops a last window that starts past the input
            count -= 1
        for i in range(max(count, 0)):
            if not any(0 <= i * s - p + j * dl < n for j in range(k)):
                return True
    return False


@st.composite
def adaptive_poolings(draw):
    d = draw(st.integers(1, 3))
    one = st.integers(1, 6)
    entry = one if d == 1 else st.one_of(one, st.none())
    size = draw(st.one_of(one, st.lists(entry, min_size=d, max_size=d).map(tuple)))
    if draw(st.booleans()):
        indices = draw(st.booleans())
        what = f"adaptive_max_pool{d}d({size}, return_indices={indices})"

        def call(m, x):
            return getattr(functional(m), f"adaptive_max_pool{d}d")(x, size, indices)

    else:
        what = f"adaptive_avg_pool{d}d({size})"

        def call(m, x):
            return getattr(functional(m), f"adaptive_avg_pool{d}d")(x, size)

    return what, call, draw(images(draw(st.integers(1, 3)), d)), ()


@st.composite
def pads(draw):
    d = draw(st.integers(1, 3))
    mode = draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    length = draw(st.sampled_from([2 * d, 2 * d, 2 * d, 2, 4, 6]))
    pad = tuple(draw(st.lists(st.integers(-2, 3), min_size=length, max_size=length)))
    value = draw(st.sampled_from([None, 0.5, -math.inf])) if mode == "constant" else None
    what = f"pad({pad}, mode={mode!r}, value={value})"

    def call(m, x):
        return functional(m).pad(x, pad, mode, value)

    return what, call, draw(images(draw(st.integers(1, 2)), d)), ()


MODES = {1: ["linear"], 2: ["bilinear", "bicubic"], 3: ["trilinear"]}


@st.composite
def interpolations(draw):
    d = draw(st.integers(1, 3))
    mode = draw(st.sampled_from(["nearest", "nearest-exact", "area", *MODES[d]]))
    if draw(st.integers(0, 15)) == 0:
        mode = draw(st.sampled_from(["linear", "bilinear", "bicubic", "trilinear"]))
    scales = st.sampled_from([0.5, 0.7, 1.0, 1.5, 2.0, 2.5, 3.0])
    if draw(st.booleans()):
        size, scale = draw(ints(1, 7, d)), None
    else:
        size, scale = None, draw(st.one_of(scales, st.lists(scales, min_size=d, max_size=d)))
    linear = mode in ("linear", "bilinear", "bicubic", "trilinear")
    align = draw(st.sampled_from([None, True, False])) if linear else None
    recompute = draw(st.sampled_from([None, True, False]))
    antialias = mode in ("bilinear", "bicubic") and draw(st.booleans())
    module = draw(st.booleans()) and not antialias
    what = (
        f"{'Upsample' if module else 'interpolate'}(size={size}, scale_factor={scale}, "
        f"mode={mode!r}, align_corners={align}, recompute_scale_factor={recompute}, "
        f"antialias={antialias})"
    )

    def call(m, x):
        if module:
            return m.nn.Upsample(size, scale, mode, align, recompute)(x)
        return functional(m).interpolate(x, size, scale, mode, align, recompute, antialias)

    return what, call, draw(images(draw(st.integers(1, 2)), d)), ()


@st.composite
def shuffles(draw):
    r = draw(st.integers(1, 3))
    if draw(st.booleans()):
        channels = draw(st.integers(1, 2)) * r * r + (draw(st.integers(0, 8)) == 0)
        what = f"pixel_shuffle({r})"

        def call(m, x):
            return functional(m).pixel_shuffle(x, r)

        return what, call, draw(images(channels, 2)), ()
    sizes = [r * draw(st.integers(1, 2)) + (draw(st.integers(0, 8)) == 0) for _ in range(2)]
    what = f"pixel_unshuffle({r})"

    def call(m, x):
        return functional(m).pixel_unshuffle(x, r)

    return what, call, draw(images(draw(st.integers(1, 2)), 2, sizes)), ()


def pair(value, n: int = 2) -> tuple:
    """An int or a tuple argument as a tuple of ``n``."""
    return value if isinstance(value, tuple) else (value,) * n


@st.composite
def folds(draw):
    kernel, dilation = draw(ints(1, 3, 2)), draw(ints(1, 2, 2))
    padding, stride = draw(ints(0, 2, 2)), draw(ints(1, 3, 2))
    args = f"kernel_size={kernel}, dilation={dilation}, padding={padding}, stride={stride}"
    if draw(st.booleans()):

        def call(m, x):
            return functional(m).unfold(x, kernel, dilation, padding, stride)

        return f"unfold({args})", call, draw(images(draw(st.integers(1, 2)), 2)), ()
    output = tuple(draw(st.lists(st.integers(1, 5), min_size=2, max_size=2)))
    k, dl, p, s = (pair(v) for v in (kernel, dilation, padding, stride))
    blocks = [(output[i] + 2 * p[i] - dl[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    length = max(math.prod(blocks), 0) + (draw(st.integers(0, 8)) == 0)
    channels = draw(st.integers(1, 2)) * k[0] * k[1]

    def call(m, x):
        return functional(m).fold(x, output, kernel, dilation, padding, stride)

    return f"fold(output_size={output}, {args})", call, draw(images(channels, 1, [length])), ()


OPS = st.one_of(
    convolutions(), poolings(), adaptive_poolings(), pads(), interpolations(), shuffles(), folds()
)

# ---- running both libraries -------------------------------------------------------------------


class NegativeSize(Exception):
    """A result with a negative size (PyTorch's pad of an empty batch cropped past a dim)."""


def run(m, call, base, view, params, seed: int, backward: bool = True):
    """(leaves, outputs): the op on fresh leaves (the image's base first), then (y * w).sum()
    backward through every floating output (if ``backward``); an exception where the op or
    backward raised."""
    leaves = [m.tensor(base, requires_grad=True)]
    leaves += [None if p is None else m.tensor(p, requires_grad=True) for p in params]
    result = outcome(call, m, view(leaves[0]), *leaves[1:])
    if isinstance(result, Exception):
        return result
    ys = list(result) if isinstance(result, tuple) else [result]
    if any(size < 0 for y in ys for size in y.shape):
        return NegativeSize(f"{[tuple(y.shape) for y in ys]}")
    rng = np.random.default_rng(seed)
    terms = [
        (y * m.tensor(rng.uniform(-2, 2, tuple(y.shape)))).sum()
        for y in ys
        if y.dtype.is_floating_point and y.requires_grad
    ]
    if terms and backward:
        loss = outcome(lambda: sum(terms[1:], terms[0]).backward())
        if isinstance(loss, Exception):
            loss.of_empty_result = any(0 in y.shape for y in ys)
            return loss
    return leaves, ys


def array(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def assert_tensor(ours, theirs, what: str) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (
        f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    )
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    exact = not theirs.dtype.is_floating_point
    np.testing.assert_allclose(
        array(ours),
        array(theirs),
        rtol=0 if exact else RTOL,
        atol=0 if exact else ATOL,
        equal_nan=True,
        err_msg=what,
    )


@given(data=st.data())
@FUZZ
def test_conv_pool_matches_pytorch(data):
    what, call, (base, view, shape), params = data.draw(OPS, "op")
    seed = data.draw(st.integers(0, 2**16), "weights")
    what = f"{what} of {shape} ({view(torch.tensor(base)).stride()})"
    backward = NO_BACKWARD not in what
    ours = run(sg, call, base, view, params, seed, backward)
    theirs = run(torch, call, base, view, params, seed, backward)
    if isinstance(theirs, NegativeSize):
        return  # README, "What is different": PyTorch's result has a negative size, ours raises
    if getattr(theirs, "of_empty_result", False):
        theirs = None  # README, "What is different": PyTorch's backward of some empty results
    circular_crop = "wraps around" in str(ours) or "circular" in what and "crops" in str(ours)
    if isinstance(ours, RuntimeError) and circular_crop:
        return  # README, "What is different": PyTorch's circular pad of a dim cropped past its size
    if theirs is None or isinstance(theirs, tuple) and all(0 in y.shape for y in theirs[1]):
        # an empty result: ours gets zero gradients, where PyTorch's backward raises or (reflect
        # and replicate pads) gives entries it never wrote (README, "What is different")
        assert not isinstance(ours, Exception), f"{what}: ours raised {ours!r}"
        for leaf in ours[0]:
            assert leaf is None or leaf.grad is None or not array(leaf.grad).any(), what
        if theirs is None:
            return
        backward = False
    if raised_alike(ours, theirs, what):
        return
    (our_leaves, our_ys), (their_leaves, their_ys) = ours, theirs
    if "antialias=True" in what and their_ys[0].shape[-1] == 1:
        return  # README, "What is different": PyTorch's antialiased rows at an output width of 1
    assert len(our_ys) == len(their_ys), f"{what}: {len(our_ys)} outputs"
    for number, (mine, its) in enumerate(zip(our_ys, their_ys)):
        if number and not backward:
            continue  # (the indices of windows in the padding only lie past the input, anywhere)
        assert_tensor(mine, its, f"{what}, output {number}")
    for number, (mine, its) in enumerate(zip(our_leaves, their_leaves)):
        if its is None or not backward:
            continue
        where = f"{what}: gradient of leaf {number}"
        if its.grad is None:
            assert mine.grad is None or not array(mine.grad).any(), f"{where}: PyTorch has none"
        else:
            assert mine.grad is not None, f"{where}: none"
            assert_tensor(mine.grad, its.grad, where)
