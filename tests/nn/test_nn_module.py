"""Module, Parameter and the containers: registration, names and order (against PyTorch for the
same architecture, built by one function from either ``nn``), train/eval, zero_grad, apply,
to(dtype), state_dict/load_state_dict and their errors, repr."""

import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import scratchgrad as sg
from scratchgrad import nn


def build(nn):
    """One architecture from either framework's ``nn``: nested, with shared and missing parts."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.norm = nn.BatchNorm1d(4)
            self.register_buffer("scale", torch.ones(1) if nn is torch.nn else sg.ones(1))
            self.register_buffer(
                "scratch", torch.zeros(2) if nn is torch.nn else sg.zeros(2), persistent=False
            )
            self.register_parameter("unused", None)

        def forward(self, x):
            return self.norm(self.fc(x)) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Linear(3, 4, bias=False)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.heads = nn.ModuleDict({"cls": nn.Linear(4, 2), "aux": nn.Identity()})
            self.tail = nn.Sequential(nn.ReLU(), nn.Dropout(0.1), nn.LayerNorm(4))
            self.tied = self.stem  # the same module twice: listed once

        def forward(self, x):
            x = self.stem(x)
            for block in self.blocks:
                x = block(x)
            return self.heads["cls"](self.tail(x))

    return Net()


def test_names_and_order_match_torch():
    ours, theirs = build(nn), build(torch.nn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [p.shape for p in ours.parameters()] == [tuple(p.shape) for p in theirs.parameters()]
    assert len(list(ours.modules())) == len(list(theirs.modules()))
    assert [n for n, _ in ours.named_parameters(recurse=False)] == []
    assert [n for n, _ in ours.blocks[0].named_parameters(prefix="b")] == [
        n for n, _ in theirs.blocks[0].named_parameters(prefix="b")
    ]


def test_repr_matches_torch():
    assert repr(build(nn)) == repr(build(torch.nn))
    for make in [
        lambda nn: nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.ReLU()]),
        lambda nn: nn.ModuleList(),
        lambda nn: nn.Sequential(OrderedDict(a=nn.Linear(2, 3), b=nn.GELU(approximate="tanh"))),
        lambda nn: nn.BatchNorm2d(3, momentum=None, affine=False, track_running_stats=False),
        lambda nn: nn.Embedding(7, 2, padding_idx=-2),
        lambda nn: nn.LayerNorm((2, 3), eps=1e-3, elementwise_affine=False),
        lambda nn: nn.LeakyReLU(0.2, inplace=True),
        lambda nn: nn.Softmax(),
    ]:
        assert repr(make(nn)) == repr(make(torch.nn))


def test_state_dict_round_trip_with_torch():
    ours, theirs = build(nn), build(torch.nn)
    ours(sg.randn(5, 3))  # move the running statistics away from their start
    theirs.load_state_dict(
        {k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()}
    )
    ours.eval(), theirs.eval()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    expected = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours(sg.tensor(x)).array, expected, rtol=1e-5, atol=1e-6)

    fresh = build(nn)
    result = fresh.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    fresh.eval()
    np.testing.assert_allclose(fresh(sg.tensor(x)).array, expected, rtol=1e-5, atol=1e-6)


def test_state_dict_shares_memory_and_is_detached():
    fc = nn.Linear(2, 3)
    state = fc.state_dict()
    assert isinstance(state, OrderedDict)
    assert not state["weight"].requires_grad and type(state["weight"]) is sg.Tensor
    state["weight"].array[0, 0] = 42.0
    assert fc.weight.array[0, 0] == 42.0
    assert fc.state_dict(keep_vars=True)["weight"] is fc.weight


def test_num_batches_tracked_is_int64():
    state = nn.BatchNorm1d(2).state_dict()
    assert state["num_batches_tracked"].dtype == sg.int64 and state["num_batches_tracked"].ndim == 0


def test_load_state_dict_copies_in_place_and_keeps_dtype():
    fc = nn.Linear(2, 2)
    weight = fc.weight
    fc.load_state_dict({"weight": np.ones((2, 2)), "bias": sg.tensor([1.0, 2.0], dtype=sg.float64)})
    assert fc.weight is weight and fc.weight.dtype == sg.float32
    np.testing.assert_array_equal(fc.weight.array, 1)
    np.testing.assert_array_equal(fc.bias.array, [1, 2])
    assert fc.weight.requires_grad and fc.weight.grad_fn is None


def test_load_state_dict_reports_every_problem_by_name_and_changes_nothing():
    net = nn.Sequential(OrderedDict(fc=nn.Linear(4, 4), out=nn.Linear(4, 2)))
    before = {k: v.array.copy() for k, v in net.state_dict().items()}
    bad = {
        "fc.weight": sg.zeros(3, 4),
        "out.weight": sg.zeros(2, 4),
        "out.bias": sg.zeros(2),
        "extra.weight": sg.zeros(1),
    }
    with pytest.raises(RuntimeError) as error:
        net.load_state_dict(bad)
    message = str(error.value)
    assert 'Missing key(s) in state_dict: "fc.bias"' in message
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in message
    assert (
        "size mismatch for fc.weight: copying a param with shape scratchgrad.Size([3, 4]) from "
        "checkpoint, the shape in current model is scratchgrad.Size([4, 4])" in message
    )
    for key, value in net.state_dict().items():  # checked before anything was copied
        np.testing.assert_array_equal(value.array, before[key])
    with pytest.raises(RuntimeError, match="size mismatch"):  # even when not strict
        net.load_state_dict(bad, strict=False)


def test_load_state_dict_not_strict_returns_the_keys():
    net = nn.Sequential(nn.Linear(2, 2))
    result = net.load_state_dict({"0.weight": sg.ones(2, 2), "x": sg.ones(1)}, strict=False)
    assert result.missing_keys == ["0.bias"] and result.unexpected_keys == ["x"]
    np.testing.assert_array_equal(net[0].weight.array, 1)
    expected = torch.nn.Sequential(torch.nn.Linear(2, 2)).load_state_dict(
        {"0.weight": torch.ones(2, 2), "x": torch.ones(1)}, strict=False
    )
    assert (result.missing_keys, result.unexpected_keys) == (
        expected.missing_keys,
        expected.unexpected_keys,
    )


def test_load_state_dict_result_prints_as_pytorchs():
    for lib in (sg, torch):
        net = lib.nn.Linear(2, 2)
        matched = net.load_state_dict(net.state_dict())
        partial = net.load_state_dict({"weight": net.weight.detach()}, strict=False)
        assert repr(matched) == str(matched) == "<All keys matched successfully>"
        assert repr(partial) == "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])"


def test_train_eval_recurse():
    net = build(nn)
    assert all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError):
        net.train("yes")


def test_zero_grad():
    fc = nn.Linear(2, 2)
    fc(sg.ones(1, 2)).sum().backward()
    grad = fc.weight.grad
    fc.zero_grad(set_to_none=False)
    assert fc.weight.grad.array is grad.array and not fc.weight.grad.array.any()
    fc.zero_grad()
    assert fc.weight.grad is None and fc.bias.grad is None


def test_apply_visits_children_first_as_torch():
    def order(nn):
        seen = []
        build(nn).apply(lambda m: seen.append(type(m).__name__))
        return seen

    assert order(nn) == order(torch.nn)


def test_to_dtype_keeps_the_parameter_objects():
    bn = nn.BatchNorm1d(3)
    bn(sg.randn(4, 3)).sum().backward()
    params = list(bn.parameters())
    assert bn.to(sg.float64) is bn
    assert [p is q for p, q in zip(params, bn.parameters())] == [True, True]
    assert all(p.dtype == sg.float64 and p.grad.dtype == sg.float64 for p in params)
    assert bn.running_var.dtype == sg.float64 and bn.num_batches_tracked.dtype == sg.int64
    assert bn.float().weight.dtype == sg.float32 and bn.half().weight.dtype == sg.float16
    assert bn.to("cpu") is bn and bn.cpu() is bn
    if not sg.cuda.is_available():  # on a GPU machine, the move works
        with pytest.raises(RuntimeError, match="'cuda' is not available"):
            bn.to("cuda")
    with pytest.raises(TypeError):
        bn.to(sg.int64)


@pytest.mark.parametrize("dst_type", ["DoubleTensor", "torch.DoubleTensor", "float16"])
def test_type_casts_every_parameter_buffer_and_gradient_as_torch(dst_type):
    """``model.type(torch.DoubleTensor)`` in old code: unlike ``to``, integer buffers too."""
    results = []
    for lib in (sg, torch):
        bn = lib.nn.BatchNorm1d(3)
        bn.weight.grad = lib.ones(3)
        weight = bn.weight
        cast = dst_type if "." in dst_type else getattr(lib, dst_type)
        assert bn.type(cast) is bn and bn.weight is weight
        dtypes = [bn.weight.dtype, bn.weight.grad.dtype, bn.running_var.dtype]
        results.append([str(d).split(".")[-1] for d in [*dtypes, bn.num_batches_tracked.dtype]])
    assert results[0] == results[1]


def test_setattr_registers_and_guards():
    m = nn.Module()
    m.w = nn.Parameter(sg.zeros(2))
    m.child = nn.Linear(1, 1)
    m.register_buffer("b", sg.zeros(1))
    m.plain = 3
    assert list(m._parameters) == ["w"] and list(m._modules) == ["child"]
    assert list(m._buffers) == ["b"]
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = sg.zeros(2)
    m.w = None
    assert m.w is None and "w" not in m.state_dict()
    m.b = sg.ones(1)  # a tensor assigned to a buffer's name replaces the buffer
    assert m.state_dict()["b"].item() == 1
    with pytest.raises(TypeError):
        m.b = 3
    m.child = nn.Parameter(sg.ones(1))  # a name moves between kinds, as in PyTorch
    assert "child" not in m._modules and "child" in m._parameters
    del m.child
    assert "child" not in m._parameters and not hasattr(m, "child")
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("plain", sg.zeros(1))
    with pytest.raises(KeyError, match='contain "."'):
        m.register_buffer("a.b", sg.zeros(1))


def test_assigning_before_init_fails():
    class Broken(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Broken()


def test_entries_put_into_the_stores_directly_are_still_found():
    m = nn.Module()
    p = nn.Parameter(sg.ones(1))
    m._parameters["direct"] = p
    assert m.direct is p and list(m.parameters()) == [p]
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        m.missing  # noqa: B018


def test_shared_parameters_are_listed_once():
    fc = nn.Linear(2, 2)
    net = nn.Sequential(fc, nn.ReLU(), fc)
    assert len(list(net.parameters())) == 2
    assert len(list(net.named_parameters(remove_duplicate=False))) == 4
    assert list(net.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_forward_is_required():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


def test_deepcopy_gives_independent_parameters():
    net = build(nn)
    clone = copy.deepcopy(net)
    assert type(clone.stem.weight) is nn.Parameter and clone.tied is clone.stem
    clone.stem.weight.array[...] = 0
    assert net.stem.weight.array.any()
    x = sg.randn(2, 3)
    net.eval(), clone.eval()
    assert clone(x).shape == net(x).shape


def test_deepcopy_leaves_the_gradients_behind_as_torch():
    # (a copied model stepped before its first backward must not apply the original's grads)
    for m in (torch, sg):
        net = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1d(2))
        net(m.ones(3, 2)).sum().backward()
        frozen = m.nn.Parameter(m.ones(2), requires_grad=False)
        frozen.grad = m.ones(2)
        clone, frozen_clone = copy.deepcopy(net), copy.deepcopy(frozen)
        assert [p.grad for p in clone.parameters()] == [None, None, None, None]
        assert frozen_clone.grad is None and not frozen_clone.requires_grad
        assert type(frozen_clone) is m.nn.Parameter
        assert all(p.grad is not None for p in net.parameters())


def test_get_submodule_and_requires_grad():
    net = build(nn)
    assert net.get_submodule("blocks.1.fc") is net.blocks[1].fc
    assert net.get_submodule("") is net
    with pytest.raises(AttributeError):
        net.get_submodule("blocks.7")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


# ---- Parameter --------------------------------------------------------------------------------


def test_parameter():
    data = sg.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, sg.Tensor) and p.requires_grad and p.is_leaf
    assert p.array is data.array  # shares memory, as torch.nn.Parameter
    assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))
    assert type(p * 2) is sg.Tensor and type(p.detach()) is sg.Tensor
    assert not nn.Parameter(sg.ones(1), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    made = sg.ones(2, requires_grad=True) * 3
    q = nn.Parameter(made)
    assert q.is_leaf and q.grad_fn is None
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])
    with pytest.raises(RuntimeError):
        nn.Parameter(sg.tensor([1, 2]))  # integers cannot require gradients


# ---- containers ---------------------------------------------------------------------------------


def test_sequential():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    assert list(seq[1:]._modules) == ["1", "2"]  # keys kept, as PyTorch
    with pytest.raises(IndexError):
        seq[3]
    d = nn.Tanh()
    seq[1] = d
    assert seq[1] is d
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and list(seq._modules) == ["0", "1", "2", "3"]
    del seq[3]
    assert len(seq) == 3
    named = nn.Sequential(OrderedDict(first=a, second=c))
    assert named.first is a and list(named.state_dict())[0] == "first.weight"
    assert named(sg.ones(4, 2)).shape == (4, 1)


def test_module_list():
    layers = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()])
    layers.append(nn.Tanh())
    layers.extend([nn.Sigmoid()])
    layers += [nn.GELU()]
    layers.insert(0, nn.Identity())
    names = [type(m).__name__ for m in layers]
    assert names == ["Identity", "Linear", "ReLU", "Tanh", "Sigmoid", "GELU"]
    assert list(layers._modules) == [str(i) for i in range(6)]
    del layers[1]
    assert list(layers._modules) == [str(i) for i in range(5)]
    assert type(layers[0]).__name__ == "Identity" and type(layers[1]).__name__ == "ReLU"
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    assert layers[-1] is list(layers)[-1]


def test_module_dict():
    heads = nn.ModuleDict({"a": nn.Linear(1, 1)})
    heads["b"] = nn.ReLU()
    heads.update([("c", nn.Tanh())])
    assert list(heads) == ["a", "b", "c"] and "b" in heads and len(heads) == 3
    assert [k for k, _ in heads.items()] == list(heads.keys())
    assert isinstance(heads.pop("b"), nn.ReLU) and "b" not in heads
    del heads["c"]
    assert list(heads.values())[0] is heads["a"]
    with pytest.raises(KeyError):
        del heads["zzz"]


def _stack(m):
    return m.nn.Sequential(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3))


@pytest.mark.parametrize(
    "call",
    [
        lambda net, m: net.get_parameter("0.weight").shape,
        lambda net, m: net.get_buffer("1.running_mean").shape,
        lambda net, m: net.get_parameter("1.running_mean"),
        lambda net, m: net.get_buffer("1.weight"),
        lambda net, m: net.get_parameter("0.nope"),
        lambda net, m: net.set_submodule("", m.nn.ReLU()),
        lambda net, m: net.set_submodule("0", 3),
        lambda net, m: net.set_submodule("1.x", m.nn.ReLU(), strict=True),
        lambda net, m: net.set_submodule("1.weight", m.nn.ReLU()),
    ],
)
def test_get_parameter_get_buffer_and_set_submodule_answer_and_refuse_as_torch(call):
    results = []
    for m in (torch, sg):
        try:
            results.append(tuple(call(_stack(m), m)))
        except (AttributeError, ValueError) as error:
            results.append((type(error), str(error)))
    assert results[0] == results[1]


def test_set_submodule_replaces_a_layer_its_parameters_follow():
    net = _stack(sg)
    net.set_submodule("0", sg.nn.Linear(2, 3, bias=False))
    assert net[0].bias is None and "0.bias" not in net.state_dict()
    net.set_submodule("0.extra", sg.nn.ReLU())  # a new attribute, strict=False
    assert isinstance(net.get_submodule("0.extra"), sg.nn.ReLU)


def test_a_one_element_checkpoint_value_loads_into_a_0d_parameter_as_torch():
    # PyTorch 0.3 saved 0-d tensors as shape (1,); PyTorch reads them, any longer shape is an error
    for lib in (sg, torch):
        module = lib.nn.Module()
        module.scale = lib.nn.Parameter(lib.tensor(1.0))
        assert tuple(module.load_state_dict({"scale": lib.tensor([4.0])})) == ([], [])
        assert module.scale.shape == () and module.scale.item() == 4.0
        with pytest.raises(RuntimeError, match="size mismatch for scale"):
            module.load_state_dict({"scale": lib.tensor([4.0, 5.0])})


def test_assigning_an_integer_tensor_to_a_parameter_that_requires_grad_raises_as_torch():
    for lib in (sg, torch):
        fc = lib.nn.Linear(2, 2)
        state = {"weight": lib.ones(2, 2), "bias": lib.tensor([1, 2])}
        with pytest.raises(RuntimeError, match='parameter named "bias".*floating point'):
            fc.load_state_dict(state, assign=True)
        fc.bias.requires_grad_(False)  # a frozen one takes it, as in PyTorch
        fc.load_state_dict(state, assign=True)
        assert fc.bias.dtype == lib.int64 and fc.bias.tolist() == [1, 2]


@pytest.mark.parametrize(
    "value", [[1.0, 2.0], 3.0, None, "w"], ids=["list", "float", "none", "str"]
)
def test_load_state_dict_refuses_values_that_are_not_tensors_as_torch(value):
    for lib in (sg, torch):
        fc = lib.nn.Linear(2, 2)
        before = fc.weight.tolist()
        for strict in (True, False):
            with pytest.raises(RuntimeError, match='named "bias", expected torch.Tensor'):
                fc.load_state_dict({"weight": lib.ones(2, 2), "bias": value}, strict=strict)
        if lib is sg:  # checked before anything is copied (PyTorch copies the weight)
            assert fc.weight.tolist() == before


def _layouts(model):
    return [(p.stride(), None if p.grad is None else p.grad.stride()) for p in model.parameters()]


def test_module_to_a_memory_format_lays_out_4d_parameters_and_grads_as_torch():
    ours = sg.nn.Sequential(sg.nn.Conv2d(3, 4, 3), sg.nn.Flatten(), sg.nn.Linear(4, 2))
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4, 2)
    )
    for model, m in ((ours, sg), (theirs, torch)):
        model[0].weight.grad = m.ones(4, 3, 3, 3)
        assert model.to(memory_format=m.channels_last) is model
    assert _layouts(ours) == _layouts(theirs)
    assert ours[0].weight.is_contiguous(memory_format=sg.channels_last)
    ours.to(memory_format=sg.contiguous_format), theirs.to(memory_format=torch.contiguous_format)
    assert _layouts(ours) == _layouts(theirs)


def test_module_to_channels_last_refuses_a_5d_parameter_before_any_change():
    ours = sg.nn.Sequential(sg.nn.Conv2d(2, 3, 3), sg.nn.Conv3d(2, 3, 3))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.Conv3d(2, 3, 3))
    with pytest.raises(RuntimeError) as error:
        theirs.to(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match=str(error.value)):
        ours.to(memory_format=sg.channels_last)
    assert ours[0].weight.is_contiguous()  # (PyTorch's had changed the first layer already)
    ours[1].to(memory_format=sg.channels_last_3d)
    assert (
        ours[1].weight.stride()
        == theirs[1].to(memory_format=torch.channels_last_3d).weight.stride()
    )


def test_a_channels_last_model_trains_to_the_row_major_bits():
    models = [sg.nn.Sequential(sg.nn.Conv2d(1, 8, 3), sg.nn.ReLU(), sg.nn.Flatten()) for _ in "ab"]
    models[1].load_state_dict(models[0].state_dict())
    models[1].to(memory_format=sg.channels_last)
    x = sg.randn(4, 1, 8, 8, generator=sg.Generator().manual_seed(0))
    for model, batch in zip(models, (x, x.to(memory_format=sg.channels_last))):
        optimizer = sg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            optimizer.zero_grad()
            model(batch).square().mean().backward()
            optimizer.step()
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        assert a.detach().numpy().tobytes() == b.detach().numpy().tobytes()
    # a cast afterwards gives a row-major copy (PyTorch's keeps channels-last): strides say so
    models[1].double()
    assert models[1][0].weight.is_contiguous() and models[1][0].weight.stride() == (9, 9, 3, 1)
