"""``alpha`` of add and sub (function, method and in-place forms) checked as PyTorch checks it
against the result's dtype, the ``negative`` and ``subtract`` aliases, and ``Tensor.type()``
with PyTorch's type names, all against PyTorch."""

import numpy as np
import pytest
import torch

import scratchgrad as sg

OPERANDS = {
    "int": lambda m: m.tensor([1, 2]),
    "float": lambda m: m.tensor([1.5, 2.0]),
    "bool": lambda m: m.tensor([True, False]),
    "number 2": lambda m: 2,
    "number 2.5": lambda m: 2.5,
}
FORMS = {
    "add": lambda m, x, y, alpha: m.add(x, y, alpha=alpha),
    "sub": lambda m, x, y, alpha: m.sub(x, y, alpha=alpha),
    "subtract": lambda m, x, y, alpha: m.subtract(x, y, alpha=alpha),
    "Tensor.add": lambda m, x, y, alpha: x.add(y, alpha=alpha),
    "Tensor.sub": lambda m, x, y, alpha: x.sub(y, alpha=alpha),
    "add_": lambda m, x, y, alpha: x.clone().add_(y, alpha=alpha),
    "sub_": lambda m, x, y, alpha: x.clone().sub_(y, alpha=alpha),
    "subtract_": lambda m, x, y, alpha: x.clone().subtract_(y, alpha=alpha),
}


def _outcome(form, m, x, y, alpha):
    try:
        return FORMS[form](m, OPERANDS[x](m), OPERANDS[y](m), alpha).tolist()
    except RuntimeError as error:
        return str(error).split(":")[-1].strip()  # PyTorch's words, past our op's name


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("x", ["int", "float", "bool"])
@pytest.mark.parametrize("y", OPERANDS)
@pytest.mark.parametrize("alpha", [2, 2.0, 1.0, True, False, 1 + 2j])
def test_alpha_is_checked_and_applied_as_pytorch(form, x, y, alpha):
    """A float alpha with an integer or bool result, a bool alpha with a non-bool result and
    a complex one raise PyTorch's errors; a bool result reads an int alpha as a bool."""
    ours, theirs = _outcome(form, sg, x, y, alpha), _outcome(form, torch, x, y, alpha)
    if isinstance(theirs, str) and "alpha" not in theirs:  # bool subtraction, in-place casts
        assert isinstance(ours, str)
        return
    assert ours == theirs


def test_negative_and_subtract_are_aliases_as_in_pytorch():
    for m in (sg, torch):
        x = m.tensor([1.0, -2.0])
        assert m.negative(x).tolist() == x.negative().tolist() == [-1.0, 2.0]
        assert x.clone().negative_().tolist() == [-1.0, 2.0]
        assert m.subtract(x, 1, alpha=3).tolist() == x.subtract(1, alpha=3).tolist() == [-2.0, -5.0]
        with pytest.raises(RuntimeError, match="on a bool tensor is not supported"):
            m.negative(m.tensor([True]))


DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64"]


@pytest.mark.parametrize("dtype", [*DTYPES, "bool"])
def test_type_names_the_type_as_pytorch(dtype):
    assert (
        sg.zeros(1, dtype=getattr(sg, dtype)).type()
        == torch.zeros(1, dtype=getattr(torch, dtype)).type()
    )


@pytest.mark.parametrize("to", ["torch.DoubleTensor", "torch.LongTensor", "torch.BoolTensor"])
def test_type_casts_to_a_name_a_legacy_type_or_a_dtype(to):
    x = sg.tensor([1.5, -2.0], requires_grad=True)
    expected = torch.tensor([1.5, -2.0]).type(to)
    name = to.removeprefix("torch.")
    for dtype in (to, getattr(sg, name), getattr(sg, str(expected.dtype).split(".")[-1])):
        out = x.type(dtype)
        assert out.type() == to and out.tolist() == expected.tolist()
    assert x.type("torch.FloatTensor") is x and x.type(sg.float32) is x
    out = x.type(sg.float64)
    out.sum().backward()  # in the graph, as PyTorch's ToCopyBackward0
    assert x.grad.tolist() == [1.0, 1.0]


def test_type_refuses_what_pytorch_refuses():
    x = sg.ones(2)
    for bad in ("DoubleTensor", "torch.float64", "float", "torch.NoSuchTensor"):
        with pytest.raises(ValueError, match="invalid type"):
            x.type(bad)
        with pytest.raises(ValueError, match="invalid type"):
            torch.ones(2).type(bad)
    with pytest.raises(TypeError, match="dtype must be a type, str, or dtype object"):
        x.type(3)


def test_a_float_alpha_on_integers_used_to_be_applied():
    """The bug this file's first test fixes, spelled out: 1 + 2.5 * 2 was 6, PyTorch raises."""
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        sg.add(sg.tensor([1]), sg.tensor([2]), alpha=2.5)
    assert np.array_equal(sg.add(sg.tensor([True]), sg.tensor([True]), alpha=2).numpy(), [True])
