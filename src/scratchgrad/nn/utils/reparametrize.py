"""Weight and spectral normalisation in PyTorch's legacy hook form (``torch.nn.utils.
weight_norm`` and ``spectral_norm``): the parameter is replaced by the parameters (and buffers)
it is computed from, and a forward pre-hook sets the module's attribute of that name to the
computed weight before each ``forward``, so the gradient reaches those parameters. Names, shapes
and ``state_dict`` keys are PyTorch's.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.nn import functional as F
from scratchgrad.nn.module import Module
from scratchgrad.nn.parameter import Parameter
from scratchgrad.tensor import RemovableHandle, Tensor, wrap_dim

M = TypeVar("M", bound=Module)


class _WeightHook:
    """A forward pre-hook that computes the module's ``name`` before each forward."""

    kind = ""  # the function's name, in errors

    def __init__(self, name: str) -> None:
        self.name = name

    def refuse_second(self, module: Module) -> None:
        """Refuse a second hook of this kind on the same parameter, as PyTorch."""
        if _find(module, type(self), self.name) is not None:
            raise RuntimeError(
                f"Cannot register two {self.kind} hooks on the same parameter {self.name}"
            )

    @classmethod
    def take_off(cls, module: Module, name: str) -> _WeightHook:
        """Remove the hook of this kind on ``name`` and return it (a ValueError if none)."""
        entry = _find(module, cls, name)
        if entry is None:
            raise ValueError(f"{cls.kind} of '{name}' not found in {module}")
        RemovableHandle(module, "_forward_pre_hooks", entry).remove()
        return entry[0]


def _find(module: Module, kind: type, name: str) -> tuple | None:
    """The entry (hook, with_kwargs) of ``module``'s hook of ``kind`` on ``name``, if any."""
    for entry in module._forward_pre_hooks:
        if isinstance(entry[0], kind) and entry[0].name == name:
            return entry
    return None


# ---- weight norm -----------------------------------------------------------------------------


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim`` (kept with size 1 elsewhere), as
    PyTorch's ``norm_except_dim``: ``dim=-1`` means over all of ``v`` (a 0-d norm), not the
    last dim."""
    if dim == -1:
        return (v * v).sum().sqrt()
    dim = wrap_dim(dim, v.ndim)
    others = tuple(d for d in range(v.ndim) if d != dim)
    # a vector (no other dims) keeps each entry's norm: sum(()) would add all of them up
    return ((v * v).sum(others, keepdim=True) if others else v * v).sqrt()


class WeightNorm(_WeightHook):
    """``weight_norm``'s hook: ``name = name_g * name_v / ||name_v||``."""

    kind = "weight_norm"

    def __init__(self, name: str, dim: int | None) -> None:
        super().__init__(name)
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Weight normalisation (Salimans and Kingma, https://arxiv.org/abs/1602.07868): the
    parameter ``name`` becomes ``name_g`` (its norm over every dim but ``dim``; over all of it
    for ``dim=None`` or -1, as PyTorch) and ``name_v`` (its direction), and ``name`` is
    recomputed as ``name_g * name_v / ||name_v||`` before each forward. Returns the module.

    Deprecated in favour of ``parametrizations.weight_norm``, with PyTorch's FutureWarning.

    >>> import warnings
    >>> from scratchgrad import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     layer = weight_norm(nn.Linear(3, 4))
    >>> list(layer.state_dict()), layer.weight_g.shape
    (['bias', 'weight_g', 'weight_v'], scratchgrad.Size([4, 1]))
    """
    warnings.warn(
        "`nn.utils.weight_norm` is deprecated in favor of `nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    hook = WeightNorm(name, dim)
    hook.refuse_second(module)
    weight = getattr(module, name)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, hook.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, hook.compute_weight(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module: M, name: str = "weight") -> M:
    """Undo ``weight_norm``: ``name`` is a parameter again, holding the computed weight.

    >>> import warnings
    >>> from scratchgrad import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)  # weight_norm's
    ...     layer = weight_norm(nn.Linear(3, 4))
    >>> list(remove_weight_norm(layer).state_dict())
    ['bias', 'weight']
    """
    hook = WeightNorm.take_off(module, name)
    weight = hook.compute_weight(module).detach()
    delattr(module, name)
    del module._parameters[name + "_g"], module._parameters[name + "_v"]
    module.register_parameter(name, Parameter(weight))
    return module


# ---- spectral norm ---------------------------------------------------------------------------


class SpectralNorm(_WeightHook):
    """``spectral_norm``'s hook: ``name = name_orig / sigma``, sigma the largest singular value
    of ``name_orig`` (as a matrix with ``dim`` first) estimated by power iteration, whose
    vectors ``name_u`` and ``name_v`` (buffers) are refined in training mode only."""

    kind = "spectral_norm"

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        super().__init__(name)
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations, self.dim, self.eps = n_power_iterations, dim, eps

    def matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as (its size along ``dim``, the rest)."""
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.matrix(weight)
        if do_power_iteration:
            with no_grad():  # the buffers move in place; sigma takes copies, out of the graph
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(matrix.mT.mv(u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(matrix.mv(v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        return weight / u.dot(matrix.mv(v))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(
    module: M,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> M:
    """Spectral normalisation (Miyato et al., https://arxiv.org/abs/1802.05957): the parameter
    ``name`` becomes ``name_orig``, and before each forward ``name`` is set to ``name_orig``
    divided by its largest singular value, estimated by ``n_power_iterations`` steps of power
    iteration (in training mode only) with the buffers ``name_u`` and ``name_v``, started at
    random unit vectors. ``dim`` (default 0, 1 for the ConvTranspose layers) is the output dim.
    Returns the module.

    >>> from scratchgrad import nn
    >>> layer = spectral_norm(nn.Linear(3, 4))
    >>> list(layer.state_dict()), layer.weight_u.shape, layer.weight_v.shape
    (['bias', 'weight_orig', 'weight_u', 'weight_v'], scratchgrad.Size([4]), scratchgrad.Size([3]))
    """
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    hook = SpectralNorm(name, n_power_iterations, dim, eps)
    hook.refuse_second(module)
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
    with no_grad():
        height, width = hook.matrix(weight).shape
        u = F.normalize(weight.new_empty(height).normal_(0, 1), dim=0, eps=eps)
        v = F.normalize(weight.new_empty(width).normal_(0, 1), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module: M, name: str = "weight") -> M:
    """Undo ``spectral_norm``: ``name`` is a parameter again, holding the last computed weight
    (no power iteration).

    >>> from scratchgrad import nn
    >>> list(remove_spectral_norm(spectral_norm(nn.Linear(3, 4))).state_dict())
    ['bias', 'weight']
    """
    hook = SpectralNorm.take_off(module, name)
    with no_grad():
        weight = hook.compute_weight(module, do_power_iteration=False)
    for suffix in ("", "_u", "_v", "_orig"):
        delattr(module, name + suffix)
    module.register_parameter(name, Parameter(weight.detach()))
    return module
