"""Sparse COO tensors (scratchgrad.sparse) against PyTorch's: construction, coalescing with
repeated indices, to_sparse/to_dense, the sparse-dense product and its gradients (the dense
operand's, the sparse leaf's sparse gradient, and that of values in a graph), sparse.sum,
scaling, repr, and the errors for what is not supported."""

import warnings

import numpy as np
import pytest
import torch
from oracle import DTYPES, assert_close

import scratchgrad as sg
from scratchgrad.autograd import gradcheck, gradgradcheck

warnings.filterwarnings("ignore", "Sparse invariant checks", UserWarning)


def _coo(rng, shape=(5, 4), nnz=9):
    """Random indices (repeats likely: 9 draws among 20 places) and their values."""
    indices = np.stack([rng.integers(0, n, nnz) for n in shape])
    return indices, rng.standard_normal(nnz)


def _pair(indices, values, size, dtype="float64", **kwargs):
    ours_dtype, torch_dtype = DTYPES[dtype]
    ours = sg.sparse_coo_tensor(indices, sg.tensor(values, dtype=ours_dtype), size, **kwargs)
    theirs = torch.sparse_coo_tensor(
        torch.tensor(indices), torch.tensor(values, dtype=torch_dtype), size, **kwargs
    )
    return ours, theirs


def _assert_same_sparse(ours, theirs, dtype="float64"):
    assert ours.is_sparse and ours.layout is sg.sparse_coo
    assert tuple(ours.shape) == tuple(theirs.shape) and ours._nnz() == theirs._nnz()
    assert ours.is_coalesced() == theirs.is_coalesced()
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
    assert_close(ours._values(), theirs._values(), dtype)


def test_construction_keeps_indices_and_values_as_given():
    indices, values = _coo(np.random.default_rng(0))
    ours, theirs = _pair(indices, values, (5, 4))
    _assert_same_sparse(ours, theirs)
    assert ours._indices().dtype == sg.int64 and ours.dtype == sg.float64
    assert ours.size() == (5, 4) and ours.size(1) == 4 and ours.dim() == 2
    assert ours.sparse_dim() == theirs.sparse_dim() and ours.dense_dim() == theirs.dense_dim()
    assert str(ours.device) == "cpu" and not ours.requires_grad
    assert not isinstance(ours.array, np.ndarray)  # no dense copy behind it


def test_legacy_constructors():
    indices, values = [[0, 1], [1, 0]], [1.0, 2.0]
    for name in ("FloatTensor", "DoubleTensor"):
        ours = getattr(sg.sparse, name)(sg.tensor(indices), sg.tensor(values), sg.Size([2, 2]))
        theirs = getattr(torch.sparse, name)(
            torch.tensor(indices),
            torch.tensor(values, dtype=getattr(torch, ours.dtype.name)),
            torch.Size([2, 2]),
        )
        _assert_same_sparse(ours, theirs, "float32")
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_size_is_inferred_from_the_indices():
    ours = sg.sparse_coo_tensor([[0, 3, 1], [2, 0, 4]], [1.0, 2.0, 3.0])
    theirs = torch.sparse_coo_tensor([[0, 3, 1], [2, 0, 4]], [1.0, 2.0, 3.0])
    assert tuple(ours.shape) == tuple(theirs.shape) == (4, 5)
    assert ours.dtype == sg.float32


@pytest.mark.parametrize("seed", range(4))
def test_coalesce_sorts_and_sums_repeated_indices(seed):
    indices, values = _coo(np.random.default_rng(seed))
    ours, theirs = _pair(indices, values, (5, 4))
    _assert_same_sparse(ours.coalesce(), theirs.coalesce())
    np.testing.assert_array_equal(ours.coalesce().indices().numpy(), theirs.coalesce().indices())
    assert_close(ours.to_dense(), theirs.to_dense())


def test_coalesce_of_a_coalesced_tensor_is_itself():
    ours = sg.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    assert ours.is_coalesced() and ours.coalesce() is ours


def test_hybrid_values_coalesce_and_densify_as_torch():
    rng = np.random.default_rng(1)
    indices = np.array([[0, 2, 0, 1], [1, 1, 1, 0]])
    values = rng.standard_normal((4, 3))
    ours, theirs = _pair(indices, values, (3, 2, 3))
    _assert_same_sparse(ours.coalesce(), theirs.coalesce())
    assert_close(ours.to_dense(), theirs.to_dense())


def test_to_sparse_keeps_the_nonzeros_in_order():
    rng = np.random.default_rng(2)
    dense = rng.standard_normal((4, 5)) * (rng.random((4, 5)) < 0.4)
    ours, theirs = sg.tensor(dense).to_sparse(), torch.tensor(dense).to_sparse()
    _assert_same_sparse(ours, theirs)
    assert_close(ours.to_dense(), dense)
    assert_close(sg.tensor(dense).to_dense(), dense)  # a dense tensor is its own dense form


def test_to_sparse_and_to_dense_pass_gradients_back():
    rng = np.random.default_rng(3)
    dense = rng.standard_normal((3, 4)) * (rng.random((3, 4)) < 0.5)
    weight = rng.standard_normal((3, 4))
    x, tx = sg.tensor(dense, requires_grad=True), torch.tensor(dense, requires_grad=True)
    (x.to_sparse().to_dense() * sg.tensor(weight)).sum().backward()
    (tx.to_sparse().to_dense() * torch.tensor(weight)).sum().backward()
    assert_close(x.grad, tx.grad)


def test_values_in_a_graph_get_their_gradient_through_to_dense():
    indices, values = _coo(np.random.default_rng(4))
    v, tv = sg.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    s = sg.sparse_coo_tensor(indices, v, (5, 4))
    ts = torch.sparse_coo_tensor(torch.tensor(indices), tv, (5, 4))
    assert s.requires_grad and not s.is_leaf
    weight = np.random.default_rng(5).standard_normal((5, 4))
    (s.coalesce().to_dense() * sg.tensor(weight)).sum().backward()
    (ts.coalesce().to_dense() * torch.tensor(weight)).sum().backward()
    assert_close(v.grad, tv.grad)


PRODUCTS = {
    "sparse.mm": lambda m, s, x: m.sparse.mm(s, x),
    "spmm": lambda m, s, x: m.spmm(s, x),
    "mm": lambda m, s, x: m.mm(s, x),
    "matmul": lambda m, s, x: m.matmul(s, x),
    "@": lambda m, s, x: s @ x,
    "method": lambda m, s, x: s.mm(x),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("coalesced", [False, True])
def test_sparse_times_dense_and_its_gradients(product, dtype, coalesced):
    rng = np.random.default_rng(6)
    indices, values = _coo(rng)
    dense = rng.standard_normal((4, 3))
    ours, theirs = _pair(indices, values, (5, 4), dtype, requires_grad=True)
    if coalesced:
        ours, theirs = ours.detach().coalesce(), theirs.detach().coalesce()
        ours.requires_grad_(), theirs.requires_grad_()
    x = sg.tensor(dense, dtype=DTYPES[dtype][0], requires_grad=True)
    tx = torch.tensor(dense, dtype=DTYPES[dtype][1], requires_grad=True)
    out, expected = PRODUCTS[product](sg, ours, x), PRODUCTS[product](torch, theirs, tx)
    assert out.dtype == x.dtype
    assert_close(out, expected, dtype)
    weight = rng.standard_normal((5, 3))
    (out * sg.tensor(weight, dtype=x.dtype)).sum().backward()
    (expected * torch.tensor(weight, dtype=tx.dtype)).sum().backward()
    assert_close(x.grad, tx.grad, dtype)
    if product == "sparse.mm":  # a sparse gradient, at the entries
        _assert_same_sparse(ours.grad, theirs.grad.coalesce(), dtype)
    else:  # PyTorch's mm gives the whole dense gradient; ours is it at the entries
        at = tuple(torch.tensor(ours.grad.indices().numpy()))
        assert_close(ours.grad.values(), theirs.grad[at], dtype)


def test_matrix_times_vector():
    rng = np.random.default_rng(7)
    indices, values = _coo(rng)
    ours, theirs = _pair(indices, values, (5, 4))
    vector = rng.standard_normal(4)
    assert_close(ours @ sg.tensor(vector), theirs @ torch.tensor(vector))
    assert_close(sg.matmul(ours, sg.tensor(vector)), torch.matmul(theirs, torch.tensor(vector)))


def test_values_in_a_graph_get_their_gradient_through_mm():
    rng = np.random.default_rng(8)
    indices, values = _coo(rng)
    dense = rng.standard_normal((4, 2))
    v, tv = sg.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    out = sg.sparse.mm(sg.sparse_coo_tensor(indices, v * 2, (5, 4)), sg.tensor(dense))
    expected = torch.sparse.mm(
        torch.sparse_coo_tensor(torch.tensor(indices), tv * 2, (5, 4)), torch.tensor(dense)
    )
    (out**2).sum().backward()
    (expected**2).sum().backward()
    assert_close(v.grad, tv.grad)


def test_mm_passes_gradcheck_and_gradgradcheck():
    indices, _ = _coo(np.random.default_rng(9), (3, 4), 6)

    def product(values, dense):
        return sg.sparse.mm(sg.sparse_coo_tensor(indices, values, (3, 4)), dense)

    rng = np.random.default_rng(10)
    values = sg.tensor(rng.standard_normal(6), requires_grad=True)
    dense = sg.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    assert gradcheck(product, (values, dense))
    assert gradgradcheck(product, (values, dense))


def test_an_empty_sparse_matrix_gives_zeros():
    s = sg.sparse_coo_tensor(sg.zeros(2, 0, dtype=sg.int64), sg.zeros(0), (3, 4))
    ts = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (3, 4))
    x = np.ones((4, 2), np.float32)
    assert_close(s @ sg.tensor(x), ts @ torch.tensor(x), "float32")


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1, ()])
def test_sparse_sum_as_torch(dim):
    indices, values = _coo(np.random.default_rng(11))
    ours, theirs = _pair(indices, values, (5, 4))
    args = () if dim is None else (dim,)
    out, expected = sg.sparse.sum(ours, *args), torch.sparse.sum(theirs, *args)
    assert out.is_sparse == expected.is_sparse
    if out.is_sparse:
        _assert_same_sparse(out, expected)
    else:
        assert_close(out, expected)
    assert_close(ours.sum(), theirs.sum())


@pytest.mark.parametrize("dim", [2, -1, (2, 3), (0, 2), (3, 0), (0, 1, 2), 1])
def test_sparse_sum_over_dense_dims_of_a_hybrid_tensor_as_torch(dim):
    """Over dense dims (it had raised): the values summed there, still sparse (coalesced: the
    repeated index summed) while a sparse dim is left; the values' gradient as PyTorch's."""
    rng = np.random.default_rng(14)
    indices, values = [[0, 1, 1, 0], [2, 0, 2, 2]], rng.standard_normal((4, 3, 2))
    grads = []
    for lib in (sg, torch):
        leaf = lib.tensor(values, requires_grad=True)
        out = lib.sparse.sum(lib.sparse_coo_tensor(indices, leaf, (2, 3, 3, 2)), dim)
        grads.append((out, *lib.autograd.grad((out.to_dense() ** 2).sum(), leaf)))
    (out, grad), (expected, expected_grad) = grads
    assert out.is_sparse == expected.is_sparse
    if expected.is_sparse:
        _assert_same_sparse(out, expected)
    else:
        assert_close(out, expected)
    assert_close(grad, expected_grad)


def test_scaling_by_a_number_stays_sparse():
    indices, values = _coo(np.random.default_rng(12))
    ours, theirs = _pair(indices, values, (5, 4))
    for call in (
        lambda s: s * 2.5,
        lambda s: 3 * s,
        lambda s: s / 4,
        lambda s: -s,
        lambda s: s.mul(2),
    ):
        _assert_same_sparse(call(ours), call(theirs))


def test_division_by_a_number_divides_the_values_bit_for_bit_as_torch():
    values = np.random.default_rng(13).standard_normal(1000)
    ours, theirs = _pair([np.arange(1000)], values, (1000,), "float32")
    for divisor in (3, 0.7, sg.tensor(3.0, dtype=sg.float32)):
        torch_divisor = torch.tensor(3.0) if isinstance(divisor, sg.Tensor) else divisor
        out, expected = ours / divisor, theirs / torch_divisor
        np.testing.assert_array_equal(out._values().numpy(), expected._values().numpy())


def test_to_changes_the_values_dtype():
    ours, theirs = _pair([[0, 1], [1, 0]], [1.0, 2.0], (2, 2), "float32")
    _assert_same_sparse(ours.double(), theirs.double())
    assert ours.to(sg.float64).dtype == sg.float64 and ours.float().dtype == sg.float32


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3)),
        lambda m: m.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], dtype=m.float64).coalesce(),
        lambda m: m.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], (3, 3), requires_grad=True),
        lambda m: m.mm(
            m.sparse_coo_tensor([[0], [1]], [1.0], (2, 2), requires_grad=True), m.ones(2, 2)
        ),
    ],
)
def test_repr_as_torch(make):
    assert repr(make(sg)) == repr(make(torch)).replace("torch.", "scratchgrad.")


def test_layout_and_flags():
    assert repr(sg.sparse_coo) == "scratchgrad.sparse_coo" and sg.ones(2).layout is sg.strided
    assert not sg.ones(2).is_sparse


def test_indices_and_values_need_a_coalesced_tensor():
    ours, theirs = _pair([[0, 0], [1, 1]], [1.0, 2.0], (2, 2))
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError) as expected:
            getattr(theirs, name)()
        with pytest.raises(RuntimeError, match="uncoalesced") as error:
            getattr(ours, name)()
        assert str(error.value) == str(expected.value).replace("indices", name)


@pytest.mark.parametrize(
    "indices, values, size, message",
    [
        ([[0, 1], [1, 0]], [1.0, 2.0, 3.0], (2, 2), "same nnz"),
        ([[0, 1], [1, 0]], [1.0, 2.0], (2, 2, 2), "len\\(size\\) == sparse_dim \\+ dense_dim"),
        ([0, 1], [1.0, 2.0], (2, 2), "sparse_dim x nnz"),
    ],
)
def test_bad_construction_raises_torchs_errors(indices, values, size, message):
    with pytest.raises(RuntimeError, match=message):
        torch.sparse_coo_tensor(indices, values, size)
    with pytest.raises(RuntimeError, match=message):
        sg.sparse_coo_tensor(indices, values, size)


def test_a_negative_index_with_the_size_inferred_raises_as_torch():
    for lib in (sg, torch):
        with pytest.raises(RuntimeError, match="found negative index -1 for dim 1"):
            lib.sparse_coo_tensor([[0, 1], [2, -1]], [1.0, 2.0])


@pytest.mark.parametrize("dim, error", [(2, IndexError), (-3, IndexError), ((0, -2), RuntimeError)])
def test_sparse_sum_over_a_bad_or_repeated_dim_raises_as_torch(dim, error):
    for lib in (sg, torch):
        s = lib.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], (2, 3))
        with pytest.raises(error, match="Dimension out of range|appears multiple times"):
            lib.sparse.sum(s, dim)


def test_bool_values_coalesce_and_densify_as_torch():
    ours, theirs = (
        lib.sparse_coo_tensor([[0, 2, 0, 1]], [True, False, True, False], (3,))
        for lib in (sg, torch)
    )
    assert ours.to_dense().tolist() == theirs.to_dense().tolist() == [True, False, False]
    ours, theirs = ours.coalesce(), theirs.coalesce()
    assert ours._indices().tolist() == theirs._indices().tolist()
    assert ours._values().tolist() == theirs._values().tolist() and ours.dtype == sg.bool


@pytest.mark.parametrize("index", [[[0, 5], [1, 0]], [[0, -1], [1, 0]]])
def test_indices_outside_the_size_raise(index):
    """(PyTorch checks only with check_invariants=True; NumPy would wrap -1 silently.)"""
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0"):
        sg.sparse_coo_tensor(index, [1.0, 2.0], (2, 2))


def test_mm_checks_shapes_and_dtypes():
    s = sg.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 3))
    with pytest.raises(RuntimeError, match=r"mm: shapes \(2, 3\) \(sparse\) and \(2, 2\)"):
        sg.sparse.mm(s, sg.ones(2, 2))
    with pytest.raises(RuntimeError, match="mm: expected tensors of the same dtype"):
        sg.sparse.mm(s, sg.ones(3, 2, dtype=sg.float64))


SPARSE = sg.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
DENSE = sg.ones(2, 2)
UNSUPPORTED = {
    "__add__": lambda: SPARSE + 1,
    "exp": lambda: SPARSE.exp(),
    "exp ": lambda: sg.exp(SPARSE),  # through NumPy: the array refuses
    "__getitem__": lambda: SPARSE[0],
    "view": lambda: SPARSE.view(4),
    "numpy": lambda: SPARSE.numpy(),
    "permute": lambda: SPARSE.T,
    "dense @ sparse": lambda: DENSE @ SPARSE,
    "dense and a sparse": lambda: sg.sparse.mm(DENSE, SPARSE),
    "__array__": lambda: np.asarray(SPARSE),
    "__sub__": lambda: SPARSE - DENSE,
    "mul by a tensor": lambda: SPARSE * DENSE,
    "keepdim": lambda: SPARSE.sum(0, keepdim=True),
    "item": lambda: SPARSE.item(),
    "__len__": lambda: len(SPARSE),
    "backward": lambda: SPARSE.backward(),
}


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_other_ops_raise_naming_the_op_and_sparse(name):
    with pytest.raises((RuntimeError, TypeError)) as error:
        UNSUPPORTED[name]()
    assert name.strip() in str(error.value) and "sparse" in str(error.value)


def test_jit_refuses_sparse_tensors():
    """A replay would keep the recorded indices of an adjacency."""
    x = sg.ones(2, 2)
    captured = sg.jit(lambda x: (SPARSE @ x).sum())
    captured(x)  # the eager first call
    with pytest.raises(sg.JitError, match="sparse.mm \\(sparse tensors' indices\\)"):
        captured(x)
    passed = sg.jit(lambda s, x: (s @ x).sum())
    passed(SPARSE, x)
    with pytest.raises(TypeError, match=r"jit: a sparse tensor argument.*to_dense"):
        passed(SPARSE, x)


class GraphConvolution(sg.nn.Module):
    """pygcn's layer: ``adj @ (x @ W)``, the adjacency passed sparse or dense."""

    def __init__(self):
        super().__init__()
        self.weight = sg.nn.Parameter(sg.randn(2, 3))

    def forward(self, x, adj):
        return adj @ (x @ self.weight)


def test_a_compiled_module_runs_calls_with_a_sparse_argument_eagerly():
    """As PyTorch's compiled modules do (pygcn's sparse adjacency); calls with dense ones
    record and replay between them. Each call's output and gradient are eager's (before, a
    sparse argument raised the jit's TypeError)."""
    sg.manual_seed(0)
    eager = GraphConvolution()
    compiled = sg.compile(GraphConvolution())
    compiled.load_state_dict({"_orig_mod." + k: v for k, v in eager.state_dict().items()})
    x = sg.randn(2, 2)
    for adj in [SPARSE.to_dense()] * 4 + [SPARSE, SPARSE.to_dense(), SPARSE]:
        outs = []
        for model in (eager, compiled):
            model.zero_grad()
            outs.append(model(x, adj))
            outs[-1].square().sum().backward()
        np.testing.assert_array_equal(outs[1].detach().numpy(), outs[0].detach().numpy())
        grads = compiled._orig_mod.weight.grad, eager.weight.grad
        np.testing.assert_array_equal(grads[0].numpy(), grads[1].numpy())


@pytest.mark.parametrize("dtype", [None, "float64"])
def test_zeros_and_empty_like_of_a_sparse_tensor_are_sparse_without_entries_as_torchs(dtype):
    """Of its sparse and dense dims (a hybrid tensor's too), coalesced; the factories that
    fill every entry raise in both (before, each gave a dense tensor)."""
    made = {}
    for m in (sg, torch):
        hybrid = m.sparse_coo_tensor([[0, 2]], m.ones(2, 3), (4, 3))
        options = {} if dtype is None else {"dtype": getattr(m, dtype)}
        made[m] = [
            m.zeros_like(m.ones(2, 3).to_sparse(), **options),
            m.empty_like(hybrid, requires_grad=True, **options),
        ]
    for ours, theirs in zip(made[sg], made[torch]):
        assert ours.is_sparse and tuple(ours.shape) == tuple(theirs.shape)
        assert (ours.sparse_dim(), ours.dense_dim()) == (theirs.sparse_dim(), theirs.dense_dim())
        assert ours._nnz() == theirs._nnz() == 0 and ours.is_coalesced() == theirs.is_coalesced()
        assert str(ours.dtype)[12:] == str(theirs.dtype)[6:]
        assert ours.requires_grad == theirs.requires_grad
        dense = [t.detach().to_dense().numpy() for t in (ours, theirs)]
        np.testing.assert_array_equal(*dense)
    for name, args in [("ones_like", ()), ("full_like", (2.0,)), ("rand_like", ()),
                       ("randn_like", ()), ("randint_like", (5,))]:  # fmt: skip
        for m in (sg, torch):
            with pytest.raises(NotImplementedError):
                getattr(m, name)(m.ones(2, 3).to_sparse(), *args)
