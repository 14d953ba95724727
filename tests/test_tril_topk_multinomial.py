"""tril/triu and their index factories, topk and multinomial beyond the op table: integer
dtypes, errors, indices, and multinomial's distribution tested statistically."""

import numpy as np
import pytest
import torch

import scratchgrad as sg


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 5, 1), (4, 2, -1), (0, 3, 0), (2, 2, 5)])
def test_triangle_indices_match_torch(row, col, offset):
    for name in ("tril_indices", "triu_indices"):
        ours, theirs = getattr(sg, name)(row, col, offset), getattr(torch, name)(row, col, offset)
        assert ours.dtype == sg.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)


def test_tril_triu_keep_integer_dtype_and_need_a_matrix():
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(sg.tensor(x).tril(1).numpy(), torch.tensor(x).tril(1).numpy())
    np.testing.assert_array_equal(sg.tensor(x).triu(-1).numpy(), torch.tensor(x).triu(-1).numpy())
    assert sg.tensor(x).triu().dtype == sg.int64
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dims"):
        sg.ones(3).tril()


def test_tril_triu_of_a_bool_mask_stay_bool():
    """The causal masks programs build as ``torch.ones(L, L, dtype=torch.bool).triu(1)``."""
    mask = np.ones((2, 3, 4), dtype=bool)
    for name, diagonal in (("triu", 1), ("tril", 0), ("tril", -1)):
        ours = getattr(sg.tensor(mask), name)(diagonal)
        theirs = getattr(torch.tensor(mask), name)(diagonal)
        assert ours.dtype == sg.bool, name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)


def test_topk_indices_match_torch_and_k_is_checked():
    x = np.random.default_rng(0).permutation(24).reshape(2, 3, 4).astype(np.float64)
    for kwargs in ({"k": 2}, {"k": 3, "dim": 1, "largest": False}, {"k": 0, "dim": 0}):
        ours, theirs = sg.tensor(x).topk(**kwargs), torch.tensor(x).topk(**kwargs)
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    with pytest.raises(RuntimeError, match=r"topk: k \(5\) is out of range for dim 2 of size 4"):
        sg.tensor(x).topk(5)


@pytest.mark.parametrize("shape", [(4,), (), (2, 0)])
def test_topk_of_a_bool_tensor_raises_as_torch(shape):
    for m in (torch, sg):
        mask = m.zeros(shape, dtype=m.bool)
        with pytest.raises(RuntimeError, match="topk does not support bool dtypes on CPU"):
            m.topk(mask, 0 if 0 in shape else 1)
        with pytest.raises(RuntimeError, match="topk does not support bool"):
            mask.topk(0 if 0 in shape else 1, largest=False)


# rows with ties: few values, so that PyTorch's CPU kernel (nth_element, then sorting the
# first k - 1; partial_sort where 64 k fit in the row) decides which of the equal ones it picks
TIED_ROWS = {
    "five": [1.0, 3.0, 3.0, 2.0, 3.0],
    "all_equal": [3.0] * 6,
    "twenty_of_three": [float(v) for v in np.random.default_rng(1).integers(0, 3, 20)],
    "with_nans": [0.0, float("nan"), 5.0, 5.0, float("nan"), 0.0, 5.0, -0.0],
    "hundred_of_two": [float(v) for v in np.random.default_rng(2).integers(0, 2, 130)],
}


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("name", TIED_ROWS)
def test_topk_picks_torchs_indices_among_ties(name, k, largest, sorted_):
    row = TIED_ROWS[name]
    x = np.array([row, row[::-1], row[1:] + row[:1]])
    for dim, data in ((-1, x), (0, x.T.copy())):
        ours = sg.tensor(data).topk(k, dim, largest, sorted_)
        theirs = torch.tensor(data).topk(k, dim, largest, sorted_)
        assert ours.indices.tolist() == theirs.indices.tolist(), dim
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())


def test_topk_unsorted_keeps_torchs_order_without_ties():
    """sorted=False leaves the first k - 1 as nth_element left them: not in order."""
    x = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 0.0, 7.0]
    for m in (sg, torch):
        assert m.tensor(x).topk(3, largest=False, sorted=False).indices.tolist() == [1, 6, 3]


def _frequencies(samples: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(samples.ravel(), minlength=n) / samples.size


def _assert_frequencies(observed, expected, draws, what):
    """Every category's frequency within 5 standard errors of its probability."""
    sigma = np.sqrt(expected * (1 - expected) / draws)
    assert (np.abs(observed - expected) <= 5 * sigma + 1e-12).all(), (what, observed, expected)


def test_multinomial_with_replacement_follows_the_weights():
    weights = np.array([[1.0, 0.0, 3.0, 6.0], [0.0, 0.0, 2.0, 0.0]])
    sg.manual_seed(0)
    samples = sg.tensor(weights).multinomial(20_000, replacement=True).numpy()
    assert samples.shape == (2, 20_000) and samples.dtype == np.int64
    _assert_frequencies(_frequencies(samples[0], 4), weights[0] / 10, 20_000, "row 0")
    assert (samples[1] == 2).all()


def test_multinomial_without_replacement_draws_in_proportion_to_what_is_left():
    """First draws follow p; second draws follow sum_i p_i p_j / (1 - p_i) over i != j."""
    p = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    rows = np.tile(p, (20_000, 1))
    samples = sg.tensor(rows).multinomial(4, generator=sg.Generator(1)).numpy()
    assert all(len(set(row)) == 4 for row in samples[:100]) and not (samples == 4).any()
    _assert_frequencies(_frequencies(samples[:, 0], 5), p, 20_000, "first draw")
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(5) if i != j) for j in range(5)])
    _assert_frequencies(_frequencies(samples[:, 1], 5), second, 20_000, "second draw")


def test_multinomial_without_replacement_takes_zero_weights_last_as_torch():
    ours = sg.tensor([0.0, 1.0, 0.0]).multinomial(3)
    assert ours.tolist() == torch.tensor([0.0, 1.0, 0.0]).multinomial(3).tolist() == [1, 0, 2]


def test_multinomial_is_seeded_by_the_library_generator():
    weights = sg.tensor([0.2, 0.3, 0.5])
    sg.manual_seed(3)
    first = weights.multinomial(10, replacement=True)
    sg.manual_seed(3)
    assert sg.multinomial(weights, 10, True).tolist() == first.tolist()


@pytest.mark.parametrize(
    "weights,count,replacement,message",
    [
        ([0.5, -0.1], 1, True, "inf, nan or < 0"),
        ([[1.0, 0.0], [0.0, 0.0]], 1, True, "sum of probs <= 0"),
        ([1.0, 2.0], 3, False, "cannot sample n_sample > prob_dist.size"),
        ([[[1.0]]], 1, True, "prob_dist must be 1 or 2 dim"),
    ],
)
def test_multinomial_errors_as_torch(weights, count, replacement, message):
    with pytest.raises(RuntimeError, match=message):
        sg.tensor(weights).multinomial(count, replacement)
    with pytest.raises(RuntimeError):
        torch.tensor(weights).multinomial(count, replacement)
