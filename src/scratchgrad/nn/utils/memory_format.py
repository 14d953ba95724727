"""``torch.nn.utils``' conversions of convolution weights to a memory format: each weight is
laid out so (``Tensor.clone(memory_format=...)``), the values and parameter objects kept."""

from __future__ import annotations

from typing import Any, TypeVar

from scratchgrad.dtypes import check_memory_format
from scratchgrad.nn.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from scratchgrad.nn.module import Module

M = TypeVar("M", bound=Module)


def _convert(module: M, memory_format: Any, layers: tuple, name: str) -> M:
    """``module`` itself, the weights of its ``layers`` (its own and its children's) laid out
    in ``memory_format``, as PyTorch's: a wrong rank raises PyTorch's error."""
    check_memory_format(memory_format, None, name)
    if isinstance(module, layers):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, layers, name)
    return module


def convert_conv2d_weight_memory_format(module: M, memory_format: Any) -> M:
    """``module`` itself, its ``Conv2d`` and ``ConvTranspose2d`` weights laid out in
    ``memory_format``, as ``torch.nn.utils.convert_conv2d_weight_memory_format``."""
    name = "convert_conv2d_weight_memory_format"
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d), name)


def convert_conv3d_weight_memory_format(module: M, memory_format: Any) -> M:
    """``module`` itself, its ``Conv3d`` and ``ConvTranspose3d`` weights laid out in
    ``memory_format``, as ``torch.nn.utils.convert_conv3d_weight_memory_format``."""
    name = "convert_conv3d_weight_memory_format"
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d), name)
