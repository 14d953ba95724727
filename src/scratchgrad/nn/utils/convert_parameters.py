"""``torch.nn.utils.parameters_to_vector`` and ``vector_to_parameters``: a model's parameters as
one flat vector and back (for second-order methods, evolution strategies, line searches)."""

from __future__ import annotations

from collections.abc import Iterable

from scratchgrad.tensor import Tensor, cat


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and joined into one vector, differentiable (a ``view(-1)`` of
    each, then ``cat``), as PyTorch's.

    >>> import scratchgrad as sg
    >>> fc = sg.nn.Linear(2, 1)
    >>> parameters_to_vector(fc.parameters()).shape
    scratchgrad.Size([3])
    """
    device = None
    flat = []
    for param in parameters:
        device = _same_device(param, device)
        flat.append(param.view(-1))
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter's data its slice of ``vec`` (in ``parameters``' order), reshaped to
    the parameter's shape; as PyTorch, the parameters then share ``vec``'s memory, autograd
    does not see the change, and entries of ``vec`` past the last parameter are ignored.

    >>> import scratchgrad as sg
    >>> fc = sg.nn.Linear(2, 1)
    >>> vector_to_parameters(sg.tensor([1.0, 2.0, 3.0]), fc.parameters())
    >>> fc.weight.tolist(), fc.bias.tolist()
    ([[1.0, 2.0]], [3.0])
    """
    if not isinstance(vec, Tensor):
        kind = type(vec)
        name = kind.__qualname__
        if kind.__module__ != "builtins":
            name = f"{kind.__module__}.{name}"
        raise TypeError(f"expected scratchgrad.Tensor, but got: {name}")
    device = None
    start = 0
    for param in parameters:
        device = _same_device(param, device)
        size = param.numel()
        param.data = vec[start : start + size].view_as(param).data
        start += size


def _same_device(param: Tensor, device: int | None) -> int:
    """The device index of the first parameter (-1 on the CPU); raises for a parameter on
    another device (PyTorch's check)."""
    if device is not None and param.get_device() != device:
        raise TypeError(
            "Found two parameters on different devices, this is currently not supported."
        )
    return param.get_device()
