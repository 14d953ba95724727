"""A tensor changed in place (under no_grad) between a forward and its backward, against
PyTorch: the backward raises where PyTorch's saved it, and gives PyTorch's gradients where
PyTorch did not save it (its backward never reads it)."""

import numpy as np
import pytest
import torch
from oracle import assert_close

import scratchgrad as sg

TARGETS = np.array([0, 3, 1, 4])
IMAGE = np.linspace(-1, 1, 2 * 2 * 4 * 4).reshape(2, 2, 4, 4)
FILTERS = np.linspace(-1, 1, 3 * 2 * 3 * 3).reshape(3, 2, 3, 3)

# name -> (the inputs, as (array, requires grad), the call, which input changes)
CASES = {
    "cross_entropy logits": (
        [(np.linspace(-1, 1, 20).reshape(4, 5), True), (TARGETS, False)],
        lambda m, x, t: m.nn.functional.cross_entropy(x, t),
        0,
    ),
    "cross_entropy target": (
        [(np.linspace(-1, 1, 20).reshape(4, 5), True), (TARGETS, False)],
        lambda m, x, t: m.nn.functional.cross_entropy(x, t, reduction="sum"),
        1,
    ),
    "mul": (
        [(np.linspace(-1, 1, 6), True), (np.linspace(1, 2, 6), True)],
        lambda m, x, y: x * y,
        1,
    ),
    # compositions that PyTorch runs as one node saving its inputs
    "conv2d input": (
        [(IMAGE, True), (FILTERS, True), (np.ones(3), True)],
        lambda m, x, w, b: m.nn.functional.conv2d(x, w, b),
        0,
    ),
    "conv2d weight": (
        [(IMAGE, True), (FILTERS, True), (np.ones(3), True)],
        lambda m, x, w, b: m.nn.functional.conv2d(x, w, b),
        1,
    ),
    "conv2d bias": (  # not saved
        [(IMAGE, True), (FILTERS, True), (np.ones(3), True)],
        lambda m, x, w, b: m.nn.functional.conv2d(x, w, b),
        2,
    ),
    "max_pool2d": ([(IMAGE, True)], lambda m, x: m.nn.functional.max_pool2d(x, 2), 0),
    "avg_pool1d": ([(IMAGE[0], True)], lambda m, x: m.nn.functional.avg_pool1d(x, 2), 0),
    "batch_norm input": (
        [(IMAGE, True), (np.zeros(2), False), (np.ones(2), False)],
        lambda m, x, mean, var: m.nn.functional.batch_norm(x, mean, var, training=True),
        0,
    ),
    "batch_norm running mean": (
        [(IMAGE, True), (np.zeros(2), False), (np.ones(2), False)],
        lambda m, x, mean, var: m.nn.functional.batch_norm(x, mean, var),
        1,
    ),
    "layer_norm bias": (
        [(IMAGE, True), (np.ones(4), True), (np.zeros(4), True)],
        lambda m, x, w, b: m.nn.functional.layer_norm(x, (4,), w, b),
        2,
    ),
}


def _run(lib, case):
    inputs, call, changed = CASES[case]
    tensors = [lib.tensor(a, requires_grad=grad) for a, grad in inputs]
    loss = call(lib, *tensors).sum()
    with lib.no_grad():
        tensors[changed].copy_(lib.tensor(np.roll(inputs[changed][0], 1)))
    try:
        loss.backward()
    except RuntimeError:
        return None
    return [t.grad for t in tensors if t.requires_grad]


@pytest.mark.parametrize("case", CASES)
def test_raises_where_pytorch_raises(case):
    ours, theirs = _run(sg, case), _run(torch, case)
    assert (ours is None) == (theirs is None)
    for mine, its in zip(ours or (), theirs or ()):
        assert_close(mine, its)


@pytest.mark.parametrize("call", [lambda x: x.reciprocal(), lambda x: 2.0 / x])
def test_a_reciprocal_saves_its_result(call):
    """PyTorch's reciprocal (and a number over a tensor, the reciprocal times the number)
    saves its result, so its input may change in place before backward."""
    grads = []
    for lib in (sg, torch):
        x = lib.tensor([0.5, 2.0, -4.0], requires_grad=True)
        loss = (call(x) * lib.tensor([1.0, 2.0, 3.0])).sum()
        with lib.no_grad():
            x.mul_(3)
        loss.backward()
        grads.append(x.grad)
    assert_close(*grads)
    assert (2.0 / sg.ones(1, requires_grad=True)).grad_fn.name() == "MulBackward0"


@pytest.mark.parametrize("case", ["conv2d input", "max_pool2d", "batch_norm input"])
def test_the_saving_node_is_named_as_pytorchs(case):
    inputs, call, _ = CASES[case]
    names = []
    for lib in (sg, torch):
        tensors = [lib.tensor(a, requires_grad=grad) for a, grad in inputs]
        names.append(call(lib, *tensors).grad_fn.name())
    assert names[0] == names[1]


@pytest.mark.parametrize(
    "call",
    [lambda x: x.flip(0), lambda x: x.flip(0, 1), lambda x: x.fliplr(), lambda x: x.flipud()],
    ids=["flip", "flip2", "fliplr", "flipud"],
)
def test_a_flip_is_a_copy_that_a_later_change_of_its_input_leaves_alone(call):
    """PyTorch's flip copies: a change of its input afterwards reaches neither the result
    nor a gradient saved through it (cos saves the flip, which nothing changed)."""
    results, grads = [], []
    for lib in (sg, torch):
        leaf = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
        x = leaf * 1
        out = call(x)
        loss = (out.cos() * lib.tensor(np.arange(6.0).reshape(2, 3))).sum()
        with lib.no_grad():
            x.mul_(3)
        loss.backward()
        results.append(out.detach())
        grads.append(leaf.grad)
    assert_close(*results)
    assert_close(*grads)


# (the call, the tensor changed in place after forward, whether y requires grad): PyTorch's
# backward reads it only where it is needed for a gradient asked for
ONLY_WHERE_NEEDED = {
    "pow number, result": (lambda m, x, y: x**3, "out", False),
    "pow half, result": (lambda m, x, y: x**0.5, "out", False),
    "float_power, result": (lambda m, x, y: x.float_power(3), "out", False),
    "pow tensor, result": (lambda m, x, y: x**y, "out", False),
    "pow tensor, result for y": (lambda m, x, y: x**y, "out", True),
    "pow tensor, x": (lambda m, x, y: x**y, "x", False),
    "remainder, x": (lambda m, x, y: m.remainder(x, y), "x", False),
    "remainder, y": (lambda m, x, y: m.remainder(x, y), "y", False),
    "remainder, x for y": (lambda m, x, y: m.remainder(x, y), "x", True),
    "var, result": (lambda m, x, y: x.var(), "out", False),
    "var over a dim, result": (lambda m, x, y: x.reshape(2, 3).var(1, correction=0), "out", False),
    "std, result": (lambda m, x, y: x.std(), "out", False),
    "lerp, start": (lambda m, x, y: m.lerp(x, y, 0.3), "x", True),
    "lerp, end": (lambda m, x, y: m.lerp(y, x, 0.8), "x", True),
    "lerp weight, start": (lambda m, x, y: x.lerp(y * 2, y), "x", False),
    "lerp weight, weight": (lambda m, x, y: x.lerp(y * 2, y), "y", False),
    "lerp weight, start for the weight": (lambda m, x, y: x.lerp(y * 2, y), "x", True),
}


def _changed_after_forward(lib, call, changed, y_grad):
    leaves = [
        lib.tensor(np.linspace(0.5, 2, 6), requires_grad=True),
        lib.tensor(np.linspace(1, 1.5, 6), requires_grad=y_grad),
    ]
    x, y = leaves[0] * 1, leaves[1] * 1
    out = call(lib, x, y)
    loss = (out * lib.tensor(np.linspace(-1, 1, 6)[: out.numel()]).reshape(out.shape)).sum()
    with lib.no_grad():
        {"x": x, "y": y, "out": out}[changed].mul_(1.5)
    try:
        loss.backward()
    except RuntimeError:
        return None
    return [leaf.grad for leaf in leaves if leaf.requires_grad]


@pytest.mark.parametrize("case", ONLY_WHERE_NEEDED)
def test_a_saved_tensor_is_checked_only_where_a_gradient_needs_it(case):
    """``h = x**2; h += 1`` runs in PyTorch: its pow saves the result only for the exponent's
    gradient; the same of remainder's and lerp's inputs."""
    ours, theirs = (_changed_after_forward(lib, *ONLY_WHERE_NEEDED[case]) for lib in (sg, torch))
    assert (ours is None) == (theirs is None)
    for mine, its in zip(ours or (), theirs or ()):
        assert_close(mine, its)


@pytest.mark.parametrize("name", ["exp_", "sigmoid_", "tanh_", "relu_"])
@pytest.mark.parametrize(
    "change",
    [
        lambda y: y.__setitem__(0, 1.0),
        lambda y: y[1:].mul_(2),
        lambda y: y.add_(1),
        lambda y: None,
    ],
)
def test_a_result_saved_by_an_in_place_op_is_checked_as_pytorchs(name, change):
    # the saved result of y.exp_() is y's memory in PyTorch, so a later change of y reaches it
    # (scratchgrad saved a copy, and gave a gradient where PyTorch raises)
    outcomes = []
    for lib in (sg, torch):
        x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x * 2
        getattr(y, name)()
        change(y)
        try:
            y.sum().backward()
            outcomes.append(x.grad)
        except RuntimeError as error:
            assert "modified by an in" in str(error)
            outcomes.append(None)
    ours, theirs = outcomes
    assert (ours is None) == (theirs is None)
    if theirs is not None:
        assert_close(ours, theirs)


def test_a_later_change_of_a_tensor_copied_into_leaves_the_source_alone():
    # (the result of copy_ is a view of its source: only a new result is watched)
    for lib in (sg, torch):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        h = x * 2
        p = lib.zeros(3, dtype=lib.float64)
        p.copy_(h)
        p.add_(1)
        p[1:].mul_(2)
        assert (x._version, h._version, p._version) == (0, 0, 3)
        (p.sum() + h.sum()).backward()
        assert x.grad.tolist() == [4.0, 6.0, 6.0]
