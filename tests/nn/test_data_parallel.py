"""``nn.DataParallel`` against PyTorch's CPU build, where it is a pass-through wrapper: older
pytorch/examples scripts wrap their model in it unconditionally (it was missing here)."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

NO_GPU = pytest.mark.skipif(sg.accelerator.is_available(), reason="an accelerator is here")


@NO_GPU
def test_data_parallel_wraps_as_torchs_on_the_cpu():
    torch.manual_seed(0)
    theirs = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh()))
    ours = sg.nn.DataParallel(sg.nn.Sequential(sg.nn.Linear(3, 4), sg.nn.Tanh()))
    ours.load_state_dict({k: sg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert (
        list(ours.state_dict())
        == list(theirs.state_dict())
        == [
            "module.0.weight",
            "module.0.bias",
        ]
    )
    assert repr(ours) == repr(theirs) and ours.device_ids == theirs.device_ids == []
    x = np.random.default_rng(0).standard_normal((5, 3)).astype("float32")
    theirs(torch.from_numpy(x)).square().sum().backward()
    ours(sg.from_numpy(x)).square().sum().backward()
    for ours_p, theirs_p in zip(ours.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(ours_p.grad.numpy(), theirs_p.grad.numpy(), rtol=1e-6)


@NO_GPU
def test_functional_data_parallel_without_an_accelerator_raises_as_torch():
    """(dcgan calls it only for CUDA inputs; elsewhere the error is PyTorch's)"""
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.parallel.data_parallel(torch.nn.Linear(2, 1), torch.ones(1, 2))
    with pytest.raises(RuntimeError) as ours:
        sg.nn.parallel.data_parallel(sg.nn.Linear(2, 1), sg.ones(1, 2))
    assert str(ours.value) == str(theirs.value)
