"""``Tensor.backward(inputs=...)`` and ``autograd.backward(..., inputs=...)`` against PyTorch:
gradients go into the ``.grad`` of the given tensors only (leaves, and non-leaf tensors, which
are made to ``retain_grad()``); every tensor's ``.grad`` is compared after the same calls in
both libraries, on a graph whose leaves and intermediate are shared by several uses."""

import types

import numpy as np
import pytest
import torch
from oracle import assert_raises_as_torch

import scratchgrad as sg

LIBS = pytest.mark.parametrize("lib", [sg, torch], ids=["scratchgrad", "torch"])


def graph(lib):
    """Leaves ``a``, ``b`` (each used several times), ``c`` (not used by the loss), the
    non-leaf ``h`` shared by two branches, and the loss."""
    a = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([1.5, 0.25, -0.75], dtype=lib.float64, requires_grad=True)
    c = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
    h = (a * b).sin()
    loss = (h * a).sum() + (h.exp() * b).sum() + (a * a).sum()
    return {"a": a, "b": b, "c": c, "h": h}, loss


def grads(tensors: dict) -> dict:
    """Each tensor's ``.grad`` as a NumPy array (None where it has none), and for a non-leaf
    whether it retains its grad (reading ``.grad`` of one that does not warns, in both)."""
    found = {}
    for name, t in tensors.items():
        kept = t.is_leaf or t.retains_grad
        found[f"{name} is leaf or retains grad"] = kept
        found[name] = None if not kept or t.grad is None else np.array(t.grad.detach().tolist())
    return found


def assert_same_grads(run) -> None:
    """``run(lib)`` returns a dict of tensors: their ``.grad`` agree between the libraries."""
    ours, theirs = grads(run(sg)), grads(run(torch))
    assert ours.keys() == theirs.keys()
    for name in theirs:
        if isinstance(theirs[name], bool):
            assert ours[name] is theirs[name], name
        elif theirs[name] is None:
            assert ours[name] is None, f"{name}.grad should be None"
        else:
            assert ours[name] is not None, f"{name}.grad is None"
            np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-12, err_msg=name)


@pytest.mark.parametrize(
    "names", [["a"], ["b"], ["a", "b"], ["h"], ["h", "b"], ["c"], ["a", "c"], ["a", "a"]]
)
@pytest.mark.parametrize("call", ["Tensor.backward", "autograd.backward"])
def test_only_the_inputs_get_gradients(names, call):
    def run(lib):
        tensors, loss = graph(lib)
        inputs = [tensors[name] for name in names]
        if call == "Tensor.backward":
            loss.backward(inputs=inputs)
        else:
            lib.autograd.backward(loss, inputs=inputs)
        return tensors

    assert_same_grads(run)


@pytest.mark.parametrize(
    "pack",
    [
        lambda t: t["a"],
        lambda t: (t["a"], t["h"]),
        lambda t: {"first": t["a"], "second": t["h"]},
        lambda t: (x for x in (t["a"], t["h"])),
    ],
    ids=["one tensor", "tuple", "dict", "generator"],
)
def test_inputs_may_be_a_tensor_a_sequence_a_dict_or_an_iterable(pack):
    def run(lib):
        tensors, loss = graph(lib)
        loss.backward(inputs=pack(tensors))
        return tensors

    assert_same_grads(run)


@LIBS
def test_a_non_leaf_input_is_made_to_retain_its_grad(lib):
    """As PyTorch's: ``h.retains_grad`` becomes True, so a later backward without ``inputs``
    fills ``h.grad`` too; its grad_fn runs, but nothing below it."""
    tensors, loss = graph(lib)
    h = tensors["h"]
    assert not h.retains_grad
    loss.backward(inputs=[h], retain_graph=True)
    assert h.retains_grad and h.grad is not None
    assert tensors["a"].grad is None and tensors["b"].grad is None
    first = h.grad.tolist()
    loss.backward()
    np.testing.assert_allclose(h.grad.tolist(), 2 * np.array(first), rtol=1e-15)
    assert tensors["a"].grad is not None


def test_gradients_accumulate_over_calls_into_the_inputs_only():
    """A full backward, then one into ``a`` and ``h`` only: ``b`` keeps what it had."""

    def run(lib):
        tensors, loss = graph(lib)
        loss.backward(retain_graph=True)
        loss.backward(inputs=[tensors["a"], tensors["h"]], retain_graph=True)
        lib.autograd.backward([loss, tensors["h"].sum()], inputs=tensors["h"])
        return tensors

    assert_same_grads(run)


def test_create_graph_then_a_second_order_gradient_into_another_input():
    """``a.grad`` holds a graph; its sum's gradient goes into ``b`` only (``a.grad`` is not
    added to), and the mixed second derivative matches PyTorch's."""

    def run(lib):
        tensors, loss = graph(lib)
        loss.backward(inputs=[tensors["a"]], create_graph=True)
        assert tensors["a"].grad.requires_grad and tensors["b"].grad is None
        tensors["a"].grad.sum().backward(inputs=[tensors["b"]])
        return tensors

    assert_same_grads(run)


def test_create_graph_into_a_non_leaf_input_gives_a_differentiable_grad():
    def run(lib):
        tensors, loss = graph(lib)
        loss.backward(inputs=[tensors["h"]], create_graph=True)
        assert tensors["h"].grad.requires_grad
        (tensors["h"].grad ** 2).sum().backward(inputs=[tensors["a"], tensors["b"]])
        return tensors

    assert_same_grads(run)


def test_an_output_that_is_also_an_input():
    def run(lib):
        tensors, loss = graph(lib)
        h = tensors["h"]
        h.backward(lib.ones_like(h), inputs=[h, tensors["b"]])
        tensors["a"].backward(lib.ones_like(h), inputs=tensors["a"])
        return tensors

    assert_same_grads(run)


@LIBS
def test_hooks_run_only_on_the_path_to_the_inputs(lib):
    """Gradient hooks of the inputs and of the nodes on the way run; post-accumulate hooks
    run only for the inputs; other leaves' hooks do not run."""
    tensors, loss = graph(lib)
    log = []
    for name in "abh":
        tensors[name].register_hook(lambda g, name=name: log.append(f"hook {name}"))
    for name in "ab":
        tensors[name].register_post_accumulate_grad_hook(
            lambda t, name=name: log.append(f"post {name}")
        )
    loss.backward(inputs=[tensors["b"]], retain_graph=True)
    loss.backward(inputs=[tensors["h"]])
    assert log == ["hook h", "hook b", "post b", "hook h"]


@LIBS
def test_only_the_nodes_that_ran_free_their_saved_tensors(lib):
    """``inputs=[b]`` runs the product with ``b`` (then freed) but not ``exp``, whose saved
    result another backward may still use, as in PyTorch."""
    a = lib.tensor([0.5, 2.0], requires_grad=True)
    b = lib.tensor([1.0, -1.0], requires_grad=True)
    e = a.exp()
    loss = (e * b).sum()
    loss.backward(inputs=[b])
    with pytest.raises(RuntimeError, match="(?i)backward through the graph a second time"):
        loss.backward(inputs=[a])
    e.backward(lib.ones(2))
    np.testing.assert_allclose(a.grad.tolist(), np.exp([0.5, 2.0]), rtol=1e-6)


@pytest.mark.parametrize("empty", [[], (), {}], ids=["list", "tuple", "dict"])
def test_empty_inputs_raise_as_in_torch(empty):
    def call(lib):
        _, loss = graph(lib)
        loss.backward(inputs=empty)

    assert_raises_as_torch(call, RuntimeError, r"`inputs` argument to `backward\(\)` cannot be")


@pytest.mark.parametrize(
    "bad, kind, message",
    [
        (lambda lib, t: [t["a"], 1.0], RuntimeError, "all inputs have to be Tensors.*float"),
        (lambda lib, t: 1.0, TypeError, "not iterable"),
        (
            lambda lib, t: types.MappingProxyType({"a": t["a"]}),
            TypeError,
            "must be a dict, not mappingproxy",
        ),
        (
            lambda lib, t: [t["a"], lib.ones(2)],
            RuntimeError,
            "can't retain_grad on Tensor that has requires_grad=False",
        ),
    ],
    ids=["not a tensor", "not iterable", "a Mapping", "does not require grad"],
)
def test_bad_inputs_raise_as_in_torch_before_any_gradient(bad, kind, message):
    def call(lib):
        tensors, loss = graph(lib)
        try:
            loss.backward(inputs=bad(lib, tensors))
        finally:
            assert all(t.grad is None for t in tensors.values() if t.is_leaf)
            assert not tensors["h"].retains_grad

    assert_raises_as_torch(call, kind, message)


@LIBS
def test_a_bad_gradient_raises_before_a_non_leaf_input_retains_grad(lib):
    tensors, _ = graph(lib)
    h = tensors["h"]
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        h.backward(inputs=[h])
    assert not h.retains_grad
