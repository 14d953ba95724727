"""``torch.nn.modules.*`` import paths (``from torch.nn.modules.loss import _Loss``,
``nn.modules.batchnorm._BatchNorm`` in weight-decay grouping code, ``nn.modules.utils._pair``)
and ``SyncBatchNorm`` on CPU, against PyTorch's."""

import importlib
from collections import OrderedDict

import numpy as np
import pytest
import torch
from oracle import assert_close, assert_doc_examples_run, assert_raises_as_torch, module_pair

import scratchgrad as sg
from scratchgrad import nn

SUBMODULES = [
    *("activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance"),
    *("dropout", "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module"),
    *("normalization", "padding", "pixelshuffle", "pooling", "rnn", "sparse", "transformer"),
    *("upsampling", "utils"),
]
# in PyTorch's submodules' __all__ but not in scratchgrad
ABSENT = {"Container", "NLLLoss2d", "LinearCrossEntropyLoss", "CrossMapLRN2d"}


@pytest.mark.parametrize("name", SUBMODULES)
def test_each_submodule_has_torchs_public_names(name):
    ours = importlib.import_module(f"scratchgrad.nn.modules.{name}")
    theirs = importlib.import_module(f"torch.nn.modules.{name}")
    wanted = set(theirs.__all__) - ABSENT
    assert wanted <= set(dir(ours)), sorted(wanted - set(dir(ours)))
    for attr in ours.__all__:  # the same names, for the same things
        assert hasattr(theirs, attr), f"torch.nn.modules.{name} has no {attr}"
        if attr in dir(nn):
            assert getattr(ours, attr) is getattr(nn, attr)


def test_base_classes_from_their_paths():
    from scratchgrad.nn.modules.activation import MultiheadAttention
    from scratchgrad.nn.modules.batchnorm import _BatchNorm
    from scratchgrad.nn.modules.conv import _ConvNd
    from scratchgrad.nn.modules.loss import _Loss

    assert sg.nn.modules.module.Module is nn.Module and MultiheadAttention is nn.MultiheadAttention
    assert isinstance(nn.MSELoss(), _Loss) and isinstance(nn.Conv2d(1, 1, 1), _ConvNd)
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2), nn.LayerNorm(2), nn.SyncBatchNorm(2))
    # the usual weight-decay grouping: no decay for the batch norms' parameters
    no_decay = [n for m_name, m in net.named_modules() if isinstance(m, _BatchNorm)
                for n, _ in m.named_parameters(prefix=m_name)]  # fmt: skip
    assert no_decay == ["1.weight", "1.bias", "3.weight", "3.bias"]


@pytest.mark.parametrize("helper", ["_single", "_pair", "_triple", "_quadruple"])
@pytest.mark.parametrize("value", [3, (1, 2), [4, 5, 6], "ab", 2.5])
def test_ntuple_helpers_as_torchs(helper, value):
    ours = getattr(sg.nn.modules.utils, helper)
    theirs = getattr(torch.nn.modules.utils, helper)
    assert ours(value) == theirs(value) and ours.__name__ == theirs.__name__


def test_other_utils_as_torchs():
    ours, theirs = sg.nn.modules.utils, torch.nn.modules.utils
    assert ours._reverse_repeat_tuple((1, 2, 3), 2) == theirs._reverse_repeat_tuple((1, 2, 3), 2)
    for size in [5, [None, 3], [2, None]]:
        assert ours._list_with_default(size, [1, 2, 7, 8]) == theirs._list_with_default(
            size, [1, 2, 7, 8]
        )
    assert_raises_as_torch(
        lambda t: t.nn.modules.utils._list_with_default([1, 2], [3, 4]),
        ValueError,
        "at least 3",
    )


def test_consume_prefix_as_torchs():
    dicts = []
    for lib in (sg, torch):
        model = lib.nn.Sequential(OrderedDict(fc=lib.nn.Linear(2, 3)))
        state = model.state_dict()
        state = OrderedDict((f"module.{k}", v) for k, v in state.items())
        state._metadata = OrderedDict([("", {}), ("module", {"v": 1}), ("module.fc", {"v": 2})])
        lib.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, "module.")
        dicts.append((list(state), dict(state._metadata)))
        model.load_state_dict(state)
    assert dicts[0] == dicts[1]


# ---- SyncBatchNorm -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 2, 3)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_sync_batch_norm_on_cpu_is_batch_norm(shape, momentum):
    """Without a process group PyTorch's is plain batch norm, in training (any rank >= 2) and
    in eval mode: outputs, gradients and running statistics over a few steps."""
    ours, theirs = module_pair(lambda nn: nn.SyncBatchNorm(3, momentum=momentum))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = np.random.default_rng(0)
    for training in (True, True, False):
        ours.train(training), theirs.train(training)
        x = rng.standard_normal(shape)
        a, b = sg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, expected = ours(a), theirs(b)
        assert_close(out, expected)
        out.square().sum().backward(), expected.square().sum().backward()
        assert_close(a.grad, b.grad)
        assert_close(ours.weight.grad, theirs.weight.grad)
        for name, buffer in theirs.named_buffers():
            assert_close(ours.get_buffer(name), buffer)


def test_sync_batch_norm_refuses_what_torchs_refuses():
    assert_raises_as_torch(lambda t: t.nn.SyncBatchNorm(3)(t.ones(3)), ValueError, "at least 2D")
    assert_raises_as_torch(
        lambda t: t.nn.SyncBatchNorm(0)(t.ones(2, 0)), ValueError, "channels should be non-zero"
    )
    assert_raises_as_torch(lambda t: t.nn.SyncBatchNorm(3)(t.ones(2, 4)), RuntimeError, "3")


def test_convert_sync_batchnorm_as_torchs():
    def build(lib):
        lib.manual_seed(0)
        net = lib.nn.Sequential(
            lib.nn.Conv2d(3, 3, 1),
            lib.nn.BatchNorm2d(3, affine=False),
            lib.nn.Sequential(lib.nn.BatchNorm1d(3, momentum=None, bias=False).eval()),
            lib.nn.InstanceNorm1d(3),
        )
        return net, lib.nn.SyncBatchNorm.convert_sync_batchnorm(net)

    (ours_before, ours), (_, theirs) = build(sg), build(torch)
    assert repr(ours) == repr(theirs) and ours is ours_before
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()]
    original = nn.BatchNorm1d(3)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(original)
    assert type(converted) is nn.SyncBatchNorm and converted.weight is original.weight
    assert converted.running_mean is original.running_mean
    assert_doc_examples_run(nn.SyncBatchNorm)


def test_a_subclass_of_batch_norm_checks_the_input_with_its_own_method():
    """Code subclassing ``_BatchNorm`` overrides ``_check_input_dim``, as PyTorch's asks."""
    from scratchgrad.nn.modules.batchnorm import _BatchNorm

    class AnyRank(_BatchNorm):
        def _check_input_dim(self, input):
            pass

    assert AnyRank(2)(sg.randn(3, 2, 1, 1, 1, 1)).shape == (3, 2, 1, 1, 1, 1)
