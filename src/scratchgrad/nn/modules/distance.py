"""``torch.nn.modules.distance``'s import path: its classes live in ``scratchgrad.nn.distance``."""

from scratchgrad.nn.distance import CosineSimilarity, PairwiseDistance

__all__ = ["PairwiseDistance", "CosineSimilarity"]
