"""``scratchgrad.nn.functional``: layers, activations and losses as functions, after
``torch.nn.functional``. Everything here is composed from Tensor operations, except for a few
primitives of its own: ``Softplus`` and ``LogSigmoid`` (``ops/special.py``), for stability,
and the speed fusions ``Linear``, ``MSELoss``, ``CrossEntropy``, ``Gelu`` and ``LayerNorm``
(``ops/fused.py``, which names each one's composed twin): one node each where the composition
records several.

>>> import scratchgrad as sg
>>> import scratchgrad.nn.functional as F
>>> logits = sg.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, sg.tensor([0]))
>>> round(loss.item(), 4)
0.2413
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd import capture_hook
from scratchgrad.autograd.autocast import autocast_policy
from scratchgrad.autograd.function import saving
from scratchgrad.autograd.grad_mode import is_grad_enabled, no_grad
from scratchgrad.backend import xp
from scratchgrad.backends import cuda as _switches
from scratchgrad.creation import arange, empty_like, rand, zeros_like
from scratchgrad.dtypes import torch_name
from scratchgrad.meta import MetaArray
from scratchgrad.ops.binary import PiecewiseWhere
from scratchgrad.ops.fused import (
    ZERO_BY_ZERO,
    CrossEntropy,
    Gelu,
    LayerNorm,
    Linear,
    MSELoss,
    all_below,
    check_class_indices,
)
from scratchgrad.ops.matmul import MatMul
from scratchgrad.ops.movement import WithoutDerivative
from scratchgrad.ops.special import BinaryCrossEntropy, LogSigmoid, Softplus
from scratchgrad.ops.unary import Elu
from scratchgrad.sparse import Embedding as SparseGradEmbedding
from scratchgrad.tensor import (
    Tensor,
    broadcast_shapes,
    broadcast_tensors,
    cat,
    check_same_dtype,
    distance_norm,
    graph_keeps,
    named_backward,
    names_bad_arguments,
    p_norm,
    vmapped,
    where,
    where_node,
    wrap_dim,
)

# ---- linear and activations -----------------------------------------------------------------


def _16_bit_input_in_float32(norm, one_dtype: bool = True):
    """PyTorch's normalisations and activations compute a 16-bit input in float32 and round the
    result once to its dtype, forward and backward (the normalisations take float32 statistics
    and weights, as under autocast); composed of 16-bit NumPy steps, each rounded, bfloat16 gelu
    was an ulp off PyTorch's on a third of its values, and hardsigmoid's gradient next to -3 was
    0. With ``one_dtype``, statistics and weights of another dtype than the input's are an
    error, as PyTorch's kernels make them."""

    @functools.wraps(norm)
    def run(input: Tensor, *args, **kwargs) -> Tensor:
        if one_dtype:
            _check_norm_dtypes(norm.__name__, input, *args, *kwargs.values())
        if input.array.dtype not in backend.SIXTEEN_BIT:
            return norm(input, *args, **kwargs)
        return norm(input.float(), *args, **kwargs).to(input.array.dtype)

    return run


_computed_in_float32 = functools.partial(_16_bit_input_in_float32, one_dtype=False)


@autocast_policy("lower")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``, with ``weight`` of shape (out_features, in_features)."""
    if weight.array.ndim != 2 or input.array.ndim == 0:
        out = input.matmul(weight.mT if weight.ndim > 1 else weight)
        return out if bias is None else out + bias
    dtype = weight.array.dtype
    if input.array.dtype is not dtype and input.array.dtype != dtype:  # one, as PyTorch's
        raise RuntimeError(
            f"linear: mat1 and mat2 must have the same dtype, but got {input.dtype.name} and "
            f"{weight.dtype.name}"
        )
    if bias is not None and bias.array.dtype is not dtype and bias.array.dtype != dtype:
        raise RuntimeError(
            f"linear: self and mat2 must have the same dtype, but got {bias.dtype.name} and "
            f"{weight.dtype.name}"
        )
    if dtype.kind == "b" and input.array.size and weight.array.size:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    if bias is None:  # the node's name then is PyTorch's mm, not addmm
        return Linear.apply(input, weight)
    return Linear.apply(input, weight, bias)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the gradient at 0 is 0, as PyTorch. ``inplace``: the result is written into
    ``input`` and returned (``relu_``, one pass in a graph, as PyTorch's)."""
    return input.relu_() if inplace else Tensor.relu(input)


def _pieces(condition: Tensor, x: Any, y: Any) -> Tensor:
    """``where(condition, x, y)``, ``condition`` computed from ``x`` or ``y`` (an activation's
    pieces): under create_graph its gradient is a function of them, as PyTorch's
    (``PiecewiseWhere``)."""
    return where_node(PiecewiseWhere, condition, x, y)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else ``negative_slope * x``; ``inplace``: written into ``input``."""
    input._check_floating("leaky_relu")
    return _in_place_or_new(
        input, inplace, "leaky_relu", lambda x: _pieces(x > 0, x, x * negative_slope)
    )


@_computed_in_float32
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), Phi the standard normal CDF; ``approximate="tanh"`` uses PyTorch's tanh form.

    >>> import scratchgrad as sg
    >>> round(gelu(sg.tensor(1.0)).item(), 6)
    0.841345
    """
    input._check_floating("gelu")
    if approximate == "none":
        return Gelu.apply(input)  # input * 0.5 * (1 + erf(input / sqrt(2))), one node
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (input + 0.044715 * (input * input * input))
        return 0.5 * input * (1 + inner.tanh())
    raise RuntimeError(  # (PyTorch's type)
        f"gelu: approximate argument must be either none or tanh, got {approximate!r}"
    )


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (also called swish). ``inplace``: written into ``input``."""
    input._check_floating("silu")
    return _in_place_or_new(input, inplace, "silu", _silu)


@_computed_in_float32
def _silu(x: Tensor) -> Tensor:
    return x * x.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (as PyTorch)."""
    input._check_floating("softplus")
    scaled = input * beta if beta != 1 else input
    smooth = Softplus.apply(scaled)
    return where(scaled > threshold, input, smooth / beta if beta != 1 else smooth)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else ``alpha * (exp(x) - 1)``. ``inplace``: written into ``input``.

    >>> import scratchgrad as sg
    >>> [round(v, 4) for v in elu(sg.tensor([-1.0, 2.0])).tolist()]
    [-0.6321, 2.0]
    """
    input._check_floating("elu")
    elu = functools.partial(_elu, alpha=alpha, is_result=inplace)
    return _in_place_or_new(input, inplace, "elu", elu)


@_computed_in_float32
def _elu(x: Tensor, alpha: float, is_result: bool) -> Tensor:
    return Elu.apply(x, alpha=alpha, scale=1.0, input_scale=1.0, is_result=is_result)


# SELU's constants, from https://arxiv.org/abs/1706.02515 (as PyTorch's)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al.
    ``inplace``: the result is written into ``input``.

    >>> import scratchgrad as sg
    >>> round(selu(sg.tensor(1.0)).item(), 6)
    1.050701
    """
    input._check_floating("selu")
    return _in_place_or_new(input, inplace, "selu", functools.partial(_selu, is_result=inplace))


@_computed_in_float32
def _selu(x: Tensor, is_result: bool) -> Tensor:
    return Elu.apply(x, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0, is_result=is_result)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x)) (https://arxiv.org/abs/1908.08681). ``inplace``: written into
    ``input``.

    >>> import scratchgrad as sg
    >>> round(mish(sg.tensor(1.0)).item(), 6)
    0.865098
    """
    input._check_floating("mish")
    return _in_place_or_new(input, inplace, "mish", _mish)


@_computed_in_float32
def _mish(x: Tensor) -> Tensor:
    return x * Softplus.apply(x).tanh()


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """x clipped to [``min_val``, ``max_val``]. As PyTorch's, the gradient is 0 at the bounds
    too (``clamp``'s is 1 there). ``inplace``: the result is written into ``input``.

    >>> import scratchgrad as sg
    >>> hardtanh(sg.tensor([-2.0, 0.5, 3.0])).tolist()
    [-1.0, 0.5, 1.0]
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype == bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not input.is_floating_point():  # an integer input stays integer, its bounds truncated
        bounds = math.trunc(min_val), math.trunc(max_val)
        if input.dtype.kind == "u" and bounds[0] < 0:
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        return _in_place_or_new(input, inplace, "hardtanh", lambda x: x.clamp(*bounds))
    return _in_place_or_new(
        input, inplace, "hardtanh", lambda x: _hardtanh(x, float(min_val), float(max_val))
    )


def _hardtanh(x: Tensor, min_val: float, max_val: float) -> Tensor:
    # (outside, not inside: a NaN's gradient passes, as PyTorch's hardtanh_backward)
    outside = (x <= min_val) | (x >= max_val)
    return _pieces(outside, x.detach().clamp(min_val, max_val), x)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): ``hardtanh(x, 0, 6)``. ``inplace``: written into ``input``.

    >>> import scratchgrad as sg
    >>> relu6(sg.tensor([-1.0, 3.0, 7.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6 (MobileNetV3, https://arxiv.org/abs/1905.02244): -0.0 up to -3
    (NaN at -inf), x from 3 on. ``inplace``: the result is written into ``input`` and
    returned, as PyTorch's ``hardswish_`` (not on a leaf that requires grad).

    NOTE: the gradient at -3 and 3 is the outer pieces' (0 and 1), as PyTorch's.

    >>> import scratchgrad as sg
    >>> [round(v, 4) for v in hardswish(sg.tensor([-4.0, 1.0, 4.0])).tolist()]
    [-0.0, 0.6667, 4.0]
    """
    input._check_floating("hardswish")
    return _in_place_or_new(input, inplace, "hardswish", _hardswish)


@_computed_in_float32
def _hardswish(x: Tensor) -> Tensor:
    """PyTorch's ``x * min(max(x + 3, 0), 6) / 6`` (NaN at -inf) with its gradient: 0 up to -3,
    1 from 3 on, finite at the infinities, NaN at NaN (PyTorch's vectorized kernel's; its
    scalar one, which takes a 0-d input and the last entries of a row of 8, gives 1)."""
    outer = (x <= -3) | (x >= 3)
    # the middle's square of 0 outside, else its unused gradient there is 0 * inf = NaN
    m = where(outer, 0.0, x)
    return where(outer, where(x <= -3, x * 0.0, x), m * (m + 3) / 6)


def _in_place_or_new(input: Tensor, inplace: bool, name: str, op) -> Tensor:
    """``op(input)``, written into ``input`` and returned when ``inplace`` (PyTorch's
    ``<name>_``; not on a leaf that requires grad)."""
    return input._apply_(f"{name}_", op) if inplace else op(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6: 0 up to -3, 1 from 3 on, linear between. As PyTorch's, the gradient
    at -3 and 3 is 0. ``inplace``: the result is written into ``input``.

    >>> import scratchgrad as sg
    >>> hardsigmoid(sg.tensor([-4.0, 0.0, 1.5, 4.0])).tolist()
    [0.0, 0.5, 0.75, 1.0]
    """
    input._check_floating("hardsigmoid")
    return _in_place_or_new(input, inplace, "hardsigmoid", _hardsigmoid)


@_computed_in_float32
def _hardsigmoid(x: Tensor) -> Tensor:
    return relu6(x + 3) / 6


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (https://arxiv.org/abs/1704.07483):
    ``alpha * elu(x / alpha)``. ``inplace``: the result is written into ``input``.

    >>> import scratchgrad as sg
    >>> [round(v, 4) for v in celu(sg.tensor([-1.0, 2.0]), 2.0).tolist()]
    [-0.7869, 2.0]
    """
    input._check_floating("celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    celu = functools.partial(_celu, alpha=alpha, is_result=inplace)
    return _in_place_or_new(input, inplace, "celu", celu)


@_computed_in_float32
def _celu(x: Tensor, alpha: float, is_result: bool) -> Tensor:
    # PyTorch's celu: elu with input_scale 1 / alpha, but its backward takes alpha rounded to
    # float32 there (derivatives.yaml's 1.0 / alpha.toFloat()): its gradient, not the exact one
    backward_input_scale = 1.0 / float(xp.float32(alpha))
    out = Elu.apply(
        x, alpha=alpha, scale=1.0, input_scale=1.0 / alpha,
        backward_input_scale=backward_input_scale, is_result=is_result,
    )  # fmt: skip
    return named_backward(out, "CeluBackward1" if is_result else "CeluBackward0")


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > ``threshold``, else ``value`` (the gradient is 0 there, at the threshold
    too). An integer input stays integer, its threshold and value truncated to it, as
    PyTorch's. ``inplace``: the result is written into ``input``.

    >>> import scratchgrad as sg
    >>> threshold(sg.tensor([0.5, 1.0, 2.0]), 1.0, -1.0).tolist()
    [-1.0, -1.0, 2.0]
    """
    if not input.is_floating_point():  # PyTorch casts both to the input's dtype
        threshold, value = math.trunc(threshold), math.trunc(value)
    # (x where not x <= threshold: NaN stays NaN, as PyTorch's)
    return _in_place_or_new(
        input, inplace, "threshold", lambda x: _pieces(x <= threshold, value, x)
    )


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > ``lambd``, else 0 (the gradient is 0 at +-``lambd``).

    >>> import scratchgrad as sg
    >>> hardshrink(sg.tensor([-1.0, 0.5, 0.75])).tolist()
    [-1.0, 0.0, 0.75]
    """
    input._check_floating("hardshrink")
    return _pieces(input.abs() <= lambd, 0.0, input)  # (NaN stays NaN, as PyTorch's)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x moved ``lambd`` towards 0, and 0 where |x| <= ``lambd`` (the gradient is 0 at
    +-``lambd``).

    >>> import scratchgrad as sg
    >>> softshrink(sg.tensor([-1.0, 0.25, 0.75])).tolist()
    [-0.5, 0.0, 0.25]
    """
    input._check_floating("softshrink")
    if not lambd >= 0:
        raise RuntimeError(f"softshrink: lambda must be in range [0, inf), but found {lambd}")
    # (NaN stays NaN, as PyTorch's)
    moved = _pieces(input > lambd, input - lambd, input + lambd)
    return _pieces(input.abs() <= lambd, 0.0, moved)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x).

    >>> import scratchgrad as sg
    >>> round(tanhshrink(sg.tensor(1.0)).item(), 6)
    0.238406
    """
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|).

    >>> import scratchgrad as sg
    >>> softsign(sg.tensor([-3.0, 1.0])).tolist()
    [-0.75, 0.5]
    """
    return input / (input.abs() + 1)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """The randomized leaky ReLU (https://arxiv.org/abs/1505.00853): x for x > 0, else
    ``a * x``, with a slope ``a`` drawn from U(``lower``, ``upper``) for each entry in
    training (from the library's generator; the gradient is that slope), and the fixed
    ``(lower + upper) / 2`` otherwise. ``inplace``: the result is written into ``input``.

    >>> import scratchgrad as sg
    >>> rrelu(sg.tensor([-2.0, 3.0]), 0.25, 0.75).tolist()
    [-1.0, 3.0]
    """
    input._check_floating("rrelu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")

    def leaky(x: Tensor) -> Tensor:
        if not training:
            return _pieces(x > 0, x, x * ((lower + upper) / 2))
        slope = rand(x.shape, dtype=x.dtype, device=x.device) * (upper - lower) + lower
        return _pieces(x <= 0, x * slope, x)  # (a NaN's gradient passes, as PyTorch's noise's)

    return _in_place_or_new(input, inplace, "rrelu", leaky)


# ---- the in-place forms: PyTorch's ``F.<name>_``, each the activation with ``inplace=True``


def relu_(input: Tensor) -> Tensor:
    """``relu`` written into ``input`` (not a leaf that requires grad), which it returns.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([-1.0, 2.0])
    >>> relu_(x) is x, x.tolist()
    (True, [0.0, 2.0])
    """
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` written into ``input``, which it returns."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` written into ``input``, which it returns."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` written into ``input``, which it returns. As PyTorch's, it does not check
    that ``min_val <= max_val``: where it is not, every entry becomes ``max_val``."""
    lo, hi = float(min_val), float(max_val)
    return _in_place_or_new(input, True, "hardtanh", lambda x: _hardtanh(x, lo, hi))


_threshold = threshold  # threshold_'s argument, named as PyTorch's, hides the function


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` written into ``input``, which it returns."""
    return _threshold(input, threshold, value, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` written into ``input``, which it returns."""
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """``selu`` written into ``input``, which it returns."""
    return selu(input, inplace=True)


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """``rrelu`` written into ``input``, which it returns."""
    return rrelu(input, lower, upper, training, inplace=True)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed stably as -softplus(-x) (one primitive, ``LogSigmoid``).

    >>> import scratchgrad as sg
    >>> round(logsigmoid(sg.tensor(0.0)).item(), 6)
    -0.693147
    """
    input._check_floating("log_sigmoid")
    return LogSigmoid.apply(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit ``a * sigmoid(b)``, ``a`` and ``b`` the halves of ``dim``.

    >>> import scratchgrad as sg
    >>> glu(sg.tensor([[1.0, 2.0, 0.0, 0.0]])).tolist()
    [[0.5, 1.0]]
    """
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    input._check_floating("glu")
    size = input.shape[wrap_dim(dim, input.ndim)]
    if size % 2:
        raise RuntimeError(
            f"glu: Halving dimension must be even, but dimension {dim} is size {size}"
        )
    return input.narrow(dim, 0, size // 2) * input.narrow(dim, size // 2, size // 2).sigmoid()


@autocast_policy("lower")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else ``weight * x``: ``weight`` holds one slope, or one for each channel
    (dim 1; a 1-D input has one channel).

    >>> import scratchgrad as sg
    >>> prelu(sg.tensor([[-2.0, 3.0]]), sg.tensor([0.25])).tolist()
    [[-0.5, 3.0]]
    """
    if input.dtype != weight.dtype:
        raise RuntimeError(
            f"prelu: Type promoting not supported. Got {input.dtype.name} and {weight.dtype.name}"
        )
    if weight.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}"
        )
    if weight.numel() != 1:
        if input.ndim == 0:
            raise RuntimeError("prelu: Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim > 1 else 1
        if weight.numel() != channels:
            raise RuntimeError(
                "prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {weight.numel()} and channel size = {channels}."
            )
    shape = [1] * input.ndim  # the slopes along dim 1
    if input.ndim > 1:
        shape[1] = weight.numel()
    # the slope times 0 where the input is positive, else its gradient there is 0 * inf = NaN
    negative = _pieces(input > 0, 0.0, input)
    return _pieces(input > 0, input, weight.reshape(shape) * negative)


def _softmax_dim(name: str, ndim: int) -> int:
    """PyTorch's legacy choice when no dim is given: 0 for 0-, 1- and 3-d input, else 1."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (a fused, stable primitive)."""
    if dtype is not None:
        input = input.to(dtype)
    return input.softmax(_softmax_dim("softmax", input.ndim) if dim is None else dim)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """x - logsumexp(x) along ``dim`` (a fused, stable primitive)."""
    if dtype is not None:
        input = input.to(dtype)
    return input.log_softmax(_softmax_dim("log_softmax", input.ndim) if dim is None else dim)


def softmin(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """softmax(-x) along ``dim``: the smallest entries get the largest weights.

    >>> import scratchgrad as sg
    >>> [round(v, 4) for v in softmin(sg.tensor([1.0, 2.0]), 0).tolist()]
    [0.7311, 0.2689]
    """
    return softmax(-input, _softmax_dim("softmin", input.ndim) if dim is None else dim, dtype)


def gumbel_softmax(
    logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """A sample of the Gumbel-softmax distribution (Jang et al., https://arxiv.org/abs/1611.01144;
    Maddison et al., https://arxiv.org/abs/1611.00712): ``softmax((logits + g) / tau)`` along
    ``dim``, ``g = -log(e)`` of Exponential(1) draws ``e`` (Gumbel(0, 1) noise) from the
    library's generator, as ``torch.nn.functional.gumbel_softmax``. A lower ``tau`` gives
    samples closer to one-hot.

    ``hard``: the one-hot vector of each sample's largest entry, with the soft sample's
    gradient (straight through: ``y_hard - y_soft.detach() + y_soft``). ``eps`` is unused, as in
    PyTorch, which warns when it is given.

    >>> import scratchgrad as sg
    >>> _ = sg.manual_seed(0)
    >>> y = gumbel_softmax(sg.zeros(2, 3), hard=True)
    >>> y.sum(-1).tolist(), sorted(set(y.flatten().tolist()))
    ([1.0, 1.0], [0.0, 1.0])
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=3)
    gumbels = -empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- dropout, embedding, normalisation ------------------------------------------------------


def _dropout_in_place_or_new(
    input: Tensor, inplace: bool, name: str, p: float, training: bool, op
) -> Tensor:
    """``_in_place_or_new`` for a dropout. As PyTorch's, an in-place one that changes nothing
    (not training, ``p`` 0 or no entries) returns ``input`` untouched: its version stays, so a
    backward that saved it (sigmoid's output) still runs."""
    _check_probability(p)
    if inplace and (not training or p == 0 or input.numel() == 0):
        return input
    return _in_place_or_new(input, inplace, name, op)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each entry with probability ``p`` and scale the rest by 1 / (1 - p), in training.

    The mask is drawn here, from the library's generator, and enters the graph as a constant,
    so the multiplication stays a pure function of its inputs. ``inplace``: the result is
    written into ``input`` (``dropout_``).

    >>> import scratchgrad as sg
    >>> out = dropout(sg.ones(1000), 0.5)
    >>> sorted(set(out.tolist()))
    [0.0, 2.0]
    """
    return _dropout_in_place_or_new(
        input, inplace, "dropout", p, training, lambda x: _drop(x, p, training, x.shape)
    )


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels (each ``(n, c)`` plane of ``(N, C, H, W)``) with probability ``p``
    and scale the rest by 1 / (1 - p), in training; the mask is drawn as ``dropout``'s.

    As PyTorch, a 3-D input is taken as ``(N, C, L)`` (1-d channels), with a warning.

    >>> import scratchgrad as sg
    >>> out = dropout2d(sg.ones(8, 16, 2, 2), 0.5)
    >>> bool((out.amax((2, 3)) == out.amin((2, 3))).all())
    True
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"dropout2d: expected a 3-D or 4-D input (N, C, ...), got shape {input.shape}"
        )
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_in_place_or_new(
        input, inplace, "dropout2d", p, training, lambda x: _drop(x, p, training, _channels(x))
    )


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels (each length-L row of ``(N, C, L)`` or ``(C, L)``) with probability
    ``p`` and scale the rest by 1 / (1 - p), in training; the mask is drawn as ``dropout``'s.

    >>> import scratchgrad as sg
    >>> out = dropout1d(sg.ones(8, 16, 3), 0.5)
    >>> bool((out.amax(2) == out.amin(2)).all())
    True
    """
    _check_probability(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    batched = input.ndim == 3
    return _dropout_in_place_or_new(
        input, inplace, "dropout1d", p, training, lambda x: _drop_channels(x, p, training, batched)
    )


def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels (each ``(D, H, W)`` volume of ``(N, C, D, H, W)`` or
    ``(C, D, H, W)``) with probability ``p`` and scale the rest by 1 / (1 - p), in training.
    As PyTorch, another number of dims warns, and the first dim is taken as the channels.

    >>> import scratchgrad as sg
    >>> out = dropout3d(sg.ones(4, 8, 2, 2, 2), 0.5)
    >>> bool((out.amax((2, 3, 4)) == out.amin((2, 3, 4))).all())
    True
    """
    _check_probability(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=3,  # past the wrapper that names bad arguments
        )
    batched = input.ndim == 5
    return _dropout_in_place_or_new(
        input, inplace, "dropout3d", p, training, lambda x: _drop_channels(x, p, training, batched)
    )


def alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Dropout that keeps SELU's mean 0 and variance 1 (Klambauer et al.,
    https://arxiv.org/abs/1706.02515), in training: each entry is set with probability ``p``
    to SELU's negative saturation value, then all are scaled and shifted back, as PyTorch's.
    Note ``training`` is False by default, as in PyTorch.

    >>> import scratchgrad as sg
    >>> out = alpha_dropout(sg.randn(100000), 0.2, training=True)
    >>> abs(out.mean().item()) < 0.02, round(out.std().item(), 1)
    (True, 1.0)
    """
    return _dropout_in_place_or_new(
        input,
        inplace,
        "alpha_dropout",
        p,
        training,
        lambda x: _drop(x, p, training, x.shape, alpha=True),
    )


def feature_alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """``alpha_dropout`` of whole channels (dim 1 of ``(N, C, ...)``), in training.

    >>> import scratchgrad as sg
    >>> out = feature_alpha_dropout(sg.zeros(4, 8, 3), 0.5, training=True)
    >>> bool((out.amax(2) == out.amin(2)).all())
    True
    """
    return _dropout_in_place_or_new(
        input,
        inplace,
        "feature_alpha_dropout",
        p,
        training,
        lambda x: _drop(x, p, training, _channels(x), alpha=True),
    )


def _check_probability(p: float) -> None:
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _channels(input: Tensor) -> tuple[int, ...]:
    """The mask shape that drops whole channels of (N, C, ...): (N, C, 1, ...)."""
    if input.ndim < 2:
        raise RuntimeError(
            f"Feature dropout requires at least 2 dimensions in the input, got shape {input.shape}"
        )
    return (*input.shape[:2], *(1,) * (input.ndim - 2))


def _drop_channels(input: Tensor, p: float, training: bool, batched: bool) -> Tensor:
    """Channel dropout of (N, C, ...), or of (C, ...) seen as one sample."""
    x = input if batched else input.unsqueeze(0)
    out = _drop(x, p, training, _channels(x))
    return out if batched else out.squeeze(0)


# SELU's value for very negative inputs is -_SELU_ALPHA_PRIME (PyTorch's constant)
_SELU_ALPHA_PRIME = 1.7580993408473766


def _drop(
    input: Tensor, p: float, training: bool, mask_shape: tuple[int, ...], alpha: bool = False
) -> Tensor:
    """``input`` times a mask of ``mask_shape`` (broadcast over the rest): 0 with probability
    ``p``, else 1 / (1 - p). ``alpha``: dropped entries become SELU's saturation value, and
    the result is scaled and shifted to keep mean 0 and variance 1, as PyTorch's."""
    _check_probability(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:  # all dropped, without a draw (an integer input too), as PyTorch's
        return input * 0
    if not input.is_floating_point():
        raise RuntimeError(
            f"dropout: an {input.dtype.name} input can only be dropped with p 0 or 1 (PyTorch: "
            f"result type Float can't be cast to the desired output type)"
        )
    # a draw per member inside vmap
    keep = (rand(mask_shape, dtype=backend.float64, device=input.device) >= p).to(input.dtype)
    if not alpha:
        return input * (keep * (1 / (1 - p)))
    a = 1 / math.sqrt((_SELU_ALPHA_PRIME**2 * p + 1) * (1 - p))
    shift = (keep - 1) * (_SELU_ALPHA_PRIME * a) + _SELU_ALPHA_PRIME * a * p
    return input * (keep * a) + shift


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``: shape ``input.shape + (dim,)``.

    Rows looked up at ``padding_idx`` get no gradient, as in PyTorch. With ``max_norm``, each
    looked-up row whose ``norm_type``-norm exceeds it is first rescaled in place (under no_grad)
    to norm ``max_norm``, as PyTorch's ``embedding_renorm_``. With ``scale_grad_by_freq``,
    each row's gradient is divided by the number of times ``input`` holds its index. With
    ``sparse``, ``weight.grad`` is a sparse COO tensor (``scratchgrad.sparse``) of one row per
    index looked up, as PyTorch's (for ``optim.SparseAdam``, ``SGD``, ``Adagrad``); a weight
    computed in the graph (not a leaf) gets the ordinary dense gradient here.

    >>> import scratchgrad as sg
    >>> weight = sg.tensor([[3.0, 4.0], [0.3, 0.4]])
    >>> embedding(sg.tensor([0]), weight, max_norm=1.0)
    tensor([[0.6000, 0.8000]])
    >>> weight = sg.ones(2, 2, requires_grad=True)
    >>> embedding(sg.tensor([0, 0, 1]), weight, scale_grad_by_freq=True).sum().backward()
    >>> weight.grad
    tensor([[1., 1.],
            [1., 1.]])
    >>> weight = sg.ones(3, 2, requires_grad=True)
    >>> embedding(sg.tensor([2, 0, 2]), weight, sparse=True).sum().backward()
    >>> weight.grad._indices(), weight.grad.is_sparse
    (tensor([[2, 0, 2]]), True)
    """
    batched = vmapped("_embedding", input)  # per-member indices: vmap's own version
    if batched is not None:
        options = (padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
        return batched(input, weight, *options)
    n = weight.shape[0]
    index = check_embedding_index(input, n, padding_idx)
    if max_norm is not None:
        renorm_embedding_rows(weight, index, max_norm, norm_type)
    if sparse and weight.requires_grad and weight.is_leaf and is_grad_enabled():
        return _embedding_sparse_grad(weight, index, padding_idx, scale_grad_by_freq)
    out = weight[index.copy() if graph_keeps(weight) else index]
    if scale_grad_by_freq:
        # the same values, and a gradient divided by each index's count: (out - out) is zero
        scale = capture_hook.call(_inverse_counts, index, n, out.dtype)
        out = out.detach() + (out - out.detach()) * Tensor._make(scale)
    if padding_idx is None:
        return out
    padding = capture_hook.call(_is_padding, index, padding_idx % n)
    # a recorded step detaches always (the same values), as the next batch may hold the padding
    if capture_hook.recorder is None and not padding.any():
        return out
    return where(padding, out.detach(), out)


def _embedding_sparse_grad(
    weight: Tensor, index, padding_idx: int | None, scale_grad_by_freq: bool
) -> Tensor:
    """``weight[index]`` with a sparse gradient (``scratchgrad.sparse.Embedding``)."""
    if capture_hook.recorder is not None:  # (the indices are kept in the node, not replayed)
        capture_hook.recorder.refuse(
            "embedding(sparse=True) (sparse gradients)", "Use sparse=False inside the step"
        )
    n = weight.shape[0]
    padding_idx = None if padding_idx is None else padding_idx % n
    return SparseGradEmbedding.apply(
        weight, index=index, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq
    )


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the ``weight`` rows in each bag of indices: the rows of a 2-D
    ``input`` (B, L), or the runs of a 1-D ``input`` that start at ``offsets`` (B,). Entries at
    ``padding_idx`` are left out of their bag; an empty bag gives zeros. ``per_sample_weights``
    (``mode="sum"`` only) weighs each index. ``max_norm`` first rescales the rows looked up in
    place, as ``embedding``. ``scale_grad_by_freq`` (sum and mean) divides the gradient of each
    row by the number of times ``input`` holds its index, as ``embedding``'s and PyTorch's
    documentation say; NOTE: PyTorch's CPU kernel divides the gradient of the k-th distinct
    index (in sorted order) by the count of the k-th entry of the sorted indices instead, which
    agrees only where those counts happen to match (all indices distinct, say).

    Which bag each of the T indices falls in is a (B, T) grid; a sum or a mean is then one
    matrix product of its weights with the T looked-up rows, and a max a reduction over the
    (B, T, D) rows masked by it (memory B*T*D), whose gradient goes to the first of equal
    maxima in the bag, as PyTorch's. With ``sparse`` (sum and mean), ``weight.grad`` is a
    sparse COO tensor of the rows looked up (``embedding``'s).

    >>> import scratchgrad as sg
    >>> weight = sg.arange(6.0).reshape(3, 2)
    >>> embedding_bag(sg.tensor([0, 2, 1]), weight, sg.tensor([0, 2]), mode="sum")
    tensor([[4., 6.],
            [2., 3.]])
    """
    batched = vmapped("_embedding_bag", input, offsets, per_sample_weights)  # under vmap
    if batched is not None:
        return batched(
            (input, weight, offsets, per_sample_weights),
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse and mode == "max":
        raise ValueError("embedding_bag: max mode does not support sparse weights")  # (PyTorch's)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub."
            )
        if per_sample_weights.shape != input.shape:
            raise ValueError(
                f"embedding_bag: per_sample_weights of shape {per_sample_weights.shape} must "
                f"have the shape of input {input.shape}"
            )
    if input.array.dtype.kind not in "iu":
        raise RuntimeError(
            "embedding_bag: expected indices of an integer dtype (Long or Int), got "
            f"{input.array.dtype}"
        )
    if input.ndim == 2 and offsets is not None:
        raise ValueError(
            "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
            "fixed length sequences."
        )
    if input.ndim not in (1, 2) or (input.ndim == 1 and (offsets is None or offsets.ndim != 1)):
        raise ValueError(
            f"embedding_bag: input has to be 1D or 2D Tensor, with 1D offsets for 1D input; got "
            f"input of shape {input.shape} and offsets {None if offsets is None else offsets.shape}"
        )
    if input.ndim == 2 and not input.shape[1]:
        raise RuntimeError(
            f"embedding_bag: a 2D input holds bags of one length, not 0: got shape {input.shape}"
        )
    flat = input.reshape(-1)
    n = weight.shape[0]
    capture_hook.call(_check_bag_indices, flat.array, n)  # a jitted step's next batch, too
    if max_norm is not None:
        renorm_embedding_rows(weight, flat.array, max_norm, norm_type)
    if sparse and weight.requires_grad and weight.is_leaf and is_grad_enabled():
        padding = None if padding_idx is None else padding_idx % n
        # (T, D); with scale_grad_by_freq, its backward raises PyTorch's error
        rows = _embedding_sparse_grad(weight, flat.array, padding, scale_grad_by_freq)
    else:
        rows = weight[flat.array.copy() if graph_keeps(weight) else flat.array]
    if scale_grad_by_freq:  # (as embedding's: the same values, the gradient divided)
        scale = capture_hook.call(_inverse_counts, flat.array, n, rows.dtype)
        rows = rows.detach() + (rows - rows.detach()) * Tensor._make(scale)
    # which bag each index falls in, as a (B, T) grid, made again for each batch of a jitted step
    members = capture_hook.call(
        _bag_members,
        flat.array,
        None if offsets is None else offsets.array,
        input.shape[1] if input.ndim == 2 else None,
        include_last_offset,
        None if padding_idx is None else padding_idx % n,
    )
    # (no index at all: every bag is empty, 0 in every mode, and amax refuses the empty dim)
    if mode == "max" and flat.shape[0]:
        out = where(members[..., None], rows, -math.inf).max(1).values
        return where(capture_hook.call(_any_member, members), out, 0.0)
    scale = capture_hook.call(_bag_scale, members, mode == "mean", weight.array.dtype)
    if per_sample_weights is not None:
        scale = per_sample_weights.reshape(-1) * scale
    # MatMul itself, not `@`: a lookup stays in the weight's dtype under autocast
    return MatMul.apply(scale, rows)


def _bag_members(index, offsets, length: int | None, include_last_offset: bool, padding_idx):
    """(B, T) booleans: index t is in bag b. Bags are rows of ``length`` (a 2-D input) or runs
    starting at ``offsets``; ``padding_idx`` belongs to no bag."""
    positions = xp.arange(index.size)
    if offsets is None:
        bag, count = positions // length, index.size // max(length, 1)
    else:
        starts = offsets[:-1] if include_last_offset else offsets
        if starts.size and (
            starts[0] != 0 or (xp.diff(starts) < 0).any() or starts[-1] > index.size
        ):
            raise RuntimeError(
                f"embedding_bag: offsets {offsets.tolist()} must start at 0, not decrease and "
                f"stay within the input's {index.size} indices"
            )
        # as PyTorch, the last bag runs to the end of the input (whatever a last offset says)
        bag, count = xp.searchsorted(starts, positions, side="right") - 1, starts.size
    members = bag == xp.arange(count)[:, None]
    return members if padding_idx is None else members & (index != padding_idx)


def _check_bag_indices(index, n: int) -> None:
    outside = (index < 0) | (index >= n)
    if outside.any():
        i = int(outside.argmax())
        raise RuntimeError(
            f"embedding_bag: Index {i} of input takes value {index[i]} which is not in the valid "
            f"range [0, {n})"
        )


def _any_member(members):
    return members.any(1, keepdims=True)


def _bag_scale(members, mean: bool, dtype):
    """(B, T) weights that sum (or average, ``mean``) each bag's rows; an empty bag gets 0."""
    scale = members.astype(dtype)
    return scale / xp.maximum(scale.sum(1, keepdims=True), 1) if mean else scale


def renorm_embedding_rows(weight: Tensor, index, max_norm: float, norm_type: float) -> None:
    """Scale the rows of ``weight`` at ``index`` whose norm exceeds ``max_norm`` down to it
    (PyTorch divides by ``norm + 1e-7``), in place and outside autograd, as PyTorch does."""
    # NOTE: a row indexed twice is scaled twice alike from its old value and written twice;
    # PyTorch's unique rows would give a jitted step a shape decided by each batch's values
    with no_grad():
        picked = weight[index]
        norm = picked.norm(norm_type, dim=-1, keepdim=True)
        weight[index] = picked * where(norm > max_norm, max_norm / (norm + 1e-7), 1.0)


def check_embedding_index(input: Tensor, n: int, padding_idx: int | None):
    """``input``'s array after embedding's checks of its dtype, of ``padding_idx`` and of its
    values (in [0, n) for ``n`` rows; a jitted step's next batch checked too)."""
    index = input.array
    if index.dtype.kind not in "iu":
        raise RuntimeError(
            f"embedding: expected indices of an integer dtype (Long or Int), got {index.dtype.name}"
        )
    if padding_idx is not None and not -n <= padding_idx < n:
        raise AssertionError("Padding_idx must be within num_embeddings")
    capture_hook.call(_check_embedding_indices, index, n)
    return index


def _check_embedding_indices(index, n: int) -> None:
    if type(index) is MetaArray:  # no values to check, as PyTorch's meta kernels
        return
    if index.size and (index.min() < 0 or index.max() >= n):
        bad = index[(index < 0) | (index >= n)].flat[0]
        raise IndexError(
            f"embedding: index {bad} is out of range in self (num_embeddings={n}; indices must "
            f"be in [0, {n - 1}])"
        )


def _is_padding(index, padding_idx: int):
    return index[..., None] == padding_idx


def _inverse_counts(index, n: int, dtype):
    """1 / (how many times ``index`` holds each of its entries), shaped ``index.shape + (1,)``,
    in ``dtype`` (cast here, in the call a jitted step replays: a cast after it would be
    recorded as a constant, the first batch's counts)."""
    flat = index.reshape(-1)
    counts = backend.namespace(index).bincount(flat, minlength=n)[flat]
    return (1.0 / counts).reshape(index.shape + (1,)).astype(dtype, copy=False)


def _normalized_dims(input: Tensor, normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:  # (PyTorch's check: it would normalise each entry alone, to 0)
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []"
        )
    if len(shape) > input.ndim or input.shape[input.ndim - len(shape) :] != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}"
        )
    return tuple(range(input.ndim - len(shape), input.ndim))


def _check_norm_dtypes(name: str, input: Tensor, *args) -> None:
    """PyTorch's CPU normalisation kernels take the statistics and weights (the tensors among
    ``args``) in the input's dtype, or in float32 for a 16-bit input ("mixed dtype")."""
    dtype = input.array.dtype
    for t in args:
        if not isinstance(t, Tensor) or t.array.dtype is dtype or t.array.dtype == dtype:
            continue
        if t.ndim == 0:  # batch_norm's momentum, BatchNorm's float64 1/n (not a weight)
            continue
        if t.array.dtype != backend.float32 or dtype not in backend.SIXTEEN_BIT:
            raise RuntimeError(
                f"{name}: mixed dtype: the input ({input.dtype.name}) and its weights or "
                "statistics "
                f"({t.dtype.name}) must share one dtype (float32 ones may go with a 16-bit input)"
            )


@_16_bit_input_in_float32
def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the last dims (``normalized_shape``) to mean 0 and variance 1 (the biased
    variance, as PyTorch), then scale by ``weight`` and shift by ``bias``."""
    input._check_floating("layer_norm")
    dims = _normalized_dims(input, normalized_shape)
    return LayerNorm.apply(input, weight, bias, dims=len(dims), eps=eps)


@_16_bit_input_in_float32
def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float | Tensor = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims.

    In training, the batch's mean and biased variance normalise, and the running statistics
    (when given) move towards the batch's mean and *unbiased* variance by ``momentum``, in place
    (a float, or a float64 scalar tensor, as BatchNorm's cumulative ``1 / n``, which jit replays).
    Otherwise the running statistics normalise.
    """
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2-D input (N, C, ...), got {input.shape}")
    if training and eps <= 0:  # (PyTorch's checks and words: a zero variance would divide by 0)
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    channels = input.shape[1]
    _check_running_statistics(running_mean, running_var, channels)
    dims = (0, *range(2, input.ndim))
    if training:
        count = math.prod(input.shape[d] for d in dims)  # (of no channels too)
        if count == 1:  # (an empty batch passes and leaves the running statistics, as PyTorch's)
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape}"
            )
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        if running_mean is not None and running_var is not None and count:
            with no_grad():
                keep = 1 - momentum
                if isinstance(momentum, Tensor):  # BatchNorm's 1/n: rounded as a Python float's
                    keep, momentum = keep.to(running_mean.dtype), momentum.to(running_mean.dtype)
                unbiased = var.reshape(channels) * (count / (count - 1))
                new_mean = running_mean * keep + mean.reshape(channels) * momentum
                new_var = running_var * keep + unbiased * momentum
                # both checked before either is written: under vmap, batched statistics
                # cannot go into an unbatched buffer, and a refused call changes nothing
                try:
                    running_mean._refuse_a_newer_batch("copy_", new_mean)
                    running_var._refuse_a_newer_batch("copy_", new_var)
                except RuntimeError as error:
                    raise RuntimeError(
                        "batch_norm: cannot update running_mean and running_var in place (under "
                        "vmap they must be batched where the input is: stack them with "
                        f"func.stack_module_state, or use track_running_stats=False): {error}"
                    ) from error
                running_mean.copy_(new_mean)
                running_var.copy_(new_var)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed in eval mode")
        shape = (1, channels) + (1,) * (input.ndim - 2)
        centered = input - running_mean.reshape(shape)
        var = running_var.reshape(shape)
    out = _per_channel_affine(centered / (var + eps).sqrt(), weight, bias)
    # PyTorch's saves the running statistics too, so changing them raises in its backward,
    # but its own update in training is no change there (two forwards, then one backward)
    statistics = () if training else (running_mean, running_var)
    return saving(out, input, weight, *statistics, name="NativeBatchNormBackward0")


def _check_running_statistics(
    running_mean: Tensor | None, running_var: Tensor | None, channels: int
) -> None:
    """PyTorch's errors for running statistics of other than one entry per channel (checked
    before either is updated), and for ones that require grad while gradients are recorded:
    its batch norm has no derivative for them (an update in place would not be one)."""
    for name, statistic in (("running_mean", running_mean), ("running_var", running_var)):
        if statistic is None:
            continue
        if statistic.numel() != channels:
            raise RuntimeError(
                f"batch_norm: {name} should contain {channels} elements not {statistic.numel()}"
            )
        if statistic.ndim != 1:
            raise RuntimeError(
                f"batch_norm: {name} should have 1 dim of {channels} elements, got shape "
                f"{tuple(statistic.shape)}"
            )
        if statistic.requires_grad and is_grad_enabled():
            raise RuntimeError(
                f"batch_norm: the function 'native_batch_norm' is not differentiable with "
                f"respect to argument '{name}'. This input cannot have requires_grad True."
            )


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of each sample (N, C, ...) over its spatial dims, then scale and
    shift per channel. As PyTorch's, it is ``batch_norm`` of the input seen as one sample of
    N*C channels: the running statistics (when given) move towards the mean over the batch of
    each sample's statistics.

    >>> import scratchgrad as sg
    >>> out = instance_norm(sg.randn(2, 3, 4, 4))
    >>> bool(out.mean((2, 3)).abs().max() < 1e-5)
    True
    """
    if input.ndim < 3:
        raise ValueError(
            f"instance_norm: expected at least 3-D input (N, C, ...), got {input.shape}"
        )
    n, c = input.shape[:2]
    if use_input_stats and math.prod(input.shape[2:]) <= 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {input.shape}"
        )
    _check_norm_dtypes("instance_norm", input, weight, bias)
    # PyTorch's instance_norm reads (and writes back) running statistics of any dtype
    dtype = backend.float32 if input.array.dtype in backend.SIXTEEN_BIT else input.array.dtype
    stats = [
        None if s is None else s.detach().repeat(n).to(dtype) for s in (running_mean, running_var)
    ]
    # the weights inside batch_norm, as PyTorch's: a 16-bit input with float32 weights is
    # scaled in float32 and rounded once to its dtype
    affine = [None if t is None else t.repeat(n) for t in (weight, bias)]
    out = batch_norm(
        input.reshape(1, n * c, *input.shape[2:]),
        *stats,
        *affine,
        training=use_input_stats,
        momentum=momentum,
        eps=eps,
    )
    if use_input_stats:
        with no_grad():
            for running, updated in zip((running_mean, running_var), stats):
                if running is not None:
                    running.copy_(updated.reshape(n, c).mean(0))
    return out.reshape(input.shape)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = x1 @ weight[o] @ x2 + bias[o]``, with ``weight`` of shape
    (out_features, in1_features, in2_features): one matrix product with ``x1``, then a sum.

    >>> import scratchgrad as sg
    >>> bilinear(sg.ones(5, 2), sg.ones(5, 3), sg.ones(4, 2, 3)).shape
    scratchgrad.Size([5, 4])
    """
    if (
        weight.ndim != 3
        or input1.shape[-1] != weight.shape[1]
        or input2.shape[-1] != weight.shape[2]
    ):
        raise RuntimeError(
            f"bilinear: inputs of shapes {tuple(input1.shape)} and {tuple(input2.shape)} do not "
            f"match a weight of shape {tuple(weight.shape)} "
            "(out_features, in1_features, in2_features)"
        )
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(
            f"bilinear: input1 and input2 must have the same leading dims, got {input1.shape} and "
            f"{input2.shape}"
        )
    check_same_dtype("bilinear", input1, input2, weight, bias)
    out_features, in1, in2 = weight.shape
    # (..., in1) @ (in1, out*in2) -> (..., out, in2), then the product with x2 summed over in2
    mixed = (input1 @ weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(
        *input1.shape[:-1], out_features, in2
    )
    out = (mixed * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


def _per_channel_affine(out: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """``out * weight + bias``, one weight and bias for each channel (dim 1) of ``out``."""
    shape = (out.shape[1],) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


@_16_bit_input_in_float32
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample's channels (dim 1), split into ``num_groups`` groups, over each
    group's channels and spatial dims to mean 0 and variance 1 (biased, as layer norm), then
    scale and shift each channel by ``weight`` and ``bias``.

    >>> import scratchgrad as sg
    >>> out = group_norm(sg.randn(2, 4, 3), 2)
    >>> round(abs(out[0, :2].mean().item()), 4), round(out[0, :2].var(unbiased=False).item(), 3)
    (0.0, 1.0)
    """
    if input.ndim < 2:
        raise RuntimeError(
            f"group_norm: Expected at least 2 dimensions for input tensor but received {input.ndim}"
        )
    input._check_floating("group_norm")
    batch, channels = input.shape[:2]
    if batch * channels // num_groups * math.prod(input.shape[2:]) == 1:  # PyTorch's check, first
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size "
            f"{[batch * channels // num_groups, num_groups, *input.shape[2:]]}"
        )
    if channels % num_groups:
        raise RuntimeError(
            "group_norm: Expected number of channels in input to be divisible by num_groups, "
            f"but got input of shape {list(input.shape)} and num_groups={num_groups}"
        )
    for name, vector in (("weight", weight), ("bias", bias)):
        if vector is not None and vector.shape != (channels,):
            raise RuntimeError(
                f"group_norm: Expected {name} to be a vector of size equal to the number of "
                f"channels in input, but got {name} of shape {list(vector.shape)} and input of "
                f"shape {list(input.shape)}"
            )
    groups = input.reshape(batch, num_groups, math.prod(input.shape[1:]) // num_groups)
    out = LayerNorm.apply(groups, None, None, dims=1, eps=eps).reshape(input.shape)
    return _per_channel_affine(out, weight, bias)


@_computed_in_float32  # PyTorch's rms_norm promotes
def rms_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """x / sqrt(mean(x**2) + eps) over the last dims (``normalized_shape``), times ``weight``;
    ``eps`` defaults to the machine epsilon of the input's dtype, as PyTorch's.

    >>> import scratchgrad as sg
    >>> [round(v, 4) for v in rms_norm(sg.tensor([[3.0, 4.0]]), 2).tolist()[0]]
    [0.8485, 1.1314]
    """
    input._check_floating("rms_norm")
    dims = _normalized_dims(input, normalized_shape)
    if weight is not None and weight.shape != input.shape[dims[0] :]:
        raise RuntimeError(
            "rms_norm: Expected weight to be of same shape as normalized_shape, but got weight "
            f"of shape {list(weight.shape)} and normalized_shape = {list(input.shape[dims[0] :])}"
        )
    if eps is None:
        eps = float(backend.namespace(input.array).finfo(input.array.dtype).eps)
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    # the input's dtype, as PyTorch's, where the weight's differs
    return out if weight is None else (out * weight).to(input.dtype)


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Each entry divided by ``(k + alpha * mean of the squares of its ``size`` neighbouring
    channels) ** beta`` (AlexNet's normalisation, https://papers.nips.cc/paper/4824), for
    (N, C, ...) input of 3 or more dims. As PyTorch's, the window runs from ``size // 2``
    channels before to ``(size - 1) // 2`` after, zeros past the edges counted in the mean.

    >>> import scratchgrad as sg
    >>> out = local_response_norm(sg.ones(1, 3, 1), 2, alpha=1.0, beta=1.0)
    >>> [round(v, 4) for v in out.flatten().tolist()]
    [0.6667, 0.5, 0.5]
    """
    if input.ndim < 3:
        raise ValueError(
            f"local_response_norm: expected 3D or higher dimensionality input (N, C, ...), got "
            f"{input.ndim} dimensions"
        )
    if size <= 0:
        raise RuntimeError(f"local_response_norm: size should be greater than zero, got {size}")
    if input.numel() == 0:
        return input
    n, c = input.shape[:2]
    # the squares as one (N, 1, C, rest) image, averaged over windows of (size, 1); as
    # PyTorch's, with avg_pool3d past 3 dims, which autocast runs in float32
    squares = (input * input).reshape(n, 1, c, -1)
    squares = squares.pad(((0, 0), (0, 0), (size // 2, (size - 1) // 2), (0, 0)), 0.0)
    if input.ndim == 3:
        div = avg_pool2d(squares, (size, 1), stride=1)
    else:
        div = avg_pool3d(squares[..., None], (size, 1, 1), stride=1)
    div = div.reshape(input.shape)
    return input / (div * alpha + k) ** beta


# ---- attention ------------------------------------------------------------------------------


@autocast_policy("lower")
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(query @ key^T * scale + bias) @ value over the last two dims, as PyTorch's.

    ``attn_mask`` is a bool mask (True: may attend) or a float bias, broadcast to (..., L, S);
    ``is_causal`` lets position i attend to positions <= i only. Both at once only where
    PyTorch's CPU flash kernel takes the inputs (see ``_flash_kernel_takes``): its math kernel
    refuses them. A query whose every key is masked gets zeros (not NaN), as PyTorch's kernels
    give. ``enable_gqa`` lets ``key`` and ``value`` have fewer heads (dim -3) than ``query``,
    each shared by a group of query heads.

    >>> import scratchgrad as sg
    >>> q = k = v = sg.randn(2, 4, 5, 8)  # (batch, heads, length, head dim)
    >>> scaled_dot_product_attention(q, k, v, is_causal=True).shape
    scratchgrad.Size([2, 4, 5, 8])
    """
    _switches.check_sdp_kernel()  # (nn.attention.sdpa_kernel may have turned them all off)
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(
            "scaled_dot_product_attention: expected query, key and value of at least 2 dims, "
            f"got shapes {query.shape}, {key.shape} and {value.shape}"
        )
    check_same_dtype("scaled_dot_product_attention", query, key, value)
    masks = (backend.bool_, backend.float32, query.dtype)  # the mask dtypes PyTorch's takes
    # `is not None` apart: NumPy's float64 dtype equals None, so `in (None, ...)` would pass it
    if attn_mask is not None and attn_mask.dtype not in masks:
        raise RuntimeError(
            "scaled_dot_product_attention: expected attn_mask dtype to be bool or float "
            f"or to match query dtype, got {attn_mask.dtype.name} and {query.dtype.name}"
        )
    out_shape = (*query.shape[:-1], value.shape[-1])
    if key.shape[-2] == 0 or math.prod(out_shape) == 0:
        # PyTorch's: zeros, the masks and options unread (every gradient zeros)
        return query.new_zeros(out_shape) + (query.sum() + key.sum() + value.sum()) * 0
    if (
        attn_mask is not None
        and attn_mask.ndim < 2
        and _flash_kernel_reads_mask(query, key, value, attn_mask, dropout_p, enable_gqa)
    ):
        raise IndexError(  # (PyTorch's choice of kernel reads the mask's dim -2 first)
            f"scaled_dot_product_attention: an attn_mask of shape {tuple(attn_mask.shape)} "
            "has no dim -2 (4-d query, key and value take a mask of 2 dims or more)"
        )
    if (
        is_causal
        and attn_mask is not None
        and not _flash_kernel_takes(query, key, value, attn_mask, dropout_p, enable_gqa)
    ):
        raise RuntimeError(
            "scaled_dot_product_attention: explicit attn_mask should not be set when is_causal=True"
        )
    if enable_gqa:
        if min(query.ndim, key.ndim, value.ndim) < 3:  # (PyTorch's type)
            raise IndexError(
                "scaled_dot_product_attention: enable_gqa needs a head dim (-3), got shapes "
                f"{query.shape}, {key.shape} and {value.shape}"
            )
        key, value = _share_heads(key, query.shape[-3]), _share_heads(value, query.shape[-3])
    length, source = query.shape[-2], key.shape[-2]
    if scale is None:  # (inf for no dims, as PyTorch's: the scores are then 0)
        scale = 1 / math.sqrt(query.shape[-1]) if query.shape[-1] else math.inf
    scores = (query * scale) @ key.mT
    # a causal mask alone leaves every query its first key: no row is all -inf
    causal_only = is_causal and attn_mask is None
    if attn_mask is not None and attn_mask.dtype == backend.bool_:
        # a bias of 0 or -inf, made by a Tensor op so that a jitted step reads each call's mask
        attn_mask = where(attn_mask, scores.new_zeros(()), -math.inf)
    if is_causal:  # the same bias, as PyTorch's reference adds: a constant of the shapes
        module = backend.namespace(scores.array)
        allowed = module.tri(length, source, dtype=bool)
        causal = Tensor._make(module.where(allowed, 0, -math.inf).astype(scores.array.dtype))
        attn_mask = causal if attn_mask is None else attn_mask + causal
    if attn_mask is not None:
        # (a float32 mask on 16-bit scores: added in float32, rounded once, as PyTorch's add_)
        scores = (scores + attn_mask).to(scores.dtype)
    weights = scores.softmax(-1) if causal_only else _safe_softmax(scores)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return weights @ value


def _flash_kernel_takes(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor, dropout_p: float, gqa: bool
) -> bool:
    """Whether PyTorch's CPU flash attention kernel runs on these inputs (the only one of its
    CPU kernels that takes an explicit mask with ``is_causal``): those whose mask it reads
    (``_flash_kernel_reads_mask``), 2-d or 4-d, and one head dim, each input with a last-dim
    stride of 1."""
    tensors = (query, key, value)
    return (
        _flash_kernel_reads_mask(query, key, value, attn_mask, dropout_p, gqa)
        and attn_mask.ndim in (2, 4)
        and len({t.shape[-1] for t in tensors}) == 1
        and all(t.stride(-1) == 1 for t in tensors)
    )


def _flash_kernel_reads_mask(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor, dropout_p: float, gqa: bool
) -> bool:
    """Whether PyTorch's choice of CPU kernel reads ``attn_mask``'s shape for its flash kernel:
    switched on, without dropout, 4-d query, key and value of one batch size and head count
    (or ``enable_gqa``'s groups), a mask that needs no gradient."""
    tensors = (query, key, value)
    if not (_switches.sdp_enabled["flash"] and dropout_p == 0 and not attn_mask.requires_grad):
        return False
    if not all(t.ndim == 4 for t in tensors):
        return False
    heads, kv_heads = query.shape[1], key.shape[1]
    return (
        len({t.shape[0] for t in tensors}) == 1
        and value.shape[1] == kv_heads
        and (heads == kv_heads or gqa and heads % kv_heads == 0)
    )


def _safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with 0 (not NaN) in rows where every score is -inf; the
    gradient stays finite because those rows are zeroed before the softmax sees them."""
    empty = capture_hook.call(_all_neginf_rows, scores.array)
    # a recorded step masks always (the same bits when no row is empty): the next mask given
    # may empty a row
    if capture_hook.recorder is None and not empty.any():
        return scores.softmax(-1)
    rows = Tensor._make(empty)
    return scores.masked_fill(rows, 0.0).softmax(-1).masked_fill(rows, 0.0)


def _all_neginf_rows(scores):
    return backend.namespace(scores).isneginf(scores).all(-1, keepdims=True)


def _share_heads(x: Tensor, heads: int) -> Tensor:
    """(..., H_kv, S, E) -> (..., heads, S, E): each key/value head repeated for its group."""
    kv_heads = x.shape[-3]
    if heads % kv_heads:
        raise RuntimeError(
            f"scaled_dot_product_attention: {heads} query heads are not a multiple of "
            f"{kv_heads} key/value heads"
        )
    lead, (s, e) = x.shape[:-3], x.shape[-2:]
    grouped = x.unsqueeze(-3).expand(*lead, kv_heads, heads // kv_heads, s, e)
    return grouped.reshape(*lead, heads, s, e)


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """``nn.MultiheadAttention``'s computation on its weights, as PyTorch's: ``query`` (L, N,
    E) or one sequence (L, E), ``key`` and ``value`` (S, N, E_k) and (S, N, E_v). Returns the
    output as ``query`` and the weights (N, L, S) averaged over the heads (or (N, heads, L,
    S)), None unless ``need_weights``. Masks as the module's: True in a bool ``attn_mask`` (L,
    S) or (N * heads, L, S) or ``key_padding_mask`` (N, S) means "may not attend", a float
    mask is added to the scores. ``bias_k``/``bias_v`` (1, 1, E) and ``add_zero_attn`` append
    a key and value every query may attend to; ``static_k``/``static_v`` (N * heads, S, E /
    heads) replace the projected keys and values.

    >>> import scratchgrad as sg
    >>> x, w = sg.randn(5, 2, 4), sg.randn(12, 4)
    >>> out, weights = multi_head_attention_forward(
    ...     x, x, x, 4, 2, w, None, None, None, False, 0.0, sg.eye(4), None)
    >>> out.shape, weights.shape
    (scratchgrad.Size([5, 2, 4]), scratchgrad.Size([2, 5, 5]))
    """
    _check_attention_dims(query, key, value, key_padding_mask, attn_mask)
    _warn_mismatched(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "multi_head_attention_forward: need attn_mask if specifying the is_causal hint "
            "(nn.Transformer.generate_square_subsequent_mask makes one)"
        )
    # PyTorch's: without weights to return or a padding mask to merge, the hint replaces the
    # mask (unread, unchecked), and attention is causal over every key, bias_k's and the zero
    # one included, aligned to the first (scaled_dot_product_attention's is_causal)
    is_causal = is_causal and key_padding_mask is None and not need_weights
    if is_causal:
        attn_mask = None
    for name, mask in (("key_padding_mask", key_padding_mask), ("attn_mask", attn_mask)):
        if mask is not None and mask.dtype != backend.bool_ and not mask.is_floating_point():
            raise AssertionError(  # PyTorch's type: an integer mask is neither kind
                f"multi_head_attention_forward: only bool and floating types of {name} are "
                f"supported, got {mask.dtype.name}"
            )
    if key.shape[:-1] != value.shape[:-1] or not (
        use_separate_proj_weight or key.shape == value.shape
    ):
        raise AssertionError(
            f"multi_head_attention_forward: key of shape {key.shape} does not match value of "
            f"shape {value.shape}"
        )
    batched = query.ndim == 3
    if not batched:  # one sequence: a batch of one
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    length, batch, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"multi_head_attention_forward: was expecting embedding dimension of "
            f"{embed_dim_to_check}, but got {embed_dim}"
        )
    if embed_dim % num_heads:
        raise AssertionError(
            f"multi_head_attention_forward: embed_dim {embed_dim} not divisible by num_heads "
            f"{num_heads}"
        )
    if use_separate_proj_weight:
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        weights = in_proj_weight.chunk(3)
    biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
    q, k, v = (linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))
    mask = _merged_mask(attn_mask, key_padding_mask, batch, num_heads, length, k.shape[0], q.dtype)
    extra = 0
    if bias_k is not None:  # one learned key and value appended to every sequence's
        k = cat([k, bias_k.expand(1, batch, -1)])
        v = cat([v, bias_v.expand(1, batch, -1)])
        extra += 1
    q, k, v = (_split_heads(t, num_heads) for t in (q, k, v))  # (N, heads, L or S, E / heads)
    if static_k is not None:
        k = static_k.reshape(batch, num_heads, *static_k.shape[1:])
    if static_v is not None:
        v = static_v.reshape(batch, num_heads, *static_v.shape[1:])
    if add_zero_attn:  # and a zero key and value
        k, v = (cat([t, t.new_zeros((*t.shape[:2], 1, t.shape[3]))], 2) for t in (k, v))
        extra += 1
    if mask is not None and extra:  # every query may attend to them
        mask = pad(mask, (0, extra))
    dropout_p = dropout_p if training else 0.0
    if need_weights:
        scores = (q * (1 / math.sqrt(q.shape[-1]))) @ k.mT
        weights = (scores if mask is None else scores + mask).softmax(-1)
        out = dropout(weights, dropout_p) @ v
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        weights = None
        out = scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal)
    out = linear(
        out.permute(2, 0, 1, 3).reshape(length, batch, embed_dim), out_proj_weight, out_proj_bias
    )
    if not batched:
        return out.squeeze(1), None if weights is None else weights.squeeze(0)
    return out, weights


def _split_heads(t: Tensor, heads: int) -> Tensor:
    """(S, N, E) -> (N, heads, S, E / heads)."""
    length, batch, embed_dim = t.shape
    return t.reshape(length, batch, heads, embed_dim // heads).permute(1, 2, 0, 3)


def _check_attention_dims(query, key, value, key_padding_mask, attn_mask) -> None:
    """PyTorch's checks (and its error type) of ``multi_head_attention_forward``'s dims: a
    batched (3-D) or unbatched (2-D) query, key and value as the query, a key padding mask
    (N, S) or (S,), an attention mask 2-D or 3-D."""
    if query.ndim not in (2, 3):
        raise AssertionError(
            "multi_head_attention_forward: query should be unbatched 2D or batched 3D, got shape "
            f"{query.shape}"
        )
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(
            f"multi_head_attention_forward: for a query of shape {query.shape}, expected key and "
            f"value of {query.ndim} dims, got shapes {key.shape} and {value.shape}"
        )
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(
            f"multi_head_attention_forward: for a query of shape {query.shape}, expected a "
            f"key_padding_mask of {query.ndim - 1} dims, got shape {key_padding_mask.shape}"
        )
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise AssertionError(
            "multi_head_attention_forward: expected attn_mask to be 2-D or 3-D, got shape "
            f"{attn_mask.shape}"
        )


def _merged_mask(attn_mask, key_padding_mask, batch, heads, length, source, dtype):
    """Both masks of ``multi_head_attention_forward`` as one float bias of shape (N or 1,
    heads or 1, L or 1, S), or None."""
    mask = None
    if attn_mask is not None:
        mask = _as_bias(attn_mask, dtype)
        if attn_mask.shape == (batch * heads, length, source):
            mask = mask.reshape(batch, heads, length, source)
        elif attn_mask.shape != (length, source):
            raise RuntimeError(
                f"multi_head_attention_forward: attn_mask of shape {tuple(attn_mask.shape)} "
                f"should be {(length, source)} or {(batch * heads, length, source)}"
            )
    if key_padding_mask is not None:
        if key_padding_mask.shape != (batch, source):
            raise AssertionError(  # (PyTorch's type)
                f"multi_head_attention_forward: key_padding_mask of shape "
                f"{key_padding_mask.shape} should be {(batch, source)}"
            )
        padding = _as_bias(key_padding_mask, dtype).reshape(batch, 1, 1, source)
        mask = padding if mask is None else mask + padding
    return mask


def _warn_mismatched(mask: Tensor | None, name: str, other: Tensor | None, other_name: str):
    """PyTorch's deprecation warning for two masks of different dtypes (a bool padding mask
    beside a float attention mask, as ``generate_square_subsequent_mask`` makes)."""
    if mask is not None and other is not None and mask.dtype != other.dtype:
        warnings.warn(
            f"Support for mismatched {name} and {other_name} is deprecated. Use same type for "
            "both instead.",
            stacklevel=3,
        )


def _as_bias(mask: Tensor, dtype) -> Tensor:
    """A bool mask (True: masked out) as a float bias of 0 and -inf, by a Tensor op so that a
    jitted step reads each call's mask; a float mask as it is."""
    if mask.dtype == backend.bool_:
        return where(mask, -math.inf, mask.new_zeros((), dtype=dtype))
    return mask.to(dtype)


# ---- distances ------------------------------------------------------------------------------


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm over ``dim`` (a norm below ``eps`` counts as
    ``eps``), so that each slice along ``dim`` has norm 1.

    >>> import scratchgrad as sg
    >>> normalize(sg.tensor([[3.0, 4.0]]))
    tensor([[0.6000, 0.8000]])
    """
    # (Tensor.norm, as PyTorch's: its error for an inf-norm over an empty dim, and its
    # gradient where a norm of 0 is not clamped)
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` (broadcast together) along ``dim``.

    As PyTorch's, each is divided by its norm first (the result stays in [-1, 1]), and a norm
    below ``eps`` counts as ``eps`` with the gradient of the norm itself (PyTorch clamps it in
    place, out of the graph).

    >>> import scratchgrad as sg
    >>> round(cosine_similarity(sg.tensor([[1.0, 0.0]]), sg.tensor([[1.0, 1.0]])).item(), 4)
    0.7071
    """
    if not (backend.is_floating(x1.dtype) or backend.is_floating(x2.dtype)):
        raise RuntimeError(
            "cosine_similarity: expected common dtype to be floating point, yet got "
            f"{x1.dtype.name} and {x2.dtype.name}"
        )
    x1, x2 = broadcast_tensors(x1, x2)
    unit1, unit2 = (x / _at_least_in_value(p_norm(x, 2, dim, True), eps) for x in (x1, x2))
    return (unit1 * unit2).sum(dim)


def _at_least_in_value(x: Tensor, floor: float) -> Tensor:
    """max(x, ``floor``) in value, with the gradient of ``x`` everywhere."""
    return x + (floor - x.detach()).clamp(min=0)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim (``eps`` keeps the gradient
    finite where the two are equal), as PyTorch's.

    >>> import scratchgrad as sg
    >>> round(pairwise_distance(sg.tensor([[0.0, 0.0]]), sg.tensor([[3.0, 4.0]])).item(), 4)
    5.0
    """
    return p_norm(x1 - x2 + eps, p, -1, keepdim)


@autocast_policy("float32")
def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm distance between each pair of rows of an (N, M) ``input``: the N (N - 1)
    / 2 entries above the diagonal of ``cdist(input, input)``, row by row, as PyTorch's. p = 0
    counts the entries that differ; the gradient where two rows are equal is 0.

    >>> import scratchgrad as sg
    >>> [round(v, 4) for v in pdist(sg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()]
    [5.0, 1.0, 4.2426]
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.is_floating_point():
        raise RuntimeError(f"pdist only supports floating-point dtypes, got {input.dtype.name}")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    first, second = backend.namespace(input.array).triu_indices(input.shape[0], 1)
    return distance_norm(input[first] - input[second], p)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


@autocast_policy("float32")
def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error (``size_average`` and ``reduce``: PyTorch's deprecated spellings of
    ``reduction``, as in every loss that has them). ``weight``: one per input entry; the mean
    is then the weighted sum over the weights' sum."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_some_floating("mse_loss", input, target)
    plain = (
        weight is None
        and input.array.shape == target.array.shape
        and input.array.dtype == target.array.dtype
    )
    if reduction != "none" and plain:
        return MSELoss.apply(input, target, reduction=reduction)
    _warn_if_broadcast(input, target)
    diff = input - target
    return _reduce_weighted(diff * diff, weight, input, reduction, over_weights=True)


@autocast_policy("float32")
def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean absolute error; the gradient at a zero difference is 0. ``weight``: one per input
    entry; the mean is then the weighted sum over the weights' sum."""
    reduction = _reduction(size_average, reduce, reduction)
    _warn_if_broadcast(input, target)
    return _reduce_weighted((input - target).abs(), weight, input, reduction, over_weights=True)


@autocast_policy("float32")
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """Squared error (halved) for differences below ``delta``, linear beyond. ``weight``: one
    per input entry; the mean is then the plain mean of the weighted losses (PyTorch's, unlike
    ``mse_loss``'s and ``l1_loss``'s)."""
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta ({delta}).")
    _check_some_floating("huber_loss", input, target)
    if not input.is_floating_point():
        raise RuntimeError(
            f"huber_loss: result type {torch_name(target.dtype)} can't be cast to the desired "
            f"output type {torch_name(input.dtype)}"
        )
    _warn_if_broadcast(input, target)
    loss = _quadratic_then_linear(input - target, delta) * delta
    # NOTE: of the input's dtype, not promoted (PyTorch's kernel writes into the input's)
    return _reduce_weighted(loss.to(input.dtype), weight, input, reduction, over_weights=False)


def _reduce_weighted(loss: Tensor, weight, input: Tensor, reduction: str, over_weights: bool):
    """``_reduce`` of ``loss`` times ``weight`` (None: unweighted), PyTorch's ``weight`` of the
    regression losses: of the input's shape; a mean over the weights' sum or over the entries."""
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError(
            f"Weights and input must have the same size (weight {weight.shape}, input "
            f"{input.shape})."
        )
    loss = loss * weight
    if reduction == "mean" and over_weights:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


@autocast_policy("float32")
def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Squared error (halved, over ``beta``) for differences below ``beta``, linear beyond:
    ``huber_loss`` divided by ``beta``, and ``l1_loss`` for ``beta=0``."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta ({beta}).")
    _check_some_floating("smooth_l1_loss", input, target)
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    _warn_if_broadcast(input, target)
    return _reduce(_quadratic_then_linear(input - target, beta), reduction)


def _quadratic_then_linear(diff: Tensor, beta: float) -> Tensor:
    """diff**2 / (2 beta) where |diff| < beta, else |diff| - beta / 2, with PyTorch's gradient
    clamp(diff / beta, -1, 1): finite at infinite differences and NaN at NaN."""
    size = diff.abs()
    linear = size >= beta  # (not NaN: its gradient is diff / beta, NaN)
    # the square of 0 beyond beta, else the unused branch's gradient would be 0 * inf = NaN
    small = where(linear, 0.0, diff)
    return where(linear, size - 0.5 * beta, 0.5 * small * small / beta)


def _check_some_floating(name: str, input: Tensor, target: Tensor) -> None:
    """PyTorch's error for a regression loss of two integer tensors (it has no such kernel)."""
    if input.array.dtype.kind == "f":  # the common case, without is_floating_point's two calls
        return
    if not (input.is_floating_point() or target.is_floating_point()):
        raise NotImplementedError(f'"{name}" not implemented for {torch_name(input.dtype)}')


def _plain_class_targets(input, target, weight, ignore_index, reduction, label_smoothing) -> bool:
    """Whether the fused CrossEntropy covers this call: (N, C) logits, class indices, an
    ``ignore_index`` that no class matches (the default, -100), no class weights or
    smoothing, and a reduced loss. The targets' values are not looked at: CrossEntropy finds
    the ignored ones and checks the rest in each batch, so a jitted step takes the path of
    eager steps for every batch (it once took the path of the batches it was recorded on)."""
    labels = target.array
    if not (input.array.ndim == 2 and labels.dtype.kind in "iu" and labels.size and weight is None):
        return False
    return not (label_smoothing or reduction == "none" or 0 <= ignore_index < input.shape[1])


def _class_targets(
    target: Tensor, n_classes: int, weight: Tensor | None, ignore_index: int, dtype
) -> tuple:
    """Class indices made safe to gather with (ignored ones point at class 0), each target's
    weight (0 where ignored) as an array, and the ignored mask."""
    labels = target.array
    xp = backend.namespace(labels)
    ignored = labels == ignore_index
    safe = xp.where(ignored, 0, labels).astype(backend.int64, copy=False)  # gather's (uint8)
    check_class_indices(safe, n_classes)
    weights = xp.ones(safe.shape, dtype) if weight is None else weight.array.astype(dtype)[safe]
    return safe, xp.where(ignored, 0, weights).astype(dtype, copy=False), ignored


def _gather_index(target, n_classes, weight, ignore_index, dtype, class_dim) -> tuple:
    """``_class_targets``, its indices with the class dim that ``gather`` wants."""
    safe, weights, ignored = _class_targets(target, n_classes, weight, ignore_index, dtype)
    return backend.namespace(safe).expand_dims(safe, class_dim), weights, ignored


def _mean_over_weights(loss: Tensor, weights) -> Tensor:
    """PyTorch's weighted mean: divide by the total weight of the targets that count, in
    Tensor ops, so that a jitted step divides by each batch's total. A total of 0 (every
    target ignored or weighing 0) gives PyTorch's NaN, but with a zero gradient: that of its
    0 / 0, or, for no targets at all, the quiet NaN (sign bit clear) its kernel fills in."""
    total = (weights if isinstance(weights, Tensor) else Tensor._make(weights)).sum()
    nothing = total == 0
    nan = ZERO_BY_ZERO if loss.numel() else math.nan
    return where(nothing, nan, loss.sum() / where(nothing, 1.0, total))


def _weighted_reduce(loss: Tensor, weights, reduction: str) -> Tensor:
    """``_reduce``, but the mean over the targets' weights (None: every target weighs 1)."""
    if reduction == "mean" and weights is not None:
        return _mean_over_weights(loss, weights)
    return _reduce(loss, reduction)


def _raise_target_shape_error(shape: tuple, target: tuple, expected: tuple) -> None:
    """PyTorch's error for class-index targets of the wrong shape for an input of ``shape``,
    in the words of the kernel it takes (nll_loss, nll_loss2d, or the nd reshape)."""
    batch = target[0] if target else 0  # (PyTorch reads a 0-d target's as 0)
    if len(shape) > 1 and batch != shape[0]:
        raise ValueError(
            f"Expected input batch_size ({shape[0]}) to match target batch_size ({batch})."
        )
    if len(target) > 1 and len(shape) <= 2:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if len(shape) == 1 and len(target) == 1 and target[0] != 1:
        raise ValueError(
            f"For 1D input, 1D target must have size 1, but got target size: {target[0]}"
        )
    if len(shape) == 4:
        if len(target) != 3:
            raise RuntimeError(
                "only batches of spatial targets supported (3D tensors) but got targets of "
                f"dimension: {len(target)}"
            )
        raise RuntimeError(f"size mismatch (got input: {list(shape)} , target: {list(target)}")
    raise RuntimeError(f"Expected target size {list(expected)}, got {list(target)}")


def _check_class_targets(name: str, input: Tensor, target: Tensor, weight) -> int:
    """PyTorch's checks of class-index targets (and class weights), with its error types;
    returns the class dim."""
    if input.array.ndim == 0:
        raise ValueError(f"{name}: Expected 1 or more dimensions (got 0)")
    # (the kind first: is_floating_point costs two calls, and every cross_entropy pays this)
    if input.array.dtype.kind != "f" and not input.is_floating_point():
        raise NotImplementedError(f'"{name}" not implemented for {torch_name(input.dtype)}')
    class_dim = 0 if input.array.ndim == 1 else 1
    expected = input.array.shape[:class_dim] + input.array.shape[class_dim + 1 :]
    if target.array.shape != expected and not _one_target_in_a_vector(input, target):
        _raise_target_shape_error(input.array.shape, target.array.shape, expected)
    if target.array.dtype not in (backend.int64, backend.uint8):  # not int32, as PyTorch's
        raise RuntimeError(
            f"{name}: expected target dtype to be Long or Byte, but got "
            f"{torch_name(target.dtype)} (probability targets must have the input's shape)"
        )
    if weight is not None:  # (the three checks pass None: each call is the cost)
        _check_class_weight(name, weight, input.array.shape[class_dim])
        check_same_dtype(name, input, weight)
        _refuse_grad("nll_loss_forward", weight=weight)
    return class_dim


def _one_target_in_a_vector(input: Tensor, target: Tensor) -> bool:
    """Whether ``target`` is a class index in a vector of one for logits of shape (C,), which
    PyTorch's kernels take as its 0-d index (see ``_loss_of_one_target``)."""
    return input.array.ndim == 1 and target.array.shape == (1,)


def _loss_of_one_target(input: Tensor, target: Tensor, loss: Callable) -> Tensor:
    """``loss(index)`` of logits (C,) and a class index in a vector of one, as PyTorch's: that
    of the 0-d index, 0-d whatever the reduction; but where C is not 1, PyTorch's backward
    refuses the target's shape, so the result's backward raises its error (and vmap's
    forward does, as PyTorch's, where either is batched)."""
    shapes = list(input.shape), list(target.shape)
    if vmapped("_nll", input, target) is not None:  # (vmap's version of nll would take them)
        raise RuntimeError(
            "size mismatch (got input: torch.Size({}), target: torch.Size({}))".format(*shapes)
        )
    out = loss(target.reshape(()))
    if input.shape[0] == 1 or not (is_grad_enabled() and input.requires_grad):
        return out
    message = "size mismatch (got input: {}, target: {})".format(*shapes)
    return WithoutDerivative.apply(input, out.detach(), message=message, name="NllLossBackward0")


def _refuse_grad(name: str, **arguments: Tensor | None) -> None:
    """PyTorch's error for an argument that requires grad (with grad mode on) where ``name``
    has no derivative for it (class weights, a soft margin's target), rather than silently
    differentiate it."""
    for argument, tensor in arguments.items():
        if tensor is not None and tensor.requires_grad and is_grad_enabled():
            raise RuntimeError(
                f"The function '{name}' is not differentiable with respect to argument "
                f"'{argument}'. This input cannot have requires_grad True."
            )


def _check_class_weight(name: str, weight: Tensor | None, n_classes: int) -> None:
    if weight is not None and weight.shape != (n_classes,):
        raise RuntimeError(
            f"{name}: weight should hold one entry for each of the {n_classes} classes, got "
            f"shape {weight.shape}"
        )


@autocast_policy("float32")
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log likelihood of class indices, given log-probabilities ``input`` of shape
    (C,), (N, C) or (N, C, d1, ...). ``weight`` rescales each class; targets equal to
    ``ignore_index`` contribute nothing; the mean divides by the total weight of the rest.
    For (C,), a target of shape (1,) is taken as its one index, as PyTorch's forward (whose
    backward then raises, unless C is 1)."""
    reduction = _reduction(size_average, reduce, reduction)
    class_dim = _check_class_targets("nll_loss", input, target, weight)
    if target.array.ndim == input.array.ndim:  # (C,) and (1,): see _loss_of_one_target
        return _loss_of_one_target(
            input,
            target,
            lambda index: nll_loss(input, index, weight, None, ignore_index, None, reduction),
        )
    loss, weights, _ = _nll(input, target, class_dim, weight, ignore_index)
    return _named_as_nll(_weighted_reduce(loss, weights, reduction), input.ndim, reduction)


def _named_as_nll(out: Tensor, ndim: int, reduction: str) -> Tensor:
    """``out``, the loss ``_nll`` and ``_weighted_reduce`` composed, its node named as PyTorch's
    for an input of ``ndim`` dims: nll_loss's (1 or 2 dims), else nll_loss2d's, whose result
    PyTorch views back to the targets' shape unless reduced or 4-d."""
    if ndim <= 2:
        return named_backward(out, "NllLossBackward0")
    if ndim == 4 or reduction != "none":
        return named_backward(out, "NllLoss2DBackward0")
    return named_backward(out, "ViewBackward0")


def _nll(log_probs: Tensor, target: Tensor, class_dim: int, weight, ignore_index: int) -> tuple:
    """Each target's weighted negative log-likelihood (not reduced), each target's weight as an
    array (0 where ignored), and the ignored mask: what nll_loss and cross_entropy share."""
    # under vmap, vmap's version (per-member targets or weights; its errors for batched ones)
    batched = vmapped("_nll", log_probs, target, weight)
    if batched is not None:
        return batched(log_probs, target, class_dim, weight, ignore_index)
    # computed from the targets' values: a jitted step computes them again at each replay
    index, weights, ignored = capture_hook.call(
        _gather_index,
        target,
        log_probs.shape[class_dim],
        weight,
        ignore_index,
        log_probs.dtype,
        class_dim,
    )
    picked = log_probs.gather(class_dim, Tensor._make(index)).squeeze(class_dim)
    weighted = picked * Tensor._make(weights)
    # PyTorch's kernel takes the reduced path for logits (C,), even unreduced: it sums the one
    # loss from 0, so that a loss of 0 is +0.0 (-log p alone is -0.0, as a batch's stays)
    loss = 0.0 - weighted if class_dim == 0 else -weighted
    # an ignored target's loss is 0 even where its log-probability is infinite or NaN (a weight
    # of 0 would make that NaN), as PyTorch's, which skips it
    return where(Tensor._make(ignored), 0.0, loss), weights, ignored


@autocast_policy("float32")
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between logits ``input`` (C,), (N, C) or (N, C, d1, ...) and ``target``:
    class indices (the input's shape without dim C) or class probabilities (the input's shape).
    For (C,), a target of shape (1,) is taken as its one index, as PyTorch's forward (whose
    backward then raises).

    Computed from the fused, stable ``log_softmax``. ``label_smoothing`` mixes the target with
    the uniform distribution; ``weight``, ``ignore_index`` and ``reduction`` are as PyTorch's.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    >>> round(cross_entropy(x, sg.tensor([2, -100])).item(), 4)
    0.4076
    """
    reduction = _reduction(size_average, reduce, reduction)
    if label_smoothing > 1.0:  # NOTE: a negative one is no smoothing, as PyTorch's (unchecked)
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    # probabilities where the target has the input's shape, as PyTorch's (else class indices)
    probabilities = input.array.ndim > 0 and target.array.shape == input.array.shape
    if probabilities:
        _check_probability_target(input, target, ignore_index, weight)
        class_dim = 0 if input.ndim == 1 else 1
    else:  # class weights of another dtype: an error there, as PyTorch's (probabilities promote)
        class_dim = _check_class_targets("cross_entropy", input, target, weight)
        if target.array.ndim == input.array.ndim:  # (C,) and (1,): see _loss_of_one_target
            return _loss_of_one_target(
                input,
                target,
                lambda index: _smoothing_refused(
                    cross_entropy(input, index, weight, None, ignore_index, None, reduction),
                    label_smoothing,
                ),
            )
        if _plain_class_targets(input, target, weight, ignore_index, reduction, label_smoothing):
            # fused, see below
            return CrossEntropy.apply(input, target, reduction=reduction, ignore_index=ignore_index)
    n_classes = input.shape[class_dim]
    class_weight = None
    if weight is not None:  # shaped to broadcast along the class dim
        class_weight = weight.reshape((n_classes,) + (1,) * (input.ndim - class_dim - 1))
    # cross entropy is the negative log-likelihood of the log-softmax (CrossEntropy in one node)
    logp = input.log_softmax(class_dim)
    if probabilities:
        if label_smoothing > 0:  # mixed with the uniform target
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target if class_weight is None else logp * target * class_weight
        return _negated_sum(terms, class_dim, reduction)
    loss, weights, ignored = _nll(logp, target, class_dim, weight, ignore_index)
    nll = _named_as_nll(_weighted_reduce(loss, weights, reduction), input.ndim, reduction)
    if label_smoothing <= 0:
        return nll
    # mixed with the loss against the uniform target, -sum_c w_c log p_c / C (0 where ignored),
    # each reduced first (the mean over the same weights), in PyTorch's order
    spread = logp if class_weight is None else logp * class_weight
    uniform = _weighted_reduce(where(ignored, 0.0, -spread.sum(class_dim)), weights, reduction)
    return (1 - label_smoothing) * nll + uniform * (label_smoothing / n_classes)


def _negated_sum(terms: Tensor, class_dim: int, reduction: str) -> Tensor:
    """The loss of probability targets from its ``terms`` (log p * target), in PyTorch's
    order: negated after the sum, its mean that over the count of targets (so one class gives
    -0.0 as PyTorch's, and the node is NegBackward0 or DivBackward1 as PyTorch's)."""
    if reduction == "none":
        return -terms.sum(class_dim)
    total = terms.sum()
    if reduction == "sum":
        return -total
    count = terms.numel() // terms.shape[class_dim] if terms.numel() else 0
    if not count:  # no targets: NaN, as PyTorch's
        return -(total + math.nan)
    return named_backward(-total / count, "DivBackward1")  # (PyTorch's C++ divides by a Scalar)


def _smoothing_refused(loss: Tensor, label_smoothing: float) -> Tensor:
    """``loss``, of a class index in a vector of one, unless it is smoothed: PyTorch's sum of
    the 0-d loss and the smoothing term of the (1,) target fails (after its checks)."""
    if label_smoothing > 0:
        raise RuntimeError("output with shape [] doesn't match the broadcast shape [1]")
    return loss


def _check_probability_target(input: Tensor, target: Tensor, ignore_index: int, weight) -> None:
    if not target.is_floating_point():
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, "
            f"got {torch_name(target.dtype)}"
        )
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    _check_class_weight("cross_entropy", weight, input.shape[0 if input.ndim == 1 else 1])


def _warn_if_broadcast(input: Tensor, target: Tensor) -> None:
    """PyTorch's warning for a regression loss whose target broadcasts against its input
    (a (N, 1) output against (N,) targets makes an (N, N) loss: a silent wrong result)."""
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=4,  # past the loss and its wrapper (argument types and autocast)
        )


def _check_same_size(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )


@autocast_policy("float32")
def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """-(y log p + (1 - y) log(1 - p)) for probabilities ``input``; each log is clamped at
    -100, as PyTorch, so a probability of exactly 0 or 1 gives a finite loss."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_same_size(input, target)
    check_same_dtype("binary_cross_entropy", input, target)
    # (a jitted step's next batch checked too)
    capture_hook.call(_check_probabilities, input._checked_values(), "input")
    capture_hook.call(_check_probabilities, target._checked_values(), "target")
    _refuse_grad("binary_cross_entropy", weight=weight)
    loss = BinaryCrossEntropy.apply(input, target)
    # NOTE: the weight takes the loss's dtype, not promoting it (PyTorch's kernel)
    return _reduce(loss if weight is None else loss * weight.to(loss.dtype), reduction)


def _check_probabilities(probabilities, name: str) -> None:
    inside = (probabilities >= 0) & (probabilities <= 1)  # NaN is outside too
    if not inside.all():
        hint = "; for logits use binary_cross_entropy_with_logits" if name == "input" else ""
        raise RuntimeError(
            f"binary_cross_entropy: all elements of {name} should be between 0 and 1, got "
            f"{probabilities[~inside].flat[0]}{hint}"
        )


@autocast_policy("float32")
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy of sigmoid(``input``), computed stably from the logits:
    (1 - y) x + softplus(-x), with softplus(-x) = -log sigmoid(x) a fused primitive (exact
    gradient sigmoid(x) - y everywhere, also at x = 0). ``pos_weight`` weighs positives."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    if not target.is_floating_point():
        raise RuntimeError(
            f"binary_cross_entropy_with_logits: result type {input.dtype.name} can't be cast to "
            "the "
            f"desired output type {target.dtype.name} (the target must be floating point)"
        )
    _refuse_grad("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    minus_log_sigmoid = Softplus.apply(-input)
    # NOTE: both weights take the loss's dtype, not promoting it, and the loss takes the
    # target's: PyTorch's kernel computes it in place in 1 - target
    if pos_weight is not None:
        pos_weight = pos_weight.to(minus_log_sigmoid.dtype)
        minus_log_sigmoid = (1 + (pos_weight - 1) * target) * minus_log_sigmoid
    loss = ((1 - target) * input + minus_log_sigmoid).to(target.dtype)
    return _reduce(loss if weight is None else loss * weight.to(loss.dtype), reduction)


@autocast_policy("float32")
def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """The Kullback-Leibler divergence loss of log-probabilities ``input`` against
    probabilities ``target`` (log-probabilities with ``log_target``): pointwise
    ``target * (log(target) - input)``, 0 where the target is 0, as
    ``torch.nn.functional.kl_div``. "batchmean" divides the sum by ``input.size(0)``, the
    divergence per sample; "mean" divides by every element, and warns so as PyTorch does.
    ``size_average`` and ``reduce`` are PyTorch's deprecated spellings of ``reduction``.

    NOTE: where the target is 0 its gradient is ``-input`` here (the gradient of its x log x
    part taken as 0); PyTorch's is NaN (the 0 / 0 of xlogy's backward). The input's gradient
    is the same, ``-target``.

    >>> import scratchgrad as sg
    >>> log_q = sg.tensor([[0.25, 0.75]]).log()
    >>> round(kl_div(log_q, sg.tensor([[0.5, 0.5]]), reduction="batchmean").item(), 4)
    0.1438
    """
    if size_average is not None or reduce is not None:
        used = _legacy_reduction(size_average, reduce, stacklevel=4)  # past kl_div's wrapper
    else:
        if reduction == "mean":
            warnings.warn(_KL_DIV_MEAN, UserWarning, stacklevel=3)  # past kl_div's wrapper
        used = "sum" if reduction == "batchmean" else reduction
        _check_reduction(used)
    pointwise = target.exp() * (target - input) if log_target else _xlogx(target) - target * input
    loss = _reduce(pointwise, used)
    # as PyTorch, also when size_average or reduce chose the reduction
    return loss / input.shape[0] if reduction == "batchmean" and input.ndim else loss


_KL_DIV_MEAN = (  # PyTorch's words, as they are
    "reduction: 'mean' divides the total loss by both the batch size and the support size."
    "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
    "'mean' will be changed to behave the same as 'batchmean' in the next major release."
)


def _legacy_reduction(size_average: bool | None, reduce: bool | None, stacklevel: int) -> str:
    """The reduction that PyTorch's deprecated ``size_average`` and ``reduce`` name (each
    True when None), with PyTorch's warning, ``stacklevel`` frames up (the user's line)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(
        "size_average and reduce args will be deprecated, please use "
        f"reduction='{reduction}' instead.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return reduction


def _xlogx(x: Tensor) -> Tensor:
    """x * log(x), 0 where x is 0 (PyTorch's xlogy(x, x)): the log is taken of 1 there, so
    that neither the value nor the gradient is NaN."""
    return x * where(x == 0, 1.0, x).log()


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """The reduction a loss with PyTorch's deprecated ``size_average`` and ``reduce`` uses:
    theirs when either is given (with PyTorch's warning, at the user's line), else
    ``reduction``, checked."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce, stacklevel=5)  # past the loss's wrapper
    if reduction not in ("mean", "sum", "none"):  # (_check_reduction's test, without its call:
        _check_reduction(reduction)  # every loss call pays this function)
    return reduction


@autocast_policy("float32")
def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """1 - cos(x1, x2) where ``target`` is 1, max(0, cos(x1, x2) - ``margin``) where it is -1
    (and 0 for any other target, as PyTorch's), for (N, D) inputs and (N,) targets or (D,)
    inputs and a 0-d target. The cosine is PyTorch's: 1e-12 added to each squared norm.

    >>> import scratchgrad as sg
    >>> x1, x2 = sg.tensor([[1.0, 0.0], [1.0, 0.0]]), sg.tensor([[0.0, 1.0], [1.0, 1.0]])
    >>> [round(v, 4) for v in cosine_embedding_loss(x1, x2, sg.tensor([1, -1]),
    ...                                             reduction="none").tolist()]
    [1.0, 0.7071]
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.ndim > 1:
        raise RuntimeError(
            "cosine_embedding_loss: 0D or 1D target tensor expected, multi-target not supported"
        )
    if not input1.ndim == input2.ndim == target.ndim + 1:
        raise RuntimeError(
            f"cosine_embedding_loss: {target.ndim}D target tensor expects {target.ndim + 1}D "
            f"input tensors, but found inputs with sizes {list(input1.shape)} and "
            f"{list(input2.shape)}."
        )
    dim = target.ndim
    squares = ((input1 * input1).sum(dim) + 1e-12) * ((input2 * input2).sum(dim) + 1e-12)
    cos = (input1 * input2).sum(dim) / squares.sqrt()
    similar = where(target == 1, 1 - cos, 0.0)
    return _reduce(similar + where(target == -1, (cos - margin).clamp(min=0), 0.0), reduction)


@autocast_policy("float32")
def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, -target * (x1 - x2) + ``margin``): ``target`` 1 asks for x1 ranked above x2 (by
    at least the margin), -1 for x2 above x1. The three broadcast together.

    >>> import scratchgrad as sg
    >>> margin_ranking_loss(sg.tensor([1.0, 1.0]), sg.tensor([2.0, 0.0]), sg.tensor([1, 1]))
    tensor(0.5000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@autocast_policy("float32")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """max(0, d(anchor, positive) - d(anchor, negative) + ``margin``), d the
    ``pairwise_distance`` (``p``, ``eps``) over the last dim. ``swap``: the negative's distance
    is the smaller of its distances to the anchor and to the positive.

    >>> import scratchgrad as sg
    >>> a, pos, neg = sg.tensor([[0.0, 0.0]]), sg.tensor([[0.0, 1.0]]), sg.tensor([[0.0, 1.5]])
    >>> round(triplet_margin_loss(a, pos, neg).item(), 4)
    0.5
    """
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "triplet_margin_loss: The anchor, positive, and negative tensors are expected to "
            f"have the same number of dimensions, but got: anchor {anchor.ndim}D, positive "
            f"{positive.ndim}D, and negative {negative.ndim}D inputs"
        )
    to_positive = pairwise_distance(anchor, positive, p, eps)
    to_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        to_negative = to_negative.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + to_positive - to_negative).clamp(min=0), reduction)


@autocast_policy("float32")
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """The negative log likelihood of counts ``target`` under Poisson distributions of rate
    ``input``, without the constant log(target!): ``exp(input) - target * input`` for a log
    rate (``log_input``), else ``input - target * log(input + eps)``. ``full`` adds Stirling's
    approximation of log(target!), where the target is above 1. The two broadcast together.

    NOTE: where ``full`` and the target is 0, the Stirling term adds 0 to the target's
    gradient here (it is ``-input`` or ``-log(input + eps)``, as without ``full``); PyTorch's
    is NaN (0 * log 0 in the Stirling term, which it masks only in value).

    >>> import scratchgrad as sg
    >>> poisson_nll_loss(sg.tensor([0.0, 1.0]), sg.tensor([1.0, 2.0]), reduction="none")
    tensor([1.0000, 0.7183])
    """
    reduction = _reduction(size_average, reduce, reduction)
    rate = input.exp() if log_input else input
    loss = rate - target * (input if log_input else (input + eps).log())
    if full:
        counted = target > 1
        safe = where(counted, target, 2.0)  # no log of 0 (or below), not even in a gradient
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(counted, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """The negative log likelihood of ``target`` under Gaussians of mean ``input`` and variance
    ``var``, without the constant 0.5 log(2 pi) unless ``full``: ``0.5 * (log(var) + (input -
    target) ** 2 / var)``, each variance taken as at least ``eps`` (in value only: its gradient
    is that of ``var`` itself, as PyTorch's, which clamps it out of the graph).

    ``var`` is a float, or a tensor of the input's shape, or of that shape with the last dim
    left out or one dim of size 1 (one variance shared along it), as PyTorch's rules.

    >>> import scratchgrad as sg
    >>> gaussian_nll_loss(sg.tensor([0.0, 1.0]), sg.tensor([1.0, 1.0]), 1.0, reduction="none")
    tensor([0.5000, 0.0000])
    """
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(input.shape, var)
    elif not isinstance(var, Tensor):
        raise TypeError(
            f"gaussian_nll_loss: var must be a Tensor or a float, got {type(var).__name__}"
        )
    else:
        capture_hook.call(_check_variances, var.array)  # a jitted step's next batch, too
    var = _shared_variance(input, var)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not valid")
    if not var.is_floating_point():
        raise RuntimeError(
            f"gaussian_nll_loss: var must be floating point (PyTorch clamps it to eps in place), "
            f"got {var.dtype.name}"
        )
    var = _at_least_in_value(var, eps)
    diff = input - target
    loss = 0.5 * (var.log() + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _check_variances(var) -> None:
    if (var < 0).any():
        raise ValueError("var has negative entry/entries")


def _shared_variance(input: Tensor, var: Tensor) -> Tensor:
    """``var`` shaped to broadcast against ``input`` by PyTorch's rules: the input's shape;
    that shape without its last dim (unsqueezed here); or the input's number of dims, differing
    in one dim where ``var`` has size 1."""
    if var.shape == input.shape:
        return var
    if var.shape == input.shape[:-1]:
        return var.unsqueeze(-1)
    # PyTorch's test: the sizes of var where the two differ add up to 1
    if var.ndim == input.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
        return var
    raise ValueError(
        f"var is of incorrect size: {var.shape} does not fit an input of shape {input.shape}"
    )


@autocast_policy("float32")
def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy of the logits ``input`` against 0/1 labels ``target`` for each
    class (the last dim), weighted by ``weight`` and averaged over the classes: one loss per
    sample, which ``reduction`` reduces.

    >>> import scratchgrad as sg
    >>> round(multilabel_soft_margin_loss(sg.tensor([[0.0, 2.0]]), sg.tensor([[0, 1]])).item(), 4)
    0.41
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input.ndim == 0:  # PyTorch's words: it reads the number of classes as input.size(-1)
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    # as PyTorch's: the sum is over the input's last dim, also where the target broadcast more
    return _reduce(loss.sum(input.ndim - 1) / input.shape[-1], reduction)


@autocast_policy("float32")
def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """The two-class logistic loss log(1 + exp(-target * input)), targets 1 or -1; the target
    broadcasts to the input's shape.

    NOTE: computed as softplus(-target * input), finite where PyTorch's log1p(exp(...)) is
    infinite (a margin below about -89 in float32, -710 in float64).

    >>> import scratchgrad as sg
    >>> round(soft_margin_loss(sg.tensor([2.0, -1.0]), sg.tensor([1.0, 1.0])).item(), 4)
    0.7201
    """
    reduction = _reduction(size_average, reduce, reduction)
    shape = broadcast_shapes(input.shape, target.shape)
    if shape != input.shape:
        raise RuntimeError(
            f"soft_margin_loss: output with shape {input.shape} doesn't match the broadcast "
            f"shape {shape} of the input and the target {target.shape}"
        )
    _refuse_grad("soft_margin_loss", target=target)
    # NOTE: the target takes the input's dtype, as PyTorch's result does
    return _reduce(Softplus.apply(-target.to(input.dtype) * input), reduction)


@autocast_policy("float32")
def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """The multi-class hinge loss of scores ``input`` (N, C) or (C,) for class indices
    ``target`` (N,) or 0-d: for each sample, the sum over the classes i other than the target
    y of ``weight[y] * max(0, margin - x[y] + x[i]) ** p``, over C (p 1 or 2).

    NOTE: an empty batch's mean is NaN and its sum 0, as other losses'; PyTorch's returns its
    output uninitialised there.

    >>> import scratchgrad as sg
    >>> round(multi_margin_loss(sg.tensor([[0.1, 0.2, 0.4, 0.8]]), sg.tensor([3])).item(), 4)
    0.325
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    check_same_dtype("multi_margin_loss", input, weight)
    x = _margin_scores(input, target, weight)
    labels = target.reshape(-1, 1)
    capture_hook.call(_check_targets, labels.array, x.shape[1])
    hinge = (margin - x.gather(1, labels) + x).relu()  # relu: no gradient at the kink
    hinge = hinge * hinge if p == 2 else hinge
    if weight is not None:
        hinge = hinge * weight[labels]
    others = labels != arange(x.shape[1], device=labels.device)  # the classes i != y
    loss = where(others, hinge, 0.0).sum(1) / x.shape[1]
    return _reduce(loss.reshape(target.shape), reduction)


def _margin_scores(input: Tensor, target: Tensor, weight: Tensor | None) -> Tensor:
    """``multi_margin_loss``'s input as (N, C), after PyTorch's checks of the shapes."""
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )
    x = input.reshape(-1 if input.ndim == 2 else 1, input.shape[-1] if input.ndim else 1)
    if target.ndim > 1 or target.numel() != x.shape[0]:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{x.shape[0]}], but got "
            f"{list(target.shape)}. Input has shape {list(input.shape)}."
        )
    if target.array.dtype != backend.int64:  # not int32, as PyTorch's
        raise RuntimeError(
            f"multi_margin_loss: expected scalar type Long but found {torch_name(target.dtype)}"
        )
    if weight is not None and weight.numel() != x.shape[1]:
        raise RuntimeError(
            f"inconsistent weight size, expected {x.shape[1]} but got {list(weight.shape)}"
        )
    return x


def _check_targets(labels, n_classes: int) -> None:
    """PyTorch's error for a class index outside [0, ``n_classes``) (a jitted step's next
    batch, too)."""
    if labels.size and not all_below(labels, n_classes):
        raise RuntimeError(f"target out of range: some class index is not in [0, {n_classes})")


@autocast_policy("float32")
def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """x where ``target`` is 1, max(0, ``margin`` - x) where it is -1 (``input`` holds
    distances, ``target`` says similar or not); for any other target both terms, as PyTorch's.
    The two broadcast together.

    >>> import scratchgrad as sg
    >>> hinge_embedding_loss(sg.tensor([0.25, 0.25]), sg.tensor([1, -1]), reduction="none")
    tensor([0.2500, 0.7500])
    """
    reduction = _reduction(size_average, reduce, reduction)
    dissimilar = where(target != 1, (margin - input).clamp(min=0), 0.0)
    return _reduce(dissimilar + where(target != -1, input, 0.0), reduction)


@autocast_policy("float32")
def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """The multi-label hinge loss of scores ``input`` (N, C), (C,) or 0-d: ``target`` (of the
    input's shape, int64) lists each sample's classes, ended by the first -1 (what follows is
    not read, but must be in [-1, C) too, as PyTorch's). For each sample, the sum over its
    listed classes j and the classes i it does not list of ``max(0, 1 - x[j] + x[i])``, over
    C; a class listed twice counts twice, as PyTorch's.

    NOTE: an empty batch's mean is NaN and its sum 0, as other losses'; PyTorch's returns its
    output uninitialised there.

    >>> import scratchgrad as sg
    >>> x = sg.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> round(multilabel_margin_loss(x, sg.tensor([[3, 0, -1, 1]])).item(), 4)
    0.85
    """
    reduction = _reduction(size_average, reduce, reduction)
    x = _multilabel_scores(input, target)
    labels = target.reshape(x.shape)
    capture_hook.call(_check_multilabel_targets, labels.array, x.shape[1])
    listed = (labels == -1).cumsum(1) == 0  # the entries before the first -1
    classes = arange(x.shape[1], device=labels.device)
    is_target = ((labels.unsqueeze(2) == classes) & listed.unsqueeze(2)).any(1)  # (N, C)
    picked = x.gather(1, where(listed, labels, 0)).unsqueeze(2)  # x[j] of each listed j
    hinge = (1 - picked + x.unsqueeze(1)).relu()  # (N, j, i); relu: no gradient at the kink
    counted = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = where(counted, hinge, 0.0).sum((1, 2)) / x.shape[1]
    return _reduce(loss.reshape(input.shape[:1] if input.ndim == 2 else ()), reduction)


def _multilabel_scores(input: Tensor, target: Tensor) -> Tensor:
    """``multilabel_margin_loss``'s input as (N, C), after PyTorch's checks of the shapes."""
    if input.ndim > 2 or (input.ndim >= 1 and input.shape[-1] == 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )
    x = input.reshape(-1 if input.ndim == 2 else 1, input.shape[-1] if input.ndim else 1)
    if input.ndim == 2:
        fits = target.shape == input.shape
    else:
        fits = target.ndim <= 1 and target.numel() == x.shape[1]
    if not fits:
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    if target.array.dtype != backend.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name}")
    return x


def _check_multilabel_targets(labels, n_classes: int) -> None:
    """PyTorch's error for a target outside [-1, ``n_classes``), read or not (a jitted step's
    next batch, too)."""
    if labels.size and not all_below(labels + 1, n_classes + 1):
        raise RuntimeError("argument #2 'target' is out of range")


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(0, d(anchor, positive) - d(anchor, negative) + ``margin``), d the
    ``distance_function`` (``pairwise_distance`` by default): any callable of two tensors
    returning a tensor of distances. ``swap``: the negative's distance is the smaller of its
    distances to the anchor and to the positive.

    >>> import scratchgrad as sg
    >>> a, pos, neg = sg.tensor([[0.0, 0.0]]), sg.tensor([[0.0, 1.0]]), sg.tensor([[0.0, 1.5]])
    >>> l1 = lambda x, y: (x - y).abs().sum(-1)
    >>> triplet_margin_with_distance_loss(a, pos, neg, distance_function=l1).item()
    0.5
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and "
            f"negative {negative.ndim}D inputs"
        )
    distance = pairwise_distance if distance_function is None else distance_function
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = to_negative.minimum(distance(positive, negative))
    return _reduce((margin + to_positive - to_negative).clamp(min=0), reduction)


# ---- tensor utilities -----------------------------------------------------------------------


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors along a new last dim; ``num_classes=-1`` means max + 1.

    >>> import scratchgrad as sg
    >>> one_hot(sg.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    batched = vmapped("_one_hot", tensor)  # per-member labels: vmap's own version
    if batched is not None:
        return batched(tensor, num_classes)
    labels = tensor.array
    if labels.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of an integer dtype.")
    if labels.size == 0 and num_classes <= 0:  # PyTorch's check of any count below 1
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    if num_classes == -1:
        if capture_hook.recorder is not None:
            capture_hook.recorder.refuse("one_hot(num_classes=-1), its shape read from the values")
        num_classes = int(labels.max()) + 1
    return Tensor._make(capture_hook.call(_one_hot, labels, num_classes))


def _one_hot(labels, num_classes: int):
    """The one-hot rows, after the checks of the labels (a jitted step's next batch, too)."""
    if labels.size and labels.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if labels.size and labels.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = backend.namespace(labels).arange(num_classes)
    return (labels[..., None] == classes).astype(backend.int64)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """The channels (dim 1) of an (N, C, ...) input, split into ``groups`` groups, interleaved
    (ShuffleNet's, https://arxiv.org/abs/1707.01083): channel ``g * C // groups + i`` moves to
    ``i * groups + g``.

    >>> import scratchgrad as sg
    >>> channel_shuffle(sg.arange(6).reshape(1, 6, 1), 2).flatten().tolist()
    [0, 3, 1, 4, 2, 5]
    """
    if input.ndim <= 2:
        raise RuntimeError(
            "channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{list(input.shape)}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups."
        )
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)


def pad(
    input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
) -> Tensor:
    """Pad PyTorch's way: ``pad`` lists (before, after) for the last dim first, then the one
    before it, and so on; negative amounts crop.

    ``mode`` "constant" fills with ``value``; "reflect" mirrors the entries next to the edge
    (the edge itself not repeated), "replicate" repeats the edge, "circular" wraps around. These
    three pad the last 1 to 3 dims of a batched or unbatched input (N, C, ...) or (C, ...).

    >>> import scratchgrad as sg
    >>> out = pad(sg.ones(1, 2), (1, 0, 0, 1))  # last dim: 1 before; dim 0: 1 after
    >>> out.tolist()
    [[0.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    >>> x = sg.tensor([[[1.0, 2.0, 3.0]]])
    >>> [pad(x, (2, 1), mode).tolist()[0][0] for mode in ("reflect", "replicate", "circular")]
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0], [1.0, 1.0, 1.0, 2.0, 3.0, 3.0], [2.0, 3.0, 1.0, 2.0, 3.0, 1.0]]
    """
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(  # (PyTorch's type)
            f"pad: padding length must be even and at most 2 * {input.ndim}, got {len(pad)}"
        )
    widths = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        widths[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode != "constant":  # (before circular's cropping, as PyTorch's)
        _check_pad_mode(input, mode, len(pad) // 2)
    if mode in ("reflect", "replicate"):  # NOTE: as PyTorch, they mirror about the uncropped edge
        if mode == "reflect" and len(pad) == 6:  # (reflection_pad3d is not on autocast's list)
            return _pad_by_index(input, widths, mode, 3)
        return _mirror_pad(input, widths, mode, len(pad) // 2)
    out = input
    if any(w < 0 for pair in widths for w in pair):
        for dim, ((before, after), size) in enumerate(zip(widths, input.shape)):
            if size + min(before, 0) + min(after, 0) < 0:  # PyTorch's narrow refuses it too
                raise RuntimeError(
                    f"pad: padding ({before}, {after}) of dim {dim} crops more than its {size} "
                    "entries"
                )
        crop = tuple(slice(max(-b, 0), n - max(-a, 0)) for (b, a), n in zip(widths, input.shape))
        out = out[crop]
    widths = [(max(b, 0), max(a, 0)) for b, a in widths]
    if mode != "constant":
        return _pad_by_index(out, widths, mode, len(pad) // 2)
    return out.pad(widths, 0.0 if value is None else value)


def _check_pad_mode(input: Tensor, mode: str, padded_dims: int) -> None:
    """A padding ``mode`` other than "constant" is known and pads the last 1 to 3 dims of a
    batched or unbatched input."""
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}"
        )
    if not 1 <= padded_dims <= 3 or input.ndim not in (padded_dims + 1, padded_dims + 2):
        raise NotImplementedError(
            f"pad: {mode} padding of the last {padded_dims} dims needs a {padded_dims + 1}-D or "
            f"{padded_dims + 2}-D input, got shape {tuple(input.shape)}"
        )


@autocast_policy("float32")  # PyTorch's CPU list has reflection_pad1d/2d, replication_pad1d/2d/3d
def _mirror_pad(input: Tensor, widths: list, mode: str, padded_dims: int) -> Tensor:
    """Reflect or replicate padding, which autocast runs in float32."""
    return _pad_by_index(input, widths, mode, padded_dims)


def _pad_by_index(input: Tensor, widths: list, mode: str, padded_dims: int) -> Tensor:
    """Reflect, replicate or circular padding as indexing: each padded dim is read at the
    positions its mode maps the padded range onto (the gradient adds up at repeated ones)."""
    channels = input.ndim - padded_dims - 1  # (PyTorch's kernels: only the batch may be empty)
    if mode != "circular" and 0 in input.shape[channels:]:
        raise RuntimeError(
            f"pad: {mode} padding needs an input with no empty dim from dim {channels} on, got "
            f"shape {tuple(input.shape)}"
        )
    sizes = [n + before + after for n, (before, after) in zip(input.shape, widths)]
    if mode != "circular" and max(sizes[-padded_dims:]) < 1:  # (PyTorch's kernels empty one)
        raise RuntimeError(
            f"pad: input of shape {tuple(input.shape)} is too small for {mode} padding: "
            f"calculated output sizes {sizes[-padded_dims:]}"
        )
    out = input
    for dim, (before, after) in enumerate(widths):
        if before or after:
            index = _pad_index(out.shape[dim], before, after, mode, dim)
            out = out[(slice(None),) * dim + (index,)]
    return out


def _pad_index(size: int, before: int, after: int, mode: str, dim: int):
    """Which entry of a dim of ``size`` each padded position reads."""
    if size + before + after < 0:  # reached by reflect and replicate only
        raise RuntimeError(
            f"pad: input (size {size} of dim {dim}) is too small for {mode} padding "
            f"({before}, {after}): calculated output size {size + before + after}"
        )
    positions = xp.arange(-before, size + after)  # a negative amount crops
    if mode == "replicate":
        return xp.clip(positions, 0, size - 1)
    if mode == "circular":
        if max(before, after) > size:
            raise RuntimeError(
                f"pad: circular padding ({before}, {after}) of dim {dim} wraps around more than "
                f"once (size {size})"
            )
        return positions % size
    if max(before, after) >= size:
        raise RuntimeError(
            f"pad: reflect padding ({before}, {after}) of dim {dim} should be less than the "
            f"dim's size {size}"
        )
    mirrored = xp.abs(positions)
    return xp.where(mirrored >= size, 2 * (size - 1) - mirrored, mirrored)


# convolution and pooling live in their own file, next to the primitives they use
from scratchgrad.nn.conv_functional import (  # noqa: E402, F401  (re-exported)
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    unfold,
)

# the CTC loss, composed in its own file, nn/ctc.py
from scratchgrad.nn.ctc import ctc_loss  # noqa: E402, F401  (re-exported)

# fractional max pooling, in its own file, nn/fractional.py
from scratchgrad.nn.fractional import (  # noqa: E402, F401  (re-exported)
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)

# sampling at arbitrary points (the spatial transformer's), nn/sampling.py
from scratchgrad.nn.sampling import affine_grid, grid_sample  # noqa: E402, F401  (re-exported)

# resizing lives in the file of its layers, nn/upsampling.py
from scratchgrad.nn.upsampling import (  # noqa: E402, F401  (re-exported)
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

# Every public function here: a non-Tensor where a Tensor is expected is PyTorch's TypeError
# naming the function and the argument, not "'list' object has no attribute 'array'".
_HERE = (
    __name__,
    "scratchgrad.nn.conv_functional",
    "scratchgrad.nn.upsampling",
    "scratchgrad.nn.sampling",
    "scratchgrad.nn.ctc",
    "scratchgrad.nn.fractional",
)
for _name, _function in list(globals().items()):
    if (
        not _name.startswith("_")
        and inspect.isfunction(_function)
        and _function.__module__ in _HERE
    ):
        globals()[_name] = names_bad_arguments(_function)
