"""Initialisation schemes, after ``torch.nn.init``: each fills a tensor in place (outside the
graph) and returns it. Random numbers come from the library's generator (``sg.manual_seed``)
unless a ``generator`` is given, drawn by the Tensor's own fills (``Tensor.uniform_``, ...).
"""

from __future__ import annotations

import math
import warnings

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.backend import Generator, bfloat16, float16, namespace
from scratchgrad.creation import empty_like
from scratchgrad.creation import eye as identity
from scratchgrad.dtypes import get_default_dtype
from scratchgrad.linalg.decompositions import qr
from scratchgrad.tensor import Tensor, where

# (PyTorch's gain of the linear ones and sigmoid is the int 1)
_GAINS = {"linear": 1, "sigmoid": 1, "tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 0.75}
_LINEAR_LIKE = (
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor that keeps activations' variance steady through ``nonlinearity``.

    >>> calculate_gain("relu") == 2**0.5
    True
    """
    if nonlinearity in _GAINS or nonlinearity in _LINEAR_LIKE:
        return _GAINS.get(nonlinearity, 1)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight laid out as PyTorch's: (out, in, *kernel)."""
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()  # as PyTorch's: "FAN_IN" too
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Fill with samples from U(a, b) (``Tensor.uniform_``, outside the graph).

    >>> import scratchgrad as sg
    >>> w = uniform_(sg.empty(1000), -2.0, 2.0)
    >>> bool((w >= -2).all() and (w < 2).all())
    True
    """
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """Fill with samples from N(mean, std**2) (``Tensor.normal_``, outside the graph)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def xavier_uniform_(
    tensor: Tensor, gain: float = 1.0, generator: Generator | None = None
) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _no_elements(tensor: Tensor) -> bool:
    """True, with PyTorch's warning, for a tensor with no elements: no fan to scale by, and
    nothing to fill."""
    if tensor.numel():
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
    return True


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015).

    ``a`` is the negative slope of the leaky ReLU that follows. PyTorch's layers call this with
    ``a=sqrt(5)``, which makes the bound ``1 / sqrt(fan_in)``.
    """
    if _no_elements(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Generator | None = None,
) -> Tensor:
    """N(0, std**2) with std = gain / sqrt(fan) (He et al., 2015)."""
    if _no_elements(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Generator | None = None,
) -> Tensor:
    """Fill with samples from N(mean, std**2) truncated to [a, b], drawn as PyTorch 2.13 draws
    them: where [a, b] holds more than 0.3 of the normal's mass, normal samples, those outside
    drawn again until none is; else uniform samples in [a, b], each kept with probability
    pdf(x) / (pdf's peak on [a, b]), the others drawn again. Both are exact far in a tail,
    where an inverse CDF in float64 is not (its values there round to 1).

    >>> import scratchgrad as sg
    >>> w = trunc_normal_(sg.empty(1000), std=2.0, a=-1.0, b=3.0)
    >>> bool((w >= -1).all() and (w <= 3).all())
    True
    """
    if tensor.is_meta:  # (no entries to draw, as PyTorch's)
        return tensor
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
            "values may be incorrect.",
            stacklevel=2,
        )
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    with no_grad():
        if mass > 0.3:
            return _normal_redrawn_outside(tensor, mean, std, a, b, generator)
        return _uniform_rejection_sampled(tensor, mean, std, a, b, generator)


def _normal_cdf(z: float) -> float:
    return (1.0 + math.erf(z / math.sqrt(2.0))) / 2.0


def _normal_redrawn_outside(tensor, mean, std, a, b, generator) -> Tensor:
    """``tensor`` filled with N(mean, std**2) samples, those outside [a, b] (the bounds
    rounded to the tensor's dtype, as PyTorch's) drawn again until none is."""
    low, high = (tensor.new_tensor(bound).item() for bound in (a, b))
    tensor.normal_(mean, std, generator=generator)
    outside = (tensor < low) | (tensor > high)
    while outside.any():
        again = empty_like(tensor).normal_(mean, std, generator=generator)
        tensor.copy_(where(outside, again, tensor))
        outside = (tensor < low) | (tensor > high)
    return tensor


def _uniform_rejection_sampled(tensor, mean, std, a, b, generator) -> Tensor:
    """``tensor`` filled with U(a, b) samples, each kept with probability pdf(x) / peak
    (rejection sampling of the truncated normal), the rejected ones drawn again until none is."""
    peak = max(a, min(mean, b))  # (Python's min and max, as PyTorch's, for a NaN mean too)
    log_peak = -0.5 * ((peak - mean) / std) ** 2

    def rejected(candidates: Tensor) -> Tensor:
        log_pdf = ((candidates - mean) / std) ** 2 * -0.5 - log_peak
        return empty_like(candidates).uniform_(generator=generator).log() > log_pdf

    pending = rejected(tensor.uniform_(a, b, generator=generator))
    while pending.any():
        candidates = empty_like(tensor).uniform_(a, b, generator=generator)
        tensor.copy_(where(pending, candidates, tensor))
        pending = pending & rejected(candidates)
    return tensor


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix, the Q of a QR decomposition of a normal sample
    (Saxe et al., 2013, https://arxiv.org/abs/1312.6120), times ``gain``; dims past the first
    are flattened. The signs of R's diagonal fix Q's, so it is uniformly distributed. A
    non-contiguous tensor of 3 or more dims is filled too (PyTorch's raises, as it cannot view
    it as a matrix).

    >>> import scratchgrad as sg
    >>> w = orthogonal_(sg.empty(3, 5))
    >>> bool(((w @ w.T) - sg.eye(3)).abs().max() < 1e-5)
    True
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    if tensor.dtype in (float16, bfloat16) or tensor.is_complex():  # (PyTorch's sign, too)
        raise NotImplementedError(
            f"orthogonal_: not implemented for {tensor.dtype.name} (as PyTorch's), got a tensor of "
            f"shape {tuple(tensor.shape)}"
        )
    rows = tensor.shape[0]
    with no_grad():  # (in tensor ops: func.vmap batches each step, as PyTorch's)
        sample = tensor.new_zeros(rows, tensor.numel() // rows).normal_(generator=generator)
        tall = rows >= sample.shape[1]
        q, r = qr(sample if tall else sample.mT)
        q = q * r.diagonal(0, -2, -1).sign().unsqueeze(-2)  # Q's column signs, from R's
        q = q if tall else q.mT
        return tensor.copy_(q.reshape(tensor.shape) * gain)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity matrix (ones on the diagonal, rectangular too),
    which keeps a linear layer's inputs as they are.

    >>> import scratchgrad as sg
    >>> eye_(sg.empty(2, 3)).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(identity(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d convolution weight (out, in, *kernel) with the Dirac delta: output
    channel d of each of ``groups`` groups is input channel d, read at the kernel's centre, so
    the convolution keeps as many input channels as it can (zeros elsewhere).

    >>> import scratchgrad as sg
    >>> dirac_(sg.empty(2, 1, 3))[:, 0].tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if tensor.shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = tensor.shape[0] // groups
    xp = namespace(tensor.array)
    channels = xp.arange(min(per_group, tensor.shape[1]))
    outputs = (xp.arange(groups)[:, None] * per_group + channels).reshape(-1)
    centre = tuple(size // 2 for size in tensor.shape[2:])
    with no_grad():
        tensor.zero_()
        if outputs.size:  # (none: an empty kernel's centre is not indexed, as PyTorch's loop)
            tensor[(outputs, xp.tile(channels, groups), *centre)] = 1
    return tensor


def sparse_(
    tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None
) -> Tensor:
    """Fill a 2-d tensor with samples from N(0, std**2), then zero ``ceil(sparsity * rows)``
    entries of each column, at rows drawn at random (Martens, 2010, "Deep learning via
    Hessian-free optimization"). The rows are each column's first in a random order (the
    argsort of uniform draws), from the library's generator unless a ``generator`` is given.

    >>> import scratchgrad as sg
    >>> w = sparse_(sg.empty(10, 4), 0.3)
    >>> (w == 0).sum(0).tolist()
    [3, 3, 3, 3]
    """
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    with no_grad():  # (in tensor ops: func.vmap batches each step, as PyTorch's)
        tensor.normal_(0.0, std, generator=generator)
        draws = tensor.new_zeros(rows, cols, dtype=get_default_dtype())
        order = draws.uniform_(generator=generator).argsort(0)
        tensor.scatter_(0, order[:zeros], 0.0)
    return tensor


def _deprecated(method):
    """``method`` under its old name without the underscore, with PyTorch's FutureWarning."""
    old = method.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old}` is now deprecated in favor of `nn.init.{method.__name__}`.",
            FutureWarning,
            stacklevel=2,
        )
        return method(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"``{method.__name__}`` under its deprecated name."
    return deprecated_init


# PyTorch's deprecated names (``nn.init.normal(w)``), still in older scripts
uniform, normal, constant = _deprecated(uniform_), _deprecated(normal_), _deprecated(constant_)
xavier_uniform, xavier_normal = _deprecated(xavier_uniform_), _deprecated(xavier_normal_)
kaiming_uniform, kaiming_normal = _deprecated(kaiming_uniform_), _deprecated(kaiming_normal_)
orthogonal, sparse, dirac = _deprecated(orthogonal_), _deprecated(sparse_), _deprecated(dirac_)
eye = _deprecated(eye_)
