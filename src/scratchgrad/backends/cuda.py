"""``torch.backends.cuda``'s switches: kept, and without effect on the numbers (the CuPy device
ignores them), except that attention needs one of the kernels it may use on: scratchgrad's
``scaled_dot_product_attention`` computes what PyTorch's math kernel and its CPU flash kernel do,
so with both of those off it raises as PyTorch's does on the CPU (``torch.nn.attention``'s
``sdpa_kernel`` sets these switches too).
"""

import contextlib
import warnings
from collections.abc import Iterator
from types import SimpleNamespace

from scratchgrad import backend

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)

# Which attention kernels PyTorch may choose from (all at first).
sdp_enabled = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    return backend.is_available("cuda")


def enable_flash_sdp(enabled: bool) -> None:
    sdp_enabled["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    sdp_enabled["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    sdp_enabled["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    sdp_enabled["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return sdp_enabled["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return sdp_enabled["mem_efficient"]


def math_sdp_enabled() -> bool:
    return sdp_enabled["math"]


def cudnn_sdp_enabled() -> bool:
    return sdp_enabled["cudnn"]


def check_sdp_kernel() -> None:
    """PyTorch's error when no kernel that attention can run on here is allowed."""
    if not (sdp_enabled["math"] or sdp_enabled["flash"]):
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is likely due "
            "to turning off both the math kernel and the fused kernels."
        )


@contextlib.contextmanager
def allowed_sdp_kernels(**enabled: bool) -> Iterator[None]:
    """The switches set to ``enabled`` (``flash=``, ``math=``...) inside the block, restored
    after it."""
    before = dict(sdp_enabled)
    sdp_enabled.update(enabled)
    try:
        yield
    finally:
        sdp_enabled.update(before)


def sdp_kernel(
    enable_flash: bool = True,
    enable_math: bool = True,
    enable_mem_efficient: bool = True,
    enable_cudnn: bool = True,
) -> contextlib.AbstractContextManager:
    """The deprecated context manager, with PyTorch's FutureWarning (see
    ``nn.attention.sdpa_kernel``)."""
    warnings.warn(
        "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager "
        "will be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context "
        "manager, with updated signature.",
        FutureWarning,
        stacklevel=2,
    )
    return allowed_sdp_kernels(
        flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn
    )
