"""The "meta" device (``scratchgrad/meta.py``) against PyTorch's: tensors with a shape and a dtype
and no data, made there or moved there, printed, deep-copied, and used as the stateless template
of ``functional_call``; reading their values and computing on them raise."""

import copy

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad.func import functional_call


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


@pytest.mark.parametrize(
    "compute",
    [
        lambda x: x + 1,
        lambda x: x.sum(),
        lambda x: x.exp(),
        lambda x: x @ x.mT,
        lambda x: x[0],
        lambda x: sg.nn.Linear(3, 2)(x.cpu()),
    ],
    ids=["add", "sum", "exp", "matmul", "index", "to cpu"],
)
def test_computing_on_meta_tensors_raises_naming_the_device(compute):
    """PyTorch gives a meta result of the right shape; scratchgrad refuses rather than make up
    numbers, and says why."""
    x = sg.empty(2, 3, device="meta")
    with pytest.raises(NotImplementedError, match="meta"):
        compute(x)


def test_a_layer_on_meta_refuses_inputs():
    layer = sg.nn.Linear(3, 2).to("meta")
    with pytest.raises(NotImplementedError, match="meta device"):
        layer(sg.ones(4, 3))


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
