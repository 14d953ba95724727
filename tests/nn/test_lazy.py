"""Lazy modules (``nn.LazyLinear``, ``nn.LazyConv2d``, ...) against PyTorch's."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import nn
from scratchgrad.nn.lazy import is_lazy

LAZY = [
    (nn.LazyLinear, nn.Linear, (3,), (4, 5)),
    (nn.LazyConv1d, nn.Conv1d, (4, 3), (2, 3, 8)),
    (nn.LazyConv2d, nn.Conv2d, (4, 3), (2, 3, 6, 6)),
    (nn.LazyConv3d, nn.Conv3d, (4, 2), (2, 3, 4, 4, 4)),
    (nn.LazyConvTranspose1d, nn.ConvTranspose1d, (4, 3), (2, 3, 5)),
    (nn.LazyConvTranspose2d, nn.ConvTranspose2d, (4, 3), (2, 3, 5, 5)),
    (nn.LazyConvTranspose3d, nn.ConvTranspose3d, (4, 2), (2, 3, 3, 3, 3)),
    (nn.LazyBatchNorm1d, nn.BatchNorm1d, (), (4, 3)),
    (nn.LazyBatchNorm2d, nn.BatchNorm2d, (), (4, 3, 5, 5)),
    (nn.LazyBatchNorm3d, nn.BatchNorm3d, (), (4, 3, 2, 2, 2)),
    (nn.LazyInstanceNorm1d, nn.InstanceNorm1d, (), (4, 3, 5)),
    (nn.LazyInstanceNorm2d, nn.InstanceNorm2d, (), (4, 3, 5, 5)),
    (nn.LazyInstanceNorm3d, nn.InstanceNorm3d, (), (4, 3, 2, 2, 2)),
]
IDS = [lazy.__name__ for lazy, *_ in LAZY]


def torch_module(lazy, args):
    return getattr(torch.nn, lazy.__name__)(*args)


def eager_module(lazy, eager, size, args):
    # the lazy instance norms learn and track by default (as PyTorch's), the eager ones do not
    if "Instance" in lazy.__name__:
        return eager(size, *args, affine=True, track_running_stats=True)
    return eager(size, *args)


@pytest.mark.parametrize("lazy, eager, args, shape", LAZY, ids=IDS)
def test_repr_and_state_before_the_first_call_match_torch(lazy, eager, args, shape):
    module, reference = lazy(*args), torch_module(lazy, args)
    assert repr(module) == repr(reference)
    assert module.has_uninitialized_params() and reference.has_uninitialized_params()
    assert list(module.state_dict()) == list(reference.state_dict())
    assert [type(p).__name__ for p in module.parameters()] == [
        type(p).__name__ for p in reference.parameters()
    ]


@pytest.mark.parametrize("lazy, eager, args, shape", LAZY, ids=IDS)
def test_first_call_becomes_the_eager_module_made_with_the_same_draws(lazy, eager, args, shape):
    x = sg.randn(*shape)
    sg.manual_seed(7)
    module = lazy(*args)
    out = module(x)
    size = shape[1]
    sg.manual_seed(7)
    expected = eager_module(lazy, eager, size, args)
    assert type(module) is eager and not any(is_lazy(p) for p in module.state_dict().values())
    assert repr(module) == repr(expected)
    assert [type(p) for p in module.parameters()] == [nn.Parameter] * len(list(module.parameters()))
    for (name, got), (_, want) in zip(module.state_dict().items(), expected.state_dict().items()):
        assert got.shape == want.shape, name
        if name not in ("running_mean", "running_var", "num_batches_tracked"):
            np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy(), err_msg=name)
    np.testing.assert_allclose(
        out.detach().numpy(), expected(x).detach().numpy(), rtol=1e-6, atol=1e-6
    )
    reference = torch_module(lazy, args)
    reference(torch.from_numpy(x.numpy()))
    assert repr(module) == repr(reference)
    assert [tuple(p.shape) for p in module.parameters()] == [
        tuple(p.shape) for p in reference.parameters()
    ]


def test_unbatched_conv_input_gives_in_channels_from_dim_0():
    conv = nn.LazyConv1d(2, 3)
    assert conv(sg.ones(5, 7)).shape == (2, 5) and conv.in_channels == 5


def test_uninitialized_parameter_refuses_to_compute_as_torch():
    weight = nn.LazyLinear(3).weight
    assert repr(weight) == "<UninitializedParameter>" and is_lazy(weight)
    assert weight.requires_grad and weight.dtype == sg.float32
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = weight.shape
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
        weight.sum()
    with pytest.raises(ValueError, match="uninitialized parameter"):
        weight.tolist()
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        weight + 1
    with pytest.raises(RuntimeError, match="uninitialized"):
        nn.functional.linear(sg.ones(2, 2), weight)
    with pytest.raises(ValueError, match="uninitialized parameter"):
        torch.nn.LazyLinear(3).weight.sum()


def test_materialize_makes_a_parameter_and_a_buffer():
    param, buffer = nn.UninitializedParameter(dtype=sg.float64), nn.UninitializedBuffer()
    assert not buffer.requires_grad and repr(buffer) == "<UninitializedBuffer>"
    param.materialize((2, 3))
    buffer.materialize((4,))
    assert type(param) is nn.Parameter and param.shape == (2, 3) and param.dtype == sg.float64
    assert isinstance(buffer, sg.Tensor) and buffer.shape == (4,)


def test_errors_of_the_first_call_match_torch():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(sg.ones(1, 3, 5, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        torch.nn.LazyConv2d(4, 3, groups=2)(torch.ones(1, 3, 5, 5))
    message = r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"
    with pytest.raises(RuntimeError, match=message):
        nn.LazyConv2d(4, 3)(sg.ones(3, 5))
    with pytest.raises(RuntimeError, match=message):
        torch.nn.LazyConv2d(4, 3)(torch.ones(3, 5))


def test_optimizer_built_before_the_first_call_trains_the_materialized_parameters():
    model = nn.LazyLinear(2)
    opt = sg.optim.SGD(model.parameters(), lr=0.1)
    x = sg.ones(3, 4)
    model(x).sum().backward()
    before = model.weight.detach().clone()
    opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy(), before.numpy() - 0.1 * 3, rtol=1e-6)


def test_module_to_before_the_first_call_sets_the_dtype():
    model = nn.LazyLinear(2).double()
    assert model(sg.ones(3, 4, dtype=sg.float64)).dtype == sg.float64
    assert model.weight.dtype == sg.float64


def test_state_dict_of_a_lazy_module_loads_into_a_lazy_one_and_not_an_eager_one():
    state = nn.LazyLinear(3).state_dict()
    assert all(is_lazy(value) for value in state.values())
    other = nn.LazyLinear(3)
    other.load_state_dict(state)
    assert other.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="size mismatch"):
        nn.Linear(2, 3).load_state_dict(state)


@pytest.mark.parametrize("lazy, eager, args, shape", LAZY, ids=IDS)
def test_load_state_dict_gives_the_shapes_then_the_first_call_keeps_the_values(
    lazy, eager, args, shape
):
    source = eager_module(lazy, eager, shape[1], args)
    module = lazy(*args)
    module.load_state_dict(source.state_dict())
    assert not module.has_uninitialized_params() and type(module) is lazy
    x = sg.randn(*shape)
    module.eval(), source.eval()
    np.testing.assert_allclose(
        module(x).detach().numpy(), source(x).detach().numpy(), rtol=1e-6, atol=1e-6
    )
    assert type(module) is eager and repr(module) == repr(source)


def test_load_state_dict_then_a_wrong_input_size_raises_as_torch():
    module = nn.LazyLinear(3)
    module.load_state_dict(nn.Linear(2, 3).state_dict())
    with pytest.raises(AssertionError, match="in_features inferred from input: 5"):
        module(sg.ones(1, 5))


def test_state_dict_after_the_first_call_round_trips():
    module = nn.Sequential(nn.LazyConv2d(2, 3), nn.LazyBatchNorm2d())
    module(sg.randn(2, 3, 5, 5))
    copy = nn.Sequential(nn.LazyConv2d(2, 3), nn.LazyBatchNorm2d())
    copy.load_state_dict(module.state_dict())
    for (key, a), (_, b) in zip(module.state_dict().items(), copy.state_dict().items()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=key)


def _torch_net():
    return torch.nn.Sequential(
        torch.nn.LazyConv2d(4, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.LazyLinear(3),
    ).double()


def test_lazy_cnn_trains_as_torch_from_its_weights():
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=(8, 2, 6, 6)), rng.integers(0, 3, size=8)
    net = nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(3)).double()
    reference = _torch_net()
    opt = sg.optim.Adam(net.parameters(), lr=0.01)  # built before the first call, as PyTorch
    torch_opt = torch.optim.Adam(reference.parameters(), lr=0.01)
    x, y = sg.tensor(xs), sg.tensor(ys)
    tx, ty = torch.from_numpy(xs), torch.from_numpy(ys)
    net(x), reference(tx)
    assert [type(m) for m in net] == [nn.Conv2d, nn.ReLU, nn.Flatten, nn.Linear]
    net.load_state_dict({k: sg.tensor(v.numpy()) for k, v in reference.state_dict().items()})
    losses, torch_losses = [], []
    for _ in range(4):
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        torch_loss = torch.nn.functional.cross_entropy(reference(tx), ty)
        torch_opt.zero_grad()
        torch_loss.backward()
        torch_opt.step()
        torch_losses.append(torch_loss.item())
    np.testing.assert_allclose(losses, torch_losses, rtol=1e-10)


@pytest.mark.parametrize("transform", [sg.jit, sg.compile], ids=["jit", "compile"])
def test_jit_of_a_lazy_model_materializes_at_the_first_call(transform):
    net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
    run = transform(lambda x: net(x))
    x = sg.randn(5, 3)
    first = run(x)
    assert [type(m) for m in net] == [nn.Linear, nn.ReLU, nn.Linear]
    np.testing.assert_allclose(run(x).detach().numpy(), first.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(run(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-6)
    assert net[0].weight.shape == (4, 3)
