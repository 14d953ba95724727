"""Dataset, TensorDataset, Subset and random_split, against torch.utils.data where it applies."""

import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import scratchgrad as sg
from scratchgrad.utils.data import Dataset, Subset, TensorDataset, random_split


def test_dataset_is_abstract():
    with pytest.raises(TypeError):
        Dataset()

    class OnlyGetitem(Dataset):
        def __getitem__(self, index):
            return index

    with pytest.raises(TypeError, match="__len__"):
        OnlyGetitem()


def test_tensor_dataset_items_are_rows():
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    y = np.array([4, 3, 2, 1, 0])
    ds = TensorDataset(sg.tensor(x), sg.tensor(y))
    assert len(ds) == 5
    for i in range(5):
        xi, yi = ds[i]
        assert isinstance(xi, sg.Tensor) and isinstance(yi, sg.Tensor)
        np.testing.assert_array_equal(xi.numpy(), x[i])
        assert yi.item() == y[i]
    (only,) = TensorDataset(sg.tensor(y))[-1]
    assert only.item() == 0


@pytest.mark.parametrize("shapes", [[(4, 2), (5,)], [(3,), (3, 1), (2, 3)]], ids=["two", "three"])
def test_tensor_dataset_size_mismatch(shapes):
    tensors = [sg.zeros(*shape) for shape in shapes]
    with pytest.raises(AssertionError):  # torch asserts; we raise its error naming the shapes
        tud.TensorDataset(*(torch.zeros(*shape) for shape in shapes))
    with pytest.raises(AssertionError, match="size mismatch") as info:
        TensorDataset(*tensors)
    assert all(str(shape) in str(info.value) for shape in shapes)


def test_tensor_dataset_needs_tensors_with_a_first_dimension():
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(IndexError):
        tud.TensorDataset(torch.tensor(1.0))
    with pytest.raises(IndexError, match="first dimension"):
        TensorDataset(sg.tensor(1.0))


def test_subset():
    sub = Subset(list("abcdef"), [5, 0, 3])
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == ["f", "a", "d"]
    assert sub[-1] == "d"
    nested = Subset(sub, [2, 0])
    assert [nested[0], nested[1]] == ["d", "f"]


def test_subset_takes_a_list_of_indices_and_getitems_as_torch():
    base = list("abcdef")
    for lib in (sg, torch):
        sub = lib.utils.data.Subset(base, [5, 0, 3])
        with pytest.raises(TypeError, match="list indices"):
            sub[[0, 2]]  # passed on to the list in one call: a list cannot take it
        assert sub.__getitems__([2, 0]) == ["d", "f"]
    for lib in (sg, torch):
        rows = lib.utils.data.TensorDataset(lib.arange(6) * 10)
        (picked,) = lib.utils.data.Subset(rows, [5, 0, 3])[[0, 2]]
        assert picked.tolist() == [50, 30]


def test_subset_subclass_overriding_only_getitem_raises_as_torch():
    for lib in (sg, torch):

        class Shifted(lib.utils.data.Subset):
            def __getitem__(self, index):
                return super().__getitem__(index) + 1

        with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
            Shifted([1, 2, 3], [0, 1])


SPLITS = [
    (10, [3, 7]),
    (10, [0, 10]),
    (10, [0.3, 0.7]),
    (10, [0.75, 0.25]),
    (5, [0.5, 0.5]),
    (10, [1 / 3, 1 / 3, 1 / 3]),
    (11, [0.2, 0.2, 0.2, 0.2, 0.2]),
    (7, [0.1] * 10),
    (1797, [0.8, 0.1, 0.1]),
    (3, [0.9, 0.05, 0.05]),
    (1, [1]),
    (0, [0.5, 0.5]),
]


@pytest.mark.parametrize(("n", "lengths"), SPLITS, ids=[f"{n}-{ls}" for n, ls in SPLITS])
def test_random_split_sizes_as_torch(n, lengths):
    with warnings.catch_warnings(record=True) as torch_warnings:
        warnings.simplefilter("always")
        expected = [len(s) for s in tud.random_split(range(n), lengths)]
    with warnings.catch_warnings(record=True) as our_warnings:
        warnings.simplefilter("always")
        splits = random_split(range(n), lengths, generator=sg.Generator(0))
    assert [len(s) for s in splits] == expected
    assert len(our_warnings) == len(torch_warnings)  # one per empty split from fractions
    together = [i for s in splits for i in s]
    assert sorted(together) == list(range(n))  # disjoint and covering


@pytest.mark.parametrize("lengths", [[3, 6], [3, 8], [0.5, 0.4], [0.5, 0.6], [1.5, -0.5]], ids=str)
def test_random_split_errors_as_torch(lengths):
    with pytest.raises(ValueError):
        tud.random_split(range(10), lengths)
    with pytest.raises(ValueError):
        random_split(range(10), lengths)


@pytest.mark.parametrize("lengths", [[-1, 11], [2.5, 7.5]], ids=str)
def test_random_split_rejects_lengths_that_are_not_counts(lengths):
    # torch returns splits of sizes 9 and 1 for [-1, 11], and a TypeError from deep inside for
    # [2.5, 7.5]; we refuse both up front.
    with pytest.raises(ValueError, match="non-negative ints"):
        random_split(range(10), lengths)


def test_random_split_reproducible():
    data = range(100)

    def split(generator=None):
        return [list(s) for s in random_split(data, [0.5, 0.3, 0.2], generator=generator)]

    assert split(sg.Generator(7)) == split(sg.Generator(7))
    assert split(sg.Generator(7)) != split(sg.Generator(8))
    sg.manual_seed(3)
    first = split()
    sg.manual_seed(3)
    assert split() == first
    assert split() != first  # the library generator moved on


def test_stack_dataset_is_torchs_and_batches_through_a_loader():
    from scratchgrad.utils.data import DataLoader, StackDataset

    images, labels = [[float(i), -float(i)] for i in range(5)], list(range(5))
    for args, kwargs in [((images, labels), {}), ((), {"image": images, "label": labels})]:
        ours, theirs = StackDataset(*args, **kwargs), torch.utils.data.StackDataset(*args, **kwargs)
        assert len(ours) == len(theirs) == 5
        assert [ours[i] for i in range(5)] == [theirs[i] for i in range(5)]
    batch = next(iter(DataLoader(StackDataset(image=images, label=labels), batch_size=2)))
    assert batch["image"][0].tolist() == [0.0, 1.0] and batch["label"].tolist() == [0, 1]
    for args, kwargs in [((images, labels[:3]), {}), ((images,), {"x": images}), ((), {})]:
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.StackDataset(*args, **kwargs)
        with pytest.raises(ValueError) as ours:
            StackDataset(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)
