"""``Embedding`` and ``EmbeddingBag``: lookup tables of learned vectors."""

from __future__ import annotations

from scratchgrad.autograd.grad_mode import no_grad
from scratchgrad.nn import functional as F
from scratchgrad.nn import init
from scratchgrad.nn.module import Module, _empty_parameter
from scratchgrad.nn.parameter import Parameter
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


class EmbeddingBag(Module):
    """The sum, mean or max of the ``weight`` rows in each bag of indices
    (``F.embedding_bag``): the rows of a 2-D input, or the runs of a 1-D input that start at
    ``offsets``. Weights start N(0, 1), the row at ``padding_idx`` at zero.

    ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are not supported.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
    >>> bag(sg.tensor([1, 2, 4, 5, 4]), sg.tensor([0, 2])).shape
    (2, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError(
                "EmbeddingBag: max_norm, scale_grad_by_freq and sparse are not supported"
            )
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is None:
            self.weight = _empty_parameter((num_embeddings, embedding_dim), device, dtype)
            self.reset_parameters()
        else:
            if _weight.shape != (num_embeddings, embedding_dim):
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        Embedding.reset_parameters(self)

    def forward(
        self,
        input: Tensor,
        offsets: Tensor | None = None,
        per_sample_weights: Tensor | None = None,
    ) -> Tensor:
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            mode=self.mode,
            per_sample_weights=per_sample_weights,
            include_last_offset=self.include_last_offset,
            padding_idx=self.padding_idx,
        )

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text
