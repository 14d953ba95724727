"""vmap over ``%`` / ``remainder``, ``//`` / ``floor_divide`` and ``fmod``, which divide
integers by NumPy's exact functions on the arrays (no Function), against ``torch.func.vmap``:
random int and float operands with negative dividends and divisors (remainder takes the
divisor's sign, fmod the dividend's), batched on either side or both, numbers on either side,
PyTorch's promotion (a batched 0-d member promotes as 0-d), nested vmaps, division by zero."""

import numpy as np
import pytest
import torch
from oracle import assert_close, same_dtype

import scratchgrad as sg
from scratchgrad.func import grad, vmap

BATCH = 4
OPS = {  # name -> call(m, x, y)
    "%": lambda m, x, y: x % y,
    "remainder": lambda m, x, y: m.remainder(x, y),
    "//": lambda m, x, y: x // y,
    "floor_divide": lambda m, x, y: m.floor_divide(x, y),
    "fmod": lambda m, x, y: x.fmod(y),
    "sg.fmod": lambda m, x, y: m.fmod(x, y),
}
IN_DIMS = [(0, 0), (0, None), (None, 0), (1, 0)]
DTYPES = ["int64", "int32", "int16", "float64", "float32"]


def _operands(rng, dtype: str, x_shape, y_shape):
    """Dividends in [-20, 20], divisors in [-7, 7] without 0 (floats: not whole numbers)."""
    x = rng.integers(-20, 21, x_shape).astype(dtype)
    y = rng.integers(1, 8, y_shape) * rng.choice([-1, 1], y_shape)
    if dtype.startswith("float"):
        x = x + rng.random(x_shape)
        y = y * (0.5 + rng.random(y_shape))
    return x, y.astype(dtype)


def _shape(member, in_dim):
    if in_dim is None:
        return member
    shape = list(member)
    shape.insert(in_dim, BATCH)
    return tuple(shape)


def _assert_same(ours, theirs, what):
    assert same_dtype(ours, theirs), f"{what}: {ours.dtype}, PyTorch's {theirs.dtype}"
    assert_close(ours, theirs, "float64", what)


def _both(call, arrays, in_dims, dtypes=(None, None)):
    ours = vmap(lambda x, y: call(sg, x, y), in_dims=in_dims)(
        *(sg.tensor(a, dtype=d and getattr(sg, d)) for a, d in zip(arrays, dtypes))
    )
    theirs = torch.func.vmap(lambda x, y: call(torch, x, y), in_dims=in_dims)(
        *(torch.tensor(a, dtype=d and getattr(torch, d)) for a, d in zip(arrays, dtypes))
    )
    return ours, theirs


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_dims", IN_DIMS, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_division_of_tensors_matches_torch_vmap(name, in_dims, dtype):
    rng = np.random.default_rng(0)
    for x_member, y_member in [((3, 5), (3, 5)), ((2, 3, 5), (5,)), ((5,), (2, 1, 5))]:
        arrays = _operands(rng, dtype, _shape(x_member, in_dims[0]), _shape(y_member, in_dims[1]))
        what = f"{name} {dtype} in_dims={in_dims} {x_member} {y_member}"
        ours, theirs = _both(OPS[name], arrays, in_dims)
        _assert_same(ours, theirs, what)
        members = [
            [sg.tensor(a if d is None else a.take(i, d)) for a, d in zip(arrays, in_dims)]
            for i in range(BATCH)
        ]
        loop = sg.stack([OPS[name](sg, *operands) for operands in members])
        assert_close(ours, loop.numpy(), "float64", f"{what} against a loop")


NUMBERS = {  # name -> call(m, x, y) with a number on one side; y is unused
    "x % -3": lambda m, x, y: x % -3,
    "7 % x": lambda m, x, y: 7 % x,
    "x // -3": lambda m, x, y: x // -3,
    "-7 // x": lambda m, x, y: -7 // x,
    "fmod(x, -3)": lambda m, x, y: x.fmod(-3),
    "x % 2.5": lambda m, x, y: x % 2.5,  # an int tensor and a float: float32, as PyTorch
    "x // -1.5": lambda m, x, y: x // -1.5,
    "remainder(x, 300)": lambda m, x, y: m.remainder(x, 300),  # int16 keeps its dtype
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NUMBERS)
def test_division_with_a_number_matches_torch_vmap(name, dtype):
    rng = np.random.default_rng(len(name))
    x = rng.integers(-20, 21, (BATCH, 3, 2)) * rng.choice([-1, 1], (BATCH, 3, 2))
    x[x == 0] = 5  # a divisor in the reflected ones
    ours, theirs = _both(NUMBERS[name], [x.astype(dtype), x.astype(dtype)], (0, None))
    _assert_same(ours, theirs, f"{name} {dtype}")


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("x_dtype, y_dtype", [("int32", "int64"), ("int64", "float32")])
@pytest.mark.parametrize("scalar_member", ["x", "y"])
def test_promotion_as_one_member_promotes(name, x_dtype, y_dtype, scalar_member):
    """A batched 0-d member promotes as a 0-d tensor: int32 by a batch of 0-d int64 members
    stays int32, as in PyTorch, though the batch itself is a 1-d int64 tensor."""
    rng = np.random.default_rng(0)
    x_shape, y_shape = ((BATCH,), (BATCH, 3)) if scalar_member == "x" else ((BATCH, 3), (BATCH,))
    x, y = _operands(rng, "int64", x_shape, y_shape)
    ours, theirs = _both(OPS[name], [x, y], (0, 0), (x_dtype, y_dtype))
    _assert_same(ours, theirs, f"{name} {x_dtype} {y_dtype}, 0-d {scalar_member}")


@pytest.mark.parametrize("name", OPS)
def test_nested_vmaps_matches_torch(name):
    """The outer vmap batches the divisors, the inner one the dividends."""
    rng = np.random.default_rng(1)
    x, y = _operands(rng, "int64", (5, 3), (BATCH, 3))
    results = []
    for lib, mapped in ((sg, vmap), (torch, torch.func.vmap)):
        inner = mapped(lambda a, b, lib=lib: OPS[name](lib, a, b), in_dims=(0, None))
        results.append(mapped(inner, in_dims=(None, 0))(lib.tensor(x), lib.tensor(y)))
    _assert_same(*results, f"nested {name}")
    assert results[0].shape == (BATCH, 5, 3)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("in_dims", IN_DIMS[:3], ids=str)
def test_integer_division_by_zero_raises_as_torch(name, in_dims):
    x = np.arange(1, 7).reshape(2, 3)
    y = np.array([[1, 2, 3], [4, 0, 6]])
    for lib, mapped in ((sg, vmap), (torch, torch.func.vmap)):
        f = mapped(lambda a, b, lib=lib: OPS[name](lib, a, b), in_dims=in_dims)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            f(lib.tensor(x), lib.tensor(y if in_dims[1] is not None else y[1]))


def test_float_remainder_differentiates_under_vmap_as_torch():
    """d(x % y)/dx is 1 and d(x % y)/dy is -floor(x / y), member by member."""
    rng = np.random.default_rng(2)
    x, y = _operands(rng, "float64", (BATCH, 3), (BATCH, 3))
    ours = vmap(grad(lambda a, b: (a % b).sum(), argnums=(0, 1)))(sg.tensor(x), sg.tensor(y))
    theirs = torch.func.vmap(torch.func.grad(lambda a, b: (a % b).sum(), argnums=(0, 1)))(
        torch.tensor(x), torch.tensor(y)
    )
    for g, t in zip(ours, theirs):
        assert_close(g, t, "float64", "vmap(grad) of %")
