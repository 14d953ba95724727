"""``torch.nn.utils``' conversions of convolution weights to a memory format: checked and
without effect on the values, since scratchgrad keeps NumPy's layouts (``dtypes.memory_format``)."""

from __future__ import annotations

from typing import Any, TypeVar

from scratchgrad.dtypes import check_memory_format
from scratchgrad.nn.module import Module

M = TypeVar("M", bound=Module)


def convert_conv2d_weight_memory_format(module: M, memory_format: Any) -> M:
    """``module`` itself, its convolutions' weights unchanged (the format is checked)."""
    check_memory_format(memory_format, None, "convert_conv2d_weight_memory_format")
    return module


def convert_conv3d_weight_memory_format(module: M, memory_format: Any) -> M:
    """``module`` itself, its convolutions' weights unchanged (the format is checked)."""
    check_memory_format(memory_format, None, "convert_conv3d_weight_memory_format")
    return module
