"""Folding a batch norm in eval mode into the convolution or linear layer before it, as
``torch.nn.utils.fusion``: the fused layer computes ``bn(layer(x))`` with one product, the
usual step before exporting or serving a trained model."""

from __future__ import annotations

import copy
from typing import TypeVar

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.nn.module import Module
from scratchgrad.nn.parameter import Parameter
from scratchgrad.tensor import Tensor

M = TypeVar("M", bound=Module)


def fuse_conv_bn_eval(conv: M, bn: Module, transpose: bool = False) -> M:
    """A copy of ``conv`` whose weight and bias include the eval-mode batch norm ``bn``
    (``transpose``: for a transposed convolution, whose output channels are its weight's
    dim 1).

    >>> import scratchgrad as sg
    >>> conv, bn = sg.nn.Conv2d(1, 2, 3).eval(), sg.nn.BatchNorm2d(2).eval()
    >>> x = sg.randn(1, 1, 5, 5)
    >>> bool((fuse_conv_bn_eval(conv, bn)(x) - bn(conv(x))).abs().max() < 1e-5)
    True
    """
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight,
        fused.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
        transpose,
    )
    return fused


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The fused convolution's ``(weight, bias)``: each output channel's filter scaled by
    ``bn_w / sqrt(bn_rv + eps)``, and the bias moved by the running mean and ``bn_b``; in
    the convolution's dtypes (its weight's where it has no bias), as PyTorch's."""
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    with no_grad():
        conv_b = bn_rm.new_zeros(bn_rm.shape) if conv_b is None else conv_b
        rsqrt = (bn_rv + bn_eps).rsqrt()
        bn_w = 1 if bn_w is None else bn_w
        shape = [1, -1] if transpose else [-1, 1]
        weight = conv_w * (bn_w * rsqrt).reshape(shape + [1] * (conv_w.ndim - 2))
        # in PyTorch's order: a float64 bias is not rounded to a float32 batch norm's scale
        bias = (conv_b - bn_rm) * rsqrt * bn_w + (0 if bn_b is None else bn_b)
    return (
        Parameter(weight.to(conv_w.dtype), conv_w.requires_grad),
        Parameter(bias.to(bias_dtype), conv_b.requires_grad),
    )


def fuse_linear_bn_eval(linear: M, bn: Module) -> M:
    """A copy of ``linear`` whose weight and bias include the eval-mode batch norm ``bn``
    (a ``BatchNorm1d`` over its outputs, or over one feature)."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1"
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """The fused linear layer's ``(weight, bias)``: each output row scaled by
    ``bn_w / sqrt(bn_rv + eps)``, and the bias moved by the running mean and ``bn_b``; in
    the linear layer's dtypes (its weight's where it has no bias), as PyTorch's."""
    bias_dtype = linear_w.dtype if linear_b is None else linear_b.dtype
    with no_grad():
        linear_b = bn_rm.new_zeros(bn_rm.shape) if linear_b is None else linear_b
        scale = bn_w * (bn_rv + bn_eps).rsqrt()
        weight = linear_w * scale.unsqueeze(-1).to(linear_w.dtype)
        bias = ((linear_b - bn_rm) * scale + bn_b).to(bias_dtype)
    return Parameter(weight, linear_w.requires_grad), Parameter(bias, linear_b.requires_grad)


def _check_eval(layer: Module, bn: Module) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("fusion needs the batch norm's running statistics")
