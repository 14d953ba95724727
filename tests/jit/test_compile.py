"""``scratchgrad.compile`` against ``torch.compile``: the same signature and options, the same
wrapper around a module (``_orig_mod``, its state_dict keys, shared parameters, the training
flag), and results equal to the eager module's while the forward is replayed."""

import doctest
import inspect

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import compiled as compiled_module
from scratchgrad import nn

# The models and functions here count their Python calls (a list, an attribute), which the jit
# warns a replay will not do (the warning's own tests: tests/jit/test_jit_pitfalls.py).
pytestmark = pytest.mark.filterwarnings("ignore:scratchgrad.jit.*while it was recorded")


def _counting(model):
    """``model`` with a counter of the calls that ran its Python forward (eager or recording;
    a replay runs none)."""
    forward = model.forward
    model.python_calls = 0

    def counted(*args):
        # kept past Module.__setattr__, which would stamp the module as changed (the
        # recordings hold it) and make it record anew
        model.__dict__["python_calls"] += 1
        return forward(*args)

    model.forward = counted
    return model


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(
        lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(), lib.nn.Dropout(0.3)
    )


def test_signature_takes_torch_compiles_keywords():
    ours = inspect.signature(sg.compile).parameters
    theirs = inspect.signature(torch.compile).parameters
    for name in ("model", "fullgraph", "dynamic", "backend", "mode", "options", "disable"):
        assert ours[name].default == theirs[name].default or name == "backend", name
        assert ours[name].kind == theirs[name].kind, name


def test_a_module_is_wrapped_as_pytorch_wraps_it():
    ours, theirs = _net(sg), _net(torch)
    compiled, torch_compiled = sg.compile(ours), torch.compile(theirs)
    assert type(compiled).__name__ == type(torch_compiled).__name__ == "OptimizedModule"
    assert compiled._orig_mod is ours
    assert list(compiled.state_dict()) == list(torch_compiled.state_dict())
    assert [n for n, _ in compiled.named_parameters()] == [
        n for n, _ in torch_compiled.named_parameters()
    ]
    # attributes are the original module's (indexing is not forwarded, in PyTorch neither)
    assert getattr(compiled, "0").weight is ours[0].weight
    assert getattr(torch_compiled, "0").weight is theirs[0].weight
    assert len(compiled) == len(torch_compiled) == 4
    assert repr(compiled).startswith("OptimizedModule(\n  (_orig_mod): Sequential(")


def test_the_training_flag_and_new_attributes_are_the_original_modules():
    model = _net(sg)
    compiled = sg.compile(model)
    compiled.eval()
    assert not model.training and not model[3].training and not compiled.training
    model.train()
    assert compiled.training
    compiled.note = "kept on the original"
    assert model.note == "kept on the original"


def test_state_dict_round_trips_through_the_compiled_module():
    compiled = sg.compile(_net(sg))
    other = sg.compile(nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Dropout()))
    other.load_state_dict(compiled.state_dict())
    for key, value in compiled.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[key].numpy(), value.numpy())


def test_disable_returns_the_input_itself():
    model = _net(sg)

    def fn(x):
        return x

    assert sg.compile(model, disable=True) is model
    assert sg.compile(fn, disable=True) is fn
    assert torch.compile(fn, disable=True) is fn  # what PyTorch does


def test_mode_and_options_together_are_refused_as_in_pytorch():
    with pytest.raises(RuntimeError, match="both can't be specified"):
        torch.compile(lambda x: x, mode="max-autotune", options={"trace.enabled": True})
    with pytest.raises(RuntimeError, match="both can't be specified"):
        sg.compile(lambda x: x, mode="max-autotune", options={"trace.enabled": True})


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"mode": "max-autotune", "fullgraph": True, "dynamic": False},
        {"backend": "eager", "options": {"triton.cudagraphs": True}, "name": "step"},
        {"recompile_limit": 4, "dynamic": True},
    ],
)
def test_a_function_is_jitted_with_any_options_and_as_a_decorator(options):
    calls = []

    def affine(x):
        calls.append(1)
        return 2 * x + 1

    compiled = [sg.compile(affine, **options), sg.compile(**options)(affine)]
    if not options:
        compiled.append(sg.compile(affine))  # @sg.compile without parentheses
    for fn in compiled:
        calls.clear()
        for value in (1.0, 2.0, 3.0, 4.0):
            assert fn(sg.tensor([value])).tolist() == [2 * value + 1]
        assert len(calls) == 3  # eager, record, record again, then replays of new values


def test_a_compiled_module_replays_inference_and_equals_eager():
    """Under no_grad the forward is recorded per mode and input shape, then replayed; in
    eval mode its outputs are the eager module's."""
    model = _counting(_net(sg))
    compiled = sg.compile(model)
    rng = np.random.default_rng(0)
    compiled.eval()
    with sg.no_grad():
        for rows in (5, 5, 5, 5, 3, 3, 3, 3):
            x = sg.from_numpy(rng.standard_normal((rows, 4))).float()
            found, calls_before = compiled(x), model.python_calls
            np.testing.assert_array_equal(found.numpy(), model(x).numpy())
            model.__dict__["python_calls"] = calls_before  # the eager check's call
    assert model.python_calls == 5  # eager; two recordings per batch size


def test_a_compiled_module_trains_like_the_eager_one():
    """The ordinary loop of a PyTorch script, the forward and backward replayed, gives the
    eager result; train-mode batch norm and a seeded dropout included (more in
    test_compiled_module.py)."""
    states = []
    for wrap in (lambda m: m, sg.compile):
        model = _net(sg)
        net = wrap(model)
        opt = sg.optim.SGD(net.parameters(), lr=0.1)
        sg.manual_seed(1)
        x = sg.randn(8, 4)
        for _ in range(4):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
        states.append({k: v.numpy() for k, v in model.state_dict().items()})
    for key, value in states[0].items():
        np.testing.assert_array_equal(states[1][key], value, err_msg=key)


def test_doc_string_examples_run():
    assert doctest.testmod(compiled_module).failed == 0


def _loss_setup(lib):
    """A linear layer with the same weights in both libraries, a batch, and its labels."""
    rng = np.random.default_rng(3)
    layer = lib.nn.Linear(4, 3)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(rng.standard_normal((3, 4)).astype(np.float32)))
        layer.bias.copy_(lib.tensor(rng.standard_normal(3).astype(np.float32)))
    x = lib.tensor(rng.standard_normal((6, 4)).astype(np.float32))
    return layer, x, lib.tensor(rng.integers(0, 3, 6))


def _train_with_a_compiled_loss(lib, wrap):
    """Six SGD steps whose loss, of several tensors and a Python float, is ``wrap(loss_fn)``,
    backpropagated outside it: the losses, the trained weight and the last loss's node."""
    layer, x, y = _loss_setup(lib)
    weights = lib.tensor([1.0, 0.5, 2.0, 1.0, 1.0, 0.5])

    @wrap
    def loss_fn(logits, labels, weights, temperature):
        per_sample = lib.nn.functional.cross_entropy(logits / temperature, labels, reduction="none")
        return (per_sample * weights).sum() / weights.sum() * temperature**2

    opt = lib.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(6):
        loss = loss_fn(layer(x), y, weights, 2.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, layer.weight.detach().numpy(), loss.grad_fn.name()


def test_a_compiled_loss_backpropagated_by_the_caller_gives_eager_gradients_when_replayed():
    """``@torch.compile`` on a loss of several tensors and a Python float, ``backward()``
    outside: a replay's result hangs from a node whose backward is the loss's, so every step
    is PyTorch's (replays of ``jit(fn)`` would return a detached loss)."""
    theirs, their_weight, _ = _train_with_a_compiled_loss(torch, lambda fn: fn)  # the oracle
    ours, our_weight, node = _train_with_a_compiled_loss(sg, sg.compile)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(our_weight, their_weight, rtol=1e-5, atol=1e-6)
    assert node == "CompiledFunctionBackward"  # the last steps replayed


def _gradients_with_a_compiled_penalty(lib, wrap):
    layer, x, _ = _loss_setup(lib)

    @wrap
    def penalty(scale):
        return scale * layer.weight.square().sum()

    grads = []
    for _ in range(5):
        layer.zero_grad()
        (layer(x).mean() + penalty(lib.tensor(0.5))).backward()
        grads.append(layer.weight.grad.numpy().copy())
    return grads


def test_a_compiled_penalty_added_to_an_eager_loss_keeps_its_gradient():
    """A compiled term reading a parameter by name, added to an eager loss: its gradient
    reaches the parameter at every call (replayed by ``jit(fn)``, it silently did not)."""
    theirs = _gradients_with_a_compiled_penalty(torch, lambda fn: fn)
    ours = _gradients_with_a_compiled_penalty(sg, sg.compile)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


def _train_with_a_step(wrap, wrap_loss):
    """Five SGD steps of ``wrap(step)``, whose loss is ``wrap_loss(cross_entropy)``: the
    losses, the trained weight, and the last step's result."""
    layer, x, y = _loss_setup(sg)
    opt = sg.optim.SGD(layer.parameters(), lr=0.1)
    loss_fn = wrap_loss(lambda logits, y: sg.nn.functional.cross_entropy(logits, y))

    @wrap
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(layer(x), y)
        loss.backward()
        opt.step()
        return loss

    results = [step(x, y) for _ in range(5)]
    return [r.item() for r in results], layer.weight.detach().numpy(), results[-1]


def test_a_compiled_training_step_stays_a_jitted_step():
    """A function running its own ``backward()`` and optimizer step, returning the loss (with
    its graph, backpropagated already), replays as ``jit``: detached results, eager's weights."""
    eager_losses, eager_weight, _ = _train_with_a_step(lambda fn: fn, lambda fn: fn)
    losses, weight, last = _train_with_a_step(sg.compile, lambda fn: fn)
    assert losses == eager_losses
    np.testing.assert_array_equal(weight, eager_weight)
    assert last.grad_fn is None  # a replay of the jitted step


def test_a_compiled_loss_inside_a_compiled_step_is_recorded_by_the_step():
    """As TorchDynamo inlines a compiled function called by a compiled one, the step's
    recording sees the loss's operations (a nested ``jit`` would raise)."""
    eager_losses, eager_weight, _ = _train_with_a_step(lambda fn: fn, lambda fn: fn)
    losses, weight, last = _train_with_a_step(sg.compile, sg.compile)
    assert losses == eager_losses
    np.testing.assert_array_equal(weight, eager_weight)
    assert last.grad_fn is None


@pytest.mark.parametrize("make", [sg.compile, sg.jit], ids=["compile", "jit"])
def test_replays_under_inference_mode_return_inference_tensors(make):
    """As PyTorch's results made under ``inference_mode`` (compiled or not), a replay's are
    inference tensors; under ``no_grad`` they are not."""
    with torch.inference_mode():
        expected = torch.nn.Linear(2, 2)(torch.ones(3, 2)).is_inference()
    compiled = make(nn.Linear(2, 2))
    found = []
    for mode in [sg.inference_mode] * 5 + [sg.no_grad]:
        with mode():
            found.append(compiled(sg.randn(3, 2)).is_inference())
    assert found == [expected] * 5 + [False]
