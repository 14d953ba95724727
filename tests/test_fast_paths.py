"""The array-level fast paths of ``ops/`` against plain NumPy: row sums through a product with
ones, the row max through argmax, an embedding's gradient through a sort and ``add.reduceat``,
the in-order copy of a stack of transposed keys, a bias's gradient as one product, a product
with a long inner size summed in pieces of it or swapped, one with a large result through the
matmul ufunc. Each gives what the plain NumPy call (or a float64 one) gives, to rounding, edge
cases included: NaN and infinities, repeated and negative indices, empty and Fortran-ordered
arrays."""

import numpy as np
import pytest

import scratchgrad as sg
from scratchgrad.ops import matmul, reduce
from scratchgrad.ops.matmul import _product, piece_length, swaps
from scratchgrad.ops.movement import _add_rows
from scratchgrad.ops.reduce import _max, _ones, _sum


@pytest.fixture(autouse=True)
def small_arrays_take_the_fast_paths(monkeypatch):
    """The row sums start at ``reduce._FEW`` entries (the row max takes every array): these
    small arrays take them too."""
    monkeypatch.setattr(reduce, "_FEW", 0)


def test_arrays_of_few_entries_reduce_as_numpy(monkeypatch):
    """Below ``_FEW`` entries (a (64, 10) batch of logits) NumPy's sums run: their bits. The
    row max goes through argmax there too: the entry it finds is NumPy's max."""
    monkeypatch.setattr(reduce, "_FEW", 1024)
    x = np.random.default_rng(4).standard_normal((64, 10)).astype(np.float32)
    np.testing.assert_array_equal(_sum(x, (1,), True), np.add.reduce(x, axis=1, keepdims=True))
    np.testing.assert_array_equal(_max(x, (1,)), x.max(axis=1, keepdims=True))
    y = np.random.default_rng(5).standard_normal((3, 300, 7)).astype(np.float32)
    assert reduce._row_count(y, (2,)) == 900 and reduce._row_count(x, (1,)) == 64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape, dim",
    [((3, 4, 5), (2,)), ((3, 4, 5), (1, 2)), ((2, 3, 4, 6), (-1,)), ((4, 600), (1,)), ((5, 1), 1)],
    ids=["last", "last_two", "negative", "past_512", "one_entry"],
)
def test_row_sums_match_numpy(shape, dim, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    for array in (x, np.asfortranarray(x)):  # the product takes C order; the other reduces
        for keepdim in (True, False):
            got = _sum(array, dim, keepdim)
            expected = np.add.reduce(x.astype(np.float64), axis=dim, keepdims=keepdim)
            assert got.shape == expected.shape and got.dtype == dtype
            np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_ones_stay_kept_for_every_row_length():
    """Each length summed (2 to 512 entries a row) keeps its ones, all views of one read-only
    vector: a cache of 16 whole vectors was refilled at nearly every call."""
    dtype = np.dtype(np.float32)
    first = {n: _ones(n, dtype) for n in range(2, 513)}
    assert all(_ones(n, dtype) is ones for n, ones in first.items())
    assert all(np.shares_memory(ones, first[512]) for ones in first.values())
    assert not first[2].flags.writeable and first[300].tolist() == [1.0] * 300


def test_row_max_matches_numpy_with_nan_and_infinities():
    x = np.random.default_rng(1).standard_normal((4, 3, 8)).astype(np.float32)
    x[0, 0, 3] = np.nan  # NaN wins, as in max
    x[1, 1] = -np.inf  # a row of -inf
    x[2, 2, 5] = np.inf
    for dim in ((2,), (1, 2)):
        np.testing.assert_array_equal(_max(x, dim), x.max(axis=dim, keepdims=True))


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-6), (np.float64, 1e-14)])
def test_embedding_gradient_is_each_rows_sum(dtype, tol):
    """Against sums in float64: ten rows drawn about 30 times each, one 100 times more, -1 the
    last row. The order of the additions is not add.at's (bits differ from 3 repeats on), so
    the check is to rounding."""
    rng = np.random.default_rng(2)
    rows = rng.integers(-1, 10, size=(4, 100))
    rows[0] = 3
    x = rng.standard_normal((4, 100, 6)).astype(dtype)
    out, expected, scale = np.zeros((10, 6), dtype), np.zeros((10, 6)), np.zeros((10, 6))
    _add_rows(out, rows, x)
    np.add.at(expected, rows, x.astype(np.float64))
    np.add.at(scale, rows, np.abs(x.astype(np.float64)))  # what rounding errors scale with
    assert (np.abs(out - expected) <= tol * scale).all()
    _add_rows(out, np.zeros(0, np.int64), np.zeros((0, 6), dtype))  # no rows: nothing added
    assert (np.abs(out - expected) <= tol * scale).all()


def test_stack_of_transposed_keys_multiplies_as_numpy():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    k = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    got = _product(q, k.swapaxes(-1, -2))
    expected = np.matmul(q.astype(np.float64), k.swapaxes(-1, -2).astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 0), (0, 3, 4), (5, 4)])
def test_bias_gradient_of_stacked_rows_matches_numpy(shape):
    """A bias's gradient (the sum over every dim but the last) as a product with ones, for
    C-ordered, Fortran-ordered and empty gradients."""
    g = np.random.default_rng(4).standard_normal(shape)
    for array in (g, np.asfortranarray(g)):
        got = sg.tensor(array).sum_to_size(shape[-1:]).numpy()
        expected = g.sum(axis=tuple(range(len(shape) - 1)))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "x_shape, y_shape",
    [
        ((8, 50176), (50176, 10)),  # W5's conv1 weight gradient: 49 pieces of 1024
        ((8, 50177), (50177, 10)),  # one entry of K left over, multiplied on its own
        ((1, 16, 12544), (1, 12544, 73)),  # a stack of one matrix (conv2d's products)
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_long_inner_products_summed_in_pieces_match_numpy(x_shape, y_shape, dtype, monkeypatch):
    monkeypatch.setattr(matmul, "SMALL_MATRIX_KERNELS", True)  # (on any machine)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(dtype)
    y = rng.standard_normal(y_shape).astype(dtype)
    y = np.ascontiguousarray(y.swapaxes(-1, -2)).swapaxes(-1, -2)  # as a weight gradient's
    assert piece_length(x, y) is not None
    got = _product(x, y)
    expected = np.matmul(x.astype(np.float64), y.astype(np.float64))
    assert got.shape == expected.shape and got.dtype == dtype
    scale = np.sqrt(x_shape[-1])  # the sums' typical size
    tol = 1e-5 if dtype == np.float32 else 1e-13
    assert (np.abs(got - expected) <= tol * scale).all()


@pytest.mark.parametrize(
    "x_shape, y_shape, dtype",
    [
        ((8, 1024), (1024, 10), np.float32),  # under BLAS's limit for small matrices
        ((128, 50176), (50176, 10), np.float32),  # too wide a result for pieces that pay
        ((1, 2000000), (2000000, 1), np.float32),  # a dot product (BLAS's gemv)
        ((8, 50176), (50176, 10), np.int64),  # not BLAS
        ((2, 8, 50176), (2, 50176, 10), np.float32),  # a stack of two: NumPy's own loop
    ],
)
def test_other_products_are_computed_whole(x_shape, y_shape, dtype, monkeypatch):
    monkeypatch.setattr(matmul, "SMALL_MATRIX_KERNELS", True)
    x, y = np.ones(x_shape, dtype), np.ones(y_shape, dtype)
    assert piece_length(x, y) is None


@pytest.mark.parametrize(
    "x_shape, y_shape",
    [
        ((8, 50176), (50176, 10)),  # W5's conv1 weight gradient
        ((1, 16, 12544), (1, 12544, 73)),  # its conv2's, a stack of one matrix
        ((4, 20000), (20000, 100)),
    ],
)
def test_products_of_few_rows_are_swapped_without_blas_kernels_for_small_matrices(
    x_shape, y_shape, monkeypatch
):
    """Without them (OpenBLAS's are for AVX-512 cores) each piece costs a whole product's
    packing: W5's weight gradients are each one product, computed with OpenBLAS's Haswell
    kernels as ``(y.T @ x.T).T`` into a C-ordered result (faster that way round in float32)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal(x_shape).astype(np.float32)
    y = np.ascontiguousarray(rng.standard_normal(y_shape).astype(np.float32).swapaxes(-1, -2))
    y = y.swapaxes(-1, -2)  # as a weight gradient's
    monkeypatch.setattr(matmul, "SMALL_MATRIX_KERNELS", False)
    for kernels in (False, True):
        monkeypatch.setattr(matmul, "HASWELL_KERNELS", kernels)
        assert piece_length(x, y) is None
        assert swaps(x, y) is kernels
    got = _product(x, y)
    expected = np.matmul(x.astype(np.float64), y.astype(np.float64))
    assert got.shape == expected.shape and got.dtype == np.float32 and got.flags.c_contiguous
    assert (np.abs(got - expected) <= 1e-5 * np.sqrt(x_shape[-1])).all()


@pytest.mark.parametrize(
    "x_shape, y_shape, dtype",
    [
        ((16, 12544), (12544, 73), np.float64),  # float64's kernels gain nothing
        ((64, 50176), (50176, 10), np.float32),  # more rows than columns
        ((32, 12544), (12544, 73), np.float32),  # more than SWAPPED_ROWS rows
        ((1, 50000), (50000, 10), np.float32),  # a vector times a matrix
        ((16, 1000), (1000, 73), np.float32),  # a short inner size
        ((2, 16, 12544), (2, 12544, 73), np.float32),  # a stack of two: NumPy's own loop
        ((16, 12544), (12544, 73), np.int32),  # not BLAS
    ],
)
def test_other_products_are_not_swapped(x_shape, y_shape, dtype, monkeypatch):
    monkeypatch.setattr(matmul, "SMALL_MATRIX_KERNELS", False)
    monkeypatch.setattr(matmul, "HASWELL_KERNELS", True)
    rng = np.random.default_rng(7)
    x, y = (rng.integers(-3, 4, shape).astype(dtype) for shape in (x_shape, y_shape))
    assert not swaps(x, y)
    assert _product(x, y).tobytes() == np.matmul(x, y).tobytes()


def _layouts(shape, dtype, rng):
    """A matrix of ``shape`` C-ordered, and one Fortran-ordered (a transposed array)."""
    c = rng.standard_normal(shape).astype(dtype)
    return c, np.ascontiguousarray(c.T).T


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n", [(256, 128, 128), (512, 128, 784), (128, 3, 256)])
def test_large_products_go_through_the_matmul_ufunc_with_numpy_dots_bits(m, k, n, dtype):
    """numpy.dot zeroes its result before BLAS writes it; ``dot`` skips that pass for large
    results through the matmul ufunc, which makes the same BLAS call: the same bytes as
    numpy.dot for every layout of the two matrices, into a new array or into ``out``."""
    rng = np.random.default_rng(8)
    for x in _layouts((m, k), dtype, rng):
        for y in _layouts((k, n), dtype, rng):
            assert matmul.through_ufunc(x, y)
            expected = np.dot(x, y)
            out = np.full((m, n), np.nan, dtype)
            assert matmul.dot(x, y).tobytes() == expected.tobytes()
            assert matmul.dot(x, y, out) is out and out.tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_matrix_times_its_own_transpose_keeps_numpy_dots_bits(dtype):
    """numpy.dot and matmul both take BLAS's syrk for ``x @ x.T`` (a view of the same
    memory), and give the same bytes."""
    rng = np.random.default_rng(9)
    for x in _layouts((300, 200), dtype, rng):
        for a, b in ((x, x.T), (x.T, x)):
            assert matmul.through_ufunc(a, b)
            assert matmul.dot(a, b).tobytes() == np.dot(a, b).tobytes()


@pytest.mark.parametrize(
    "x, y",
    [
        (np.ones((128, 64), "f4"), np.ones((64, 128), "f4")),  # a result under LARGE_RESULT
        (np.ones((1, 64), "f4"), np.ones((64, 1 << 16), "f4")),  # a row: matmul's gemv
        (np.ones((256, 1), "f4"), np.ones((1, 256), "f4")),  # K of 1: matmul's own loop
        (np.ones((256, 128), "f4")[:, ::2], np.ones((64, 256), "f4")),  # strided: its own loop
        (np.ones((256, 64), "f4"), np.ones((64, 256), "f8")),  # two dtypes
        (np.ones((256, 64), "c8"), np.ones((64, 256), "c8")),  # complex
        (np.ones((256, 64), "i8"), np.ones((64, 256), "i8")),  # integers: no BLAS
    ],
)
def test_other_products_stay_with_numpy_dot(x, y):
    assert not matmul.through_ufunc(x, y)
    assert matmul.dot(x, y).tobytes() == np.dot(x, y).tobytes()
