"""ChainDataset (and ``+`` of iterable datasets) against torch.utils.data: the samples, the
length, the errors for map-style datasets, and batches through the DataLoader."""

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import scratchgrad as sg
from scratchgrad.utils import data


def ranges(lib):
    """IterableDatasets of range(start, stop) in either library (``lib``: our utils.data or
    torch's): one without a length, one with."""

    class Range(lib.IterableDataset):
        def __init__(self, start, stop):
            self.start, self.stop = start, stop

        def __iter__(self):
            return iter(range(self.start, self.stop))

    class SizedRange(Range):
        def __len__(self):
            return self.stop - self.start

    return lib, Range, SizedRange


OURS, THEIRS = ranges(data), ranges(tud)

CHAINS = {
    "four": lambda lib, R, S: lib.ChainDataset([R(0, 3), S(10, 12), R(5, 5), R(20, 24)]),
    "empty": lambda lib, R, S: lib.ChainDataset([]),
    "nested": lambda lib, R, S: lib.ChainDataset([lib.ChainDataset([R(0, 2)]), S(7, 9)]),
    "plus": lambda lib, R, S: R(0, 2) + S(4, 6) + R(9, 10),
    "tuple": lambda lib, R, S: lib.ChainDataset((S(3, 5), S(0, 2))),
}


@pytest.mark.parametrize("name", CHAINS)
def test_samples_are_torch_s(name):
    ours, theirs = CHAINS[name](*OURS), CHAINS[name](*THEIRS)
    assert isinstance(ours, data.ChainDataset) and isinstance(ours, data.IterableDataset)
    expected = list(theirs)
    assert list(ours) == expected
    assert list(ours) == expected  # a second pass reads the streams again
    assert len(expected) > 0 or name == "empty"


def test_length_is_the_sum_of_the_lengths_as_torch_s():
    for lib, _, S in (OURS, THEIRS):
        assert len(lib.ChainDataset([S(0, 3), S(10, 12)])) == 5
        assert len(lib.ChainDataset([])) == 0
    with pytest.raises(TypeError) as theirs:
        len(tud.ChainDataset([THEIRS[2](0, 3), THEIRS[1](0, 2)]))
    with pytest.raises(TypeError) as ours:
        len(data.ChainDataset([OURS[2](0, 3), OURS[1](0, 2)]))
    assert str(ours.value) == str(theirs.value) == "object of type 'Range' has no len()"


def test_a_map_style_dataset_raises_torch_s_error_when_reached():
    """Iteration yields the streams before it, then raises; so does ``len``."""
    for lib, _, S in (OURS, THEIRS):
        tensors = (sg if lib is data else torch).arange(4)
        chain = lib.ChainDataset([S(0, 2), lib.TensorDataset(tensors)])
        samples = iter(chain)
        assert [next(samples), next(samples)] == [0, 1]
        with pytest.raises(AssertionError, match="^ChainDataset only supports IterableDataset$"):
            next(samples)
        with pytest.raises(AssertionError, match="^ChainDataset only supports IterableDataset$"):
            len(chain)
        with pytest.raises(AssertionError, match="only supports IterableDataset"):
            list(lib.ChainDataset([[1, 2]]))


def test_batches_through_the_data_loader_are_torch_s():
    ours = data.DataLoader(CHAINS["four"](*OURS), batch_size=4)
    theirs = tud.DataLoader(CHAINS["four"](*THEIRS), batch_size=4)
    batches, expected = list(ours), list(theirs)
    assert len(batches) == len(expected) == 3
    for batch, tbatch in zip(batches, expected):
        np.testing.assert_array_equal(batch.numpy(), tbatch.numpy())
