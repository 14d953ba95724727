"""The nn functions PyTorch also exports at its root (``torch.conv2d``, ``torch.layer_norm``,
``torch.max_pool2d``, ...), with the root's own signatures where they differ from
``nn.functional``'s: losses take ``reduction`` as an int (0 none, 1 mean, 2 sum) and
default to none, as PyTorch's root functions do; ``embedding`` takes the weight first,
``batch_norm`` and ``instance_norm`` take all nine arguments, the
dropouts take ``train``, and ``grid_sampler`` takes its modes as ints. Each is a thin call into
``nn.functional``; the package root re-exports them.

>>> import scratchgrad as sg
>>> sg.layer_norm(sg.tensor([[1.0, 3.0]]), [2]).tolist()
[[-0.9999949932098389, 0.9999949932098389]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scratchgrad.nn import functional as F
from scratchgrad.tensor import Tensor

# the same arguments as nn.functional's
conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = (
    F.conv_transpose1d,
    F.conv_transpose2d,
    F.conv_transpose3d,
)
pixel_shuffle, pixel_unshuffle, channel_shuffle = (
    F.pixel_shuffle,
    F.pixel_unshuffle,
    F.channel_shuffle,
)
native_channel_shuffle = channel_shuffle
cosine_similarity, pairwise_distance, pdist = F.cosine_similarity, F.pairwise_distance, F.pdist
prelu, hardshrink, bilinear = F.prelu, F.hardshrink, F.bilinear
Tensor.prelu, Tensor.hardshrink = prelu, hardshrink  # methods too, as PyTorch's
selu, celu, rrelu, threshold = F.selu, F.celu, F.rrelu, F.threshold
avg_pool1d, adaptive_avg_pool1d = F.avg_pool1d, F.adaptive_avg_pool1d

_REDUCTIONS = ("none", "mean", "sum")  # PyTorch's at::Reduction enum


def _reduction(op: str, reduction: int) -> str:
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{op}(): argument 'reduction' must be int, not {type(reduction).__name__}")
    if reduction not in (0, 1, 2):
        raise ValueError(f"{op}(): {reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def selu_(input: Tensor) -> Tensor:
    """``torch.selu_``: ``nn.functional.selu`` written into ``input``."""
    return F.selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``torch.celu_``: ``nn.functional.celu`` written into ``input``."""
    return F.celu(input, alpha, inplace=True)


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """``torch.rrelu_``: ``nn.functional.rrelu`` written into ``input``."""
    return F.rrelu(input, lower, upper, training, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``torch.threshold_``: ``nn.functional.threshold`` written into ``input``."""
    return F.threshold(input, threshold, value, inplace=True)


def relu_(input: Tensor) -> Tensor:
    """``torch.relu_``: ``nn.functional.relu`` written into ``input``."""
    return input.relu_()


def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """``torch.embedding``: the rows of ``weight`` at ``indices`` (the weight first; a
    ``padding_idx`` of -1 means none)."""
    padding_idx = None if padding_idx == -1 else padding_idx
    return F.embedding(
        indices, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse
    )


def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    """``torch.layer_norm``: ``nn.functional``'s, with the root's arguments."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    """``torch.group_norm``: ``nn.functional``'s, with the root's arguments."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``torch.rms_norm``: ``nn.functional``'s, with the root's arguments."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """``torch.batch_norm``: all nine arguments, the weight and bias before the statistics."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """``torch.instance_norm``: ``nn.functional``'s, with the root's arguments."""
    return F.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout``: ``nn.functional``'s, with the root's arguments."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout_``: ``nn.functional.alpha_dropout`` written into ``input``."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_alpha_dropout``: ``nn.functional``'s, with the root's arguments."""
    return F.feature_alpha_dropout(input, p, train)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Whole feature maps (everything after the first two dims) zeroed together, as
    ``torch.feature_dropout``."""
    dropout = {3: F.dropout1d, 4: F.dropout2d, 5: F.dropout3d}.get(input.ndim)
    if dropout is None:
        raise RuntimeError(
            f"feature_dropout: expected a 3-D, 4-D or 5-D input (batched feature maps), got "
            f"{input.ndim}-D"
        )
    return dropout(input, p, train)


def kl_div(
    input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False
) -> Tensor:
    """``torch.kl_div``: ``nn.functional``'s, with the root's arguments."""
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """``torch.margin_ranking_loss``: ``nn.functional``'s, with the root's arguments."""
    return F.margin_ranking_loss(
        input1, input2, target, margin, reduction=_reduction("margin_ranking_loss", reduction)
    )


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int
) -> Tensor:
    """``torch.poisson_nll_loss``: ``nn.functional``'s, with the root's arguments."""
    return F.poisson_nll_loss(
        input,
        target,
        log_input,
        full,
        eps=eps,
        reduction=_reduction("poisson_nll_loss", reduction),
    )


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = 0,
) -> Tensor:
    """``torch.triplet_margin_loss``: ``nn.functional``'s, with the root's arguments."""
    return F.triplet_margin_loss(
        anchor,
        positive,
        negative,
        margin,
        p,
        eps,
        swap,
        reduction=_reduction("triplet_margin_loss", reduction),
    )


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0
) -> Tensor:
    """``torch.hinge_embedding_loss``: ``nn.functional``'s, with the root's arguments."""
    return F.hinge_embedding_loss(
        input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction)
    )


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 0
) -> Tensor:
    """``torch.cosine_embedding_loss``: ``nn.functional``'s, with the root's arguments."""
    return F.cosine_embedding_loss(
        input1, input2, target, margin, reduction=_reduction("cosine_embedding_loss", reduction)
    )


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int = 0,
) -> Tensor:
    """``torch.binary_cross_entropy_with_logits``: ``nn.functional``'s, an int reduction."""
    return F.binary_cross_entropy_with_logits(
        input,
        target,
        weight,
        reduction=_reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight=pos_weight,
    )


def _stride(stride: Any) -> Any:
    """The root pools' stride: an empty list (their default) means the kernel size."""
    return None if isinstance(stride, (list, tuple)) and len(stride) == 0 else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False) -> Tensor:
    """``torch.max_pool1d``: ``nn.functional``'s, with the root's arguments."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False) -> Tensor:
    """``torch.max_pool2d``: ``nn.functional``'s, with the root's arguments."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False) -> Tensor:
    """``torch.max_pool3d``: ``nn.functional``'s, with the root's arguments."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(
    input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
) -> tuple[Tensor, Tensor]:
    """``torch.max_pool1d_with_indices``: ``nn.functional``'s, with the root's arguments."""
    stride = _stride(stride)
    return F.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def adaptive_max_pool1d(input: Tensor, output_size: int) -> tuple[Tensor, Tensor]:
    """``torch.adaptive_max_pool1d``: the values and their indices (always both)."""
    return F.adaptive_max_pool1d_with_indices(input, output_size)


_SAMPLING_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")


def grid_sampler(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``torch.grid_sampler``: ``nn.functional.grid_sample`` with the modes as ints (bilinear,
    nearest, bicubic; zeros, border, reflection)."""
    if interpolation_mode not in range(3) or padding_mode not in range(3):
        raise RuntimeError(
            f"grid_sampler(): expected interpolation_mode and padding_mode in 0, 1, 2, got "
            f"{interpolation_mode} and {padding_mode}"
        )
    return F.grid_sample(
        input,
        grid,
        _SAMPLING_MODES[interpolation_mode],
        _PADDING_MODES[padding_mode],
        align_corners,
    )


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """``torch.affine_grid_generator``: ``nn.functional``'s, with the root's arguments."""
    return F.affine_grid(theta, size, align_corners)
