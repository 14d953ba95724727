"""PyTorch's call forms that scratchgrad lacked: ``div(..., rounding_mode=)``, ``flip`` with
its dims as separate arguments or a keyword (and its TypeError for an int where only the
method's positional form takes one), ``broadcast_shapes``, and the TypeError of a method called
without the sizes it needs."""

import numpy as np
import pytest
import torch
from oracle import assert_raises_as_torch

import scratchgrad as sg


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float64", "float32"])
def test_div_rounding_modes_match_torch(mode, dtype):
    rng = np.random.default_rng(0)
    x = (rng.integers(-50, 50, 300) * (1.3 if dtype.startswith("float") else 1)).astype(dtype)
    y = rng.integers(1, 8, 300) * rng.choice([-1, 1], 300)
    y = (y * (0.7 if dtype.startswith("float") else 1)).astype(dtype)
    for call in (
        lambda m, a, b: a.div(b, rounding_mode=mode),
        lambda m, a, b: m.div(a, b, rounding_mode=mode),
        lambda m, a, b: m.div(a, 3, rounding_mode=mode),
    ):
        ours = call(sg, sg.tensor(x), sg.tensor(y)).numpy()
        theirs = call(torch, torch.tensor(x), torch.tensor(y)).numpy()
        assert ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes()


def test_rounded_division_has_a_zero_gradient():
    x = sg.tensor([7.5, -7.5], requires_grad=True)
    (x.div(2, rounding_mode="trunc") + x.div(2, rounding_mode="floor")).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    "call, kind, message",
    [
        (
            lambda lib: lib.ones(2).div(2, rounding_mode="round"),
            RuntimeError,
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
        ),
        (
            lambda lib: lib.tensor([1]).div(0, rounding_mode="trunc"),
            RuntimeError,
            "ZeroDivisionError",
        ),
        (
            lambda lib: lib.broadcast_shapes((2,), (3,)),
            RuntimeError,
            r"broadcast_shapes: shapes \[\(2,\), \(3,\)\] cannot be broadcast together",
        ),
        (lambda lib: lib.flip(lib.ones(2, 3), 1), TypeError, "must be tuple of ints, not int"),
        (lambda lib: lib.ones(2, 3).flip(dims=1), TypeError, "must be tuple of ints, not int"),
        (lambda lib: lib.ones(2, 3).flip(), TypeError, "missing 1 required positional"),
        (lambda lib: lib.flip([1, 2], (0,)), TypeError, "must be Tensor, not list"),
    ],
    ids=["mode", "zero", "shapes", "flip-int", "flip-int-keyword", "flip-no-dims", "flip-list"],
)
def test_errors_as_torch(call, kind, message):
    assert_raises_as_torch(call, kind, message)


@pytest.mark.parametrize(
    "name", ["permute", "view", "reshape", "expand", "repeat", "tile", "broadcast_to", "new_ones"]
)
def test_size_taking_methods_need_their_sizes(name):
    # of a one-entry tensor too: no sizes are not the sizes () (which make a 0-d view)
    assert_raises_as_torch(lambda lib: getattr(lib.ones(1), name)(), TypeError, "missing 1")


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.view(()),
        lambda x: x.reshape(()),
        lambda x: x.permute(()),
        lambda x: x.repeat(()),
        lambda x: x.t(),
        lambda x: x.transpose(0, -1),
    ],
)
def test_an_empty_size_is_a_size(call):
    assert call(sg.ones(())).shape == call(torch.ones(())).shape == ()


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.flip(0, 2),
        lambda m, x: x.flip((0, 2)),
        lambda m, x: x.flip([-1]),
        lambda m, x: x.flip(1),
        lambda m, x: x.flip(dims=(1,)),
        lambda m, x: m.flip(x, [0, 1]),
        lambda m, x: m.flip(x, dims=[2]),
    ],
)
def test_flip_call_forms_match_torch(call):
    x = np.arange(24).reshape(2, 3, 4)
    assert call(sg, sg.tensor(x)).tolist() == call(torch, torch.tensor(x)).tolist()


@pytest.mark.parametrize("shapes", [((2, 1), (3,)), (2, (3, 1)), ((), (4, 1), (1, 5)), ([1],)])
def test_broadcast_shapes_matches_torch(shapes):
    ours = sg.broadcast_shapes(*shapes)
    assert isinstance(ours, sg.Size) and ours == tuple(torch.broadcast_shapes(*shapes))
