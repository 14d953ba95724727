"""Sparse COO tensors fuzzed against PyTorch: random shapes (hybrid ones with dense dims, no
sparse dims at all), densities (repeated indices, no entries) and dtypes through construction,
to_dense, coalesce, sparse.sum over every set of dims, to_sparse and the sparse-dense
products; their gradients (a sparse leaf's sparse .grad, values in a graph, the dense operand);
Embedding(sparse=True) with the optimizers that take sparse gradients over several steps; and
bad input, which raises as PyTorch does."""

import itertools

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

pytestmark = [
    pytest.mark.filterwarnings("ignore:Sparse invariant checks"),
    pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf"),
]

LIBS = (sg, torch)
INT64 = {sg: sg.int64, torch: torch.int64}


def _dtype(lib, name):
    return getattr(lib, name)


def _random_coo(rng, dtype):
    """Indices (repeats likely), values and size of a random COO tensor in ``dtype``: 0 to 3
    sparse dims, 0 to 2 dense ones, 0 to 9 entries."""
    sparse_dim, dense_dim = int(rng.integers(0, 4)), int(rng.integers(0, 3))
    size = tuple(int(n) for n in rng.integers(1, 5, sparse_dim + dense_dim))
    nnz = int(rng.integers(0, 10)) if sparse_dim else int(rng.integers(0, 3))
    indices = np.array([rng.integers(0, n, nnz) for n in size[:sparse_dim]], np.int64)
    values = rng.standard_normal((nnz, *size[sparse_dim:])) * 3
    if dtype == "int64":
        values = values.round()
    return indices.reshape(sparse_dim, nnz), values, size


def _pair(indices, values, size, dtype, **options):
    return [
        lib.sparse_coo_tensor(
            lib.tensor(indices), lib.tensor(values, dtype=_dtype(lib, dtype)), size, **options
        )
        for lib in LIBS
    ]


def _assert_same(ours, theirs, dtype="float64", what=""):
    """The same layout, shape and dtype; sparse ones: the same entries once coalesced."""
    assert ours.is_sparse == theirs.is_sparse, what
    assert tuple(ours.shape) == tuple(theirs.shape), what
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], what
    if theirs.is_sparse:
        ours, theirs = ours.coalesce(), theirs.coalesce()
        np.testing.assert_array_equal(ours.indices().numpy(), theirs.indices().numpy(), what)
        ours, theirs = ours.values(), theirs.values()
    if dtype == "int64":
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy(), what)
    else:
        assert_close(ours, theirs, dtype, what)


@pytest.mark.parametrize("seed", range(60))
def test_random_sparse_tensors_as_torch(seed):
    rng = np.random.default_rng(seed)
    dtype = ["float64", "float32", "int64"][seed % 3]
    indices, values, size = _random_coo(rng, dtype)
    ours, theirs = _pair(indices, values, size, dtype)
    assert ours._nnz() == theirs._nnz() and ours.is_coalesced() == theirs.is_coalesced()
    assert (ours.sparse_dim(), ours.dense_dim()) == (theirs.sparse_dim(), theirs.dense_dim())
    _assert_same(ours.to_dense(), theirs.to_dense(), dtype, "to_dense")
    coalesced, expected = ours.coalesce(), theirs.coalesce()
    assert coalesced.is_coalesced() and coalesced._nnz() == expected._nnz()
    _assert_same(coalesced, expected, dtype, "coalesce")
    _assert_same(sg.sparse.sum(ours), torch.sparse.sum(theirs), dtype, "sum")
    for count in range(1, ours.ndim + 1):  # (sparse dims, dense dims, both)
        for dims in itertools.combinations(range(ours.ndim), count):
            out, expected = sg.sparse.sum(ours, dims), torch.sparse.sum(theirs, dims)
            _assert_same(out, expected, dtype, f"sum over {dims}")
    dense = theirs.to_dense()
    if ours.dense_dim() == 0 and dense.ndim:
        _assert_same(sg.tensor(dense.numpy()).to_sparse(), dense.to_sparse(), dtype, "to_sparse")


@pytest.mark.parametrize("seed", range(40))
def test_random_products_as_torch(seed):
    rng = np.random.default_rng(seed)
    dtype = ["float64", "float32", "int64"][seed % 3]
    size = tuple(int(n) for n in rng.integers(1, 6, 2))
    nnz = int(rng.integers(0, 12))
    indices = np.array([rng.integers(0, n, nnz) for n in size], np.int64).reshape(2, nnz)
    values = rng.standard_normal(nnz).round() if dtype == "int64" else rng.standard_normal(nnz)
    ours, theirs = _pair(indices, values, size, dtype)
    dense = rng.standard_normal((size[1], int(rng.integers(1, 4)))).round(1) * 3
    x = {lib: lib.tensor(dense, dtype=_dtype(lib, dtype)) for lib in LIBS}
    _assert_same(sg.sparse.mm(ours, x[sg]), torch.sparse.mm(theirs, x[torch]), dtype, "mm")
    _assert_same(ours @ x[sg][:, 0], theirs @ x[torch][:, 0], dtype, "@ a vector")
    bias = rng.standard_normal((size[0], dense.shape[1])).round(1)
    out = sg.addmm(sg.tensor(bias, dtype=_dtype(sg, dtype)), ours, x[sg], beta=2, alpha=3)
    expected = torch.addmm(
        torch.tensor(bias, dtype=_dtype(torch, dtype)), theirs, x[torch], beta=2, alpha=3
    )
    _assert_same(out, expected, dtype, "addmm")


def _loss(lib, sparse, op, dense, weight):
    """A loss through ``op``: to_dense, sparse.sum, sparse.mm, or @ (with ``dense``)."""
    if op == "to_dense":
        return (sparse.to_dense() * weight).sum()
    if op == "sum":
        return lib.sparse.sum(sparse * 3.0)
    if op == "sparse.mm":
        return (lib.sparse.mm(sparse, dense) ** 2).sum()
    return (sparse @ dense).sin().sum()


@pytest.mark.parametrize("seed", range(60))
def test_random_gradients_as_torch(seed):
    """``leaf``: a sparse leaf (requires_grad=True), its .grad sparse at its entries (only
    through to_dense, sparse.sum and sparse.mm, whose PyTorch gradient is that one: its
    ``@`` gives the dense gradient, a documented difference); ``graph``: values in a graph;
    ``coalesced``: a leaf coalesced before use."""
    rng = np.random.default_rng(seed)
    dtype = ["float64", "float32"][seed % 2]
    mode = ["leaf", "graph", "coalesced"][seed % 3]
    size = tuple(int(n) for n in rng.integers(1, 5, 2))
    nnz = int(rng.integers(0, 9))
    indices = np.array([rng.integers(0, n, nnz) for n in size], np.int64).reshape(2, nnz)
    values, dense = rng.standard_normal(nnz), rng.standard_normal((size[1], 3))
    ops = ["to_dense", "sum", "sparse.mm"] + (["@"] if mode == "graph" else [])
    op = ops[int(rng.integers(len(ops)))]
    weight = rng.standard_normal(size)
    grads = []
    for lib in LIBS:
        v = lib.tensor(values, dtype=_dtype(lib, dtype), requires_grad=mode == "graph")
        leaf = lib.sparse_coo_tensor(
            lib.tensor(indices), v * 2 if mode == "graph" else v, size,
            requires_grad=mode != "graph",
        )  # fmt: skip
        x = lib.tensor(dense, dtype=_dtype(lib, dtype), requires_grad=True)
        sparse = leaf.coalesce() if mode == "coalesced" else leaf
        loss = _loss(lib, sparse, op, x, lib.tensor(weight, dtype=_dtype(lib, dtype)))
        loss.backward()
        grads.append((loss, v.grad if mode == "graph" else leaf.grad, x.grad))
    (loss, grad, x_grad), (expected_loss, expected_grad, expected_x_grad) = grads
    assert_close(loss, expected_loss, dtype, op)
    assert (grad is None) == (expected_grad is None), op
    if grad is not None:
        _assert_same(grad, expected_grad, dtype, f"{op}: gradient of the sparse tensor")
    assert (x_grad is None) == (expected_x_grad is None), op
    if x_grad is not None:
        _assert_same(x_grad, expected_x_grad, dtype, f"{op}: gradient of the dense one")


OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.5, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.2, "eps": 1e-3}),
    ("Adagrad", {"lr": 0.1, "maximize": True}),
    ("SparseAdam", {"lr": 0.1}),
    ("SparseAdam", {"lr": 0.05, "betas": (0.5, 0.9), "eps": 1e-4, "maximize": True}),
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("optimizer, options", OPTIMIZERS)
def test_sparse_embedding_trains_as_torch(optimizer, options, seed):
    """Random lookups (repeats, none at all, the padding row) over four steps, gradients
    zeroed or set to None in turn."""
    rng = np.random.default_rng(seed)
    dtype = ["float64", "float32"][seed % 2]
    rows, dim = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    padding_idx = int(rng.integers(rows)) if seed == 2 else None
    weight = rng.standard_normal((rows, dim))
    models, optimizers = [], []
    for lib in LIBS:
        model = lib.nn.Embedding(rows, dim, padding_idx, sparse=True, dtype=_dtype(lib, dtype))
        with lib.no_grad():
            model.weight.copy_(lib.tensor(weight))
        models.append(model)
        optimizers.append(getattr(lib.optim, optimizer)(model.parameters(), **options))
    for step in range(4):
        lookups = rng.integers(0, rows, int(rng.integers(0, 6)))
        grad = rng.standard_normal((len(lookups), dim))
        for lib, model, opt in zip(LIBS, models, optimizers):
            opt.zero_grad(set_to_none=step % 2 == 1)
            out = model(lib.tensor(lookups))
            (out * lib.tensor(grad, dtype=_dtype(lib, dtype))).sum().backward()
            opt.step()
        assert_close(models[0].weight, models[1].weight, dtype, f"step {step}")


# ---- fixed here --------------------------------------------------------------------------------


@pytest.mark.parametrize("leaf_values", [False, True])
def test_requires_grad_keeps_values_in_a_graph_as_torch(leaf_values):
    """requires_grad=True on values that require grad already: the graph to them is kept (the
    tensor is no leaf); it had been cut, leaving the values without a gradient."""
    outs = []
    for lib in LIBS:
        v = lib.tensor([1.0, 2.0], requires_grad=True)
        s = lib.sparse_coo_tensor([[0, 1]], v if leaf_values else v * 2, (3,), requires_grad=True)
        assert s.requires_grad and not s.is_leaf
        (s.to_dense() * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        outs.append((v.grad, s.grad))
    (grad, sparse_grad), (expected, _) = outs
    assert_close(grad, expected)
    assert sparse_grad is None


def test_zero_dim_values_are_one_entry_as_torch():
    for size in [((3,),), ()]:
        ours, theirs = (lib.sparse_coo_tensor([[2]], lib.tensor(3.0), *size) for lib in LIBS)
        _assert_same(ours, theirs)
        assert tuple(ours.shape) == tuple(theirs.shape)


def test_no_sparse_dims_coalesce_as_torch():
    """Sparse dim 0: every entry is at the one place, summed by coalesce (it had raised
    NumPy's ValueError)."""
    values = np.arange(6.0).reshape(3, 2)
    ours, theirs = _pair(np.zeros((0, 3), np.int64), values, (2,), "float64")
    _assert_same(ours.coalesce(), theirs.coalesce())
    assert ours.coalesce()._nnz() == theirs.coalesce()._nnz() == 1
    _assert_same(ours.to_dense(), theirs.to_dense())


def test_module_functions_take_sparse_tensors_as_torch():
    """sum, detach and clone as functions use the sparse tensor's own methods (sg.detach had
    wrapped its stand-in array in a dense tensor; sum and clone raised naming another op)."""
    ours, theirs = _pair([[0, 1, 1], [0, 0, 1]], [1.0, 2.0, 3.0], (3, 2), "float64")
    for name in ("detach", "clone"):
        _assert_same(getattr(sg, name)(ours), getattr(torch, name)(theirs), what=name)
    _assert_same(sg.sum(ours), torch.sum(theirs))
    _assert_same(sg.sum(ours, 0), torch.sum(theirs, 0))


@pytest.mark.parametrize("graph", [False, True])
def test_stored_values_are_out_of_the_graph_as_torch(graph):
    """_values() does not require grad, as PyTorch's (a leaf's had been the leaf itself: with
    weights per copy of a repeated index, its .grad kept the first copy's gradient only, here
    1 of 1 + 10); values() of a coalesced tensor does."""
    for lib in LIBS:
        v = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = lib.sparse_coo_tensor([[0, 0, 1]], v * 2 if graph else v, (3,), requires_grad=not graph)
        assert s.requires_grad and not s._values().requires_grad
        assert s.coalesce().values().requires_grad
        with pytest.raises(RuntimeError, match="does not require grad"):
            (s._values() * lib.tensor([1.0, 10.0, 100.0])).sum().backward()


def test_zero_of_a_leaf_as_torch():
    """A leaf that requires grad: refused outside no_grad (it had emptied the tensor and
    dropped requires_grad silently); inside, emptied and still requiring grad."""
    for lib in LIBS:
        s = lib.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            s.zero_()
        assert s._nnz() == 2
        with lib.no_grad():
            s.zero_()
        assert s._nnz() == 0 and s.requires_grad and s.is_leaf
        (s.to_dense() * 2).sum().backward()
        assert s.grad._nnz() == 0


@pytest.mark.parametrize("dense_shape", [(), (2,)])
def test_repr_without_entries_as_torch(dense_shape):
    """Empty indices and values print their size and no dtype, as PyTorch's (the indices had
    printed dtype=int64, the values no size)."""
    ours, theirs = (
        lib.sparse_coo_tensor(
            lib.zeros(1, 0, dtype=lib.int64), lib.zeros(0, *dense_shape), (3, *dense_shape)
        )
        for lib in LIBS
    )
    assert repr(ours) == repr(theirs).replace("torch.", "scratchgrad.")


# ---- bad input -------------------------------------------------------------------------------


BAD = {
    "indices of 3 dims": ([[[0, 1]]], [1.0, 2.0], (3,), "sparse_dim x nnz"),
    "more values than indices": ([[0, 1]], [1.0, 2.0, 3.0], (3,), "same nnz"),
    "size of another rank": ([[0, 1]], [1.0, 2.0], (3, 2), "len\\(size\\)"),
    "values of another dense shape": ([[0, 1]], [[1.0], [2.0]], (3, 2), "values has incorrect"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_construction_raises_as_torch(case):
    indices, values, size, message = BAD[case]
    with pytest.raises(RuntimeError, match=message):
        torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size)
    with pytest.raises(RuntimeError, match=message):
        sg.sparse_coo_tensor(sg.tensor(indices), sg.tensor(values), size)


@pytest.mark.parametrize("seed", range(20))
def test_indices_out_of_range_raise_naming_the_dim(seed):
    """PyTorch checks them only with check_invariants=True (then: its error); ours always."""
    rng = np.random.default_rng(seed)
    size = tuple(int(n) for n in rng.integers(1, 5, 2))
    indices = np.array([rng.integers(0, n, 4) for n in size])
    dim = int(rng.integers(2))
    indices[dim, int(rng.integers(4))] = -1 if seed % 2 else size[dim] + int(rng.integers(3))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices|negative index"):
        torch.sparse_coo_tensor(torch.tensor(indices), torch.ones(4), size, check_invariants=True)
    with pytest.raises(RuntimeError, match=f"size is inconsistent with indices: for dim {dim}"):
        sg.sparse_coo_tensor(sg.tensor(indices), sg.ones(4), size)


def test_adding_tensors_of_other_sparse_dims_raises_as_torch():
    for lib in LIBS:
        a = lib.sparse_coo_tensor([[0, 1]], lib.ones(2, 2), (3, 2))
        b = lib.sparse_coo_tensor([[0, 1], [0, 1]], lib.ones(2), (3, 2))
        with pytest.raises(RuntimeError, match="same density.*1 sparse dim.*2 sparse dim"):
            a + b
