"""``torch.nn.utils``'s counterparts: gradient clipping (in place on ``.grad``; also in two
halves, ``get_total_norm`` and ``clip_grads_with_norm_``), batch norm folding (``fusion``),
``skip_init``, the deprecated ``stateless.functional_call``,
parameters as one vector and back, ``rnn.pad_sequence`` for batches of sequences, weight
and spectral normalisation (``weight_norm``, ``spectral_norm`` and their removal), and the
modules ``parametrize`` (``register_parametrization``) and ``parametrizations``
(``weight_norm``, ``spectral_norm`` and ``orthogonal`` as parametrizations), and ``prune``
(masks on parameters: ``l1_unstructured``, ``global_unstructured``, ``remove``, ...)."""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Iterable

from scratchgrad import backend
from scratchgrad import sparse as sparse_tensors
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.dtypes import promote_types, torch_name
from scratchgrad.nn.utils import parametrizations, parametrize, prune, rnn, stateless
from scratchgrad.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from scratchgrad.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from scratchgrad.nn.utils.memory_format import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from scratchgrad.nn.utils.reparametrize import (
    remove_spectral_norm,
    remove_weight_norm,
    spectral_norm,
    weight_norm,
)
from scratchgrad.tensor import Tensor


def _grads(parameters: Tensor | Iterable[Tensor], op: str) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return _dense_only([p.grad for p in parameters if p.grad is not None], op)


def _dense_only(tensors: list[Tensor], op: str) -> list[Tensor]:
    """``tensors``, unless one is sparse (``embedding(..., sparse=True)``'s gradient): PyTorch
    has no sparse kernel for a norm or a clamp either."""
    if sparse_tensors.made_any and any(t.is_sparse for t in tensors):
        raise NotImplementedError(f"{op}: sparse gradients (layout sparse_coo) are not supported")
    return tensors


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` taken as one vector (the norm of their norms),
    as ``torch.nn.utils.get_total_norm``; ``foreach`` is accepted and changes nothing.

    >>> import scratchgrad as sg
    >>> get_total_norm([sg.tensor([3.0, 4.0]), sg.tensor([12.0])])
    tensor(13.)
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    # scratchgrad.jit: done again at every replay
    if capture_hook.recorder is not None and capture_hook.recorder.here():
        return capture_hook.recorder.replayed(
            get_total_norm, tensors, norm_type, error_if_nonfinite
        )
    if not _dense_only(tensors, "get_total_norm"):
        return Tensor._from_data(0.0)
    norm_type = float(norm_type)
    dtype = _total_norm_dtype(tensors, norm_type)
    xp = backend.namespace(tensors[0].array)
    with _silent_non_finite():
        # 16-bit tensors in float32, as PyTorch's: in float16 the 2-norm of 100 entries of 300
        # overflowed to inf (and clip_grad_norm_ zeroed the gradients)
        flat = [backend.widened(t.array).reshape(-1) for t in tensors]
        norms = xp.stack([_norm(x, norm_type) for x in flat])
        total = xp.asarray(_norm(norms, norm_type), dtype)  # 0-d
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return Tensor._make(total)


def _norm(x, norm_type: float):
    """The ``norm_type``-norm of the flat array ``x``."""
    if x.size == 1 and norm_type != 0:  # |x|, as PyTorch's (squaring 1e300 overflows)
        return abs(x[0])
    return backend.namespace(x).linalg.norm(x, norm_type)


def _total_norm_dtype(tensors: list[Tensor], norm_type: float):
    """The dtype of the tensors' total norm, as PyTorch's: a norm per tensor (real for a
    complex one), stacked in their promoted dtype. Raises PyTorch's errors first: each tensor
    must be floating or complex, and not empty where the order (inf, or negative) has no
    identity."""
    dtype = None
    for t in tensors:
        if not backend.can_require_grad(t.dtype):
            raise RuntimeError(
                "get_total_norm: Expected a floating point or complex tensor as input. Got "
                f"{torch_name(t.dtype)}"
            )
        if t.numel() == 0 and (norm_type < 0 or math.isinf(norm_type)):
            raise RuntimeError(
                f"get_total_norm: cannot compute the {norm_type} norm of an empty tensor (shape "
                f"{tuple(t.shape)}) because the operation does not have an identity"
            )
        real = backend.to_real(t.dtype)
        dtype = real if dtype is None else promote_types(dtype, real)
    return dtype


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    total_norm: Tensor,
    foreach: bool | None = None,
) -> None:
    """Scale the gradients by ``min(max_norm / (total_norm + 1e-6), 1)``, in place, as
    ``torch.nn.utils.clip_grads_with_norm_`` (the second half of ``clip_grad_norm_``, for a
    norm computed elsewhere: ``get_total_norm``)."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    # scratchgrad.jit: done again at every replay
    if capture_hook.recorder is not None and capture_hook.recorder.here():
        return capture_hook.recorder.replayed(
            clip_grads_with_norm_, parameters, max_norm, total_norm
        )
    grads = _grads(parameters, "clip_grads_with_norm_")
    if not grads:
        return None
    if not isinstance(total_norm, Tensor):
        raise TypeError(
            "clip_grads_with_norm_: total_norm must be a Tensor (get_total_norm's result), got "
            f"{type(total_norm).__name__}"
        )
    # The denominator in the norm's dtype, as PyTorch's (a 0-d tensor plus 1e-6); the quotient
    # of the Python number max_norm rounded to it: max_norm itself may not fit a float16
    # (1e10 / inf made inf / inf, NaN; PyTorch's is 0)
    xp = backend.namespace(total_norm.array)
    denominator = total_norm.array + 1e-6
    scale = min(float(max_norm) / float(denominator), 1.0)  # (NaN stays NaN)
    scale = float(xp.asarray(scale, denominator.dtype))
    with no_grad(), _silent_non_finite():
        for g in grads:
            g.mul_(scale)  # also when scale is 1 or NaN, as PyTorch
    return None


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale all gradients together so that their joint ``norm_type``-norm is at most
    ``max_norm``; returns the norm before clipping, as PyTorch: ``get_total_norm`` of the
    gradients, then ``clip_grads_with_norm_``.

    >>> import scratchgrad as sg
    >>> w = sg.zeros(2, requires_grad=True)
    >>> (w * sg.tensor([3.0, 4.0])).sum().backward()
    >>> clip_grad_norm_([w], 1.0)
    tensor(5.)
    >>> [round(g, 4) for g in w.grad.tolist()]
    [0.6, 0.8]
    """
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    # scratchgrad.jit: done again at every replay
    if capture_hook.recorder is not None and capture_hook.recorder.here():
        args = (parameters, max_norm, norm_type, error_if_nonfinite)
        return capture_hook.recorder.replayed(clip_grad_norm_, *args)
    grads = _grads(parameters, "clip_grad_norm_")
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


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
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def _silent_non_finite():
    """An inf or NaN gradient (a step GradScaler will skip) is clipped without NumPy's
    warnings, as PyTorch does it: its norm is inf or NaN, and inf times 0 is NaN; a negative
    order's norm of zeros is 0 (1 / (1 / 0)), silently too."""
    return backend.errstate(over="ignore", invalid="ignore", divide="ignore")


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient entry into ``[-clip_value, clip_value]``, in place (``foreach``
    is accepted and changes nothing)."""
    # scratchgrad.jit: done again at every replay
    if capture_hook.recorder is not None and capture_hook.recorder.here():
        parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        return capture_hook.recorder.replayed(clip_grad_value_, parameters, clip_value)
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters, "clip_grad_value_"):
            g.copy_(g.clamp(-clip_value, clip_value))


def skip_init(module_cls: type, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` for a module whose parameters will be overwritten (a
    checkpoint loaded next), as ``torch.nn.utils.skip_init``. PyTorch leaves them as
    uninitialized memory; here they are whatever the module's own initialization drew, which
    is as good a placeholder. PyTorch's requirement is kept: the class takes a ``device``.

    >>> import scratchgrad as sg
    >>> skip_init(sg.nn.Linear, 3, 2).weight.shape
    scratchgrad.Size([2, 3])
    """
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
