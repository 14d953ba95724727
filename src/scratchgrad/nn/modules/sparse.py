"""``torch.nn.modules.sparse``'s import path: its classes live in ``scratchgrad.nn.embedding``."""

from scratchgrad.nn.embedding import Embedding, EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
