"""``torch.nn.utils``'s counterparts: gradient clipping (both work in place on ``.grad``),
parameters as one vector and back, ``rnn.pad_sequence`` for batches of sequences, weight
and spectral normalisation (``weight_norm``, ``spectral_norm`` and their removal), and the
modules ``parametrize`` (``register_parametrization``) and ``parametrizations``
(``weight_norm``, ``spectral_norm`` and ``orthogonal`` as parametrizations)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.nn.utils import parametrizations, parametrize, rnn
from scratchgrad.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from scratchgrad.nn.utils.reparametrize import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)
from scratchgrad.tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale all gradients together so that their joint ``norm_type``-norm is at most
    ``max_norm``; returns the norm before clipping, as PyTorch.

    >>> import scratchgrad as sg
    >>> w = sg.zeros(2, requires_grad=True)
    >>> (w * sg.tensor([3.0, 4.0])).sum().backward()
    >>> clip_grad_norm_([w], 1.0)
    tensor(5.)
    >>> [round(g, 4) for g in w.grad.tolist()]
    [0.6, 0.8]
    """
    if capture_hook.recorder is not None:  # scratchgrad.jit: done again at every replay
        parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        args = (parameters, max_norm, norm_type, error_if_nonfinite)
        return capture_hook.recorder.replayed(clip_grad_norm_, *args)
    grads = _grads(parameters)
    if not grads:
        return Tensor(0.0)
    norm_type = float(norm_type)
    xp = backend.namespace(grads[0].array)
    with _silent_non_finite():
        norms = xp.stack([xp.linalg.norm(g.array.reshape(-1), norm_type) for g in grads])
        total = xp.asarray(xp.linalg.norm(norms, norm_type), grads[0].dtype)  # 0-d, not a scalar
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    # In the gradients' dtype, as PyTorch computes it (float32 arithmetic on a 0-d tensor).
    scale = float(xp.minimum(max_norm / (total + 1e-6), 1.0))
    with no_grad(), _silent_non_finite():
        for g in grads:
            g.mul_(scale)  # also when scale is 1 or NaN, as PyTorch
    return Tensor._make(total)


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """``clip_grad_norm_``, under its deprecated name, with PyTorch's FutureWarning
    (``foreach`` is accepted and ignored, as in ``clip_grad_norm_``'s callers).

    >>> import warnings
    >>> import scratchgrad as sg
    >>> w = sg.zeros(2, requires_grad=True)
    >>> (w * sg.tensor([3.0, 4.0])).sum().backward()
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     clip_grad_norm([w], 1.0)
    tensor(5.)
    """
    warnings.warn(
        "`nn.utils.clip_grad_norm` is now deprecated in favor of `nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)


def _silent_non_finite():
    """An inf or NaN gradient (a step GradScaler will skip) is clipped without NumPy's
    warnings, as PyTorch does it: its norm is inf or NaN, and inf times 0 is NaN."""
    return backend.errstate(over="ignore", invalid="ignore")


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamp every gradient entry into ``[-clip_value, clip_value]``, in place."""
    if capture_hook.recorder is not None:  # scratchgrad.jit: done again at every replay
        parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        return capture_hook.recorder.replayed(clip_grad_value_, parameters, clip_value)
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.copy_(g.clamp(-clip_value, clip_value))
