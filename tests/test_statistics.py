"""statistics.py against PyTorch: quantile and nanquantile (every interpolation, dim and
keepdim, q a number or a vector, NaNs), nanmedian and mode (values and the indices PyTorch
picks among ties), cov (correction, fweights, aweights) and corrcoef, the methods histc and
bincount, and PyTorch's errors. The gradients of the differentiable ones are op-table rows."""

import math
import warnings

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_doc_examples_run, assert_raises_as_torch, same_dtype

import scratchgrad as sg
from scratchgrad import statistics

RNG = np.random.default_rng(0)
NAN = np.nan
INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


def both(array, dtype=None):
    return sg.tensor(array, dtype=dtype and getattr(sg, dtype)), torch.tensor(
        array, dtype=dtype and getattr(torch, dtype)
    )


def assert_same(ours, theirs, dtype="float64"):
    """Same shape, dtype and values (NaN where PyTorch has NaN); tuples entry by entry."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t, dtype)
        return
    assert same_dtype(ours, theirs), (ours.dtype, theirs.dtype)
    if ours.dtype in (sg.float32, sg.float64):
        assert_close(ours, theirs, "float32" if ours.dtype == sg.float32 else dtype)
    else:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def with_nans(shape, fraction=0.3):
    x = RNG.standard_normal(shape)
    x[RNG.uniform(size=shape) < fraction] = NAN
    return x


# ---- quantile and nanquantile -----------------------------------------------------------------


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_quantile_matches_torch(interpolation, dtype, dim, keepdim):
    x, tx = both(RNG.standard_normal((4, 7)), dtype)
    qs = [0.0, 0.1, 0.25, 0.5, 0.55, 0.9, 1.0]
    q, tq = both(qs, dtype)
    for name in ("quantile", "nanquantile"):
        for ours_q, torch_q in ((q, tq), (0.3, 0.3), (q[2], tq[2])):
            kw = {"dim": dim, "keepdim": keepdim, "interpolation": interpolation}
            ours = getattr(x, name)(ours_q, **kw)
            assert_same(ours, getattr(tx, name)(torch_q, **kw), dtype)
            assert_same(getattr(sg, name)(x, ours_q, **kw), getattr(torch, name)(tx, torch_q, **kw))


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_of_ties_and_nans(interpolation):
    array = np.array([[1.0, 1.0, 2.0, NAN, 2.0], [3.0, 3.0, 3.0, 0.0, 1.0]])
    array = np.concatenate([array, np.full((1, 5), NAN), RNG.integers(0, 3, (2, 5))])
    x, tx = both(array)
    q, tq = both(np.array([0.0, 0.2, 0.5, 0.75, 1.0]))
    for name in ("quantile", "nanquantile"):
        for dim in (None, 0, 1):
            kw = {"dim": dim, "interpolation": interpolation}
            assert_same(getattr(x, name)(q, **kw), getattr(tx, name)(tq, **kw))


@pytest.mark.parametrize("shape", [(), (1,), (3, 1, 2)])
def test_quantile_small_shapes(shape):
    x, tx = both(RNG.standard_normal(shape))
    q, tq = both(np.array([0.3, 0.8]))
    for dim in [None, *range(-max(len(shape), 1), max(len(shape), 1))]:
        for keepdim in (False, True):
            assert_same(x.quantile(0.4, dim, keepdim), tx.quantile(0.4, dim, keepdim))
            assert_same(x.nanquantile(q, dim, keepdim), tx.nanquantile(tq, dim, keepdim))


def test_quantile_gradient_reaches_the_entries_read():
    x, tx = both(RNG.standard_normal((3, 5)))
    x.requires_grad_(), tx.requires_grad_()
    for interpolation in INTERPOLATIONS:
        x.grad = tx.grad = None
        x.quantile(0.35, 1, interpolation=interpolation).sum().backward()
        tx.quantile(0.35, 1, interpolation=interpolation).sum().backward()
        assert_close(x.grad, tx.grad)


QUANTILE_ERRORS = {
    "q above one": (lambda m: m.ones(3).quantile(1.5), r"q must be in the range \[0, 1\] but"),
    "q below zero": (lambda m: m.ones(3).quantile(-0.1), r"in the range \[0, 1\] but got -0.1"),
    "q NaN": (lambda m: m.ones(3).nanquantile(float("nan")), r"in the range \[0, 1\] but got nan"),
    "q tensor outside": (
        lambda m: m.ones(3).quantile(m.tensor([0.5, 1.5])),
        r"q values must be in the range \[0, 1\]",
    ),
    "q matrix": (lambda m: m.ones(3).quantile(m.ones(1, 1) / 2), "must be a scalar or 1D tensor"),
    "q dtype": (
        lambda m: m.ones(3).quantile(m.tensor([0.5], dtype=m.float64)),
        "q tensor must be same dtype as the input tensor",
    ),
    "integer input": (
        lambda m: m.tensor([1, 2]).quantile(0.5),
        "input tensor must be either float or double dtype",
    ),
    "half input": (
        lambda m: m.ones(2, dtype=m.float16).quantile(0.5),
        "input tensor must be either float or double dtype",
    ),
    "empty input": (lambda m: m.ones(0, 3).quantile(0.5, 1), "input tensor must be non-empty"),
    "interpolation": (
        lambda m: m.ones(3).quantile(0.5, interpolation="cubic"),
        "interpolation must be one of linear, lower, higher, midpoint or nearest, but got cubic",
    ),
}


@pytest.mark.parametrize("name", QUANTILE_ERRORS)
def test_quantile_errors(name):
    call, message = QUANTILE_ERRORS[name]
    assert_raises_as_torch(call, RuntimeError, message)


def test_quantile_dim_out_of_range():
    assert_raises_as_torch(lambda m: m.ones(2, 3).quantile(0.5, 2), IndexError, "out of range")


def test_quantile_argument_not_a_tensor():
    with pytest.raises(TypeError):
        torch.quantile([1.0, 2.0], 0.5)
    with pytest.raises(TypeError, match="must be Tensor"):
        sg.quantile([1.0, 2.0], 0.5)


# ---- nanmedian and mode -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_nanmedian_matches_torch(dtype):
    array = np.concatenate([with_nans((5, 6)), np.full((1, 6), NAN)])
    array[2, :] = [2.0, 1.0, 2.0, 1.0, NAN, 1.0]  # ties: torch's index is a stable sort's
    x, tx = both(array, dtype)
    assert_same(x.nanmedian(), tx.nanmedian(), dtype)
    assert_same(sg.nanmedian(x), torch.nanmedian(tx), dtype)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            # the all-NaN row's index (3) is where PyTorch's std::nth_element leaves a NaN
            ours, theirs = x.nanmedian(dim, keepdim), tx.nanmedian(dim, keepdim)
            assert_same(tuple(ours), tuple(theirs), dtype)


def test_nanmedian_small_nan_only_and_integer_inputs():
    for array in ([NAN, NAN], [NAN, NAN, NAN], [3.0], 2.5):
        x, tx = both(array)
        assert_same(x.nanmedian(), tx.nanmedian())
        assert_same(tuple(x.nanmedian(0)), tuple(tx.nanmedian(0)))
        assert_same(tuple(x.nanmedian(0, True)), tuple(tx.nanmedian(0, True)))
    x, tx = both(RNG.integers(0, 4, (3, 7)))
    assert_same(x.nanmedian(), tx.nanmedian())
    assert_same(tuple(x.nanmedian(1)), tuple(tx.nanmedian(1)))
    assert_same(sg.ones(0).nanmedian(), torch.ones(0).nanmedian())


def test_nanmedian_errors():
    assert_raises_as_torch(
        lambda m: m.ones(0, 2).nanmedian(0), IndexError, "dim 0 to have non-zero size"
    )
    assert_raises_as_torch(lambda m: m.ones(2).bool().nanmedian(), NotImplementedError, "Bool")
    assert_raises_as_torch(lambda m: m.ones(2).nanmedian(1), IndexError, "out of range")


def test_nanmedian_gradient_goes_to_the_median():
    array = with_nans((3, 5))
    array[0, 0] = 0.5  # no row of only NaNs
    x, tx = both(array)
    x.requires_grad_(), tx.requires_grad_()
    x.nanmedian(1).values.sum().backward()
    tx.nanmedian(1).values.sum().backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "bool", "uint8"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mode_matches_torch(dtype, dim, keepdim):
    array = RNG.integers(0, 3, (4, 9)).astype(dtype)
    x, tx = both(array)
    assert_same(tuple(x.mode(dim, keepdim)), tuple(tx.mode(dim, keepdim)))
    assert_same(tuple(sg.mode(x, dim, keepdim)), tuple(torch.mode(tx, dim, keepdim)))


def test_mode_small_shapes_and_signed_zeros():
    for array in (3.0, [7], [1, 2, 3, 2, 1, 3], [-0.0, 0.0, 0.0], RNG.integers(-3, 3, 16)):
        x, tx = both(array)
        assert_same(tuple(x.mode()), tuple(tx.mode()))
        assert_same(tuple(x.mode(0, True)), tuple(tx.mode(0, True)))
    x, tx = both(np.zeros((2, 0)))
    assert_same(tuple(x.mode(0)), tuple(tx.mode(0)))


@pytest.mark.parametrize("n", [17, 40, 100])
def test_mode_of_long_rows_picks_pytorchs_index_among_ties(n):
    """Past 16 entries PyTorch's pick among the occurrences follows its unstable sort; ours
    took the last occurrence (index 15 where PyTorch returns 6, in 1044 of 3000 random rows)."""
    x, tx = both(RNG.integers(-3, 4, (3, n)) / 2)
    for dim in (0, 1):
        assert_same(tuple(x.mode(dim)), tuple(tx.mode(dim)))


@pytest.mark.parametrize("n", [4, 9, 17, 40])
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
def test_mode_of_rows_with_nans_picks_as_pytorch(n, dtype):
    """PyTorch sorts with ``<``, under which a NaN is neither before nor after anything, and
    counts runs of equal entries, a NaN a run of one: ``[nan, 2, 1]`` gives (nan, 0), where
    ours, counting each NaN apart but sorting NaNs last, gave (1, 2)."""
    array = RNG.integers(0, 3, (6, n)).astype(float)
    array[RNG.uniform(size=array.shape) < np.linspace(0.1, 0.9, 6)[:, None]] = NAN
    array[0, :2] = NAN  # two NaNs at the front of a row of small values
    x, tx = both(array, dtype)
    for dim in (0, 1):
        ours, theirs = x.mode(dim), tx.mode(dim)
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        np.testing.assert_array_equal(ours.values.float().numpy(), theirs.values.float().numpy())
    ours, theirs = sg.tensor([NAN, 2.0, 1.0]).mode(), torch.tensor([NAN, 2.0, 1.0]).mode()
    assert math.isnan(ours.values.item()) and math.isnan(theirs.values.item())
    assert ours.indices.item() == theirs.indices.item() == 0


def test_mode_of_rows_with_nans_under_jit_and_vmap():
    """The pick among NaNs is found from the values at each call: a jitted step's replays
    and vmap's members give PyTorch's too."""
    arrays = [RNG.integers(0, 3, (5, 6)).astype(float) for _ in range(4)]
    for array in arrays:
        array[RNG.uniform(size=array.shape) < 0.4] = NAN
    step = sg.jit(lambda x: x.mode(1).indices)
    for array in arrays:  # two recordings, then replays
        theirs = torch.tensor(array).mode(1).indices
        np.testing.assert_array_equal(step(sg.tensor(array)).numpy(), theirs.numpy())
        ours = sg.func.vmap(lambda row: row.mode().indices, in_dims=1)(sg.tensor(array.T.copy()))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_mode_errors_and_gradient():
    assert_raises_as_torch(lambda m: m.ones(0).mode(), IndexError, "dim 0 to have non-zero size")
    assert_raises_as_torch(lambda m: m.ones(2, 3).mode(2), IndexError, "out of range")
    x, tx = both(RNG.integers(0, 3, (3, 6)).astype(float))
    x.requires_grad_(), tx.requires_grad_()
    (x.mode(1).values * sg.tensor([1.0, 2.0, 3.0])).sum().backward()
    (tx.mode(1).values * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    assert_close(x.grad, tx.grad)


# ---- cov and corrcoef -------------------------------------------------------------------------


COV_INPUTS = {
    "matrix": RNG.standard_normal((3, 6)),
    "vector": RNG.standard_normal(5),
    "one observation": RNG.standard_normal((3, 1)),
    "one variable": RNG.standard_normal((1, 4)),
    "integers": RNG.integers(-4, 4, (2, 5)),
    "float32": RNG.standard_normal((4, 3)).astype(np.float32),
    "0-d": np.array(1.5),
}


@pytest.mark.parametrize("name", COV_INPUTS)
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_matches_torch(name, correction):
    x, tx = both(COV_INPUTS[name])
    dtype = "float32" if name == "float32" else "float64"
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = x.cov(correction=correction)
    with warnings.catch_warnings(record=True) as torch_warned:
        warnings.simplefilter("always")
        theirs = tx.cov(correction=correction)
    assert_same(ours, theirs, dtype)
    assert bool(ours_warned) == bool(torch_warned)
    assert_same(sg.cov(x, correction=correction), torch.cov(tx, correction=correction), dtype)


@pytest.mark.parametrize("correction", [0, 1, 3])
@pytest.mark.parametrize("weights", ["fweights", "aweights", "both"])
def test_cov_weights_match_torch(correction, weights):
    x, tx = both(RNG.standard_normal((3, 6)))
    f, tf = both(RNG.integers(0, 4, 6))
    a, ta = both(RNG.uniform(0.1, 2.0, 6))
    kw, tkw = {"correction": correction}, {"correction": correction}
    if weights in ("fweights", "both"):
        kw["fweights"], tkw["fweights"] = f, tf
    if weights in ("aweights", "both"):
        kw["aweights"], tkw["aweights"] = a, ta
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(x.cov(**kw), tx.cov(**tkw))
        assert_same(x[0].cov(**kw), tx[0].cov(**tkw))


def test_cov_warns_where_degrees_of_freedom_run_out():
    x, tx = both(RNG.standard_normal((2, 3)))
    f, tf = both(np.array([1, 0, 0]))
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        theirs = tx.cov(fweights=tf)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0") as caught:
        ours = x.cov(fweights=f)
    assert_same(ours, theirs)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0") as more:
        sg.cov(x[:, :1]), sg.corrcoef(x[:, :1])
    warned = [w for w in [*caught, *more] if "degrees of freedom" in str(w.message)]
    assert len(warned) == 3 and {w.filename for w in warned} == {__file__}  # the caller's line


COV_ERRORS = {
    "3-D input": (lambda m: m.ones(2, 2, 2).cov(), "two or fewer dimensions but got an input"),
    "bool input": (lambda m: m.ones(2, 3).bool().cov(), "bool dtype is not supported"),
    "fweights 2-D": (
        lambda m: m.ones(2, 3).cov(fweights=m.ones(1, 3).long()),
        "expected fweights to have one or fewer dimensions",
    ),
    "fweights float": (
        lambda m: m.ones(2, 3).cov(fweights=m.ones(3)),
        "expected fweights to have integral dtype",
    ),
    "fweights length": (
        lambda m: m.ones(2, 3).cov(fweights=m.ones(2).long()),
        "same numel as there are observations in the input but got 2 != 3",
    ),
    "fweights negative": (
        lambda m: m.ones(2, 3).cov(fweights=m.tensor([1, -1, 1])),
        "fweights cannot be negative",
    ),
    "aweights integer": (
        lambda m: m.ones(2, 3).cov(aweights=m.ones(3).long()),
        "expected aweights to have floating point dtype",
    ),
    "aweights length": (
        lambda m: m.ones(2, 3).cov(aweights=m.ones(4)),
        "expected aweights to have the same numel",
    ),
    "aweights negative": (
        lambda m: m.ones(2, 3).cov(aweights=m.tensor([1.0, -1.0, 1.0])),
        "aweights cannot be negative",
    ),
    "weights sum to zero": (
        lambda m: m.ones(2, 3).cov(aweights=m.zeros(3)),
        "weights sum to zero, can't be normalized",
    ),
}


@pytest.mark.parametrize("name", COV_ERRORS)
def test_cov_errors(name):
    call, message = COV_ERRORS[name]
    assert_raises_as_torch(call, RuntimeError, message)


@pytest.mark.parametrize("name", COV_INPUTS)
def test_corrcoef_matches_torch(name):
    x, tx = both(COV_INPUTS[name])
    dtype = "float32" if name == "float32" else "float64"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(x.corrcoef(), tx.corrcoef(), dtype)
        assert_same(sg.corrcoef(x), torch.corrcoef(tx), dtype)


def test_corrcoef_of_a_constant_row_is_nan_and_errors():
    x, tx = both(np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]]))
    assert_same(x.corrcoef(), tx.corrcoef())
    assert_raises_as_torch(lambda m: m.ones(2, 2, 2).corrcoef(), RuntimeError, "two or fewer")


# ---- histc and bincount as methods ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_method_matches_torch(dtype):
    x, tx = both(RNG.standard_normal(50), dtype)
    for kw in ({}, {"bins": 7}, {"bins": 5, "min": -1, "max": 1}, {"bins": 3, "min": 2, "max": 2}):
        assert_same(x.histc(**kw), tx.histc(**kw), dtype)
    assert_raises_as_torch(
        lambda m: m.tensor([1, 2]).histc(), (RuntimeError, NotImplementedError), ""
    )


def test_bincount_method_matches_torch():
    x, tx = both(RNG.integers(0, 6, 30))
    w, tw = both(RNG.uniform(size=30))
    assert_same(x.bincount(), tx.bincount())
    assert_same(x.bincount(w, minlength=9), tx.bincount(tw, minlength=9))
    assert_same(x.bincount(minlength=2), tx.bincount(minlength=2))
    assert_raises_as_torch(lambda m: m.tensor([-1, 2]).bincount(), RuntimeError, "non-negative")


def test_names_on_the_root_and_on_tensor():
    for name in ("quantile", "nanquantile", "nanmedian", "mode", "cov", "corrcoef", "histc"):
        assert hasattr(sg, name) and hasattr(sg.Tensor, name), name
    assert hasattr(sg.Tensor, "bincount")


@pytest.mark.parametrize("name", statistics.__all__)
def test_doc_examples_run(name):
    assert_doc_examples_run(getattr(statistics, name))
