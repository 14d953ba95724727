"""Edges where scratchgrad differed from PyTorch, each against PyTorch: factories given a
negative size (and arange's and eye's bounds), subtraction and negation of bool tensors, random
floats asked for in an integer dtype, gather and scatter with a 0-d operand (values and
gradients), index_select of a 0-d tensor, searchsorted and bucketize on boundaries holding
NaN or out of order, the
legacy typed constructors (``LongTensor``, ``FloatTensor(2, 3)``, ``isinstance``), and
reductions and norms: an empty list of dims, empty and integer inputs, 16-bit accumulation,
NaN in the 0-norm, complex vector norms, ``var(x, False)``."""

import re
import sys
import warnings

import numpy as np
import pytest
import torch
from oracle import (
    assert_doc_examples_run,
    assert_raises_as_torch,
    assert_same,
    check_against_torch,
    outcome,
    raised_alike,
    same_dtype,
)

import scratchgrad as sg
from scratchgrad.creation import _LegacyTensor
from scratchgrad.tensor import new_shape


def _error(call, lib) -> Exception:
    with pytest.raises(Exception) as info:
        call(lib)
    return info.value


def assert_same_error(call, message: str) -> None:
    """``call(torch)`` and ``call(scratchgrad)`` raise exceptions of the same class (not only
    related ones: NotImplementedError is a RuntimeError), ours matching ``message``."""
    theirs, ours = _error(call, torch), _error(call, sg)
    assert type(ours) is type(theirs), f"{type(ours).__name__}: {ours}; PyTorch's {theirs!r}"
    assert re.search(message, str(ours)), str(ours)


def assert_same_tensor(ours, theirs) -> None:
    """The same dtype, shape and values (bfloat16 read as float32, exactly)."""
    assert same_dtype(ours, theirs), (ours.dtype, theirs.dtype)
    if theirs.dtype == torch.bfloat16:
        ours, theirs = ours.float(), theirs.float()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- a negative size ------------------------------------------------------------------------

NEGATIVE_SIZES = {
    "zeros": lambda m: m.zeros(-1),
    "ones": lambda m: m.ones(2, -3),
    "empty": lambda m: m.empty((2, -3)),
    "full": lambda m: m.full((2, -1), 1.0),
    "rand": lambda m: m.rand(-1),
    "randn": lambda m: m.randn([3, -2]),
    "randint": lambda m: m.randint(0, 5, (-1,)),
    "randint(high, size)": lambda m: m.randint(5, (2, -1)),
    "randperm": lambda m: m.randperm(-1),
    "normal": lambda m: m.normal(0.0, 1.0, size=(-1,)),
    "new_zeros": lambda m: m.zeros(2).new_zeros(-1),
    "new_ones": lambda m: m.zeros(2).new_ones((2, -1)),
    "new_empty": lambda m: m.zeros(2).new_empty((-1,)),
    "new_full": lambda m: m.zeros(2).new_full((-1,), 1.0),
    "FloatTensor": lambda m: m.FloatTensor(2, -1),
    "randn, an integer dtype": lambda m: m.randn(-1, dtype=m.int64),  # the size comes first
}


@pytest.mark.parametrize("case", NEGATIVE_SIZES)
def test_a_negative_size_raises_pytorchs_error_naming_the_op_and_the_size(case):
    name = case.split(",")[0].split("(")[0]
    assert_same_error(NEGATIVE_SIZES[case], rf"^{name}: .*negative dimension -\d: \[.*\]")


@pytest.mark.parametrize(
    "call",
    [lambda m: m.zeros(0, 2), lambda m: m.randn(0), lambda m: m.randperm(0), lambda m: m.eye(2, 0)],
)
def test_a_zero_size_is_an_empty_tensor_as_pytorchs(call):
    assert_same_tensor(call(sg), call(torch))


BAD_RANGES = {
    "eye n": (lambda m: m.eye(-1), r"eye: n must be greater or equal to 0, got -1"),
    "eye m": (lambda m: m.eye(2, -1), r"eye: m must be greater or equal to 0, got -1"),
    "arange end": (lambda m: m.arange(-1), r"arange: upper bound and lower bound inconsistent"),
    "arange start, end": (lambda m: m.arange(0.5, 0.2), "inconsistent with step sign"),
    "arange step": (lambda m: m.arange(0, 5, -1), "inconsistent with step sign"),
    "arange NaN": (lambda m: m.arange(float("nan")), r"arange: unsupported range: 0 -> nan"),
    "arange inf": (lambda m: m.arange(0, float("inf")), "unsupported range"),
    "arange NaN step": (lambda m: m.arange(0, 1, float("nan")), "step must be nonzero"),
    "arange zero step": (lambda m: m.arange(0, 1, 0), "step must be nonzero"),
}


@pytest.mark.parametrize("case", BAD_RANGES)
def test_bad_bounds_of_eye_and_arange_raise_as_pytorchs(case):
    call, message = BAD_RANGES[case]
    assert_same_error(call, message)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.arange(5, 5, -1),
        lambda m: m.arange(0, -3, -1),
        lambda m: m.arange(0.5, 0.5),
        lambda m: m.arange(m.tensor(3)),  # an integer 0-d tensor counts as an int
        lambda m: m.arange(m.tensor(1.5), 3),
    ],
)
def test_arange_ranges_pytorch_takes_are_pytorchs(call):
    assert_same_tensor(call(sg), call(torch))


# ---- bool subtraction and negation ----------------------------------------------------------

OPERANDS = {
    "bool": lambda m: m.tensor([True, False]),
    "bool 0-d": lambda m: m.tensor(True),
    "int": lambda m: m.tensor([3, 4]),
    "float": lambda m: m.tensor([1.5, 2.5]),
    "True": lambda m: True,
    "1": lambda m: 1,
    "1.5": lambda m: 1.5,
}
SUBTRACTIONS = {
    "x - y": lambda x, y: x - y,
    "x.sub(y)": lambda x, y: x.sub(y),
    "x.sub(y, alpha=2)": lambda x, y: x.sub(y, alpha=2),
    "x.sub_(y)": lambda x, y: x.clone().sub_(y),
    "x -= y": lambda x, y: x.clone().__isub__(y),
}


@pytest.mark.parametrize("form", SUBTRACTIONS)
@pytest.mark.parametrize("left", ["bool", "bool 0-d", "int", "float"])
@pytest.mark.parametrize("right", OPERANDS)
def test_subtraction_with_a_bool_operand_raises_as_pytorchs(form, left, right):
    """PyTorch refuses ``-`` where either operand is bool (a Python bool too), whatever the
    other; without a bool the result is PyTorch's (or both refuse: int -= float)."""

    def call(m):
        return SUBTRACTIONS[form](OPERANDS[left](m), OPERANDS[right](m))

    bools = (left.startswith("bool")) + (right.startswith("bool") or right == "True")
    if bools == 2:
        assert_same_error(call, r"^sub: .* with two bool tensors .* `\^` or `logical_xor\(\)`")
    elif bools:
        assert_same_error(call, r"^sub: .* with a bool tensor .* `~` or `logical_not\(\)`")
    else:
        try:
            expected = call(torch)
        except RuntimeError:  # int -= float: both refuse the cast
            assert_same_error(call, "")
        else:
            assert_same_tensor(call(sg), expected)


@pytest.mark.parametrize("reflected", [lambda x: 1 - x, lambda x: 1.5 - x, lambda x: True - x])
def test_a_number_minus_a_bool_tensor_raises_as_pytorchs(reflected):
    assert_same_error(lambda m: reflected(m.tensor([True, False])), r"^sub: subtraction")


NEGATIONS = {
    "-x": lambda m, x: -x,
    "x.neg()": lambda m, x: x.neg(),
    "neg(x)": lambda m, x: m.neg(x),
    "x.neg_()": lambda m, x: x.neg_(),
}


@pytest.mark.parametrize("form", NEGATIONS)
def test_negating_a_bool_tensor_raises_as_pytorchs(form):
    assert_same_error(
        lambda m: NEGATIONS[form](m, m.tensor([True, False])),
        r"^neg: negation, the `-` operator, on a bool tensor .* `~` or `logical_not\(\)`",
    )


@pytest.mark.parametrize("form", NEGATIONS)
def test_negating_other_tensors_is_pytorchs(form):
    for data in ([1, -2], [1.5, -0.0]):
        assert_same_tensor(
            NEGATIONS[form](sg, sg.tensor(data)), NEGATIONS[form](torch, torch.tensor(data))
        )


def test_masks_turned_to_numbers_still_subtract():
    mask = [True, False, True]
    assert_same_tensor(sg.tensor(mask).float() - 1, torch.tensor(mask).float() - 1)
    assert_same_tensor(1 - sg.tensor(mask).long(), 1 - torch.tensor(mask).long())
    assert_same_tensor(~sg.tensor(mask), ~torch.tensor(mask))


# ---- random floats in an integer dtype ------------------------------------------------------

RANDOM_FLOATS = {
    "rand": lambda m, dtype: m.rand(3, dtype=dtype),
    "randn": lambda m, dtype: m.randn(2, 2, dtype=dtype),
    "rand_like": lambda m, dtype: m.rand_like(m.zeros(3, dtype=dtype)),
    "randn_like": lambda m, dtype: m.randn_like(m.zeros(3, dtype=dtype)),
}


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool"])
@pytest.mark.parametrize("case", RANDOM_FLOATS)
def test_random_floats_in_an_integer_dtype_raise_not_implemented_as_pytorchs(case, dtype):
    name = case.removesuffix("_like")
    assert_same_error(
        lambda m: RANDOM_FLOATS[case](m, getattr(m, dtype)),
        rf"^{name}: not implemented for {dtype}",
    )


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
@pytest.mark.parametrize("size", [(0,), (2, 0)])
def test_an_empty_draw_in_an_integer_dtype_is_pytorchs(size, dtype):
    """rand checks the dtype first; randn's kernel, which refuses integers, never runs on an
    empty tensor, so PyTorch answers one."""
    assert_same_error(lambda m: m.rand(*size, dtype=getattr(m, dtype)), "^rand: not implemented")
    assert_same_tensor(
        sg.randn(*size, dtype=getattr(sg, dtype)), torch.randn(*size, dtype=getattr(torch, dtype))
    )
    assert_same_tensor(
        sg.randn_like(sg.zeros(size, dtype=getattr(sg, dtype))),
        torch.randn_like(torch.zeros(size, dtype=getattr(torch, dtype))),
    )


# ---- gather and scatter with a 0-d operand --------------------------------------------------

GATHERS = {  # (self, index): PyTorch reads a 0-d tensor as one of shape (1,)
    "0-d, 0-d": (np.array(3.0), np.array(0)),
    "0-d, (1,)": (np.array(3.0), np.array([0])),
    "0-d, (3,)": (np.array(3.0), np.array([0, 0, 0])),
    "(3,), 0-d": (np.array([1.0, 2.0, 3.0]), np.array(2)),
}


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("case", GATHERS)
def test_gather_with_a_0d_operand_is_pytorchs_with_gradients(case, dim):
    check_against_torch(lambda x, i: x.gather(dim, i), lambda x, i: x.gather(dim, i), GATHERS[case])
    check_against_torch(
        lambda x, i: sg.gather(x, dim, i), lambda x, i: torch.gather(x, dim, i), GATHERS[case]
    )


SCATTERS = {  # (self, index, src)
    "all 0-d": (np.array(3.0), np.array(0), np.array(5.0)),
    "0-d, (1,), (1,)": (np.array(3.0), np.array([0]), np.array([5.0])),
    "0-d, 0-d, (2,)": (np.array(3.0), np.array(0), np.array([5.0, 6.0])),  # values only
    "0-d, (1,), 0-d": (np.array(3.0), np.array([0]), np.array(5.0)),
    "(3,), 0-d, 0-d": (np.array([1.0, 2.0, 3.0]), np.array(1), np.array(5.0)),
    "(3,), (1,), 0-d": (np.array([1.0, 2.0, 3.0]), np.array([2]), np.array(5.0)),
}


@pytest.mark.parametrize("name", ["scatter", "scatter_add"])
@pytest.mark.parametrize("case", SCATTERS)
def test_scatter_with_a_0d_operand_is_pytorchs_with_gradients(case, name):
    self, index, src = SCATTERS[case]
    if name == "scatter" and index.size > 1:
        index = np.arange(index.size)  # no repeated position: PyTorch leaves it unspecified
    check_against_torch(
        lambda x, i, s: getattr(x, name)(-1, i, s),
        lambda x, i, s: getattr(x, name)(-1, i, s),
        [self, index, src],
        grad=src.ndim <= index.ndim,  # PyTorch's backward fails on a source larger than index
    )


@pytest.mark.parametrize("name", ["scatter_", "scatter_add_"])
def test_in_place_scatter_into_a_0d_tensor_is_pytorchs(name):
    out = [getattr(m.tensor(3.0), name)(0, m.tensor(0), m.tensor(5.0)) for m in (sg, torch)]
    assert_same_tensor(*out)


def test_scatter_of_a_number_into_a_0d_tensor_is_pytorchs():
    assert_same_tensor(
        sg.tensor(3.0).scatter(0, sg.tensor(0), 7.0),
        torch.tensor(3.0).scatter(0, torch.tensor(0), 7.0),
    )


ZERO_D_ERRORS = {
    "gather, 0-d self, 2-d index": lambda m: m.tensor(3.0).gather(0, m.tensor([[0]])),
    "gather, 2-d self, 0-d index": lambda m: m.ones(2, 2).gather(0, m.tensor(0)),
    "gather, index out of range": lambda m: m.tensor(3.0).gather(0, m.tensor(1)),
    "gather, dim out of range": lambda m: m.tensor(3.0).gather(1, m.tensor(0)),
    "scatter, index out of range": lambda m: m.tensor(3.0).scatter(0, m.tensor(1), 1.0),
    "scatter, 2-d self": lambda m: m.ones(2, 2).scatter(0, m.tensor(0), m.tensor(1.0)),
    "scatter_add, index larger than a 0-d src": lambda m: m.ones(3).scatter_add(
        0, m.tensor([0, 1]), m.tensor(1.0)
    ),
    "scatter_add, int16 index": lambda m: m.tensor(3.0).scatter_add(
        0, m.tensor(0, dtype=m.int16), m.tensor(1.0)
    ),
}


@pytest.mark.parametrize("case", ZERO_D_ERRORS)
def test_gather_and_scatter_refuse_what_pytorch_refuses_beside_a_0d_tensor(case):
    assert_same_error(ZERO_D_ERRORS[case], r"gather|scatter|Dimension out of range")


INDEXED = {  # one call of each op that takes an index, for both libraries
    "gather": lambda x, i, s: x.gather(1, i),
    "scatter": lambda x, i, s: x.scatter(1, i, s),
    "scatter_add": lambda x, i, s: x.scatter_add(1, i, s),
    "index_select": lambda x, i, s: x.index_select(1, i[0]),
}


@pytest.mark.parametrize("name", INDEXED)
def test_an_int32_index_is_taken_as_pytorchs_with_gradients(name):
    x, s = np.arange(6.0).reshape(2, 3), -np.arange(4.0).reshape(2, 2)
    index = np.array([[2, 0], [1, 2]], np.int32)
    check_against_torch(INDEXED[name], INDEXED[name], [x, index, s])


@pytest.mark.parametrize("dtype", ["int16", "uint8", "bool", "float32"])
@pytest.mark.parametrize("name", INDEXED)
def test_an_index_of_another_dtype_is_refused_as_pytorchs(name, dtype):
    """Not read as a mask either (index_select took a uint8 index as one)."""
    assert_same_error(
        lambda m: INDEXED[name](
            m.ones(2, 3), m.tensor([[1, 0], [0, 1]], dtype=getattr(m, dtype)), m.ones(2, 2)
        ),
        rf"^{name}\(\): Expected dtype int32(/| or )int64 for index",
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor(3.0).index_select(0, m.tensor([0])),  # 0-d, as PyTorch's
        lambda m: m.tensor(3.0).index_select(-1, m.tensor(0)),
        lambda m: m.tensor(3.0).index_select(0, m.tensor([0, 0])),  # one index only
        lambda m: m.tensor(3.0).index_select(0, m.tensor([], dtype=m.int64)),
        lambda m: m.tensor(3.0).index_select(1, m.tensor([0])),
    ],
)
def test_index_select_of_a_0d_tensor_as_pytorchs(call):
    ours, theirs = outcome(call, sg), outcome(call, torch)
    if not raised_alike(ours, theirs, "index_select"):
        assert ours.shape == theirs.shape and ours.item() == theirs.item()


# ---- searchsorted and bucketize on NaN or unsorted boundaries -------------------------------


def _boundaries(rng, shape) -> np.ndarray:
    """Small integers (ties, values equal to queries) in one of four layouts: sorted, sorted
    with NaN sprinkled in, sorted with NaN last (as a sort leaves it), or in no order with
    NaN; NaN in a random share of the entries."""
    b = rng.integers(-3, 4, shape).astype(np.float64)
    layout = rng.integers(4)
    if layout < 3:
        b = np.sort(b, axis=-1)
    if layout > 0:
        b[rng.random(shape) < rng.random()] = np.nan
    return np.sort(b, axis=-1) if layout == 2 else b


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("batched", [False, True])
def test_searchsorted_with_nan_or_unsorted_boundaries_is_pytorchs(batched, dtype):
    """PyTorch's binary search reads ``not (boundary >= value)`` as "go right", so a NaN
    boundary (or value) sends it right; NumPy's sorts NaN last. 400 random cases per setting,
    each searched both ways, every answer PyTorch's."""
    rng = np.random.default_rng(batched + 2 * len(dtype))
    for _ in range(400):
        n, rows = rng.integers(0, 12), rng.integers(1, 4)
        boundaries = _boundaries(rng, (rows, n) if batched else (n,)).astype(dtype)
        values = rng.integers(-4, 5, (rows, rng.integers(0, 6)) if batched else (7,))
        values = values.astype(dtype)
        values[rng.random(values.shape) < 0.2] = np.nan
        for right in (False, True):
            assert_same_tensor(
                sg.searchsorted(sg.tensor(boundaries), sg.tensor(values), right=right),
                torch.searchsorted(torch.tensor(boundaries), torch.tensor(values), right=right),
            )


def test_searchsorted_with_a_sorter_over_nan_boundaries_is_pytorchs():
    rng = np.random.default_rng(1)
    for _ in range(200):
        boundaries = _boundaries(rng, (2, rng.integers(1, 9)))
        sorter = np.argsort(rng.random(boundaries.shape), axis=-1)
        values = rng.integers(-4, 5, (2, 3)).astype(np.float64)
        for side in ("left", "right"):
            assert_same_tensor(
                sg.searchsorted(
                    sg.tensor(boundaries), sg.tensor(values), side=side, sorter=sg.tensor(sorter)
                ),
                torch.searchsorted(
                    torch.tensor(boundaries),
                    torch.tensor(values),
                    side=side,
                    sorter=torch.tensor(sorter),
                ),
            )


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_and_a_number_search_nan_boundaries_as_pytorch(right):
    boundaries = [1.0, *[float("nan")] * 5]  # PyTorch answers 6 for 5.0 (NumPy would say 1)
    values = [5.0, 0.0, 1.0, float("nan")]
    assert_same_tensor(
        sg.bucketize(sg.tensor(values), sg.tensor(boundaries), right=right),
        torch.bucketize(torch.tensor(values), torch.tensor(boundaries), right=right),
    )
    assert_same_tensor(
        sg.searchsorted(sg.tensor(boundaries), 5.0, right=right),
        torch.searchsorted(torch.tensor(boundaries), 5.0, right=right),
    )
    assert sg.searchsorted(sg.tensor(boundaries), 5.0).item() == 6


# ---- legacy typed constructors --------------------------------------------------------------

LEGACY = [
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
]  # fmt: skip


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_constructors_make_pytorchs_tensors(name):
    ours, theirs = getattr(sg, name), getattr(torch, name)
    for data in ([1, 2], [[0, -1], [3, 4]], [1.7, 0.0], [], ()):
        assert_same_tensor(ours(data), theirs(data))
    for sizes in [(2, 3), (3,), (0,), ()]:
        made = (ours(*sizes), theirs(*sizes))  # uninitialised: the shapes and dtypes only
        assert made[0].shape == tuple(made[1].shape) and same_dtype(*made)
    sized = (ours(sg.Size([2, 0])), theirs(torch.Size([2, 0])))  # a Size is a shape, a tuple data
    assert sized[0].shape == tuple(sized[1].shape) == (2, 0) and same_dtype(*sized)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


@pytest.mark.parametrize("name", LEGACY)
def test_isinstance_of_a_legacy_type_asks_for_its_dtype_as_pytorchs(name):
    ours, theirs = getattr(sg, name), getattr(torch, name)
    for dtype in ["float32", "float64", "int64", "int8", "uint8", "bool", "bfloat16"]:
        x, t = sg.zeros(2, dtype=getattr(sg, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
        assert isinstance(x, ours) == isinstance(t, theirs), (name, dtype)
    assert not isinstance(3, ours) and not issubclass(ours, sg.Tensor)


def test_legacy_constructors_alias_a_tensor_or_array_of_their_dtype_as_pytorchs():
    """The same memory, and in the graph (PyTorch's AliasBackward)."""
    for m in (sg, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        alias = m.FloatTensor(x)
        (alias * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]
        with m.no_grad():
            alias[0] = 5.0
        assert x.tolist() == [5.0, 2.0]
        array = np.array([1.0, 2.0], np.float32)
        m.FloatTensor(array)[1] = 7.0
        assert array.tolist() == [1.0, 7.0]
        copied = np.array([1, 2])  # int64: converted, so a copy
        m.FloatTensor(copied)[1] = 7
        assert copied.tolist() == [1, 2]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.FloatTensor(m.tensor([1, 2])),  # a tensor of another dtype
        lambda m: m.FloatTensor(2.5),
        lambda m: m.LongTensor(True),
        lambda m: m.FloatTensor(None),
    ],
)
def test_legacy_constructors_refuse_what_pytorchs_refuse(call):
    assert_same_error(call, "")


def test_the_tensor_class_is_pytorchs_legacy_constructor_too():
    """``nn.Parameter(torch.Tensor(out_features, in_features))`` in old custom layers: sizes,
    or data in the default float dtype (``Tensor([1, 0])`` is float), under
    ``set_default_dtype`` too."""
    for data in ([1, 2], [[0, -1], [3, 4]], [1.7, 0.0], [], (), (2, 3), np.arange(3)):
        assert_same_tensor(sg.Tensor(data), torch.Tensor(data))
    for sizes in [(2, 3), (3,), (5,), (0,), ()]:
        made = (sg.Tensor(*sizes), torch.Tensor(*sizes))
        assert made[0].shape == tuple(made[1].shape) and same_dtype(*made)
    assert sg.Tensor(sg.Size([2, 0])).shape == (2, 0) and sg.Tensor(3, device="cpu").shape == (3,)
    sg.set_default_dtype(sg.float64)
    try:
        assert sg.Tensor([1, 2]).dtype == sg.float64 and sg.Tensor(2).dtype == sg.float64
    finally:
        sg.set_default_dtype(sg.float32)
    weight = sg.nn.Parameter(sg.Tensor(3, 2))
    assert weight.requires_grad and weight.shape == (3, 2) and weight.dtype == sg.float32


def test_the_tensor_class_aliases_a_tensor_of_any_dtype_as_pytorchs():
    for m in (sg, torch):
        ints = m.tensor([1, 2])
        alias = m.Tensor(ints)
        alias[0] = 7
        assert alias.dtype == ints.dtype and ints.tolist() == [7, 2]
        x = m.tensor([1.0, 2.0], requires_grad=True)
        (m.Tensor(x) * 3).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.Tensor(2.5),
        lambda m: m.Tensor(True),
        lambda m: m.Tensor([1.0], dtype=m.float64),
        lambda m: m.Tensor(2, -1),
    ],
)
def test_the_tensor_class_refuses_what_pytorchs_refuses(call):
    assert_same_error(call, "")


@pytest.mark.parametrize("dtype", ["float32", "int64", "float64"])
def test_legacy_new_makes_a_tensor_of_this_dtype_as_pytorchs(dtype):
    """``x.new(...)``, as ``x.data.new(size).zero_()`` and ``x.new(list)`` in old code."""
    ours, theirs = sg.ones(2, dtype=getattr(sg, dtype)), torch.ones(2, dtype=getattr(torch, dtype))
    for data in ([1, 2], [[1.5, -1.0]], [], np.arange(3)):
        assert_same_tensor(ours.new(data), theirs.new(data))
    for sizes in [(2, 3), (0,), ()]:
        made = (ours.new(*sizes), theirs.new(*sizes))
        assert made[0].shape == tuple(made[1].shape) and same_dtype(*made)
    assert_same_tensor(ours.new(3).zero_(), theirs.new(3).zero_())
    alias = ours.new(ours)
    alias[0] = 5
    assert ours.tolist() == [5, 1]


@pytest.mark.parametrize(
    "call", [lambda m: m.ones(2).new(m.tensor([1, 2])), lambda m: m.ones(2).new(2.5)]
)
def test_legacy_new_refuses_what_pytorchs_refuses(call):
    assert_same_error(call, "")


def test_where_with_the_condition_alone_gives_its_indices_as_pytorchs():
    mask = np.array([[0, 2, 0], [1, 0, 3]])
    ours, theirs = sg.where(sg.tensor(mask)), torch.where(torch.tensor(mask))
    assert len(ours) == len(theirs) == 2
    for o, t in zip(ours, theirs):
        assert_same_tensor(o, t)
    assert_same_error(lambda m: m.where(m.tensor([True]), m.ones(1)), "give both")


def test_comparing_a_tensor_with_none_answers_as_pytorchs():
    """``if mask == None:`` in old code: a Python bool, not a tensor of them; ``<`` refuses."""
    for m in (sg, torch):
        x = m.ones(2)
        assert (x == None) is False and (x != None) is True  # noqa: E711
        assert (None == x) is False and x not in [None]  # noqa: E711, SIM300
    assert_same_error(lambda m: m.ones(2) < None, "not supported")
    # but the methods take only tensors and numbers: x.eq(None) is no silent False
    for call in (lambda m: m.ones(2).eq(None), lambda m: m.ne(m.ones(2), "a")):
        for m in (sg, torch):
            with pytest.raises(TypeError, match=r"^(eq|ne)\(\)"):
                call(m)


def test_doc_examples_run():
    """In their modules' names, as the modules' doctests run."""
    legacy = (sg.Tensor.__new__, sg.Tensor.new, sg.where)
    for function in (sg.arange, sg.eye, _LegacyTensor, new_shape, *legacy):
        assert_doc_examples_run(function, vars(sys.modules[function.__module__]))


# ---- the deprecated overloads taking the scale first ----------------------------------------


def _old_adam_step(x, p, grad, exp_avg, exp_avg_sq):
    """One Adam step as optimizers written for PyTorch 0.4 made it."""
    exp_avg.mul_(0.9).add_(1 - 0.9, grad)
    exp_avg_sq.mul_(0.999).addcmul_(1 - 0.999, grad, grad)
    denom = exp_avg_sq.sqrt().add_(1e-8)
    p.data.addcdiv_(-0.01, exp_avg, denom)
    p.data.add_(-0.001, p.data)  # weight decay
    return x.add(2, p).sub(0.5, grad).addcmul(3, grad, p).addcdiv(1, p, grad)


def test_the_scale_first_overloads_of_old_optimizers_warn_and_compute_as_pytorchs():
    """``p.data.add_(-lr, grad)``, ``addcmul_(value, t1, t2)``: deprecated in PyTorch, which
    still runs them with a warning; so do we (they failed, or read a tensor as alpha)."""
    results = []
    for m in (sg, torch):
        grad = m.tensor([0.5, -1.5, 2.0])
        p, exp_avg, exp_avg_sq = m.tensor([1.0, 2.0, -3.0]), m.zeros(3), m.zeros(3)
        with (
            pytest.warns(UserWarning, match="deprecated") if m is sg else warnings.catch_warnings()
        ):
            results.append((_old_adam_step(m.ones(3), p, grad, exp_avg, exp_avg_sq), p, exp_avg_sq))
    for ours, theirs in zip(*results):  # (addcmul rounds as self + value * t1 * t2)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    for call in (
        lambda m: m.ones(2).add(m.ones(2), m.ones(2)),
        lambda m: m.ones(1).addcmul_(1, m.ones(1), m.ones(1), m.ones(1)),
    ):
        assert_same_error(call, "invalid combination of arguments")


def _right(m):  # (a right operand of distinct entries)
    return m.arange(6.0).reshape(3, 2)


SCALES_FIRST = {  # (the op PyTorch's warning names, the call)
    "addmm(beta, M, alpha, a, b)": (
        "addmm",
        lambda m: m.addmm(2, m.ones(2, 2), 3, m.ones(2, 3), _right(m)),
    ),
    "addmm(beta, M, a, b)": ("addmm", lambda m: m.addmm(2, m.ones(2, 2), m.ones(2, 3), _right(m))),
    "M.addmm(beta, alpha, a, b)": (
        "addmm",
        lambda m: m.ones(2, 2).addmm(2, 3, m.ones(2, 3), _right(m)),
    ),
    "M.addmm_(beta, a, b)": ("addmm", lambda m: m.ones(2, 2).addmm_(2, m.ones(2, 3), _right(m))),
    "addmv": ("addmv", lambda m: m.addmv(2, m.ones(2), 3, m.ones(2, 3), _right(m)[:, 0])),
    "M.addmv(beta, a, v)": ("addmv", lambda m: m.ones(2).addmv(2, m.ones(2, 3), _right(m)[:, 0])),
    "addr": ("addr", lambda m: m.addr(2, m.ones(2, 3), 3, m.ones(2), _right(m)[:, 0])),
    "addbmm": (
        "addbmm",
        lambda m: m.addbmm(2, m.ones(2, 2), 3, m.ones(4, 2, 3), _right(m).expand(4, 3, 2)),
    ),
    "baddbmm": (
        "baddbmm",
        lambda m: m.baddbmm(2, m.ones(4, 2, 2), 3, m.ones(4, 2, 3), _right(m).expand(4, 3, 2)),
    ),
}


@pytest.mark.parametrize("name", SCALES_FIRST)
def test_the_scale_first_overloads_of_the_products_warn_and_compute_as_pytorchs(name):
    """``torch.addmm(beta, M, alpha, mat1, mat2)``, ``M.addmm(beta, mat1, mat2)`` and their
    kin: deprecated in PyTorch 2.13, which still runs them with a warning (they raised
    TypeError here)."""
    op, call = SCALES_FIRST[name]
    with pytest.warns(UserWarning, match=f"This overload of {op} is deprecated"):
        ours = call(sg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(ours, call(torch))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.addmm(m.ones(2, 2), 2, m.ones(2, 3), _right(m)),  # (a method's form only)
        lambda m: m.addmm(2, m.ones(2, 2), m.ones(2, 3), _right(m), alpha=3),
        lambda m: m.addmm(2, 3, m.ones(2, 3), _right(m)),
        lambda m: m.ones(2, 2).addmm(2, 3, m.ones(2, 3)),
    ],
)
def test_scales_first_where_pytorch_has_no_such_overload_raise_its_type_error(call):
    assert_same_error(call, r"addmm\(\)")


def test_a_third_positional_argument_of_add_and_sub_is_never_alpha():
    """PyTorch reads ``add(x, 2, 3)`` as its deprecated ``add(x, alpha, other)`` (an int
    alpha, a float other) and refuses ``add(x, t, 2)``: we read it as alpha, or refused the
    first (a float alpha of an int tensor)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in (
            lambda m: m.add(m.tensor([1, 2]), 2, 3.5),
            lambda m: m.tensor([1.0, 2.0]).sub_(2, 3),
            lambda m: m.add(m.ones(2), m.tensor(2.0), m.ones(2)),  # (a 0-d tensor is a Number)
            lambda m: m.add(m.tensor([1, 2]), m.tensor([1, 2]), alpha=m.tensor(3)),
            lambda m: m.subtract(m.tensor([1, 2]), 2, 3),  # (subtract(Number, Number alpha))
            lambda m: m.tensor([1, 2]).subtract_(2, 3),
        ):
            assert_same(call(sg), call(torch))
    for call in (
        lambda m: m.add(m.ones(2), m.ones(2), 2),
        lambda m: m.ones(2).sub(m.ones(2), 2),
        lambda m: m.ones(2).add_(m.ones(2), 2),
        lambda m: m.ones(2).sub_(m.ones(2), 2.0),
        lambda m: m.add(m.ones(2), 2, m.ones(2), alpha=2),
        lambda m: m.add(m.ones(2), 2, None),
        lambda m: m.subtract(m.ones(2), 2, m.ones(2)),  # (subtract has no deprecated overload)
        lambda m: m.ones(2).subtract_(2, m.ones(2)),
        lambda m: m.add(m.ones(2), m.ones(2), alpha=m.ones(2)),
        lambda m: m.add(m.ones(2), m.ones(2), alpha=m.tensor(2.0, requires_grad=True)),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same_error(call, r"add|sub")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(lambda m: m.add(m.tensor([1, 2]), 2.5, 3), "alpha")
        assert_same_error(lambda m: m.subtract(m.tensor([1, 2]), 2, 3.5), "alpha")


def test_rsub_takes_alpha_as_sub_does_and_positionally_beside_a_number():
    """``rsub(x, 1, 2)`` is ``1 - 2 * x`` (PyTorch's overload for a number ``other``): we
    refused it; alpha was not checked against the dtype, nor a bool ``other``, nor the input."""
    for call in (
        lambda m: m.rsub(m.tensor([1, 2]), 1, 2),
        lambda m: m.rsub(m.tensor([1, 2]), 1.5, 2),
        lambda m: m.rsub(m.tensor([1.0, 2.0]), m.tensor(3.0), alpha=0.5),
        lambda m: m.rsub(m.tensor([1.0, 2.0], dtype=m.float16), 1, 3),
        lambda m: m.rsub(m.tensor([1.0, 2.0]), m.tensor(1.0), m.tensor(2.0)),
    ):
        assert_same(call(sg), call(torch))
    for call, error in (
        (lambda m: m.rsub(m.tensor([1, 2]), 1, 2.5), "alpha"),
        (lambda m: m.rsub(m.tensor([1, 2]), m.tensor([1, 2]), alpha=2.5), "alpha"),
        (lambda m: m.rsub(m.tensor([1.0]), 1, True), "Boolean alpha"),
        (lambda m: m.rsub(m.tensor([1.0]), 1, alpha=1j), "complex"),
        (lambda m: m.rsub(m.tensor([1]), m.tensor([True])), "bool"),
        (lambda m: m.rsub(m.tensor([1.0]), m.tensor([1.0]), 2), "invalid combination"),
        (lambda m: m.rsub(m.tensor([1.0]), 1, 2, 3), "invalid combination"),
        (lambda m: m.rsub(m.tensor([1.0]), 1, 2, alpha=3), "invalid combination"),
        (lambda m: m.subtract(m.tensor([1.0]), 1, 2, alpha=3), "invalid combination"),
        (lambda m: m.rsub(m.tensor([1.0]), 1, alpha=m.ones(1)), "alpha"),
        (lambda m: m.rsub(1, m.tensor([1.0])), "Tensor"),
        (lambda m: m.rsub(m.tensor([1.0]), 1, out=m.empty(1)), "out"),
    ):
        assert_same_error(call, error)


# ---- in-place ops whose promoted type does not cast into the tensor ------------------------

PROMOTING_IN_PLACE = {  # (each kernel has no version for the dtypes: PyTorch checks the cast first)
    "igamma_ bool by int": lambda m: m.tensor([True]).igamma_(m.tensor([1])),
    "igammac_ bool by uint8": lambda m: m.tensor([True]).igammac_(m.tensor([1], dtype=m.uint8)),
    "bitwise_and_ int by float": lambda m: m.tensor([1]).bitwise_and_(m.tensor([1.0])),
    "bitwise_left_shift_ bool by int": lambda m: m.tensor([True]).bitwise_left_shift_(1),
    "lcm_ bool by int": lambda m: m.tensor([True]).lcm_(m.tensor([4])),
    "copysign_ float by complex": lambda m: m.tensor([1.0]).copysign_(m.tensor([1j])),
}


@pytest.mark.parametrize("name", PROMOTING_IN_PLACE)
def test_in_place_ops_refuse_a_cast_before_a_dtype_their_kernel_lacks(name):
    """PyTorch's RuntimeError ("result type Long can't be cast to the desired output type
    Bool"): we raised the kernel's NotImplementedError."""
    assert_same_error(PROMOTING_IN_PLACE[name], "can't be cast to the desired output type")


def test_hypot_takes_real_floats_only_and_a_tensor():
    """PyTorch's hypot has no integer, bool or complex kernel, and takes no number: we
    promoted integers to float (and a number), and NumPy refused complex with a TypeError."""
    for call in (
        lambda m: m.hypot(m.tensor([3]), m.tensor([4])),
        lambda m: m.hypot(m.tensor([True]), m.tensor([True])),
        lambda m: m.hypot(m.tensor([3.0]), m.tensor([1j])),
        lambda m: m.tensor([3.0]).hypot_(m.tensor([1j])),
    ):
        assert_same_error(call, "hypot")
    assert_same_error(lambda m: m.hypot(m.tensor([3.0]), 4.0), "must be Tensor")
    assert_same(*(m.hypot(m.tensor([3, 4]), m.tensor(4.0)) for m in (sg, torch)))


# ---- rounding, abs and angle conversions on dtypes PyTorch's kernels lack -------------------

KERNEL_DTYPES = {  # (NumPy computed them: round of bools even came back float16)
    "abs bool": lambda m: m.tensor([True]).abs(),
    "floor bool": lambda m: m.tensor([True]).floor(),
    "ceil_ bool": lambda m: m.tensor([True]).ceil_(),
    "trunc bool": lambda m: m.trunc(m.tensor([True])),
    "fix complex": lambda m: m.tensor([1j]).fix(),
    "frac int": lambda m: m.tensor([3]).frac(),
    "frac bool": lambda m: m.tensor([True]).frac(),
    "round bool": lambda m: m.tensor([True]).round(),
    "round complex": lambda m: m.round(m.tensor([1.5j])),
    "deg2rad complex": lambda m: m.tensor([1j]).deg2rad(),
    "rad2deg_ complex": lambda m: m.tensor([1j]).rad2deg_(),
    "relu bool": lambda m: m.relu(m.tensor([True])),  # (an int64 result here)
    "F.relu bool": lambda m: m.nn.functional.relu(m.tensor([True])),
    # (NumPy's TypeError, where PyTorch's kernels raise NotImplementedError)
    "atan2 complex": lambda m: m.atan2(m.tensor([1.0]), m.tensor([1j])),
    "fmod complex": lambda m: m.fmod(m.tensor([1j]), 1.0),
    "remainder complex": lambda m: m.tensor([1j]) % m.tensor([1.0]),
    "floor_divide complex": lambda m: m.floor_divide(m.tensor([1.0]), m.tensor([1j])),
    "bitwise_not complex": lambda m: m.bitwise_not(m.tensor([1j])),
    "signbit complex": lambda m: m.tensor([1j]).signbit(),
    "atan2_ float by complex": lambda m: m.tensor([1.0]).atan2_(m.tensor([1j])),
    "bool < complex": lambda m: m.tensor([True]) < m.tensor([1j]),  # (True here)
    "ge_ bool by complex": lambda m: m.tensor([True]).ge_(m.tensor([2j])),
    "abs_ complex": lambda m: m.tensor([1j]).abs_(),
    "absolute_ complex": lambda m: m.tensor([1j]).absolute_(),
    "floor_divide bool by complex": lambda m: m.tensor([True]) // m.tensor([1j]),
    "fmod_ bool by complex": lambda m: m.tensor([True]).fmod_(m.tensor([1j])),
    "ldexp by bools": lambda m: m.ldexp(m.tensor([1.0]), m.tensor([True])),
}


INTEGER_OPS_OF_A_BOOL = {  # (PyTorch checks the promoted dtype: we refused any bool operand)
    "gcd int by bool": lambda m: m.gcd(m.tensor([4, 6]), m.tensor([True, False])),
    "lcm bool by int": lambda m: m.lcm(m.tensor([True, False]), m.tensor([4, 6])),
    "int << bool": lambda m: m.tensor([4, 6]) << m.tensor([True, False]),
    "bool >> int": lambda m: m.tensor([True, True]) >> m.tensor([0, 1]),
    "bool << 1": lambda m: m.tensor([True, False]) << 1,
    "gcd int8 by a 0-d bool": lambda m: m.gcd(m.tensor([4], dtype=m.int8), m.tensor(True)),
}


@pytest.mark.parametrize("name", INTEGER_OPS_OF_A_BOOL)
def test_integer_ops_take_a_bool_operand_beside_an_integer_one(name):
    assert_same(INTEGER_OPS_OF_A_BOOL[name](sg), INTEGER_OPS_OF_A_BOOL[name](torch))


def test_logical_ops_take_complex_tensors_and_no_number_as_torch():
    """They test for nonzero (we refused complex numbers, as for an order), and their other
    operand must be a tensor (we took a number)."""
    for call in (
        lambda m: m.logical_and(m.tensor([1, 1, 0]), m.tensor([1j, 0j, 2 + 0j])),
        lambda m: m.logical_or(m.tensor([1j, 0j]), m.tensor([0j, 0j])),
        lambda m: m.logical_xor(m.tensor([1j, 0j]), m.tensor([True, True])),
        lambda m: m.tensor([1, 1, 0]).logical_and_(m.tensor([1j, 0j, 2 + 0j])),
    ):
        assert_same(call(sg), call(torch))
    for name in ("logical_and", "logical_or", "logical_xor"):
        assert_same_error(lambda m, name=name: getattr(m, name)(m.tensor([1]), 1), "Tensor")


@pytest.mark.parametrize("value", [[1.0], [[2.0]], [1.0, 2.0]])
def test_fill_takes_a_0_d_tensor_only_as_torch(value):
    """A tensor of one element with a dim was taken (NumPy's fill reads it as a number)."""
    assert_same_error(lambda m: m.ones(3).fill_(m.tensor(value)), "0-dimension value tensor")
    assert_same(*(m.ones(2).fill_(m.tensor(3.0)) for m in (sg, torch)))


@pytest.mark.parametrize("name", KERNEL_DTYPES)
def test_ops_refuse_the_dtypes_their_pytorch_kernels_lack(name):
    assert_same_error(KERNEL_DTYPES[name], "not implemented|not supported|does not support|cast")


# ---- reductions: empty dim lists, empty and integer inputs, 16-bit accumulation --------------

REDUCTIONS_OVER_DIMS = {  # PyTorch reads an empty list of dims as all of them
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "nansum": lambda x, d, k: x.nansum(d, keepdim=k),
    "nanmean": lambda x, d, k: x.nanmean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "norm": lambda x, d, k: x.norm(dim=d, keepdim=k),
    "norm p=inf": lambda x, d, k: x.norm(float("inf"), dim=d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k),
}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [(), []])
@pytest.mark.parametrize("name", REDUCTIONS_OVER_DIMS)
def test_a_reduction_over_an_empty_list_of_dims_reduces_all_as_pytorchs(name, dim, keepdim):
    call = REDUCTIONS_OVER_DIMS[name]
    x = np.random.default_rng(0).standard_normal((3, 4, 2))
    # (var's gradient is left out: PyTorch's backward reads () as no dim and gives inf)
    grad = name != "var"
    check_against_torch(
        lambda t: call(t, dim, keepdim), lambda t: call(t, dim, keepdim), [x], grad=grad
    )


def test_count_nonzero_and_logsumexp_over_an_empty_list_of_dims_are_pytorchs():
    x = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, -1.0]])
    for m in (sg, torch):
        assert m.tensor(x).count_nonzero(()).item() == 4
    f = lambda t: t.logsumexp((), keepdim=True)  # noqa: E731 (PyTorch refuses keepdim=False)
    check_against_torch(f, f, [x])


def test_logsumexp_over_an_empty_dim_is_minus_inf_as_pytorchs():
    f = lambda t: t.logsumexp(0)  # noqa: E731
    out, _ = check_against_torch(f, f, [np.zeros((0, 3))])
    assert out.tolist() == [-np.inf] * 3


@pytest.mark.parametrize("dtype", ["uint8", "bool", "int32"])
def test_logsumexp_of_integers_and_bools_is_pytorchs(dtype):
    """uint8 entries used to wrap around when the max was taken out (giving inf); bools
    raised."""
    x = np.array([[200, 100, 3], [0, 1, 255]]) % (2 if dtype == "bool" else 256)
    ours = sg.tensor(x).to(getattr(sg, dtype)).logsumexp(1)
    theirs = torch.tensor(x).to(getattr(torch, dtype)).logsumexp(1)
    assert same_dtype(ours, theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_norm_with_p_0_counts_nan_entries_as_pytorchs():
    x = np.array([[1.0, np.nan, 0.0], [np.nan, np.nan, 0.0]])
    for call in (
        lambda m, t: t.norm(0, dim=1),
        lambda m, t: m.linalg.vector_norm(t, 0),
        lambda m, t: m.dist(t, m.zeros_like(t), 0),
    ):
        check_against_torch(
            lambda t, call=call: call(sg, t), lambda t, call=call: call(torch, t), [x]
        )


@pytest.mark.parametrize("source", ["int32", "uint8", "bool", "float32"])
def test_cumprod_given_an_integer_dtype_keeps_it_and_wraps_as_pytorchs(source):
    x = np.array([[100, 100, 3, 7], [2, 0, 5, 255]])
    ours = sg.tensor(x).to(getattr(sg, source)).cumprod(1, dtype=sg.int32)
    theirs = torch.tensor(x).to(getattr(torch, source)).cumprod(1, dtype=torch.int32)
    assert same_dtype(ours, theirs) and ours.tolist() == theirs.tolist()


SIXTEEN_BIT_SPREADS = {  # each squares entries past float16's largest number, 65504
    "std": lambda m, t: t.std(1),
    "std_mean": lambda m, t: m.std_mean(t, 1)[0],
    "var of x / 10": lambda m, t: (t / 10).var(1),
    "norm": lambda m, t: t.norm(dim=1),
    "norm of all": lambda m, t: t.norm(),
    "vector_norm 3": lambda m, t: m.linalg.vector_norm(t, 3, dim=1),
    "cumsum": lambda m, t: t.cumsum(1),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", SIXTEEN_BIT_SPREADS)
def test_16_bit_spreads_and_running_sums_accumulate_in_float32_as_pytorchs(name, dtype):
    """float16 std of entries near 300 was inf (the squares overflowed), cumsum lost digits
    adding in 16 bits, and linalg.vector_norm refused 16-bit floats."""
    call = SIXTEEN_BIT_SPREADS[name]
    x = np.random.default_rng(0).standard_normal((4, 50)) * 300
    ours = call(sg, sg.tensor(x).to(getattr(sg, dtype)))
    theirs = call(torch, torch.tensor(x).to(getattr(torch, dtype)))
    assert same_dtype(ours, theirs)
    assert np.isfinite(theirs.float().numpy()).all()
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-2)


def test_norm_takes_pytorchs_dtype_argument():
    x = np.array([[3.0, 4.0], [1.0, -2.0]], np.float32)
    for call in (
        lambda m, t: m.norm(t, dtype=m.float64),
        lambda m, t: t.norm(1, 1, True, m.float64),
    ):
        ours, theirs = call(sg, sg.tensor(x)), call(torch, torch.tensor(x))
        assert same_dtype(ours, theirs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("p", [0, 1, 2, 3, float("inf")])
def test_dist_of_complex_tensors_is_the_real_norm_of_the_moduli_as_pytorchs(p):
    """It was the complex sum of squares' root (x * x, not |x|**2)."""
    z = np.array([1 + 1j, -2 + 0.5j, 0j])
    ours = sg.dist(sg.tensor(z), sg.zeros(3, dtype=sg.complex128), p)
    theirs = torch.dist(torch.tensor(z), torch.zeros(3, dtype=torch.complex128), p)
    assert same_dtype(ours, theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_dist_and_cdist_of_integer_tensors_raise_as_pytorchs():
    for call, message in (
        (lambda m: m.dist(m.ones(2, dtype=m.int64), m.zeros(2, dtype=m.int64)), "norm()"),
        (lambda m: m.cdist(m.ones(2, 2, dtype=m.int32), m.ones(2, 2, dtype=m.int32)), "cdist"),
    ):
        assert_raises_as_torch(call, RuntimeError, re.escape(message))


COMPLEX_NORMS = {
    "norm": lambda m, z: z.norm(),
    "norm p=1 dim": lambda m, z: z.norm(p=1, dim=1),
    "vector_norm 3": lambda m, z: m.linalg.vector_norm(z, 3, dim=0),
    "vector_norm inf": lambda m, z: m.linalg.vector_norm(z, float("inf")),
    "linalg.norm dim": lambda m, z: m.linalg.norm(z, dim=1),
}


@pytest.mark.parametrize("name", COMPLEX_NORMS)
def test_vector_norms_of_complex_tensors_are_pytorchs_with_gradients(name):
    """They raised (Tensor.norm, linalg.vector_norm) where PyTorch takes the moduli."""
    call = COMPLEX_NORMS[name]
    z = np.array([[1 + 1j, -2 + 0.5j, 0j], [0.5j, 3 + 0j, -1 - 1j]])
    results = []
    for m in (sg, torch):
        leaf = m.tensor(z, requires_grad=True)
        out = call(m, leaf)
        out.sum().backward()
        results.append((out, leaf.grad))
    (ours, our_grad), (theirs, their_grad) = results
    assert same_dtype(ours, theirs)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
    np.testing.assert_allclose(our_grad.numpy(), their_grad.numpy(), atol=1e-12)


SPREAD_WITH_AN_UNBIASED_FLAG = {  # PyTorch's overload var(input, unbiased): a bool is no dim
    "var(x, False)": lambda m, t: m.var(t, False),
    "x.var(True)": lambda m, t: t.var(True),
    "x.std(False)": lambda m, t: t.std(False),
    "std(x, True)": lambda m, t: m.std(t, True),
}


@pytest.mark.parametrize("name", SPREAD_WITH_AN_UNBIASED_FLAG)
def test_a_bool_first_argument_of_var_and_std_is_the_unbiased_flag_as_pytorchs(name):
    """It was read as dim 0 or 1."""
    call = SPREAD_WITH_AN_UNBIASED_FLAG[name]
    x = np.random.default_rng(0).standard_normal((3, 4))
    check_against_torch(lambda t: call(sg, t), lambda t: call(torch, t), [x])


SCANS = {
    "cumsum": lambda m, x: x.cumsum(1),
    "cumsum of complex64": lambda m, x: (x + 1j * x).cumsum(1),
    "cumprod": lambda m, x: (1 + x * 1e-3).cumprod(1),
    "logcumsumexp": lambda m, x: x.logcumsumexp(1),
    "cumsum of float16": lambda m, x: x.to(m.float16).cumsum(1),
}


@pytest.mark.parametrize("name", SCANS)
def test_float32_scans_run_in_float64_as_torchs(name):
    """PyTorch's CPU scans run float32 in double (complex64 in complex128, 16-bit floats in
    float32): a float32 cumsum of 3000 entries kept in float32 is off by about 1e-6 of it."""
    x = np.random.default_rng(0).normal(size=(2, 3000)).astype(np.float32) + 3
    ours, theirs = (SCANS[name](m, m.tensor(x)) for m in (sg, torch))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-7)


FLOAT32_SPREADS = {
    "var": lambda m, x: x.var(),
    "std": lambda m, x: x.std(),
    "std over rows": lambda m, x: x.view(2, -1).std(1, correction=0),
    "var_mean": lambda m, x: m.stack(m.var_mean(x)),
    "std_mean over columns": lambda m, x: m.stack(m.std_mean(x.view(2, -1), 0)),
    "var of complex64": lambda m, x: m.complex(x, -x).var(),
    "var_mean of complex64": lambda m, x: m.var_mean(m.complex(x, x))[1],
}
NEAR_FLOAT32_MAX = [[3e38, 1.0, 3e38, 1.0], [3e38, 3e38, 3e38, -3e38], [2e38] * 4]


@pytest.mark.parametrize("values", NEAR_FLOAT32_MAX, ids=str)
@pytest.mark.parametrize("name", FLOAT32_SPREADS)
def test_float32_spreads_run_in_float64_as_torchs(name, values):
    """PyTorch's CPU var and std (and var_mean's mean) of float32 compute in double and round
    once: a std near 3e38 is finite (it was inf, the squares overflowing float32), and so is
    var_mean's mean of entries whose float32 sum overflows; var of all entries takes its mean
    in float32, as PyTorch's (so [2e38] * 4 has var inf there, var_mean 0)."""
    ours, theirs = (FLOAT32_SPREADS[name](m, m.tensor(values)) for m in (sg, torch))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(_parts(ours), _parts(theirs), rtol=1e-6)
    x = np.random.default_rng(1).normal(size=300).astype(np.float32) * 3 + 100
    ours, theirs = (FLOAT32_SPREADS[name](m, m.tensor(x)) for m in (sg, torch))
    np.testing.assert_array_equal(_parts(ours), _parts(theirs))  # bit for bit


FLOAT64_SPREADS = {
    "var": lambda m, x: x.var(),  # (of all entries: PyTorch's two passes, as here)
    "std over rows": lambda m, x: m.stack([x, x]).std(1),
    "var over columns": lambda m, x: m.stack([x, x], 1).var(0),
    "var_mean": lambda m, x: m.stack(m.var_mean(x)),
    "std_mean over rows": lambda m, x: m.stack(m.std_mean(m.stack([x, -x]), 1)),
}
NEAR_FLOAT64_MAX = [[1e308, -1e308, 1e308], [1e308, 1e308], [1.7e308, 1.7e308, -1.7e308, 0.0]]


@pytest.mark.parametrize("values", NEAR_FLOAT64_MAX, ids=str)
@pytest.mark.parametrize("name", FLOAT64_SPREADS)
def test_float64_spreads_near_the_largest_number_as_torchs(name, values):
    """PyTorch's var over dims and var_mean keep a running (Welford) mean and sum of squares:
    [1e308, 1e308] has var 0 and mean 1e308 there (the sums here overflowed: inf), and a
    deviation that overflows (1e308 after -1e308) makes both NaN (here inf and 3.3e307)."""
    ours, theirs = (
        FLOAT64_SPREADS[name](m, m.tensor(values, dtype=m.float64)) for m in (sg, torch)
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def _parts(t):
    """The real and imaginary parts of ``t`` apart (NumPy's NaN is either)."""
    return np.stack([t.real.numpy(), t.imag.numpy()]) if t.is_complex() else t.numpy()
