"""utils.checkpoint against torch.utils.checkpoint: results and gradients (for every input and
every parameter, through backward() and autograd.grad) equal those of running the function
directly, dropout's masks drawn again the same, torch's warnings and errors, and the memory a
checkpointed step saves."""

import functools
import gc
import tracemalloc
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.utils import checkpoint as cp

RNG = np.random.default_rng(0)


def mlp(lib, dropout=0.0):
    """The same small MLP in both libraries (float64, torch's weights copied into ours)."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Dropout(dropout), torch.nn.Linear(6, 3)
    ).double()
    if lib is torch:
        return theirs
    ours = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Dropout(dropout), nn.Linear(6, 3)).double()
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours


def grads(params):
    return [p.grad.numpy().copy() for p in params]


X = RNG.normal(size=(5, 4))


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_mlp_gradients_equal_torch_s(use_reentrant):
    """Input and parameter gradients of a checkpointed MLP, ours and torch's, in float64."""
    results = []
    for lib, module in ((sg, cp), (torch, tcp)):
        model = mlp(lib)
        x = lib.tensor(X, requires_grad=True)
        y = module.checkpoint(model, x, use_reentrant=use_reentrant)
        (y**2).sum().backward()
        results.append([y.detach().numpy(), x.grad.numpy(), *grads(model.parameters())])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def test_dropout_draws_the_same_mask_when_run_again():
    """With preserve_rng_state (the default) the checkpointed MLP's gradients are those of the
    same MLP run directly from the same seed, bit for bit, and the generator ends where the
    direct run leaves it; without it the masks differ, and so do the gradients."""

    def run(check, seed=7, **kwargs):
        model = mlp(sg, dropout=0.5)
        x = sg.tensor(X, requires_grad=True)
        sg.manual_seed(seed)
        y = cp.checkpoint(model, x, use_reentrant=False, **kwargs) if check else model(x)
        (y**2).sum().backward()
        return [y.detach().numpy(), x.grad.numpy(), *grads(model.parameters())], sg.rand(3)

    direct, after = run(False)
    checked, checked_after = run(True)
    for ours, expected in zip(checked, direct):
        np.testing.assert_array_equal(ours, expected)
    np.testing.assert_array_equal(checked_after.numpy(), after.numpy())
    assert not np.array_equal(run(False, seed=8)[0][1], direct[1])  # the masks matter

    unpreserved, _ = run(True, preserve_rng_state=False)
    np.testing.assert_array_equal(unpreserved[0], direct[0])  # the forward run is the same
    assert not np.array_equal(unpreserved[1], direct[1])  # the recomputation drew other masks


def several(lib):
    """A function of several inputs (one without grad, a number, a keyword) using a parameter
    through its closure, returning two tensors."""
    torch.manual_seed(1)
    weight = lib.tensor(np.arange(6.0).reshape(2, 3) / 7, requires_grad=True)

    def function(a, b, scale, c=None):
        h = (a @ weight).sin() * b + c.exp()
        return h * scale, (h * a.sum()).mean(0)

    return function, weight


def several_inputs(lib):
    a = lib.tensor(RNG_A, requires_grad=True)
    b = lib.tensor(RNG_B)  # no grad
    c = lib.tensor(RNG_C, requires_grad=True)
    return a, b, c


RNG_A, RNG_B, RNG_C = RNG.normal(size=(4, 2)), RNG.normal(size=(4, 3)), RNG.normal(size=3)


@pytest.mark.parametrize("through", ["backward", "autograd.grad"])
def test_a_function_of_several_inputs_equals_torch_s(through):
    results = []
    for lib, module in ((sg, cp), (torch, tcp)):
        function, weight = several(lib)
        a, b, c = several_inputs(lib)
        y, z = module.checkpoint(function, a, b, 2.5, use_reentrant=False, c=c)
        loss = (y * y).sum() + (z**3).sum()
        assert y.requires_grad and z.requires_grad and not b.requires_grad
        if through == "backward":
            loss.backward()
            found = [a.grad, c.grad, weight.grad]
            assert b.grad is None
        else:
            found = lib.autograd.grad(loss, [a, c, weight])
        results.append([y.detach().numpy(), z.detach().numpy(), *(g.numpy() for g in found)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def test_parameters_get_gradients_when_no_input_requires_grad():
    """(use_reentrant=False: torch's gives them; the reentrant variant gives none, below.)"""
    results = []
    for lib, module in ((sg, cp), (torch, tcp)):
        model = mlp(lib)
        y = module.checkpoint(model, lib.tensor(X), use_reentrant=False)
        y.sum().backward()
        results.append(grads(model.parameters()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def step_of(model, x, extra):
    """A function given its module and a list holding a parameter as arguments, as an ODE
    solver's step is given its vector field."""
    return model(x).tanh() * extra[0]


@pytest.mark.parametrize("use_reentrant, input_grad", [(False, False), (False, True), (True, True)])
def test_a_module_passed_as_an_argument_gets_gradients(use_reentrant, input_grad):
    results = []
    for lib, module in ((sg, cp), (torch, tcp)):
        model = mlp(lib)
        scale = lib.tensor([1.5], dtype=lib.float64, requires_grad=True)
        x = lib.tensor(X, requires_grad=input_grad)
        y = module.checkpoint(step_of, model, x, [scale], use_reentrant=use_reentrant)
        (y**2).sum().backward()
        results.append([y.detach().numpy(), scale.grad.numpy(), *grads(model.parameters())])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def caught(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = call()
    return out, [str(w.message) for w in seen]


def test_warnings_are_torch_s():
    """Without use_reentrant: torch's warning, and the reentrant variant; it warns again when
    no input requires grad, and its result then has no gradient."""
    for function in ("checkpoint", "checkpoint_sequential"):
        ours, theirs = [], []
        for lib, module, found in ((sg, cp, ours), (torch, tcp, theirs)):
            model = mlp(lib)
            args = (model, lib.tensor(X, requires_grad=True))
            if function == "checkpoint_sequential":
                args = (model, 2, args[1])
            out, messages = caught(functools.partial(getattr(module, function), *args))
            found += [messages, out.requires_grad]
        assert ours == theirs and len(ours[0]) == 1
    ours, theirs = [], []
    for lib, module, found in ((sg, cp, ours), (torch, tcp, theirs)):
        model = mlp(lib)
        out, messages = caught(functools.partial(module.checkpoint, model, lib.tensor(X)))
        found += [messages, out.requires_grad]
    assert ours == theirs and len(ours[0]) == 2 and ours[1] is False


def errors(make):
    with pytest.raises(ValueError) as theirs:
        make(torch, tcp)
    with pytest.raises(ValueError) as ours:
        make(sg, cp)
    return str(ours.value), str(theirs.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib, m: m.checkpoint(mlp(lib), lib.tensor(X), use_reentrant=True, other=1, k=2),
        lambda lib, m: m.checkpoint_sequential(mlp(lib), 2, lib.tensor(X), False, other=1),
        lambda lib, m: m.checkpoint(
            mlp(lib), lib.tensor(X), use_reentrant=False, determinism_check="shapes"
        ),
        lambda lib, m: m.checkpoint(mlp(lib), lib.tensor(X), use_reentrant=True, debug=True),
    ],
)
def test_errors_are_torch_s(make):
    ours, theirs = errors(make)
    assert ours == theirs


def test_torch_s_options_for_its_checks_are_taken_not_passed_to_the_function():
    results = []
    for lib, module in ((sg, cp), (torch, tcp)):
        model = mlp(lib)
        x = lib.tensor(X, requires_grad=True)
        options = {"determinism_check": "none", "debug": False, "early_stop": False}
        y = module.checkpoint(model, x, use_reentrant=False, **options)
        (y**2).sum().backward()
        results.append([y.detach().numpy(), x.grad.numpy(), *grads(model.parameters())])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("segments", [1, 2, 3, 4])
def test_checkpoint_sequential_equals_torch_s(segments):
    results = []
    for lib, module in ((sg, cp), (torch, tcp)):
        model = mlp(lib)
        x = lib.tensor(X, requires_grad=True)
        functions = model if segments % 2 else [*model, lambda t: t.tanh()]
        y = module.checkpoint_sequential(functions, segments, x, use_reentrant=False)
        (y**2).sum().backward()
        results.append([y.detach().numpy(), x.grad.numpy(), *grads(model.parameters())])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def test_under_no_grad_it_is_a_plain_call():
    for lib, module in ((sg, cp), (torch, tcp)):
        with lib.no_grad():
            y = module.checkpoint(mlp(lib), lib.tensor(X, requires_grad=True), use_reentrant=False)
        assert not y.requires_grad and y.grad_fn is None


def test_a_tensor_it_cannot_pass_a_gradient_to_is_refused():
    """A tensor that requires grad and reaches the function neither as an argument nor as a
    parameter of what it refers to (here: inside an object) would get no gradient: backward
    raises instead. So does a second differentiation (torch's non-reentrant variant allows
    it): the gradient would be taken as a constant."""

    class Holder:
        pass

    holder = Holder()
    holder.w = sg.ones(3, requires_grad=True)
    x = sg.ones(3, requires_grad=True)
    y = cp.checkpoint(lambda x: x * holder.w, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match=r"checkpoint: .* shape \(3,\) .* pass it to check"):
        y.sum().backward()
    outside = x * 2  # made before the call: its graph is the caller's
    y = cp.checkpoint(lambda t: t * outside, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="made by ops before the call"):
        y.sum().backward()
    y = cp.checkpoint(lambda t: t**3, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="checkpoint: create_graph=True"):
        sg.autograd.grad(y.sum(), x, create_graph=True)


def peak_of_a_step(segments):
    sg.manual_seed(0)
    model = nn.Sequential(*[layer for _ in range(20) for layer in (nn.Linear(32, 32), nn.ReLU())])
    x = sg.randn(512, 32)
    gc.collect()
    tracemalloc.start()
    try:
        if segments:
            y = cp.checkpoint_sequential(model, segments, x, use_reentrant=False)
        else:
            y = model(x)
        y.square().mean().backward()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_checkpointed_step_peaks_lower():
    """20 layers' activations of 64 KB each: kept whole without checkpointing; with it, the
    inputs of 4 segments, then one segment's activations at a time."""
    assert peak_of_a_step(5) < 0.6 * peak_of_a_step(None)
