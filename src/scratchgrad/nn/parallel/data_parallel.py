"""``DataParallel``: PyTorch's single-process wrapper that splits each batch over the GPUs."""

from __future__ import annotations

from typing import Any

from scratchgrad import accelerator
from scratchgrad.nn.module import Module


class DataParallel(Module):
    """``module`` wrapped as ``torch.nn.DataParallel`` wraps it on a machine without GPUs: the
    forward calls ``module`` itself, ``device_ids`` is ``[]``, and the state dict's keys start
    with ``"module."`` (load them into a DataParallel, or strip the prefix). Scripts that wrap
    their model unconditionally run unchanged on the CPU.

    Where an accelerator is available, PyTorch replicates the module over its devices and
    scatters each batch; that is not done here, and constructing one raises instead.

    >>> import scratchgrad as sg
    >>> model = sg.nn.DataParallel(sg.nn.Linear(3, 1))
    >>> model(sg.ones(2, 3)).shape, list(model.state_dict())
    (scratchgrad.Size([2, 1]), ['module.weight', 'module.bias'])
    """

    def __init__(
        self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0
    ) -> None:
        super().__init__()
        if accelerator.is_available():
            raise NotImplementedError(
                "DataParallel: splitting batches over accelerator devices is not supported; "
                "use the module itself (moved with .to(device)) instead"
            )
        self.module = module
        self.device_ids: list[int] = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(
    module: Module,
    inputs: Any,
    device_ids: Any = None,
    output_device: Any = None,
    dim: int = 0,
    module_kwargs: Any = None,
) -> Any:
    """``torch.nn.parallel.data_parallel``: ``module(*inputs)`` split over the accelerator's
    devices. Without one it raises PyTorch's RuntimeError; with one, as ``DataParallel``, it is
    not supported here."""
    if not accelerator.is_available():
        raise RuntimeError("device type could not be determined")
    raise NotImplementedError(
        "data_parallel: splitting batches over accelerator devices is not supported; "
        "call the module itself instead"
    )
