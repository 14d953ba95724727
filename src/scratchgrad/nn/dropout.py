"""``Dropout``, the channel dropouts ``Dropout1d/2d/3d``, and ``AlphaDropout`` and
``FeatureAlphaDropout`` (for SELU networks)."""

from __future__ import annotations

from scratchgrad.nn import functional as F
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


class _DropoutNd(Module):
    """What the dropout layers share: ``p``, ``inplace`` (the result is written into the input,
    as PyTorch's; the alpha dropouts ignore it, as PyTorch's) and the repr."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training, zero each entry with probability ``p`` and scale the rest by 1 / (1 - p);
    in eval mode, pass the input through.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> drop = nn.Dropout(0.5).eval()
    >>> drop(sg.ones(3))
    tensor([1., 1., 1.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """In training, zero whole channels of ``(N, C, L)`` or ``(C, L)`` with probability ``p``
    and scale the rest by 1 / (1 - p) (``F.dropout1d``); in eval mode, pass the input through.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out = nn.Dropout1d(0.5)(sg.ones(4, 8, 3))
    >>> sorted(set(out.flatten().tolist()))
    [0.0, 2.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """In training, zero whole channels of ``(N, C, H, W)`` with probability ``p`` and scale the
    rest by 1 / (1 - p) (``F.dropout2d``); in eval mode, pass the input through.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out = nn.Dropout2d(0.5)(sg.ones(4, 8, 3, 3))
    >>> sorted(set(out.flatten().tolist()))
    [0.0, 2.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """In training, zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with
    probability ``p`` and scale the rest by 1 / (1 - p) (``F.dropout3d``); in eval mode, pass
    the input through.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.Dropout3d(0.5).eval()(sg.ones(1, 2, 1, 1, 1)).flatten().tolist()
    [1.0, 1.0]
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """In training, dropout that keeps SELU's mean 0 and variance 1 (``F.alpha_dropout``); in
    eval mode, pass the input through.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out = nn.AlphaDropout(0.2)(sg.randn(100000))
    >>> abs(out.mean().item()) < 0.02, round(out.std().item(), 1)
    (True, 1.0)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` of whole channels (dim 1 of ``(N, C, ...)``), in training
    (``F.feature_alpha_dropout``); in eval mode, pass the input through.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> out = nn.FeatureAlphaDropout(0.5)(sg.zeros(4, 8, 3))
    >>> bool((out.amax(2) == out.amin(2)).all())
    True
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
