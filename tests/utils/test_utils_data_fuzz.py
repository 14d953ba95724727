"""Random datasets and loaders against ``torch.utils.data``: a map-style dataset whose items are
drawn nestings (tuples, lists, dicts, named tuples) of tensors, NumPy arrays and scalars, Python
ints, floats, bools and strings, loaded by a ``DataLoader`` with a drawn ``batch_size``
(``None`` too), ``drop_last``, a ``BatchSampler``/``SequentialSampler``/``SubsetRandomSampler``
of fixed order, over a ``Subset``, ``ConcatDataset`` or ``TensorDataset``, or an
``IterableDataset``; and ``default_collate``/``default_convert`` called directly. Both libraries
must raise alike (the same error class) and give the same batches: structure, types, shapes,
dtypes and values. Shuffling is left out (the random streams differ by design). Set
``SCRATCHGRAD_FUZZ_EXAMPLES`` to run more examples."""

from collections import namedtuple

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import fuzz_settings, outcome, raised_alike

import scratchgrad as sg

FUZZ = fuzz_settings(200)
Point = namedtuple("Point", ["x", "y"])

LEAVES = ["tensor_f32", "tensor_i64", "tensor_0d", "ndarray_f64", "ndarray_i32", "np_float"]
LEAVES += ["np_int", "int", "float", "bool", "str", "tensor_bool", "ndarray_u8"]


def _leaf(m, kind, i):
    """Item ``i``'s leaf of ``kind`` in library ``m`` (NumPy leaves are the same in both)."""
    values = {
        "tensor_f32": lambda: m.tensor([i, i + 0.5], dtype=m.float32),
        "tensor_i64": lambda: m.tensor([[i, -i]], dtype=m.int64),
        "tensor_0d": lambda: m.tensor(float(i)),
        "tensor_bool": lambda: m.tensor([i % 2 == 0]),
        "ndarray_f64": lambda: np.array([i, i * 2.0]),
        "ndarray_i32": lambda: np.array([i], dtype=np.int32),
        "ndarray_u8": lambda: np.array([[i % 256]], dtype=np.uint8),
        "np_float": lambda: np.float32(i / 3),
        "np_int": lambda: np.int16(i),
        "int": lambda: i,
        "float": lambda: i / 4,
        "bool": lambda: i % 3 == 0,
        "str": lambda: f"item{i}",
    }
    return values[kind]()


@st.composite
def structures(draw, depth=0):
    """An item's structure: a leaf kind, or a container of structures."""
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(LEAVES))
    kind = draw(st.sampled_from(["tuple", "list", "dict", "namedtuple"]))
    if kind == "namedtuple":
        return ("namedtuple", [draw(structures(depth + 1)), draw(structures(depth + 1))])
    children = draw(st.lists(structures(depth + 1), min_size=1, max_size=3))
    return (kind, children)


def _item(m, structure, i):
    if isinstance(structure, str):
        return _leaf(m, structure, i)
    kind, children = structure
    parts = [_item(m, child, i) for child in children]
    if kind == "tuple":
        return tuple(parts)
    if kind == "list":
        return parts
    if kind == "namedtuple":
        return Point(*parts)
    return {f"k{n}": part for n, part in enumerate(parts)}


class Items:  # a map-style dataset (the same class for both libraries: __getitem__ and __len__)
    def __init__(self, m, structure, size):
        self.m, self.structure, self.size = m, structure, size

    def __getitem__(self, i):
        if not 0 <= i < self.size:
            raise IndexError(i)
        return _item(self.m, self.structure, i)

    def __len__(self):
        return self.size


def _iterable(m, structure, size):
    class Stream(m.utils.data.IterableDataset):
        def __iter__(self):
            return (_item(m, structure, i) for i in range(size))

    return Stream()


@st.composite
def loaders(draw):
    """A loading drawn with its options (all deterministic)."""
    structure = draw(structures())
    size = draw(st.integers(0, 7))
    source = draw(st.sampled_from(["items", "subset", "concat", "tensors", "iterable"]))
    batch_size = draw(st.sampled_from([1, 2, 3, None]))
    drop_last = draw(st.booleans())
    sampler = draw(st.sampled_from(["default", "sequential", "subset_fixed", "batch_sampler"]))
    subset = draw(st.lists(st.integers(0, max(size - 1, 0)), max_size=4)) if size else []
    call = draw(st.sampled_from(["loader", "loader", "collate", "convert"]))
    return structure, size, source, batch_size, drop_last, sampler, subset, call


def _dataset(m, structure, size, source, subset):
    data = m.utils.data
    if source == "subset":
        return data.Subset(Items(m, structure, size), subset)
    if source == "concat":
        return data.ConcatDataset([Items(m, structure, size), Items(m, structure, 2)])
    if source == "tensors":
        return data.TensorDataset(
            m.arange(size * 2, dtype=m.float32).reshape(size, 2), m.arange(size)
        )
    if source == "iterable":
        return _iterable(m, structure, size)
    return Items(m, structure, size)


def _load(m, case):
    structure, size, source, batch_size, drop_last, sampler, subset, call = case
    data = m.utils.data
    dataset = _dataset(m, structure, size, source, subset)
    if call == "collate":
        return data.default_collate([dataset[i] for i in range(min(len(dataset), 3))])
    if call == "convert":
        return data.default_convert(dataset[0]) if len(dataset) else data.default_convert([])
    options = {"batch_size": batch_size, "drop_last": drop_last}
    if sampler == "sequential" and source != "iterable":
        options["sampler"] = data.SequentialSampler(dataset)
    elif sampler == "subset_fixed" and source != "iterable":
        options["sampler"] = list(subset)  # any iterable of indices, in its order
    elif sampler == "batch_sampler" and source != "iterable":
        inner = data.SequentialSampler(dataset)
        options = {"batch_sampler": data.BatchSampler(inner, batch_size or 1, drop_last)}
    return list(data.DataLoader(dataset, **options))


def _same(ours, theirs, where="batch"):
    """Assert that two loaded structures match: types, shapes, dtypes and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, sg.Tensor), f"{where}: {type(ours)} for a tensor"
        assert tuple(ours.shape) == tuple(theirs.shape), f"{where}: shape"
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], where
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=where)
        return
    assert type(ours).__name__ == type(theirs).__name__, f"{where}: {type(ours)} {type(theirs)}"
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for key in theirs:
            _same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, list | tuple):
        assert len(ours) == len(theirs), f"{where}: length {len(ours)} != {len(theirs)}"
        for n, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{where}[{n}]")
    elif isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype, where
        np.testing.assert_array_equal(ours, theirs, err_msg=where)
    else:
        assert ours == theirs and type(ours) is type(theirs), f"{where}: {ours!r} {theirs!r}"


@given(loaders())
@FUZZ
def test_a_loading_matches_torch(case):
    ours, theirs = outcome(_load, sg, case), outcome(_load, torch, case)
    if raised_alike(ours, theirs, str(case)):
        return
    _same(ours, theirs, str(case))
