"""Old checkpoints of the batch and instance norms against PyTorch: a state dict saved before
version 2 (no ``num_batches_tracked``, its ``_metadata`` version 1 or absent) loads strictly,
the module keeping its own count; at version 2 the key is missing as usual; a checkpoint
without a version holding running statistics that an untracked instance norm lacks is an
error naming them."""

from collections import OrderedDict

import numpy as np
import pytest

import scratchgrad as sg

torch = pytest.importorskip("torch")

NORMS = {
    "BatchNorm1d": ((3,), {}, (4, 3)),
    "BatchNorm2d": ((3,), {}, (4, 3, 2, 2)),
    "BatchNorm3d": ((3,), {}, (4, 3, 2, 2, 2)),
    "InstanceNorm1d": ((3,), {"affine": True, "track_running_stats": True}, (4, 3, 5)),
}


def pair(name, args, kwargs):
    """The norm inside a Sequential (so keys and metadata have a prefix) in both libraries,
    PyTorch's trained for three batches, ours with its count at 5 (what a load must keep)."""
    theirs = torch.nn.Sequential(torch.nn.Identity(), getattr(torch.nn, name)(*args, **kwargs))
    ours = sg.nn.Sequential(sg.nn.Identity(), getattr(sg.nn, name)(*args, **kwargs))
    for model in (theirs, ours):
        if model[1].track_running_stats:
            model[1].num_batches_tracked.fill_(5)
    return ours, theirs


def trained_checkpoint(name, args, kwargs, shape):
    """The state dict (with its ``_metadata``) of PyTorch's norm, in a Sequential as ``pair``'s,
    after three batches."""
    source = torch.nn.Sequential(torch.nn.Identity(), getattr(torch.nn, name)(*args, **kwargs))
    torch.manual_seed(0)
    for _ in range(3):
        source(torch.randn(*shape))
    return source.state_dict()


def ours_of(state):
    """PyTorch's state dict as scratchgrad's, with a copy of its ``_metadata`` if it has one."""
    out = OrderedDict((k, sg.tensor(v.numpy())) for k, v in state.items())
    if hasattr(state, "_metadata"):
        out._metadata = OrderedDict((k, dict(v)) for k, v in state._metadata.items())
    return out


def load_both(ours, theirs, state, **kwargs):
    """Load ``state`` into both; (our result, PyTorch's): the keys returned, or the error."""
    results = []
    for model, checkpoint in ((ours, ours_of(state)), (theirs, state)):
        try:
            keys = model.load_state_dict(checkpoint, **kwargs)
            results.append((keys.missing_keys, keys.unexpected_keys))
        except RuntimeError as error:
            results.append(str(error))
    return results


def assert_same_state(ours, theirs):
    mine, their = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(their)
    for key in their:
        np.testing.assert_allclose(mine[key].numpy(), their[key].numpy(), rtol=1e-6)


@pytest.mark.parametrize("old", ["version 1", "no version", "no metadata"])
@pytest.mark.parametrize("name", NORMS)
def test_a_checkpoint_before_version_2_loads_strictly_keeping_the_count(name, old):
    args, kwargs, shape = NORMS[name]
    ours, theirs = pair(name, args, kwargs)
    state = trained_checkpoint(name, args, kwargs, shape)
    del state["1.num_batches_tracked"]
    if old == "version 1":
        state._metadata["1"]["version"] = 1
    elif old == "no version":
        del state._metadata["1"]["version"]
    else:
        del state._metadata
    mine, their = load_both(ours, theirs, state)
    assert mine == their == ([], [])
    assert int(theirs[1].num_batches_tracked) == 5  # (its own count, not the checkpoint's)
    assert_same_state(ours, theirs)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("name", NORMS)
def test_a_version_2_checkpoint_without_the_count_misses_it(name, strict):
    args, kwargs, shape = NORMS[name]
    ours, theirs = pair(name, args, kwargs)
    state = trained_checkpoint(name, args, kwargs, shape)
    del state["1.num_batches_tracked"]
    mine, their = load_both(ours, theirs, state, strict=strict)
    assert mine == their
    assert ("Missing key(s)" in their) if strict else (their == (["1.num_batches_tracked"], []))


def test_an_old_checkpoint_is_upgraded_before_the_load_pre_hooks_see_it():
    seen = []
    ours, theirs = pair("BatchNorm1d", (3,), {})
    for model in (ours, theirs):
        model[1].register_load_state_dict_pre_hook(
            lambda module, state, prefix, *rest: seen.append(sorted(state))
        )
    state = trained_checkpoint("BatchNorm1d", (3,), {}, (4, 3))
    del state["1.num_batches_tracked"], state._metadata
    load_both(ours, theirs, state)
    assert seen[0] == seen[1] and "1.num_batches_tracked" in seen[0]


def test_an_old_checkpoint_into_a_model_on_the_meta_device_counts_from_0():
    models = []
    for lib in (sg, torch):
        with lib.device("meta"):
            models.append(lib.nn.BatchNorm1d(3))
    ours, theirs = models
    state = torch.nn.BatchNorm1d(3).state_dict()
    del state["num_batches_tracked"], state._metadata
    mine, their = load_both(ours, theirs, state, assign=True)
    assert mine == their == ([], [])
    assert int(ours.num_batches_tracked) == int(theirs.num_batches_tracked) == 0


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("keys", [("running_mean", "running_var"), ("running_var",)])
def test_running_stats_in_an_unversioned_checkpoint_of_an_untracked_instance_norm(keys, strict):
    ours, theirs = pair("InstanceNorm2d", (3,), {"affine": True})
    state = theirs.state_dict()
    for key in keys:
        state["1." + key] = torch.zeros(3)
    del state._metadata["1"]["version"]
    mine, their = load_both(ours, theirs, state, strict=strict)
    assert mine == their
    assert "Unexpected running stats buffer(s)" in their and "Unexpected key" not in their


def test_running_stats_in_a_versioned_checkpoint_of_an_untracked_instance_norm():
    ours, theirs = pair("InstanceNorm2d", (3,), {})
    state = theirs.state_dict()
    state["1.running_mean"] = torch.zeros(3)
    mine, their = load_both(ours, theirs, state)
    assert mine == their and 'Unexpected key(s) in state_dict: "1.running_mean"' in their
