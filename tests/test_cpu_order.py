"""cpu_order's algorithms against PyTorch's CPU kernels: on random rows with many ties (and
NaNs, and -0.0 beside 0.0), the indices each gives equal those topk, sort(stable=False),
kthvalue and nanmedian (of NaNs) return, whatever the row's length (insertion sort, introsort,
heaps)."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import cpu_order


def _rows(seed):
    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 4, 5, 16, 17, 40, 64, 65, 130, 300):
        row = rng.integers(0, rng.choice([2, 3, 1000]), n).astype(float)
        if n > 3 and seed % 2:
            row[rng.integers(0, n, 2)] = np.nan
            row[row == 0] = -0.0
        yield row


def _pairs(row):
    return list(zip(row.tolist(), range(len(row))))


@pytest.mark.parametrize("seed", range(4))
def test_each_algorithm_picks_the_indices_torch_picks(seed):
    rng = np.random.default_rng(100 + seed)
    for row in _rows(seed):
        x, n = torch.tensor(row), len(row)
        for descending in (False, True):
            expected = x.sort(descending=descending, stable=False).indices.tolist()
            assert cpu_order.sorted_indices(_pairs(row), descending) == expected
        for largest in (False, True):
            for sorted_ in (False, True):
                k = int(rng.integers(0, n + 1))
                expected = x.topk(k, largest=largest, sorted=sorted_).indices.tolist()
                assert cpu_order.top_indices(_pairs(row), k, largest, sorted_) == expected
        k = int(rng.integers(1, n + 1))
        assert cpu_order.kth_index(_pairs(row), k) == [x.kthvalue(k).indices.item()]


def test_a_row_of_nans_gets_the_nanmedian_index_torch_gives():
    for n in (*range(1, 40), 100, 1000, 4097):
        expected = torch.full((n,), float("nan")).nanmedian(0).indices.item()
        assert cpu_order.nan_row_median_index(n) == expected


def test_rows_without_ties_are_left_to_the_stable_sort():
    values = np.array([[1.0, 2.0, 3.0], [1.0, np.nan, np.nan], [0.0, -0.0, 1.0]])
    indices = np.zeros((3, 1), np.int64)
    redone = cpu_order.redo_rows(values, indices, lambda row: [9], every_row=False)
    assert redone.tolist() == [[0], [9], [9]]
    assert cpu_order.redo_rows(values[:1], indices[:1], lambda row: [9], False) is None
    two_nans = values[1:2].astype(sg.bfloat16)  # (a dtype NumPy knows only as kind "V")
    assert cpu_order.redo_rows(two_nans, indices[:1], lambda row: [9], False).tolist() == [[9]]
