"""The strict device (``tests/strict.py``): arrays that refuse what CuPy's arrays refuse.

Running the op table, autograd, nn layers, optimizers and a short training run on it, against
the same on the CPU, proves that no code path reaches NumPy behind the backend's back; each place
where CuPy differs from NumPy has a test here. Where CuPy sees a GPU, the same checks also run on
"cuda" (they are skipped otherwise).
"""

import copy
import functools
import io
import json

import numpy as np
import pytest
import strict
from op_table import OPS
from test_ops import _arity, _arrays

import scratchgrad as sg
import scratchgrad.nn.functional as F
from scratchgrad import func, nn
from scratchgrad.train import train

DEVICES = [
    "strict",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not sg.cuda.is_available(), reason="no CuPy and GPU")
    ),
]
# float64 results against the CPU's: the strict device computes with NumPy itself (the same
# numbers up to summation order); a GPU adds in other orders
TOLERANCE = {"strict": (1e-10, 1e-12), "cuda": (1e-7, 1e-9)}
FACTORIES = {
    "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand",
    "randn", "randint", "zeros_like", "ones_like", "full_like",
}  # fmt: skip


class OnDevice:
    """``scratchgrad`` with its factories making tensors on ``device`` (the op table's calls
    make index tensors with ``m.tensor``, as a GPU program would make them on its device)."""

    def __init__(self, device: str) -> None:
        self.device = device

    def __getattr__(self, name: str):
        value = getattr(sg, name)
        return functools.partial(value, device=self.device) if name in FACTORIES else value


def _on_cpu(t: sg.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _assert_same(actual: sg.Tensor, expected: sg.Tensor, device: str, what: str) -> None:
    assert actual.device.type == device, f"{what}: on {actual.device}, not {device}"
    rtol, atol = TOLERANCE[device]
    np.testing.assert_allclose(_on_cpu(actual), _on_cpu(expected), rtol, atol, err_msg=what)


# ---- the op table ---------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_op_table_on_device_matches_cpu(op, device):
    """Forward and gradients of every row on the device equal the CPU's (float64, the row's
    gradcheck shapes)."""
    rng = np.random.default_rng(0)
    arrays = _arrays(op, op.check_shapes[: _arity(op)], rng)
    cpu = [sg.tensor(a, dtype=sg.float64, requires_grad=op.grad) for a in arrays]
    dev = [sg.tensor(a, dtype=sg.float64, device=device, requires_grad=op.grad) for a in arrays]
    expected, out = op.call(sg, *cpu), op.call(OnDevice(device), *dev)
    _assert_same(out, expected, device, f"{op.name} forward")
    if not op.grad:
        return
    g = rng.standard_normal(expected.shape)
    expected.backward(sg.tensor(g, dtype=expected.dtype))
    out.backward(sg.tensor(g, dtype=out.dtype, device=device))
    for i, (x, t) in enumerate(zip(dev, cpu)):
        if t.grad is None:
            assert x.grad is None, f"{op.name}: gradient {i} should be None"
        else:
            _assert_same(x.grad, t.grad, device, f"{op.name} gradient of input {i}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["tanh", "matmul", "softmax", "getitem_int_array", "cumprod"])
def test_gradgradcheck_on_device(name, device):
    """Finite differences perturb device arrays in place and compare on the host."""
    (op,) = [op for op in OPS if op.name == name]
    arrays = _arrays(op, op.check_shapes[: _arity(op)], np.random.default_rng(0))
    xs = [sg.tensor(a, dtype=sg.float64, device=device, requires_grad=True) for a in arrays]
    assert sg.autograd.gradgradcheck(lambda *x: op.call(OnDevice(device), *x), xs)


# ---- nn layers, losses, optimizers, training ------------------------------------------------


def _train_both(make, inputs, device, opt=lambda ps: sg.optim.SGD(ps, lr=0.1), steps=2):
    """Train a model and its copy on ``device`` side by side; outputs and parameters agree."""
    sg.manual_seed(0)
    cpu = make().double()
    dev = copy.deepcopy(cpu).to(device)
    assert all(p.device.type == device for p in (*dev.parameters(), *dev.buffers()))
    opt_cpu, opt_dev = opt(list(cpu.parameters())), opt(list(dev.parameters()))
    for _ in range(steps):
        outs = []
        for model, optimizer, where in ((cpu, opt_cpu, "cpu"), (dev, opt_dev, device)):
            out = model(*[x.to(where) for x in inputs])
            out = out[0] if isinstance(out, tuple) else out
            optimizer.zero_grad()
            (out**2).mean().backward()
            optimizer.step()
            outs.append(out)
        _assert_same(outs[1], outs[0], device, "output")
    for (name, p), q in zip(cpu.named_parameters(), dev.parameters()):
        _assert_same(q, p, device, name)


LAYERS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2)), [(4, 6)]),
    "cnn": (
        lambda: nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.AvgPool2d(2),
            nn.Flatten(),
        ),
        [(2, 3, 8, 8)],
    ),  # fmt: skip
    "conv_adaptive": (
        lambda: nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.AdaptiveAvgPool2d((3, 2))),
        [(2, 3, 8, 8)],
    ),
    "conv1d": (lambda: nn.Sequential(nn.Conv1d(2, 3, 3), nn.BatchNorm1d(3)), [(2, 2, 9)]),
    "layer_norm": (lambda: nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU()), [(4, 6)]),
    "lstm": (lambda: nn.LSTM(6, 4, num_layers=2), [(5, 2, 6)]),
    "gru": (lambda: nn.GRU(6, 4, batch_first=True), [(2, 5, 6)]),
    "attention": (lambda: nn.MultiheadAttention(6, 2), [(5, 2, 6)] * 3),
    "transformer": (lambda: nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0), [(5, 2, 6)]),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layers_train_on_device_as_on_cpu(layer, device):
    make, shapes = LAYERS[layer]
    sg.manual_seed(1)
    _train_both(make, [sg.randn(*shape, dtype=sg.float64) for shape in shapes], device)


def test_embedding_on_device():
    _train_both(lambda: nn.Embedding(10, 4), [sg.tensor([[1, 2], [9, 1]])], "strict")


OPTIMIZERS = {
    "sgd_nesterov": lambda ps: sg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "adam": lambda ps: sg.optim.Adam(ps, lr=0.01),
    "adamw_amsgrad": lambda ps: sg.optim.AdamW(ps, lr=0.01, amsgrad=True),
    "rmsprop": lambda ps: sg.optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.5),
    "adagrad": lambda ps: sg.optim.Adagrad(ps, lr=0.1),
    "adadelta": lambda ps: sg.optim.Adadelta(ps),
    "adamax": lambda ps: sg.optim.Adamax(ps),
    "nadam": lambda ps: sg.optim.NAdam(ps),
    "radam": lambda ps: sg.optim.RAdam(ps),
    "asgd": lambda ps: sg.optim.ASGD(ps),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizers_step_on_device_as_on_cpu(name, device):
    x = sg.randn(4, 6, dtype=sg.float64)
    _train_both(lambda: nn.Linear(6, 3), [x], device, OPTIMIZERS[name], steps=3)


def test_lbfgs_on_device():
    results = []
    for device in ("cpu", "strict"):
        w = sg.tensor([1.5, -0.5], dtype=sg.float64, device=device, requires_grad=True)
        opt = sg.optim.LBFGS([w], lr=1, max_iter=20, line_search_fn="strong_wolfe")

        def closure(w=w, opt=opt):
            opt.zero_grad()
            loss = (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2  # Rosenbrock
            loss.backward()
            return loss

        opt.step(closure)
        results.append(w)
    _assert_same(results[1], results[0], "strict", "LBFGS")


LOSSES = {
    "cross_entropy_smoothing": lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
    "nll_weighted_ignore": lambda x, t: F.nll_loss(
        x.log_softmax(1), t, weight=sg.arange(1.0, 4.0, device=x.device), ignore_index=1
    ),
    "mse": lambda x, t: F.mse_loss(x, t.float()[:, None].expand(x.shape)),
    "bce_with_logits": lambda x, t: F.binary_cross_entropy_with_logits(x, x.detach().sigmoid()),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_on_device(name, device):
    x, t = sg.randn(5, 3, requires_grad=True), sg.tensor([0, 2, 1, 1, 0])
    x_dev = x.detach().to(device).requires_grad_()
    expected, out = LOSSES[name](x, t), LOSSES[name](x_dev, t.to(device))
    expected.backward(), out.backward()
    assert out.item() == pytest.approx(expected.item(), rel=1e-6)
    np.testing.assert_allclose(_on_cpu(x_dev.grad), _on_cpu(x.grad), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_digits_training_on_device_as_on_cpu(device):
    """Two epochs of the digits MLP (``scratchgrad train``'s loop) give the CPU's history."""
    kwargs = dict(model_name="mlp", epochs=2, batch_size=64, out=None, progress=False)
    on_cpu, on_device = train(**kwargs), train(**kwargs, device=device)
    assert on_device["loss"] == pytest.approx(on_cpu["loss"], rel=1e-4)
    assert on_device["test_acc"] == pytest.approx(on_cpu["test_acc"], abs=0.01)
    assert on_device["test_acc"][-1] > 0.8


# ---- where CuPy differs from NumPy: handled in the backend ------------------------------------


def test_the_strict_arrays_refuse_what_cupy_refuses():
    x = sg.ones(3, device="strict")
    with pytest.raises(TypeError, match="Implicit conversion|implicit conversion"):
        np.asarray(x.array)
    with pytest.raises(TypeError, match="numpy.exp"):
        np.exp(x.array)
    with pytest.raises(TypeError, match="numpy.sum"):
        np.sum(x.array)
    with pytest.raises(TypeError, match="NumPy array"):
        x.array + np.ones(3)
    with pytest.raises(TypeError, match="add.at"):
        strict.strict_xp.add.at(x.array, [0], 1.0)
    with pytest.raises(AttributeError, match="errstate"):
        strict.strict_xp.errstate  # noqa: B018
    with pytest.raises(TypeError, match="normal"):
        strict.strict_xp.random.default_rng(0).normal(size=2)
    with pytest.raises(TypeError, match="writeable"):  # CuPy's as_strided has no such flag
        strict.strict_xp.lib.stride_tricks.as_strided(x.array, (3,), (8,), writeable=False)
    with pytest.raises(TypeError, match="initial"):
        x.array.max(initial=0.0)
    with pytest.raises(TypeError, match="maximum.reduce"):
        strict.strict_xp.maximum.reduce(x.array)


def test_reductions_give_0d_arrays_not_numpy_scalars():
    """NumPy's reductions return NumPy scalars (host values), CuPy's 0-d device arrays; a
    result must be a device tensor either way, and ``item`` reads it (a synchronization)."""
    x = sg.tensor([[1.0, 2.0], [3.0, 4.0]], device="strict", requires_grad=True)
    for out in (x.sum(), x.mean(), x.max(), x.argmax(), x.norm(), (x > 2).any(), x.std()):
        assert out.shape == () and out.device.type == "strict"
        assert isinstance(out.array, strict.StrictArray)
    assert x.sum().item() == 10.0 and isinstance(x.sum().item(), float)
    assert float(x.max()) == 4.0 and int(x.argmax()) == 3
    x.sum().backward()
    assert x.grad.device.type == "strict"


def test_scalar_indexing_gives_a_view_that_later_writes_change():
    """CuPy's ``a[k]`` is a 0-d view, NumPy's a copied scalar: code that saves ``a[k]`` before
    writing ``a[k]`` must copy it. Finite differences did not, and on a GPU gradgradcheck saw
    half the numerical second derivative (the tanh row: analytical twice numerical)."""
    a = strict.strict_xp.asarray(np.array([1.0, 2.0]))
    old = a[0]
    a[0] = 5.0
    assert sg.backend.to_host(old).item() == 5.0  # as CuPy's
    x = sg.tensor([0.3, -0.7], dtype=sg.float64, device="strict", requires_grad=True)
    assert sg.autograd.gradgradcheck(lambda t: t.tanh(), x)


def test_repeated_indices_add_up_through_scatter_add():
    """The gradient of ``x[[0, 0, 2]]`` adds twice into entry 0: NumPy's ``add.at``, which does
    not reach CuPy (the backend uses ``cupyx.scatter_add`` there)."""
    x = sg.zeros(3, device="strict", requires_grad=True)
    x[sg.tensor([0, 0, 2])].sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 1.0]
    e = nn.Embedding(4, 2).to("strict")
    e(sg.tensor([1, 1, 1], device="strict")).sum().backward()
    assert e.weight.grad.cpu().numpy()[:, 0].tolist() == [0.0, 3.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "index",
    [
        lambda x: x[sg.tensor([0, 3], device=x.device)],
        lambda x: x[:, sg.tensor([-4])],
        lambda x: x[..., [3]],
        lambda x: x[[0, 1], [1, 3]],
    ],
)
def test_out_of_bounds_indices_raise_before_indexing(index):
    """CuPy wraps an index out of bounds around (so does the strict device); the backend checks
    the bounds first and raises PyTorch's IndexError."""
    x = sg.ones(3, 3, device="strict")
    assert strict.StrictArray(np.arange(3))[np.array([3])].tolist() == [0]  # it wraps
    with pytest.raises(IndexError, match="out of bounds"):
        index(x)
    with pytest.raises(IndexError):
        index(sg.ones(3, 3))  # NumPy raises on the CPU too


def test_out_of_bounds_embedding_gather_and_targets_raise():
    x = sg.ones(2, 3, device="strict")
    with pytest.raises(IndexError, match="out of range"):
        nn.Embedding(3, 2).to("strict")(sg.tensor([3], device="strict"))
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.gather(1, sg.tensor([[0], [3]], device="strict"))
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, sg.tensor([0, 3], device="strict"))


def test_where_with_numbers_and_device_tensors():
    x = sg.tensor([1.0, -2.0, 3.0], device="strict", requires_grad=True)
    out = sg.where(x > 0, x, 0.0)
    assert out.device.type == "strict" and out.tolist() == [1.0, 0.0, 3.0]
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    assert sg.where(x > 0, 1.0, -1.0).tolist() == [1.0, -1.0, 1.0]
    assert x.masked_fill(x < 0, 5.0).tolist() == [1.0, 5.0, 3.0]


def test_random_draws_come_from_the_device_generator_seeded_by_manual_seed():
    sg.manual_seed(7)
    first = [sg.randn(4, device="strict"), sg.rand(2, device="strict")]
    ints = sg.randint(0, 10, (5,), device="strict")
    sg.manual_seed(7)
    again = [sg.randn(4, device="strict"), sg.rand(2, device="strict")]
    assert all(a.device.type == "strict" for a in first)
    assert [a.tolist() for a in first] == [a.tolist() for a in again]
    assert sg.randint(0, 10, (5,), device="strict").tolist() == ints.tolist()
    g = sg.Generator(device="strict").manual_seed(3)
    assert g.device == sg.device("strict")
    drawn = sg.randn(3, generator=g, device="strict").tolist()
    assert sg.randn(3, generator=g.manual_seed(3), device="strict").tolist() == drawn
    dropped = F.dropout(sg.ones(1000, device="strict"), 0.5)
    assert dropped.device.type == "strict" and set(dropped.tolist()) == {0.0, 2.0}
    x = sg.tensor([0.0, 1.0, 3.0], device="strict")
    assert set(x.multinomial(20, replacement=True).tolist()) <= {1, 2}
    w = nn.init.normal_(sg.empty(500, device="strict"), 1.0, 0.5)
    assert w.device.type == "strict" and abs(w.mean().item() - 1.0) < 0.1


def test_printing_and_item_read_the_device():
    x = sg.tensor([1.5, 2.0], device="strict", requires_grad=True)
    assert repr(x) == "tensor([1.5000, 2.0000], device='strict', requires_grad=True)"
    assert f"{x.sum():.2f}" == "3.50" and x[0].item() == 1.5 and x.tolist() == [1.5, 2.0]


# ---- the device API ----------------------------------------------------------------------------


def test_numpy_of_a_device_tensor_says_to_call_cpu_first():
    x = sg.ones(2, device="strict")
    message = r"can't convert strict device type tensor to numpy\. Use Tensor\.cpu\(\) to copy"
    with pytest.raises(TypeError, match=message):
        x.numpy()
    with pytest.raises(TypeError, match="Tensor.cpu"):
        np.asarray(x)
    assert x.cpu().numpy().tolist() == [1.0, 1.0]


def test_mixing_devices_raises_naming_both():
    x, y = sg.ones(2, device="strict"), sg.ones(2)
    for op in (lambda: x + y, lambda: y * x, lambda: x @ y, lambda: x < y, lambda: sg.cat([x, y])):
        with pytest.raises(RuntimeError, match="same device.*(cpu and strict|strict and cpu)"):
            op()


def test_to_moves_and_back_with_gradients():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("strict")
    assert y.device == sg.device("strict") and y.grad_fn.name() == "ToCopyBackward0"
    assert y.to("strict") is y and x.to("cpu") is x
    z = y.to("cpu", sg.float64)
    assert z.device == sg.device("cpu") and z.dtype == sg.float64
    (z * z).sum().backward()
    assert x.grad.device == sg.device("cpu") and x.grad.tolist() == [2.0, 4.0]
    assert sg.zeros(2).to(sg.zeros(1, device="strict")).device.type == "strict"


def test_module_and_optimizer_state_follow_the_parameters():
    model = nn.Linear(3, 2)
    weight = model.weight
    opt = sg.optim.Adam(model.parameters(), lr=0.1)
    assert model.to("strict") is model and model.weight is weight
    assert weight.device.type == "strict"
    model(sg.ones(1, 3, device="strict")).sum().backward()
    opt.step()
    assert opt.state[weight]["exp_avg"].device.type == "strict"
    fresh = sg.optim.Adam(nn.Linear(3, 2).to("strict").parameters(), lr=0.1)
    saved = io.BytesIO()
    sg.save(opt.state_dict(), saved)
    saved.seek(0)
    fresh.load_state_dict(sg.load(saved))  # loads on the CPU, moves onto the parameters
    assert all(s["exp_avg"].device.type == "strict" for s in fresh.state.values())
    assert model.cpu().weight.device == sg.device("cpu")


def _parts(data: bytes) -> tuple:
    """A safetensors file as (header, tensor bytes): the header's JSON is compared as data,
    since safetensors writes its metadata keys in no fixed order (two CPU saves differ too)."""
    size = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + size]), data[8 + size :]


def test_save_from_a_device_writes_the_cpu_file_and_map_location_reads_it_back():
    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    on_cpu, on_device = io.BytesIO(), io.BytesIO()
    sg.save(model.state_dict(), on_cpu)
    sg.save(copy.deepcopy(model).to("strict").state_dict(), on_device)
    assert _parts(on_device.getvalue()) == _parts(on_cpu.getvalue())
    for location in ("strict", sg.device("strict"), {"cpu": "strict"}):
        on_cpu.seek(0)
        loaded = sg.load(on_cpu, map_location=location)
        assert all(t.device.type == "strict" for t in loaded.values())
    on_cpu.seek(0)
    target = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to("strict")
    target.load_state_dict(sg.load(on_cpu))  # CPU values into a model on the device
    assert target[0].weight.device.type == "strict"
    np.testing.assert_array_equal(_on_cpu(target[0].weight), _on_cpu(model[0].weight))


def test_transforms_amp_and_copies_on_device():
    x = sg.randn(4, 3, device="strict", dtype=sg.float64)
    batched = func.vmap(lambda r: (r.exp() * r).sum())(x)
    assert batched.device.type == "strict"
    np.testing.assert_allclose(_on_cpu(batched), _on_cpu((x.exp() * x).sum(1)), rtol=1e-12)
    slope = func.grad(lambda r: r.sin().sum())(x[0])
    np.testing.assert_allclose(_on_cpu(slope), _on_cpu(x[0].cos()), rtol=1e-12)
    jac = func.jacrev(lambda r: r.exp())(x[0])
    np.testing.assert_allclose(_on_cpu(jac), np.diag(_on_cpu(x[0].exp())), rtol=1e-12)
    model = nn.Linear(3, 2).to("strict")
    opt, scaler = sg.optim.SGD(model.parameters(), lr=0.1), sg.amp.GradScaler()
    scaler.scale(model(x.float()).sum()).backward()
    scaler.unscale_(opt)  # finds the infinities on the device
    scaler.step(opt), scaler.update()
    assert scaler.get_scale() == 65536.0
    y = sg.zeros(3, device="strict")
    y.copy_(sg.tensor([1.0, 2.0, 3.0]))  # from the CPU, as PyTorch's copy_
    assert y.device.type == "strict" and y.tolist() == [1.0, 2.0, 3.0]


def test_jit_refuses_device_tensors_and_keeps_their_calls_apart():
    model = nn.Linear(3, 1)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)

    @sg.jit
    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    x = sg.randn(4, 3)
    for _ in range(4):  # eager, two recordings, a replay: all on the CPU
        step(x)
    model.to("strict")
    with pytest.raises(sg.JitError, match=r"step\(\) computes on strict at ") as info:
        step(x.to("strict"))  # same shape and dtype: a new guard key, not the CPU replay
    assert "CPU tensors only" in str(info.value)
    with open(__file__) as source:  # the call that passed the device's tensor
        line = next(i for i, text in enumerate(source, 1) if "a new guard key, not the" in text)
    assert f"test_strict.py:{line}:" in str(info.value)


def test_a_large_relu_on_a_device_is_one_maximum_with_zero(monkeypatch):
    """The rows against a row of zeros (ops/unary.py's ``relu``) work around NumPy's slow
    maximum with a number; on a device ReLU stays one ``maximum(x, 0)``, whatever its size (a
    kept row of zeros would also belong to one device)."""
    x = np.random.default_rng(0).standard_normal((4, 64, 64)).astype(np.float32)  # 16,384
    seconds = []
    maximum = strict.strict_xp.maximum

    def spy(a, b, *args, **kwargs):
        seconds.append(b)
        return maximum(a, b, *args, **kwargs)

    monkeypatch.setattr(strict.strict_xp, "maximum", spy, raising=False)
    t = sg.tensor(x, device="strict", requires_grad=True)
    out = F.relu(t)
    assert seconds == [0]
    np.testing.assert_array_equal(_on_cpu(out), np.maximum(x, 0))
    out.sum().backward()
    np.testing.assert_array_equal(_on_cpu(t.grad), (x > 0).astype(np.float32))
