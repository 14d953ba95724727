"""The "meta" device (``scratchgrad/meta.py``) against PyTorch's: tensors with a shape and a dtype
and no data, made there or moved there, printed, deep-copied, and used as the stateless template
of ``functional_call``; reading their values and computing on them raise."""

import copy
import tracemalloc

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.func import functional_call
from scratchgrad.meta import NO_DATA


def _made(lib, how: str):
    return {
        "empty": lambda: lib.empty(2, 3, device="meta"),
        "zeros": lambda: lib.zeros((4,), dtype=lib.float64, device="meta"),
        "ones": lambda: lib.ones((), device="meta"),
        "full": lambda: lib.full((2, 2), 7, device="meta"),
        "tensor": lambda: lib.tensor([1.0, 2.0], device="meta"),
        "to": lambda: lib.ones(3, 1, dtype=lib.int64).to("meta"),
        "empty_like": lambda: lib.empty_like(lib.ones(5), device="meta"),
    }[how]()


@pytest.mark.parametrize("how", ["empty", "zeros", "ones", "full", "tensor", "to", "empty_like"])
def test_meta_tensors_have_torchs_shape_dtype_device_and_repr(how):
    ours, theirs = _made(sg, how), _made(torch, how)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert str(ours.device) == str(theirs.device) == "meta"
    assert ours.is_meta and theirs.is_meta
    assert repr(ours) == repr(theirs).replace("torch.", "scratchgrad.")


def test_a_module_moved_to_meta_keeps_its_parameters_shapes_and_flags():
    model = sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.BatchNorm1d(4))
    before = model[0].weight
    model.to("meta")
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).to("meta")
    assert model[0].weight is before  # moved in place, as every .to
    assert list(model.state_dict()) == list(reference.state_dict())
    for (name, ours), theirs in zip(model.state_dict().items(), reference.state_dict().values()):
        assert ours.is_meta and tuple(ours.shape) == tuple(theirs.shape), name
    assert all(p.requires_grad and isinstance(p, sg.nn.Parameter) for p in model.parameters())
    assert repr(model[0].weight) == repr(reference[0].weight)
    twin = copy.deepcopy(model)
    assert twin[0].weight is not model[0].weight and twin[0].weight.is_meta


def test_reading_values_raises_as_in_pytorch():
    for lib in (sg, torch):
        x = lib.empty(2, 3, device="meta")
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            x.cpu()
        with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
            x.numpy()


def _signature(t) -> tuple:
    """What a meta tensor has: its shape and its dtype (by name), and that it is on "meta"."""
    assert t.is_meta, t
    return tuple(t.shape), str(t.dtype).split(".")[-1]


def _on_meta(lib, shape, dtype):
    return lib.empty(shape, dtype=getattr(lib, dtype), device="meta")


def _same_as_torch(compute, *inputs):
    """``compute(lib, *tensors)`` on meta tensors of ``inputs`` ((shape, dtype) pairs, or plain
    values) gives PyTorch's meta result: the same shape and dtype (each, for several)."""
    results = []
    for lib in (sg, torch):
        tensors = [_on_meta(lib, *x) if isinstance(x, tuple) else x for x in inputs]
        out = compute(lib, *tensors)
        results.append([_signature(t) for t in (out if isinstance(out, (tuple, list)) else [out])])
    assert results[0] == results[1]


BINARY = {
    "add": lambda lib, x, y: x + y,
    "sub": lambda lib, x, y: x - y,
    "mul": lambda lib, x, y: x * y,
    "div": lambda lib, x, y: x / y,
    "pow": lambda lib, x, y: x**y,
    "floordiv": lambda lib, x, y: x // y,
    "lt": lambda lib, x, y: x < y,
    "eq": lambda lib, x, y: x == y,
    "maximum": lambda lib, x, y: lib.maximum(x, y),
    "where": lambda lib, x, y: lib.where(x > 0, x, y),
}
SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (5,)), ((0, 3), (1, 3))]
DTYPE_PAIRS = [("float32", "float32"), ("float32", "float64"), ("int64", "float32"),
               ("int32", "int64"), ("bool", "int64"), ("float16", "int32")]  # fmt: skip


def _skip_where_pytorch_has_no_cpu_answer(op, dtypes, number=None):
    """Cases with no PyTorch CPU result to mirror, so not a question for the meta device."""
    if op == "sub" and (("bool" in dtypes) or number is True):
        pytest.skip("PyTorch's CPU refuses to subtract bools (its meta kernel does not check)")
    if op == "maximum" and number is not None:
        pytest.skip("torch.maximum takes no Python numbers")
    if op in ("pow", "floordiv") and dtypes == ("bool",) and number is True:
        pytest.skip("PyTorch's CPU has no bool kernel for these")


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=str)
def test_binary_ops_broadcast_and_promote_as_torchs_meta(op, shapes, dtypes):
    _skip_where_pytorch_has_no_cpu_answer(op, dtypes)
    _same_as_torch(BINARY[op], *zip(shapes, dtypes))


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int16", "bool"])
@pytest.mark.parametrize("number", [2, 2.5, True], ids=["int", "float", "bool"])
def test_python_numbers_promote_as_with_torchs_meta(op, dtype, number):
    _skip_where_pytorch_has_no_cpu_answer(op, (dtype,), number)
    _same_as_torch(BINARY[op], ((2, 3), dtype), number)
    if op != "where":
        _same_as_torch(lambda lib, x, y: BINARY[op](lib, y, x), ((2, 3), dtype), number)


UNARY = {
    "exp": lambda lib, x: x.exp(),
    "log": lambda lib, x: lib.log(x),
    "sin": lambda lib, x: x.sin(),
    "sqrt": lambda lib, x: x.sqrt(),
    "abs": lambda lib, x: abs(x),
    "neg": lambda lib, x: -x,
    "sigmoid": lambda lib, x: x.sigmoid(),
    "relu": lambda lib, x: lib.relu(x),
    "softmax": lambda lib, x: x.softmax(-1),
    "float": lambda lib, x: x.float(),
    "double": lambda lib, x: x.double(),
    "to int64": lambda lib, x: x.to(lib.int64),
    "to float16": lambda lib, x: x.to(dtype=lib.float16),
    "clamp": lambda lib, x: x.clamp(0, 1),
    "isnan": lambda lib, x: x.isnan(),
}


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_unary_ops_as_torchs_meta(op, dtype):
    if dtype == "int64" and op == "softmax":
        pytest.skip("PyTorch's CPU has no integer softmax (its meta kernel does not check)")
    _same_as_torch(UNARY[op], ((2, 0, 3) if op == "float" else (2, 3), dtype))


REDUCTIONS = {
    "sum": lambda lib, x: x.sum(),
    "sum dim": lambda lib, x: x.sum(dim=1),
    "sum dims keepdim": lambda lib, x: x.sum((0, -1), keepdim=True),
    "mean": lambda lib, x: x.float().mean(-1),
    "prod": lambda lib, x: x.prod(0),
    "max": lambda lib, x: x.max(),
    "max dim": lambda lib, x: x.max(dim=1, keepdim=True),
    "argmax": lambda lib, x: x.argmax(dim=-1),
    "amin": lambda lib, x: x.amin((0, 1)),
    "any": lambda lib, x: x.any(1),
    "all": lambda lib, x: x.all(),
    "var": lambda lib, x: x.float().var(0),
    "cumsum": lambda lib, x: x.cumsum(2),
    "logsumexp": lambda lib, x: x.float().logsumexp(1),
    "norm": lambda lib, x: x.float().norm(dim=-1),
}


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float32", "int64", "int16", "bool"])
def test_reductions_as_torchs_meta(op, dtype):
    if dtype == "bool" and op == "argmax":
        pytest.skip("PyTorch's CPU refuses argmax of bools (its meta kernel does not check)")
    _same_as_torch(REDUCTIONS[op], ((4, 5, 3), dtype))


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((0, 3), (3, 2))]  # fmt: skip


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64")], ids=str)
def test_matmul_as_torchs_meta(shapes, dtypes):
    _same_as_torch(lambda lib, x, y: x @ y, *zip(shapes, dtypes))


def test_a_matmul_of_mismatched_shapes_raises_on_meta_as_on_the_cpu():
    for device, error in (("cpu", RuntimeError), ("meta", RuntimeError)):
        x, y = sg.empty(2, 3, device=device), sg.empty(4, 5, device=device)
        with pytest.raises(error, match=r"\(2, 3\).*\(4, 5\)"):
            x @ y


MOVEMENT = {
    "outer": lambda lib, x: lib.outer(x[0], x[1]),
    "einsum": lambda lib, x: lib.einsum("ij,kj->ik", x, x),
    "cat": lambda lib, x: lib.cat((x, x[:1]), dim=0),
    "cat last": lambda lib, x: lib.cat([x, x.double()], dim=-1),
    "stack": lambda lib, x: lib.stack((x, x), dim=1),
    "reshape": lambda lib, x: x.reshape(3, -1),
    "view": lambda lib, x: x.view(6, 1),
    "transpose": lambda lib, x: x.transpose(0, 1),
    "permute": lambda lib, x: x[None].permute(2, 0, 1),
    "mT": lambda lib, x: x.mT,
    "flatten": lambda lib, x: x.flatten(),
    "unsqueeze": lambda lib, x: x.unsqueeze(1),
    "expand": lambda lib, x: x[:, None].expand(2, 4, 3),
    "chunk": lambda lib, x: x.chunk(3, dim=-1),
    "index": lambda lib, x: x[1],
    "slice": lambda lib, x: x[:, 1:],
    "step slice": lambda lib, x: x[..., ::2, None],
    "index list": lambda lib, x: x[[1, 0, 1]],
    "index tensor": lambda lib, x: x[:, lib.tensor([[0, 2], [1, 1]])],
    "index meta tensor": lambda lib, x: x[lib.zeros(4, dtype=lib.int64, device="meta")],
    # indices that leave dims after them untouched (carried over, not looped over)
    "index two dims": lambda lib, x: x[None].expand(4, 2, 3)[[0, 3], 1],
    "index after None": lambda lib, x: x[None, [1, 0]],
    "bool scalar": lambda lib, x: x[True],
    "ellipsis and list": lambda lib, x: x[..., [0, 2]],
    "flip": lambda lib, x: x.flip(0),
    "pad": lambda lib, x: lib.nn.functional.pad(x, (1, 2)),
    "tril": lambda lib, x: x.tril(),
}


@pytest.mark.parametrize("op", MOVEMENT)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_joins_views_and_indexing_as_torchs_meta(op, dtype):
    _same_as_torch(MOVEMENT[op], ((2, 3), dtype))


def _rope(lib, dim=8, length=16, theta=10000.0):
    inv_freq = 1.0 / (theta ** (lib.arange(0, dim, 2).float() / dim))
    angles = lib.outer(lib.arange(length).float(), inv_freq)
    angles = lib.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin(), lib.arange(length)[:, None] < lib.arange(length)


@pytest.fixture
def meta_by_default():
    """Both libraries make tensors on "meta" unless told otherwise, for the test's length (then
    no default again: PyTorch's "cpu" would leave a device mode on, which turns off its
    Transformer fast path in the tests after this one)."""
    for lib in (sg, torch):
        lib.set_default_device("meta")
    yield
    for lib in (sg, torch):
        lib.set_default_device(None)


def test_arange_expressions_as_torchs_meta(meta_by_default):
    _same_as_torch(_rope)
    _same_as_torch(lambda lib: lib.linspace(0, 1, 5) * lib.arange(5) - 2 ** lib.arange(5))
    _same_as_torch(lambda lib: lib.randn(2, 3) + lib.rand(3, dtype=lib.float64))


LAYERS = {
    "linear": (lambda lib, x: lib.nn.Linear(3, 4)(x), ((5, 3), "float32")),
    "layer norm": (lambda lib, x: lib.nn.LayerNorm(3)(x).relu(), ((2, 5, 3), "float32")),
    "embedding": (lambda lib, i: lib.nn.Embedding(10, 4)(i), ((2, 5), "int64")),
    "conv2d": (lambda lib, x: lib.nn.Conv2d(2, 4, 3, padding=1)(x), ((1, 2, 5, 6), "float32")),
    "causal attention": (
        lambda lib, x: lib.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True),
        ((2, 5, 4), "float32"),
    ),
    "mse loss": (lambda lib, x: lib.nn.functional.mse_loss(x, x.sin()), ((5, 3), "float32")),
}


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_run_on_meta_as_torchs(layer, meta_by_default):
    compute, x = LAYERS[layer]
    _same_as_torch(compute, x)


def test_meta_ops_on_huge_shapes_allocate_nothing_of_their_size():
    """A terabyte-sized model's arithmetic on "meta" runs in a few kilobytes: stand-ins of one
    element, zero strides or zero-byte elements, never the result."""
    tracemalloc.start()
    try:
        x = sg.empty(2**20, 2**20, device="meta", requires_grad=True)
        out = ((x * 2 + 1).exp() @ x.T).sum(0, keepdim=True) / x.amax()
        picked = x[sg.zeros(2**20, dtype=sg.int64)].reshape(-1, 2**10).transpose(0, 1)
        loss = out.mean() + picked.float().cumsum(0).std()
        loss.backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert _signature(out) == ((1, 2**20), "float32")
    assert _signature(picked) == ((2**10, 2**30), "float32")
    assert _signature(x.grad) == ((2**20, 2**20), "float32")
    assert peak < 2**24  # (an index of 2**20 int64 is 8 MiB: the rest is small)


def test_ops_that_would_need_values_raise():
    x = sg.empty(2, 3, device="meta")
    for read in (lambda: (x + 1).sum().item(), lambda: bool(x.sum() > 0), lambda: float(x.sum()),
                 lambda: x.tolist()):  # fmt: skip
        with pytest.raises((NotImplementedError, RuntimeError), match="meta"):
            read()
    with pytest.raises(NotImplementedError, match=NO_DATA):
        (x * 2).cpu()
    for shaped_by_values in (x.nonzero, lambda: x[x > 0], lambda: x.unique()):
        with pytest.raises(NotImplementedError, match="meta device"):
            shaped_by_values()
    assert repr(x * 2) == "tensor(..., device='meta', size=(2, 3))"


def test_meta_and_cpu_tensors_mix_as_in_torch():
    for lib in (sg, torch):
        x = lib.empty(2, 3, device="meta")
        assert _signature(x * lib.tensor(2.0)) == ((2, 3), "float32")  # a CPU scalar may join
        with pytest.raises(RuntimeError):
            x + lib.ones(3)
        with pytest.raises(RuntimeError):
            lib.cat((x, lib.ones(2, 3)))


def _build_on_meta(lib):
    with lib.device("meta"):
        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Conv1d(2, 3, 3), lib.nn.GRU(3, 4))
        lib.nn.init.normal_(model[0].weight)
        lib.nn.init.kaiming_uniform_(model[1].weight)
        lib.nn.init.trunc_normal_(model[1].bias)
        lib.nn.init.orthogonal_(model[2].weight_hh_l0)
        noise = lib.randn(3, 4) + lib.randint(0, 5, (3, 4)) + lib.rand(4) + lib.randperm(4)
        noise = lib.nn.functional.dropout(noise) + lib.rand_like(noise)
        return model, noise


def test_randomness_on_meta_leaves_the_seeded_stream_as_torch_does():
    """Random draws and initialisations on the meta device give meta tensors and draw nothing
    from the CPU's generator: the numbers drawn next are those drawn without them."""
    for lib in (sg, torch):
        lib.manual_seed(0)
        expected = lib.rand(5).numpy()
        lib.manual_seed(0)
        model, noise = _build_on_meta(lib)
        assert _signature(noise) == ((3, 4), "float32")
        assert all(p.is_meta for p in model.parameters())
        np.testing.assert_array_equal(lib.rand(5).numpy(), expected)


def test_autograd_records_and_runs_backward_on_meta_as_torch():
    names = []
    for lib in (sg, torch):
        w = lib.empty(3, 4, device="meta", requires_grad=True)
        x = lib.empty(5, 3, device="meta")
        loss = (x @ w).tanh().mean()
        names.append((loss.grad_fn.name(), loss.requires_grad, _signature(loss)))
        loss.backward()
        assert _signature(w.grad) == ((3, 4), "float32")
    assert names[0] == names[1]


def test_functional_call_runs_a_meta_template_with_real_parameters():
    """PyTorch's model-ensembling recipe: a copy on "meta" as the stateless template."""
    sg.manual_seed(0)
    model = sg.nn.Sequential(sg.nn.Linear(3, 5), sg.nn.Tanh(), sg.nn.Linear(5, 2))
    template = copy.deepcopy(model).to("meta")
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    x = sg.randn(4, 3)
    out = functional_call(template, params, (x,))
    np.testing.assert_array_equal(out.numpy(), model(x).detach().numpy())
    assert template[0].weight.is_meta  # the template keeps no data


def test_fills_of_meta_tensors_do_nothing_as_in_pytorch():
    x = sg.empty(2, 3, device="meta")
    for fill in (lambda: x.uniform_(), lambda: x.normal_(), lambda: x.fill_(1.0), x.zero_,
                 lambda: x.bernoulli_(0.5), lambda: x.exponential_()):  # fmt: skip
        assert fill() is x and x.is_meta


def _modules(nn):
    return nn.Sequential(
        nn.Linear(4, 3), nn.BatchNorm1d(3), nn.LayerNorm(3), nn.Embedding(5, 3),
        nn.Conv2d(1, 2, 3), nn.MultiheadAttention(4, 2), nn.GRU(3, 4),
    )  # fmt: skip


def test_modules_built_on_the_meta_device_have_torchs_state():
    """``with device("meta"):`` (PyTorch's way to describe a big model without its memory):
    the layers' initialisations do nothing there, and the state is PyTorch's in names,
    shapes and dtypes, on the meta device."""
    with sg.device("meta"):
        ours = _modules(sg.nn)
    with torch.device("meta"):
        theirs = _modules(torch.nn)
    assert [(k, tuple(v.shape), v.dtype.name) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in theirs.state_dict().items()
    ]
    assert all(t.is_meta for t in ours.state_dict().values())
    assert not sg.zeros(1).is_meta  # the block is over


def _net(nn):
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


@pytest.mark.parametrize("how", ["to_empty then load", "load with assign"])
def test_a_meta_model_gets_its_values_as_in_pytorch(how):
    """Built on "meta", then given a checkpoint's values: the outputs are the source model's,
    and each tensor's dtype, device, identity and memory are what PyTorch's are."""
    sg.manual_seed(0)
    source = _net(sg.nn).double()
    state = source.state_dict()
    x = sg.randn(5, 3, dtype=sg.float64)
    reference = torch.nn.Sequential(*_net(torch.nn)).double()
    reference.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in state.items()})
    results = []
    for lib, net, values in ((sg, None, state), (torch, None, reference.state_dict())):
        with lib.device("meta"):
            net = _net(lib.nn)
        weight = net[0].weight
        if how == "to_empty then load":  # copied into the model's tensors: float64 first
            assert net.double().to_empty(device="cpu") is net
            net.load_state_dict(values)
        else:  # the checkpoint's tensors, float64, taken as they are
            net.load_state_dict(values, assign=True)
        net.eval()
        x_lib = x if lib is sg else torch.from_numpy(x.numpy())
        results.append(
            (
                net(x_lib).detach().numpy(),
                [
                    (str(p.dtype).split(".")[-1], str(p.device), p.requires_grad)
                    for p in net.parameters()
                ],
                net[0].weight is weight,
            )
        )
        if how == "load with assign" and lib is sg:  # the checkpoint's own memory
            assert np.shares_memory(net[0].weight.array, values["0.weight"].array)
    (ours, our_params, our_same), (theirs, their_params, their_same) = results
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    np.testing.assert_allclose(ours, source.eval()(x).detach().numpy(), rtol=1e-12)
    assert our_params == their_params
    # the parameter objects stay (PyTorch makes new ones off the meta device): an optimizer
    # made before still holds them
    assert our_same and not their_same
