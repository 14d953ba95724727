"""scatter, scatter_add and their in-place forms against PyTorch: values along each dim, a
number as the source, a source larger than the index, gradients in both inputs, the errors;
and a one-hot target made by ``scatter_`` inside a jitted step."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

RNG = np.random.default_rng(0)
BASE = RNG.standard_normal((3, 4, 5))
SOURCE = RNG.standard_normal((4, 4, 6))


def distinct_index(dim: int, shape: tuple) -> np.ndarray:
    """An index of ``shape`` whose entries along ``dim`` never repeat (scatter's writes are
    then defined: PyTorch leaves repeated positions unspecified)."""
    full = [*shape[:dim], BASE.shape[dim], *shape[dim + 1 :]]
    order = np.argsort(RNG.random(full), axis=dim)
    return np.take(order, np.arange(shape[dim]), axis=dim)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("name", ["scatter", "scatter_add"])
def test_values_and_gradients_are_pytorchs(name, dim):
    """PyTorch's backward takes a source of the index's shape; its values take a larger one
    (of which the index's leading part is written)."""
    shape = (2, 3, 2)
    index = (
        distinct_index(dim % 3, shape)
        if name == "scatter"
        else RNG.integers(0, BASE.shape[dim], shape)
    )
    grads = []
    for lib in (sg, torch):
        base = lib.tensor(BASE, requires_grad=True)
        src = lib.tensor(SOURCE[:2, :3, :2], requires_grad=True)
        out = getattr(base * 1, name)(dim, lib.tensor(index), src)
        weights = lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape))
        (out * weights).sum().backward()
        larger = getattr(lib.tensor(BASE), name)(dim, lib.tensor(index), lib.tensor(SOURCE))
        grads.append((out.detach().numpy(), base.grad.numpy(), src.grad.numpy(), larger.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_a_number_as_the_source_and_the_in_place_forms():
    index = np.array([[2], [0], [1]])
    for value in (1.0, -3.5):
        ours = sg.zeros(3, 4).scatter(1, sg.tensor(index), value)
        assert ours.tolist() == torch.zeros(3, 4).scatter(1, torch.tensor(index), value).tolist()
    ours, theirs = sg.tensor(BASE), torch.tensor(BASE)
    index = RNG.integers(0, 3, (2, 4, 5))
    assert ours.scatter_add_(0, sg.tensor(index), sg.tensor(SOURCE)) is ours
    theirs.scatter_add_(0, torch.tensor(index), torch.tensor(SOURCE))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    ours.scatter_(2, sg.tensor(distinct_index(2, (3, 4, 2))), 0.0)
    theirs.scatter_(2, torch.tensor(distinct_index(2, (3, 4, 2))), 0.0)
    assert (ours.numpy() == 0).sum() == (theirs.numpy() == 0).sum() == 24


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, i: x.scatter(1, i, value=2.5),
        lambda m, x, i: m.scatter(x, 1, i, value=-1.0),
        lambda m, x, i: x.scatter_(1, i, value=3.0),
        lambda m, x, i: x.scatter(1, i, value=2.0, reduce="multiply"),
        lambda m, x, i: x.half().scatter(1, i, value=1e6),  # (checked as a number)
        lambda m, x, i: x.scatter(1, i, value=m.ones(3, 1)),
        lambda m, x, i: x.scatter(1, i, m.ones(3, 1), value=2.0),
        lambda m, x, i: x.scatter(1, i),
    ],
)
def test_the_number_given_as_value_is_pytorchs_second_form(call):
    """PyTorch's scatter(dim, index, value=number); ours took no ``value`` keyword."""
    index = np.array([[2], [0], [1]])
    results = []
    for m in (sg, torch):
        try:
            results.append(call(m, m.ones(3, 4), m.tensor(index)).tolist())
        except (TypeError, RuntimeError) as error:
            results.append(type(error))
    assert results[0] == results[1]


def test_the_errors_are_pytorchs():
    base = sg.zeros(3, 4)
    with pytest.raises(RuntimeError, match="scatter\\(\\): Expected dtype int32/int64 for index"):
        base.scatter(0, sg.tensor([[0.0]]), 1.0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        base.scatter_add(0, sg.tensor([0]), sg.ones(1))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        base.scatter_add(0, sg.tensor([[0]]), sg.ones(1, 1, dtype=sg.float64))
    with pytest.raises(RuntimeError, match="smaller than src"):
        base.scatter_add(0, sg.tensor([[0, 1]]), sg.ones(1, 1))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0"):
        base.scatter(0, sg.tensor([[3]]), 1.0)
    assert base.tolist() == [[0.0] * 4] * 3


def test_a_one_hot_target_made_by_scatter_inside_a_jitted_step_equals_eager():
    """The classic one-hot ``zeros(n, c).scatter_(1, labels[:, None], 1)`` and a mean squared
    error against it: replayed on each batch's labels."""
    results = []
    for jit in (False, True):
        sg.manual_seed(0)
        model = sg.nn.Linear(4, 3)
        opt = sg.optim.SGD(model.parameters(), lr=0.1)

        def step(x, labels, model=model, opt=opt):
            opt.zero_grad()
            target = sg.zeros(len(labels), 3).scatter_(1, labels[:, None], 1.0)
            loss = sg.nn.functional.mse_loss(model(x), target)
            loss.backward()
            opt.step()
            return loss

        step = sg.jit(step) if jit else step
        rng = np.random.default_rng(1)
        losses = [
            step(
                sg.tensor(rng.standard_normal((6, 4)).astype(np.float32)),
                sg.tensor(rng.integers(0, 3, 6)),
            ).item()
            for _ in range(6)
        ]
        results.append((losses, model.weight.detach().numpy().copy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("name", ["scatter", "scatter_add"])
def test_a_jitted_scatter_writes_at_each_calls_index(name):
    """The positions come from each call's index (a replay that kept the recording's would
    write the first call's places): along dim 1 of a (3, 4) tensor, a (2, 3) index."""

    def scattered(base, index, src):
        return getattr(base, name)(1, index, src)

    jitted, rng = sg.jit(scattered), np.random.default_rng(2)
    for _ in range(6):
        index = (
            distinct_index(1, (2, 3, 1))[:, :, 0]
            if name == "scatter"
            else rng.integers(0, 4, (2, 3))
        )
        args = (
            sg.zeros(3, 4),
            sg.tensor(index),
            sg.tensor(rng.standard_normal((2, 3)), dtype=sg.float32),
        )
        assert jitted(*args).tolist() == scattered(*args).tolist()
    assert sum(map(len, jitted.recordings.values())) == 1


def test_the_gradient_is_the_forwards_after_the_index_changes_in_place():
    """The index changed in place before backward (PyTorch raises there): scatter's gradient
    is that of the positions it wrote, not of the changed index."""
    index = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])
    weights = RNG.standard_normal((3, 4))
    grads = []
    for lib, change in ((sg, True), (torch, False)):
        base = lib.tensor(BASE[:, :4, 0], requires_grad=True)
        src = lib.tensor(SOURCE[:2, :4, 0], requires_grad=True)
        at = lib.tensor(index)
        loss = (base.scatter(0, at, src) * lib.tensor(weights)).sum()
        if change:
            with lib.no_grad():
                at.copy_(lib.tensor(index[::-1].copy()))
        loss.backward()
        grads.append((base.grad.numpy(), src.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs)
