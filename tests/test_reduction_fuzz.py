"""Random reductions, scans and sorts against PyTorch, with their gradients: a float64 tensor
that requires grad (0-d, empty and size-1 dims; transposed or sliced with a step; ties, NaN,
infinities and -0.0 now and then), an op drawn with its arguments (dims as ints, tuples,
negative, None or empty; keepdim; dtype; correction; ord; ...), then ``(y * w).sum()``
backward through every differentiable output. Both libraries must raise or not (the same error
class) and agree on each output's shape, dtype and values (NaN where NaN, the index PyTorch
picks among ties and NaNs), and on ``x.grad`` (where ties share or pick the gradient).
Set ``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

import math
import warnings

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings

import scratchgrad as sg

FUZZ = fuzz_settings(150)
# (rtol, atol) by result dtype (a dtype= of float32 rounds the float64 input)
TOLERANCE = {"float64": (1e-9, 1e-12), "float32": (1e-6, 1e-7)}
SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e200, -1e-200]

# ---- the tensor -------------------------------------------------------------------------------


@st.composite
def entries(draw, shape: tuple) -> np.ndarray:
    """float64 entries: small halves (ties likely), continuous values, or those with specials."""
    size = math.prod(shape)
    kind = draw(st.sampled_from(["ties", "continuous", "special"]))
    if kind == "ties":
        values = st.integers(-3, 3).map(lambda n: n / 2)
    elif kind == "continuous":
        values = st.floats(-3, 3, allow_nan=False)
    else:
        values = st.one_of(st.integers(-3, 3).map(float), st.sampled_from(SPECIAL))
    return np.array(draw(st.lists(values, min_size=size, max_size=size)), float).reshape(shape)


@st.composite
def inputs(draw):
    """A pair of leaves (ours, PyTorch's) and the views of them the op reads."""
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 1, 2, 3, 4]), max_size=3)))
    if shape and draw(st.integers(0, 5)) == 0:  # a long dim: past 16 entries sorts change
        shape = (*shape[:-1], draw(st.sampled_from([17, 40])))
    layout = draw(st.sampled_from(["contiguous", "transposed", "stepped"]))
    if layout == "transposed" and len(shape) >= 2:
        base = draw(entries(shape[::-1]))
        view = lambda t: t.permute(*reversed(range(len(shape))))  # noqa: E731
    elif layout == "stepped" and shape:
        base = draw(entries((2 * shape[0], *shape[1:])))
        view = lambda t: t[::2]  # noqa: E731
    else:
        base = draw(entries(shape))
        view = lambda t: t  # noqa: E731
    return base, view


# ---- the op -----------------------------------------------------------------------------------


def dims(ndim: int, many=True):
    """A dim argument: an int in range (or negative), None, a tuple (maybe empty), or out of
    range now and then."""
    rank = max(ndim, 1)
    one = st.integers(-rank, rank - 1)
    choices = [one, one, st.just(None), st.just(rank)]
    if many:
        choices += [st.lists(one, max_size=3).map(tuple), st.just(())]
    return st.one_of(*choices)


def ops(ndim: int):
    """(name, call(m, x)) for an op drawn with its arguments."""
    d, d1 = dims(ndim), dims(ndim, many=False)
    axis = st.integers(-max(ndim, 1), max(ndim, 1) - 1)
    keep = st.booleans()
    dtype = st.sampled_from([None, "float64", "float32"])

    def reduce(name):
        return st.tuples(st.just(name), d, keep, dtype).map(
            lambda a: (
                f"{a[0]}(dim={a[1]}, keepdim={a[2]}, dtype={a[3]})",
                lambda m, x: getattr(m, a[0])(
                    x, a[1], keepdim=a[2], dtype=None if a[3] is None else getattr(m, a[3])
                ),
            )
        )

    def plain(name):
        return st.just((f"{name}()", lambda m, x: getattr(m, name)(x)))

    def with_dim(name, d=d):
        return st.tuples(d, keep).map(
            lambda a: (
                f"{name}(dim={a[0]}, keepdim={a[1]})",
                lambda m, x: getattr(m, name)(x, a[0], a[1]),
            )
        )

    def scan(name):
        return axis.map(lambda a: (f"{name}(dim={a})", lambda m, x: getattr(m, name)(x, a)))

    def scan_in(name):
        return st.tuples(axis, dtype).map(
            lambda a: (
                f"{name}(dim={a[0]}, dtype={a[1]})",
                lambda m, x: getattr(m, name)(
                    x, a[0], dtype=None if a[1] is None else getattr(m, a[1])
                ),
            )
        )

    def spread(name):
        how = st.one_of(
            st.tuples(st.just("correction"), st.sampled_from([0, 1, 2, 0.5])),
            st.tuples(st.just("unbiased"), st.booleans()),
        )
        return st.tuples(d, keep, how).map(
            lambda a: (
                f"{name}(dim={a[0]}, keepdim={a[1]}, {a[2][0]}={a[2][1]})",
                lambda m, x: getattr(m, name)(x, a[0], keepdim=a[1], **{a[2][0]: a[2][1]}),
            )
        )

    ords = st.sampled_from([0, 1, 2, 3, 0.5, -1, math.inf, -math.inf])
    norm = st.tuples(ords, d, keep).map(
        lambda a: (
            f"vector_norm(ord={a[0]}, dim={a[1]}, keepdim={a[2]})",
            lambda m, x: m.linalg.vector_norm(x, a[0], a[1], a[2]),
        )
    )
    tensor_norm = st.tuples(st.sampled_from([1, 2, 3, "fro", math.inf]), d1, keep).map(
        lambda a: (
            f"norm(p={a[0]}, dim={a[1]}, keepdim={a[2]})",
            lambda m, x: m.norm(x, a[0], a[1], a[2]),
        )
    )
    sort = st.tuples(axis, st.booleans(), st.booleans()).map(
        lambda a: (
            f"sort(dim={a[0]}, descending={a[1]}, stable={a[2]})",
            lambda m, x: m.sort(x, dim=a[0], descending=a[1], stable=a[2]),
        )
    )
    argsort = st.tuples(axis, st.booleans(), st.booleans()).map(
        lambda a: (
            f"argsort(dim={a[0]}, descending={a[1]}, stable={a[2]})",
            lambda m, x: m.argsort(x, dim=a[0], descending=a[1], stable=a[2]),
        )
    )
    topk = st.tuples(st.integers(0, 3), axis, st.booleans(), st.booleans()).map(
        lambda a: (
            f"topk(k={a[0]}, dim={a[1]}, largest={a[2]}, sorted={a[3]})",
            lambda m, x: m.topk(x, a[0], dim=a[1], largest=a[2], sorted=a[3]),
        )
    )
    kthvalue = st.tuples(st.integers(1, 3), axis, keep).map(
        lambda a: (
            f"kthvalue(k={a[0]}, dim={a[1]}, keepdim={a[2]})",
            lambda m, x: m.kthvalue(x, a[0], a[1], a[2]),
        )
    )
    aminmax = st.tuples(st.one_of(st.none(), axis), keep).map(
        lambda a: (
            f"aminmax(dim={a[0]}, keepdim={a[1]})",
            lambda m, x: tuple(m.aminmax(x, dim=a[0], keepdim=a[1])),
        )
    )
    count = d.map(lambda a: (f"count_nonzero(dim={a})", lambda m, x: m.count_nonzero(x, dim=a)))
    return st.one_of(
        *(reduce(name) for name in ["sum", "mean", "nansum"]),
        st.tuples(d1, keep, dtype).map(
            lambda a: (
                f"prod(dim={a[0]}, keepdim={a[1]}, dtype={a[2]})",
                lambda m, x: (
                    m.prod(x, dtype=None if a[2] is None else getattr(m, a[2]))
                    if a[0] is None
                    else m.prod(x, a[0], a[1], dtype=None if a[2] is None else getattr(m, a[2]))
                ),
            )
        ),
        st.tuples(d, keep).map(
            lambda a: (
                f"nanmean(dim={a[0]}, keepdim={a[1]})",
                lambda m, x: m.nanmean(x, a[0], a[1]),
            )
        ),
        *(with_dim(name) for name in ["amax", "amin", "logsumexp"]),
        *(plain(name) for name in ["max", "min", "argmax", "argmin", "median", "nanmedian"]),
        *(with_dim(name, axis) for name in ["max", "min", "argmax", "argmin"]),
        *(with_dim(name, axis) for name in ["median", "nanmedian", "mode"]),
        *(with_dim(name) for name in ["all", "any"]),
        *(plain(name) for name in ["all", "any", "mode"]),
        *(spread(name) for name in ["var", "std", "var_mean", "std_mean"]),
        *(scan(name) for name in ["cummax", "cummin", "logcumsumexp"]),
        *(scan_in(name) for name in ["cumsum", "cumprod"]),
        norm,
        tensor_norm,
        sort,
        argsort,
        topk,
        kthvalue,
        aminmax,
        count,
    )


# ---- running both libraries -------------------------------------------------------------------


def outputs(result) -> list:
    """A result as a list of tensors (a named tuple's fields in order)."""
    return list(result) if isinstance(result, tuple) else [result]


def run(call, library, base: np.ndarray, view, seed: int):
    """(leaf, outputs, error): the op on a fresh leaf, then (y * w).sum() backward through
    every floating output; ``error`` is what raised (in the op or in backward), if anything."""
    leaf = library.tensor(base, dtype=library.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ys = outputs(call(library, view(leaf)))
        except Exception as error:  # noqa: BLE001 (the error is the result compared)
            return leaf, None, error
        weights = np.random.default_rng(seed)
        total = None
        for y in ys:
            if y.dtype.is_floating_point and y.requires_grad:
                w = library.tensor(weights.uniform(-2, 2, tuple(y.shape)), dtype=y.dtype)
                term = (y * w).sum()
                total = term if total is None else total + term
        try:
            if total is not None:
                total.backward()
        except Exception as error:  # noqa: BLE001
            return leaf, ys, error
    return leaf, ys, None


def array(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def assert_tensor(ours, theirs, what: str, computed_in: str | None = None) -> None:
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (
        f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    )
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {ours.shape} != {theirs.shape}"
    rtol, atol = TOLERANCE.get(computed_in or str(theirs.dtype).split(".")[-1], (0, 0))
    np.testing.assert_allclose(
        array(ours), array(theirs), rtol=rtol, atol=atol, equal_nan=True, err_msg=what
    )


def known_difference(what: str, x: np.ndarray) -> str | None:
    """What of the comparison to skip where scratchgrad differs from PyTorch on purpose
    (README, "What is different"): "gradient", "all", or None."""
    over_no_dims = "dim=()" in what and x.ndim > 0
    if what.startswith(("var", "std")) and over_no_dims:
        return "gradient"  # README: PyTorch's gradient of var/std over dim=() is that of n=1
    if what.startswith("logsumexp") and over_no_dims:
        return "all"  # README: logsumexp over dim=() reduces all dims, PyTorch's raises
    underflows = ((x != 0) & (np.abs(x) < np.finfo(np.float32).smallest_subnormal / 2)).any()
    if what.startswith("cumprod") and "dtype=float32" in what and underflows:
        return "gradient"  # README: cumprod in a narrower dtype=, entries that round to 0
    if what.startswith("mode") and np.isnan(x).any():
        return "all"  # mode's doc string: NaNs differ from each other, PyTorch's follow its sort
    return None


@given(data=st.data())
@FUZZ
def test_reduction_matches_pytorch(data):
    base, view = data.draw(inputs(), "input")
    what, call = data.draw(ops(base.ndim), "op")
    seed = data.draw(st.integers(0, 2**16), "weights")
    leaf, ours, our_error = run(call, sg, base, view, seed)
    torch_leaf, theirs, their_error = run(call, torch, base, view, seed)
    skip = known_difference(what, view(torch.tensor(base)).numpy())
    if skip == "all":
        return
    what = f"{what} of {view(torch.tensor(base))!r}"
    if their_error is not None:
        assert our_error is not None, f"{what}: PyTorch raised {their_error!r}, ours did not"
        assert isinstance(our_error, type(their_error)), (
            f"{what}: {our_error!r} where PyTorch raised {their_error!r}"
        )
        if theirs is None:
            return
    assert our_error is None or theirs is None, f"{what}: ours raised {our_error!r}"
    assert ours is not None and len(ours) == len(theirs), what
    for number, (mine, its) in enumerate(zip(ours, theirs)):
        assert_tensor(mine, its, f"{what}, output {number}")
    if skip == "gradient":
        return
    if their_error is None and torch_leaf.grad is not None:
        assert leaf.grad is not None, f"{what}: no gradient"
        computed_in = "float32" if "dtype=float32" in what else None  # (rounded there)
        assert_tensor(leaf.grad, torch_leaf.grad, f"{what}: gradient", computed_in)
    elif their_error is None:
        assert leaf.grad is None, f"{what}: a gradient where PyTorch has none"
