"""The in-place forms whose backward reads only the result (``relu_``, ``exp_``, ``sigmoid_``,
``tanh_``; ``nn.ReLU(inplace=True)``): in a graph they change the tensor's memory in one pass
and save the tensor itself as their result, as PyTorch's; outside a graph (no_grad, eval-mode
inference, inference mode, views) they change it in one pass too and count the change. Their
values and gradients against PyTorch's and, bit for bit, against the out-of-place op's (what
the recorded copy computed before), on zeros, -0.0, NaN and infinities; a change of the result
before backward, the old value needed by another node, a view, a leaf, ``gradcheck`` and
``scratchgrad.jit``; NumPy's float errors; hooks, transforms, memory layouts, several-output
ops, a detached alias, the dtypes that keep the copying form, and jitted or compiled training
steps."""

import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import nn

OPS = ("relu", "exp", "sigmoid", "tanh")
SPECIALS = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -1e-40, 20.0, -20.0, 89.0, -89.0, 710.0]


def inputs(n: int, dtype) -> np.ndarray:
    x = np.random.default_rng(n).standard_normal(n) * 5
    x[: len(SPECIALS)] = SPECIALS
    return x.astype(dtype)


def through(lib, op: str, x: np.ndarray, grad: np.ndarray, in_place: bool) -> tuple:
    """The result of ``op`` on ``x * 1`` (a tensor made by a node), in place or not, and the
    gradient of x for ``grad``."""
    leaf = lib.tensor(x, requires_grad=True)
    y = leaf * 1
    out = getattr(y, op + "_")() if in_place else getattr(y, op)()
    if in_place:
        assert out is y
    out.backward(lib.tensor(grad))
    return out.detach().numpy().copy(), leaf.grad.numpy().copy()


@pytest.mark.parametrize("n", [12, 100, 40_003])  # (from 16384 entries relu goes by rows)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", OPS)
def test_values_and_gradients_in_a_graph(op, dtype, n):
    x, grad = inputs(n, dtype), inputs(n + 1, dtype)[:n]
    out, x_grad = through(sg, op, x, grad, in_place=True)
    plain_out, plain_grad = through(sg, op, x, grad, in_place=False)
    assert out.tobytes() == plain_out.tobytes()  # bit for bit, -0.0 and NaN included
    assert x_grad.tobytes() == plain_grad.tobytes()
    torch_out, torch_grad = through(torch, op, x, grad, in_place=True)
    exact = dict(rtol=1e-6, atol=0) if dtype == np.float32 else dict(rtol=1e-12, atol=0)
    np.testing.assert_allclose(out, torch_out, **exact)
    # (tanh's gradient, 1 - out ** 2, loses digits where tanh is near 1: the same loss there)
    np.testing.assert_allclose(x_grad, torch_grad, rtol=exact["rtol"], atol=1e-5)


@pytest.fixture
def no_copy(monkeypatch):
    """Recording an in-place op on a copy of the old value (the path before) fails."""

    def copying(*args, **kwargs):
        raise AssertionError("recorded on a copy")

    monkeypatch.setattr(sg.Tensor, "_record_in_place", copying)


@pytest.mark.parametrize("op", OPS)
def test_one_node_over_the_old_one_and_no_copy(op, no_copy):
    y = sg.tensor([-1.0, 0.5], requires_grad=True) * 2
    before, old_node = y.array, y.grad_fn
    getattr(y, op + "_")()
    ty = getattr(torch.tensor([-1.0, 0.5], requires_grad=True) * 2, op + "_")()
    assert y.array is before
    assert y.grad_fn.name() == ty.grad_fn.name()
    assert y.grad_fn.next_functions == ((old_node, 0),)
    assert y._version == ty._version == 1


@pytest.mark.parametrize(
    "form",
    [nn.ReLU(inplace=True), lambda h: nn.functional.relu(h, inplace=True),
     nn.functional.relu_, sg.relu_],
    ids=["ReLU", "relu", "F.relu_", "sg.relu_"],
)  # fmt: skip
def test_relu_module_and_functional_forms_in_one_pass(form, no_copy):
    x = sg.tensor([[-1.0, 2.0, 0.0]], requires_grad=True)
    h = x * 3
    assert form(h) is h
    h.sum().backward()
    assert h.tolist() == [[0.0, 6.0, 0.0]]
    assert x.grad.tolist() == [[0.0, 3.0, 0.0]]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("later", ["add_", "setitem", "under_no_grad"])
def test_a_later_change_of_the_result_makes_backward_raise(op, later):
    def run(lib):
        y = lib.tensor([-1.0, 0.5, 2.0], requires_grad=True) * 2
        getattr(y, op + "_")()
        if later == "add_":
            y.add_(1)
        elif later == "setitem":
            y[0] = 3.0
        else:
            with lib.no_grad():
                y.mul_(2)
        y.sum().backward()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(torch)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        run(sg)


@pytest.mark.parametrize("op", OPS)
def test_the_old_value_saved_by_another_node_raises(op):
    def run(lib):
        y = lib.tensor([-1.0, 0.5, 2.0], requires_grad=True) * 2
        z = y * y  # saves the old y
        getattr(y, op + "_")()
        (z.sum() + y.sum()).backward()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(torch)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        run(sg)


def gradients(lib, op: str, program) -> list:
    x = lib.tensor(np.random.default_rng(2).standard_normal((3, 4)), requires_grad=True)
    out = program(x * 1, op)
    (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return [out.detach().numpy(), x.grad.numpy()]


def slice_changed(y, op):
    getattr(y[:, :2], op + "_")()
    return y


def with_a_view_taken_before(y, op):
    view = y[1]
    getattr(y, op + "_")()
    return y * 2 + view.unsqueeze(0)


def retaining_grad(y, op):
    y.retain_grad()
    out = getattr(y, op + "_")() * 3
    return out


def of_a_node_output_of_a_node(y, op):
    return getattr(y.exp(), op + "_")()  # exp saved its result: now changed


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    "program", [slice_changed, with_a_view_taken_before, retaining_grad], ids=lambda f: f.__name__
)
def test_other_graphs_against_torch(op, program):
    for ours, theirs in zip(gradients(sg, op, program), gradients(torch, op, program)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


@pytest.mark.parametrize("op", OPS)
def test_a_result_saved_by_its_node_changed_raises_as_torch(op):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        gradients(torch, op, of_a_node_output_of_a_node)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        gradients(sg, op, of_a_node_output_of_a_node)


@pytest.mark.parametrize("op", OPS)
def test_a_leaf_that_requires_grad_raises(op):
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(torch.ones(2, requires_grad=True), op + "_")()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(sg.ones(2, requires_grad=True), op + "_")()


@pytest.mark.parametrize("op", OPS)
def test_gradcheck(op):
    x = sg.tensor(np.random.default_rng(1).uniform(0.2, 2, 6) * [1, -1, 1, -1, 1, -1])
    x.requires_grad_()
    assert sg.autograd.gradcheck(lambda t: getattr(t * 1, op + "_")(), (x,))
    assert sg.autograd.gradgradcheck(lambda t: getattr(t * 1, op + "_")(), (x,))


def test_jit_records_an_in_place_relu_as_eager():
    def step(model, x):
        model.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        return loss.detach(), model[0].weight.grad.clone()

    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 1))
    jitted = sg.jit(step)
    for seed in range(4):  # (the second and third calls record, the fourth replays)
        x = sg.tensor(np.random.default_rng(seed).standard_normal((5, 4)), dtype=sg.float32)
        (loss, grad), (eager_loss, eager_grad) = jitted(model, x), step(model, x)
        assert loss.item() == eager_loss.item()
        assert np.array_equal(grad.numpy(), eager_grad.numpy())


@pytest.mark.parametrize("op", OPS)
def test_a_convolutions_result_in_place_gives_a_jitted_steps_bits(op):
    """A convolution's result keeps the batch last in memory; a jitted step records the op on
    a copy of the old value, in C order, whose layout orders the sums of the backwards after
    it: eager steps give the same bits."""

    def step(model, x):
        model.zero_grad()
        y = getattr(model(x), op + "_")()
        loss = (y * y).mean()
        loss.backward()
        return loss.detach(), model[0].weight.grad.clone()

    sg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16))
    jitted = sg.jit(step)
    for seed in range(4):  # (the second and third calls record, the fourth replays)
        x = sg.tensor(np.random.default_rng(seed).standard_normal((8, 3, 24, 24)), dtype=sg.float32)
        (loss, grad), (eager_loss, eager_grad) = jitted(model, x), step(model, x)
        assert loss.item() == eager_loss.item()
        assert grad.numpy().tobytes() == eager_grad.numpy().tobytes()


@pytest.mark.parametrize("op", ["exp", "sigmoid"])
@pytest.mark.parametrize("numpy_raises", ["errstate", "warnings_filter"])
def test_numpys_float_error_leaves_the_change_counted_and_recorded(op, numpy_raises):
    """NumPy raises an overflow (np.errstate(over="raise"), a warnings filter of "error") once
    the one pass has written the result: the error goes on, as the out-of-place op's, and the
    tensor's new values (PyTorch's, which raises nothing) are counted and recorded, so the
    graph never holds them under the old node (the multiplication's gradient)."""
    x = np.array([-1000.0, 1000.0, 0.5, -0.5])
    tx = torch.tensor(x, requires_grad=True)
    ty = getattr(tx * 2, op + "_")()
    ty.backward(torch.arange(4.0, dtype=torch.float64))
    leaf = sg.tensor(x, requires_grad=True)
    y = leaf * 2
    with (
        warnings.catch_warnings(),
        np.errstate(over="raise" if numpy_raises == "errstate" else "warn"),
    ):
        warnings.simplefilter("error")
        with pytest.raises((FloatingPointError, RuntimeWarning), match="overflow"):
            getattr(y * 1, op)()  # the out-of-place op raises the same
        with pytest.raises((FloatingPointError, RuntimeWarning), match="overflow"):
            getattr(y, op + "_")()
    assert y._version == ty._version == 1
    assert y.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=0)
    y.backward(sg.arange(4.0, dtype=sg.float64))
    np.testing.assert_allclose(leaf.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=0)


# ---- settings the one pass meets, each against PyTorch (and the out-of-place op's bits)


def hooked(lib, op: str, in_place: bool) -> list:
    """Gradient hooks and retain_grad on the tensor before and after the op."""
    x = lib.tensor(np.random.default_rng(3).standard_normal((3, 4)), requires_grad=True)
    y, seen = x * 2, []
    y.register_hook(lambda g: seen.append(g.clone()))
    y.retain_grad()
    before = y
    y = getattr(y, op + "_")() if in_place else getattr(y, op)()
    y.register_hook(lambda g: g * 3)
    y.retain_grad()
    (y * lib.arange(12.0, dtype=y.dtype).reshape(3, 4)).sum().backward()
    return [y.detach().numpy(), x.grad.numpy(), y.grad.numpy(), *[g.numpy() for g in seen]] + (
        [] if y is before else [before.grad.numpy()]
    )


@pytest.mark.parametrize("op", OPS)
def test_hooks_and_retain_grad_before_and_after(op):
    ours, theirs = hooked(sg, op, True), hooked(torch, op, True)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):  # (tanh's 1 - out ** 2 loses digits near 1, as PyTorch's)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for a, b in zip(ours, hooked(sg, op, False)):  # (y.grad: the result's, in both)
        assert a.tobytes() == b.tobytes()


def relu_module(lib, hook: str) -> list:
    module = lib.nn.ReLU(inplace=True)
    if hook == "forward_pre":  # the pre-hook's new input is what changes
        module.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    elif hook == "forward":
        module.register_forward_hook(lambda m, args, out: out * 3)
    else:
        module.register_full_backward_hook(lambda m, gi, go: None)
    x = lib.tensor([[-1.0, 2.0, 0.0, 3.0]], requires_grad=True)
    y = x * 1
    out = module(y)
    (out * lib.tensor([[1.0, 2.0, 3.0, 4.0]])).sum().backward()
    return [out.detach().numpy(), y.detach().numpy(), x.grad.numpy()]


@pytest.mark.parametrize("hook", ["forward_pre", "forward", "full_backward"])
def test_relu_module_hooks_as_torch(hook):
    if hook == "full_backward":  # the hook's output is a view that bypasses it: refused
        message = "BackwardHookFunction.* is a view and is being modified inplace"
        with pytest.raises(RuntimeError, match=message):
            relu_module(torch, hook)
        with pytest.raises(RuntimeError, match=message):
            relu_module(sg, hook)
        return
    for ours, theirs in zip(relu_module(sg, hook), relu_module(torch, hook)):
        np.testing.assert_array_equal(ours, theirs)


def in_a_transform(lib, op: str, transform: str, in_place: bool) -> list:
    """The op inside saved-tensor hooks, a profile, a checkpoint (both kinds), a second-order
    gradient, func.grad under vmap, and forward AD."""
    x = lib.tensor(np.random.default_rng(4).uniform(-2, 2, (3, 4)), requires_grad=True)
    weights = lib.arange(12.0, dtype=x.dtype).reshape(3, 4)

    def f(t):
        t = t * 2
        return (getattr(t, op + "_")() if in_place else getattr(t, op)()) * weights

    if transform == "saved_tensors_hooks":
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            out = f(x)
    elif transform == "profile":
        with lib.autograd.profiler.profile(), lib.autograd.profiler.record_function("block"):
            out = f(x)
    elif transform.startswith("checkpoint"):
        reentrant = transform.endswith("reentrant")
        out = lib.utils.checkpoint.checkpoint(f, x * 1, use_reentrant=reentrant)
    elif transform == "create_graph":  # (relu's gradient is constant in x: times x)
        (grad,) = lib.autograd.grad(f(x).sum(), x, create_graph=True)
        out = grad * grad * x
    elif transform == "vmap_grad":
        return [lib.func.vmap(lib.func.grad(lambda r: f(r).sum()))(x.detach()).numpy()]
    else:  # forward AD: one in-place op on a dual tensor
        fwd = lib.autograd.forward_ad
        with fwd.dual_level():
            out = f(fwd.make_dual(x.detach(), weights))
            return [t.numpy() for t in fwd.unpack_dual(out)]
    out.sum().backward()
    return [out.detach().numpy(), x.grad.numpy()]


TRANSFORMS = [
    "saved_tensors_hooks", "profile", "checkpoint", "checkpoint_reentrant", "create_graph",
    "vmap_grad", "forward_ad",
]  # fmt: skip


@pytest.mark.filterwarnings("ignore::UserWarning")  # (the profiler's, on CPU)
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("op", OPS)
def test_under_transforms_as_torch_and_the_out_of_place_op(op, transform):
    ours = in_a_transform(sg, op, transform, True)
    for a, b in zip(ours, in_a_transform(torch, op, transform, True)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for a, b in zip(ours, in_a_transform(sg, op, transform, False)):
        assert a.tobytes() == b.tobytes()


def laid_out(lib, op: str, layout: str, in_place: bool) -> tuple:
    data = np.random.default_rng(5).standard_normal((40, 30, 20)) * 5
    data.reshape(-1)[: len(SPECIALS)] = SPECIALS
    x = lib.tensor(data, requires_grad=True)
    y = {
        "fortran": lambda: (x.permute(2, 1, 0) * 1).permute(2, 1, 0) * 1,
        "transposed": lambda: x.transpose(0, 2) * 1,
        "batch_last": lambda: x.permute(1, 2, 0) * 1,
        "0-d": lambda: x[1, 2, 3] * 1,
        "empty": lambda: x[:0] * 1,
    }[layout]()
    out = getattr(y, op + "_")() if in_place else getattr(y, op)()
    (out * out.detach()).sum().backward()
    return out.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("layout", ["fortran", "transposed", "batch_last", "0-d", "empty"])
@pytest.mark.parametrize("op", OPS)
def test_memory_layouts_give_the_out_of_place_bits(op, layout):
    (out, grad), (plain_out, plain_grad) = (
        laid_out(sg, op, layout, True),
        laid_out(sg, op, layout, False),
    )
    assert out.strides == plain_out.strides
    assert out.tobytes() == plain_out.tobytes() and grad.tobytes() == plain_grad.tobytes()
    torch_out, torch_grad = laid_out(torch, op, layout, True)
    np.testing.assert_allclose(out, torch_out, rtol=1e-12, atol=0)
    np.testing.assert_allclose(grad, torch_grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", OPS)
def test_outputs_of_several_output_ops(op):
    """An output of split/chunk/unbind (views of one call) is refused, as PyTorch's; a
    values output of max(dim) (no view) takes the op as any tensor."""
    for lib in (sg, torch):
        y = lib.tensor(np.arange(12.0).reshape(3, 4) - 5, requires_grad=True) * 1
        for part in (y.split(2)[0], y.chunk(2, dim=1)[1], y.unbind(0)[2]):
            with pytest.raises(RuntimeError, match="returns multiple views"):
                getattr(part, op + "_")()

    def values(lib):
        x = lib.tensor(np.arange(12.0).reshape(3, 4) - 5, requires_grad=True)
        out = getattr((x * 1).max(dim=0).values, op + "_")()
        (out * lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=out.dtype)).sum().backward()
        return out.detach().numpy(), x.grad.numpy()

    for ours, theirs in zip(values(sg), values(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


@pytest.mark.parametrize("op", OPS)
def test_a_detached_alias_sees_the_change_and_its_change_makes_backward_raise(op):
    for lib, words in ((torch, "modified by an inplace"), (sg, "modified by an in-place")):
        y = lib.tensor([-1.0, 0.5, 2.0], requires_grad=True) * 2
        alias = y.detach()
        getattr(y, op + "_")()
        assert alias.tolist() == y.tolist() and alias._version == y._version == 1
        alias.add_(1)
        with pytest.raises(RuntimeError, match=words):
            y.sum().backward()


@pytest.mark.parametrize(
    ("op", "dtype"),
    [(op, dtype) for op in OPS for dtype in ("float16", "bfloat16", "complex64")
     if (op, dtype) != ("relu", "complex64")],
)  # fmt: skip
def test_16_bits_and_complex_numbers_keep_the_copying_form(op, dtype, monkeypatch):
    copies, record = [], sg.Tensor._record_in_place
    monkeypatch.setattr(
        sg.Tensor, "_record_in_place", lambda *args: copies.append(1) or record(*args)
    )

    def run(lib):
        wide = lib.complex128 if dtype == "complex64" else lib.float64
        x = lib.tensor([[-1.5, 0.25], [2.0, -0.5]], requires_grad=True)
        y = getattr((x * 1).to(getattr(lib, dtype)), op + "_")()
        (y.to(wide) * lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=wide)).abs().sum().backward()
        return [y.detach().to(wide).numpy(), x.grad.numpy()]

    for ours, theirs in zip(run(sg), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    assert copies == [1]


class InPlaceNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden, self.act, self.out = nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 3)

    def forward(self, x):
        return self.out(self.act(self.hidden(x))).tanh_()


@pytest.mark.parametrize("mode", ["jit", "compiled_module"])
def test_five_training_steps_jitted_or_compiled_give_eager_bits(mode):
    def step(forward, optimizer, x):
        optimizer.zero_grad()
        loss = forward(x).square().mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    models = []
    for _ in range(2):
        sg.manual_seed(0)
        model = InPlaceNet()
        models.append((model, sg.optim.SGD(model.parameters(), lr=0.1)))
    (eager, eager_opt), (other, other_opt) = models
    if mode == "jit":
        jitted = sg.jit(step)
        run = lambda x: jitted(other, other_opt, x)  # noqa: E731
    else:
        compiled = sg.compile(other)
        run = lambda x: step(compiled, other_opt, x)  # noqa: E731
    for seed in range(5):
        x = sg.tensor(np.random.default_rng(seed).standard_normal((5, 4)), dtype=sg.float32)
        assert run(x).numpy().tobytes() == step(eager, eager_opt, x).numpy().tobytes()
        for p, q in zip(eager.parameters(), other.parameters()):
            assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes()


# ---- outside a graph (no_grad, eval-mode inference, tensors that need no grad): one pass too


@pytest.fixture
def no_copy_back(monkeypatch):
    """Computing a new array and copying it back (the copying form, the path before) fails."""

    def copying(*args, **kwargs):
        raise AssertionError("copied back")

    monkeypatch.setattr(sg.Tensor, "_apply_", copying)


def outside(lib, op: str, x: np.ndarray, where: str) -> tuple:
    """``op`` in place on a tensor of ``x`` outside a graph: its values and version (none for
    an inference tensor, as PyTorch's)."""
    if where == "needs_no_grad":
        t = lib.tensor(x)
        return getattr(t, op + "_")().numpy().copy(), t._version
    if where == "inference_mode":
        with lib.inference_mode():
            t = lib.tensor(x)
            assert getattr(t, op + "_")() is t
        return t.numpy().copy(), None
    t = lib.tensor(x, requires_grad=True)
    with lib.no_grad():
        t = t * 1  # (a result of a graph's op, changed under no_grad)
        assert getattr(t, op + "_")() is t
    return t.detach().numpy().copy(), t._version


@pytest.mark.parametrize("where", ["no_grad", "needs_no_grad", "inference_mode"])
@pytest.mark.parametrize("n", [12, 100, 40_003])  # (from 16384 entries relu goes by rows)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", OPS)
def test_outside_graphs_one_pass_gives_the_out_of_place_bits(op, dtype, n, where, no_copy_back):
    x = inputs(n, dtype)
    out, version = outside(sg, op, x, where)
    assert out.tobytes() == getattr(sg.tensor(x), op)().numpy().tobytes()  # -0.0, NaN too
    torch_out, torch_version = outside(torch, op, x, where)
    exact = dict(rtol=1e-6, atol=0) if dtype == np.float32 else dict(rtol=1e-12, atol=0)
    np.testing.assert_allclose(out, torch_out, **exact)
    assert version == torch_version == (None if where == "inference_mode" else 1)


def test_eval_mode_relu_module_in_one_pass(no_copy_back):
    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.ReLU(inplace=True), lib.nn.Linear(4, 2)).eval()
        x = lib.tensor([[-1.0, 2.0, 0.0, 3.0]])
        with lib.no_grad():
            out = model(x)
        return x.numpy().copy(), x._version, out

    (x, version, _), (tx, t_version, _) = run(sg), run(torch)
    assert x.tolist() == tx.tolist() == [[0.0, 2.0, 0.0, 3.0]]
    assert version == t_version == 1


@pytest.mark.parametrize("op", OPS)
def test_outside_graphs_a_view_changes_its_base_and_counts_its_versions(op, no_copy_back):
    def run(lib):
        x = np.random.default_rng(1).standard_normal((2, 3, 4, 4))
        with lib.no_grad():  # a convolution's result: scratchgrad keeps its batch last
            base = lib.nn.functional.conv2d(lib.tensor(x), lib.ones(3, 3, 1, 1, dtype=lib.float64))
            flat = base.view(2, 48)  # (scratchgrad's is a copy kept up to date)
            view = base[:, 1:].transpose(2, 3)
            getattr(view, op + "_")()
        return [base.numpy(), flat.numpy(), view.numpy()], (base._version, view._version)

    ours, versions = run(sg)
    theirs, torch_versions = run(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    assert versions == torch_versions == (1, 1)


@pytest.mark.parametrize("op", OPS)
def test_outside_graphs_an_inference_tensor_outside_inference_mode_raises_as_torch(op):
    def run(lib):
        with lib.inference_mode():
            x = lib.tensor([-1.0, 0.5])
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
            getattr(x, op + "_")()
        return x.numpy()  # (written before the error, as PyTorch's)

    np.testing.assert_allclose(run(sg), run(torch), rtol=1e-6, atol=0)


@pytest.mark.parametrize("op", OPS)
def test_outside_graphs_read_only_memory_raises_before_any_write(op):
    x = np.array([-1.0, 0.5])
    x.flags.writeable = False
    t = sg.from_numpy(x)
    with pytest.raises(RuntimeError, match=f"{op}_: .*read-only"):
        getattr(t, op + "_")()
    assert x.tolist() == [-1.0, 0.5]
    assert t._version == 0


@pytest.mark.parametrize("op", OPS)
def test_a_view_taken_under_no_grad_changed_with_grad_mode_on_raises_as_torch(op):
    for lib in (sg, torch):
        x = lib.tensor([-1.0, 0.5], requires_grad=True) * 1
        with lib.no_grad():
            view = x[:1]
        with pytest.raises(RuntimeError, match="no_grad mode and is being modified inplace"):
            getattr(view, op + "_")()


@pytest.mark.parametrize("op", ["exp", "sigmoid"])
def test_outside_graphs_numpys_float_error_leaves_the_change_counted(op):
    """As in a graph: the error goes on once the result is written, and the change (PyTorch's
    values, which raises nothing) is counted."""
    x = np.array([-1000.0, 1000.0, 0.5, -0.5])
    t = sg.tensor(x)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        getattr(t, op + "_")()
    expected = getattr(torch.tensor(x), op + "_")()
    np.testing.assert_allclose(t.numpy(), expected.numpy(), rtol=1e-12, atol=0)
    assert t._version == 1


@pytest.mark.parametrize("op", OPS)
def test_a_jitted_step_changing_in_place_under_no_grad_gives_eager_bits(op):
    def step(model, x):
        model.zero_grad()
        h = model[0](x)
        with sg.no_grad():
            scale = getattr(h.detach() * 1, op + "_")().mean()
        loss = (model[1](h.relu()) * scale).square().mean()
        loss.backward()
        return loss.detach(), model[0].weight.grad.clone()

    sg.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 1))
    jitted = sg.jit(step)
    for seed in range(4):  # (the second and third calls record, the fourth replays)
        x = sg.tensor(np.random.default_rng(seed).standard_normal((5, 4)), dtype=sg.float32)
        (loss, grad), (eager_loss, eager_grad) = jitted(model, x), step(model, x)
        assert loss.numpy().tobytes() == eager_loss.numpy().tobytes()
        assert grad.numpy().tobytes() == eager_grad.numpy().tobytes()
