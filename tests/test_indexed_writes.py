"""The indexed writes of ``scratchgrad/indexed_writes.py`` against PyTorch: ``index_put``,
``masked_scatter``, ``put``, ``index_reduce`` (and their in-place forms), ``select_scatter``,
``slice_scatter``, ``diagonal_scatter``, ``as_strided_scatter`` and ``narrow_copy``: values and
gradients for random cases, the in-place forms' version counters and leaf refusals, the dtype
rules and the errors.
The op table's rows (``tests/op_table.py``) add gradcheck, gradgradcheck, jit and dims."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from oracle import assert_close, check_against_torch

import scratchgrad as sg


@st.composite
def _rows_cases(draw):
    """A shape, rows of its dim 0 (repeats possible), and a seed."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    rows = draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=5))
    return shape, rows, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@settings(max_examples=25, deadline=None)
@given(case=_rows_cases())
def test_index_put_accumulate_matches_torch_with_gradients(case, dtype):
    """Repeated rows add up; each repeat's values get the gradient there."""
    shape, rows, seed = case
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape), rng.standard_normal((len(rows), *shape[1:]))]

    def call(m):
        return lambda x, v: x.index_put((m.tensor(rows),), v, accumulate=True)

    check_against_torch(call(sg), call(torch), arrays, dtype, what="index_put", seed=seed)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@settings(max_examples=25, deadline=None)
@given(shape=array_shapes(min_dims=0, max_dims=3, max_side=4), seed=st.integers(0, 2**32 - 1))
def test_masked_scatter_matches_torch_with_gradients(shape, seed, dtype):
    """Source's entries in order; its gradient is the masked gradient, 0 on the leftovers."""
    rng = np.random.default_rng(seed)
    mask = rng.random(shape) > 0.5
    arrays = [rng.standard_normal(shape), rng.standard_normal(int(np.prod(shape)) + 2)]

    def call(m):
        return lambda x, s: x.masked_scatter(m.tensor(mask), s)

    check_against_torch(call(sg), call(torch), arrays, dtype, what="masked_scatter", seed=seed)


def test_masked_scatter_broadcasts_self_and_mask():
    x = np.arange(4.0)
    mask = np.array([[True, False, True, True], [False, True, False, False]])
    source = np.arange(10.0) + 10
    out = sg.tensor(x).masked_scatter(sg.tensor(mask), sg.tensor(source))
    expected = torch.tensor(x).masked_scatter(torch.tensor(mask), torch.tensor(source))
    assert_close(out, expected)
    with pytest.raises(RuntimeError, match="mask"):  # in place, mask must expand to self
        sg.tensor(x).masked_scatter_(sg.tensor(mask), sg.tensor(source))
    with pytest.raises(RuntimeError):
        torch.tensor(x).masked_scatter_(torch.tensor(mask), torch.tensor(source))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_matches_torch_with_gradients(accumulate):
    index = [[5, -1], [0, 5]] if accumulate else [[5, -1], [0, 2]]
    arrays = [np.random.default_rng(1).standard_normal((2, 3)), np.arange(4.0).reshape(2, 2)]

    def call(m):
        return lambda x, s: x.put(m.tensor(index), s * s, accumulate)

    check_against_torch(call(sg), call(torch), arrays, what="put")


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, -1])
def test_index_reduce_matches_torch_with_gradients(reduce, include_self, dim):
    """Ties too (amax/amin split the gradient among them, as PyTorch's)."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, (3, 4)).astype(float)
    source_shape = (4, 4) if dim == 0 else (3, 4)
    source = rng.integers(0, 3, source_shape).astype(float) + 0.5 * (reduce == "prod")
    index = [0, 2, 0, 2] if dim == 0 else [1, 1, 3, 0]

    def call(m):
        return lambda x, s: x.index_reduce(
            dim, m.tensor(index), s, reduce, include_self=include_self
        )

    check_against_torch(call(sg), call(torch), [x, source], what=f"index_reduce {reduce}")


def test_integer_dtypes_match_torch():
    """Integer tensors: the mean floored, accumulation and writes exact."""
    x, source = np.array([1, 5, 7]), np.array([2, 3, 4])

    def results(m):
        t = m.tensor
        return [
            t(x).index_reduce(0, t([0, 2, 0]), t(source), "mean"),
            t(x).index_reduce(0, t([0, 2, 0]), t(source), "mean", include_self=False),
            t(x).index_reduce(0, t([0, 2, 0], dtype=m.int32), t(source), "amax"),
            t(x).index_put((t([0, 0]),), t(source[:2]), accumulate=True),
            t(x).put(t([2, -3]), t(source[:2]), accumulate=True),
            t(x).masked_scatter(t([True, False, True]), t(source)),
            m.slice_scatter(t(x), t([1.5, 2.5]), 0, 1),  # src cast to input's dtype
            m.select_scatter(t(x).reshape(1, 3), t([9.7, 8.0, 7.0]), 0, 0),
            m.diagonal_scatter(t(x).reshape(1, 3), t([True]), 1),
            t(x).narrow_copy(0, 1, 2),
        ]

    for ours, theirs in zip(results(sg), results(torch)):
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert ours.tolist() == theirs.tolist()


def test_the_scatters_of_views_match_torch_with_gradients():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    cases = [
        (lambda m: lambda x, s: m.select_scatter(x, s, 1, -2), (3,)),
        (lambda m: lambda x, s: m.slice_scatter(x, s, -1, -3, None, 2), (3, 2)),
        (lambda m: lambda x, s: m.slice_scatter(x, s, 0, 1, 10), (2, 4)),
        (lambda m: lambda x, s: m.diagonal_scatter(x, s, -1), (2,)),
        (lambda m: lambda x, s: m.diagonal_scatter(x, s, 2, 1, 0), (1,)),
        (lambda m: lambda x, s: x.narrow_copy(1, -3, 2) * s, (3, 2)),
    ]
    for call, shape in cases:
        check_against_torch(call(sg), call(torch), [x, rng.standard_normal(shape)])


IN_PLACE = [
    ("index_put_", lambda m, x, v: x.index_put_((m.tensor([1, 1, 0]),), v, accumulate=True)),
    ("index_put_", lambda m, x, v: x.index_put_((m.tensor([0, 2]), m.tensor([1, 0])), v[0, :2])),
    ("masked_scatter_", lambda m, x, v: x.masked_scatter_(m.tensor([True, False]), v)),
    ("put_", lambda m, x, v: x.put_(m.tensor([1, 1, -1]), v[:, 0], accumulate=True)),
    ("index_reduce_", lambda m, x, v: x.index_reduce_(1, m.tensor([0, 1]), v[:, :2], "amax")),
]


@pytest.mark.parametrize("name, call", IN_PLACE, ids=[n for n, _ in IN_PLACE])
def test_in_place_forms_match_torch(name, call):
    """The same values and gradients (through a non-leaf), the version counter moved, the
    tensor itself returned, and a leaf that requires grad refused with PyTorch's words."""
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((3, 2)), rng.standard_normal((3, 2))]

    def through(m):
        return lambda x, v: call(m, x * 1, v)

    check_against_torch(through(sg), through(torch), arrays, what=name)

    x, v = sg.tensor(arrays[0]), sg.tensor(arrays[1])
    version = x._version
    assert call(sg, x, v) is x
    assert x._version > version
    expected = call(torch, torch.tensor(arrays[0]), torch.tensor(arrays[1]))
    assert_close(x, expected)

    leaf = sg.tensor(arrays[0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        call(sg, leaf, v)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        call(torch, torch.tensor(arrays[0], requires_grad=True), torch.tensor(arrays[1]))
    assert leaf._version == 0


def _float(m, *shape):
    return m.zeros(*shape)


ERRORS = [  # (call, the start of PyTorch's message, also ours)
    (lambda m: _float(m, 3).index_put((m.tensor([0]),), m.ones(1, dtype=m.float64)), "Index put"),
    (lambda m: _float(m, 3).index_put(m.tensor([0]), m.ones(1)), "index_put(): argument"),
    (lambda m: _float(m, 3).index_put((m.tensor([0]),), 1.0), "index_put(): argument 'values'"),
    (lambda m: _float(m, 3).index_put((m.tensor([0.0]),), m.ones(1)), None),
    (lambda m: _float(m, 3).index_put((m.tensor([3]),), m.ones(1)), None),
    (lambda m: _float(m, 3, 4).index_put((m.tensor([0, 1]),), m.ones(3)), "shape mismatch"),
    (lambda m: _float(m, 3).index_put((m.tensor([0]),) * 2, m.ones(1)), "too many indices"),
    (lambda m: m.tensor(1.0).index_put((m.tensor(True),), m.ones(1)), "too many indices"),
    (lambda m: _float(m, 3).masked_scatter(m.tensor([1.0, 0, 1]), m.ones(3)), "masked_scatter_"),
    (lambda m: _float(m, 3).masked_scatter(m.tensor([True] * 3), m.ones(2)), "Number of elements"),
    (
        lambda m: _float(m, 3).masked_scatter(m.tensor([True] * 3), m.ones(3, dtype=m.float64)),
        "masked_scatter: expected self and source to have same dtypes",
    ),
    (lambda m: _float(m, 3).masked_scatter(m.tensor([True] * 2), m.ones(3)), None),
    (lambda m: _float(m, 3).masked_scatter(m.tensor([True] * 3), 1.0), "masked_scatter(): arg"),
    (lambda m: _float(m, 2, 2).put(m.tensor([4]), m.ones(1)), "out of range: tried to access"),
    (lambda m: _float(m, 2, 2).put(m.tensor([-5]), m.ones(1)), "out of range: tried to access"),
    (lambda m: _float(m, 2, 2).put(m.tensor([0, 1]), m.ones(3)), "put_(): Expected source and"),
    (lambda m: _float(m, 2).put(m.tensor([0], dtype=m.int32), m.ones(1)), "put_(): Expected a"),
    (lambda m: _float(m, 2).put(m.tensor([0]), m.ones(1, dtype=m.float64)), "put_(): self and"),
    (lambda m: _float(m, 0).put(m.tensor([0]), m.ones(1)), "put_(): Tried to put elements"),
    (lambda m: _float(m, 3).index_reduce(0, m.tensor([0]), m.ones(1), "sum"), "index_reduce()"),
    (
        lambda m: _float(m, 3).index_reduce(0, m.tensor([0.0]), m.ones(1), "prod"),
        "index_reduce_(): Expected dtype int32/int64",
    ),
    (
        lambda m: _float(m, 3).index_reduce(0, m.tensor([[0]]), m.ones(1), "prod"),
        "index_reduce_(): Index is supposed to be a vector",
    ),
    (
        lambda m: _float(m, 3).index_reduce(0, m.tensor([0, 1]), m.ones(3), "prod"),
        "index_reduce_(): Number of indices (2)",
    ),
    (
        lambda m: _float(m, 3, 2).index_reduce(0, m.tensor([0]), m.ones(1, 1), "prod"),
        "source tensor shape must match",
    ),
    (lambda m: _float(m, 3).index_reduce(0, m.tensor([3]), m.ones(1), "prod"), "index out of"),
    (lambda m: _float(m, 3).index_reduce(0, m.tensor([-1]), m.ones(1), "prod"), "index out of"),
    (
        lambda m: m.ones(3, dtype=m.bool).index_reduce(0, m.tensor([0]), m.ones(1) > 0, "amax"),
        None,
    ),
    (lambda m: m.select_scatter(_float(m, 2, 3), m.ones(2), 0, 0), "expected src to have a size"),
    (lambda m: m.select_scatter(_float(m, 2, 3), m.ones(3), 0, 2), "select(): index 2"),
    (lambda m: m.select_scatter(_float(m, 2, 3), 1.0, 0, 0), "select_scatter(): argument 'src'"),
    (lambda m: m.slice_scatter(_float(m, 2, 3), m.ones(2, 3), 0, 0, 2, 0), "slice step must be"),
    (lambda m: m.slice_scatter(m.tensor(1.0), m.tensor(1.0)), "slice() cannot be applied"),
    (lambda m: m.slice_scatter(_float(m, 2, 3), m.ones(1, 3)), "expected src to have a size"),
    (lambda m: m.diagonal_scatter(_float(m, 3, 3), m.ones(3), 1), "expected src to have a size"),
    (lambda m: m.diagonal_scatter(_float(m, 3, 3), m.ones(3), 0, 0, 0), None),
    (lambda m: _float(m, 3).narrow_copy(1, 0, 1), None),
    (lambda m: _float(m, 3).narrow_copy(0, 2, 2), "start (2) + length (2) exceeds"),
    (lambda m: _float(m, 3).narrow_copy(0, -1, -1), "start (2) + length (-1) exceeds"),
    (lambda m: m.tensor(1.0).narrow_copy(0, 0, 1), "narrow() cannot be applied"),
]


@pytest.mark.parametrize("call, message", ERRORS)
def test_errors_match_torch(call, message):
    """The same exception type as PyTorch, with its message where we give PyTorch's words."""
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(sg)
    assert ours.type is theirs.type, (str(ours.value), str(theirs.value))
    if message is not None:
        assert str(theirs.value).startswith(message), str(theirs.value)
        assert str(ours.value).startswith(message), str(ours.value)


def test_an_error_changes_nothing():
    x = sg.zeros(3)
    with pytest.raises(IndexError):
        x.put_(sg.tensor([0, 9]), sg.ones(2))
    with pytest.raises(RuntimeError):
        x.masked_scatter_(sg.tensor([True, True, True]), sg.ones(2))
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0


def test_root_names_are_torchs():
    for name in (
        "index_put",
        "index_put_",
        "index_reduce",
        "masked_scatter",
        "put",
        "select_scatter",
        "slice_scatter",
        "diagonal_scatter",
        "as_strided_scatter",
        "narrow_copy",
    ):
        assert hasattr(torch, name)
        assert getattr(sg, name) is getattr(sg.Tensor, name)


# ---- as_strided_scatter ---------------------------------------------------------------------

AS_STRIDED_SCATTERS = {
    "every_other": (lambda m: m.zeros(6), (2, 2), (1, 2), None),
    "a_view_at_its_offset": (lambda m: m.zeros(6)[1:], (2, 2), (1, 2), None),
    "a_view_offset_given": (lambda m: m.zeros(6)[1:], (2, 2), (1, 2), 0),
    "a_transpose": (lambda m: m.zeros(2, 3).t(), (2,), (1,), 0),
    "a_diagonal": (lambda m: m.zeros(2, 3), (2,), (4,), None),
    "empty": (lambda m: m.zeros(6), (0, 2), (1, 3), None),
}


@pytest.mark.parametrize("name", AS_STRIDED_SCATTERS)
def test_as_strided_scatter_matches_torch(name):
    make, size, stride, offset = AS_STRIDED_SCATTERS[name]
    outs = []
    for m in (sg, torch):
        src = m.arange(float(np.prod(size))).reshape(size) + 1
        outs.append(make(m).as_strided_scatter(src, size, stride, offset))
    assert outs[0].tolist() == outs[1].tolist() and outs[0].shape == tuple(outs[1].shape)


def test_as_strided_scatter_gradient_to_src_matches_torch():
    grads = []
    for m in (sg, torch):
        src = m.ones(2, 2, dtype=m.float64, requires_grad=True)
        out = m.as_strided_scatter(m.zeros(6, dtype=m.float64), src * 3, (2, 2), (1, 3), 1)
        (out * m.arange(6.0, dtype=m.float64)).sum().backward()
        grads.append(src.grad.tolist())
    assert grads[0] == grads[1]


def test_as_strided_scatter_gradient_to_the_input_passes_gradcheck():
    """PyTorch 2.13's own gradient to the input fails this check (it keeps the written places'
    gradient and drops the others'), so finite differences are the reference here."""
    x = sg.tensor(np.random.default_rng(0).standard_normal(6), requires_grad=True)
    src = sg.ones(2, 2, dtype=sg.float64, requires_grad=True)
    for offset in (0, 1):

        def call(x, s, offset=offset):
            return sg.as_strided_scatter(x * 1, s, (2, 2), (1, 3), offset)

        assert sg.autograd.gradcheck(call, (x, src))
        assert sg.autograd.gradgradcheck(call, (x, src))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: m.as_strided_scatter(m.zeros(6), m.ones(2, 3), (2, 2), (1, 2)),
         r"expected src to have a size equal to the slice of self. src size = \[2, 3\], "
         r"slice size = \[2, 2\]"),
        (lambda m: m.as_strided_scatter(m.zeros(6), m.ones(2, 2), (2, 2), (0, 1)),
         "more than one element of the written-to tensor refers to a single memory location"),
        (lambda m: m.as_strided_scatter(m.zeros(6), m.ones(2, 2), (2, 2), (1, 3), 9),
         "out of bounds for storage of size 24"),
    ],
)  # fmt: skip
def test_as_strided_scatter_errors_match_torch(call, message):
    for m in (sg, torch):
        with pytest.raises(RuntimeError, match=message):
            call(m)


def test_as_strided_scatter_into_overlapping_windows_is_refused():
    """PyTorch writes each window in its loop order; scratchgrad refuses rather than guess."""
    with pytest.raises(RuntimeError, match="as_strided_scatter: unsupported operation"):
        sg.as_strided_scatter(sg.zeros(6), sg.ones(2, 2), (2, 2), (1, 1))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.index_put((m.tensor([True, False, True]),), m.tensor(5.0)),
        lambda m, x: x.index_put_((m.tensor([True, False, True]),), m.tensor([-3.0])),
        lambda m, x: x.view(3, 1).index_put((m.tensor([True, False, True]),), m.tensor(7.5)),
        lambda m, x: x.index_put((m.tensor([True, False, True]),), m.tensor(300)),
        lambda m, x: x.index_put((m.tensor([True, False, True]),), m.tensor(1e6)),
        lambda m, x: x.index_put((m.tensor([True, False, True]),), m.tensor([5.0, 6.0])),
        lambda m, x: x.index_put((m.tensor([True, False, True]),), m.tensor(5.0), True),
        lambda m, x: x.index_put((m.tensor([0]),), m.tensor(5.0)),
    ],
)
@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_one_value_of_another_dtype_through_a_mask_is_a_masked_fill_as_pytorch(call, dtype):
    """index_put of one value through one bool mask is PyTorch's masked_fill_: the value is
    cast (and checked as a number: 300 into int8 raises); ours refused any other dtype."""
    results = []
    for m in (sg, torch):
        try:
            results.append(call(m, m.zeros(3, dtype=getattr(m, dtype))).tolist())
        except RuntimeError as error:
            results.append(str(error)[:30])
    assert results[0] == results[1]
