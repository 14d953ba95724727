"""Normalisation with running statistics: ``BatchNorm1d/2d/3d``, ``SyncBatchNorm`` and
``InstanceNorm1d/2d/3d``, on one base that holds the weights, the running statistics and the
repr, as PyTorch's ``_NormBase``."""

from __future__ import annotations

import warnings
from typing import Any

from scratchgrad import backend
from scratchgrad import distributed as dist
from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor


class _NormBase(Module):
    """What batch and instance norms share: ``num_features`` weights and biases (``affine``),
    the running statistics (``track_running_stats``), their reset and the repr."""

    _version = 2  # what state dicts record, as PyTorch's (its 2 added num_batches_tracked)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = _empty_parameter((num_features,), device, dtype)
            if bias:
                self.bias = _empty_parameter((num_features,), device, dtype)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            dtype = backend.default_float if dtype is None else backend.to_dtype(dtype)
            xp = backend.array_module(device)
            self.register_buffer("running_mean", Tensor._make(xp.zeros(num_features, dtype)))
            self.register_buffer("running_var", Tensor._make(xp.ones(num_features, dtype)))
            self.register_buffer("num_batches_tracked", Tensor._make(xp.zeros((), backend.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def _upgrade_state_dict(
        self, state_dict: dict, prefix: str, version: int | None, errors: list[str]
    ) -> None:
        """A checkpoint from before version 2 has no ``num_batches_tracked``: as PyTorch's,
        the module keeps its own count (0 on the meta device) instead of missing the key."""
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            tracked = self.num_batches_tracked
            meta = tracked is None or tracked.is_meta
            state_dict[key] = Tensor._from_data(0, backend.int64) if meta else tracked

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    """Normalise each channel by batch statistics in training and by running statistics in
    eval mode, as PyTorch's ``_BatchNorm``.

    ``momentum`` weighs the newest batch in the running averages; ``momentum=None`` gives a
    plain cumulative average. With ``track_running_stats=False`` there are no running
    statistics and batch statistics are used in eval mode too.
    """

    expected_dims: tuple[int, ...] = ()

    def _check_input_dim(self, input: Tensor) -> None:
        """Refuse input of a rank the layer does not take (a subclass of ``_BatchNorm`` may
        override this, as PyTorch's)."""
        if input.ndim not in self.expected_dims:
            dims = " or ".join(f"{d}D" for d in self.expected_dims)
            raise ValueError(f"expected {dims} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:  # before the running statistics change
            raise RuntimeError(
                f"{type(self).__name__}({self.num_features}): expected input with "
                f"{self.num_features} channels (dim 1), got shape {input.shape}"
            )
        momentum = 0.0 if self.momentum is None else self.momentum
        tracking = self.training and self.track_running_stats
        if tracking:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative average: the n-th batch weighs 1/n
                # (a tensor, not .item(): a jit or compile replay computes it from the count)
                momentum = 1.0 / self.num_batches_tracked.double()
        use_batch_stats = self.training or self.running_mean is None
        keep = tracking or not self.training  # pass the buffers only when they are used
        return F.batch_norm(
            input,
            self.running_mean if keep else None,
            self.running_var if keep else None,
            self.weight,
            self.bias,
            use_batch_stats,
            momentum,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) input, per channel C.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> bn = nn.BatchNorm1d(3)
    >>> out = bn(sg.randn(8, 3))
    >>> bn.running_mean.shape, int(bn.num_batches_tracked)
    (scratchgrad.Size([3]), 1)
    """

    expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) input, per channel C."""

    expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) input, per channel C.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.BatchNorm3d(2)(sg.randn(2, 2, 3, 3, 3)).shape
    scratchgrad.Size([2, 2, 3, 3, 3])
    """

    expected_dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, *) input whose statistics PyTorch gathers over all the processes
    of a distributed run (on GPUs). As PyTorch's on CPU, without a process group it is plain
    batch norm, in training and in eval mode; in training with a process group initialised it
    refuses, as PyTorch refuses CPU input there.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> net = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm1d(3)))
    >>> net[0]
    SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> net(sg.randn(4, 3, 5)).shape
    scratchgrad.Size([4, 3, 5])
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        if self.training and dist.is_initialized():
            raise ValueError(
                "SyncBatchNorm expected input tensor to be on GPU: scratchgrad cannot "
                "synchronise batch statistics across processes"
            )

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every batch norm in it (itself included) replaced by a
        ``SyncBatchNorm`` that shares its parameters and running statistics, as PyTorch's."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_NormBase):
    """Normalise each channel of each sample of (N, C, *spatial) or (C, *spatial) over its
    spatial dims (``F.instance_norm``). As PyTorch's, it has no weights (``affine=False``) and
    no running statistics (``track_running_stats=False``) unless asked; running statistics,
    when kept, normalise in eval mode. ``momentum=None`` leaves them as they are (PyTorch
    passes 0 for it here, not a cumulative average as the batch norms' None).
    """

    spatial_dims = 0

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def _upgrade_state_dict(
        self, state_dict: dict, prefix: str, version: int | None, errors: list[str]
    ) -> None:
        """A checkpoint without a version (PyTorch before 0.4) may hold running statistics
        that a module without ``track_running_stats`` lacks: an error, as PyTorch's, that
        names them (and drops them, so they are not reported again as unexpected)."""
        found = [prefix + name for name in ("running_mean", "running_var")]
        found = [key for key in found if key in state_dict]
        if version is None and not self.track_running_stats and found:
            klass, names = type(self).__name__, " and ".join(f'"{key}"' for key in found)
            errors.append(
                f"Unexpected running stats buffer(s) {names} "
                f"for {klass} with track_running_stats=False. If state_dict is a checkpoint "
                f"saved before 0.4.0, this may be expected because {klass} does not track "
                "running stats by default since 0.4.0. Please remove these keys from "
                "state_dict. If the running stats are actually needed, instead set "
                f"track_running_stats=True in {klass} to enable them. See the documentation "
                f"of {klass} for details."
            )
            for key in found:
                del state_dict[key]
        super()._upgrade_state_dict(state_dict, prefix, version, errors)

    def forward(self, input: Tensor) -> Tensor:
        unbatched = self.spatial_dims + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise ValueError(
                f"expected {unbatched}D or {unbatched + 1}D input (got {input.ndim}D input)"
            )
        feature_dim = input.ndim - unbatched
        channels = input.shape[feature_dim]
        if channels != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {channels}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can "
                "silence this warning by not passing in num_features, which is not used "
                "because affine=False",
                stacklevel=2,
            )
        x = input if feature_dim else input.unsqueeze(0)
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return out if feature_dim else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm of (N, C, L) or (C, L) input, over L.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out = nn.InstanceNorm1d(3)(sg.randn(2, 3, 5))
    >>> bool(out.mean(2).abs().max() < 1e-5)
    True
    """

    spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm of (N, C, H, W) or (C, H, W) input, over H and W.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.InstanceNorm2d(3)
    InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)
    >>> nn.InstanceNorm2d(3)(sg.randn(2, 3, 4, 4)).shape
    scratchgrad.Size([2, 3, 4, 4])
    """

    spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm of (N, C, D, H, W) or (C, D, H, W) input, over D, H and W.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.InstanceNorm3d(2, affine=True)(sg.randn(2, 2, 3, 3, 3)).shape
    scratchgrad.Size([2, 2, 3, 3, 3])
    """

    spatial_dims = 3
