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

    The row at ``padding_idx`` starts at zero and receives no gradient. With ``max_norm``, the
    rows looked up are first rescaled in place to at most that norm (``F.embedding``). With
    ``scale_grad_by_freq``, a row's gradient is divided by how often the batch looks it up.
    With ``sparse``, ``weight.grad`` is a sparse COO tensor holding only the rows looked up
    (for ``optim.SparseAdam``, ``SGD`` or ``Adagrad``), as PyTorch's.

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> emb = nn.Embedding(10, 3, padding_idx=0)
    >>> emb(sg.tensor([[0, 4], [4, 9]])).shape
    scratchgrad.Size([2, 2, 3])
    >>> emb = nn.Embedding(10, 3, sparse=True)
    >>> emb(sg.tensor([4, 9, 4])).sum().backward()
    >>> emb.weight.grad._indices()
    tensor([[4, 9, 4]])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = _empty_parameter((num_embeddings, embedding_dim), device, dtype)
            self.weight.requires_grad = not _freeze
            self.reset_parameters()
        else:
            # as PyTorch, the given weights are kept as they are: the padding row too
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An ``Embedding`` whose weight is ``embeddings`` (its memory shared, its padding row
        left as it is), trained only if not ``freeze``.

        >>> import scratchgrad as sg
        >>> from scratchgrad import nn
        >>> emb = nn.Embedding.from_pretrained(sg.tensor([[1.0, 2.3, 3.0], [4.0, 5.1, 6.3]]))
        >>> emb(sg.tensor([1]))
        tensor([[4.0000, 5.1000, 6.3000]])
        >>> emb.weight.requires_grad
        False
        """
        rows, cols = _pretrained_shape(embeddings)
        return cls(
            rows,
            cols,
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
            _weight=embeddings,
            _freeze=freeze,
        )

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        try:
            return F.embedding(
                input,
                self.weight,
                self.padding_idx,
                self.max_norm,
                self.norm_type,
                self.scale_grad_by_freq,
                self.sparse,
            )
        except IndexError as error:  # name the layer: a model may have several tables
            raise IndexError(f"{self!r}: {error}") from None

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += ", scale_grad_by_freq=True"
        if self.sparse:
            text += ", sparse=True"
        return text


def _pretrained_shape(embeddings: Tensor) -> tuple[int, int]:
    if embeddings.ndim != 2:
        raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
    return embeddings.shape


class EmbeddingBag(Module):
    """The sum, mean or max of the ``weight`` rows in each bag of indices
    (``F.embedding_bag``): the rows of a 2-D input, or the runs of a 1-D input that start at
    ``offsets``. Weights start N(0, 1), the row at ``padding_idx`` at zero.

    ``max_norm`` rescales the rows looked up in place first (``F.embedding_bag``); with
    ``sparse`` (modes sum and mean), ``weight.grad`` is a sparse COO tensor of the rows looked
    up, as ``Embedding``'s; with ``scale_grad_by_freq`` (sum and mean), a row's gradient is
    divided by how often the input looks it up (``F.embedding_bag`` says where PyTorch's
    differs).

    >>> import scratchgrad as sg
    >>> from scratchgrad import nn
    >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
    >>> bag(sg.tensor([1, 2, 4, 5, 4]), sg.tensor([0, 2])).shape
    scratchgrad.Size([2, 3])
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

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An ``EmbeddingBag`` whose weight is ``embeddings`` (its memory shared), trained only
        if not ``freeze``.

        >>> import scratchgrad as sg
        >>> from scratchgrad import nn
        >>> bag = nn.EmbeddingBag.from_pretrained(sg.tensor([[1.0, 2.3, 3.0], [4.0, 5.1, 6.3]]))
        >>> bag(sg.tensor([[1, 0]]))
        tensor([[2.5000, 3.7000, 4.6500]])
        """
        rows, cols = _pretrained_shape(embeddings)
        bag = cls(
            rows,
            cols,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            mode,
            sparse,
            embeddings,
            include_last_offset,
            padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag

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
            self.max_norm,
            self.norm_type,
            scale_grad_by_freq=self.scale_grad_by_freq,
            mode=self.mode,
            sparse=self.sparse,
            per_sample_weights=per_sample_weights,
            include_last_offset=self.include_last_offset,
            padding_idx=self.padding_idx,
        )

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += ", scale_grad_by_freq=True"
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text
