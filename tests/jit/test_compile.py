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


@pytest.fixture(autouse=True)
def _torch_distributions_validate_again():
    """The first torch.compile turns off torch.distributions' argument checks process-wide
    (torch/_dynamo/eval_frame.py), which the oracle tests of distributions' errors need on."""
    yield
    torch.distributions.Distribution.set_default_validate_args(True)


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
