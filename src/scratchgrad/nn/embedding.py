"""``Embedding``: a lookup table of learned vectors."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.tensor import Tensor


class Embedding(Module):
    """Row ``i`` of ``weight`` for each index ``i`` of the input; weights start N(0, 1).

    The row at ``padding_idx`` starts at zero and receives no gradient.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> emb = nn.Embedding(10, 3, padding_idx=0)
    >>> emb(sg.tensor([[0, 4], [4, 9]])).shape
    (2, 2, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        self.weight = _empty_parameter((num_embeddings, embedding_dim), device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        try:
            return F.embedding(input, self.weight, self.padding_idx)
        except IndexError as error:  # name the layer: a model may have several tables
            raise IndexError(f"{self!r}: {error}") from None

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"
