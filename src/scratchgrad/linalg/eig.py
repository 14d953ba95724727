"""The eigendecomposition of a general square matrix: ``eig`` and ``eigvals``, of real or
complex matrices, always with complex results, and PyTorch's ``linalg_eig_backward``
(torch/csrc/autograd/FunctionsManual.cpp) written in Tensor ops.

The eigenvectors have unit norm (LAPACK's geev, which NumPy and PyTorch both call), but each is
defined only up to a phase ``e^{i phi}``: a loss that depends on the phases has no gradient,
and its backward raises, as PyTorch's does.
"""

from __future__ import annotations

from collections import namedtuple

from scratchgrad import backend
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import Function
from scratchgrad.autograd.grad_mode import is_grad_enabled
from scratchgrad.backend import namespace, to_complex
from scratchgrad.dtypes import torch_name
from scratchgrad.linalg.checks import check_input, kernel_error, lapack
from scratchgrad.linalg.decompositions import _eye, _factors, _given, _no_convergence
from scratchgrad.linalg.systems import Solve
from scratchgrad.tensor import Tensor

linalg_eig = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])


class Eig(Function):
    """``(L, V)`` with ``A V = V diag(L)``; PyTorch's ``linalg_eig_backward``, its complex
    gradient the conjugate Wirtinger one (a real ``A`` gets its real part)."""

    backward_name = "LinalgEigBackward0"
    complex_safe = True  # (the backward is written for complex L and V)

    @staticmethod
    def forward(ctx, a, not_finite_is_nan, recomputed=False):
        ctx.phases_checked = recomputed  # see backward
        module = namespace(a)
        finite = module.isfinite(a).all(axis=(-2, -1))
        if not finite.all():  # LAPACK's geev would loop or give garbage
            if not not_finite_is_nan:
                raise RuntimeError(
                    "torch.linalg.eig: input tensor should not contain infs or NaNs."
                )
            a = module.where(finite[..., None, None], a, 0)
        w, v = lapack("linalg.eig", _no_convergence, module.linalg.eig, a)
        # NumPy gives real results where every eigenvalue is real; PyTorch always complex ones
        w, v = w.astype(to_complex(a.dtype)), v.astype(to_complex(a.dtype))
        if not finite.all():  # (eigvals without a gradient: NaN for those matrices, as PyTorch)
            w[~finite], v[~finite] = module.nan, module.nan
        ctx.save_for_backward(a, w, v)
        return w, v

    @staticmethod
    def backward(ctx, grad_w, grad_v):
        a, w, v = _factors(ctx, Eig, not_finite_is_nan=False, recomputed=True)
        vh = v.mH
        if _given(grad_v) is None:  # V^-H diag(grad_w) V^H
            grad = Solve.apply(vh, grad_w.unsqueeze(-1) * vh)
        else:
            vhgv = vh @ grad_v
            # NOTE: a recorded backward makes the second derivative reach V by two nodes, this
            # one (its grad_v depends on V) and the eig computed again from A (_factors): only
            # their sum is free of V's phases, so PyTorch's check is made on the first only
            if not ctx.phases_checked:
                _check_phase_invariance(vhgv.diagonal(0, -2, -1))
            ctx.phases_checked = ctx.phases_checked or is_grad_enabled()
            # onto the tangent space of matrices with columns of norm 1 at V
            vhgv = vhgv - vh @ (v * vhgv.diagonal(0, -2, -1).real.unsqueeze(-2))
            w_conj = w.conj()
            gaps = w_conj.unsqueeze(-2) - w_conj.unsqueeze(-1) + _eye(w, w.shape[-1])
            grad = vhgv / gaps  # conj(L_j - L_i) off the diagonal, 1 on it
            # grad_w on the diagonal, where PyTorch keeps i Im(diag(V^H grad_V)) (0 for a loss
            # free of the phases) if the loss does not use L: the two nodes of a second
            # derivative (above) must drop their parts of it alike
            grad = grad + (grad_w - grad.diagonal(0, -2, -1)).diag_embed()
            grad = Solve.apply(vh, grad @ vh)
        return grad if a.is_complex() else grad.real


def _check_phase_invariance(vhgv_diagonal: Tensor) -> None:
    """PyTorch's check that the loss does not depend on the eigenvectors' phases: the
    imaginary part of diag(V^H grad_V) is 0 then (to 1e-2, its tolerance)."""
    imaginary = vhgv_diagonal.imag._checked_values()
    if not (namespace(imaginary).abs(imaginary) <= 1e-2).all():
        raise RuntimeError(
            "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
            "so it is ill-defined."
        )


def _check_dtype(op: str, A: Tensor) -> None:
    """Real or complex matrices of 32 or 64 bits, with PyTorch's errors for the others."""
    if A.dtype.kind in "biu":  # PyTorch has no complex type to give their eigenvalues
        raise RuntimeError(f"Unknown Complex ScalarType for {torch_name(A.dtype)}")
    if A.dtype.itemsize < 4 or (A.dtype.kind != "c" and not backend.is_floating(A.dtype)):
        raise kernel_error("linalg_eig_out_cpu", A.dtype)


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def eig(A: Tensor) -> linalg_eig:
    """The eigenvalues and eigenvectors (columns, of norm 1) of a square matrix (or batch), as
    ``torch.linalg.eig``: complex64 for float32 or complex64 input, complex128 for float64 or
    complex128. A matrix with an inf or NaN raises.

    The gradient is PyTorch's (for a real ``A``, its real part). It is defined only for
    losses that do not depend on the eigenvectors' phases (the backward raises where one
    does, as PyTorch's; a second derivative is not checked again, see ``Eig.backward``) and,
    where the loss uses the eigenvectors, for distinct eigenvalues.

    >>> import scratchgrad as sg
    >>> sg.linalg.eig(sg.tensor([[0.0, -1.0], [1.0, 0.0]])).eigenvalues
    tensor([0.+1.j, 0.-1.j])
    """
    check_input("linalg.eig", A, square=True, any_dtype=True)
    _check_dtype("linalg.eig", A)
    return linalg_eig(*Eig.apply(A, not_finite_is_nan=False))


@autocast_policy("float32")  # on PyTorch's CPU autocast float32 list
def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of a square matrix (or batch), as ``torch.linalg.eigvals``: the
    eigenvalues of ``eig``, with its gradient. Without a gradient to record, a matrix with an
    inf or NaN gives NaN eigenvalues, as PyTorch's (where ``eig`` raises).

    >>> import scratchgrad as sg
    >>> sg.linalg.eigvals(sg.tensor([[2.0, 1.0], [0.0, 3.0]]))
    tensor([2.+0.j, 3.+0.j])
    """
    check_input("linalg.eigvals", A, square=True, any_dtype=True)
    _check_dtype("linalg.eigvals", A)
    recorded = A.requires_grad and is_grad_enabled()  # PyTorch's eig path, and its checks
    return Eig.apply(A, not_finite_is_nan=not recorded)[0]
