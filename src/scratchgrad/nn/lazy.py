"""Lazy modules, as PyTorch's: ``LazyLinear``, ``LazyConv1d/2d/3d``,
``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d`` and ``LazyInstanceNorm1d/2d/3d`` take
their input size (``in_features``, ``in_channels``, ``num_features``) from the first input they
see, then become the ordinary module (``type(m) is nn.Linear``), initialised as that module
would be. Until then their parameters are ``UninitializedParameter`` (their running statistics
``UninitializedBuffer``): placeholders with no shape that refuse to compute.

Each lazy module is the eager one made with size 0 (so no random draws are spent) plus
``LazyModuleMixin``: a forward pre-hook that calls ``initialize_parameters(input)`` once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scratchgrad import backend
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.backend import xp
from scratchgrad.nn.batchnorm import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from scratchgrad.nn.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from scratchgrad.nn.linear import Linear
from scratchgrad.nn.parameter import Buffer, Parameter
from scratchgrad.tensor import Tensor

Size = int | Sequence[int]

_SHAPE_MESSAGE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
    "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
    "one. Call `forward` to initialize the parameters before accessing their attributes."
)
# what an uninitialized tensor still answers: its flags, dtype and device (as PyTorch's), and
# its array for the plumbing (Module.to, Function.apply: there the array refuses to compute)
_ALLOWED = {
    "dtype", "device", "requires_grad", "requires_grad_", "grad", "is_leaf", "grad_fn",
    "is_floating_point", "is_complex", "get_device", "is_cuda", "is_cpu", "materialize",
    "cls_to_become", "persistent", "array",
}  # fmt: skip
_REFUSED = {name for name in dir(Tensor) if not name.startswith("_")} - _ALLOWED


def _use_message(what: str, kind: str = "UninitializedParameter") -> str:
    return (
        f"Attempted to use an uninitialized parameter in {what}. This error happens when you "
        f"are using a `LazyModule` or explicitly manipulating `scratchgrad.nn.{kind}` objects. "
        "When using LazyModules Call `forward` with a dummy batch to initialize the parameters "
        "before calling scratchgrad functions"
    )


class _UnmaterializedArray(xp.ndarray):
    """The empty array an uninitialized tensor holds. NumPy refuses to compute with it, so an
    op reached through a function (``F.linear(x, lazy.weight)``) raises instead of computing
    on no data; ``astype`` keeps the class, so ``Module.to(dtype)`` still works.

    NOTE: a RuntimeError, not PyTorch's ValueError: ``Function.apply`` would turn a ValueError
    into a shape error, and this placeholder has no shape to report.
    """

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise RuntimeError(_use_message(f"numpy.{ufunc.__name__}", "UninitializedParameter"))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise RuntimeError(_use_message(f"numpy.{func.__name__}", "UninitializedParameter"))


def _placeholder(device: Any, dtype: Any) -> Tensor:
    dtype = backend.default_float if dtype is None else backend.to_dtype(dtype)
    array = backend.array_module(device).empty(0, dtype)
    if type(array) is xp.ndarray:  # the guard is NumPy's: on other devices only the methods'
        array = array.view(_UnmaterializedArray)
    return Tensor._make(array)


class UninitializedTensorMixin:
    """What ``UninitializedParameter`` and ``UninitializedBuffer`` share: no shape, methods
    that refuse (all but the flags, ``dtype`` and ``device``), and ``materialize``."""

    __slots__ = ()
    cls_to_become: type

    def __getattribute__(self, name: str) -> Any:
        if name in _REFUSED:
            if name in ("shape", "size", "ndim", "numel", "dim"):
                raise RuntimeError(_SHAPE_MESSAGE)
            raise ValueError(_use_message(f"Tensor.{name}", type(self).__name__))
        return object.__getattribute__(self, name)

    def materialize(self, shape: Sequence[int], device: Any = None, dtype: Any = None) -> None:
        """Give the tensor data of ``shape`` (uninitialised values), on its device and with its
        dtype unless given, and make it the class it stands for (``Parameter``, ``Buffer``).

        >>> from scratchgrad import nn
        >>> p = nn.UninitializedParameter()
        >>> p.materialize((2, 3))
        >>> type(p).__name__, p.shape
        ('Parameter', scratchgrad.Size([2, 3]))
        """
        array = self.array
        device = backend.device_of(array) if device is None else device
        dtype = array.dtype if dtype is None else backend.to_dtype(dtype)
        self.array = backend.array_module(device).empty(tuple(shape), dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __deepcopy__(self, memo: dict) -> UninitializedTensorMixin:
        if id(self) not in memo:
            memo[id(self)] = self._like()
        return memo[id(self)]


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet, as ``torch.nn.UninitializedParameter``: only
    its flags, dtype and device can be read until ``materialize(shape)`` makes it a
    ``Parameter`` (the same object, so an optimizer that holds it keeps it).

    >>> from scratchgrad import nn
    >>> nn.UninitializedParameter()
    <UninitializedParameter>
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(_placeholder(device, dtype), requires_grad)

    def _like(self) -> UninitializedParameter:
        return type(self)(self.requires_grad, self.device, self.dtype)


class UninitializedBuffer(UninitializedTensorMixin, Buffer):
    """A buffer whose shape is not known yet, as ``torch.nn.UninitializedBuffer``;
    ``materialize(shape)`` makes it a ``Buffer``.

    NOTE: PyTorch's becomes a plain ``torch.Tensor``; this one becomes ``nn.Buffer`` (a Tensor
    subclass), because a class change must keep the object's layout (its ``persistent``).

    >>> from scratchgrad import nn
    >>> buffer = nn.UninitializedBuffer()
    >>> buffer.materialize((3,))
    >>> type(buffer).__name__, buffer.shape
    ('Buffer', scratchgrad.Size([3]))
    """

    __slots__ = ()
    cls_to_become = Buffer

    def __init__(
        self,
        requires_grad: bool = False,
        device: Any = None,
        dtype: Any = None,
        persistent: bool = True,
    ) -> None:
        super().__init__(_placeholder(device, dtype), persistent=persistent)
        if requires_grad:
            self.requires_grad_()

    def _like(self) -> UninitializedBuffer:
        return type(self)(self.requires_grad, self.device, self.dtype, self.persistent)


class LazyModuleMixin:
    """Makes a module lazy, as ``torch.nn.modules.lazy.LazyModuleMixin``: its first call runs
    ``initialize_parameters(*args, **kwargs)`` (which sizes and initialises the uninitialized
    parameters from the input), then the module becomes ``cls_to_become``.

    An optimizer may be built before that call (the parameters stay the same objects), and
    ``load_state_dict`` gives the uninitialized parameters the shapes it loads.
    """

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(
            self._infer_parameters, with_kwargs=True
        )

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Size and initialise the parameters from the first input; each lazy module has one."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}"
        )

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still uninitialized.

        >>> from scratchgrad import nn
        >>> nn.LazyLinear(3).has_uninitialized_params()
        True
        """
        tensors = (*self._parameters.values(), *self._buffers.values())
        return any(is_lazy(tensor) for tensor in tensors)

    def _infer_parameters(self, module: Any, args: tuple, kwargs: dict | None = None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the last dim of its first input, as
    ``torch.nn.LazyLinear``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> fc = nn.LazyLinear(3)
    >>> fc
    LazyLinear(in_features=0, out_features=3, bias=True)
    >>> fc(sg.ones(4, 5)).shape, type(fc).__name__, fc.weight.shape
    (scratchgrad.Size([4, 3]), 'Linear', scratchgrad.Size([3, 5]))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False, device, dtype)  # no bias: it is replaced at once
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:  # loaded from a state dict before the first call
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(
                    f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                    f"in_features from self.weight: {self.weight.shape[-1]}"
                )
            self.in_features = input.shape[-1]


class _LazyConvMixin(LazyModuleMixin):
    """What the lazy convolutions share: ``in_channels`` from the input's channel dim."""

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        in_channels = self._get_in_channels(input)
        if self.has_uninitialized_params():
            if in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            self.in_channels = in_channels
            if self.transposed:
                shape = (in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, in_channels // self.groups, *self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()
        elif self.in_channels == 0:
            # NOTE: loaded from a state dict; PyTorch leaves in_channels at 0 here
            self.in_channels = in_channels

    def _get_in_channels(self, input: Tensor) -> int:
        unbatched = self.dims + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise RuntimeError(
                f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                f"{type(self).__name__}, but got input of size: {input.shape}"
            )
        return input.shape[1] if input.ndim == unbatched + 1 else input.shape[0]


class _LazyConvNd(_LazyConvMixin):
    """A lazy ``Conv1d/2d/3d``: its arguments without ``in_channels``."""

    def __init__(
        self,
        out_channels: int,
        kernel_size: Size,
        stride: Size = 1,
        padding: Size | str = 0,
        dilation: Size = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype
        )
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConvTransposeNd(_LazyConvMixin):
    """A lazy ``ConvTranspose1d/2d/3d``: its arguments without ``in_channels``."""

    def __init__(
        self,
        out_channels: int,
        kernel_size: Size,
        stride: Size = 1,
        padding: Size = 0,
        output_padding: Size = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Size = 1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(
            0,
            0,
            kernel_size,
            stride,
            padding,
            output_padding,
            groups,
            False,
            dilation,
            padding_mode,
            device,
            dtype,
        )
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class LazyConv1d(_LazyConvNd, Conv1d):
    """``Conv1d`` whose ``in_channels`` comes from its first input, as ``torch.nn.LazyConv1d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> conv = nn.LazyConv1d(6, 3)
    >>> conv(sg.ones(2, 4, 10)).shape, conv
    (scratchgrad.Size([2, 6, 8]), Conv1d(4, 6, kernel_size=(3,), stride=(1,)))
    """

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """``Conv2d`` whose ``in_channels`` comes from its first input, as ``torch.nn.LazyConv2d``.

    >>> from scratchgrad import nn
    >>> nn.LazyConv2d(8, 3, padding=1)
    LazyConv2d(0, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    """

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """``Conv3d`` whose ``in_channels`` comes from its first input, as ``torch.nn.LazyConv3d``."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """``ConvTranspose1d`` whose ``in_channels`` comes from its first input, as
    ``torch.nn.LazyConvTranspose1d``."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """``ConvTranspose2d`` whose ``in_channels`` comes from its first input, as
    ``torch.nn.LazyConvTranspose2d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> up = nn.LazyConvTranspose2d(1, 4, stride=2, padding=1)
    >>> up(sg.ones(2, 8, 7, 7)).shape, up.weight.shape
    (scratchgrad.Size([2, 1, 14, 14]), scratchgrad.Size([8, 1, 4, 4]))
    """

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """``ConvTranspose3d`` whose ``in_channels`` comes from its first input, as
    ``torch.nn.LazyConvTranspose3d``."""

    cls_to_become = ConvTranspose3d


class _LazyNormBase(LazyModuleMixin):
    """What the lazy batch and instance norms share: ``num_features`` from the input's channel
    dim; weights and running statistics uninitialized until then. As PyTorch's, the lazy
    instance norms have ``affine=True`` and ``track_running_stats=True`` by default.

    NOTE: PyTorch's lazy norms derive from the private ``_BatchNorm`` / ``_InstanceNorm``;
    these derive from the public classes they become, so ``isinstance(m, nn.BatchNorm1d)``
    is already True before the first call.
    """

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        # no weights and no statistics yet: they are replaced at once
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            zero = backend.array_module(device).zeros((), backend.int64)
            self.num_batches_tracked = Tensor._make(zero)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        num_features = input.shape[self._feature_dim(input)]
        if self.has_uninitialized_params():
            self.num_features = num_features
            for tensor in (self.weight, self.bias, self.running_mean, self.running_var):
                if tensor is not None:
                    tensor.materialize((num_features,))
            self.reset_parameters()
        elif self.num_features == 0:
            # NOTE: loaded from a state dict, or nothing to learn; PyTorch leaves it at 0
            self.num_features = num_features

    def _feature_dim(self, input: Tensor) -> int:
        if input.ndim < 2:
            raise ValueError(f"expected 2D or more input (got {input.ndim}D input)")
        return 1


class _LazyInstanceNorm(_LazyNormBase):
    def _feature_dim(self, input: Tensor) -> int:
        # NOTE: the channel dim of an unbatched input too; PyTorch reads dim 1 regardless
        return max(input.ndim - self.spatial_dims - 1, 0)


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """``BatchNorm1d`` whose ``num_features`` comes from its first input, as
    ``torch.nn.LazyBatchNorm1d``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> bn = nn.LazyBatchNorm1d()
    >>> bn(sg.randn(8, 3)).shape, bn.running_mean.shape, type(bn).__name__
    (scratchgrad.Size([8, 3]), scratchgrad.Size([3]), 'BatchNorm1d')
    """

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """``BatchNorm2d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """``BatchNorm3d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    """``InstanceNorm1d`` whose ``num_features`` comes from its first input."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    """``InstanceNorm2d`` whose ``num_features`` comes from its first input.

    >>> from scratchgrad import nn
    >>> nn.LazyInstanceNorm2d()
    LazyInstanceNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, \
track_running_stats=True)
    """

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    """``InstanceNorm3d`` whose ``num_features`` comes from its first input."""

    cls_to_become = InstanceNorm3d
