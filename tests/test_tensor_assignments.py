"""Assignments to a tensor's autograd attributes (``requires_grad``, ``grad``) and its reading
as a NumPy array are checked as PyTorch checks them: the same inputs refused with the same
error type, the same ones accepted."""

import numpy as np
import pytest
import torch

import scratchgrad as sg
from tests.oracle import assert_raises_as_torch


def set_requires_grad(t, flag):
    t.requires_grad = flag


def made_in_inference(m):
    with m.inference_mode():
        return m.ones(2)


# (name, call(m) that raises, error type, our message)
REFUSED = [
    (
        "requires_grad = False on a graph's result",
        lambda m: set_requires_grad(m.ones(2, requires_grad=True) * 2, False),
        RuntimeError,
        "only change requires_grad flags of leaf variables",
    ),
    (
        "requires_grad = True on a graph's result",
        lambda m: set_requires_grad(m.ones(2, requires_grad=True) * 2, True),
        RuntimeError,
        "only change requires_grad flags of leaf variables",
    ),
    (
        "requires_grad_(False) on a graph's result",
        lambda m: (m.ones(2, requires_grad=True) * 2).requires_grad_(False),
        RuntimeError,
        "only change requires_grad flags of leaf variables",
    ),
    (
        "requires_grad = 1",
        lambda m: set_requires_grad(m.ones(2), 1),
        RuntimeError,
        "requires_grad must be a bool",
    ),
    (
        "requires_grad = None",
        lambda m: set_requires_grad(m.ones(2), None),
        RuntimeError,
        "requires_grad must be a bool",
    ),
    (
        "requires_grad = True on integers",
        lambda m: set_requires_grad(m.ones(2, dtype=m.int64), True),
        RuntimeError,
        "int64 cannot require gradients",
    ),
    (
        "requires_grad = True on an inference tensor",
        lambda m: set_requires_grad(made_in_inference(m), True),
        RuntimeError,
        "inference tensor outside InferenceMode",
    ),
    (
        "tensor(requires_grad=1)",
        lambda m: m.tensor([1.0], requires_grad=1),
        TypeError,
        "argument 'requires_grad' must be bool, not int",
    ),
    (
        "zeros(requires_grad='yes')",
        lambda m: m.zeros(2, requires_grad="yes"),
        TypeError,
        "must be bool, not str",
    ),
    (
        "asarray(requires_grad=1)",
        lambda m: m.asarray([1.0], requires_grad=1),
        TypeError,
        "must be bool, not int",
    ),
    (
        "grad of another shape",
        lambda m: setattr(m.ones(3, requires_grad=True), "grad", m.ones(4)),
        RuntimeError,
        r"gradient of size '\[4\]' to a tensor of size '\[3\]'",
    ),
    (
        "grad of another shape that broadcasts",
        lambda m: setattr(m.ones(2, 3, requires_grad=True), "grad", m.ones(3)),
        RuntimeError,
        "are the same size",
    ),
    (
        "grad of another dtype",
        lambda m: setattr(m.ones(3, requires_grad=True), "grad", m.ones(3, dtype=m.float64)),
        RuntimeError,
        "dtype 'float64' to a tensor with dtype 'float32'",
    ),
    (
        "integer grad",
        lambda m: setattr(m.ones(3, requires_grad=True), "grad", m.ones(3, dtype=m.int64)),
        RuntimeError,
        "dtype 'int64'",
    ),
    (
        "grad on another device",
        lambda m: setattr(m.ones(3, requires_grad=True), "grad", m.ones(3, device="meta")),
        RuntimeError,
        "device type 'meta' to a tensor with device type 'cpu'",
    ),
    (
        "grad that is a list",
        lambda m: setattr(m.ones(3, requires_grad=True), "grad", [1.0, 1.0, 1.0]),
        TypeError,
        "expected to be a Tensor or None but got grad of type list",
    ),
    (
        "grad that is an array",
        lambda m: setattr(m.ones(3, requires_grad=True), "grad", np.ones(3, np.float32)),
        TypeError,
        "got grad of type numpy.ndarray",
    ),
    (
        "a tensor as its own grad",
        lambda m: (lambda p: setattr(p, "grad", p))(m.ones(3, requires_grad=True)),
        RuntimeError,
        "can't assign Variable as its own grad",
    ),
    (
        "data = a list",
        lambda m: setattr(m.ones(3), "data", [1.0, 2.0, 3.0]),
        TypeError,
        "Variable data has to be a tensor, but got list",
    ),
    (
        "data = an array",
        lambda m: setattr(m.ones(3), "data", np.ones(3)),
        TypeError,
        "got numpy.ndarray",
    ),
    (
        "data = integers, for a tensor that requires grad",
        lambda m: setattr(m.ones(3, requires_grad=True), "data", m.ones(3, dtype=m.int64)),
        RuntimeError,
        "must be floating point or complex dtype",
    ),
    (
        "data = a tensor on another device",
        lambda m: setattr(m.ones(3), "data", m.ones(3, device="meta")),
        RuntimeError,
        "incompatible tensor type",
    ),
    (
        "np.asarray of a tensor that requires grad",
        lambda m: np.asarray(m.ones(2, requires_grad=True)),
        RuntimeError,
        r"Use tensor.detach\(\).numpy\(\) instead",
    ),
    (
        "np.array of a graph's result, as float64",
        lambda m: np.array(m.ones(2, requires_grad=True) * 2, dtype=np.float64),
        RuntimeError,
        "Can't call numpy",
    ),
    (
        "a ufunc of a tensor that requires grad",
        lambda m: np.add(m.ones(2, requires_grad=True), 1),
        RuntimeError,
        "Can't call numpy",
    ),
    (
        "numpy() of a tensor that requires grad",
        lambda m: m.ones(2, requires_grad=True).numpy(),
        RuntimeError,
        "Can't call numpy",
    ),
]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (torch's __array__ takes no copy=)
@pytest.mark.parametrize(
    ("call", "kind", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_refused_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


def leaf_without_grad(m):
    p = m.ones(2, requires_grad=True)
    p.grad = m.ones(2)
    del p.grad  # PyTorch's: the same as assigning None
    return p.grad is None


def views_and_no_grad_results(m):
    with m.no_grad():
        y = m.ones(2, requires_grad=True) * 2  # a leaf: made without a graph
    y.requires_grad = True
    view = m.ones(3)[1:]
    view.requires_grad = True
    x = m.ones(2, requires_grad=True)
    x.requires_grad = False
    return y.requires_grad, y.is_leaf, view.requires_grad, x.requires_grad


def arrays_without_grad_mode(m):
    x = m.ones(2, requires_grad=True)
    with m.no_grad():  # PyTorch refuses only while grad mode is on
        return np.asarray(x).tolist(), x.numpy().tolist(), np.asarray(x.detach()).tolist()


def grads_as_torch_takes_them(m):
    p = m.ones(2, 3, requires_grad=True)
    p.grad = m.ones(3).expand(2, 3)  # the same shape, though not contiguous
    q = m.ones(2)  # a tensor that does not require grad, and a graph's result, take one too
    q.grad = m.ones(2, requires_grad=True)
    r = m.ones(2, requires_grad=True) * 2
    r.grad = m.zeros(2)
    p.grad = None
    return p.grad is None, q.grad.requires_grad, r.grad.tolist()


def factories_take_none_for_false(m):
    made = [
        m.zeros(2, requires_grad=None),
        m.full((2,), 1.0, requires_grad=None),
        m.asarray([1.0], requires_grad=None),
        m.zeros_like(m.ones(2), requires_grad=None),
    ]
    return [t.requires_grad for t in made]


def data_of_another_shape_and_dtype(m):
    x = m.ones(3, requires_grad=True)
    x.data = m.zeros(2, 2, dtype=m.float64)  # a tensor's: any shape, a float dtype
    y = m.ones(3)
    y.data = m.tensor([1, 2])
    return tuple(x.shape), str(x.dtype).split(".")[-1][-7:], x.requires_grad, y.tolist()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    "call", [leaf_without_grad, views_and_no_grad_results, arrays_without_grad_mode,
             grads_as_torch_takes_them, data_of_another_shape_and_dtype,
             factories_take_none_for_false],
)  # fmt: skip
def test_accepted_as_torch(call):
    assert call(sg) == call(torch)
