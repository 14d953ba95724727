"""nn.utils.prune against torch.nn.utils.prune: the same layers (PyTorch's initial weights) pruned
by the same call in both libraries, then the masks, the pruned ``weight``, the state_dict keys and
values, the parameter and buffer names, a training step (the gradient of ``weight_orig``, the
pruned entries staying zero), ``remove``, pruning twice, ``global_unstructured``, the structured
methods, and the errors. The random methods are compared by their properties only."""

import doctest
import math

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as torch_prune
from oracle import assert_close, check_against_torch, module_pair

import scratchgrad as sg
from scratchgrad.nn.utils import prune

LAYERS = {
    "linear": (lambda nn: nn.Linear(5, 4), (3, 5)),
    "conv2d": (lambda nn: nn.Conv2d(3, 4, 2), (2, 3, 4, 4)),
}


def _pruned_pair(layer, call, dtype="float64"):
    """The layer in both libraries (PyTorch's weights), each pruned by ``call(prune, module)``."""
    build, _ = LAYERS[layer]
    ours, theirs = module_pair(build, dtype)
    call(torch_prune, theirs)
    call(prune, ours)
    return ours, theirs


def _assert_same_state(ours, theirs, dtype="float64"):
    """The same names and values in state_dict, parameters and buffers, and the same weight."""
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key], value, dtype, what=key)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert_close(ours.weight, theirs.weight, dtype, what="weight")


def _train_step(ours, theirs, layer, dtype, name="weight"):
    """One SGD step on both (the gradients compared, ``weight_orig``'s among them), then the
    forward again: the pruned entries of ``weight`` are zero, the same as PyTorch's."""
    x = np.random.default_rng(1).standard_normal(LAYERS[layer][1])
    check_against_torch(ours, theirs, [x], dtype)
    for module, library in ((ours, sg), (theirs, torch)):
        library.optim.SGD(module.parameters(), lr=0.1).step()
    check_against_torch(ours, theirs, [x], dtype, grad=False)
    pruned = getattr(ours, name + "_mask").numpy() == 0
    assert (getattr(ours, name).detach().numpy()[pruned] == 0).all()
    _assert_same_state(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("amount", [0, 3, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("layer", LAYERS)
def test_l1_unstructured_matches_torch(layer, amount, dtype):
    ours, theirs = _pruned_pair(layer, lambda p, m: p.l1_unstructured(m, "weight", amount), dtype)
    count = amount if isinstance(amount, int) else round(amount * ours.weight.numel())
    assert int((ours.weight_mask == 0).sum()) == count
    assert list(ours.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert ours.weight_orig is dict(ours.named_parameters())["weight_orig"]
    assert type(ours.weight) is sg.Tensor and prune.is_pruned(ours)
    _assert_same_state(ours, theirs, dtype)
    _train_step(ours, theirs, layer, dtype)


def test_the_original_parameter_is_kept():
    layer = sg.nn.Linear(3, 2)
    weight = layer.weight
    prune.l1_unstructured(layer, "weight", 2)
    assert layer.weight_orig is weight
    prune.remove(layer, "weight")
    assert layer.weight is weight and isinstance(weight, sg.nn.Parameter)


def test_l1_unstructured_with_importance_scores():
    scores = np.random.default_rng(2).standard_normal((4, 5))
    ours, theirs = _pruned_pair(
        "linear",
        lambda p, m: p.l1_unstructured(
            m, "weight", 0.4, importance_scores=(torch if p is not prune else sg).tensor(scores)
        ),
    )
    _assert_same_state(ours, theirs)


@pytest.mark.parametrize("name", ["weight", "bias"])
def test_identity_and_custom_from_mask(name):
    ours, theirs = _pruned_pair("conv2d", lambda p, m: p.identity(m, name))
    assert (ours.state_dict()[name + "_mask"] == 1).all()
    _assert_same_state(ours, theirs)
    mask = np.random.default_rng(3).random(getattr(ours, name).shape) < 0.5
    for library, module in ((sg, ours), (torch, theirs)):
        {sg: prune, torch: torch_prune}[library].custom_from_mask(
            module, name, library.tensor(mask)
        )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_close(getattr(ours, name + "_mask"), getattr(theirs, name + "_mask"))
    _train_step(ours, theirs, "conv2d", "float64", name)


def test_random_unstructured_prunes_the_count():
    ours, theirs = _pruned_pair("conv2d", lambda p, m: p.random_unstructured(m, "weight", 0.35))
    count = round(0.35 * ours.weight.numel())
    for module in (ours, theirs):
        assert int((module.weight_mask == 0).sum()) == count
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert (ours.weight.detach().numpy()[ours.weight_mask.numpy() == 0] == 0).all()
    assert (
        ours.weight.detach().numpy() == (ours.weight_orig * ours.weight_mask).detach().numpy()
    ).all()


@pytest.mark.parametrize("layer", LAYERS)
def test_remove_matches_torch(layer):
    ours, theirs = _pruned_pair(layer, lambda p, m: p.l1_unstructured(m, "weight", 0.5))
    _train_step(ours, theirs, layer, "float64")
    prune.remove(ours, "weight")
    torch_prune.remove(theirs, "weight")
    assert isinstance(ours.weight, sg.nn.Parameter) and not prune.is_pruned(ours)
    assert not hasattr(ours, "weight_orig") and not hasattr(ours, "weight_mask")
    _assert_same_state(ours, theirs)
    assert int((ours.weight == 0).sum()) == int((theirs.weight == 0).sum()) > 0
    check_against_torch(ours, theirs, [np.ones(LAYERS[layer][1])])


def test_is_pruned_looks_inside():
    net = sg.nn.Sequential(sg.nn.Linear(2, 3), sg.nn.ReLU(), sg.nn.Linear(3, 1))
    assert not prune.is_pruned(net)
    prune.random_unstructured(net[2], "bias", 1)
    assert prune.is_pruned(net) and not prune.is_pruned(net[0])


@pytest.mark.parametrize(
    "first, second",
    [
        (
            lambda p, m: p.l1_unstructured(m, "weight", 5),
            lambda p, m: p.l1_unstructured(m, "weight", 0.5),
        ),
        (lambda p, m: p.identity(m, "weight"), lambda p, m: p.l1_unstructured(m, "weight", 4)),
        (
            lambda p, m: p.l1_unstructured(m, "weight", 0.3),
            lambda p, m: p.ln_structured(m, "weight", 0.5, 1, dim=0),
        ),
        (
            lambda p, m: p.ln_structured(m, "weight", 1, 2, dim=0),
            lambda p, m: p.ln_structured(m, "weight", 0.5, 2, dim=0),
        ),
        (
            lambda p, m: p.ln_structured(m, "weight", 1, 2, dim=0),
            lambda p, m: p.l1_unstructured(m, "weight", 0.5),
        ),
    ],
    ids=["l1_l1", "identity_l1", "l1_ln", "ln_ln", "ln_l1"],
)
@pytest.mark.parametrize("layer", LAYERS)
def test_pruning_twice_combines_the_masks(layer, first, second):
    ours, theirs = _pruned_pair(layer, first)
    second(prune, ours)
    second(torch_prune, theirs)
    assert sum(isinstance(h, prune.BasePruningMethod) for h, _ in ours._forward_pre_hooks) == 1
    _assert_same_state(ours, theirs)
    _train_step(ours, theirs, layer, "float64")
    prune.remove(ours, "weight")
    torch_prune.remove(theirs, "weight")
    _assert_same_state(ours, theirs)


def _same_error(call):
    """``call(prune module, layer)`` raises the same error type and message in both libraries,
    and leaves our layer as it was."""
    ours, theirs = module_pair(LAYERS["linear"][0])
    with pytest.raises(Exception) as expected:
        call(torch_prune, theirs)
    with pytest.raises(expected.type) as raised:
        call(prune, ours)
    assert str(raised.value) == str(expected.value).replace("torch.Size", "scratchgrad.Size")
    assert list(ours.state_dict()) == ["weight", "bias"] and not prune.is_pruned(ours)
    assert isinstance(ours.weight, sg.nn.Parameter)


@pytest.mark.parametrize("amount", [-1, 1.5, -0.1, "half", None, 21, 2.0])
def test_bad_amounts_raise_as_torch(amount):
    _same_error(lambda p, m: p.l1_unstructured(m, "weight", amount))
    _same_error(lambda p, m: p.random_unstructured(m, "weight", amount))
    _same_error(lambda p, m: p.ln_structured(m, "weight", amount, 2, 0))


@pytest.mark.parametrize(
    "call",
    [
        lambda p, m: p.ln_structured(m, "weight", 5, 2, 0),
        lambda p, m: p.random_structured(m, "weight", 6, 1),
        lambda p, m: p.ln_structured(m, "weight", 1, 2, 2),
        lambda p, m: p.random_structured(m, "bias", 1, 0),
        lambda p, m: p.remove(m, "weight"),
    ],
    ids=["too_many_rows", "too_many_columns", "bad_dim", "one_dim", "remove_unpruned"],
)
def test_structured_and_remove_errors_as_torch(call):
    _same_error(call)


@pytest.mark.parametrize(
    ("layer", "dim", "n"),
    [
        (layer, dim, n)
        for layer, dim in [("linear", 0), ("linear", -1), ("conv2d", 1)]
        for n in [1, 2, 3, math.inf, -math.inf]
    ]
    + [("linear", 1, "fro")],  # PyTorch's "fro" takes two dims only
)
def test_ln_structured_matches_torch(layer, dim, n):
    ours, theirs = _pruned_pair(layer, lambda p, m: p.ln_structured(m, "weight", 0.5, n, dim))
    channels = ours.weight_mask.sum(tuple(d for d in range(ours.weight.ndim) if d != dim % 2))
    assert sorted(set(channels.tolist())) == [0, ours.weight.numel() / ours.weight.shape[dim]]
    _assert_same_state(ours, theirs)
    _train_step(ours, theirs, layer, "float64")


@pytest.mark.parametrize(("n", "dim"), [("fro", 0), ("fro", -1), ("nuc", 1)])
def test_ln_structured_fro_over_more_than_two_dims_raises_as_torch(n, dim):
    """PyTorch's "fro" (or "nuc") over a convolution weight's three other dims is a matrix
    norm: an error (the same message), where scratchgrad took the 2-norm."""
    ours, theirs = module_pair(LAYERS["conv2d"][0])
    with pytest.raises(RuntimeError) as expected:
        torch_prune.ln_structured(theirs, "weight", 0.5, n, dim)
    with pytest.raises(RuntimeError) as raised:
        prune.ln_structured(ours, "weight", 0.5, n, dim)
    assert str(raised.value) == str(expected.value)  # "... Got 1 2 3"
    assert list(ours.state_dict()) == ["weight", "bias"] and not prune.is_pruned(ours)


@pytest.mark.parametrize(("layer", "dim", "amount"), [("linear", 0, 0.5), ("conv2d", 1, 2)])
def test_random_structured_prunes_whole_channels(layer, dim, amount):
    ours, theirs = _pruned_pair(layer, lambda p, m: p.random_structured(m, "weight", amount, dim))
    for module in (ours, theirs):
        mask = np.moveaxis(module.weight_mask.numpy(), dim, 0).reshape(module.weight.shape[dim], -1)
        assert (mask == mask[:, :1]).all()  # each channel all 0 or all 1
        assert int((mask[:, 0] == 0).sum()) == 2
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert (ours.weight.detach().numpy()[ours.weight_mask.numpy() == 0] == 0).all()


def _global_pairs():
    """A two-layer net in both libraries and the (module, "weight") pairs of each."""
    build = lambda nn: nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))  # noqa: E731
    ours, theirs = module_pair(build)
    return (ours, theirs), [[(net[0], "weight"), (net[2], "weight")] for net in (ours, theirs)]


@pytest.mark.parametrize("amount", [0.5, 7])
def test_global_unstructured_matches_torch(amount):
    (ours, theirs), (our_pairs, their_pairs) = _global_pairs()
    torch_prune.global_unstructured(their_pairs, torch_prune.L1Unstructured, amount=amount)
    prune.global_unstructured(our_pairs, prune.L1Unstructured, amount=amount)
    zeros = sum(int((net.weight_mask == 0).sum()) for net in (ours[0], ours[2]))
    assert zeros == (amount if isinstance(amount, int) else round(amount * 32))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key], value, what=key)
    check_against_torch(ours, theirs, [np.random.default_rng(4).standard_normal((6, 5))])
    # again on top: the global ranking is over the entries still unpruned
    torch_prune.global_unstructured(their_pairs, torch_prune.L1Unstructured, amount=0.5)
    prune.global_unstructured(our_pairs, prune.L1Unstructured, amount=0.5)
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key], value, what=key)


def test_global_unstructured_with_importance_scores_and_random():
    (ours, theirs), (our_pairs, their_pairs) = _global_pairs()
    scores = np.random.default_rng(5).random((3, 4))
    for library, pairs in ((torch, their_pairs), (sg, our_pairs)):
        p = {sg: prune, torch: torch_prune}[library]
        importance_scores = {pairs[1]: library.tensor(scores)}
        p.global_unstructured(pairs, p.L1Unstructured, importance_scores, amount=6)
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key], value, what=key)
    prune.global_unstructured(our_pairs, prune.RandomUnstructured, amount=10)
    assert sum(int((net.weight_mask == 0).sum()) for net in (ours[0], ours[2])) == 16


@pytest.mark.parametrize(
    "call",
    [
        lambda p, pairs: p.global_unstructured(pairs[0][0], p.L1Unstructured, amount=1),
        lambda p, pairs: p.global_unstructured(pairs, p.L1Unstructured, [], amount=1),
        lambda p, pairs: p.global_unstructured(pairs, p.LnStructured, amount=1, n=2),
        lambda p, pairs: p.global_unstructured(pairs, p.L1Unstructured, amount=-1),
    ],
    ids=["not_iterable", "scores_not_dict", "structured", "bad_amount"],
)
def test_global_unstructured_errors_as_torch(call):
    _, (our_pairs, their_pairs) = _global_pairs()
    with pytest.raises(Exception) as expected:
        call(torch_prune, their_pairs)
    with pytest.raises(expected.type) as raised:
        call(prune, our_pairs)
    assert str(raised.value).split(" Found")[0] == str(expected.value).split(" Found")[0]


def test_doc_examples_run():
    result = doctest.testmod(prune)
    assert result.failed == 0 and result.attempted > 10


def test_ties_go_as_torchs():
    """Among equal scores, topk picks as PyTorch's, so the masks are PyTorch's."""
    masks = []
    for library, p in ((torch, torch_prune), (sg, prune)):
        layer = library.nn.Linear(4, 2, bias=False)
        layer.weight.data = library.tensor([[1.0, -1.0, 1.0, 1.0], [-1.0, 2.0, 2.0, 2.0]])
        p.l1_unstructured(layer, "weight", 2)
        rows = library.nn.Linear(2, 3, bias=False)
        rows.weight.data = library.tensor([[1.0, 1.0], [-1.0, 1.0], [3.0, 3.0]])
        p.ln_structured(rows, "weight", 1, 2, dim=0)
        masks.append((layer.weight_mask.tolist(), rows.weight_mask.tolist()))
    assert masks[0] == masks[1]
    assert masks[1][0] == [[1, 0, 1, 1], [0, 1, 1, 1]]  # not the lowest indices first


def test_pruning_a_buffer_raises_and_changes_nothing():
    for library, p in ((torch, torch_prune), (sg, prune)):
        norm = library.nn.BatchNorm1d(3)
        with pytest.raises(TypeError):
            p.l1_unstructured(norm, "running_mean", 1)
        assert list(norm.state_dict())[:3] == ["weight", "bias", "running_mean"]
        assert not p.is_pruned(norm)


@pytest.mark.parametrize("method", ["l1_unstructured", "random_unstructured"])
def test_unstructured_amount_true_raises_as_torch_and_changes_nothing(method):
    """amount=True pruned one entry (True read as 1); PyTorch's topk refuses k=True."""
    with pytest.raises(TypeError):
        getattr(torch_prune, method)(torch.nn.Linear(3, 2), "weight", amount=True)
    layer = sg.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="amount=True"):
        getattr(prune, method)(layer, "weight", amount=True)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert not prune.is_pruned(layer)


def test_pruning_three_times_leaves_a_pruning_container_as_torchs():
    """The second pruning of a tensor turns its hook into a PruningContainer holding both
    methods (the third joins the same container), returned by ``apply``, as PyTorch's."""
    ours, theirs = module_pair(LAYERS["conv2d"][0], "float64")
    hooks = []
    for p, module in ((prune, ours), (torch_prune, theirs)):
        first = p.L1Unstructured.apply(module, "weight", 0.3)
        container = p.LnStructured.apply(module, "weight", 1, 2, dim=1)
        assert p.L1Unstructured.apply(module, "weight", 4) is container
        assert type(container).__name__ == "PruningContainer" and container[0] is first
        assert _hooks(module) == [container]
        hooks.append(
            (
                len(container),
                [type(m).__name__ for m in container],
                [type(m).__name__ for m in container[1:]],
                container._tensor_name,
            )
        )
    assert (
        hooks[0]
        == hooks[1]
        == (
            3,
            ["L1Unstructured", "LnStructured", "L1Unstructured"],
            ["LnStructured", "L1Unstructured"],
            "weight",
        )
    )
    _assert_same_state(ours, theirs)
    _train_step(ours, theirs, "conv2d", "float64")
    prune.remove(ours, "weight")
    torch_prune.remove(theirs, "weight")
    assert not prune.is_pruned(ours)
    _assert_same_state(ours, theirs)


def _hooks(module):
    """The forward pre-hooks of a module of either library."""
    hooks = module._forward_pre_hooks
    return list(hooks.values()) if isinstance(hooks, dict) else [hook for hook, _ in hooks]


def test_pruning_container_compute_mask_combines_as_torchs():
    """A container built by hand computes its last method's mask on what ``default_mask``
    left: the entries still 1, or the channels not all zero."""
    rng = np.random.default_rng(3)
    t, default = rng.standard_normal((4, 5)), (rng.random((4, 5)) > 0.3).astype(float)
    default[1] = 0  # a channel already pruned
    masks = []
    for library, p in ((torch, torch_prune), (sg, prune)):
        methods = [p.Identity(), p.L1Unstructured(3), p.LnStructured(2, 1, dim=0)]
        for method in methods:
            method._tensor_name = "w"
        container = p.PruningContainer(methods[0])
        for method in methods[1:]:
            container.add_pruning_method(method)
            masks.append(
                container.compute_mask(library.tensor(t), library.tensor(default)).tolist()
            )
    assert masks[:2] == masks[2:]


def test_pruning_container_errors_as_torchs():
    errors = []
    for p in (torch_prune, prune):
        named = p.Identity()
        named._tensor_name = "weight"
        other = p.Identity()
        other._tensor_name = "bias"
        container = p.PruningContainer(named)
        raised = []
        for call in (
            lambda: container.add_pruning_method(3),  # noqa: B023
            lambda: container.add_pruning_method(other),  # noqa: B023
            lambda: p.PruningContainer(named, other),  # noqa: B023
            lambda: p.PruningContainer(p.Identity()),  # noqa: B023
        ):
            with pytest.raises(Exception) as error:
                call()
            raised.append((error.type, str(error.value).split(" to PruningContainer")[0]))
        errors.append((raised, len(p.PruningContainer()), len(container)))
    assert errors[0] == errors[1]


def test_a_failed_second_pruning_changes_nothing():
    """Too many channels the second time: the error, and the first pruning still in place
    (PyTorch's drops its hook)."""
    ours, theirs = _pruned_pair("linear", lambda p, m: p.l1_unstructured(m, "weight", 3))
    mask = ours.weight_mask.clone()
    messages = []
    for p, module in ((torch_prune, theirs), (prune, ours)):
        with pytest.raises(ValueError) as error:
            p.ln_structured(module, "weight", 5, 2, dim=0)
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert [type(h).__name__ for h in _hooks(ours)] == ["L1Unstructured"]
    assert (ours.weight_mask == mask).all()
    assert not _hooks(theirs)  # (PyTorch's lost the hook)


def test_an_unknown_pruning_type_raises_as_torch_when_combined():
    """Pruned a second time by a method of an unknown PRUNING_TYPE: PyTorch's ValueError
    (scratchgrad took it as global)."""
    messages = []
    for p, library in ((torch_prune, torch), (prune, sg)):

        class Odd(p.BasePruningMethod):
            PRUNING_TYPE = "odd"

            def compute_mask(self, t, default_mask):
                return default_mask

        layer = p.l1_unstructured(library.nn.Linear(3, 2), "weight", 2)
        with pytest.raises(ValueError) as error:
            Odd.apply(layer, "weight")
        messages.append(str(error.value))
    assert messages[0] == messages[1] == "Unrecognized PRUNING_TYPE odd"


@pytest.mark.parametrize(
    "make",
    [
        lambda p: p.L1Unstructured(amount=3),
        lambda p: p.LnStructured(amount=1, n=2, dim=0),
        lambda p: p.RandomUnstructured(amount=0),
        lambda p: p.Identity(),
    ],
)
def test_a_methods_prune_of_a_tensor_as_torch(make):
    """BasePruningMethod.prune (was missing): ``t`` times its mask, no module, on top of a
    default mask, ranked by importance scores, with the gradient of ``t`` the mask's."""
    rng = np.random.default_rng(5)
    t, scores = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    default = (rng.random((3, 4)) > 0.2).astype(float)
    results = []
    for library, p in ((sg, prune), (torch, torch_prune)):
        x = library.tensor(t, requires_grad=True)
        plain = make(p).prune(x)
        ranked = make(p).prune(x, library.tensor(default), library.tensor(scores))
        (grad,) = library.autograd.grad((plain * library.tensor(scores)).sum(), x)
        results.append([r.detach().numpy() for r in (plain, ranked, grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def test_a_methods_prune_refuses_scores_of_another_shape_as_torch():
    messages = []
    for library, p in ((sg, prune), (torch, torch_prune)):
        with pytest.raises(AssertionError) as error:
            p.L1Unstructured(1).prune(library.ones(2, 3), importance_scores=library.ones(3, 2))
        messages.append(str(error.value).replace("torch.Size", "scratchgrad.Size"))
    assert messages[0] == messages[1]
