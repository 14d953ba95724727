"""Complex-number primitives. Gradients follow PyTorch's convention: the gradient of a real loss
L with respect to a complex z is the conjugate Wirtinger derivative, dL/dRe(z) + i dL/dIm(z), so
that a step against it descends L; for y = f(z) holomorphic that is grad * conj(f'(z)).
See https://pytorch.org/docs/stable/notes/autograd.html#complex-autograd-doc.

Every op here is complex-correct (``complex_safe``); the others refuse complex tensors when
they record a gradient (``Function.apply``), or take a ``complex_twin`` that is correct. Only
these (and ``ops/fft.py``'s IRFFT) make a real result of complex input (``Tensor.abs`` calls
this ``Abs`` for complex).
"""

from scratchgrad.autograd.function import Function
from scratchgrad.backend import namespace, to_complex, to_real


class ViewAsComplex(Function):
    """The pairs of the last dim (of size 2, stride 1) read as complex numbers, sharing memory."""

    is_view = True
    complex_safe = True

    @staticmethod
    def forward(ctx, x):
        return x.view(to_complex(x.dtype))[..., 0]

    @staticmethod
    def backward(ctx, grad):
        return ViewAsReal.apply(grad)


class ViewAsReal(Function):
    """Each complex entry as its (real, imaginary) pair in a new last dim, sharing memory."""

    is_view = True
    complex_safe = True

    @staticmethod
    def forward(ctx, z):
        return z[..., None].view(to_real(z.dtype))

    @staticmethod
    def backward(ctx, grad):
        return Complex.apply(grad[..., 0], grad[..., 1])  # (a view would need its strides)


class Real(Function):
    """The real parts (a view, as NumPy's); the gradient is real, so its imaginary part is 0."""

    is_view = True
    complex_safe = True

    @staticmethod
    def forward(ctx, z):
        ctx.dtype = z.dtype
        return z.real

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype)


class Imag(Function):
    """The imaginary parts (a view); the gradient flows into them: i * grad."""

    is_view = True
    complex_safe = True

    @staticmethod
    def forward(ctx, z):
        return z.imag

    @staticmethod
    def backward(ctx, grad):
        return Complex.apply(grad.new_zeros(()).expand(grad.shape), grad)


class Complex(Function):
    """``real + i imag``, as ``torch.complex``; each part gets its part of the gradient."""

    complex_safe = True

    @staticmethod
    def forward(ctx, real, imag):
        return _from_parts(real, imag)

    @staticmethod
    def backward(ctx, grad):
        return Real.apply(grad), Imag.apply(grad)


class Polar(Function):
    """``abs * (cos(angle) + i sin(angle))``, as ``torch.polar``. With g = gr + i gi the
    gradient, PyTorch's ``polar_backward`` is Re(conj(g) sgn(out)) for ``abs`` (0 where
    ``abs`` is 0) and Re(conj(g) i out) for ``angle``, written here in real parts."""

    complex_safe = True

    @staticmethod
    def forward(ctx, abs, angle):
        ctx.save_for_backward(abs, angle)
        xp = namespace(abs)
        return _from_parts(abs * xp.cos(angle), abs * xp.sin(angle))

    @staticmethod
    def backward(ctx, grad):
        abs, angle = ctx.saved_tensors
        gr, gi = Real.apply(grad), Imag.apply(grad)
        cos, sin = angle.cos(), angle.sin()
        return abs.sign() * (gr * cos + gi * sin), abs * (gi * cos - gr * sin)


class Abs(Function):
    """The magnitudes |z| (real); the gradient is grad * sgn(z) = grad * z / |z|, 0 at 0, as
    PyTorch's (the real Abs's grad * sign(x) would be another number)."""

    complex_safe = True

    @staticmethod
    def forward(ctx, z):
        out = namespace(z).abs(z)
        ctx.save_for_backward(z, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        z, out = ctx.saved_tensors
        return grad * z / out.masked_fill(out == 0, 1)


class Conj(Function):
    """The complex conjugate (a copy); its gradient is the conjugate of the incoming one."""

    complex_safe = True

    @staticmethod
    def forward(ctx, z):
        return z.conj()

    @staticmethod
    def backward(ctx, grad):
        return Conj.apply(grad)


def _from_parts(real, imag):
    """The complex array with these parts, broadcast (not ``real + 1j * imag``, which makes
    NaN of an infinite part: 1j * inf is nan + inf j)."""
    xp = namespace(real)
    out = xp.empty(xp.broadcast_shapes(real.shape, imag.shape), to_complex(real.dtype))
    out.real[...], out.imag[...] = real, imag  # (views' items: CuPy's arrays take them too)
    return out
