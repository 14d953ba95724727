"""What every exporter needs first: the model as a straight list of layers, with shapes.

``trace`` runs the model once on an example batch (in eval mode, without gradients) and records
each layer it calls: the module, its name in the model, and the shapes of one sample going in
and coming out. It then checks that the calls form a straight line (each layer eats what the
previous one made, and the last one makes the model's output), which is what a generated C
function or ONNX graph of one node per layer can express. ``fold_batch_norms`` then merges each
BatchNorm into the Conv or Linear before it, so no exporter needs code for BatchNorm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.nn import (
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    Linear,
    MaxPool2d,
    Module,
    ModuleDict,
    ModuleList,
    Sequential,
)
from scratchgrad.tensor import Tensor

BATCH_NORMS = (BatchNorm1d, BatchNorm2d)
# the dims of a batch for the layers that also take one unbatched sample (one dim fewer)
BATCHED_RANK = {
    Conv1d: 3,
    Conv2d: 4,
    MaxPool2d: 4,
    AvgPool2d: 4,
    AdaptiveAvgPool2d: 4,
    BatchNorm2d: 4,
}
FOLDS_INTO = (Linear, Conv1d, Conv2d)


class Call(NamedTuple):
    """One call of a layer seen by ``trace``, with the version counters of its input before the
    call and of its output after it."""

    name: str
    module: Module
    x: Tensor
    out: Tensor
    version_in: int | None
    version_out: int | None


@dataclass
class Step:
    """One layer of the traced model: ``module`` maps one sample of ``in_shape`` to one of
    ``out_shape`` (the batch dim left out). ``weight`` and ``bias`` are the module's own, as
    float64 arrays, or the folded ones when a BatchNorm followed it."""

    name: str
    module: Module
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None
    folded: list[str] = field(default_factory=list)  # names of the BatchNorms merged in
    out_absmax: float = 0.0  # the largest |output| seen on the example batch (for int8)

    @property
    def kind(self) -> str:
        return type(self.module).__name__

    def describe(self) -> str:
        return f"{self.kind} '{self.name}'" if self.name else self.kind


def trace(
    model: Module, example_input: Tensor, supported: tuple[type, ...], who: str
) -> list[Step]:
    """The layers ``model`` runs on ``example_input`` (a batch), in order, BatchNorms folded.

    Every module whose type is in ``supported``, and every module without children, counts as
    a layer; other modules (``Sequential``, your own containers) are looked through. ``who``
    names the exporter in error messages.
    """
    if not isinstance(example_input, Tensor) or example_input.ndim < 1:
        raise TypeError(f"{who}: example_input must be a batch tensor (first dim is the batch)")
    calls: list[Call] = []
    layers = _layers(model, "", supported)
    modes = [(module, module.training) for module in model.modules()]  # each its own
    model.eval()
    try:
        for name, module in layers:
            _record_calls(module, name, calls, who)
        with no_grad():
            version_in = _version(example_input)
            output = model(example_input)
    finally:
        for _, module in layers:
            module.__dict__.pop("forward", None)
        for module, training in modes:  # parents first: each child then sets its own
            module.train(training)
    for name, module, *_ in calls:
        if not isinstance(module, supported):
            raise NotImplementedError(
                f"{who}: {type(module).__name__} '{name}' is not supported; supported are "
                + ", ".join(sorted(t.__name__ for t in supported))
            )
        _check_options(module, name, who)
    for call in calls:
        _check_batch(call, who)
    start = Call("", model, example_input, example_input, version_in, version_in)
    _check_straight_line(model, start, output, calls, who)
    steps = [
        Step(n, m, x.shape[1:], y.shape[1:], *_parameters(m), out_absmax=_absmax(y))
        for n, m, x, y, *_ in calls
    ]
    return fold_batch_norms(steps, who)


def _check_options(module: Module, name: str, who: str) -> None:
    """Reject the options of a supported layer that the exporters do not write (they would
    otherwise be exported as the default: silently wrong outputs)."""
    layer = f"{type(module).__name__} '{name}'"
    if getattr(module, "padding_mode", "zeros") != "zeros":
        raise NotImplementedError(
            f"{who}: {layer} has padding_mode='{module.padding_mode}'; only "
            "padding_mode='zeros' can be exported"
        )
    if getattr(module, "return_indices", False):
        raise NotImplementedError(
            f"{who}: {layer} has return_indices=True; an exported layer returns one tensor"
        )


def _check_batch(call: Call, who: str) -> None:
    """Reject a layer that merges the batch dim with others (``Flatten(0)``), or that takes the
    batch for one unbatched sample (a Conv2d or a pool on (N, H, W)): an exported layer maps
    each sample on its own."""
    x, out = call.x, call.out
    rank = BATCHED_RANK.get(type(call.module))
    if rank is not None and x.ndim != rank:
        raise NotImplementedError(
            f"{who}: {type(call.module).__name__} '{call.name}' takes the batch of shape "
            f"{tuple(x.shape)} for one unbatched sample; export needs a batch of {rank - 2}-d "
            f"samples with channels ({rank} dims)"
        )
    if out.ndim == 0 or out.shape[0] != x.shape[0]:
        raise NotImplementedError(
            f"{who}: {type(call.module).__name__} '{call.name}' turns the batch of shape "
            f"{tuple(x.shape)} into {tuple(out.shape)}; an exported layer must keep the batch "
            "dim first and map each sample on its own (Flatten's start_dim=0?)"
        )


def _layers(module: Module, name: str, supported: tuple[type, ...]) -> list[tuple[str, Module]]:
    """The layers in ``module``: containers (Sequential, ModuleList, ModuleDict) and the user's
    own modules are looked through; any other scratchgrad module is one layer, supported or
    not (the Linear layers inside a TransformerEncoderLayer are its own business)."""
    own = not type(module).__module__.startswith("scratchgrad.")
    looked_through = own or isinstance(module, (Sequential, ModuleList, ModuleDict))
    if isinstance(module, supported) or not module._modules or not looked_through:
        return [(name, module)]
    return [
        layer
        for child_name, child in module._modules.items()
        if child is not None
        for layer in _layers(child, f"{name}.{child_name}" if name else child_name, supported)
    ]


def _record_calls(module: Module, name: str, calls: list, who: str) -> None:
    """Shadow ``module.forward`` by an instance attribute that logs each call in ``calls``."""
    forward = type(module).forward.__get__(module)

    def logged(x, *args, **kwargs):
        if any(a is not None and a is not False for a in (*args, *kwargs.values())):
            raise NotImplementedError(
                f"{who}: {type(module).__name__} '{name}' is called with more than its input "
                "(a mask?); an exported layer takes one tensor"
            )
        version_in = _version(x)
        out = forward(x, *args, **kwargs)
        calls.append(Call(name, module, x, out, version_in, _version(out)))
        return out

    module.__dict__["forward"] = logged


def _check_straight_line(model, start: Call, output, calls: list[Call], who: str) -> None:
    """Each layer takes the previous one's output (``start``'s for the first), as it left that
    layer (an in-place change between them, such as ``out += x``, is code no layer records),
    and the model returns the last one's output, also unchanged."""
    previous = start
    for call in calls:
        if call.x is not previous.out:
            raise NotImplementedError(
                f"{who}: the forward of {type(model).__name__} is not a straight line of "
                f"layers: the input of {type(call.module).__name__} '{call.name}' is not the "
                "output of the layer before it (a functional call, a branch or a skip "
                "connection in forward?). Make each step a module, e.g. in an nn.Sequential."
            )
        if call.version_in != previous.version_out:
            raise NotImplementedError(
                f"{who}: the forward of {type(model).__name__} is not a straight line of "
                f"layers: the input of {type(call.module).__name__} '{call.name}' was changed "
                "in place after the layer before it made it (an in-place op such as "
                "`out += x` in forward?)"
            )
        previous = call
    if output is not previous.out or _version(output) != previous.version_out:
        raise NotImplementedError(
            f"{who}: the output of {type(model).__name__} is not the output of its last layer "
            "as that layer made it (a functional call or an in-place op after it in forward?)"
        )


def _version(x) -> int | None:
    """The count of in-place changes of ``x``'s memory (None for an inference tensor, whose
    changes are not counted, and for what is not a tensor: a layer's tuple, refused later)."""
    return x._version if isinstance(x, Tensor) and not x.is_inference() else None


def _absmax(y: Tensor) -> float:
    return float(np.abs(y.numpy()).max()) if y.numel() else 0.0


def _parameters(module: Module) -> tuple[np.ndarray | None, np.ndarray | None]:
    def array(p):
        return None if p is None else np.asarray(p.detach().numpy(), dtype=np.float64)

    return array(getattr(module, "weight", None)), array(getattr(module, "bias", None))


def fold_batch_norms(steps: list[Step], who: str) -> list[Step]:
    """Merge each BatchNorm into the Conv/Linear right before it and drop it.

    In eval mode BatchNorm is ``(z - mean) / sqrt(var + eps) * gamma + beta`` per channel, an
    affine map, so ``z = W x + b`` followed by it is ``(s W) x + (s (b - mean) + beta)`` with
    ``s = gamma / sqrt(var + eps)``: the same layer with new weights (computed in float64).
    """
    folded: list[Step] = []
    for step in steps:
        if not isinstance(step.module, BATCH_NORMS):
            folded.append(step)
            continue
        bn = step.module
        before = folded[-1] if folded else None
        if before is None or not isinstance(before.module, FOLDS_INTO):
            after = f"follows {before.describe()}" if before else "is the first layer"
            raise NotImplementedError(
                f"{who}: {step.describe()} {after}; only a BatchNorm right after a Conv or "
                "Linear can be exported (it is folded into that layer's weights)"
            )
        if isinstance(before.module, Linear) and len(before.out_shape) != 1:
            raise NotImplementedError(
                f"{who}: {step.describe()} normalizes dim 1 of {before.describe()}'s output "
                f"{before.out_shape}, not its features, so it cannot be folded into it"
            )
        if bn.running_mean is None:
            raise NotImplementedError(
                f"{who}: {step.describe()} has track_running_stats=False, so eval mode uses "
                "batch statistics, which a one-sample function cannot compute"
            )
        channels = before.weight.shape[0]
        gamma = step.weight if step.weight is not None else np.ones(channels)
        beta = step.bias if step.bias is not None else np.zeros(channels)
        mean, var = (np.asarray(t.numpy(), np.float64) for t in (bn.running_mean, bn.running_var))
        scale = gamma / np.sqrt(var + bn.eps)
        bias = before.bias if before.bias is not None else np.zeros(channels)
        before.weight = before.weight * scale.reshape(-1, *[1] * (before.weight.ndim - 1))
        before.bias = (bias - mean) * scale + beta
        before.out_shape, before.out_absmax = step.out_shape, step.out_absmax
        before.folded.append(step.name)
    return folded
