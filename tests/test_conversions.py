"""Conversions to Python numbers (``int()``, ``float()``, ``complex()``, ``operator.index``),
``Tensor.type()`` names and ``Tensor.to``'s positional forms, compared with PyTorch."""

import operator

import numpy as np
import pytest
import torch

import scratchgrad as sg

TENSORS = {
    "float 0-d": lambda m: m.tensor(2.5),
    "float 1 element": lambda m: m.tensor([[2.5]]),
    "float 2 elements": lambda m: m.tensor([1.0, 2.0]),
    "empty": lambda m: m.zeros(0),
    "int 0-d": lambda m: m.tensor(3),
    "int 2 elements": lambda m: m.tensor([3, 4]),
    "uint8": lambda m: m.tensor([7], dtype=m.uint8),
    "bool": lambda m: m.tensor(True),
    "complex, no imaginary part": lambda m: m.tensor(1.5 + 0j),
    "complex": lambda m: m.tensor(1.5 + 2j),
    "complex 2 elements": lambda m: m.tensor([1j, 2j]),
}
CONVERSIONS = {"int": int, "float": float, "complex": complex, "index": operator.index}


def _outcome(make, convert, m):
    try:
        value = convert(make(m))
    except Exception as error:  # noqa: BLE001  (the error's type is compared)
        return type(error)
    return type(value), value


@pytest.mark.parametrize("convert", CONVERSIONS.values(), ids=CONVERSIONS)
@pytest.mark.parametrize("make", TENSORS.values(), ids=TENSORS)
def test_python_numbers_and_their_errors_as_pytorchs(make, convert):
    assert _outcome(make, convert, sg) == _outcome(make, convert, torch)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "bfloat16", "float32"])
def test_type_names_every_dtype_and_converts_back(dtype):
    name = torch.zeros(1, dtype=getattr(torch, dtype)).type()
    assert sg.zeros(1, dtype=getattr(sg, dtype)).type() == name
    assert str(sg.zeros(1).type(name).dtype).split(".")[-1] == dtype


def test_to_takes_non_blocking_and_copy_after_the_dtype():
    x = sg.tensor([1.5, 2.0])
    assert x.to(sg.float64, False, True).dtype == sg.float64
    copied = x.to(sg.float32, False, True)
    assert copied is not x and x.to(sg.float32, False) is x
    assert x.to(x, True, True) is not x and x.to("cpu", sg.float32, False, True) is not x


TO_ARGUMENTS = {
    "a float": lambda m: (2.5,),
    "a complex number": lambda m: (1j,),
    "a bool": lambda m: (True,),
    "a float then non_blocking": lambda m: (2.5, True),
    "a bool then non_blocking": lambda m: (False, True),
}


@pytest.mark.parametrize("make", TO_ARGUMENTS.values(), ids=TO_ARGUMENTS)
def test_to_reads_a_python_number_as_a_tensor_of_it_as_pytorch_does(make):
    """float64, complex128 or bool, on the CPU (ours raised, or took a bool for non_blocking)."""
    ours, theirs = sg.ones(2).to(*make(sg)), torch.ones(2).to(*make(torch))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.tolist() == theirs.tolist()


def test_to_takes_a_tensor_by_keyword_and_refuses_other_flags_as_pytorch_does():
    like = sg.zeros(1, dtype=sg.float16)
    assert sg.ones(2).to(tensor=like).dtype == sg.float16
    assert torch.ones(2).to(tensor=torch.zeros(1, dtype=torch.float16)).dtype == torch.float16
    for m in (sg, torch):
        with pytest.raises(TypeError):
            m.ones(2).to("cpu", m.float64, False, 1)


REFUSED_TO_FLAGS = {
    "a device then non_blocking": lambda m, x: x.to("cpu", True),
    "a device then two flags": lambda m, x: x.to("cpu", False, True),
    "None then non_blocking": lambda m, x: x.to(None, True),
    "non_blocking an int": lambda m, x: x.to("cpu", non_blocking=1),
    "non_blocking None": lambda m, x: x.to(m.float64, non_blocking=None),
    "copy an int": lambda m, x: x.to(m.float64, copy=1),
    "a module's, a device then non_blocking": lambda m, x: m.nn.Linear(1, 1).to("cpu", True),
    "a module's non_blocking an int": lambda m, x: m.nn.Linear(1, 1).to(non_blocking=1),
}


@pytest.mark.parametrize("call", REFUSED_TO_FLAGS.values(), ids=REFUSED_TO_FLAGS)
@pytest.mark.parametrize("m", [sg, torch], ids=["scratchgrad", "torch"])
def test_to_refuses_flags_after_a_device_alone_and_flags_not_bools_as_pytorch_does(m, call):
    """(x.to("cpu", True) and non_blocking=1 were taken here.)"""
    with pytest.raises(TypeError):
        call(m, m.ones(2))


def test_to_refuses_a_dtypes_name_as_pytorch_does():
    with pytest.raises(RuntimeError):
        torch.ones(1).to("float64")
    with pytest.raises(RuntimeError, match="float64"):
        sg.ones(1).to("float64")


TENSOR_LISTS = {
    "0-d float64 and an int": lambda m: [m.tensor(1.0, dtype=m.float64), 2],
    "an int and a 0-d float64": lambda m: [[2], [m.tensor(1.0, dtype=m.float64)]],
    "0-d int8s": lambda m: [m.tensor(1, dtype=m.int8), m.tensor(2, dtype=m.int8)],
    "0-d int32 and a float": lambda m: [m.tensor(1, dtype=m.int32), 2.5],
    "1-element tensors of several shapes": lambda m: [m.tensor([1.0]), m.tensor([[2.0]])],
    "a bool in a nested list": lambda m: [[m.tensor(True)], [False]],
    "a tensor that requires grad": lambda m: [m.tensor(1.0, requires_grad=True), 2.0],
    "2-element tensors": lambda m: [m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])],
    "an empty tensor": lambda m: [m.zeros(0)],
}


@pytest.mark.parametrize("make", TENSOR_LISTS.values(), ids=TENSOR_LISTS)
def test_tensors_in_a_list_are_numbers_of_their_dtype_as_pytorchs(make):
    try:
        expected = torch.tensor(make(torch))
    except ValueError:
        with pytest.raises(ValueError, match="only one element tensors"):
            sg.tensor(make(sg))
        return
    out = sg.tensor(make(sg))
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert out.shape == expected.shape and out.tolist() == expected.tolist()
    assert not out.requires_grad


@pytest.mark.parametrize("data", [[1, 2j], 1j, [[1.5], [1j]], [True, 1j], [None], [1.0, None]])
@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "uint8"])
def test_data_a_real_dtype_cannot_hold_raises_as_pytorchs(data, dtype):
    with pytest.raises(TypeError):
        torch.tensor(data, dtype=getattr(torch, dtype))
    with pytest.raises(TypeError, match=f"cannot make a {dtype} tensor of"):
        sg.tensor(data, dtype=getattr(sg, dtype))


HELD = [([2**70], "float64"), ([2**70, 1j], "complex128"), ([1, 2j], "complex64"), ([2j], "bool")]


@pytest.mark.parametrize(("data", "dtype"), HELD, ids=repr)
def test_data_the_dtype_holds_still_converts(data, dtype):
    expected = torch.tensor(data, dtype=getattr(torch, dtype)).tolist()
    assert sg.tensor(data, dtype=getattr(sg, dtype)).tolist() == expected


NUMPY_INPUTS = {
    "a list": lambda: [1.0, 2.0],
    "a NumPy scalar": lambda: np.float64(2.5),
    "objects": lambda: np.array([1, None]),
    "text": lambda: np.array(["a"]),
    "long double": lambda: np.array([1.0], dtype=np.longdouble),
    "big-endian float64": lambda: np.arange(3.0).astype(">f8"),
    "big-endian int32": lambda: np.arange(3).astype(">i4"),
}


@pytest.mark.parametrize("make", NUMPY_INPUTS.values(), ids=NUMPY_INPUTS)
def test_from_numpy_refuses_what_pytorch_refuses(make):
    with pytest.raises((TypeError, ValueError)) as expected:
        torch.from_numpy(make())
    with pytest.raises(expected.type, match="from_numpy"):
        sg.from_numpy(make())


@pytest.mark.parametrize("convert", ["tensor", "as_tensor", "asarray"])
def test_an_array_in_another_byte_order_raises_as_pytorchs(convert):
    with pytest.raises(ValueError):
        getattr(torch, convert)(np.arange(3.0).astype(">f8"))
    with pytest.raises(ValueError, match=f"{convert}: the array's byte order"):
        getattr(sg, convert)(np.arange(3.0).astype(">f8"))


def test_from_numpy_still_shares_every_supported_dtype():
    for dtype in ["bool", "int8", "uint8", "int64", "float16", "float64", "complex64"]:
        array = np.zeros(2, dtype=dtype)
        assert np.shares_memory(sg.from_numpy(array).numpy(), array)


@pytest.mark.parametrize("data", [[1, 2], (1.5,), 3, 2.5], ids=repr)
def test_asarray_cannot_alias_python_data(data):
    with pytest.raises(ValueError):
        torch.asarray(data, copy=False)
    with pytest.raises(ValueError, match="asarray: can't alias"):
        sg.asarray(data, copy=False)


@pytest.mark.parametrize("cast", ["cfloat", "cdouble"])
@pytest.mark.parametrize("data", [[1.5, -2.0], [1, 2], [True, False]], ids=repr)
def test_complex_casts_as_pytorchs(cast, data):
    expected = getattr(torch.tensor(data), cast)()
    out = getattr(sg.tensor(data), cast)()
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert out.tolist() == expected.tolist()


def test_numpy_force_reads_a_tensor_that_requires_grad():
    x = sg.tensor([1.5, 2.0], requires_grad=True) * 2
    expected = (torch.tensor([1.5, 2.0], requires_grad=True) * 2).numpy(force=True)
    assert x.numpy(force=True).tolist() == expected.tolist()
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()


@pytest.mark.parametrize(
    "args",
    [
        ("float64", "float16"),
        ("float64", "cpu"),
        ("cpu", "cpu"),
        ("cpu", "tensor"),
        ("tensor", "float64"),
    ],
    ids=str,
)
def test_to_refuses_arguments_pytorch_cannot_read(args):
    def read(m):
        x = m.ones(1)
        return [x if arg == "tensor" else getattr(m, arg, arg) for arg in args]

    with pytest.raises(TypeError):
        torch.ones(1).to(*read(torch))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        sg.ones(1).to(*read(sg))
