"""Check gradients against finite differences, in float64."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scratchgrad import backend
from scratchgrad.autograd.engine import _as_tuple, grad
from scratchgrad.backend import float64, xp
from scratchgrad.tensor import Tensor


def _outputs(func: Callable, inputs: tuple) -> tuple[Tensor, ...]:
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def _host(array) -> xp.ndarray:
    """A flat float64 NumPy copy of a device's array: the Jacobians are compared on the host."""
    return backend.to_host(array).astype(float64).reshape(-1)


def _numerical_jacobian(func: Callable, inputs: tuple, eps: float) -> list[list]:
    """Columns by central differences: perturb one input entry at a time."""
    outputs = _outputs(func, inputs)
    jac = [[xp.zeros((o.numel(), x.numel())) for x in inputs] for o in outputs]
    for i, x in enumerate(inputs):
        array = x.array  # perturbed in place by index: a view's reshape(-1) may be a copy
        for k in range(array.size):
            at = xp.unravel_index(k, array.shape)  # C order, as the Jacobians' columns
            original = array[at].copy()  # on a GPU, array[at] is a view that the writes change
            array[at] = original + eps
            plus = [_host(o.array) for o in _outputs(func, inputs)]
            array[at] = original - eps
            minus = [_host(o.array) for o in _outputs(func, inputs)]
            array[at] = original
            for j in range(len(outputs)):
                jac[j][i][:, k] = (plus[j] - minus[j]) / (2 * eps)
    return jac


def _analytical_jacobian(func: Callable, inputs: tuple) -> list[list]:
    """Rows by reverse mode: one ``grad`` call per output entry."""
    outputs = _outputs(func, inputs)
    jac = [[xp.zeros((o.numel(), x.numel())) for x in inputs] for o in outputs]
    for j, out in enumerate(outputs):
        if not out.requires_grad:
            continue  # the output does not depend on any input: its Jacobian is zero
        flat = out.reshape(-1)
        for r in range(flat.shape[0]):
            grads = grad(flat[r], inputs, retain_graph=True, allow_unused=True)
            for i, g in enumerate(grads):
                if g is not None:
                    jac[j][i][r] = _host(g.array)
    return jac


def gradcheck(
    func: Callable,
    inputs: Tensor | Sequence[Tensor],
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Compare gradients with central finite differences, as ``torch.autograd.gradcheck``.

    Inputs must be float64 tensors that require grad.

    >>> import scratchgrad as sg
    >>> x = sg.randn(3, dtype=sg.float64, requires_grad=True)
    >>> sg.autograd.gradcheck(lambda t: (t * t).sin(), x)
    True
    """
    inputs = _as_tuple(inputs)
    for x in inputs:
        if x.requires_grad and x.dtype != float64:
            raise ValueError(f"gradcheck: inputs must be float64 for precision, got {x.dtype.name}")
    differentiable = tuple(x for x in inputs if x.requires_grad)

    def only_differentiable(*xs):
        it = iter(xs)
        return func(*(next(it) if x.requires_grad else x for x in inputs))

    numerical = _numerical_jacobian(only_differentiable, differentiable, eps)
    analytical = _analytical_jacobian(only_differentiable, differentiable)
    for j, (num_rows, ana_rows) in enumerate(zip(numerical, analytical)):
        for i, (num, ana) in enumerate(zip(num_rows, ana_rows)):
            if not xp.allclose(ana, num, rtol=rtol, atol=atol):
                if raise_exception:
                    raise RuntimeError(
                        f"gradcheck: Jacobian mismatch for output {j} with respect to input {i}\n"
                        f"numerical:\n{num}\nanalytical:\n{ana}"
                    )
                return False
    return True


def gradgradcheck(
    func: Callable,
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor] | None = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Check second derivatives: ``gradcheck`` of the gradient (a vector-Jacobian product).

    >>> import scratchgrad as sg
    >>> x = sg.randn(3, dtype=sg.float64, requires_grad=True)
    >>> sg.autograd.gradgradcheck(lambda t: t.tanh(), x)
    True
    """
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = xp.random.default_rng(0)
        grad_outputs = tuple(
            Tensor._make(backend.to_device(rng.standard_normal(o.shape), o.device)).requires_grad_()
            for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_derivative(*args):
        xs, vs = args[:n], args[n:]
        outs = _outputs(func, xs)
        pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
        wrt = tuple(x for x in xs if x.requires_grad)
        grads = grad(
            [o for o, _ in pairs], wrt, [v for _, v in pairs], create_graph=True, allow_unused=True
        )
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps, atol, rtol, raise_exception)
