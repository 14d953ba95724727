"""Complex tensors (complex64, complex128), as far as Meta's Llama rotary embeddings need them:
``polar`` and ``complex`` make them, ``view_as_complex`` and ``view_as_real`` reinterpret the
memory of a real tensor (sharing it, as PyTorch's), and ``Tensor.real``, ``.imag``, ``.conj()``
take them apart. Gradients follow PyTorch's convention (``ops/complex.py``); ops whose backward
is not yet right for complex numbers refuse them when they record one.

>>> import scratchgrad as sg
>>> z = sg.view_as_complex(sg.tensor([[1.0, 2.0], [3.0, -1.0]]))
>>> z, sg.view_as_real(z * 1j).tolist()
(tensor([1.+2.j, 3.-1.j]), [[-2.0, 1.0], [1.0, 3.0]])
"""

from __future__ import annotations

from scratchgrad import backend
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.ops import complex as complex_ops
from scratchgrad.tensor import Tensor, takes_out


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def view_as_complex(input: Tensor) -> Tensor:
    """The pairs along the last dim (of size 2, stride 1) as complex numbers: a view sharing
    ``input``'s memory, as ``torch.view_as_complex``; float32 gives complex64, float64
    complex128. The other strides and the offset must be even, as PyTorch requires.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([[0.0, 1.0]])
    >>> z = sg.view_as_complex(x)
    >>> x.add_(1)
    tensor([[1., 2.]])
    >>> z
    tensor([1.+2.j])
    """
    array = input.array
    if array.dtype not in (backend.float32, backend.float64):
        raise RuntimeError(
            "view_as_complex is only supported for float and double tensors, but got a tensor "
            f"of scalar type: {array.dtype}"
        )
    if array.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if array.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if array.size == 0:  # (NumPy's strides of an empty array are arbitrary: nothing to share)
        return complex_ops.ViewAsComplex.apply(input.contiguous())
    itemsize = array.itemsize
    if array.strides[-1] != itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(stride % (2 * itemsize) for stride in array.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return complex_ops.ViewAsComplex.apply(input)


def view_as_real(input: Tensor) -> Tensor:
    """Each complex entry as its (real, imaginary) pair in a new last dim of size 2: a view
    sharing ``input``'s memory, as ``torch.view_as_real``.

    >>> import scratchgrad as sg
    >>> sg.view_as_real(sg.tensor([1 + 2j, 3j]))
    tensor([[1., 2.],
            [0., 3.]])
    """
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return complex_ops.ViewAsReal.apply(input)


@takes_out
def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + i imag`` (broadcast), as ``torch.complex``: both parts
    float32 (giving complex64) or both float64 (complex128).

    >>> import scratchgrad as sg
    >>> sg.complex(sg.tensor([1.0, 2.0]), sg.tensor(-1.0))
    tensor([1.-1.j, 2.-1.j])
    """
    _check_parts("complex", real, imag)
    return complex_ops.Complex.apply(real, imag)


@takes_out
@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor ``abs * (cos(angle) + i sin(angle))`` (broadcast), as
    ``torch.polar``: both float32 (giving complex64) or both float64 (complex128).

    >>> import math, scratchgrad as sg
    >>> sg.polar(sg.tensor([2.0]), sg.tensor([math.pi / 2])).imag
    tensor([2.])
    """
    _check_parts("polar", abs, angle)
    return complex_ops.Polar.apply(abs, angle)


def _check_parts(name: str, x: Tensor, y: Tensor) -> None:
    """PyTorch's errors for the two real parts of ``complex`` or ``polar``, then ours for
    float16 parts, whose complex32 scratchgrad lacks."""
    kinds = (backend.float16, backend.float32, backend.float64)
    if x.dtype not in kinds or y.dtype not in kinds:
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got {x.dtype.name} and "
            f"{y.dtype.name}"
        )
    if x.dtype != y.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {x.dtype.name} but got scalar type {y.dtype.name} "
            "for second "
            "argument"
        )
    if x.dtype == backend.float16:
        raise TypeError(
            f"{name}: float16 parts would make complex32, which scratchgrad does not have; "
            "cast them to float32"
        )
