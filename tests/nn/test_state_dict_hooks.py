"""State-dict hooks of modules against PyTorch: the same model in both libraries with the same
hooks on every module, comparing the order of the calls, what each hook is given (prefixes of
nested modules, ``keep_vars``, metadata, the key lists), what the hooks change (the state dict's
keys and values, an old checkpoint's keys renamed, missing keys cleared), their errors, and
``remove()``."""

import doctest
from collections import OrderedDict

import numpy as np
import pytest
from oracle import module_pair

import scratchgrad as sg

torch = pytest.importorskip("torch")


def build(nn):
    """A tree two levels deep, with a batch norm (PyTorch's version 2) and a parameter-less
    layer."""
    encoder = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    return nn.Sequential(OrderedDict(encoder=encoder, norm=nn.BatchNorm1d(4), head=nn.Linear(4, 2)))


def names_of(model):
    return {id(module): name for name, module in model.named_modules()}


def on_every_module(model, register, make_hook):
    """``register(module, make_hook(name, names))`` on each module; returns the handles."""
    names = names_of(model)
    return [register(module, make_hook(name, names)) for name, module in model.named_modules()]


def state_dict_recorders(model, calls):
    """Pre- and post-hooks on every module recording what they are given."""

    def pre(name, names):
        def hook(module, prefix, keep_vars):
            calls.append(("pre", name, names[id(module)], prefix, keep_vars))

        return hook

    def post(name, names):
        def hook(module, state_dict, prefix, local_metadata):
            calls.append(
                ("post", name, names[id(module)], prefix, list(state_dict), local_metadata)
            )

        return hook

    return on_every_module(model, type(model).register_state_dict_pre_hook, pre) + (
        on_every_module(model, type(model).register_state_dict_post_hook, post)
    )


def load_recorders(model, calls):
    """Load pre- and post-hooks on every module recording copies of what they are given."""

    def pre(name, names):
        def hook(module, state_dict, prefix, metadata, strict, missing, unexpected, errors):
            calls.append(
                ("pre", name, names[id(module)], prefix, list(state_dict), dict(metadata))
                + (strict, list(missing), list(unexpected), list(errors))
            )

        return hook

    def post(name, names):
        def hook(module, keys):
            calls.append(
                (
                    "post",
                    name,
                    names[id(module)],
                    list(keys.missing_keys),
                    list(keys.unexpected_keys),
                )
            )

        return hook

    return on_every_module(model, type(model).register_load_state_dict_pre_hook, pre) + (
        on_every_module(model, type(model).register_load_state_dict_post_hook, post)
    )


def to_torch(state):
    return {key: torch.from_numpy(value.numpy().copy()) for key, value in state.items()}


def to_ours(state):
    return {key: sg.tensor(value.numpy()) for key, value in state.items()}


def assert_same_state(ours, theirs):
    assert list(ours) == list(theirs)
    for key in ours:
        np.testing.assert_array_equal(ours[key].detach().numpy(), theirs[key].detach().numpy(), key)


@pytest.mark.parametrize("prefix, keep_vars", [("", False), ("model.", True)])
def test_state_dict_hooks_see_what_torch_gives_them(prefix, keep_vars):
    ours, theirs = module_pair(build)
    our_calls, their_calls = [], []
    state_dict_recorders(ours, our_calls)
    state_dict_recorders(theirs, their_calls)
    ours_state = ours.state_dict(prefix=prefix, keep_vars=keep_vars)
    theirs_state = theirs.state_dict(prefix=prefix, keep_vars=keep_vars)
    assert our_calls == their_calls
    assert [call[1] for call in our_calls][:3] == ["", "encoder", "encoder.0"]
    assert dict(ours_state._metadata) == dict(theirs_state._metadata)
    assert_same_state(ours_state, theirs_state)
    assert (ours_state[prefix + "head.weight"] is ours.head.weight) == keep_vars


def test_state_dict_metadata_holds_each_modules_version():
    metadata = build(sg.nn).state_dict()._metadata
    assert metadata == build(torch.nn).state_dict()._metadata
    assert metadata["norm"] == {"version": 2} and metadata[""] == {"version": 1}


def convert_head(module, state_dict, prefix, local_metadata):
    """Store the head in half precision and say so in its metadata."""
    state_dict[prefix + "weight"] = state_dict[prefix + "weight"].half()
    state_dict[prefix + "scale"] = state_dict[prefix + "bias"] * 0 + 2
    local_metadata["stored"] = "half"


def test_state_dict_post_hook_changes_the_dict_in_place():
    ours, theirs = module_pair(build)
    ours.head.register_state_dict_post_hook(convert_head)
    theirs.head.register_state_dict_post_hook(convert_head)
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert ours_state["head.weight"].dtype == sg.float16
    assert ours_state._metadata["head"] == {"version": 1, "stored": "half"}
    assert dict(ours_state._metadata) == dict(theirs_state._metadata)
    assert_same_state(ours_state, theirs_state)


def test_state_dict_post_hook_returning_a_value_is_an_error():
    for library in (torch, sg):
        layer = library.nn.Linear(2, 1)
        layer.register_state_dict_post_hook(lambda module, state_dict, prefix, meta: state_dict)
        with pytest.raises(RuntimeError, match="^state_dict post-hook must return None$"):
            layer.state_dict()


@pytest.mark.parametrize("with_metadata", [True, False])
@pytest.mark.parametrize("strict", [True, False])
def test_load_hooks_see_what_torch_gives_them(with_metadata, strict):
    ours, theirs = module_pair(build)
    checkpoint = build(torch.nn).state_dict()  # (other values, with their _metadata)
    del checkpoint["encoder.0.bias"], checkpoint["norm.running_var"]
    checkpoint["encoder.0.extra"] = torch.ones(1)
    checkpoint["surplus"] = torch.ones(1)
    if not with_metadata:
        checkpoint = dict(checkpoint)
    ours_checkpoint = to_ours(checkpoint)
    if with_metadata:
        ours_checkpoint = OrderedDict(ours_checkpoint)
        ours_checkpoint._metadata = checkpoint._metadata
    our_calls, their_calls = [], []
    load_recorders(ours, our_calls)
    load_recorders(theirs, their_calls)
    if strict:
        with pytest.raises(RuntimeError) as theirs_error:
            theirs.load_state_dict(checkpoint)
        with pytest.raises(RuntimeError) as ours_error:
            ours.load_state_dict(ours_checkpoint)
        assert str(ours_error.value) == str(theirs_error.value)
    else:
        result = ours.load_state_dict(ours_checkpoint, strict=False)
        expected = theirs.load_state_dict(checkpoint, strict=False)
        assert tuple(result) == tuple(expected)
    assert our_calls == their_calls
    assert [call[:2] for call in our_calls][:4] == [
        ("pre", ""),
        ("pre", "encoder"),
        ("pre", "encoder.0"),
        ("post", "encoder.0"),
    ]
    # as PyTorch, a strict load with a post-hook copies the values it can before raising
    assert_same_state(ours.state_dict(), theirs.state_dict())


def rename_old_keys(module, state_dict, prefix, *rest):
    """An old checkpoint's "gain"/"shift" are the layer's "weight"/"bias"."""
    for old, new in (("gain", "weight"), ("shift", "bias")):
        if prefix + old in state_dict:
            state_dict[prefix + new] = state_dict.pop(prefix + old)


def test_load_pre_hook_renames_the_keys_of_an_old_checkpoint():
    ours, theirs = module_pair(build)
    old = {
        key.replace("weight", "gain").replace("bias", "shift") if key.startswith("head") else key: v
        for key, v in build(torch.nn).state_dict().items()
    }
    with pytest.raises(RuntimeError, match='Missing key.*"head.weight", "head.bias"'):
        ours.load_state_dict(to_ours(old))
    ours.head.register_load_state_dict_pre_hook(rename_old_keys)
    theirs.head.register_load_state_dict_pre_hook(rename_old_keys)
    ours_checkpoint = to_ours(old)
    assert tuple(ours.load_state_dict(ours_checkpoint)) == ([], [])
    assert tuple(theirs.load_state_dict(old)) == ([], [])
    assert "head.gain" in ours_checkpoint  # the hooks changed a copy
    assert_same_state(ours.state_dict(), theirs.state_dict())
    np.testing.assert_array_equal(ours.head.weight.detach().numpy(), old["head.gain"].numpy())


def forget_missing_keys(module, incompatible_keys):
    incompatible_keys.missing_keys.clear()


def test_load_post_hook_clearing_missing_keys_lets_a_strict_load_pass():
    ours, theirs = module_pair(build)
    checkpoint = build(torch.nn).state_dict()
    del checkpoint["head.bias"]
    ours_checkpoint = to_ours(checkpoint)
    with pytest.raises(RuntimeError, match='Missing key.*"head.bias"'):
        ours.load_state_dict(ours_checkpoint)
    ours.register_load_state_dict_post_hook(forget_missing_keys)
    theirs.register_load_state_dict_post_hook(forget_missing_keys)
    assert tuple(ours.load_state_dict(ours_checkpoint)) == ([], [])
    assert tuple(theirs.load_state_dict(checkpoint)) == ([], [])
    assert_same_state(ours.state_dict(), theirs.state_dict())


def test_load_post_hook_adding_a_key_makes_a_strict_load_fail():
    for library in (torch, sg):
        layer = library.nn.Linear(2, 1)
        layer.register_load_state_dict_post_hook(
            lambda module, keys: keys.unexpected_keys.append("weight_v0")
        )
        state = layer.state_dict()
        with pytest.raises(RuntimeError, match='Unexpected key.*"weight_v0"'):
            layer.load_state_dict(state)
        assert tuple(layer.load_state_dict(state, strict=False)) == ([], ["weight_v0"])


def test_load_post_hook_returning_a_value_is_an_error():
    for library in (torch, sg):
        layer = library.nn.Linear(2, 1)
        layer.register_load_state_dict_post_hook(lambda module, keys: keys)
        with pytest.raises(AssertionError, match="not expected to return new values"):
            layer.load_state_dict(layer.state_dict())


def test_load_pre_hook_error_message_fails_the_load():
    def refuse(module, state_dict, prefix, metadata, strict, missing, unexpected, errors):
        errors.append(f"{prefix or 'root'} refuses")

    for library in (torch, sg):
        layer = library.nn.Linear(2, 1)
        layer.register_load_state_dict_pre_hook(refuse)
        with pytest.raises(RuntimeError, match="for Linear:\n\troot refuses$"):
            layer.load_state_dict(layer.state_dict(), strict=False)


def test_without_post_hooks_a_failing_strict_load_copies_nothing():
    ours = build(sg.nn)
    before = {key: value.numpy().copy() for key, value in ours.state_dict().items()}
    checkpoint = to_ours(build(torch.nn).state_dict())
    del checkpoint["head.bias"]
    with pytest.raises(RuntimeError, match="Missing key"):
        ours.load_state_dict(checkpoint)
    for key, value in ours.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key])


def test_removed_hooks_are_not_called():
    ours, theirs = module_pair(build)
    results = []
    for model in (ours, theirs):
        calls = []
        handles = state_dict_recorders(model, calls) + load_recorders(model, calls)
        for handle in handles[::2]:
            handle.remove()
        model.load_state_dict(model.state_dict())
        for handle in handles[1::2]:
            handle.remove()
        model.load_state_dict(model.state_dict())
        results.append([call[:3] for call in calls])
    assert results[0] == results[1]
    assert len(results[0]) == len(list(ours.modules())) * 2  # half of each, once
    handle = ours.register_state_dict_post_hook(convert_head)
    handle.remove()
    handle.remove()  # a second removal does nothing, as PyTorch's
    assert ours.state_dict()["head.weight"].dtype == ours.head.weight.dtype == sg.float64


def test_state_dict_hooks_leave_calls_on_the_fast_path():
    layer = sg.nn.Linear(2, 1)
    layer.register_state_dict_pre_hook(lambda module, prefix, keep_vars: None)
    layer.register_load_state_dict_post_hook(forget_missing_keys)
    assert not layer._hooked


def test_load_state_dict_wants_a_mapping():
    for library in (torch, sg):
        with pytest.raises(
            TypeError, match="Expected state_dict to be dict-like, got <class 'list'>"
        ):
            library.nn.Linear(2, 1).load_state_dict([("weight", 1)])


@pytest.mark.parametrize(
    "method",
    [
        sg.nn.Module.state_dict,
        sg.nn.Module.load_state_dict,
        sg.nn.Module.register_state_dict_pre_hook,
        sg.nn.Module.register_state_dict_post_hook,
        sg.nn.Module.register_load_state_dict_pre_hook,
        sg.nn.Module.register_load_state_dict_post_hook,
    ],
)
def test_doc_examples(method):
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for test in finder.find(method, method.__name__):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
