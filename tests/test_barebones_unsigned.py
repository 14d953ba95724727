"""PyTorch's "barebones" unsigned dtypes, ``uint16``, ``uint32`` and ``uint64``: they promote
with no other integer dtype (PyTorch's RuntimeError), make tensors and casts as PyTorch's, and
round-trip through NumPy and safetensors. PyTorch implements only some ops on them (its
NotImplementedError: ``+``, ``max``, ``flip``, ...); scratchgrad computes those as NumPy does."""

import numpy as np
import pytest
import torch
from oracle import assert_raises_as_torch, outcome, raised_alike

import scratchgrad as sg

UNSIGNED = ["uint16", "uint32", "uint64"]
OTHERS = [
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "complex64", *UNSIGNED,
]  # fmt: skip


def _name(dtype) -> str:
    return str(dtype).rpartition(".")[2]


@pytest.mark.parametrize("other", OTHERS)
@pytest.mark.parametrize("unsigned", UNSIGNED)
def test_promotion_is_pytorchs(unsigned, other):
    pair = lambda lib: (getattr(lib, unsigned), getattr(lib, other))  # noqa: E731
    try:
        expected = _name(torch.promote_types(*pair(torch)))
    except RuntimeError:
        assert_raises_as_torch(
            lambda lib: lib.promote_types(*pair(lib)), RuntimeError, "Promotion for uint16"
        )
        with pytest.raises(RuntimeError, match="Promotion for uint16"):
            sg.ones(2, dtype=getattr(sg, unsigned)) * sg.ones(2, dtype=getattr(sg, other))
        return
    assert _name(sg.promote_types(*pair(sg))) == expected


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, u: lib.tensor([1, 2, 65535], dtype=u),
        lambda lib, u: lib.tensor([-1, 3], dtype=u),  # wraps, as PyTorch's (uint64 raises)
        lambda lib, u: lib.full((2,), -1, dtype=u),
        lambda lib, u: lib.zeros(2, dtype=u),
        lambda lib, u: lib.tensor([1.7, 70000.0, -1.0]).to(u),
        lambda lib, u: lib.tensor([70000, -1]).to(u),
        lambda lib, u: lib.tensor([3, 1], dtype=u).to(lib.float32),
        lambda lib, u: lib.tensor([3, 1], dtype=u).to(lib.bool),
        lambda lib, u: lib.tensor([3, 1], dtype=u).sum(),  # int64, as PyTorch's
        lambda lib, u: lib.tensor([3, 1], dtype=u).cumsum(0),
        lambda lib, u: lib.tensor([3, 1], dtype=u).prod(),
        lambda lib, u: lib.tensor([3, 1], dtype=u).sort().values,
        lambda lib, u: lib.tensor([3, 1], dtype=u) == 1,
        lambda lib, u: lib.tensor([3, 1], dtype=u) * lib.tensor(2, dtype=lib.int16),
        lambda lib, u: lib.tensor([3, 1], dtype=u) * 2.5,
        lambda lib, u: lib.tensor([3, 1], dtype=u) + lib.tensor([1.5], dtype=lib.float16),
        lambda lib, u: lib.tensor([3, 6], dtype=u).bitwise_and(lib.tensor([1, 2], dtype=u)),
        lambda lib, u: lib.ones(2, dtype=lib.int64).view(u),
        lambda lib, u: lib.tensor([3, 1], dtype=u)[1],
    ],
)
@pytest.mark.parametrize("unsigned", UNSIGNED)
def test_tensors_and_their_ops_as_pytorch(call, unsigned):
    ours = outcome(call, sg, getattr(sg, unsigned))
    theirs = outcome(call, torch, getattr(torch, unsigned))
    if raised_alike(ours, theirs, unsigned):
        return
    assert _name(ours.dtype) == _name(theirs.dtype) and ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("unsigned", UNSIGNED)
def test_the_dtype_objects_as_pytorch(unsigned):
    ours, theirs = getattr(sg, unsigned), getattr(torch, unsigned)
    assert (ours.is_signed, ours.itemsize, ours.is_floating_point) == (
        theirs.is_signed,
        theirs.itemsize,
        theirs.is_floating_point,
    )
    assert sg.iinfo(ours).max == torch.iinfo(theirs).max
    x = sg.tensor([1], dtype=ours)
    assert x.type() == torch.tensor([1], dtype=theirs).type()
    assert x.element_size() == theirs.itemsize and not x.is_signed()
    assert x.numpy().dtype == np.dtype(unsigned)
    assert sg.from_numpy(np.array([7], unsigned)).dtype is ours


def test_uint64_holds_ints_past_int64():
    big = [2**64 - 1, 2**63]
    assert (
        sg.tensor(big, dtype=sg.uint64).tolist() == torch.tensor(big, dtype=torch.uint64).tolist()
    )
    assert sg.full((1,), 2**64 - 1, dtype=sg.uint64).tolist() == [2**64 - 1]
    assert_raises_as_torch(lambda lib: lib.tensor([2**64], dtype=lib.uint64), OverflowError, "")


def test_only_floating_tensors_require_gradients():
    assert_raises_as_torch(
        lambda lib: lib.zeros(2, dtype=lib.uint16, requires_grad=True), RuntimeError, "gradients"
    )


@pytest.mark.parametrize("unsigned", UNSIGNED)
def test_safetensors_round_trip(unsigned, tmp_path):
    x = sg.tensor([0, 5, 65535], dtype=getattr(sg, unsigned))
    sg.save({"x": x}, tmp_path / "x.safetensors")
    back = sg.load(tmp_path / "x.safetensors")["x"]
    assert back.dtype is x.dtype and back.tolist() == x.tolist()


def test_ops_pytorch_lacks_are_computed_as_numpy():
    x = np.array([5, 65535], "uint16")
    for op in (lambda a: a + 1, lambda a: -a, lambda a: a // 2, lambda a: a % 3):
        assert op(sg.tensor(x)).tolist() == op(x).tolist()
    assert sg.tensor(x).max().item() == 65535 and sg.tensor(x).flip(0).tolist() == [65535, 5]
