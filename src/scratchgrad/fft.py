"""Discrete Fourier transforms, as ``torch.fft``: ``fft``/``ifft`` (and their 2-D and n-D
forms), ``rfft``/``irfft`` for real signals (the half-spectrum of n // 2 + 1 entries),
``hfft``/``ihfft`` for signals whose spectrum is real (their inverses with time and frequency
swapped), the sample frequencies and the shifts that center them. ``n`` (``s``) trims or
zero-pads the signal first, ``norm`` scales the forward transform by 1 ("backward", the
default), 1/sqrt(n) ("ortho") or 1/n ("forward"). float32 gives complex64, float64
complex128, integers the default float's; float16 and bfloat16 raise, as on PyTorch's CPU
(its CUDA transforms give complex32, which scratchgrad lacks), except under autocast, which
runs the transforms in float32 as PyTorch's CPU list says (not the 2-D and n-D hfft family,
missing from it); the gradients are PyTorch's (``ops/fft.py``).

>>> import scratchgrad as sg
>>> sg.fft.rfft(sg.tensor([1.0, 0.0, -1.0, 0.0]))
tensor([0.+0.j, 2.+0.j, 0.+0.j])
>>> sg.fft.irfft(sg.fft.rfft(sg.tensor([1.0, 2.0, 3.0])), n=3)
tensor([1., 2., 3.])
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy

from scratchgrad import backend
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.creation import tensor
from scratchgrad.dtypes import get_default_dtype
from scratchgrad.ops import fft as fft_ops
from scratchgrad.ops.movement import Pad
from scratchgrad.tensor import Tensor, takes_out, wrap_dim

Sizes = Sequence[int] | None
Dims = int | Sequence[int] | None


@autocast_policy("float32")
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D discrete Fourier transform along ``dim``, as ``torch.fft.fft``.

    >>> import scratchgrad as sg
    >>> sg.fft.fft(sg.tensor([1.0, 1.0, 1.0, 1.0]))
    tensor([4.+0.j, 0.+0.j, 0.+0.j, 0.+0.j])
    """
    return _c2c("fft", input, (n,), (dim,), norm, inverse=False)


@autocast_policy("float32")
def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D inverse discrete Fourier transform along ``dim``, as ``torch.fft.ifft``.

    >>> import scratchgrad as sg
    >>> sg.fft.ifft(sg.tensor([4.0, 0.0, 0.0, 0.0]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _c2c("ifft", input, (n,), (dim,), norm, inverse=True)


@autocast_policy("float32")
def fft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D discrete Fourier transform over ``dim``, as ``torch.fft.fft2``.

    >>> import scratchgrad as sg
    >>> sg.fft.fft2(sg.ones(2, 2)).real
    tensor([[4., 0.],
            [0., 0.]])
    """
    return fftn(input, s, dim, norm)


@autocast_policy("float32")
def ifft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D inverse discrete Fourier transform over ``dim``, as ``torch.fft.ifft2``.

    >>> import scratchgrad as sg
    >>> sg.fft.ifft2(sg.tensor([[4.0, 0.0], [0.0, 0.0]])).real
    tensor([[1., 1.],
            [1., 1.]])
    """
    return ifftn(input, s, dim, norm)


@autocast_policy("float32")
def fftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-D discrete Fourier transform over ``dim`` (all dims, or the last ``len(s)``, by
    default), as ``torch.fft.fftn``.

    >>> import scratchgrad as sg
    >>> sg.fft.fftn(sg.ones(2, 2), norm="forward").real
    tensor([[1., 0.],
            [0., 0.]])
    """
    sizes, dims = _sizes_and_dims("fftn", input, s, dim)
    return _c2c("fftn", input, sizes, dims, norm, inverse=False)


@autocast_policy("float32")
def ifftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-D inverse discrete Fourier transform over ``dim``, as ``torch.fft.ifftn``.

    >>> import scratchgrad as sg
    >>> sg.fft.ifftn(sg.tensor([[4.0, 0.0], [0.0, 0.0]])).real
    tensor([[1., 1.],
            [1., 1.]])
    """
    sizes, dims = _sizes_and_dims("ifftn", input, s, dim)
    return _c2c("ifftn", input, sizes, dims, norm, inverse=True)


@autocast_policy("float32")
def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-D transform of a real signal along ``dim``: its n // 2 + 1 non-negative
    frequencies, as ``torch.fft.rfft``.

    >>> import scratchgrad as sg
    >>> sg.fft.rfft(sg.tensor([1.0, 2.0, 1.0, 2.0]))
    tensor([ 6.+0.j,  0.+0.j, -2.+0.j])
    """
    _check_real("rfft", input)
    return _r2c("rfft", input, (n,), (dim,), norm)


@autocast_policy("float32")
def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The real signal of ``n`` entries (2 * (size - 1) by default) whose half-spectrum is
    ``input`` along ``dim``, as ``torch.fft.irfft``.

    >>> import scratchgrad as sg
    >>> sg.fft.irfft(sg.tensor([6.0, 0.0, -2.0]))
    tensor([1., 2., 1., 2.])
    """
    return _c2r("irfft", input, (n,), (dim,), norm)


@autocast_policy("float32")
def rfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D transform of a real signal (half-spectrum in the last dim), as
    ``torch.fft.rfft2``.

    >>> import scratchgrad as sg
    >>> sg.fft.rfft2(sg.ones(2, 4)).shape
    scratchgrad.Size([2, 3])
    """
    return rfftn(input, s, dim, norm)


@autocast_policy("float32")
def irfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of ``rfft2``, as ``torch.fft.irfft2``.

    >>> import scratchgrad as sg
    >>> sg.fft.irfft2(sg.fft.rfft2(sg.ones(2, 4))).shape
    scratchgrad.Size([2, 4])
    """
    return irfftn(input, s, dim, norm)


@autocast_policy("float32")
def rfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-D transform of a real signal (half-spectrum in the last of ``dim``), as
    ``torch.fft.rfftn``.

    >>> import scratchgrad as sg
    >>> sg.fft.rfftn(sg.ones(2, 3, 4)).shape
    scratchgrad.Size([2, 3, 3])
    """
    _check_real("rfftn", input)
    sizes, dims = _sizes_and_dims("rfftn", input, s, dim)
    return _r2c("rfftn", input, sizes, dims, norm)


@autocast_policy("float32")
def irfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of ``rfftn``, as ``torch.fft.irfftn``: the last of ``dim`` gets
    ``s[-1]`` entries (2 * (size - 1) by default).

    >>> import scratchgrad as sg
    >>> sg.fft.irfftn(sg.fft.rfftn(sg.ones(2, 3, 4))).shape
    scratchgrad.Size([2, 3, 4])
    """
    sizes, dims = _sizes_and_dims("irfftn", input, s, dim)
    return _c2r("irfftn", input, sizes, dims, norm)


# The hfft family is rfft's with time and frequency swapped: a signal that is Hermitian in time
# (its half given) has a real spectrum, the conjugate's inverse transform with the dual scaling.


@autocast_policy("float32")
def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The real spectrum of ``n`` entries (2 * (size - 1) by default) of a signal that is
    Hermitian along ``dim``, ``input`` its first half, as ``torch.fft.hfft``.

    >>> import scratchgrad as sg
    >>> sg.fft.hfft(sg.tensor([1.0, 2.0, 3.0]))
    tensor([ 8., -2.,  0., -2.])
    """
    return _c2r("hfft", input.conj(), (n,), (dim,), _dual(norm))


@autocast_policy("float32")
def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``hfft``: the n // 2 + 1 first entries of the inverse transform of a real
    signal, as ``torch.fft.ihfft``.

    >>> import scratchgrad as sg
    >>> sg.fft.ihfft(sg.tensor([8.0, -2.0, 0.0, -2.0]))
    tensor([1.-0.j, 2.-0.j, 3.-0.j])
    """
    _check_real("ihfft", input)
    return _r2c("ihfft", input, (n,), (dim,), _dual(norm)).conj()


def hfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The 2-D ``hfft`` (the Hermitian half in the last dim), as ``torch.fft.hfft2``.

    >>> import scratchgrad as sg
    >>> sg.fft.hfft2(sg.ones(2, 3)).shape
    scratchgrad.Size([2, 4])
    """
    return hfftn(input, s, dim, norm)


def ihfft2(input: Tensor, s: Sizes = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """The inverse of ``hfft2``, as ``torch.fft.ihfft2``.

    >>> import scratchgrad as sg
    >>> sg.fft.ihfft2(sg.ones(2, 4)).shape
    scratchgrad.Size([2, 3])
    """
    return ihfftn(input, s, dim, norm)


def hfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-D ``hfft``: the last of ``dim`` gets ``s[-1]`` entries (2 * (size - 1) by
    default), as ``torch.fft.hfftn``.

    >>> import scratchgrad as sg
    >>> sg.fft.hfftn(sg.ones(2, 3, 3)).shape
    scratchgrad.Size([2, 3, 4])
    """
    sizes, dims = _sizes_and_dims("hfftn", input, s, dim)
    return _c2r("hfftn", input.conj(), sizes, dims, _dual(norm))


def ihfftn(input: Tensor, s: Sizes = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of ``hfftn`` (half the last of ``dim``), as ``torch.fft.ihfftn``.

    >>> import scratchgrad as sg
    >>> sg.fft.ihfftn(sg.ones(2, 3, 4)).shape
    scratchgrad.Size([2, 3, 3])
    """
    sizes, dims = _sizes_and_dims("ihfftn", input, s, dim)
    return _r2c("ihfftn", input, sizes, dims, _dual(norm)).conj()


def fftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """The sample frequencies of an ``n``-point ``fft`` with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``, as ``torch.fft.fftfreq``.

    >>> import scratchgrad as sg
    >>> sg.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    n = _length("fftfreq", n)
    steps = numpy.concatenate([numpy.arange((n + 1) // 2), numpy.arange(-(n // 2), 0)])
    return _frequencies("fftfreq", steps, n * d, dtype, device, requires_grad)


def rfftfreq(
    n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """The sample frequencies of an ``n``-point ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``,
    as ``torch.fft.rfftfreq``. A negative ``n`` raises, as ``fftfreq``'s does (PyTorch's
    rfftfreq gives ``[-0.]`` for -1, by C's division rounding toward zero).

    >>> import scratchgrad as sg
    >>> sg.fft.rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    n = _length("rfftfreq", n)
    return _frequencies("rfftfreq", numpy.arange(n // 2 + 1), n * d, dtype, device, requires_grad)


def fftshift(input: Tensor, dim: Dims = None) -> Tensor:
    """The zero frequency moved to the middle of each of ``dim`` (all by default): a roll by
    size // 2, as ``torch.fft.fftshift``.

    >>> import scratchgrad as sg
    >>> sg.fft.fftshift(sg.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    dims = _shift_dims("fftshift", input, dim)
    return input.roll([input.shape[d] // 2 for d in dims], dims)


def ifftshift(input: Tensor, dim: Dims = None) -> Tensor:
    """The inverse of ``fftshift``: a roll by -(size // 2), as ``torch.fft.ifftshift``.

    >>> import scratchgrad as sg
    >>> sg.fft.ifftshift(sg.fft.fftshift(sg.arange(5)))
    tensor([0, 1, 2, 3, 4])
    """
    dims = _shift_dims("ifftshift", input, dim)
    return input.roll([-(input.shape[d] // 2) for d in dims], dims)


# ---- helpers ---------------------------------------------------------------------------------


def _sizes_and_dims(name: str, input: Tensor, s: Sizes, dim: Dims) -> tuple[tuple, tuple]:
    """PyTorch's defaults: all dims, or the last ``len(s)`` when only ``s`` is given; an ``s``
    entry of -1 keeps that dim's size."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and s is not None and len(s) > input.ndim:
        raise RuntimeError(
            f"{name}: Got shape with {len(s)} values but input tensor only has {input.ndim} "
            "dimensions."
        )
    if dim is None:
        dim = range(input.ndim) if s is None else range(input.ndim - len(s), input.ndim)
    dims = tuple(dim)
    if s is None:
        return (None,) * len(dims), dims
    if len(s) != len(dims):
        raise RuntimeError(
            f"{name}: When given, dim and shape arguments must have the same length, got "
            f"s={tuple(s)} and dim={dims}"
        )
    return tuple(None if n == -1 else n for n in s), dims


def _normalized(name: str, input: Tensor, dims: tuple) -> tuple:
    """``dims`` made non-negative, checked to be distinct dims of ``input`` (a 0-d input has
    none to transform, as PyTorch's transforms say)."""
    if input.ndim == 0 and dims:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = tuple(wrap_dim(d, input.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{name}: FFT dims must be unique, got {dims}")
    return dims


def _norm(norm: str | None) -> str:
    if norm is None:
        return "backward"
    if norm not in fft_ops.DUAL:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _dual(norm: str | None) -> str:
    """The scaling of the transform the other way that matches ``norm``'s of this one."""
    return fft_ops.DUAL[_norm(norm)]


def _resized(name: str, x: Tensor, sizes: tuple, dims: tuple) -> Tensor:
    """``x`` trimmed or zero-padded to ``sizes`` (None: as it is) along ``dims``."""
    widths = [(0, 0)] * x.ndim
    for n, d in zip(sizes, dims):
        if n is None:
            n = x.shape[d]
        if n < 1:
            raise RuntimeError(f"{name}: Invalid number of data points ({n}) specified")
        if n < x.shape[d]:
            x = x.narrow(d, 0, n)
        widths[d] = (0, n - x.shape[d])
    if any(after for _, after in widths):
        x = Pad.apply(x, widths=tuple(widths))
    return x


def _floating(name: str, x: Tensor) -> Tensor:
    """Integers and bools as the default float, as PyTorch's transforms take them; 16-bit
    floats refused, as PyTorch's CPU transforms refuse them."""
    if x.dtype in (backend.float16, backend.bfloat16):
        raise RuntimeError(f"{name}: Unsupported dtype {x.dtype.name}")
    if x.is_floating_point() or x.is_complex():
        return x
    return x.to(get_default_dtype())


def _c2c(name: str, input: Tensor, sizes: tuple, dims: tuple, norm, inverse: bool) -> Tensor:
    dims = _normalized(name, input, dims)
    x = _floating(name, input)
    x = x.to(backend.to_complex(x.dtype))
    x = _resized(name, x, sizes, dims)
    return fft_ops.FFT.apply(x, dims=dims, norm=_norm(norm), inverse=inverse)


def _r2c(name: str, input: Tensor, sizes: tuple, dims: tuple, norm) -> Tensor:
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    dims = _normalized(name, input, dims)
    _check_real(name, input)  # (rfft, rfftn and ihfft check before their dims, as PyTorch's)
    x = _resized(name, _floating(name, input), sizes, dims)
    return fft_ops.RFFT.apply(x, dims=dims, norm=_norm(norm))


def _c2r(name: str, input: Tensor, sizes: tuple, dims: tuple, norm) -> Tensor:
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    dims = _normalized(name, input, dims)
    n = sizes[-1] if sizes[-1] is not None else 2 * (input.shape[dims[-1]] - 1)
    if n < 1:
        raise RuntimeError(f"{name}: Invalid number of data points ({n}) specified")
    z = _floating(name, input)
    z = z.to(backend.to_complex(z.dtype))
    z = _resized(name, z, (*sizes[:-1], n // 2 + 1), dims)
    return fft_ops.IRFFT.apply(z, dims=dims, norm=_norm(norm), n=n)


def _check_real(name: str, input: Tensor) -> None:
    if input.is_complex():
        raise RuntimeError(f"{name} expects a real input tensor, but got {input.dtype.name}")


def _length(name: str, n: int) -> int:
    n = operator.index(n)  # a float n is a TypeError, as PyTorch's
    if n < 0:
        raise RuntimeError(f"{name}: Trying to create tensor with negative dimension {n}: [{n}]")
    return n


def _frequencies(
    name: str, steps, span: float, dtype: Any, device: Any, requires_grad: bool
) -> Tensor:
    """``steps / span`` as PyTorch computes it: times ``1 / span``, which is inf for a span of
    0 (n or d 0), so that 0 becomes nan and the other steps infinite, not a ZeroDivisionError."""
    dtype = get_default_dtype() if dtype is None else backend.to_dtype(dtype)
    if dtype.kind == "c":
        raise NotImplementedError(f"{name}: arange is not implemented for {dtype}, as PyTorch's")
    if not backend.is_floating(dtype):
        raise RuntimeError(f"{name} requires a floating point or complex dtype, got {dtype}")
    with numpy.errstate(divide="ignore", invalid="ignore"):
        values = steps * numpy.divide(1.0, numpy.float64(span))
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def _shift_dims(name: str, input: Tensor, dim: Dims) -> list[int]:
    if dim is None:
        dim = range(input.ndim)
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:  # (a 0-d input, or dim=()): PyTorch's roll refuses to roll by nothing
        raise RuntimeError(f"{name}: `shifts` required (no dims to shift)")
    return dims


# PyTorch's out= (torch.fft.rfft(x, out=y)) on the transforms
for _name in (
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
    "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
):  # fmt: skip
    globals()[_name] = takes_out(globals()[_name])
