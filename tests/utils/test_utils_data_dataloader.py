"""DataLoader and default_collate, against torch.utils.data."""

from collections import OrderedDict, defaultdict, namedtuple
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import scratchgrad as sg
from scratchgrad.utils.data import (
    DataLoader,
    Subset,
    TensorDataset,
    default_collate,
    default_convert,
)

Pair = namedtuple("Pair", ["left", "right"])


def as_numpy(batch):
    """A batch of either library as nested lists/dicts/named tuples of NumPy arrays."""
    if isinstance(batch, sg.Tensor | torch.Tensor):
        return batch.numpy()
    if isinstance(batch, dict):
        return {key: as_numpy(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return (type(batch).__name__, [as_numpy(field) for field in batch])
    if isinstance(batch, list):
        return [as_numpy(field) for field in batch]
    return batch


def assert_same(ours, theirs):
    """Same structure, container types, dtypes and values."""
    assert type(ours) is type(theirs), (ours, theirs)
    if isinstance(ours, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    elif isinstance(ours, dict):
        assert list(ours) == list(theirs)
        for key in ours:
            assert_same(ours[key], theirs[key])
    elif isinstance(ours, list | tuple):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b)
    else:
        assert ours == theirs


def make_data(n):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) % 4
    return x, y


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 30])
@pytest.mark.parametrize("batch_size", [1, 3, 8, 40])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batches_in_order_as_torch(n, batch_size, drop_last):
    x, y = make_data(n)
    theirs = tud.DataLoader(
        tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
        batch_size=batch_size,
        drop_last=drop_last,
    )
    fast = DataLoader(
        TensorDataset(sg.tensor(x), sg.tensor(y)), batch_size=batch_size, drop_last=drop_last
    )
    # A plain list of (x, y) tuples goes through __getitem__ and default_collate.
    samples = [(sg.tensor(x[i]), int(y[i])) for i in range(n)]
    slow = DataLoader(samples, batch_size=batch_size, drop_last=drop_last)
    expected = [as_numpy(batch) for batch in theirs]
    assert len(fast) == len(slow) == len(theirs) == len(expected)
    assert_same([as_numpy(batch) for batch in fast], expected)
    assert_same([as_numpy(batch) for batch in slow], expected)


def test_fast_path_indexes_each_tensor_once_per_batch(monkeypatch):
    def no_items(self, index):
        raise AssertionError("the fast path must not fetch samples one by one")

    monkeypatch.setattr(TensorDataset, "__getitem__", no_items)
    x, y = make_data(10)
    loader = DataLoader(TensorDataset(sg.tensor(x), sg.tensor(y)), batch_size=4)
    assert [b.shape for b, _ in loader] == [(4, 3), (4, 3), (2, 3)]
    subset = Subset(Subset(TensorDataset(sg.tensor(x), sg.tensor(y)), [9, 8, 1, 2, 3]), [4, 0, 2])
    ((xb, yb),) = list(DataLoader(subset, batch_size=3))
    np.testing.assert_array_equal(xb.numpy(), x[[3, 9, 1]])
    np.testing.assert_array_equal(yb.numpy(), y[[3, 9, 1]])


@pytest.mark.parametrize("nested", [False, True])
def test_fast_path_equals_collating_samples(nested):
    x, y = make_data(23)
    dataset = TensorDataset(sg.tensor(x), sg.tensor(y))
    if nested:
        dataset = Subset(Subset(dataset, list(range(20, 0, -1))), [0, 5, 3, 19, 2, 7, 11, 4])

    def batches(collate_fn):
        loader = DataLoader(
            dataset, 3, shuffle=True, collate_fn=collate_fn, generator=sg.Generator(5)
        )
        return [as_numpy(batch) for batch in loader]

    assert_same(batches(None), batches(default_collate))


def test_subclass_getitem_is_respected():
    class Doubled(TensorDataset):
        def __getitem__(self, index):
            return tuple(t[index] * 2 for t in self.tensors)

    x, _ = make_data(4)
    ((xb,),) = list(DataLoader(Doubled(sg.tensor(x)), batch_size=4))
    np.testing.assert_array_equal(xb.numpy(), 2 * x)


def test_a_dataset_with_getitems_is_fetched_a_batch_at_a_time_as_in_torch():
    calls = []

    def batched(lib):
        class Squares(lib.utils.data.Dataset):
            def __len__(self):
                return 7

            def __getitem__(self, index):
                raise AssertionError("the loader must use __getitems__")

            def __getitems__(self, indices):
                calls.append(list(indices))
                return [(i, i * i) for i in indices]

        loader = lib.utils.data.DataLoader(Squares(), batch_size=3)
        whole = lib.utils.data.Subset(Squares(), [6, 5, 4, 3, 2, 1, 0])
        subset_loader = lib.utils.data.DataLoader(whole, batch_size=4)
        return [as_numpy(batch) for batch in [*loader, *subset_loader]]

    assert_same(batched(sg), batched(torch))
    assert calls == 2 * [[0, 1, 2], [3, 4, 5], [6], [6, 5, 4, 3], [2, 1, 0]]


def test_collate_fn_is_used():
    loader = DataLoader(list(range(7)), batch_size=3, collate_fn=sum)
    assert list(loader) == [3, 12, 6]


def test_collate_nested_structures_as_torch():
    rng = np.random.default_rng(0)

    def sample(lib, i):
        array = rng.standard_normal((2, 3)).astype(np.float32)
        tensor = lib.tensor(array.tolist())
        return (
            tensor,
            i,
            i / 2,
            i % 2 == 0,
            f"name{i}",
            {"image": array, "pair": Pair(np.int64(i), [tensor, float(i)])},
        )

    ours = [sample(sg, i) for i in range(4)]
    rng = np.random.default_rng(0)
    theirs = [sample(torch, i) for i in range(4)]
    assert_same(as_numpy(default_collate(ours)), as_numpy(tud.default_collate(theirs)))


def test_collate_numbers_dtypes_as_torch():
    for values in (
        [1, 2, 3],
        [0.5, 1.5],
        [True, False],
        [np.float32(1), np.float32(2)],
        [np.str_("a"), np.str_("b")],
        [b"a", b"b"],
    ):
        ours, theirs = default_collate(values), tud.default_collate(values)
        assert_same(as_numpy(ours), as_numpy(theirs))


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        ([(1, 2), (3,)], RuntimeError),
        ([object(), object()], TypeError),
        ([None, None], TypeError),
        ([np.array(["a"]), np.array(["b"])], TypeError),
        ([np.zeros(2), np.zeros(3)], RuntimeError),
        ([np.datetime64("2020-01-01"), np.datetime64("2020-01-02")], TypeError),
        ([np.array(["2020-01-01"], dtype="datetime64[D]")] * 2, TypeError),
    ],
    ids=["unequal-lengths", "object", "none", "string-array", "array-shapes", "date", "dates"],
)
def test_collate_errors_as_torch(batch, error):
    with pytest.raises(error):
        tud.default_collate(batch)
    with pytest.raises(error):
        default_collate(batch)


def epoch_orders(loader, epochs=3):
    return [[i for (batch,) in loader for i in batch.tolist()] for _ in range(epochs)]


def test_shuffle_visits_every_sample_in_a_fresh_order():
    dataset = TensorDataset(sg.tensor(np.arange(50)))
    orders = epoch_orders(DataLoader(dataset, batch_size=8, shuffle=True))
    for order in orders:
        assert sorted(order) == list(range(50))
    assert orders[0] != orders[1] != orders[2]
    assert epoch_orders(DataLoader(dataset, batch_size=8), 1)[0] == list(range(50))


def test_shuffle_reproducible_with_a_generator_or_manual_seed():
    dataset = TensorDataset(sg.tensor(np.arange(50)))

    def run(generator=None):
        return epoch_orders(DataLoader(dataset, batch_size=8, shuffle=True, generator=generator))

    assert run(sg.Generator(1)) == run(sg.Generator(1))
    assert run(sg.Generator(1)) != run(sg.Generator(2))
    sg.manual_seed(11)
    first = run()
    sg.manual_seed(11)
    assert run() == first
    # A generator reseeded with manual_seed after the loader was made is honoured.
    generator = sg.Generator(0)
    loader = DataLoader(dataset, batch_size=8, shuffle=True, generator=generator)
    generator.manual_seed(1)
    assert epoch_orders(loader) == run(sg.Generator(1))


def test_shuffle_with_drop_last():
    loader = DataLoader(list(range(10)), batch_size=4, shuffle=True, drop_last=True)
    batches = list(loader)
    assert len(loader) == len(batches) == 2
    seen = [i for batch in batches for i in batch.tolist()]
    assert len(set(seen)) == 8 and set(seen) <= set(range(10))


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, True])
def test_bad_batch_size(batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(list(range(3)), batch_size=batch_size)


def test_attributes_as_torch():
    data = list(range(5))
    loader = DataLoader(data, 2, True, drop_last=True)
    assert (loader.dataset, loader.batch_size, loader.drop_last) == (data, 2, True)


class Tagged(list):
    """A list subclass with state of its own, which collation must keep."""

    tag = "kept"


@pytest.mark.parametrize(
    "make",
    [
        lambda i: OrderedDict(b=i, a=float(i)),
        lambda i: defaultdict(list, {"x": i}),
        lambda i: MappingProxyType({"x": i}),
        lambda i: Tagged([i, float(i)]),
        lambda i: (i, float(i)),
        lambda i: Pair(i, [i]),
    ],
    ids=["OrderedDict", "defaultdict", "mappingproxy", "list-subclass", "tuple", "namedtuple"],
)
def test_collate_and_convert_keep_container_types_as_torch(make):
    samples = [make(i) for i in range(3)]
    for ours, theirs in [
        (default_collate(samples), tud.default_collate(samples)),
        (default_convert(samples[0]), tud.default_convert(samples[0])),
    ]:
        assert type(ours) is type(theirs)
        assert getattr(ours, "default_factory", None) is getattr(theirs, "default_factory", None)
        assert_same(
            as_numpy(dict(ours) if isinstance(ours, Mapping) else list(ours)),
            as_numpy(dict(theirs) if isinstance(theirs, Mapping) else list(theirs)),
        )


def test_convert_numpy_scalars_and_ranges_as_torch():
    for value in (np.float32(1.5), np.int64(2), np.bool_(True), np.float64(0.25), np.array(3)):
        ours, theirs = default_convert(value), tud.default_convert(value)
        assert isinstance(ours, sg.Tensor) and ours.shape == () and ours.item() == theirs.item()
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert default_convert(range(3)) == tud.default_convert(range(3)) == [0, 1, 2]
    assert default_convert(np.str_("a")) == "a"


def test_an_epoch_iterator_has_the_loaders_length_as_torch():
    for kwargs in ({"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}):
        ours = iter(DataLoader(list(range(10)), **kwargs))
        theirs = iter(tud.DataLoader(list(range(10)), **kwargs))
        assert len(ours) == len(theirs)
        assert len(list(ours)) == len(list(theirs))


@pytest.mark.parametrize(
    "name", ["batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"]
)
def test_setting_what_the_batches_were_built_from_raises_as_torch(name):
    for loader in (DataLoader([1, 2, 3]), tud.DataLoader([1, 2, 3])):
        with pytest.raises(ValueError, match=f"{name} attribute should not be set"):
            setattr(loader, name, getattr(loader, name))


def test_a_collate_fn_set_after_init_is_used_as_torch():
    ours, theirs = DataLoader([1, 2, 3], batch_size=2), tud.DataLoader([1, 2, 3], batch_size=2)
    ours.collate_fn = theirs.collate_fn = sum
    assert list(ours) == list(theirs) == [3, 3]


@pytest.mark.parametrize(
    ("num_workers", "context", "error"),
    [(0, "spawn", ValueError), (1, "no-such-method", ValueError), (1, 5, TypeError)],
    ids=["without-workers", "unknown-method", "not-a-context"],
)
def test_bad_multiprocessing_context_raises_as_torch(num_workers, context, error):
    for make in (DataLoader, tud.DataLoader):
        with pytest.raises(error, match="multiprocessing_context"):
            make([1], num_workers=num_workers, multiprocessing_context=context)


def test_a_timeout_without_workers_raises_at_iteration_as_torch():
    for loader in (DataLoader([1], timeout=5), tud.DataLoader([1], timeout=5)):
        with pytest.raises(AssertionError, match="timeout == 0"):
            iter(loader)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sampler": [1.5], "batch_size": 1},
        {"sampler": [1.0, 2.0], "batch_size": 2},
        {"batch_sampler": [[]]},
    ],
    ids=["float-index", "float-indices", "empty-batch"],
)
def test_a_tensor_dataset_refuses_what_sample_indexing_refuses_as_torch(kwargs):
    # (the fast path once truncated float indices and returned empty batches)
    for lib, data in ((sg, sg.utils.data), (torch, tud)):
        with pytest.raises(IndexError):
            list(data.DataLoader(data.TensorDataset(lib.arange(3)), **kwargs))


def test_a_subset_of_a_tensor_dataset_with_float_indices_raises_as_torch():
    for lib, data in ((sg, sg.utils.data), (torch, tud)):
        subset = data.Subset(data.TensorDataset(lib.arange(3)), [1.5])
        with pytest.raises(IndexError):
            list(data.DataLoader(subset, batch_size=2))


def test_collating_arrays_of_several_dtypes_promotes_as_torch():
    for dtypes in ((np.int32, np.float32), (np.uint8, np.int8), (np.float16, np.int64)):
        batch = [np.ones(2, dtype) for dtype in dtypes]
        ours, theirs = default_collate(batch), tud.default_collate(batch)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_converting_dates_raises_as_torch():
    for value in (np.datetime64("2020-01-01"), np.array([1, 2], dtype="timedelta64[s]")):
        for convert in (default_convert, tud.default_convert):
            with pytest.raises(TypeError):
                convert(value)
