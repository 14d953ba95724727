"""searchsorted, bucketize, bincount, unique and histc against PyTorch: the same inputs (ties,
values equal to boundaries, empty inputs, batched sequences), the same values and int64 (or
int32) dtypes, and the same error type where PyTorch refuses."""

import numpy as np
import pytest
import torch
from oracle import assert_doc_examples_run, assert_raises_as_torch, assert_same

import scratchgrad as sg

RNG = np.random.default_rng(0)
TIES = np.sort(RNG.integers(0, 6, 10)).astype(np.float32)  # repeated values
QUERIES = np.concatenate([RNG.integers(-1, 8, 12), TIES[:3]]).astype(np.float32)


def both(array):
    return sg.tensor(array), torch.tensor(array)


SEARCHES = {
    "ties": (TIES, QUERIES, {}),
    "right": (TIES, QUERIES, {"right": True}),
    "side right": (TIES, QUERIES, {"side": "right"}),
    "int32 out": (TIES, QUERIES, {"out_int32": True}),
    "2-D queries": (TIES, QUERIES[:12].reshape(3, 4), {}),
    "empty queries": (TIES, np.zeros(0, np.float32), {}),
    "empty sequence": (np.zeros(0, np.float32), QUERIES, {}),
    "nan query": (TIES, np.array([np.nan, 2.0], np.float32), {}),
    "batched": (np.sort(RNG.integers(0, 5, (2, 3, 6)), -1), RNG.integers(-1, 6, (2, 3, 4)), {}),
    "batched right": (
        np.sort(RNG.integers(0, 5, (3, 6)), -1),
        RNG.integers(-1, 6, (3, 5)),
        {"side": "right"},
    ),
    "int sequence, float query": (np.arange(5), np.array([1.5, 2.0, -3.0]), {}),
}


@pytest.mark.parametrize("case", SEARCHES)
def test_searchsorted_as_torch(case):
    sequence, queries, options = SEARCHES[case]
    (ours_s, torch_s), (ours_q, torch_q) = both(sequence), both(queries)
    assert_same(
        sg.searchsorted(ours_s, ours_q, **options), torch.searchsorted(torch_s, torch_q, **options)
    )


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("value", [2, 2.5, -1])
def test_searchsorted_and_bucketize_take_a_python_number(value, right):
    ours, theirs = both(TIES)
    assert_same(
        sg.searchsorted(ours, value, right=right), torch.searchsorted(theirs, value, right=right)
    )
    assert_same(sg.bucketize(value, ours, right=right), torch.bucketize(value, theirs, right=right))


def test_searchsorted_with_a_sorter_as_torch():
    sequence = RNG.permutation(10).astype(np.float64)
    sorter = np.argsort(sequence)
    for right in (False, True):
        ours, theirs = (
            lib.searchsorted(
                lib.tensor(sequence), lib.tensor(QUERIES), sorter=lib.tensor(sorter), right=right
            )
            for lib in (sg, torch)
        )
        assert_same(ours, theirs)


@pytest.mark.parametrize("options", [{}, {"right": True}, {"out_int32": True}])
def test_bucketize_as_torch(options):
    (ours_b, torch_b), (ours_x, torch_x) = both(np.unique(TIES)), both(QUERIES.reshape(3, 5))
    assert_same(
        sg.bucketize(ours_x, ours_b, **options), torch.bucketize(torch_x, torch_b, **options)
    )


@pytest.mark.parametrize(
    "weights", [None, np.float32, np.float64, np.int64], ids=["none", "f32", "f64", "i64"]
)
@pytest.mark.parametrize("minlength", [0, 12])
def test_bincount_as_torch(weights, minlength):
    x = RNG.integers(0, 8, 20)
    w = None if weights is None else RNG.integers(-3, 4, 20).astype(weights)
    ours = sg.bincount(sg.tensor(x), None if w is None else sg.tensor(w), minlength)
    theirs = torch.bincount(torch.tensor(x), None if w is None else torch.tensor(w), minlength)
    assert_same(ours, theirs)


@pytest.mark.parametrize("minlength", [0, 3])
def test_bincount_of_nothing_as_torch(minlength):
    empty = np.zeros(0, np.int64)
    assert_same(
        sg.bincount(sg.tensor(empty), minlength=minlength),
        torch.bincount(torch.tensor(empty), minlength=minlength),
    )


UNIQUES = {
    "ties 2-D": RNG.integers(0, 5, (4, 6)),
    "floats with nan": np.array([1.0, np.nan, 2.0, np.nan, 1.0, -0.0, 0.0]),
    "empty": np.zeros(0, np.float32),
    "0-d": np.array(5.0),
    "bool": np.array([True, False, True]),
}


@pytest.mark.parametrize("case", UNIQUES)
@pytest.mark.parametrize("return_inverse", [False, True])
@pytest.mark.parametrize("return_counts", [False, True])
def test_unique_as_torch(case, return_inverse, return_counts):
    ours, theirs = both(UNIQUES[case])
    options = {"return_inverse": return_inverse, "return_counts": return_counts}
    assert_same(sg.unique(ours, **options), torch.unique(theirs, **options))
    assert_same(ours.unique(**options), theirs.unique(**options))


HISTOGRAMS = {
    "data range": (RNG.normal(size=50).astype(np.float32), {"bins": 7}),
    "given range": (RNG.normal(size=50), {"bins": 5, "min": -1, "max": 1}),
    "values on edges": (np.array([0.0, 1.0, 2.0, 3.0, 4.0], np.float32), {"bins": 4}),
    "one value": (np.array([2.0, 2.0], np.float32), {"bins": 4}),
    "min equals max": (np.array([1.0, 3.0], np.float32), {"bins": 4, "min": 1, "max": 1}),
    "empty": (np.zeros(0, np.float32), {"bins": 3}),
    "default bins": (RNG.uniform(size=(10, 10)), {}),
}


@pytest.mark.parametrize("case", HISTOGRAMS)
def test_histc_as_torch(case):
    array, options = HISTOGRAMS[case]
    ours, theirs = both(array)
    assert_same(sg.histc(ours, **options), torch.histc(theirs, **options))


def test_results_require_grad_as_pytorch_s():
    """None of these has a derivative; unique's result stays in the graph, backward raising
    (see test_unique_dim), the others' leave it."""
    for m in (sg, torch):
        x = m.tensor([1.0, 2.0, 2.0], requires_grad=True)
        calls = (m.histc(x, bins=2), m.unique(x), m.searchsorted(x, x), m.bucketize(x, x))
        assert [out.requires_grad for out in calls] == [False, True, False, False]


ERRORS = [
    # (call on either library, PyTorch's exception type, our message)
    (lambda m: m.searchsorted(m.tensor([1.0, 2.0]), m.tensor([1.0]), right=True, side="left"),
     RuntimeError, "searchsorted.*opposites"),
    (lambda m: m.searchsorted(m.tensor([1.0, 2.0]), m.tensor([1.0]), side="middle"),
     RuntimeError, "searchsorted.*'middle'"),
    (lambda m: m.searchsorted(m.tensor(1.0), m.tensor([1.0])),
     RuntimeError, "searchsorted.*0 dimension"),
    (lambda m: m.searchsorted(m.ones(2, 3), m.ones(3, 3)),
     RuntimeError, r"searchsorted.*\(2, 3\).*\(3, 3\)"),
    (lambda m: m.searchsorted(m.ones(2, 3), 1.0),
     RuntimeError, "searchsorted.*scalar"),
    (lambda m: m.searchsorted(m.tensor([3.0, 1.0]), m.tensor([1.0]), sorter=m.tensor([1, 5])),
     RuntimeError, "searchsorted.*out of range"),
    (lambda m: m.searchsorted([1.0, 2.0], m.tensor([1.0])),
     TypeError, "searchsorted.*sorted_sequence.*list"),
    (lambda m: m.bucketize(m.tensor([1.0]), m.ones(2, 2)),
     RuntimeError, r"bucketize.*\(2, 2\)"),
    (lambda m: m.bincount(m.tensor([0, -1])), RuntimeError, "bincount.*non-negative.*-1"),
    (lambda m: m.bincount(m.tensor([[0, 1]])), RuntimeError, r"bincount.*1-d.*\(1, 2\)"),
    (lambda m: m.bincount(m.tensor([0.0, 1.0])), NotImplementedError, "bincount.*float32"),
    (lambda m: m.bincount(m.tensor([0, 1]), minlength=-1), RuntimeError, "minlength.*-1"),
    (lambda m: m.bincount(m.tensor([0, 1]), weights=m.tensor([1.0])),
     RuntimeError, "bincount.*weights"),
    (lambda m: m.histc(m.tensor([1, 2]), bins=4), NotImplementedError, "histc.*int64"),
    (lambda m: m.histc(m.tensor([1.0, 2.0]), bins=0), RuntimeError, "histc.*bins.*0"),
    (lambda m: m.histc(m.tensor([1.0, 2.0]), min=3, max=1), RuntimeError, "histc.*max.*min"),
    (lambda m: m.histc(m.tensor([1.0, float("inf")])), RuntimeError, "histc.*not finite"),
    (lambda m: m.unique([1, 2]), TypeError, "unique.*Tensor.*list"),
]  # fmt: skip


@pytest.mark.parametrize("call, kind, message", ERRORS)
def test_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


@pytest.mark.parametrize(
    "function", [sg.searchsorted, sg.bucketize, sg.bincount, sg.histc, sg.Tensor.unique]
)
def test_doc_examples_run(function):
    assert_doc_examples_run(function)
