"""Helpers the distributions share, with the names of ``torch.distributions.utils``."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from scratchgrad import backend, creation
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.grad_mode import enable_grad
from scratchgrad.creation import tensor
from scratchgrad.dtypes import finfo, get_default_dtype
from scratchgrad.tensor import Tensor, broadcast_tensors, random_draws


def broadcast_all(*values: Tensor | float) -> tuple[Tensor, ...]:
    """The values broadcast together as tensors: a number becomes a tensor of the first
    tensor's dtype and device (of the default dtype when all are numbers), as PyTorch's.

    >>> [tuple(t.shape) for t in broadcast_all(tensor([1.0, 2.0]), 0.5)]
    [(2,), (2,)]
    """
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number or scratchgrad.Tensor.")
    first = next((v for v in values if isinstance(v, Tensor)), None)
    dtype, device = (get_default_dtype(), None) if first is None else (first.dtype, first.device)
    as_tensors = [
        v if isinstance(v, Tensor) else tensor(v, dtype=dtype, device=device) for v in values
    ]
    return broadcast_tensors(*as_tensors)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its ``dim`` rightmost dimensions."""
    return value if dim == 0 else value.reshape(*value.shape[:-dim], -1).sum(-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clamped to [eps, 1 - eps] (eps: the dtype's machine epsilon).

    >>> clamp_probs(tensor([0.0, 0.5, 1.0], dtype="float64")).tolist()
    [2.220446049250313e-16, 0.5, 0.9999999999999998]
    """
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds (``is_binary``) or log-probabilities of clamped probabilities.

    >>> round(probs_to_logits(tensor(0.5), is_binary=True).item(), 6)
    0.0
    """
    clamped = clamp_probs(probs)
    return clamped.log() - (-clamped).log1p() if is_binary else clamped.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Sigmoid of log-odds (``is_binary``), else the softmax over the last dimension.

    >>> logits_to_probs(tensor([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def numpy_draw(method: str, shape: tuple, *params: Tensor) -> Tensor:
    """Samples of ``shape`` from NumPy's ``Generator.<method>`` (``standard_gamma``,
    ``poisson``, ``binomial``, ``vonmises``) of the library's seeded generator, the parameters
    broadcast to ``shape``, in the first parameter's dtype; no gradient. As ``Tensor.multinomial``
    draws: a replay under ``scratchgrad.jit`` draws again; inside vmap they are made as its
    ``randomness`` says, each member's from its own parameters where they are batched.

    >>> import scratchgrad as sg
    >>> _ = sg.manual_seed(0)
    >>> numpy_draw("poisson", (3,), tensor(0.0)).tolist()
    [0.0, 0.0, 0.0]
    """
    dtype = params[0].dtype

    def sample(_: tuple, *arrays: Any) -> Any:
        return capture_hook.call(_draw, method, dtype, *arrays)

    return random_draws(sample, shape, params=tuple(p.detach().expand(shape) for p in params))


def _draw(method: str, dtype: Any, *arrays: Any) -> Any:
    rng = backend.rng_for(None, backend.device_of(arrays[0]))
    args = [a.astype(backend.float64) for a in arrays]
    if method == "binomial":  # NumPy takes the number of trials as integers
        args[0] = arrays[0].astype(backend.int64)
    draws = getattr(rng, method)(*args)
    return backend.as_array(draws).astype(dtype)


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A property computed on first use and then kept in the instance's ``__dict__``: a
    distribution made from ``probs`` computes ``logits`` only when asked, and the parameter
    given is the one found in ``__dict__`` (validation checks only that one). Computed with
    gradients enabled, as PyTorch's: a ``probs`` first asked for inside ``sample`` (under
    ``no_grad``) still leads back to ``logits`` when ``log_prob`` uses it later.

    >>> class A:
    ...     @lazy_property
    ...     def x(self):
    ...         return 3
    >>> a = A(); (a.x, "x" in a.__dict__)
    (3, True)
    """

    def __init__(self, method: Callable[[Any], Any]) -> None:
        self.method = method
        self.__doc__ = method.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.method(instance)
        instance.__dict__[self.method.__name__] = value
        return value


def _tril_positions(n: int, diag: int) -> list[int]:
    """The flat positions, row by row, of an n x n matrix's entries on or below diagonal
    ``diag``."""
    return [i * n + j for i in range(n) for j in range(n) if j < i + diag + 1]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The lower triangular matrix (on and below diagonal ``diag``) whose entries, row by row,
    are the last dimension of ``vec``; zeros elsewhere. Differentiable (a gather).

    >>> vec_to_tril_matrix(tensor([1.0, 2.0, 3.0])).tolist()
    [[1.0, 0.0], [2.0, 3.0]]
    """
    # the positive root of D**2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 len(vec) = 0
    b = 1 + 2 * diag
    n = (-b + (b**2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > finfo(vec.dtype).eps:
        raise ValueError(
            f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
            "the lower triangular part of a square D x D matrix."
        )
    n = round(n)
    # each entry gathers from vec, or from one zero appended to it
    source = [vec.shape[-1]] * (n * n)
    for k, position in enumerate(_tril_positions(n, diag)):
        source[position] = k
    padded = creation.cat([vec, vec.new_zeros(*vec.shape[:-1], 1)], -1)
    index = tensor(source, dtype="int64", device=vec.device)
    return padded[..., index].reshape(*vec.shape[:-1], n, n)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries on and below diagonal ``diag`` of the last two dimensions, row by row.

    >>> tril_matrix_to_vec(tensor([[1.0, 9.0], [2.0, 3.0]])).tolist()
    [1.0, 2.0, 3.0]
    """
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    index = tensor(_tril_positions(n, diag), dtype="int64", device=mat.device)
    return mat.flatten(-2)[..., index]
