"""Distance modules after ``torch.nn``: ``CosineSimilarity`` and ``PairwiseDistance``, thin
layers over ``F.cosine_similarity`` and ``F.pairwise_distance``."""

from __future__ import annotations

from scratchgrad.nn import functional as F
from scratchgrad.nn.module import Module
from scratchgrad.tensor import Tensor


class CosineSimilarity(Module):
    """The cosine similarity of ``x1`` and ``x2`` along ``dim`` (``F.cosine_similarity``),
    each norm at least ``eps``.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.CosineSimilarity(dim=1)(sg.tensor([[1.0, 0.0]]), sg.tensor([[1.0, 1.0]]))
    tensor([0.7071])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim (``F.pairwise_distance``).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> nn.PairwiseDistance()(sg.tensor([[0.0, 0.0]]), sg.tensor([[3.0, 4.0]]))
    tensor([5.0000])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
