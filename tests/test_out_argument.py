"""``out=``: module functions (also of ``linalg``, ``fft`` and ``special``), ``cat``,
``stack``, ``where`` and the factories write their result into ``out`` and return it, as
PyTorch's (resized with a warning, cast never to a lower kind, no graph through it), compared
with PyTorch call by call."""

import warnings

import numpy as np
import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")

A = [[0.5, -1.5, 2.0], [1.0, 3.0, -0.25]]
B = [1.0, -2.0, 0.5]


def calls(lib, out):
    """name -> a call of ``lib`` writing into ``out(shape, dtype)``, returning (result, outs)."""
    a, b = lib.tensor(A), lib.tensor(B)
    ints = lib.tensor([[1, 2], [3, 4]])
    spd = lib.tensor([[4.0, 1.0], [1.0, 3.0]])  # (symmetric positive definite)
    lower = lib.linalg.cholesky(spd)

    def single(make, shape, dtype=lib.float32):
        o = out(shape, dtype)
        return make(o), (o,)

    def pair(make, shapes, dtypes):
        os = tuple(out(s, d) for s, d in zip(shapes, dtypes))
        return make(os), os

    return {
        "add": lambda: single(lambda o: lib.add(a, b, out=o), (2, 3)),
        "mul int into float": lambda: single(lambda o: lib.mul(ints, 3, out=o), (2, 2)),
        "exp": lambda: single(lambda o: lib.exp(a, out=o), (2, 3)),
        "matmul": lambda: single(lambda o: lib.matmul(a, b, out=o), (2,)),
        "sum dim": lambda: single(lambda o: lib.sum(a, 1, out=o), (2,)),
        "clamp": lambda: single(lambda o: lib.clamp(a, -1, 1, out=o), (2, 3)),
        "eq into float": lambda: single(lambda o: lib.eq(a, 1.0, out=o), (2, 3)),
        "where": lambda: single(lambda o: lib.where(a > 0, a, lib.zeros(3), out=o), (2, 3)),
        "cat": lambda: single(lambda o: lib.cat([a, a], 1, out=o), (2, 6)),
        "stack": lambda: single(lambda o: lib.stack([b, b], out=o), (2, 3)),
        "arange into float": lambda: single(lambda o: lib.arange(4, out=o), (4,)),
        "zeros into float64": lambda: single(lambda o: lib.zeros(2, 2, out=o), (2, 2), lib.float64),
        "full": lambda: single(lambda o: lib.full((3,), 7, out=o), (3,)),
        "linspace": lambda: single(lambda o: lib.linspace(0, 1, 5, out=o), (5,)),
        "eye": lambda: single(lambda o: lib.eye(3, out=o), (3, 3)),
        "max dim": lambda: pair(
            lambda os: lib.max(a, 1, out=os), [(2,), (2,)], [lib.float32, lib.int64]
        ),
        "sort": lambda: pair(
            lambda os: lib.sort(a, 1, out=os), [(2, 3), (2, 3)], [lib.float32, lib.int64]
        ),
        "linalg.inv": lambda: single(lambda o: lib.linalg.inv(a[:, :2], out=o), (2, 2)),
        "linalg.slogdet": lambda: pair(
            lambda os: lib.linalg.slogdet(a[:, :2], out=os), [(), ()], [lib.float32] * 2
        ),
        "fft.rfft": lambda: single(lambda o: lib.fft.rfft(a, out=o), (2, 2), lib.complex64),
        "special.erf": lambda: single(lambda o: lib.special.erf(a, out=o), (2, 3)),
        "hstack": lambda: single(lambda o: lib.hstack([a, a], out=o), (2, 6)),
        "bucketize": lambda: single(
            lambda o: lib.bucketize(a, b.sort().values, out=o), (2, 3), lib.int64
        ),
        "searchsorted int32": lambda: single(
            lambda o: lib.searchsorted(b.sort().values, a, out_int32=True, out=o), (2, 3), lib.int32
        ),
        "histc": lambda: single(lambda o: lib.histc(a, 4, out=o), (4,)),
        "mode": lambda: pair(
            lambda os: lib.mode(a.round(), 1, out=os), [(2,), (2,)], [lib.float32, lib.int64]
        ),
        "nanmedian dim": lambda: pair(
            lambda os: lib.nanmedian(a, 0, out=os), [(3,), (3,)], [lib.float32, lib.int64]
        ),
        "quantile": lambda: single(
            lambda o: lib.quantile(a, lib.tensor([0.2, 0.7]), 1, out=o), (2, 2)
        ),
        "nanquantile": lambda: single(lambda o: lib.nanquantile(a, 0.4, out=o), ()),
        "polar": lambda: single(lambda o: lib.polar(a.abs(), a, out=o), (2, 3), lib.complex64),
        "complex": lambda: single(lambda o: lib.complex(a, a * 2, out=o), (2, 3), lib.complex64),
        "tensordot": lambda: single(lambda o: lib.tensordot(a, a, ([1], [1]), out=o), (2, 2)),
        # (these took no out=)
        "vstack": lambda: single(lambda o: lib.vstack([a, b], out=o), (3, 3)),
        "row_stack": lambda: single(lambda o: lib.row_stack([b, b], out=o), (2, 3)),
        "dstack": lambda: single(lambda o: lib.dstack([a, a], out=o), (2, 3, 2)),
        "column_stack": lambda: single(lambda o: lib.column_stack([b, b], out=o), (3, 2)),
        "histogram": lambda: pair(
            lambda os: lib.histogram(a, 3, out=os), [(3,), (4,)], [lib.float32] * 2
        ),
        "isin": lambda: single(lambda o: lib.isin(a, b, out=o), (2, 3), lib.bool),
        "threshold": lambda: single(lambda o: lib.threshold(a, 0.7, -1.0, out=o), (2, 3)),
        "svd": lambda: pair(
            lambda os: lib.svd(spd, out=os), [(2, 2), (2,), (2, 2)], [lib.float32] * 3
        ),
        "qr": lambda: pair(lambda os: lib.qr(spd, out=os), [(2, 2), (2, 2)], [lib.float32] * 2),
        "slogdet": lambda: pair(lambda os: lib.slogdet(spd, out=os), [(), ()], [lib.float32] * 2),
        "cholesky": lambda: single(lambda o: lib.cholesky(spd, out=o), (2, 2)),
        "cholesky_inverse": lambda: single(lambda o: lib.cholesky_inverse(lower, out=o), (2, 2)),
        "cholesky_solve": lambda: single(
            lambda o: lib.cholesky_solve(a[:, :2], lower, out=o), (2, 2)
        ),
        "triangular_solve": lambda: pair(
            lambda os: lib.triangular_solve(a[:, :2], lower, upper=False, out=os),
            [(2, 2), (2, 2)],
            [lib.float32] * 2,
        ),
        "lu_solve": lambda: single(
            lambda o: lib.lu_solve(a, *lib.linalg.lu_factor(spd), out=o), (2, 3)
        ),
        "lu_unpack": lambda: pair(
            lambda os: lib.lu_unpack(*lib.linalg.lu_factor(spd), out=os),
            [(2, 2)] * 3,
            [lib.float32] * 3,
        ),
        "chain_matmul": lambda: single(lambda o: lib.chain_matmul(spd, spd, out=o), (2, 2)),
        "slice_scatter": lambda: single(
            lambda o: lib.slice_scatter(a, b[None], 0, 1, out=o), (2, 3)
        ),
        "hardshrink": lambda: single(lambda o: lib.hardshrink(a, 0.7, out=o), (2, 3)),
    }


CASES = list(calls(sg, None))
FACTORIES = {"arange into float", "zeros into float64", "full", "linspace", "eye"}


def empty_out(lib):
    return lambda shape, dtype: lib.empty(shape, dtype=dtype)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("given", ["right shape", "empty", "other shape"])
def test_the_result_is_written_into_out_as_torch(case, given):
    def out(lib):
        def make(shape, dtype):
            shape = {"right shape": shape, "empty": (0,), "other shape": (7,)}[given]
            return lib.full(shape, -9, dtype=dtype)

        return make

    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours, our_outs = calls(sg, out(sg))[case]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, their_outs = calls(torch, out(torch))[case]()
    results = ours if isinstance(ours, tuple) else (ours,)
    assert all(r is o for r, o in zip(results, our_outs))  # out itself comes back
    for o, t in zip(our_outs, their_outs):
        assert o.shape == tuple(t.shape)
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6)
    # PyTorch warns when an out with elements is resized, but not from its factories (save
    # arange, and twice for some ops): scratchgrad warns once per out, not from factories
    resized = [w for w in ours_warned if "resized" in str(w.message)]
    warned = given == "other shape" and case not in FACTORIES
    assert len(resized) == (len(our_outs) if warned else 0)
    assert all(w.filename == __file__ for w in resized)  # the warning names the user's line


def test_a_random_factory_draws_in_outs_dtype_from_the_same_stream():
    out = sg.zeros(3, dtype=sg.float64)
    sg.manual_seed(0)
    sg.randn(3, out=out)
    sg.manual_seed(0)
    np.testing.assert_array_equal(out.numpy(), sg.randn(3, dtype=sg.float64).numpy())
    ints = sg.zeros(5, dtype=sg.int64)
    assert sg.randint(0, 3, (5,), out=ints) is ints and ints.dtype == sg.int64


def test_out_may_be_an_input_or_a_view_and_its_version_counts_the_write():
    a = sg.tensor([1.0, 2.0])
    version = a._version
    assert sg.add(a, a, out=a) is a and a.tolist() == [2.0, 4.0] and a._version > version
    base = sg.zeros(6)
    sg.add(sg.ones(3), 1, out=base[::2])
    assert base.tolist() == [2.0, 0.0, 2.0, 0.0, 2.0, 0.0]


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_graph_through_out_is_refused_as_torch(lib):
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        lib.add(lib.ones(2, requires_grad=True), 1, out=lib.zeros(2))
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        lib.add(lib.ones(2), 1, out=lib.zeros(2, requires_grad=True))
    with lib.no_grad():  # outside grad mode it is an ordinary write
        out = lib.zeros(2, requires_grad=True)
        lib.add(lib.ones(2, requires_grad=True), 1, out=out)
    assert out.tolist() == [2.0, 2.0]


# outs= that PyTorch writes in grad mode though a graph would go through them: of ops
# without a derivative (a NotImplemented node, whose backward raises) and of composite ops
# (a recorded copy_, the gradient flowing through it); each gives (call, out, its backward)
GRAPH_OUTS = {
    "heaviside into a result": lambda lib, x, w: lib.heaviside(x, x, out=w * 1),
    "floor_divide into a result": lambda lib, x, w: lib.floor_divide(x, 2, out=w * 1),
    "softmax of an input that requires grad": lambda lib, x, w: lib.softmax(
        x.requires_grad_(), 0, out=lib.zeros(4)
    ),
    "zeros into a result": lambda lib, x, w: lib.zeros(4, out=w * 1),
    "arange into a result": lambda lib, x, w: lib.arange(4.0, out=w * 1),
    "linspace into a result": lambda lib, x, w: lib.linspace(0, 1, 4, out=w * 1),
    "full into a result": lambda lib, x, w: lib.full((4,), 2.0, out=w * 1),
    "quantile into a result": lambda lib, x, w: lib.quantile(x, 0.5, out=w[0] * 1),
    "quantile of an input that requires grad": lambda lib, x, w: lib.quantile(
        x.requires_grad_(), 0.5, out=lib.zeros(())
    ),
}


@pytest.mark.parametrize("call", GRAPH_OUTS.values(), ids=GRAPH_OUTS)
def test_an_out_in_a_graph_is_written_where_torch_writes_it(call):
    """torch.heaviside(x, x, out=w * 1) (w requiring grad) and its neighbours were refused
    here: PyTorch writes them, the out requiring grad, its backward raising for the ops
    without a derivative and flowing through the copy for the composite ones."""
    seen = []
    for lib in (torch, sg):
        x, w = lib.tensor([1.0, -2.0, 0.0, 3.0]), lib.ones(4, requires_grad=True)
        out = call(lib, x, w)
        try:
            out.sum().backward()
            grads = [t.grad.tolist() for t in (x, w) if t.grad is not None]
        except RuntimeError as error:
            grads = str(error)
        seen.append((out.tolist(), out.requires_grad, out.is_leaf, grads))
    assert seen[1][1:] == seen[0][1:]
    np.testing.assert_allclose(seen[1][0], seen[0][0], rtol=1e-6)


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_leaf_out_that_requires_grad_is_still_refused(lib):
    x, w = lib.tensor([1.0, -2.0]), lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments"):
        lib.heaviside(x, x, out=w)
    with pytest.raises(RuntimeError, match="out=... arguments"):
        lib.zeros(2, out=w)
    with pytest.raises(RuntimeError, match="leaf Variable"):  # (a copy_ into it)
        lib.quantile(x, 0.5, out=w[0].detach().requires_grad_())
    assert w.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_factory_sets_a_leaf_outs_requires_grad(lib):
    """As PyTorch's factories: requires_grad (False unless given) is set on a leaf out, also
    on one that required grad (outside grad mode, where it is taken)."""
    out = lib.ones(3)
    lib.zeros(3, out=out, requires_grad=True)
    assert out.requires_grad and out.is_leaf and out.tolist() == [0.0] * 3
    with lib.no_grad():
        out = lib.ones(3, requires_grad=True)
        lib.arange(3.0, out=out)
    assert not out.requires_grad and out.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "not a leaf"])
@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_histc_writes_an_out_that_requires_grad_as_torch(lib, leaf):
    """histc has no derivative, and PyTorch writes its out as a plain buffer, unchecked by
    autograd even in grad mode (it was refused here): the out keeps requires_grad and grad_fn."""
    out = lib.zeros(3, requires_grad=True)
    out = out if leaf else out * 1
    lib.histc(lib.tensor([1.0, 2.0, 3.0], requires_grad=True), 3, 0, 4, out=out)
    assert out.tolist() == [1.0, 1.0, 1.0] and out.requires_grad
    assert (out.grad_fn is None) == leaf


# histc(x, ..., out=part of x): (bins, min, max, the out as a part of x's memory)
HISTC_OVER_ITS_INPUT = {
    "its first entries, own range": (4, 0, 0, lambda x: x[:4]),
    "its last entries, own range": (3, 0, 0, lambda x: x[3:]),
    "every third entry": (2, 0, 4, lambda x: x[::3]),
    "the input itself": (4, 0, 4, lambda x: x),
    "a column": (2, 0, 4, lambda x: x.view(3, 2)[:, 0][:2]),
}


@pytest.mark.parametrize("name", HISTC_OVER_ITS_INPUT)
def test_histc_into_its_own_input_counts_as_pytorchs(name):
    """PyTorch's histc takes the range of the input, then zeroes its out, then counts the
    input: an out over the input's memory counts zeros there (the counts of the input as it
    was, here)."""
    bins, low, high, part = HISTC_OVER_ITS_INPUT[name]
    results = []
    for lib in (sg, torch):
        x = lib.tensor([1.0, 2.0, 2.0, 3.0, 0.5, 4.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (out=x: resized)
            counts = lib.histc(x, bins, low, high, out=part(x))
        results.append((counts.tolist(), x.tolist()))
    assert results[0] == results[1]


# calls of module functions that PyTorch gives no out= (with these arguments), each with an
# out of its result's dtype
NO_OUT_CALLS = {
    "isnan": lambda lib, x, o: lib.isnan(x, out=o.bool()),
    "count_nonzero dim": lambda lib, x, o: lib.count_nonzero(x, 0, out=o.long()),
    "clone": lambda lib, x, o: lib.clone(x, out=o),
    "flatten": lambda lib, x, o: lib.flatten(x, out=o),
    "transpose": lambda lib, x, o: lib.transpose(x, 0, 1, out=o),
    "trace": lambda lib, x, o: lib.trace(x, out=o),
    "det": lambda lib, x, o: lib.det(x, out=o),
    "relu": lambda lib, x, o: lib.relu(x, out=o),
    "roll": lambda lib, x, o: lib.roll(x, 1, out=o),
    "dist": lambda lib, x, o: lib.dist(x, x, out=o),
    "argwhere": lambda lib, x, o: lib.argwhere(x, out=o.long()),
    "unique": lambda lib, x, o: lib.unique(x, out=o),
    "masked_fill": lambda lib, x, o: lib.masked_fill(x, x > 1, 0.0, out=o),
    "repeat_interleave": lambda lib, x, o: lib.repeat_interleave(x, 2, out=o),
    "sum of all entries": lambda lib, x, o: lib.sum(x, out=o),
    "prod of all entries": lambda lib, x, o: lib.prod(x, out=o),
    "median of all entries": lambda lib, x, o: lib.median(x, out=o),
    "argsort unstable": lambda lib, x, o: lib.argsort(x, out=o.long()),
    "bernoulli with p": lambda lib, x, o: lib.bernoulli(x, 0.5, out=o),
    "where(condition)": lambda lib, x, o: lib.where(x > 1, out=o.long()),
    "where of a number": lambda lib, x, o: lib.where(x > 1, x, 0.0, out=o),
}
# and the same functions with the arguments that take it
OUT_CALLS = {
    "sum along a dim": lambda lib, x, o: lib.sum(x, 0, out=o),
    "prod along a dim": lambda lib, x, o: lib.prod(x, dim=0, out=o),
    "median along a dim": lambda lib, x, o: lib.median(x, 0, out=(o, o.long())),
    "argsort stable": lambda lib, x, o: lib.argsort(x, stable=True, out=o.long()),
    "bernoulli": lambda lib, x, o: lib.bernoulli(x / 4, out=o),
    "where": lambda lib, x, o: lib.where(x > 1, x, -x, out=o),
    "linalg.det": lambda lib, x, o: lib.linalg.det(x, out=o),
}


@pytest.mark.parametrize("call", NO_OUT_CALLS.values(), ids=NO_OUT_CALLS)
@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_the_functions_without_out_refuse_it_as_torchs(lib, call):
    """torch.isnan(x, out=...), torch.sum(x, out=...) (of all entries) and their neighbours
    are TypeErrors, as PyTorch's (they took out= here, a method's module name given it)."""
    x, o = lib.tensor([[1.0, 2.0], [3.0, 4.0]]), lib.empty(0)
    with pytest.raises(
        TypeError, match="out|dim|Tensor"
    ):  # (median: "missing ... dim", where: "Tensor")
        call(lib, x, o)
    assert o.shape == (0,)


@pytest.mark.parametrize("call", OUT_CALLS.values(), ids=OUT_CALLS)
def test_their_overloads_with_out_take_it_as_torchs(call):
    results = []
    for lib in (torch, sg):
        lib.manual_seed(0)  # (bernoulli: compared by its shape only, drawn from other streams)
        x, o = lib.tensor([[1.0, 2.0], [3.0, 4.0]]), lib.empty(0)
        result = call(lib, x, o)
        results.append([t.tolist() for t in result] if isinstance(result, tuple) else o.tolist())
    if call is OUT_CALLS["bernoulli"]:
        results = [np.shape(r) for r in results]
    np.testing.assert_allclose(np.array(results[1], float), np.array(results[0], float))


@pytest.mark.parametrize("name", ["histc", "quantile", "nanquantile", "nanmedian", "mode"])
@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_the_methods_take_no_out_as_torchs(lib, name):
    """x.histc(...) and its neighbours are methods without out=, as PyTorch's (the functions
    of those names take it; the methods took it too)."""
    x = lib.tensor([1.0, 2.0, 3.0])
    call = {
        "histc": lambda: x.histc(3, out=lib.zeros(3)),
        "quantile": lambda: x.quantile(0.5, out=lib.zeros(())),
        "nanquantile": lambda: x.nanquantile(0.5, out=lib.zeros(())),
        "nanmedian": lambda: x.nanmedian(0, out=(lib.zeros(()), lib.zeros((), dtype=lib.int64))),
        "mode": lambda: x.mode(0, out=(lib.zeros(()), lib.zeros((), dtype=lib.int64))),
    }[name]
    with pytest.raises(TypeError, match="out"):
        call()


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_a_cast_to_a_lower_kind_is_refused_and_out_is_unchanged(lib):
    out = lib.full((2,), 5, dtype=lib.int64)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        lib.add(lib.ones(2), 0.5, out=out)
    assert out.tolist() == [5, 5]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        lib.exp(lib.ones(2), out=lib.zeros(2, dtype=lib.bool))


def test_a_refused_out_of_several_leaves_the_others_unwritten():
    values, indices = sg.zeros(()), sg.zeros((), dtype=sg.bool)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool|bool"):
        sg.max(sg.tensor([1.0, 3.0, 2.0]), 0, out=(values, indices))
    assert values.item() == 0.0


@pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])
def test_out_must_be_a_tensor(lib):
    with pytest.raises(TypeError, match="argument 'out' must be"):
        lib.add(lib.ones(2), 1, out=[0.0, 0.0])


# (name, call(lib, x) writing into an out that overlaps what it reads, x a 1-d float64 tensor
# of 12 entries); PyTorch refuses a partial overlap, as for in-place ops
OVERLAPPING_OUTS = {
    "add, out one entry later": lambda lib, x: lib.add(x[1:], 1, out=x[:-1]),
    "mul, out over both inputs": lambda lib, x: lib.mul(x[:3], x[3:6], out=x[1:4]),
    "exp": lambda lib, x: lib.exp(x[1:], out=x[:-1]),
    "sub of a number first": lambda lib, x: lib.remainder(x[:6], x[1:7], out=x[2:8]),
    "float_power": lambda lib, x: lib.float_power(x[1:], 2, out=x[:-1]),
    "polygamma": lambda lib, x: lib.polygamma(1, x[1:], out=x[:-1]),
    "clamp, a tensor bound": lambda lib, x: lib.clamp(x[:6], min=x[6:], out=x[1:7]),
    "where": lambda lib, x: lib.where(x[:6] > 0.5, x[:6], x[6:], out=x[1:7]),
    "cat": lambda lib, x: lib.cat([x[:2], x[2:4]], out=x[1:5]),
    "stack": lambda lib, x: lib.stack([x[:2], x[2:4]], out=x[1:5].view(2, 2)),
    "cumsum": lambda lib, x: lib.cumsum(x[1:], 0, out=x[:-1]),
    "special.expit": lambda lib, x: lib.special.expit(x[1:], out=x[:-1]),
    "the out transposed": lambda lib, x: lib.add(x[:4].view(2, 2), 1, out=x[:4].view(2, 2).t()),
    "max along a dim, values": lambda lib, x: lib.max(
        x.view(3, 4), 1, out=(x[1:4], lib.zeros(3, dtype=lib.int64))
    ),
    "min along a dim by name, values": lambda lib, x: lib.min(
        x.view(3, 4), dim=1, out=(x[:3], lib.zeros(3, dtype=lib.int64))
    ),
    "max along a dim, indices": lambda lib, x: _max_into_its_indices(lib, (x * 13).long()),
    "max of another tensor": lambda lib, x: lib.max(x[:4], x[4:8], out=x[2:6]),
    "linalg.cross": lambda lib, x: lib.linalg.cross(x[:3], x[3:6], out=x[2:5]),
    # cross refuses an out that is its input too (PyTorch's assert_no_overlap)
    "linalg.cross into its input": lambda lib, x: lib.linalg.cross(x[:3], x[3:6], out=x[:3]),
    "cross into its second input": lambda lib, x: lib.cross(x[:3], x[3:6], dim=0, out=x[3:6]),
    "hstack": lambda lib, x: lib.hstack([x[:2], x[2:4]], out=x[1:5]),
    "mode, values": lambda lib, x: lib.mode(x.view(3, 4), 1, out=(x[1:4], lib.zeros(3).long())),
    "nanmedian along a dim, values": lambda lib, x: lib.nanmedian(
        x.view(3, 4), 1, out=(x[1:4], lib.zeros(3, dtype=lib.int64))
    ),
    "kthvalue into its input": lambda lib, x: lib.kthvalue(
        x.view(12, 1), 1, 1, keepdim=True, out=(x.view(12, 1), lib.zeros(12, 1, dtype=lib.int64))
    ),
}


def _max_into_its_indices(lib, ints):
    values = lib.zeros(3, dtype=lib.int64)
    lib.max(ints.view(3, 4), 1, out=(values, ints[1:4]))


def _kthvalue_into_its_indices(lib):
    ints = lib.zeros(12, 1, dtype=lib.int64)
    lib.kthvalue(ints, 1, 1, keepdim=True, out=(lib.zeros(12, 1, dtype=lib.int64), ints))


# PyTorch writes these without the check (a whole out, a disjoint one, or an op it leaves alone)
ACCEPTED_OUTS = {
    "add into its input": lambda lib, x: lib.add(x, 1, out=x),
    "mul into its second input": lambda lib, x: lib.mul(x[:6], x[6:], out=x[6:]),
    "add into a disjoint slice": lambda lib, x: lib.add(x[:6], 1, out=x[6:]),
    "matmul into its input": lambda lib, x: lib.matmul(x[:2], x[:4].view(2, 2), out=x[4:6]),
    # (into its input itself: over a shifted slice, PyTorch's result depends on the width of
    # the CPU's vectors, its kernel reading entries it wrote)
    "softmax into its input": lambda lib, x: lib.softmax(x[:6], 0, out=x[:6]),
    "max of all entries": lambda lib, x: lib.max(x[:6], out=x[1:2].view(())),
    "kthvalue's indices into its input": lambda lib, x: _kthvalue_into_its_indices(lib),
    "quantile": lambda lib, x: lib.quantile(x[:4], lib.tensor([0.1, 0.2]).double(), out=x[2:4]),
    "tensordot": lambda lib, x: lib.tensordot(
        x[:4].view(2, 2), x[:4].view(2, 2), 1, out=x[2:6].view(2, 2)
    ),
    "max along a dim into its input": lambda lib, x: lib.max(
        x.view(12, 1), 1, keepdim=True, out=(x.view(12, 1), lib.zeros(12, 1, dtype=lib.int64))
    ),
}


@pytest.mark.parametrize("call", OVERLAPPING_OUTS.values(), ids=OVERLAPPING_OUTS)
def test_an_out_partly_overlapping_an_input_is_refused_as_torch(call):
    for lib in (torch, sg):
        x = lib.arange(1.0, 13.0, dtype=lib.float64) / 13
        before = x.tolist()
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            call(lib, x)
        assert x.tolist() == before


@pytest.mark.parametrize("call", ACCEPTED_OUTS.values(), ids=ACCEPTED_OUTS)
def test_an_out_that_is_an_input_or_apart_from_it_is_written_as_torch(call):
    written = []
    for lib in (torch, sg):
        x = lib.arange(1.0, 13.0, dtype=lib.float64) / 13
        call(lib, x)
        written.append(x.tolist())
    np.testing.assert_allclose(written[1], written[0], rtol=1e-12)


# (name, call(lib, out)) of ops whose out must have the result's dtype in PyTorch, though a
# wider one would hold it
EXACT_OUT_DTYPES = {
    "round into float64": lambda lib, o: lib.round(lib.tensor([1.5, 2.5]), out=o(lib.float64)),
    "floor into float64": lambda lib, o: lib.floor(lib.tensor([1.5, 2.5]), out=o(lib.float64)),
    "abs of ints into int32": lambda lib, o: lib.abs(lib.tensor([1, -2]), out=o(lib.int32)),
    "sign into float16": lambda lib, o: lib.sign(lib.tensor([1.5, -2.5]), out=o(lib.float16)),
    "argmax into float32": lambda lib, o: lib.argmax(lib.tensor([1.5, 2.5]), out=o(lib.float32)),
    "isposinf into float32": lambda lib, o: lib.isposinf(lib.tensor([1.0]), out=o(lib.float32)),
    "any into int64": lambda lib, o: lib.any(lib.tensor([1.0, 0.0]), out=o(lib.int64)),
    "matmul into float64": lambda lib, o: lib.matmul(lib.ones(2), lib.ones(2), out=o(lib.float64)),
    "conj_physical into float64": lambda lib, o: lib.conj_physical(lib.ones(2), out=o(lib.float64)),
    "bucketize into int32": lambda lib, o: lib.bucketize(
        lib.ones(2), lib.ones(2), out=o(lib.int32)
    ),
    "histc into float64": lambda lib, o: lib.histc(lib.ones(2), 2, out=o(lib.float64)),
    "quantile into float64": lambda lib, o: lib.quantile(lib.ones(2), 0.5, out=o(lib.float64)),
    "polar into complex128": lambda lib, o: lib.polar(
        lib.ones(2), lib.ones(2), out=o(lib.complex128)
    ),
    "complex into complex128": lambda lib, o: lib.complex(
        lib.ones(2), lib.ones(2), out=o(lib.complex128)
    ),
    "tensordot into float64": lambda lib, o: lib.tensordot(
        lib.ones(2), lib.ones(2), 1, out=o(lib.float64)
    ),
    "mode's values into float64": lambda lib, o: lib.mode(
        lib.ones(2), out=(o(lib.float64), lib.zeros(2).long())
    ),
    "isin into int64": lambda lib, o: lib.isin(lib.ones(2), lib.ones(2), out=o(lib.int64)),
    "lu_solve into float64": lambda lib, o: lib.lu_solve(
        lib.ones(2, 1), *lib.linalg.lu_factor(lib.eye(2)), out=o(lib.float64)
    ),
    "linalg.lu_solve into float64": lambda lib, o: lib.linalg.lu_solve(
        *lib.linalg.lu_factor(lib.eye(2)), lib.ones(2, 1), out=o(lib.float64)
    ),
    "chain_matmul into float64": lambda lib, o: lib.chain_matmul(
        lib.eye(2), lib.eye(2), out=o(lib.float64)
    ),
    "linalg.multi_dot into float64": lambda lib, o: lib.linalg.multi_dot(
        [lib.eye(2), lib.eye(2)], out=o(lib.float64)
    ),
    "slice_scatter into float64": lambda lib, o: lib.slice_scatter(
        lib.ones(2), lib.ones(2), out=o(lib.float64)
    ),
    "hardshrink into float64": lambda lib, o: lib.hardshrink(lib.ones(2), out=o(lib.float64)),
}


@pytest.mark.parametrize("join", ["cat", "stack", "vstack", "hstack", "column_stack"])
def test_a_join_into_an_out_of_a_lower_kind_is_a_type_error_as_torchs(join):
    for lib in (torch, sg):
        with pytest.raises(TypeError, match="can't be cast to the desired output type"):
            getattr(lib, join)([lib.ones(2, 2)], out=lib.zeros(2, 2, dtype=lib.int64))


def test_lu_copies_into_outs_of_any_dtype_as_torchs():
    """torch.lu, a Python function, resize_s and copy_s each out (no dtype check, no
    warning): float32 into float64 and int64 outs."""
    results = []
    for lib in (torch, sg):
        outs = (lib.full((5,), -1, dtype=lib.int64), lib.empty(0, dtype=lib.int64))
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            warnings.filterwarnings("ignore", "torch.lu is deprecated")
            warnings.filterwarnings("ignore", ".*lu.* is deprecated")
            returned = lib.lu(lib.tensor([[1.5, 2.0], [3.0, 4.0]]), out=outs)
        assert returned[0] is outs[0] and returned[1] is outs[1]
        results.append(
            [o.tolist() for o in outs] + [str(o.dtype).split(".")[-1][-5:] for o in outs]
        )
    assert results[0] == results[1]
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 3"):
        sg.lu(sg.eye(2), out=(sg.empty(0), sg.empty(0), sg.empty(0)))


@pytest.mark.parametrize("call", EXACT_OUT_DTYPES.values(), ids=EXACT_OUT_DTYPES)
def test_an_out_of_another_dtype_is_refused_where_torch_refuses_it(call):
    with pytest.raises(RuntimeError):  # (in words that differ from op to op)
        call(torch, lambda dtype: torch.zeros(2, dtype=dtype))
    with pytest.raises(RuntimeError, match="expected out tensor to have dtype"):
        call(sg, lambda dtype: sg.zeros(2, dtype=dtype))


def test_a_wider_out_is_still_taken_by_the_ops_that_cast():
    for lib in (torch, sg):
        out = lib.zeros(2, dtype=lib.float64)
        lib.exp(lib.zeros(2), out=out)
        lib.add(lib.tensor([1, 2]), 1, out=out)
        assert out.tolist() == [2.0, 3.0]


def test_nanmedian_of_all_entries_takes_no_out_as_torch():
    for lib in (torch, sg):
        with pytest.raises(TypeError, match="dim"):
            lib.nanmedian(lib.ones(2), out=lib.zeros(()))
