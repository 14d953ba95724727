"""Discrete Fourier transforms over some dims: complex to complex (``FFT``), real to the
half-spectrum (``RFFT``) and back (``IRFFT``). Each transform is linear, so its gradient is its
adjoint applied to ``grad`` (PyTorch's convention for complex numbers, ``ops/complex.py``): the
transform the other way with the dual normalization (the unscaled sum's adjoint is the unscaled
sum with the conjugate kernel). The signal sizes (``n``, ``s``) are trimmed or zero-padded
before these ops, by movement ops, so each sees its input at the size it transforms.
"""

from scratchgrad.autograd.function import Function
from scratchgrad.backend import namespace, to_complex, to_real
from scratchgrad.ops.binary import Mul
from scratchgrad.ops.movement import Pad

# The adjoint of a transform scaled by 1/n ("forward" for fft) is the unscaled inverse sum
DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


class FFT(Function):
    """``fftn`` (or ``ifftn`` when ``inverse``) of a complex ``x`` over ``dims``."""

    complex_safe = True
    backward_name = "FftC2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, norm, inverse):
        ctx.dims, ctx.norm, ctx.inverse = dims, norm, inverse
        fft = namespace(x).fft
        out = (fft.ifftn if inverse else fft.fftn)(x, axes=dims, norm=norm)
        return out.astype(x.dtype, copy=False)  # (NumPy may compute in complex128)

    @staticmethod
    def backward(ctx, grad):
        return FFT.apply(grad, dims=ctx.dims, norm=DUAL[ctx.norm], inverse=not ctx.inverse)


class RFFT(Function):
    """``rfftn`` of a real ``x`` over ``dims``: the last of them keeps n // 2 + 1 entries.
    Its adjoint pads the gradient with zeros back to n and takes the real part of the inverse
    transform (PyTorch's ``fft_r2c_backward``)."""

    complex_safe = True
    backward_name = "FftR2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, norm):
        ctx.dims, ctx.norm, ctx.size = dims, norm, x.shape[dims[-1]]
        out = namespace(x).fft.rfftn(x, axes=dims, norm=norm)
        return out.astype(to_complex(x.dtype), copy=False)

    @staticmethod
    def backward(ctx, grad):
        widths = [(0, 0)] * grad.ndim
        widths[ctx.dims[-1]] = (0, ctx.size - grad.shape[ctx.dims[-1]])
        full = Pad.apply(grad, widths=tuple(widths))
        return FFT.apply(full, dims=ctx.dims, norm=DUAL[ctx.norm], inverse=True).real


class IRFFT(Function):
    """``irfftn`` of a half-spectrum ``z`` over ``dims`` (its last dim of n // 2 + 1 entries)
    to a real signal of ``n`` entries there. The adjoint is ``rfftn`` of the gradient with the
    entries that stand for two of the full spectrum (all but the zero frequency and, for an
    even n, the last) counted twice (PyTorch's ``fft_c2r_backward``)."""

    complex_safe = True
    backward_name = "FftC2RBackward0"

    @staticmethod
    def forward(ctx, z, dims, norm, n):
        ctx.dims, ctx.norm = dims, norm
        sizes = [z.shape[d] for d in dims[:-1]] + [n]
        out = namespace(z).fft.irfftn(z, s=sizes, axes=dims, norm=norm)
        return out.astype(to_real(z.dtype), copy=False)

    @staticmethod
    def backward(ctx, grad):
        half = RFFT.apply(grad, dims=ctx.dims, norm=DUAL[ctx.norm])
        last = ctx.dims[-1]
        n, kept = grad.shape[last], half.shape[last]
        shape = [1] * grad.ndim
        shape[last] = kept
        twice = namespace(grad.array).ones(kept, to_real(half.dtype))
        twice[1 : 1 + n - kept] = 2
        return Mul.apply(half, twice.reshape(shape))
