"""``Dropout``."""

from __future__ import annotations

from scratchgrad.nn import functional as F
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


class Dropout(Module):
    """In training, zero each entry with probability ``p`` and scale the rest by 1 / (1 - p);
    in eval mode, pass the input through.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> drop = nn.Dropout(0.5).eval()
    >>> drop(sg.ones(3))
    tensor([1., 1., 1.])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
