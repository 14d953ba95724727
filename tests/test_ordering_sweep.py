"""Ordering, search and NaN-aware ops against PyTorch, from a sweep over dtypes, ties, NaNs,
empty and 0-d inputs: the same values and dtypes, and the same error type where PyTorch
refuses."""

import numpy as np
import pytest
import torch
from oracle import assert_same

import scratchgrad as sg


def assert_both_raise(call, kind):
    with pytest.raises(kind):
        call(torch)
    with pytest.raises(kind):
        call(sg)


# ---- searchsorted and bucketize: a number, or a tensor of another dtype -----------------------

SEARCHES = {  # boundaries, value: compared in their promoted dtype, as PyTorch's
    "2.5 in int64": (np.array([1, 2, 2, 3, 5]), 2.5),
    "2.5 in int32": (np.array([1, 2, 2, 3, 5], np.int32), 2.5),
    "nan in int64": (np.array([1, 2, 3]), float("nan")),
    "-1 in uint8 (wraps)": (np.array([1, 2, 3], np.uint8), -1),
    "2.5 in uint8": (np.array([1, 2, 3], np.uint8), 2.5),
    "2 in bool": (np.array([False, True]), 2),
    "0.5 in bool": (np.array([False, True]), 0.5),
    "int64 in float32": (np.array([16777217]), np.array([16777216.0], np.float32)),
    "16777216.5 in int64 (float32)": (np.array([16777217]), 16777216.5),
    "float64 in float32": (np.array([1.0, 2.0, 3.0], np.float32), 2.0000000001),
    "bool in int64": (np.array([1, 2, 3]), np.array([True])),
    "int64 in bool": (np.array([False, True]), np.array([1, 2])),
}


@pytest.mark.parametrize("case", SEARCHES)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_compares_in_the_promoted_dtype(case, right):
    boundaries, value = SEARCHES[case]

    def search(m):
        v = m.tensor(value) if isinstance(value, np.ndarray) else value
        return m.searchsorted(m.tensor(boundaries), v, right=right)

    assert_same(search(sg), search(torch))
    if not isinstance(value, np.ndarray):
        assert_same(
            sg.bucketize(value, sg.tensor(boundaries), right=right),
            torch.bucketize(value, torch.tensor(boundaries), right=right),
        )


def test_searchsorted_refuses_bool_boundaries_and_values():
    bools = np.array([False, True])
    assert_both_raise(
        lambda m: m.searchsorted(m.tensor(bools), m.tensor(bools)), NotImplementedError
    )
    assert_both_raise(lambda m: m.searchsorted(m.tensor(bools), True), NotImplementedError)
    assert_both_raise(lambda m: m.bucketize(m.tensor(bools), m.tensor(bools)), NotImplementedError)


# ---- bincount ----------------------------------------------------------------------------------


@pytest.mark.parametrize("weights", [None, [], [1.0]], ids=["none", "empty", "wrong length"])
def test_bincount_of_an_empty_input_is_int64_zeros(weights):
    # PyTorch answers before it looks at the weights, so even float weights give int64
    def count(m):
        w = None if weights is None else m.tensor(weights, dtype=m.float64)
        return m.bincount(m.tensor([], dtype=m.int64), w, minlength=3)

    assert_same(count(sg), count(torch))


# ---- where(condition) and nonzero(as_tuple=True) of a 0-d tensor --------------------------------


@pytest.mark.parametrize("value", [True, False, 2.5, 0])
def test_where_of_a_0d_condition_indexes_it_as_one_entry(value):
    assert_same(sg.where(sg.tensor(value)), torch.where(torch.tensor(value)))
    assert_same(sg.tensor(value).nonzero(as_tuple=True), torch.tensor(value).nonzero(as_tuple=True))


# ---- order statistics: bools, empty dims, k's type ----------------------------------------------

BOOLS = np.array([[True, False, True], [False, False, True]])

REFUSED = {  # call(m, x) on BOOLS or the given array, and PyTorch's error type
    "median of bools": (lambda m, x: m.median(x), BOOLS, NotImplementedError),
    "median of bools along dim": (lambda m, x: m.median(x, 1), BOOLS, NotImplementedError),
    "kthvalue of bools": (lambda m, x: m.kthvalue(x, 2), BOOLS, NotImplementedError),
    "kthvalue, k out of range first": (lambda m, x: m.kthvalue(x, 4), BOOLS, RuntimeError),
    "kthvalue along an empty dim": (lambda m, x: m.kthvalue(x, 1, 0), np.zeros((0, 3)), IndexError),
    "kthvalue, k 0, empty dim": (lambda m, x: m.kthvalue(x, 0), np.zeros(0), IndexError),
    "kthvalue, k a bool": (lambda m, x: m.kthvalue(x, True), np.ones(3), TypeError),
    "kthvalue, k a float": (lambda m, x: m.kthvalue(x, 2.0), np.ones(3), TypeError),
    "topk, k a bool": (lambda m, x: m.topk(x, True), np.ones(3), TypeError),
    "topk, k a float": (lambda m, x: m.topk(x, 2.0), np.ones(3), TypeError),
    "clamp without bounds": (lambda m, x: m.clamp(x), np.ones(3), RuntimeError),
    "clamp of bools by a bool": (lambda m, x: m.clamp(x, True), BOOLS, NotImplementedError),
    "clamp_ of bools by a bool": (lambda m, x: x.clamp_(max=False), BOOLS, NotImplementedError),
    "isin of bools": (lambda m, x: m.isin(x, m.tensor([1])), BOOLS, RuntimeError),
    "isin in bools": (lambda m, x: m.isin(m.tensor([1]), x), BOOLS, RuntimeError),
    "isin of a bool": (lambda m, x: m.isin(True, x), np.ones(3), RuntimeError),
    "sort, stable an int": (lambda m, x: m.sort(x, stable=1), np.ones(3), TypeError),
    "sort, descending an int": (lambda m, x: x.sort(0, 1), np.ones(3), TypeError),
    "argsort, stable None": (lambda m, x: x.argsort(stable=None), np.ones(3), TypeError),
    "argsort, descending a string": (lambda m, x: m.argsort(x, 0, "no"), np.ones(3), TypeError),
    "trace of bools": (lambda m, x: x.trace(), np.ones((2, 2), bool), NotImplementedError),
    "trace of a 0-d bool": (lambda m, x: m.trace(x), np.array(True), NotImplementedError),
    # one dim, where a tuple would be read as several (prod reduced the first one only)
    "prod over a tuple of dims": (lambda m, x: x.prod((0, 1)), np.ones((2, 3)), TypeError),
    "prod over a list of one dim": (lambda m, x: m.prod(x, [0]), np.ones((2, 3)), TypeError),
    "argmax over a tuple of dims": (lambda m, x: x.argmax((0,)), np.ones((2, 3)), TypeError),
    "aminmax over a list of dims": (lambda m, x: m.aminmax(x, dim=[0]), np.ones(3), TypeError),
    "logsumexp over None": (lambda m, x: m.logsumexp(x, None), np.ones(3), TypeError),
    # keepdim is a bool (1 or None would be read as its truth value)
    **{
        f"{name}, keepdim not a bool": (call, np.ones((2, 3)), TypeError)
        for name, call in {
            "sum": lambda m, x: x.sum(0, keepdim=1),
            "mean": lambda m, x: m.mean(x, 0, keepdim=None),
            "nansum": lambda m, x: x.nansum(0, keepdim=1),
            "prod": lambda m, x: x.prod(0, keepdim=1),
            "var": lambda m, x: x.var(0, keepdim=1),
            "amax": lambda m, x: x.amax(0, keepdim=None),
            "max": lambda m, x: x.max(0, keepdim=1),
            "argmin": lambda m, x: x.argmin(0, keepdim=1),
            "logsumexp": lambda m, x: x.logsumexp(0, keepdim=1),
            "median": lambda m, x: x.median(0, keepdim=1),
            "nanmedian": lambda m, x: x.nanmedian(0, keepdim=1),
            "mode": lambda m, x: x.mode(0, keepdim=1),
            "kthvalue": lambda m, x: x.kthvalue(1, 0, keepdim=1),
            "quantile": lambda m, x: x.quantile(0.5, 0, keepdim=1),
            "any": lambda m, x: x.any(0, keepdim=1),
            "norm": lambda m, x: x.norm(2, 0, keepdim=1),
            "vector_norm": lambda m, x: m.linalg.vector_norm(x, 2, 0, keepdim=1),
            "aminmax": lambda m, x: m.aminmax(x, dim=0, keepdim=1),
        }.items()
    },
    # var's overloads: (unbiased), (dim, unbiased, keepdim), (dim, *, correction, keepdim)
    "var, unbiased twice": (lambda m, x: x.var(True, True), np.ones(3), TypeError),
    "var, unbiased first and keepdim": (
        lambda m, x: x.var(False, keepdim=True),
        np.ones(3),
        TypeError,
    ),
    "var, unbiased an int": (lambda m, x: x.var(0, 1), np.ones(3), TypeError),
    "std, unbiased an int": (lambda m, x: m.std(x, 0, unbiased=1), np.ones(3), TypeError),
    "var, unbiased and correction": (
        lambda m, x: x.var(0, True, correction=1),
        np.ones(3),
        TypeError,
    ),
    "std_mean, unbiased first and keepdim": (
        lambda m, x: m.std_mean(x, True, keepdim=True),
        np.ones(3),
        TypeError,
    ),
    "var_mean, unbiased and correction": (
        lambda m, x: m.var_mean(x, 0, False, correction=0),
        np.ones(3),
        TypeError,
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_torch(case):
    call, array, kind = REFUSED[case]
    assert_both_raise(lambda m: call(m, m.tensor(array)), kind)


def test_clamp_of_bools_by_an_int_or_a_bool_tensor_still_works():
    for call in (lambda m, x: m.clamp(x, 1), lambda m, x: m.clamp(x, m.tensor(True))):
        assert_same(call(sg, sg.tensor(BOOLS)), call(torch, torch.tensor(BOOLS)))


def test_k_may_be_an_integer_tensor():
    x = np.array([3.0, 1.0, 2.0])
    assert_same(sg.topk(sg.tensor(x), sg.tensor(2)), torch.topk(torch.tensor(x), torch.tensor(2)))
    assert_same(
        sg.kthvalue(sg.tensor(x), sg.tensor(2)), torch.kthvalue(torch.tensor(x), torch.tensor(2))
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.sort(x, 0, False, True),
        lambda m, x: x.sort(0, False, True),
        lambda m, x: m.argsort(x, 0, False, True),
        lambda m, x: x.argsort(0, False, True),
        # the overload with stable takes dim and descending by keyword only too
        lambda m, x: m.sort(x, 0, stable=True),
        lambda m, x: x.sort(0, True, stable=False),
        lambda m, x: m.sort(x, 0, stable=None),
        lambda m, x: m.argsort(x, 0, stable=True),
        lambda m, x: x.argsort(0, descending=True, stable=True),
        # a bool is no dim
        lambda m, x: m.sort(x, True),
        lambda m, x: x.argsort(False),
        lambda m, x: m.sort(x, dim=True),
    ],
)
def test_stable_is_keyword_only(call):
    assert_both_raise(lambda m: call(m, m.tensor([2.0, 1.0, 2.0])), TypeError)
    x = np.array([2.0, 1.0, 2.0, 1.0])
    for by_keyword in (
        lambda m: m.sort(m.tensor(x), stable=True, dim=0, descending=True),
        lambda m: m.tensor(x).argsort(dim=0, stable=True),
        lambda m: m.sort(m.tensor(x), 0, descending=True),
        lambda m: m.msort(m.tensor(x)),
    ):
        assert_same(by_keyword(sg), by_keyword(torch))


# ---- dtype= of sums and scans: an integer one where a gradient would flow ----------------------

INTEGER_OUTPUTS = {
    "sum": lambda m, x: x.sum(dtype=m.int64),
    "nansum": lambda m, x: m.nansum(x, dtype=m.int64),
    "sum to bool": lambda m, x: x.sum(0, dtype=m.bool),
    "prod": lambda m, x: x.prod(dtype=m.int32),
    "cumsum": lambda m, x: x.cumsum(0, dtype=m.int64),
    "cumprod": lambda m, x: m.cumprod(x, 0, dtype=m.int64),
}


@pytest.mark.parametrize("op", INTEGER_OUTPUTS)
def test_an_integer_dtype_is_refused_where_a_gradient_would_flow(op):
    call = INTEGER_OUTPUTS[op]
    assert_both_raise(lambda m: call(m, m.tensor([1.5, 2.5], requires_grad=True)), RuntimeError)
    for m in (sg, torch):  # detached, or under no_grad, it converts
        with m.no_grad():
            assert not call(m, m.tensor([1.5, 2.5], requires_grad=True)).is_floating_point()
    assert_same(call(sg, sg.tensor([1.5, 2.5])), call(torch, torch.tensor([1.5, 2.5])))


def test_nanmean_refuses_an_integer_dtype():
    assert_both_raise(lambda m: m.nanmean(m.tensor([1.0, 2.0]), dtype=m.int32), RuntimeError)
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating"):
        sg.nanmean(sg.tensor([1.0, 2.0]), dtype=sg.int32)
    assert_same(
        sg.nanmean(sg.tensor([1.0, float("nan")]), dtype=sg.float64),
        torch.nanmean(torch.tensor([1.0, float("nan")]), dtype=torch.float64),
    )


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_elementwise_extremes_refuse_a_number(name):
    assert_both_raise(lambda m: getattr(m, name)(m.tensor([1.0, 2.0]), 1.5), TypeError)
    assert_both_raise(lambda m: getattr(m.tensor([1.0, 2.0]), name)(1.5), TypeError)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_median_along_a_dim_is_nan_where_a_slice_holds_one(dtype):
    x = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 4.0, 1.0, 0.0]])

    def median(m):
        out = m.tensor(x).to(getattr(m, dtype)).median(1)
        return out.values.float(), out.indices

    assert_same(median(sg), median(torch))


def test_where_takes_a_uint8_condition_with_a_warning_and_refuses_other_integers():
    mask, x = np.array([1, 0, 2], np.uint8), np.array([1.0, 2.0, 3.0])
    for m in (sg, torch):
        with pytest.warns(UserWarning, match="uint8 condition"):
            out = m.where(m.tensor(mask), m.tensor(x), 0.0)
        np.testing.assert_array_equal(out.numpy(), [1.0, 0.0, 3.0])
    assert_both_raise(lambda m: m.where(m.tensor([1, 0]), 1.0, 0.0), RuntimeError)
    assert_both_raise(lambda m: m.where(m.tensor([1.0, 0.0]), 1.0, 0.0), RuntimeError)


ISIN_NUMBERS = {  # a number beside a tensor promotes as == promotes it, as PyTorch's
    "0.1 in float64": lambda m: m.isin(m.tensor([0.1, 0.2], dtype=m.float64), 0.1),
    "float64 has 0.1": lambda m: m.isin(0.1, m.tensor([0.1, 0.2], dtype=m.float64)),
    "-1 in uint8": lambda m: m.isin(m.tensor([255, 1], dtype=m.uint8), -1),
    "uint8 has -1": lambda m: m.isin(-1, m.tensor([255], dtype=m.uint8)),
    "2.5 in int64": lambda m: m.isin(m.tensor([2, 3]), 2.5),
    "2.0 in int64, inverted": lambda m: m.isin(m.tensor([2, 3]), 2.0, invert=True),
}


@pytest.mark.parametrize("case", ISIN_NUMBERS)
def test_isin_compares_a_number_in_the_promoted_dtype(case):
    assert_same(ISIN_NUMBERS[case](sg), ISIN_NUMBERS[case](torch))


def test_isin_refuses_a_list():
    assert_both_raise(lambda m: m.isin(m.tensor([1.0, 2.0]), [1.0]), TypeError)


# ---- out= of several results: their own dtypes, no cast ------------------------------------------

SEVERAL_OUTS = {  # call(m, x, out): x is float64; out's values float32, indices int64
    "sort": lambda m, x, out: m.sort(x, 1, out=out),
    "topk": lambda m, x, out: m.topk(x, 1, out=out),
    "kthvalue": lambda m, x, out: m.kthvalue(x, 1, out=out),
    "median": lambda m, x, out: m.median(x, 1, out=out),
    "max": lambda m, x, out: m.max(x, 1, out=out),
    "cummin": lambda m, x, out: m.cummin(x, 1, out=out),
}


@pytest.mark.parametrize("op", SEVERAL_OUTS)
def test_several_outs_must_have_the_results_dtypes(op):
    call, x = SEVERAL_OUTS[op], np.array([[3.0, 1.0], [2.0, 4.0]])

    def values_cast(m):
        return call(m, m.tensor(x), (m.empty(0, dtype=m.float32), m.empty(0, dtype=m.int64)))

    def indices_cast(m):
        return call(m, m.tensor(x), (m.empty(0, dtype=m.float64), m.empty(0, dtype=m.int32)))

    assert_both_raise(values_cast, RuntimeError)
    assert_both_raise(indices_cast, RuntimeError)

    def right(m):
        return call(m, m.tensor(x), (m.empty(0, dtype=m.float64), m.empty(0, dtype=m.int64)))

    assert_same(tuple(right(sg)), tuple(right(torch)))


def test_where_takes_pytorchs_keywords():
    x = np.array([[2.0, 1.0], [0.0, 5.0]])

    def call(m):
        t = m.tensor(x)
        return m.where(condition=t > 1, input=t, other=m.tensor(0.0))

    assert_same(call(sg), call(torch))
