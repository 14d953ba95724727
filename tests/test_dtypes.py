"""``scratchgrad.dtype``: the dtype objects, checked against ``torch.dtype`` attribute by
attribute, and as NumPy dtypes (equal, hashed the same, accepted wherever NumPy takes one)."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import scratchgrad as sg

NAMES = [
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "uint8", "int8", "int16", "int32", "int64", "bool",
]  # fmt: skip
ALIASES = ["half", "float", "double", "cfloat", "cdouble", "short", "int", "long"]


@pytest.mark.parametrize("name", NAMES)
def test_attributes_are_torchs(name):
    ours, theirs = getattr(sg, name), getattr(torch, name)
    for attribute in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert repr(ours) == str(ours) == str(theirs).replace("torch.", "scratchgrad.")
    assert str(ours.to_real()) == str(theirs.to_real()).replace("torch.", "scratchgrad.")


@pytest.mark.parametrize("name", NAMES)
def test_to_complex_is_torchs_or_refused(name):
    ours, theirs = getattr(sg, name), getattr(torch, name)
    if name == "float16":  # PyTorch's complex32, which scratchgrad lacks
        assert str(theirs.to_complex()) == "torch.complex32"
        with pytest.raises(TypeError, match="no complex32"):
            ours.to_complex()
        return
    try:
        expected = str(theirs.to_complex()).replace("torch.", "scratchgrad.")
    except RuntimeError:
        with pytest.raises(RuntimeError, match=f"to_complex: scratchgrad.{name} has no complex"):
            ours.to_complex()
        return
    assert str(ours.to_complex()) == expected
    assert ours.to_complex() is getattr(sg, expected.removeprefix("scratchgrad."))


@pytest.mark.parametrize("alias", ALIASES)
def test_aliases_are_the_same_objects_as_torchs(alias):
    theirs = getattr(torch, alias)
    assert getattr(sg, alias) is getattr(sg, str(theirs).removeprefix("torch."))


@pytest.mark.parametrize("name", NAMES)
def test_a_dtype_is_its_numpy_dtype(name):
    ours = getattr(sg, name)
    numpy_dtype = np.dtype(ours)
    assert numpy_dtype.name == name and ours.dtype is numpy_dtype
    assert ours == numpy_dtype and numpy_dtype == ours and (ours != numpy_dtype) is False
    assert hash(ours) == hash(numpy_dtype)
    assert {numpy_dtype: 1}[ours] == 1 and {ours: 2}[numpy_dtype] == 2
    assert ours == numpy_dtype.type  # x.dtype == numpy.float32, as before
    others = [getattr(sg, other) for other in NAMES if other != name]
    assert all(ours != other and np.dtype(other) != ours for other in others)
    assert ours.kind == numpy_dtype.kind and ours.name == numpy_dtype.name  # forwarded
    assert ours.type is numpy_dtype.type and ours.char == numpy_dtype.char
    with pytest.raises(AttributeError):
        ours._private  # noqa: B018  (no private name is forwarded)


@pytest.mark.parametrize("name", NAMES)
def test_numpy_takes_a_dtype_without_a_warning(name):
    ours = getattr(sg, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.empty(2, ours).dtype == np.zeros(2).astype(ours).dtype == np.dtype(ours)
        assert np.promote_types(ours, np.int8) == np.promote_types(np.dtype(ours), np.int8)


def test_isinstance_and_singletons():
    assert isinstance(sg.float32, sg.dtype) and isinstance(sg.ones(1).dtype, sg.dtype)
    assert not isinstance(np.dtype("float32"), sg.dtype)
    assert sg.ones(1).dtype is sg.float32 and sg.tensor([1]).dtype is sg.int64
    assert copy.copy(sg.bfloat16) is sg.bfloat16 and copy.deepcopy(sg.int8) is sg.int8
    assert copy.deepcopy({"d": sg.float64})["d"] is sg.float64
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(sg.float32)  # no pickle in scratchgrad


def test_a_dtype_cannot_be_changed():
    """As torch.dtype's attributes: every tensor shares the object."""
    for attribute, value in (("is_signed", False), ("itemsize", 8), ("dtype", np.dtype("f8"))):
        with pytest.raises(AttributeError, match=f"attribute '{attribute}' .* not writable"):
            setattr(sg.float32, attribute, value)
    assert not sg.uint8.is_signed and sg.float32.itemsize == 4 and sg.ones(1).dtype == np.float32


def test_printing_names_the_module():
    assert str(sg.ones(1).dtype) == "scratchgrad.float32"
    assert repr(sg.ones(2, dtype=sg.float64)) == "tensor([1., 1.], dtype=scratchgrad.float64)"
    assert repr(sg.zeros(1, dtype=sg.int8)) == "tensor([0], dtype=scratchgrad.int8)"


@pytest.mark.parametrize("name", NAMES)
def test_factories_and_conversions_take_and_give_dtype_objects(name):
    ours = getattr(sg, name)
    made = [
        sg.zeros(2, dtype=ours), sg.ones(2, dtype=ours), sg.empty(2, dtype=ours),
        sg.full((2,), 1, dtype=ours), sg.tensor([1, 0], dtype=ours), sg.arange(2, dtype=ours),
        sg.ones(2).to(ours), sg.ones(2).to("cpu", ours), sg.ones(2).to(dtype=ours),
        sg.ones(2).type(ours), sg.ones(2).new_zeros(2, dtype=ours),
        sg.zeros_like(sg.ones(2), dtype=ours),
    ]  # fmt: skip
    assert all(x.dtype is ours for x in made)
    # a NumPy dtype, a NumPy type and a name are still taken
    assert sg.zeros(1, dtype=np.dtype(ours)).dtype is ours
    assert sg.zeros(1, dtype=np.dtype(ours).type).dtype is ours
    assert sg.ones(1).to(np.dtype(ours)).dtype is ours


def test_functions_that_give_a_dtype_give_the_objects():
    assert sg.get_default_dtype() is sg.float32
    sg.set_default_dtype(sg.float64)
    try:
        assert sg.get_default_dtype() is sg.float64 and sg.tensor([1.5]).dtype is sg.float64
    finally:
        sg.set_default_dtype(sg.float32)
    pairs = [("uint8", "int8"), ("int64", "float16"), ("bfloat16", "float16"), ("int8", "bool")]
    for x, y in pairs:
        ours = sg.promote_types(getattr(sg, x), getattr(sg, y))
        assert isinstance(ours, sg.dtype)
        assert str(ours) == str(torch.promote_types(getattr(torch, x), getattr(torch, y))).replace(
            "torch.", "scratchgrad."
        )
    result = sg.result_type(sg.tensor([1], dtype=sg.uint8), 2.5)
    expected = torch.result_type(torch.tensor([1], dtype=torch.uint8), 2.5)
    assert result is sg.float32 and expected is torch.float32
    assert sg.promote_types(np.int8, "float64") is sg.float64  # NumPy's and names still taken


def test_finfo_and_iinfo_take_the_objects():
    for name in ("bfloat16", "float16", "float32", "float64"):
        ours, theirs = sg.finfo(getattr(sg, name)), torch.finfo(getattr(torch, name))
        assert (ours.eps, ours.max, ours.tiny, ours.dtype) == (
            theirs.eps, theirs.max, theirs.tiny, theirs.dtype
        )  # fmt: skip
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        ours, theirs = sg.iinfo(getattr(sg, name)), torch.iinfo(getattr(torch, name))
        assert (ours.min, ours.max, ours.bits, ours.dtype) == (
            theirs.min, theirs.max, theirs.bits, theirs.dtype
        )  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_safetensors_round_trip_keeps_the_dtype(name, tmp_path):
    ours = getattr(sg, name)
    sg.save({"x": sg.ones(3, dtype=ours)}, tmp_path / "x.safetensors")
    loaded = sg.load(tmp_path / "x.safetensors")["x"]
    assert loaded.dtype is ours and loaded.tolist() == sg.ones(3, dtype=ours).tolist()


def test_a_jitted_step_takes_a_dtype_argument():
    def step(x, dtype):
        return (x.to(dtype) * 3).sum()

    jitted = sg.jit(step)
    for dtype in (sg.float64, sg.float64, sg.float32, sg.float64, sg.int64):
        x = sg.tensor([1.5, 2.0, -1.0])
        eager, out = step(x, dtype), jitted(x, dtype)
        assert out.dtype is eager.dtype is (sg.float32 if dtype is sg.float32 else dtype)
        assert out.item() == eager.item()


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor"])
def test_a_legacy_tensor_types_dtype_is_the_object(name):
    ours, theirs = getattr(sg, name).dtype, getattr(torch, name).dtype
    assert isinstance(ours, sg.dtype) and str(ours) == str(theirs).replace("torch", "scratchgrad")
    assert isinstance(getattr(sg, name)(2), getattr(sg, name))


def test_error_messages_name_dtypes_without_the_module():
    # (they spell dtypes as they did when dtypes were NumPy's; only the RNN's says torch.float32)
    with pytest.raises(RuntimeError, match="^lerp: expected dtype float32 for end but got float64"):
        sg.ones(2).lerp(sg.ones(2, dtype=sg.float64), 0.5)
    with pytest.raises(NotImplementedError, match="not implemented for int64 inputs"):
        sg.nn.functional.interpolate(sg.ones(1, 1, 4, dtype=sg.int64), scale_factor=2.0)
    with pytest.raises(RuntimeError, match="^cross: expected inputs of one dtype, got float32 and"):
        sg.ones(3).cross(sg.ones(3, dtype=sg.float64), dim=0)
