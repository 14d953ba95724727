"""DataLoader with worker processes, samplers, IterableDataset and ConcatDataset, against
torch.utils.data. Every test that starts workers runs under an alarm: a hang fails the test."""

import os
import random
import signal
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import scratchgrad as sg
from scratchgrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)


@pytest.fixture
def no_hang():
    """Fail (instead of hanging the suite) if the test takes more than 30 seconds."""

    def alarm(signum, frame):
        raise TimeoutError("the test hung")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def values(batches):
    """Batches (tensors, or lists/dicts of them) as nested lists, for comparisons."""
    if isinstance(batches, sg.Tensor | torch.Tensor):
        return batches.tolist()
    if isinstance(batches, dict):
        return {key: values(value) for key, value in batches.items()}
    if isinstance(batches, list | tuple):
        return [values(b) for b in batches]
    return batches


XS = sg.arange(60).float().reshape(30, 2)
YS = sg.arange(30) % 4


class Squares(Dataset):
    """A map-style dataset with dict samples, fetched item by item."""

    def __len__(self):
        return 23

    def __getitem__(self, index):
        return {"x": XS[index] ** 2, "i": index}


# ---- workers give the batches of a single process ---------------------------------------------


@pytest.mark.parametrize("num_workers", [1, 3])
@pytest.mark.parametrize("dataset", [TensorDataset(XS, YS), Squares()], ids=["tensors", "items"])
def test_workers_give_the_batches_of_one_process(no_hang, dataset, num_workers):
    def epochs(workers, **options):
        loader = DataLoader(
            dataset,
            batch_size=4,
            shuffle=True,
            num_workers=workers,
            generator=sg.Generator(7),
            **options,
        )
        return [values(list(loader)) for _ in range(2)]

    expected = epochs(0)
    assert expected[0] != expected[1]  # two epochs, two orders
    assert epochs(num_workers) == expected
    assert epochs(num_workers, prefetch_factor=1, drop_last=False) == expected


def test_in_order_false_gives_the_same_batches(no_hang):
    loader = DataLoader(Squares(), batch_size=3, num_workers=2, in_order=False)
    batches = values(list(loader))
    assert sorted(i for batch in batches for i in batch["i"]) == list(range(23))


def test_the_librarys_generator_moves_on_as_with_one_process(no_hang):
    """The order comes from the main process's generator whatever the number of workers, and
    the generator is left in the same state (the base seed is drawn either way)."""
    after = []
    for workers in (0, 2):
        sg.manual_seed(3)
        loader = DataLoader(TensorDataset(XS), batch_size=8, shuffle=True, num_workers=workers)
        order = [values(batch) for batch in loader]
        after.append((order, sg.rand(3).tolist()))
    assert after[0] == after[1]


def test_sampler_and_batch_sampler_as_torch(no_hang):
    data = list(range(10))
    order = [3, 1, 4, 1, 5, 9, 2, 6]
    batches = [[0, 1], [2, 3, 4], [9]]
    for workers in (0, 2):
        ours = DataLoader(data, batch_size=3, sampler=order, num_workers=workers)
        theirs = tud.DataLoader(data, batch_size=3, sampler=order)
        assert values(list(ours)) == values(list(theirs))
        assert len(ours) == len(theirs) == 3
        ours = DataLoader(data, batch_sampler=batches, num_workers=workers)
        assert values(list(ours)) == values(list(tud.DataLoader(data, batch_sampler=batches)))


def test_batch_size_none_converts_each_sample_as_torch():
    samples = [(np.arange(3.0) + i, i, "s") for i in range(4)]
    ours = list(DataLoader(samples, batch_size=None))
    theirs = list(tud.DataLoader(samples, batch_size=None))
    assert values(ours) == values(theirs)
    assert isinstance(ours[0][0], sg.Tensor) and ours[0][0].dtype == sg.float64
    assert len(DataLoader(samples, batch_size=None)) == 4


# ---- IterableDataset ----------------------------------------------------------------------------


def stream(lib):
    base = tud.IterableDataset if lib is torch else IterableDataset
    info_of = tud.get_worker_info if lib is torch else get_worker_info

    class Stream(base):
        """0..10, split between workers by striding, as PyTorch's documentation does."""

        def __iter__(self):
            info = info_of()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(lib.tensor([float(i)]) for i in range(start, 11, step))

    return Stream()


@pytest.mark.parametrize("num_workers", [0, 2, 3])
@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_split_between_workers_as_torch(no_hang, num_workers, drop_last):
    def batches(lib):
        loader = (tud.DataLoader if lib is torch else DataLoader)(
            stream(lib), batch_size=2, num_workers=num_workers, drop_last=drop_last
        )
        return values(list(loader))

    expected = batches(torch)
    assert batches(sg) == expected
    if not drop_last:  # each sample once: the workers split the stream
        assert sorted(x for batch in expected for [x] in batch) == list(range(11))


def test_iterable_dataset_options_and_length():
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(stream(sg), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(stream(sg), sampler=[0, 1])
    with pytest.raises(TypeError):  # no __len__, as in PyTorch
        len(DataLoader(stream(sg), batch_size=2))

    class Sized(IterableDataset):
        def __iter__(self):
            return iter(range(5))

        def __len__(self):
            return 5

    assert len(DataLoader(Sized(), batch_size=2)) == 3
    assert len(DataLoader(Sized(), batch_size=2, drop_last=True)) == 2
    assert values(list(DataLoader(Sized(), batch_size=None))) == [0, 1, 2, 3, 4]
    with pytest.raises(TypeError, match="cannot be indexed"):
        Sized()[0]


# ---- what runs in a worker ---------------------------------------------------------------------


class WhoAmI(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        info = get_worker_info()
        return [info.id, info.seed, info.num_workers, random.random(), float(sg.rand(1)), index]


def test_worker_info_seeds_and_init_fn(no_hang):
    def run(seed):
        loader = DataLoader(
            WhoAmI(),
            batch_size=2,
            num_workers=2,
            generator=sg.Generator(seed),
            worker_init_fn=lambda worker_id: random.seed(100 + worker_id),
        )
        return values(list(loader))

    batches = run(0)
    ids = [batch[0] for batch in batches]
    assert ids == [[0, 0], [1, 1], [0, 0], [1, 1]]  # task k goes to worker k % 2
    seeds = {w[0]: w[1] for batch in batches for w in [[batch[0][0], batch[1][0]]]}
    assert seeds[1] == seeds[0] + 1  # base seed + worker id
    assert all(n == 2 for batch in batches for n in batch[2])
    # worker_init_fn ran after the seeding: Python's generator restarts from 100 + id.
    assert batches[0][3][0] == random.Random(100).random()
    assert batches[1][3][0] == random.Random(101).random()
    # The library's generator differs between workers, and runs repeat with the same seed.
    assert batches[0][4] != batches[1][4]
    assert run(0) == batches and run(1) != batches
    assert get_worker_info() is None


class Failing(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, index):
        if index == 5:
            raise ValueError(f"sample {index} is corrupt")
        return index


class Dying(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, index):
        if index == 5:
            os._exit(3)  # a crash that no exception handler sees (as a segfault)
        return index


def test_an_exception_in_a_worker_is_raised_in_the_main_process(no_hang):
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in DataLoader worker.*corrupt"):
        list(loader)
    with pytest.raises(ValueError, match="corrupt"):  # the same as PyTorch's
        list(tud.DataLoader(Failing(), batch_size=2))

    def bad_init(worker_id):
        raise KeyError(worker_id)

    loader = DataLoader(list(range(4)), batch_size=2, num_workers=2, worker_init_fn=bad_init)
    with pytest.raises(KeyError, match="Caught KeyError in worker_init_fn") as info:
        list(loader)
    assert "\nOriginal Traceback" in str(info.value)  # printed as it is, as PyTorch's
    with pytest.raises(KeyError) as theirs:
        tud.default_collate([{"a": 1}, {"b": 2}])
    with pytest.raises(KeyError) as ours:
        list(DataLoader([{"a": 1}, {"b": 2}], batch_size=2, num_workers=1))
    assert str(theirs.value) in str(ours.value)


def test_a_worker_that_cannot_seed_reports_why(no_hang, monkeypatch):
    """Seeding runs inside the worker's error handling: its exception comes back with the
    worker's traceback instead of a bare "exited unexpectedly" (on a GPU machine, seeding the
    GPU's generator in a forked worker killed it so)."""

    def unseedable(seed):
        raise RuntimeError("cannot seed here")

    monkeypatch.setattr(sg.backend, "manual_seed", unseedable)  # the forked workers inherit it
    with pytest.raises(RuntimeError, match=r"(?s)when seeding.*cannot seed here"):
        list(DataLoader(list(range(4)), batch_size=2, num_workers=1))


def test_a_dead_worker_raises_at_once(no_hang):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(DataLoader(Dying(), batch_size=2, num_workers=2))
    assert time.monotonic() - start < 5


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        time.sleep(3 if index == 2 else 0)
        return index


def test_timeout(no_hang):
    loader = DataLoader(Slow(), batch_size=2, num_workers=1, timeout=0.3)
    batches = iter(loader)
    assert values(next(batches)) == [0, 1]
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(batches)


def test_a_batch_that_cannot_be_pickled_is_an_error(no_hang):
    loader = DataLoader([0, 1], batch_size=2, num_workers=1, collate_fn=lambda b: lambda: b)
    with pytest.raises(Exception, match="when sending a batch"):
        list(loader)


def test_persistent_workers_serve_every_epoch(no_hang):
    dataset = TensorDataset(XS)
    loader = DataLoader(
        dataset,
        batch_size=4,
        shuffle=True,
        num_workers=2,
        persistent_workers=True,
        generator=sg.Generator(5),
    )
    single = DataLoader(dataset, batch_size=4, shuffle=True, generator=sg.Generator(5))
    next(iter(loader))  # an abandoned epoch: its late batches must not leak into the next
    next(iter(single))
    pids = [w.pid for w in loader._iterator.workers]
    for _ in range(2):
        assert values(list(loader)) == values(list(single))
    assert [w.pid for w in loader._iterator.workers] == pids
    assert all(w.is_alive() for w in loader._iterator.workers)


def test_workers_stop_when_the_iterator_is_dropped(no_hang):
    batches = iter(DataLoader(list(range(100)), batch_size=2, num_workers=2))
    next(batches)
    workers = batches.workers
    del batches
    assert not any(w.is_alive() for w in workers)
    finished = iter(DataLoader(list(range(4)), batch_size=2, num_workers=2))
    list(finished)
    assert not any(w.is_alive() for w in finished.workers)


def test_spawned_workers_get_a_pickled_dataset_of_tensors(no_hang):
    loader = DataLoader(
        TensorDataset(XS, YS), batch_size=8, num_workers=1, multiprocessing_context="spawn"
    )
    assert values(list(loader)) == values(list(DataLoader(TensorDataset(XS, YS), batch_size=8)))


# ---- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"num_workers": -1},
        {"timeout": -1},
        {"prefetch_factor": 2},
        {"persistent_workers": True},
        {"shuffle": True, "sampler": [0, 1]},
        {"batch_sampler": [[0]], "batch_size": 2},
        {"batch_sampler": [[0]], "drop_last": True},
        {"batch_size": None, "drop_last": True},
        {"batch_size": 0},
    ],
)
def test_bad_options_are_refused_as_torch_does(options):
    with pytest.raises(ValueError):
        tud.DataLoader(list(range(4)), **options)
    with pytest.raises(ValueError):
        DataLoader(list(range(4)), **options)


@pytest.mark.parametrize("generator", [0, np.random.default_rng(0), torch.Generator()])
def test_generator_must_be_a_generator(generator):
    with pytest.raises(TypeError, match="generator must be a scratchgrad.Generator"):
        DataLoader(list(range(4)), shuffle=True, generator=generator)
    with pytest.raises(TypeError, match="generator must be a scratchgrad.Generator"):
        RandomSampler(range(4), generator=generator)
    with pytest.raises(TypeError, match="random_split: generator must be"):
        random_split(range(4), [2, 2], generator=generator)


def test_accepted_options_as_torch():
    loader = DataLoader(list(range(4)), 2, False, None, None, 0, None, True, pin_memory_device="")
    assert loader.pin_memory and loader.num_workers == 0 and loader.prefetch_factor is None
    assert DataLoader(list(range(4)), num_workers=2).prefetch_factor == 2  # PyTorch's default


# ---- samplers ----------------------------------------------------------------------------------


def test_sequential_and_batch_samplers_as_torch():
    for batch_size in (1, 3, 4):
        for drop_last in (False, True):
            ours = BatchSampler(SequentialSampler(range(10)), batch_size, drop_last)
            theirs = tud.BatchSampler(tud.SequentialSampler(range(10)), batch_size, drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for bad in ({"batch_size": 0, "drop_last": False}, {"batch_size": 2, "drop_last": 1}):
        with pytest.raises(ValueError):
            tud.BatchSampler(range(3), **bad)
        with pytest.raises(ValueError):
            BatchSampler(range(3), **bad)


def test_random_sampler():
    generator = sg.Generator(0)
    first, second = list(RandomSampler(range(10), generator=generator)), None
    second = list(RandomSampler(range(10), generator=generator))
    assert sorted(first) == sorted(second) == list(range(10)) and first != second
    # Without replacement, more samples than the dataset: whole permutations, as PyTorch.
    long = list(RandomSampler(range(4), num_samples=10, generator=generator))
    assert sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3] and len(set(long[8:])) == 2
    draws = list(RandomSampler(range(3), replacement=True, num_samples=300, generator=generator))
    assert set(draws) == {0, 1, 2} and len(draws) == 300
    assert len(RandomSampler(range(4), num_samples=7)) == len(
        tud.RandomSampler(range(4), num_samples=7)
    )
    for bad in ({"num_samples": 0}, {"replacement": 1}):
        with pytest.raises((ValueError, TypeError)):
            tud.RandomSampler(range(3), **bad)
        with pytest.raises((ValueError, TypeError)):
            RandomSampler(range(3), **bad)


def test_a_sampler_written_for_older_pytorch_passes_its_data_source_up():
    class EveryOther(Sampler):
        def __init__(self, data_source):
            super().__init__(data_source)
            self.n = len(data_source)

        def __iter__(self):
            return iter(range(0, self.n, 2))

    assert values(list(DataLoader(list("abcde"), sampler=EveryOther("abcde")))) == [
        ["a"],
        ["c"],
        ["e"],
    ]


def test_subset_random_sampler():
    indices = [10, 20, 30, 40]
    orders = [list(SubsetRandomSampler(indices, generator=sg.Generator(s))) for s in range(5)]
    assert all(sorted(order) == indices for order in orders)
    assert len({tuple(order) for order in orders}) > 1


def test_weighted_random_sampler_draws_in_proportion():
    weights = [1.0, 0.0, 3.0, 4.0]
    draws = list(WeightedRandomSampler(weights, 20000, generator=sg.Generator(0)))
    counts = np.bincount(draws, minlength=4) / 20000
    # Binomial standard deviation <= 0.0036: 5 sigma is 0.018.
    np.testing.assert_allclose(counts, np.array(weights) / 8, atol=0.018)
    unique = list(WeightedRandomSampler(sg.tensor(weights), 3, replacement=False))
    assert sorted(unique) == [0, 2, 3]
    with pytest.raises(ValueError, match="1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="1d sequence"):
        tud.WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler(weights, 0)


def test_weighted_random_sampler_keeps_its_weights_as_a_float64_tensor_as_torch():
    for weights in ([1, 2, 3], np.array([0.5, 1.0], np.float32), sg.tensor([1.0, 2.0])):
        ours = WeightedRandomSampler(weights, 2).weights
        theirs = tud.WeightedRandomSampler(torch.as_tensor(np.asarray(weights)), 2).weights
        assert isinstance(ours, sg.Tensor) and ours.dtype == sg.float64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_random_sampler_with_replacement_on_no_data_raises_a_runtime_error_as_torch():
    with pytest.raises(RuntimeError):
        list(tud.RandomSampler([], replacement=True, num_samples=3))
    with pytest.raises(RuntimeError, match="empty data source"):
        list(RandomSampler([], replacement=True, num_samples=3))


# ---- datasets ----------------------------------------------------------------------------------


def test_concat_dataset_as_torch():
    parts = [list("abc"), list("d"), [], list("efg")]
    ours, theirs = ConcatDataset(parts), tud.ConcatDataset(parts)
    assert len(ours) == len(theirs) and ours.cumulative_sizes == theirs.cumulative_sizes
    for index in range(-len(theirs), len(theirs)):
        assert ours[index] == theirs[index]
    for bad in (len(theirs), -len(theirs) - 1):
        with pytest.raises((IndexError, ValueError)) as theirs_error:
            theirs[bad]
        with pytest.raises(theirs_error.type):
            ours[bad]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(ValueError, match="IterableDataset"):
        ConcatDataset([stream(sg)])
    both = Subset(list("xy"), [1, 0]) + Subset(list("z"), [0])
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(3)] == ["y", "x", "z"]
    loader = DataLoader(ConcatDataset([TensorDataset(XS[:3]), TensorDataset(XS[3:5])]), 2)
    assert values(list(loader)) == [[XS[:2].tolist()], [XS[2:4].tolist()], [XS[4:5].tolist()]]
