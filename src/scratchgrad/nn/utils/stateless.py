"""``torch.nn.utils.stateless``: ``functional_call`` under its old name (deprecated in PyTorch
for ``torch.func.functional_call``, which it calls, with PyTorch's FutureWarning)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


def functional_call(
    module: Module,
    parameters_and_buffers: Mapping[str, Tensor],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``scratchgrad.func.functional_call``, with PyTorch's deprecation warning.

    >>> import warnings
    >>> import scratchgrad as sg
    >>> layer = sg.nn.Linear(1, 1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     functional_call(layer, {"weight": sg.ones(1, 1), "bias": sg.zeros(1)}, sg.ones(1, 1))
    tensor([[1.]])
    """
    from scratchgrad.func import functional_call as call  # a layer up: func builds on nn

    warnings.warn(
        "This API is deprecated as of PyTorch 2.0 and will be removed in a future version of "
        "PyTorch. Please use torch.func.functional_call instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return call(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )
